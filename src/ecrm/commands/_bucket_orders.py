"""Bucket orders (rankings with ties) of named labels on the command line: ``--task
partial-ranking``.

The label column holds a bucket order, top to bottom: ``>`` separates the buckets and ``=``
ties the labels of one bucket (``a>b=c>d``; spaces around a name are ignored). A label a row
leaves out is missing: the ranking is incomplete and only the pairs of the labels it ranks
count, in training and in the scores. The space is ``BucketOrderSpace(k, labels=...)``, its
labels every name of the training rows, sorted. A file of the benchmark's layout (first line
``n,p,k``, then ``p`` features and the bucket of each of ``k`` labels per line, 1 = top,
equal numbers tied, 0 or empty = missing) is read too: its features are ``x1 .. xp`` and its
labels ``label1 .. labelk``. Predictions are complete bucket orders written the same way.
"""

from __future__ import annotations

from pathlib import Path

from ecrm.commands._outputs import Outputs, location

__all__ = ["BucketOrders", "parse_bucket_order", "read_positions"]

#: Separates the buckets of a bucket order, top to bottom.
BUCKET_SEP = ">"
#: Separates the tied labels of one bucket.
TIE_SEP = "="
#: Characters taken for a separator other than ``>`` and ``=`` when inside a label name.
_OTHER_SEPARATORS = "<,;|~"


def parse_bucket_order(cell: str, where: str = "") -> list[list[str]]:
    """The buckets of one cell, top to bottom, each a list of label names.

    ``ValueError`` (starting with ``where``) for an empty cell, an empty bucket (``a>>b``),
    an empty label (``a>b=``), a label given twice or a separator other than ``>`` and ``=``.

    >>> parse_bucket_order("a > b=c >d")
    [['a'], ['b', 'c'], ['d']]
    """
    text = cell.strip()
    pre = f"{where}: " if where else ""
    if not text:
        raise ValueError(f"{pre}no bucket order in the label column (expected labels "
                         f"separated by '{BUCKET_SEP}' top to bottom and '{TIE_SEP}' when "
                         "tied, e.g. a>b=c>d)")
    buckets = [[n.strip() for n in part.split(TIE_SEP)] for part in text.split(BUCKET_SEP)]
    if any(b == [""] for b in buckets):
        raise ValueError(f"{pre}an empty bucket in {text!r} (two '{BUCKET_SEP}' with no label "
                         "between them, or one at an end)")
    if any("" in b for b in buckets):
        raise ValueError(f"{pre}an empty label in {text!r} (a '{TIE_SEP}' with no label on "
                         "one side)")
    seen: set[str] = set()
    for name in (n for b in buckets for n in b):
        other = next((c for c in _OTHER_SEPARATORS if c in name), None)
        if other is not None:
            raise ValueError(f"{pre}unknown separator {other!r} in {text!r}: buckets are "
                             f"separated by '{BUCKET_SEP}' and tied labels by '{TIE_SEP}'")
        if name in seen:
            raise ValueError(f"{pre}label {name!r} appears twice in {text!r}")
        seen.add(name)
    return buckets


def format_bucket_order(buckets) -> str:
    """The cell of ``buckets`` (lists of label names, top to bottom).

    >>> format_bucket_order([["a"], ["b", "c"]])
    'a>b=c'
    """
    return BUCKET_SEP.join(TIE_SEP.join(map(str, b)) for b in buckets)


class BucketOrders(Outputs):
    """Bucket orders of named labels (:class:`~ecrm.spaces.BucketOrderSpace`)."""

    task, column, MAIN = "partial-ranking", "ranking", "tau_x"
    BASELINES = {"most_frequent": ("most frequent bucket order", "most freq."),
                 "all_tied": ("all labels tied", "all tied")}

    def __init__(self, space):
        super().__init__(space, space.labels or range(space.n_labels))

    @classmethod
    def from_cells(cls, cells: list[str], lines, filename, names=None):
        """The space of the bucket orders in ``cells`` (every label they name, sorted, unless
        ``names`` gives them) and their outputs."""
        from ecrm.spaces import BucketOrderSpace

        if names is None:
            found = {n for i, c in enumerate(cells)
                     for b in parse_bucket_order(c, location(filename, lines, i)) for n in b}
            names = sorted(found)
        if len(names) < 2:
            raise ValueError(f"{filename}: a bucket order needs at least two labels; the "
                             f"label column names {', '.join(map(repr, names)) or 'none'}")
        task = cls(BucketOrderSpace(len(names), labels=names))
        return task, task.outputs(cells, lines, filename)

    def describe(self) -> str:
        return f"{len(self.names)} labels in bucket orders"

    def labels_in(self, cell: str) -> list[str]:
        return [n.strip() for part in cell.split(BUCKET_SEP) for n in part.split(TIE_SEP)]

    def positions(self, cells, lines, filename):
        """The bucket numbers (n, k) of ``cells``: 1 = top, 0 = a label the row leaves out
        (errors name the file, line and label)."""
        import numpy as np

        P = np.zeros((len(cells), len(self.names)), dtype=np.int64)
        for i, cell in enumerate(cells):
            where = location(filename, lines, i)
            for level, bucket in enumerate(parse_bucket_order(cell, where), start=1):
                for name in bucket:
                    P[i, self.label_index(name, where)] = level
        return P

    def outputs(self, cells, lines, filename):
        """The pair vectors of ``cells`` (NaN for the pairs of missing labels)."""
        return self.space.from_positions(self.positions(cells, lines, filename))

    def from_ranks(self, positions):
        """The pair vectors of a benchmark file's bucket numbers."""
        return self.space.from_positions(positions)

    def text(self, Y) -> list[str]:
        import numpy as np

        return [format_bucket_order([self.names[j] for j in np.flatnonzero(row == v)]
                                    for v in sorted(set(row.tolist()) - {0}))
                for row in self.space.to_positions(Y)]

    def metrics(self, model, Y_true, Y_pred) -> dict:
        """Mean tau_x (each row over the labels it ranks), the mean tau_x distance, exact
        match of the complete rows, and the model's own loss if it is another."""
        import numpy as np

        from ecrm.losses import KendallTiesLoss, TauXLoss, tau_x

        T, P = self.space.to_positions(Y_true), self.space.to_positions(Y_pred)
        k = len(self.names)
        out = {"tau_x": tau_x(T, P), "tau_x_distance": float(np.mean(TauXLoss(k)(Y_pred, Y_true)))}
        complete = (T > 0).all(axis=1)
        if complete.any():
            out["exact_match"] = float(np.mean(np.all(T[complete] == P[complete], axis=1)))
        if isinstance(model.loss, KendallTiesLoss):
            out["kendall_ties"] = float(np.mean(model.loss(Y_pred, Y_true)))
        return out

    def constants(self, mean, mode) -> dict:
        """The most frequent training bucket order (among the complete ones when there are;
        else the bucket order closest to the most frequent incomplete one, by the oracle)
        and the single bucket of all labels."""
        import numpy as np

        mode = np.asarray(mode, dtype=float)
        if np.isnan(mode).any():  # agree with every pair it observes, ties included
            mode = self.space.argmin(np.where(np.isnan(mode), 0.0, 0.5 - mode)[None])[0]
        return {"most_frequent": mode, "all_tied": np.zeros(self.space.n_outputs)}


def read_positions(path):
    """A benchmark-layout file of bucket orders (gunzipped if it starts with the gzip magic),
    read as :func:`ecrm.datasets.load_partial_label_ranking` reads it: a Bunch with ``X``,
    ``ranks`` (the bucket numbers, 0 = missing), ``feature_names``, ``label_names``. Errors
    name the line."""
    from sklearn.utils import Bunch

    from ecrm.datasets._files import _open_binary
    from ecrm.datasets.partial_ranking import _parse

    path = Path(path)
    with _open_binary(path) as fh:
        lines = fh.read().decode("utf-8", "replace").lstrip("\ufeff").splitlines()
    X, P = _parse(path, iter(lines))
    return Bunch(X=X, ranks=P, feature_names=[f"x{j + 1}" for j in range(X.shape[1])],
                 label_names=[f"label{j + 1}" for j in range(P.shape[1])])
