r"""The one exact leave-one-out search: :class:`ecrm.ECRMCV` and the ranking baseline use it.

Every solver's leave-one-out basis (:class:`ecrm.weights._fit.LooBasis`) factorises its
training problem once and evaluates a criterion (:mod:`ecrm.selection._criteria`) on the exact
leave-one-out predictions for every ridge and intercept: the dual from one eigendecomposition
:math:`K = Q\Lambda Q^\top` (:class:`ecrm.weights.kernel._ridge.LeaveOneOut`), the primal and
Nystrom solvers from one of :math:`F^\top F`, block by block. :func:`leave_one_out_search`
runs the kernel-subsample stage, then evaluates and ranks the candidates of the grid
(:mod:`ecrm.selection._grid`), extending it past an end that wins when asked, as
scikit-learn's ``_RidgeGCV`` does for ``RidgeCV``; the estimator refits the best from its
basis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ecrm.exceptions import GridEdgeWarning
from ecrm.selection._grid import ALPHA_STEP, WIDTH_KERNELS, alpha_limits, grid_end, kernel_gammas
from ecrm.weights._fit import Criterion, LooBasis, Outcome, Trial
from ecrm.weights.kernel._ridge import check_ridge

__all__ = ["GridEdgeWarning", "SearchOutcome", "leave_one_out_search"]


@dataclass(frozen=True)
class Candidate:
    """One (kernel, alpha, intercept) candidate and its leave-one-out score.

    ``score`` is minus the mean leave-one-out task loss (``mean_loss``), or the metric of the
    leave-one-out label scores (``mean_loss`` is then NaN: no oracle ran). Candidates are
    ranked by :attr:`sort_key`: higher score, then the earlier kernel setting, then stronger
    regularisation, then the intercept. ``added``: tried by an extension of the grid (its
    alpha, or its kernel setting), not given in it.
    """

    kernel_params: dict
    kernel_index: int
    alpha: float
    fit_intercept: bool
    score: float
    mean_loss: float = float("nan")
    added: bool = False

    @property
    def sort_key(self) -> tuple:
        return (-self.score, self.kernel_index, -self.alpha, not self.fit_intercept)


@dataclass(frozen=True)
class SearchOutcome:
    """The result of one stage of :func:`leave_one_out_search`.

    Attributes
    ----------
    candidates : list of Candidate
        In evaluation order (kernel settings, then intercepts, then alphas; then the
        candidates an extension added).
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
    stopped : dict
        Why an extension of the grid stopped at a bound while its end still won: by kernel
        position (alpha) and under ``"gamma"``; one sentence each.
    """

    candidates: list[Candidate]
    best: Candidate
    basis: LooBasis = field(repr=False)
    trial: Trial = field(repr=False)
    predictions: np.ndarray | None = field(repr=False)
    rows: np.ndarray = field(repr=False)
    scores: np.ndarray | None = field(default=None, repr=False)
    stopped: dict = field(default_factory=dict, repr=False)

    def table(self) -> dict:
        """The candidates as a ``cv_results_`` dict (:func:`ecrm.selection.search_results`):
        ``params``, ``mean_score`` (the leave-one-out criterion), ``rank`` (1 = best), then
        ``alpha``, ``fit_intercept``, ``mean_loss`` (the mean leave-one-out task loss; NaN
        when the criterion is a metric of the scores) and ``added`` (tried by an extension
        of the grid)."""
        from ecrm.selection._search import ranks, search_results

        found = self.candidates
        return search_results(
            [{**c.kernel_params, "alpha": c.alpha, "fit_intercept": c.fit_intercept}
             for c in found],
            np.array([c.score for c in found]), np.array(ranks([c.sort_key for c in found])),
            alpha=np.array([c.alpha for c in found]),
            fit_intercept=np.array([c.fit_intercept for c in found]),
            mean_loss=np.array([c.mean_loss for c in found]),
            added=np.array([c.added for c in found], dtype=bool))

    def bounds_hit(self) -> list[str]:
        """The bounds that stopped an extension at the selected candidate (its alpha, its
        gamma): what :class:`~ecrm.exceptions.GridEdgeWarning` says."""
        return [self.stopped[key] for key in (self.best.kernel_index, "gamma")
                if key in self.stopped]


def _loo_rows(m: int, loo_samples: int | None, rng) -> np.ndarray:
    if loo_samples is not None and loo_samples < m:
        return np.sort(rng.choice(m, loo_samples, replace=False))
    return np.arange(m)


def leave_one_out_search(source, settings: Sequence[dict],
                         candidates: Sequence[tuple[float, bool]], criterion: Criterion, *,
                         random_state=None, loo_samples: int | None = None,
                         kernel_subsample: int | None = None, refine: bool = False,
                         oracle: Criterion | None = None, progress=None, extend: bool = False,
                         max_added_gammas: int = 0
                         ) -> tuple[SearchOutcome, SearchOutcome | None]:
    r"""Exact leave-one-out criterion of every (kernel, alpha, intercept) candidate.

    With ``kernel_subsample`` (and several kernel settings) the kernel is chosen first on
    that many random points (stage 1), then alpha and the intercept on every point (stage 2).
    ``loo_samples``, ``kernel_subsample``, ``refine`` (``alpha_search="coarse-to-fine"``),
    ``extend`` (``extend_grid``) and ``max_added_gammas`` are the settings of
    :class:`~ecrm.selection.LeaveOneOutSearch`; the widths are extended only with
    ``source.add_setting(params) -> k``, and a bound that stops an extension whose end still
    wins is recorded in :attr:`SearchOutcome.stopped`.

    Parameters
    ----------
    source : DualSource, FeatureSource or any object with ``n_rows`` and ``basis(k, subset)``
        The solver's leave-one-out bases
        (:func:`ecrm.weights.kernel._solvers.prepare.prepare_search`) for the kernel
        ``settings``, evaluated at the ``(alpha, fit_intercept)`` pairs ``candidates``.
    criterion, oracle : Criterion
        :mod:`ecrm.selection._criteria`; the optional ``oracle`` gives the best candidate's
        leave-one-out ``predictions`` when ``criterion`` did not.
    random_state : RandomState, optional
        Draws the stage-1 subset, then each stage's ``loo_samples`` rows.
    progress : tqdm-like, optional
        Told each kernel's factorisation (``set_postfix_str``), advanced per candidate.

    Returns
    -------
    search, stage1 : SearchOutcome and SearchOutcome or None
    """
    m = source.n_rows
    indices = list(range(len(settings)))
    settings = list(settings)
    stage1 = None
    widths = extend and hasattr(source, "add_setting")

    def stage(basis_of, indices, rows, what, **kw):
        return _stage(basis_of, settings, indices, candidates, criterion, rows, refine,
                      progress, what, extend=extend, **kw)

    if kernel_subsample is not None and len(settings) > 1 and kernel_subsample < m:
        sub = np.sort(random_state.choice(m, kernel_subsample, replace=False))
        rows = _loo_rows(len(sub), loo_samples, random_state)
        what = f"kernel on {len(sub)} points"
        stage1 = stage(lambda k: source.basis(k, sub), indices, rows, what)
        if widths:
            stage1 = _extend_widths(stage1, source, settings, max_added_gammas, lambda k: stage(
                lambda j: source.basis(j, sub), [k], rows, what, added=True))
        stage1 = _with_oracle(stage1, oracle)
        indices = [stage1.best.kernel_index]
    search = stage(source.basis, indices, _loo_rows(m, loo_samples, random_state), "alpha")
    if widths and stage1 is None:
        search = _extend_widths(search, source, settings, max_added_gammas,
                                lambda k: stage(source.basis, [k], search.rows, "alpha",
                                                added=True))
    elif stage1 is not None and "gamma" in stage1.stopped:
        search = replace(search, stopped={**search.stopped, "gamma": stage1.stopped["gamma"]})
    return _with_oracle(search, oracle), stage1


def _with_oracle(search: SearchOutcome, oracle: Criterion | None) -> SearchOutcome:
    """The best candidate's leave-one-out predictions by ``oracle`` (run once, on the best)."""
    if search.predictions is not None or oracle is None:
        return search
    return replace(search, predictions=search.basis.loo_predictions(oracle, search.trial,
                                                                    search.rows))


def _extend_widths(search: SearchOutcome, source, settings: list[dict], most: int,
                   run: Callable[[int], SearchOutcome]) -> SearchOutcome:
    """``search`` with kernel widths added past the winning end (``extend`` of
    :func:`leave_one_out_search`); ``run(k)`` searches the new setting ``k``."""
    added, improved = 0, True
    while improved:
        best = search.best
        kernel, gamma = best.kernel_params["kernel"], best.kernel_params.get("gamma")
        gammas = kernel_gammas(settings, kernel)
        if kernel not in WIDTH_KERNELS or gamma is None or (end := grid_end(gamma, gammas)) is None:
            break
        smallest = end == "smallest"
        if added >= most:
            search = replace(search, stopped={**search.stopped, "gamma": (
                f"the chosen gamma={gamma:g} ({kernel} kernel) is the {end} of the gammas "
                f"tried {[float(f'{g:.4g}') for g in gammas]}: the bound max_added_gammas="
                f"{most} stopped the extension")})
            break
        ratio = gammas[1] / gammas[0] if smallest else gammas[-1] / gammas[-2]
        params = {**best.kernel_params, "gamma": gamma / ratio if smallest else gamma * ratio}
        k = source.add_setting(params)
        settings.append(params)
        added += 1
        more = run(k)
        improved = more.best.score > best.score
        winner = more if more.best.sort_key < best.sort_key else search
        search = replace(winner, candidates=search.candidates + more.candidates,
                         stopped={**search.stopped, **more.stopped})
    return search


def _evaluate(basis: LooBasis, params: dict, position: int, pairs, criterion: Criterion,
              rows: np.ndarray, progress, added: bool) -> list[tuple[Candidate, Trial, Outcome]]:
    """The candidates of ``pairs`` ((alpha, intercept), sorted by alpha) on one basis."""
    trials = [Trial(a, b, check_ridge(a, basis.n_fit, basis.diagonal_max),
                    f"the kernel {params} with alpha={a!r}") for a, b in pairs]
    out = []
    for trial, outcome in zip(trials, basis.loo_values(criterion, trials, rows), strict=True):
        out.append((Candidate(params, position, trial.alpha, trial.fit_intercept,
                              outcome.score, outcome.mean_loss, added), trial, outcome))
        if progress is not None:
            progress.update(1)
    return out


def _extend_alphas(basis: LooBasis, params: dict, tried: list[Candidate],
                   evaluate: Callable) -> str | None:
    """Add decades of alpha past the winning end of ``tried`` (one kernel's candidates,
    extended in place) until an end no longer wins, a step does not strictly improve, or
    :func:`~ecrm.selection._grid.alpha_limits` stops it (the sentence returned then)."""
    low, high = alpha_limits(basis.diagonal_max)
    intercepts = list(dict.fromkeys(c.fit_intercept for c in tried))
    while True:
        top = min(tried, key=lambda c: c.sort_key)
        end = grid_end(top.alpha, sorted({c.alpha for c in tried}))
        if end is None:
            return None
        step = top.alpha / ALPHA_STEP if end == "smallest" else top.alpha * ALPHA_STEP
        step = float(f"{step:.15g}")  # 1e-06, not 1.0000000000000002e-06 after 4 steps
        if not low <= step <= high:
            bound = (f"the numerical floor sqrt(eps) * max K_ii = {low:.3g}" if step < low
                     else f"the ceiling max K_ii / sqrt(eps) = {high:.3g}")
            return (f"the chosen alpha={top.alpha:g} is the {end} tried for the kernel "
                    f"{params}: the next decade, {step:g}, lies beyond {bound} "
                    f"(ecrm.selection._grid.alpha_limits), which stopped the extension")
        new = evaluate([(step, b) for b in intercepts])
        tried.extend(new)
        if max(c.score for c in new) <= top.score:
            return None


def _stage(basis_of: Callable, settings, indices, candidates, criterion, rows, refine,
           progress, what: str, *, extend: bool = False,
           added: bool = False) -> SearchOutcome:
    evaluated: list[Candidate] = []
    found: tuple | None = None  # (candidate, basis, trial, outcome) of the best so far
    stopped: dict = {}
    grid = sorted({alpha for alpha, _ in candidates})
    first = grid
    if refine and len(grid) > 2:
        first = grid[::2] + ([grid[-1]] if len(grid) % 2 == 0 else [])
    for number, k in enumerate(indices):
        # a kernel's position: its index in ``settings`` (stage 1 and a single stage); in
        # stage 2, 0 (the one kernel of the stage)
        position = k if added else number
        if progress is not None:  # shown at once: a factorisation can take a while
            progress.set_postfix_str(f"{what}: kernel {number + 1}/{len(indices)}, "
                                     f"factorising", refresh=True)
        params, basis = settings[k], basis_of(k)
        if progress is not None:
            progress.set_postfix_str(f"{what}: kernel {number + 1}/{len(indices)}",
                                     refresh=False)
        of_kernel: dict[int, Candidate] = {}
        extra: list[Candidate] = []

        def keep(results):
            nonlocal found
            for cand, trial, outcome in results:
                if found is None or cand.sort_key < found[0].sort_key:
                    found = (cand, basis, trial, outcome)  # noqa: B023 - used in this pass
            return [cand for cand, _, _ in results]

        pending, refined = first, first is grid
        while pending:
            # one alpha's intercept settings one after the other: they share the product
            order = sorted((c for c, (a, _) in enumerate(candidates) if a in pending),
                           key=lambda c: candidates[c][0])
            results = keep(_evaluate(basis, params, position, [candidates[c] for c in order],
                                     criterion, rows, progress, added))
            of_kernel.update(zip(order, results, strict=True))
            pending = []
            if not refined:  # the grid neighbours of the best coarse alpha
                refined = True
                top = grid.index(min(of_kernel.values(), key=lambda c: c.sort_key).alpha)
                pending = [grid[i] for i in (top - 1, top + 1)
                           if 0 <= i < len(grid) and grid[i] not in first]
        if extend and len(grid) > 1:
            tried = list(of_kernel.values())
            note = _extend_alphas(basis, params, tried, lambda pairs: keep(_evaluate(
                basis, params, position, pairs, criterion, rows, progress, True)))  # noqa: B023
            extra = tried[len(of_kernel):]
            if note is not None:
                stopped[position] = note
        evaluated.extend(of_kernel[c] for c in range(len(candidates)) if c in of_kernel)
        evaluated.extend(extra)
    if found is None:
        raise ValueError("leave_one_out_search needs at least one kernel setting and one "
                         "candidate")
    best, basis, trial, outcome = found
    return SearchOutcome(evaluated, best, basis, trial, outcome.predictions, rows,
                             outcome.scores, stopped)
