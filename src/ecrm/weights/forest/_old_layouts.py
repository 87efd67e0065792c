"""ForestECRMCV's parameters and fitted state as model files of earlier layouts hold them,
mapped to the current ones by the model-file loader (:mod:`ecrm.model_files._registry`)
before it constructs the estimator and checks its state."""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import numpy as np

from ecrm.selection._search import OutOfBagSearch
from ecrm.weights.forest._search import DEFAULT_GRID, GRID_KEYS, forest_grid, results

__all__ = ["forest_params_of_old_layout", "forest_state_of_old_layout"]

#: The search's settings ForestECRMCV took itself before they moved to its search object.
_SEARCH_SETTINGS = ("param_grid", "search_estimators", "split_search")


def forest_params_of_old_layout(params: dict) -> dict:
    """ForestECRMCV's parameters as a model file written before the search object held
    them: ``param_grid``, ``search_estimators`` and ``split_search`` on an
    :class:`~ecrm.selection.OutOfBagSearch` (``scoring`` stays, as the shortcut); the trees'
    settings (``flavour``, ``max_features``, ...) go, a value other than
    :class:`~ecrm.weights.forest.estimator.ForestECRM`'s default into every part of the grid
    that does not name it, as a one-value list (the same settings, in the same order).
    Parameters of the current layout come back unchanged.

    >>> new = forest_params_of_old_layout({"param_grid": {"min_samples_leaf": [1, 3]},
    ...                                    "flavour": "extra", "max_features": 0.5})
    >>> new["search"]
    OutOfBagSearch(param_grid={'flavour': ['extra'], 'min_samples_leaf': [1, 3]})
    """
    from ecrm.weights.forest.estimator import ForestECRM

    if "search" in params or not set(params) & {*_SEARCH_SETTINGS, *GRID_KEYS}:
        return dict(params)
    params = dict(params)
    moved = {k: params.pop(k) for k in _SEARCH_SETTINGS if k in params}
    defaults = inspect.signature(ForestECRM).parameters
    fixed = {k: params.pop(k) for k in sorted(GRID_KEYS) if k in params}
    fixed = {k: v for k, v in fixed.items() if not (
        v is defaults[k].default or (type(v) is type(defaults[k].default)
                                     and v == defaults[k].default))}
    grid = moved.get("param_grid")
    one = grid is None or isinstance(grid, Mapping)  # one dict, not a list of them
    parts = [DEFAULT_GRID if grid is None else grid] if one else grid
    if isinstance(parts, list) and all(isinstance(p, Mapping) for p in parts):
        wider = [{**p, **{k: [v] for k, v in fixed.items() if k not in p}} for p in parts]
        if wider != parts:
            moved["param_grid"] = wider[0] if one else wider
    return {**params, "search": OutOfBagSearch(**moved)}


def forest_state_of_old_layout(params: dict, state: dict) -> dict:
    """ForestECRMCV's fitted state as a model file of an earlier layout holds it:
    ``cv_results_`` written before every search shared one layout (``score`` is
    ``mean_score``, the ranks are derived, and a file older still, without
    ``n_estimators``, judged every setting on all the trees), and the settings of a file
    whose fixed trees' settings joined the grid (:func:`forest_params_of_old_layout`):
    ``cv_results_['params']`` and ``best_params_`` name them too."""
    table = state.get("cv_results_")
    if not (isinstance(table, dict) and isinstance(table.get("params"), list)):
        return state
    if "score" in table and "mean_score" not in table:
        n, n_estimators = len(table["params"]), params.get("n_estimators", 100)
        trees = table.get("n_estimators", [n_estimators] * n)
        judged = {i: row for i, row in enumerate(zip(table["score"], table.get(
            "oob_loss", [np.nan] * n), trees, strict=False)) if row[2] > 0}
        try:
            table = results(table["params"], judged, n_estimators)
        except (TypeError, ValueError):  # not a table of the old layout: the check names it
            return state
        state = {**state, "cv_results_": table}
    return _with_fixed_settings(params.get("search"), state, table)


def _with_fixed_settings(search, state: dict, table: dict) -> dict:
    old = table["params"]
    try:
        grid = forest_grid(search.param_grid)
        extended = len(grid) == len(old) and all(
            isinstance(o, dict) and o.items() <= g.items() for o, g in zip(old, grid, strict=True))
    except (AttributeError, TypeError, ValueError):  # not a grid: the check names it
        return state
    if not extended or old == grid or state.get("best_params_") not in old:
        return state
    best = grid[old.index(state["best_params_"])]
    return {**state, "cv_results_": {**table, "params": grid}, "best_params_": best}
