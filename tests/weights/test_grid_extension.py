"""The leave-one-out search extends its grid past a winning end.

A synthetic kernel ridge problem, y = sin(2 pi x) + noise on [0, 1], searched with the
criterion minus the mean squared leave-one-out error: its best alpha and gamma are known from
a wide fixed grid, and the extended search, started from a grid away from them, must reach
them; the leave-one-out values of the candidates it added must equal refits without each
point.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import linalg

from _round_off import ROOM, term_scale
from _shapes import TREE5 as TREE
from ecrm import ECRMCV, GridEdgeWarning, NystromSolver
from ecrm.losses import HammingLoss
from ecrm.selection import LeaveOneOutSearch
from ecrm.selection._criteria import CallableCriterion
from ecrm.selection._grid import alpha_limits
from ecrm.selection._loo import leave_one_out_search
from ecrm.weights._fit import Criterion, Outcome
from ecrm.weights.kernel._kernels import check_kernel_params, kernel_matrix
from ecrm.weights.kernel._solvers.dual import gram_eigendecomposition
from ecrm.weights.kernel._solvers.prepare import DualSource

EPS = np.finfo(float).eps


def _sine(m=40, noise=0.5, seed=0, periods=1):
    rng = np.random.default_rng(seed)
    X = rng.random((m, 1))
    return X, np.sin(2 * np.pi * periods * X[:, 0]) + noise * rng.normal(size=m)


def _rbf(gamma):
    return check_kernel_params(kernel="rbf", gamma=gamma, degree=3, coef0=1)


class _Recorded(Criterion):
    """Minus the mean squared leave-one-out error; keeps every trial's predictions."""

    def __init__(self):
        self.seen: dict[str, np.ndarray] = {}

    def evaluate(self, P, Y, where):
        self.seen[where] = P[:, 0].copy()
        return Outcome(-float(np.mean((Y - P) ** 2)))


def _search(X, y, alphas, gammas=(10.0,), criterion=None, **kw):
    settings = [_rbf(g) for g in gammas]
    source = DualSource(X, y[:, None], y[:, None].astype(float), settings,
                        gram_eigendecomposition)
    criterion = criterion or CallableCriterion(lambda Y, P: -float(np.mean((Y - P) ** 2)))
    search, _ = leave_one_out_search(source, settings, [(a, True) for a in alphas], criterion,
                                     **kw)
    return search


def _refit_without(K, y, i, ridge):
    """Kernel ridge with an unpenalised intercept on every point but ``i`` (the same ridge
    term m * alpha, as the exact leave-one-out keeps it), predicted at ``x_i``."""
    keep = np.arange(len(y)) != i
    G = K[np.ix_(keep, keep)] + ridge * np.eye(keep.sum())
    u = linalg.solve(G, np.ones(keep.sum()), assume_a="pos")
    b = u @ y[keep] / u.sum()
    a = linalg.solve(G, y[keep] - b, assume_a="pos")
    return K[i, keep] @ a + b


def test_the_search_reaches_the_best_alpha_outside_its_grid():
    X, y = _sine()
    wide = _search(X, y, np.logspace(-9, 3, 13))  # the known best: interior of a wide grid
    assert 1e-4 < wide.best.alpha < 1  # (0.01)
    for start in ([1e-6, 1e-5, 1e-4], [10.0, 100.0]):  # from below and from above
        search = _search(X, y, start, extend=True)
        assert search.best.alpha == pytest.approx(wide.best.alpha, rel=1e-12)
        assert search.best.score == pytest.approx(wide.best.score, rel=1e-9)
        added = [c for c in search.candidates if c.added]
        assert [c.alpha for c in search.candidates if not c.added] == start
        assert search.best in added and not search.stopped
        # a decade past the best was tried: the choice is interior to what was searched
        tried = sorted(c.alpha for c in search.candidates)
        assert tried[0] < search.best.alpha < tried[-1]


def test_added_candidates_equal_refits_without_each_point():
    # noiseless: the leave-one-out error falls with alpha down to the numerical floor
    X, y = _sine(m=30, noise=0.0, seed=1)
    recorded = _Recorded()
    search = _search(X, y, [1e-2, 1e-1, 1.0], criterion=recorded, extend=True)
    added = [c for c in search.candidates if c.added]
    assert len(added) >= 3 and min(c.alpha for c in added) < 1e-4
    K = kernel_matrix(X, X, **_rbf(10.0))
    lam_max, m = np.linalg.eigvalsh(K)[-1], len(y)
    for cand in added:
        ridge = m * cand.alpha
        brute = np.array([_refit_without(K, y, i, ridge) for i in range(m)])
        # both sides solve systems of condition <= (lam_max + ridge) / ridge: backward-stable
        # solves err by about m * eps * cond relative to the solution's scale (|y| <= 1)
        tol = 10 * m * EPS * (lam_max + ridge) / ridge
        loo = recorded.seen[f"the kernel {_rbf(10.0)} with alpha={cand.alpha!r}"]
        np.testing.assert_allclose(loo, brute, rtol=0, atol=tol)
        # the recorded score: |d (y - p)^2| <= 2 |y - p| tol + tol^2 per point, |y - p| <= 2
        np.testing.assert_allclose(cand.score, -np.mean((y - brute) ** 2), rtol=0,
                                   atol=5 * tol)


def test_the_floor_stops_the_extension_and_is_named():
    X, y = _sine(m=30, noise=0.0, seed=1)
    search = _search(X, y, [1e-2, 1e-1, 1.0], extend=True)
    low, _ = alpha_limits(1.0)  # RBF: max K_ii = 1
    tried = sorted(c.alpha for c in search.candidates)
    assert search.best.alpha == tried[0] >= low > tried[0] / 10
    (note,) = search.bounds_hit()
    assert "numerical floor sqrt(eps) * max K_ii = 1.49e-08" in note


def test_the_search_extends_gamma_by_the_grid_ratio_up_to_the_bound():
    X, y = _sine(m=60, noise=0.3, periods=2)
    alphas = np.logspace(-6, 0, 7)
    wide = _search(X, y, alphas, gammas=[0.25 * 2.0 ** k for k in range(10)])
    assert 1 < wide.best.kernel_params["gamma"] < 64  # the known best width (8)
    search = _search(X, y, alphas, gammas=[0.25, 0.5], extend=True, max_added_gammas=8)
    assert search.best.kernel_params["gamma"] == wide.best.kernel_params["gamma"]
    assert search.best.alpha == wide.best.alpha and not search.bounds_hit()
    gammas = sorted({c.kernel_params["gamma"] for c in search.candidates})
    np.testing.assert_allclose(np.diff(np.log2(gammas)), 1.0)  # the grid's own ratio, 2
    assert gammas[-1] > search.best.kernel_params["gamma"]  # one width past the best
    assert all(c.added == (c.kernel_params["gamma"] > 0.5 or c.alpha not in alphas)
               for c in search.candidates)
    short = _search(X, y, alphas, gammas=[0.25, 0.5], extend=True, max_added_gammas=1)
    assert short.best.kernel_params["gamma"] == 1.0
    assert any("gamma=1 (rbf kernel) is the largest" in note and "max_added_gammas=1" in note
               for note in short.bounds_hit())


def _labels(m=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    return X, TREE.close(X @ rng.normal(size=(3, 5)) + 0.7 * rng.normal(size=(m, 5)) > 0.2)


def test_ecrmcv_records_added_candidates_and_switches_off_exactly():
    X, Y = _labels()
    kw = {"alphas": [1e-6, 1e-5], "kernel_grid": {"gamma": [0.05, 0.1]}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)  # the extension ends interior
        grown = ECRMCV(HammingLoss(), TREE,
                       search=LeaveOneOutSearch(**kw, extend_grid=True)).fit(X, Y)
    results = grown.cv_results_
    assert results["added"].any() and grown.alpha_ > 1e-5
    assert len(results["alpha"]) == len(results["params"]) == len(results["rank"])
    with pytest.warns(GridEdgeWarning) as caught:  # the fixed grid warns at its ends
        fixed = ECRMCV(HammingLoss(), TREE,
                       search=LeaveOneOutSearch(**kw, extend_grid=False)).fit(X, Y)
    assert "alpha=1e-05 is the largest of the grid" in str(caught[0].message)
    assert not fixed.cv_results_["added"].any()
    given = ~results["added"]  # the grid's candidates: the same values, bit for bit
    for key in ("alpha", "fit_intercept", "mean_score", "mean_loss"):
        np.testing.assert_array_equal(results[key][given], fixed.cv_results_[key])
    # an interior choice: nothing is added and the fit is the fixed grid's, exactly
    kw = {"alphas": [1e-8, 1e-3, 1e4], "fit_intercept": True}
    a = ECRMCV(HammingLoss(), TREE, gamma=0.5,
               search=LeaveOneOutSearch(**kw, extend_grid=True)).fit(X, Y)
    b = ECRMCV(HammingLoss(), TREE, gamma=0.5,
               search=LeaveOneOutSearch(**kw, extend_grid=False)).fit(X, Y)
    assert not a.cv_results_["added"].any() and a.alpha_ == b.alpha_ == 1e-3
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_ecrmcv_warns_once_naming_the_bound():
    X, Y = _labels()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ECRMCV(HammingLoss(), TREE, alphas=[1e-6, 1e-5],
                       search=LeaveOneOutSearch(kernel_grid={"gamma": [0.001, 0.002]},
                                                extend_grid=True, max_added_gammas=0)).fit(X, Y)
    edges = [w for w in caught if issubclass(w.category, GridEdgeWarning)]
    assert len(edges) == 1 and "max_added_gammas=0" in str(edges[0].message)
    gamma = model.kernel_params_["gamma"]
    assert f"gamma={gamma:g} (rbf kernel)" in str(edges[0].message)


@pytest.mark.parametrize("params, message", [
    ({"extend_grid": "yes"}, "extend_grid"),
    ({"max_added_gammas": -1}, "max_added_gammas must be an integer >= 0"),
], ids=["extend_grid-not-a-bool", "max_added_gammas-negative"])
def test_ecrmcv_checks_the_extension_parameters(params, message):
    X, Y = _labels(m=10)
    with pytest.raises((ValueError, TypeError), match=message):
        ECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch(**params)).fit(X, Y)


def test_grid_edge_warning_is_public_under_its_old_name_too():
    from ecrm.exceptions import GridEdgeWarning as new
    from ecrm.selection._loo import GridEdgeWarning as old

    assert old is new is GridEdgeWarning and issubclass(new, UserWarning)


def test_reproduce_ranking_extends_the_grids_only_when_asked(tmp_path):
    import argparse

    from ecrm.experiments import _ranking_kernel as kernel_rankers
    from ecrm.experiments import ranking
    from ecrm.experiments.cache import InMemoryCache

    parser = argparse.ArgumentParser()
    ranking.add_parser(parser.add_subparsers())
    assert not parser.parse_args(["ranking"]).extend_grid  # the protocol's fixed grids
    assert parser.parse_args(["ranking", "--extend-grid"]).extend_grid
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    R = np.argsort(np.argsort(np.sin(3 * X) @ rng.randn(3, 4), axis=1), axis=1)  # wiggly
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        fixed = kernel_rankers._ecrm(X[:50], R[:50], X[50:], [0.01, 0.02], InMemoryCache(), 0)
        grown = kernel_rankers._ecrm(X[:50], R[:50], X[50:], [0.01, 0.02], InMemoryCache(), 0,
                              extend_grid=True)
    assert fixed["ECRM-squared"][1]["gamma"] == 0.02  # the largest: every width tried is too wide
    assert grown["ECRM-squared"][1]["gamma"] > 0.02  # gamma grows past it


@pytest.mark.parametrize("kw", [
    {"kernel_subsample": 40},  # the widths grow in stage 1, alpha in both stages
    {"solver": NystromSolver(n_components=30)},  # a new width draws its own centres
    {"scoring": "micro_auprc"},  # the oracle runs once, on the merged best
    {"alpha_search": "coarse-to-fine"},  # the decades follow the refined grid
], ids=["kernel_subsample", "nystrom", "scores", "coarse-to-fine"])
def test_extension_through_every_path_of_the_search(kw):
    X, Y = _labels()
    grid = {"kernel": ["rbf"], "gamma": [0.05, 0.1]}  # two widths: one is an end that wins
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        own = {k: v for k, v in kw.items() if k in ("solver", "scoring")}
        kw = {k: v for k, v in kw.items() if k not in own}
        model = ECRMCV(HammingLoss(), TREE, alphas=[1e-4, 1e-3, 1e-2], random_state=0, **own,
                       search=LeaveOneOutSearch(kernel_grid=grid, extend_grid=True, **kw))
        model.fit(X, Y)
    table = model.kernel_search_results_ or model.cv_results_  # where the kernel was chosen
    widths = {p["gamma"] for p, a in zip(table["params"], table["added"], strict=True) if a}
    assert widths - {0.05, 0.1}  # a width was added past an end (and alphas, marked too)
    best = table["params"][int(np.argmin(table["rank"]))]
    assert model.kernel_params_["gamma"] == best["gamma"]
    ranked = model.cv_results_["params"][int(np.argmin(model.cv_results_["rank"]))]
    assert (model.alpha_, model.fit_intercept_) == (ranked["alpha"], ranked["fit_intercept"])
    assert model.loo_predictions_.shape == (len(model.loo_rows_), Y.shape[1])
    assert model.predict(X[:5]).shape == (5, Y.shape[1])


def test_ecrm_fit_extends_the_grid_when_asked(ecrm_cmd, train_csv, tmp_path):
    args = ["fit", str(train_csv), "--path-sep", "/", "--cv", "--family", "kernel",
            "--alphas", "1e-9,1e-8", "-o", "m.ecrm", "--quiet"]
    fixed = ecrm_cmd(*args, cwd=tmp_path)  # the fixed grid's choice is its largest alpha
    assert "the chosen alpha=1e-08 is the largest of the grid" in fixed.stderr.decode()
    grown = ecrm_cmd(*args, "--extend-grid", cwd=tmp_path)
    err = grown.stderr.decode()
    assert grown.returncode == 0, err
    assert "is the largest of the grid" not in err
    info = ecrm_cmd("info", "m.ecrm", "--json", cwd=tmp_path)
    assert info.returncode == 0
    proc = ecrm_cmd("fit", str(train_csv), "--extend-grid", "-o", "n.ecrm", cwd=tmp_path)
    assert proc.returncode != 0 and "--extend-grid needs --cv" in proc.stderr.decode()


def test_a_model_file_keeps_a_choice_the_extension_added(tmp_path):
    import ecrm

    X, Y = _labels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        model = ECRMCV(HammingLoss(), TREE, alphas=[1e-6, 1e-5],
                       search=LeaveOneOutSearch(extend_grid=True,
                                                kernel_grid={"gamma": [0.05, 0.1]})).fit(X, Y)
    assert model.alpha_ not in (1e-6, 1e-5) and model.kernel_params_["gamma"] > 0.1
    ecrm.save(model, tmp_path / "m.ecrm")
    loaded = ecrm.load(tmp_path / "m.ecrm")
    # the same sums, the arrays in another layout: apart by a few ulps of the terms' size
    np.testing.assert_allclose(loaded.predict_costs(X), model.predict_costs(X), rtol=0,
                               atol=ROOM * term_scale(model, X))
    fixed = ECRMCV(HammingLoss(), TREE, alphas=[1e-6, 1e-5],
                   search=LeaveOneOutSearch(kernel_grid={"gamma": [0.05, 0.1]}))
    fixed.__dict__.update({k: v for k, v in vars(model).items()
                           if k not in model.get_params()})  # the fitted state alone
    with pytest.raises(ValueError, match="is not among the kernel settings"):
        ecrm.save(fixed, tmp_path / "f.ecrm")  # without the extension: not a fit it makes
        ecrm.load(tmp_path / "f.ecrm")
