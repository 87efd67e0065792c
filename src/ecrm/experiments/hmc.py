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
"ECRM stacked" stacks them with nearest-neighbour weights (:mod:`ecrm.weights.stack`, a third
member :class:`ecrm.NeighboursECRMCV` on the standardised features): the weights chosen by the
same criterion, guarded by a nested honest check against the mixed row's candidates, one share
for every label.

Each row of the ``--json`` file holds ``dataset``, ``method``, ``protocol``, ``trained_for``,
the test ``hamming`` and ``hierarchical`` losses, ``auprc`` (the micro AU(PRC) without the
labels C-HMCNN leaves out) and ``auprc_all`` (every label), ``fit_seconds``,
``predict_seconds_per_instance`` and ``params``. When "ECRM (scores)" ran, the other scores rows
(forest, selected, mixed, stacked) also hold ``auprc_gain``, their ``auprc`` minus that of "ECRM
(scores)" on the same test instances, and ``auprc_gain_std_error``, its paired bootstrap
standard error: 200 resamples of the test instances drawn with replacement
(seeded by ``random_state``), every instance with all its labels, each resample scoring both
rows (:func:`ecrm.reporting.metrics.paired_bootstrap_auprc`); the selected row, when it is the
kernel's, has a gain and an error of 0.
"""

from __future__ import annotations

import functools
import json
import sys

import numpy as np

from ecrm.commands._options import (
    choices,
    directory_option,
    names_option,
    output_file_option,
    parameter_option,
)
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
#: With the forest's scores the run gives the stacked scores row, at or above the kernel's
#: scores row on five of the seven shared files (below by 0.0006 and 0.00002 on the other two).
DEFAULT_METHODS = ("ecrm", "ecrm-scores", "forest-scores", "br-svm")
DEFAULT_DATASETS = ("enron", "imclef07a", "imclef07d", "pheno_FUN", "spo_FUN", "pheno_GO",
                    "spo_GO")


def _advance(progress, note: str) -> None:
    if progress is not None:
        progress.set_postfix_str(note, refresh=False)
        progress.update()


def run_dataset(data, methods, progress=None, *, random_state=0, solver="auto",
                n_components=None, center_selection="uniform") -> dict:
    """Fit and score every method on one data set.

    Parameters
    ----------
    data : sklearn.utils.Bunch
        A data set as returned by :func:`ecrm.datasets.load_hmc`.
    methods : collection of str
        Of ``METHODS``.
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
    from ecrm.datasets import HMCPreprocessor
    from ecrm.experiments._hmc_baselines import br_svm_row, ssvm_rows
    from ecrm.experiments._hmc_forest import forest_rows
    from ecrm.experiments._hmc_rows import TableRows
    from ecrm.experiments._hmc_scores import scores_row
    from ecrm.experiments.cache import InMemoryCache
    from ecrm.losses import HammingLoss, HierarchicalLoss
    from ecrm.reporting.metrics import micro_auprc

    name, h = data.name, data.hierarchy
    pre = HMCPreprocessor(data.categories).fit(data.train.X)
    Xtr, Xte = pre.transform(data.train.X), pre.transform(data.test.X)
    Ytr, Yte = data.train.Y, data.test.Y
    losses = {"hamming": HammingLoss(), "hierarchical": HierarchicalLoss(h)}
    table = TableRows(name, h, Yte, losses, C_HMCNN_EXCLUDE, random_state=random_state)
    metric = functools.partial(micro_auprc, labels=h.labels, exclude=C_HMCNN_EXCLUDE)
    info = {"dataset": name, "m": Xtr.shape[0], "n": Xte.shape[0], "p": Xtr.shape[1],
            "d": h.n_labels, "tree": h.is_tree}
    majority = h.close(np.tile(Ytr.mean(axis=0) > 0.5, (len(Yte), 1)))
    info["trivial"] = {
        "empty label set": {k: float(np.mean(f(np.zeros_like(Yte), Yte)))
                            for k, f in losses.items()},
        "majority labels": {k: float(np.mean(f(majority, Yte))) for k, f in losses.items()},
    }
    rows: list[dict] = []
    kernel = PAPER_KERNEL.get(name, "linear")
    gammas = [0.5 / Xtr.shape[1], 1.0 / Xtr.shape[1], 2.0 / Xtr.shape[1]]
    memory = InMemoryCache()
    kernel_scores = None  # "ECRM (scores)"'s row, model and test inputs, for the forest's
    if "ecrm" in methods:
        for row in _ecrm_rows(table, Xtr, Ytr, Xte, kernel, gammas, memory, random_state,
                              solver, n_components, center_selection):
            rows.append(row)
            _advance(progress, f"{name}: ECRM ({row['protocol']}) for the "
                     f"{row['trained_for']} loss, {row['params']}")
    if "ecrm-scores" in methods:
        row, model, Xte_model, S = scores_row(table, Xtr, Ytr, Xte, alphas=ALPHAS,
                                              metric=metric, memory=memory,
                                              random_state=random_state)
        kernel_scores = (row, model, Xte_model)
        rows.append(row)
        _advance(progress, f"{name}: ECRM (scores) {row['params']}")
        if "forest-scores" in methods:  # the other scores rows' gains over its test scores
            table.compare_with(S)
        del S
    if "forest-scores" in methods:
        rows.extend(forest_rows(table, Xtr, Ytr, Xte, metric, random_state, kernel_scores))
        table.reference = None
        _advance(progress, f"{name}: ECRM forest (scores) {rows[-1]['params']}")
    if "br-svm" in methods:
        rows.append(br_svm_row(table, Xtr, Ytr, Xte, kernel, gammas, random_state))
        _advance(progress, f"{name}: BR-SVM {rows[-1]['params']}")
    if "ssvm" in methods:
        for row in ssvm_rows(table, Xtr, Ytr, Xte, kernel, random_state):
            rows.append(row)
            _advance(progress, f"{name}: SSVM for the {row['trained_for']} loss, "
                     f"{row['params']}")
    info["rows"] = rows
    return info


def _ecrm_rows(table, Xtr, Ytr, Xte, kernel, gammas, memory, random_state, solver,
               n_components, center_selection):
    """The paper's ECRM rows (its kernel) and the "kernel LOO" rows (the kernel chosen too),
    each trained for, and scored on, the Hamming and the hierarchical loss; yielded when
    fitted."""
    from ecrm import ECRMCV
    from ecrm.experiments._hmc_rows import timed
    from ecrm.selection import LeaveOneOutSearch

    h = table.hierarchy
    grids = {"paper": {"kernel": [kernel]} if kernel == "linear" else
             {"kernel": ["rbf"], "gamma": gammas},
             "kernel-loo": [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": gammas}]}
    for protocol, grid in grids.items():
        for trained_for, loss in table.losses.items():
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
            _, fit_s = timed(lambda est=est: est.fit(Xtr, Ytr))
            P, pred_s = timed(lambda est=est: est.predict(Xte))
            params = {k: v for k, v in est.kernel_params_.items()
                      if k == "kernel" or (k == "gamma" and v is not None
                                           and est.kernel_params_["kernel"] == "rbf")}
            params.update(alpha=est.alpha_, fit_intercept=est.fit_intercept_)
            solver_name = getattr(est.solver, "name", est.solver)
            if solver_name != "auto":
                params.update(solver=solver_name)
            yield table.row("ECRM", protocol, trained_for, P, est.predict_scores(Xte),
                           fit_seconds=fit_s, predict_seconds=pred_s, params=params)


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
    from ecrm.commands._options import progress_bar
    from ecrm.datasets import ArffError, list_hmc, load_hmc

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
                        "ssvm (default: " + ", ".join(DEFAULT_METHODS) + ")")
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
