r"""Nearest-neighbour risk weights: the k nearest training points as a
:class:`~ecrm.weights._fit.RiskFit`.

The weights of an input :math:`x` are uniform over its :math:`k` nearest training points,

.. math:: w_i(x) = \frac1k\, \mathbb 1[i \in N_k(x)],

with :math:`N_k(x)` the indices of the :math:`k` training points nearest to :math:`x` under the
fit's metric (scikit-learn's :class:`~sklearn.neighbors.NearestNeighbors`). The *block* of a row
is its sparse weight vector :math:`w(x)` and ``coef`` holds the targets
:math:`[\psi(Y), \mathrm{const}(Y), Y]` of the training points, so that ``block(X) @ coef`` is
the mean of the neighbours' targets: a linear loss's costs :math:`c(x) = \frac1k \sum_{i \in
N_k(x)} \psi(y_i)` and the label scores :math:`\frac1k \sum_{i \in N_k(x)} y_i`.

The leave-one-out weights of a training point :math:`x_j` are those of its :math:`k` nearest
*other* training points, :math:`N_k^{-j}(x_j)`: its own index is dropped from its
:math:`k + 1` nearest points (the last of them when duplicates of the point came first), which
is the fit on the other :math:`m - 1` points evaluated at :math:`x_j` whenever distances do not
tie. One query of the largest :math:`k` gives every smaller one (:func:`others`); within a
fit on Dask arrays (:data:`ON_WORKERS`, :mod:`ecrm.weights.neighbours._dask`) these queries run
per row chunk on the workers (:func:`leave_one_out`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import numpy as np
import scipy.sparse as sp

from ecrm.weights._fit import RiskFit

__all__ = ["ON_WORKERS", "NeighboursFit", "leave_one_out", "neighbour_mean", "others",
           "uniform_weights"]

#: Within a fit on Dask arrays: what runs the training points' leave-one-out queries per row
#: chunk on the workers (``others(index, X, k)``, :mod:`ecrm.weights.neighbours._dask`);
#: ``None``: here, in one query.
ON_WORKERS: ContextVar[Any] = ContextVar("neighbour_queries", default=None)


def uniform_weights(neighbours: np.ndarray, m: int, value: float | None = None) -> sp.csr_array:
    """The sparse (n, m) weights ``1/k`` (or ``value``) of each row's ``k`` neighbour indices
    (n, k)."""
    n, k = neighbours.shape
    data = np.full(n * k, 1.0 / k if value is None else value)
    return sp.csr_array((data, neighbours.ravel(), np.arange(0, n * k + 1, k)), shape=(n, m))


def neighbour_mean(neighbours: np.ndarray, T: np.ndarray) -> np.ndarray:
    """The mean of the rows of ``T`` (m, c) over each row's neighbours (n, k): their sum,
    then divided by ``k`` (exact for integer-valued targets, whatever the order of the sum)."""
    counts = uniform_weights(neighbours, T.shape[0], 1.0)
    return np.asarray(counts @ T) / neighbours.shape[1]


def others(index, X, k: int, rows=None) -> np.ndarray:
    """Each training point's ``k`` nearest other training points (m, k), nearest first, or
    those of the training points ``rows`` only.

    ``index`` is a :class:`~sklearn.neighbors.NearestNeighbors` fitted on the ``m`` training
    rows ``X``; the point's own index is dropped from its ``k + 1`` nearest rows, or the
    farthest of them when it is not among them (duplicates of the point came first).
    """
    m = X.shape[0]
    check_loo_k(k, m)
    rows = np.arange(m) if rows is None else np.asarray(rows)
    found = index.kneighbors(X[rows], n_neighbors=k + 1, return_distance=False)
    own = found == rows[:, None]
    own[~own.any(axis=1), -1] = True  # not among them: drop the farthest
    return found[~own].reshape(len(rows), k)


def check_loo_k(k: int, m: int) -> None:
    """Leave-one-out needs ``k < m``: the ``k`` nearest *other* points."""
    if k >= m:
        raise ValueError(f"leave-one-out needs n_neighbors < m (the k nearest other points): "
                         f"n_neighbors={k} and m={m} training samples")


def leave_one_out(index, X, k: int) -> np.ndarray:
    """Every training point's ``k`` nearest other training points (m, k), as :func:`others`
    finds them: here, or per row chunk on the workers within a Dask fit
    (:data:`ON_WORKERS`)."""
    workers = ON_WORKERS.get()
    return others(index, X, k) if workers is None else workers.others(index, X, k)


class NeighboursFit(RiskFit):
    r"""Nearest-neighbour weights over the training points (see the module docstring).

    Parameters
    ----------
    n_neighbors : int
        :math:`k`, at most the number of training points.
    metric : str
        The distance (a metric name of :class:`~sklearn.neighbors.NearestNeighbors`).
    n_risk : int
        Leading target columns that are the risk targets (0 for a loss without a linear
        form).
    X_train : ndarray or sparse matrix of shape (m, p), optional
        The training inputs the neighbours are searched among (set again on load: the index
        is rebuilt from them when first needed).
    coef : ndarray of shape (m, c), optional
        The targets of the training points (set on load by the estimator, from its outputs).
    n_jobs : int, optional
        The neighbour queries' parallelism (scikit-learn's ``n_jobs``).
    """

    coef_name = "risk_targets_"
    ridge = 0.0
    fit_intercept = False

    def __init__(self, n_neighbors: int, metric: str, n_risk: int, *, X_train=None, coef=None,
                 n_jobs=None):
        self.n_neighbors, self.metric, self.n_risk = n_neighbors, metric, n_risk
        self.X_train, self.coef, self.n_jobs = X_train, coef, n_jobs
        self._index = None

    def to_state(self) -> dict:
        return {"n_neighbors": self.n_neighbors, "metric": self.metric, "n_risk": self.n_risk}

    def index(self):
        """The neighbour index of the training rows (built when first needed)."""
        if self._index is None:
            from sklearn.neighbors import NearestNeighbors

            self._index = NearestNeighbors(n_neighbors=self.n_neighbors, metric=self.metric,
                                           n_jobs=self.n_jobs).fit(self.X_train)
        return self._index

    @property
    def n_train(self) -> int:
        return self.coef.shape[0]

    def slim(self) -> NeighboursFit:
        """The fit itself, its index built (prediction needs the training rows it holds)."""
        self.index()
        return self

    @property
    def intercept(self) -> np.ndarray:  # type: ignore[override]
        return np.zeros(self.coef.shape[1])

    @property
    def n_columns(self) -> int:
        """k, the training points a row's weights touch (sizes row blocks)."""
        return self.n_neighbors

    def block(self, X) -> sp.csr_array:
        """The weights w(x) of the rows of ``X``: a sparse (n, m) array."""
        found = self.index().kneighbors(X, n_neighbors=self.n_neighbors,
                                        return_distance=False)
        return uniform_weights(found, self.n_train)

    def weights(self, V) -> np.ndarray:
        return V.toarray() if sp.issparse(V) else np.asarray(V)

    def loo_neighbours(self) -> np.ndarray:
        """The leave-one-out neighbours of the training points (m, k): their ``k`` nearest
        other training points."""
        return leave_one_out(self.index(), self.X_train, self.n_neighbors)
