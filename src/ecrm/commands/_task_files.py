"""The data files of rankings, classes and bucket orders: CSV/TSV files with a label column,
or files of the label ranking benchmark's layout (first line ``n,p,k``, then ``p`` features and
the rank of each of ``k`` labels per line, :func:`ecrm.datasets.load_label_ranking`; the bucket
of each label for bucket orders), whose features are ``x1 .. xp`` and labels ``label1 ..
labelk``. Read for training, for an evaluation (with the true outputs) and for predictions.
"""

from __future__ import annotations

from pathlib import Path

from ecrm.commands._outputs import location
from ecrm.commands._tasks import outputs_class, outputs_of, task_of

__all__ = ["iter_features", "read_labelled", "read_training"]


def _benchmark(path) -> bool:
    """Whether the file opens with the label ranking benchmark's ``n,p,k`` line."""
    from ecrm.datasets._files import _open_binary

    with _open_binary(Path(path)) as fh:
        first = fh.readline(1024).decode("utf-8", "replace").lstrip("\ufeff").split(",")
    return len(first) == 3 and all(f.strip().isdigit() for f in first)


def _read_benchmark(path, args, task: str):
    """A benchmark-layout file: a Bunch with ``X``, ``ranks`` (for bucket orders, the bucket
    numbers), ``label_names``, ``feature_names`` (a tuple), ``filename`` and ``row_lines``
    (``None``); ``--delimiter`` and ``--id-column`` refused (:func:`_no_csv_options`)."""
    from ecrm.commands._bucket_orders import read_positions
    from ecrm.datasets.label_ranking import _read_file

    _no_csv_options(path, args)
    data = (read_positions(path) if task == "partial-ranking"
            else _read_file(Path(path), Path(path).name.split(".")[0]))
    data.feature_names, data.filename, data.row_lines = tuple(data.feature_names), str(path), None
    return data


def _no_csv_options(path, args) -> None:
    """Refuse ``--delimiter`` and ``--id-column`` for a benchmark-layout file (which has
    neither), when given (not the delimiter of a model's CSV training file)."""
    remembered = getattr(args, "remembered", {})
    for flag, value in (("--delimiter", args.delimiter), ("--id-column", args.id_column)):
        if value is not None and flag[2:] not in remembered:
            raise ValueError(f"{path}: {flag} is for CSV/TSV files with a header; this file "
                             "has the label ranking benchmark's layout")


def _table(path: str, args, *, task: str):
    """Features and label cells of a CSV/TSV file: ``X``, ``cells``, ``row_lines``,
    ``feature_names``, ``filename``, ``ids`` (``--id-column``'s cells, or ``None``)."""
    from sklearn.utils import Bunch

    from ecrm.datasets._csv import CHUNK_ROWS, _CsvTable, read_table
    from ecrm.datasets._files import DataFileError, _check_path
    from ecrm.datasets.formats import _format_of, csv_sep

    fmt = _format_of(_check_path(path)) if args.format == "auto" else args.format
    if fmt not in ("csv", "tsv"):
        also = (" (or the label ranking benchmark's layout)" if task in _BENCHMARK_TASKS
                else "")
        raise DataFileError(path, None, f"--task {task} reads CSV/TSV files with a label "
                            f"column{also}; this is a {fmt} file")
    table = _CsvTable(path, sep=csv_sep(fmt, args.delimiter), label_column=args.label_column,
                      path_sep=None, require_labels=True, ignore_labels=False,
                      level_columns=None, id_column=args.id_column)
    X, cells, row_lines, ids = read_table(table, CHUNK_ROWS)
    return Bunch(X=X, cells=cells, row_lines=row_lines,
                 feature_names=tuple(table.feature_names), filename=str(table.path),
                 ids=ids if args.id_column is not None else None)


#: The tasks that also read files of the benchmark's ``n,p,k`` layout.
_BENCHMARK_TASKS = ("ranking", "partial-ranking")


def _labelled(path: str, args, task: str):
    """One labelled file: :func:`_table`'s Bunch, or a benchmark file's (``ranks`` and
    ``label_names`` instead of ``cells``)."""
    if task in _BENCHMARK_TASKS and args.format in ("auto", "csv") and _benchmark(path):
        return _read_benchmark(path, args, task)
    return _table(path, args, task=task)


def read_training(args, impute: bool):
    """The rows of every TRAIN file for ``--task ranking`` or ``multiclass``: a Bunch with
    ``X``, ``Y``, ``space``, ``outputs`` (its :class:`Ranking` or :class:`Classes`),
    ``feature_names``, ``filename``. Several files must have the same feature columns."""
    import numpy as np
    from sklearn.utils import Bunch

    from ecrm.datasets.formats import check_finite_features

    parts = [_labelled(path, args, args.task) for path in args.train]
    for data in parts:
        check_finite_features(data, allow_missing=impute)
        if data.feature_names != parts[0].feature_names:
            raise ValueError(f"{parts[0].filename} and {data.filename} have different feature "
                             "columns")
    kind = outputs_class(args.task)
    bench = [d for d in parts if "ranks" in d]
    if bench and len(bench) != len(parts):
        raise ValueError("give either files of the label ranking benchmark's layout or "
                         "CSV/TSV files with a label column, not both")
    if bench:
        from ecrm.spaces import BucketOrderSpace, PermutationSpace

        names = list(parts[0].label_names)
        if any(list(d.label_names) != names for d in parts):
            raise ValueError("the files rank different numbers of labels")
        space = BucketOrderSpace if args.task == "partial-ranking" else PermutationSpace
        outputs = kind(space(len(names), labels=names))
        Y = np.vstack([outputs.from_ranks(d.ranks) for d in parts])
    else:  # the classes of every file; a ranking's labels are those of the first row
        first = parts[0]
        if args.task == "multiclass":
            for data in parts:
                _one_class_per_row(data)
        classes = (None if args.task != "multiclass" else
                   sorted({c.strip() for d in parts for c in d.cells} - {""}))
        if args.task == "partial-ranking":  # every label of every file
            from ecrm.commands._bucket_orders import parse_bucket_order

            classes = sorted({n for d in parts for i, c in enumerate(d.cells)
                              for b in parse_bucket_order(c, location(d.filename, d.row_lines, i))
                              for n in b})
        outputs, Y = kind.from_cells(first.cells, first.row_lines, first.filename,
                                     names=classes)
        Y = np.vstack([Y] + [outputs.outputs(d.cells, d.row_lines, d.filename)
                             for d in parts[1:]])
    return Bunch(X=np.vstack([d.X for d in parts]), Y=Y, space=outputs.space,
                 outputs=outputs, feature_names=parts[0].feature_names, categories=None,
                 filename=" + ".join(d.filename for d in parts))


#: Separators of several labels in one cell, which a class name is not taken to hold.
LABEL_SEPARATORS = (";", "|")


def _one_class_per_row(data) -> None:
    """Refuse a label column of label sets (``arts/film;arts/music``) for ``--task
    multiclass``, naming its rows: each distinct set (in any order) would become a class."""
    sets = [(line, cell.strip()) for cell, line in zip(data.cells, data.row_lines,
                                                        strict=True)
            if any(sep in cell for sep in LABEL_SEPARATORS)]
    if not sets:
        return
    sep = next(s for s in LABEL_SEPARATORS if s in sets[0][1])
    lines = ", ".join(str(line) for line, _ in sets[:5]) + (
        f" and {len(sets) - 5} more" if len(sets) > 5 else "")
    raise ValueError(f"{data.filename}, line{'s' if len(sets) > 1 else ''} {lines}: the label "
                     f"column holds several labels separated by {sep!r} (e.g. {sets[0][1]!r}), "
                     "but --task multiclass reads one class per row; fit label sets with "
                     "--task multilabel (the default; --path-sep / for label paths"
                     + ("" if sep == ";" else f", --label-sep '{sep}'") + ")")


def read_labelled(loaded, args):
    """``args.data`` with its true outputs for a ranking or multiclass model: the features
    ready for the estimator (``load_for_model``'s checks and preprocessing) and ``Y``; the
    rows of outputs unseen in training refused, or with ``args.unseen == "ignore"`` left out
    (``keep``: the mask of the rows kept, ``unseen``: the counts,
    :func:`ecrm.commands._unseen.unseen_rows`)."""
    from ecrm.commands import _ready_for
    from ecrm.commands._unseen import unseen_rows

    outputs = outputs_of(loaded)
    data = _labelled(args.data, args, outputs.task)
    keep = unseen = None
    if "ranks" in data:
        Y = _benchmark_outputs(outputs, data)
    else:
        keep, unseen = unseen_rows(outputs, data.cells, data.row_lines, data.filename,
                                   getattr(args, "unseen", "error"))
        if keep is not None:  # --unseen ignore: the rows of unseen outputs left out
            data.X, data.row_lines = data.X[keep], data.row_lines[keep]
            data.cells = [c for c, k in zip(data.cells, keep, strict=True) if k]
        Y = outputs.outputs(data.cells, data.row_lines, data.filename)
    data = _ready_for(loaded, data, args.data)
    data.Y, data.keep, data.unseen = Y, keep, unseen
    return data


def _benchmark_outputs(outputs, data):
    """A benchmark file's rankings in the model's space: its labels ``label1 .. labelk``
    must be the model's (a model saved without names takes them in order)."""
    k = len(outputs.names)
    named = outputs.space.labels is not None
    if data.ranks.shape[1] != k or (named and list(outputs.names) != list(data.label_names)):
        raise ValueError(f"{data.filename}: ranks the labels {', '.join(data.label_names)}; "
                         f"the model ranks {', '.join(outputs.names)}")
    return outputs.from_ranks(data.ranks)


def iter_features(loaded, args):
    """The features of ``args.data`` for predictions, in chunks ready for the estimator:
    :func:`ecrm.commands.iter_for_model`, or a benchmark-layout file whole."""
    from ecrm.commands import _ready_for, iter_for_model

    if args.format in ("auto", "csv") and _benchmark(args.data):
        yield _ready_for(loaded, _read_benchmark(args.data, args, task_of(loaded)), args.data)
        return
    yield from iter_for_model(loaded, args)
