r"""Forests on Dask arrays: the trees grown on the workers, the same model as in memory.

:class:`~ecrm.weights.forest.estimator.ForestECRM` and
:class:`~ecrm.weights.forest.estimator.ForestECRMCV` take ``X`` and ``Y`` as Dask arrays
chunked by rows (the checks of :mod:`ecrm.weights.kernel._solvers._dask`: a loss with a
linear form, one chunk along the columns, the same row chunks). Their fit (:func:`fits_dask`)

* checks the Dask inputs before any work, then gathers them on the client: scikit-learn
  grows a tree from the whole training matrix, so the client holds it as the in-memory fit
  does, and the fitted model is that fit's (the same trees for the same seed, the same
  out-of-bag criterion and choice, the same model file);
* grows the trees under joblib's Dask backend when a :class:`distributed.Client` is active
  (:func:`joblib.parallel_config`): scikit-learn's own tree-building tasks run on the
  workers, the training matrix scattered once per batch of trees
  (:data:`~ecrm.weights.forest._fit.GROW_BATCH_BYTES`), each tree's draws bounded as
  ``max_samples`` bounds them in memory. Without a distributed client the trees grow on the
  client, as ``n_jobs`` says;
* finds the training points' leaves on the workers, chunk by chunk of ``X``
  (:func:`training_leaves`: ``dask.array.map_blocks`` of the packed trees' traversal, which
  gives scikit-learn's leaves), and the out-of-bag sums of every setting of a search in row
  blocks of the client's arrays.

Prediction on a Dask array is lazy and per row chunk (:meth:`ecrm.weights.RiskEstimator.
predict`, ``predict_costs``, ``predict_scores``): each chunk's task holds the packed trees,
the leaf weights and the targets, never the training rows.

Dask is imported only here, and only when Dask arrays are passed.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from ecrm.weights.forest._fit import TRAINING_LEAVES, Trees
from ecrm.weights.kernel._solvers.rows import is_dask_array

__all__ = ["fits_dask", "gather_training", "minimize_rows", "training_leaves"]


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


@contextlib.contextmanager
def growing_on_workers(X):
    """Within: forests grow under joblib's Dask backend when a distributed client is
    active, and the training leaves of the Dask array ``X`` are found on the workers."""
    token = TRAINING_LEAVES.set(functools.partial(training_leaves, X))
    try:
        if _client() is None:
            yield
        else:
            import joblib

            with joblib.parallel_config(backend="dask"):
                yield
    finally:
        TRAINING_LEAVES.reset(token)


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


def _minimize_chunk(C, space, form):
    return space.minimize(C, form)


def minimize_rows(space, C, form):
    """The output space's exact oracle on the costs ``C`` (n, e): per row chunk, lazily, when
    ``C`` is a Dask array."""
    if not is_dask_array(C):
        return space.minimize(C, form)
    d = space.n_outputs
    return C.map_blocks(_minimize_chunk, space, form, dtype=float, chunks=(C.chunks[0], (d,)),
                        meta=np.empty((0, d)))
