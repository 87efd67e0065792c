r"""Model files: :func:`save` and :func:`load` a fitted estimator, with no pickle.

A model file is a zip archive of three kinds of members:

* ``ecrm-model.json``: the metadata, plain JSON: ``format`` (``"ecrm-model"``),
  ``format_version``, the ``ecrm_version`` that wrote it, the ``estimator`` class name, its
  ``params`` (``get_params(deep=False)``) and its ``fitted`` attributes, plus how to
  ``rebuild`` what was left out and the SHA-256 digest, shape and dtype of every array;
* ``ecrm-model.sha256``: the SHA-256 digest of the metadata bytes;
* ``arrays/<name>.npy``: one NumPy array per member (written and read with
  ``allow_pickle=False``).

Losses and output spaces are described declaratively, by class name and constructor
arguments (a :class:`~ecrm.Hierarchy` by its labels and ``(parent, child)`` edges, a
:class:`~ecrm.losses.HierarchicalLoss` by its hierarchy, a :class:`~ecrm.CandidateSpace` by its
candidate array, ...). Loading only ever constructs the classes of a fixed registry
(:data:`REGISTRY`) from decoded JSON and arrays: it never executes code from the file.

The fitted state is the estimator's declared fitted attributes (``_fitted_attributes``)
only, the solver's fit object among them; the views of the fit (``dual_coef_``, ``coef_``,
``intercept_``) are derived again on load. Loading refuses any other name, and checks the
parameters with the estimator's own checks (those of ``fit``) and every fitted attribute's
type, dtype and shape against them (each estimator's ``_check_fitted_state``,
:mod:`ecrm.estimators._template`): values, ranges, finiteness and the equalities of ``fit`` too
(``ridge = m * alpha``, ``s = sum(u)``, monotone
calibration maps, canonical sparse rows), the arguments a constructor would cast before it
runs; a violation is one :class:`ModelFileError` naming the field. An array member may inflate
only to the size its metadata declares (shape and dtype). Arrays keep
their memory order (C or Fortran) through a round trip. The
factorisation of :math:`K + m\lambda I` (an :math:`m \times m` object) is never written: the
fit object (:class:`ecrm.weights.kernel._solvers.dual.KernelFit`) rebuilds it from the training
inputs and its ridge the first time a prediction needs it (only losses without a linear form and
:meth:`~ecrm.ECRM.conditional_weights` do; :meth:`~ecrm.ECRM.predict` with a linear loss
and :meth:`~ecrm.ECRM.predict_scores` use stored coefficients). A file thus takes
:math:`O(m(p + e))` space. A model of a linear loss fitted in the primal or on Nystrom
features is stored without its training rows and leave-one-out predictions (``X_fit_``,
``Y_fit_``, ``loo_predictions_`` and ``loo_scores_`` load as ``None``): its file takes
:math:`O(k(p + e))` whatever m, and loaded, it predicts, gives costs and scores, but has no
risk weights (:meth:`~ecrm.ECRM.conditional_weights` asks for a refit).

Errors are :class:`ModelFileError` (a ``ValueError``) naming the file and what is wrong: not a
zip archive or truncated, a file of another kind, a newer format version, a digest that does
not match (tampered or corrupted), an unknown class.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from ecrm import ECRM, Hierarchy, load, save
>>> from ecrm.losses import HammingLoss
>>> h = Hierarchy([("a", "a1"), ("a", "a2")])
>>> X = np.array([[0.0], [0.1], [1.0], [1.1]])
>>> Y = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]])
>>> model = ECRM(HammingLoss(), h, gamma=10.0).fit(X, Y)
>>> path = os.path.join(tempfile.mkdtemp(), "model.ecrm")
>>> save(model, path)
>>> load(path).predict([[0.05], [1.05]])
array([[1., 1., 0.],
       [1., 0., 1.]])
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import zipfile
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ecrm.model_files import _archive, _steps
from ecrm.model_files._archive import ModelFileError
from ecrm.model_files._registry import _ESTIMATOR_MODULES, REGISTRY
from ecrm.weights.kernel._ridge import Factor

__all__ = ["FORMAT", "FORMAT_VERSION", "ModelFileError", "REGISTRY", "describe", "load",
           "read_metadata", "save"]

#: The ``format`` field of every model file.
FORMAT = "ecrm-model"
#: The version this module writes; it reads every version up to this one.
FORMAT_VERSION = 2
_META = "ecrm-model.json"
_DIGEST = "ecrm-model.sha256"
_ARRAYS = "arrays/"



# -- encoding ------------------------------------------------------------------------------
class _Writer:
    """Encodes values as JSON trees; arrays go to ``self.arrays`` under generated names."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._names: dict[int, str] = {}

    def array(self, a: np.ndarray, where: str) -> dict:
        if a.dtype.hasobject:  # items as JSON values (labels: str, int, tuples, ...)
            before = len(self.arrays)
            items = [self.encode(v, f"{where}[{i}]") for i, v in enumerate(a.ravel().tolist())]
            if len(self.arrays) != before:
                raise ModelFileError(f"cannot save {where}: an object array holding arrays")
            return {"$type": "objarray", "shape": list(a.shape), "items": items}
        name = self._names.get(id(a))
        if name is None:
            name = f"a{len(self.arrays)}"
            # .npy keeps C or Fortran order: the loaded array takes the same BLAS paths
            contiguous = a.flags.c_contiguous or a.flags.f_contiguous
            self.arrays[name] = a if contiguous else np.ascontiguousarray(a)
            self._names[id(a)] = name
        return {"$type": "ndarray", "name": name}

    def encode(self, value, where: str):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)) and type(value) in (int, float):
            return value
        if isinstance(value, type) and issubclass(value, np.number):  # e.g. dtype=np.float64
            return {"$type": "dtype", "dtype": np.dtype(value).str}
        if isinstance(value, np.generic):
            return {"$type": "scalar", "dtype": value.dtype.str, "value": value.item()}
        if isinstance(value, np.ndarray):
            return self.array(value, where)
        if sp.issparse(value):
            csr = sp.csr_array(value) if isinstance(value, sp.sparray) else sp.csr_matrix(value)
            if not csr.has_canonical_format:  # load accepts only sorted, duplicate-free rows
                csr = csr.copy()  # never the caller's matrix
                csr.sum_duplicates()
            return {"$type": "sparse", "container": "array" if isinstance(value, sp.sparray)
                    else "matrix", "shape": list(csr.shape),
                    "data": self.array(csr.data, where), "indices": self.array(csr.indices, where),
                    "indptr": self.array(csr.indptr, where)}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"$type": "tuple", "items": [self.encode(v, f"{where}[{i}]")
                                                for i, v in enumerate(value)]}
        if isinstance(value, dict):
            return {"$type": "dict", "items": [[self.encode(k, f"{where} key"),
                                                self.encode(v, f"{where}[{k!r}]")]
                                               for k, v in value.items()]}
        if isinstance(value, Factor):
            raise ModelFileError(f"cannot save {where}: a factorisation is never stored")
        name = type(value).__name__
        if name in REGISTRY and type(value) is REGISTRY[name].cls:
            return self.instance(value, where)
        raise ModelFileError(
            f"cannot save {where}: {type(value).__module__}.{name} is not a type a model file "
            f"can hold (JSON values, arrays, sparse matrices and {sorted(REGISTRY.keys())})")


    def instance(self, value, where: str) -> dict:
        """A registered object: its parameters, and for a fitted one its declared state."""
        entry = REGISTRY[type(value).__name__]
        kwargs = entry.describe(value)
        out = {"$type": "object", "class": entry.cls.__name__,
               "kwargs": {k: self.encode(v, f"{where}.{k}") for k, v in kwargs.items()}}
        if entry.state is not None:
            try:
                state = entry.state(value)
            except (AttributeError, TypeError, ValueError) as exc:
                raise ModelFileError(f"cannot save {where} ({entry.cls.__name__}): "
                                     f"{exc}") from None
            out["$type"] = "fitted"
            out["state"] = {k: self.encode(v, f"{where}.{k}") for k, v in state.items()}
        return out


def describe(model) -> dict:
    """The metadata :func:`save` writes for ``model`` (without the array digests).

    Parameters
    ----------
    model : ECRM, ECRMCV or JointKernelECRM
        A fitted estimator.

    Returns
    -------
    metadata : dict
        JSON-able; arrays appear as ``{"$type": "ndarray", "name": ...}`` references.
    """
    return _encode_model(model)[0]


def _encode_model(model: Any) -> tuple[dict, dict[str, np.ndarray]]:
    from ecrm import __version__  # the package's, defined after it imports this module

    name = type(model).__name__
    if name not in REGISTRY or type(model) is not REGISTRY[name].cls or \
            REGISTRY[name].state is None or name not in (*_ESTIMATOR_MODULES, "Pipeline"):
        if hasattr(model, "best_estimator_"):  # a fitted search: its refitted best is the model
            raise ModelFileError(f"cannot save a {name}: save its best_estimator_, the model "
                                 f"it refitted on all the data (ecrm.save(search."
                                 f"best_estimator_, path))")
        raise ModelFileError(f"cannot save a {type(model).__module__}.{name}: a model file holds "
                             f"an {', '.join(_ESTIMATOR_MODULES)}, or a Pipeline of "
                             f"preprocessing steps ({', '.join(_steps.STEPS)}) before one")
    check_is_fitted(model)
    writer = _Writer()
    entry = writer.instance(model, "the model")
    meta: dict = {"format": FORMAT, "format_version": FORMAT_VERSION, "ecrm_version": __version__,
                  "estimator": name, "params": entry["kwargs"], "fitted": entry["state"],
                  "rebuild": {}}
    return meta, writer.arrays


def save(model, path: str | os.PathLike) -> None:
    """Write a fitted estimator to a model file (a zip of JSON metadata and ``.npy`` arrays).

    The file is written to a temporary name next to ``path`` and renamed when complete, so a
    failure never leaves a half-written model at ``path``. What already is at ``path`` follows
    the rule ``ecrm fit -o`` follows too: a symbolic link is followed (its target is replaced,
    the link stays), a FIFO or a character device (a named pipe, ``/dev/null``) is written
    through and never replaced, and a directory, a socket or a block device is refused.

    Parameters
    ----------
    model : ECRM, ECRMCV or JointKernelECRM
        A fitted estimator; its loss and output space must be registered classes
        (:data:`REGISTRY`) and its kernel a name or ``"precomputed"``.
    path : str or path-like
        The file to write (conventionally ``*.ecrm``).

    Raises
    ------
    ModelFileError
        When the model holds something a model file cannot describe (a callable kernel, an
        unregistered loss or space) or a member larger than :func:`load` accepts; nothing is
        written then.
    ValueError
        When ``path`` is a directory, a socket or a block device; nothing is written then.
    OSError
        When the file cannot be written; ``path`` is then left as it was.
    sklearn.exceptions.NotFittedError
        When the model is not fitted.
    """
    meta, arrays = _encode_model(model)
    blobs = {name: _archive.npy_bytes(a) for name, a in arrays.items()}
    meta["arrays"] = {name: {"sha256": hashlib.sha256(blob).hexdigest(),
                             "shape": list(arrays[name].shape), "dtype": arrays[name].dtype.str}
                      for name, blob in blobs.items()}
    try:
        text = json.dumps(meta, allow_nan=True, sort_keys=True).encode("utf-8")
    except (TypeError, ValueError) as exc:  # pragma: no cover - encode() guards the types
        raise ModelFileError(f"cannot save the model: {exc}") from None
    members = {_META: text, _DIGEST: hashlib.sha256(text).hexdigest().encode("ascii")}
    members.update((f"{_ARRAYS}{name}.npy", blob) for name, blob in blobs.items())
    _archive.write_archive(os.fspath(path), members)


# -- decoding ------------------------------------------------------------------------------
class _Reader:
    def __init__(self, path: str, zf: zipfile.ZipFile, meta: dict):
        self.path, self.zf, self.meta = path, zf, meta
        self.cache: dict[str, np.ndarray] = {}
        self.fields: list[str] = []  # the parameter or attribute being decoded, for messages
        self.total_bytes = 0

    def fail(self, message: str) -> ModelFileError:
        if len(message) > 1000:  # a check may quote a forged value: never a whole array
            message = message[:1000] + " ..."
        return ModelFileError(f"{self.path}: {message}")

    def array(self, name) -> np.ndarray:
        if name in self.cache:
            return self.cache[name]
        info = self.meta["arrays"].get(name) if isinstance(name, str) else None
        if not isinstance(info, dict):
            raise self.fail(f"the metadata refers to an array {name!r} it does not list "
                            "(tampered file)")
        member = f"{_ARRAYS}{name}.npy"
        limit = min(self.declared_bytes(name, info), _archive.MAX_MEMBER_BYTES)
        blob = _archive.read_member(self.path, self.zf, member, limit)
        if hashlib.sha256(blob).hexdigest() != info.get("sha256"):
            raise self.fail(f"array {name!r} does not match its SHA-256 digest "
                            "(the file was modified or corrupted)")
        a = _archive.read_npy(self.path, member, blob)
        if list(a.shape) != info.get("shape") or a.dtype.str != info.get("dtype"):
            raise self.fail(f"array {name!r} has shape {a.shape} and dtype {a.dtype.str}; the "
                            f"metadata says {info.get('shape')} and {info.get('dtype')}")
        self.cache[name] = a
        return a

    def check_budget(self) -> None:
        """Refuse a file whose arrays declare more bytes in all than the memory budget
        (:data:`ecrm.model_files._archive.MEMORY_BUDGET`), before any member is inflated."""
        sizes = {}
        for name, info in self.meta["arrays"].items():
            if not isinstance(info, dict):
                raise self.fail(f"array {name!r}: the metadata declares no shape and dtype")
            sizes[name] = self.declared_bytes(name, info) - _archive.MAX_NPY_HEADER_BYTES - 16
        self.total_bytes = total = sum(sizes.values())
        budget = _archive.MEMORY_BUDGET
        if total > budget:
            largest = max(sizes, key=sizes.__getitem__)
            raise self.fail(f"the arrays declare {total} bytes in all (array {largest!r}: "
                            f"{sizes[largest]}), over the memory budget of {budget} bytes "
                            "(ECRM_MEMORY_BUDGET; raise it to load a model this large)")

    def declared_bytes(self, name: str, info: dict) -> int:
        """The most bytes array ``name``'s member may inflate to: the data its metadata
        declares (shape times item size) and a ``.npy`` header. Checked against the zip
        directory before inflating, so a member far larger than its metadata says (a zip bomb
        under the ratio bound) costs nothing."""
        shape, dtype = info.get("shape"), info.get("dtype")
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)
                and isinstance(dtype, str)):
            raise self.fail(f"array {name!r}: the metadata declares no valid shape and dtype "
                            f"({str(shape)[:80]}, {str(dtype)[:40]})")
        try:
            itemsize = np.dtype(dtype).itemsize
        except (TypeError, ValueError):
            raise self.fail(f"array {name!r}: the metadata declares an unknown dtype "
                            f"{dtype[:40]!r}") from None
        # a .npy header is at most 64 KiB (MAX_NPY_HEADER_BYTES) plus its fixed preamble
        return math.prod(shape) * itemsize + _archive.MAX_NPY_HEADER_BYTES + 16

    def decode(self, value):
        if value is None or isinstance(value, (bool, str, int, float)):
            return value
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict) or not isinstance(value.get("$type"), str):
            raise self.fail(f"unreadable metadata entry {str(value)[:80]!r}")
        kind = value["$type"]
        try:
            if kind == "ndarray":
                return self.array(value["name"])
            if kind == "objarray":
                return np.array(self.decode(value["items"]) + [None],
                                dtype=object)[:-1].reshape(value["shape"])
            if kind == "dtype":
                dtype = np.dtype(value["dtype"])
                if dtype.kind not in "iufc":
                    raise ValueError(f"a numeric dtype, not {dtype}")
                return dtype.type
            if kind == "scalar":
                return np.dtype(value["dtype"]).type(value["value"])
            if kind == "tuple":
                return tuple(self.decode(v) for v in value["items"])
            if kind == "dict":
                return {_hashable(self.decode(k)): self.decode(v) for k, v in value["items"]}
            if kind == "sparse":
                parts = (self.array(value["data"]["name"]), self.array(value["indices"]["name"]),
                         self.array(value["indptr"]["name"]))
                return _checked_csr(*parts, value["shape"], value["container"])
            if kind in ("object", "fitted"):
                return self.instance(value["class"], value["kwargs"],
                                     value["state"] if kind == "fitted" else None)
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            field = f"{'.'.join(self.fields)}: " if self.fields else ""
            raise self.fail(f"{field}unreadable metadata entry of type {kind!r}: "
                            f"{str(exc)[:300]}") from None
        raise self.fail(f"unknown entry type {kind!r} in the metadata")


    def field(self, key, value):
        """``decode(value)``, its errors naming ``key`` (and the fields it is part of)."""
        self.fields.append(str(key))
        try:
            return self.decode(value)
        finally:
            self.fields.pop()

    def instance(self, name, kwargs: dict, state: dict | None):
        """Build a registered class from its decoded parameters; rebuild a fitted one's state
        (only its declared names are decoded)."""
        entry = REGISTRY[name] if isinstance(name, str) and name in REGISTRY else None
        if entry is None:
            raise self.fail(f"unknown class {name!r}: a model file may only build "
                            f"{sorted(REGISTRY.keys())}")
        if (state is None) != (entry.state is None) or not isinstance(kwargs, dict):
            raise self.fail(f"a {name} entry {'without' if state is None else 'with'} a "
                            "fitted state (tampered file)")
        decoded = {k: self.field(k, v) for k, v in kwargs.items()}
        field = f"{'.'.join(self.fields)}: " if self.fields else ""
        if entry.upgrade is not None:  # parameters of an older layout
            decoded = entry.upgrade(decoded)
        try:
            if entry.check is not None:
                entry.check(decoded)
            obj = entry.cls(**decoded)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise self.fail(f"{field}{name}: {exc} (not what fit makes)") from None
        if state is None:
            return obj
        if not isinstance(state, dict):
            raise self.fail(f"the fitted state of a {name} is not a mapping (tampered file)")
        undeclared = sorted(str(k) for k in state if k not in entry.fitted)
        if undeclared:
            raise self.fail(f"fitted attributes {undeclared} are not those of a fitted {name} "
                            f"({list(entry.fitted)}): a tampered or foreign file")
        fitted = {k: self.field(k, v) for k, v in state.items()}
        if entry.upgrade_state is not None:  # a fitted state of an older layout
            fitted = entry.upgrade_state(decoded, fitted)
        try:
            entry.rebuild(obj, fitted)  # type: ignore[misc]
        except (TypeError, ValueError) as exc:
            raise self.fail(f"not a model {name}.fit could have made: {exc}") from None
        return obj


def _checked_csr(data, indices, indptr, shape, container):
    """The CSR matrix of a file's parts once they are one ``save`` writes: canonical (every
    row's columns increasing, no duplicates), every index in range. Checked before scipy
    sees them: its kernels trust ``indices``/``indptr`` and read out of bounds otherwise."""
    if container not in ("array", "matrix"):
        raise ValueError(f"a sparse container is 'array' or 'matrix', not {container!r}")
    if not (isinstance(shape, list) and len(shape) == 2 and all(
            type(n) is int and 0 <= n < 2**62 for n in shape)):  # is int: a bool is no size
        raise ValueError(f"a sparse shape is two integers in [0, 2**62); found "
                         f"{str(shape)[:80]}")
    for name, part in (("indices", indices), ("indptr", indptr)):
        if part.ndim != 1 or part.dtype not in (np.int32, np.int64):
            raise ValueError(f"sparse {name} must be a 1-D int32 or int64 array; found "
                             f"{part.ndim}-D {part.dtype}")
    if data.ndim != 1 or len(data) != len(indices):
        raise ValueError(f"sparse data must be 1-D with one value per index; found "
                         f"{data.ndim}-D of {len(data)} for {len(indices)} indices")
    n_rows, n_cols = shape
    if len(indptr) != n_rows + 1 or indptr[0] != 0 or indptr[-1] != len(indices):
        raise ValueError(f"sparse indptr must hold {n_rows + 1} offsets from 0 to "
                         f"{len(indices)}")
    make = sp.csr_array if container == "array" else sp.csr_matrix
    matrix = make((data, indices, indptr), shape=(n_rows, n_cols))
    matrix.check_format(full_check=True)  # indices in range, indptr non-decreasing
    # canonical: within a row (the rows' offsets repeated per entry) columns strictly increase
    rows = np.repeat(np.arange(n_rows), np.diff(indptr))
    cols = indices.astype(np.int64)
    if len(cols) > 1 and not ((np.diff(rows) > 0) | (np.diff(cols) > 0)).all():
        raise ValueError("sparse indices must increase within each row (sorted, no "
                         "duplicates), as save writes them")
    matrix.has_canonical_format = True  # checked: scipy need not check again
    return matrix


def _hashable(v):
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def _read_member(path: str, zf: zipfile.ZipFile, member: str) -> bytes:
    # the metadata and its digest are small; arrays get the (larger) member limit
    small = member in (_META, _DIGEST)
    limit = _archive.MAX_METADATA_BYTES if small else _archive.MAX_MEMBER_BYTES
    return bytes(_archive.read_member(path, zf, member, limit))


def _open(path: str) -> zipfile.ZipFile:
    return _archive.open_archive(path)


def _read_meta(path: str, zf: zipfile.ZipFile) -> dict:
    names = set(zf.namelist())
    if _META not in names:
        raise ModelFileError(f"{path}: not an ecrm model file (a zip archive without "
                             f"{_META})")
    text = _read_member(path, zf, _META)
    digest = _read_member(path, zf, _DIGEST).decode("ascii", "replace").strip()
    if hashlib.sha256(text).hexdigest() != digest:
        raise ModelFileError(f"{path}: the metadata does not match its SHA-256 digest "
                             "(the file was modified or corrupted)")
    meta = _archive.parse_json(path, _META, text)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ModelFileError(f"{path}: not an ecrm model file (format {found!r}, expected "
                             f"{FORMAT!r})")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ModelFileError(f"{path}: invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{path}: written in model-file format version {version} (by ecrm "
            f"{meta.get('ecrm_version')}); this ecrm reads versions up to {FORMAT_VERSION}: "
            "upgrade ecrm to load it")
    for key, kind in [("estimator", str), ("params", dict), ("fitted", dict),
                      ("rebuild", dict), ("arrays", dict)]:
        if not isinstance(meta.get(key), kind):
            raise ModelFileError(f"{path}: the metadata has no valid {key!r} entry")
    expected = {_META, _DIGEST} | {f"{_ARRAYS}{n}.npy" for n in meta["arrays"]}
    if names != expected:
        extra, missing = sorted(names - expected), sorted(expected - names)
        raise ModelFileError(f"{path}: unexpected members {extra} / missing members {missing} "
                             "(tampered file)")
    return meta


def read_metadata(path: str | os.PathLike) -> dict:
    """The checked metadata of a model file, without building the model.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    metadata : dict
        As written by :func:`save` (see the module docstring).
    """
    path = os.fspath(path)
    with _open(path) as zf:
        return _read_meta(path, zf)


def load(path: str | os.PathLike):
    """Read a model file written by :func:`save`.

    Only the classes of :data:`REGISTRY` are constructed, from JSON values and arrays read
    with ``allow_pickle=False``; every array is checked against its SHA-256 digest.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    model : ECRM, ECRMCV or JointKernelECRM
        The fitted estimator; it predicts exactly what the saved one did.

    Raises
    ------
    ModelFileError
        When the file is missing, truncated, corrupted or modified, of another kind, of a
        newer format version, holds a state no ``fit`` could have made, or declares arrays
        over the memory budget (:data:`ecrm.model_files._archive.MEMORY_BUDGET`, checked before any
        is read).
    """
    path = os.fspath(path)
    with _open(path) as zf:
        meta = _read_meta(path, zf)
        reader = _Reader(path, zf, meta)
        if meta["format_version"] < FORMAT_VERSION or meta["rebuild"]:
            raise reader.fail(
                f"written in model-file format version {meta['format_version']} (by ecrm "
                f"{meta.get('ecrm_version')}), whose fitted state this ecrm no longer reads "
                f"(the solvers now keep one fit object): refit the model and save it again")
        name = meta["estimator"]
        if name not in (*_ESTIMATOR_MODULES, "Pipeline"):
            raise reader.fail(f"unknown estimator class {name!r}")
        if not meta["fitted"] and name != "Pipeline":
            raise reader.fail(f"the {name} holds no fitted state (tampered file)")
        reader.check_budget()
        try:
            return reader.instance(name, meta["params"], meta["fitted"])
        except TypeError as exc:
            raise reader.fail(f"parameters do not fit {name}: {exc}") from None
        except MemoryError:
            raise reader.fail(f"not enough memory to load the model (its arrays declare "
                              f"{reader.total_bytes} bytes)") from None
