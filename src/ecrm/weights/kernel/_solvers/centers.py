r"""Choosing the Nystrom centres among the training points: :class:`CenterSelector` objects.

* ``"uniform"``: M distinct points uniformly at random (Falkon's default).
* ``"kmeans++"``: :func:`sklearn.cluster.kmeans_plusplus` seeding (Euclidean distances in
  input space) on a uniform subsample of ``min(m, 20 M)`` points, so the cost is
  :math:`O(M^2 p \log M)`, not :math:`O(m M p \log M)`.
* ``"leverage"``: approximate ridge leverage scores (Alaoui & Mahoney 2015; Rudi et al.
  2018). A uniform pilot of M centres gives features :math:`g(x)`; the score of
  :math:`x_i` is :math:`\ell_i = g_i^\top (G^\top G + m\lambda I)^{-1} g_i`, computed over
  row blocks; M points are then drawn without replacement with probabilities
  :math:`\propto \ell_i` (Efraimidis-Spirakis keys, :math:`O(m)`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np
from scipy import linalg
from sklearn.utils import check_random_state

from ecrm.estimators._parameters import check_parameter
from ecrm.weights.kernel._solvers.budget import row_blocks
from ecrm.weights.kernel._solvers.features import NystromFeatures

__all__ = ["CenterSelector", "KMeansPlusPlusCenters", "LeverageCenters", "UniformCenters",
           "check_center_selection", "select_centers"]


class CenterSelector(ABC):
    """Chooses the Nystrom centres among the training points (falkon's ``CenterSelector``).

    Subclass it and implement :meth:`select` to plug in another rule; pass the object as
    ``center_selection`` (the names ``"uniform"``, ``"kmeans++"`` and ``"leverage"`` are
    shorthands for the three below, resolved once by :func:`check_center_selection`).
    """

    #: Whether the rule reads only the number of rows (a Dask fit then draws exactly the
    #: indices of the in-memory fit; the others run on a uniform subsample of 20 M rows).
    needs_inputs: bool = True

    @abstractmethod
    def select(self, X, n_components: int, kernel_params: dict, *, alpha: float,
               random_state: np.random.RandomState) -> np.ndarray:
        """Sorted indices of ``n_components`` distinct rows of ``X`` (m, p)."""


class UniformCenters(CenterSelector):
    """M distinct points uniformly at random (Falkon's default)."""

    needs_inputs = False

    def select(self, X, n_components, kernel_params, *, alpha, random_state):
        return np.sort(random_state.choice(X.shape[0], int(n_components), replace=False))


class KMeansPlusPlusCenters(CenterSelector):
    """:func:`sklearn.cluster.kmeans_plusplus` seeding on a uniform pool of
    ``min(m, 20 M)`` points (module docstring)."""

    def select(self, X, n_components, kernel_params, *, alpha, random_state):
        # sklearn.cluster loads some 180 modules: only here, not with every model file
        from sklearn.cluster import kmeans_plusplus

        m, M, rng = X.shape[0], int(n_components), random_state
        pool = np.sort(rng.choice(m, min(m, 20 * M), replace=False))
        _, idx = kmeans_plusplus(X[pool], M, random_state=rng)
        chosen = np.unique(pool[idx])
        if len(chosen) < M:  # duplicated points: top up uniformly
            rest = np.setdiff1d(np.arange(m), chosen)
            chosen = np.union1d(chosen, rng.choice(rest, M - len(chosen), replace=False))
        return np.sort(chosen)


class LeverageCenters(CenterSelector):
    """Approximate ridge leverage scores from a uniform pilot (module docstring)."""

    def select(self, X, n_components, kernel_params, *, alpha, random_state):
        m, M, rng = X.shape[0], int(n_components), random_state
        pilot = NystromFeatures(X[np.sort(rng.choice(m, M, replace=False))], kernel_params)
        k = pilot.n_features_out
        S = np.zeros((k, k))
        for b in row_blocks(m, k + M):
            G = pilot.transform(X[b])
            S += G.T @ G
        S[np.diag_indices(k)] += m * alpha
        chol = linalg.cho_factor(S, lower=True)
        scores = np.empty(m)
        for b in row_blocks(m, 2 * k + M):
            G = pilot.transform(X[b])
            scores[b] = np.einsum("ij,ji->i", G, linalg.cho_solve(chol, G.T))
        scores = np.maximum(scores, np.finfo(float).tiny)
        keys = -np.log(rng.uniform(size=m)) / scores  # smallest M keys: weighted sampling
        return np.sort(np.argpartition(keys, M - 1)[:M])


_SHORTHANDS: dict[str, Callable[[], CenterSelector]] = {
    "uniform": UniformCenters, "kmeans++": KMeansPlusPlusCenters, "leverage": LeverageCenters}


def check_center_selection(center_selection) -> CenterSelector:
    """The :class:`CenterSelector` that ``center_selection`` names, or the object itself.

    >>> type(check_center_selection("kmeans++")).__name__
    'KMeansPlusPlusCenters'
    """
    center_selection = check_parameter("center_selection", center_selection)
    return (_SHORTHANDS[center_selection]() if isinstance(center_selection, str)
            else center_selection)


def select_centers(X, n_components: int, kernel_params: dict, method="uniform", *,
                   alpha: float = 1e-3, random_state=None) -> np.ndarray:
    """Indices (sorted) of ``n_components`` distinct training points to use as centres.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (m, p)
    n_components : int in [1, m]
    kernel_params : dict
        The kernel (for ``"leverage"``).
    method : {"uniform", "kmeans++", "leverage"} or CenterSelector
    alpha : float, default=1e-3
        The ridge :math:`\\lambda` of the leverage scores.
    random_state : int, RandomState instance or None

    Returns
    -------
    ndarray of int of shape (n_components,)

    Examples
    --------
    >>> X = np.arange(10.0)[:, None]
    >>> select_centers(X, 10, {"kernel": "linear"}, "kmeans++", random_state=0).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    selector = check_center_selection(method)
    rng = check_random_state(random_state)
    if int(n_components) == X.shape[0]:  # every point: a uniform draw of all of them
        selector = UniformCenters()
    return selector.select(X, n_components, kernel_params, alpha=alpha, random_state=rng)
