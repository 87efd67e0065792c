"""Reading a CSV/TSV file for a fit on a Dask cluster: Dask's block reader splits the file,
the workers parse and keep the features, the client reads the label column."""

from __future__ import annotations

import csv
import os

import numpy as np
from sklearn.utils import Bunch

from ecrm.datasets._csv import _CsvTable, _numbers, load_csv
from ecrm.datasets._csv_labels import label_matrix, parse_label_cells
from ecrm.datasets._files import DataFileError, check_finite_features

__all__ = ["load_csv_dask"]


def _parse_block(block: bytes, *, header: bool, sep: str, encoding: str, width: int,
                 label_at: int, names: tuple, path: str):
    """One byte block of a CSV file (whole lines) -> (features, label cells); any bad row is a
    ``ValueError`` (its line is found by :func:`load_csv` on the client)."""
    import io

    reader = csv.reader(io.StringIO(block.decode(encoding), newline=""), delimiter=sep)
    if header:
        next(reader, None)
    values, labels = [], []
    for row in reader:
        if not row or all(not f.strip() for f in row):
            continue
        if len(row) != width:
            raise ValueError(f"a row has {len(row)} fields")
        labels.append(row[label_at])
        values.append(row[:label_at] + row[label_at + 1:])
    X = _numbers(path, values, [0] * len(values), names) if values else np.empty(
        (0, len(names)))
    if not np.isfinite(X).all():
        raise ValueError("a missing value")
    return X, labels


def load_csv_dask(path: str | os.PathLike, *, label_column: str = "labels",
                  sep: str | None = None, label_sep: str = ";", path_sep: str | None = None,
                  hierarchy=None, blocksize: int = 32 * 2**20) -> Bunch:
    """Read a CSV/TSV file with Dask's own block reader, for a fit on a Dask cluster (the
    active :class:`distributed.Client`'s).

    :func:`dask.bytes.read_bytes` splits the file into blocks of whole lines, which the
    workers parse (as :func:`load_csv` parses a chunk) and keep as a Dask array chunked by
    rows; only the label column comes to the client, parsed into a bool matrix
    (``dask.dataframe``'s reader would need pyarrow). On any bad row (text or a missing value
    in a feature, a wrong number of fields) the file is read by :func:`load_csv` on the
    client, whose :class:`DataFileError` names the line and column (no imputation here).

    Returns
    -------
    data : sklearn.utils.Bunch
        As :func:`load_csv`, with ``X`` a Dask array; ``row_lines`` counts data rows from
        line 2 (exact for files without blank lines or quoted line breaks).
    """
    import operator

    import dask.array as da
    from dask.bytes import read_bytes
    from distributed import get_client, wait

    table = _CsvTable(path, sep=sep, label_column=label_column, path_sep=path_sep,
                      require_labels=True, ignore_labels=False, level_columns=None)
    path, names = table.path, tuple(table.feature_names)
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    _, parts = read_bytes(str(path), delimiter=b"\n", blocksize=None if gz else blocksize,
                          sample=False, compression="gzip" if gz else None)
    client = get_client()
    encoding = table.encoding
    blocks = client.compute(parts[0])  # read on the workers; held until parsed
    futures = [client.submit(_parse_block, block, header=k == 0, sep=table.sep,
                             encoding="utf-8" if encoding == "utf-8-sig" and k else encoding,
                             width=len(table.header), label_at=table.label_idx[0],
                             names=names, path=str(path), pure=False)
               for k, block in enumerate(blocks)]
    try:
        raw_parts = client.gather([client.submit(operator.itemgetter(1), f) for f in futures])
    except ValueError as exc:
        check_finite_features(load_csv(path, label_column=label_column, sep=table.sep,
                                       label_sep=label_sep, path_sep=path_sep,
                                       hierarchy=hierarchy, compact_labels=True))
        raise DataFileError(path, None, f"cannot read the file in blocks: {exc}") from None
    pieces = [client.submit(operator.itemgetter(0), f) for f in futures]
    wait(pieces)  # before the blocks and parses they come from are released
    del blocks, futures
    X = da.concatenate([da.from_delayed(x, shape=(len(r), len(names)),
                                        dtype=np.float64)
                        for x, r in zip(pieces, raw_parts, strict=True) if r])
    raw = [v for r in raw_parts for v in r]
    lines = list(range(2, len(raw) + 2))
    rows, hierarchy = parse_label_cells(raw, lines, path, label_sep, path_sep, hierarchy)
    return Bunch(X=X, Y=label_matrix(hierarchy, rows, compact=True), hierarchy=hierarchy,
                 feature_names=tuple(names), label_names=tuple(hierarchy.labels),
                 label_lists=rows, filename=str(path), row_lines=np.asarray(lines))
