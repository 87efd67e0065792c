"""``ecrm fit``: fit ECRM on a data file and write a model file.

With ``--cv`` the regularisation (and, with ``--gammas``, the RBF width) is chosen by the
exact leave-one-out task loss on the training file (:class:`ecrm.ECRMCV`), or with
``--scoring`` by a ranking metric of the exact leave-one-out label scores, which
``--calibration`` then maps per label (for ``ecrm predict --scores``); otherwise
``--alpha`` is used as given (:class:`ecrm.ECRM`). Features are used as they are
unless ``--standardize`` says otherwise; a kernel model on features that were not
standardised, and that does no better than the trivial baselines on its exact leave-one-out
criterion, is refitted once on standardised features, and a warning says what that gives
(:func:`ecrm.estimators._validation.honest_scale_check`). With ``--cv`` and ``--family auto``
the kernel is fitted on each preprocessing candidate and the forest on the features as they
are, and the better by its honest criterion is kept, unless their mixed risk
(:class:`ecrm.MixedRiskECRM`) beats it. The mixture's members must read the same features:
its kernel is the one fitted on the forest's (no refit, and a share of 0 or 1 is the pure
family as it fits alone); its share is chosen on both members' honest outputs, and it is
kept when that share is interior and its criterion beats the better family's (a kernel on
standardised features may beat both). The summary gives the honest criterion and time of
each and whether the difference between the kept one and the best other is within noise.
``--solver``, ``--n-components``, ``--center-selection``, ``--memory-budget`` and
``--loo-samples`` are the estimators' parameters of the same names (for training files too
large for the exact dual solver). ``--family neighbours`` takes ``--neighbours`` k (with
``--cv``: ``--neighbours-grid``, the candidates) and ``--metric``, the distance; a k the
training rows cannot give is refused before fitting.

``--task ranking`` fits rankings of named labels (a label column ``a>c>b``, or the label
ranking benchmark's layout) with the Kendall loss (``--loss footrule``, ``squared``),
``--task multiclass`` one class per row with the 0-1 loss (:mod:`ecrm.commands._tasks`);
the options only label sets have are refused for them.

The model file is checked before reading the data (it must not be the training or hierarchy
file, and its directory must accept a new file) and written atomically: an interrupted or
failed fit leaves neither a partial model nor a temporary file, and an existing model at
that path is kept. ``-o -`` writes the (binary) model file to standard output, which must
then not be a terminal (the bytes of the file, built in memory); the summary goes to
standard error. Each family's estimator is built
by :mod:`ecrm.commands._fit_estimators`, the summary printed by :mod:`ecrm.commands._fit_summary`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from ecrm.commands import _tasks, add_data_options, existing_file_option, fail, warn_id_like
from ecrm.commands._choice import (
    Fit,
    check_scales,
    families_line,
    grid_note,
    say,
    scales,
)
from ecrm.commands._files import (
    STDOUT,
    OutputError,
    atomic_path,
    check_output,
    is_stream,
    is_terminal,
)
from ecrm.commands._fit_estimators import (
    AUTO,
    auto_solver,
    check_neighbours,
    dest,
    family_estimators,
    solver_object,
    solvers,
    trees_over_budget,
)
from ecrm.commands._fit_summary import family_name, print_summary
from ecrm.commands._options import (
    choices,
    names_option,
    number_option,
    output_file_option,
    parameter_option,
    progress_bar,
)
from ecrm.commands._training import read_training, store_reading_options
from ecrm.tasks import TASKS

__all__ = ["add_parser", "run"]

#: The library's vocabularies (:data:`ecrm.estimators._parameters.CONSTRAINTS`), as every choice
#: here; the solvers' is read when the parser is built (with those registered).
KERNELS = choices("kernel")
CENTER_SELECTIONS = choices("center_selection")


def _reals(parameter: str, name: str):
    """A comma-separated list of values of ``parameter`` (``--alphas``, ``--gammas``)."""
    return _numbers(parameter_option(parameter, name), name, float)


def _numbers(parse_one: Callable[[str], Any], name: str,
             kind: Callable[[Any], Any] = float) -> Callable[[str], list]:
    """A comma-separated list of numbers, each read by ``parse_one`` (which names the
    option ``name`` in its refusal) and converted by ``kind``."""
    def parse(text: str) -> list:
        values = [part.strip() for part in text.split(",")]
        if not all(values):
            raise argparse.ArgumentTypeError(f"{name} has an empty value in {text!r}; "
                                             "expected a comma-separated list of numbers")
        return [kind(parse_one(v)) for v in values]

    return parse


def _write_model(model, path: str) -> None:
    """Save ``model`` atomically to ``path``, or for ``-`` to standard output: the bytes of
    the file, built in memory and written when complete (a zip written to a pipe, which
    cannot seek back, would differ)."""
    from ecrm.model_files.io import save

    if path != STDOUT:
        with atomic_path(path) as tmp:
            save(model, tmp)
        return
    save(model, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def run(args) -> int:
    """Run ``ecrm fit`` from parsed arguments."""
    from sklearn.pipeline import Pipeline

    if args.scheduler is not None and len(args.train) > 1:
        return fail("--scheduler reads one training file; give it the rows of all")
    try:
        check_output(args.output, [*args.train, args.hierarchy])
    except OutputError as exc:
        return fail(str(exc))
    if is_terminal(args.output):
        return fail(f"-o {args.output} writes the binary model file to a terminal: redirect "
                    "standard output (ecrm fit ... -o - > model.ecrm) or give a file path")
    report = sys.stderr if is_stream(args.output) else sys.stdout  # not into the output
    with contextlib.ExitStack() as stack, progress_bar(3, "ecrm fit",
                                                       enabled=not args.quiet,
                                                       stages=True) as bar:
        try:
            bar.set_postfix_str("reading data")
            data, impute = read_training(args, stack)
        except ValueError as exc:
            return fail(str(exc))
        warn_id_like(args, data.feature_names)
        bar.update()
        h = data.space
        if args.loss == "hierarchical" and h.edges.size == 0:
            return fail("--loss hierarchical needs a hierarchy: give --hierarchy FILE or label "
                        "paths with --path-sep (the labels of this file are flat)")
        loss = TASKS[args.task].make_loss(args.loss, h)
        solver = auto_solver(args, data.X.shape)
        common = {"kernel": args.kernel, "gamma": args.gamma,
                  "solver": solver_object(args, solver),
                  "memory_budget": args.memory_budget, "random_state": args.seed}
        families = family_estimators(args, loss, h, common)
        if families.keys() & {"forest", "mixed"}:
            too_many = trees_over_budget(args, data.X.shape[0])
            if too_many:
                return fail(too_many)
        refusal = check_neighbours(args, data.X)
        if refusal:
            return fail(refusal)
        bar.set_postfix_str("fitting")
        try:
            model, step, fits = _fit(args, data, families, impute,
                                     _mixes(args, families, loss))
        except ValueError as exc:
            return fail(f"fit failed: {exc}")  # fail names the parameters as flags
        bar.update()
        bar.set_postfix_str("saving")
        try:
            _write_model(model if step is None else Pipeline([("preprocess", step),
                                                              ("ecrm", model)]), args.output)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            return fail(f"cannot write the model to {args.output!r}: {exc.strerror or exc}")
        except ValueError as exc:
            return fail(f"cannot save the model: {exc}")
        bar.update()
    print_summary(args, data, model, step, solver, report, fits)
    if len({fit.family for fit in fits}) > 1:
        print(families_line(args, data, family_name(model), fits), file=report)
    return 0


def _steps(args, data, impute: bool) -> list:
    """The preprocessing candidates (``None``: the features as they are): nominal attributes
    one-hot encoded and, with ``impute``, missing values replaced by the training means;
    ``--standardize auto`` offers the features as they are and standardised to the
    leave-one-out choice with ``--cv``, as they are without it (as the Python estimators do)."""
    from ecrm.datasets import HMCPreprocessor

    categories = data.get("categories")
    nominal = categories is not None and any(c is not None for c in categories)
    choices = (([False, True] if args.cv else [False]) if args.standardize == "auto"
               else [args.standardize == "yes"])
    return [HMCPreprocessor(categories if nominal else None,
                            scale="numeric" if standardize else "none", impute=impute)
            if standardize or nominal or impute else None for standardize in choices]


def _fit(args, data, families: dict, impute: bool, mixing: bool):
    """Fit each family on each of its preprocessing candidates (a forest: the features as
    they are) and keep the best by the honest criterion (the first on ties), or with
    ``mixing`` (:func:`_mixes`) their mixture when it beats that (:func:`_mix`): ``(model, step,
    fits)``, ``fits`` every :class:`~ecrm.commands._choice.Fit` in order. The chosen model's
    warnings are issued again in the command's words, the estimators' check of the scales
    replaced by :func:`~ecrm.commands._choice.check_scales`."""
    import numpy as np

    from ecrm.exceptions import FeatureScaleWarning, GridEdgeWarning

    best = None
    fits: list[Fit] = []
    steps = _steps(args, data, impute)
    members: dict = {}  # on the forest's features: (fit, warnings, X, honest outputs)
    for family, make_model in families.items():
        for step in steps if family != "forest" else steps[:1]:
            if family == "kernel" and args.cv and len(steps) > 1 and not args.quiet:
                say("[ECRMCV] on the " + ("standardised features:" if scales(step)
                                          else "features as they are:"))
            start = time.perf_counter()
            X = data.X if step is None else step.fit_transform(data.X)
            with warnings.catch_warnings(record=True) as caught:  # shown for the chosen one
                warnings.simplefilter("always")
                model = make_model()
                member = mixing and step is steps[0]
                honest = (model.fit_honest(X, data.Y, scores=args.scoring != "loss")
                          if member else model.fit(X, data.Y))
            fits.append(Fit(family, step, model, time.perf_counter() - start))
            if member:
                members[family] = (fits[-1], caught, X, honest)
            score = getattr(model, "honest_score_", None)  # none for a fixed --alpha
            if best is None or (score is not None and best[4] is not None
                                and score > best[4]):  # ties and no criterion: the first
                best = (model, step, caught, X, score)
    if mixing and best is not None:
        best = _mix(args, members, best, fits)
    model, step, caught, X, _ = best  # type: ignore[misc]
    warned = check_scales(args, data, model, step, X, steps)
    for w in caught:
        if issubclass(w.category, FeatureScaleWarning):
            continue  # the ratio of the deviations: the check above is the command's
        message = str(w.message)
        if issubclass(w.category, GridEdgeWarning):
            message = grid_note(message, warned)
        warnings.warn_explicit(message, w.category, w.filename, w.lineno)
    if data.feature_names is not None:  # svmlight: none (the columns are the indices)
        names = list(data.feature_names)  # the file's columns, by name
        if step is None:
            model.feature_columns_ = names
        else:
            step.feature_names_in_ = np.asarray(names, dtype=object)
    if args.level_columns is not None:  # predict and evaluate read the same layout unasked
        model.level_columns_ = list(args.level_columns)
    store_reading_options(model, args)  # --label-sep, --delimiter, ...: likewise
    return model, step, fits


def _mixes(args, families: dict, loss) -> bool:
    """Whether the kernel's and the forest's risks are mixed: ``--family auto`` with
    ``--cv`` (both families fitted) and a ``loss`` with costs."""
    from ecrm.losses import LinearLoss

    return args.family == "auto" and set(families) == set(AUTO) and isinstance(
        loss, LinearLoss)


def _mix(args, members: dict, best: tuple, fits: list) -> tuple:
    """The mixture of the kernel and the forest on the same features (as they are: the
    forest's), the kernel's share chosen on their honest outputs as
    :class:`ecrm.MixedRiskECRM` chooses it (its grid and criterion), nothing refitted;
    appended to ``fits``. The mixture is kept when its share is interior and its honest
    criterion beats the ``best`` single family's (a kernel on standardised features may
    beat it), else ``best``, as :func:`_fit` keeps it: ``(model, step, warnings, X,
    score)``."""
    from ecrm.weights.mixture import MixedRiskECRM

    (kernel, k_warned, X, k_honest), (forest, f_warned, _, f_honest) = (
        members["kernel"], members["forest"])
    start = time.perf_counter()
    mixed, choice = MixedRiskECRM.from_fitted(kernel.model, forest.model, k_honest, f_honest,
                                              return_choice=True)
    honest = None  # under the loss: the mixture's honest outputs, for the noise of the choice
    if choice.predictions is not None:
        honest = choice.rows, choice.predictions
    fits.append(Fit("mixed", kernel.step, mixed, time.perf_counter() - start, honest))
    if mixed.mixture_ in (0.0, 1.0) or mixed.honest_score_ <= best[4]:
        return best
    return mixed, kernel.step, [*k_warned, *f_warned], X, mixed.honest_score_


def add_parser(subparsers) -> None:
    """Add the ``fit`` sub-command."""
    p = subparsers.add_parser("fit", help="fit ECRM on a data file and write a model file",
                              description=__doc__.splitlines()[0])
    p.add_argument("train", type=existing_file_option("TRAIN"), metavar="TRAIN", nargs="+",
                   help="training data (.csv, .tsv, .arff[.gz], .svm); several files of the "
                   "same columns are fitted on together (e.g. Clus train and valid)")
    p.add_argument("--task", choices=_tasks.TASKS, default=_tasks.TASKS[0],
                   help="what the label column holds: label sets (default), a ranking of "
                   "named labels, first to last (" + _tasks.RANKING_SEP.join("acb") + "), "
                   "one class per row, or a ranking with ties (a>b=c); predict, evaluate and info "
                   "read it from the model file")
    p.add_argument("--loss", choices=[name for names in _tasks.LOSSES.values()
                                      for name in names], default=None,
                   help="the task loss: " + "; ".join(
                       f"{task}: {', '.join(names)} (default {names[0]})"
                       for task, names in _tasks.LOSSES.items()))
    p.add_argument("--hierarchy", type=existing_file_option("--hierarchy"), metavar="FILE",
                   help="hierarchy file: TSV parent<TAB>child lines or JSON")
    from ecrm.weights import FAMILIES

    p.add_argument("--family", choices=["auto", *(f.name for f in FAMILIES.values() if f.cli)],
                   default="auto",
                   help="risk weights: kernel ridge, a forest grown on the loss's embedding "
                   "(its settings by the out-of-bag criterion), the k nearest neighbours "
                   "(--neighbours k, or with --cv by exact leave-one-out among "
                   "--neighbours-grid), mixed: the two risks mixed, the "
                   "kernel's share by the honest criterion (needs --cv), stack: the kernel's and "
                   "the forest's searches' risks stacked, the weights by the honest "
                   "criterion, or auto: with --cv "
                   "both, the one with the better honest criterion (exact leave-one-out "
                   "against out of bag), or their mixture on the features as they are (the "
                   "kernel's share chosen on both families' honest outputs, 0, 0.1, ..., 1, "
                   "nothing refitted) when its share is interior and it beats that one; "
                   "without --cv the kernel")
    p.add_argument("--trees", type=number_option("int", "--trees", low=1), default=100,
                   help="trees of a forest (default 100)")
    p.add_argument("--neighbours", type=number_option("int", "--neighbours", low=1),
                   default=None, metavar="K",
                   help="--family neighbours without --cv: the k nearest training rows "
                   "whose outputs' losses are averaged, at most the training rows (default 10)")
    grid_of_k = _numbers(number_option("int", "--neighbours-grid", low=1), "--neighbours-grid",
                         int)
    p.add_argument("--neighbours-grid", type=grid_of_k, default=None, metavar="K1,K2,...",
                   help="--family neighbours with --cv: the candidate k, chosen by exact "
                   "leave-one-out; those not below the training rows are left out (default "
                   "1,3,5,7,10,15,20,30,50)")
    p.add_argument("--metric", choices=choices("metric"), default="euclidean",
                   help="--family neighbours: the distance between rows (default: euclidean; "
                   "sparse svmlight rows: euclidean, manhattan or cosine)")
    p.add_argument("--kernel", choices=KERNELS, default="rbf")
    p.add_argument("--gamma", type=parameter_option("gamma", "--gamma"), default=None,
                   help="kernel width (default: 1 / number of features)")
    choice = p.add_mutually_exclusive_group()
    choice.add_argument("--alpha", type=parameter_option("alpha", "--alpha"), default=1e-3,
                        help="the paper's lambda (default: 1e-3)")
    choice.add_argument("--cv", action="store_true",
                        help="choose alpha (and the intercept, and gamma from --gammas) by "
                        "exact leave-one-out")
    p.add_argument("--alphas", type=_reals("alpha", "--alphas"), default=None,
                   help="--cv candidates, e.g. 1e-4,1e-3,1e-2 (default: 17 from 1e-6 to 100)")
    p.add_argument("--gammas", type=_reals("gamma", "--gammas"), default=None,
                   help="--cv candidate kernel widths, e.g. 0.1,0.3,1")
    p.add_argument("--kernels", type=names_option("--kernels", KERNELS, lower=True),
                   default=None, help="--cv candidate kernels, e.g. rbf,laplacian,linear")
    p.add_argument("--extend-grid", action="store_true",
                   help="with --cv: extend alpha by decades and the RBF/laplacian --gammas by "
                        "their ratio past an end of the grid that wins (default: the fixed "
                        "grid)")
    p.add_argument("--scoring", choices=choices("scoring"), default="loss",
                   help="with --cv: choose by the leave-one-out task loss (default) or by this "
                        "metric of the leave-one-out label scores")
    p.add_argument("--calibration", choices=("none", *choices("calibration")), default="none",
                   help="with --cv: map each label's score by a calibration fitted on its "
                        "leave-one-out scores ('auto': none, isotonic or Platt, whichever "
                        "cross-fits best)")
    solver = p.add_argument_group("solver (for large training files)")
    solver.add_argument("--solver", choices=choices("solver"), default="auto",
                        help="exact dual (m x m memory), exact primal (linear kernel, p x p) "
                        "or Nystrom features (an approximation, M x M); auto: the dual while "
                        "it fits --memory-budget; for --kernel linear with more rows than "
                        "features always the primal, whose model file and prediction do not "
                        "grow with the rows")
    solver.add_argument("--n-components",
                        type=parameter_option("n_components", "--n-components"),
                        default=None, metavar="M",
                        help="--solver nystrom: centres M (default: min(rows, 1000))")
    solver.add_argument("--center-selection", choices=CENTER_SELECTIONS, default=None,
                        help="--solver nystrom: how the centres are drawn (default: uniform)")
    solver.add_argument("--memory-budget",
                        type=parameter_option("memory_budget", "--memory-budget"),
                        default=None, metavar="GIB",
                        help="GiB the solver's matrices, or a forest's arrays, may take "
                        "(default: 8)")
    solver.add_argument("--loo-samples", type=parameter_option("loo_samples", "--loo-samples"),
                        default=None, metavar="N",
                        help="--cv: average the exact leave-one-out loss over N random rows")
    solver.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="fit on this Dask cluster (tcp://10.0.0.5:8786; 'local': one "
                        "of this machine's cores): the CSV read in row chunks on the workers, "
                        "the primal or Nystrom normal equations summed (needs --solver primal "
                        "or nystrom, --standardize no), a forest's trees grown there or the "
                        "nearest neighbours' leave-one-out queries run there; the model is "
                        "the one fitted without it, up to the order of the sums")
    solver.add_argument("--seed", type=number_option("int", "--seed", low=0,
                                                     high=2**32 - 1),
                        default=None, help="random seed of the Nystrom centres and of "
                        "--loo-samples (default: unseeded), and of a forest's trees "
                        "(default: 0)")
    pre = p.add_argument_group("preprocessing (stored in the model, applied by predict)")
    pre.add_argument("--standardize", choices=("auto", "yes", "no"), default="auto",
                     help="standardise the numeric features with the training means and "
                     "deviations (sparse: deviations only); auto: with --cv, whichever of "
                     "standardised or as they are gives the better exact leave-one-out "
                     "criterion, without --cv as they are")
    pre.add_argument("--impute", action=argparse.BooleanOptionalAction, default=None,
                     help="replace missing feature values by the training means (default: on "
                     "for ARFF files, whose '?' marks a missing value; elsewhere a missing "
                     "value is an error naming its file, line and column, also in the files "
                     "predict and evaluate read)")
    p.add_argument("-o", "--output", type=output_file_option("-o"), required=True,
                   metavar="MODEL", help="model file to write (never an input file; '-': "
                   "standard output, redirected)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_data_options(p)
    p.set_defaults(func=_checked, defaults={dest(flag): p.get_default(dest(flag))  # _unused_option
                                            for f in FAMILIES.values() for flag in f.options})


def _unused_option(args) -> str | None:
    """The refusal of an option given (not at its default) that the chosen family does not
    read, naming the families that do (each family's options: its line of the table)."""
    from ecrm.weights import FAMILIES

    offered = {name: f.options for name, f in FAMILIES.items() if f.cli}
    used = ({flag for name in AUTO for flag in offered[name]} if args.family == "auto"
            else set(offered[args.family]))
    for flag in dict.fromkeys(flag for options in offered.values() for flag in options):
        if flag in used or getattr(args, dest(flag), None) == args.defaults.get(dest(flag)):
            continue
        users = [name for name, options in offered.items() if flag in options]
        return (f"{flag} is an option of the {' and '.join(users)} "
                f"famil{'y' if len(users) == 1 else 'ies'}; --family {args.family} does not "
                "use it")
    return None


def _checked(args) -> int:
    losses = _tasks.LOSSES[args.task]
    if args.loss is None:
        args.loss = losses[0]
    elif args.loss not in losses:
        return fail(f"--loss {args.loss} is not a loss of --task {args.task} (choose "
                    f"{', '.join(losses)})")
    refusal = _tasks.label_set_only(args, args.task)
    if refusal is not None:
        return fail(refusal)
    if not args.cv and ((args.alphas, args.gammas, args.kernels) != (None, None, None)
                        or args.scoring != "loss" or args.calibration != "none"):
        return fail("--alphas, --gammas, --kernels, --scoring and --calibration need --cv")
    if not args.cv and args.extend_grid:
        return fail("--extend-grid needs --cv")
    if not args.cv and args.loo_samples is not None:
        return fail("--loo-samples needs --cv")
    module = solvers()
    if args.solver != module.NystromSolver.name and \
            (args.n_components, args.center_selection) != (None, None):
        return fail("--n-components and --center-selection need --solver nystrom")
    streams = args.solver in module.SOLVER_CLASSES and \
        not module.SOLVER_CLASSES[args.solver].holds_gram  # a feature solver: Dask arrays
    trees = args.family == "forest"  # trees read the features as they are, any solver
    solver_free = trees or args.family == "neighbours"  # no kernel solver
    if args.scheduler is not None and (args.standardize == "yes" or args.impute or not trees
                                       and (not (streams or solver_free)
                                            or args.cv and args.standardize == "auto")):
        return fail("--scheduler needs " + ("" if solver_free else "--solver primal or "
                                            "nystrom (a kernel's), and ")
                    + "the features as they are (--standardize no, no --impute)")
    if args.family in ("forest", "mixed") and args.calibration != "none":
        return fail("--calibration needs --family kernel (or auto)")
    if args.family == "mixed" and not args.cv:
        return fail("--family mixed needs --cv: the kernel's share is chosen by the honest "
                    "criterion of the selection")
    if args.family == "auto" and (args.calibration != "none" or args.scheduler is not None):
        args.family = "kernel"  # leave-one-out calibration and Dask fits: a kernel's
    refusal = _unused_option(args)
    if refusal is not None:
        return fail(refusal)
    if args.cv and args.neighbours is not None:
        return fail("--neighbours sets k without --cv; with --cv give the candidates as "
                    "--neighbours-grid K1,K2,...")
    if not args.cv and args.neighbours_grid is not None:
        return fail("--neighbours-grid needs --cv (without it, --neighbours K sets k)")
    if args.center_selection is None:
        args.center_selection = "uniform"
    return run(args)
