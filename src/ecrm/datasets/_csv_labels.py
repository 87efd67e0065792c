"""The label column of a CSV/TSV file: its cells (label names or paths, several to a cell;
or one path split over level columns) read into lists of label names, checked against or
made into a hierarchy, and the 0/1 label matrix closed under the ancestors. Errors name the
file and line (:class:`~ecrm.datasets.formats.DataFileError`)."""

from __future__ import annotations

import numpy as np

from ecrm.datasets._files import DataFileError
from ecrm.spaces.hierarchy import Hierarchy

__all__ = ["label_matrix", "level_path", "parse_label_cells", "warn_other_separator"]


def _label_rows(raw: list[str], lines: list[int], path, label_sep: str,
                path_sep: str | None) -> tuple[list[list[str]], list, list]:
    """Label names per row, and (for paths) the implied edges and labels in order. Each
    distinct token is parsed once: the rows share their name strings (a million rows cost
    one small list each, not a new string per label and row)."""
    rows: list[list[str]] = []
    edges: dict = {}
    names: dict = {}
    seen: dict[str, str] = {}  # label token as written -> its (interned) label name
    for text, lineno in zip(raw, lines, strict=True):
        row = []
        if text.strip():
            for token in text.split(label_sep):
                name = seen.get(token)
                if name is None:
                    name = _label_name(token, text, lineno, path, label_sep, path_sep,
                                       edges, names)
                    seen[token] = name
                row.append(name)
        rows.append(row)
    return rows, list(edges), list(names)


def _label_name(token: str, text: str, lineno: int, path, label_sep: str,
                path_sep: str | None, edges: dict, names: dict) -> str:
    """The label name of one token of a label cell (recording the names and path edges)."""
    lab = token.strip()
    if not lab:
        raise DataFileError(path, lineno, f"empty label name in {text!r} (labels are "
                            f"separated by {label_sep!r})")
    if path_sep is None:
        names.setdefault(lab, None)
        return lab
    parts = [p.strip() for p in lab.split(path_sep)]
    if any(not p for p in parts):
        raise DataFileError(path, lineno, f"empty step in the label path {lab!r}")
    prefixes = [path_sep.join(parts[: k + 1]) for k in range(len(parts))]
    for parent, child in zip(prefixes, prefixes[1:], strict=False):
        edges.setdefault((parent, child), None)
    for v in prefixes:
        names.setdefault(v, None)
    return prefixes[-1]


def label_matrix(hierarchy, rows: list[list[str]], *, compact: bool,
                  chunk_rows: int = 65_536) -> np.ndarray:
    """The 0/1 matrix of ``rows`` closed under the ancestors (as ``hierarchy.to_matrix``),
    built in row chunks: bool with ``compact`` (1 byte a cell), else float."""
    index = hierarchy.index
    Y = np.zeros((len(rows), hierarchy.n_labels), dtype=bool)
    for start in range(0, len(rows), chunk_rows):
        block = rows[start:start + chunk_rows]
        counts = np.fromiter((len(r) for r in block), dtype=np.intp, count=len(block))
        cols = np.fromiter((index[v] for r in block for v in r), dtype=np.intp,
                           count=int(counts.sum()))
        Y[start + np.repeat(np.arange(len(block)), counts), cols] = True
    for j in reversed(hierarchy.order):  # children before their parents
        for parent in hierarchy.parents[j]:
            Y[:, parent] |= Y[:, j]
    return Y if compact else Y.astype(np.float64)


#: Separators a label column may use instead of the one given (warned about); ``/`` only
#: when every row holds it (a name such as ``n/a`` is common, a path in every row is not).
_OTHER_SEPARATORS = ("|", ";", ",", "/")


def warn_other_separator(path, column: str, raw: list[str], lines: list[int],
                          label_sep: str, path_sep: str | None) -> None:
    """Warn (once) when some label cells hold a common separator that ``label_sep`` does not
    split: the count of such rows and the first one's line, so that a file written with
    another separator does not silently become nonsense labels."""
    import warnings

    values = [(v, n) for v, n in zip(raw, lines, strict=True) if v.strip()]
    for other in _OTHER_SEPARATORS:
        if other in (label_sep, path_sep):
            continue
        holding = [(v, n) for v, n in values if other in v]
        if not holding or (other == "/" and len(holding) < max(2, len(values))):
            continue
        hint = "--path-sep /" if other == "/" else f"--label-sep '{other}'"
        value, lineno = holding[0]
        warnings.warn(f"{path}: {len(holding)} of {len(values)} rows hold {other!r} in the "
                      f"label column {column!r} (e.g. line {lineno}: {value!r}), which does "
                      f"not separate labels here (the separator is {label_sep!r}); did you "
                      f"mean {hint}?", UserWarning, stacklevel=3)
        return


def _check_paths_in(hierarchy, raw: list[str], lines: list[int], path, label_sep: str,
                    path_sep: str) -> None:
    """Every step ``a/b`` of a label path must be an edge ``a -> a/b`` of ``hierarchy``."""
    index, labels = hierarchy.index, hierarchy.labels
    for text, lineno in zip(raw, lines, strict=True):
        for lab in (t.strip() for t in text.split(label_sep) if t.strip()):
            parts = [p.strip() for p in lab.split(path_sep)]
            prefixes = [path_sep.join(parts[: k + 1]) for k in range(len(parts))]
            for parent, child in zip(prefixes, prefixes[1:], strict=False):
                if parent not in index or child not in index:
                    continue  # reported as a label outside the hierarchy
                above = [labels[j] for j in hierarchy.parents[index[child]]]
                if parent not in above:
                    where = (f"under {', '.join(repr(a) for a in above)}" if above
                             else "at the top level")
                    raise DataFileError(path, lineno, f"the label path {lab!r} puts {child!r} "
                                        f"under {parent!r}, but the hierarchy has it {where}")

def level_path(path, lineno: int, cells: list[str], path_sep: str) -> str:
    """One row's level cells as a path (an empty cell ends it), one label: no ``label_sep``."""
    steps = []
    for cell in (c.strip() for c in cells):
        if not cell:
            break
        if path_sep in cell:
            raise DataFileError(path, lineno, f"the level value {cell!r} holds the path "
                                f"separator {path_sep!r}")
        steps.append(cell)
    return path_sep.join(steps)

def parse_label_cells(raw, lines, path, label_sep, path_sep, hierarchy):
    """The label cells as lists of label names and the hierarchy they are checked against:
    built from the cells without ``hierarchy`` (paths give edges, plain names a flat one);
    else paths must agree with it and every label be in it. A row is reported by its line."""
    rows, edges, names = _label_rows(raw, lines, path, label_sep, path_sep)
    if hierarchy is not None and path_sep is not None:
        _check_paths_in(hierarchy, raw, lines, path, label_sep, path_sep)
    if hierarchy is None:
        hierarchy = Hierarchy(edges, labels=names)
    index = hierarchy.index
    for row, lineno in zip(rows, lines, strict=True):
        for lab in row:
            if lab not in index:
                raise DataFileError(path, lineno, f"label {lab!r} is not in the hierarchy "
                                    f"({hierarchy.n_labels} labels)")
    return rows, hierarchy
