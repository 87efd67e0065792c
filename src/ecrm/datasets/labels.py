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
``predict_labels``: the names on in each row, its most specific labels only, or a table of one
column per depth level (a 2-D object array of lists, :func:`level_names` its column names);
:func:`labels_from_levels` reads such a table back. A model's level table
(:func:`predict_labels` with ``per_level=True``, as ``ecrm predict --per-level`` writes it)
has the layout of its training file (:func:`level_layout`).

Integer label names are ambiguous with a 0/1 matrix: pass such labels through
:meth:`ecrm.Hierarchy.to_matrix` yourself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Set
from itertools import takewhile

import numpy as np

__all__ = ["LabelRowError", "as_label_matrix", "hierarchy_from_levels", "labels_from_levels",
           "labels_of", "level_layout", "level_names", "predict_labels"]


class LabelRowError(ValueError):
    """A row's labels that the hierarchy does not have or contradicts (``row``, ``reason``)."""

    def __init__(self, row: int, reason: str):
        super().__init__(f"row {row}: {reason}")
        self.row, self.reason = row, reason


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not
                                                                v.strip())


def _level_rows(space, table) -> list[list]:
    """The label of each row of a per-level table (rows of level values)."""
    index = space.index
    closed_names = space.labels
    out: list[list] = []
    for i, row in enumerate(table):
        values = [str(v).strip() for v in takewhile(lambda v: not _missing(v), row)]
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
        if any(isinstance(v, str) for v in table.ravel()):
            return space.to_matrix(_level_rows(space, table))
        return y
    if isinstance(y, np.ndarray):
        if y.dtype.kind in "USO" and y.size and any(isinstance(v, str) for v in y.ravel().tolist()):
            if y.ndim == 2:
                return space.to_matrix(_level_rows(space, y.tolist()))
            return space.to_matrix([[v] for v in y.tolist()])
        return y
    if not isinstance(y, (list, tuple)):
        return y
    rows = list(y)
    names = [r if isinstance(r, (list, tuple, Set)) else [r] for r in rows]
    if any(isinstance(r, Set) or (not isinstance(r, (list, tuple)) and isinstance(r, str))
           or any(isinstance(v, str) for v in (r if isinstance(r, (list, tuple)) else ()))
           for r in rows):
        return space.to_matrix([list(r) for r in names])
    return y


def labels_of(space, Y, *, leaves_only: bool = False, per_level: bool = False,
              path_sep: str | None = None):
    """The label names switched on in each row of a 0/1 matrix ``Y`` of ``space``.

    Parameters
    ----------
    space : Hierarchy
    Y : array-like of shape (n, d)
    leaves_only : bool, default=False
        The most specific labels only (those with no child on).
    per_level : bool, default=False
        One column per depth level (:attr:`ecrm.Hierarchy.depth`), as many as the hierarchy
        has: a 2-D object array whose cell ``[i, k]`` is the list of row ``i``'s labels at
        depth ``k`` (empty when it has none there; several when the row branches).
    path_sep : str, default=None
        With ``per_level``: each cell holds its labels' last path steps by this separator
        (``"tennis"`` for ``"sport/tennis"``), as a file of level columns holds them;
        ``None``: the label names.

    Returns
    -------
    labels : list of n lists, or ndarray of shape (n, n_levels) with ``per_level``
        With ``per_level``, ``labels.tolist()`` is a nested list and
        ``pandas.DataFrame(labels, columns=level_names(space))`` the table of one column per
        level.

    Examples
    --------
    >>> from ecrm import Hierarchy
    >>> h = Hierarchy([("animal", "dog"), ("animal", "cat"), ("plant", "tree")])
    >>> levels = labels_of(h, h.to_matrix([["dog"], ["cat", "tree"], []]), per_level=True)
    >>> levels.shape, level_names(h)
    ((3, 2), ['level_0', 'level_1'])
    >>> levels[1, 1]
    ['cat', 'tree']
    >>> p = Hierarchy([("sport", "sport/tennis")])
    >>> labels_of(p, [[1, 1]], per_level=True, path_sep="/").tolist()
    [[['sport'], ['tennis']]]
    """
    if per_level and leaves_only:
        raise ValueError("choose one of leaves_only and per_level")
    rows = space.to_labels(Y, leaves_only=leaves_only)
    if not per_level:
        return rows
    where = {name: int(d) for name, d in zip(space.labels, space.depth, strict=True)}
    out = np.empty((len(rows), len(level_names(space))), dtype=object)
    for i, row in enumerate(rows):
        for k in range(out.shape[1]):
            out[i, k] = []  # one list per cell (a slice assignment would share one)
        for name in row:
            out[i, where[name]].append(name if not path_sep else
                                       str(name).rsplit(path_sep, 1)[-1])
    return out


def level_names(space) -> list[str]:
    """The column names of a ``per_level`` table: ``level_0, level_1, ...``, one per depth
    level of ``space`` (:func:`labels_of`'s); given a fitted model, those of
    :func:`level_layout` (its level columns, if it was fitted on them)."""
    if not hasattr(space, "depth"):  # a model: its layout
        return level_layout(space)[0]
    depth = np.asarray(space.depth)
    return [f"level_{k}" for k in range(int(depth.max()) + 1 if depth.size else 0)]


def level_layout(model, path_sep="auto", *, level_columns=None) -> tuple[list[str], str | None]:
    """The layout of a model's level table (:func:`predict_labels` with ``per_level``, and
    ``ecrm predict --per-level``): its columns and the separator whose last path steps its
    cells hold.

    The columns are the level columns the model was fitted on (``level_columns_``, from
    ``ecrm fit --level-columns Cat1,Cat2``; or ``level_columns``) when there are as many as
    the hierarchy has levels or more, else ``level_0, level_1, ...``. With
    ``path_sep="auto"`` the cells hold last path steps by the separator the model's labels
    were read with (``reading_options_``, from ``ecrm fit --path-sep /``; ``"/"`` for a
    model of level columns), else the label names.

    Parameters
    ----------
    model : estimator or Pipeline
        Fitted, its output space a label hierarchy.
    path_sep : str, None or "auto", default="auto"
        The cells' separator; ``None``: the label names.
    level_columns : list of str, default=None
        Columns to use instead of the model's.

    Returns
    -------
    columns : list of str
    path_sep : str or None
    """
    steps = getattr(model, "steps", None)
    estimator = steps[-1][1] if steps is not None else model
    names = level_names(estimator.output_space)
    given = level_columns if level_columns is not None else getattr(
        estimator, "level_columns_", None)
    own = given is not None and len(given) >= len(names)
    if path_sep == "auto":
        stored = (getattr(estimator, "reading_options_", None) or {}).get("path_sep")
        path_sep = stored or ("/" if own else None)
    return (list(given or ()) if own else names), path_sep


def labels_from_levels(space, rows, *, path_sep: str | None = None) -> list[list]:
    """The label names of rows given one cell per depth level: the way back from
    :func:`labels_of`'s ``per_level`` table (and ``ecrm predict --per-level``'s columns).

    A value at level ``k`` names the label of depth ``k`` called so, or, with ``path_sep``,
    the label of depth ``k`` whose last path step it is (``"sport"`` at level 1 for
    ``"news/sport"``), under one of the row's labels of lower levels when several have that
    step (a value given twice names two such labels).

    Parameters
    ----------
    space : Hierarchy
    rows : iterable of sequences of (lists of) str
        One sequence of level cells per row; a cell is one value, a list of values, or
        empty.
    path_sep : str, default=None
        The separator of path labels (``None``: plain names only).

    Returns
    -------
    labels : list of n lists of label names

    Raises
    ------
    LabelRowError
        Naming the row and a value that names no label of its level, or more labels (or
        fewer) than it is given times.

    Examples
    --------
    >>> from ecrm import Hierarchy
    >>> h = Hierarchy([("a", "a/x"), ("b", "b/x")])
    >>> labels_from_levels(h, [["b", "x"], [["a", "b"], []]], path_sep="/")
    [['b', 'b/x'], ['a', 'b']]
    """
    depth = np.asarray(space.depth)
    by_value: dict[tuple[int, str], list] = {}
    for name, d in zip(space.labels, depth.tolist(), strict=True):
        keys = {str(name)}
        if path_sep:
            keys.add(str(name).rsplit(path_sep, 1)[-1])
        for key in keys:
            by_value.setdefault((d, key), []).append(name)
    parents = {name: {space.labels[j] for j in space.parents[i]}
               for i, name in enumerate(space.labels)}
    out = []
    for i, row in enumerate(rows):
        on: list = []
        for k, cell in enumerate(row):
            values = [cell] if isinstance(cell, str) else list(cell)
            counts = Counter(str(v).strip() for v in values if not _missing(v))
            above = set(on)
            for v, n in counts.items():
                found = by_value.get((k, v), [])
                if len(found) > n:  # the same step under several parents: the row's
                    found = [name for name in found if parents[name] & above]
                if len(found) != n:
                    raise LabelRowError(i, f"the level-{k} value {v!r}"
                                           + (f" ({n} times)" if n > 1 else "") + " names "
                                           + (f"{len(found)} labels" if found else "no label")
                                           + f" of depth {k}"
                                           + (f" ({sorted(map(str, found))})" if found else ""))
                on.extend(found)
        out.append(on)
    return out


def predict_labels(model, X, *, leaves_only: bool = False, per_level: bool = False,
                   path_sep="auto"):
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
    path_sep : str, None or "auto", default="auto"
        With ``per_level``: the cells hold last path steps by this separator (``"auto"``:
        the model's, :func:`level_layout`), or the label names (``None``).

    Returns
    -------
    labels : list of n lists, or ndarray of shape (n, n_levels) with ``per_level``
        As :func:`labels_of`; with ``per_level``, one column per name of
        ``level_names(model)`` (``pandas.DataFrame(labels, columns=level_names(model))``
        is the table ``ecrm predict --per-level`` writes).

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
    return model.predict_labels(X, leaves_only=leaves_only, per_level=per_level,
                                path_sep=path_sep)


def _level_table(model, Y, path_sep="auto"):
    """The level table of the predictions ``Y`` of ``model`` in its :func:`level_layout`
    (columns beyond the hierarchy's depth levels hold empty lists)."""
    columns, sep = level_layout(model, path_sep)
    table = labels_of(model.output_space, Y, per_level=True, path_sep=sep)
    if table.shape[1] < len(columns):
        wide = np.empty((table.shape[0], len(columns)), dtype=object)
        wide[:, :table.shape[1]] = table
        for i, k in np.ndindex(table.shape[0], len(columns) - table.shape[1]):
            wide[i, table.shape[1] + k] = []
        table = wide
    return table


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
