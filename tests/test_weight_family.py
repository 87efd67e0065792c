"""A new weight family is one class on the estimator template plus one registration line.

The toy family here (k nearest neighbours: :math:`w_i(x) = 1/k` on the k training points
nearest to x) touches no library file: it fits, predicts through the exact oracle, gives
the weights and label scores the shared code computes, and goes through a model file with
its fitted state checked at load.
"""

import numpy as np
import pytest
from sklearn.base import clone

import ecrm
from ecrm._registry import register
from ecrm._risk import _ECRMBase
from ecrm._solvers.base import RiskFit
from ecrm._solvers.rows import RiskTargets
from ecrm._state import _int
from ecrm.losses import HammingLoss
from ecrm.spaces import Hierarchy
from ecrm.testing import check_oracle


class NeighboursFit(RiskFit):
    """The k-nearest-neighbour weights as a fit: the block of a row is its weight row."""

    coef_name = "coef_"
    ridge, fit_intercept = 1.0, False

    def __init__(self, n_neighbors, n_risk, *, X_train=None, coef=None):
        self.n_neighbors, self.n_risk, self.X_train, self.coef = n_neighbors, n_risk, X_train, coef

    @property
    def n_columns(self):
        return self.X_train.shape[0]

    @property
    def intercept(self):
        return np.zeros(self.coef.shape[1])

    def block(self, X):
        d = ((X[:, None, :] - self.X_train[None, :, :]) ** 2).sum(-1)
        W = np.zeros_like(d)
        near = np.argsort(d, axis=1, kind="stable")[:, :self.n_neighbors]
        np.put_along_axis(W, near, 1.0 / self.n_neighbors, axis=1)
        return W

    def weights(self, V):
        return V

    def to_state(self):
        return {"n_neighbors": self.n_neighbors, "n_risk": self.n_risk}

    @classmethod
    def from_state(cls, state, X_train=None):
        return cls(**state, X_train=X_train)

    def slim(self):
        return self


class NeighboursECRM(_ECRMBase):
    """ECRM with k-nearest-neighbour weights (the toy family)."""

    _input_kernel = None
    _fitted_attributes = tuple(a for a in _ECRMBase._fitted_attributes if a != "kernel_params_")

    def __init__(self, loss, output_space, *, n_neighbors=3):
        self.loss = loss
        self.output_space = output_space
        self.n_neighbors = n_neighbors

    def _check_params(self):
        self._check_components()
        return {"n_neighbors": _int(self.n_neighbors, "n_neighbors", 1)}

    def fit(self, X, Y):
        plan = self._check_params()
        X, Y, seen = self._check_training_data(X, Y, None)
        targets = RiskTargets(self.loss)(Y)
        fit = NeighboursFit(min(plan["n_neighbors"], X.shape[0]),
                            targets.shape[1] - Y.shape[1], X_train=X, coef=targets)
        self._set_fitted(X, Y, seen, _fit=fit)
        return self

    def _check_own_state(self, plan, training):
        fit = self._fit
        if not isinstance(fit, NeighboursFit) or \
                fit.n_neighbors != min(plan["n_neighbors"], training.m):
            raise ValueError("_fit must hold the n_neighbors weights of the parameters")
        fit.X_train, fit.coef = training.X, RiskTargets(self.loss)(training.Y)


@pytest.fixture(scope="module", autouse=True)
def registered():
    register(NeighboursFit, NeighboursFit.to_state)  # the table lines of the new family
    register(NeighboursECRM)


H = Hierarchy({"a": None, "b": "a", "c": "a", "d": None})


def _data(seed=0, m=30):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(m, 3))
    Y = H.validate(np.column_stack([X[:, 0] > 0, (X[:, 0] > 0) & (X[:, 1] > 0),
                                    (X[:, 0] > 0) & (X[:, 1] <= 0), X[:, 2] > 0.5]))
    return X, Y


def test_a_new_family_predicts_its_own_weights_through_the_shared_code():
    X, Y = _data()
    model = NeighboursECRM(HammingLoss(), H, n_neighbors=4).fit(X, Y)
    Xq = np.random.RandomState(1).normal(size=(7, 3))
    W = model.conditional_weights(Xq)
    near = np.argsort(((Xq[:, None] - X[None]) ** 2).sum(-1), axis=1)[:, :4]
    expected = np.zeros((7, len(X)))
    np.put_along_axis(expected, near, 0.25, axis=1)
    np.testing.assert_allclose(W, expected, atol=1e-12)
    loss = HammingLoss()
    C = model.predict_costs(Xq)
    np.testing.assert_allclose(C, W @ loss.psi(Y), rtol=1e-12, atol=1e-12)
    check_oracle(H, C, loss=loss, oracle=lambda c: model.predict(Xq))  # exact minimisers
    np.testing.assert_allclose(model.predict_scores(Xq), H.consistent_scores(W @ Y),
                               atol=1e-12)
    np.testing.assert_allclose(model.conditional_risk(Xq, model.predict(Xq)),
                               (W * loss(np.repeat(model.predict(Xq), len(X), axis=0),
                                         np.tile(Y, (7, 1))).reshape(7, -1)).sum(1),
                               atol=1e-12)


def test_a_new_family_goes_through_a_model_file(tmp_path):
    X, Y = _data()
    model = NeighboursECRM(HammingLoss(), H, n_neighbors=5).fit(X, Y)
    path = tmp_path / "knn.ecrm"
    ecrm.save(model, path)
    back = ecrm.load(path)
    assert type(back) is NeighboursECRM and back.n_neighbors == 5
    Xq = np.random.RandomState(2).normal(size=(9, 3))
    np.testing.assert_array_equal(back.predict(Xq), model.predict(Xq))
    np.testing.assert_allclose(back.predict_costs(Xq), model.predict_costs(Xq), atol=1e-12)


def test_a_new_family_state_is_checked_at_load():
    X, Y = _data()
    model = NeighboursECRM(HammingLoss(), H, n_neighbors=5).fit(X, Y)
    model._check_fitted_state()  # what fit made passes
    tampered = clone(model).set_params(n_neighbors=2)
    for name in model._fitted_attributes:
        if name in vars(model):
            setattr(tampered, name, getattr(model, name))
    with pytest.raises(ValueError, match="n_neighbors"):
        tampered._check_fitted_state()
    model.Y_fit_ = model.Y_fit_[:-1]
    with pytest.raises(ValueError, match="Y_fit_"):
        model._check_fitted_state()


def test_a_failed_fit_sets_nothing_and_a_refit_keeps_no_old_state():
    X, Y = _data()
    model = NeighboursECRM(HammingLoss(), H)
    with pytest.raises(ValueError):
        model.fit(X, Y[:-1])
    assert not [a for a in model._fitted_attributes if a in vars(model)]
    import pandas as pd

    model.fit(pd.DataFrame(X, columns=["u", "v", "w"]), Y)
    assert list(model.feature_names_in_) == ["u", "v", "w"]
    model.fit(X, Y)  # without names: the old ones are gone
    assert not hasattr(model, "feature_names_in_")


def test_registering_a_second_class_of_the_same_name_is_refused():
    other = type("NeighboursECRM", (_ECRMBase,), {"__module__": "elsewhere"})
    with pytest.raises(ValueError, match="needs another name"):
        register(other)
    with pytest.raises(TypeError, match="template"):
        register(type("Plain", (), {}))
