"""Your own data: flat multi-label ARFF (MEKA), CSV/TSV, svmlight, and hierarchy files.

Every loader returns a :class:`sklearn.utils.Bunch` with ``X`` (features, dense or CSR),
``Y`` (0/1 label matrix, or ``None`` when the file has no labels and they are not required),
``hierarchy`` (a :class:`~ecrm.Hierarchy`; flat label sets are an edgeless hierarchy, whose
oracle is the same as :class:`~ecrm.MultilabelSpace`'s), ``label_names``, ``feature_names``
and ``filename``. Given a ``hierarchy``, the label columns follow its label order and every
label must be in it. A malformed file raises :class:`DataFileError` naming the file and the
line; nothing is returned half-loaded.

* :func:`load_csv` -- numeric feature columns and a label column of names (``"dog;cat"``) or
  paths (``"animal/dog"``, with ``path_sep="/"``);
* :func:`load_meka_arff` -- MEKA's flat multi-label ARFF (``-C n`` in the relation name);
* :func:`load_svmlight_multilabel` -- svmlight/libsvm lines ``1,3 7:0.5 9:1.2``;
* :func:`load_hierarchy` -- TSV ``parent<TAB>child`` lines or JSON;
* :func:`check_finite_features` -- refuse a missing or infinite feature value, naming the
  file, line and column (ARFF ``?`` is read as NaN, so that an imputer can see it);
* :func:`load_data` -- dispatch on the file name (``.csv``, ``.tsv``, ``.arff[.gz]`` (Clus
  hierarchical or MEKA), ``.svm``/``.svmlight``/``.libsvm``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ecrm.datasets._csv import CHUNK_ROWS, iter_csv, load_csv
from ecrm.datasets._csv_dask import load_csv_dask
from ecrm.datasets._files import (
    DataFileError,
    _check_path,
    _text,
    check_finite_features,
)
from ecrm.estimators._parameters import check_parameter, vocabulary
from ecrm.spaces.hierarchy import Hierarchy

__all__ = ["CHUNK_ROWS", "DataFileError", "check_finite_features", "iter_csv", "load_csv",
           "load_csv_dask",
           "load_data", "load_hierarchy", "load_meka_arff", "load_svmlight_multilabel"]
# -- hierarchy files ---------------------------------------------------------------------
def load_hierarchy(path: str | os.PathLike):
    """Read a hierarchy file: TSV ``parent<TAB>child`` lines, or JSON.

    Parameters
    ----------
    path : str or path-like
        ``*.json``: a list of ``[parent, child]`` pairs, ``{"edges": [...], "labels": [...]}``
        (labels optional) or a parent map ``{child: parent or [parents] or null}``. Any other
        name: text lines ``parent<TAB>child``; a line with one name declares a top-level
        label; blank lines and lines starting with ``#`` are skipped.

    Returns
    -------
    hierarchy : ecrm.Hierarchy

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "h.tsv")
    >>> _ = open(path, "w").write("animal\\tdog\\nanimal\\tcat\\nplant\\n")
    >>> load_hierarchy(path).labels
    ('animal', 'dog', 'cat', 'plant')
    """
    path = _check_path(path)
    text = _text(path)
    if path.suffix.lower() == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFileError(path, exc.lineno, f"invalid JSON: {exc.msg}") from None
        labels = None
        if isinstance(obj, dict) and "edges" in obj:
            labels, obj = obj.get("labels"), obj["edges"]
        if not isinstance(obj, (dict, list)):
            raise DataFileError(path, None, "expected a list of [parent, child] pairs, "
                                "{'edges': [...]} or a parent map {child: parent}")
        if isinstance(obj, list):
            for k, e in enumerate(obj):
                if not (isinstance(e, list) and len(e) == 2 and all(isinstance(v, str)
                                                                    for v in e)):
                    raise DataFileError(path, None, f"edge {k} must be a [parent, child] pair "
                                        f"of names; got {e!r}")
            obj = [tuple(e) for e in obj]
        try:
            return Hierarchy(obj, labels=labels)
        except (TypeError, ValueError) as exc:
            raise DataFileError(path, None, f"invalid hierarchy: {exc}") from None
    edges: list = []
    names: list = []
    first_line: dict = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) == 1 and len(fields[0].split()) > 1:
            raise DataFileError(path, lineno, f"no tab in {line.strip()[:80]!r}: a hierarchy "
                                "line is 'parent<TAB>child' or one label name (spaces do not "
                                "separate names; a label whose name has spaces: the JSON "
                                "format)")
        if len(fields) > 2 or not all(fields):
            raise DataFileError(path, lineno, f"expected 'parent<TAB>child' or one label name; "
                                f"found {line[:80]!r}")
        for v in fields:
            first_line.setdefault(v, lineno)
            names.append(v)
        if len(fields) == 2:
            if fields[0] == fields[1]:
                raise DataFileError(path, lineno, f"self-loop on {fields[0]!r}")
            if (fields[0], fields[1]) in edges:
                raise DataFileError(path, lineno, f"duplicate edge {fields[0]!r} -> "
                                    f"{fields[1]!r}")
            edges.append((fields[0], fields[1]))
    if not names:
        raise DataFileError(path, None, "no labels: the file is empty")
    try:
        return Hierarchy(edges, labels=list(dict.fromkeys(names)))
    except ValueError as exc:
        raise DataFileError(path, None, f"invalid hierarchy: {exc}") from None


# -- MEKA ARFF -------------------------------------------------------------------------------
_MEKA_C = re.compile(r"-C\s+(-?\d+)")


def load_meka_arff(path: str | os.PathLike, *, hierarchy=None,
                   ignore_labels: bool = False) -> Bunch:
    """Read a flat multi-label ARFF file in MEKA's convention (``-C n`` in the relation name).

    The first ``n`` attributes (the last ``-n`` if ``n < 0``) are the labels, numeric or
    nominal ``{0,1}``; the others are features (nominal features become their category
    index, ``?`` becomes NaN). Dense and sparse (``{index value, ...}``) rows are read.

    Parameters
    ----------
    path : str or path-like
        ``.arff`` or ``.arff.gz``.
    hierarchy : ecrm.Hierarchy, default=None
        If given, the label attributes must be named as its labels (columns are reordered
        to its order); default: flat labels named by their attributes.
    ignore_labels : bool, default=False
        Drop the label attributes unchecked (``Y = None``), as for predictions.

    Returns
    -------
    data : sklearn.utils.Bunch
        As :func:`load_csv`.
    """
    from ecrm.datasets._arff_data import parse_data
    from ecrm.datasets._arff_header import ParsedFile, parse_header
    from ecrm.datasets._arff_text import ArffError

    path = _check_path(path)
    lines = _text(path).split("\n")
    try:
        relation, attributes, _, _, start = parse_header(path, lines, "auto",
                                                          require_class=False)
    except ArffError as exc:
        raise DataFileError(path, exc.lineno, exc.reason) from None
    rel_line = next((i + 1 for i, line in enumerate(lines)
                     if line.strip().lower().startswith("@relation")), None)
    match = _MEKA_C.search(relation)
    if match is None or int(match.group(1)) == 0:
        raise DataFileError(path, rel_line, f"the relation name {relation!r} has no '-C n' "
                            "(n != 0): not a MEKA multi-label file (a Clus file has a "
                            "hierarchical attribute)")
    n = int(match.group(1))
    if abs(n) >= len(attributes):
        raise DataFileError(path, rel_line, f"-C {n} asks for {abs(n)} labels but the file "
                            f"has only {len(attributes)} attributes")
    label_idx = list(range(n)) if n > 0 else list(range(len(attributes) + n, len(attributes)))
    for j in label_idx:
        a = attributes[j]
        if a.kind == "nominal" and not set(a.categories or ()) <= {"0", "1"}:
            raise DataFileError(path, a.lineno, f"label attribute {a.name!r} must be numeric or "
                                f"nominal {{0,1}}; found {{{','.join(a.categories or ())}}}")
        if a.kind not in ("numeric", "nominal"):
            raise DataFileError(path, a.lineno, f"label attribute {a.name!r} must be numeric or "
                                "nominal {0,1}")
    p = ParsedFile(path, relation, attributes, -1, None)  # type: ignore[arg-type]
    try:
        parse_data(p, lines, start)
    except ArffError as exc:
        raise DataFileError(path, exc.lineno, exc.reason) from None
    feats = [j for j, a in enumerate(attributes) if a.kind in ("numeric", "nominal")]
    col = {j: c for c, j in enumerate(feats)}
    parsed: Any = p.X
    A: Any = parsed.tocsc() if sp.issparse(parsed) else parsed
    others = [col[j] for j in feats if j not in label_idx]
    X: Any = A[:, others]
    X = X.tocsr() if sp.issparse(X) else X
    feature_names = tuple(attributes[j].name for j in feats if j not in label_idx)
    categories = tuple(attributes[j].categories if attributes[j].kind == "nominal" else None
                       for j in feats if j not in label_idx)  # nominal features: their codes
    bunch = Bunch(X=X, Y=None, hierarchy=hierarchy, feature_names=feature_names,
                  categories=categories, label_lists=None, filename=str(path),
                  label_names=None if hierarchy is None else tuple(hierarchy.labels),
                  relation=relation, row_lines=np.asarray(p.row_lines))
    if ignore_labels:
        return bunch
    Y: Any = A[:, [col[j] for j in label_idx]]
    Y = Y.toarray() if sp.issparse(Y) else np.array(Y)
    for c, j in enumerate(label_idx):  # nominal codes -> the values they name
        cats = attributes[j].categories
        if attributes[j].kind == "nominal" and cats is not None:
            Y[:, c] = np.where(np.isnan(Y[:, c]), np.nan,
                               np.take(np.array([float(v) for v in cats]),
                                       np.nan_to_num(Y[:, c]).astype(int)))
    bad = ~((Y == 0) | (Y == 1))
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DataFileError(path, int(p.row_lines[r]), f"label {attributes[label_idx[c]].name!r}"
                            f" must be 0 or 1; found {float(Y[r, c])!r}")
    names = [attributes[j].name for j in label_idx]
    if hierarchy is None:
        hierarchy = Hierarchy([], labels=names)
    else:
        missing = [v for v in hierarchy.labels if v not in names]
        unknown = [v for v in names if v not in hierarchy.index]
        if missing or unknown:
            raise DataFileError(path, None, f"the label attributes do not match the hierarchy: "
                                f"not in the hierarchy {unknown}, missing {missing}")
        Y = Y[:, [names.index(v) for v in hierarchy.labels]]
        if not hierarchy.is_consistent(Y).all():
            r = int(np.flatnonzero(~hierarchy.is_consistent(Y))[0])
            raise DataFileError(path, int(p.row_lines[r]), "labels not closed under the "
                                "hierarchy's parents")
    bunch.update(Y=Y.astype(float), hierarchy=hierarchy, label_names=tuple(hierarchy.labels))
    return bunch


# -- svmlight ------------------------------------------------------------------------------
def _svmlight_lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, text)`` of the data lines, as scikit-learn's reader counts them (a
    line is data when something other than spaces precedes its first ``#``)."""
    data = ((n, line.split("#", 1)[0]) for n, line in enumerate(_text(path).splitlines(), 1))
    return [(n, text) for n, text in data if text.split()]


def load_svmlight_multilabel(path: str | os.PathLike, *, n_features: int | None = None,
                             hierarchy=None, ignore_labels: bool = False) -> Bunch:
    """Read a multi-label svmlight/libsvm file (``1,3 7:0.5 9:1.2`` per line).

    Parsed by :func:`sklearn.datasets.load_svmlight_file` with ``multilabel=True``. Label
    names are the label numbers as strings (``"1"``, ``"3"``), which must be integers; given
    a ``hierarchy``, they must be its labels. ``X`` stays sparse (CSR): its memory is that of
    its non-zeros, whatever the largest feature index.

    Parameters
    ----------
    path : str or path-like
    n_features : int, default=None
        Number of features (default: the largest index in the file).
    hierarchy : ecrm.Hierarchy, default=None
    ignore_labels : bool, default=False
        Do not check or return the labels (``Y = None``), as for predictions.

    Returns
    -------
    data : sklearn.utils.Bunch
        As :func:`load_csv`; ``X`` is a CSR matrix and ``feature_names`` is ``None`` (the
        columns are the feature indices: no list as long as the largest index).
    """
    from sklearn.datasets import load_svmlight_file

    path = _check_path(path)
    try:
        X, y = load_svmlight_file(str(path), n_features=n_features, multilabel=True)
    except OverflowError:  # an index past scikit-learn's 32-bit C int
        raise DataFileError(path, None, "a feature index is too large (at most 2**31 - 1; "
                            "number the features compactly)") from None
    except (ValueError, RuntimeError) as exc:
        raise DataFileError(path, None, f"not a valid multi-label svmlight file: {exc}") from None
    lines = _svmlight_lines(path)
    if len(lines) != X.shape[0]:  # pragma: no cover - scikit-learn counts lines otherwise
        lines = [(-1, "")] * X.shape[0]
    row_lines = np.array([n for n, _ in lines])
    X = X.tocsr()
    bunch = Bunch(X=X, Y=None, hierarchy=hierarchy,
                  label_names=None if hierarchy is None else tuple(hierarchy.labels),
                  feature_names=None, label_lists=None,
                  filename=str(path), row_lines=row_lines)
    if ignore_labels:
        return bunch
    rows = []
    for r, labels in enumerate(y):
        for v in labels:
            if not (np.isfinite(v) and float(v).is_integer()):
                raise DataFileError(path, int(row_lines[r]), f"the label field: label "
                                    f"{v!r} is not an integer label number (labels are "
                                    "integers separated by commas, e.g. '1,3')")
        rows.append([f"{v:g}" for v in labels])
    if hierarchy is None:
        names = sorted({v for row in rows for v in row}, key=float)
        hierarchy = Hierarchy([], labels=names)
    for r, row in enumerate(rows):
        for v in row:
            if v not in hierarchy.index:
                raise DataFileError(path, int(row_lines[r]), f"label {v!r} is not in the "
                                    "hierarchy")
    bunch.update(Y=hierarchy.to_matrix(rows), hierarchy=hierarchy,
                 label_names=tuple(hierarchy.labels), label_lists=rows)
    return bunch


# -- dispatch ------------------------------------------------------------------------------
FORMATS = vocabulary("format")


def csv_sep(fmt: str, sep: str | None = None) -> str:
    """The field separator of a CSV/TSV file: ``sep`` if given, else by the format."""
    return sep if sep is not None else "\t" if fmt == "tsv" else ","


def _format_of(path: Path) -> str:
    name = path.name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    for ext, fmt in [(".csv", "csv"), (".tsv", "tsv"), (".tab", "tsv"), (".arff", "arff"),
                     (".svm", "svmlight"), (".svmlight", "svmlight"), (".libsvm", "svmlight")]:
        if name.endswith(ext):
            return fmt
    raise DataFileError(path, None, "cannot tell the format from the name; expected one of "
                        ".csv, .tsv, .arff[.gz], .svm, .svmlight, .libsvm (or give the format)")


def load_data(path: str | os.PathLike, *, format: str = "auto", hierarchy=None,
              label_column: str = "labels", label_sep: str = ";", path_sep: str | None = None,
              require_labels: bool = True, n_features: int | None = None,
              ignore_labels: bool = False, level_columns=None,
              compact_labels: bool = False, sep: str | None = None,
              id_column: str | None = None) -> Bunch:
    """Read a data file in any supported format (see the module docstring).

    Parameters
    ----------
    path : str or path-like
    format : {"auto", "csv", "tsv", "arff", "svmlight"}, default="auto"
        ``"auto"`` decides from the file name; an ARFF file is read as Clus hierarchical
        (:func:`ecrm.datasets.load_hmc_arff`) if it has a hierarchical attribute, else as
        MEKA.
    hierarchy, label_column, label_sep, path_sep, require_labels, level_columns
    compact_labels
        See :func:`load_csv` (``hierarchy`` also for ARFF and svmlight; ``compact_labels``
        for CSV/TSV only: the other formats give a float ``Y``).
    n_features : int, default=None
        For svmlight files: the number of features (e.g. the model's).
    ignore_labels : bool, default=False
        Read the features only (``Y = None``): the labels, if any, are neither checked nor
        required to be in ``hierarchy`` (for predictions).
    sep : str, default=None
        CSV/TSV: the field separator (default: a tab for TSV, else a comma).
    id_column : str, default=None
        CSV/TSV: the column identifying the rows (see :func:`load_csv`).

    Returns
    -------
    data : sklearn.utils.Bunch
    """
    path = Path(path)
    check_parameter("format", format)
    fmt = _format_of(_check_path(path)) if format == "auto" else format
    if fmt in ("csv", "tsv"):
        return load_csv(path, label_column=label_column, sep=csv_sep(fmt, sep),
                        label_sep=label_sep, path_sep=path_sep, hierarchy=hierarchy,
                        require_labels=require_labels, ignore_labels=ignore_labels,
                        level_columns=level_columns, compact_labels=compact_labels,
                        id_column=id_column)
    for given, what in ((level_columns, "level columns"), (sep, f"sep={sep!r}"),
                        (id_column, f"id_column={id_column!r}")):
        if given is not None:
            raise DataFileError(path, None, f"{what}: for CSV/TSV files only; this is a "
                                f"{fmt} file")
    if fmt == "svmlight":
        return load_svmlight_multilabel(path, hierarchy=hierarchy, n_features=n_features,
                                        ignore_labels=ignore_labels)
    if re.search(r"@attribute\s+\S+\s+hierarchical", _text(path), re.I):
        from ecrm.datasets.arff import load_hmc_arff

        data = load_hmc_arff(path)
        if ignore_labels:
            data.Y = None
        elif hierarchy is not None and data.hierarchy != hierarchy:
            raise DataFileError(path, None, "the file's class hierarchy differs from the "
                                "given hierarchy")
        return data
    return load_meka_arff(path, hierarchy=hierarchy, ignore_labels=ignore_labels)
