"""Incomplete training rankings: a ranking that leaves labels out contributes only the pairs it
observes, for total orders (PermutationSpace, rank -1) and bucket orders (position 0), in the
losses, the leave-one-out search, the label scores, the model files and the benchmark files."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _label_ranking_files import write_toy_rankings
from ecrm import (
    ECRM,
    ECRMCV,
    ForestECRM,
    Hierarchy,
    MixedRiskECRM,
    NystromSolver,
    PermutationSpace,
    load,
    save,
)
from ecrm.cli import main
from ecrm.datasets.label_ranking import load_label_ranking
from ecrm.experiments._ranking_missing import remove_labels
from ecrm.experiments.ranking import MISSING_METHODS
from ecrm.losses import FootruleLoss, HammingLoss, KendallLoss, KendallTiesLoss, TauXLoss
from ecrm.losses.kendall import kendall_tau
from ecrm.model_files.io import ModelFileError
from ecrm.selection import LeaveOneOutSearch
from ecrm.spaces import BucketOrderSpace


# -- strategies and brute force ----------------------------------------------------------------
@st.composite
def incomplete_ranks(draw, k=None):
    """(complete ranks of a prediction, incomplete reference ranks) of k labels, -1 missing."""
    k = draw(st.integers(2, 6)) if k is None else k
    pred = np.array(draw(st.permutations(range(k))))
    ref = np.array(draw(st.permutations(range(k))))
    seen = np.array(draw(st.lists(st.booleans(), min_size=k, max_size=k)))
    seen[draw(st.integers(0, k - 1))] = True
    order = np.argsort(np.argsort(np.where(seen, ref, k + ref)))
    return pred, np.where(seen, order, -1)


@st.composite
def incomplete_buckets(draw):
    """(complete prediction positions, incomplete reference positions; 0 = missing)."""
    k = draw(st.integers(2, 6))
    pred = np.array(draw(st.lists(st.integers(1, k), min_size=k, max_size=k)))
    ref = np.array(draw(st.lists(st.integers(0, k), min_size=k, max_size=k)))
    return pred, ref


def _restricted_discordant(pred, ref) -> int:
    """Kendall's distance of the two rankings restricted to the labels ``ref`` ranks."""
    seen = np.flatnonzero(ref >= 0)
    return sum(int((pred[a] - pred[b]) * (ref[a] - ref[b]) < 0)
               for i, a in enumerate(seen) for b in seen[i + 1:])


def _restricted_ties(pred, ref, tie_cost) -> float:
    """Per pair of labels both ranked by ``ref``: 1 (opposite), ``tie_cost`` (tie vs strict),
    0 (agree)."""
    seen = np.flatnonzero(ref > 0)
    total = 0.0
    for i, a in enumerate(seen):
        for b in seen[i + 1:]:
            s, t = np.sign(pred[b] - pred[a]), np.sign(ref[b] - ref[a])
            total += 1.0 if s * t < 0 else (tie_cost if (s == 0) != (t == 0) else 0.0)
    return total


def _linear(loss, Y_pred, Y_ref):
    return np.einsum("ij,ij->i", loss.phi(Y_pred), loss.psi(Y_ref)) + loss.const(Y_ref)


# -- the losses -----------------------------------------------------------------------------------
@given(incomplete_ranks())
def test_kendall_linear_form_counts_the_observed_pairs(case):
    pred, ref = case
    space, loss = PermutationSpace(len(pred)), KendallLoss()
    P, Y = space.from_ranks(pred), space.from_ranks(ref)
    want = _restricted_discordant(pred, ref)
    np.testing.assert_allclose(loss(P, Y), [want])
    np.testing.assert_allclose(_linear(loss, P, Y), [want])
    m = int((ref >= 0).sum())
    np.testing.assert_allclose(kendall_tau(P, Y),
                               [1.0 - 4.0 * want / (m * (m - 1)) if m > 1 else 1.0])


@given(incomplete_buckets(), st.sampled_from([0.0, 0.25, 0.5, 1.0]))
def test_bucket_losses_linear_forms_count_the_observed_pairs(case, penalty):
    pred, ref = case
    space = BucketOrderSpace(len(pred))
    P, Y = space.from_positions(pred), space.from_positions(ref)
    for loss, cost in [(TauXLoss(), 1.0), (KendallTiesLoss(penalty=penalty), penalty)]:
        scale = 2.0 if isinstance(loss, TauXLoss) else 1.0  # tau_x: 2 opposite, 1 tie
        want = scale * _restricted_ties(pred, ref, cost / scale)
        np.testing.assert_allclose(loss(P, Y), [want], atol=1e-12)
        np.testing.assert_allclose(_linear(loss, P, Y), [want], atol=1e-12)


def test_position_losses_refuse_incomplete_references():
    space = PermutationSpace(3)
    with pytest.raises(ValueError, match="incomplete ranking.*KendallLoss"):
        FootruleLoss().psi(space.from_ranks([[1, -1, 0]]))
    with pytest.raises(ValueError, match="predictions rank every label"):
        KendallLoss().phi(space.from_ranks([[1, -1, 0]]))


# -- the permutation space ------------------------------------------------------------------------
def test_permutation_space_reads_and_checks_incomplete_rankings():
    space = PermutationSpace(3)
    Y = space.from_ranks([[1, -1, 0], [2, 0, 1]])
    assert np.isnan(Y[0, 3:6]).all() and not np.isnan(np.delete(Y[0], [3, 4, 5])).any()
    np.testing.assert_array_equal(space.to_ranks(Y), [[1, -1, 0], [2, 0, 1]])
    np.testing.assert_array_equal(space.contains(Y), [False, True])
    np.testing.assert_array_equal(space.validate(Y), Y)
    with pytest.raises(ValueError, match="positions 0..1"):
        space.from_ranks([[2, -1, 0]])
    with pytest.raises(ValueError, match="no label is ranked"):
        space.from_ranks([[-1, -1, -1]])
    bad = Y.copy()
    bad[0, 0] = np.nan  # one NaN entry of an observed label
    with pytest.raises(ValueError, match="item 0 has NaN and non-NaN entries"):
        space.validate(bad)
    bad = Y.copy()
    bad[0, [1, 2]] = [0.0, 1.0]  # observed labels at positions 0 and 2 of 2
    with pytest.raises(ValueError, match="position 1 holds 0 items"):
        space.validate(bad)


# -- estimators: scores, search, model files ------------------------------------------------------
def _incomplete_permutations(m=36, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    R = np.argsort(np.argsort(-(X @ rng.normal(size=(3, k))), axis=1), axis=1)
    R = remove_labels(R, 0.4, rng)
    return X, PermutationSpace(k), R, PermutationSpace(k).from_ranks(R)


def _incomplete_buckets(m=36, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    P = np.clip(np.round(X @ rng.normal(size=(3, k))).astype(int) + 3, 1, k)
    P[rng.random((m, k)) < 0.3] = 0
    return X, BucketOrderSpace(k), P, BucketOrderSpace(k).from_positions(P)


CASES = {"permutations": (_incomplete_permutations, KendallLoss),
         "buckets": (_incomplete_buckets, TauXLoss)}
ESTIMATORS = {
    "ECRMCV": lambda loss, space: ECRMCV(loss, space, alphas=[1e-2, 1e-1, 1.0]),
    "ECRM-nystrom": lambda loss, space: ECRM(loss, space, alpha=0.1, random_state=0,
                                             solver=NystromSolver(n_components=12)),
    "ForestECRM": lambda loss, space: ForestECRM(loss, space, n_estimators=8, random_state=0),
    "MixedRiskECRM": lambda loss, space: MixedRiskECRM(
        loss, space, kernel_options={"alphas": [1e-2, 1.0]},
        forest_options={"n_estimators": 8}, mixing_grid=3, random_state=0),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_model_files_of_incomplete_rankings_round_trip(tmp_path, case, name):
    data, loss_type = CASES[case]
    X, space, _, Y = data()
    assert np.isnan(Y).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ESTIMATORS[name](loss_type(), space).fit(X, Y)
    scores = model.predict_scores(X)
    assert np.isfinite(scores).all()
    assert np.isfinite(model.output_mean_).all() if hasattr(model, "output_mean_") else True
    save(model, tmp_path / "m.ecrm")
    back = load(tmp_path / "m.ecrm")
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_allclose(back.predict_scores(X), scores, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_label_scores_count_an_unobserved_entry_as_its_column_mean(case):
    data, loss_type = CASES[case]
    X, space, _, Y = data()
    model = ECRM(loss_type(), space, alpha=0.1).fit(X, Y)
    seen = ~np.isnan(Y)
    mean = np.where(seen, Y, 0.0).sum(axis=0) / seen.sum(axis=0)
    np.testing.assert_allclose(model.output_mean_, mean)
    filled = np.where(seen, Y, mean)
    W = model.conditional_weights(X[:5])
    np.testing.assert_allclose(model.predict_scores(X[:5]), np.clip(W @ filled, 0.0, 1.0),
                               atol=1e-9)


def test_leave_one_out_search_scores_only_the_observed_pairs():
    X, space, R, Y = _incomplete_permutations()
    model = ECRMCV(KendallLoss(), space, alphas=[1e-2, 1e-1, 1.0],
                   search=LeaveOneOutSearch(fit_intercept=True)).fit(X, Y)
    loo = space.to_ranks(model.loo_predictions_)
    refs = R[model.loo_rows_]
    brute = np.mean([_restricted_discordant(p, r) for p, r in zip(loo, refs, strict=True)])
    best = int(np.flatnonzero(model.cv_results_["rank"] == 1)[0])
    np.testing.assert_allclose(model.cv_results_["mean_loss"][best], brute, rtol=1e-12)


def _tamper(tmp_path, model, name, change):
    """Save ``model`` with fitted attribute ``name`` changed in place by ``change``, load."""
    value = getattr(model, name).copy()
    change(value)
    setattr(model, name, value)
    save(model, tmp_path / "t.ecrm")
    return lambda: load(tmp_path / "t.ecrm")


@pytest.mark.parametrize("where", ["observed pair", "complete space", "output_mean_",
                                   "output_mode_"])
def test_a_nan_where_the_space_allows_none_is_refused_at_load(tmp_path, where):
    if where == "complete space":
        rng = np.random.default_rng(0)
        X = rng.normal(size=(20, 2))
        H = Hierarchy({"a": None, "b": None})
        model = ECRM(HammingLoss(), H, alpha=0.1).fit(X, (X > 0).astype(float))
        name, change = "Y_fit_", lambda v: v.__setitem__((0, 0), np.nan)
    else:
        X, space, P, Y = _incomplete_buckets()
        model = ECRM(TauXLoss(), space, alpha=0.1).fit(X, Y)
        row = int(np.flatnonzero((P > 0).all(axis=1))[0])  # a complete ranking
        name, change = {
            "observed pair": ("Y_fit_", lambda v: v.__setitem__((row, 0), np.nan)),
            "output_mean_": ("output_mean_", lambda v: v.__setitem__(0, np.nan)),
            "output_mode_": ("output_mode_", lambda v: v.__setitem__(0, np.nan)),
        }[where]
    loader = _tamper(tmp_path, model, name, change)
    with pytest.raises(ModelFileError, match=name):
        loader()


# -- the benchmark files and the protocol ---------------------------------------------------------
def test_label_ranking_file_reads_missing_labels(tmp_path):
    (tmp_path / "toy.csv").write_text("3,1,3\n0.1,1,2,3\n0.2,3,0,1\n0.3,,2,1\n")
    data = load_label_ranking("toy", tmp_path)
    np.testing.assert_array_equal(data.ranks, [[0, 1, 2], [1, -1, 0], [-1, 1, 0]])
    np.testing.assert_array_equal(data.space.to_ranks(data.Y), data.ranks)


def test_remove_labels_is_seeded_and_keeps_two_labels():
    R = np.tile(np.arange(5), (400, 1))
    out = remove_labels(R, 0.9, np.random.default_rng(3))
    np.testing.assert_array_equal(out, remove_labels(R, 0.9, np.random.default_rng(3)))
    kept = (out >= 0).sum(axis=1)
    assert kept.min() == 2
    for row, k in zip(out, kept, strict=True):  # the kept labels keep their order
        np.testing.assert_array_equal(row[row >= 0], np.arange(k))
    mild = remove_labels(R, 0.3, np.random.default_rng(4))
    np.testing.assert_allclose((mild < 0).mean(), 0.3, atol=0.03)


def test_reproduce_ranking_missing_end_to_end(tmp_path, capsys):
    write_toy_rankings(tmp_path / "toy.csv", n=45)
    out = tmp_path / "out.json"
    assert main(["reproduce", "ranking", "--data-dir", str(tmp_path), "--datasets", "toy",
                 "--missing", "0.3", "--repeats", "1", "--folds", "3", "--quiet",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert all(m in printed for m in MISSING_METHODS)
    (info,) = json.loads(out.read_text())
    assert info["missing"] == 0.3
    assert [r["method"] for r in info["rows"]] == list(MISSING_METHODS)
    for row in info["rows"]:
        assert len(row["fold_taus"]) == 3
        assert all(-1.0 <= t <= 1.0 for t in row["fold_taus"])
    assert main(["reproduce", "ranking", "--data-dir", str(tmp_path), "--datasets", "toy",
                 "--missing", "0.3", "--methods", "kNN-Borda", "--quiet"]) == 2
    assert "need complete training rankings" in capsys.readouterr().err
