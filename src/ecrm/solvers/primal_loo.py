r"""Exact leave-one-out task loss of the primal (linear or Nystrom) ridge fits.

The fit of :mod:`ecrm.solvers.normal_equations` is a penalised least-squares fit on
:math:`[F, \mathbf 1]` with the penalty :math:`m\lambda` on :math:`W` only; its hat matrix is

.. math:: H = \tfrac1m \mathbf 1\mathbf 1^\top + F_c (C + m\lambda I)^{-1} F_c^\top

(without intercept :math:`H = F (F^\top F + m\lambda I)^{-1} F^\top`), and the refit without
point :math:`i` (same features, same ridge term :math:`m\lambda`) predicts at :math:`x_i`
:math:`\hat t_{-i} = ((HT)_i - H_{ii} t_i)/(1 - H_{ii})`. With one eigendecomposition
:math:`C = V\Lambda V^\top` (k x k), :math:`B = V^\top R` and :math:`z_i = V^\top (f_i - \mu)`,

.. math:: (HT)_i = \bar t + z_i^\top (\Lambda + m\lambda)^{-1} B, \qquad
          H_{ii} = \tfrac1m + z_i^\top (\Lambda + m\lambda)^{-1} z_i ,

so every :math:`\lambda` costs :math:`O(k e)` per point. The first pass over row blocks
accumulates the normal equations; the second computes :math:`z_i` block by block and, for
every candidate, the leave-one-out costs, their oracle predictions and the task loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ecrm.losses.base import LinearLoss
from ecrm.ridge import check_ridge
from ecrm.solvers.features import FeatureMap
from ecrm.solvers.normal_equations import NormalEquations, PrimalFit
from ecrm.solvers.rows import training_rows
from ecrm.spaces.base import OutputSpace

if TYPE_CHECKING:
    from ecrm.model_selection import Candidate

__all__ = ["PrimalLeaveOneOut", "primal_leave_one_out_search"]


class PrimalLeaveOneOut:
    """Leave-one-out targets of the primal fits for any ridge, from one eigendecomposition.

    Parameters
    ----------
    equations : NormalEquations
        Over all training points; the first ``n_targets`` columns of its targets are used.
    fit_intercept : bool
    n_targets : int
        How many leading target columns to predict (the others, e.g. marginals, are not).
    """

    def __init__(self, equations: NormalEquations, fit_intercept: bool, n_targets: int):
        C, R, self.mu, tbar = equations.centred(fit_intercept)
        lam, self.V = np.linalg.eigh(C)
        self.lam = np.maximum(lam, 0.0)
        self.B = self.V.T @ R  # all target columns (refits need them all)
        self.tbar, self.e = tbar, n_targets
        self.fit_intercept, self.n = fit_intercept, equations.n

    def project(self, F: np.ndarray) -> np.ndarray:
        """:math:`z_i` for a block of features (b, k) -> (b, k)."""
        return (F - self.mu) @ self.V

    def predictions(self, Z: np.ndarray, T: np.ndarray, ridge: float) -> np.ndarray:
        """Leave-one-out targets (b, e) of a block with projections ``Z`` and targets ``T``."""
        scale = 1.0 / (self.lam + ridge)
        fitted = Z @ (scale[:, None] * self.B[:, :self.e]) + self.tbar[:self.e]
        h = np.einsum("ik,k,ik->i", Z, scale, Z)
        if self.fit_intercept:
            h = h + 1.0 / self.n
        return (fitted - h[:, None] * T[:, :self.e]) / (1.0 - h)[:, None]

    def refit(self, ridge: float) -> PrimalFit:
        """The full fit (every target column) for ``ridge``, with no further solve."""
        coef = self.V @ (self.B / (self.lam + ridge)[:, None])
        return PrimalFit(coef, self.tbar - self.mu @ coef)


@dataclass
class PrimalSearch:
    """Result of :func:`primal_leave_one_out_search` (as :class:`ecrm.model_selection.
    LeaveOneOutSearch`, with the winning feature map and its refit)."""

    candidates: list[Candidate]
    best: Candidate
    features: FeatureMap
    fit: PrimalFit
    predictions: np.ndarray
    rows: np.ndarray

    def table(self) -> dict:
        from ecrm.model_selection import candidates_table

        return candidates_table(self.candidates)


def primal_leave_one_out_search(loss: LinearLoss, output_space: OutputSpace, X, Y,
                                targets: Callable, n_targets: int,
                                feature_maps: Sequence[tuple[dict, FeatureMap]],
                                candidates: Sequence[tuple[float, bool]], *,
                                rows: np.ndarray | None = None) -> PrimalSearch:
    r"""Exact leave-one-out task loss of every (features, alpha, intercept) candidate.

    Parameters
    ----------
    loss, output_space : the task loss and the output space.
    X : ndarray, CSR matrix or Dask array of shape (m, p)
    Y : ndarray or Dask array of shape (m, d)
        Dask arrays run every pass per chunk on the active Dask scheduler
        (:mod:`ecrm.solvers._dask`).
    targets : callable
        ``targets(Y_block)`` -> (b, c): the regression targets, the first ``n_targets`` of
        which are :math:`[\psi(Y), \mathrm{const}(Y)]`.
    n_targets : int
    feature_maps : sequence of (kernel_params, FeatureMap)
    candidates : sequence of (alpha, fit_intercept)
    rows : ndarray of int, optional
        Training points whose leave-one-out loss is averaged (default: all).

    Returns
    -------
    PrimalSearch
    """
    from ecrm.model_selection import Candidate

    data = training_rows(X, Y, output_space)
    m = data.n_rows
    rows = np.arange(m) if rows is None else np.asarray(rows)
    evaluated: list[Candidate] = []
    best = None
    for kidx, (params, features) in enumerate(feature_maps):
        equations = data.equations(features, targets)
        loos = {b: PrimalLeaveOneOut(equations, b, n_targets) for b in {c[1] for c in candidates}}
        ridges = [check_ridge(a, m, equations.diagonal_max) for a, _ in candidates]

        def block_losses(Xb, Yb, features=features, loos=loos, ridges=ridges, params=params):
            F, T = features.transform(Xb), targets(Yb)
            Z = {b: loo.project(F) for b, loo in loos.items()}
            losses = np.zeros(len(candidates))
            for j, ((alpha, b), ridge) in enumerate(zip(candidates, ridges, strict=True)):
                costs = loos[b].predictions(Z[b], T, ridge)[:, :-1]
                if not np.isfinite(costs).all():
                    raise ValueError(f"the leave-one-out costs are not finite for the kernel "
                                     f"{params} with alpha={alpha!r}: increase alpha")
                losses[j] = float(np.sum(loss(loss.argmin(costs, output_space), Yb)))
            return losses

        width = 3 * features.n_features_out + 3 * n_targets
        totals = data.map_sum(block_losses, rows, width)
        for j, (alpha, b) in enumerate(candidates):
            mean_loss = float(totals[j] / len(rows))
            cand = Candidate(params, kidx, alpha, b, -mean_loss, mean_loss)
            evaluated.append(cand)
            if best is None or cand.sort_key < best[0].sort_key:
                best = (cand, features, loos[b].refit(ridges[j]), loos[b], ridges[j])
    if best is None:
        raise ValueError("primal_leave_one_out_search needs at least one feature map and one "
                         "candidate")
    cand, features, fit, loo, ridge = best

    def block_predictions(Xb, Yb):  # third pass: the winner's predictions
        costs = loo.predictions(loo.project(features.transform(Xb)), targets(Yb), ridge)
        return loss.argmin(costs[:, :-1], output_space)

    predictions = data.map_concat(block_predictions, rows,
                                  3 * features.n_features_out + 3 * n_targets)
    return PrimalSearch(evaluated, cand, features, fit, predictions, rows)
