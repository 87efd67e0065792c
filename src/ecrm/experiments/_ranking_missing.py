"""The missing-labels protocol (``ecrm reproduce ranking --missing p`` and ``ecrm reproduce
missing-labels``, where it is described): the deletion of training labels
(:func:`remove_labels`) and the methods that learn from incomplete rankings, on training folds
of at most ``DUAL_MAX_TRAIN`` points.
"""

from __future__ import annotations

import time

import numpy as np

from ecrm.experiments._ranking_kernel import ALPHAS, kendall_loo_rows
from ecrm.experiments._ranking_peers import MIXING_GRID, _forest

__all__ = ["MISSING_METHODS", "_incomplete_methods", "remove_labels"]

#: The methods of the missing-labels protocol (``--missing``): they learn from incomplete
#: rankings.
MISSING_METHODS = ("ECRM-Kendall", "ECRM-forest", "ECRM-mixed")


def remove_labels(R, fraction: float, rng, *, keep: int = 2) -> np.ndarray:
    """Incomplete copies of the rankings ``R`` (n, k; 0 = top): each label removed with
    probability ``fraction``, at least ``keep`` labels left per row (removed labels put back
    at random until then); ranks ``-1`` for a removed label, ``0 .. m-1`` for the ``m`` left,
    in their order.

    >>> remove_labels(np.array([[2, 0, 1, 3]]), 0.5, np.random.default_rng(0)).tolist()
    [[1, 0, -1, -1]]
    """
    R = np.asarray(R)
    n, k = R.shape
    drop = rng.random((n, k)) < fraction
    short = np.maximum(keep - (k - drop.sum(axis=1)), 0)  # labels to put back per row
    for i in np.flatnonzero(short):
        drop[i, rng.choice(np.flatnonzero(drop[i]), short[i], replace=False)] = False
    order = np.argsort(np.argsort(np.where(drop, k + R, R), axis=1), axis=1)
    return np.where(drop, -1, order)


def _incomplete_methods(Xtr, Rtr, Xte, *, gammas, methods, fit_seed, memory,
                        extend_grid) -> tuple[dict, dict]:
    """The ``MISSING_METHODS`` on incomplete training rankings ``Rtr`` (-1: missing):
    (test rankings, parameters) and CPU seconds per method."""
    from ecrm import ECRMCV
    from ecrm.experiments._ranking_kernel import KERNEL_SUBSAMPLE, _fit, _kernel_candidates
    from ecrm.losses.kendall import KendallLoss
    from ecrm.selection import LeaveOneOutSearch
    from ecrm.spaces.permutations import PermutationSpace
    from ecrm.weights.mixture import choose_mixture

    space, loss = PermutationSpace(Rtr.shape[1]), KendallLoss()
    Ytr = space.from_ranks(Rtr)
    results, seconds = {}, {}
    honest: dict = {}
    if {"ECRM-Kendall", "ECRM-mixed"} & set(methods):
        t0 = time.process_time()
        search = LeaveOneOutSearch(
            fit_intercept="auto", kernel_grid=_kernel_candidates(gammas), memory=memory,
            kernel_subsample=KERNEL_SUBSAMPLE, extend_grid=extend_grid,
            loo_samples=kendall_loo_rows(*Rtr.shape))
        model = _fit(honest, "ECRM-Kendall", ECRMCV(
            loss, space, alphas=ALPHAS, search=search, random_state=fit_seed), Xtr, Ytr)
        results["ECRM-Kendall"] = (space.to_ranks(model.predict(Xte)), {
            **model.kernel_params_, "alpha": model.alpha_,
            "fit_intercept": model.fit_intercept_})
        seconds["ECRM-Kendall"] = time.process_time() - t0
    if {"ECRM-forest", "ECRM-mixed"} & set(methods):
        t0 = time.process_time()
        results["ECRM-forest"] = _forest(Xtr, Rtr, Xte, fit_seed, honest)
        seconds["ECRM-forest"] = time.process_time() - t0
    if "ECRM-mixed" in methods:
        t0 = time.process_time()
        (model, rows, K), forest = honest["ECRM-Kendall"], honest["forest"]
        psi = loss.psi(Ytr)
        F = np.full(psi.shape, np.nan)
        F[rows] = forest.weighted_sum(psi, rows=rows)
        choice = choose_mixture((rows, K), F, Ytr, MIXING_GRID, loss=loss, output_space=space)
        share = choice.mixture
        C = share * model.predict_costs(Xte) + (1.0 - share) * forest.weighted_sum(psi, Xte)
        results["ECRM-mixed"] = (space.to_ranks(space.minimize(C, loss.cost_form)), {
            "mixture": share, "honest_discordant": float(np.min(choice.mean_losses))})
        seconds["ECRM-mixed"] = time.process_time() - t0
    return results, seconds
