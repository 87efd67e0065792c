"""Solvers beyond one m x m matrix: primal, Nystrom, streaming, primal LOO."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import config_context

from _ids import readable
from _shapes import TREE7 as TREE
from ecrm import ECRM, ECRMCV, NystromSolver
from ecrm.datasets.flows import simulate_flows
from ecrm.losses import AbsoluteLoss, FootruleLoss, HammingLoss, HierarchicalLoss, SquaredLoss
from ecrm.selection import LeaveOneOutSearch
from ecrm.spaces.flows import paper_network
from ecrm.spaces.permutations import PermutationSpace
from ecrm.weights.kernel._solvers.centers import select_centers
from ecrm.weights.kernel._solvers.choice import check_solver_params
from ecrm.weights.kernel._solvers.features import LinearFeatures, NystromFeatures
from ecrm.weights.kernel._solvers.normal_equations import NormalEquations
from ecrm.weights.kernel._solvers.primal import PrimalLeaveOneOut

RBF = {"kernel": "rbf", "gamma": 0.2, "degree": 3, "coef0": 1}


def _problem(m=40, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    scores = X @ rng.normal(size=(p, TREE.n_labels)) + rng.normal(scale=0.8,
                                                                  size=(m, TREE.n_labels))
    return X, TREE.close(scores > 0.3), rng.normal(size=(9, p))


def _same_model(a, b, Xt, atol=1e-8):
    assert_allclose(a.predict_costs(Xt), b.predict_costs(Xt), atol=atol)
    assert_allclose(a.predict_scores(Xt), b.predict_scores(Xt), atol=atol)
    assert_allclose(a.conditional_weights(Xt), b.conditional_weights(Xt), atol=atol)
    assert_array_equal(a.predict(Xt), b.predict(Xt))


@pytest.mark.parametrize("fit_intercept", [True, False], ids="fit_intercept={}".format)
@pytest.mark.parametrize("loss", [HammingLoss(), HierarchicalLoss(TREE)], ids=readable)
def test_nystrom_with_every_point_a_centre_equals_the_dual(loss, fit_intercept):
    X, Y, Xt = _problem()
    kw = dict(kernel="rbf", gamma=0.2, alpha=1e-2, fit_intercept=fit_intercept)
    dual = ECRM(loss, TREE, solver="dual", **kw).fit(X, Y)
    nys = ECRM(loss, TREE, solver=NystromSolver(len(X)), random_state=0, **kw).fit(X, Y)
    _same_model(dual, nys, Xt)
    assert not hasattr(nys, "dual_coef_") and nys.coef_.shape[0] <= len(X)


@pytest.mark.parametrize("sparse", [False, True], ids="sparse={}".format)
@pytest.mark.parametrize("fit_intercept", [True, False], ids="fit_intercept={}".format)
def test_primal_linear_equals_dual_linear(fit_intercept, sparse):
    X, Y, Xt = _problem(m=50, p=6)
    Xs = sp.csr_matrix(X) if sparse else X
    kw = dict(kernel="linear", alpha=1e-3, fit_intercept=fit_intercept)
    dual = ECRM(HammingLoss(), TREE, solver="dual", **kw).fit(X, Y)
    primal = ECRM(HammingLoss(), TREE, solver="primal", **kw).fit(Xs, Y)
    _same_model(dual, primal, sp.csr_matrix(Xt) if sparse else Xt)
    assert primal.coef_.shape == (X.shape[1], dual.dual_coef_.shape[1])


@pytest.mark.parametrize("solver,kw", [("primal", {"kernel": "linear"}),
                                       (NystromSolver(n_components=40),
                                        {"kernel": "rbf", "gamma": 0.2})],
                         ids=["primal", "nystrom"])
def test_ecrmcv_primal_loo_table_equals_the_dual(solver, kw):
    X, Y, Xt = _problem()
    grid = dict(alphas=[1e-3, 1e-2, 1e-1], search=LeaveOneOutSearch(fit_intercept="auto"))
    dual = ECRMCV(HierarchicalLoss(TREE), TREE, solver="dual", **grid, **kw).fit(X, Y)
    low = ECRMCV(HierarchicalLoss(TREE), TREE, solver=solver, random_state=0, **grid,
                 **kw).fit(X, Y)
    assert_allclose(low.cv_results_["mean_loss"], dual.cv_results_["mean_loss"],
                    atol=1e-12)
    assert (low.alpha_, low.fit_intercept_) == (dual.alpha_, dual.fit_intercept_)
    assert_array_equal(low.loo_predictions_, dual.loo_predictions_)
    _same_model(dual, low, Xt)


@pytest.mark.parametrize("fit_intercept", [True, False], ids="fit_intercept={}".format)
def test_primal_leave_one_out_equals_refit_without_each_point(fit_intercept):
    # Nystrom features on 15 fixed centres; each refit drops point i and keeps the same
    # features and the same ridge term m * alpha.
    X, Y, _ = _problem(m=30)
    features = NystromFeatures(X[::2], RBF)
    loss = HammingLoss()

    def targets(Yb):
        return np.column_stack([loss.psi(Yb), loss.const(Yb)])

    equations = NormalEquations.accumulate(features, X, Y, targets)
    ridge = 30 * 1e-2
    loo = PrimalLeaveOneOut(equations, fit_intercept, targets(Y[:1]).shape[1])
    F = features.transform(X)
    got = loo.predictions(loo.project(F), targets(Y), ridge)
    for i in range(len(X)):
        rest = np.delete(np.arange(len(X)), i)
        fit = NormalEquations.accumulate(features, X, Y, targets, rows=rest).solve(
            ridge, fit_intercept)
        assert_allclose(got[i], F[i] @ fit.coef + fit.intercept, atol=1e-9)


def test_streaming_and_block_prediction_do_not_change_the_model():
    X, Y, Xt = _problem(m=60)
    kw = dict(kernel="rbf", gamma=0.2, alpha=1e-2, random_state=0,
              solver=NystromSolver(n_components=25))
    whole = ECRM(HierarchicalLoss(TREE), TREE, **kw).fit(X, Y)
    with config_context(working_memory=1e-4):  # a few rows per block
        blocks = ECRM(HierarchicalLoss(TREE), TREE, **kw).fit(X, Y)
        _same_model(whole, blocks, Xt, atol=1e-10)
        dual = ECRM(HammingLoss(), TREE, gamma=0.2).fit(X, Y)
        assert_allclose(dual.predict_costs(Xt),
                        ECRM(HammingLoss(), TREE, gamma=0.2).fit(X, Y).predict_costs(Xt))
    assert_allclose(dual.predict_costs(Xt), ECRM(HammingLoss(), TREE, gamma=0.2).fit(X, Y)
                    .predict_costs(Xt), atol=1e-12)


@pytest.mark.parametrize("solver", ["dual", "primal", "nystrom"])
def test_every_solver_serves_a_loss_without_linear_form(solver):
    # Absolute and squared losses on flows predict through the risk weights.
    space = paper_network()
    X, Y = simulate_flows(70, random_state=0)
    for loss in (AbsoluteLoss(), SquaredLoss()):
        kernel = "linear" if solver == "primal" else "rbf"
        est = ECRM(loss, space, kernel=kernel, gamma=0.05, alpha=1e-3, random_state=0,
                   solver=NystromSolver(60) if solver == "nystrom" else solver
                   ).fit(X[:60], Y[:60])
        W = est.conditional_weights(X[60:])
        assert_allclose(W.sum(axis=1), 1.0, atol=1e-10)
        expected = loss.minimize_risk(W, Y[:60], space)
        assert_allclose(est.predict(X[60:]), expected, atol=1e-9)


@pytest.mark.parametrize("solver", ["primal", "nystrom"])
def test_ranking_losses_with_every_solver(solver):
    rng = np.random.default_rng(1)
    space = PermutationSpace(4)
    X = rng.normal(size=(30, 3))
    Y = space.from_scores(X @ rng.normal(size=(3, 4)) + 0.3 * rng.normal(size=(30, 4)))
    kw = dict(kernel="linear") if solver == "primal" else dict(gamma=0.3)
    dual = ECRM(FootruleLoss(), space, solver="dual", alpha=1e-2, **kw).fit(X, Y)
    low = ECRM(FootruleLoss(), space, alpha=1e-2, **kw,
               solver=NystromSolver(30) if solver == "nystrom" else solver).fit(X, Y)
    assert_allclose(low.predict_costs(X[:5]), dual.predict_costs(X[:5]), atol=1e-8)


def test_fitted_models_keep_no_m_by_m_factor():
    rng = np.random.default_rng(0)
    m, p = 600, 5
    X = rng.normal(size=(m, p))
    Y = TREE.close(X @ rng.normal(size=(p, TREE.n_labels)) > 0)
    e = TREE.n_labels + 1
    for est in (ECRM(HammingLoss(), TREE, gamma=0.2), ECRMCV(HammingLoss(), TREE, gamma=0.2,
                                                              alphas=[1e-3, 1e-2]),
                ECRM(HammingLoss(), TREE, solver=NystromSolver(n_components=50))):
        size = len(pickle.dumps(est.fit(X, Y)))
        assert size < 8 * m * (p + 6 * e) + 100_000 < 8 * m * m / 3, (est, size)
        clone = pickle.loads(pickle.dumps(est))
        assert_allclose(clone.conditional_weights(X[:3]), est.conditional_weights(X[:3]))


def test_auto_takes_the_dual_then_the_exact_primal_then_refuses():
    X, Y, Xt = _problem(m=60)
    auto = ECRM(HammingLoss(), TREE, kernel="linear", solver="auto", memory_budget=1e-6)
    assert not hasattr(auto.fit(X, Y), "dual_coef_")  # over budget: the exact primal
    assert_allclose(auto.predict_costs(Xt), ECRM(HammingLoss(), TREE, kernel="linear")
                    .fit(X, Y).predict_costs(Xt), atol=1e-8)
    with pytest.raises(ValueError, match="solver='nystrom'.*memory_budget"):
        ECRM(HammingLoss(), TREE, solver="auto", memory_budget=1e-6).fit(X, Y)
    with pytest.raises(ValueError, match="solver='dual' needs .* over memory_budget"):
        ECRM(HammingLoss(), TREE, solver="dual", memory_budget=1e-6).fit(X, Y)


@pytest.mark.parametrize("method", ["uniform", "kmeans++", "leverage"])
def test_center_selections_give_distinct_training_points(method):
    X, _, _ = _problem(m=80)
    idx = select_centers(X, 20, RBF, method, alpha=1e-2, random_state=0)
    assert len(np.unique(idx)) == 20 and idx.min() >= 0 and idx.max() < 80
    assert_array_equal(idx, select_centers(X, 20, RBF, method, alpha=1e-2, random_state=0))
    est = ECRM(HammingLoss(), TREE, gamma=0.2, alpha=1e-2, solver=NystromSolver(20, method),
               random_state=0).fit(X, _problem(m=80)[1])
    assert_allclose(est._fit.features.centres, X[idx])


def test_nystrom_features_are_rank_revealing():
    X = np.vstack([np.eye(3), np.eye(3)])  # duplicated centres: K_MM has rank 3
    f = NystromFeatures(X, RBF)
    assert f.n_features_out == 3
    F = f.transform(X)
    assert_allclose(F @ F.T, np.exp(-0.2 * ((X[:, None] - X[None]) ** 2).sum(-1)), atol=1e-12)
    assert LinearFeatures(3).transform(sp.csr_matrix(np.eye(3))).tolist() == np.eye(3).tolist()


def test_caller_arrays_are_not_modified():
    X, Y, Xt = _problem()
    Xc, Yc = X.copy(), Y.copy()
    ECRMCV(HammingLoss(), TREE, solver=NystromSolver(n_components=10), alphas=[1e-2]).fit(X, Y)
    assert_array_equal(X, Xc)
    assert_array_equal(Y, Yc)


# -- bad input: each named, at fit, before any work --------------------------------------
@pytest.mark.parametrize("params,match", [
    ({"solver": "qr"}, "solver must be one of"),
    ({"solver": "nystrom", "n_components": 41}, "n_components=41 must be at most"),
    ({"solver": "nystrom", "n_components": 0}, "n_components must be an integer >= 1"),
    ({"solver": "nystrom", "n_components": 2.5}, "n_components must be an integer"),
    ({"solver": "nystrom", "center_selection": "random"}, "center_selection must be one of"),
    ({"solver": "primal", "kernel": "rbf"}, "solver='primal' needs kernel='linear'"),
    ({"solver": "nystrom", "memory_budget": -1.0}, "memory_budget must be a real number"),
    ({"solver": "nystrom", "n_components": 40, "memory_budget": 1e-6}, "n_components=40 needs"),
], ids=readable)
@pytest.mark.parametrize("cls", [ECRM, ECRMCV])
def test_bad_solver_settings_are_named_before_any_work(cls, params, match):
    X, Y, _ = _problem()
    nystrom = {k: v for k, v in params.items() if k in ("n_components", "center_selection")}
    if nystrom:  # the Nystrom solver's settings, on its object
        params = {**{k: v for k, v in params.items() if k not in nystrom},
                  "solver": NystromSolver(**nystrom)}
    est = cls(HammingLoss(), TREE, **params)
    with pytest.raises(ValueError, match=match):
        est.fit(X, Y)
    assert not hasattr(est, "X_fit_")


def test_precomputed_kernel_needs_the_dual():
    X, Y, _ = _problem()
    with pytest.raises(ValueError, match="kernel='precomputed'; use solver='dual'"):
        ECRM(HammingLoss(), TREE, kernel="precomputed", solver="nystrom").fit(X @ X.T, Y)


def test_primal_kernel_grid_must_be_linear():
    X, Y, _ = _problem()
    with pytest.raises(ValueError, match="kernel='linear' in every kernel_grid"):
        ECRMCV(HammingLoss(), TREE, kernel="linear", solver="primal",
               search=LeaveOneOutSearch(kernel_grid=[{"kernel": ["linear"]},
                                                     {"kernel": ["rbf"]}])).fit(X, Y)


def test_check_solver_params_resolves_auto():
    assert check_solver_params("auto", None, m=100, p=3,
                               kernel="rbf").solver == "dual"
    assert check_solver_params("nystrom", None, m=100, p=3,
                               kernel="rbf").method.n_features(100, 3) == 100


@pytest.mark.parametrize("dtype", [np.uint8, bool])
@pytest.mark.parametrize("solver", ["primal", "nystrom"])
def test_compact_outputs_kept_compact_and_same_model(solver, dtype):
    """A 1-byte Y stays 1-byte in the primal fits (floats per block) and fits the same model."""
    X, Y, Xt = _problem(m=60)
    kw = dict(solver=solver if solver == "primal" else NystromSolver(n_components=30),
              kernel="linear" if solver == "primal" else "rbf", random_state=0)
    ref = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1], **kw).fit(X, Y)
    est = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1], **kw).fit(X, Y.astype(dtype))
    assert est.Y_fit_.dtype == dtype and ref.Y_fit_.dtype == float
    assert_array_equal(est.Y_fit_, ref.Y_fit_)
    assert_array_equal(est.loo_predictions_, ref.loo_predictions_)
    _same_model(est, ref, Xt, atol=0)


def test_compact_outputs_inconsistent_row_named():
    X, Y, _ = _problem(m=60)
    bad = Y.astype(np.uint8)
    bad[41, TREE.labels.index("a")] = 0  # "a1" is on
    bad[41, TREE.labels.index("a1")] = 1
    with pytest.raises(ValueError, match="in row 41"):
        ECRM(HammingLoss(), TREE, solver="primal", kernel="linear").fit(X, bad)


def test_the_budget_counts_what_each_solver_states():
    from ecrm.weights.kernel._solvers.budget import DUAL_COPIES
    from ecrm.weights.kernel._solvers.choice import check_solver_params, memory_need

    # ECRMCV's dual peaks at about three m x m arrays (benchmarks/bench_memory.py measures
    # 3.10): at m = 3500 two copies (0.18 GiB) fit 0.25 GiB, its stated peak (0.32 GiB) does not
    m = 3500
    assert 2 * 8 * m * m < 0.25 * 2**30 < DUAL_COPIES[True] * 8 * m * m
    with pytest.raises(ValueError, match=r"solver='dual' needs 0.3 GiB"):
        check_solver_params("dual", 0.25, m=m, p=3, kernel="rbf", cv=True)
    assert check_solver_params("dual", 0.25, m=m, p=3, kernel="rbf",
                               cv=False).solver == "dual"
    need = memory_need("nystrom", m=10**5, p=3, kernel="rbf", cv=True, n_components=500,
                       n_targets=10)
    assert need.matrices == 8 * 500 * 500 * 4 and 0 < need.blocks <= 1.2 * 2**30


def test_center_selection_takes_a_selector_object_or_its_shorthand(tmp_path):
    from ecrm import load, save
    from ecrm.weights.kernel._solvers.centers import CenterSelector, KMeansPlusPlusCenters

    class FirstRows(CenterSelector):
        def select(self, X, n_components, kernel_params, *, alpha, random_state):
            return np.arange(n_components)

    X, Y, Xt = _problem(m=80)
    kw = dict(kernel="rbf", gamma=0.2, random_state=0)
    own = ECRM(HammingLoss(), TREE, solver=NystromSolver(20, FirstRows()), **kw).fit(X, Y)
    assert_array_equal(own._fit.features.centres, X[:20])
    by_name = ECRM(HammingLoss(), TREE, solver=NystromSolver(20, "kmeans++"), **kw).fit(X, Y)
    by_object = ECRM(HammingLoss(), TREE, solver=NystromSolver(20, KMeansPlusPlusCenters()),
                     **kw).fit(X, Y)
    assert_array_equal(by_name._fit.features.centres, by_object._fit.features.centres)
    save(by_object, tmp_path / "m.ecrm")
    assert isinstance(load(tmp_path / "m.ecrm").solver.center_selection, KMeansPlusPlusCenters)
    with pytest.raises(ValueError, match="center_selection must be one of .* or a "
                                         "CenterSelector"):
        ECRM(HammingLoss(), TREE, solver=NystromSolver(20, "nearest"), **kw).fit(X, Y)
