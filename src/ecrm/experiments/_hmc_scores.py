""""ECRM (scores)" of ``ecrm reproduce hmc`` (described there): the model chosen for its
label scores, its kernels over ``SCORE_GAMMAS``, its length-scales by :func:`length_scales`.
"""

from __future__ import annotations

import time

import numpy as np

from ecrm.experiments._hmc_rows import timed

__all__ = ["honest_scores", "scores_row"]

#: Kernel settings searched for the label scores, as multiples of 1 / (number of features).
SCORE_GAMMAS = {"rbf": (0.1, 0.25, 0.5, 1.0, 2.0, 4.0), "laplacian": (0.1, 0.3, 1.0, 3.0, 10.0)}
#: The calibration (chosen among none, isotonic and Platt by the 5-fold cross-fitted
#: leave-one-out micro AU(PRC) on the training set) and the alpha search.
SCORE_CALIBRATION = "auto"
SCORE_ALPHA_SEARCH = "coarse-to-fine"
#: The per-feature length-scales tried for the label scores: L-BFGS-B steps, and the most
#: training points they are learned on (at most half; the others judge them).
SCORE_LENGTH_SCALE_STEPS = 40
SCORE_LENGTH_SCALE_POINTS = 1500
#: Folds of the cross-fitted calibration of the honest scores (those of the calibration's choice).
CALIBRATION_FOLDS = 5


def scores_row(rows, Xtr, Ytr, Xte, *, alphas, metric, memory, random_state):
    """The "ECRM (scores)" row of the :class:`~._hmc_rows.TableRows` ``rows``, its fitted
    model, the test inputs that model takes (scaled when length-scales were kept) and its
    test label scores."""
    from ecrm import ECRMCV
    from ecrm.losses import HammingLoss
    from ecrm.selection import LeaveOneOutSearch

    h, p = rows.hierarchy, Xtr.shape[1]
    grid = [{"kernel": ["linear"]}] + [{"kernel": [k], "gamma": [g / p for g in gs]}
                                       for k, gs in SCORE_GAMMAS.items()]

    def score_search(kernel_grid):
        search = LeaveOneOutSearch(fit_intercept="auto", kernel_grid=kernel_grid,
                                   memory=memory, kernel_subsample=1500,
                                   calibration=SCORE_CALIBRATION,
                                   alpha_search=SCORE_ALPHA_SEARCH)
        return ECRMCV(HammingLoss(), h, alphas=alphas, scoring=metric, search=search,
                      random_state=random_state)

    t0 = time.perf_counter()
    est = score_search(grid).fit(Xtr, Ytr)
    params = {k: v for k, v in est.kernel_params_.items()
              if k == "kernel" or (k == "gamma" and est.kernel_params_["kernel"] != "linear")}
    Xte_scores = Xte
    scaled = length_scales(est, Xtr, Ytr, score_search, metric, random_state)
    if scaled is not None:
        params["length_scales"] = scaled["choice"]
        if scaled["choice"]["kept"]:
            est, Xte_scores = scaled["estimator"], scaled["transform"](Xte)
            # gamma now multiplies every learned scale: reported with them
            del params["gamma"]
            params["length_scales"]["gamma_times_scales"] = est.kernel_params_["gamma"]
    fit_s = time.perf_counter() - t0
    P, pred_s = timed(lambda: est.predict(Xte_scores))
    params.update(alpha=est.alpha_, fit_intercept=est.fit_intercept_,
                  calibration=est.calibration_ or "none")
    params.update({f"cv_{k}": v for k, v in (est.calibration_results_ or {}).items()})
    params["loo_auprc"] = est.best_score_  # the honest criterion of the selected row
    S = est.predict_scores(Xte_scores)
    row = rows.row("ECRM", "scores", "hamming", P, S, fit_seconds=fit_s,
                   predict_seconds=pred_s, params=params)
    return row, est, Xte_scores, S


def honest_scores(model, random_state) -> np.ndarray:
    """The fitted scores ``model``'s exact leave-one-out label scores of its ``loo_rows_``,
    through its calibration (the kind its test scores go through) cross-fitted over
    ``CALIBRATION_FOLDS`` random folds of those rows
    (:func:`ecrm.selection.calibration.cross_fitted`): the calibration fitted on all of them
    would flatter the very scores it was fitted on."""
    from sklearn.utils import check_random_state

    from ecrm.selection.calibration import cross_fitted

    S = model.loo_scores_
    if model.calibration_ is None:
        return S
    Y = np.asarray(model.Y_fit_, dtype=float)[model.loo_rows_]
    folds = check_random_state(random_state).permutation(len(S)) % CALIBRATION_FOLDS
    return cross_fitted(model.calibration_, S, Y, folds, model.output_space.consistent_scores)


def length_scales(isotropic, Xtr, Ytr, score_search, metric, random_state) -> dict | None:
    """Per-feature length-scales for the kernel family the isotropic search chose (none for
    the linear kernel), judged on points they were not learned on.

    The scales are learned by the exact leave-one-out squared error of the labels
    (:class:`ecrm.weights.kernel.length_scales.LeaveOneOutLengthScales`, from the chosen gamma and
    alpha) on a random half of the training points (at most 1,500); then gamma in {1/2, 1, 2} times
    them, alpha and the intercept are chosen by the same leave-one-out micro AU(PRC) as the
    isotropic model. The two models' exact leave-one-out scores are compared on the *other* points
    only (p scales fitted to some points would flatter the leave-one-out scores of those very
    points): the scales are kept if their gain there exceeds one standard error of the gain over 5
    random folds of those points (training data only).
    """
    import warnings

    from ecrm.exceptions import FeatureScaleWarning
    from ecrm.selection.calibration import fold_gains, standard_error
    from ecrm.weights.kernel.length_scales import LeaveOneOutLengthScales

    kernel = isotropic.kernel_params_["kernel"]
    if kernel not in ("rbf", "laplacian"):
        return None
    m = len(Ytr)
    rng = np.random.default_rng(random_state)
    learn = np.zeros(m, dtype=bool)
    learn[rng.choice(m, min(SCORE_LENGTH_SCALE_POINTS, m // 2), replace=False)] = True
    ard = LeaveOneOutLengthScales(kernel, gamma=isotropic.kernel_params_["gamma"],
                                  alpha=isotropic.alpha_, subsample=None,
                                  max_iter=SCORE_LENGTH_SCALE_STEPS).fit(Xtr[learn], Ytr[learn])
    with warnings.catch_warnings():  # the scales were learned: their spread is intended
        warnings.simplefilter("ignore", FeatureScaleWarning)
        scaled = score_search({"kernel": [kernel], "gamma": [0.5, 1.0, 2.0]}).fit(
            ard.transform(Xtr), Ytr)
    rows = isotropic.loo_rows_
    if not np.array_equal(rows, scaled.loo_rows_):  # the same seed and m: never
        raise RuntimeError("the two searches scored different leave-one-out rows")
    judged = ~learn[rows]
    Y, new, old = (np.asarray(Ytr)[rows][judged], scaled.loo_scores_[judged],
                   isotropic.loo_scores_[judged])
    gains = fold_gains(metric, Y, new, old, rng.permutation(len(Y)) % 5)
    gain, error = metric(Y, new) - metric(Y, old), standard_error(gains)
    ratio = ard.loo_error_ / ard.initial_loo_error_ if ard.initial_loo_error_ > 0 else 1.0
    return {"estimator": scaled, "transform": ard.transform,
            "choice": {"kept": bool(gain > error), "gain": round(gain, 5),
                       "standard_error": round(error, 5), "judged_on": int(judged.sum()),
                       "loo_error_ratio": round(ratio, 4), "steps": ard.n_iter_}}
