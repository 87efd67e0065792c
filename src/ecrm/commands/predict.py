"""``ecrm predict``: label names for every row of a data file, from a model file.

One line per input row, in the input's order: CSV/TSV (``row,labels`` with the labels joined
by ``--label-sep``; ``--scores`` adds one ``score:<label>`` column per label) or JSON lines
(``{"row": 0, "labels": [...], "scores": {...}}``), chosen by the output's extension
(``.csv``, ``.tsv``, ``.jsonl``/``.json``) or ``--output-format``. ``-o -`` writes to standard
output (CSV unless ``--output-format`` says otherwise; the summary then goes to standard
error). ``--leaves-only`` writes each row's most specific labels only; ``--per-level`` one
column per depth level (``level_0, level_1, ...``; with ``--path-sep`` each label's last path
step, the layout ``--level-columns`` reads). A label column in the data file is not read.

The output path is checked before the model is read (it must not be the model or the data
file, and its directory must accept a new file); the file is written atomically, so a failed
or interrupted prediction leaves an existing output as it was and no temporary file.
"""

from __future__ import annotations

import argparse

from ecrm.commands import (
    add_data_options,
    estimator_of,
    existing_file_option,
    fail,
    load_for_model,
    row_labels,
)
from ecrm.commands._files import STDOUT, OutputError, atomic_text, check_output
from ecrm.commands._options import output_file_option

__all__ = ["add_parser", "run", "write_predictions"]

OUTPUT_FORMATS = ("csv", "tsv", "jsonl")


def _output_format(path: str, given: str | None) -> str:
    if given is not None:
        return given
    if path == STDOUT:
        return "csv"
    low = path.lower()
    for ext, fmt in [(".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl"), (".json", "jsonl")]:
        if low.endswith(ext):
            return fmt
    raise argparse.ArgumentTypeError(f"cannot tell the output format of {path!r}: use .csv, "
                                     ".tsv or .jsonl, or --output-format")


def write_predictions(path: str, fmt: str, labels: list[list], label_names, scores=None,
                      label_sep: str = ";", per_level: bool = False) -> None:
    """Write one line per row: its predicted label names (and scores).

    With ``per_level``, each row of ``labels`` is one list of names per depth level, written
    as the columns ``level_0, level_1, ...`` (JSON lines: ``"levels"``). Written atomically
    (a complete file or none, see :func:`ecrm.commands._files.atomic_text`); ``path="-"``
    writes to standard output.
    """
    import csv
    import json

    names = [str(n) for n in label_names]
    with atomic_text(path) as fh:
        if fmt == "jsonl":
            for i, row in enumerate(labels):
                rec: dict = ({"row": i, "levels": [[str(v) for v in level] for level in row]}
                             if per_level else {"row": i, "labels": [str(v) for v in row]})
                if scores is not None:
                    rec["scores"] = dict(zip(names, map(float, scores[i]), strict=True))
                fh.write(json.dumps(rec) + "\n")
            return
        writer = csv.writer(fh, delimiter="\t" if fmt == "tsv" else ",")
        width = max((len(row) for row in labels), default=0) if per_level else 1
        writer.writerow(["row"] + ([f"level_{k}" for k in range(width)] if per_level
                                   else ["labels"])
                        + ([f"score:{n}" for n in names] if scores is not None else []))
        for i, row in enumerate(labels):
            cells = ([label_sep.join(str(v) for v in level) for level in row] if per_level
                     else [label_sep.join(str(v) for v in row)])
            writer.writerow([i, *cells]
                            + ([f"{s:.6g}" for s in scores[i]] if scores is not None else []))


def run(args) -> int:
    """Run ``ecrm predict`` from parsed arguments."""
    import sys

    from ecrm.commands._options import progress_bar
    from ecrm.io import load
    from ecrm.labels import labels_of

    try:
        fmt = _output_format(args.output, args.output_format)
        check_output(args.output, [args.model, args.data])
    except (argparse.ArgumentTypeError, OutputError) as exc:
        return fail(str(exc))
    with progress_bar(3, "ecrm predict", enabled=not args.quiet) as bar:
        try:
            loaded = load(args.model)
            model = estimator_of(loaded)
            data = load_for_model(loaded, args, require_labels=False)
        except ValueError as exc:
            return fail(str(exc))
        bar.update()
        if (args.leaves_only or args.per_level) and not hasattr(model.output_space,
                                                                "to_labels"):
            return fail(f"--{'leaves-only' if args.leaves_only else 'per-level'} needs a model "
                        "of a label hierarchy; this model's outputs are a "
                        f"{type(model.output_space).__name__}")
        Y = model.predict(data.X)
        scores = model.predict_scores(data.X) if args.scores else None
        bar.update()
        try:
            if args.per_level:
                step = ((lambda n: str(n).rsplit(args.path_sep, 1)[-1]) if args.path_sep
                        else str)  # a path's last step, as in per-level input columns
                labels = [[[step(v) for v in level] for level in row] for row in
                          labels_of(model.output_space, Y, per_level=True)]
            else:
                labels = (labels_of(model.output_space, Y, leaves_only=True)
                          if args.leaves_only else row_labels(model, Y))
            write_predictions(args.output, fmt, labels, model.label_names_,
                              scores, args.label_sep, per_level=args.per_level)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            return fail(f"cannot write the predictions to {args.output!r}: "
                        f"{exc.strerror or exc} (an existing file there is left as it was)")
        bar.update()
    print(f"{len(Y)} predictions written to "
          f"{'standard output' if args.output == STDOUT else args.output}",
          file=sys.stderr if args.output == STDOUT else sys.stdout)
    return 0


def add_parser(subparsers) -> None:
    """Add the ``predict`` sub-command."""
    p = subparsers.add_parser("predict", help="predict label names for a data file",
                              description=__doc__.splitlines()[0])
    p.add_argument("model", type=existing_file_option("MODEL"), metavar="MODEL")
    p.add_argument("data", type=existing_file_option("DATA"), metavar="DATA")
    p.add_argument("-o", "--output", type=output_file_option("-o"), required=True,
                   metavar="OUT", help="predictions to write (.csv, .tsv or .jsonl; '-': "
                   "standard output)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default=None)
    p.add_argument("--scores", action="store_true", help="add every label's score")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--leaves-only", action="store_true",
                       help="write each row's most specific labels only (those with no "
                       "predicted child), as paths were given in training; the scores keep "
                       "every label")
    shape.add_argument("--per-level", action="store_true",
                       help="one column per depth level (level_0, level_1, ...) with that "
                       "level's predicted labels; with --path-sep, each label's last path "
                       "step (the layout --level-columns reads)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_data_options(p)
    p.set_defaults(func=run)
