r"""The label-ranking benchmark files (Cheng, Hühn & Hüllermeier, ICML 2009; Hüllermeier et
al., 2008): ``<name>.csv.gz`` or ``<name>.csv``.

Format: the first line is ``n,p,k`` (instances, features, labels); each of the ``n``
following lines holds ``p`` feature values and then ``k`` integers, the ranking: the ``j``-th
of them is the position of label ``j`` (1 = top). Blank lines are ignored.

An incomplete ranking (the benchmark's missing-labels protocol) gives position ``0``, or
leaves the field empty, for each label it leaves out; its other labels hold distinct
positions from 1 to ``k`` and only their order counts. It is read as ranks ``-1`` for the
missing labels and ``0 .. m-1`` for the ``m`` ranked ones
(:class:`~ecrm.spaces.permutations.PermutationSpace`, incomplete rankings).

The directory is ``data_dir`` if given, else ``$ECRM_DATA_RANKING``, else ``$ECRM_DATA``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ecrm.datasets._files import _data_dir
from ecrm.spaces.permutations import PermutationSpace

__all__ = ["LABEL_RANKING_HELP", "list_label_ranking", "load_label_ranking"]

LABEL_RANKING_HELP = (
    "The label ranking benchmark (13 semi-synthetic sets of Cheng, Hühn & Hüllermeier, ICML "
    "2009, and the 5 yeast sets of Hüllermeier et al., 2008; e.g. from the data folder of the "
    "scikit-lr project, github.com/alfaro96/scikit-lr) is a directory of files "
    "<name>.csv.gz or <name>.csv: first line n,p,k, then p features and k ranks (1 = top; "
    "0 or empty: a missing label) per line. Pass its path as data_dir (or --data-dir) or set "
    "ECRM_DATA_RANKING (or ECRM_DATA)."
)
_SUFFIXES = (".csv.gz", ".csv")


def _directory(data_dir) -> Path:
    return _data_dir(data_dir, "ECRM_DATA_RANKING", "label ranking", LABEL_RANKING_HELP)


def _names_in(d: Path) -> list[str]:
    """The names of the files ``<name>.csv.gz`` and ``<name>.csv`` in ``d``, sorted."""
    return sorted({f.name[: -len(suffix)] for f in d.iterdir() for suffix in _SUFFIXES
                   if f.is_file() and f.name.endswith(suffix)})


def _find(d: Path, name: str, help_text: str) -> Path:
    """The file of the data set ``name`` in ``d``; the error lists the data sets there."""
    path = next((d / f"{name}{s}" for s in _SUFFIXES if (d / f"{name}{s}").is_file()), None)
    if path is None:
        available = ", ".join(_names_in(d)) or "none"
        raise FileNotFoundError(f"no {name}.csv.gz or {name}.csv in {str(d)!r}; data sets "
                                f"there: {available}. " + help_text)
    return path


def _read(path: Path, parse):
    """``parse(path, lines)`` of the lines of the file (gunzipped if named ``.gz``)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return parse(path, iter(f))


def list_label_ranking(data_dir=None) -> list[str]:
    """Names of the data sets (``<name>.csv.gz`` or ``<name>.csv``) in ``data_dir``, sorted."""
    return _names_in(_directory(data_dir))


def _header(path, line: str, min_labels: int = 1) -> tuple[int, int, int]:
    """The ``n,p,k`` of a file's first line (at least one row and ``min_labels`` labels)."""
    fields = line.strip().split(",")
    try:
        n, p, k = (int(x) for x in fields)
    except ValueError:
        raise ValueError(f"{path}, line 1: expected the header 'n,p,k' (three integers); "
                         f"got {line.strip()!r}") from None
    if n < 1 or p < 0 or k < min_labels:
        raise ValueError(f"{path}, line 1: header 'n,p,k' needs n >= 1, p >= 0, "
                         f"k >= {min_labels}; got {line.strip()!r}")
    return n, p, k


def _number(field: str) -> float:
    try:
        return float(field)
    except ValueError:
        return np.nan


def _parse(path: Path, lines) -> tuple[np.ndarray, np.ndarray]:
    from ecrm.model_files._archive import MEMORY_BUDGET

    n, p, k = _header(path, next(lines, ""))
    # checked before the arrays are allocated: a forged header must not claim terabytes
    need = n * (p + k) * 8
    if need > MEMORY_BUDGET:
        raise ValueError(f"{path}, line 1: the header declares {n} rows of {p} features and "
                         f"{k} labels ({need} bytes), over the memory budget of "
                         f"{MEMORY_BUDGET} bytes (ECRM_MEMORY_BUDGET)")
    if not path.name.endswith(".gz") and path.is_file() and n > path.stat().st_size:
        raise ValueError(f"{path}, line 1: the header declares {n} data lines; the file holds "
                         f"{path.stat().st_size} bytes")
    X, R = np.empty((n, p)), np.empty((n, k), dtype=np.int64)
    for row, (where, fields) in enumerate(_data_lines(path, lines, n, p, k, "ranks")):
        fields[p:] = [x if x.strip() else "0" for x in fields[p:]]  # empty: a missing label
        try:
            values = np.array(fields, dtype=float)
        except ValueError:
            values = np.array([_number(x) for x in fields])
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            j = int(bad[0])
            what = f"feature {j + 1}" if j < p else f"the rank of label {j - p + 1}"
            raise ValueError(f"{where}: {what} is {fields[j].strip()!r}, not a finite number")
        bad = np.flatnonzero(values[p:] != np.round(values[p:]))
        if bad.size:
            j = int(bad[0])
            raise ValueError(f"{where}: the rank of label {j + 1} is "
                             f"{fields[p + j].strip()!r}, not an integer")
        X[row], R[row] = values[:p], _ranks(where, values[p:], k)
    return X, R


def _data_lines(path, lines, n: int, p: int, k: int, what: str):
    """``(where, fields)`` of each data line (blank lines skipped): ``p`` features and ``k``
    ``what``, ``n`` lines as the header declares."""
    row = 0
    for lineno, line in enumerate(lines, start=2):
        if not line.strip():
            continue
        where = f"{path}, line {lineno}"
        if row == n:
            raise ValueError(f"{where}: more data lines than the {n} the header declares")
        fields = line.strip().split(",")
        if len(fields) != p + k:
            raise ValueError(f"{where}: expected {p + k} comma-separated fields ({p} features "
                             f"and {k} {what}); got {len(fields)}")
        yield where, fields
        row += 1
    if row != n:
        raise ValueError(f"{path}: the header declares {n} data lines; found {row}")


def _ranks(where: str, positions: np.ndarray, k: int) -> np.ndarray:
    """Ranks (0 = top, -1 = missing) of one line's positions (1 = top, 0 = missing)."""
    P = positions.astype(np.int64)
    seen = P > 0
    if seen.all():
        if not np.array_equal(np.sort(P), np.arange(1, k + 1)):
            raise ValueError(f"{where}: the ranks {P.tolist()} are not a permutation of 1..{k}")
        return P - 1
    values, counts = np.unique(P[seen], return_counts=True)
    if (P < 0).any() or (P > k).any() or (counts > 1).any() or not seen.any():
        raise ValueError(f"{where}: the ranks {P.tolist()} are not an incomplete ranking: "
                         f"distinct positions 1..{k} for the ranked labels (at least one), "
                         f"0 or empty for the missing ones")
    order = np.argsort(np.argsort(np.where(seen, P, k + 1), kind="stable"), kind="stable")
    return np.where(seen, order, -1)


def load_label_ranking(name: str, data_dir=None) -> Bunch:
    """Load one label-ranking benchmark data set.

    Parameters
    ----------
    name : str
        The data set, e.g. ``"iris"``: the file ``<name>.csv.gz`` (or ``<name>.csv``).
    data_dir : str or path, default=None
        Directory of the files; default ``$ECRM_DATA_RANKING``, else ``$ECRM_DATA``.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (n, p) float features, as in the file; ``ranks`` (n, k) int, the position of
        every label (0 = top; -1 for a missing label of an incomplete ranking); ``Y``
        (n, k*k), the flattened permutation matrices of ``space`` =
        :class:`~ecrm.PermutationSpace` (k), NaN rows for missing labels;
        ``feature_names`` (``x1``..) and ``label_names`` (``label1``..); ``name`` and
        ``path``.

    Raises
    ------
    FileNotFoundError
        No directory, or no file for ``name`` (the message lists the data sets present).
    ValueError
        A malformed file: the message names the file, the line and what was expected (header,
        field count, a non-numeric feature, a non-integer rank, ranks that are not a
        permutation or an incomplete ranking, a row count that differs from the header).
        Nothing is returned then.

    Examples
    --------
    >>> data = load_label_ranking("iris")  # doctest: +SKIP
    >>> data.X.shape, data.ranks[0].tolist()  # doctest: +SKIP
    ((150, 4), [0, 1, 2])
    """
    return _read_file(_find(_directory(data_dir), name, LABEL_RANKING_HELP), name)


def _read_file(path: Path, name: str) -> Bunch:
    """One file of the benchmark's layout, as :func:`load_label_ranking` returns it (also
    read by ``ecrm fit --task ranking``)."""
    X, ranks = _read(path, _parse)
    space = PermutationSpace(ranks.shape[1])
    return Bunch(X=X, ranks=ranks, Y=space.from_ranks(ranks), space=space,
                 feature_names=[f"x{j + 1}" for j in range(X.shape[1])],
                 label_names=[f"label{j + 1}" for j in range(ranks.shape[1])],
                 name=name, path=str(path))
