"""``ecrm evaluate``: the multi-label metrics of a model's predictions on a labelled file.

Hamming loss (mean number of wrong labels, and as a fraction), hierarchical loss, exact match,
micro and macro F1, hierarchical precision/recall/F1 (hP/hR/hF) and micro AU(PRC) of the label
scores (:func:`ecrm.reporting.metrics.multilabel_report`), and precision, recall and F1 per level
of the hierarchy (:func:`ecrm.reporting.metrics.per_level_report`); a table on standard output, or
JSON with ``--json``. Beside the model's metrics stand those of three trivial baselines of its
training outputs (:func:`ecrm.baselines.trivial_baselines`: the empty set, the most frequent label
set, the per-label majority), with a warning (``ecrm: warning: ...``, and ``warnings`` in the JSON)
when the model is no better than one of them or predicts the empty set for many rows; a line on the
model (``model`` in the JSON: ``ecrm info``) heads them. With ``--predictions FILE`` (as written by
``ecrm predict``, ``--leaves-only`` and ``--per-level`` too) the model is not run: the labels are
read from the file and closed under the hierarchy (:func:`close_predictions`; AU(PRC) needs its
score columns). A label (class, ranked label) of the data file unseen in training is refused, or
left out and counted with ``--unseen ignore`` (:mod:`ecrm.commands._unseen`). The file is read with
the model's reading options unless given
(:func:`ecrm.commands._training.remember_reading_options`). ``--plot DIR`` writes the PNG pictures
of :func:`ecrm.reporting.plotting.evaluation_figures`, ``--report FILE`` one self-contained HTML
page with the model, the tables (also one row per label, sortable) and the pictures
(:func:`ecrm.reporting.report.write_report`); ``--baseline FILE`` (another model's ``ecrm predict
--scores`` output) adds its precision-recall curve. Output paths are checked before any work.

A ranking model is evaluated by the mean Kendall tau, the Kendall distance, Spearman's rho
and exact match (and the footrule or squared rank loss it was fitted for), beside the most
frequent training ranking and the ranking by mean training position; a multiclass model by
accuracy, the 0-1 loss and macro F1, beside the most frequent training class
(:mod:`ecrm.commands._outputs`). ``--predictions`` reads their ``predict`` output back; the
pictures and the report are for label sets.
"""

from __future__ import annotations

import csv
import json
import sys
import warnings

from ecrm.commands import (
    _task_files,
    _tasks,
    add_data_options,
    estimator_of,
    existing_file_option,
    fail,
    hierarchy_of,
    load_for_model,
)
from ecrm.commands._unseen import describe as describe_unseen
from ecrm.commands._unseen import read_label_sets

__all__ = ["add_parser", "close_predictions", "read_predictions", "run"]


def read_predictions(path: str, hierarchy, n_rows: int, label_sep: str = ";",
                     levels=None, path_sep: str | None = None, *, close: bool = True):
    """Label matrix (and scores, if present) from a file written by ``ecrm predict``: its ``labels``
    column, or the ``--per-level`` columns ``levels`` (or ``level_0, ...``) whose cells name labels
    or, by ``path_sep``, their last path steps (:func:`ecrm.datasets.labels.labels_from_levels`).
    The sets are closed under the hierarchy (:func:`close_predictions`: ``--leaves-only`` rows score
    as the full sets), unless ``close=False`` (a ``--baseline`` file, read for its scores)."""
    import numpy as np

    from ecrm.datasets.labels import LabelRowError, labels_from_levels, level_names

    names = [str(n) for n in hierarchy.labels]
    lists, scores, lines = [], [], []

    def from_levels(rows: list, first: list) -> list:
        try:
            return labels_from_levels(hierarchy, rows, path_sep=path_sep)
        except LabelRowError as exc:  # (its row counts from the first row given)
            raise ValueError(f"{path}, line {first[exc.row]}: {exc.reason}") from None

    per_level = False
    with open(path, encoding="utf-8", newline="") as fh:
        if path.lower().endswith((".jsonl", ".json")):
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    levels_of = rec.get("levels")  # --per-level
                    row = rec["labels"] if levels_of is None else levels_of
                    if "scores" in rec:
                        scores.append([float(rec["scores"][n]) for n in names])
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}, line {lineno}: not a prediction record "
                                     f"({exc})") from None
                per_level = per_level or levels_of is not None
                lists.append(row if levels_of is None else from_levels([row], [lineno])[0])
                lines.append(lineno)
        else:
            reader = csv.reader(fh, delimiter="\t" if path.lower().endswith(".tsv") else ",")
            header = next(reader, [])
            score_cols = [header.index(f"score:{n}") if f"score:{n}" in header else None
                          for n in names]
            layout = next((list(c) for c in (levels, level_names(hierarchy))
                           if c and all(n in header for n in c)), None)
            if "labels" not in header and layout is None:
                raise ValueError(f"{path}, line 1: no 'labels' column, nor the level columns "
                                 f"{list(levels or level_names(hierarchy))} of "
                                 "ecrm predict --per-level")
            per_level = "labels" not in header
            cols = [header.index(n) for n in layout or ()] if per_level else \
                [header.index("labels")]
            cells = []
            for row in reader:
                cells.append([[v for v in (row[c] if c < len(row) else "").split(label_sep)
                               if v] for c in cols])
                lines.append(reader.line_num)
                if all(c is not None for c in score_cols):
                    scores.append([float(row[c]) for c in score_cols])  # type: ignore[index]
            lists = from_levels(cells, lines) if per_level else [c[0] for c in cells]
    if len(lists) != n_rows:
        raise ValueError(f"{path}: {len(lists)} predictions for {n_rows} data rows")
    by_name = {str(v): v for v in hierarchy.labels}
    for row, line_no in zip(lists, lines, strict=True):
        unknown = next((v for v in row if str(v) not in by_name), None)
        if unknown is not None:
            raise ValueError(f"{path}, line {line_no}: label {unknown!r} is not in the model's "
                             "hierarchy")
    Y = hierarchy.to_matrix([[by_name[str(v)] for v in row] for row in lists], close=False)
    if close:
        Y = close_predictions(hierarchy, Y, lines, path, per_level=per_level)
    return Y, (np.array(scores) if len(scores) == n_rows else None)


def close_predictions(hierarchy, Y, lines, path: str, *, per_level: bool = False):
    """The predicted label sets ``Y`` (0/1, as a file lists them) closed under the
    hierarchy's ancestors.

    ``ecrm predict`` writes every label of a row, or with ``--leaves-only`` its most
    specific ones (none under another), from which the closure
    :math:`\\bar y_k = \\max_{j:\\,k \\preceq j} y_j` gives the set back. A row that is
    neither (a label with some of its ancestors but not all), a file that mixes the two
    forms, or a ``--per-level`` row without a label of a level above one of its own cannot
    be told from a set that breaks the hierarchy: it is refused, naming its line.
    """
    import numpy as np

    if not np.asarray(hierarchy.edges).size:
        return Y
    closed = hierarchy.close(Y)
    A = hierarchy.ancestors_matrix().astype(np.float64)  # A[j, k]: k is j or above it
    above_on = np.asarray((A @ Y.T).T) - Y  # how many strict ancestors of each label are on
    nested = ((Y > 0) & (above_on > 0)).any(axis=1)  # a label under another of the row
    partial = (closed > Y).any(axis=1)  # an ancestor missing
    names = [str(v) for v in hierarchy.labels]

    def pair(i: int, on: bool) -> str:
        """A label of row ``i`` and a strict ancestor of it that is ``on`` (or off)."""
        for j in np.flatnonzero(Y[i] > 0):
            k = next((k for k in A.indices[A.indptr[j]:A.indptr[j + 1]]
                      if k != j and (Y[i, k] > 0) == on), None)
            if k is not None:
                return f"{names[j]!r} {'with' if on else 'without'} {names[k]!r}"
        raise AssertionError  # pragma: no cover - the masks say there is one

    rows = np.flatnonzero(nested & partial)
    if rows.size:
        i = int(rows[0])
        raise ValueError(f"{path}, line {lines[i]}: lists {pair(i, True)} but "
                         f"{pair(i, False)}: a row of ecrm predict lists every label of its "
                         "set, or with --leaves-only the most specific ones only")
    if partial.any() and (per_level or nested.any()):
        i = int(np.flatnonzero(partial)[0])
        form = ("names a label at every level above its own (as ecrm predict --per-level "
                "writes)" if per_level else
                f"lists every label of its set (as ecrm predict writes, and line "
                f"{lines[int(np.flatnonzero(nested)[0])]} does), not the most specific ones "
                "only (--leaves-only)")
        raise ValueError(f"{path}, line {lines[i]}: lists {pair(i, False)}; each row of this "
                         f"file {form}")
    return closed


def run(args) -> int:
    """Run ``ecrm evaluate`` from parsed arguments."""
    from ecrm.commands._files import OutputError, check_output, check_output_directory
    from ecrm.commands._options import progress_bar
    from ecrm.commands._training import remember_reading_options
    from ecrm.model_files.io import load
    from ecrm.reporting.metrics import multilabel_report, per_level_report

    inputs = [args.model, args.data, args.predictions, args.baseline]
    try:
        if args.report is not None:
            check_output(args.report, inputs, option="--report")
        if args.plot is not None:
            check_output_directory(args.plot, option="--plot")
    except OutputError as exc:
        return fail(str(exc))
    with progress_bar(2, "ecrm evaluate", enabled=not args.quiet, stages=True) as bar:
        try:
            loaded = load(args.model)
            model = estimator_of(loaded)
            task = _tasks.task_of(model)
            remember_reading_options(args, loaded)
            refusal = _tasks.label_set_only(args, task)
            if refusal is not None:
                return fail(f"{refusal} ({args.model})")
            if task != "multilabel":
                data = _task_files.read_labelled(loaded, args)
                outputs = _tasks.outputs_of(model)
                keep = data.keep
                Y = (model.predict(data.X) if args.predictions is None else
                     _read_outputs(args.predictions, outputs,
                                   len(data.Y) if keep is None else len(keep)))
                if args.predictions is not None and keep is not None:
                    Y = Y[keep]  # the rows of unseen outputs are left out of the scores
                bar.update()
                return _evaluate_outputs(args, loaded, model, outputs, data.Y, Y,
                                         data.unseen)
            if hierarchy_of(model.output_space) is None:
                return fail(f"{args.model}: evaluate needs a model of label sets (a Hierarchy "
                            f"output space); this one has {model.output_space!r}")
            data, unseen = read_label_sets(
                loaded, args, lambda: load_for_model(loaded, args, require_labels=True))
            bar.update()
            h = model.output_space
            if args.predictions is not None:
                from ecrm.commands.predict import level_layout

                Y, S = read_predictions(args.predictions, h, len(data.Y), args.label_sep,
                                        *level_layout(loaded, args))
            else:
                Y, S = model.predict(data.X), _scores(model, data.X)
            baseline = None
            if args.baseline is not None:
                baseline = read_predictions(args.baseline, h, len(data.Y), args.label_sep,
                                            close=False)[1]
                if baseline is None:
                    raise ValueError(f"{args.baseline}: no score columns (write it with "
                                     "ecrm predict --scores)")
        except ValueError as exc:
            return fail(str(exc))
        bar.update()
    tree = h if h.edges.size else None
    report = multilabel_report(data.Y, Y, S, hierarchy=tree)
    levels = None if tree is None else per_level_report(data.Y, Y, tree)
    context = _context(args, loaded, model, data.Y, Y, report, tree)
    if args.unseen == "ignore":
        context["unseen"] = unseen or {"labels": {}, "rows": 0}
    if args.plot is not None or args.report is not None:
        try:
            _pictures(args, data.Y, Y, S, tree, baseline, model, h, context)
        except ImportError as exc:
            return fail(str(exc))
    if args.json:
        extra = {} if levels is None else {"per_level": {k: v.tolist()
                                                         for k, v in levels.items()}}
        print(json.dumps({"n_rows": len(Y), "n_labels": h.n_labels, **report, **extra,
                          **context}, indent=2))
        return 0
    print(f"{args.data}: {len(Y)} rows, {h.n_labels} labels")
    _print_table(context["model"], report, context["baselines"] or {})
    if levels is not None:
        print(f"  {'level':<8}{'labels':>8}{'true':>9}{'predicted':>11}{'precision':>11}"
              f"{'recall':>9}{'F1':>9}")
        for row in zip(*(levels[k] for k in ("level", "n_labels", "support", "predicted",
                                             "precision", "recall", "f1")), strict=True):
            print(f"  {row[0]:<8}{row[1]:>8}{row[2]:>9}{row[3]:>11}{row[4]:>11.4f}"
                  f"{row[5]:>9.4f}{row[6]:>9.4f}")
    line = describe_unseen(unseen, rows_left_out=False)
    if line is not None:
        print(f"  {line}")
    return 0


def _read_outputs(path: str, outputs, n_rows: int):
    """A ranking or multiclass model's predictions from its ``ecrm predict`` file (the
    ``ranking`` or ``class`` column or key)."""
    cells, lines = [], []
    with open(path, encoding="utf-8", newline="") as fh:
        if path.lower().endswith((".jsonl", ".json")):
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        cells.append(outputs.cell(json.loads(line)[outputs.column]))
                    except (ValueError, KeyError, TypeError) as exc:
                        raise ValueError(f"{path}, line {lineno}: not a prediction record "
                                         f"with {outputs.column!r} ({exc})") from None
                    lines.append(lineno)
        else:
            reader = csv.reader(fh, delimiter="\t" if path.lower().endswith(".tsv") else ",")
            header = next(reader, [])
            if outputs.column not in header:
                raise ValueError(f"{path}, line 1: no {outputs.column!r} column (the "
                                 f"predictions of a {outputs.task} model)")
            col = header.index(outputs.column)
            for row in reader:
                if row:
                    cells.append(row[col] if col < len(row) else "")
                    lines.append(reader.line_num)
    if len(cells) != n_rows:
        raise ValueError(f"{path}: {len(cells)} predictions for {n_rows} data rows")
    return outputs.outputs(cells, lines, path)


def _evaluate_outputs(args, loaded, model, outputs, Y_true, Y_pred, unseen=None) -> int:
    """Print a ranking or multiclass model's metrics beside its trivial baselines."""
    from ecrm.exceptions import TrivialModelWarning
    from ecrm.reporting.report import METRIC_NAMES

    report = outputs.metrics(model, Y_true, Y_pred)
    baselines = outputs.baselines(model, Y_true)
    messages = []
    if baselines is None:
        messages.append(f"{args.model} holds neither the training outputs nor their "
                        "statistics: no trivial baselines to compare with")
    else:
        main = outputs.MAIN
        messages += [f"the model is no better than the {outputs.BASELINES[b][0]} "
                     f"({_tasks.METRIC_NAMES[main]} {report[main]:.4f} against {r[main]:.4f})"
                     for b, r in baselines.items() if report[main] <= r[main]]
    for message in messages:
        warnings.warn(message, TrivialModelWarning if baselines else UserWarning, stacklevel=2)
    about = _about(args, loaded)
    if args.json:
        extra = {} if args.unseen != "ignore" else {
            "unseen": unseen or {"classes" if outputs.task == "multiclass" else "labels": {},
                                 "rows": 0}}
        print(json.dumps({"n_rows": len(Y_true), "task": outputs.task,
                          "n_labels": len(outputs.names), **report, "model": about,
                          "baselines": baselines, "warnings": messages, **extra}, indent=2))
        return 0
    print(f"{args.data}: {len(Y_true)} rows, {outputs.describe()}")
    _print_table(about, report, baselines or {}, outputs.BASELINES,
                 {**METRIC_NAMES, **_tasks.METRIC_NAMES})
    line = describe_unseen(unseen, rows_left_out=True)
    if line is not None:
        print(f"  {line}")
    return 0


def _scores(model, X):
    """The model's label scores, or ``None`` (with a warning) for a model kind without them."""
    from ecrm.commands import scores_note

    note = scores_note(model)
    if note is None:
        return model.predict_scores(X)
    warnings.warn(f"{note}: the metrics of label scores (AU(PRC)) are not reported",
                  stacklevel=2)
    return None


def _context(args, loaded, model, Y_true, Y_pred, report: dict, tree) -> dict:
    """The model's summary (``ecrm info``), the trivial baselines of its training outputs
    and the warnings when it is no better than one of them (also issued, as
    :class:`ecrm.exceptions.TrivialModelWarning`)."""
    from ecrm.baselines import check_against_baselines, output_statistics, trivial_baselines

    about = _about(args, loaded)
    stats = (getattr(model, "output_mean_", None), getattr(model, "output_mode_", None))
    if stats[0] is None and getattr(model, "Y_fit_", None) is not None:  # an older file
        stats = output_statistics(model.Y_fit_)
    if stats[0] is None:
        message = (f"{args.model} holds neither the training outputs nor their statistics: "
                   "no trivial baselines to compare with (refit it with this version of ecrm)")
        warnings.warn(message, UserWarning, stacklevel=2)
        return {"model": about, "baselines": None, "warnings": [message]}
    baselines = trivial_baselines(Y_true, *stats, hierarchy=tree)
    own = {"HierarchicalLoss": "hierarchical", "HammingLoss": "hamming"}.get(
        type(model.loss).__name__)  # the loss the model was fitted for, if a label-set one
    messages = check_against_baselines(Y_true, Y_pred, report, baselines,
                                       metric=own if own in report else None, model=model)
    return {"model": about, "baselines": baselines, "warnings": messages}


def _about(args, loaded) -> dict | None:
    """The model's summary (``ecrm info``) without its labels; ``None`` for an estimator
    that does not describe itself as ECRM's do."""
    from ecrm.commands.info import summary

    try:
        about = summary(args.model, loaded)
    except AttributeError:
        return None
    about.pop("labels", None)
    return about


def _print_table(about, report: dict, baselines: dict, heads=None, names=None) -> None:
    """The metrics table of the text output: the model's, then each baseline's (``heads``:
    key -> (long name, column head); default: those of the label-set baselines)."""
    from ecrm.baselines.trivial import BASELINE_NAMES
    from ecrm.reporting.report import METRIC_NAMES, model_line

    heads = heads or {b: (BASELINE_NAMES[b], head) for b, head in (
        ("empty", "empty set"), ("most_frequent", "most freq."), ("majority", "majority"))}
    names = names or METRIC_NAMES
    if about is not None:
        print(f"  model: {model_line(about)}")
    print(f"  {'':<44}{'model':>10}" + "".join(f"{heads[b][1]:>12}" for b in baselines))
    for key, value in report.items():
        print(f"  {names[key]:<44}{value:>10.4f}" + "".join(
            f"{r[key]:>12.4f}" if key in r else f"{'':>12}" for r in baselines.values()))
    if baselines:
        print("  baselines (one prediction for every row): " + ", ".join(
            heads[b][0] for b in baselines) + " of the training outputs")


def _pictures(args, Y_true, Y, S, hierarchy, baseline, model, h, context) -> None:
    """Write ``--plot`` PNGs and the ``--report`` page (matplotlib from the plot extra)."""
    from ecrm.commands._files import atomic_path
    from ecrm.reporting.plotting import evaluation_figures
    from ecrm.reporting.report import write_report

    if args.plot is not None:
        for path in evaluation_figures(args.plot, Y_true, Y, S, hierarchy=hierarchy,
                                       baseline=baseline):
            print(f"wrote {path}", file=sys.stderr)
    if args.report is not None:
        with atomic_path(args.report) as tmp:
            write_report(tmp, Y_true, Y, S, hierarchy=h, baseline=baseline,
                         title=f"ecrm evaluate: {args.data}",
                         train_frequency=getattr(model, "output_mean_", None),
                         baselines=context["baselines"],
                         summary=context["model"], warnings=context["warnings"],
                         notes=[f"model {args.model}, data {args.data}"
                                + ("" if args.predictions is None
                                   else f", predictions {args.predictions}")]
                         + [v for v in [describe_unseen(context.get("unseen"),
                                                        rows_left_out=False)] if v])
        print(f"wrote {args.report}", file=sys.stderr)


def add_parser(subparsers) -> None:
    """Add the ``evaluate`` sub-command."""
    p = subparsers.add_parser("evaluate", help="evaluate a model on a labelled data file",
                              description=__doc__.splitlines()[0])
    p.add_argument("model", type=existing_file_option("MODEL"), metavar="MODEL")
    p.add_argument("data", type=existing_file_option("DATA"), metavar="DATA")
    p.add_argument("--predictions", type=existing_file_option("--predictions"), default=None,
                   metavar="FILE", help="evaluate these predictions instead of running the model")
    p.add_argument("--baseline", type=existing_file_option("--baseline"), default=None,
                   metavar="FILE", help="another model's `ecrm predict --scores` output, drawn "
                   "beside this model's precision-recall curve")
    p.add_argument("--plot", default=None, metavar="DIR",
                   help="write the evaluation's pictures (PNG) into this directory")
    p.add_argument("--report", default=None, metavar="FILE",
                   help="write one self-contained HTML page with the tables and pictures")
    p.add_argument("--unseen", choices=("error", "ignore"), default="error",
                   help="labels (classes) of DATA unseen in training: refuse the file (error, "
                   "the default), or leave them out of the scores, counted in the output "
                   "(ignore: a label set keeps its other labels, a class or ranking row is "
                   "left out)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_data_options(p, remembered=True)
    p.set_defaults(func=run)
