"""ecrm.selection.loo_search: the exact leave-one-out search of ridge regressions of any
targets, checked against refits without each point and against ECRMCV's own draws."""

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge

from ecrm import NystromSolver
from ecrm.selection import LeaveOneOutSearch, loo_search


def _data(m=30, p=3, c=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(m, p)
    T = np.column_stack([np.sin(X @ rng.randn(p)), X @ rng.randn(p)])[:, :c]
    return X, T + 0.1 * rng.randn(m, c)


def _squared(T, P):
    return ((T - P) ** 2).sum(axis=1)


def _refits(make, X, T):
    """Leave-one-out predictions by m refits, each without its point."""
    return np.array([make().fit(np.delete(X, i, 0), np.delete(T, i, 0)).predict(X[i:i + 1])[0]
                     for i in range(len(X))])


def test_dual_matches_kernel_ridge_refits_without_each_point():
    X, T = _data()
    m, alphas = len(X), [1e-3, 1e-2, 1e-1]
    search = LeaveOneOutSearch(fit_intercept=False,
                               kernel_grid={"kernel": ["rbf"], "gamma": [0.2, 1.0]})
    choice = loo_search(X, T, _squared, alphas=alphas, search=search, solver="dual")
    # the criterion of every candidate by refits (ridge m * alpha, as in ECRM)
    for params, loss in zip(choice.cv_results["params"], choice.cv_results["mean_loss"],
                            strict=True):
        def make(params=params):
            return KernelRidge(alpha=m * params["alpha"], kernel="rbf", gamma=params["gamma"])
        assert loss == pytest.approx(_squared(T, _refits(make, X, T)).mean(), rel=1e-8)
    best = min(range(len(choice.cv_results["params"])),
               key=lambda k: choice.cv_results["mean_loss"][k])
    assert choice.cv_results["rank"][best] == 1
    assert choice.best_score == pytest.approx(-choice.cv_results["mean_loss"][best])
    model = KernelRidge(alpha=m * choice.alpha, kernel="rbf", gamma=choice.kernel_params["gamma"])
    np.testing.assert_allclose(choice.loo_predictions, _refits(lambda: model, X, T),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(choice.predict(X[:5] + 0.1), model.fit(X, T).predict(X[:5] + 0.1),
                               rtol=1e-7, atol=1e-9)


def test_primal_with_intercept_matches_ridge_refits():
    X, T = _data(40)
    m = len(X)
    choice = loo_search(X, T[:, 1], _squared, alphas=[1e-4, 1e-2, 1.0], kernel="linear",
                        search=LeaveOneOutSearch(fit_intercept=True), solver="primal")
    model = Ridge(alpha=m * choice.alpha, fit_intercept=True)
    loo = _refits(lambda: model, X, T[:, 1])
    np.testing.assert_allclose(choice.loo_predictions[:, 0], loo, rtol=1e-7, atol=1e-9)
    assert choice.best_score == pytest.approx(-np.mean((loo - T[:, 1]) ** 2), rel=1e-8)
    np.testing.assert_allclose(choice.predict(X[:3])[:, 0], model.fit(X, T[:, 1]).predict(X[:3]),
                               rtol=1e-7, atol=1e-9)
    assert choice.kernel_search_results is None and choice.fit_intercept is True


@pytest.mark.parametrize("solver", [
    {"search": LeaveOneOutSearch(kernel_grid={"kernel": ["linear", "rbf"], "gamma": [0.5]},
                                 kernel_subsample=30, loo_samples=20)},
    {"solver": NystromSolver(n_components=25),  # the centres, then the rows
     "search": LeaveOneOutSearch(loo_samples=20)},
], ids=["kernel-subsample-and-rows", "nystrom-centres-and-rows"])
def test_draws_follow_ecrmcv_with_the_same_random_state(solver):
    """The kernel subsample or the Nystrom centres, then the leave-one-out rows, as ECRMCV
    draws them (a different draw before the rows would move them)."""
    import warnings

    from ecrm import ECRMCV
    from ecrm.exceptions import GridEdgeWarning
    from ecrm.losses import SquaredRankLoss
    from ecrm.spaces.permutations import PermutationSpace

    X, T = _data(60, c=2, seed=2)
    R = np.argsort(np.argsort(np.column_stack([T, -T.sum(axis=1)]), axis=1), axis=1)
    space = PermutationSpace(3)
    shared = {"alphas": [1e-2, 1e-1], "random_state": 4, **solver}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        est = ECRMCV(SquaredRankLoss(), space, **shared).fit(X, space.from_ranks(R))
    choice = loo_search(X, R, lambda R, P: np.zeros(len(R)), **shared)
    np.testing.assert_array_equal(choice.loo_rows, est.loo_rows_)
    assert len(choice.loo_rows) == 20
    if solver["search"].kernel_subsample is not None:  # kernels x intercepts x alphas
        assert len(choice.kernel_search_results["params"]) == 2 * 2 * 2


def test_loo_search_refuses_bad_inputs_by_name():
    X, T = _data(20)
    with pytest.raises(ValueError, match=r"one value per point, shape \(20,\)"):
        loo_search(X, T, lambda T, P: np.zeros((len(T), 2)), alphas=[0.1])
    with pytest.raises(ValueError, match="different numbers of rows: 20 and 19"):
        loo_search(X, T[:19], _squared, alphas=[0.1])
    with pytest.raises(TypeError, match="loss must be a callable"):
        loo_search(X, T, "squared", alphas=[0.1])
    with pytest.raises(ValueError, match="judges by its loss"):
        loo_search(X, T, _squared, search=LeaveOneOutSearch(scoring="lrap"))
    with pytest.raises(ValueError, match="alphas is given both"):
        loo_search(X, T, _squared, alphas=[0.1], search=LeaveOneOutSearch(alphas=[1.0]))
    with pytest.raises(ValueError, match="solver"):
        loo_search(X, T, _squared, solver="qr")
