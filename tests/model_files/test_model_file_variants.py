"""Generated tampering: every JSON value and every array of a file of each estimator class.

For a small saved model of each class (and a mixture inside a pipeline after a scaler), every
value of the metadata's ``params`` and ``fitted`` trees and every array member is edited in
each of the ways below, the array digests, shapes and dtypes recorded again and the metadata
signed again, so that only the checks of the stored state can catch the edit:

* ``delete`` (a key, a list item or an array member), ``type`` (a value of another type),
* ``2**28``, ``2**31``, ``2**63`` (a value, or an array's first entry),
* ``transpose`` (a 2-D array), ``x1e300`` (a number or a float array scaled), ``1e308`` and
  ``nan`` (a number, or a float array's first entry).

Each variant is loaded with the memory budget of the loader lowered to :data:`BUDGET`, under
:mod:`tracemalloc`: it must be refused with one :class:`~ecrm.model_files.io.ModelFileError`, or
load and predict exactly what the saved model predicted, never raise another exception, and never
allocate more than the budget. The default run takes a fixed sample of each class's variants;
``ECRM_ALL_VARIANTS=1`` runs them all (minutes: the mixtures have thousands each).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import math
import os
import random
import tracemalloc
import warnings
import zipfile
from collections import Counter

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from _shapes import TREE5 as TREE
from ecrm import (
    ECRM,
    ECRMCV,
    ForestECRM,
    ForestECRMCV,
    JointKernelECRM,
    MixedRiskECRM,
    NeighboursECRM,
    NeighboursECRMCV,
    NystromSolver,
    StackedRiskECRM,
    StructuredSVM,
    load,
    save,
)
from ecrm.losses import HammingLoss
from ecrm.model_files import _archive
from ecrm.model_files.io import ModelFileError
from ecrm.selection import LeaveOneOutSearch, OutOfBagSearch

META, DIGEST = "ecrm-model.json", "ecrm-model.sha256"
#: The loader's memory budget during the test (bytes), and the most any variant may allocate.
BUDGET = 64 * 2**20
#: Variants per class in the default run (a fixed sample; ``ECRM_ALL_VARIANTS=1`` runs all).
SAMPLE = 60
BIG = {"2**28": 2**28, "2**31": 2**31, "2**63": 2**63}


def _data(m=18, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    Y = TREE.close(X @ rng.normal(size=(3, TREE.n_outputs)) > 0.2)
    return X, Y


def _models() -> dict:
    X, Y = _data()
    loss = HammingLoss()
    cv = dict(alphas=[1e-2, 1e-1], gamma=0.5)
    return {
        "ECRM": ECRM(loss, TREE, gamma=0.5),
        "ECRMCV-dual": ECRMCV(loss, TREE, solver="dual", **cv),
        "ECRMCV-primal": ECRMCV(loss, TREE, solver="primal", alphas=[1e-2, 1e-1],
                                kernel="linear"),
        "ECRMCV-nystrom": ECRMCV(loss, TREE, solver=NystromSolver(n_components=6),
                                 random_state=0, **cv),
        "ECRMCV-calibrated": ECRMCV(loss, TREE, search=LeaveOneOutSearch(calibration="platt"),
                                    **cv),
        "ForestECRM": ForestECRM(loss, TREE, n_estimators=3, random_state=0),
        "ForestECRMCV": ForestECRMCV(loss, TREE, n_estimators=3, random_state=0,
                                     search=OutOfBagSearch(
                                         param_grid={"min_samples_leaf": [1, 3],
                                                     "min_samples_split": [2, 4, 8]},
                                         search_estimators=2, split_search="descent")),
        "NeighboursECRM": NeighboursECRM(loss, TREE, n_neighbors=3),
        "NeighboursECRMCV": NeighboursECRMCV(loss, TREE, n_neighbors=[1, 4, 9]),
        "MixedRiskECRM": MixedRiskECRM(loss, TREE, mixing_grid=3,
                                       forest_options={"n_estimators": 3}, random_state=0),
        "StackedRiskECRM": StackedRiskECRM(loss, TREE, members=[
            ECRMCV(loss, TREE, **cv), ECRMCV(loss, TREE, alphas=[1e-2, 1e-1], kernel="linear"),
            ForestECRMCV(loss, TREE, n_estimators=3, random_state=0)], resolution=3,
            random_state=0),
        "StructuredSVM": StructuredSVM(loss, TREE, C=1.0, max_iter=3),
        "JointKernelECRM": JointKernelECRM(loss, TREE, gamma=0.5),
        "Pipeline-mixture": make_pipeline(StandardScaler(), MixedRiskECRM(
            loss, TREE, mixing_grid=3, forest_options={"n_estimators": 3}, random_state=0)),
    }, X, Y


# -- reading and writing a file's parts ---------------------------------------------------------
def _parts(path):
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read(META))
        arrays = {n[len("arrays/"):-len(".npy")]: np.load(io.BytesIO(zf.read(n)))
                  for n in zf.namelist() if n.startswith("arrays/")}
    return meta, arrays


def _write(path, meta, arrays) -> None:
    """The file of ``meta`` and ``arrays``, every digest, shape and dtype recorded and the
    metadata signed again."""
    meta = copy.deepcopy(meta)
    meta["arrays"] = {}
    blobs = {}
    for name, a in arrays.items():
        blob = _archive.npy_bytes(np.asarray(a))
        blobs[name] = blob
        meta["arrays"][name] = {"sha256": hashlib.sha256(blob).hexdigest(),
                                "shape": list(np.shape(a)), "dtype": np.asarray(a).dtype.str}
    text = json.dumps(meta).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(META, text)
        zf.writestr(DIGEST, hashlib.sha256(text).hexdigest())
        for name, blob in blobs.items():
            zf.writestr(f"arrays/{name}.npy", blob)


# -- the variants -------------------------------------------------------------------------------
def _leaves(node, where=()):
    """Every (container, key, path) of the JSON tree below ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in list(items):
        yield node, key, (*where, key)
        if isinstance(value, (dict, list)):
            yield from _leaves(value, (*where, key))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _json_edits(value):
    """(kind, new value or ``_DELETE``) for one JSON value."""
    yield "delete", _DELETE
    yield "type", (str(value) if not isinstance(value, str) else 7) if not isinstance(
        value, (dict, list)) else ("x" if isinstance(value, dict) else {"x": 1})
    yield from BIG.items()
    if _number(value):
        yield "x1e300", value * 1e300
    yield "1e308", 1e308
    yield "nan", float("nan")


_DELETE = object()


def _array_edits(a: np.ndarray):
    """(kind, new array or ``_DELETE``) for one array member."""
    yield "delete", _DELETE
    yield "type", a.astype(np.float32 if a.dtype.kind != "f" else np.int64)
    for kind, big in BIG.items():
        if a.size:
            b = a.copy()
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                b.flat[0] = np.array(big).astype(a.dtype) if a.dtype.kind != "b" else True
            yield kind, b
    if a.ndim == 2:
        yield "transpose", np.ascontiguousarray(a.T)
    if a.dtype.kind == "f" and a.size:
        yield "x1e300", a * 1e300
        for kind, v in (("1e308", 1e308), ("nan", np.nan)):
            b = a.copy()
            b.flat[0] = v
            yield kind, b


def variants(meta, arrays):
    """Every (label, kind, meta, arrays) variant of a file's parts."""
    for root in ("params", "fitted"):
        for parent, key, where in list(_leaves(meta[root], (root,))):
            for kind, new in _json_edits(parent[key]):
                edited = copy.deepcopy(meta)
                node = edited
                for k in where[:-1]:
                    node = node[k]
                if new is _DELETE:
                    del node[key]
                else:
                    node[key] = new
                yield "/".join(map(str, where)), kind, edited, arrays
    for name, a in arrays.items():
        for kind, new in _array_edits(a):
            changed = dict(arrays)
            if new is _DELETE:
                del changed[name]
            else:
                changed[name] = new
            yield f"array {name}", kind, meta, changed


# -- the check ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    models, X, Y = _models()
    out = {}
    for name, model in models.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, Y)
        path = tmp_path_factory.mktemp(name) / "model.ecrm"
        save(model, path)
        out[name] = (path, model.predict(X))
    return out, X


def _outcome(path, X, expected) -> str:
    """``refused``, ``same``, or what escaped; the peak allocation is checked too."""
    tracemalloc.start()
    try:
        try:
            model = load(path)
        except ModelFileError:
            return "refused"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = model.predict(X)
        same = (np.shape(got) == np.shape(expected)
                and np.array_equal(np.asarray(got, dtype=float),
                                   np.asarray(expected, dtype=float), equal_nan=True))
        return "same" if same else "changed"
    except Exception as exc:  # noqa: BLE001 - what escaped is the finding
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        if peak > BUDGET:
            return f"allocated {peak} bytes"  # noqa: B012 - the peak overrides the outcome


#: Where an edit may change the predictions without a load refusing it: the training rows of
#: a model that is no single ridge solve on them (a forest's trees accept any rows, a joint
#: kernel's coefficients solve rotated systems, a structured SVM's dual is no ridge solve;
#: the model-files guide says so), the coefficients of a feature fit (its file holds no
#: targets to bound them by), the multitask coefficients of a JointKernelECRM (scaled per
#: task: no bound is checked yet), a structured SVM's dual variables (bounded by C times the
#: spread of the output embedding, which the file does not state), and a scaler's mean
#: within what fit on finite data reaches (data of any offset). A dual kernel model's rows
#: are checked (its coefficients must solve its system on them). Any other field's "changed"
#: fails the test.
#: The neighbours' index, like a forest's trees, accepts any training rows.
UNCHECKED: tuple[str, ...] = ()
_COEF = ("_fit/kwargs/coef", "_fit/kwargs/intercept")
_ROWS = ("X_fit_",)
UNCHECKED_BY_CLASS = {"JointKernelECRM": (*_COEF, *_ROWS), "ECRMCV-primal": _COEF,
                      "ECRMCV-nystrom": _COEF, "StructuredSVM": ("dual_coef_", *_ROWS),
                      "ForestECRM": _ROWS, "ForestECRMCV": _ROWS, "MixedRiskECRM": _ROWS,
                      "NeighboursECRM": _ROWS, "NeighboursECRMCV": _ROWS,
                      # a scaler's mean (data of any offset), and the scaler itself dropped
                      # (the estimator's width is the scaler's)
                      "Pipeline-mixture": ("steps[0]/items[1]/state/mean_", "=params/steps/0",
                                           *_ROWS)}
#: Exceptions other than the library's that an edit may still raise, by class (none).
ESCAPES: dict[str, tuple[str, ...]] = {}


def _array_paths(node, where=""):
    """Array name -> the path of the JSON field that refers to it."""
    out = {}
    if isinstance(node, dict):
        if node.get("$type") == "ndarray":
            out[node["name"]] = where
        for k, v in node.items():
            out.update(_array_paths(v, f"{where}/{k}"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.update(_array_paths(v, f"{where}[{i}]"))
    return out


def _allowed(where: str, paths: dict, name: str) -> bool:
    field = paths.get(where[len("array "):], "") if where.startswith("array ") else where
    return any(field == part[1:] if part.startswith("=")
               else f"/{part}" in field or field.endswith(part)
               for part in UNCHECKED + UNCHECKED_BY_CLASS.get(name, ()))


def _run(name, saved, tmp_path, monkeypatch, sample):
    files, X = saved
    path, expected = files[name]
    monkeypatch.setattr(_archive, "MEMORY_BUDGET", BUDGET)
    meta, arrays = _parts(path)
    every = list(variants(meta, arrays))
    chosen = every if sample is None else random.Random(name).sample(
        every, min(sample, len(every)))
    counts: Counter = Counter()
    bad = []
    target = tmp_path / "variant.ecrm"
    paths = _array_paths(meta)
    for where, kind, m, a in chosen:
        _write(target, m, a)
        outcome = _outcome(target, X, expected)
        if (outcome == "changed" or outcome.startswith(ESCAPES.get(name, ("changed",)))) \
                and _allowed(where, paths, name):
            outcome = "unchecked"
        counts[outcome if outcome in ("refused", "same", "unchecked") else "bad"] += 1
        if outcome not in ("refused", "same", "unchecked"):
            bad.append(f"{where} [{kind}]: {outcome}")
    print(f"{name}: {len(every)} variants, ran {len(chosen)}: {dict(counts)}")
    assert not bad, "\n".join(bad[:30])


NAMES = ["ECRM", "ECRMCV-dual", "ECRMCV-primal", "ECRMCV-nystrom", "ECRMCV-calibrated",
         "ForestECRM", "ForestECRMCV", "NeighboursECRM", "NeighboursECRMCV", "MixedRiskECRM",
         "StackedRiskECRM", "StructuredSVM", "JointKernelECRM", "Pipeline-mixture"]


@pytest.mark.parametrize("name", NAMES)
def test_a_sample_of_variants_is_refused_or_predicts_as_saved(name, saved, tmp_path,
                                                              monkeypatch):
    _run(name, saved, tmp_path, monkeypatch, SAMPLE)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("ECRM_ALL_VARIANTS"),
                    reason="every variant of every class takes minutes: ECRM_ALL_VARIANTS=1")
@pytest.mark.parametrize("name", NAMES)
def test_every_variant_is_refused_or_predicts_as_saved(name, saved, tmp_path, monkeypatch):
    _run(name, saved, tmp_path, monkeypatch, None)


def test_the_variants_cover_every_kind(saved):
    files, _ = saved
    meta, arrays = _parts(files["ECRMCV-nystrom"][0])
    kinds = Counter(kind for _, kind, _, _ in variants(meta, arrays))
    assert set(kinds) == {"delete", "type", *BIG, "transpose", "x1e300", "1e308", "nan"}
    assert math.prod(kinds.values()) > 0
