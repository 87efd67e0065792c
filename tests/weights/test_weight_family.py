"""A new weight family through public names only: one class, one fit object, one
registration line.

The toy family here (k nearest neighbours: :math:`w_i(x) = 1/k` on the k training points
nearest to x, k chosen by the leave-one-out task loss) fits, searches, predicts through the
exact oracle, gives the weights and label scores the shared code computes, goes through a
model file with its fitted state checked at load, and is fitted by ``ecrm fit --family knn``
and described by ``ecrm info``. Every registration is undone after its test.
"""

import json
import numbers

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import check_scalar

import ecrm
from ecrm.cli import main
from ecrm.losses import HammingLoss
from ecrm.model_files.io import ModelFileError
from ecrm.spaces import Hierarchy
from ecrm.testing import check_oracle
from ecrm.weights import (
    FAMILIES,
    HonestOutputs,
    RiskEstimator,
    RiskFit,
    RiskTargets,
    family_of,
    register_family,
    unregister_family,
)

pytestmark = [pytest.mark.filterwarnings("ignore::ecrm.exceptions.GridEdgeWarning"),
              pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def _neighbours(X, X_train, k, *, leave_out_self=False):
    """The k-nearest-neighbour weight rows of ``X`` (ties to the earlier training point)."""
    d = ((X[:, None, :] - X_train[None, :, :]) ** 2).sum(-1)
    if leave_out_self:
        np.fill_diagonal(d, np.inf)
    W = np.zeros_like(d)
    np.put_along_axis(W, np.argsort(d, axis=1, kind="stable")[:, :k], 1.0 / k, axis=1)
    return W


class ToyNeighboursFit(RiskFit):
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
        return _neighbours(X, self.X_train, self.n_neighbors)

    def weights(self, V):
        return V

    def to_state(self):
        return {"n_neighbors": self.n_neighbors, "n_risk": self.n_risk}

    @classmethod
    def from_state(cls, state, X_train=None):
        return cls(**state, X_train=X_train)

    def slim(self):
        return self


class ToyNeighboursECRM(RiskEstimator):
    """ECRM with k-nearest-neighbour weights, k chosen among ``n_neighbors`` by the exact
    leave-one-out task loss (the toy family)."""

    _fitted_attributes = tuple(a for a in RiskEstimator._fitted_attributes
                               if a != "kernel_params_") + ("n_neighbors_", "best_score_")

    #: What the search judges by (the criterion ecrm.selection.select_honestly compares).
    scoring = "loss"

    def __init__(self, loss, output_space, *, n_neighbors=(1, 3, 5)):
        self.loss = loss
        self.output_space = output_space
        self.n_neighbors = n_neighbors

    def _check_params(self):
        self._check_components(linear=True)
        return {"n_neighbors": tuple(check_scalar(k, "n_neighbors", numbers.Integral, min_val=1)
                                     for k in np.atleast_1d(self.n_neighbors).tolist())}

    def _search(self, X, Y, plan):
        """Each k's leave-one-out costs and minus its mean task loss; the best k's."""
        psi = RiskTargets(self.loss).risk(Y)[:, :-1]
        best = None
        for k in plan["n_neighbors"]:
            k = min(k, X.shape[0] - 1)
            C = _neighbours(X, X, k, leave_out_self=True) @ psi
            score = -float(np.mean(self.loss(self.output_space.minimize(C, self.loss.cost_form),
                                             Y)))
            if best is None or score > best[1]:
                best = (k, score, C)
        return best

    def fit_honest(self, X, Y, *, scores=False):
        plan = self._check_params()
        X, Y, seen = self._check_training_data(X, Y, None)
        k, score, C = self._search(X, Y, plan)
        targets = RiskTargets(self.loss)(Y)
        fit = ToyNeighboursFit(k, targets.shape[1] - Y.shape[1], X_train=X, coef=targets)
        self._set_fitted(X, Y, seen, _fit=fit, n_neighbors_=k, best_score_=score)
        values = _neighbours(X, X, k, leave_out_self=True) @ Y if scores else C
        return HonestOutputs(np.arange(X.shape[0]), values)

    def fit(self, X, Y):
        self.fit_honest(X, Y)
        return self

    @property
    def honest_score_(self):
        return self.best_score_

    def _check_own_state(self, plan, training):
        fit = self._fit
        if not isinstance(fit, ToyNeighboursFit) or fit.n_neighbors != self.n_neighbors_ or \
                self.n_neighbors_ not in [min(k, training.m - 1) for k in plan["n_neighbors"]]:
            raise ValueError("_fit must hold the n_neighbors_ weights, one of n_neighbors")
        fit.X_train, fit.coef = training.X, RiskTargets(self.loss)(training.Y)


def _describe(model):
    return {"weights": "knn", "n_neighbors": model.n_neighbors_,
            "selection": {"best_score": model.best_score_}}


@pytest.fixture(autouse=True)
def knn():
    """The family's one registration line, undone after each test."""
    family = register_family("knn", ToyNeighboursECRM, fits=(ToyNeighboursFit,), describe=_describe)
    yield family
    if "knn" in FAMILIES:
        unregister_family("knn")


H = Hierarchy({"a": None, "b": "a", "c": "a", "d": None})


def _data(seed=0, m=30):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(m, 3))
    Y = H.validate(np.column_stack([X[:, 0] > 0, (X[:, 0] > 0) & (X[:, 1] > 0),
                                    (X[:, 0] > 0) & (X[:, 1] <= 0), X[:, 2] > 0.5]))
    return X, Y


def test_a_new_family_predicts_its_own_weights_through_the_shared_code():
    X, Y = _data()
    model = ToyNeighboursECRM(HammingLoss(), H, n_neighbors=4).fit(X, Y)
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


def test_a_new_family_searches_by_its_honest_criterion():
    X, Y = _data(m=40)
    loss = HammingLoss()
    model = ToyNeighboursECRM(loss, H, n_neighbors=[1, 3, 5, 9])
    honest = model.fit_honest(X, Y)
    # brute force: each k's leave-one-out outputs, each point's k nearest others
    scores = []
    for k in (1, 3, 5, 9):
        P = np.array([ToyNeighboursECRM(loss, H, n_neighbors=k)
                      .fit(np.delete(X, i, 0), np.delete(Y, i, 0)).predict(X[i:i + 1])[0]
                      for i in range(len(X))])
        scores.append(-float(np.mean(loss(P, Y))))
    best = int(np.argmax(scores))  # the first best, as the search breaks ties
    assert model.n_neighbors_ == (1, 3, 5, 9)[best]
    np.testing.assert_allclose(model.honest_score_, scores[best], rtol=1e-12)
    np.testing.assert_array_equal(honest.rows, np.arange(len(X)))
    assert honest.values.shape == (len(X), loss.psi(Y).shape[1])
    # the family is chosen honestly among others by the same criterion
    from ecrm import ECRMCV
    from ecrm.selection import select_honestly

    choice = select_honestly([ECRMCV(loss, H, alphas=[1e-2, 1.0]), ToyNeighboursECRM(loss, H)],
                             X, Y)
    np.testing.assert_allclose(choice.scores, [ECRMCV(loss, H, alphas=[1e-2, 1.0]).fit(X, Y)
                                               .best_score_,
                                               ToyNeighboursECRM(loss, H).fit(X, Y).best_score_],
                               rtol=1e-12)


def test_a_new_family_goes_through_a_model_file(tmp_path):
    X, Y = _data()
    model = ToyNeighboursECRM(HammingLoss(), H, n_neighbors=5).fit(X, Y)
    path = tmp_path / "knn.ecrm"
    ecrm.save(model, path)
    back = ecrm.load(path)
    assert type(back) is ToyNeighboursECRM and back.n_neighbors == 5
    Xq = np.random.RandomState(2).normal(size=(9, 3))
    np.testing.assert_array_equal(back.predict(Xq), model.predict(Xq))
    np.testing.assert_allclose(back.predict_costs(Xq), model.predict_costs(Xq), atol=1e-12)
    unregister_family("knn")  # the class leaves the model files with its family
    with pytest.raises(ModelFileError, match="ToyNeighboursECRM"):
        ecrm.load(path)


def test_a_new_family_state_is_checked_at_load():
    X, Y = _data()
    model = ToyNeighboursECRM(HammingLoss(), H, n_neighbors=5).fit(X, Y)
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
    model = ToyNeighboursECRM(HammingLoss(), H)
    with pytest.raises(ValueError):
        model.fit(X, Y[:-1])
    assert not [a for a in model._fitted_attributes if a in vars(model)]
    import pandas as pd

    model.fit(pd.DataFrame(X, columns=["u", "v", "w"]), Y)
    assert list(model.feature_names_in_) == ["u", "v", "w"]
    model.fit(X, Y)  # without names: the old ones are gone
    assert not hasattr(model, "feature_names_in_")


def test_the_table_refuses_a_taken_name_or_class_name_and_a_non_estimator(knn):
    assert FAMILIES["knn"] is knn and family_of(ToyNeighboursECRM(HammingLoss(), H)) is knn
    with pytest.raises(ValueError, match="registered"):
        register_family("knn", ToyNeighboursECRM)
    with pytest.raises(ValueError, match="auto"):
        register_family("auto", ToyNeighboursECRM)
    other = type("ToyNeighboursECRM", (RiskEstimator,), {"__module__": "elsewhere"})
    with pytest.raises(ValueError, match="needs another name"):
        register_family("knn2", other)
    with pytest.raises(TypeError, match="template"):
        register_family("plain", type("Plain", (), {}))
    assert set(FAMILIES) == {"kernel", "forest", "neighbours", "mixed", "stack", "knn"}
    with pytest.raises(TypeError):
        FAMILIES["x"] = knn  # a read-only view: only register_family changes it


def test_ecrm_fit_and_info_handle_a_registered_family(tmp_path, capsys, train_csv, test_csv):
    model = tmp_path / "knn.ecrm"
    assert main(["fit", str(train_csv), "--path-sep", "/", "--family", "knn", "--cv",
                 "-o", str(model), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "knn weights" in out and "honest score" in out
    loaded = ecrm.load(model)
    assert type(loaded) is ToyNeighboursECRM and loaded.n_neighbors_ in (1, 3, 5)
    assert main(["info", str(model), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["estimator"] == "ToyNeighboursECRM" and info["weights"] == "knn"
    assert info["n_neighbors"] == loaded.n_neighbors_
    assert main(["info", str(model)]) == 0  # the text form too
    assert "knn" in capsys.readouterr().out
    assert main(["predict", str(model), str(test_csv), "-o", str(tmp_path / "p.csv"),
                 "--quiet"]) == 0
    # an option of another family is refused, naming it
    assert main(["fit", str(train_csv), "--path-sep", "/", "--family", "knn", "--gamma", "0.3",
                 "-o", str(tmp_path / "x.ecrm"), "--quiet"]) == 2
    assert "--gamma is an option of the kernel and mixed families" in capsys.readouterr().err


@pytest.mark.parametrize("argv, flag, family", [
    (["--family", "forest", "--gamma", "0.3"], "--gamma", "kernel"),
    (["--family", "kernel", "--trees", "5"], "--trees", "forest"),
    (["--family", "forest", "--cv", "--alphas", "0.1,1"], "--alphas", "kernel"),
    (["--family", "knn", "--trees", "5"], "--trees", "forest"),
], ids=["gamma-with-family-forest", "trees-with-family-kernel", "alphas-with-family-forest",
        "trees-with-family-knn"])
def test_ecrm_fit_refuses_an_option_the_family_does_not_read(argv, flag, family, tmp_path,
                                                             capsys, train_csv):
    out = tmp_path / "m.ecrm"
    assert main(["fit", str(train_csv), "--path-sep", "/", *argv, "-o", str(out),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{flag} is an option of the {family}" in err and \
        f"--family {argv[1]} does not use it" in err
    assert not out.exists()


def test_ecrm_info_describes_every_estimator_kind(tmp_path):
    from ecrm import (
        ECRM,
        ECRMCV,
        ForestECRM,
        ForestECRMCV,
        JointKernelECRM,
        MixedRiskECRM,
        StructuredSVM,
    )
    from ecrm.commands.info import summary

    X, Y = _data(m=40)
    loss = HammingLoss()
    models = {
        "kernel": [ECRM(loss, H), ECRMCV(loss, H, alphas=[1e-2, 1.0]),
                   StructuredSVM(loss, H, max_iter=3), JointKernelECRM(loss, H)],
        "forest": [ForestECRM(loss, H, n_estimators=5, random_state=0),
                   ForestECRMCV(loss, H, n_estimators=5, random_state=0)],
        "mixed": [MixedRiskECRM(loss, H, kernel_options={"alphas": [1e-2, 1.0]},
                                forest_options={"n_estimators": 5}, random_state=0)],
        "knn": [ToyNeighboursECRM(loss, H)],
    }
    for weights, estimators in models.items():
        for k, model in enumerate(estimators):
            path = tmp_path / f"{weights}{k}.ecrm"
            ecrm.save(model.fit(X, Y), path)
            info = summary(str(path))
            assert info["weights"] == weights and info["estimator"] == type(model).__name__
            assert info["n_train"] == 40 and info["n_features"] == 3
    unregister_family("knn")  # a model outside the table is still described
    info = summary(str(tmp_path / "knn0.ecrm"), ToyNeighboursECRM(loss, H, n_neighbors=3).fit(X, Y))
    assert info["weights"] == "unknown" and info["params"] == {"n_neighbors": 3}
