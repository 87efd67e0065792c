"""The out-of-bag judgement of a grown forest: its risk fit, and the task loss, predictions,
label scores and ranking metric of every training point predicted by the trees that never
drew it (rows of points that every tree drew are NaN)."""

from __future__ import annotations

import numpy as np

from ecrm.losses.base import LinearLoss
from ecrm.weights.forest._fit import BagPattern, ForestFit, Grown

__all__ = ["forest_fit", "judge", "oob_metric", "oob_scores"]


def forest_fit(grown: Grown, X, targets: np.ndarray, n_risk: int,
               pattern: BagPattern | None = None) -> ForestFit:
    """The risk fit of the ``grown`` trees on the training points ``X`` and their risk
    ``targets`` (the first ``n_risk`` columns: the risk's)."""
    return ForestFit(grown.trees, grown.bag, n_risk, X_train=X, coef=targets,
                     train_leaves=grown.leaves, pattern=pattern)


def judge(fit: ForestFit, loss, space, Y) -> tuple[float, np.ndarray]:
    """The mean task loss of the out-of-bag predictions (over the points some tree left
    out; NaN if none) and the predictions."""
    predictions = _oob_predictions(fit, loss, space, Y)
    seen = ~np.isnan(predictions).any(axis=1)
    return float(np.mean(loss(predictions[seen], Y[seen]))) if seen.any() else np.nan, \
        predictions


def oob_scores(fit: ForestFit, space) -> np.ndarray:
    """Out-of-bag label scores (NaN rows where every tree drew the point)."""
    def scores(S, seen):
        S[seen] = space.consistent_scores(np.clip(S[seen], 0.0, 1.0))
        return S

    return fit.oob_mean(fit.marginal_coef, scores)


def oob_metric(fit: ForestFit, space, Y, metric) -> float:
    """``metric`` of the out-of-bag label scores of the points some tree left out."""
    S = oob_scores(fit, space)
    seen = ~np.isnan(S).any(axis=1)
    return float(metric(np.asarray(Y[seen], dtype=float), S[seen]))


def _oob_predictions(fit: ForestFit, loss, space, Y) -> np.ndarray:
    """The exact risk minimisers of the training points' out-of-bag risks (NaN rows where
    every tree drew the point), in row blocks."""
    d, linear = Y.shape[1], isinstance(loss, LinearLoss)

    def solve(B, seen):  # B: the costs (a linear loss) or the weights of a block of points
        P = np.full((B.shape[0], d), np.nan)
        if seen.any():
            P[seen] = (space.minimize(B[seen], loss.cost_form) if linear else
                       loss.minimize_risk((B if seen.all() else B[seen]).toarray(), Y, space))
        return P

    if linear:
        return fit.oob_mean(fit.risk_coef[:, :-1], solve, d)
    return fit.oob_map(solve, fit.coef.shape[1])
