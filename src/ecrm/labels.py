"""Labels as users hold them: names, paths or one column per level, in and out.

The estimators work on the 0/1 label matrix of a :class:`~ecrm.Hierarchy` (one column per
label, in ``h.labels`` order). :func:`as_label_matrix` turns what a user holds into it, and
the estimators' ``fit`` and ``score`` call it, so that ``fit(X, y)`` takes any of

* a 0/1 matrix (kept as it is);
* one collection of label names per row (``[["sport", "sport/tennis"], ["news"], []]``), or one
  name per row (``["sport/tennis", "news"]``); ancestors are switched on;
* one column per level (a pandas DataFrame or a 2-D array of strings, HiClass's
  ``Cat1, Cat2, Cat3`` layout): each row is a path, empty or missing cells ending it early.
  A path names the label ``"Cat1/Cat2/Cat3"`` when the hierarchy has such path labels (as
  ``load_csv(..., path_sep="/")`` builds), else its deepest value (a hierarchy of plain
  names), whose ancestors must then be the row's other values.

:func:`hierarchy_from_levels` builds the hierarchy of such a level table (its path labels),
as HiClass infers its own from ``y``. :func:`labels_of` is the way back, for
``predict_labels``: the names on in each row, its most specific labels only, or one list per
depth level.

Integer label names are ambiguous with a 0/1 matrix: pass such labels through
:meth:`ecrm.Hierarchy.to_matrix` yourself.
"""

from __future__ import annotations

from collections.abc import Set

import numpy as np

__all__ = ["LabelRowError", "as_label_matrix", "hierarchy_from_levels", "labels_of",
           "predict_labels"]


class LabelRowError(ValueError):
    """A row's labels that the hierarchy does not have or contradicts (``row``, ``reason``)."""

    def __init__(self, row: int, reason: str):
        super().__init__(f"row {row}: {reason}")
        self.row, self.reason = row, reason


def _is_name(v) -> bool:
    return isinstance(v, str)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not
                                                                v.strip())


def _level_rows(space, table) -> list[list]:
    """The label of each row of a per-level table (rows of level values)."""
    index = space.index
    closed_names = space.labels
    out: list[list] = []
    for i, row in enumerate(table):
        values = []
        for v in row:
            if _missing(v):
                break
            values.append(str(v).strip())
        if not values:
            out.append([])
            continue
        path = "/".join(values)
        if path in index:
            out.append([path])
            continue
        leaf = values[-1]
        if leaf not in index:
            raise LabelRowError(i, f"the levels {values} name neither the path label "
                                   f"{path!r} nor a label {leaf!r} of the hierarchy")
        on = space.to_matrix([[leaf]])[0] > 0
        above = {closed_names[j] for j in np.flatnonzero(on)}
        if not set(values) <= above:
            raise LabelRowError(i, f"the levels {values} contradict the hierarchy, where "
                                   f"{leaf!r} is under {sorted(above - {leaf})}")
        out.append([leaf])
    return out


def as_label_matrix(space, y):
    """The 0/1 label matrix of ``y`` given in any form the module docstring lists.

    Parameters
    ----------
    space : OutputSpace
        A space with label names (:class:`~ecrm.Hierarchy`); for other spaces ``y`` is
        returned as it is.
    y : array-like, list or DataFrame

    Returns
    -------
    Y : ndarray of shape (n, d) or ``y`` itself

    Raises
    ------
    ValueError
        Naming the row and the label for a name not in the hierarchy, or levels that
        contradict it.

    Examples
    --------
    >>> from ecrm import Hierarchy
    >>> h = Hierarchy([("animal", "dog"), ("animal", "cat")])
    >>> as_label_matrix(h, [["dog"], "cat", []])
    array([[1., 1., 0.],
           [1., 0., 1.],
           [0., 0., 0.]])
    >>> as_label_matrix(h, np.array([["animal", "dog"], ["animal", None]], dtype=object))
    array([[1., 1., 0.],
           [1., 0., 0.]])
    """
    if not hasattr(space, "to_matrix") or not hasattr(space, "index"):
        return y
    if hasattr(y, "columns") and hasattr(y, "to_numpy"):  # a DataFrame: one column per level
        table = y.to_numpy(dtype=object)
        if any(_is_name(v) for v in table.ravel()):
            return space.to_matrix(_level_rows(space, table))
        return y
    if isinstance(y, np.ndarray):
        if y.dtype.kind in "USO" and y.size and any(_is_name(v) for v in y.ravel().tolist()):
            if y.ndim == 2:
                return space.to_matrix(_level_rows(space, y.tolist()))
            return space.to_matrix([[v] for v in y.tolist()])
        return y
    if not isinstance(y, (list, tuple)):
        return y
    rows = list(y)
    names = [r if isinstance(r, (list, tuple, Set)) else [r] for r in rows]
    if any(isinstance(r, Set) or (not isinstance(r, (list, tuple)) and _is_name(r))
           or any(_is_name(v) for v in (r if isinstance(r, (list, tuple)) else ()))
           for r in rows):
        return space.to_matrix([list(r) for r in names])
    return y


def labels_of(space, Y, *, leaves_only: bool = False, per_level: bool = False) -> list:
    """The label names switched on in each row of a 0/1 matrix ``Y`` of ``space``.

    Parameters
    ----------
    space : Hierarchy
    Y : array-like of shape (n, d)
    leaves_only : bool, default=False
        The most specific labels only (those with no child on).
    per_level : bool, default=False
        One list per depth level (:attr:`ecrm.Hierarchy.depth`) for each row: ``[[level-0
        labels], [level-1 labels], ...]``, as many levels as the hierarchy has.

    Returns
    -------
    labels : list
    """
    if per_level and leaves_only:
        raise ValueError("choose one of leaves_only and per_level")
    rows = space.to_labels(Y, leaves_only=leaves_only)
    if not per_level:
        return rows
    depth = np.asarray(space.depth)
    levels = int(depth.max()) + 1 if depth.size else 0
    where = {name: int(d) for name, d in zip(space.labels, depth, strict=True)}
    out = []
    for row in rows:
        by_level: list[list] = [[] for _ in range(levels)]
        for name in row:
            by_level[where[name]].append(name)
        out.append(by_level)
    return out


def predict_labels(model, X, *, leaves_only: bool = False, per_level: bool = False) -> list:
    """The predicted label names of each row, by a fitted estimator or a fitted
    :class:`~sklearn.pipeline.Pipeline` ending in one (a pipeline does not pass
    ``predict_labels`` on: its steps transform ``X``, then the estimator names its labels).

    Parameters
    ----------
    model : estimator or Pipeline
        Fitted, its output space a label hierarchy.
    X : array-like or sparse matrix of shape (n, p)
    leaves_only, per_level : bool, default=False
        As :func:`labels_of`.

    Returns
    -------
    labels : list of n lists

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from ecrm import ECRM, Hierarchy
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.linspace(0, 100, 40)[:, None]
    >>> Y = np.where(X > 50, [1, 0, 1], [1, 1, 0])
    >>> pipe = make_pipeline(StandardScaler(), ECRM(HammingLoss(), h)).fit(X, Y)
    >>> predict_labels(pipe, [[90.0]], leaves_only=True)
    [['a2']]
    """
    steps = getattr(model, "steps", None)
    if steps is not None:  # a pipeline: transform through its steps, then the estimator
        for _, step in steps[:-1]:
            if step is not None and step != "passthrough":
                X = step.transform(X)
        model = steps[-1][1]
    return model.predict_labels(X, leaves_only=leaves_only, per_level=per_level)


def hierarchy_from_levels(table, *, sep: str = "/"):
    """The tree of a level table's paths: one label per distinct path prefix.

    Each row's values, up to its first empty or missing cell, make the labels ``"a"``,
    ``"a/b"``, ``"a/b/c"`` (joined by ``sep``), each under the one before, so the same value
    under two parents gives two labels. :func:`as_label_matrix` then reads the table against
    this hierarchy.

    Parameters
    ----------
    table : DataFrame or 2-D array-like of str
        One column per level, one row per sample.
    sep : str, default="/"
        Joins the levels of a path label; refused inside a value.

    Returns
    -------
    hierarchy : Hierarchy

    Examples
    --------
    >>> levels = np.array([["news", "politics"], ["news", "sport"], ["science", None]],
    ...                   dtype=object)
    >>> h = hierarchy_from_levels(levels)
    >>> h.labels
    ('news', 'news/politics', 'news/sport', 'science')
    >>> as_label_matrix(h, levels).tolist()
    [[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    """
    from ecrm.spaces.hierarchy import Hierarchy

    rows = table.to_numpy(dtype=object) if hasattr(table, "to_numpy") else \
        np.asarray(table, dtype=object)
    if rows.ndim != 2:
        raise ValueError(f"the level table must be 2-D (one column per level); got shape "
                         f"{rows.shape}")
    labels: dict[str, None] = {}  # ordered: first seen first
    edges: dict[tuple[str, str], None] = {}
    for i, row in enumerate(rows):
        parent = None
        for v in row:
            if _missing(v):
                break
            value = str(v).strip()
            if sep in value:
                raise LabelRowError(i, f"the level value {value!r} holds the separator "
                                       f"{sep!r} (choose another sep)")
            label = value if parent is None else parent + sep + value
            labels[label] = None
            if parent is not None:
                edges[(parent, label)] = None
            parent = label
    if not labels:
        raise ValueError("the level table names no label")
    return Hierarchy(list(edges), labels=sorted(labels))
