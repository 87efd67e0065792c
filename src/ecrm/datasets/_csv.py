"""CSV/TSV data files: numeric feature columns and one label column (names or paths) or one
column per level, read as a stream of row chunks. The label cells are read by
:mod:`ecrm.datasets._csv_labels`, a file for a Dask cluster by :mod:`ecrm.datasets._csv_dask`.
The public names are re-exported by :mod:`ecrm.datasets.formats`."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
from typing import Any

import numpy as np
from sklearn.utils import Bunch

from ecrm.datasets._csv_labels import (
    label_matrix,
    level_path,
    parse_label_cells,
    warn_other_separator,
)
from ecrm.datasets._files import DataFileError, _check_path, _encoding, _open_binary
from ecrm.datasets.labels import LabelRowError, as_label_matrix

__all__ = ["CHUNK_ROWS", "iter_csv", "load_csv", "looks_like_id", "read_table"]


def _numbers(path, values: list[list[str]], lines: list[int], feature_names) -> np.ndarray:
    """The feature cells as floats: NaN for a missing cell (:data:`MISSING_CELLS`), an error
    naming file, line and column for any other text or an infinite value."""
    try:  # numpy parses the strings in C: the common case of numbers only
        X = np.array(values, dtype=np.float64).reshape(len(values), len(feature_names))
    except ValueError:
        X = None
    if X is not None and np.isfinite(X).all():
        return X
    X = np.empty((len(values), len(feature_names)))
    for r, (row, lineno) in enumerate(zip(values, lines, strict=True)):
        for c, f in enumerate(row):
            if f.strip().lower() in MISSING_CELLS:
                X[r, c] = np.nan  # missing: imputed by a model that imputes, else refused
                continue
            try:
                X[r, c] = float(f)
            except ValueError:
                X[r, c] = np.nan
            if not np.isfinite(X[r, c]):
                name = feature_names[c]
                hint = (f" (if it identifies the rows, leave it out with id_column={name!r})"
                        if looks_like_id(name) else _DECIMAL_COMMA if
                        _DECIMAL_COMMA_CELL.match(f.strip()) else "")
                raise DataFileError(path, lineno, f"column {name!r}: expected a finite "
                                    f"number; found {f!r}{hint}")
    return X


#: A number written with a decimal comma (``1,5``, ``-0,25``, ``1.234,5``), and what to do.
_DECIMAL_COMMA_CELL = re.compile(r"^[+-]?(\d{1,3}(\.\d{3})+|\d+),\d+([eE][+-]?\d+)?$")
_DECIMAL_COMMA = (" (a number with a decimal comma? numbers are read with '.' as the "
                  "decimal mark: save the file again with '.' decimals)")


#: Field separators a CSV file may use instead of the one read with (suggested in errors).
_DELIMITERS = (",", "\t", ";", "|")


def _check_delimiter(path, header: list[str], sep: str) -> None:
    """Refuse a header that is one column which another common separator splits: the file
    is read with the wrong field separator (a tab file named .csv, a ``;`` CSV)."""
    if len(header) != 1:
        return
    for other in _DELIMITERS:
        if other != sep and len(header[0].split(other)) > 1:
            raise DataFileError(path, 1, f"the header is one column {header[0]!r}: the fields "
                                f"look separated by {other!r}, not {sep!r} (give "
                                f"sep={other!r})")


def looks_like_id(name: str) -> bool:
    """Whether a column name is a common name of a row ID (``id``, ``doc_id``, ``uuid``,
    ``Key``, ...): such a column is never dropped on a guess, only named in a hint."""
    low = name.strip().lower()
    return low in ("id", "uuid", "guid", "key", "index", "row", "identifier") or \
        low.endswith(("_id", "-id", " id", ".id")) or (name.endswith("Id") and len(name) > 2)


#: Feature cells read as missing values (lower case, stripped).
MISSING_CELLS = frozenset({"", "?", "na", "n/a", "nan", "null"})

#: Rows read and parsed at a time by :func:`load_csv` and :func:`iter_csv` (about 25 MB of
#: cell text for 50 features).
CHUNK_ROWS = 65_536


class _CsvTable:
    """A CSV/TSV file's header, read and checked on construction, and its data rows in
    chunks (:meth:`chunks`: only one chunk's text is held). Errors name the file and line.
    For predictions (``ignore_labels``) level columns the file lacks are not missed."""

    def __init__(self, path, *, sep: str | None, label_column: str, path_sep: str | None,
                 require_labels: bool, ignore_labels: bool, level_columns,
                 id_column: str | None = None):
        self.path = path = _check_path(path)
        self.sep = sep if sep is not None else (
            "\t" if path.suffix.lower() in (".tsv", ".tab") else ",")
        self.encoding = _encoding(path)
        self.ignore_labels = ignore_labels
        with self._reader() as reader:
            try:
                header = next(reader)
            except StopIteration:
                raise DataFileError(path, 1, "empty file: expected a header row") from None
            except csv.Error as exc:
                raise DataFileError(path, 1, str(exc)) from None
        header = [h.strip() for h in header]
        _check_delimiter(path, header, self.sep)
        if len(set(header)) != len(header):
            dup = next(h for h in header if header.count(h) > 1)
            raise DataFileError(path, 1, f"column {dup!r} appears twice in the header")
        if level_columns is not None:
            level_columns = list(level_columns)
            missing = [c for c in level_columns if c not in header]
            if missing and not ignore_labels:
                raise DataFileError(path, 1, f"no level columns {missing} in the header "
                                    f"{header}")
            path_sep = "/" if path_sep is None else path_sep
            label_idx = [header.index(c) for c in level_columns if c in header]
            has_labels = True
        else:
            has_labels = label_column in header
            if not has_labels and require_labels and not ignore_labels:
                raise DataFileError(path, 1, f"no label column {label_column!r} in the header "
                                    f"{header} (choose it with label_column, or "
                                    "level_columns)")
            label_idx = [header.index(label_column)] if has_labels else []
        self.id_idx = None
        if id_column is not None:
            if id_column not in header:
                raise DataFileError(path, 1, f"no ID column {id_column!r} in the header "
                                    f"{header} (choose it with id_column)")
            self.id_idx = header.index(id_column)
            if self.id_idx in label_idx:
                raise DataFileError(path, 1, f"column {id_column!r} cannot be both the ID "
                                    "column and a label column")
        self.header, self.label_idx, self.has_labels = header, label_idx, has_labels
        self.level_columns, self.path_sep = level_columns, path_sep
        self.feature_names = [h for k, h in enumerate(header)
                              if k not in label_idx and k != self.id_idx]

    @contextlib.contextmanager
    def _reader(self):
        with _open_binary(self.path) as raw, io.TextIOWrapper(
                raw, encoding=self.encoding, newline="") as text:
            yield csv.reader(text, delimiter=self.sep)

    def chunks(self, chunk_rows: int):
        """Yield ``(values, raw_labels, lines, ids)`` for each ``chunk_rows`` data rows
        (``ids`` empty without an ID column)."""
        path, width = self.path, len(self.header)
        label_idx, level, id_idx = self.label_idx, self.level_columns is not None, self.id_idx
        keep = [k for k in range(width) if k not in label_idx and k != id_idx]
        whole = len(keep) == width
        read_labels = self.has_labels and not self.ignore_labels
        with self._reader() as reader:
            values, raw_labels, lines, ids = [], [], [], []
            try:
                next(reader)  # the header
                for row in reader:
                    lineno = reader.line_num
                    if not row or all(not f.strip() for f in row):
                        continue
                    if len(row) != width:
                        raise DataFileError(path, lineno, f"expected {width} fields (as in "
                                            f"the header); found {len(row)}")
                    values.append(row if whole else [row[k] for k in keep])
                    if id_idx is not None:
                        ids.append(row[id_idx].strip())
                    if read_labels:
                        raw_labels.append(
                            row[label_idx[0]] if not level else
                            level_path(path, lineno, [row[k] for k in label_idx],
                                        self.path_sep or "/"))
                    lines.append(lineno)
                    if len(values) == chunk_rows:
                        yield values, raw_labels, lines, ids
                        values, raw_labels, lines, ids = [], [], [], []
            except csv.Error as exc:
                raise DataFileError(path, reader.line_num, str(exc)) from None
            except UnicodeDecodeError as exc:  # the file changed since its encoding was read
                raise DataFileError(path, reader.line_num + 1, f"cannot decode: {exc}") from None
            if values:
                yield values, raw_labels, lines, ids


def read_table(table: _CsvTable, chunk_rows: int) -> tuple[np.ndarray, list, np.ndarray, list]:
    """Every data row of ``table``, read and parsed ``chunk_rows`` rows at a time: the
    features ``X``, the label cells, the line of each row and the ID cells; a file without
    data rows is an error."""
    blocks, cells, line_blocks, ids = [], [], [], []
    for values, raw, lines, ids_ in table.chunks(chunk_rows):
        blocks.append(_numbers(table.path, values, lines, table.feature_names))
        line_blocks.append(np.asarray(lines))
        cells.extend(raw)
        ids.extend(ids_)
    if not blocks:
        raise DataFileError(table.path, None, "no data rows after the header")
    X = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    del blocks
    row_lines = line_blocks[0] if len(line_blocks) == 1 else np.concatenate(line_blocks)
    return X, cells, row_lines, ids


def iter_csv(path: str | os.PathLike, *, sep: str | None = None,
             label_column: str = "labels", level_columns=None, id_column: str | None = None,
             chunk_rows: int = CHUNK_ROWS):
    """Read the features of a CSV/TSV file in chunks of rows, as a stream (for predictions).

    The label column (or the ``level_columns``), if any, is skipped unread. Memory is bounded
    by a chunk whatever the file's length; the chunks joined are :func:`load_csv`'s ``X``
    with ``ignore_labels=True``, and a bad cell raises the same :class:`DataFileError`
    (file, line and column).

    Yields
    ------
    chunk : sklearn.utils.Bunch
        ``X`` (rows, p), ``row_lines``, ``feature_names``, ``filename``, ``ids`` (as
        :func:`load_csv`, ``Y = None``) for at most ``chunk_rows`` rows; a file without data
        rows is an error.
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1; got {chunk_rows!r}")
    table = _CsvTable(path, sep=sep, label_column=label_column, path_sep=None,
                      require_labels=False, ignore_labels=True, level_columns=level_columns,
                      id_column=id_column)
    names = tuple(table.feature_names)
    empty = True
    for values, _, lines, ids in table.chunks(chunk_rows):
        empty = False
        yield Bunch(X=_numbers(table.path, values, lines, names), Y=None, hierarchy=None,
                    feature_names=names, label_names=None, label_lists=None,
                    filename=str(table.path), row_lines=np.asarray(lines),
                    ids=ids if id_column is not None else None)
    if empty:
        raise DataFileError(table.path, None, "no data rows after the header")


def load_csv(path: str | os.PathLike, *, label_column: str = "labels", sep: str | None = None,
             label_sep: str = ";", path_sep: str | None = None, hierarchy=None,
             require_labels: bool = True, ignore_labels: bool = False,
             level_columns=None, compact_labels: bool = False, id_column: str | None = None,
             chunk_rows: int = CHUNK_ROWS) -> Bunch:
    """Read a CSV/TSV file of numeric features and one column of label names (or one column
    per level of the hierarchy).

    A feature cell that is empty or one of ``?``, ``NA``, ``N/A``, ``NaN``, ``null`` (any
    case) is missing (NaN in ``X``); any other text that is not a finite number is an error
    naming the file, line and column.

    Parameters
    ----------
    path : str or path-like
        The first row names the columns.
    label_column : str, default="labels"
        The column holding each row's labels.
    sep : str, default=None
        Field separator; ``None``: a tab for ``*.tsv`` / ``*.tab`` files, else a comma.
    label_sep : str, default=";"
        Separates the labels within the label column.
    path_sep : str, default=None
        If given (e.g. ``"/"``), each label is a path ``a/b/c`` meaning the labels ``a``,
        ``a/b`` and ``a/b/c`` of a tree (label names are the full paths).
    hierarchy : ecrm.Hierarchy, default=None
        The output space; every label must be one of its labels. Default: the tree implied
        by the paths, or flat labels (an edgeless hierarchy) in order of first appearance.
    require_labels : bool, default=True
        With ``False``, a file without the label column gives ``Y = None``.
    ignore_labels : bool, default=False
        Drop the label column unread (``Y = None``), as for predictions: its labels need not
        be in ``hierarchy``.
    level_columns : sequence of str, default=None
        Instead of ``label_column``: the columns holding each row's path, one per level
        (HiClass's ``Cat1, Cat2, Cat3`` layout; an empty cell ends a shorter path). The
        labels are the paths joined by ``path_sep`` (default ``"/"``), or, with a
        ``hierarchy`` of plain names, each row's deepest value (see
        :func:`ecrm.datasets.labels.as_label_matrix`).
    compact_labels : bool, default=False
        Return ``Y`` as bool (1 byte a cell instead of 8: 0.5 GB for a million rows and 500
        labels), which the primal and Nystrom solvers keep as it is.
    id_column : str, default=None
        A column identifying the rows (``doc_id``): neither a feature nor a label; its cells
        are ``ids``. A column is never taken for one on a guess from its name.
    chunk_rows : int, default=CHUNK_ROWS
        The file is read and its numbers parsed this many rows at a time (the memory of the
        text is bounded by a chunk; the result does not depend on it).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (n, p), ``Y`` (n, d), ``hierarchy``, ``label_names``, ``feature_names``,
        ``label_lists`` (the names as given), ``filename``, ``row_lines`` (the line of each
        row in the file), ``ids`` (the ``id_column`` cells, or ``None``).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "d.csv")
    >>> _ = open(path, "w").write("x1,x2,labels\\n0.5,1,animal/dog\\n0.1,2,plant\\n")
    >>> data = load_csv(path, path_sep="/")
    >>> data.label_names
    ('animal', 'animal/dog', 'plant')
    >>> data.Y
    array([[1., 1., 0.],
           [0., 0., 1.]])
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1; got {chunk_rows!r}")
    table = _CsvTable(path, sep=sep, label_column=label_column, path_sep=path_sep,
                      require_labels=require_labels, ignore_labels=ignore_labels,
                      level_columns=level_columns, id_column=id_column)
    path, path_sep, feature_names = table.path, table.path_sep, table.feature_names
    has_labels, level_columns = table.has_labels, table.level_columns
    X, raw_labels, row_lines, ids = read_table(table, chunk_rows)
    lines: Any = row_lines.tolist() if has_labels and not ignore_labels else row_lines
    bunch = Bunch(X=X, Y=None, hierarchy=hierarchy, feature_names=tuple(feature_names),
                  label_names=None if hierarchy is None else tuple(hierarchy.labels),
                  label_lists=None, filename=str(path), row_lines=row_lines,
                  ids=ids if id_column is not None else None)
    if not has_labels or ignore_labels:
        return bunch
    if hierarchy is None and level_columns is None:
        warn_other_separator(path, label_column, raw_labels, lines, label_sep, path_sep)
    if level_columns is not None and hierarchy is not None and not all(
            not r or r in hierarchy.index for r in raw_labels):  # a hierarchy of plain names
        rows = [r.split(path_sep) if r else [] for r in raw_labels]
        try:
            Y = as_label_matrix(hierarchy, np.array([r + [""] * (len(level_columns) - len(r))
                                                     for r in rows], dtype=object))
        except LabelRowError as exc:
            raise DataFileError(path, lines[exc.row], exc.reason) from None
        bunch.update(Y=Y.astype(bool) if compact_labels else Y, hierarchy=hierarchy,
                     label_lists=hierarchy.to_labels(Y), label_names=tuple(hierarchy.labels))
        return bunch
    if level_columns is not None:
        label_sep = "\0"  # one path per row: no cell splits into several labels
    rows, hierarchy = parse_label_cells(raw_labels, lines, path, label_sep, path_sep, hierarchy)
    bunch.update(Y=label_matrix(hierarchy, rows, compact=compact_labels), hierarchy=hierarchy,
                 label_lists=rows, label_names=tuple(hierarchy.labels))
    return bunch


