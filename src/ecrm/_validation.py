"""Parameter and input checks shared by every module: one message per kind of mistake.

Each check returns the cleaned value or raises ``ValueError`` (``TypeError`` for a wrong
type) naming the parameter, what was expected and what was found.
"""

from __future__ import annotations

import numbers
from typing import Literal, overload

import numpy as np

__all__ = ["check_bool", "check_feature_scales", "check_float_array", "check_int", "check_real",
           "check_same_rows"]


def check_real(value, name: str, *, low: float = 0.0, high: float = np.inf,
               low_open: bool = True, high_open: bool = False) -> float:
    """``value`` as a float in the interval from ``low`` to ``high`` (open or closed ends).

    >>> check_real(0.5, "alpha")
    0.5
    >>> check_real(-1, "alpha")
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a real number in (0, inf); got -1
    """
    lo, hi = "(" if low_open else "[", ")" if high_open or np.isinf(high) else "]"
    interval = f"{lo}{low:g}, {high:g}{hi}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in {interval}; got {value!r}")
    v = float(value)
    ok = np.isfinite(v) and (v > low if low_open else v >= low) and (
        v < high if high_open else v <= high)
    if not ok:
        raise ValueError(f"{name} must be a real number in {interval}; got {value!r}")
    return v


@overload
def check_int(value, name: str, *, low: int = ..., high: int | None = ...,
              allow_none: Literal[False] = ...) -> int: ...


@overload
def check_int(value, name: str, *, low: int = ..., high: int | None = ...,
              allow_none: bool) -> int | None: ...


def check_int(value, name: str, *, low: int = 1, high: int | None = None,
              allow_none: bool = False) -> int | None:
    """``value`` as an int with ``low <= value <= high`` (``None`` passes if allowed).

    >>> check_int(3, "n_jobs")
    3
    >>> check_int(2.5, "degree")
    Traceback (most recent call last):
    ...
    ValueError: degree must be an integer >= 1; got 2.5
    """
    if value is None and allow_none:
        return None
    span = f">= {low}" if high is None else f"in [{low}, {high}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer {span}; got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        raise ValueError(f"{name} must be an integer {span}; got {value!r}")
    return v


def check_bool(value, name: str) -> bool:
    """``value`` as a bool; only ``True``/``False`` (and numpy bools) are accepted."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_same_rows(first, second, names: tuple[str, str] = ("X", "Y")) -> None:
    """Raise ``ValueError`` unless ``first`` and ``second`` have the same number of rows."""
    n1, n2 = first.shape[0], second.shape[0]
    if n1 != n2:
        raise ValueError(f"{names[0]} and {names[1]} must have the same number of rows; "
                         f"got {n1} and {n2}")


def check_feature_scales(X, owner: str, *, names=None, max_ratio: float = 1e3) -> float:
    """Warn if the non-constant features' standard deviations span more than ``max_ratio``.

    A kernel on such features sees only the widest (income in dollars beside ratios), and
    the model often predicts one constant output: a
    :class:`~ecrm.exceptions.FeatureScaleWarning` names the widest and narrowest columns.
    Constant columns (maximum equal to minimum) are left out.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p), float
    owner : str
        Who checks (the estimator's name), to start the message.
    names : sequence of p str, optional
        The columns' names (else their indices) for the message.
    max_ratio : float, default=1e3

    Returns
    -------
    ratio : float
        The largest standard deviation over the smallest (1 if fewer than two features vary).

    Examples
    --------
    >>> import warnings
    >>> X = np.array([[0.1, 20000.0], [0.5, 90000.0], [0.3, 45000.0]])
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     ratio = check_feature_scales(X, "ECRM")
    >>> f"{ratio:.3g}", w[0].category.__name__
    ('1.77e+05', 'FeatureScaleWarning')
    """
    import warnings

    import scipy.sparse as sp

    from ecrm.exceptions import FeatureScaleWarning

    if sp.issparse(X):
        X = sp.csc_array(X)
        mean = np.asarray(X.mean(axis=0)).ravel()
        std = np.sqrt(np.maximum(np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean ** 2, 0))
        varies = X.max(axis=0).toarray().ravel() != X.min(axis=0).toarray().ravel()
    else:
        X = np.asarray(X)
        std, varies = X.std(axis=0), X.max(axis=0) != X.min(axis=0)
    std = np.where(varies, std, np.nan)
    if np.count_nonzero(varies) < 2:
        return 1.0
    wide, narrow = int(np.nanargmax(std)), int(np.nanargmin(std))
    ratio = float(std[wide] / std[narrow])
    if ratio > max_ratio:
        col = (lambda j: f"feature {j}") if names is None else (lambda j: repr(str(names[j])))
        warnings.warn(
            f"{owner}: the features' standard deviations differ by a factor of {ratio:.3g} "
            f"({col(wide)}: {std[wide]:.3g}, {col(narrow)}: {std[narrow]:.3g}); a kernel "
            "on them sees mostly the widest, and the model may predict nearly one output for "
            "every row. Standardise them: a Pipeline with sklearn.preprocessing.StandardScaler "
            "(ecrm fit --standardize yes, or --cv to choose by leave-one-out)",
            FeatureScaleWarning, stacklevel=4)
    return ratio


def check_float_array(value, name: str, shape: tuple, *, finite: bool = True) -> None:
    """``value`` is a float64 array of ``shape`` (finite unless told), as fit leaves it: a
    model file's array is refused otherwise, naming ``name``."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float64:
        found = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
        raise TypeError(f"{name} must be a float64 array; found {found}")
    if value.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; found {value.shape}")
    if finite and not np.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or infinite values")
