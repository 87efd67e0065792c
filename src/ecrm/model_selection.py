r"""The exact leave-one-out search behind :class:`ecrm.ECRMCV`.

For every kernel setting one eigendecomposition :math:`K = Q\Lambda Q^\top` gives, for every
ridge value, the exact leave-one-out costs of the risk regressions
(:class:`ecrm.ridge.LeaveOneOut`); the output space's oracle turns them into leave-one-out
predictions and the loss into the criterion, the mean leave-one-out *task loss*. The
estimator facade (:class:`ecrm.ECRMCV`) builds the candidate grid, caches the
decompositions and refits; :func:`leave_one_out_search` evaluates and ranks the candidates,
as scikit-learn's ``_RidgeGCV`` does for ``RidgeCV``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ecrm.kernels import kernel_matrix
from ecrm.losses.base import LinearLoss
from ecrm.ridge import EigenFactor, LeaveOneOut, check_ridge
from ecrm.spaces.base import OutputSpace

__all__ = ["Candidate", "LeaveOneOutSearch", "candidates_table", "gram_eigendecomposition",
           "leave_one_out_search"]


def gram_eigendecomposition(X, kernel_params: dict) -> EigenFactor:
    """Eigendecomposition of the Gram matrix of ``X`` (thin for a linear kernel, p < m).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p)
        Training inputs (the training Gram matrix for ``kernel="precomputed"``).
    kernel_params : dict
        ``kernel``, ``gamma``, ``degree`` and ``coef0`` (:func:`ecrm.kernels.kernel_matrix`).

    Returns
    -------
    EigenFactor
    """
    if kernel_params["kernel"] == "linear" and X.shape[1] < X.shape[0]:
        with np.errstate(over="ignore"):
            eig = EigenFactor.from_features(X)
        if not np.isfinite(eig.lam).all():
            raise ValueError(f"the kernel 'linear' gave infinite values on these inputs (largest "
                             f"|x| = {float(abs(X).max()):.3g}): rescale the inputs")
        return eig
    return EigenFactor.from_kernel(kernel_matrix(X, X, **kernel_params))


@dataclass(frozen=True)
class Candidate:
    """One (kernel, alpha, intercept) candidate and its mean leave-one-out task loss.

    Candidates are ranked by :attr:`sort_key`: lower loss, then the earlier kernel setting,
    then stronger regularisation, then the intercept.
    """

    kernel_params: dict
    kernel_index: int
    alpha: float
    fit_intercept: bool
    mean_loss: float

    @property
    def sort_key(self) -> tuple:
        return (self.mean_loss, self.kernel_index, -self.alpha, not self.fit_intercept)


@dataclass(frozen=True)
class LeaveOneOutSearch:
    """The result of :func:`leave_one_out_search`.

    Attributes
    ----------
    candidates : list of Candidate
        In evaluation order (kernel settings, then intercepts, then alphas).
    best : Candidate
        The first candidate with the smallest :attr:`Candidate.sort_key`.
    eig : EigenFactor
        The eigendecomposition of the best candidate's Gram matrix (refit from it).
    predictions : ndarray of shape (len(rows), d)
        The best candidate's leave-one-out predictions.
    rows : ndarray of int
        The training points the loss is averaged over.
    """

    candidates: list[Candidate]
    best: Candidate
    eig: EigenFactor = field(repr=False)
    predictions: np.ndarray = field(repr=False)
    rows: np.ndarray = field(repr=False)

    def table(self) -> dict:
        """The candidates as a ``cv_results_`` dict: ``params``, ``alpha``,
        ``fit_intercept``, ``mean_loo_loss`` and ``rank`` (1 = best)."""
        return candidates_table(self.candidates)


def candidates_table(candidates: Sequence[Candidate]) -> dict:
    """Evaluated candidates as a ``cv_results_`` dict (see :meth:`LeaveOneOutSearch.table`)."""
    keys = [c.sort_key for c in candidates]
    rank = np.empty(len(keys), dtype=int)
    rank[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(1, len(keys) + 1)
    return {
        "params": [{**c.kernel_params, "alpha": c.alpha, "fit_intercept": c.fit_intercept}
                   for c in candidates],
        "alpha": np.array([c.alpha for c in candidates]),
        "fit_intercept": np.array([c.fit_intercept for c in candidates]),
        "mean_loo_loss": np.array([c.mean_loss for c in candidates]),
        "rank": rank,
    }


def leave_one_out_search(loss: LinearLoss, output_space: OutputSpace, X, Y: np.ndarray,
                         targets: np.ndarray, kernel_settings: Sequence[dict],
                         candidates: Sequence[tuple[float, bool]], *,
                         decompose: Callable = gram_eigendecomposition,
                         rows: np.ndarray | None = None) -> LeaveOneOutSearch:
    r"""Exact leave-one-out task loss of every (kernel, alpha, intercept) candidate.

    Parameters
    ----------
    loss : ecrm.losses.LinearLoss
    output_space : ecrm.spaces.base.OutputSpace
    X : ndarray or sparse matrix of shape (m, p)
        Training inputs, checked.
    Y : ndarray of shape (m, d)
        Training outputs, checked.
    targets : ndarray of shape (m, e + 1)
        The regression targets :math:`[\psi(Y), \mathrm{const}(Y)]`.
    kernel_settings : sequence of dict
        Checked kernel settings (``kernel``, ``gamma``, ``degree``, ``coef0``).
    candidates : sequence of (float, bool)
        ``(alpha, fit_intercept)`` pairs, evaluated in this order for every kernel.
    decompose : callable, default=gram_eigendecomposition
        ``decompose(X, kernel_params) -> EigenFactor`` (e.g. cached).
    rows : ndarray of int, optional
        The points whose leave-one-out loss is averaged (default: all).

    Returns
    -------
    LeaveOneOutSearch
    """
    m = X.shape[0]
    rows = np.arange(m) if rows is None else rows
    evaluated: list[Candidate] = []
    found: tuple[Candidate, EigenFactor, np.ndarray] | None = None
    for k, params in enumerate(kernel_settings):
        eig = decompose(X, params)
        diagonal_max = float(np.einsum("ik,k,ik->i", eig.Q, eig.lam, eig.Q).max())
        loo = LeaveOneOut(eig, targets, rows)
        for alpha, intercept in candidates:
            costs = loo.predictions(check_ridge(alpha, m, diagonal_max), intercept)[:, :-1]
            if not np.isfinite(costs).all():
                raise ValueError(f"the leave-one-out costs are not finite for the kernel "
                                 f"{params} with alpha={alpha!r}: the kernel values are too "
                                 f"large or alpha too small for this data")
            Y_loo = loss.argmin(costs, output_space)
            candidate = Candidate(params, k, alpha, intercept,
                                  float(np.mean(loss(Y_loo, Y[rows]))))
            evaluated.append(candidate)
            if found is None or candidate.sort_key < found[0].sort_key:
                found = (candidate, eig, Y_loo)
    if found is None:
        raise ValueError("leave_one_out_search needs at least one kernel setting and one "
                         "candidate")
    return LeaveOneOutSearch(evaluated, *found, rows)
