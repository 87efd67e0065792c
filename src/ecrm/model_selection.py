r"""The exact leave-one-out search behind :class:`ecrm.ECRMCV`.

For every kernel setting one eigendecomposition :math:`K = Q\Lambda Q^\top` gives, for every
ridge value, the exact leave-one-out costs of the risk regressions
(:class:`ecrm.ridge.LeaveOneOut`); the output space's oracle turns them into leave-one-out
predictions and the loss into the criterion, the mean leave-one-out *task loss*. Or the
criterion is a ranking metric of the exact leave-one-out *label scores*: the scores
:math:`\hat p_j(x) = \sum_i w_i(x) y_{ij}` are ridge regressions of the label columns, so the
same decomposition gives their leave-one-out values too, and no oracle runs at all. The
estimator facade (:class:`ecrm.ECRMCV`) builds the candidate grid, caches the
decompositions and refits; :func:`leave_one_out_search` evaluates and ranks the candidates,
as scikit-learn's ``_RidgeGCV`` does for ``RidgeCV``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import label_ranking_average_precision_score

from ecrm.kernels import kernel_matrix
from ecrm.losses.base import LinearLoss
from ecrm.metrics import macro_auprc, micro_auprc
from ecrm.ridge import EigenFactor, LeaveOneOut, check_ridge
from ecrm.spaces.base import OutputSpace

__all__ = ["SCORERS", "Candidate", "LeaveOneOutSearch", "candidates_table", "check_scoring",
           "gram_eigendecomposition", "leave_one_out_scores", "leave_one_out_search"]


#: Ranking metrics of label scores, by name: ``f(Y_true, scores) -> float``, greater is better.
SCORERS: dict[str, Callable] = {
    "micro_auprc": micro_auprc,
    "macro_auprc": macro_auprc,
    "lrap": label_ranking_average_precision_score,
}


def check_scoring(scoring) -> Callable | None:
    """The metric of label scores that ``scoring`` names, or ``None`` for the task loss.

    Parameters
    ----------
    scoring : None, "loss", a key of :data:`SCORERS` or callable
        A callable is ``f(Y_true, scores) -> float``, greater is better.

    Returns
    -------
    metric : callable or None

    Examples
    --------
    >>> check_scoring("loss") is None, check_scoring("micro_auprc").__name__
    (True, 'micro_auprc')
    """
    if scoring is None or (isinstance(scoring, str) and scoring == "loss"):
        return None
    if callable(scoring):
        return scoring
    if isinstance(scoring, str) and scoring in SCORERS:
        return SCORERS[scoring]
    raise ValueError(f"scoring must be 'loss', one of {sorted(SCORERS)} or a callable "
                     f"f(Y_true, scores); got {scoring!r}")


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
    """One (kernel, alpha, intercept) candidate and its leave-one-out score.

    ``score`` is minus the mean leave-one-out task loss (``mean_loss``), or the metric of the
    leave-one-out label scores (``mean_loss`` is then NaN: no oracle ran). Candidates are
    ranked by :attr:`sort_key`: higher score, then the earlier kernel setting, then stronger
    regularisation, then the intercept.
    """

    kernel_params: dict
    kernel_index: int
    alpha: float
    fit_intercept: bool
    score: float
    mean_loss: float = float("nan")

    @property
    def sort_key(self) -> tuple:
        return (-self.score, self.kernel_index, -self.alpha, not self.fit_intercept)


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
    scores : ndarray of shape (len(rows), d) or None
        The best candidate's leave-one-out label scores, when they were the criterion.
    rows : ndarray of int
        The training points the loss is averaged over.
    """

    candidates: list[Candidate]
    best: Candidate
    eig: EigenFactor = field(repr=False)
    predictions: np.ndarray = field(repr=False)
    rows: np.ndarray = field(repr=False)
    scores: np.ndarray | None = field(default=None, repr=False)

    def table(self) -> dict:
        """The candidates as a ``cv_results_`` dict: ``params``, ``alpha``,
        ``fit_intercept``, ``mean_loo_score``, ``mean_loo_loss`` (NaN when the criterion is
        a metric of the scores) and ``rank`` (1 = best)."""
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
        "mean_loo_score": np.array([c.score for c in candidates]),
        "mean_loo_loss": np.array([c.mean_loss for c in candidates]),
        "rank": rank,
    }


def leave_one_out_search(loss: LinearLoss, output_space: OutputSpace, X, Y: np.ndarray,
                         targets: np.ndarray, kernel_settings: Sequence[dict],
                         candidates: Sequence[tuple[float, bool]], *,
                         decompose: Callable = gram_eigendecomposition,
                         rows: np.ndarray | None = None,
                         metric: Callable | None = None,
                         refine: bool = False) -> LeaveOneOutSearch:
    r"""Exact leave-one-out criterion of every (kernel, alpha, intercept) candidate.

    The criterion is the mean leave-one-out task loss or, with ``metric``, the metric of the
    leave-one-out label scores (:func:`leave_one_out_scores`); then only the best candidate's
    leave-one-out costs go through the oracle, for ``predictions``.

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
    metric : callable, optional
        ``metric(Y_true, scores) -> float``, greater is better (:func:`check_scoring`).
    refine : bool, default=False
        Coarse to fine over alpha, per kernel: first every other alpha of the sorted grid
        (both ends included), then the grid neighbours of the best of those, every intercept
        setting each time; the candidates not evaluated are left out of the table. The
        choice equals the full grid's whenever the criterion, along the grid, has no maximum
        that falls between two coarse points away from the best coarse point (e.g. it is
        unimodal in alpha); it evaluates about half of the alphas.

    Returns
    -------
    LeaveOneOutSearch
    """
    m = X.shape[0]
    rows = np.arange(m) if rows is None else rows
    Y_rows = Y[rows]
    evaluated: list[Candidate] = []
    found: tuple | None = None  # (candidate, eig, loo, ridge, S, Y_loo) of the best so far
    grid = sorted({alpha for alpha, _ in candidates})
    passes = [grid]
    if refine and len(grid) > 2:
        passes = [grid[::2] + ([grid[-1]] if len(grid) % 2 == 0 else [])]
    for k, params in enumerate(kernel_settings):
        eig = decompose(X, params)
        diagonal_max = float(np.einsum("ik,k,ik->i", eig.Q, eig.lam, eig.Q).max())
        loo = LeaveOneOut(eig, targets, rows)
        loo_labels = None if metric is None else LeaveOneOut(eig, Y.astype(float), rows)
        of_kernel: dict[int, Candidate] = {}
        pending, refined = passes[0], not (refine and len(grid) > 2)
        while pending:
            # one alpha's intercept settings one after the other: they share the product
            for c in sorted((c for c, (a, _) in enumerate(candidates) if a in pending),
                            key=lambda c: candidates[c][0]):
                alpha, intercept = candidates[c]
                ridge = check_ridge(alpha, m, diagonal_max)
                S = Y_loo = None
                if metric is None or loo_labels is None:
                    Y_loo = loss.argmin(_loo_costs(loo, ridge, intercept, params, alpha),
                                        output_space)
                    mean_loss = float(np.mean(loss(Y_loo, Y_rows)))
                    candidate = Candidate(params, k, alpha, intercept, -mean_loss, mean_loss)
                else:
                    S = _scores(loo_labels.predictions(ridge, intercept), output_space)
                    candidate = Candidate(params, k, alpha, intercept,
                                          float(metric(Y_rows, S)))
                of_kernel[c] = candidate
                if found is None or candidate.sort_key < found[0].sort_key:
                    found = (candidate, eig, loo, ridge, S, Y_loo)
            pending = []
            if not refined:  # the grid neighbours of the best coarse alpha
                refined = True
                top = grid.index(min(of_kernel.values(), key=lambda c: c.sort_key).alpha)
                pending = [grid[i] for i in (top - 1, top + 1)
                           if 0 <= i < len(grid) and grid[i] not in passes[0]]
        evaluated.extend(of_kernel[c] for c in range(len(candidates)) if c in of_kernel)
    if found is None:
        raise ValueError("leave_one_out_search needs at least one kernel setting and one "
                         "candidate")
    best, eig, loo, ridge, S, Y_loo = found
    if Y_loo is None:  # chosen by the scores: the oracle runs once, on the best candidate
        Y_loo = loss.argmin(_loo_costs(loo, ridge, best.fit_intercept, best.kernel_params,
                                       best.alpha), output_space)
    return LeaveOneOutSearch(evaluated, best, eig, Y_loo, rows, S)


def _loo_costs(loo: LeaveOneOut, ridge: float, intercept: bool, params: dict,
               alpha: float) -> np.ndarray:
    costs = loo.predictions(ridge, intercept)[:, :-1]
    if not np.isfinite(costs).all():
        raise ValueError(f"the leave-one-out costs are not finite for the kernel {params} "
                         f"with alpha={alpha!r}: the kernel values are too large or alpha too "
                         f"small for this data")
    return costs


def _scores(raw: np.ndarray, output_space: OutputSpace) -> np.ndarray:
    """Label scores as :meth:`ecrm.ECRM.predict_scores` makes them: clipped, consistent.
    ``raw`` (a fresh array) is clipped in place."""
    return output_space.consistent_scores(np.clip(raw, 0.0, 1.0, out=raw))


def leave_one_out_scores(eig: EigenFactor, Y: np.ndarray, output_space: OutputSpace,
                         ridge: float, fit_intercept: bool, rows=None) -> np.ndarray:
    r"""Exact leave-one-out label scores :math:`\hat p_{-i}(x_i)` of the training points.

    The scores are the ridge regressions of the label columns of ``Y``; their leave-one-out
    values come from the same eigendecomposition as the costs' (:class:`ecrm.ridge.LeaveOneOut`,
    same ridge term on the diagonal), then are clipped to [0, 1] and made consistent by
    ``output_space`` exactly as at prediction.

    Parameters
    ----------
    eig : EigenFactor
        Eigendecomposition of the training Gram matrix.
    Y : ndarray of shape (m, d)
        Training outputs.
    output_space : OutputSpace
    ridge : float
        The ridge term on the diagonal, ``m * alpha``.
    fit_intercept : bool
    rows : ndarray of int, optional
        The points wanted (default: all).

    Returns
    -------
    S : ndarray of shape (len(rows), d)
    """
    loo = LeaveOneOut(eig, np.asarray(Y, dtype=float), rows)
    return _scores(loo.predictions(ridge, fit_intercept), output_space)
