"""The outputs of rankings and of classes on the command line: their names, how the label
column's cells become outputs and outputs become text, their metrics and the constant
baselines (:class:`Outputs`; bucket orders in :mod:`ecrm.commands._bucket_orders`).

* **ranking**: the label column holds an ordering of every label, first (best) to last,
  separated by ``>`` (``a>c>b``; spaces around a name are ignored), the same labels in every
  row; the space is ``PermutationSpace(k, labels=...)``, its labels sorted by name.
  Predictions are orderings written the same way.
* **multiclass**: the label column holds one class name per row; the space is
  ``CandidateSpace(identity, labels=classes)``: one one-hot candidate per class, sorted by
  name. Predictions are class names.

A space without names (saved in Python) has default ones: a ranking's item numbers ``0 ..
k-1``, a scalar candidate's value, else the candidate's position.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RANKING_SEP", "Classes", "Outputs", "Ranking", "location"]

#: Separates the labels of a ranking, first to last.
RANKING_SEP = ">"


class Outputs:
    """The outputs of one model: their names, how label cells become outputs and outputs
    text, and the metrics of an evaluation."""

    task = column = ""
    #: The trivial baselines: key -> (long name, short column head).
    BASELINES: dict[str, tuple[str, str]] = {}
    #: The metric the warning against the baselines compares (larger is better).
    MAIN = ""

    def __init__(self, space, names=()):
        self.space, self.names = space, [str(n) for n in names]
        self.index = {n: j for j, n in enumerate(self.names)}

    @classmethod
    def from_cells(cls, cells: list[str], lines, filename,
                   names=None) -> tuple[Outputs, Any]:  # pragma: no cover - abstract
        """The outputs of a training file's label cells, and its output matrix."""
        raise NotImplementedError

    def from_ranks(self, ranks) -> Any:  # pragma: no cover - abstract
        """The output matrix of the benchmark layout's rank columns."""
        raise NotImplementedError

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

    def label_index(self, name: str, where: str) -> int:
        """The index of the label ``name`` of a ranking; an error naming ``where`` (file and
        line) when the model does not rank it."""
        j = self.index.get(name)
        if j is None:
            raise ValueError(f"{where}: label {name!r} is not one of the ranked labels "
                             f"({', '.join(self.names)})")
        return j

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


class Ranking(Outputs):
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

        first = _ranking(cells[0], location(filename, lines, 0)) if cells else []
        if names is None:
            names = sorted(first)
        if len(names) < 2:
            raise ValueError(f"{location(filename, lines, 0)}: a ranking needs at least two "
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
            where = location(filename, lines, i)
            order = _ranking(cell, where)
            columns = [self.label_index(n, where) for n in order]
            missing = [n for n in self.names if n not in order]
            if missing:
                raise ValueError(f"{where}: the ranking {cell.strip()!r} leaves out "
                                 f"{', '.join(map(repr, missing))}: every row ranks all of "
                                 f"{', '.join(self.names)}")
            R[i, columns] = np.arange(len(order))
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


class Classes(Outputs):
    """One class per row (:class:`~ecrm.CandidateSpace`)."""

    task, column, MAIN = "multiclass", "class", "accuracy"
    BASELINES = {"majority": ("most frequent class", "majority")}

    def __init__(self, space):
        C = space.candidates
        super().__init__(space, space.labels or ([_number(v) for v in C[:, 0]] if C.shape[1] == 1
                                                 else [str(j) for j in range(len(C))]))

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
                where = location(filename, lines, i)
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


def location(filename, lines, i: int) -> str:
    """Where row ``i`` of a file is: ``"<file>, line <n>"`` (the file alone without lines)."""
    return str(filename) + ("" if lines is None else f", line {int(lines[i])}")


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
