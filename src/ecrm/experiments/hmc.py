"""``ecrm reproduce hmc``: the paper's Table 1 (hierarchical multilabel classification).

Protocol (Goh & Jaillet 2016, Section 6.1): linear kernel for enron and the genomics data
sets, RBF for the image data sets; every hyper-parameter chosen on the training part only
(ECRM: alpha, the intercept and gamma by :class:`ecrm.ECRMCV`'s exact leave-one-out task
loss; BR-SVM: C and gamma by 3-fold cross-validation). ECRM is trained once for the Hamming
loss and once for the hierarchical loss, and each model is scored on the loss it was trained
for. Beyond the paper, a second ECRM row also chooses the kernel (linear or RBF and gamma) by
the exact leave-one-out task loss, and "ECRM (scores)" is chosen for its label scores: the
kernel (linear, RBF or Laplacian over a range of gammas), alpha and the intercept by the exact
leave-one-out micro AU(PRC) of the scores (every other alpha, then the neighbours of the
best); for an RBF or Laplacian choice, per-feature length-scales learned by the gradient of
the exact leave-one-out squared error on half of the training points replace the single
gamma if that raises the same criterion on the other half by more than one standard error;
the scores are then calibrated per label on the same leave-one-out scores by isotonic
regression, Platt's logistic map or not at all, whichever scores best when cross-fitted
(training data only). "ECRM forest (scores)" estimates the risk with forest weights
(:class:`ecrm.ForestECRMCV`, settings by the out-of-bag micro AU(PRC)), and "ECRM selected"
is whichever of the two scores models has the better honest micro AU(PRC) on the training
set (exact leave-one-out against out of bag); "ECRM mixed" mixes the two risks, the kernel's
share chosen by the micro AU(PRC) of the mixed honest scores (:mod:`ecrm.weights.mixture`), and
"ECRM stacked" stacks them (:mod:`ecrm.weights.stack`): the same choice guarded by a nested
honest check, with per-label shares where that check says they help.
"""

from __future__ import annotations

import functools
import json
import sys
import time

import numpy as np

from ecrm.commands._options import (
    choices,
    directory_option,
    names_option,
    output_file_option,
    parameter_option,
)
from ecrm.experiments.cache import InMemoryCache
from ecrm.model_files._atomic import write_text

__all__ = ["ALPHAS", "C_HMCNN_AUPRC", "C_HMCNN_EXCLUDE", "DEFAULT_DATASETS", "PAPER",
           "METHODS", "PAPER_KERNEL", "add_parser", "format_table", "run", "run_dataset"]

#: The paper's Table 1: (Hamming, hierarchical) test losses.
PAPER = {
    "enron": {"ECRM": (3.079, 0.194), "HM3N": (3.785, 0.212), "BR-SVM": (3.400, 0.196)},
    "imclef07a": {"ECRM": (2.689, 0.119), "HM3N": (3.053, 0.134), "BR-SVM": (2.933, 0.132)},
    "imclef07d": {"ECRM": (3.246, 0.246), "HM3N": (3.413, 0.247), "BR-SVM": (3.250, 0.253)},
    "pheno_FUN": {"ECRM": (8.811, 0.152), "HM3N": (8.833, 0.152), "BR-SVM": (8.878, 0.153)},
    "pheno_GO": {"ECRM": (4.315, 0.101), "BR-SVM": (4.329, 0.101)},
    "spo_FUN": {"ECRM": (8.806, 0.137), "HM3N": (8.845, 0.137), "BR-SVM": (8.867, 0.138)},
    "spo_GO": {"ECRM": (4.530, 0.083), "BR-SVM": (4.621, 0.085)},
}
#: Published C-HMCNN micro AU(PRC) (Giunchiglia & Lukasiewicz, NeurIPS 2020).
C_HMCNN_AUPRC = {"enron": 0.756, "imclef07a": 0.956, "imclef07d": 0.927, "spo_FUN": 0.215,
                 "spo_GO": 0.382}
#: C-HMCNN leaves these always-on Gene Ontology aspect nodes out of its evaluation.
C_HMCNN_EXCLUDE = ("root", "GO0003674", "GO0005575", "GO0008150")
#: The paper's kernel per data set (Section 6.1); any other data set gets the linear kernel.
PAPER_KERNEL = {"imclef07a": "rbf", "imclef07d": "rbf"}
ALPHAS = np.logspace(-8, 2, 21)
METHODS = ("ecrm", "ecrm-scores", "forest-scores", "br-svm", "ssvm")
#: The methods run when ``--methods`` is not given (the SSVM is opt-in: it is the slowest).
DEFAULT_METHODS = ("ecrm", "ecrm-scores", "br-svm")
#: The structured SVM's C grid, in units of 1 / (mean diagonal of its kernel, intercept
#: included), its passes when tuning (3-fold, at most 2,000 points) and when refitting, and
#: its relative duality gap.
SSVM_CS = (0.01, 0.1, 1.0, 10.0)
SSVM_PASSES = (20, 100)
SSVM_TOL = 1e-2
#: On the Gene Ontology DAGs (3,000-4,000 labels) the protocol is cut to keep the run short: the
#: C search on at most 500 training points with 10 passes, the refit with at most 20.
SSVM_DAG_POINTS = 500
SSVM_DAG_PASSES = (10, 20)
#: "ECRM forest (scores)": trees of :class:`ecrm.ForestECRMCV`, chosen by the out-of-bag micro
#: AU(PRC) of its label scores.
FOREST_TREES = 100
#: "ECRM mixed (scores)": the kernel's shares of the mixed risk (0: the forest alone).
MIXING_GRID = 11
#: Kernel settings searched for the label scores, as multiples of 1 / (number of features).
SCORE_GAMMAS = {"rbf": (0.1, 0.25, 0.5, 1.0, 2.0, 4.0), "laplacian": (0.1, 0.3, 1.0, 3.0, 10.0)}
#: "ECRM (scores)": the calibration (chosen among none, isotonic and Platt by the 5-fold
#: cross-fitted leave-one-out micro AU(PRC) on the training set) and the alpha search.
SCORE_CALIBRATION = "auto"
SCORE_ALPHA_SEARCH = "coarse-to-fine"
#: The per-feature length-scales tried for the label scores: L-BFGS-B steps, and the most
#: training points they are learned on (at most half; the others judge them).
SCORE_LENGTH_SCALE_STEPS = 40
SCORE_LENGTH_SCALE_POINTS = 1500
DEFAULT_DATASETS = ("enron", "imclef07a", "imclef07d", "pheno_FUN", "spo_FUN", "pheno_GO",
                    "spo_GO")


def _rbf_gammas(n_features: int) -> list[float]:
    return [0.5 / n_features, 1.0 / n_features, 2.0 / n_features]


def _advance(progress, note: str) -> None:
    if progress is not None:
        progress.set_postfix_str(note, refresh=False)
        progress.update()


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _length_scales(isotropic, Xtr, Ytr, score_search, metric, random_state) -> dict | None:
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


def run_dataset(data, methods, progress=None, *, random_state=0, solver="auto",
                n_components=None, center_selection="uniform") -> dict:
    """Fit and score every method on one data set.

    Parameters
    ----------
    data : sklearn.utils.Bunch
        A data set as returned by :func:`ecrm.datasets.load_hmc`.
    methods : collection of {"ecrm", "ecrm-scores", "br-svm"}
    progress : tqdm bar, optional
        Advanced by one step per fitted model (four ECRM fits, one BR-SVM fit), with a note
        on the step just done.
    random_state : int, default=0
        Seed of ECRMCV's leave-one-out subsample, the Nystrom centres and BR-SVM's tuning
        subsample.
    solver, n_components, center_selection
        ECRMCV's solver settings (:class:`ecrm.ECRMCV`): ``solver="nystrom"`` reruns Table 1
        low-rank (a linear-kernel data set then uses ``"primal"``, exact and never m x m).

    Returns
    -------
    info : dict
        ``dataset``, ``m``, ``n``, ``p``, ``d``, ``tree``, ``trivial`` (losses of the empty
        and the majority label sets) and ``rows`` (one dict per fitted model).
    """
    from ecrm import ECRMCV
    from ecrm.baselines import BRSVM
    from ecrm.datasets import HMCPreprocessor
    from ecrm.losses import HammingLoss, HierarchicalLoss
    from ecrm.reporting.metrics import micro_auprc
    from ecrm.selection import LeaveOneOutSearch

    name, h = data.name, data.hierarchy
    pre = HMCPreprocessor(data.categories).fit(data.train.X)
    Xtr, Xte = pre.transform(data.train.X), pre.transform(data.test.X)
    Ytr, Yte = data.train.Y, data.test.Y
    losses = {"hamming": HammingLoss(), "hierarchical": HierarchicalLoss(h)}
    kernel_scores = None  # "ECRM (scores)"'s model and test inputs, for the mixed row

    def scores(Y_pred, S):
        row = {key: float(np.mean(loss(Y_pred, Yte))) for key, loss in losses.items()}
        row["auprc"] = micro_auprc(Yte, S, labels=h.labels, exclude=C_HMCNN_EXCLUDE)
        row["auprc_all"] = micro_auprc(Yte, S)
        return row

    info = {"dataset": name, "m": Xtr.shape[0], "n": Xte.shape[0], "p": Xtr.shape[1],
            "d": h.n_labels, "tree": h.is_tree}
    majority = h.close(np.tile(Ytr.mean(axis=0) > 0.5, (len(Yte), 1)))
    info["trivial"] = {
        "empty label set": {k: float(np.mean(f(np.zeros_like(Yte), Yte)))
                            for k, f in losses.items()},
        "majority labels": {k: float(np.mean(f(majority, Yte))) for k, f in losses.items()},
    }
    rows = []
    kernel = PAPER_KERNEL.get(name, "linear")
    gammas = _rbf_gammas(Xtr.shape[1])
    grids = {"paper": {"kernel": [kernel]} if kernel == "linear" else
             {"kernel": ["rbf"], "gamma": gammas},
             "kernel-loo": [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": gammas}]}
    memory = InMemoryCache()
    if "ecrm" in methods:
        for protocol, grid in grids.items():
            for trained_for, loss in losses.items():
                # The DAG hierarchical loss needs a MILP per point: average its exact
                # leave-one-out loss over 300 random training points (150 when choosing
                # among four kernels).
                milp = trained_for == "hierarchical" and not h.is_tree
                loo_samples = (300 if protocol == "paper" else 150) if milp else None
                search = LeaveOneOutSearch(fit_intercept="auto", kernel_grid=grid,
                                           memory=memory, kernel_subsample=1500,
                                           loo_samples=loo_samples)
                est = ECRMCV(loss, h, alphas=ALPHAS, search=search, random_state=random_state,
                             **_solver_settings(solver, grid, n_components, center_selection,
                                                len(Xtr)))
                _, fit_s = _timed(lambda est=est, loss=loss: est.fit(Xtr, Ytr))
                P, pred_s = _timed(lambda est=est: est.predict(Xte))
                params = {k: v for k, v in est.kernel_params_.items()
                          if k == "kernel" or (k == "gamma" and v is not None
                                               and est.kernel_params_["kernel"] == "rbf")}
                params.update(alpha=est.alpha_, fit_intercept=est.fit_intercept_)
                solver_name = getattr(est.solver, "name", est.solver)
                if solver_name != "auto":
                    params.update(solver=solver_name)
                rows.append({"dataset": name, "method": "ECRM", "protocol": protocol,
                             "trained_for": trained_for, **scores(P, est.predict_scores(Xte)),
                             "fit_seconds": fit_s, "predict_seconds_per_instance":
                             pred_s / len(Xte), "params": params})
                _advance(progress, f"{name}: ECRM ({protocol}) for the {trained_for} "
                         f"loss, {params}")
    if "ecrm-scores" in methods:
        # Chosen for the label scores: kernel, alpha and intercept by the exact leave-one-out
        # micro AU(PRC) of the scores on the training set (C-HMCNN's convention), then
        # per-feature length-scales for the chosen kernel family, kept if they win on the
        # training points they were not learned on, then a calibration per label on the same
        # leave-one-out scores.
        p = Xtr.shape[1]
        grid = [{"kernel": ["linear"]}] + [{"kernel": [k], "gamma": [g / p for g in gs]}
                                           for k, gs in SCORE_GAMMAS.items()]
        metric = functools.partial(micro_auprc, labels=h.labels, exclude=C_HMCNN_EXCLUDE)

        def score_search(kernel_grid):
            search = LeaveOneOutSearch(fit_intercept="auto", kernel_grid=kernel_grid,
                                       memory=memory, kernel_subsample=1500,
                                       calibration=SCORE_CALIBRATION,
                                       alpha_search=SCORE_ALPHA_SEARCH)
            return ECRMCV(HammingLoss(), h, alphas=ALPHAS, scoring=metric, search=search,
                          random_state=random_state)

        t0 = time.perf_counter()
        est = score_search(grid).fit(Xtr, Ytr)
        params = {k: v for k, v in est.kernel_params_.items()
                  if k == "kernel" or (k == "gamma" and est.kernel_params_["kernel"] != "linear")}
        Xte_scores = Xte
        scaled = _length_scales(est, Xtr, Ytr, score_search, metric, random_state)
        if scaled is not None:
            params["length_scales"] = scaled["choice"]
            if scaled["choice"]["kept"]:
                est, Xte_scores = scaled["estimator"], scaled["transform"](Xte)
                # gamma now multiplies every learned scale: reported with them
                del params["gamma"]
                params["length_scales"]["gamma_times_scales"] = est.kernel_params_["gamma"]
        fit_s = time.perf_counter() - t0
        P, pred_s = _timed(lambda: est.predict(Xte_scores))
        params.update(alpha=est.alpha_, fit_intercept=est.fit_intercept_,
                      calibration=est.calibration_ or "none")
        params.update({f"cv_{k}": v for k, v in (est.calibration_results_ or {}).items()})
        params["loo_auprc"] = est.best_score_  # the honest criterion of the selected row
        rows.append({"dataset": name, "method": "ECRM", "protocol": "scores",
                     "trained_for": "hamming", **scores(P, est.predict_scores(Xte_scores)),
                     "fit_seconds": fit_s, "predict_seconds_per_instance": pred_s / len(Xte),
                     "params": params})
        _advance(progress, f"{name}: ECRM (scores) {params}")
        kernel_scores = (est, Xte_scores)
    if "forest-scores" in methods:
        rows.extend(_forest_scores(name, h, Xtr, Ytr, Xte, rows, scores, random_state,
                                   kernel_scores))
        _advance(progress, f"{name}: ECRM forest (scores) {rows[-1]['params']}")
    if "br-svm" in methods:
        model = BRSVM(h, kernel=kernel, gammas=gammas if kernel == "rbf" else None,
                      Cs=(0.1, 1.0, 10.0) if kernel == "rbf" else (0.01, 0.1, 1.0, 10.0),
                      random_state=random_state)
        _, fit_s = _timed(lambda: model.fit(Xtr, Ytr))
        P, pred_s = _timed(lambda: model.predict(Xte))
        rows.append({"dataset": name, "method": "BR-SVM", "protocol": "paper",
                     "trained_for": None, **scores(P, model.decision_function(Xte)),
                     "fit_seconds": fit_s, "predict_seconds_per_instance": pred_s / len(Xte),
                     "params": {"kernel": kernel, **model.best_params_}})
        _advance(progress, f"{name}: BR-SVM {model.best_params_}")
    if "ssvm" in methods:
        for trained_for, loss in losses.items():
            model, params = _tuned_ssvm(loss, h, Xtr, Ytr, kernel, random_state)
            _, fit_s = _timed(lambda model=model: model.fit(Xtr, Ytr))
            P, pred_s = _timed(lambda model=model: model.predict(Xte))
            params.update(passes=model.n_iter_, gap=model.duality_gap_
                          / model.primal_objective_)
            label_scores = model.decision_function(Xte)[:, :h.n_labels]
            rows.append({"dataset": name, "method": "SSVM", "protocol": "paper",
                         "trained_for": trained_for, **scores(P, label_scores),
                         "fit_seconds": fit_s, "predict_seconds_per_instance":
                         pred_s / len(Xte), "params": params})
            _advance(progress, f"{name}: SSVM for the {trained_for} loss, {params}")
    info["rows"] = rows
    return info


def _forest_scores(name, h, Xtr, Ytr, Xte, rows, scores, random_state,
                   kernel_scores=None) -> list[dict]:
    """"ECRM forest (scores)": :class:`ecrm.ForestECRMCV` (Hamming loss) with its settings by
    the out-of-bag micro AU(PRC) of its label scores; and, when "ECRM (scores)" ran
    (``kernel_scores``: its model and test inputs), the "selected (scores)" row: whichever of
    the two has the better honest micro AU(PRC) on the training set (exact leave-one-out
    against out of bag), the "mixed (scores)" row (:func:`_mixed_scores`) and the "stacked
    (scores)" row (:mod:`._hmc_stack`)."""
    from ecrm import ForestECRMCV
    from ecrm.experiments._hmc_stack import stacked_scores
    from ecrm.losses import HammingLoss
    from ecrm.reporting.metrics import micro_auprc

    metric = functools.partial(micro_auprc, labels=h.labels, exclude=C_HMCNN_EXCLUDE)
    est = ForestECRMCV(HammingLoss(), h, scoring=metric, n_estimators=FOREST_TREES,
                       random_state=random_state)
    _, fit_s = _timed(lambda: est.fit(Xtr, Ytr))
    P, pred_s = _timed(lambda: est.predict(Xte))
    forest = {"dataset": name, "method": "ECRM forest", "protocol": "scores",
              "trained_for": "hamming", **scores(P, est.predict_scores(Xte)),
              "fit_seconds": fit_s, "predict_seconds_per_instance": pred_s / len(Xte),
              "params": {**est.best_params_, "oob_auprc": est.best_score_}}
    kernel = next((r for r in rows if r["method"] == "ECRM" and r["protocol"] == "scores"),
                  None)
    if kernel is None:
        return [forest]
    pick = forest if forest["params"]["oob_auprc"] > kernel["params"]["loo_auprc"] else kernel
    family = "forest" if pick is forest else "kernel"
    selected = {**pick, "method": "ECRM selected", "params": {"family": family,
                                                                **pick["params"]}}
    if kernel_scores is None:
        return [forest, selected]
    t0 = time.perf_counter()
    kernel_est, Xte_kernel = kernel_scores
    P, S, params = _mixed_scores(kernel_est, Xte_kernel, est, Ytr, Xte, metric)
    mixed = {"dataset": name, "method": "ECRM mixed", "protocol": "scores",
             "trained_for": "hamming", **scores(P, S),
             "fit_seconds": kernel["fit_seconds"] + fit_s + time.perf_counter() - t0,
             "predict_seconds_per_instance": kernel["predict_seconds_per_instance"]
             + forest["predict_seconds_per_instance"], "params": params}
    t0 = time.perf_counter()
    P, S, params = stacked_scores(kernel_est, Xte_kernel, est, Ytr, Xte, metric, random_state)
    stacked = {**mixed, "method": "ECRM stacked", **scores(P, S), "params": params,
               "fit_seconds": mixed["fit_seconds"] + time.perf_counter() - t0}
    return [forest, selected, mixed, stacked]


def _mixed_scores(kernel, Xte_kernel, forest, Ytr, Xte, metric):
    """"ECRM mixed (scores)": the kernel scores model's and the forest's risks mixed
    (:mod:`ecrm.weights.mixture`), the kernel's share in ``MIXING_GRID`` by the micro AU(PRC) of the
    mixed honest label scores: the kernel's exact leave-one-out scores (through its
    calibration, which was chosen on them) and the forest's out-of-bag scores. Test
    predictions, test label scores and the parameters."""
    from ecrm.weights.mixture import choose_mixture

    S = kernel.loo_scores_
    if kernel.score_calibration_ is not None:  # the map its test scores go through
        S = kernel.output_space.consistent_scores(kernel.score_calibration_.transform(S))
    choice = choose_mixture((kernel.loo_rows_, S), forest.oob_scores(), Ytr, MIXING_GRID,
                            metric=metric)
    share = choice.mixture
    mixed_scores = (share * kernel.predict_scores(Xte_kernel)
                    + (1 - share) * forest.predict_scores(Xte))
    costs = share * kernel.predict_costs(Xte_kernel) + (1 - share) * forest.predict_costs(Xte)
    P = forest.output_space.minimize(costs, forest.loss.cost_form)
    return P, mixed_scores, {"mixture": share, "honest_auprc": float(choice.scores.max()),
                             "kernel_auprc": float(choice.scores[-1]),
                             "forest_auprc": float(choice.scores[0])}


def _tuned_ssvm(loss, h, X, Y, kernel: str, random_state):
    """A :class:`ecrm.StructuredSVM` with C chosen by 3-fold cross-validation of the task loss
    on at most 2,000 random training points (as BR-SVM's C), and its parameters; on a DAG
    the cut protocol of ``SSVM_DAG_POINTS`` / ``SSVM_DAG_PASSES``."""
    import warnings

    from scipy import sparse
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import GridSearchCV, KFold

    from ecrm import StructuredSVM

    dag = not h.is_tree
    rng = np.random.default_rng(random_state)
    cap = SSVM_DAG_POINTS if dag else 2000
    sub = np.sort(rng.choice(len(X), min(len(X), cap), replace=False))
    gamma = 1.0 / X.shape[1] if kernel == "rbf" else None
    Xs = X[sub]
    if kernel == "rbf":
        diag = np.ones(len(sub))
    elif sparse.issparse(Xs):
        diag = np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel()
    else:
        diag = np.einsum("ij,ij->i", Xs, Xs)
    diag = 2.0 * diag  # the intercept adds the mean diagonal to the kernel
    passes = SSVM_DAG_PASSES if dag else SSVM_PASSES
    Cs = [c / float(diag.mean()) for c in SSVM_CS]
    base = StructuredSVM(loss, h, kernel=kernel, gamma=gamma, tol=SSVM_TOL,
                         max_iter=passes[0], random_state=random_state)
    search = GridSearchCV(base, {"C": Cs}, refit=False,  # the caller refits, on all points
                          cv=KFold(3, shuffle=True, random_state=random_state))
    with warnings.catch_warnings():  # the search's pass budget is the protocol's, by design
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(X[sub], Y[sub])
    C = search.best_params_["C"]
    params = {"kernel": kernel, "C": C}
    return base.set_params(C=C, max_iter=passes[1]), params


def _solver_settings(solver: str, grid, n_components, center_selection, m: int) -> dict:
    """ECRMCV's solver keywords for one kernel grid (the primal for an all-linear grid)."""
    linear = all(k == "linear" for g in (grid if isinstance(grid, list) else [grid])
                 for k in g["kernel"])
    from ecrm.weights.kernel._solvers.solver import NystromSolver, PrimalSolver

    if solver == NystromSolver.name and linear:
        solver = PrimalSolver.name
    if solver == NystromSolver.name:
        M = None if n_components is None else min(n_components, m)
        return {"solver": NystromSolver(n_components=M, center_selection=center_selection)}
    return {"solver": solver, **({"kernel": "linear"} if solver == PrimalSolver.name else {})}


def format_table(results) -> str:
    """Table 1 beside the paper's numbers."""
    lines = []
    head = (f"  {'method':<20}{'trained for':<14}{'Hamming':>9}{'hier.':>9}{'AU(PRC)':>9}"
            f"{'(all)':>7}{'fit s':>9}{'ms/inst':>9}  params")
    for info in results:
        name = info["dataset"]
        lines.append(f"{name}: m={info['m']} train, n={info['n']} test, p={info['p']} "
                     f"features, d={info['d']} labels ({'tree' if info['tree'] else 'DAG'})")
        lines.append(head)
        for r in info["rows"]:
            label = r["method"] + {"kernel-loo": " (kernel LOO)",
                                   "scores": " (scores)"}.get(r["protocol"], "")
            params = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in r["params"].items())
            lines.append(
                f"  {label:<20}{r['trained_for'] or '-':<14}{r['hamming']:>9.3f}"
                f"{r['hierarchical']:>9.4f}{r['auprc']:>9.3f}{r['auprc_all']:>7.3f}"
                f"{r['fit_seconds']:>9.1f}{1e3 * r['predict_seconds_per_instance']:>9.2f}"
                f"  {params}")
        for label, values in info["trivial"].items():
            lines.append(f"  {label:<20}{'-':<14}{values['hamming']:>9.3f}"
                         f"{values['hierarchical']:>9.4f}")
        paper = PAPER.get(name, {})
        ref = ", ".join(f"{m} {hm:.3f} / {hr:.3f}" for m, (hm, hr) in paper.items())
        if name in C_HMCNN_AUPRC:
            ref += f"; C-HMCNN AU(PRC) {C_HMCNN_AUPRC[name]:.3f}"
        if ref:
            lines.append(f"  paper (Hamming / hier.): {ref}")
        lines.append("")
    return "\n".join(lines)


def _fail(message: str) -> int:
    print(f"ecrm reproduce hmc: error: {message}", file=sys.stderr)
    return 2


def run(args) -> int:
    """Run ``ecrm reproduce hmc`` from parsed arguments.

    The ``--json`` path, the data directory and the data set names are checked before any
    work; a missing or malformed file stops the run with status 2 and the reason on standard
    error.
    """
    from ecrm.commands._files import OutputError, check_output
    from ecrm.datasets import ArffError, list_hmc, load_hmc
    from ecrm.experiments.progress import progress_bar

    try:  # the output first, as ecrm fit checks -o
        if args.json:
            check_output(args.json, option="--json")
    except OutputError as exc:
        return _fail(str(exc))
    try:
        available = list_hmc(args.data_dir)  # None: $ECRM_DATA
    except FileNotFoundError as err:
        return _fail(str(err))
    if args.datasets:
        names = args.datasets
        unknown = [n for n in names if n not in available]
        if unknown:
            return _fail(f"no data set {', '.join(map(repr, unknown))} in "
                         f"{args.data_dir or '$ECRM_DATA'}; available: "
                         f"{', '.join(available) or 'none'}")
    else:
        names = [n for n in DEFAULT_DATASETS if n in available] or available
        if not names:
            return _fail(f"no data sets in {args.data_dir or '$ECRM_DATA'}")
    methods = args.methods
    steps = len(names) * (4 * ("ecrm" in methods) + ("ecrm-scores" in methods)
                          + ("forest-scores" in methods)
                          + ("br-svm" in methods) + 2 * ("ssvm" in methods))
    results = []
    with progress_bar(steps, "Table 1", enabled=not args.quiet) as bar:
        for name in names:
            try:
                data = load_hmc(name, args.data_dir)
            except (OSError, ArffError) as err:
                return _fail(str(err))
            results.append(run_dataset(data, methods, bar, solver=args.solver,
                                       n_components=args.n_components,
                                       center_selection=args.center_selection))
    print(format_table(results))
    if args.json:
        write_text(args.json, json.dumps([row for info in results for row in info["rows"]],
                                         indent=1))
    return 0


def add_parser(subparsers) -> None:
    """Add the ``hmc`` sub-command to ``ecrm reproduce``."""
    parser = subparsers.add_parser(
        "hmc", help="the paper's Table 1: ECRM and BR-SVM on the Clus HMC data sets",
        description=__doc__.split("\n\n")[1])
    parser.add_argument("--data-dir", type=directory_option("--data-dir"),
                        help="directory of the <name>.<split>.arff[.gz] files "
                        "(default: $ECRM_DATA)")
    parser.add_argument("--datasets", type=names_option("--datasets"),
                        help="comma-separated names (default: the paper's seven, or every "
                        "data set found)")
    parser.add_argument("--methods", type=names_option("--methods", METHODS, lower=True),
                        default=",".join(DEFAULT_METHODS),
                        help="comma-separated: ecrm, ecrm-scores, forest-scores (with "
                        "ecrm-scores also the honestly selected, mixed and stacked rows), br-svm, "
                        "ssvm "
                        "(default: "
                        + ", ".join(DEFAULT_METHODS) + ")")
    parser.add_argument("--json", type=output_file_option("--json"),
                        help="write the rows as JSON to this file")
    from ecrm.weights.kernel._solvers.solver import PrimalSolver

    # not the primal: linear-kernel fits use it by themselves
    parser.add_argument("--solver", choices=[s for s in choices("solver")
                                             if s != PrimalSolver.name],
                        default="auto",
                        help="ECRM's solver: auto (the exact dual while it fits memory), "
                        "dual, or nystrom (low rank; linear-kernel fits use the exact primal)")
    parser.add_argument("--n-components", type=parameter_option("n_components", "--n-components"),
                        help="Nystrom centres M (default: min(m, 1000); at most m)")
    parser.add_argument("--center-selection", choices=choices("center_selection"),
                        default="uniform", help="how the Nystrom centres are drawn")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)
