r"""The choice of a stacked risk's combination from its members' honest outputs (the
mathematics is in :mod:`ecrm.weights.stack`).

:func:`choose_stack` takes the members' honest outputs of the same training points, stacked
(J, n, e): costs, judged by the task loss of the exact oracle, or label scores, judged by a
metric. :class:`ecrm.StackedRiskECRM` calls it on its members' outputs; the experiments call
it on outputs they already hold (e.g. a calibrated kernel's leave-one-out scores).
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from ecrm.weights.mixture import honest_criterion

__all__ = ["best_candidate", "choose_stack", "combine_labels", "reference_grid",
           "resampled_std_error", "simplex_grid"]

#: Folds of the nested check under a metric (two halves under the task loss).
METRIC_FOLDS = 10


def simplex_grid(n_members: int, resolution: int) -> np.ndarray:
    r"""Every :math:`\beta \in \Delta_J` with :math:`k\beta` integer, (G, J), G =
    :math:`\binom{k + J - 1}{J - 1}`; the vertices (one member alone) come first, in member
    order, then the rest in lexicographic order of :math:`k\beta`, descending."""
    counts = [np.diff([0, *bars, resolution + n_members]) - 1
              for bars in itertools.combinations(range(1, resolution + n_members),
                                                 n_members - 1)]
    points = sorted({tuple(int(c) for c in v) for v in counts}, reverse=True)
    vertices = [p for p in points if max(p) == resolution]
    vertices.sort(key=lambda p: p.index(resolution))
    rest = [p for p in points if max(p) < resolution]
    return np.array(vertices + rest, dtype=float) / resolution


def best_candidate(scores) -> int:
    """The candidate kept: the first best of ``scores`` (the members alone come first)."""
    return int(np.argmax(scores))


@dataclass(frozen=True)
class StackChoice:
    """The outcome of :func:`choose_stack`.

    Attributes
    ----------
    weights : ndarray of shape (J,)
        :math:`\\beta` (one-hot when the best single member is the model).
    label_weights : ndarray of shape (d, J) or None
        Each label's share, or ``None``.
    stack_used : bool
    best_score : float
        The criterion of ``weights`` on every row (greater is better).
    grid, scores, mean_losses : ndarray
        Every candidate (G, J), its criterion and its mean task loss (NaN under a metric).
    nested : dict
        ``gain``, ``std_error``, ``label_gain``, ``label_std_error`` (NaN when not run).
    """

    weights: np.ndarray
    label_weights: np.ndarray | None
    stack_used: bool
    best_score: float
    grid: np.ndarray
    scores: np.ndarray
    mean_losses: np.ndarray
    nested: dict


def choose_stack(outputs, Y, *, loss=None, output_space=None, metric=None, judge=None,
                 resolution=10, nested=True, label_shrinkage=None, reference_pairs=None,
                 random_state=None) -> StackChoice:
    r"""Choose the combination of the members' honest ``outputs`` (J, n, e) of the points
    whose outputs ``Y`` (n, d) are: the lattice search, the nested honest check and, under
    a metric with ``label_shrinkage``, the per-label shares (see
    :mod:`ecrm.weights.stack`). ``judge(Y_pred, Y)`` replaces ``loss`` as the per-row task
    loss when given (e.g. Kendall's distance of a footrule model's rankings).

    ``reference_pairs``, pairs ``(i, j)`` of members, gives the candidates the stack must
    beat: the two-member mixtures :math:`a\,o_i + (1 - a)\,o_j`, :math:`a = t/k`,
    :math:`t = 0, \dots, k`, in that order (ties: the smaller share of ``i``, as
    :func:`ecrm.weights.mixture.choose_mixture` with ``i`` its kernel). They are added to
    the searched candidates, and the model is the best of them unless the stack passes the
    nested check. ``None``: the members alone."""
    outputs, Y = np.asarray(outputs, dtype=float), np.asarray(Y, dtype=float)
    rng = check_random_state(random_state)
    J = outputs.shape[0]
    crit = {"loss": loss, "output_space": output_space, "metric": metric, "judge": judge}
    lines = check_pairs(reference_pairs, J, resolution)
    grid, scores, losses, ref = _search(outputs, Y, crit, resolution, lines)
    best, single = best_candidate(scores), int(ref[np.argmax(scores[ref])])
    out = {"gain": np.nan, "std_error": np.nan, "label_gain": np.nan, "label_std_error": np.nan}
    used, splits, folds = True, None, []
    if nested and J > 1:
        parts = np.array_split(rng.permutation(len(Y)),
                               min(2 if metric is None else METRIC_FOLDS, len(Y)))
        splits = [(np.concatenate(parts[:i] + parts[i + 1:]), held)  # (chosen on, judged on)
                  for i, held in enumerate(parts)]
        folds = [_fold(outputs, Y, crit, sel, held, resolution, lines)
                 for sel, held in splits]
        gain, err = _gain([(Y[held], stack, alone) for (_, held), (stack, alone, _, _)
                           in zip(splits, folds, strict=True)], crit)
        out.update(gain=gain, std_error=err)
        used = bool(gain > err)
    weights = grid[best] if used else grid[single]
    label_weights = None
    if metric is not None and label_shrinkage is not None and J > 1:
        label_weights = _label_shares(outputs, Y, weights, label_shrinkage, resolution, crit,
                                      splits, [f[2] if used else f[3] for f in folds], out)
    return StackChoice(weights.copy(), label_weights, used,
                       float(scores[best if used else single]), grid, scores, losses,
                       {k: float(v) for k, v in out.items()})


def check_pairs(pairs, J, resolution):
    """The reference's mixtures ``(i, j, a)`` of :func:`choose_stack`'s ``reference_pairs``
    (``None`` stays ``None``: the members alone)."""
    if pairs is None:
        return None
    pairs = [tuple(p) for p in pairs]
    if not pairs or any(len(p) != 2 or not all(isinstance(m, (int, np.integer))
                                               and 0 <= m < J for m in p) for p in pairs):
        raise ValueError(f"reference_pairs must be a non-empty list of pairs of member "
                         f"indices in [0, {J}); got {pairs!r}"[:200])
    return [(int(i), int(j), t / resolution) for i, j in pairs for t in range(resolution + 1)]


def reference_grid(lines, J) -> np.ndarray:
    """The weights (R, J) of the reference's mixtures ``(i, j, a)``."""
    grid = np.zeros((len(lines), J))
    for row, (i, j, a) in zip(grid, lines, strict=True):
        row[j] += 1.0 - a
        row[i] += a
    return grid


def _mix(outputs, i, j, a):
    r"""The mixture :math:`a\,o_i + (1 - a)\,o_j` (computed as ``choose_mixture`` does)."""
    return a * outputs[i] + (1.0 - a) * outputs[j]


def _search(outputs, Y, crit, resolution, lines=None):
    """The candidates (G, J) judged: ``(grid, scores, mean losses, reference)``; the first J
    are the vertices (every member alone), the reference's mixtures (``lines``) come last,
    and ``reference`` indexes the candidates the stack must beat. A candidate whose combined
    outputs are those of one judged before (a reference's mixture on the lattice, a vertex
    again) takes its criterion."""
    J = outputs.shape[0]
    seen: dict = {}  # each distinct combined output judged once (the oracle is the cost)

    def judge(combined):
        key = hashlib.blake2b(combined.tobytes(), digest_size=16).digest()
        if key not in seen:
            seen[key] = honest_criterion(combined, Y, **crit)
        return seen[key]

    def criterion(beta):
        return judge(np.tensordot(beta, outputs, axes=1))

    if J <= 3:
        grid = simplex_grid(J, resolution)
        judged = [criterion(beta) for beta in grid]
    else:  # forward selection with replacement, from the vertices
        grid = list(np.eye(J))
        judged = [criterion(beta) for beta in grid]
        counts = np.zeros(J)
        for step in range(1, resolution + 1):
            trials = [(counts + np.eye(J)[j]) / step for j in range(J)]
            scored = [criterion(beta) for beta in trials]  # the first step's: the vertices
            j = int(np.argmax([s for s, _ in scored]))
            counts[j] += 1
            if step > 1:
                grid.append(trials[j])
                judged.append(scored[j])
        grid = np.array(grid)
    ref = np.arange(J)
    if lines is not None:
        ref = np.arange(len(grid), len(grid) + len(lines))
        judged += [judge(_mix(outputs, *line)) for line in lines]
        grid = np.vstack([grid, reference_grid(lines, J)])
    scores, losses = (np.array(v, dtype=float) for v in zip(*judged, strict=True))
    return grid, scores, losses, ref


def _fold(outputs, Y, crit, sel, held, resolution, lines=None):
    """Choose on ``sel``, judge on ``held``: the stack's outputs on ``held``, the best
    reference candidate's (a single member without ``lines``), and their shares."""
    grid, scores, _, ref = _search(outputs[:, sel], Y[sel], crit, resolution, lines)
    beta = grid[best_candidate(scores)]
    single = int(ref[np.argmax(scores[ref])])
    if lines is None:
        alone = outputs[single, held]
    else:
        alone = _mix(outputs[:, held], *lines[single - ref[0]])
    return np.tensordot(beta, outputs[:, held], axes=1), alone, beta, grid[single]


def _label_shares(S, Y, weights, tau, resolution, crit, splits, folds, nested):
    """Per-label shares (d, J) shrunk towards ``weights``, or ``None`` unless the nested
    check says they help (``folds``: the global shares chosen on each fold's rows, the
    stack's or the single member's as the nested check decided)."""
    space = crit["output_space"]
    if splits is not None:
        pairs = []
        for (sel, held), beta in zip(splits, folds, strict=True):
            shares = per_label(S[:, sel], Y[sel], beta, tau, resolution)
            pairs.append((Y[held], combine_labels(S[:, held], shares, space),
                          np.tensordot(beta, S[:, held], axes=1)))
        gain, err = _gain(pairs, crit)
        nested.update(label_gain=gain, label_std_error=err)
        if not gain > err:
            return None
    return per_label(S, Y, weights, tau, resolution)


def _gain(judged, crit) -> tuple[float, float]:
    r"""The mean gain of the first outputs over the second on the judged rows of the
    nested check, and its standard error.

    ``judged`` holds ``(Y, a, b)`` per fold. Under the task loss (two halves) the gain is
    the mean of the per-row differences :math:`\ell(b_i) - \ell(a_i)` over every judged
    row and its standard error :math:`s/\sqrt n`. A metric :math:`M` is not a mean over
    rows: the gain is the mean over the :math:`K` folds of
    :math:`g_k = M(Y_k, a_k) - M(Y_k, b_k)` and its standard error the corrected
    resampled one, :math:`s_g \sqrt{1/K + n_{\text{held}}/n_{\text{chosen}}}`
    (:math:`s_g` the folds' spread; the second term accounts for the overlap of the rows
    the folds chose on, so that the error also carries the variability of the choice).
    """
    loss, space, metric = crit["loss"], crit["output_space"], crit["metric"]
    if metric is None:
        per_row = loss if crit["judge"] is None else crit["judge"]
        diff = np.concatenate([per_row(space.minimize(b, loss.cost_form), Y)
                               - per_row(space.minimize(a, loss.cost_form), Y)
                               for Y, a, b in judged])
        if len(diff) < 2:
            return 0.0, np.nan
        return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))
    with np.errstate(all="ignore"):
        g = np.array([float(metric(Y, a)) - float(metric(Y, b)) for Y, a, b in judged])
    g = g[np.isfinite(g)]
    K = len(g)
    if K < 2:
        return (float(g.mean()) if K else 0.0), np.nan
    return float(g.mean()), resampled_std_error(g, 1.0 / (K - 1))


def resampled_std_error(gains, held_over_chosen: float) -> float:
    r"""The corrected resampled standard error of the mean of :math:`J` gains measured on
    overlapping resamples (Nadeau & Bengio, 2003):
    :math:`s_g \sqrt{1/J + n_{\text{held}}/n_{\text{chosen}}}`, :math:`s_g` their spread.
    The naive :math:`s_g/\sqrt J` treats the gains as independent, which they are not when
    the rows they were chosen on overlap (cross-validation folds, its repeats); the second
    term accounts for that. ``held_over_chosen``: :math:`1/(k - 1)` for :math:`k` folds."""
    gains = np.asarray(gains, dtype=float)
    return float(gains.std(ddof=1) * np.sqrt(1.0 / len(gains) + held_over_chosen))


def per_label(S, Y, weights, tau, resolution) -> np.ndarray:
    r"""Each label's lattice share minimising its Brier score
    :math:`\sum_i (\sum_j \beta_j s_{ijl} - y_{il})^2`, shrunk towards ``weights``, (d, J)."""
    grid = simplex_grid(S.shape[0], resolution) if S.shape[0] <= 3 else np.eye(S.shape[0])
    Q = np.einsum("jil,kil->ljk", S, S)  # (d, J, J)
    r = np.einsum("jil,il->lj", S, Y)  # (d, J)
    brier = np.einsum("gj,ljk,gk->lg", grid, Q, grid) - 2 * r @ grid.T
    raw = grid[np.argmin(brier, axis=1)]
    s = (tau / (tau + Y.sum(axis=0)))[:, None] if tau > 0 else np.zeros((Y.shape[1], 1))
    return (1.0 - s) * raw + s * weights[None, :]


def combine_labels(S, shares, space) -> np.ndarray:
    """Scores (J, n, d) combined label by label by ``shares`` (d, J), made consistent."""
    return space.consistent_scores(np.einsum("jil,lj->il", S, shares))
