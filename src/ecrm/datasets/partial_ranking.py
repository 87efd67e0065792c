r"""The partial label ranking benchmark files (Alfaro, Aledo & Gámez): rankings with ties,
``<name>.csv.gz`` or ``<name>.csv``.

The layout of :mod:`ecrm.datasets.label_ranking` (its header, directory and reading are
shared), with ``k`` bucket numbers after the ``p`` features: the ``j``-th is the bucket of
label ``j``, 1 the top one, equal numbers tied, ``0`` or an empty field a label the row does
not rank. Only the numbers' order matters (``1,3,3`` and ``1,2,2`` are the same order).

A bucket order over ``k`` labels is represented by these positions (an ``(n, k)`` integer
array) and, for the estimators, by its ordered-pair indicators :math:`u_{ab} = 1[\text{label } a
\text{ is strictly ahead of label } b]`. The tau_x rank correlation (Emond & Mason, 2002)
of two complete bucket orders is :math:`1 - 2 L / (k (k - 1))`, where the distance
:math:`L = \sum_{a < b} |s_{ab} - t_{ab}|` with :math:`s_{ab} = u_{ab} - u_{ba} \in
\{-1, 0, 1\}`: 0 per pair when the two orders agree, 1 for a tie against a strict order, 2
for opposite orders.

The directory is ``data_dir`` if given, else ``$ECRM_DATA_PARTIAL_RANKING``, else
``$ECRM_DATA``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ecrm.datasets._files import _data_dir
from ecrm.datasets.label_ranking import (
    _SUFFIXES,
    _data_lines,
    _find,
    _header,
    _names_in,
    _number,
    _read,
)

__all__ = ["PARTIAL_RANKING_HELP", "list_partial_label_ranking", "load_partial_label_ranking"]

PARTIAL_RANKING_HELP = (
    "The partial label ranking benchmark (UCI classification sets turned into bucket orders "
    "by Alfaro, Aledo and Gámez; e.g. from the data folder of the scikit-lr project, "
    "github.com/alfaro96/scikit-lr) is a directory of files <name>.csv.gz or <name>.csv: "
    "first line n,p,k, then p features and k bucket numbers (1 = top, equal numbers tied, "
    "0 or empty = missing) per line. Pass its path as data_dir (or --data-dir) or set "
    "ECRM_DATA_PARTIAL_RANKING (or ECRM_DATA)."
)


def _directory(data_dir) -> Path:
    return _data_dir(data_dir, "ECRM_DATA_PARTIAL_RANKING", "partial label ranking",
                     PARTIAL_RANKING_HELP)


def list_partial_label_ranking(data_dir=None) -> list[str]:
    """Names of the data sets (``<name>.csv.gz`` or ``<name>.csv``) in ``data_dir`` (default
    ``$ECRM_DATA_PARTIAL_RANKING``, else ``$ECRM_DATA``), sorted."""
    return _names_in(_directory(data_dir))


def _bucket(field: str, where: str, label: int) -> int:
    """One bucket number: a non-negative integer, 0 (or empty) for a missing label."""
    text = field.strip()
    if not text:
        return 0
    try:
        value = float(text)
    except ValueError:
        value = np.nan
    if not np.isfinite(value) or value != round(value) or value < 0:
        raise ValueError(f"{where}: the bucket of label {label} is {text!r}, not a "
                         f"non-negative integer (1 = top, 0 or empty = missing)")
    return int(value)


def _parse(path, lines) -> tuple[np.ndarray, np.ndarray]:
    """Features and positions of the lines of one file. The rows are gathered as they come,
    so that a header declaring more rows than the file holds allocates nothing for them."""
    n, p, k = _header(path, next(lines, ""), min_labels=2)
    X: list[list[float]] = []
    P: list[list[int]] = []
    for where, fields in _data_lines(path, lines, n, p, k, "bucket numbers"):
        x = [_number(f) for f in fields[:p]]
        bad = [j for j, v in enumerate(x) if not np.isfinite(v)]
        if bad:
            raise ValueError(f"{where}: feature {bad[0] + 1} is {fields[bad[0]].strip()!r}, "
                             f"not a finite number")
        X.append(x)
        P.append([_bucket(f, where, j + 1) for j, f in enumerate(fields[p:])])
    return np.array(X, dtype=float).reshape(n, p), np.array(P, dtype=np.int64)


def load_partial_label_ranking(name_or_path, data_dir=None) -> Bunch:
    """Load one partial label ranking data set (bucket orders: rankings with ties).

    Parameters
    ----------
    name_or_path : str or path
        The data set, e.g. ``"iris"``: the file ``<name>.csv.gz`` (or ``<name>.csv``) of
        ``data_dir``; or the path of a file in that format (a :class:`os.PathLike`, or a
        string that holds a directory separator or ends in ``.csv`` or ``.csv.gz``).
    data_dir : str or path, default=None
        Directory of the files; default ``$ECRM_DATA_PARTIAL_RANKING``, else ``$ECRM_DATA``.
        Not used when ``name_or_path`` is a file.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (n, p) float features, as in the file; ``positions`` (n, k) int, the bucket
        of every label as in the file (1 = top, equal numbers tied, 0 = missing);
        ``feature_names`` (``x1``..) and ``label_names`` (``label1``..); ``name`` and
        ``path``.

    Raises
    ------
    FileNotFoundError
        No directory, or no file for ``name_or_path`` (the message lists the data sets
        present).
    ValueError
        A malformed file (as :func:`~ecrm.datasets.load_label_ranking`; a bucket number is a
        non-negative integer); the message names the file, the line and what was expected.

    Examples
    --------
    >>> data = load_partial_label_ranking("wine")  # doctest: +SKIP
    >>> data.X.shape, data.positions[0].tolist()  # doctest: +SKIP
    ((178, 13), [1, 2, 2])
    """
    given = Path(name_or_path).expanduser()
    as_path = (isinstance(name_or_path, os.PathLike) or given.name.endswith(_SUFFIXES)
               or any(sep in str(name_or_path) for sep in {"/", os.sep}))
    if as_path:
        if not given.is_file():
            raise FileNotFoundError(f"no partial label ranking file {str(given)!r}")
        path = given
        name = next((given.name[: -len(s)] for s in _SUFFIXES if given.name.endswith(s)),
                    given.name)
    else:
        name = str(name_or_path)
        path = _find(_directory(data_dir), name, PARTIAL_RANKING_HELP)
    X, positions = _read(path, _parse)
    return Bunch(X=X, positions=positions,
                 feature_names=[f"x{j + 1}" for j in range(X.shape[1])],
                 label_names=[f"label{j + 1}" for j in range(positions.shape[1])],
                 name=name, path=str(path))
