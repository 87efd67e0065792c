r"""The array backend, NumPy or Dask, chosen once at the entry of ``fit`` and ``predict``.

:func:`get_backend` looks at the arrays a call receives (no Dask import) and returns one of
two backends with the same three answers: ``training_rows(X, Y, space)``, whose passes run
over ``working_memory`` blocks in memory or per chunk as a map-reduce
(:mod:`ecrm.weights.kernel._solvers._dask`); ``centres(...)``, the Nystrom centres (on Dask
pulled to the client); and ``map_rows(fn, X, ...)``, ``fn`` of every row block stacked in row
order (lazily, with the row chunks of ``X``, on Dask), through which prediction ships only its
block step (the slim fit, the loss and the output space) to the workers.

Every prediction block also holds a slot of :data:`BLAS_SLOTS`: however many threads call
``predict`` at once, at most that many run BLAS at the same time (OpenBLAS aborts the process
when more threads than its buffer table holds call it concurrently).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numpy as np

from ecrm.losses.base import Loss
from ecrm.spaces.base import OutputSpace
from ecrm.weights.kernel._kernels import check_kernel_input
from ecrm.weights.kernel._solvers import _dask
from ecrm.weights.kernel._solvers.budget import row_blocks
from ecrm.weights.kernel._solvers.centers import select_centers
from ecrm.weights.kernel._solvers.rows import Rows, is_dask_array

__all__ = ["Backend", "ChunkCheck", "get_backend"]

#: Prediction blocks that may run at the same time (each may use several BLAS threads).
BLAS_SLOTS = threading.BoundedSemaphore(max(1, min(16, os.cpu_count() or 1)))


class ChunkCheck:
    """The input checks of prediction that need no estimator (shipped with Dask tasks)."""

    def __init__(self, kernel, n_train: int, n_features: int):
        self.kernel, self.n_train, self.n_features = kernel, n_train, n_features

    def shape(self, X) -> None:
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1] if X.ndim == 2 else X.shape} features, but "
                             f"this estimator was fitted with {self.n_features}")

    def __call__(self, X):
        return check_kernel_input(X, self.kernel, n_train=self.n_train)


class _NumpyBackend:
    """In-memory arrays: row blocks sized by ``working_memory``."""

    name = "numpy"
    lazy = False

    def check_solver(self, solver, requested: str, kernel) -> None:
        """Every solver runs in memory."""

    def training_rows(self, X, Y, space: OutputSpace) -> Rows:
        return Rows(X, Y)

    def centres(self, X, n_components: int, kernel_params: dict, method: str, *,
                alpha: float, random_state):
        idx = select_centers(X, n_components, kernel_params, method, alpha=alpha,
                             random_state=random_state)
        return X[idx]

    def map_rows(self, fn: Callable, X, *, check: Callable, chunk_check: ChunkCheck,
                 block_width: int, out_width: int, one_dimensional: bool = False
                 ) -> np.ndarray:
        """``fn(block)`` over the row blocks of the checked ``check(X)``, stacked in row
        order (``block_width`` floats a row; raveled with ``one_dimensional``)."""
        X = check(X)
        parts = []
        # no rows: the step on the empty input gives the right shape
        for b in list(row_blocks(X.shape[0], block_width)) or [slice(None)]:
            with BLAS_SLOTS:
                parts.append(fn(X[b]))
        out = np.concatenate(parts)
        return out.ravel() if one_dimensional else out


class _DaskBackend:
    """Dask arrays chunked by rows (:mod:`ecrm.weights.kernel._solvers._dask`)."""

    name = "dask"
    lazy = True

    def check_solver(self, solver, requested: str, kernel) -> None:
        """A solver that holds the m x m Gram matrix (the dual) is refused."""
        if solver.holds_gram:
            _dask.refuse_dual(requested, kernel)

    def check_training_data(self, X, Y, loss: Loss, space: OutputSpace, name: str):
        """``(X, Y, y_ndim)``, checked before any work (the chunks on the workers)."""
        return _dask.check_dask_training_data(X, Y, loss, space, name)

    def training_rows(self, X, Y, space: OutputSpace) -> Rows:
        return _dask.DaskRows(X, Y, space)

    def centres(self, X, n_components: int, kernel_params: dict, method: str, *,
                alpha: float, random_state):
        return _dask.dask_centers(X, n_components, kernel_params, method, alpha=alpha,
                                  random_state=random_state)

    def map_rows(self, fn: Callable, X, *, check: Callable, chunk_check: ChunkCheck,
                 block_width: int, out_width: int, one_dimensional: bool = False):
        """A lazy Dask array with the row chunks of ``X``: each chunk goes through the
        in-memory backend with the estimator-free ``chunk_check``."""
        chunk_check.shape(X)

        def per_chunk(Xb):
            return NUMPY.map_rows(fn, Xb, check=chunk_check, chunk_check=chunk_check,
                                  block_width=block_width, out_width=out_width,
                                  one_dimensional=one_dimensional)

        return _dask.map_row_chunks(per_chunk, X, out_width, one_dimensional)


NUMPY = _NumpyBackend()
DASK = _DaskBackend()
Backend = _NumpyBackend | _DaskBackend


def get_backend(*arrays) -> Backend:
    """Dask when any of ``arrays`` is a Dask collection, else NumPy.

    >>> get_backend(np.zeros(2)).name
    'numpy'
    """
    return DASK if any(is_dask_array(a) for a in arrays) else NUMPY
