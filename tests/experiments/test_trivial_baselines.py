"""Trivial baselines, the warnings about a model no better than them, the per-label report
and the feature-scale warning at fit, against hand-computed values."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ecrm import ECRM, ECRMCV, Hierarchy, load, save
from ecrm.baselines import check_against_baselines, output_statistics, trivial_baselines
from ecrm.estimators._validation import check_feature_scales
from ecrm.exceptions import FeatureScaleWarning, TrivialModelWarning
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.reporting.metrics import multilabel_report, per_label_report

H = Hierarchy([("a", "a1"), ("a", "a2")])  # columns a, a1, a2; costs 1, 1/2, 1/2
Y_TRAIN = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 0]])
Y_TRUE = np.array([[1, 0, 1], [0, 0, 0]])


def test_output_statistics_are_the_label_frequencies_and_the_most_frequent_set():
    mean, mode = output_statistics(Y_TRAIN)
    assert_allclose(mean, [0.75, 0.5, 0.25])
    assert_array_equal(mode, [1, 1, 0])
    assert mode.dtype == float
    _, first = output_statistics(np.array([[0, 1], [1, 0], [1, 0], [0, 1]], dtype=bool))
    assert_array_equal(first, [0, 1])  # a tie: the row seen first


def test_trivial_baselines_match_hand_computed_metrics():
    mean, mode = output_statistics(Y_TRAIN)
    r = trivial_baselines(Y_TRUE, mean, mode, hierarchy=H)
    assert list(r) == ["empty", "most_frequent", "majority"]
    # empty: row 1 misses a (cost 1, a1/a2 not counted under a wrong parent), row 2 right
    assert r["empty"] == pytest.approx({"hamming": 1.0, "hamming_fraction": 1 / 3,
                                        "hierarchical": 0.5, "exact_match": 0.5,
                                        "macro_f1": 0.0, "hP": 0.0, "hR": 0.0, "hF": 0.0})
    # most frequent {a, a1}: row 1 a1 and a2 wrong (1/2 + 1/2), row 2 a wrong (1)
    assert r["most_frequent"] == pytest.approx({
        "hamming": 2.0, "hamming_fraction": 2 / 3, "hierarchical": 1.0, "exact_match": 0.0,
        "macro_f1": 2 / 9, "hP": 0.25, "hR": 0.5, "hF": 1 / 3})
    # majority {a} (a1 is on in exactly half the rows: not more): row 1 a2, row 2 a wrong
    assert r["majority"] == pytest.approx({
        "hamming": 1.0, "hamming_fraction": 1 / 3, "hierarchical": 0.75, "exact_match": 0.0,
        "macro_f1": 2 / 9, "hP": 0.5, "hR": 0.5, "hF": 0.5})
    assert "hierarchical" not in trivial_baselines(Y_TRUE, mean, mode)["empty"]


def test_the_majority_is_closed_under_the_hierarchy():
    r = trivial_baselines([[1, 0, 1]], [0.4, 0.2, 0.6], [0, 0, 0], hierarchy=H)
    assert r["majority"]["exact_match"] == 1.0  # {a2} closed to {a, a2}
    with pytest.raises(ValueError, match="one value per column"):
        trivial_baselines(Y_TRUE, [0.5, 0.5], [0, 0])


def _check(Y_pred, **kw):
    mean, mode = output_statistics(Y_TRAIN)
    base = trivial_baselines(Y_TRUE, mean, mode, hierarchy=H)
    report = multilabel_report(Y_TRUE, Y_pred, hierarchy=H)
    return check_against_baselines(Y_TRUE, Y_pred, report, base, **kw)


def test_a_model_better_than_every_baseline_gets_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _check(Y_TRUE) == []


def test_a_model_no_better_than_a_baseline_is_named_and_warned_about():
    with pytest.warns(TrivialModelWarning, match="standardised"):
        messages = _check(np.zeros((2, 3)))
    # hierarchical loss 0.5: ties the empty set's, beats the majority's 0.75 and the mode's
    # 1.0; half the rows empty is not more than twice the true share (one half)
    assert messages == ["the model's hierarchical loss 0.5000 is no better than 0.5000, that "
                        "of always predicting the empty set"]
    on_hamming = _check(np.zeros((2, 3)), metric="hamming", warn=False)
    assert len(on_hamming) == 2 and "majority" in on_hamming[1]  # 1.0, as the majority's
    with pytest.raises(ValueError, match="metric must be"):
        _check(np.zeros((2, 3)), metric="f1")


def test_many_empty_predictions_are_warned_about():
    Y_true = np.array([[1, 1, 0]] * 4 + [[1, 0, 1]])
    Y_pred = np.array([[1, 1, 0]] * 3 + [[0, 0, 0]] * 2)
    base = trivial_baselines(Y_true, [0.1, 0.0, 0.0], [0, 0, 0], hierarchy=H)
    report = multilabel_report(Y_true, Y_pred, hierarchy=H)
    messages = check_against_baselines(Y_true, Y_pred, report, base, warn=False)
    assert messages == ["the model predicts the empty set for 40.0% of the rows; 0.0% of the "
                        "true sets are empty"]
    assert check_against_baselines(Y_true, Y_pred, report, base, empty_share=0.5,
                                   warn=False) == []


def test_per_label_report_closes_the_sets_under_the_hierarchy():
    r = per_label_report([[1, 0, 1], [1, 1, 0]], [[0, 0, 1], [0, 0, 1]], H)
    # closed predictions: {a, a2} twice
    assert r["support"].tolist() == [2, 1, 1] and r["predicted"].tolist() == [2, 0, 2]
    assert_allclose(r["precision"], [1.0, 0.0, 0.5])
    assert_allclose(r["recall"], [1.0, 0.0, 1.0])
    assert_allclose(r["f1"], [1.0, 0.0, 2 / 3])
    with pytest.raises(ValueError, match="one 2-D shape"):
        per_label_report([[1, 0]], [[1, 0, 0]])


# -- the feature scales at fit ---------------------------------------------------------------
X_UNSCALED = np.array([[0.1, 20000.0, 7.0], [0.5, 90000.0, 7.0], [0.3, 45000.0, 7.0]])


def test_check_feature_scales_ratio_by_hand_leaves_constant_columns_out():
    with pytest.warns(FeatureScaleWarning, match=r"'income': 2\.9e\+04, 'ratio': 0\.163"):
        ratio = check_feature_scales(X_UNSCALED, "ECRM", names=["ratio", "income", "const"])
    # std(0.1, 0.5, 0.3) = sqrt(0.08/3); std(20000, 90000, 45000) = sqrt(2.5167e9/3)
    assert ratio == pytest.approx(np.sqrt(2516666666.67 / 3) / np.sqrt(0.08 / 3))
    with pytest.warns(FeatureScaleWarning, match="feature 1: "):
        assert check_feature_scales(sp.csr_matrix(X_UNSCALED), "ECRM") == pytest.approx(ratio)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_feature_scales(X_UNSCALED[:, [0, 2]], "ECRM") == 1.0  # one varies
        assert check_feature_scales(X_UNSCALED * [1000, 1, 1], "ECRM") < 1e3


def _unscaled(m=40, seed=0):
    """Income in dollars beside two ratios; the labels follow the ratios."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(50000, 20000, m), rng.uniform(size=(m, 2))]
    return X, H.close(np.c_[np.zeros(m), X[:, 1:] > 0.5])


@pytest.mark.filterwarnings("ignore::ecrm.selection._loo.GridEdgeWarning")
@pytest.mark.parametrize("make", [
    lambda: ECRM(HierarchicalLoss(H), H),
    lambda: ECRMCV(HierarchicalLoss(H), H, alphas=[1e-3, 1e-1])], ids=["ECRM", "ECRMCV"])
def test_fit_warns_on_unscaled_features_unless_a_scaler_comes_first(make):
    X, Y = _unscaled()
    with pytest.warns(FeatureScaleWarning, match=f"^{type(make()).__name__}: the features' "
                      "standard deviations differ by a factor of"):
        make().fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        make_pipeline(StandardScaler(), make()).fit(X, Y)
        ECRM(HammingLoss(), H, kernel="precomputed").fit(X @ X.T, Y)  # no features to scale


def test_fit_keeps_the_output_statistics_in_every_model_file(tmp_path):
    X, Y = np.arange(8.0).reshape(4, 2), Y_TRAIN
    for kw in ({}, {"kernel": "linear", "solver": "primal"}):
        model = ECRM(HammingLoss(), H, **kw).fit(X, Y)
        assert_allclose(model.output_mean_, [0.75, 0.5, 0.25])
        assert_array_equal(model.output_mode_, [1, 1, 0])
        save(model, tmp_path / "m.ecrm")
        back = load(tmp_path / "m.ecrm")
        assert (back.Y_fit_ is None) == ("solver" in kw)  # a feature fit keeps no Y_fit_
        assert_array_equal(back.output_mean_, model.output_mean_)
        assert_array_equal(back.output_mode_, model.output_mode_)
    back.output_mean_ = np.zeros(2)
    with pytest.raises(ValueError, match=r"output_mean_ must have shape \(3,\)"):
        back._check_fitted_state()
