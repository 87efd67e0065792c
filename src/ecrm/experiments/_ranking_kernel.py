"""The kernel rankers of the label-ranking benchmark: ECRM with the squared-rank, footrule
and Kendall losses, ECRM-selected among them, and kernel ridge on positions.

:mod:`ecrm.experiments.ranking` runs them on its folds and describes the protocol; every one
chooses its kernel, ``alpha`` and intercept by the library's exact leave-one-out search
(:class:`ecrm.ECRMCV`, :func:`ecrm.selection.loo_search`), the kernel among
``_kernel_candidates`` on ``KERNEL_SUBSAMPLE`` points, with eigendecompositions shared through
one ``memory`` per fold. Rankings are position vectors (n, k): entry ``j`` is label ``j``'s
place, 0 first.
"""

from __future__ import annotations

import numpy as np

from ecrm.experiments._ranking_knn import _discordant, _rank_labels
from ecrm.selection._search import LeaveOneOutSearch
from ecrm.weights.kernel._solvers.solver import DualSolver, NystromSolver, PrimalSolver

__all__ = ["ALPHAS", "ECRM_LOSSES", "KENDALL_LOO_BUDGET", "KENDALL_LOO_MIN_ROWS", "LARGE_LOO_ROWS",
           "kendall_loo_rows", "large_loo_rows"]

ALPHAS = np.logspace(-6, 2, 17)
KERNEL_SUBSAMPLE = 600
#: Training points the leave-one-out criteria of a larger fold are averaged over.
LARGE_LOO_ROWS = 2000
#: Leave-one-out rows of the Kendall model: DP operations budget, and the floor.
KENDALL_LOO_BUDGET = 2**25
KENDALL_LOO_MIN_ROWS = 100
#: The ECRM models whose exact leave-one-out Kendall distance ``ECRM-selected`` compares.
ECRM_LOSSES = ("ECRM-Kendall", "ECRM-footrule", "ECRM-squared")


def _kernel_candidates(gammas) -> list[dict]:
    """The kernels every method chooses from: linear and RBF with the given ``gamma`` values."""
    return [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": list(gammas)}]


def _krr(Xtr, Rtr, Xte, gammas, memory, seed):
    """KRR-positions (:mod:`ecrm.experiments.ranking`): :func:`ecrm.selection.loo_search` of
    the positions by their rankings' discordant pairs, its kernel subset drawn as
    :class:`ecrm.ECRMCV` with ``random_state=seed`` draws it (``memory`` shared), then
    scikit-learn's ``KernelRidge(alpha=m * alpha)``, no intercept."""
    from sklearn.kernel_ridge import KernelRidge

    from ecrm.selection import loo_search

    # discordant pairs are integers, so ties are exact: the earlier kernel, then the
    # stronger regularisation (the search's order of candidates)
    search = LeaveOneOutSearch(fit_intercept=False, kernel_grid=_kernel_candidates(gammas),
                               memory=memory, kernel_subsample=KERNEL_SUBSAMPLE)
    choice = loo_search(Xtr, Rtr, _discordant_loss, alphas=ALPHAS, search=search,
                        random_state=seed, solver=DualSolver.name)
    params, alpha, m = choice.kernel_params, choice.alpha, len(Xtr)
    model = KernelRidge(alpha=m * alpha, kernel=params["kernel"], gamma=params["gamma"])
    P = model.fit(Xtr, Rtr.astype(float)).predict(Xte)
    return _rank_labels(P), {**params, "alpha": alpha}


def _krr_large(Xtr, Rtr, Xte, gammas, memory, seed, n_components):
    """:func:`_krr` on a training fold of more than ``n_components`` points: the kernel on
    :func:`_ecrm_large`'s subset (exact dual), then ``alpha`` on the whole fold for the
    ridge regression of the positions (no intercept, ridge ``m * alpha``) on the features of
    that function's solver, centres and leave-one-out points (``KernelRidge`` needs the
    m x m kernel)."""
    from ecrm.selection import loo_search

    sub = _kernel_subset(len(Xtr), seed)
    params = loo_search(Xtr[sub], Rtr[sub], _discordant_loss, alphas=ALPHAS,
                        search=LeaveOneOutSearch(fit_intercept=False,
                                                 kernel_grid=_kernel_candidates(gammas),
                                                 memory=memory),
                        solver=DualSolver.name).kernel_params
    solver = _low_rank_solver(params, n_components)
    choice = loo_search(Xtr, Rtr, _discordant_loss, alphas=ALPHAS, **params,
                        search=LeaveOneOutSearch(fit_intercept=False,
                                                 loo_samples=large_loo_rows(*Rtr.shape)),
                        solver=solver, random_state=seed)
    return _rank_labels(choice.predict(Xte)), {
        **params, "alpha": choice.alpha, "solver": getattr(solver, "name", solver),
        **({} if params["kernel"] == "linear" else {"n_components": n_components})}


def _discordant_loss(R, P) -> np.ndarray:
    """Kendall's distance of the rankings by the predicted positions ``P`` to ``R``, per row."""
    return _discordant(_rank_labels(P), R)


def kendall_loo_rows(m: int, k: int) -> int | None:
    """Training points the Kendall model's leave-one-out loss is averaged over.

    All of them (``None``) while ``m`` rows of the subset dynamic programme (about
    :math:`2^k k` operations each) stay within ``KENDALL_LOO_BUDGET``; otherwise a random
    subset of that cost, at least ``KENDALL_LOO_MIN_ROWS`` (only wisconsin, ``k = 16``).
    """
    rows = max(KENDALL_LOO_MIN_ROWS, KENDALL_LOO_BUDGET // (2**k * k))
    return None if rows >= m else rows


def large_loo_rows(m: int, k: int) -> int | None:
    """Training points the leave-one-out losses of a large fold are averaged over.

    ``LARGE_LOO_ROWS``, or fewer when :func:`kendall_loo_rows` asks for fewer (every model
    of the fold takes the same number, so that they share the points); ``None`` (all of
    them) when that is at least ``m``.
    """
    rows = min(LARGE_LOO_ROWS, kendall_loo_rows(m, k) or m)
    return None if rows >= m else rows


def _ecrm(Xtr, Rtr, Xte, gammas, memory, seed, *, honest=None, extend_grid=False):
    """ECRM with the three losses; every ``ECRMCV`` draws the same kernel subset (``seed``),
    so the eigendecompositions in ``memory`` serve every loss. With ``honest``, each model
    is kept there under its name with its exact leave-one-out rows and costs (for
    ECRM-mixed)."""
    from ecrm import ECRMCV
    from ecrm.losses import FootruleLoss, SquaredRankLoss
    from ecrm.losses.kendall import KendallLoss
    from ecrm.spaces.permutations import PermutationSpace

    space = PermutationSpace(Rtr.shape[1])
    Ytr = space.from_ranks(Rtr)
    shared = {"memory": memory, "kernel_subsample": KERNEL_SUBSAMPLE,
              "extend_grid": extend_grid}
    grid = LeaveOneOutSearch(fit_intercept="auto", kernel_grid=_kernel_candidates(gammas),
                             **shared)
    chosen = {}
    for label, loss in [("ECRM-squared", SquaredRankLoss()), ("ECRM-footrule", FootruleLoss())]:
        chosen[label] = _fit(honest, label, ECRMCV(loss, space, alphas=ALPHAS, search=grid,
                                                   random_state=seed), Xtr, Ytr)
    # Kendall: the squared-rank model's kernel and intercept (its own kernel search, tried,
    # moved tau by noise at up to 10 times the cost); alpha by Kendall's leave-one-out loss.
    ref = chosen["ECRM-squared"]
    own = LeaveOneOutSearch(fit_intercept=ref.fit_intercept_,
                            loo_samples=kendall_loo_rows(len(Xtr), Rtr.shape[1]), **shared)
    chosen["ECRM-Kendall"] = _fit(honest, "ECRM-Kendall", ECRMCV(
        KendallLoss(), space, alphas=ALPHAS, **ref.kernel_params_, search=own,
        random_state=seed), Xtr, Ytr)
    return _ecrm_outputs(chosen, Rtr, Xte, space)


def _fit(honest: dict | None, label: str, model, Xtr, Ytr):
    """Fit ``model`` and return it; with ``honest``, keep it there with its exact
    leave-one-out rows and costs (``honest[label]``, for ECRM-mixed)."""
    from ecrm.weights.mixture import kernel_loo_outputs

    if honest is None:
        return model.fit(Xtr, Ytr)
    honest[label] = (model, *kernel_loo_outputs(model, Xtr, Ytr))
    return model


def _ecrm_outputs(chosen: dict, Rtr, Xte, space) -> dict:
    """Test rankings and parameters of the fitted models in ``chosen`` (keys
    ``ECRM_LOSSES``) and of ``ECRM-selected``; a low-rank model's parameters also name its
    solver and, for Nystrom, its number of centres."""
    out = {}
    for label, est in chosen.items():
        params = {**est.kernel_params_, "alpha": est.alpha_, "fit_intercept": est.fit_intercept_}
        solver = est.solver
        if solver != "auto":
            params["solver"] = getattr(solver, "name", solver)
            if params["solver"] == NystromSolver.name:
                params["n_components"] = solver.n_components
        out[label] = (space.to_ranks(est.predict(Xte)), params)
    best, distance = _select_by_loo(chosen, Rtr, space)
    out["ECRM-selected"] = (out[best][0], {"loss": best, **out[best][1],
                                           "loo_discordant": distance})
    return {m: out[m] for m in (*ECRM_LOSSES, "ECRM-selected")}


def _low_rank_solver(kernel_params: dict, n_components: int):
    """The estimators' solver of a large training fold: the exact primal for a linear
    kernel, Nystrom features on ``n_components`` uniformly drawn centres otherwise."""
    if kernel_params["kernel"] == "linear":
        return PrimalSolver.name
    return NystromSolver(n_components=n_components)


def _kernel_subset(m: int, seed) -> np.ndarray:
    """The ``KERNEL_SUBSAMPLE`` training points a large fold chooses its kernels on."""
    return np.sort(np.random.RandomState(seed).choice(m, KERNEL_SUBSAMPLE, replace=False))


def _ecrm_large(Xtr, Rtr, Xte, gammas, memory, seed, n_components, *, honest=None,
                extend_grid=False):
    """:func:`_ecrm` on a training fold of more than ``n_components`` points (the protocol's
    "Large sets"): the squared-rank model's kernel on ``KERNEL_SUBSAMPLE`` random points
    (exact dual, ``memory`` shared) serves all three models on the whole fold, through
    :func:`_low_rank_solver`; ``alpha`` and the intercept by the low-rank model's exact
    leave-one-out loss on :func:`large_loo_rows` points (Kendall's intercept the
    squared-rank model's). All three draw their centres and points from ``seed``, so
    ``ECRM-selected`` compares them on the same points. ``honest`` as in :func:`_ecrm`."""
    from ecrm import ECRMCV
    from ecrm.losses import FootruleLoss, SquaredRankLoss
    from ecrm.losses.kendall import KendallLoss
    from ecrm.spaces.permutations import PermutationSpace

    m, k = Rtr.shape
    space = PermutationSpace(k)
    Ytr = space.from_ranks(Rtr)
    sub = _kernel_subset(m, seed)
    stage1 = ECRMCV(SquaredRankLoss(), space, alphas=ALPHAS, search=LeaveOneOutSearch(
        fit_intercept="auto", kernel_grid=_kernel_candidates(gammas), memory=memory,
        extend_grid=extend_grid), random_state=seed).fit(Xtr[sub], Ytr[sub])
    params = stage1.kernel_params_
    shared = {"alphas": ALPHAS, **params, "solver": _low_rank_solver(params, n_components),
              "random_state": seed}

    def search(fit_intercept):
        return LeaveOneOutSearch(fit_intercept=fit_intercept, loo_samples=large_loo_rows(m, k),
                                 extend_grid=extend_grid)

    chosen = {label: _fit(honest, label, ECRMCV(loss, space, search=search("auto"), **shared),
                          Xtr, Ytr)
              for label, loss in [("ECRM-squared", SquaredRankLoss()),
                                  ("ECRM-footrule", FootruleLoss())]}
    chosen["ECRM-Kendall"] = _fit(honest, "ECRM-Kendall", ECRMCV(
        KendallLoss(), space, search=search(chosen["ECRM-squared"].fit_intercept_), **shared),
        Xtr, Ytr)
    return _ecrm_outputs(chosen, Rtr, Xte, space)


def _select_by_loo(models: dict, Rtr, space) -> tuple[str, float]:
    """The name of the fitted :class:`ecrm.ECRMCV` in ``models`` (keys ``ECRM_LOSSES``) with
    the smallest exact leave-one-out Kendall distance (ties go to the earlier name), and its
    mean distance per point.

    The distances are summed over the Kendall model's leave-one-out points (``loo_rows_``:
    every training point, or a subset for ``k = 16``), which every other model's points
    include.
    """
    rows = models["ECRM-Kendall"].loo_rows_
    errors = {}
    for label in ECRM_LOSSES:
        est = models[label]
        at = np.searchsorted(est.loo_rows_, rows)
        if not np.array_equal(est.loo_rows_[np.minimum(at, len(est.loo_rows_) - 1)], rows):
            raise ValueError(f"{label}: its leave-one-out points do not include the Kendall "
                             f"model's")
        errors[label] = int(_discordant(space.to_ranks(est.loo_predictions_[at]),
                                        Rtr[rows]).sum())
    best = min(ECRM_LOSSES, key=errors.__getitem__)
    return best, errors[best] / len(rows)
