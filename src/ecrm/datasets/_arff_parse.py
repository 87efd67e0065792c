"""Tokenising and parsing of Clus hierarchical ARFF files: header, hierarchy declaration, data.

:mod:`ecrm.datasets.arff` documents the format and builds the public results (labels,
hierarchies, Bunches) from the :class:`_Parsed` files this module produces. Every error is
an :class:`ArffError` naming the file and line.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["ArffError"]

_DAG_ROOT = "root"
_SKIPPED_TYPES = ("string", "date", "key")
_NUMERIC_TYPES = ("numeric", "real", "integer")

class ArffError(ValueError):
    """A malformed ARFF file: the message names the file, the line and what was expected.

    Attributes
    ----------
    filename : str
        The file being read.
    lineno : int or None
        1-based line number of the offending line (None when no line applies).
    """

    def __init__(self, filename, lineno: int | None, message: str):
        self.filename = str(filename)
        self.lineno = lineno
        self.reason = message
        where = self.filename if lineno is None else f"{self.filename}, line {lineno}"
        super().__init__(f"{where}: {message}")


# --------------------------------------------------------------------------- tokenising
_QUOTES = ("'", '"')


def _split_fields(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside quotes; remove quotes (with backslash escapes) and strip."""
    if "'" not in text and '"' not in text:
        return [s.strip() for s in text.split(sep)]
    fields: list[str] = []
    buf: list[str] = []
    quote = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote is not None:
            if ch == "\\" and i + 1 < n:
                buf.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            else:
                buf.append(ch)
        elif ch in _QUOTES:
            quote = ch
        elif ch == sep:
            fields.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
        i += 1
    if quote is not None:
        raise ValueError(f"unterminated quote {quote}")
    fields.append("".join(buf).strip())
    return fields


def _read_name(text: str) -> tuple[str, str]:
    """Read a possibly quoted name at the start of ``text``; return (name, rest)."""
    text = text.lstrip()
    if text[:1] in _QUOTES:
        quote = text[0]
        buf: list[str] = []
        i = 1
        while i < len(text):
            ch = text[i]
            if ch == "\\" and i + 1 < len(text):
                buf.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                return "".join(buf), text[i + 1 :].strip()
            buf.append(ch)
            i += 1
        raise ValueError(f"unterminated quote {quote} in name")
    m = re.match(r"[^\s{]+", text)
    if m is None:
        return "", text
    return m.group(0), text[m.end() :].strip()


#: Bytes read at a time from a line: a line longer than this (a comment of gigabytes) is
#: read, and skipped if a comment, in pieces of this size.
_LINE_CHUNK = 2**16


def _read_text(path: Path) -> str:
    """The file's text, gunzipped if it starts with gzip's magic bytes, read as a stream.

    Comment lines (``%``) and blank lines are dropped while reading, each leaving only its
    newline (so that line numbers stay those of the file): a small compressed file of
    gigabytes of comments costs a byte a line. What is kept (the lines, plus a pointer each
    once split) must fit the memory budget (:data:`ecrm.model_files._archive.MEMORY_BUDGET`),
    checked as the stream is read, before it is decoded.
    """
    from ecrm.model_files._archive import MEMORY_BUDGET

    with open(path, "rb") as fh:
        compressed = fh.read(2) == b"\x1f\x8b"
    kept: list[bytes] = []
    cost = lineno = skipped = 0
    try:
        with (gzip.open if compressed else open)(path, "rb") as fh:
            while True:
                piece = fh.readline(_LINE_CHUNK)
                if not piece:
                    break
                lineno += 1
                head = piece.lstrip()
                if not head or head.startswith(b"%"):  # a blank line or a comment: skipped
                    while not piece.endswith(b"\n"):
                        piece = fh.readline(_LINE_CHUNK)
                        if not piece:
                            break
                    skipped += 1 if piece else 0
                    cost += 9  # its newline, and its entry once the text is split
                    if cost > MEMORY_BUDGET:
                        raise ArffError(path, lineno, f"the file's text is over the memory "
                                        f"budget of {MEMORY_BUDGET} bytes (ECRM_MEMORY_BUDGET)")
                    continue
                if skipped:  # the newlines of a run of skipped lines, as one piece
                    kept.append(b"\n" * skipped)
                    skipped = 0
                while not piece.endswith(b"\n"):  # a long line: read on in pieces
                    more = fh.readline(_LINE_CHUNK)
                    if not more:
                        break
                    kept.append(piece)
                    cost += len(piece)
                    piece = more
                    if cost > MEMORY_BUDGET:
                        break
                kept.append(piece)
                cost += len(piece) + 8
                if cost > MEMORY_BUDGET:
                    raise ArffError(path, lineno, f"the file's text is over the memory budget "
                                    f"of {MEMORY_BUDGET} bytes (ECRM_MEMORY_BUDGET)")
    except (OSError, EOFError, zlib.error) as e:
        raise ArffError(path, None, f"corrupt gzip data: {e}") from e
    kept.append(b"\n" * skipped)
    raw = b"".join(kept)
    del kept
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# --------------------------------------------------------------------------- header
@dataclass
class _Attribute:
    name: str
    kind: str  # "numeric", "nominal", "skip", "hierarchical"
    lineno: int
    categories: tuple[str, ...] | None = None


@dataclass
class _HierarchySpec:
    kind: str  # "tree" or "dag"
    edges: list[tuple[str, str]]
    labels: list[str]
    root: str | None
    lineno: int

    def signature(self):
        return (self.kind, self.root, frozenset(self.labels), frozenset(self.edges))


@dataclass
class _Parsed:
    path: Path
    relation: str
    attributes: list[_Attribute]
    class_index: int
    spec: _HierarchySpec
    # data
    n_rows: int = 0
    row_lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    X: np.ndarray | sp.csr_matrix = field(default_factory=lambda: np.zeros((0, 0)))
    class_fields: list[str] = field(default_factory=list)

    @property
    def features(self) -> list[_Attribute]:
        return [a for a in self.attributes if a.kind in ("numeric", "nominal")]

    def feature_signature(self):
        return [(a.name, a.kind, a.categories) for a in self.features]


def _parse_hierarchy(entries_text: str, path, lineno: int, hierarchy_type: str) -> _HierarchySpec:
    entries = [e.strip() for e in entries_text.split(",")]
    entries = [e for e in entries if e]
    if not entries:
        raise ArffError(
            path,
            lineno,
            "expected a comma-separated list of classes after 'hierarchical'; found none",
        )
    parts = [e.split("/") for e in entries]
    if hierarchy_type == "auto":
        is_dag = all(len(p) == 2 for p in parts) and any(p[0] == _DAG_ROOT for p in parts)
        kind = "dag" if is_dag else "tree"
    elif hierarchy_type in ("tree", "dag"):
        kind = hierarchy_type
    else:
        raise ValueError(f"hierarchy_type must be 'auto', 'tree' or 'dag'; got {hierarchy_type!r}")
    edges: dict[tuple[str, str], None] = {}
    labels: dict[str, None] = {}
    for entry, comps in zip(entries, parts, strict=True):
        stripped = [c.strip() for c in comps]
        if any(not c for c in stripped):
            raise ArffError(
                path,
                lineno,
                f"empty component in hierarchy entry {entry!r}; expected names separated by '/'",
            )
        if kind == "dag":
            if len(stripped) != 2:
                raise ArffError(
                    path,
                    lineno,
                    "expected DAG edges 'parent/child' in the hierarchical attribute; "
                    f"found {entry!r}",
                )
            p, c = stripped
            edges[(p, c)] = None
            for v in (p, c):
                if v != _DAG_ROOT:
                    labels[v] = None
        else:
            prev = None
            for k in range(1, len(stripped) + 1):
                node = "/".join(stripped[:k])
                labels[node] = None
                if prev is not None:
                    edges[(prev, node)] = None
                prev = node
    root = _DAG_ROOT if kind == "dag" and any(_DAG_ROOT in e for e in edges) else None
    return _HierarchySpec(kind, list(edges), list(labels), root, lineno)


def _parse_header(path: Path, lines: list[str], hierarchy_type: str, *,
                  require_class: bool = True):
    relation = ""
    attributes: list[_Attribute] = []
    class_index = None
    spec = None
    data_start = None
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        lineno = i + 1
        low = line.lower()
        if low.startswith("@relation"):
            try:
                relation, _ = _read_name(line[len("@relation") :])
            except ValueError as e:
                raise ArffError(path, lineno, str(e)) from None
        elif low.startswith("@attribute"):
            try:
                name, rest = _read_name(line[len("@attribute") :])
            except ValueError as e:
                raise ArffError(path, lineno, str(e)) from None
            if not name or not rest:
                raise ArffError(
                    path, lineno, f"expected '@attribute <name> <type>'; found {line[:80]!r}"
                )
            rlow = rest.lower()
            word = rlow.split(None, 1)[0]
            if rest.startswith("{"):
                if not rest.endswith("}"):
                    raise ArffError(
                        path,
                        lineno,
                        f"expected a nominal list '{{a,b,...}}' for {name!r}; found {rest[:80]!r}",
                    )
                try:
                    cats = _split_fields(rest[1:-1])
                except ValueError as e:
                    raise ArffError(path, lineno, str(e)) from None
                if any(not c for c in cats) or len(set(cats)) != len(cats):
                    raise ArffError(
                        path,
                        lineno,
                        f"nominal attribute {name!r} has empty or repeated values: {rest[:80]!r}",
                    )
                attributes.append(_Attribute(name, "nominal", lineno, tuple(cats)))
            elif word in _NUMERIC_TYPES:
                attributes.append(_Attribute(name, "numeric", lineno))
            elif word in _SKIPPED_TYPES:
                attributes.append(_Attribute(name, "skip", lineno))
            elif word == "hierarchical":
                if class_index is not None:
                    raise ArffError(
                        path,
                        lineno,
                        f"second hierarchical attribute {name!r}; expected exactly one "
                        f"(the first, {attributes[class_index].name!r}, is on line "
                        f"{attributes[class_index].lineno})",
                    )
                spec = _parse_hierarchy(rest[len("hierarchical") :], path, lineno, hierarchy_type)
                class_index = len(attributes)
                attributes.append(_Attribute(name, "hierarchical", lineno))
            elif word == "relational":
                raise ArffError(path, lineno, f"relational attribute {name!r} is not supported")
            else:
                raise ArffError(
                    path,
                    lineno,
                    f"unknown type {rest.split(None, 1)[0]!r} for attribute {name!r}; expected "
                    "numeric, real, integer, {nominal values}, string, date or hierarchical",
                )
        elif low.startswith("@data"):
            data_start = i + 1
            if class_index is None and require_class:
                raise ArffError(
                    path,
                    lineno,
                    "no hierarchical attribute declared before @data; expected a Clus class "
                    "attribute such as '@attribute class hierarchical a,a/b,c'",
                )
            break
        else:
            raise ArffError(
                path,
                lineno,
                f"expected @relation, @attribute or @data in the header; found {line[:80]!r}",
            )
    if data_start is None:
        raise ArffError(
            path, len(lines), "expected an @data line after the header; reached the end of the file"
        )
    return relation, attributes, class_index, spec, data_start


# --------------------------------------------------------------------------- data
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
    for entry in _split_fields(inner) if inner else []:
        idx_s, sep, val = entry.partition(" ")
        if not sep:
            idx_s, sep, val = entry.partition("\t")
        try:
            a = int(idx_s)
        except ValueError:
            raise ArffError(
                path, lineno, f"expected 'index value' in a sparse row; found {entry!r}"
            ) from None
        if not 0 <= a < n_attr:
            raise ArffError(
                path, lineno, f"attribute index {a} out of range; expected 0 to {n_attr - 1}"
            )
        if a == class_index:
            cls = val.strip()
        else:
            pairs.append((a, val.strip()))
    return cls, pairs


def _tokenize_data(p: _Parsed, lines: list[str], start: int) -> _DataTokens:
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
                fields = _split_fields(line)
                if len(fields) != n_attr:
                    raise ArffError(
                        p.path,
                        lineno,
                        f"expected {n_attr} comma-separated values (one per @attribute); "
                        f"found {len(fields)}",
                    )
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
            raise ArffError(
                path,
                lineno,
                f"expected a finite number or '?' (missing) for attribute {attr!r}; "
                f"found {v!r}",
            )
    raise AssertionError("unreachable: numpy and float disagree")  # pragma: no cover


def _convert_nominal(vals: np.ndarray, attr: _Attribute, path, where) -> np.ndarray:
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
            raise ArffError(
                path,
                lineno,
                f"value {s!r} of nominal attribute {attr.name!r} is not one of "
                f"{{{','.join(attr.categories or ())}}} (declared on line {attr.lineno})",
            )
    return table[inv.ravel()]


def _dense_features(p: _Parsed, rows: list[list[str]], row_lines: list[int],
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


def _sparse_features(p: _Parsed, tokens: _DataTokens, feats: list[int]) -> sp.csr_matrix:
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
        raise ArffError(
            p.path,
            int(p.row_lines[rows[dup]]),
            f"attribute index {acol[dup]} given twice in a sparse row; expected each index once",
        )
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


def _parse_data(p: _Parsed, lines: list[str], start: int) -> None:
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


def _parse_file(path, hierarchy_type: str) -> _Parsed:
    path = Path(path)
    text = _read_text(path)
    lines = text.split("\n")
    relation, attributes, class_index, spec, start = _parse_header(path, lines, hierarchy_type)
    p = _Parsed(path, relation, attributes, class_index, spec)
    _parse_data(p, lines, start)
    return p
