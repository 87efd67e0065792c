r"""The neighbours family on Dask arrays: the training rows gathered, the leave-one-out
queries per row chunk on the workers.

:class:`~ecrm.NeighboursECRM` and :class:`~ecrm.NeighboursECRMCV` (``fit`` and
``fit_honest``) take ``X`` and ``Y`` as Dask arrays chunked by rows, checked as every Dask fit
checks them (:func:`ecrm.weights.kernel._solvers._dask.check_dask_training_data`: a loss with a
linear form, one chunk along the columns, the same row chunks) before any work.

A neighbours model *is* its training rows: prediction searches them and a model file stores
them. So the fit (:func:`fits_dask`) gathers the checked ``X`` and ``Y`` on the client, runs the
in-memory fit on them (the same checks of the values, the same index and targets, hence the
same model) and keeps them in memory (``X_fit_`` is a NumPy array, not the Dask array).

What grows with :math:`m` beyond that is the leave-one-out search: the :math:`m` queries of
the :math:`k + 1` nearest training points that judge every :math:`k` (:class:`NeighboursECRMCV`)
or give the honest outputs (``fit_honest``). Within the Dask fit they run one task per row
chunk of the given ``X`` (:func:`others_by_chunk`): the index, built once on the client, is
one shared input of the tasks (scattered to the workers with a :class:`distributed.Client`,
one key of the graph with Dask's local schedulers), and each task queries its chunk's rows
from the index's own training rows (nothing is read from the Dask array again); the
neighbour indices (m, k + 1) come back in order. Each row's neighbours are those of the
in-memory query, so the criterion, the chosen :math:`k` and the honest outputs are the same.

Prediction on a Dask array needs nothing here: it is lazy and per row chunk
(:meth:`ecrm.weights.RiskEstimator.predict`, ``predict_costs``, ``predict_scores``), each
chunk's task holding the fit (its index and targets).

Dask is imported only here, and only when Dask arrays are passed.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from ecrm.weights.kernel._solvers.rows import is_dask_array
from ecrm.weights.neighbours._fit import ON_WORKERS, check_loo_k, others

__all__ = ["fits_dask"]


def _others_of_rows(box, k: int, start: int, stop: int) -> np.ndarray:
    """The ``k`` nearest other training points of the training rows ``start`` to ``stop``."""
    index, X = box.value
    return others(index, X, k, rows=np.arange(start, stop))


def others_by_chunk(starts: np.ndarray, index, X, k: int) -> np.ndarray:
    """:func:`ecrm.weights.neighbours._fit.others` of every training point (m, k), one task
    per row chunk ``starts[c]`` to ``starts[c + 1]``; ``index`` and the training rows ``X``
    it was built on are shipped once (module docstring)."""
    import dask
    from dask import delayed

    from ecrm.weights.forest._dask import _client
    from ecrm.weights.kernel._solvers._dask import _Box

    check_loo_k(k, X.shape[0])
    box = _Box((index, X))
    client = _client()
    shared = delayed(box) if client is None else client.scatter(box, hash=False)
    parts = [delayed(_others_of_rows)(shared, k, int(a), int(b))
             for a, b in zip(starts[:-1], starts[1:], strict=True)]
    return np.concatenate(dask.compute(*parts))


class _OnWorkers:
    """The leave-one-out queries of a Dask fit, per row chunk of its ``X`` (:data:`ON_WORKERS`)."""

    def __init__(self, row_chunks: tuple[int, ...]):
        self.starts = np.concatenate([[0], np.cumsum(row_chunks)]).astype(int)

    def others(self, index, X, k: int) -> np.ndarray:
        return others_by_chunk(self.starts, index, X, k)


@contextlib.contextmanager
def querying_on_workers(row_chunks: tuple[int, ...]):
    """Within: the training points' leave-one-out queries run per row chunk of
    ``row_chunks`` on the Dask scheduler."""
    token = ON_WORKERS.set(_OnWorkers(row_chunks))
    try:
        yield
    finally:
        ON_WORKERS.reset(token)


def fits_dask(method):
    """``method(self, X, Y, **options)`` (``fit`` or ``fit_honest``) of a neighbours estimator
    that also takes Dask arrays: they are checked before any work and gathered, and the
    in-memory method runs on them with its leave-one-out queries per row chunk of ``X``
    (module docstring)."""

    @functools.wraps(method)
    def run(self, X, Y, **options):
        if not (is_dask_array(X) or is_dask_array(Y)):
            return method(self, X, Y, **options)
        from ecrm.weights.forest._dask import gather_training

        self._check_params()
        X_dask, Y_dask, seen = self._check_training_data(X, Y, None)
        X_mem, Y_mem = gather_training(X_dask, Y_dask, seen.y_ndim)
        with querying_on_workers(X_dask.chunks[0]):
            return method(self, X_mem, Y_mem, **options)

    return run
