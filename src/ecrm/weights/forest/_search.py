"""The out-of-bag search of :class:`ecrm.ForestECRMCV` (described by
:class:`ecrm.selection.OutOfBagSearch`): the grid of forest settings, the forests grown and
pruned for it, and the table of results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sklearn.model_selection import ParameterGrid
from sklearn.utils import check_random_state

from ecrm.selection._search import RESULTS_COLUMNS, ranks, search_results
from ecrm.weights.forest._fit import BagPattern, Grown, prune
from ecrm.weights.forest._oob import forest_fit, judge, oob_metric

__all__ = ["DEFAULT_GRID", "check_results", "forest_grid", "results", "search_forests"]

#: The settings ForestECRMCV judges when its search is given no ``param_grid``.
DEFAULT_GRID = {"flavour": ["random", "extra"], "max_features": [0.5, 1.0]}
#: The settings a grid may name.
GRID_KEYS = {"flavour", "max_features", "min_samples_leaf", "min_samples_split", "max_depth"}


def forest_grid(param_grid) -> list[dict]:
    """The settings of ``param_grid`` (``None``: :data:`DEFAULT_GRID`), in
    :class:`~sklearn.model_selection.ParameterGrid` order, once every value passed the
    constraint :class:`~ecrm.weights.forest.estimator.ForestECRM` declares for it."""
    from ecrm.weights.forest.estimator import ForestECRM

    grid = list(ParameterGrid(DEFAULT_GRID if param_grid is None else param_grid))
    for setting in grid:
        unknown = set(setting) - GRID_KEYS
        if unknown:
            raise ValueError(f"param_grid may set {sorted(GRID_KEYS)}; got {sorted(unknown)}")
        for name, value in setting.items():
            ForestECRM._parameter_constraints[name].check(value, name)
    return grid


def search_forests(est, X, Y, settings: Sequence[Mapping], plan: Mapping, full: int,
                   rng) -> tuple:
    """Judge every setting (checked parameters of a forest) out of bag on the forests ``est``
    grows (its ``_split_targets`` and ``_grow``), as the plan of an
    :class:`ecrm.selection.OutOfBagSearch` says (its ``metric`` ``None``: minus the task loss).

    Returns ``(score, chosen, fit, predictions, judged)``: the chosen setting's criterion,
    index, risk fit and out-of-bag predictions, and per judged setting ``(score, oob loss,
    trees)``. The choice is the best setting judged on all ``full`` trees (the first on ties).
    """
    seeds = rng.randint(np.iinfo(np.int32).max, size=len(settings))
    metric, first = plan["metric"], min(full, plan["search_estimators"] or full)
    judged: dict[int, tuple] = {}  # grid index: (score, oob loss, trees)
    best: list = []  # (score, -index), index, fit, predictions: of forests of all trees

    def judge_one(i, forest, prunings) -> tuple:
        """Judge setting ``i`` on ``forest``'s trees pruned to its ``min_samples_split``;
        its ``(score, -i)``, which orders the settings as the choice does."""
        grown, targets, n_risk, smallest, pattern = forest
        split = settings[i]["min_samples_split"]
        pruned = prune(grown, split) if split > smallest else grown
        fit = forest_fit(pruned, X, targets, n_risk, pattern)
        nodes = pruned.trees.n_nodes  # nested prunings with as many nodes are the same
        if nodes not in prunings:
            loss, predictions = judge(fit, est.loss, est.output_space, Y)
            score = -loss if metric is None else oob_metric(fit, est.output_space, Y, metric)
            prunings[nodes] = (loss, predictions, float(score))
        loss, predictions, score = prunings[nodes]
        judged[i] = (score, loss, grown.trees.n_trees)
        if grown.trees.n_trees == full and (not best or (score, -i) > best[0]):
            best[:] = [(score, -i), i, fit, predictions]
        return score, -i

    def judge_group(group, grown, targets, n_risk, smallest, start=None):
        order = sorted(group, key=lambda i: settings[i]["min_samples_split"])
        forest = (grown, targets, n_risk, smallest, BagPattern(grown.bag))
        prunings: dict[int, tuple] = {}  # nodes: (loss, predictions, score)
        if plan["split_search"] == "grid":
            for i in order:
                judge_one(i, forest, prunings)
            return
        at = (len(order) - 1) // 2 if start is None else order.index(start)
        keys = {at: judge_one(order[at], forest, prunings)}
        while True:  # descent: to the better neighbour while it beats the current value
            near = [n for n in (at - 1, at + 1) if 0 <= n < len(order)]
            for n in near:
                if n not in keys:
                    keys[n] = judge_one(order[n], forest, prunings)
            step = max(near, key=keys.__getitem__, default=at)
            if not keys[step] > keys[at]:
                return
            at = step

    groups: dict[tuple, list[int]] = {}
    for i, params in enumerate(settings):
        key = tuple(sorted((k, repr(v)) for k, v in params.items() if k != "min_samples_split"))
        groups.setdefault(key, []).append(i)
    kept: dict[tuple, tuple] = {}  # per group, what growing on needs
    for key, group in groups.items():
        params, group_rng = settings[group[0]], check_random_state(int(seeds[group[0]]))
        smallest = min(settings[i]["min_samples_split"] for i in group)
        targets, n_risk, grow_on = est._split_targets(Y, params, group_rng)
        grown = est._grow(X, grow_on, {**params, "min_samples_split": smallest}, first,
                          group_rng)
        judge_group(group, grown, targets, n_risk, smallest)
        if first < full:
            kept[key] = (grown, targets, n_risk, grow_on, group_rng, smallest)
    if first < full:  # the best setting's forest grows on; its group is judged again
        lead = max(judged, key=lambda i: (judged[i][0], -i))
        key = next(k for k, g in groups.items() if lead in g)
        grown, targets, n_risk, grow_on, group_rng, smallest = kept.pop(key)
        kept.clear()
        more = est._grow(X, grow_on, {**settings[lead], "min_samples_split": smallest},
                         full - first, group_rng)
        judge_group(groups[key], Grown.concatenate([grown, more]), targets, n_risk, smallest,
                    start=lead)
    (score, _), chosen, fit, predictions = best
    fit.pattern = None  # the search's: the model keeps no m x trees index array
    return score, chosen, fit, predictions, judged


def results(grid: list[dict], judged: dict, full: int) -> dict:
    """The search's ``cv_results_`` (:func:`ecrm.selection.search_results`): per setting its
    criterion and out-of-bag loss (NaN: not judged) and the trees it was judged on (0: not
    judged), ranked as the choice is made: the settings judged on all ``full`` trees first,
    then by the criterion, then the earlier setting."""
    rows = [judged.get(i, (np.nan, np.nan, 0)) for i in range(len(grid))]
    keys = [(n != full, -s if s == s else np.inf, i) for i, (s, _, n) in enumerate(rows)]
    return search_results(grid, [r[0] for r in rows], ranks(keys),
                          oob_loss=[r[1] for r in rows], n_estimators=[r[2] for r in rows])


def check_results(est, grid: list[dict], full: int) -> None:
    """Check a loaded search's ``cv_results_`` (the layout :func:`results` writes, for the
    ``grid`` and ``full`` trees) and that ``best_params_``, ``best_score_`` and ``oob_loss_``
    are its choice's."""
    table = est.cv_results_
    if not (isinstance(table, dict)
            and set(table) == {*RESULTS_COLUMNS, "oob_loss", "n_estimators"}
            and table["params"] == grid
            and all(isinstance(table[k], list) and len(table[k]) == len(grid)
                    and all(isinstance(v, float) for v in table[k])
                    for k in ("oob_loss", "mean_score"))
            and isinstance(table["n_estimators"], list)
            and len(table["n_estimators"]) == len(grid)
            and all(type(v) is int and 0 <= v <= full for v in table["n_estimators"])):
        raise ValueError("cv_results_ must hold params (the grid), mean_score and oob_loss, "
                         "one float per setting, n_estimators, the trees of each, and rank")
    judged = {i: row for i, row in enumerate(zip(
        table["mean_score"], table["oob_loss"], table["n_estimators"], strict=True))
        if row[2] > 0}
    if table["rank"] != results(grid, judged, full)["rank"]:
        raise ValueError("cv_results_['rank'] must rank the settings by their criterion")
    on_all = [i for i, n in enumerate(table["n_estimators"]) if n == full]
    best = max(on_all, key=lambda i: (table["mean_score"][i], -i)) if on_all else None
    if best is None or est.best_params_ != grid[best] \
            or est.best_score_ != table["mean_score"][best] \
            or est.oob_loss_ != table["oob_loss"][best]:
        raise ValueError("best_params_, best_score_ and oob_loss_ must be the best "
                         "setting's of cv_results_ among those judged on n_estimators "
                         "trees")
