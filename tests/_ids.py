"""Readable ids of parametrised tests: ``ids=readable`` names a dict of keyword arguments
by its items, a command line by its words, another list (or a small array) by its items, a
class by its name and an object (a loss, a solver) by its short repr or its type; other values keep
pytest's own id."""

from __future__ import annotations

#: The longest id a value gets (a long command line or dict is cut there).
WIDTH = 60


def _short(value) -> str:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_short(v) for v in value) + "]"
    if isinstance(value, type):
        return value.__name__
    return _object(value)


def _object(value) -> str:
    """An object by its repr when that is short and says what it holds, else its type."""
    text = repr(value)
    return text if len(text) <= WIDTH and not text.startswith("<") \
        else type(value).__name__


def readable(value) -> str | None:
    """The id of one parameter's ``value`` (``None``: pytest's)."""
    if isinstance(value, dict):
        text = ",".join(f"{k}={_short(v)}" for k, v in value.items()) or "none"
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        text = " ".join(value)
    elif isinstance(value, (list, tuple)):
        text = _short(value)
    elif isinstance(value, type):
        text = value.__name__
    elif type(value).__name__ == "ndarray" and value.size <= 8:
        text = "array" + _short(value.ravel().tolist())
    elif isinstance(value, (str, int, float, bool, bytes, set)) or value is None \
            or type(value).__module__ == "numpy" or hasattr(value, "__name__"):
        return None  # pytest's: the value itself, a function's name, an array's index
    else:
        text = _object(value)
    return text if len(text) <= WIDTH else text[:WIDTH - 3] + "..."


def named(cases) -> list:
    """``cases`` (tuples of parameters) as ``pytest.param`` named by their first parameter
    (a string as it is, else :func:`readable`; its position when that gives no name)."""
    import pytest

    return [pytest.param(*case, id=case[0] if isinstance(case[0], str)
                         else readable(case[0]) or str(i)) for i, case in enumerate(cases)]
