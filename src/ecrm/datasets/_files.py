"""What every data-file reader shares: the error naming file and line, the file checks, the
file's text or bytes (gunzipped if needed), the check of the features read, and the
directory of a benchmark's files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ecrm.datasets._arff_text import ArffError, read_text

__all__ = ["DataFileError", "check_finite_features"]


class DataFileError(ValueError):
    """A malformed data file: the message names the file, the line (if any) and the cause."""

    def __init__(self, filename, lineno: int | None, message: str):
        self.filename, self.lineno, self.reason = str(filename), lineno, message
        where = self.filename if lineno is None else f"{self.filename}, line {lineno}"
        super().__init__(f"{where}: {message}")


def _data_dir(data_dir, env: str, what: str, help_text: str) -> Path:
    """``data_dir``, else the directory the environment variable ``env`` (else ``ECRM_DATA``)
    names; it must exist. Errors name ``what`` data and say where to get it."""
    if data_dir is None:
        data_dir = os.environ.get(env) or os.environ.get("ECRM_DATA") or None
    if data_dir is None:
        raise FileNotFoundError(f"no {what} data directory given: pass data_dir (or "
                                f"--data-dir) or set {env}. " + help_text)
    d = Path(data_dir).expanduser()
    if not d.is_dir():
        raise FileNotFoundError(f"{what} data directory {str(d)!r} does not exist. "
                                + help_text)
    return d


def _check_path(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise DataFileError(path, None, "no such file")
    return path


def _text(path: Path) -> str:
    """The file's text (gunzipped if needed; UTF-8, else Latin-1), as the ARFF reader reads it."""

    try:
        return read_text(path).removeprefix("\ufeff")
    except ArffError as exc:
        raise DataFileError(path, None, exc.reason) from None


def _encoding(path: Path) -> str:
    """UTF-8 (a byte-order mark dropped) if the whole file decodes as UTF-8, else Latin-1
    (as the whole-file readers decide), checked in 1 MiB blocks."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    with _open_binary(path) as fh:
        try:
            while block := fh.read(1 << 20):
                decoder.decode(block)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return "latin-1"
        except (OSError, EOFError) as exc:
            raise DataFileError(path, None, f"corrupt gzip data: {exc}") from None
    return "utf-8-sig"


def _open_binary(path: Path):
    """The file's bytes, gunzipped if it starts with the gzip magic."""
    import gzip

    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def check_finite_features(data: Bunch, *, allow_missing: bool = False) -> None:
    """Refuse a missing (NaN) or infinite feature value, naming the file, line and column.

    Parameters
    ----------
    data : sklearn.utils.Bunch
        As returned by :func:`load_data` (``X``, ``filename``, ``feature_names`` and
        ``row_lines`` are used).
    allow_missing : bool, default=False
        Let missing values (NaN) through, for a model that imputes them; infinite values
        are still refused.

    Raises
    ------
    DataFileError
    """
    X = data.X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        bad = np.flatnonzero(~(np.isfinite(X.data) | (allow_missing & np.isnan(X.data))))
        if not bad.size:
            return
        r = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        c, value = int(X.indices[bad[0]]), float(X.data[bad[0]])
    else:
        X = np.asarray(X, dtype=float)
        finite = np.isfinite(X) | (allow_missing & np.isnan(X))
        if finite.all():
            return
        r, c = (int(v) for v in np.argwhere(~finite)[0])
        value = float(X[r, c])
    lines = data.get("row_lines")
    lineno = int(lines[r]) if lines is not None and int(lines[r]) > 0 else None
    names = data.get("feature_names")
    column = f"column {names[c]!r}" if names is not None else f"column {c}"
    if str(data.get("filename", "")).lower().endswith((".svm", ".svmlight", ".libsvm")):
        column = _svmlight_feature(data.filename, lineno, value) or column
    what = "a missing value" if np.isnan(value) else f"the value {value!r}"
    where = "" if lineno is not None else f" (row {r})"
    raise DataFileError(data.filename, lineno, f"{column}{where}: {what}; ecrm needs a "
                        "finite number in every feature (impute or drop it first"
                        + (", or fit with --impute)" if np.isnan(value) else ")"))


def _svmlight_feature(path, lineno: int | None, value: float) -> str | None:
    """The feature index as written on ``lineno`` for a non-finite ``value``."""
    if lineno is None:
        return None
    line = _text(Path(path)).splitlines()[lineno - 1].split("#", 1)[0]
    for token in line.split()[1:]:
        index, _, text = token.partition(":")
        try:
            v = float(text)
        except ValueError:
            continue
        if v == value or (np.isnan(v) and np.isnan(value)):
            return f"feature index {index}"
    return None
