"""ECRM's and ECRMCV's parameters and ECRMCV's fitted state as model files of earlier layouts
hold them, mapped to the current ones by the model-file loader
(:mod:`ecrm.model_files._registry`) before it constructs the estimator."""

from __future__ import annotations

from ecrm.selection._search import LeaveOneOutSearch
from ecrm.weights.kernel._solvers.solver import NystromSolver

__all__ = ["ecrm_params_of_old_layout", "ecrmcv_params_of_old_layout",
           "ecrmcv_state_of_old_layout"]


#: The settings ECRMCV took itself before they moved to its search object.
_SEARCH_SETTINGS = ("fit_intercept", "kernel_grid", "memory", "loo_samples", "kernel_subsample",
                    "verbose", "calibration", "alpha_search", "extend_grid", "max_added_gammas")


def ecrm_params_of_old_layout(params: dict) -> dict:
    """ECRM's (or ECRMCV's) parameters as a model file written while the estimator took the
    Nystrom centres' settings ``n_components`` and ``center_selection`` itself: with
    ``solver="nystrom"`` and either set, they go to a :class:`~ecrm.NystromSolver`, else
    (their defaults, or a solver that does not read them) they are dropped. Parameters of the
    current layout come back unchanged.

    >>> ecrm_params_of_old_layout({"alpha": 0.1, "solver": "nystrom", "n_components": 20,
    ...                            "center_selection": "uniform"})
    {'alpha': 0.1, 'solver': NystromSolver(n_components=20)}
    """
    params = dict(params)
    n_components = params.pop("n_components", None)
    center = params.pop("center_selection", "uniform")
    if params.get("solver") == NystromSolver.name and (
            n_components is not None or not (isinstance(center, str) and center == "uniform")):
        params["solver"] = NystromSolver(n_components=n_components, center_selection=center)
    return params


def ecrmcv_params_of_old_layout(params: dict) -> dict:
    """ECRMCV's parameters as a model file written before the search object holds them:
    the search's settings on a :class:`~ecrm.selection.LeaveOneOutSearch` (``alphas`` and
    ``scoring`` stay, as the shortcuts), the Nystrom centres' settings on a
    :class:`~ecrm.NystromSolver` (:func:`ecrm_params_of_old_layout`). Parameters of the
    current layout come back unchanged.

    >>> new = ecrmcv_params_of_old_layout({"alphas": [0.1], "loo_samples": 5,
    ...                                    "solver": "nystrom", "n_components": 20})
    >>> new["alphas"], new["search"], new["solver"]
    ([0.1], LeaveOneOutSearch(loo_samples=5), NystromSolver(n_components=20))
    """
    old = set(params) & {*_SEARCH_SETTINGS, "n_components", "center_selection"}
    if not old or "search" in params:
        return dict(params)
    params = ecrm_params_of_old_layout(params)
    moved = {k: params.pop(k) for k in _SEARCH_SETTINGS if k in params}
    return {**params, "search": LeaveOneOutSearch(**moved)}


def ecrmcv_state_of_old_layout(params: dict, state: dict) -> dict:
    """ECRMCV's fitted state as a model file written before every search shared one layout
    of ``cv_results_``: the columns ``mean_loo_score`` and ``mean_loo_loss`` are
    ``mean_score`` and ``mean_loss`` (of ``kernel_search_results_`` too). A state of the
    current layout comes back unchanged."""
    renamed = {"mean_loo_score": "mean_score", "mean_loo_loss": "mean_loss"}
    out = dict(state)
    for key in ("cv_results_", "kernel_search_results_"):
        table = out.get(key)
        if isinstance(table, dict) and "mean_loo_score" in table:
            out[key] = {renamed.get(k, k): v for k, v in table.items()}
    return out
