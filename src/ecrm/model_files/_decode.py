"""Reading a model file: the checked metadata, then the objects it describes.

:func:`_read_meta` checks the metadata (its digest, format and version, the members it lists);
a :class:`_Reader` checks the declared array sizes against the memory budget and builds the
registered classes the metadata names, each array read only when a field refers to it and
checked against its digest, shape and dtype.
"""

from __future__ import annotations

import hashlib
import math
import zipfile

import numpy as np
import scipy.sparse as sp

from ecrm.model_files import _archive
from ecrm.model_files._archive import ModelFileError
from ecrm.model_files._registry import REGISTRY

#: The ``format`` field of every model file.
FORMAT = "ecrm-model"
#: The version :func:`~ecrm.model_files.io.save` writes; :func:`~ecrm.model_files.io.load`
#: reads every version up to this one.
FORMAT_VERSION = 2
_META = "ecrm-model.json"
_DIGEST = "ecrm-model.sha256"
_ARRAYS = "arrays/"


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
            raise self.fail(f"{self.where()}unreadable metadata entry of type {kind!r}: "
                            f"{str(exc)[:300]}") from None
        raise self.fail(f"unknown entry type {kind!r} in the metadata")

    def where(self) -> str:
        """The field being decoded, for messages (``"a.b: "``, or ``""`` at the top)."""
        return f"{'.'.join(self.fields)}: " if self.fields else ""

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
        if entry.upgrade is not None:  # parameters of an older layout
            decoded = entry.upgrade(decoded)
        try:
            if entry.check is not None:
                entry.check(decoded)
            obj = entry.cls(**decoded)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise self.fail(f"{self.where()}{name}: {exc} (not what fit makes)") from None
        if state is None:
            return obj
        if not isinstance(state, dict):
            raise self.fail(f"the fitted state of a {name} is not a mapping (tampered file)")
        undeclared = sorted(str(k) for k in state if k not in entry.fitted)
        if undeclared:
            raise self.fail(f"fitted attributes {undeclared} are not those of a fitted {name} "
                            f"({list(entry.fitted)}): a tampered or foreign file")
        self.check_declared_rows(obj, state)
        fitted = {k: self.field(k, v) for k, v in state.items()}
        if entry.upgrade_state is not None:  # a fitted state of an older layout
            fitted = entry.upgrade_state(decoded, fitted)
        try:
            entry.rebuild(obj, fitted)  # type: ignore[misc]
        except (TypeError, ValueError) as exc:
            raise self.fail(f"not a model {name}.fit could have made: {exc}") from None
        return obj

    def declared_shape(self, value) -> list | None:
        """The shape an array or sparse entry of the metadata declares (``None`` for any other
        entry), read from the metadata only."""
        if not isinstance(value, dict):
            return None
        if value.get("$type") == "sparse":
            shape = value.get("shape")
        elif value.get("$type") == "ndarray":
            info = self.meta["arrays"].get(value.get("name")) \
                if isinstance(value.get("name"), str) else None
            shape = info.get("shape") if isinstance(info, dict) else None
        else:
            return None
        return shape if isinstance(shape, list) and all(type(n) is int for n in shape) \
            else None

    @staticmethod
    def _names(value) -> str:
        """The array members an entry refers to, for messages."""
        refs = [value.get(k) for k in ("data", "indices", "indptr")] \
            if isinstance(value, dict) and value.get("$type") == "sparse" else [value]
        names = [ref.get("name") for ref in refs if isinstance(ref, dict)]
        return f"(array {', '.join(repr(n) for n in names)})"

    def check_declared_rows(self, obj, state: dict) -> None:
        """The training rows' arrays of a fitted estimator agree, by their declared shapes,
        with each other and with its scalar fields before any is read: ``X_fit_`` (m, p) with
        ``n_features_in_`` = p, ``Y_fit_`` (m, d) with the output space's d, and the fit
        object's arrays of one row per training row (a dual fit's ``coef`` and ``u``, a
        forest's ``bag``, a feature fit's ``n_train``). A member whose shape the rest of the
        file contradicts is refused without inflating it, however it fits the budget."""
        X, Y = self.declared_shape(state.get("X_fit_")), self.declared_shape(state.get("Y_fit_"))
        problems = []
        p = state.get("n_features_in_")
        if X is not None and (len(X) != 2 or (type(p) is int and X[1] != p)):
            problems.append(f"X_fit_ {self._names(state.get('X_fit_'))} declares shape {X}, "
                            f"not (m, n_features_in_={p})")
        m = X[0] if X is not None and len(X) == 2 else None
        d = getattr(getattr(obj, "output_space", None), "n_outputs", None)
        if Y is not None and (len(Y) != 2 or (m is not None and Y[0] != m)
                              or (type(d) is int and Y[1] != d)):
            problems.append(f"Y_fit_ {self._names(state.get('Y_fit_'))} declares shape {Y}, "
                            f"not (m, d) = ({m}, {d}) (the rows of X_fit_, the outputs of the "
                            "space)")
        sparse = state.get("X_fit_")
        if m is not None and X is not None and isinstance(sparse, dict) \
                and sparse.get("$type") == "sparse":
            parts = {k: self.declared_shape(sparse.get(k)) for k in ("data", "indices",
                                                                     "indptr")}
            nnz = parts["data"]
            if parts["indptr"] != [m + 1] or parts["indices"] != nnz or nnz is None \
                    or len(nnz) != 1 or nnz[0] > m * X[1]:
                problems.append(f"X_fit_'s sparse parts {self._names(sparse)} declare shapes "
                                f"{parts}, not those of a {m} x {X[1]} matrix")
        fit = state.get("_fit")
        kwargs = fit.get("kwargs") if isinstance(fit, dict) else None
        if m is not None and isinstance(fit, dict) and isinstance(kwargs, dict):
            per_row = {"KernelFit": ("coef", "u"), "ForestFit": ("bag",)}
            for key in per_row.get(str(fit.get("class")), ()):
                shape = self.declared_shape(kwargs.get(key))
                if shape is not None and (not shape or shape[0] != m):
                    problems.append(f"_fit.{key} {self._names(kwargs.get(key))} declares "
                                    f"shape {shape}, not one row per training row ({m}, the "
                                    "rows of X_fit_)")
            n_train = kwargs.get("n_train")
            if fit.get("class") == "FeatureFit" and type(n_train) is int and n_train != m:
                problems.append(f"_fit.n_train={n_train}, but X_fit_ declares {m} rows")
        if problems:
            raise self.fail(f"{'; '.join(problems)} (checked before reading the arrays)")


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


def _read_meta(path: str, zf: zipfile.ZipFile) -> dict:
    names = set(zf.namelist())
    if _META not in names:
        raise ModelFileError(f"{path}: not an ecrm model file (a zip archive without "
                             f"{_META})")
    small = _archive.MAX_METADATA_BYTES  # the metadata and its digest
    text = bytes(_archive.read_member(path, zf, _META, small))
    digest = _archive.read_member(path, zf, _DIGEST, small).decode("ascii", "replace").strip()
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
