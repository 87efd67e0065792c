"""Tampered model files: a value ``fit`` could not have produced is one ModelFileError at load.

Each file is a small fitted model saved with :func:`ecrm.save`, then edited as a careful forger
would: the JSON metadata or an array changed, every array digest, shape and dtype recorded
again and the metadata signed again, so that only the checks of the fitted state can refuse
it. Every refusal must name the field it found wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from test_model_file_hostile import _npy_header

from _model_file_edits import META, _members, _sign, _tampered, _write
from _shapes import TREE5 as TREE
from ecrm import ECRM, ECRMCV, ForestECRMCV, Hierarchy, NystromSolver, StructuredSVM, load, save
from ecrm.datasets.flows import simulate_flows
from ecrm.losses import AbsoluteLoss, HammingLoss
from ecrm.model_files.io import ModelFileError
from ecrm.selection import LeaveOneOutSearch, OutOfBagSearch
from ecrm.spaces import paper_network
from ecrm.weights.kernel.length_scales import LeaveOneOutLengthScales


def _xy(m=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 4))
    X[np.abs(X) < 0.6] = 0.0  # about half zeros: a sparse matrix worth its name
    Y = TREE.close(X @ rng.normal(size=(4, TREE.n_outputs)) > 0.2)
    return X, Y


def _save(model, tmp_path_factory, name):
    path = tmp_path_factory.mktemp(name) / f"{name}.ecrm"
    save(model, path)
    return path



def _refused(path, *fields):
    """Load ``path``: one ModelFileError naming the file and every one of ``fields``."""
    with pytest.raises(ModelFileError) as info:
        load(path)
    message = str(info.value)
    assert str(path) in message
    for field in fields:
        assert field in message, message
    assert len(message) < 2000  # never a whole array
    return message


# -- 1. a sparse X_fit_ (CSR) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def sparse_file(tmp_path_factory):
    X, Y = _xy()
    return _save(ECRM(HammingLoss(), TREE, gamma=0.3).fit(sp.csr_matrix(X), Y),
                 tmp_path_factory, "sparse")


def _csr_part(part, change):
    def edit(meta, arrays):
        name = meta["fitted"]["X_fit_"][part]["name"]
        change(arrays, name)
    return edit


def _set(index, value):
    def change(arrays, name):
        arrays[name] = arrays[name].astype(np.int64)
        arrays[name][index] = value
    return change


def _repeat_in_row(duplicate):
    """The first row holding two entries gets its first column twice (``duplicate``) or its
    first two columns swapped (unsorted)."""
    def edit(meta, arrays):
        X = meta["fitted"]["X_fit_"]
        indptr, indices = arrays[X["indptr"]["name"]], arrays[X["indices"]["name"]]
        start = int(indptr[np.flatnonzero(np.diff(indptr) >= 2)[0]])
        if duplicate:
            indices[start + 1] = indices[start]
        else:
            indices[[start, start + 1]] = indices[[start + 1, start]]
    return edit


@pytest.mark.parametrize("part, change", [
    ("indices", _set(0, 10**9)),
    ("indices", _set(0, -1)),
    ("indptr", _set(2, 1)),
    ("indptr", _set(0, 1)),
    ("indptr", _set(-1, 10**6)),
    ("indices", lambda arrays, name: arrays.__setitem__(name, arrays[name].astype(np.float64))),
    ("indices", lambda arrays, name: arrays.__setitem__(name, arrays[name].astype(np.uint64))),
    ("indptr", lambda arrays, name: arrays.__setitem__(name, arrays[name][:-1])),
    ("data", lambda arrays, name: arrays.__setitem__(name, arrays[name][:-1])),
    ("data", lambda arrays, name: arrays[name].__setitem__(0, np.nan)),
    ("data", lambda arrays, name: arrays.__setitem__(name, arrays[name].astype(np.float32))),
], ids=["index-1e9", "negative-index", "indptr-decreasing", "indptr-not-from-0",
        "indptr-past-nnz", "float-indices", "uint64-indices", "short-indptr", "short-data",
        "nan-data", "float32-data"])
def test_tampered_sparse_training_rows_are_refused(sparse_file, tmp_path, part, change):
    path = _tampered(sparse_file, tmp_path / "bad.ecrm", _csr_part(part, change))
    _refused(path, "X_fit_")


@pytest.mark.parametrize("duplicate", [True, False], ids=["duplicate", "unsorted"])
def test_duplicate_or_unsorted_sparse_indices_are_refused(sparse_file, tmp_path, duplicate):
    _refused(_tampered(sparse_file, tmp_path / "bad.ecrm", _repeat_in_row(duplicate)),
             "X_fit_")


@pytest.mark.parametrize("shape", [[10**30, 4], [16, 10**30], [16, float("inf")], [16],
                                   [16, -4], [16, 4.0], [16, True], "16x4"], ids=repr)
def test_tampered_sparse_shape_is_refused(sparse_file, tmp_path, shape):
    def edit(meta, arrays):
        meta["fitted"]["X_fit_"]["shape"] = shape
    _refused(_tampered(sparse_file, tmp_path / "bad.ecrm", edit), "X_fit_")


def test_untampered_sparse_file_predicts_as_saved(sparse_file):
    X, _ = _xy(6, seed=1)
    loaded = load(sparse_file)
    assert sp.issparse(loaded.X_fit_) and loaded.X_fit_.has_canonical_format
    assert loaded.predict(sp.csr_matrix(X)).shape == (6, TREE.n_outputs)


def test_non_canonical_training_rows_are_saved_canonical(tmp_path):
    # fit keeps what the user gave (unsorted, duplicated entries of one CSR); the file holds
    # the canonical form of the same matrix, the only form load accepts
    X, Y = _xy()
    csr = sp.csr_matrix(X)
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    order = np.lexsort((-csr.indices, rows))  # every row's columns in decreasing order
    messy = sp.csr_matrix((csr.data[order], csr.indices[order], csr.indptr), shape=csr.shape)
    assert not messy.has_sorted_indices
    model = ECRM(HammingLoss(), TREE, gamma=0.3).fit(messy, Y)
    save(model, tmp_path / "m.ecrm")
    loaded = load(tmp_path / "m.ecrm")
    np.testing.assert_array_equal(loaded.X_fit_.toarray(), X)
    np.testing.assert_allclose(loaded.predict_scores(X), model.predict_scores(X), atol=1e-12)


# -- 4. the calibration of the label scores ----------------------------------------------------
@pytest.fixture(scope="module", params=["isotonic", "platt"])
def calibrated_file(request, tmp_path_factory):
    X, Y = _xy(30)
    model = ECRMCV(HammingLoss(), TREE, alphas=[1e-2, 1e-1, 1.0], gamma=0.3,
                   search=LeaveOneOutSearch(calibration=request.param)).fit(X, Y)
    assert model.calibration_ == request.param
    return request.param, _save(model, tmp_path_factory, request.param)


def _calibration_array(key, change):
    def edit(meta, arrays):
        entry = meta["fitted"]["score_calibration_"]["kwargs"]
        if isinstance(entry[key], dict) and entry[key].get("$type") == "ndarray":
            name = entry[key]["name"]
            out = change(arrays[name])
            if out is not None:
                arrays[name] = out
        else:  # pragma: no cover - save always writes arrays
            raise AssertionError(entry[key])
    return edit


def _first(value):
    def change(a):
        a[0] = value
    return change


def _first_label_reversed(a):
    # the first label's first two entries swapped: decreasing (fit makes them increase)
    a[[0, 1]] = a[[1, 0]] if a[0] != a[1] else (a[0] + 1, a[0])


_ARRAY_TAMPERS = {
    "nan": _first(np.nan),
    "inf": _first(np.inf),
    "float16": lambda a: a.astype(np.float16),
    "float32": lambda a: a.astype(np.float32),
    "strings": lambda a: a.astype("U32"),
    "bools": lambda a: a > a.mean(),
    "dates": lambda a: np.zeros(a.shape, dtype="M8[D]"),
    "ints": lambda a: a.astype(np.int64),
    "complex": lambda a: a.astype(np.complex128),
    "2-d": lambda a: a.reshape(1, -1),
}


@pytest.mark.parametrize("tamper", list(_ARRAY_TAMPERS))
def test_tampered_calibration_arrays_are_refused(calibrated_file, tmp_path, tamper):
    kind, path = calibrated_file
    for key in (("breakpoints", "values") if kind == "isotonic" else ("a", "b")):
        bad = _tampered(path, tmp_path / f"{key}.ecrm",
                        _calibration_array(key, _ARRAY_TAMPERS[tamper]))
        _refused(bad, "score_calibration_", key)


@pytest.mark.parametrize("calibrated_file", ["isotonic"], indirect=True)
@pytest.mark.parametrize("key, change", [
    ("values", _first(1.5)),
    ("values", _first(-0.25)),
    ("values", _first_label_reversed),
    ("breakpoints", _first_label_reversed),
    ("indptr", _first(1)),
    ("indptr", lambda a: a.astype(np.float64)),
    ("indptr", lambda a: a[:1]),
], ids=["value-over-1", "negative-value", "values-decreasing", "breakpoints-decreasing",
        "indptr-from-1", "float-indptr", "no-label"])
def test_isotonic_maps_fit_could_not_make_are_refused(calibrated_file, tmp_path, key, change):
    _, path = calibrated_file
    _refused(_tampered(path, tmp_path / "bad.ecrm", _calibration_array(key, change)),
             "score_calibration_", key)


@pytest.mark.parametrize("value", [[0.5, 0.5], 0.5, "0.5", None, True], ids=repr)
def test_calibration_arrays_replaced_by_json_values_are_refused(calibrated_file, tmp_path,
                                                                value):
    kind, path = calibrated_file
    key = "breakpoints" if kind == "isotonic" else "a"

    def edit(meta, arrays):
        meta["fitted"]["score_calibration_"]["kwargs"][key] = value
    _refused(_tampered(path, tmp_path / "bad.ecrm", edit), "score_calibration_")


def test_calibration_of_another_number_of_labels_is_refused(calibrated_file, tmp_path):
    kind, path = calibrated_file

    def edit(meta, arrays):
        kwargs = meta["fitted"]["score_calibration_"]["kwargs"]
        if kind == "platt":
            for key in ("a", "b"):
                name = kwargs[key]["name"]
                arrays[name] = arrays[name][:-1]
        else:  # the last label's map dropped
            ptr = kwargs["indptr"]["name"]
            end = int(arrays[ptr][-2])
            arrays[ptr] = arrays[ptr][:-1]
            for key in ("breakpoints", "values"):
                name = kwargs[key]["name"]
                arrays[name] = arrays[name][:end]
    _refused(_tampered(path, tmp_path / "bad.ecrm", edit), "score_calibration_")


def test_untampered_calibrated_file_scores_as_saved(calibrated_file):
    _, path = calibrated_file
    X, _ = _xy(5, seed=2)
    scores = load(path).predict_scores(X)
    assert np.isfinite(scores).all() and ((scores >= 0) & (scores <= 1)).all()


# -- 5. the flow model's fit: ridge = m * alpha, s = sum(u) ------------------------------------
@pytest.fixture(scope="module")
def flow_file(tmp_path_factory):
    X, Y = simulate_flows(20, random_state=0)
    model = ECRM(AbsoluteLoss(), paper_network(), gamma=0.3, alpha=1e-2).fit(X, Y)
    return _save(model, tmp_path_factory, "flows")


def _fit_kwarg(key, value):
    def edit(meta, arrays):
        kwargs = meta["fitted"]["_fit"]["kwargs"]
        kwargs[key] = value(kwargs[key]) if callable(value) else value
    return edit


@pytest.mark.parametrize("key, value", [
    ("ridge", 1e-300),
    ("ridge", lambda r: r * (1 + 1e-9)),
    ("ridge", lambda r: r / 2),
    ("ridge", float("inf")),
    ("ridge", "0.2"),
    ("s", -1.0),
    ("s", 0.0),
    ("s", lambda s: s * (1 + 1e-9)),
    ("s", float("nan")),
    ("s", "2.5"),
    ("fit_intercept", False),
    ("fit_intercept", "yes"),
], ids=["ridge-1e-300", "ridge-1e-9-off", "ridge-halved", "ridge-inf", "ridge-string",
        "s-negative", "s-zero", "s-1e-9-off", "s-nan", "s-string", "no-intercept",
        "intercept-string"])
def test_flow_fit_values_fit_could_not_make_are_refused(flow_file, tmp_path, key, value):
    _refused(_tampered(flow_file, tmp_path / "bad.ecrm", _fit_kwarg(key, value)),
             "_fit", key)


def test_flow_fit_u_is_checked(flow_file, tmp_path):
    def edit(meta, arrays):
        name = meta["fitted"]["_fit"]["kwargs"]["u"]["name"]
        arrays[name] = arrays[name].astype("U32")
    _refused(_tampered(flow_file, tmp_path / "bad.ecrm", edit), "_fit", "u")


def test_untampered_flow_file_predicts_as_saved(flow_file):
    X, _ = simulate_flows(3, random_state=1)
    assert load(flow_file).predict(X).shape == (3, paper_network().n_outputs)


# -- 7. integer fields set to inf or 10**30 --------------------------------------------------------
@pytest.fixture(scope="module")
def feature_files(tmp_path_factory):
    X, Y = _xy(30)
    primal = ECRM(HammingLoss(), TREE, solver="primal", kernel="linear").fit(X, Y)
    nystrom = ECRM(HammingLoss(), TREE, solver=NystromSolver(n_components=8), gamma=0.3,
                   random_state=0).fit(X, Y)
    return {"primal": _save(primal, tmp_path_factory, "primal"),
            "nystrom": _save(nystrom, tmp_path_factory, "nystrom")}


_HUGE = [float("inf"), -float("inf"), float("nan"), 10**30, 1e30, -(10**30), "3", True, 2.0]


@pytest.mark.parametrize("value", _HUGE, ids=repr)
@pytest.mark.parametrize("kind, where", [
    ("flow", ("_fit", "n_risk")),
    ("primal", ("_fit", "n_risk")),
    ("primal", ("_fit", "n_train")),
    ("primal", ("_fit", "features", "n_features")),
    ("nystrom", ("_fit", "n_train")),
    ("primal", ("n_features_in_",)),
    ("nystrom", ("n_features_in_",)),
    ("flow", ("n_features_in_",)),
], ids=lambda v: v if isinstance(v, str) else ".".join(v))
def test_integer_fields_out_of_range_are_refused(flow_file, feature_files, tmp_path, kind,
                                                 where, value):
    path = flow_file if kind == "flow" else feature_files[kind]

    def edit(meta, arrays):
        node = meta["fitted"]
        for key in where[:-1]:
            node = node[key]["kwargs"]
        node[where[-1]] = value
    _refused(_tampered(path, tmp_path / "bad.ecrm", edit), where[-1])


# -- 6. Nystrom centres and projection; training rows ----------------------------------------------
def _nystrom_array(key, change):
    def edit(meta, arrays):
        name = meta["fitted"]["_fit"]["kwargs"]["features"]["kwargs"][key]["name"]
        out = change(arrays[name])
        if out is not None:
            arrays[name] = out
    return edit


@pytest.mark.parametrize("tamper", list(_ARRAY_TAMPERS))
@pytest.mark.parametrize("key", ["centres", "projection"])
def test_tampered_nystrom_arrays_are_refused(feature_files, tmp_path, key, tamper):
    if tamper == "2-d" and key == "centres":  # a 3-D array, as the centres are 2-D already
        change = _ARRAY_TAMPERS["2-d"]
        tamper_fn = lambda a: change(a)[None]  # noqa: E731
    else:
        tamper_fn = _ARRAY_TAMPERS[tamper]
    path = _tampered(feature_files["nystrom"], tmp_path / "bad.ecrm",
                     _nystrom_array(key, tamper_fn))
    _refused(path, key)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_training_rows_are_refused(flow_file, tmp_path, value):
    def edit(meta, arrays):
        arrays[meta["fitted"]["X_fit_"]["name"]][3, 1] = value
    _refused(_tampered(flow_file, tmp_path / "bad.ecrm", edit), "X_fit_", "NaN or infinite")


def test_untampered_nystrom_files_predict_as_saved(feature_files, tmp_path):
    X, Y = _xy(30)
    sparse = ECRM(HammingLoss(), TREE, solver=NystromSolver(n_components=8), gamma=0.3,
                  random_state=0).fit(sp.csr_matrix(X), Y)
    save(sparse, tmp_path / "sparse.ecrm")  # sparse centres
    np.testing.assert_array_equal(load(tmp_path / "sparse.ecrm").predict(X), sparse.predict(X))
    assert load(feature_files["nystrom"]).predict(X).shape == Y.shape


# -- 9. duplicated column names ----------------------------------------------------------------
def _names(items):
    return {"$type": "objarray", "shape": [len(items)], "items": items}


@pytest.fixture(scope="module")
def named_files(tmp_path_factory):
    X, Y = _xy(20)
    ecrm = ECRM(HammingLoss(), TREE, gamma=0.3).fit(X, Y)
    pipe = make_pipeline(StandardScaler(), ECRM(HammingLoss(), TREE, gamma=0.3)).fit(X, Y)
    ssvm = StructuredSVM(HammingLoss(), TREE, max_iter=3).fit(X, Y)
    forest = ForestECRMCV(HammingLoss(), TREE, search=OutOfBagSearch(
        param_grid={"max_features": [0.5, 1.0]}), n_estimators=3, random_state=0).fit(X, Y)
    return {name: _save(model, tmp_path_factory, name)
            for name, model in [("ecrm", ecrm), ("pipeline", pipe), ("ssvm", ssvm),
                                ("forest", forest)]}


@pytest.mark.parametrize("kind, field", [("ecrm", "feature_names_in_"),
                                         ("ecrm", "feature_columns_"),
                                         ("pipeline", "feature_names_in_"),
                                         ("ssvm", "feature_names_in_")])
def test_duplicated_column_names_are_refused(named_files, tmp_path, kind, field):
    def fitted(meta):
        if kind != "pipeline":
            return meta["fitted"]
        return meta["params"]["steps"][0]["items"][1]["state"]  # the scaler's

    def edit_with(names):
        def edit(meta, arrays):
            fitted(meta)[field] = _names(names)
        return edit

    path = named_files[kind]
    distinct = _tampered(path, tmp_path / "ok.ecrm", edit_with(["w", "x", "y", "z"]))
    assert list(getattr(load(distinct), field, None) if kind != "pipeline" else
                load(distinct).steps[0][1].feature_names_in_) == ["w", "x", "y", "z"]
    bad = _tampered(path, tmp_path / "bad.ecrm", edit_with(["w", "x", "w", "z"]))
    _refused(bad, field, "'w' twice")


@pytest.mark.parametrize("value, accepted", [
    (["cat1", "cat2"], True), (None, True), (["cat1", "cat1"], False), ([], False),
    (["cat1", ""], False), ("cat1", False), ([1, 2], False)],
    ids=["two-names", "none", "a-name-twice", "no-names", "an-empty-name", "a-string-not-a-list",
         "numbers"])
def test_level_columns_must_be_distinct_column_names(named_files, tmp_path, value, accepted):
    """``level_columns_`` (``ecrm fit --level-columns``, read by predict unasked)."""
    def edit(meta, arrays):
        meta["fitted"]["level_columns_"] = value

    path = _tampered(named_files["ecrm"], tmp_path / "t.ecrm", edit)
    if accepted:
        assert getattr(load(path), "level_columns_", None) == value
    else:
        _refused(path, "level_columns_")


# -- 11. summaries of the fit ------------------------------------------------------------------
def _fitted_value(key, value):
    def edit(meta, arrays):
        meta["fitted"][key] = value(meta["fitted"][key]) if callable(value) else value
    return edit


_NOT_A_SCORE = [[0.5], "0.5", None, True, float("inf"), {"$type": "dict", "items": []}]


@pytest.mark.parametrize("calibrated_file", ["isotonic"], indirect=True)
@pytest.mark.parametrize("value", _NOT_A_SCORE + [12345.0], ids=repr)
def test_best_score_must_be_a_score_of_the_search(calibrated_file, tmp_path, value):
    _, path = calibrated_file
    _refused(_tampered(path, tmp_path / "bad.ecrm", _fitted_value("best_score_", value)),
             "best_score_")


def _results_edit(change):
    def edit(meta, arrays):
        items = dict((k, v) for k, v in meta["fitted"]["cv_results_"]["items"])
        change(items, arrays)
        meta["fitted"]["cv_results_"]["items"] = [[k, v] for k, v in items.items()]
    return edit


def _row_of(items, i):
    return items["params"][i]


def _set_in_row(row, key, value):
    for pair in row["items"]:
        if pair[0] == key:
            pair[1] = value


@pytest.mark.parametrize("calibrated_file", ["isotonic"], indirect=True)
@pytest.mark.parametrize("change", [
    lambda items, arrays: items.pop("params"),
    lambda items, arrays: items.__setitem__("params", "all of them"),
    lambda items, arrays: items.__setitem__("params", items["params"][:-1]),
    lambda items, arrays: items.__setitem__("extra", 1),
    lambda items, arrays: arrays.__setitem__(items["rank"]["name"],
                                             arrays[items["rank"]["name"]] * 0),
    lambda items, arrays: arrays.__setitem__(items["alpha"]["name"],
                                             arrays[items["alpha"]["name"]].astype("U9")),
    lambda items, arrays: arrays.__setitem__(items["mean_score"]["name"],
                                             arrays[items["mean_score"]["name"]][:1]),
    lambda items, arrays: _row_of(items, 0).update({"$type": "dict", "items": []}),
    lambda items, arrays: _row_of(items, 0)["items"].append(["extra", 1]),
    lambda items, arrays: _set_in_row(_row_of(items, 0), "alpha", "0.01"),
    lambda items, arrays: _set_in_row(_row_of(items, 0), "alpha", 123.0),
    lambda items, arrays: _set_in_row(_row_of(items, 0), "gamma", -1.0),
    lambda items, arrays: _set_in_row(_row_of(items, 0), "fit_intercept", 1),
], ids=["no-params", "params-string", "params-short", "extra-key", "rank-zero",
        "alpha-strings", "scores-short", "row-empty", "row-extra", "row-alpha-string",
        "row-other-alpha", "row-gamma", "row-intercept-int"])
def test_cv_results_must_be_a_table_of_the_search(calibrated_file, tmp_path, change):
    _, path = calibrated_file
    _refused(_tampered(path, tmp_path / "bad.ecrm", _results_edit(change)), "cv_results_")


@pytest.mark.parametrize("calibrated_file", ["isotonic"], indirect=True)
@pytest.mark.parametrize("value", [[0.5], "x", {"$type": "dict", "items": [["none", "high"]]},
                                   {"$type": "dict", "items": [[1, 0.5]]}], ids=repr)
def test_calibration_results_must_be_scores_by_name(calibrated_file, tmp_path, value):
    _, path = calibrated_file
    _refused(_tampered(path, tmp_path / "bad.ecrm",
                       _fitted_value("calibration_results_", value)), "calibration_results_")


@pytest.mark.parametrize("key, value", [
    *[("duality_gap_", v) for v in _NOT_A_SCORE + [-1.0, lambda g: g * 2]],
    *[("primal_objective_", v) for v in _NOT_A_SCORE + [lambda p: p + 1]],
    *[("dual_objective_", v) for v in _NOT_A_SCORE],
    *[("gap_history_", v) for v in [[1.0], "x", None, 2.0]],
    *[("n_iter_", v) for v in [0, 10**30, float("inf"), "3", True, 1000]],
], ids=lambda v: "edit" if callable(v) else repr(v))  # a lambda's repr holds its address
def test_ssvm_summaries_must_be_those_of_its_fit(named_files, tmp_path, key, value):
    _refused(_tampered(named_files["ssvm"], tmp_path / "bad.ecrm", _fitted_value(key, value)),
             key)


@pytest.mark.parametrize("change", [
    lambda a: a.astype("U9"), lambda a: a[:-1], lambda a: a * 2, _first(np.nan),
    lambda a: np.concatenate([a, a]), lambda a: a.reshape(1, -1)],
    ids=["strings", "short", "doubled", "nan", "too-long", "2-d"])
def test_ssvm_gap_history_must_end_at_the_gap(named_files, tmp_path, change):
    def edit(meta, arrays):
        name = meta["fitted"]["gap_history_"]["name"]
        out = change(arrays[name])
        if out is not None:
            arrays[name] = out
    _refused(_tampered(named_files["ssvm"], tmp_path / "bad.ecrm", edit), "gap_history_")


# -- 12. a member inflating to more than its metadata declares -------------------------------------
def test_member_larger_than_its_metadata_declares_is_refused_before_inflating(
        sparse_file, tmp_path, monkeypatch):
    # 16 MiB of zeros deflate about 1000:1, under the ratio floor (64 MiB): only the shape the
    # metadata declares bounds it. Correctly signed, it would be refused only after inflating.
    members = _members(sparse_file)
    meta = json.loads(members[META])
    name = meta["fitted"]["X_fit_"]["data"]["name"]
    blob = _npy_header((2**21,)) + bytes(2**24)
    members[f"arrays/{name}.npy"] = blob
    meta["arrays"][name]["sha256"] = hashlib.sha256(blob).hexdigest()
    members[META] = json.dumps(meta).encode()
    path = _write(tmp_path / "bomb.ecrm", _sign(members))
    assert path.stat().st_size < 2**20
    opened = []
    real_open = zipfile.ZipFile.open

    def spy(self, member, *args, **kwargs):
        opened.append(getattr(member, "filename", member))
        return real_open(self, member, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    _refused(path, f"member 'arrays/{name}.npy' declares {len(blob)} bytes uncompressed, "
                   "over the limit")
    assert f"arrays/{name}.npy" not in opened


@pytest.mark.parametrize("shape, dtype", [([10**30], "<f8"), (["3"], "<f8"), ([3], "|O"),
                                          ([3], "nonsense"), (None, "<f8"), ([-1], "<f8")],
                         ids=repr)
def test_array_metadata_must_declare_a_shape_and_dtype(sparse_file, tmp_path, shape, dtype):
    members = _members(sparse_file)
    meta = json.loads(members[META])
    name = meta["fitted"]["X_fit_"]["data"]["name"]
    meta["arrays"][name].update(shape=shape, dtype=dtype)
    members[META] = json.dumps(meta).encode()
    _refused(_write(tmp_path / "bad.ecrm", _sign(members)), f"'{name}'")


# -- 8. OneHotEncoder categories, SSVM support_, complex arrays ------------------------------------
@pytest.fixture(scope="module")
def encoder_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(24, 2)).astype(float)
    Y = TREE.close(rng.random((24, TREE.n_outputs)) > 0.5)
    pipe = make_pipeline(OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                         ECRM(HammingLoss(), TREE, gamma=0.3)).fit(X, Y)
    return _save(pipe, tmp_path_factory, "encoder")


_CATEGORIES = {
    "complex": lambda c: c.astype(np.complex128),
    "bools": lambda c: np.array([False, True, True][:len(c)]),
    "dates": lambda c: np.arange(len(c)).astype("M8[D]"),
    "bytes": lambda c: c.astype("S8"),
    "float16": lambda c: c.astype(np.float16),
    "unsorted": lambda c: c[::-1],
    "repeated": lambda c: np.repeat(c[:1], len(c)),
    "2-d": lambda c: c.reshape(1, -1),
}


@pytest.mark.parametrize("tamper", list(_CATEGORIES))
def test_encoder_categories_fit_could_not_make_are_refused(encoder_file, tmp_path, tamper):
    def edit(meta, arrays):
        cats = meta["params"]["steps"][0]["items"][1]["state"]["categories_"]
        name = cats[0]["name"]
        arrays[name] = _CATEGORIES[tamper](arrays[name])
    _refused(_tampered(encoder_file, tmp_path / "bad.ecrm", edit), "categories_")


def test_encoder_categories_of_another_kind_than_the_input_are_refused(encoder_file, tmp_path):
    # fitted on an array of numbers: a column of strings is no category fit found there
    def edit(meta, arrays):
        name = meta["params"]["steps"][0]["items"][1]["state"]["categories_"][0]["name"]
        arrays[name] = arrays[name].astype(str)
    _refused(_tampered(encoder_file, tmp_path / "bad.ecrm", edit), "categories_[", "strings",
             "one kind")


def test_an_encoder_after_a_step_holds_numbers(tmp_path_factory, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(24, 2)).astype(float)
    Y = TREE.close(rng.random((24, TREE.n_outputs)) > 0.5)
    pipe = make_pipeline(SimpleImputer(), OneHotEncoder(handle_unknown="ignore",
                                                        sparse_output=False),
                         ECRM(HammingLoss(), TREE, gamma=0.3)).fit(X, Y)
    path = _save(pipe, tmp_path_factory, "imputed-encoder")

    def edit(meta, arrays):  # every column's categories strings: the imputer gives numbers
        for ref in meta["params"]["steps"][1]["items"][1]["state"]["categories_"]:
            arrays[ref["name"]] = arrays[ref["name"]].astype(str)
    _refused(_tampered(path, tmp_path / "bad.ecrm", edit), "onehotencoder", "categories_[0]")


@pytest.mark.parametrize("items", [[0.0, "1.0", 2.0], [0.0, [1.0], 2.0], [0.0, None, 2.0],
                                   ["a", 1, "c"]], ids=repr)
def test_encoder_categories_of_mixed_json_values_are_refused(encoder_file, tmp_path, items):
    def edit(meta, arrays):
        cats = meta["params"]["steps"][0]["items"][1]["state"]["categories_"]
        cats[0] = {"$type": "objarray", "shape": [len(items)], "items": items}
    _refused(_tampered(encoder_file, tmp_path / "bad.ecrm", edit), "categories_")


@pytest.mark.parametrize("change", [lambda s: s.astype(np.float64), lambda s: s.astype("U8"),
                                    lambda s: s.astype(np.complex128)],
                         ids=["floats", "strings", "complex"])
def test_ssvm_support_must_be_integer_rows(named_files, tmp_path, change):
    def edit(meta, arrays):
        name = meta["fitted"]["support_"]["name"]
        arrays[name] = change(arrays[name])
    _refused(_tampered(named_files["ssvm"], tmp_path / "bad.ecrm", edit), "support_")


@pytest.mark.parametrize("calibrated_file", ["isotonic"], indirect=True)
def test_messages_never_dump_a_whole_array(calibrated_file, tmp_path):
    def edit(meta, arrays):
        meta["fitted"]["alpha_"] = list(range(5000))
    _refused(_tampered(calibrated_file[1], tmp_path / "bad.ecrm", edit), "alpha_")


# -- 10. preprocessing and pipeline parameters --------------------------------------------------
@pytest.fixture(scope="module")
def scales_file(tmp_path_factory):
    X, Y = _xy(20)
    pipe = make_pipeline(LeaveOneOutLengthScales(gamma=0.3, max_iter=5, random_state=0),
                         ECRM(HammingLoss(), TREE, gamma=0.3)).fit(X, Y)
    return _save(pipe, tmp_path_factory, "scales")


def _step_param(key, value):
    def edit(meta, arrays):
        meta["params"]["steps"][0]["items"][1]["kwargs"][key] = value
    return edit


@pytest.mark.parametrize("kind, key, value", [
    ("pipeline", "copy", None),
    ("pipeline", "with_std", "maybe"),
    ("pipeline", "with_mean", 1),
    ("scales", "max_iter", -5),
    ("scales", "max_iter", 2.5),
    ("scales", "gamma", "0.5"),
    ("scales", "alpha", -1.0),
    ("scales", "subsample", 1),
    ("scales", "bounds", {"$type": "tuple", "items": [2.0, 3.0]}),
    ("scales", "kernel", "cosine"),
    ("encoder", "sparse_output", "no"),
    ("encoder", "handle_unknown", "explode"),
], ids=lambda v: repr(v) if not isinstance(v, str) else v)
def test_step_parameters_fit_would_refuse_are_refused(named_files, scales_file, encoder_file,
                                                      tmp_path, kind, key, value):
    path = {"pipeline": named_files["pipeline"], "scales": scales_file,
            "encoder": encoder_file}[kind]
    _refused(_tampered(path, tmp_path / "bad.ecrm", _step_param(key, value)), key)


@pytest.mark.parametrize("names, match", [
    (["a__b", "ecrm"], "a__b"), (["x", "x"], "'x'"), (["steps", "ecrm"], "steps")],
    ids=["dunder", "duplicate", "parameter-name"])
def test_pipeline_step_names_sklearn_would_refuse_are_refused(named_files, tmp_path, names,
                                                              match):
    def edit(meta, arrays):
        for step, name in zip(meta["params"]["steps"], names, strict=True):
            step["items"][0] = name
    _refused(_tampered(named_files["pipeline"], tmp_path / "bad.ecrm", edit), match)


def test_pipeline_verbose_must_be_a_bool(named_files, tmp_path):
    def edit(meta, arrays):
        meta["params"]["verbose"] = "loud"
    _refused(_tampered(named_files["pipeline"], tmp_path / "bad.ecrm", edit), "verbose")


def test_untampered_step_files_load(scales_file, encoder_file):
    assert load(scales_file).steps[0][1].n_features_in_ == 4
    assert load(encoder_file).steps[0][1].n_features_in_ == 2


# -- 13. control characters from a file never reach the terminal raw -----------------------------
ESCAPE = "\x1b[2J\x1b]0;owned\x07"  # clear the screen, set the window title


@pytest.fixture(scope="module")
def hostile_names_file(tmp_path_factory):
    tree = Hierarchy([("a" + ESCAPE, "a1\r"), ("a" + ESCAPE, "a2"), ("b", "b1\u202e")])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    Y = tree.close(X @ rng.normal(size=(2, tree.n_outputs)) > 0.2)
    path = _save(ECRM(HammingLoss(), tree, gamma=0.5).fit(X, Y), tmp_path_factory, "names")

    def edit(meta, arrays):
        meta["ecrm_version"] = "9.9" + ESCAPE
    return _tampered(path, path.with_name("names-version.ecrm"), edit)


def _no_controls(text: str) -> None:
    # line ends and the TSV separator are the writer's own
    plain = text.replace("\r\n", "").replace("\n", "").replace("\t", "")
    assert all(c.isprintable() for c in plain), repr(text)


def test_info_escapes_control_characters(hostile_names_file, capsys):
    from ecrm.cli import main

    assert main(["info", str(hostile_names_file)]) == 0
    out = capsys.readouterr().out
    _no_controls(out)
    assert "\\x1b[2J" in out and "9.9" in out and "a1\\r" in out
    assert main(["info", "--json", str(hostile_names_file)]) == 0
    info = json.loads(capsys.readouterr().out)  # JSON escapes them itself
    assert info["ecrm_version"] == "9.9" + ESCAPE


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "not-a-terminal"])
def test_predictions_on_a_terminal_escape_control_characters(hostile_names_file, fmt, tty):
    from ecrm.commands.predict import _Writer

    class Terminal(io.StringIO):
        def isatty(self):
            return tty

    model = load(hostile_names_file)
    fh = Terminal()
    writer = _Writer(fh, fmt, model.label_names_, scores=True, label_sep=";", per_level=False)
    writer.header()
    names = [str(n) for n in model.label_names_]
    writer.rows([names], np.full((1, len(names)), 0.5))
    if tty or fmt == "jsonl":  # JSON lines escape them in any case
        _no_controls(fh.getvalue())
    else:  # a file gets the names as they are: they are data
        assert ESCAPE in fh.getvalue()


# -- found by a tamper campaign over every array and JSON value --------------------------------
@pytest.mark.parametrize("key, value, field", [
    ("_y_ndim", True, "_y_ndim"),
    ("intercept_scale_", 0.5, "intercept_scale_"),
    ("intercept_scale_", 1e-300, "intercept_scale_"),
], ids=["y-ndim-bool", "scale-half", "scale-tiny"])
def test_ssvm_state_fit_could_not_make_is_refused(named_files, tmp_path, key, value, field):
    _refused(_tampered(named_files["ssvm"], tmp_path / "bad.ecrm", _fitted_value(key, value)),
             field)


@pytest.mark.parametrize("kind", ["ssvm", "ecrm"])
@pytest.mark.parametrize("change, field", [
    (_first(np.nan), "X_fit_"), (lambda a: a.astype(bool), "Y_fit_")], ids=["nan-x", "bool-y"])
def test_training_arrays_fit_could_not_make_are_refused(named_files, tmp_path, kind, change,
                                                        field):
    def edit(meta, arrays):
        name = meta["fitted"][field]["name"]
        out = change(arrays[name])
        if out is not None:
            arrays[name] = out
    _refused(_tampered(named_files[kind], tmp_path / "bad.ecrm", edit), field)


@pytest.fixture(scope="module")
def imputer_file(tmp_path_factory):
    X, Y = _xy(20)
    X[0, 1] = np.nan
    pipe = make_pipeline(SimpleImputer(), ECRM(HammingLoss(), TREE, gamma=0.3)).fit(X, Y)
    return _save(pipe, tmp_path_factory, "imputer")


@pytest.mark.parametrize("value", [0, 0.0, -1.0, "nan", None], ids="value={}".format)
def test_imputer_missing_values_must_be_nan(imputer_file, tmp_path, value):
    _refused(_tampered(imputer_file, tmp_path / "bad.ecrm",
                       _step_param("missing_values", value)), "missing_values")


# -- the campaign: every JSON value and every array of real files, tampered ---------------------
_VALUES = [float("inf"), 10**30, -1, "x", None, True, [1.5]]
_ARRAYS = {"nan": _ARRAY_TAMPERS["nan"], "float16": _ARRAY_TAMPERS["float16"],
           "strings": _ARRAY_TAMPERS["strings"], "bools": _ARRAY_TAMPERS["bools"],
           "complex": _ARRAY_TAMPERS["complex"], "short": lambda a: a[:-1] if a.ndim else a}


def _leaves(node, path=()):
    """The paths of every JSON scalar of ``node`` (array references excluded)."""
    if isinstance(node, dict):
        if node.get("$type") != "ndarray":
            for key, value in node.items():
                if key not in ("$type", "class"):
                    yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path


def _outputs(model, X):
    est = model.steps[-1][1] if hasattr(model, "steps") else model
    out = [np.asarray(model.predict(X))]
    if hasattr(est, "predict_scores"):
        for _, step in getattr(model, "steps", [])[:-1]:
            X = step.transform(X)
        out.append(np.asarray(est.predict_scores(X)))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("calibrated_file", ["isotonic"], indirect=True)
@pytest.mark.parametrize("kind", ["flow", "isotonic", "ssvm", "pipeline", "forest"])
def test_every_tampered_value_is_refused_or_changes_nothing(flow_file, calibrated_file,
                                                            named_files, tmp_path, kind):
    path = {"flow": flow_file, "isotonic": calibrated_file[1], "ssvm": named_files["ssvm"],
            "pipeline": named_files["pipeline"], "forest": named_files["forest"]}[kind]
    X = simulate_flows(3, random_state=1)[0] if kind == "flow" else _xy(5, seed=3)[0]
    expected = _outputs(load(path), X)
    meta = json.loads(_members(path)[META])
    edits = [(f"{name} {tamper}", lambda m, a, name=name, tamper=tamper:
              a.__setitem__(name, np.asarray(_ARRAYS[tamper](a[name].copy()) if tamper != "nan"
                                             else _nan_first(a[name]))))
             for name in meta["arrays"] for tamper in _ARRAYS]
    for section in ("params", "fitted"):
        for where in _leaves(meta[section], (section,)):
            for value in _VALUES:
                edits.append((f"{'/'.join(map(str, where))}={value!r}",
                              lambda m, a, where=where, value=value: _put(m, where, value)))
    problems = []
    for label, edit in edits:
        bad = _tampered(path, tmp_path / "bad.ecrm", edit)
        try:
            model = load(bad)
        except ModelFileError:
            continue
        except Exception as exc:  # noqa: BLE001 - every other escape is the finding
            problems.append(f"{label}: load raised {type(exc).__name__}: {str(exc)[:100]}")
            continue
        try:
            got = _outputs(model, X)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{label}: predict raised {type(exc).__name__}: {str(exc)[:100]}")
            continue
        if not all(g.shape == e.shape and np.array_equal(g, e, equal_nan=True)
                   for g, e in zip(got, expected, strict=True)):
            problems.append(f"{label}: loads and predicts differently")
    assert not problems, "\n".join(problems)


def _nan_first(a):
    b = a.astype(np.float64)
    if b.size:
        b.flat[0] = np.nan
    return b


def _put(meta, where, value):
    node = meta
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = json.loads(json.dumps(value))  # a fresh copy


@pytest.mark.parametrize("calibrated_file", ["isotonic"], indirect=True)
def test_cv_results_may_hold_further_columns_of_one_entry_per_candidate(calibrated_file,
                                                                        tmp_path):
    # a newer search adds columns (cv_results_['added']): accepted as plain 1-D arrays only
    def add(value):
        def change(items, arrays):
            arrays["extra"] = value(len(arrays[items["rank"]["name"]]))
            items["added"] = {"$type": "ndarray", "name": "extra"}
        return change

    _, path = calibrated_file
    load(_tampered(path, tmp_path / "ok.ecrm", _results_edit(add(lambda n: np.zeros(n, bool)))))
    _refused(_tampered(path, tmp_path / "bad.ecrm",
                       _results_edit(add(lambda n: np.zeros(n + 1, bool)))), "cv_results_")


def test_training_rows_whose_kernel_overflows_are_refused(flow_file, tmp_path):
    # finite, but fit's kernel on them is not (their squared norms overflow): the model
    # would fail only at predict, blaming the caller's inputs
    def edit(meta, arrays):
        arrays[meta["fitted"]["X_fit_"]["name"]] *= 1e300
    _refused(_tampered(flow_file, tmp_path / "bad.ecrm", edit), "X_fit_", "NaN or infinite")


@pytest.mark.parametrize("value, accepted", [
    ({"label_sep": "|", "delimiter": ";"}, True), (None, True), ({"label_sep": ""}, False),
    ({"sep": ";"}, False), ({"label_sep": 1}, False), (["label_sep"], False)],
    ids=["label_sep-and-delimiter", "none", "label_sep-empty", "an-unknown-option",
         "label_sep-a-number", "a-list-not-options"])
def test_reading_options_must_be_known_options_and_strings(named_files, tmp_path, value,
                                                           accepted):
    """``reading_options_`` (how ``ecrm fit`` read its file; predict and evaluate read theirs
    so unless told otherwise)."""
    def edit(meta, arrays):
        meta["fitted"]["reading_options_"] = (
            value if not isinstance(value, dict) else
            {"$type": "dict", "items": [[k, v] for k, v in value.items()]})

    path = _tampered(named_files["ecrm"], tmp_path / "t.ecrm", edit)
    if accepted:
        assert getattr(load(path), "reading_options_", None) == value
    else:
        _refused(path, "reading_options_")
