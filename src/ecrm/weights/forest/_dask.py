r"""Forests on Dask arrays: the trees grown on the workers, the same model as in memory.

:class:`~ecrm.weights.forest.estimator.ForestECRM` and
:class:`~ecrm.weights.forest.estimator.ForestECRMCV` take ``X`` and ``Y`` as Dask arrays
chunked by rows (the checks of :mod:`ecrm.weights.kernel._solvers._dask`: a loss with a
linear form, one chunk along the columns, the same row chunks). Their fit (:func:`fits_dask`)

* checks the Dask inputs before any work, then gathers them on the client (scikit-learn
  grows a tree from the whole training matrix): the fitted model is the in-memory fit's;
* grows the trees under joblib's Dask backend when a :class:`distributed.Client` is active,
  the training matrix scattered once per batch of trees
  (:data:`~ecrm.weights.forest._fit.GROW_BATCH_BYTES`); else on the client, as ``n_jobs`` says;
* finds the training points' leaves on the workers, chunk by chunk of ``X``
  (:func:`training_leaves`: ``dask.array.map_blocks`` of the packed trees' traversal, which
  gives scikit-learn's leaves);
* computes the out-of-bag sums of every setting a search judges, and the exact oracle on
  them, one task per row chunk of ``X`` (:func:`oob_sums`): each task gets its rows'
  leaves and bootstrap counts, the leaf means of the targets once; the sums come back in
  order (the forest's arrays stay on the client, which builds the leaf weights). A wide
  embedding whose leaf means would not fit ``working_memory`` is summed on the client.

Prediction on a Dask array is lazy and per row chunk (:meth:`ecrm.weights.RiskEstimator.
predict`, ``predict_costs``, ``predict_scores``): each chunk's task holds the packed trees,
the leaf weights and the targets, never the training rows.

Dask is imported only here, and only when Dask arrays are passed.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from ecrm.weights.forest._fit import ON_WORKERS, ForestFit, Trees, leaf_average
from ecrm.weights.kernel._solvers.budget import row_blocks
from ecrm.weights.kernel._solvers.rows import is_dask_array

__all__ = ["fits_dask", "minimize_rows"]


def _client():
    """The active :class:`distributed.Client`, or ``None`` (no distributed scheduler)."""
    try:
        from distributed import get_client
    except ImportError:  # pragma: no cover - distributed is in the dask extra
        return None
    try:
        return get_client()
    except ValueError:  # no client: Dask's local schedulers
        return None


def gather_training(X, Y, y_ndim: int):
    """The checked Dask training rows ``X`` (m, p) and ``Y`` (m, d) as in-memory arrays on
    the client (``Y`` raveled back when the fit was given a 1-D ``y``)."""
    import dask

    X, Y = dask.compute(X, Y)
    return X, (Y[:, 0] if y_ndim == 1 else Y)


def _leaves_of_chunk(Xb, box) -> np.ndarray:
    return box.value.apply(Xb)


def training_leaves(X, trees: Trees) -> np.ndarray:
    """The leaf (packed node index) of every row of the Dask array ``X`` in every tree,
    (m, n_trees), each row chunk traversed on its worker (:meth:`Trees.apply`); the packed
    trees are one key of the graph."""
    from dask import delayed

    from ecrm.weights.kernel._solvers._dask import _Box

    kind = np.int32 if trees.n_nodes < 2**31 else np.int64
    box = delayed(_Box(trees))
    leaves = X.map_blocks(_leaves_of_chunk, box, dtype=kind,
                          chunks=(X.chunks[0], (trees.n_trees,)), meta=np.empty((0, 0), kind))
    return leaves.compute()


def _oob_chunk(box, leaves: np.ndarray, bag: np.ndarray) -> np.ndarray:
    """The out-of-bag sums of one row chunk of training points (their leaves and bootstrap
    counts), as :meth:`ForestFit.oob_mean` computes them, row block by row block."""
    means, fn, width, n_nodes = box.value
    n, n_trees = leaves.shape
    out = np.empty((n, width))
    for blk in row_blocks(n, 2 * means.shape[1] + width + 3 * n_trees):
        keep = bag[blk] == 0
        seen = keep.any(axis=1)
        S = leaf_average(leaves[blk], keep, n_nodes) @ means
        S[~seen] = np.nan
        out[blk] = S if fn is None else fn(S, seen)
    return out


def oob_sums(starts: np.ndarray, fit: ForestFit, means: np.ndarray, fn, width: int
             ) -> np.ndarray:
    r"""The out-of-bag sums of every training point (NaN rows: every tree drew it), or
    ``fn(S, seen)`` of them (``width`` columns), one task per row chunk ``starts[k]`` to
    ``starts[k + 1]``: each ships that chunk's leaves and bootstrap counts, and the leaf
    means ``means`` (n_nodes, e) and ``fn`` once (one key of the graph); the rows come back
    in order (:meth:`ForestFit.oob_mean` in memory)."""
    import dask
    from dask import delayed

    from ecrm.weights.kernel._solvers._dask import _Box

    box = delayed(_Box((means, fn, width, fit.trees.n_nodes)))
    leaves, bag = fit.train_leaves(), fit.bag
    parts = [delayed(_oob_chunk)(box, leaves[a:b], bag[a:b])
             for a, b in zip(starts[:-1], starts[1:], strict=True)]
    return np.concatenate(dask.compute(*parts))


class _OnWorkers:
    """What a Dask fit runs on the workers (:data:`ecrm.weights.forest._fit.ON_WORKERS`)."""

    def __init__(self, X):
        self.X = X
        self.starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)

    def leaves(self, trees: Trees) -> np.ndarray:
        return training_leaves(self.X, trees)

    def oob_sums(self, fit: ForestFit, means: np.ndarray, fn, width: int) -> np.ndarray:
        return oob_sums(self.starts, fit, means, fn, width)


@contextlib.contextmanager
def growing_on_workers(X):
    """Within: forests grow under joblib's Dask backend when a distributed client is
    active, and the training leaves of the Dask array ``X`` and the out-of-bag sums are
    found on the workers, chunk by chunk of ``X``."""
    token = ON_WORKERS.set(_OnWorkers(X))
    try:
        if _client() is None:
            yield
        else:
            import joblib

            with joblib.parallel_config(backend="dask"):
                yield
    finally:
        ON_WORKERS.reset(token)


def fits_dask(fit):
    """``fit(self, X, Y)`` of a forest estimator that also takes Dask arrays (module
    docstring): the Dask inputs are checked before any work, gathered on the client, and
    the in-memory ``fit`` runs with its trees and training leaves on the workers."""

    @functools.wraps(fit)
    def run(self, X, Y):
        if not (is_dask_array(X) or is_dask_array(Y)):
            return fit(self, X, Y)
        self._check_params()
        X_dask, Y_dask, seen = self._check_training_data(X, Y, None)
        X_mem, Y_mem = gather_training(X_dask, Y_dask, seen.y_ndim)
        with growing_on_workers(X_dask):
            return fit(self, X_mem, Y_mem)

    return run


def minimize_rows(space, C, form):
    """The output space's exact oracle on the costs ``C`` (n, e): per row chunk, lazily, when
    ``C`` is a Dask array."""
    if not is_dask_array(C):
        return space.minimize(C, form)
    d = space.n_outputs
    return C.map_blocks(space.minimize, form, dtype=float, chunks=(C.chunks[0], (d,)),
                        meta=np.empty((0, d)))
