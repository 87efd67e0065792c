r"""ECRM on Dask arrays: the streaming primal fit as a map-reduce, prediction per chunk.

Inputs are Dask arrays chunked by rows only, ``X`` (m, p) and ``Y`` (m, d) with the same row
chunks (else an error: ``Y.rechunk({0: X.chunks[0]})``; no data moves silently between
workers), or ``Y`` in memory, split along ``X``'s row chunks.

**Fit** (``solver="primal"`` or ``"nystrom"``; the dual's m x m matrix is refused):

* the Nystrom centres are pulled to the client: ``"uniform"`` draws the indices exactly as
  the in-memory fit does (same ``random_state``, same centres, the same model up to the
  summation order); ``"kmeans++"`` and ``"leverage"`` run
  :func:`~ecrm.weights.kernel._solvers.centers.select_centers` on a uniform subsample of ``min(m, 20
  M)`` rows (the in-memory fit draws its k-means++ pool the same size, but runs leverage scores over
  all rows);
* each chunk computes its normal equations :math:`F_c^\top F_c`, :math:`F_c^\top T_c`, ...
  (:class:`~ecrm.weights.kernel._solvers.normal_equations.NormalEquations`, in ``working_memory``
  blocks within the chunk); the M x M and M x c sums are added in a tree (8 at a time) on the
  workers, and the small solve (or, for :class:`~ecrm.ECRMCV`, the eigendecomposition) runs on the
  client;
* :class:`~ecrm.ECRMCV`'s leave-one-out pass sums each chunk's leave-one-out losses of every
  candidate the same way, and a last pass gathers the winner's leave-one-out predictions
  (``(len(loo_rows_), d)`` on the client: bound it with ``loo_samples``).

Each chunk is checked on its worker as it is read (an error names the chunk's rows); a
failure stops the fit before anything is set. ``X_fit_`` and ``Y_fit_`` keep the Dask arrays
(references, not computed).

**Prediction** on a Dask array is lazy, with the same row chunks (:func:`map_row_chunks`: the
in-memory pass of :mod:`ecrm.weights.kernel._solvers._backend` per chunk).

Dask is imported only inside these functions, and only when Dask arrays are passed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import reduce

import numpy as np
from sklearn.utils import check_random_state

from ecrm.estimators._validation import check_same_rows
from ecrm.losses.base import LinearLoss, Loss
from ecrm.spaces.base import OutputSpace
from ecrm.weights.kernel._kernels import check_kernel_input
from ecrm.weights.kernel._solvers.centers import check_center_selection, select_centers
from ecrm.weights.kernel._solvers.features import FeatureMap
from ecrm.weights.kernel._solvers.normal_equations import NormalEquations
from ecrm.weights.kernel._solvers.rows import Rows, is_dask_array

__all__ = ["DaskRows", "check_dask_training_data", "dask_centers", "map_row_chunks",
           "refuse_dual"]

_SPLIT_EVERY = 8


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - dask is in the test extra
        raise ImportError("Dask arrays need dask: pip install 'ecrm[dask]'") from exc
    return dask, da


def _check_row_chunks(A, name: str) -> None:
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D Dask array; got {A.ndim} dimensions "
                         f"(shape {A.shape})")
    if any(np.isnan(s) for s in A.shape):
        raise ValueError(f"{name} has unknown chunk sizes (shape {A.shape}); call "
                         f"{name}.compute_chunk_sizes() first")
    if len(A.chunks[1]) != 1:
        raise ValueError(f"{name} must be chunked by rows only (one chunk along the columns); "
                         f"got column chunks {A.chunks[1]}: use {name}.rechunk({{1: -1}})")


def refuse_dual(solver: str, kernel) -> None:
    """A Dask fit needs a primal solver: the dual holds the m x m Gram matrix in memory."""
    raise ValueError(f"Dask arrays need solver='nystrom' (or solver='primal' with "
                     f"kernel='linear'); the {solver!r} solver resolved to the exact dual, "
                     f"which builds the m x m kernel matrix in memory (kernel={kernel!r})")


def check_dask_training_data(X, Y, loss: Loss, output_space: OutputSpace, name: str):
    """Check Dask training data before any work; ``(X, Y, y_ndim)`` with ``Y`` a Dask array.

    Parameters
    ----------
    X : Dask array of shape (m, p), chunked by rows
    Y : Dask array chunked as ``X``, or array-like, of shape (m, d) (or (m,) for one output)
    loss : Loss
        Must have a linear form (the risk weights of other losses span all m training
        points at every prediction).
    output_space : OutputSpace
    name : str
        The estimator's class name, for the messages.
    """
    _, da = _import_dask()
    if not isinstance(loss, LinearLoss):
        raise TypeError(f"{name} on Dask arrays needs a loss with a linear form (an "
                        f"ecrm.losses.LinearLoss); {type(loss).__name__} predicts through "
                        f"the m risk weights of every input")
    if not is_dask_array(X):
        raise TypeError(f"Y is a Dask array but X is not ({type(X).__name__}); pass X as a "
                        f"Dask array chunked by rows")
    _check_row_chunks(X, "X")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric; got dtype {X.dtype}")
    y_ndim = Y.ndim if is_dask_array(Y) else np.ndim(Y)
    if not is_dask_array(Y):
        Y = np.asarray(Y)
    if y_ndim == 1 and output_space.n_outputs == 1:
        Y = Y[:, None]
    if not is_dask_array(Y):
        if Y.ndim != 2:
            raise ValueError(f"Y must be 2-D; got shape {Y.shape}")
        check_same_rows(X, Y)
        Y = da.from_array(Y, chunks=(X.chunks[0], -1))
    _check_row_chunks(Y, "Y")
    check_same_rows(X, Y)
    if Y.chunks[0] != X.chunks[0]:
        raise ValueError(f"Y must have the row chunks of X; got X row chunks {X.chunks[0]} "
                         f"and Y row chunks {Y.chunks[0]}: use Y.rechunk({{0: X.chunks[0]}})")
    if X.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 training samples; got {X.shape[0]}")
    output_space.validate(np.asarray(Y[:1]))  # the width and type, from one row
    return X, Y, y_ndim


class _Box:
    """Holds an object as a single Dask graph key (computed once, shared by the tasks)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _shared(obj):
    from dask import delayed

    return delayed(_Box(obj))


def _chunk_rows(space: OutputSpace, start: int, Xb, Yb) -> Rows:
    """The checked in-memory rows of one chunk (starting at training row ``start``)."""
    Xb = check_kernel_input(Xb, "linear")
    try:
        Yb = space.validate(Yb)
    except ValueError as exc:
        raise ValueError(f"Y rows {start} to {start + len(Yb) - 1} (one Dask chunk): "
                         f"{exc}") from exc
    return Rows(Xb, Yb)


def _chunk_equations(ctx: _Box, start: int, Xb, Yb) -> NormalEquations:
    features, targets, space = ctx.value
    return _chunk_rows(space, start, Xb, Yb).equations(features, targets)


def _chunk_apply(ctx: _Box, how: str, width: int, start: int, Xb, Yb, rows: np.ndarray):
    fn, space = ctx.value
    return getattr(_chunk_rows(space, start, Xb, Yb), how)(fn, rows, width)


def _add(*parts):
    return reduce(operator.add, parts)


class DaskRows(Rows):
    """Training rows as Dask arrays: the passes of
    :class:`~ecrm.weights.kernel._solvers.rows.Rows` per chunk.

    Each pass is one Dask graph: a task per chunk, a tree of sums, computed on the active
    scheduler (a ``distributed.Client`` when one exists).
    """

    def __init__(self, X, Y, output_space: OutputSpace):
        self.X, self.Y, self.space = X, Y, output_space
        self.n_rows = int(X.shape[0])
        self.starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)

    def _chunks(self):
        return zip(self.starts[:-1].tolist(), self.starts[1:].tolist(),
                   self.X.to_delayed().ravel(), self.Y.to_delayed().ravel(), strict=True)

    @staticmethod
    def _tree_sum(parts):
        from dask import delayed

        while len(parts) > 1:
            parts = [delayed(_add)(*parts[i:i + _SPLIT_EVERY])
                     for i in range(0, len(parts), _SPLIT_EVERY)]
        return parts[0].compute()

    def equations(self, features: FeatureMap, targets: Callable) -> NormalEquations:
        from dask import delayed

        ctx = _shared((features, targets, self.space))
        return self._tree_sum([delayed(_chunk_equations)(ctx, start, Xb, Yb)
                               for start, _, Xb, Yb in self._chunks()])

    def _per_chunk(self, how: str, fn: Callable, rows: np.ndarray, width: int) -> list:
        from dask import delayed

        rows = np.sort(np.asarray(rows))
        ctx = _shared((fn, self.space))
        parts = []
        for start, stop, Xb, Yb in self._chunks():
            local = rows[(rows >= start) & (rows < stop)] - start
            if len(local):
                parts.append(delayed(_chunk_apply)(ctx, how, width, start, Xb, Yb, local))
        if not parts:
            raise ValueError("no training rows selected")
        return parts

    def map_sum(self, fn: Callable, rows: np.ndarray, width: int) -> np.ndarray:
        return self._tree_sum(self._per_chunk("map_sum", fn, rows, width))

    def map_concat(self, fn: Callable, rows: np.ndarray, width: int) -> np.ndarray:
        import dask

        return np.concatenate(dask.compute(*self._per_chunk("map_concat", fn, rows, width)))


def dask_centers(X, n_components: int, kernel_params: dict, method: str, *, alpha: float,
                 random_state) -> np.ndarray:
    """The Nystrom centres (M, p) of a Dask ``X``, pulled to the client (module docstring)."""
    random_state = check_random_state(random_state)
    m = int(X.shape[0])
    if not check_center_selection(method).needs_inputs or n_components == m:
        # the in-memory draw, index for index
        idx = select_centers(np.empty((m, 0)), n_components, kernel_params, "uniform",
                             random_state=random_state)
    else:
        pool = np.sort(random_state.choice(m, min(m, 20 * n_components), replace=False))
        local = select_centers(check_kernel_input(X[pool].compute(), "linear"), n_components,
                               kernel_params, method, alpha=alpha, random_state=random_state)
        idx = pool[local]
    return check_kernel_input(X[idx].compute(), "linear")


def _distributed_client():
    """The :class:`distributed.Client` that computes Dask graphs here, or ``None`` (Dask's
    local schedulers, or another scheduler chosen in ``dask.config``)."""
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is in the dask extra
        return None
    from dask.base import get_scheduler

    try:
        client = default_client()
    except ValueError:  # no client
        return None
    return client if get_scheduler() == client.get else None


def map_row_chunks(fn, X, out_width: int, one_dimensional: bool = False):
    """``fn`` of every row chunk of the Dask array ``X``, as a lazy Dask array.

    ``fn`` (the in-memory backend's pass over one chunk) carries the prediction step only,
    never the estimator or its training rows. With a distributed client it is scattered to
    every worker at once and the graph holds its future: the step goes from the client to the
    workers without passing through the scheduler, whatever the number of chunks. With Dask's
    local schedulers the graph holds it once, as one key that every chunk's task reads.
    """
    _import_dask()
    _check_row_chunks(X, "X")
    client = _distributed_client()
    if client is None:
        ctx = _shared(fn)
    else:
        ctx = client.scatter(_Box(fn), broadcast=True, hash=False)
    if one_dimensional:
        return X.map_blocks(_unbox_apply, ctx, dtype=float, drop_axis=1,
                            chunks=(X.chunks[0],), meta=np.empty((0,)))
    return X.map_blocks(_unbox_apply, ctx, dtype=float, chunks=(X.chunks[0], (out_width,)),
                        meta=np.empty((0, out_width)))


def _unbox_apply(Xb, ctx: _Box):
    return ctx.value(Xb)
