"""``ecrm reproduce ranking``: label ranking on the standard benchmark, Kendall's tau.

The label ranking benchmark (Cheng, Hühn & Hüllermeier, ICML 2009, and the later
literature): --repeats repetitions (default 5) of --folds-fold cross-validation (default 10).
The table gives Kendall's tau between predicted and true rankings, averaged over the test
points of every fold, as its mean and standard deviation over the repeats and folds.
Everything is fitted on the training fold only: the features are standardised there, and
every hyper-parameter is chosen there.

* **ECRM** with the squared-rank and footrule losses: :class:`ecrm.ECRMCV` chooses the kernel
  (linear, or RBF with ``gamma`` in ``GAMMAS / p``), the intercept (with or without) and
  ``alpha`` in ``ALPHAS`` by the exact leave-one-out task loss (the kernel on a random subset of
  ``KERNEL_SUBSAMPLE`` training points, then ``alpha`` and the intercept on all of them). Every
  model of a fold draws the same subset, so one eigendecomposition per kernel and subset,
  cached, serves every loss and the kernel ridge baseline.
* **ECRM** with the Kendall loss (exact Kemeny inference,
  :class:`ecrm.losses.kendall.KendallLoss`): the kernel and intercept the squared-rank model
  chose, and ``alpha`` by Kendall's own exact leave-one-out loss. Every leave-one-out
  prediction solves a linear ordering problem, :math:`O(2^k k)` by dynamic programming, so the
  loss is averaged over all training points when that costs at most ``KENDALL_LOO_BUDGET``
  DP operations per candidate, else over ``KENDALL_LOO_MIN_ROWS`` random training points
  (:func:`kendall_loo_rows`; only wisconsin, ``k = 16``, is affected).
* **ECRM-selected**: of those three models, the one with the smallest exact leave-one-out
  Kendall distance on the training fold (on the Kendall model's leave-one-out points; ties go
  to Kendall, then footrule). Model selection on the task loss, nothing fitted anew; each
  model's leave-one-out loss is the minimum over its candidates (slightly optimistic for
  footrule and squared rank, which have more).
* **ECRM-forest**: ECRM with forest weights and the Kendall loss, its settings by the
  out-of-bag Kendall distance (:mod:`._ranking_peers`); **ECRM-honest**: of ECRM-selected's
  model and the forest, the one with the smaller honest training-fold Kendall distance
  (exact leave-one-out against out-of-bag). Nothing fitted anew. **ECRM-mixed**: the
  risk mixed from one of the three kernel models' and the forest's weights applied to that
  model's loss; the loss and the kernel's share in ``MIXING_GRID`` chosen together by the
  Kendall distance of the exact rankings of the mixed honest costs (the Kendall model's
  leave-one-out points, out of bag in the forest). Its candidates include ECRM-selected's
  model (share 1) and ECRM-forest (share 0), so it is the protocol's honestly selected row.
  **ECRM-stacked** (on request, ``--methods``): the risk stacked from the three kernel
  models', the forest's and nearest-neighbour weights, applied to ECRM-mixed's loss
  (:mod:`._ranking_stack`; on low-rank folds the loss's kernel model, the forest and the
  neighbours): the weights on the simplex chosen on the same honest costs, guarded by the
  nested honest check against ECRM-mixed's candidates (ECRM-mixed's choice unless the stack
  wins by more than its standard error).
* **kNN + Borda** and **kNN + Kemeny**: the rankings of the ``k`` nearest training points,
  aggregated by mean position or exactly by Kemeny's rule
  (:func:`ecrm.spaces.linear_ordering.linear_ordering`); ``k`` in ``NEIGHBOURS`` by the exact
  leave-one-out Kendall's tau on the training fold.
* **KRR on positions**: scikit-learn's ``KernelRidge`` (no intercept) on the rank vector,
  labels ranked by predicted position; the kernel and ``alpha`` (``KernelRidge(alpha=m *
  alpha)``, ``alpha`` in ``ALPHAS``) by the exact leave-one-out Kendall distance from the same
  eigendecompositions as ECRM, in the same two stages (:func:`._ranking_kernel._krr`).

Large sets. By default every model trains on the whole training fold (the published
protocol). A fold of at most ``DUAL_MAX_TRAIN`` points (1,000; or ``--n-components``, if
larger) is fitted exactly as above. A larger one (at ten folds every set with more than 1,111
instances: segment, cpu, elevators, calhousing, fried and the five yeast sets), where the
m x m dual would cost minutes and gigabytes per fold, is fitted in low rank
(:mod:`._ranking_kernel`, ``_ecrm_large`` and ``_krr_large``): the kernel is still chosen by
the exact dual on ``KERNEL_SUBSAMPLE`` random training points (by the squared-rank model,
for all three ECRM losses, and by kernel ridge for itself), then every model is fitted on the
whole fold through Nystrom features on ``--n-components`` (default 500) uniformly drawn centres
(``solver="nystrom"``), or through the exact primal when the kernel is linear; ``alpha``, the
intercept and kNN's ``k`` by the exact leave-one-out criterion averaged over
``LARGE_LOO_ROWS`` (2,000) random training points (:func:`large_loo_rows`). Kendall's
Kemeny oracle runs batched, as on small folds.

The capped protocol (``--max-train 1000``): a training fold with more than ``--max-train``
points is replaced by a random subset of that size, drawn without replacement from the
training fold; every fold is then fitted exactly. The test fold is always complete. Where a
training fold is under the cap the two protocols fit the same models on the same draws, so
they agree.

Missing labels (``--missing p``): each label of each training ranking is removed with
probability ``p`` and only the methods that learn from incomplete rankings run
(:mod:`._ranking_missing`).

Time: the folds of every data set run in one pool of ``--n-jobs`` processes (joblib), the
larger sets' first, so that no process idles at the end of a set; every fold uses one BLAS
thread, also with ``--n-jobs 1``, so that its floating-point results are the same either way.
Every fold's random draws (the training subset, the kernel subset, the leave-one-out rows)
come from its own seed, :func:`fold_seed` ``(random_state, repeat, fold)``, so the results do
not depend on the number of processes.
"""

from __future__ import annotations

import json

import numpy as np

from ecrm.commands._options import names_option, number_option, output_file_option, parameter_option
from ecrm.commands._threads import workers_option
from ecrm.experiments._ranking_fold import DUAL_MAX_TRAIN, N_COMPONENTS, _cap, _fold_counting_edges
from ecrm.experiments._ranking_kernel import (
    ALPHAS,
    ECRM_LOSSES,
    KENDALL_LOO_BUDGET,
    KENDALL_LOO_MIN_ROWS,
    LARGE_LOO_ROWS,
    kendall_loo_rows,
    large_loo_rows,
)
from ecrm.experiments._ranking_knn import NEIGHBOURS
from ecrm.experiments._ranking_missing import MISSING_METHODS
from ecrm.experiments._ranking_peers import PUBLISHED, SSVM_CS
from ecrm.model_files._atomic import write_text

__all__ = ["ALPHAS", "DEFAULT_DATASETS", "DUAL_MAX_TRAIN", "ECRM_LOSSES", "GAMMAS",
           "KENDALL_LOO_BUDGET", "KENDALL_LOO_MIN_ROWS", "LARGE_LOO_ROWS", "METHODS",
           "N_COMPONENTS", "NEIGHBOURS", "PUBLISHED", "SSVM_CS", "add_parser", "fold_seed",
           "format_table", "kendall_loo_rows", "large_loo_rows", "protocol_folds", "run",
           "run_dataset", "run_datasets"]

#: The benchmark in the usual order: 13 semi-synthetic sets, then the 5 yeast sets.
DEFAULT_DATASETS = ("iris", "wine", "glass", "vehicle", "stock", "housing", "bodyfat",
                    "wisconsin", "segment", "cpu", "elevators", "calhousing", "fried",
                    "cold", "diau", "dtt", "heat", "spo")
GAMMAS = (0.25, 1.0, 4.0)  # times 1 / n_features

METHODS = ("ECRM-Kendall", "ECRM-footrule", "ECRM-squared", "ECRM-selected", "ECRM-forest",
           "ECRM-honest", "ECRM-mixed", "kNN-Borda", "kNN-Kemeny", "KRR-positions")
#: Methods run only when asked for (``--methods``): the structured SVM with the Kendall loss
#: (loss-augmented inference by the exact Kemeny oracle), C by 3-fold cross-validation; the
#: label-wise and pairwise random-forest peers (:mod:`._ranking_forest`); ECRM-stacked
#: (:mod:`._ranking_stack`; its search runs the exact oracle about ten times as often as
#: ECRM-mixed's, and on one repeat of the small sets it did not improve on it).
OPTIONAL_METHODS = ("SSVM-Kendall", "LWRF", "PWRF", "ECRM-stacked")


def protocol_folds(n_samples: int, *, repeats=5, folds=10, random_state=0, max_train=None):
    """The folds of :func:`run_dataset`: ``(repeat, fold, train, test, seed)`` for each,
    ``train`` already capped at ``max_train`` points as the fold capped it, ``seed`` its
    :func:`fold_seed`. Other label rankers run on exactly these folds
    (``benchmarks/ranking_sklr.py``)."""
    from sklearn.model_selection import KFold

    for rep in range(repeats):
        split = KFold(folds, shuffle=True, random_state=random_state + rep)
        for f, (train, test) in enumerate(split.split(np.empty((n_samples, 1)))):
            seed = fold_seed(random_state, rep, f)
            yield rep, f, _cap(train, max_train, np.random.RandomState(seed)), test, seed


def fold_seed(random_state: int, repeat: int, fold: int) -> int:
    """The seed of one fold's random draws: the same whatever the number of jobs."""
    return int(np.random.SeedSequence([random_state, repeat, fold]).generate_state(1)[0])


def run_dataset(name, data_dir, *, repeats=5, folds=10, max_train=None, methods=METHODS,
                progress=None, random_state=0, n_jobs=1, gammas=None,
                n_components=N_COMPONENTS, extend_grid=False, missing=0.0) -> dict:
    """Kendall's tau of every method on every test fold of one data set (the options as
    the module describes them: ``max_train=None`` whole folds, else the capped protocol;
    ``missing`` > 0 the missing-labels protocol with ``MISSING_METHODS``)."""
    return run_datasets([name], data_dir, repeats=repeats, folds=folds, max_train=max_train,
                        methods=methods, progress=progress, random_state=random_state,
                        n_jobs=n_jobs, gammas=gammas, n_components=n_components,
                        extend_grid=extend_grid, missing=missing)[0]


def run_datasets(names, data_dir, *, repeats=5, folds=10, max_train=None, methods=METHODS,
                 progress=None, random_state=0, n_jobs=1, gammas=None,
                 n_components=N_COMPONENTS, extend_grid=False, finished=None,
                 missing=0.0) -> list[dict]:
    """:func:`run_dataset` of every data set in ``names``, all their folds in one pool (the
    larger sets' first): :func:`_pool`, the records in the order of ``names``."""
    from joblib import delayed

    from ecrm.datasets.label_ranking import load_label_ranking

    names = list(dict.fromkeys(names))  # each set once
    methods = _check_missing(missing, methods)
    data = {name: load_label_ranking(name, data_dir) for name in names}
    for name in names if missing else ():
        if (data[name].ranks < 0).any():
            raise ValueError(f"{name}: --missing removes labels from complete rankings; the "
                             f"file already holds incomplete ones")
        if max_train is None and len(data[name].X) - len(data[name].X) // folds \
                > DUAL_MAX_TRAIN:
            raise ValueError(f"{name}: the missing-labels protocol fits training folds of "
                             f"at most {DUAL_MAX_TRAIN} points; pass --max-train "
                             f"{DUAL_MAX_TRAIN}")
    tags, tasks = [], []
    for name in sorted(names, key=lambda n: -data[n].X.shape[0]):  # stable: ties as given
        X, R = data[name].X, data[name].ranks
        scaled = [g / X.shape[1] for g in (GAMMAS if gammas is None else gammas)]
        # whole training folds here: each fold caps its own from its seed (``_fold``)
        for _, _, train, test, seed in protocol_folds(len(X), repeats=repeats, folds=folds,
                                                      random_state=random_state):
            tags.append(name)
            tasks.append(delayed(_fold_counting_edges)(
                X, R, train, test, gammas=scaled, methods=methods, seed=seed,
                max_train=max_train, n_components=n_components, extend_grid=extend_grid,
                missing=missing or None))

    def summary(name, done):
        return _summary(name, data[name].X, data[name].ranks.shape[1], done, methods=methods,
                        max_train=max_train, n_components=n_components,
                        extend_grid=extend_grid, repeats=repeats, folds=folds,
                        missing=missing)

    return _pool(tags, tasks, names, n_jobs=n_jobs, per_tag=repeats * folds,
                 summary=summary, progress=progress, finished=finished)


def _pool(tags, tasks, order, *, n_jobs, per_tag, summary, progress=None, finished=None,
          label=str) -> list[dict]:
    """Run the joblib ``tasks`` (one fold each, tagged by ``tags``) in one pool of ``n_jobs``
    processes. When the ``per_tag`` folds of a tag are done, ``summary(tag, outputs)`` is its
    record and ``finished(records)`` is called with the records done so far; the records are
    in the order of ``order``, as is the list returned."""
    from joblib import Parallel

    done: dict = {}
    records: dict = {}
    for tag, out in zip(tags, Parallel(n_jobs=n_jobs, return_as="generator")(tasks),
                        strict=True):
        done.setdefault(tag, []).append(out)
        if progress is not None:
            progress.set_postfix_str(label(tag))
            progress.update()
        if len(done[tag]) == per_tag:
            records[tag] = summary(tag, done.pop(tag))
            if finished is not None:
                finished([records[t] for t in order if t in records])
    return [records[t] for t in order]


def _check_missing(missing, methods) -> tuple:
    """The methods to run: ``MISSING_METHODS`` (of those asked for) when ``missing`` > 0;
    ``ValueError`` for a fraction outside [0, 1) or a method that needs complete rankings."""
    if not 0.0 <= missing < 1.0:
        raise ValueError(f"--missing must be a fraction in [0, 1); got {missing!r}")
    if not missing:
        return tuple(methods)
    if tuple(methods) == METHODS:
        return MISSING_METHODS
    other = [m for m in methods if m not in MISSING_METHODS]
    if other:
        raise ValueError(f"--missing: {', '.join(other)} need complete training rankings; "
                         f"the missing-labels protocol runs {', '.join(MISSING_METHODS)}")
    return tuple(methods)


def _summary(name, X, k, done, *, methods, keys=("tau_mean", "tau_std", "fold_taus"),
             **protocol) -> dict:
    """One data set's record from its folds' ``(scores, grid edges, wall seconds)``:
    ``dataset``, ``n``, ``p``, ``k``, the ``protocol``, ``seconds_wall`` (the sum of its
    folds' wall times, each fold in one process), ``grid_edge_warnings`` and one row per
    method: ``method``, the mean, standard deviation and list of the fold scores (named by
    ``keys``), ``seconds`` (CPU), ``params`` (per fold) and their summaries
    (:func:`_sum_up`)."""
    folds = [out for out, _, _ in done]
    mean, std, each = keys
    rows = [{"method": m, mean: float(np.mean([d[m][0] for d in folds])),
             std: float(np.std([d[m][0] for d in folds])), each: [d[m][0] for d in folds],
             "seconds": float(sum(d[m][2] for d in folds)),
             "params": [d[m][1] for d in folds]} for m in methods]
    _sum_up(rows, each, protocol["folds"])
    return {"dataset": name, "n": X.shape[0], "p": X.shape[1], "k": k, **protocol,
            "seconds_wall": sum(wall for _, _, wall in done),
            "grid_edge_warnings": sum(edges for _, edges, _ in done), "rows": rows}


def _sum_up(rows, each: str, folds: int) -> None:
    """Add to ECRM-mixed's and ECRM-stacked's rows their per-fold ``params`` summed up:
    ECRM-mixed's ``mean_share`` (the kernel's mean share) and
    :func:`._ranking_stack.summary` (beside ECRM-mixed's fold scores when it ran too), so
    that the results pages read the fields the command wrote."""
    from ecrm.experiments._ranking_stack import summary

    by_method = {row["method"]: row for row in rows}
    mixed, stacked = by_method.get("ECRM-mixed"), by_method.get("ECRM-stacked")
    if mixed is not None:
        mixed["mean_share"] = float(np.mean([p["mixture"] for p in mixed["params"]]))
    if stacked is not None:
        stacked.update(summary(stacked["params"], stacked[each],
                               None if mixed is None else mixed[each], folds=folds))


def format_table(results) -> str:
    """One line per data set: mean (std) tau of every method and the best published tau."""
    methods = [r["method"] for r in results[0]["rows"]] if results else []
    head = f"{'data set':<11}{'n':>7}{'k':>4}" + "".join(f"{m:>16}" for m in methods)
    lines = [head + "   best published (source)"]
    for info in results:
        cells = "".join(f"{r['tau_mean']:>9.3f} ({r['tau_std']:.3f})" for r in info["rows"])
        pub = None if info.get("missing") else PUBLISHED.get(info["dataset"])  # complete
        ref = f"{pub[0]:.3f} ({pub[1]}, {pub[2]})" if pub else "n/a"
        lines.append(f"{info['dataset']:<11}{info['n']:>7}{info['k']:>4}{cells}   {ref}")
    secs = {m: sum(r["seconds"] for info in results for r in info["rows"] if r["method"] == m)
            for m in methods}
    lines.append(f"{'CPU seconds':<22}" + "".join(f"{secs[m]:>16.1f}" for m in methods))
    return "\n".join(lines)


def _dataset_names(args, list_sets, defaults, help_text) -> list[str]:
    """The data sets to run: ``args.datasets``, else those of ``defaults`` found in
    ``args.data_dir``; the ``--json`` path is checked first, before any work, as ``ecrm fit``
    checks ``-o``. Raises ``OutputError``, ``FileNotFoundError`` or ``ValueError`` (a data set
    not found) with the message for :func:`ecrm.commands.fail`."""
    from ecrm.commands._files import check_output

    if args.json:
        check_output(args.json, option="--json")
    available = list_sets(args.data_dir)
    names = args.datasets or [n for n in defaults if n in available]
    absent = [n for n in names if n not in available]
    if absent or not names:
        raise ValueError(f"data sets not found: {absent or 'none given'}; available: "
                         f"{available}. {help_text}")
    return names


def _save_json(path):
    """``finished`` for the runs: the records so far written to ``path`` (if any) after every
    data set, so that a long run keeps what it finished."""
    def save(records):
        if path:
            write_text(path, json.dumps(records, indent=1))
    return save


def _print_edges(results) -> None:
    """The grid-edge warnings, once: the protocol's grid is fixed, a warning per fit helps
    no one."""
    edges = sum(info["grid_edge_warnings"] for info in results)
    if edges:
        print(f"note: {edges} searches chose an end of the protocol's grid of alphas or "
              f"gammas (GridEdgeWarning; per data set in the JSON's grid_edge_warnings)")


def run(args) -> int:
    """Run ``ecrm reproduce ranking`` from parsed arguments."""
    from ecrm.commands import fail
    from ecrm.commands._files import OutputError
    from ecrm.commands._options import progress_bar
    from ecrm.datasets.label_ranking import LABEL_RANKING_HELP, list_label_ranking

    try:
        names = _dataset_names(args, list_label_ranking, DEFAULT_DATASETS, LABEL_RANKING_HELP)
    except OutputError as err:
        return fail(str(err))
    except (FileNotFoundError, ValueError) as err:
        print(f"ecrm reproduce ranking: {err}")
        return 2
    try:
        _check_missing(args.missing, args.methods)
    except ValueError as err:
        return fail(str(err))
    with progress_bar(len(names) * args.repeats * args.folds, "label ranking folds",
                      enabled=not args.quiet) as bar:
        results = run_datasets(names, args.data_dir, repeats=args.repeats, folds=args.folds,
                               max_train=args.max_train, progress=bar, n_jobs=args.n_jobs,
                               methods=args.methods, n_components=args.n_components,
                               extend_grid=args.extend_grid, finished=_save_json(args.json),
                               missing=args.missing)
    print(format_table(results))
    _print_edges(results)
    return 0


def _count_option(name: str):
    """A positive count (``--repeats``, ``--folds``, ...), checked at parse time."""
    return number_option("int", name, low=1)


def _max_train(text: str) -> int | None:
    """``--max-train``: a positive integer, or ``none`` (whole training folds)."""
    return None if text.strip().lower() == "none" else _count_option("--max-train")(text)


def _add_protocol_options(parser, data_env: str, n_jobs=None) -> None:
    """The options of every label ranking protocol: ``--data-dir`` (default: ``data_env``, else
    ``$ECRM_DATA``), ``--datasets``, ``--repeats``, ``--folds``, ``--n-jobs`` (of type
    ``n_jobs``, default a positive count), ``--json`` and ``--quiet``."""
    parser.add_argument("--data-dir", help="directory of the <name>.csv.gz files (default: "
                        f"{data_env}, else $ECRM_DATA)")
    parser.add_argument("--datasets", type=names_option("--datasets"),
                        help="comma-separated names (default: every data set of the benchmark "
                        "found)")
    parser.add_argument("--repeats", type=_count_option("--repeats"), default=5,
                        help="repetitions of the cross-validation (default 5)")
    parser.add_argument("--folds", type=_count_option("--folds"), default=10,
                        help="folds of each repetition (default 10)")
    parser.add_argument("--n-jobs", type=n_jobs or _count_option("--n-jobs"), default=1,
                        help="folds run in parallel in this many processes, one BLAS thread "
                        "per fold (default 1; the results do not depend on it)")
    parser.add_argument("--json", type=output_file_option("--json"),
                        help="write the results as JSON to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "ranking", help="label ranking benchmark: ECRM (Kendall, footrule, squared rank) "
        "against kNN and kernel ridge, Kendall's tau", description=__doc__.split("\n\n")[1])
    _add_protocol_options(parser, "$ECRM_DATA_RANKING", workers_option("--n-jobs"))
    parser.add_argument("--max-train", type=_max_train, default=None,
                        help="cap every training fold at this many random points (the "
                        "capped protocol, e.g. 1000); default 'none': whole training folds")
    parser.add_argument("--n-components", type=parameter_option("n_components", "--n-components"),
                        default=N_COMPONENTS,
                        help=f"Nystrom centres of a training fold of more than "
                        f"max({DUAL_MAX_TRAIN}, this) points (default {N_COMPONENTS}); "
                        f"smaller folds are fitted exactly")
    parser.add_argument("--methods", default=METHODS,
                        type=names_option("--methods", METHODS + OPTIONAL_METHODS),
                        help="comma-separated methods (default: all of " + ", ".join(METHODS)
                        + "; also " + ", ".join(OPTIONAL_METHODS) + ")")
    parser.add_argument("--extend-grid", action="store_true",
                        help="the ECRM searches extend the regularisation (by decades) and "
                        "the RBF kernel width past an end of their grids that wins (default: "
                        "the fixed grids of the protocol)")
    parser.add_argument("--missing", type=number_option("real", "--missing", low=0.0,
                                                        low_open=False, high=1.0,
                                                        high_open=True),
                        default=0.0,
                        help="remove each label of each training ranking with this probability "
                        "(e.g. 0.3; at least two labels kept, test rankings complete) and run "
                        "the methods that learn from incomplete rankings: "
                        + ", ".join(MISSING_METHODS) + " (default 0: complete rankings)")
    parser.set_defaults(func=run)

