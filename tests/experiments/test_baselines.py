import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from _shapes import TREE5 as H
from ecrm.baselines import BRSVM, BinaryRelevance


def _data(seed=0, n=120):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = H.close((X @ rng.normal(size=(4, H.n_labels))) > 0.5)
    Y[:, H.index["b1"]] = 0  # a constant label
    return X, Y


def test_binary_relevance_is_consistent_and_handles_constant_labels():
    X, Y = _data()
    br = BinaryRelevance(LogisticRegression(), H).fit(X, Y)
    assert isinstance(br.estimators_[H.index["b1"]], float)
    P = br.predict(X)
    assert H.is_consistent(P).all()
    S = br.decision_function(X)
    assert np.all(S[:, H.index["b1"]] <= -1.0)  # -1, or lower when capped by its parent
    for p, c in H.edges:
        assert np.all(S[:, c] <= S[:, p])


def test_a_positive_child_switches_on_its_parent():
    class Always:  # a fitted classifier stub that predicts 1 for label a1 only
        def predict(self, X):
            return np.ones(len(X))

    br = BinaryRelevance(LogisticRegression(), H)
    br.estimators_ = [0.0, Always(), 0.0, 0.0, 0.0]
    P = br.predict(np.zeros((2, 4)))
    assert P[0, H.index["a"]] == 1 and P[0, H.index["a1"]] == 1 and P[0].sum() == 2


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_brsvm_tunes_on_a_subsample_and_fits_all(kernel):
    X, Y = _data(1, n=150)
    model = BRSVM(H, kernel=kernel, Cs=(0.1, 10.0), tuning_samples=90).fit(X, Y)
    assert model.best_params_["C"] in (0.1, 10.0)
    assert H.is_consistent(model.predict(X)).all()
    with pytest.raises(ValueError, match="kernel must be"):
        BRSVM(H, kernel="poly").fit(X, Y)


@pytest.mark.parametrize("params, match", [
    ({"Cs": ()}, "Cs must hold at least one"),
    ({"Cs": (1.0, -1.0)}, r"each of Cs must be a real number in \(0, inf\); got -1.0"),
    ({"kernel": "rbf", "gammas": (float("nan"),)}, "each of gammas must be a real number"),
    ({"cv": 1}, "cv must be an integer >= 2; got 1"),
    ({"tuning_samples": 0}, "tuning_samples must be an integer >= 1; got 0"),
    ({"tuning_labels": 2.5}, "tuning_labels must be an integer >= 1; got 2.5"),
], ids=["Cs-empty", "Cs-negative", "gammas-nan", "cv-one-fold", "tuning_samples-zero",
        "tuning_labels-not-an-integer"])
def test_brsvm_rejects_bad_parameters_before_fitting(params, match):
    X, Y = _data(n=30)
    model = BRSVM(H, **params)
    with pytest.raises(ValueError, match=match):
        model.fit(X, Y)
    assert not hasattr(model, "model_")


def test_binary_relevance_checks_rows_and_uses_the_spaces_score_hook():
    X, Y = _data(n=40)
    with pytest.raises(ValueError, match="X and Y must have the same number of rows; got 40 "
                                         "and 39"):
        BinaryRelevance(LogisticRegression(), H).fit(X, Y[:-1])
    br = BinaryRelevance(LogisticRegression(), H).fit(X, Y)
    raw = BinaryRelevance(LogisticRegression()).fit(X, Y).decision_function(X)
    np.testing.assert_allclose(br.decision_function(X), H.consistent_scores(raw))
