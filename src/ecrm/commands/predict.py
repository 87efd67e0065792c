"""``ecrm predict``: label names for every row of a data file, from a model file.

One line per input row, in the input's order: CSV/TSV (``row,labels`` with the labels joined
by ``--label-sep``; ``--scores`` adds one ``score:<label>`` column per label) or JSON lines
(``{"row": 0, "labels": [...], "scores": {...}}``), chosen by the output's extension
(``.csv``, ``.tsv``, ``.jsonl``/``.json``) or ``--output-format``. Without ``-o`` (or with
``-o -``) the predictions go to standard output (CSV unless ``--output-format`` says
otherwise; the summary then goes to standard error), nothing before the first rows are
predicted; a failure after rows were streamed says how many were written. ``--id-column
NAME`` writes that column of the data file first, instead of the 0-based row.
``--leaves-only`` writes each row's most specific labels only; ``--per-level`` one column per
depth level, in the layout the model was fitted on (:func:`ecrm.datasets.labels.level_layout`:
its ``--level-columns``, else ``level_0, level_1, ...``; a cell holds a label's last path step
for a model of label paths, by the fit's or another ``--path-sep``, else its name), as
``ecrm.datasets.labels.predict_labels(model, X, per_level=True)`` in Python (whose
``path_sep=None`` gives the full names of plain ``ecrm predict``'s ``labels`` column).
``ecrm evaluate --predictions`` reads every form back. The data file is read with the
model's reading options (``--delimiter``, ``--label-sep``, ...) unless given; its label
column, if any, is not read. A ranking model writes one ``ranking`` column (``a>c>b``, first
to last) and a multiclass model one ``class`` column (JSON lines: a list of labels, a class
name; :mod:`ecrm.commands._outputs`). A model of other outputs (flows) is refused.

The output path is checked before the model is read (it must not be the model or the data
file, and its directory must accept a new file); the file is written atomically, so a failed
or interrupted prediction leaves an existing output as it was and no temporary file. A FIFO
or a character device (``/dev/stdout``) is written directly, as standard output is.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys

from ecrm.commands import (
    _task_files,
    _tasks,
    add_data_options,
    estimator_of,
    existing_file_option,
    fail,
    iter_for_model,
    label_names,
    level_columns_of,
    printable,
    row_labels,
    scores_note,
)
from ecrm.commands._files import STDOUT, OutputError, atomic_text, check_output, is_stream
from ecrm.commands._options import output_file_option
from ecrm.commands._training import remember_reading_options

__all__ = ["add_parser", "run", "write_predictions"]

OUTPUT_FORMATS = ("csv", "tsv", "jsonl")


def _output_format(path: str, given: str | None) -> str:
    if given is not None:
        return given
    if path == STDOUT:
        return "csv"
    fmt = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "json": "jsonl"}.get(
        path.lower().rpartition(".")[2])
    if fmt is not None:
        return fmt
    raise argparse.ArgumentTypeError(f"cannot tell the output format of {path!r}: use .csv, "
                                     ".tsv or .jsonl, or --output-format")


def _csv_writer(fh, fmt: str):
    """A CSV/TSV writer of ``\\n``-ended lines (``None`` for JSON lines), and the ``str`` of
    its cells: a terminal sees label names escaped (a file gets them as they are: data)."""
    isatty = getattr(fh, "isatty", None)
    shown = printable if isatty is not None and isatty() else str
    if fmt == "jsonl":
        return None, shown
    return csv.writer(fh, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n"), shown


class _Writer:
    """Writes prediction rows to an open text file, a chunk at a time (rows numbered on,
    or keyed by the ``id_column``'s cells); with ``per_level``, one column per name of
    ``levels`` (default ``level_0, level_1, ...`` as wide as the first rows)."""

    def __init__(self, fh, fmt: str, label_names, *, scores: bool, label_sep: str,
                 per_level: bool, id_column: str | None = None, levels=None):
        self.fh, self.fmt, self.label_sep, self.per_level = fh, fmt, label_sep, per_level
        self.csv, self.str = _csv_writer(fh, fmt)
        self.names = [str(n) for n in label_names]
        self.scores, self.row, self.key = scores, 0, id_column or "row"
        self.levels = None if levels is None else [str(n) for n in levels]

    def header(self, width: int = 1) -> None:
        """The CSV/TSV header (``width``: the level columns with ``per_level`` when no
        ``levels`` names were given)."""
        if self.per_level and self.levels is None:
            self.levels = [f"level_{k}" for k in range(width)]
        if self.csv is not None:
            self.csv.writerow([self.key] + ([self.str(n) for n in self.levels or ()]
                                            if self.per_level else ["labels"])
                              + ([f"score:{self.str(n)}" for n in self.names]
                                 if self.scores else []))

    def rows(self, labels, scores=None, ids=None) -> None:
        """Write one line per row of ``labels`` (and ``scores``), keyed by ``ids`` if given;
        ``per_level`` rows (a list of names per level) padded to the header's width."""
        width = len(self.levels or ())
        for k, row in enumerate(labels):
            i = self.row + k if ids is None else ids[k]
            if self.per_level:
                row = [list(level) for level in row] + [[]] * (width - len(row))
            if self.csv is None:
                rec: dict = ({self.key: i, "levels": [[str(v) for v in level] for level in row]}
                             if self.per_level else {self.key: i,
                                                     "labels": [str(v) for v in row]})
                # (JSON escapes control characters itself)
                if scores is not None:
                    rec["scores"] = dict(zip(self.names, map(float, scores[k]), strict=True))
                self.fh.write(json.dumps(rec) + "\n")
                continue
            cells = ([self.label_sep.join(self.str(v) for v in level) for level in row]
                     if self.per_level else [self.label_sep.join(self.str(v) for v in row)])
            self.csv.writerow([self.str(i), *cells]
                              + ([f"{s:.6g}" for s in scores[k]] if scores is not None else []))
        self.row += len(labels)


def write_predictions(path: str, fmt: str, labels: list[list], label_names, scores=None,
                      label_sep: str = ";", per_level: bool = False, levels=None) -> None:
    """Write one line per row: its predicted label names (and scores); with ``per_level``,
    each row of ``labels`` is one list of names per depth level, written as the columns
    ``levels`` (default ``level_0, level_1, ...``; JSON lines: ``"levels"``). Written
    atomically (:func:`ecrm.commands._files.atomic_text`; ``path="-"``: standard output)."""
    with atomic_text(path) as fh:
        writer = _Writer(fh, fmt, label_names, scores=scores is not None,
                         label_sep=label_sep, per_level=per_level, levels=levels)
        writer.header(max((len(row) for row in labels), default=0) if per_level else 1)
        writer.rows(labels, scores)


class _Progress:
    """The rows written so far (on the progress bar; a failure says how many a stream got)."""

    def __init__(self, bar) -> None:
        self.bar, self.rows = bar, 0

    def advance(self, n: int) -> None:
        self.rows += n
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.rows:,} rows")


def level_layout(loaded, args) -> tuple[list[str], str | None]:
    """``--per-level``'s columns and what their cells hold: the model's
    :func:`ecrm.datasets.labels.level_layout`, by ``--level-columns``/``--path-sep`` if given."""
    from ecrm.datasets.labels import level_layout as layout

    return layout(loaded, args.path_sep or "auto", level_columns=level_columns_of(loaded, args))


def _labels(args, model, Y, path_sep: str | None) -> list:
    """The label names of the 0/1 predictions ``Y`` as ``--leaves-only``/``--per-level`` ask."""
    from ecrm.datasets.labels import labels_of

    if args.per_level:  # a path's last step by path_sep, as in per-level input columns
        return labels_of(model.output_space, Y, per_level=True, path_sep=path_sep).tolist()
    return (labels_of(model.output_space, Y, leaves_only=True) if args.leaves_only
            else row_labels(model, Y))


def _predict_into(args, loaded, model, fh, fmt: str, progress: _Progress) -> None:
    """Predict chunk by chunk and write as it goes (nothing before the first chunk is
    predicted: a failed prediction writes no header into standard output)."""
    levels, path_sep = level_layout(loaded, args) if args.per_level else (None, None)
    writer = _Writer(fh, fmt, label_names(model), scores=args.scores,
                     label_sep=args.label_sep, per_level=args.per_level,
                     id_column=args.id_column, levels=levels)
    for chunk in iter_for_model(loaded, args):
        if args.scheduler is not None:
            Y, scores = _on_cluster(model, chunk.X, args.scores)
        else:
            Y = model.predict(chunk.X)
            scores = model.predict_scores(chunk.X) if args.scores else None
        labels = _labels(args, model, Y, path_sep)
        if progress.rows == 0:
            writer.header()
        writer.rows(labels, scores, chunk.get("ids"))
        progress.advance(len(labels))


def _on_cluster(model, X, scores: bool):
    """The predictions (and with ``scores`` the label scores) of ``X`` on the active Dask
    cluster: one row block per worker, predicted lazily by the estimator there."""
    import dask
    import dask.array as da
    import scipy.sparse as sp
    from distributed import get_client

    if sp.issparse(X):
        raise ValueError("--scheduler predicts the dense features of a CSV/TSV file")
    workers = max(1, len(get_client().scheduler_info().get("workers", ())))
    Xd = da.from_array(X, chunks=(max(1, -(-X.shape[0] // workers)), -1))
    lazy = [model.predict(Xd), *([model.predict_scores(Xd)] if scores else [])]
    out = dask.compute(*lazy)
    return out[0], (out[1] if scores else None)


def _predict_outputs(args, loaded, model, fh, fmt: str, progress: _Progress) -> None:
    """A ranking or multiclass model's predictions, chunk by chunk: one ``ranking``
    (``a>c>b``) or ``class`` column (JSON lines: a list of labels, a class name)."""
    outputs = _tasks.outputs_of(model)
    writer, shown = _csv_writer(fh, fmt)
    key = args.id_column or "row"
    for chunk in _task_files.iter_features(loaded, args):
        Y = model.predict(chunk.X)
        n = progress.rows
        ids = chunk.get("ids") or range(n, n + len(Y))
        if writer is None:
            fh.writelines(json.dumps({key: i, outputs.column: value}) + "\n"
                          for i, value in zip(ids, outputs.values(Y), strict=True))
        else:
            if n == 0:  # nothing before the first chunk is predicted (see _predict_into)
                writer.writerow([key, outputs.column])
            writer.writerows([shown(str(i)), shown(text)]
                             for i, text in zip(ids, outputs.text(Y), strict=True))
        progress.advance(len(Y))


def _predicts_dask(model) -> bool:
    """Whether ``model``'s prediction takes Dask arrays (lazily, per row chunk)."""
    from ecrm.weights._risk import RiskEstimator
    from ecrm.weights.mixture import MixedRiskECRM
    from ecrm.weights.stack import StackedRiskECRM

    return isinstance(model, (RiskEstimator, MixedRiskECRM, StackedRiskECRM))


def _partial(output: str, rows: int) -> str:
    """What a prediction that failed after ``rows`` rows left: a file nothing (written
    atomically), a stream (standard output, a FIFO) those rows."""
    if rows == 0:
        return ""  # nothing written, not even the header
    if not is_stream(output):
        return (f" (after {rows:,} rows; {output} is not written, an existing file there is "
                "left as it was)")
    where = "standard output" if output == STDOUT else output
    return (f" ({rows:,} prediction rows were already written to {where} before this "
            "failure: the predictions there are incomplete)")


def run(args) -> int:
    """Run ``ecrm predict`` from parsed arguments: a CSV/TSV file is read, predicted and
    written in chunks of rows (memory bounded by a chunk), the output still atomic."""
    from ecrm.commands._options import progress_bar
    from ecrm.commands._training import _connect
    from ecrm.model_files.io import load

    try:
        fmt = _output_format(args.output, args.output_format)
        check_output(args.output, [args.model, args.data])
    except (argparse.ArgumentTypeError, OutputError) as exc:
        return fail(str(exc))
    summary = sys.stderr if is_stream(args.output) else sys.stdout  # not into the output
    with progress_bar(2, "ecrm predict", enabled=not args.quiet, stages=True) as bar:
        try:
            loaded = load(args.model)
            model = estimator_of(loaded)
            task = _tasks.task_of(model)
        except ValueError as exc:
            return fail(str(exc))
        remember_reading_options(args, loaded)
        refusal = _tasks.label_set_only(args, task)
        if refusal is not None:
            return fail(f"{refusal} ({args.model})")
        if (args.leaves_only or args.per_level) and not hasattr(model.output_space,
                                                                "to_labels"):
            return fail(f"--{'leaves-only' if args.leaves_only else 'per-level'} needs a model "
                        "of a label hierarchy; this model's outputs are a "
                        f"{type(model.output_space).__name__}")
        if args.scores and scores_note(model):
            return fail(f"--scores: {scores_note(model)}; predict without --scores")
        if args.scheduler is not None and not _predicts_dask(model):
            return fail(f"--scheduler predicts with ECRM's weight families; this model is a "
                        f"{type(model).__name__}")
        bar.update()
        progress = _Progress(bar)
        try:
            with contextlib.ExitStack() as stack, atomic_text(args.output) as fh:
                if args.scheduler is not None:
                    stack.callback(_connect(args).close)
                (_predict_into if task == "multilabel" else _predict_outputs)(
                    args, loaded, model, fh, fmt, progress)
        except ValueError as exc:
            return fail(f"{exc}{_partial(args.output, progress.rows)}")
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            left = _partial(args.output, progress.rows) or (
                "" if is_stream(args.output) else " (an existing file there is left as it was)")
            return fail(f"cannot write the predictions to {args.output!r}: "
                        f"{exc.strerror or exc}{left}")
        bar.update()
    print(f"{progress.rows} predictions written to "
          f"{'standard output' if args.output == STDOUT else args.output}",
          file=summary)
    return 0


def add_parser(subparsers) -> None:
    """Add the ``predict`` sub-command."""
    p = subparsers.add_parser("predict", help="predict label names for a data file",
                              description=__doc__.splitlines()[0])
    p.add_argument("model", type=existing_file_option("MODEL"), metavar="MODEL")
    p.add_argument("data", type=existing_file_option("DATA"), metavar="DATA")
    p.add_argument("-o", "--output", type=output_file_option("-o"), default=STDOUT,
                   metavar="OUT", help="predictions to write (.csv, .tsv or .jsonl; '-', the "
                   "default: standard output, as CSV unless --output-format says otherwise)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default=None)
    p.add_argument("--scores", action="store_true", help="add every label's score")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--leaves-only", action="store_true",
                       help="write each row's most specific labels only (those with no "
                       "predicted child), as paths were given in training; the scores keep "
                       "every label")
    shape.add_argument("--per-level", action="store_true",
                       help="one column per depth level with that level's predicted labels: "
                       "the model's level columns (fitted with --level-columns), else "
                       "level_0, level_1, ...; each cell a label's last path step for a "
                       "model of label paths, else its name (as "
                       "ecrm.datasets.labels.predict_labels "
                       "in Python); evaluate --predictions reads it back")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="predict on this Dask cluster (e.g. tcp://10.0.0.5:8786; 'local': a "
                   "cluster of this machine's cores): each chunk of rows read is split "
                   "among the workers and predicted there")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_data_options(p, remembered=True)
    p.set_defaults(func=run)
