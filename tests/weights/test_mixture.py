"""The mixed risk of the kernel and the forest (ecrm.weights.mixture): its costs, scores and weights
are the mixtures of the two families', its ends are the pure families, and its share is the
best of the grid on honest out-of-sample costs computed explicitly."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils import check_random_state
from test_forest import _explicit_oob_costs

from _ids import named
from ecrm import (
    ECRM,
    ECRMCV,
    ForestECRMCV,
    Hierarchy,
    MixedRiskECRM,
    NystromSolver,
    PermutationSpace,
    load,
    save,
)
from ecrm.losses import AbsoluteLoss, FootruleLoss, HammingLoss, HierarchicalLoss, KendallLoss
from ecrm.reporting.metrics import micro_auprc
from ecrm.selection import LeaveOneOutSearch, OutOfBagSearch
from ecrm.weights.mixture import check_mixing_grid, choose_mixture, kernel_loo_outputs

TREE = Hierarchy([("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")])
KERNEL = {"alphas": [1e-3, 1e-2, 1e-1], "gamma": 0.5}
FOREST = {"n_estimators": 12, "search": OutOfBagSearch(param_grid={"max_features": [0.5, 1.0]})}


def _data(m=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    Y = TREE.close(np.column_stack([X[:, 0] > 0, X[:, 1] > 0.3, X[:, 1] < -0.3,
                                    X[:, 2] > 0, X[:, 2] > 0.8, X[:, 0] < -1]).astype(float))
    return X, Y


def _member_seeds(random_state):
    return check_random_state(random_state).randint(np.iinfo(np.int32).max, size=2)


def test_costs_scores_and_weights_are_the_mixtures_of_the_two_families():
    X, Y = _data()
    loss = HierarchicalLoss(TREE)
    model = MixedRiskECRM(loss, TREE, kernel_options={
                              **KERNEL, "search": LeaveOneOutSearch(fit_intercept=True)},
                          forest_options=FOREST, mixing_grid=[0.3], random_state=1).fit(X, Y)
    assert model.mixture_ == 0.3
    Xt = np.random.default_rng(5).normal(size=(9, 3))
    kernel, forest = model.kernel_estimator_, model.forest_estimator_
    C = 0.3 * kernel.predict_costs(Xt) + 0.7 * forest.predict_costs(Xt)
    np.testing.assert_allclose(model.predict_costs(Xt), C, rtol=1e-12, atol=1e-14)
    W = model.conditional_weights(Xt)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-9)  # the kernel has an intercept
    np.testing.assert_allclose(W @ loss.psi(Y), C, rtol=1e-7, atol=1e-9)
    S = 0.3 * kernel.predict_scores(Xt) + 0.7 * forest.predict_scores(Xt)
    np.testing.assert_allclose(model.predict_scores(Xt), S, rtol=1e-12, atol=1e-14)
    assert TREE.consistent_scores(S.copy()).tolist() == S.tolist()  # still consistent
    np.testing.assert_array_equal(model.predict(Xt), loss.argmin(C, TREE))
    P = model.predict(Xt)
    direct = [W[k] @ loss(np.repeat(P[k:k + 1], len(Y), 0), Y) for k in range(len(Xt))]
    np.testing.assert_allclose(model.conditional_risk(Xt, P), direct, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("share", [0.0, 1.0], ids="share={}".format)
def test_the_ends_of_the_grid_are_the_pure_families(share):
    X, Y = _data()
    loss = HammingLoss()
    model = MixedRiskECRM(loss, TREE, kernel_options=KERNEL, forest_options=FOREST,
                          mixing_grid=[share], random_state=4).fit(X, Y)
    seeds = _member_seeds(4)
    pure = (ECRMCV(loss, TREE, **KERNEL, random_state=int(seeds[0])) if share == 1 else
            ForestECRMCV(loss, TREE, **FOREST, random_state=int(seeds[1]))).fit(X, Y)
    Xt = np.random.default_rng(6).normal(size=(15, 3))
    np.testing.assert_array_equal(model.predict(Xt), pure.predict(Xt))
    np.testing.assert_allclose(model.predict_costs(Xt), pure.predict_costs(Xt), rtol=1e-12)
    assert model.best_score_ == pytest.approx(pure.best_score_, rel=1e-12)


def test_honest_costs_are_the_explicit_leave_one_out_and_out_of_bag_costs():
    X, Y = _data(m=30)
    loss = HammingLoss()
    kernel = ECRMCV(loss, TREE, **KERNEL, search=LeaveOneOutSearch(fit_intercept=False))
    rows, K = kernel_loo_outputs(kernel, X, Y)
    m = len(X)
    assert rows.tolist() == list(range(m))
    for i in range(m):  # refit without each point, the same ridge term m * alpha
        keep = np.arange(m) != i
        refit = ECRM(loss, TREE, gamma=0.5, alpha=kernel.alpha_ * m / (m - 1),
                     fit_intercept=False).fit(X[keep], Y[keep])
        np.testing.assert_allclose(K[i], refit.predict_costs(X[i:i + 1])[0], rtol=1e-6,
                                   atol=1e-8)
    forest = ForestECRMCV(loss, TREE, **FOREST, random_state=0).fit(X, Y)
    F = forest.oob_costs()
    np.testing.assert_allclose(F, _explicit_oob_costs(forest, Y, loss), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("scoring", ["loss", "micro_auprc"])
def test_the_chosen_share_is_the_best_of_its_grid_on_the_honest_outputs(scoring):
    X, Y = _data(m=50, seed=3)
    loss = HierarchicalLoss(TREE)
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    model = MixedRiskECRM(loss, TREE, kernel_options=KERNEL, forest_options=FOREST,
                          mixing_grid=grid, scoring=scoring, random_state=2).fit(X, Y)
    seeds = _member_seeds(2)
    on_scores = scoring != "loss"
    kernel = ECRMCV(loss, TREE, **KERNEL, scoring=scoring, random_state=int(seeds[0]))
    rows, K = kernel_loo_outputs(kernel, X, Y, scores=on_scores)
    forest = ForestECRMCV(loss, TREE, **FOREST, scoring=scoring,
                          random_state=int(seeds[1])).fit(X, Y)
    F = forest.oob_scores() if on_scores else forest.oob_costs()
    seen = ~np.isnan(F).any(axis=1)
    brute = []
    for share in grid:  # every share judged from scratch
        mixed = share * K[seen] + (1 - share) * F[seen]
        if on_scores:
            brute.append(micro_auprc(Y[seen], mixed))
        else:
            brute.append(-np.mean(loss(loss.argmin(mixed, TREE), Y[seen])))
    np.testing.assert_allclose(model.cv_results_["mean_score"], brute, rtol=1e-12)
    assert model.mixture_ == grid[int(np.argmax(brute))]
    assert model.best_score_ == max(model.cv_results_["mean_score"])
    assert model.cv_results_["mixture"] == grid


def test_choose_mixture_judges_only_points_out_of_sample_in_both():
    Y = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    F = np.array([[0.9, 0.1], [np.nan, np.nan], [0.2, 0.9]])
    kernel = (np.array([0, 1, 2]), np.array([[0.1, 0.2], [0.0, 1.0], [0.9, 0.8]]))
    choice = choose_mixture(kernel, F, Y, [0.0, 1.0], metric=micro_auprc)
    assert choice.rows.tolist() == [0, 2] and choice.mixture == 0.0
    with pytest.raises(ValueError, match="same points' same columns"):
        choose_mixture((np.array([0, 1]), np.zeros((2, 3))), F, Y, 3, metric=micro_auprc)


def test_ranking_mixture_saves_and_loads_and_a_tampered_state_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    space = PermutationSpace(4)
    R = np.argsort(np.argsort(X @ rng.normal(size=(3, 4)) + 0.5 * rng.normal(size=(60, 4)),
                              axis=1), axis=1)
    model = MixedRiskECRM(KendallLoss(), space, kernel_options={"alphas": [1e-2, 1e-1]},
                          forest_options={"n_estimators": 10}, mixing_grid=5,
                          random_state=0).fit(X, space.from_ranks(R))
    save(model, tmp_path / "mixed.ecrm")
    loaded = load(tmp_path / "mixed.ecrm")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.mixture_ == model.mixture_ and loaded.cv_results_ == model.cv_results_
    other = next(v for v in model.cv_results_["mixture"] if v != model.mixture_)
    loaded.mixture_ = other
    with pytest.raises(ValueError, match="best share"):
        loaded._check_fitted_state()
    loaded = load(tmp_path / "mixed.ecrm")
    loaded.kernel_estimator_.output_space = PermutationSpace(5)
    with pytest.raises(ValueError, match="kernel member's output_space"):
        loaded._check_fitted_state()


@pytest.mark.parametrize("solver", ["primal", "nystrom"])
def test_a_mixture_whose_kernel_file_keeps_no_training_rows_loads(tmp_path, solver):
    X, Y = _data(m=60)
    options = {"alphas": [1e-3, 1e-2, 1e-1],
               **({"kernel": "linear", "solver": solver} if solver == "primal"
                  else {"solver": NystromSolver(n_components=20)})}
    model = MixedRiskECRM(HierarchicalLoss(TREE), TREE, kernel_options=options,
                          forest_options={"n_estimators": 10}, random_state=0).fit(X, Y)
    save(model, tmp_path / "mixed.ecrm")
    loaded = load(tmp_path / "mixed.ecrm")
    assert loaded.kernel_estimator_.Y_fit_ is None  # the feature fit's file holds no rows
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.Y_fit_, model.Y_fit_)


@pytest.mark.parametrize("kwargs, error, match", named([
    ({"mixing_grid": 1}, ValueError, "at least 2"),
    ({"mixing_grid": [0.5, 1.2]}, ValueError, r"in \[0, 1\]"),
    ({"mixing_grid": "half"}, TypeError, "mixing_grid"),
    ({"kernel_options": {"scoring": "lrap"}}, ValueError, "must not set"),
    ({"kernel_options": {"search": LeaveOneOutSearch(scoring="lrap")}}, ValueError,
     "kernel_options must not set \\[\"the search's scoring\"\\]"),
    ({"kernel_options": {"calibration": "isotonic"}}, ValueError, "calibration"),
    ({"forest_options": ["n_estimators"]}, TypeError, "dict of keyword"),
    ({"forest_options": {"max_features": 1.0}}, ValueError,
     "forest_options must be keyword arguments of ForestECRMCV; got \\['max_features'\\]"),
    ({"forest_options": {"search": OutOfBagSearch(scoring="lrap")}}, ValueError,
     "forest_options must not set \\[\"the search's scoring\"\\]"),
    ({"forest_options": {"search": OutOfBagSearch(split_search="x")}}, ValueError,
     "search: split_search"),
]))
def test_bad_parameters_are_refused_before_any_work(kwargs, error, match):
    X, Y = _data(m=10)
    with pytest.raises(error, match=match):
        MixedRiskECRM(HammingLoss(), TREE, **kwargs).fit(X, Y)


def test_a_loss_without_a_linear_form_is_refused():
    with pytest.raises(TypeError, match="linear form"):
        MixedRiskECRM(AbsoluteLoss(), TREE).fit(*_data(m=10))


def test_check_mixing_grid():
    assert check_mixing_grid(3).tolist() == [0.0, 0.5, 1.0]
    assert check_mixing_grid(11)[3] == 0.3
    assert check_mixing_grid([1.0, 0.0, 0.5, 0.5]).tolist() == [0.0, 0.5, 1.0]


def test_a_judge_scores_the_loss_oracles_outputs_by_another_loss():
    # costs of the footrule loss, minimised by its own oracle (the assignment),
    # judged by Kendall's distance: the mean of the judge on those outputs, share by share
    rng = np.random.default_rng(4)
    space, loss = PermutationSpace(4), FootruleLoss()
    Y = space.from_ranks(np.argsort(rng.random((30, 4)), axis=1)).astype(float)
    psi = loss.psi(Y)
    rows = np.arange(0, 30, 2)
    K, F = rng.normal(size=(len(rows), psi.shape[1])), rng.normal(size=psi.shape)
    grid = [0.0, 0.5, 1.0]
    choice = choose_mixture((rows, K), F, Y, grid, loss=loss, output_space=space,
                            judge=KendallLoss())
    expected = [np.mean(KendallLoss()(space.minimize(s * K + (1 - s) * F[rows],
                                                     loss.cost_form), Y[rows]))
                for s in grid]
    np.testing.assert_allclose(choice.mean_losses, expected, rtol=1e-12)
    assert choice.mixture == grid[int(np.argmin(expected))]
    own = choose_mixture((rows, K), F, Y, grid, loss=loss, output_space=space)
    assert not np.allclose(own.mean_losses, expected)  # the judge is what judged


@pytest.mark.parametrize("grid", [[0.0, 0.5, 1.0], [0.0, 0.0001, 0.0002], 11],
                         ids=["three-shares", "shares-near-zero", "eleven-shares"])
def test_the_choice_holds_the_oracles_outputs_at_the_chosen_share(grid):
    # explicitly: the oracle on the chosen share's mixed costs of the rows judged (ties, as
    # on a grid of near shares: the first best share's)
    rng = np.random.default_rng(2)
    loss = HammingLoss()
    Y = TREE.close(rng.random((25, TREE.n_outputs)) > 0.5).astype(float)
    psi = loss.psi(Y)
    rows = np.arange(1, 25)
    K = psi[rows] + rng.normal(size=(len(rows), psi.shape[1]))
    F = psi + rng.normal(size=psi.shape)
    F[3] = np.nan  # no tree left point 3 out
    choice = choose_mixture((rows, K), F, Y, grid, loss=loss, output_space=TREE)
    assert 3 not in choice.rows and len(choice.rows) == len(rows) - 1
    kept = np.isin(rows, choice.rows)
    share = choice.mixture
    assert share == choice.grid[int(np.argmax(choice.scores))]
    costs = share * K[kept] + (1.0 - share) * F[choice.rows]
    np.testing.assert_array_equal(choice.predictions, TREE.minimize(costs, loss.cost_form))
    np.testing.assert_allclose(np.mean(loss(choice.predictions, Y[choice.rows])),
                               -np.max(choice.scores), rtol=1e-12)
    scored = choose_mixture((rows, K), F, Y, grid, metric=micro_auprc)
    assert scored.predictions is None
