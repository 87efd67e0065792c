"""The forest rows of ``ecrm reproduce hmc`` (described there) and those that combine it with
"ECRM (scores)": selected, mixed (:func:`mixed_scores`) and stacked (:mod:`._hmc_stack`)."""

from __future__ import annotations

import time

from ecrm.experiments._hmc_rows import timed

__all__ = ["forest_rows"]

#: Trees of :class:`ecrm.ForestECRMCV`.
FOREST_TREES = 100
#: "ECRM mixed (scores)": the kernel's shares of the mixed risk (0: the forest alone).
MIXING_GRID = 11


def forest_rows(rows, Xtr, Ytr, Xte, metric, random_state, kernel=None) -> list[dict]:
    """The forest row of the :class:`~._hmc_rows.TableRows` ``rows``; with ``kernel``, the
    "ECRM (scores)" row, its fitted model and the test inputs it takes, also the selected,
    mixed and stacked rows."""
    from ecrm import ForestECRMCV
    from ecrm.experiments._hmc_stack import stacked_scores
    from ecrm.losses import HammingLoss

    est = ForestECRMCV(HammingLoss(), rows.hierarchy, scoring=metric, n_estimators=FOREST_TREES,
                       random_state=random_state)
    _, fit_s = timed(lambda: est.fit(Xtr, Ytr))
    P, pred_s = timed(lambda: est.predict(Xte))
    forest = rows.row("ECRM forest", "scores", "hamming", P, est.predict_scores(Xte),
                      fit_seconds=fit_s, predict_seconds=pred_s,
                      params={**est.best_params_, "oob_auprc": est.best_score_})
    if kernel is None:
        return [forest]
    kernel, kernel_est, Xte_kernel = kernel
    pick = forest if forest["params"]["oob_auprc"] > kernel["params"]["loo_auprc"] else kernel
    family = "forest" if pick is forest else "kernel"
    selected = {**pick, "method": "ECRM selected", "params": {"family": family,
                                                                **pick["params"]}}
    if pick is kernel and rows.reference is not None:  # the reference's own scores
        selected.update(auprc_gain=0.0, auprc_gain_std_error=0.0)
    t0 = time.perf_counter()
    P, S, params = mixed_scores(kernel_est, Xte_kernel, est, Ytr, Xte, metric, random_state)
    mixed = {**forest, "method": "ECRM mixed", **rows.scores(P, S),
             "fit_seconds": kernel["fit_seconds"] + fit_s + time.perf_counter() - t0,
             "predict_seconds_per_instance": kernel["predict_seconds_per_instance"]
             + forest["predict_seconds_per_instance"], "params": params}
    t0 = time.perf_counter()
    P, S, params = stacked_scores(kernel_est, Xte_kernel, est, Xtr, Ytr, Xte, metric,
                                    random_state)
    stacked = {**mixed, "method": "ECRM stacked", **rows.scores(P, S), "params": params,
               "fit_seconds": mixed["fit_seconds"] + time.perf_counter() - t0}
    return [forest, selected, mixed, stacked]


def mixed_scores(kernel, Xte_kernel, forest, Ytr, Xte, metric, random_state):
    """"ECRM mixed (scores)": the kernel scores model's and the forest's risks mixed
    (:mod:`ecrm.weights.mixture`), the kernel's share in ``MIXING_GRID`` by the micro AU(PRC) of the
    mixed honest label scores: the kernel's exact leave-one-out scores (through its
    calibration, cross-fitted: :func:`~._hmc_scores.honest_scores`) and the forest's out-of-bag
    scores. Test
    predictions, test label scores and the parameters."""
    from ecrm.experiments._hmc_scores import honest_scores
    from ecrm.weights.mixture import choose_mixture

    choice = choose_mixture((kernel.loo_rows_, honest_scores(kernel, random_state)),
                            forest.oob_scores(), Ytr, MIXING_GRID, metric=metric)
    share = choice.mixture
    mixed_scores = (share * kernel.predict_scores(Xte_kernel)
                    + (1 - share) * forest.predict_scores(Xte))
    costs = share * kernel.predict_costs(Xte_kernel) + (1 - share) * forest.predict_costs(Xte)
    P = forest.output_space.minimize(costs, forest.loss.cost_form)
    return P, mixed_scores, {"mixture": share, "honest_auprc": float(choice.scores.max()),
                             "kernel_auprc": float(choice.scores[-1]),
                             "forest_auprc": float(choice.scores[0])}
