r"""The one exact leave-one-out search: :class:`ecrm.ECRMCV` and the ranking baseline use it.

Every solver's leave-one-out basis (:class:`ecrm._solvers.base.LooBasis`) factorises its
training problem once and evaluates a criterion on the exact leave-one-out predictions for
every ridge and intercept: the dual from one eigendecomposition :math:`K = Q\Lambda Q^\top`
(:class:`ecrm._ridge.LeaveOneOut`), the primal and Nystrom solvers from one of
:math:`F^\top F`, block by block. The criterion is pluggable (:class:`ecrm._solvers.base.
Criterion`): :class:`TaskLoss`, the mean leave-one-out task loss through the output space's
oracle; :class:`ScoreMetric`, a ranking metric of the leave-one-out *label scores* (the
scores :math:`\hat p_j(x) = \sum_i w_i(x) y_{ij}` are ridge regressions of the label
columns, so no oracle runs); or :class:`CallableCriterion`, any ``score(Y, P)``.
:func:`leave_one_out_search` runs the kernel-subsample stage, then evaluates and ranks the
candidates, as scikit-learn's ``_RidgeGCV`` does for ``RidgeCV``; the estimator refits the
best from its basis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import label_ranking_average_precision_score

from ecrm._ridge import check_ridge
from ecrm._solvers.base import Criterion, LooBasis, Outcome, Trial
from ecrm._solvers.dual import gram_eigendecomposition
from ecrm.losses.base import LinearLoss
from ecrm.metrics import macro_auprc, micro_auprc
from ecrm.spaces.base import OutputSpace

__all__ = ["SCORERS", "CallableCriterion", "Candidate", "GridEdgeWarning", "LeaveOneOutSearch",
           "ScoreMetric", "TaskLoss", "candidates_table", "check_scoring", "grid_edges",
           "gram_eigendecomposition", "leave_one_out_search"]


class GridEdgeWarning(UserWarning):
    """The selected value of a searched parameter lies at an end of its grid: the best value
    may lie beyond it, so widen the grid on that side."""


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


# -- criteria --------------------------------------------------------------------------------
class TaskLoss(Criterion):
    """Minus the mean leave-one-out task loss: the leave-one-out costs (all target columns
    but the constant) through the output space's exact oracle, compared with the outputs."""

    decomposable = True

    def __init__(self, loss: LinearLoss, output_space: OutputSpace):
        self.loss, self.output_space = loss, output_space

    def predict(self, P: np.ndarray, where: str) -> np.ndarray:
        costs = P[:, :-1]
        if not np.isfinite(costs).all():
            raise ValueError(f"the leave-one-out costs are not finite for {where}: the kernel "
                             f"values are too large or alpha too small for this data")
        return self.loss.argmin(costs, self.output_space)

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        Y_loo = self.predict(P, where)
        mean_loss = float(np.mean(self.loss(Y_loo, Y)))
        return Outcome(-mean_loss, mean_loss, predictions=Y_loo)

    def block_total(self, P: np.ndarray, Y: np.ndarray, where: str) -> float:
        return float(np.sum(self.loss(self.predict(P, where), Y)))

    def from_total(self, total: float, n: int) -> Outcome:
        mean_loss = float(total / n)
        return Outcome(-mean_loss, mean_loss)


class ScoreMetric(Criterion):
    """A ranking metric of the exact leave-one-out label scores (the label columns'
    regressions, clipped to [0, 1] and made consistent as at prediction); no oracle runs."""

    on_labels = True

    def __init__(self, metric: Callable, output_space: OutputSpace):
        self.metric, self.output_space = metric, output_space

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        S = _scores(P, self.output_space)
        return Outcome(float(self.metric(Y, S)), scores=S)


class CallableCriterion(Criterion):
    """``score(Y, P) -> float`` (greater is better) of the leave-one-out predictions ``P`` of
    the regression targets, e.g. minus the discordant pairs of the rankings they give."""

    def __init__(self, score: Callable):
        self.score = score

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        return Outcome(float(self.score(Y, P)))


def _scores(raw: np.ndarray, output_space: OutputSpace) -> np.ndarray:
    """Label scores as :meth:`ecrm.ECRM.predict_scores` makes them: clipped, consistent.
    ``raw`` (a fresh array) is clipped in place."""
    return output_space.consistent_scores(np.clip(raw, 0.0, 1.0, out=raw))


# -- the search ------------------------------------------------------------------------------
@dataclass(frozen=True)
class LeaveOneOutSearch:
    """The result of one stage of :func:`leave_one_out_search`.

    Attributes
    ----------
    candidates : list of Candidate
        In evaluation order (kernel settings, then intercepts, then alphas).
    best : Candidate
        The first candidate with the smallest :attr:`Candidate.sort_key`.
    basis : LooBasis
        The best candidate's basis (refit from it: ``basis.refit(trial)``).
    trial : Trial
        The best candidate's ridge and intercept.
    predictions : ndarray of shape (len(rows), d)
        The best candidate's leave-one-out predictions (``None`` without an oracle).
    rows : ndarray of int
        The training points the criterion is averaged over.
    scores : ndarray of shape (len(rows), d) or None
        The best candidate's leave-one-out label scores, when they were the criterion.
    """

    candidates: list[Candidate]
    best: Candidate
    basis: LooBasis = field(repr=False)
    trial: Trial = field(repr=False)
    predictions: np.ndarray | None = field(repr=False)
    rows: np.ndarray = field(repr=False)
    scores: np.ndarray | None = field(default=None, repr=False)

    def table(self) -> dict:
        """The candidates as a ``cv_results_`` dict: ``params``, ``alpha``,
        ``fit_intercept``, ``mean_loo_score``, ``mean_loo_loss`` (NaN when the criterion is
        a metric of the scores) and ``rank`` (1 = best)."""
        return candidates_table(self.candidates)


def _loo_rows(m: int, loo_samples: int | None, rng) -> np.ndarray:
    if loo_samples is not None and loo_samples < m:
        return np.sort(rng.choice(m, loo_samples, replace=False))
    return np.arange(m)


def leave_one_out_search(source, settings: Sequence[dict],
                         candidates: Sequence[tuple[float, bool]], criterion: Criterion, *,
                         random_state=None, loo_samples: int | None = None,
                         kernel_subsample: int | None = None, refine: bool = False,
                         oracle: Criterion | None = None, progress=None
                         ) -> tuple[LeaveOneOutSearch, LeaveOneOutSearch | None]:
    r"""Exact leave-one-out criterion of every (kernel, alpha, intercept) candidate.

    With ``kernel_subsample`` (and several kernel settings) the kernel is chosen first on
    that many random points (stage 1, each basis restricted to them), then alpha and the
    intercept with that kernel on every point (stage 2).

    Parameters
    ----------
    source : DualSource, FeatureSource or any object with ``n_rows`` and ``basis(k, subset)``
        The solver's leave-one-out bases (:func:`ecrm._solvers.prepare.prepare_search`).
    settings : sequence of dict
        The kernel settings ``source`` was made for.
    candidates : sequence of (float, bool)
        ``(alpha, fit_intercept)`` pairs, evaluated for every kernel.
    criterion : Criterion
        :class:`TaskLoss`, :class:`ScoreMetric`, :class:`CallableCriterion` or another.
    random_state : RandomState, optional
        Draws the stage-1 subset, then each stage's ``loo_samples`` rows.
    loo_samples : int, optional
        Average the criterion over this many random points (default: all).
    kernel_subsample : int, optional
    refine : bool, default=False
        Coarse to fine over alpha, per kernel: first every other alpha of the sorted grid
        (both ends included), then the grid neighbours of the best of those, every intercept
        setting each time; the candidates not evaluated are left out of the table. The
        choice equals the full grid's whenever the criterion, along the grid, has no maximum
        that falls between two coarse points away from the best coarse point (e.g. it is
        unimodal in alpha); it evaluates about half of the alphas.
    oracle : Criterion, optional
        Gives the best candidate's leave-one-out ``predictions`` when ``criterion`` did not
        (e.g. :class:`TaskLoss` after a :class:`ScoreMetric` search).
    progress : tqdm-like, optional
        Told what is being done before each kernel's factorisation (``set_postfix_str``) and
        advanced by one per evaluated candidate (``update``).

    Returns
    -------
    search, stage1 : LeaveOneOutSearch and LeaveOneOutSearch or None
    """
    m = source.n_rows
    indices = list(range(len(settings)))
    stage1 = None
    if kernel_subsample is not None and len(settings) > 1 and kernel_subsample < m:
        sub = np.sort(random_state.choice(m, kernel_subsample, replace=False))
        stage1 = _stage(lambda k: source.basis(k, sub), settings, indices, candidates,
                        criterion, _loo_rows(len(sub), loo_samples, random_state), refine,
                        oracle, progress, f"kernel on {len(sub)} points")
        indices = [stage1.best.kernel_index]
    search = _stage(source.basis, settings, indices, candidates, criterion,
                    _loo_rows(m, loo_samples, random_state), refine, oracle, progress,
                    "alpha")
    return search, stage1


def grid_edges(best: Candidate, alphas: Sequence[float], settings: Sequence[dict]) -> list[str]:
    """What of ``best`` lies at an end of its grid: alpha, and gamma among the settings of
    its kernel; one sentence each (empty when nothing does, or a grid has one value)."""
    notes = []
    more = {"smallest": "smaller", "largest": "larger"}
    grid = sorted(set(alphas))
    if len(grid) > 1 and best.alpha in (grid[0], grid[-1]):
        end = "smallest" if best.alpha == grid[0] else "largest"
        notes.append(f"the chosen alpha={best.alpha:g} is the {end} of the grid of alphas "
                     f"[{grid[0]:g} .. {grid[-1]:g}]; add {more[end]} values")
    kernel, gamma = best.kernel_params["kernel"], best.kernel_params.get("gamma")
    gammas = sorted({s["gamma"] for s in settings
                     if s["kernel"] == kernel and s.get("gamma") is not None})
    if gamma is not None and len(gammas) > 1 and gamma in (gammas[0], gammas[-1]):
        end = "smallest" if gamma == gammas[0] else "largest"
        notes.append(f"the chosen gamma={gamma:g} ({kernel} kernel) is the {end} of the "
                     f"gammas {[float(f'{g:.4g}') for g in gammas]}; add {more[end]} values")
    return notes


def _stage(basis_of: Callable, settings, indices, candidates, criterion, rows, refine,
           oracle, progress, what: str) -> LeaveOneOutSearch:
    evaluated: list[Candidate] = []
    found: tuple | None = None  # (candidate, basis, trial, outcome) of the best so far
    grid = sorted({alpha for alpha, _ in candidates})
    first = grid
    if refine and len(grid) > 2:
        first = grid[::2] + ([grid[-1]] if len(grid) % 2 == 0 else [])
    for position, k in enumerate(indices):
        if progress is not None:  # shown at once: a factorisation can take a while
            progress.set_postfix_str(f"{what}: kernel {position + 1}/{len(indices)}, "
                                     f"factorising", refresh=True)
        params, basis = settings[k], basis_of(k)
        if progress is not None:
            progress.set_postfix_str(f"{what}: kernel {position + 1}/{len(indices)}",
                                     refresh=False)
        of_kernel: dict[int, Candidate] = {}
        pending, refined = first, first is grid
        while pending:
            # one alpha's intercept settings one after the other: they share the product
            order = sorted((c for c, (a, _) in enumerate(candidates) if a in pending),
                           key=lambda c: candidates[c][0])
            trials = [Trial(a, b, check_ridge(a, basis.n_fit, basis.diagonal_max),
                            f"the kernel {params} with alpha={a!r}")
                      for a, b in (candidates[c] for c in order)]
            for c, trial, outcome in zip(order, trials, basis.loo_values(criterion, trials, rows),
                                         strict=True):
                cand = Candidate(params, position, trial.alpha, trial.fit_intercept,
                                 outcome.score, outcome.mean_loss)
                of_kernel[c] = cand
                if found is None or cand.sort_key < found[0].sort_key:
                    found = (cand, basis, trial, outcome)
                if progress is not None:
                    progress.update(1)
            pending = []
            if not refined:  # the grid neighbours of the best coarse alpha
                refined = True
                top = grid.index(min(of_kernel.values(), key=lambda c: c.sort_key).alpha)
                pending = [grid[i] for i in (top - 1, top + 1)
                           if 0 <= i < len(grid) and grid[i] not in first]
        evaluated.extend(of_kernel[c] for c in range(len(candidates)) if c in of_kernel)
    if found is None:
        raise ValueError("leave_one_out_search needs at least one kernel setting and one "
                         "candidate")
    best, basis, trial, outcome = found
    predictions = outcome.predictions
    if predictions is None and oracle is not None:  # the oracle runs once, on the best
        predictions = basis.loo_predictions(oracle, trial, rows)
    return LeaveOneOutSearch(evaluated, best, basis, trial, predictions, rows, outcome.scores)
