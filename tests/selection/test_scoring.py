"""ECRMCV(scoring=..., calibration=...): selection on the exact leave-one-out label scores."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import average_precision_score

from _round_off import ROOM, calibration_slope, term_scale
from _shapes import TREE7 as TREE
from ecrm import ECRM, ECRMCV
from ecrm.losses import HammingLoss
from ecrm.reporting.metrics import macro_auprc, micro_auprc
from ecrm.selection import LeaveOneOutSearch
from ecrm.selection._criteria import SCORERS, check_scoring
from ecrm.selection.calibration import IsotonicCalibration


def _problem(m=30, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    scores = X @ rng.normal(size=(p, TREE.n_labels)) + rng.normal(scale=0.8,
                                                                   size=(m, TREE.n_labels))
    return X, TREE.close(scores > 0.3), rng


@pytest.mark.parametrize("fit_intercept", [True, False], ids="fit_intercept={}".format)
def test_loo_scores_equal_refits_without_each_point(fit_intercept):
    X, Y, _ = _problem()
    m = len(X)
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-2, 1e-1], gamma=0.5, scoring="micro_auprc",
                search=LeaveOneOutSearch(fit_intercept=fit_intercept)).fit(X, Y)
    assert cv.loo_scores_.shape == Y.shape
    for i in range(m):
        keep = np.arange(m) != i
        # the same ridge term on the diagonal: (m - 1) * alpha' = m * alpha_
        refit = ECRM(HammingLoss(), TREE, gamma=0.5, alpha=cv.alpha_ * m / (m - 1),
                     fit_intercept=fit_intercept).fit(X[keep], Y[keep])
        np.testing.assert_allclose(refit.predict_scores(X[i:i + 1])[0], cv.loo_scores_[i],
                                   rtol=1e-7, atol=1e-9)
        np.testing.assert_array_equal(refit.predict(X[i:i + 1])[0], cv.loo_predictions_[i])


def test_selects_the_best_metric_of_its_own_table():
    X, Y, _ = _problem(m=50, seed=3)
    cv = ECRMCV(HammingLoss(), TREE, gamma=0.5, scoring="macro_auprc",
                search=LeaveOneOutSearch(fit_intercept="auto", kernel_grid=[
                    {"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.1, 1.0]}])).fit(X, Y)
    res = cv.cv_results_
    best = res["rank"] == 1
    assert cv.best_score_ == res["mean_score"].max() == res["mean_score"][best][0]
    assert np.isnan(res["mean_loss"]).all()  # no oracle ran in the search
    assert cv.best_score_ == pytest.approx(macro_auprc(Y, cv.loo_scores_))
    # the task-loss criterion still fills both columns, score = -loss
    plain = ECRMCV(HammingLoss(), TREE, gamma=0.5).fit(X, Y)
    np.testing.assert_array_equal(plain.cv_results_["mean_score"],
                                  -plain.cv_results_["mean_loss"])


def test_a_callable_scoring_is_used_as_given():
    X, Y, _ = _problem(seed=5)
    calls = []

    def first_label_ap(Y_true, S):
        calls.append(S.shape)
        return average_precision_score(Y_true[:, 0], S[:, 0])

    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-2, 1.0], gamma=0.5, scoring=first_label_ap,
                search=LeaveOneOutSearch(fit_intercept=True)).fit(X, Y)  # 2 candidates
    assert calls == [Y.shape, Y.shape]
    assert cv.best_score_ == pytest.approx(first_label_ap(Y, cv.loo_scores_))


def _refit_scores(cv, X, Y):
    """Each training point's scores by the selected model refitted without it."""
    m = len(X)
    return np.array([ECRM(HammingLoss(), TREE, gamma=0.5, alpha=cv.alpha_ * m / (m - 1),
                          fit_intercept=cv.fit_intercept_)
                     .fit(X[np.arange(m) != i], Y[np.arange(m) != i])
                     .predict_scores(X[i:i + 1])[0] for i in range(m)])


def test_isotonic_calibration_is_fitted_on_leave_one_out_scores_only():
    X, Y, rng = _problem(m=40, seed=7)
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-2, 1e-1], gamma=0.5, scoring="micro_auprc",
                search=LeaveOneOutSearch(calibration="isotonic")).fit(X, Y)
    S_loo = _refit_scores(cv, X, Y)  # from refits that never saw the point they score
    Xt = rng.normal(size=(20, X.shape[1]))
    raw = ECRM(HammingLoss(), TREE, gamma=0.5, alpha=cv.alpha_,
               fit_intercept=cv.fit_intercept_).fit(X, Y).predict_scores(Xt)
    expected = np.column_stack([
        IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
        .fit(S_loo[:, j], Y[:, j]).predict(raw[:, j]) for j in range(TREE.n_labels)])
    got = cv.predict_scores(Xt)
    np.testing.assert_allclose(got, TREE.cap_by_parents(expected), atol=1e-7)
    # consistent with the hierarchy: a child never above its parent
    for parent, child in TREE.edges:
        assert np.all(got[:, child] <= got[:, parent])


def test_calibration_is_monotone_per_label_and_in_the_unit_interval():
    rng = np.random.default_rng(0)
    S, Y = rng.random((200, 4)), rng.random((200, 4)) < 0.3
    cal = IsotonicCalibration().fit(S, Y)
    grid = np.linspace(-0.5, 1.5, 101)
    P = cal.transform(np.tile(grid[:, None], (1, 4)))
    assert np.all(np.diff(P, axis=0) >= 0) and P.min() >= 0 and P.max() <= 1


def test_scoring_names_and_errors():
    assert check_scoring("loss") is None and check_scoring(None) is None
    assert set(SCORERS) == {"micro_auprc", "macro_auprc", "lrap"}
    X, Y, _ = _problem()
    for bad in ("auc", 3):
        with pytest.raises(ValueError, match="scoring must be"):
            ECRMCV(HammingLoss(), TREE, scoring=bad).fit(X, Y)
    est = ECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch(calibration="beta"))
    with pytest.raises(ValueError, match="calibration must be one of None, .isotonic., .platt. or"):
        est.fit(X, Y)
    assert not hasattr(est, "alpha_")
    with pytest.raises(ValueError, match="same shape"):
        IsotonicCalibration().fit(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        IsotonicCalibration().fit(np.zeros((3, 2)), np.zeros((3, 2))).transform(np.zeros(3))


def test_macro_auprc_skips_labels_without_both_classes():
    Y = np.array([[1, 1, 0], [0, 1, 0], [1, 1, 0]])
    S = np.array([[0.9, 0.1, 0.3], [0.2, 0.5, 0.1], [0.7, 0.2, 0.9]])
    assert macro_auprc(Y, S) == average_precision_score(Y[:, 0], S[:, 0])
    assert np.isnan(macro_auprc(Y[:, 1:], S[:, 1:]))
    assert micro_auprc(Y, S, labels=["x", "y", "z"], exclude=["y", "z"]) == macro_auprc(Y, S)


def _calibrated_round_off(model, X) -> float:
    """How far a loaded model's calibrated scores may lie from the saved one's: its raw
    scores, the same sums over arrays in another layout, a few ulps of the terms' size apart,
    moved by at most the calibration's slope times that, plus the map's own round-off."""
    return ROOM * (calibration_slope(model.score_calibration_) * term_scale(model, X) + 1)


def test_a_calibrated_model_file_round_trip(tmp_path):
    from ecrm import load, save

    X, Y, rng = _problem(m=40, seed=9)
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-2, 1e-1], gamma=0.5, scoring="micro_auprc",
                search=LeaveOneOutSearch(calibration="isotonic")).fit(X, Y)
    save(cv, tmp_path / "m.ecrm")
    loaded = load(tmp_path / "m.ecrm")
    Xt = rng.normal(size=(10, X.shape[1]))
    np.testing.assert_allclose(loaded.predict_scores(Xt), cv.predict_scores(Xt), rtol=0,
                               atol=_calibrated_round_off(cv, Xt))
    np.testing.assert_array_equal(loaded.predict(Xt), cv.predict(Xt))  # labels: exact


def test_calibration_arrays_are_checked_when_restored():
    with pytest.raises(ValueError, match="give all three"):
        IsotonicCalibration(breakpoints=[0.0, 1.0])
    with pytest.raises(ValueError, match="indptr must start at 0"):
        IsotonicCalibration([0.0, 1.0], [0.0, 1.0], [0, 3])


def test_scores_scoring_needs_the_dual_solver():
    X, Y, _ = _problem()
    est = ECRMCV(HammingLoss(), TREE, kernel="linear", solver="primal", scoring="micro_auprc")
    with pytest.raises(ValueError, match="need solver='dual'"):
        est.fit(X, Y)
    assert not hasattr(est, "alpha_")


def test_coarse_to_fine_needs_the_dual_solver():
    X, Y, _ = _problem()
    est = ECRMCV(HammingLoss(), TREE, kernel="linear", solver="primal",
                 search=LeaveOneOutSearch(alpha_search="coarse-to-fine"))
    with pytest.raises(ValueError, match="alpha_search='coarse-to-fine' needs solver='dual'"):
        est.fit(X, Y)
    assert not hasattr(est, "alpha_")


def test_one_alpha_shares_its_product_between_intercepts_bit_for_bit():
    from ecrm.weights.kernel._ridge import LeaveOneOut
    from ecrm.weights.kernel._solvers.dual import gram_eigendecomposition

    X, Y, _ = _problem(m=25, seed=11)
    eig = gram_eigendecomposition(X, {"kernel": "rbf", "gamma": 0.5, "degree": 3, "coef0": 1})
    shared = LeaveOneOut(eig, Y.astype(float))
    for ridge in (0.1, 0.1, 2.0, 0.1):
        for intercept in (True, False, True):
            fresh = LeaveOneOut(eig, Y.astype(float)).predictions(ridge, intercept)
            np.testing.assert_array_equal(shared.predictions(ridge, intercept), fresh)


def test_coarse_to_fine_evaluates_half_the_grid_and_finds_the_grid_maximum():
    X, Y, _ = _problem(m=60, seed=13)
    alphas = np.logspace(-5, 1, 13)
    grid = [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.1, 1.0]}]
    kw = dict(alphas=alphas, fit_intercept="auto", kernel_grid=grid, scoring="micro_auprc")
    full = ECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch(**kw)).fit(X, Y)
    fast = ECRMCV(HammingLoss(), TREE,
                  search=LeaveOneOutSearch(**kw, alpha_search="coarse-to-fine")).fit(X, Y)
    res, table = fast.cv_results_, full.cv_results_
    coarse = set(alphas[::2].tolist())
    from collections import Counter

    per_kernel = Counter((p["kernel"], p.get("gamma")) for p in res["params"])
    # per kernel: the 7 coarse alphas and at most 2 neighbours, each with 2 intercepts
    assert len(per_kernel) == 3 and all(n <= 2 * 9 for n in per_kernel.values())
    assert coarse <= set(res["alpha"].tolist()) and len(res["alpha"]) < len(table["alpha"])
    # every evaluated candidate has the full grid's score
    by_key = dict(zip(map(str, table["params"]), table["mean_score"], strict=True))
    for p, score in zip(res["params"], res["mean_score"], strict=True):
        assert by_key[str(p)] == score
    # on this problem the criterion is unimodal in alpha: the same choice
    assert (fast.alpha_, fast.fit_intercept_, fast.kernel_params_) == (
        full.alpha_, full.fit_intercept_, full.kernel_params_)
    np.testing.assert_array_equal(fast.loo_scores_, full.loo_scores_)


def test_alpha_search_must_be_known():
    X, Y, _ = _problem()
    est = ECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch(alpha_search="golden"))
    with pytest.raises(ValueError, match="alpha_search must be 'grid' or 'coarse-to-fine'"):
        est.fit(X, Y)
    assert not hasattr(est, "alpha_")


def test_platt_calibration_minimises_its_objective_per_label():
    from scipy.optimize import minimize

    from ecrm.selection.calibration import PlattCalibration

    rng = np.random.default_rng(1)
    S = rng.random((150, 4))
    Y = rng.random((150, 4)) < S * [0.3, 0.8, 0.0, 1.0]  # label 2 has no positive
    Y[:, 3] = True  # and label 3 no negative
    cal = PlattCalibration().fit(S, Y)
    assert np.isfinite(cal.a_).all() and np.isfinite(cal.b_).all()
    for j in range(4):
        n = Y[:, j].sum()
        t = np.where(Y[:, j], (n + 1) / (n + 2), 1 / (len(S) - n + 2))

        def objective(w, j=j, t=t):
            z = S[:, j] * w[0] + w[1]
            return np.sum(np.logaddexp(0, z) - t * z) + 1e-8 * float(np.dot(w, w))

        direct = minimize(objective, [0.0, 0.0], method="BFGS", options={"gtol": 1e-9}).x
        np.testing.assert_allclose([cal.a_[j], cal.b_[j]], direct, rtol=1e-4, atol=1e-4)
        assert objective([cal.a_[j], cal.b_[j]]) <= objective(direct) + 1e-9
    P = cal.transform(np.tile(np.linspace(0, 1, 11)[:, None], (1, 4)))
    assert np.all(np.diff(P[:, :2], axis=0) > 0) and P.min() > 0 and P.max() < 1
    restored = PlattCalibration(cal.a_, cal.b_)
    np.testing.assert_array_equal(restored.transform(S), cal.transform(S))
    with pytest.raises(ValueError, match="give both or neither"):
        PlattCalibration(a=[1.0])
    with pytest.raises(ValueError, match="same shape"):
        PlattCalibration().fit(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        PlattCalibration().fit(np.full((3, 1), np.nan), np.zeros((3, 1)))


def test_auto_calibration_compares_cross_fitted_scores_on_training_data_only():
    from ecrm.selection.calibration import CALIBRATIONS, choose_calibration

    X, Y, rng = _problem(m=60, seed=17)
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-2, 1e-1], gamma=0.5, scoring="micro_auprc",
                random_state=4, search=LeaveOneOutSearch(calibration="auto")).fit(X, Y)
    S = cv.loo_scores_
    # the same folds as the estimator's: its random_state after the search drew nothing
    folds = np.random.RandomState(4).permutation(len(S)) % 5
    for name in ("isotonic", "platt"):
        C = np.empty_like(S)
        for k in range(5):
            tr, te = folds != k, folds == k
            C[te] = CALIBRATIONS[name]().fit(S[tr], Y[tr]).transform(S[te])
        assert cv.calibration_results_[name] == pytest.approx(
            micro_auprc(Y, TREE.cap_by_parents(C)), abs=1e-12)
    assert cv.calibration_results_["none"] == pytest.approx(micro_auprc(Y, S), abs=1e-12)
    options = {k: v for k, v in cv.calibration_results_.items() if k != "standard_error"}
    best = max(options, key=options.get)
    kept = best != "none" and options[best] - options["none"] > \
        cv.calibration_results_["standard_error"]
    assert cv.calibration_ == (best if kept else None)
    if cv.calibration_ is not None:  # refitted on all the leave-one-out scores
        ref = CALIBRATIONS[cv.calibration_]().fit(S, Y)
        Xt = rng.normal(size=(5, X.shape[1]))
        raw = ECRM(HammingLoss(), TREE, gamma=0.5, alpha=cv.alpha_,
                   fit_intercept=cv.fit_intercept_).fit(X, Y).predict_scores(Xt)
        np.testing.assert_allclose(cv.predict_scores(Xt),
                                   TREE.cap_by_parents(ref.transform(raw)), atol=1e-9)
    choice = choose_calibration("platt", S, Y, metric=micro_auprc, consistent=lambda S: S)
    assert choice.name == "platt" and choice.scores == {}
    assert choose_calibration(None, S, Y, metric=micro_auprc, consistent=lambda S: S) \
        .calibration is None
    with pytest.raises(ValueError, match="calibration must be one of None"):
        choose_calibration("beta", S, Y, metric=micro_auprc, consistent=lambda S: S)


def test_a_platt_calibrated_model_is_consistent_and_round_trips(tmp_path):
    from ecrm import load, save

    X, Y, rng = _problem(m=40, seed=19)
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-2, 1e-1], gamma=0.5, scoring="micro_auprc",
                search=LeaveOneOutSearch(calibration="platt")).fit(X, Y)
    Xt = rng.normal(size=(30, X.shape[1]))
    got = cv.predict_scores(Xt)
    for parent, child in TREE.edges:  # a child never above its parent after calibration
        assert np.all(got[:, child] <= got[:, parent])
    save(cv, tmp_path / "m.ecrm")
    np.testing.assert_allclose(load(tmp_path / "m.ecrm").predict_scores(Xt), got, rtol=0,
                               atol=_calibrated_round_off(cv, Xt))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 30))
def test_isotonic_thresholds_equal_sklearn_isotonic_regression(data, m):
    from ecrm.selection.calibration import _isotonic_thresholds

    # tied scores, scores equal to within float resolution, and free floats
    values = st.one_of(st.sampled_from([0.0, 0.2, 0.2 + 1e-16, 0.5, 1.0]),
                       st.floats(-2, 2, allow_nan=False))
    s = np.array(data.draw(st.lists(values, min_size=m, max_size=m)))
    y = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=m, max_size=m)))
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, y)
    x, v = _isotonic_thresholds(s, y)
    np.testing.assert_array_equal(x, iso.X_thresholds_)
    np.testing.assert_array_equal(v, iso.y_thresholds_)


def test_platt_calibration_is_fitted_on_leave_one_out_scores_only():
    from ecrm.selection.calibration import PlattCalibration

    X, Y, rng = _problem(m=30, seed=23)
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-2, 1e-1], gamma=0.5, scoring="micro_auprc",
                search=LeaveOneOutSearch(calibration="platt")).fit(X, Y)
    S_loo = _refit_scores(cv, X, Y)
    ref = PlattCalibration().fit(S_loo, Y)
    np.testing.assert_allclose(cv.score_calibration_.a_, ref.a_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cv.score_calibration_.b_, ref.b_, rtol=1e-6, atol=1e-8)
    Xt = rng.normal(size=(10, X.shape[1]))
    raw = ECRM(HammingLoss(), TREE, gamma=0.5, alpha=cv.alpha_,
               fit_intercept=cv.fit_intercept_).fit(X, Y).predict_scores(Xt)
    np.testing.assert_allclose(cv.predict_scores(Xt),
                               TREE.cap_by_parents(ref.transform(raw)), atol=1e-7)


def _fold_gains(S, Y, name, folds):
    from ecrm.selection.calibration import CALIBRATIONS

    C = np.empty_like(S)
    for k in np.unique(folds):
        C[folds == k] = CALIBRATIONS[name]().fit(S[folds != k], Y[folds != k]).transform(
            S[folds == k])
    return C, np.array([micro_auprc(Y[folds == k], C[folds == k])
                        - micro_auprc(Y[folds == k], S[folds == k]) for k in np.unique(folds)])


@pytest.mark.parametrize("case, seed", [("miscalibrated", 5), ("mild", 3)])
def test_auto_calibration_keeps_a_gain_only_beyond_one_standard_error(case, seed):
    from ecrm.selection.calibration import choose_calibration

    rng = np.random.default_rng(seed)
    p = rng.random((300, 3))
    Y = rng.random((300, 3)) < p
    # miscalibrated: each label's scores squeezed into its own band, which a pooled ranking
    # metric punishes and a per-label map undoes; mild: one label's scores shrunk by 10%,
    # a gain (here 0.001) well within its fold-to-fold noise
    S = p * [0.01, 0.1, 1.0] + [0.9, 0.5, 0.0] if case == "miscalibrated" else p * [1, 0.9, 1]
    choice = choose_calibration("auto", S, Y, metric=micro_auprc, consistent=lambda S: S,
                                random_state=0)
    folds = np.random.RandomState(0).permutation(300) % 5
    best = max(("platt", "isotonic"), key=lambda n: choice.scores[n])
    C, gains = _fold_gains(S, Y, best, folds)
    se = np.std(gains, ddof=1) / np.sqrt(5)
    gain = choice.scores[best] - choice.scores["none"]
    assert choice.scores[best] == pytest.approx(micro_auprc(Y, C), abs=1e-12)
    assert gain > 0 and choice.scores["standard_error"] == pytest.approx(se, rel=1e-9)
    if case == "miscalibrated":  # a large, certain gain
        assert choice.name == best and gain > 3 * se
    else:  # the best by the metric, but within its noise: the scores stay as they are
        assert choice.name is None and gain < se
