"""The data section of an ARFF file: its lines split into fields (dense rows and sparse
``{index value, ...}`` rows), then converted to the feature matrix (dense, or CSR when any
row is sparse: numbers, category codes, NaN for ``?``) and the class fields of each row.
Every error is an :class:`~ecrm.datasets._arff_text.ArffError` naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ecrm.datasets._arff_header import Attribute, ParsedFile
from ecrm.datasets._arff_text import ArffError, split_fields

__all__ = ["parse_data"]


@dataclass
class _DataTokens:
    """The @data section split into fields, before any conversion.

    Dense lines keep all their fields; sparse lines become (row, attribute, value) triplets
    (the class attribute excluded). ``class_fields`` and ``row_lines`` have one entry per row.
    """

    row_lines: list[int] = field(default_factory=list)
    class_fields: list[str] = field(default_factory=list)
    dense_rows: list[list[str]] = field(default_factory=list)
    dense_ids: list[int] = field(default_factory=list)
    sparse_rows: list[int] = field(default_factory=list)
    sparse_attrs: list[int] = field(default_factory=list)
    sparse_vals: list[str] = field(default_factory=list)


def _tokenize_sparse_line(line: str, path, lineno: int, n_attr: int,
                          class_index: int) -> tuple[str, list[tuple[int, str]]]:
    """Read ``{index value, ...}``: the class field ('' if absent) and the other pairs."""
    if not line.endswith("}"):
        raise ArffError(path, lineno, "expected a sparse row '{index value, ...}' ending with '}'")
    inner = line[1:-1].strip()
    cls, pairs = "", []
    for entry in split_fields(inner) if inner else []:
        idx_s, sep, val = entry.partition(" ")
        if not sep:
            idx_s, sep, val = entry.partition("\t")
        try:
            a = int(idx_s)
        except ValueError:
            raise ArffError(path, lineno, "expected 'index value' in a sparse row; found "
                            f"{entry!r}") from None
        if not 0 <= a < n_attr:
            raise ArffError(path, lineno, f"attribute index {a} out of range; expected 0 to "
                            f"{n_attr - 1}")
        if a == class_index:
            cls = val.strip()
        else:
            pairs.append((a, val.strip()))
    return cls, pairs


def _tokenize_data(p: ParsedFile, lines: list[str], start: int) -> _DataTokens:
    """Split the data lines from ``start`` on into fields; comments and blank lines skipped."""
    n_attr, cidx = len(p.attributes), p.class_index
    tokens = _DataTokens()
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if not line or line.startswith("%"):
            continue
        lineno = i + 1
        row = len(tokens.row_lines)
        tokens.row_lines.append(lineno)
        try:
            if line[0] == "{":
                cls, pairs = _tokenize_sparse_line(line, p.path, lineno, n_attr, cidx)
                tokens.class_fields.append(cls)
                for a, val in pairs:
                    tokens.sparse_rows.append(row)
                    tokens.sparse_attrs.append(a)
                    tokens.sparse_vals.append(val)
            else:
                fields = split_fields(line)
                if len(fields) != n_attr:
                    raise ArffError(p.path, lineno, f"expected {n_attr} comma-separated values "
                                    f"(one per @attribute); found {len(fields)}")
                tokens.class_fields.append(fields[cidx])
                tokens.dense_rows.append(fields)
                tokens.dense_ids.append(row)
        except ArffError:
            raise
        except ValueError as e:  # unterminated quotes
            raise ArffError(p.path, lineno, str(e)) from None
    return tokens


def _convert_numeric(vals: list[str], path, where) -> np.ndarray:
    """Strings -> float with '?' -> NaN; ``where(k)`` gives (lineno, attribute) of element k.

    ARFF numeric values are finite numbers; a missing value is ``?``. ``nan``, ``inf`` and
    numbers that overflow to infinity are errors.
    """
    n_missing = vals.count("?")
    try:
        out = np.array(["nan" if v == "?" else v for v in vals] if n_missing else vals,
                       dtype=np.float64)
    except ValueError:
        out = None
    if out is not None and np.count_nonzero(~np.isfinite(out)) == n_missing:
        return out  # the only non-finite values are the missing ones
    for k, v in enumerate(vals):
        if v == "?":
            continue
        try:
            ok = np.isfinite(float(v))
        except ValueError:
            ok = False
        if not ok:
            lineno, attr = where(k)
            raise ArffError(path, lineno, "expected a finite number or '?' (missing) for attribute "
                            f"{attr!r}; found {v!r}")
    raise AssertionError("unreachable: numpy and float disagree")  # pragma: no cover


def _convert_nominal(vals: np.ndarray, attr: Attribute, path, where) -> np.ndarray:
    """Category codes (NaN for '?') of the strings ``vals``; ``where`` as in _convert_numeric."""
    codes = {c: float(j) for j, c in enumerate(attr.categories or ())}
    uniq, inv = np.unique(vals, return_inverse=True)
    table = np.empty(len(uniq))
    for u, s in enumerate(uniq.tolist()):
        if s == "?":
            table[u] = np.nan
        elif s in codes:
            table[u] = codes[s]
        else:
            k = int(np.flatnonzero(inv.ravel() == u)[0])
            lineno, _ = where(k)
            raise ArffError(path, lineno, f"value {s!r} of nominal attribute {attr.name!r} is not "
                            f"one of {{{','.join(attr.categories or ())}}} (declared on line "
                            f"{attr.lineno})")
    return table[inv.ravel()]


def _dense_features(p: ParsedFile, rows: list[list[str]], row_lines: list[int],
                    feats: list[int]) -> np.ndarray:
    """Convert the feature fields of dense rows, one block of numeric columns at a time."""
    attrs = p.attributes
    X = np.empty((len(rows), len(feats)))
    if not rows or not feats:
        return X
    num = [j for j in feats if attrs[j].kind == "numeric"]
    col = {j: c for c, j in enumerate(feats)}
    if num:
        if num == list(range(num[0], num[-1] + 1)):  # contiguous: one slice per row
            flat = [v for r in rows for v in r[num[0] : num[-1] + 1]]
        else:
            flat = [r[j] for r in rows for j in num]

        def where_num(k):
            r, c = divmod(k, len(num))
            return row_lines[r], attrs[num[c]].name

        vals = _convert_numeric(flat, p.path, where_num).reshape(len(rows), len(num))
        X[:, [col[j] for j in num]] = vals
    for j in feats:
        if attrs[j].kind == "nominal":

            def where_nom(k, j=j):
                return row_lines[k], attrs[j].name

            values = np.array([r[j] for r in rows], dtype=str)
            X[:, col[j]] = _convert_nominal(values, attrs[j], p.path, where_nom)
    return X


def _sparse_features(p: ParsedFile, tokens: _DataTokens, feats: list[int]) -> sp.csr_matrix:
    """Convert sparse triplets (and dense rows, as triplets) to a CSR matrix."""
    attrs, n_attr, cidx = p.attributes, len(p.attributes), p.class_index
    col_of_attr = np.full(n_attr, -1, dtype=np.intp)
    col_of_attr[feats] = np.arange(len(feats))
    rows = np.asarray(tokens.sparse_rows, dtype=np.intp)
    acol = np.asarray(tokens.sparse_attrs, dtype=np.intp)
    vals = np.asarray(tokens.sparse_vals, dtype=str)
    if tokens.dense_rows:
        others = [j for j in range(n_attr) if j != cidx]
        D = np.array(tokens.dense_rows, dtype=str)[:, others]
        ids = np.asarray(tokens.dense_ids, dtype=np.intp)
        rows = np.concatenate([rows, np.repeat(ids, len(others))])
        acol = np.concatenate([acol, np.tile(np.asarray(others, dtype=np.intp), len(ids))])
        vals = np.concatenate([vals, D.ravel()]) if vals.size else D.ravel()
    keep = col_of_attr[acol] >= 0
    rows, acol, vals = rows[keep], acol[keep], vals[keep]
    key = rows * n_attr + acol
    if np.unique(key).size != key.size:
        order = np.argsort(key, kind="stable")
        dup = order[1:][np.diff(key[order]) == 0][0]
        raise ArffError(p.path, int(p.row_lines[rows[dup]]), f"attribute index {acol[dup]} given "
                        "twice in a sparse row; expected each index once")
    data = np.empty(len(vals))
    is_nom = np.array([a.kind == "nominal" for a in attrs], dtype=bool)[acol]
    num_idx = np.flatnonzero(~is_nom)

    def where_num(k):
        t = num_idx[k]
        return int(p.row_lines[rows[t]]), attrs[acol[t]].name

    data[num_idx] = _convert_numeric(vals[num_idx].tolist(), p.path, where_num)
    for j in np.unique(acol[is_nom]).tolist():
        idx = np.flatnonzero(acol == j)

        def where_nom(k, idx=idx):
            t = idx[k]
            return int(p.row_lines[rows[t]]), attrs[acol[t]].name

        data[idx] = _convert_nominal(vals[idx], attrs[j], p.path, where_nom)
    X = sp.csr_matrix((data, (rows, col_of_attr[acol])), shape=(p.n_rows, len(feats)))
    X.eliminate_zeros()  # explicit zeros (and nominal code 0) are implicit; NaN stays stored
    X.sort_indices()
    return X


def parse_data(p: ParsedFile, lines: list[str], start: int) -> None:
    """Fill ``p``'s rows, class fields and features from the data lines from ``start`` on."""
    tokens = _tokenize_data(p, lines, start)
    p.n_rows = len(tokens.row_lines)
    p.row_lines = np.asarray(tokens.row_lines, dtype=np.intp)
    p.class_fields = tokens.class_fields
    feats = [j for j, a in enumerate(p.attributes) if a.kind in ("numeric", "nominal")]
    if len(tokens.dense_rows) == p.n_rows:  # no sparse line: a dense matrix
        p.X = _dense_features(p, tokens.dense_rows, tokens.row_lines, feats)
    else:
        p.X = _sparse_features(p, tokens, feats)
