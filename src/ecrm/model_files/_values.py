"""The values a model file's fitted state holds, checked as fit leaves them: integers within
bounds, positive floats, finite float64 arrays. Each check raises ``TypeError`` for a value of
another type and ``ValueError`` for one out of range, naming the field."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["_finite_floats", "_int", "_positive_float", "_real"]


def _finite_floats(value, name: str, ndim: int) -> np.ndarray:
    """``value`` as fit leaves it: a finite float64 array of ``ndim`` dimensions (checked
    before a constructor's ``np.asarray(..., dtype=float)`` could cast strings, bools,
    dates or float16 into other numbers)."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float64:
        found = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
        raise TypeError(f"{name} must be a float64 array; found {found}")
    if value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D; found shape {value.shape}")
    if not np.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return value


def _int(value, name: str, low: int, high: int = 2**62) -> int:
    # the upper bound keeps a forged 10**30 out of NumPy's int64 (an OverflowError later)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; found {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}; found {value}")
    if int(value) > high:
        raise ValueError(f"{name} must be at most {high}; found {str(value)[:40]}")
    return int(value)


def _positive_float(value, name: str) -> float:
    if type(value) is not float:  # what fit stores (JSON keeps a float a float)
        raise TypeError(f"{name} must be a float; found {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number; found {value!r}")
    return value


def _real(value, name: str, *, nan: bool = False) -> float:
    """A summary as fit stores it: a float (NumPy's or Python's), finite (or NaN if
    ``nan``), never a list, a string or a bool that ``ecrm info`` would choke on."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        raise TypeError(f"{name} must be a float; found {type(value).__name__}")
    if not (np.isfinite(value) or (nan and np.isnan(value))):
        raise ValueError(f"{name} must be finite; found {value!r}")
    return float(value)
