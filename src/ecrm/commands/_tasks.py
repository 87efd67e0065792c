"""What the commands read, write and evaluate for each kind of output: label sets
(``multilabel``), rankings of named labels (``ranking``), one class per row
(``multiclass``) and bucket orders (``partial-ranking``, :mod:`ecrm.commands._bucket_orders`).

``ecrm fit --task`` chooses the kind; a model file says which it is by its output space
(:class:`~ecrm.Hierarchy` or :class:`~ecrm.spaces.MultilabelSpace`, a
:class:`~ecrm.PermutationSpace`, a :class:`~ecrm.CandidateSpace`), so ``predict``, ``evaluate``
and ``info`` need no flag, and a model saved in Python is read the same way. The tasks, their
output spaces and losses are the library's table :data:`ecrm.tasks.TASKS`. Label sets keep
their own code in the command modules; this module holds the other two:

* **ranking**: the label column holds an ordering of every label, first (best) to last,
  separated by ``>`` (``a>c>b``; spaces around a name are ignored), the same labels in every
  row; the space is ``PermutationSpace(k, labels=...)``, its labels sorted by name. A file
  of the label ranking benchmark's layout (first line ``n,p,k``, then ``p`` features and
  the rank of each of ``k`` labels per line, :func:`ecrm.datasets.load_label_ranking`) is
  read too: its features are ``x1 .. xp`` and its labels ``label1 .. labelk``.
  Predictions are orderings written the same way.
* **multiclass**: the label column holds one class name per row; the space is
  ``CandidateSpace(identity, labels=classes)``: one one-hot candidate per class, sorted by
  name. Predictions are class names.

A space without names (saved in Python) has default ones: a ranking's item numbers ``0 ..
k-1``, a scalar candidate's value, else the candidate's position.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ecrm import tasks as _library
from ecrm.commands import estimator_of

__all__ = ["LOSSES", "METRIC_NAMES", "RANKING_SEP", "TASKS", "iter_features", "label_set_only",
           "make_loss", "outputs_of", "read_labelled", "read_training", "task_of"]

#: The kinds of output ``ecrm fit --task`` fits (the first is the default): the tasks of
#: :data:`ecrm.tasks.TASKS` whose label column the command line reads.
TASKS = tuple(name for name, task in _library.TASKS.items() if task.labels is not None)
#: The ``--loss`` choices of each task (the first is its default).
LOSSES = {name: _library.TASKS[name].loss_names for name in TASKS}
#: Separates the labels of a ranking, first to last.
RANKING_SEP = ">"

#: The metrics of rankings and classes (beside :data:`ecrm.reporting.report.METRIC_NAMES`).
METRIC_NAMES = {"kendall_tau": "Kendall tau (mean)",
                "kendall": "Kendall distance (discordant pairs, mean)",
                "spearman_rho": "Spearman rho (mean)", "footrule": "footrule loss (mean)",
                "squared": "squared rank loss (mean)", "accuracy": "accuracy",
                "zero_one": "0-1 loss (error rate)", "tau_x": "tau_x (mean)",
                "tau_x_distance": "tau_x distance (mean)",
                "kendall_ties": "Kendall distance with ties (mean)"}

#: Options only label sets have: (attribute, flag, value when not given).
_LABEL_SET_OPTIONS = (("hierarchy", "--hierarchy", None), ("path_sep", "--path-sep", None),
                      ("level_columns", "--level-columns", None),
                      ("label_sep", "--label-sep", ";"), ("scoring", "--scoring", "loss"),
                      ("calibration", "--calibration", "none"),
                      ("scheduler", "--scheduler", None), ("scores", "--scores", False),
                      ("leaves_only", "--leaves-only", False),
                      ("per_level", "--per-level", False), ("plot", "--plot", None),
                      ("report", "--report", None), ("baseline", "--baseline", None))


def task_of(model) -> str:
    """The task of a model (an estimator or a pipeline): from its output space
    (:func:`ecrm.tasks.task_of_space`).

    Raises ``ValueError`` for an output space no task declares, or whose task's labels the
    command line neither reads nor writes.
    """
    task = _library.task_of_space(estimator_of(model).output_space)
    if task.labels is None:
        raise ValueError(f"the command line reads and writes no labels of the task "
                         f"{task.name!r} ({task.what or type(model).__name__}): use this "
                         "model in Python")
    return task.name


def label_set_only(args, task: str) -> str | None:
    """Why ``args`` do not suit ``task``: the first option given that only label sets
    have (``None`` for label sets, or when there is none)."""
    if _library.TASKS[task].labels == _library.LABEL_SETS:
        return None
    for attr, flag, unset in _LABEL_SET_OPTIONS:
        if getattr(args, attr, unset) != unset:
            return (f"{flag} is for label sets (--task multilabel), not for "
                    f"{_library.TASKS[task].what or task}")
    return None


def make_loss(task: str, name: str, space):
    """The loss ``--loss name`` means for ``--task task`` on ``space``."""
    return _library.TASKS[task].make_loss(name, space)


class _Outputs:
    """The outputs of one model: their names, how label cells become outputs and outputs
    text, and the metrics of an evaluation."""

    task = column = ""
    #: The trivial baselines: key -> (long name, short column head).
    BASELINES: dict[str, tuple[str, str]] = {}
    #: The metric the warning against the baselines compares (larger is better).
    MAIN = ""

    def __init__(self, space, names):
        self.space, self.names = space, [str(n) for n in names]
        self.index = {n: j for j, n in enumerate(self.names)}

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def outputs(self, cells: list[str], lines, filename) -> object:  # pragma: no cover
        raise NotImplementedError

    def text(self, Y) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def values(self, Y) -> list:
        """The predictions as JSON values (``text`` by default)."""
        return self.text(Y)

    def cell(self, value) -> str:
        """A JSON value of :meth:`values` as a label cell."""
        return str(value)

    def labels_in(self, cell: str) -> list[str]:
        """The label names one cell of the label column holds."""
        return [cell.strip()]

    def metrics(self, model, Y_true, Y_pred) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def constants(self, mean, mode) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def baselines(self, model, Y_true) -> dict | None:
        """The metrics of the constant predictions of :attr:`BASELINES`, from the training
        outputs' statistics (``None`` when the model file holds neither them nor the
        training outputs)."""
        import numpy as np

        from ecrm.baselines import output_statistics

        mean, mode = getattr(model, "output_mean_", None), getattr(model, "output_mode_", None)
        if mean is None and getattr(model, "Y_fit_", None) is not None:  # an older file
            mean, mode = output_statistics(model.Y_fit_)
        if mean is None:
            return None
        return {key: self.metrics(model, Y_true, np.broadcast_to(row, Y_true.shape))
                for key, row in self.constants(mean, mode).items()}


class Ranking(_Outputs):
    """Rankings of named labels (:class:`~ecrm.PermutationSpace`)."""

    task, column, MAIN = "ranking", "ranking", "kendall_tau"
    BASELINES = {"most_frequent": ("most frequent ranking", "most freq."),
                 "mean_rank": ("mean-position ranking", "mean rank")}

    def __init__(self, space):
        super().__init__(space, space.labels or range(space.n_items))

    @classmethod
    def from_cells(cls, cells: list[str], lines, filename, names=None):
        """The space of the rankings in ``cells`` (the labels of the first, sorted, unless
        ``names`` gives them) and their outputs."""
        from ecrm.spaces import PermutationSpace

        first = _ranking(cells[0], _where(filename, lines, 0)) if cells else []
        if names is None:
            names = sorted(first)
        if len(names) < 2:
            raise ValueError(f"{_where(filename, lines, 0)}: a ranking needs at least two "
                             f"labels separated by '{RANKING_SEP}', first to last (e.g. a>c>b); "
                             f"found {cells[0] if cells else ''!r}")
        task = cls(PermutationSpace(len(names), labels=names))
        return task, task.outputs(cells, lines, filename)

    def describe(self) -> str:
        return f"{len(self.names)} labels ranked"

    def labels_in(self, cell: str) -> list[str]:
        return [v.strip() for v in cell.split(RANKING_SEP)]

    def from_ranks(self, ranks):
        """The outputs of a benchmark file's ranks (0 = top)."""
        return self.space.from_ranks(ranks)

    def outputs(self, cells, lines, filename):
        """The flattened permutation matrices of ``cells``: every row must order exactly
        the model's labels (errors name the file, line and label)."""
        import numpy as np

        R = np.empty((len(cells), len(self.names)), dtype=np.int64)
        for i, cell in enumerate(cells):
            where = _where(filename, lines, i)
            order = _ranking(cell, where)
            unknown = next((n for n in order if n not in self.index), None)
            if unknown is not None:
                raise ValueError(f"{where}: label {unknown!r} is not one of the ranked labels "
                                 f"({', '.join(self.names)})")
            missing = [n for n in self.names if n not in order]
            if missing:
                raise ValueError(f"{where}: the ranking {cell.strip()!r} leaves out "
                                 f"{', '.join(map(repr, missing))}: every row ranks all of "
                                 f"{', '.join(self.names)}")
            R[i, [self.index[n] for n in order]] = np.arange(len(order))
        return self.space.from_ranks(R)

    def text(self, Y) -> list[str]:
        return [RANKING_SEP.join(row) for row in self.values(Y)]

    def values(self, Y) -> list:
        import numpy as np

        order = np.argsort(self.space.to_ranks(Y), axis=1)  # the items, first to last
        return [[self.names[j] for j in row] for row in order]

    def cell(self, value) -> str:
        return RANKING_SEP.join(map(str, value)) if isinstance(value, list) else str(value)

    def metrics(self, model, Y_true, Y_pred) -> dict:
        """Mean Kendall tau, Kendall distance (the discordant pairs), Spearman rho, exact
        match, and the model's own loss if it is another."""
        import numpy as np

        from ecrm.losses import KendallLoss, kendall_tau, spearman_rho

        out = {"kendall_tau": float(np.mean(kendall_tau(Y_pred, Y_true))),
               "kendall": float(np.mean(KendallLoss()(Y_pred, Y_true))),
               "spearman_rho": float(np.mean(spearman_rho(Y_pred, Y_true))),
               "exact_match": float(np.mean(np.all(Y_pred == Y_true, axis=1)))}
        own = {"FootruleLoss": "footrule", "SquaredRankLoss": "squared"}.get(
            type(model.loss).__name__)
        if own is not None:
            out[own] = float(np.mean(model.loss(Y_pred, Y_true)))
        return out

    def constants(self, mean, mode) -> dict:
        import numpy as np

        k = len(self.names)
        position = np.asarray(mean).reshape(k, k) @ np.arange(k)  # each label's mean position
        return {"most_frequent": np.asarray(mode, dtype=float),
                "mean_rank": self.space.from_scores(-position)[0]}


class Classes(_Outputs):
    """One class per row (:class:`~ecrm.CandidateSpace`)."""

    task, column, MAIN = "multiclass", "class", "accuracy"
    BASELINES = {"majority": ("most frequent class", "majority")}

    def __init__(self, space):
        import numpy as np

        C = space.candidates
        names = space.labels or ([_number(v) for v in C[:, 0]] if C.shape[1] == 1
                                 else [str(j) for j in range(len(C))])
        super().__init__(space, names)
        self._eye = np.eye(len(C))

    @classmethod
    def from_cells(cls, cells: list[str], lines, filename, names=None):
        """The space of the classes in ``cells`` (one-hot, sorted by name) and their outputs."""
        import numpy as np

        from ecrm.spaces import CandidateSpace

        classes = sorted({c.strip() for c in cells} - {""}) if names is None else names
        if len(classes) < 2:
            raise ValueError(f"{filename}: multiclass needs at least two classes; the label "
                             f"column holds {', '.join(map(repr, classes)) or 'none'}")
        if all(RANKING_SEP in c for c in classes):
            import warnings

            warnings.warn(f"{filename}: every class name holds '{RANKING_SEP}' (e.g. "
                          f"{classes[0]!r}): if they are rankings, fit with --task ranking",
                          UserWarning, stacklevel=2)
        task = cls(CandidateSpace(np.eye(len(classes)), labels=classes))
        return task, task.outputs(cells, lines, filename)

    def describe(self) -> str:
        return f"{len(self.names)} classes"

    def outputs(self, cells, lines, filename):
        """The candidates of the class names in ``cells`` (errors name the file, line and
        class)."""
        import numpy as np

        idx = np.empty(len(cells), dtype=np.int64)
        for i, cell in enumerate(cells):
            name = cell.strip()
            if name not in self.index:
                where = _where(filename, lines, i)
                raise ValueError(f"{where}: no class in the label column" if not name else
                                 f"{where}: class {name!r} is not one the model knows "
                                 f"({', '.join(self.names)})")
            idx[i] = self.index[name]
        return self.space.candidates[idx]

    def text(self, Y) -> list[str]:
        return [self.names[j] for j in self.space.index(Y)]

    def metrics(self, model, Y_true, Y_pred) -> dict:
        """Accuracy, the 0-1 loss and the macro F1 of the classes."""
        import numpy as np
        from sklearn.metrics import f1_score

        t, p = self.space.index(Y_true), self.space.index(Y_pred)
        accuracy = float(np.mean(t == p))
        return {"accuracy": accuracy, "zero_one": 1.0 - accuracy,
                "macro_f1": float(f1_score(t, p, labels=np.unique(t), average="macro",
                                           zero_division=0))}

    def constants(self, mean, mode) -> dict:
        import numpy as np

        return {"majority": np.asarray(mode, dtype=float)}


def _number(v: float) -> str:
    """A scalar candidate as a name: ``3`` for 3.0, else its ``repr``."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _kind(task: str) -> Any:
    """The class of the outputs of ``task`` (other than label sets)."""
    if task == "partial-ranking":
        from ecrm.commands._bucket_orders import BucketOrders

        return BucketOrders
    return Ranking if task == "ranking" else Classes


def outputs_of(model) -> _Outputs:
    """The :class:`Ranking`, :class:`Classes` or bucket orders of a model (by its task)."""
    space = estimator_of(model).output_space
    return _kind(_library.task_of_space(space).name)(space)


def _where(filename, lines, i: int) -> str:
    line = None if lines is None else int(lines[i])
    return str(filename) + ("" if line is None else f", line {line}")


def _ranking(cell: str, where: str) -> list[str]:
    """The labels of one ranking cell, first to last; an empty or repeated label is an error."""
    order = [name.strip() for name in cell.split(RANKING_SEP)]
    if not cell.strip():
        raise ValueError(f"{where}: no ranking in the label column (expected labels "
                         f"separated by '{RANKING_SEP}', first to last, e.g. a>c>b)")
    if not all(order):
        raise ValueError(f"{where}: an empty label in the ranking {cell.strip()!r}")
    twice = next((n for k, n in enumerate(order) if n in order[:k]), None)
    if twice is not None:
        raise ValueError(f"{where}: label {twice!r} appears twice in the ranking "
                         f"{cell.strip()!r}")
    return order


# -- data files ---------------------------------------------------------------------------
def _benchmark(path) -> bool:
    """Whether the file opens with the label ranking benchmark's ``n,p,k`` line."""
    from ecrm.datasets._files import _open_binary

    with _open_binary(Path(path)) as fh:
        first = fh.readline(1024).decode("utf-8", "replace").lstrip("\ufeff").split(",")
    return len(first) == 3 and all(f.strip().isdigit() for f in first)


def _read_benchmark(path, task: str = "ranking"):
    """A benchmark-layout file: a Bunch with ``X``, ``ranks``, ``label_names``, ... (for
    bucket orders, ``ranks`` holds the bucket numbers)."""
    from ecrm.datasets.label_ranking import _read_file

    if task == "partial-ranking":
        from ecrm.commands._bucket_orders import read_positions

        return read_positions(path)
    name = Path(path).name
    return _read_file(Path(path), name.split(".")[0])


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
    import numpy as np
    from sklearn.utils import Bunch

    from ecrm.datasets._csv import CHUNK_ROWS, _CsvTable, _numbers
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
    blocks, cells, lines, ids = [], [], [], []
    for values, raw, rows, ids_ in table.chunks(CHUNK_ROWS):
        blocks.append(_numbers(table.path, values, rows, table.feature_names))
        cells.extend(raw)
        lines.extend(rows)
        ids.extend(ids_)
    if not blocks:
        raise DataFileError(table.path, None, "no data rows after the header")
    return Bunch(X=np.concatenate(blocks), cells=cells, row_lines=np.asarray(lines),
                 feature_names=tuple(table.feature_names), filename=str(table.path),
                 ids=ids if args.id_column is not None else None)


#: The tasks that also read files of the benchmark's ``n,p,k`` layout.
_BENCHMARK_TASKS = ("ranking", "partial-ranking")


def _labelled(path: str, args, task: str):
    """One labelled file: :func:`_table`'s Bunch, or a benchmark file's (``ranks`` and
    ``label_names`` instead of ``cells``)."""
    from sklearn.utils import Bunch

    if task in _BENCHMARK_TASKS and args.format in ("auto", "csv") and _benchmark(path):
        _no_csv_options(path, args)
        data = _read_benchmark(path, task)
        return Bunch(X=data.X, ranks=data.ranks, label_names=data.label_names,
                     feature_names=tuple(data.feature_names), filename=str(path),
                     row_lines=None)
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
    kind = _kind(args.task)
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
                              for b in parse_bucket_order(c, _where(d.filename, d.row_lines, i))
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
        _no_csv_options(args.data, args)
        data = _read_benchmark(args.data, task_of(loaded))
        data.feature_names = tuple(data.feature_names)
        data.filename, data.row_lines = str(args.data), None
        yield _ready_for(loaded, data, args.data)
        return
    yield from iter_for_model(loaded, args)
