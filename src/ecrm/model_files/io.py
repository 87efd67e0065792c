r"""Model files: :func:`save` and :func:`load` a fitted estimator, with no pickle.

A model file is a zip archive of:

* ``ecrm-model.json``: the metadata, plain JSON: ``format`` (``"ecrm-model"``),
  ``format_version``, the ``ecrm_version`` that wrote it, the ``estimator`` class name, its
  ``params`` (``get_params(deep=False)``) and its ``fitted`` attributes, plus how to
  ``rebuild`` what was left out and the SHA-256 digest, shape and dtype of every array;
* ``ecrm-model.sha256``: the SHA-256 digest of the metadata bytes;
* ``arrays/<name>.npy``: one NumPy array per member (``allow_pickle=False``), in its memory
  order (C or Fortran).

Losses and output spaces are described by class name and constructor arguments (a
:class:`~ecrm.Hierarchy` by its labels and ``(parent, child)`` edges, a
:class:`~ecrm.CandidateSpace` by its candidate array, ...). Loading only constructs the
classes of a fixed registry (:data:`REGISTRY`): it never executes code from the file.

The fitted state is the estimator's declared fitted attributes (``_fitted_attributes``), the
solver's fit object among them; its views (``dual_coef_``, ``coef_``, ``intercept_``) are
derived again on load. Loading refuses any other name, and checks the parameters with the
checks of ``fit`` and every fitted attribute's type, dtype, shape, values, ranges and the
equalities of ``fit`` (``ridge = m * alpha``, ``s = sum(u)``, monotone calibration maps,
canonical sparse rows: each estimator's ``_check_fitted_state``) before a constructor could
cast them; a violation is one :class:`ModelFileError` naming the field. An array member may
inflate only to the size its metadata declares, and is read only once that shape agrees with
the training rows the file declares.

The factorisation of :math:`K + m\lambda I` (an :math:`m \times m` object) is never written:
the fit object (:class:`ecrm.weights.kernel._solvers.dual.KernelFit`) rebuilds it from the
training inputs and its ridge when a prediction first needs it (losses without a linear form,
:meth:`~ecrm.ECRM.conditional_weights`; :meth:`~ecrm.ECRM.predict` with a linear loss and
:meth:`~ecrm.ECRM.predict_scores` use stored coefficients). A file thus takes
:math:`O(m(p + e))` space. A model of a linear loss fitted in the primal or on Nystrom
features is stored without ``X_fit_``, ``Y_fit_``, ``loo_predictions_`` and ``loo_scores_``
(they load as ``None``): its file takes :math:`O(k(p + e))` whatever m; loaded, it predicts,
gives costs and scores, but :meth:`~ecrm.ECRM.conditional_weights` asks for a refit.

Errors are :class:`ModelFileError` (a ``ValueError``) naming the file and what is wrong.

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
import os
from typing import Any, BinaryIO

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ecrm.model_files import _archive, _steps
from ecrm.model_files._archive import ModelFileError
from ecrm.model_files._decode import (
    _ARRAYS,
    _DIGEST,
    _META,
    FORMAT,
    FORMAT_VERSION,
    _read_meta,
    _Reader,
)
from ecrm.model_files._registry import _ESTIMATOR_MODULES, REGISTRY
from ecrm.weights.kernel._ridge import Factor

__all__ = ["FORMAT", "FORMAT_VERSION", "ModelFileError", "REGISTRY", "describe", "load",
           "read_metadata", "save"]


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


def save(model, path: str | os.PathLike | BinaryIO) -> None:
    """Write a fitted estimator to a model file (a zip of JSON metadata and ``.npy`` arrays).

    Written whole or not at all, by the rule ``ecrm fit -o`` follows too: a new temporary
    file renamed over ``path`` when complete; a symbolic link followed (its target replaced),
    a FIFO or a character device (``/dev/null``) written through, never replaced. A binary
    file object gets the same bytes, built in memory and written to it in one call.

    Parameters
    ----------
    model : ECRM, ECRMCV or JointKernelECRM
        A fitted estimator; its loss and output space must be registered classes
        (:data:`REGISTRY`) and its kernel a name or ``"precomputed"``.
    path : str, path-like or binary file object
        The file to write (conventionally ``*.ecrm``), or a buffered binary file object
        open for writing (:class:`io.BytesIO`, ``sys.stdout.buffer``), written at its
        position and left open.

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
    _archive.write_archive(os.fspath(path) if isinstance(path, (str, os.PathLike)) else path,
                           members)


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
    with _archive.open_archive(path) as zf:
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
        over the memory budget (:data:`ecrm.model_files._archive.MEMORY_BUDGET`).
    """
    path = os.fspath(path)
    with _archive.open_archive(path) as zf:
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
