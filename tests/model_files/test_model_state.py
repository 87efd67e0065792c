"""Declared fitted state: what a fit sets, what a model file holds, what a load accepts."""

import hashlib
import json
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from _round_off import ROOM, term_scale
from _shapes import TREE7 as TREE
from ecrm import ECRM, ECRMCV, JointKernelECRM, NystromSolver, load, save
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.model_files.io import ModelFileError


def _data(m=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    scores = X @ rng.normal(size=(3, TREE.n_labels)) + rng.normal(scale=0.8,
                                                                  size=(m, TREE.n_labels))
    return X, TREE.close(scores > 0.3)


def _edited(tmp_path, model, edit):
    """Save ``model``, pass its metadata through ``edit`` and re-sign it (a careful tamperer)."""
    path = tmp_path / "good.ecrm"
    save(model, path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(members["ecrm-model.json"])
    edit(meta)
    members["ecrm-model.json"] = json.dumps(meta).encode()
    members["ecrm-model.sha256"] = hashlib.sha256(members["ecrm-model.json"]).hexdigest().encode()
    bad = tmp_path / "edited.ecrm"
    with zipfile.ZipFile(bad, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    return bad


@pytest.fixture(scope="module")
def fitted():
    X, Y = _data()
    return ECRM(HammingLoss(), TREE, gamma=0.3).fit(X, Y)


@pytest.mark.parametrize("name", ["predict", "__dict__", "__class__", "fit", "_pending",
                                  "dual_coef_", "anything_"])
def test_undeclared_fitted_names_are_refused(fitted, tmp_path, name):
    bad = _edited(tmp_path, fitted, lambda meta: meta["fitted"].update({name: 1}))
    with pytest.raises(ModelFileError, match="not those of a fitted ECRM"):
        load(bad)


@pytest.mark.parametrize("param,value,match", [
    ("gamma", -0.5, "gamma"),
    ("alpha", 0.0, "alpha"),
    ("kernel", "no-such-kernel", "kernel"),
    ("solver", "magic", "solver"),
])
def test_parameters_fit_would_refuse_are_refused(fitted, tmp_path, param, value, match):
    bad = _edited(tmp_path, fitted, lambda meta: meta["params"].update({param: value}))
    with pytest.raises(ModelFileError, match=match):
        load(bad)


def test_hierarchy_with_a_cycle_is_refused(fitted, tmp_path):
    def edit(meta):
        edges = meta["params"]["output_space"]["kwargs"]["edges"]
        edges.append({"$type": "tuple", "items": ["a11", "a"]})

    with pytest.raises(ModelFileError, match="cycle"):
        load(_edited(tmp_path, fitted, edit))


def test_label_names_shorter_than_the_labels_are_refused(fitted, tmp_path):
    def edit(meta):
        names = meta["fitted"]["label_names_"]
        names["items"], names["shape"] = names["items"][:-1], [len(names["items"]) - 1]

    with pytest.raises(ModelFileError, match="label_names_"):
        load(_edited(tmp_path, fitted, edit))


@pytest.mark.parametrize("edit,match", [
    (lambda meta: meta["fitted"].update(n_features_in_=5), "n_features_in_"),
    (lambda meta: meta["fitted"].update(_y_ndim=3), "_y_ndim"),
    (lambda meta: meta["fitted"].pop("_fit"), "missing"),
    (lambda meta: meta["fitted"]["_fit"]["kwargs"].update(
        coef=meta["fitted"]["X_fit_"]), r"_fit.coef must have shape"),
    (lambda meta: meta["fitted"]["_fit"]["kwargs"].update(n_risk=3), "risk regressions"),
    (lambda meta: meta["fitted"]["_fit"]["kwargs"].update(ridge=-1.0), "ridge"),
    (lambda meta: meta["fitted"]["kernel_params_"]["items"][0].__setitem__(1, "linear"),
     "kernel_params_"),
    (lambda meta: meta["fitted"]["kernel_params_"]["items"][1].__setitem__(1, -1.0),
     "gamma must be a real number"),
], ids=["n_features_in_-changed", "y_ndim-three", "fit-missing", "coef-of-another-shape",
        "n_risk-changed", "ridge-negative", "kernel-changed", "gamma-negative"])
def test_fitted_arrays_and_values_fit_would_not_make_are_refused(fitted, tmp_path, edit,
                                                                  match):
    with pytest.raises(ModelFileError, match=match):
        load(_edited(tmp_path, fitted, edit))


def test_file_holds_only_the_declared_attributes(fitted, tmp_path):
    fitted.some_note_ = "not declared"
    try:
        path = tmp_path / "m.ecrm"
        save(fitted, path)
    finally:
        del fitted.some_note_
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("ecrm-model.json"))
    assert set(meta["fitted"]) <= set(ECRM._fitted_attributes)
    assert "some_note_" not in vars(load(path))


@pytest.mark.parametrize("estimator", ["ECRM", "ECRMCV", "JointKernelECRM"])
def test_arrays_keep_their_memory_order_through_a_round_trip(estimator, tmp_path):
    X, Y = _data()
    Xt = _data(10, seed=1)[0]
    model = {"ECRM": ECRM(HierarchicalLoss(TREE), TREE, gamma=0.3),
             "ECRMCV": ECRMCV(HierarchicalLoss(TREE), TREE, alphas=[1e-3, 1e-1]),
             "JointKernelECRM": JointKernelECRM(HammingLoss(), TREE)}[estimator].fit(X, Y)
    path = tmp_path / "m.ecrm"
    save(model, path)
    loaded = load(path)
    for name in ("coef", "intercept"):
        a, b = getattr(model._fit, name), getattr(loaded._fit, name)
        if a.flags.c_contiguous or a.flags.f_contiguous:  # others are written in C order
            assert (a.flags.c_contiguous, a.flags.f_contiguous) == (
                b.flags.c_contiguous, b.flags.f_contiguous)
    if estimator == "ECRM":
        assert model._fit.coef.flags.f_contiguous  # the Cholesky solve's layout, kept
    # the same sums; a strided view comes back C-ordered, and even the same order in another
    # buffer (read-only, aligned otherwise) may take another BLAS kernel: a few ulps apart
    assert_allclose(loaded.predict_costs(Xt), model.predict_costs(Xt), rtol=0,
                    atol=ROOM * term_scale(model, Xt))


def test_refit_with_another_solver_keeps_no_stale_state(tmp_path):
    X, Y = _data()
    est = ECRM(HammingLoss(), TREE, kernel="linear", solver="dual").fit(X, Y)
    assert hasattr(est, "dual_coef_")
    est.set_params(solver="primal").fit(X, Y)
    assert hasattr(est, "coef_") and not hasattr(est, "dual_coef_")
    path = tmp_path / "m.ecrm"
    save(est, path)
    loaded = load(path)
    assert hasattr(loaded, "coef_") and not hasattr(loaded, "dual_coef_")
    assert_allclose(loaded.predict_costs(X), est.predict_costs(X), rtol=0, atol=1e-12)


def test_failed_fit_sets_nothing_and_leaves_the_earlier_fit():
    X, Y = _data()
    est = ECRM(HammingLoss(), TREE, gamma=0.3).fit(X, Y)
    before = dict(vars(est))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        est.fit(bad, Y)
    with pytest.raises(ValueError):
        est.fit(X, Y[:-1])
    assert vars(est).keys() == before.keys() and "_pending" not in vars(est)
    assert all(vars(est)[k] is v for k, v in before.items())
    fresh = ECRM(HammingLoss(), TREE, gamma=0.3)
    with pytest.raises(ValueError):
        fresh.fit(bad, Y)
    assert set(vars(fresh)) == set(fresh.get_params(deep=False))


def test_a_fit_sets_only_declared_attributes():
    X, Y = _data()
    for est in (ECRM(HammingLoss(), TREE), ECRMCV(HammingLoss(), TREE, alphas=[1e-2]),
                JointKernelECRM(HammingLoss(), TREE)):
        est.fit(X, Y)
        state = set(vars(est)) - set(est.get_params(deep=False))
        assert state <= set(est._fitted_attributes) | {"dual_coef_", "coef_", "intercept_"}


@pytest.mark.parametrize("solver,kw", [("dual", {}), ("primal", {"kernel": "linear"}),
                                       (NystromSolver(15), {})],
                         ids=["dual", "primal", "nystrom"])
def test_fit_state_round_trip_predicts_the_same(solver, kw):
    X, Y = _data()
    est = ECRM(HammingLoss(), TREE, solver=solver, random_state=0, **kw).fit(X, Y)
    fit = est._fit
    again = type(fit).from_state(fit.to_state(), X_train=est.X_fit_)
    # the very same arrays (no file between): the same BLAS call, bit for bit
    assert_array_equal(again.block(X[:5]) @ again.coef, fit.block(X[:5]) @ fit.coef)
    assert_allclose(again.weights(fit.block(X[:5])), fit.weights(fit.block(X[:5])),
                    rtol=0, atol=1e-10)


@pytest.mark.parametrize("solver, kw", [("primal", {"kernel": "linear"}),
                                        (NystromSolver(15), {"random_state": 0})],
                         ids=["primal", "nystrom"])
def test_feature_fit_files_hold_no_training_rows(tmp_path, solver, kw):
    sizes = []
    for m in (60, 600):
        X, Y = _data(m=m)
        model = ECRM(HammingLoss(), TREE, solver=solver, **kw).fit(X, Y)
        save(model, tmp_path / f"{m}.ecrm")
        sizes.append((tmp_path / f"{m}.ecrm").stat().st_size)
        back = load(tmp_path / f"{m}.ecrm")
        assert back.X_fit_ is None and back.Y_fit_ is None and back._fit.n_train == m
        assert_array_equal(back.predict(X), model.predict(X))
        assert_allclose(back.predict_scores(X), model.predict_scores(X), rtol=1e-12, atol=1e-12)
        with pytest.raises(ValueError, match="need the training rows, which this model"):
            back.conditional_weights(X[:2])
    assert sizes[1] < 1.1 * sizes[0]  # the file does not grow with m
