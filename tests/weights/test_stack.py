"""The stacked risk (:class:`ecrm.StackedRiskECRM`): a convex combination of weight families'
risks chosen on their honest outputs, with a nested honest check.

The tests tie it to its members (one-hot weights are each member exactly), to a from-scratch
brute force over the same honest outputs, to its fallback, to model files (round trip and
tampered files) and to scikit-learn's conventions.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

import ecrm
from _constraints import _bad_values
from _ids import readable
from _model_file_edits import _tampered
from _shapes import TREE5 as TREE
from ecrm import ECRMCV, CandidateSpace, ForestECRM, ForestECRMCV, StackedRiskECRM, load, save
from ecrm.losses import HammingLoss, ZeroOneLoss
from ecrm.model_files.io import ModelFileError
from ecrm.selection import OutOfBagSearch
from ecrm.selection._criteria import SCORERS
from ecrm.weights import FAMILIES
from ecrm.weights._stack_choice import choose_stack
from ecrm.weights.stack import per_label, simplex_grid

LOSS = HammingLoss()
CLASSES = CandidateSpace.from_classes(range(10))


def _xy(m=60, seed=0, noise=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    Z = rng.normal(size=(m, 3)) if noise else X
    Y = TREE.close(Z @ rng.normal(size=(3, TREE.n_outputs)) > 0.3)
    return X, Y


def _kernel(**kw):
    return ECRMCV(LOSS, TREE, alphas=[1e-2, 0.1, 1.0], **kw)


def _forest(**kw):
    return ForestECRMCV(LOSS, TREE, n_estimators=15, **kw)


def _three():
    return [_kernel(), _forest(), _kernel(kernel="linear")]


@pytest.fixture(scope="module")
def data():
    return _xy()


@pytest.fixture(scope="module")
def stack3(data):
    return StackedRiskECRM(LOSS, TREE, members=_three(), resolution=4,
                           random_state=0).fit(*data)


@pytest.fixture(scope="module")
def scored(data):
    return StackedRiskECRM(LOSS, TREE, members=[_kernel(), _forest()], scoring="micro_auprc",
                           label_shrinkage=2.0, random_state=1).fit(*data)


# -- the lattice ----------------------------------------------------------------------------
@given(st.integers(1, 4), st.integers(1, 6))
def test_simplex_grid_is_every_lattice_point_vertices_first(J, k):
    grid = simplex_grid(J, k)
    brute = {p for p in itertools.product(range(k + 1), repeat=J) if sum(p) == k}
    assert {tuple(int(v) for v in np.rint(row * k)) for row in grid} == brute
    assert len(grid) == len(brute) == math.comb(k + J - 1, J - 1)
    np.testing.assert_array_equal(grid[:J], np.eye(J))
    np.testing.assert_allclose(grid.sum(axis=1), 1.0)


# -- one-hot weights are each member ------------------------------------------------------
@pytest.mark.parametrize("which", ["stack3", "scored"], ids=["three-members", "scored"])
def test_one_hot_weights_equal_each_member_exactly(which, request, data):
    model = request.getfixturevalue(which)
    X = _xy(20, seed=5)[0]
    kept = model.weights_, model.label_weights_
    try:
        model.label_weights_ = None
        for j, member in enumerate(model.estimators_):
            model.weights_ = np.eye(len(model.estimators_))[j]
            np.testing.assert_array_equal(model.predict(X), member.predict(X))
            np.testing.assert_array_equal(model.predict_costs(X), member.predict_costs(X))
            np.testing.assert_array_equal(model.predict_scores(X), member.predict_scores(X))
            np.testing.assert_array_equal(model.conditional_risk(X, data[1][:20]),
                                          member.conditional_risk(X, data[1][:20]))
    finally:
        model.weights_, model.label_weights_ = kept


# -- the choice against a brute force over the same honest outputs ---------------------------
def _honest(model, X, Y, scores):
    """Each fitted member's honest outputs recomputed from scratch (a clone, same seed)."""
    outs = [clone(e).fit_honest(X, Y, scores=scores) for e in model.estimators_]
    m = len(Y)
    full = np.full((len(outs), m, outs[0].values.shape[1]), np.nan)
    for j, out in enumerate(outs):
        full[j, out.rows] = out.values
    rows = np.flatnonzero(~np.isnan(full).any(axis=(0, 2)))
    return full[:, rows], np.asarray(Y, dtype=float)[rows]


@pytest.mark.parametrize("members, k", [(lambda: [_kernel(), _forest()], 5),
                                        (_three, 4)],
                         ids=["two-members-resolution-5", "three-members-resolution-4"])
def test_weights_are_the_brute_force_argmin(members, k, data):
    X, Y = data
    model = StackedRiskECRM(LOSS, TREE, members=members(), resolution=k, nested=False,
                            random_state=3).fit(X, Y)
    outputs, Yh = _honest(model, X, Y, scores=False)
    losses = {}
    for p in itertools.product(range(k + 1), repeat=len(outputs)):
        if sum(p) == k:
            beta = np.array(p) / k
            costs = sum(b * o for b, o in zip(beta, outputs, strict=True))
            losses[p] = LOSS(TREE.minimize(costs, LOSS.cost_form), Yh).mean()
    best = min(losses.values())
    assert model.stack_used_
    np.testing.assert_allclose(model.best_score_, -best, rtol=0, atol=1e-12)
    chosen = tuple(int(v) for v in np.rint(model.weights_ * k))
    np.testing.assert_allclose(losses[chosen], best, rtol=0, atol=1e-12)


def test_weights_by_a_metric_are_the_brute_force_argmax(scored, data):
    X, Y = data
    outputs, Yh = _honest(scored, X, Y, scores=True)
    metric = SCORERS["micro_auprc"]
    values = [metric(Yh, b * outputs[0] + (1 - b) * outputs[1])
              for b in np.linspace(0, 1, scored.resolution + 1)]
    best = scored.cv_results_["score"][int(np.argmax(scored.cv_results_["score"]))]
    np.testing.assert_allclose(best, max(values), rtol=0, atol=1e-12)
    if scored.stack_used_:
        np.testing.assert_allclose(scored.best_score_, max(values), rtol=0, atol=1e-12)


def test_beyond_three_members_the_greedy_search_is_at_least_every_member(data):
    members = [*_three(), _forest(search=OutOfBagSearch(param_grid={"max_features": [1.0]}))]
    model = StackedRiskECRM(LOSS, TREE, members=members, resolution=4, nested=False,
                            random_state=0).fit(*data)
    scores = model.cv_results_["score"]
    assert model.best_score_ == max(scores) >= max(scores[:4])
    np.testing.assert_array_equal(np.array(model.cv_results_["weights"][:4]), np.eye(4))
    # the s-th iterate: s members' draws with replacement, each 1/s
    assert any(np.allclose(np.rint(model.weights_ * s), model.weights_ * s) for s in range(1, 5))


def test_per_label_shares_are_each_labels_brier_argmin_shrunk():
    rng = np.random.default_rng(0)
    S, Y = rng.uniform(size=(2, 30, 4)), (rng.uniform(size=(30, 4)) < 0.4).astype(float)
    glob = np.array([0.5, 0.5])
    for tau in (0.0, 3.0):
        shares = per_label(S, Y, glob, tau, 4)
        for label in range(4):
            brier = [np.sum((b * S[0, :, label] + (1 - b) * S[1, :, label] - Y[:, label]) ** 2)
                     for b in np.linspace(0, 1, 5)]
            raw = np.linspace(0, 1, 5)[int(np.argmin(brier))]
            s = tau / (tau + Y[:, label].sum())
            np.testing.assert_allclose(shares[label], (1 - s) * np.array([raw, 1 - raw])
                                       + s * glob, atol=1e-12)


def test_per_label_shares_are_opt_in(scored, data):
    assert StackedRiskECRM(LOSS, TREE).get_params()["label_shrinkage"] is None
    model = StackedRiskECRM(LOSS, TREE, members=[_kernel(), _forest()], scoring="micro_auprc",
                            random_state=1).fit(*data)
    assert model.label_weights_ is None
    assert np.isnan(model.nested_results_["label_gain"])
    assert np.isnan(model.nested_results_["label_std_error"])
    # the global choice is the one made beside the per-label shares
    np.testing.assert_array_equal(model.weights_, scored.weights_)
    assert model.stack_used_ == scored.stack_used_
    X = _xy(20, seed=5)[0]
    np.testing.assert_allclose(model.predict_scores(X),
                               np.tensordot(model.weights_, [e.predict_scores(X) for e in
                                                             model.estimators_], axes=1),
                               rtol=0, atol=1e-12)


# -- the nested check --------------------------------------------------------------------------
def test_identical_members_fall_back_to_one_member(data):
    model = StackedRiskECRM(LOSS, TREE, members=[_kernel(random_state=0),
                                                 _kernel(random_state=0)],
                            random_state=0).fit(*data)
    assert model.nested_results_["gain"] == 0.0
    assert not model.stack_used_
    np.testing.assert_array_equal(model.weights_, [1.0, 0.0])


def test_an_uninformative_member_falls_back_to_the_informative_one():
    X, Y = _xy(80, seed=2)
    useless = ECRMCV(LOSS, TREE, alphas=[1e6])  # weights ~ 1/m: the training mean
    model = StackedRiskECRM(LOSS, TREE, members=[useless, _kernel()], random_state=0).fit(X, Y)
    assert not model.stack_used_
    np.testing.assert_array_equal(model.weights_, [0.0, 1.0])
    assert model.best_score_ == max(model.cv_results_["score"][:2])


@pytest.mark.parametrize("seed", [0, 1, 2], ids="seed={}".format)
def test_the_stack_is_kept_exactly_when_it_wins_by_more_than_its_error(seed):
    X, Y = _xy(50, seed=seed, noise=seed == 2)
    model = StackedRiskECRM(LOSS, TREE, members=[_kernel(), _forest()], random_state=seed)
    model.fit(X, Y)
    nested = model.nested_results_
    assert model.stack_used_ == (nested["gain"] > nested["std_error"])
    J = len(model.estimators_)
    chosen = (int(np.argmax(model.cv_results_["score"])) if model.stack_used_
              else int(np.argmax(model.cv_results_["score"][:J])))
    np.testing.assert_array_equal(model.weights_, model.cv_results_["weights"][chosen])


def _equal_up_to_noise(seed, sigma, n=200):
    """Label scores of a member and of the same member plus noise (which of the two comes
    first alternates): no combination beats the clean member in expectation."""
    rng = np.random.default_rng(seed)
    d = TREE.n_outputs
    Y = TREE.close(rng.uniform(size=(n, d)) < rng.uniform(0.05, 0.5, d)).astype(float)
    clean = np.clip(0.25 * Y + rng.normal(0.3, 0.2, (n, d)), 0, 1)
    noisy = np.clip(clean + rng.normal(0, sigma, (n, d)), 0, 1)
    return (np.stack([clean, noisy]) if seed % 2 == 0 else np.stack([noisy, clean])), Y


def test_members_equal_up_to_noise_fall_back_to_the_clean_one():
    for seed in range(10):
        S, Y = _equal_up_to_noise(seed, sigma=0.03)
        choice = choose_stack(S, Y, output_space=TREE, metric=SCORERS["micro_auprc"],
                              random_state=seed)
        assert not choice.stack_used, (seed, choice.nested)
        np.testing.assert_array_equal(choice.weights, np.eye(2)[np.argmax(choice.scores[:2])])


def test_the_metric_standard_error_is_the_spread_of_the_gain():
    # The nested check's standard error under a metric against the spread of its gain over
    # independent draws of the same near-tie (a smaller error keeps the stack too often).
    gains, errors = [], []
    for seed in range(40):
        S, Y = _equal_up_to_noise(seed, sigma=0.03)
        choice = choose_stack(S, Y, output_space=TREE, metric=SCORERS["micro_auprc"],
                              random_state=seed)
        gains.append(choice.nested["gain"])
        errors.append(choice.nested["std_error"])
    ratio = np.mean(errors) / np.sqrt(np.mean(np.square(gains)))
    assert 0.8 < ratio < 1.3, ratio
    assert np.mean(np.greater(gains, errors)) <= 0.1


def test_the_task_loss_standard_error_is_the_rows_one():
    from ecrm.weights._stack_choice import _gain

    rng = np.random.default_rng(0)
    X, Y = _xy(40)
    a, b = rng.normal(size=(2, 40, TREE.n_outputs))
    crit = {"loss": LOSS, "output_space": TREE, "metric": None, "judge": None}
    gain, err = _gain([(Y[:20], a[:20], b[:20]), (Y[20:], a[20:], b[20:])], crit)
    diff = (LOSS(TREE.minimize(b, LOSS.cost_form), Y)
            - LOSS(TREE.minimize(a, LOSS.cost_form), Y))
    np.testing.assert_allclose([gain, err], [diff.mean(), diff.std(ddof=1) / np.sqrt(40)],
                               rtol=1e-12)


def test_without_the_nested_check_the_best_candidate_is_kept(data):
    model = StackedRiskECRM(LOSS, TREE, members=[_kernel(), _forest()], nested=False,
                            random_state=0).fit(*data)
    assert model.stack_used_ and np.isnan(model.nested_results_["gain"])
    assert model.best_score_ == max(model.cv_results_["score"])


def test_label_weights_lie_on_the_simplex(scored):
    if scored.label_weights_ is not None:
        assert scored.label_weights_.shape == (TREE.n_outputs, 2)
        np.testing.assert_allclose(scored.label_weights_.sum(axis=1), 1.0)
        assert (scored.label_weights_ >= 0).all()
    nested = scored.nested_results_
    assert (scored.label_weights_ is not None) == (nested["label_gain"]
                                                   > nested["label_std_error"])


# -- model files -------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["stack3", "scored"], ids=["three-members", "scored"])
def test_model_files_round_trip(which, request, tmp_path):
    model = request.getfixturevalue(which)
    save(model, tmp_path / "s.ecrm")
    loaded = load(tmp_path / "s.ecrm")
    X = _xy(25, seed=7)[0]
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    for method in ("predict_costs", "predict_scores"):  # arrays in another layout: BLAS rounding
        np.testing.assert_allclose(getattr(loaded, method)(X), getattr(model, method)(X),
                                   rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(loaded.weights_, model.weights_)
    assert loaded.label_shrinkage == model.label_shrinkage  # stored, not the default
    assert (loaded.label_weights_ is None) == (model.label_weights_ is None)
    if model.label_weights_ is not None:
        np.testing.assert_array_equal(loaded.label_weights_, model.label_weights_)
    assert [type(m) for m in loaded.members] == [type(m) for m in model.members]
    assert loaded.stack_used_ == model.stack_used_


def test_default_members_round_trip(tmp_path):
    X, Y = _xy(40)
    model = StackedRiskECRM(LOSS, TREE, random_state=0).fit(X, Y)
    assert [type(e) for e in model.estimators_] == [ECRMCV, ForestECRMCV]
    save(model, tmp_path / "d.ecrm")
    np.testing.assert_array_equal(load(tmp_path / "d.ecrm").predict(X), model.predict(X))


def _edit_weights(value):
    def edit(meta, arrays):
        arrays[meta["fitted"]["weights_"]["name"]] = np.asarray(value)
    return edit


@pytest.mark.parametrize("value, words", [
    ([0.5, 0.6, -0.1], "weights_"), ([0.7, 0.7, 0.0], "weights_"),
    ([np.nan, 1.0, 0.0], "NaN"), ([0.5, 0.5], "shape"), ([1.0, 0.0, 0.0, 0.0], "shape"),
    (np.array([1, 0, 0]), "float64")], ids=readable)
def test_a_tampered_stack_file_is_refused(stack3, tmp_path, value, words):
    save(stack3, tmp_path / "s.ecrm")
    bad = _tampered(tmp_path / "s.ecrm", tmp_path / "bad.ecrm", _edit_weights(value))
    with pytest.raises(ModelFileError, match=words):
        load(bad)


def test_a_stack_file_whose_weights_are_not_its_choice_is_refused(stack3, tmp_path):
    save(stack3, tmp_path / "s.ecrm")
    other = np.roll(stack3.weights_, 1) if len(set(stack3.weights_)) > 1 else None
    assert other is not None
    bad = _tampered(tmp_path / "s.ecrm", tmp_path / "bad.ecrm", _edit_weights(other))
    with pytest.raises(ModelFileError, match="chosen candidate"):
        load(bad)


def test_a_file_without_fitted_state_is_refused(stack3, tmp_path):
    save(stack3, tmp_path / "s.ecrm")

    def strip(meta, arrays):
        meta["fitted"] = {}
    with pytest.raises(ModelFileError, match="no fitted state"):
        load(_tampered(tmp_path / "s.ecrm", tmp_path / "bad.ecrm", strip))


# -- conventions and the family table --------------------------------------------------------
def test_scikit_learn_conventions(stack3):
    params = stack3.get_params(deep=False)
    assert set(params) == {"loss", "output_space", "members", "scoring", "nested",
                           "resolution", "label_shrinkage", "reference", "random_state"}
    copy = clone(stack3)
    assert not hasattr(copy, "weights_")
    assert [type(m) for m in copy.members] == [type(m) for m in stack3.members]
    assert all(a is not b for a, b in zip(copy.members, stack3.members, strict=True))
    assert stack3.members[0].__dict__.keys().isdisjoint({"X_fit_", "best_score_"})


@pytest.mark.parametrize("members, error", [([], TypeError), ("x", TypeError),
                                            ([LOSS], TypeError),
                                            ([ecrm.ECRM(LOSS, TREE)], TypeError)],
                         ids=readable)
def test_bad_members_are_refused_before_any_work(members, error):
    with pytest.raises(error, match="members"):
        StackedRiskECRM(LOSS, TREE, members=members).fit(*_xy(10))


def test_a_member_of_another_loss_is_refused():
    from ecrm.losses import HierarchicalLoss

    other = ECRMCV(HierarchicalLoss(TREE), TREE)
    with pytest.raises(ValueError, match=r"members\[1\]'s loss"):
        StackedRiskECRM(LOSS, TREE, members=[_kernel(), other]).fit(*_xy(10))


def test_the_family_table_and_info_describe_the_stack(stack3):
    from ecrm.weights.families import describe, family_of

    assert FAMILIES["stack"].estimator_class() is StackedRiskECRM
    assert family_of(stack3).name == "stack"
    info = describe(stack3)
    assert info["weights"] == "stack"
    assert [m["weight"] for m in info["stacked"]] == stack3.weights_.tolist()
    assert ecrm.weights.StackedRiskECRM is StackedRiskECRM


@parametrize_with_checks(
    [StackedRiskECRM(ZeroOneLoss(CLASSES), CLASSES,
                     members=[ECRMCV(ZeroOneLoss(CLASSES), CLASSES, alphas=[1e-3, 0.1]),
                              ForestECRM(ZeroOneLoss(CLASSES), CLASSES, n_estimators=5)],
                     resolution=2, random_state=0)])
def test_sklearn_common_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("name, bad", [
    (name, bad) for name, constraint in StackedRiskECRM._parameter_constraints.items()
    for bad in _bad_values(constraint)], ids=readable)
def test_every_refused_parameter_is_refused_by_fit_naming_it(name, bad):
    with pytest.raises((TypeError, ValueError), match=name):
        StackedRiskECRM(LOSS, TREE, **{name: bad}).fit(*_xy(10))


@pytest.mark.slow
def test_stack_family_end_to_end(ecrm_cmd, train_csv, test_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--loss", "hierarchical", "--cv",
                   "--family", "stack", "--seed", "0", "-o", "s.ecrm", "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr.decode()
    assert b"stack weights" in fit.stdout
    info = json.loads(ecrm_cmd("info", "s.ecrm", "--json", cwd=tmp_path).stdout)
    assert info["estimator"] == "StackedRiskECRM" and info["weights"] == "stack"
    assert [m["weights"] for m in info["stacked"]] == ["kernel", "forest"]
    np.testing.assert_allclose(sum(m["weight"] for m in info["stacked"]), 1.0)
    text = ecrm_cmd("info", "s.ecrm", cwd=tmp_path)
    assert text.returncode == 0 and b"stacked risk" in text.stdout, text.stderr
    ev = ecrm_cmd("evaluate", "s.ecrm", str(test_csv), "--json", "--quiet", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr.decode()


def test_a_pipeline_whose_estimator_lost_its_fitted_state_is_refused(tmp_path):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, Y = _xy(30)
    save(make_pipeline(StandardScaler(), ecrm.ECRM(LOSS, TREE)).fit(X, Y), tmp_path / "p.ecrm")

    def strip(meta, arrays):
        meta["params"]["steps"][-1]["items"][1]["state"] = {}
    with pytest.raises(ModelFileError, match="not a fitted estimator"):
        load(_tampered(tmp_path / "p.ecrm", tmp_path / "bad.ecrm", strip))


def test_an_unfitted_member_with_a_refused_parameter_is_refused(stack3, tmp_path):
    save(stack3, tmp_path / "s.ecrm")

    def edit(meta, arrays):
        member = meta["params"]["members"][0]
        assert member["$type"] == "fitted" and member["state"] == {}
        member["kwargs"]["alphas"] = [-1.0]
    with pytest.raises(ModelFileError, match="alpha"):
        load(_tampered(tmp_path / "s.ecrm", tmp_path / "bad.ecrm", edit))


def test_a_kernel_models_leave_one_out_of_any_loss_is_its_own_and_its_weights():
    # ECRM-stacked regresses each loss's embedding with each kernel model's weights: on the
    # model's own loss that is its exact leave-one-out costs, at test its predicted costs.
    from ecrm.experiments._ranking_stack import kernel_loo
    from ecrm.losses import KendallLoss, SquaredRankLoss
    from ecrm.spaces.permutations import PermutationSpace
    from ecrm.weights.mixture import kernel_loo_outputs

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    space = PermutationSpace(4)
    Y = space.from_ranks(np.argsort(np.argsort(X @ rng.normal(size=(3, 4))
                                               + rng.normal(size=(50, 4)), axis=1), axis=1))
    for loss, kernel in ((KendallLoss(), "rbf"), (SquaredRankLoss(), "linear")):
        model = ECRMCV(loss, space, alphas=[1e-2, 0.1], kernel=kernel)
        rows, own = kernel_loo_outputs(model, X, Y)
        psi = loss.psi(Y.astype(float))
        np.testing.assert_allclose(kernel_loo(model, X, psi, rows), own, rtol=1e-9,
                                   atol=1e-9)
        Xte = rng.normal(size=(7, 3))
        np.testing.assert_allclose(model.conditional_weights(Xte) @ psi,
                                   model.predict_costs(Xte), rtol=1e-9, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("n_components", [30, 90],  # Nystrom (Kendall and forest), the dual
                         ids=["nystrom", "exact"])
def test_the_ranking_protocols_stacked_row(n_components, monkeypatch):
    import warnings

    from ecrm.experiments import _ranking_fold as folds
    from ecrm.experiments import _ranking_kernel as kernel_rankers
    from ecrm.experiments import ranking

    monkeypatch.setattr(folds, "DUAL_MAX_TRAIN", 50)  # 90 points: Nystrom on 30 centres
    monkeypatch.setattr(kernel_rankers, "KERNEL_SUBSAMPLE", 40)
    monkeypatch.setattr(kernel_rankers, "LARGE_LOO_ROWS", 60)

    rng = np.random.RandomState(3)
    X = rng.randn(110, 3)
    R = np.argsort(np.argsort(X @ rng.randn(3, 4) + 0.5 * rng.randn(110, 4), axis=1), axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # grid edges of the tiny grids
        out = folds._fold(X, R, np.arange(90), np.arange(90, 110), gammas=[0.3, 1.0],
                          methods=("ECRM-mixed", "ECRM-stacked"), seed=5, max_train=None,
                          n_components=n_components)
    tau, params, _ = out["ECRM-stacked"]
    mixed_tau, mixed, _ = out["ECRM-mixed"]
    exact = n_components == 90
    assert params["loss"] == mixed["loss"]  # the oracle loss is ECRM-mixed's
    label = ranking.ECRM_LOSSES.index(params["loss"])
    assert params["members"] == ([*ranking.ECRM_LOSSES] if exact else [params["loss"]]) \
        + ["ECRM-forest", "kNN"]
    np.testing.assert_allclose(sum(params["weights"]), 1.0, atol=1e-3)
    assert tau > 0.5 and mixed_tau > 0.5
    assert params["stack_used"] == (params["gain"] > params["std_error"])
    if not params["stack_used"]:  # the reference's best on every row: ECRM-mixed's choice
        share = params["weights"][label] if exact else params["weights"][0]
        assert share == round(mixed["mixture"], 3)
        assert params["weights"][-2] == round(1.0 - mixed["mixture"], 3)
        assert params["weights"][-1] == 0.0  # no neighbours
        assert params["honest_discordant"] == pytest.approx(mixed["honest_discordant"],
                                                            rel=1e-12)
        assert tau == mixed_tau


def test_the_ranking_stacks_neighbour_member_is_a_refit_without_each_point():
    # ECRM-stacked's kNN member: leave-one-out costs are the mean embedding of the k nearest
    # points of the training set without the point, k the argmin of the judged distances.
    from ecrm.experiments._ranking_knn import NEIGHBOURS, _discordant
    from ecrm.experiments._ranking_stack import knn_member
    from ecrm.losses import FootruleLoss
    from ecrm.spaces.permutations import PermutationSpace

    rng = np.random.default_rng(4)
    X, Xte = rng.normal(size=(40, 2)), rng.normal(size=(6, 2))
    R = np.argsort(np.argsort(X @ rng.normal(size=(2, 4)) + rng.normal(size=(40, 4)), axis=1),
                   axis=1)
    space, loss = PermutationSpace(4), FootruleLoss()
    psi = loss.psi(space.from_ranks(R).astype(float))
    rows = np.array([0, 3, 7, 11, 19, 23, 31, 39])
    loo, test, k = knn_member(X, psi, Xte, rows, lambda P, at: _discordant(P, R[at]), loss,
                              space)

    def mean_of_nearest(x, pool, k):
        order = np.argsort(((X[pool] - x) ** 2).sum(axis=1), kind="stable")[:k]
        return psi[pool[order]].mean(axis=0)

    judged = {}
    for j in [j for j in NEIGHBOURS if j < len(X)]:
        C = np.array([mean_of_nearest(X[i], np.delete(np.arange(len(X)), i), j) for i in rows])
        P = space.to_ranks(space.minimize(C, loss.cost_form))
        judged[j] = _discordant(P, R[rows]).mean()
        if j == k:
            np.testing.assert_allclose(loo, C, rtol=1e-12, atol=1e-12)
    assert k == min(judged, key=lambda j: (judged[j], j))
    np.testing.assert_allclose(
        test, [mean_of_nearest(x, np.arange(len(X)), k) for x in Xte], rtol=1e-12, atol=1e-12)
