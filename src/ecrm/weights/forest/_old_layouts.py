"""ForestECRMCV's fitted state as model files of an earlier layout hold it, mapped to the
current one by the model-file loader (:mod:`ecrm.model_files._registry`) before its checks."""

from __future__ import annotations

import numpy as np

from ecrm.weights.forest._search import results

__all__ = ["forest_state_of_old_layout"]


def forest_state_of_old_layout(params: dict, state: dict) -> dict:
    """ForestECRMCV's fitted state as a model file written before every search shared one
    layout of ``cv_results_``: ``score`` is ``mean_score``, the ranks are derived, and a
    file older still (no ``n_estimators``: every setting on all the trees) gets them."""
    table = state.get("cv_results_")
    if not (isinstance(table, dict) and "score" in table and "mean_score" not in table
            and isinstance(table.get("params"), list)):
        return state
    n, n_estimators = len(table["params"]), params.get("n_estimators", 100)
    trees = table.get("n_estimators", [n_estimators] * n)
    judged = {i: row for i, row in enumerate(zip(table["score"], table.get(
        "oob_loss", [np.nan] * n), trees, strict=False)) if row[2] > 0}
    try:
        converted = results(table["params"], judged, n_estimators)
    except (TypeError, ValueError):  # not a table of the old layout: the check names it
        return state
    return {**state, "cv_results_": converted}
