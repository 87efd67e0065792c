"""The label rankers of the benchmark that are not ECRM's: Kendall's tau and the kNN rankers.

:mod:`ecrm.experiments.ranking` runs them on its folds. Rankings are position vectors
(n, k): entry ``j`` is label ``j``'s place, 0 first.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NEIGHBOURS"]

#: The ``k`` of the kNN rankers, chosen by exact leave-one-out tau on the training fold.
NEIGHBOURS = (1, 3, 5, 7, 10, 15, 20, 30, 50)


def _rank_labels(scores_low_first) -> np.ndarray:
    """Positions (n, k) ranking labels by increasing score (ties by label index)."""
    return np.argsort(np.argsort(scores_low_first, axis=1, kind="stable"), axis=1)


def _discordant(R_pred, R_true) -> np.ndarray:
    """Kendall's distance (discordant label pairs) of each row pair of positions (n, k)."""
    a, b = np.triu_indices(R_true.shape[1], 1)
    return ((R_pred[:, a] - R_pred[:, b]) * (R_true[:, a] - R_true[:, b]) < 0).sum(axis=1)


def _tau(R_pred, R_true) -> np.ndarray:
    """Kendall's tau of each row pair of position vectors (n, k)."""
    k = R_true.shape[1]
    return 1.0 - 4.0 * _discordant(R_pred, R_true) / (k * (k - 1))


def _kemeny(neigh_ranks) -> np.ndarray:
    """Exact Kemeny aggregation of the rankings of each row's neighbours: (n, m, k) -> (n, k)."""
    from ecrm.spaces.linear_ordering import linear_ordering

    # B[a, b] = number of neighbours that rank b before a: the cost of putting a first.
    B = (neigh_ranks[:, :, None, :] < neigh_ranks[:, :, :, None]).sum(axis=1).astype(float)
    return np.argsort(linear_ordering(B).solution, axis=1)


def _neighbours(Xtr, Xte, loo_samples=None, seed=None):
    """What the kNN rankers of a fold share: the leave-one-out rows (all training points, or
    ``loo_samples`` random ones drawn from ``seed``), each row's nearest other training
    points and each test point's nearest training points, as many as the largest ``k``."""
    from sklearn.neighbors import NearestNeighbors

    ks = [k for k in NEIGHBOURS if k < len(Xtr)]
    # a subsample marks a large fold: brute force (BLAS) beats the trees there
    nn = NearestNeighbors(n_neighbors=max(ks) + 1,
                          algorithm="auto" if loo_samples is None else "brute").fit(Xtr)
    rows = np.arange(len(Xtr)) if loo_samples is None else np.sort(
        np.random.RandomState(seed).choice(len(Xtr), loo_samples, replace=False))
    loo = nn.kneighbors(Xtr[rows], return_distance=False)
    # Drop each point itself (it need not come first when there are duplicates).
    loo = np.array([row[row != i][: max(ks)] for i, row in zip(rows, loo, strict=True)])
    return ks, rows, loo, nn.kneighbors(Xte, n_neighbors=max(ks), return_distance=False)


def _knn(Xtr, Rtr, Xte, aggregate, neighbours):
    """kNN with ``k`` chosen by exact leave-one-out tau on the training fold (on the rows of
    ``neighbours()``, :func:`_neighbours` of the fold)."""
    ks, rows, loo, test = neighbours()
    scores = [_tau(aggregate(Rtr[loo[:, :k]]), Rtr[rows]).mean() for k in ks]
    k = ks[int(np.argmax(scores))]
    return aggregate(Rtr[test[:, :k]]), {"k": k}


def _borda(neigh_ranks) -> np.ndarray:
    return _rank_labels(neigh_ranks.mean(axis=1))
