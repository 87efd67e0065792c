r"""The honest judgement of nearest-neighbour weights and :class:`ecrm.NeighboursECRMCV`'s
search over :math:`k`.

Every :math:`k` of the grid is judged on the exact leave-one-out weights of the training points
(:func:`ecrm.weights.neighbours._fit.others`: one neighbour query of the largest :math:`k`
serves them all, per row chunk on the workers within a Dask fit) by the criteria every search
of the package uses (:mod:`ecrm.selection._criteria`): minus the mean task loss of the exact
oracle on the leave-one-out costs, or a ranking metric of the leave-one-out label scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ecrm.losses.base import LinearLoss
from ecrm.selection._criteria import ScoreMetric, TaskLoss
from ecrm.selection._search import RESULTS_COLUMNS, ranks, search_results
from ecrm.weights.kernel._solvers.budget import row_blocks
from ecrm.weights.neighbours._fit import leave_one_out, neighbour_mean, uniform_weights

__all__ = ["check_grid", "check_results", "honest_values", "results", "search_neighbours"]


def check_grid(values) -> tuple[int, ...]:
    """The grid of ``n_neighbors`` values: a non-empty sequence (or 1-D array) of integers
    >= 1, sorted and without repeats."""
    from ecrm.estimators._validation import check_int

    if isinstance(values, (str, bytes)) or not (
            isinstance(values, Sequence) or isinstance(values, np.ndarray) and values.ndim == 1) \
            or not len(values):
        raise ValueError(f"n_neighbors must be a non-empty sequence of integers >= 1 (the "
                         f"grid of k); got {values!r}")
    return tuple(sorted({check_int(v, f"n_neighbors[{i}]") for i, v in enumerate(values)}))


def honest_values(neighbours: np.ndarray, targets: np.ndarray, n_risk: int, space,
                  scores: bool) -> np.ndarray:
    """The costs (the risk targets but the constant) or the label scores (clipped and made
    consistent as :meth:`ecrm.weights.RiskEstimator.predict_scores` makes them) of the rows
    whose neighbours are ``neighbours`` (n, k)."""
    if scores:
        return space.consistent_scores(np.clip(neighbour_mean(neighbours, targets[:, n_risk:]),
                                               0.0, 1.0))
    return neighbour_mean(neighbours, targets[:, :n_risk - 1])


def judge(neighbours: np.ndarray, targets: np.ndarray, n_risk: int, loss, space, Y: np.ndarray,
          metric: Callable | None, where: str) -> tuple[float, float]:
    """``(score, mean task loss)`` of the training points' leave-one-out ``neighbours``
    (m, k): the score is minus the loss (``metric`` ``None``) or ``metric`` of the label
    scores."""
    if isinstance(loss, LinearLoss):
        mean_loss = TaskLoss(loss, space).evaluate(
            neighbour_mean(neighbours, targets[:, :n_risk]), Y, where).mean_loss
    else:  # the weights' risk minimiser, in row blocks of dense weights
        m = len(Y)
        total = sum(float(np.sum(loss(loss.minimize_risk(
            uniform_weights(neighbours[blk], m).toarray(), Y, space), Y[blk])))
            for blk in row_blocks(m, m))
        mean_loss = total / m
    if metric is None:
        return -mean_loss, mean_loss
    S = neighbour_mean(neighbours, targets[:, n_risk:])
    return ScoreMetric(metric, space).evaluate(S, np.asarray(Y, dtype=float), where).score, \
        mean_loss


def search_neighbours(index, X, targets: np.ndarray, n_risk: int, loss, space, Y,
                      grid: Sequence[int], metric: Callable | None) -> list[tuple[float, float]]:
    """``(score, leave-one-out loss)`` of every ``k`` of ``grid`` (each < m), from one query
    of the largest."""
    nearest = leave_one_out(index, X, max(grid))
    return [judge(nearest[:, :k], targets, n_risk, loss, space, Y, metric,
                  f"n_neighbors={k}") for k in grid]


def results(grid: Sequence[int], judged: list[tuple[float, float]]) -> dict:
    """The search's ``cv_results_`` (:func:`ecrm.selection.search_results`): per ``k`` its
    criterion and leave-one-out loss, ranked by the criterion (the smaller ``k`` on ties)."""
    scores = [float(s) for s, _ in judged]
    return search_results([{"n_neighbors": int(k)} for k in grid], scores,
                          ranks([(-s if s == s else np.inf, i) for i, s in enumerate(scores)]),
                          loo_loss=[float(v) for _, v in judged])


def check_results(est, grid: Sequence[int]) -> None:
    """Check a loaded search's ``cv_results_`` (the layout :func:`results` writes for the
    ``grid``) and that ``n_neighbors_``, ``best_params_``, ``best_score_`` and ``loo_loss_``
    are its choice's."""
    table = est.cv_results_
    params = [{"n_neighbors": int(k)} for k in grid]
    if not (isinstance(table, dict) and set(table) == {*RESULTS_COLUMNS, "loo_loss"}
            and table["params"] == params
            and all(isinstance(table[k], list) and len(table[k]) == len(grid)
                    and all(isinstance(v, float) for v in table[k])
                    for k in ("loo_loss", "mean_score"))):
        raise ValueError(f"cv_results_ must hold params (the grid {list(grid)} of "
                         f"n_neighbors below m), mean_score and loo_loss, one float per k, "
                         f"and rank")
    judged = list(zip(table["mean_score"], table["loo_loss"], strict=True))
    if table["rank"] != results(grid, judged)["rank"]:
        raise ValueError("cv_results_['rank'] must rank the settings by their criterion")
    best = table["rank"].index(1)
    if not (type(est.n_neighbors_) is int and est.n_neighbors_ == grid[best]
            and est.best_params_ == params[best]
            and est.best_score_ == table["mean_score"][best]
            and est.loo_loss_ == table["loo_loss"][best]):
        raise ValueError("n_neighbors_, best_params_, best_score_ and loo_loss_ must be the "
                         "best k's of cv_results_")
