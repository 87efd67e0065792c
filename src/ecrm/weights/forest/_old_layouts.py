"""ForestECRMCV's parameters and fitted state as model files of earlier layouts hold them,
mapped to the current ones by the model-file loader (:mod:`ecrm.model_files._registry`)
before it constructs the estimator and checks its state."""

from __future__ import annotations

import numpy as np

from ecrm.selection._search import OutOfBagSearch
from ecrm.weights.forest._search import DEFAULT_GRID, GRID_KEYS, forest_grid, results

__all__ = ["forest_params_of_old_layout", "forest_state_of_old_layout"]


def forest_params_of_old_layout(params: dict) -> dict:
    """ForestECRMCV's parameters as a model file written before its search object: the
    search's settings on an :class:`~ecrm.selection.OutOfBagSearch` (``scoring`` stays, the
    shortcut); a trees' setting other than ForestECRM's default joins every part of the grid
    that does not name it as a one-value list (the same settings in the same order).

    >>> forest_params_of_old_layout({"param_grid": {"min_samples_leaf": [1, 3]},
    ...                              "flavour": "extra", "max_features": 0.5})["search"]
    OutOfBagSearch(param_grid={'flavour': ['extra'], 'min_samples_leaf': [1, 3]})
    """
    from ecrm.weights.forest.estimator import ForestECRM

    moved = ("param_grid", "search_estimators", "split_search")
    if "search" in params or not set(params) & {*moved, *GRID_KEYS}:
        return dict(params)
    params, default = dict(params), ForestECRM(None, None).get_params()
    search = {k: params.pop(k) for k in moved if k in params}
    fixed = {k: params.pop(k) for k in sorted(GRID_KEYS) if k in params}
    fixed = {k: [v] for k, v in fixed.items() if repr(v) != repr(default[k])}
    grid = search.get("param_grid")
    parts = grid if isinstance(grid, list) else [DEFAULT_GRID if grid is None else grid]
    if all(isinstance(p, dict) for p in parts):
        wider = [{**p, **{k: v for k, v in fixed.items() if k not in p}} for p in parts]
        if wider != parts:
            search["param_grid"] = wider if isinstance(grid, list) else wider[0]
    return {**params, "search": OutOfBagSearch(**search)}


def forest_state_of_old_layout(params: dict, state: dict) -> dict:
    """ForestECRMCV's fitted state as a model file of an earlier layout holds it: a
    ``cv_results_`` before the shared layout (``score`` is ``mean_score``, the ranks are
    derived; without ``n_estimators`` every setting had all the trees), and settings without
    the fixed trees' settings that joined the grid (:func:`forest_params_of_old_layout`)."""
    table = state.get("cv_results_")
    if not (isinstance(table, dict) and isinstance(table.get("params"), list)):
        return state
    old = table["params"]
    if "score" in table and "mean_score" not in table:
        n, n_estimators = len(old), params.get("n_estimators", 100)
        judged = {i: row for i, row in enumerate(zip(table["score"], table.get(
            "oob_loss", [np.nan] * n), table.get("n_estimators", [n_estimators] * n),
            strict=False)) if row[2] > 0}
        try:
            table = results(old, judged, n_estimators)
        except (TypeError, ValueError):  # not a table of the old layout: the check names it
            return state
    try:
        grid = forest_grid(params["search"].param_grid)
        if len(grid) == len(old) and grid != old and all(
                o.items() <= g.items() for o, g in zip(old, grid, strict=True)):
            state = {**state, "best_params_": grid[old.index(state["best_params_"])]}
            table = {**table, "params": grid}
    except (AttributeError, KeyError, TypeError, ValueError):  # the check names it
        pass
    return {**state, "cv_results_": table}
