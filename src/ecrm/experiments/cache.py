"""An in-process ``memory`` for :class:`ecrm.ECRMCV`: reuse eigendecompositions across fits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["InMemoryCache"]


class InMemoryCache:
    """A ``memory`` for :class:`ecrm.ECRMCV` that keeps results in this process.

    It has the one method :func:`sklearn.utils.validation.check_memory` asks for,
    ``cache(func)``. Unlike :class:`joblib.Memory` it writes nothing to disk, so the
    eigendecompositions of one kernel matrix are shared by every fit of an experiment (two
    losses, several protocols) and freed with the object.

    Attributes
    ----------
    store : dict
        Results keyed by :func:`joblib.hash` of the function's qualified name and its
        positional arguments.

    Examples
    --------
    >>> calls = []
    >>> square = InMemoryCache().cache(lambda x: calls.append(x) or x * x)
    >>> square(3), square(3), len(calls)
    (9, 9, 1)
    """

    def __init__(self) -> None:
        self.store: dict[str, Any] = {}

    def cache(self, func: Callable) -> Callable:
        """``func`` wrapped so that each distinct argument tuple is computed once.

        Parameters
        ----------
        func : callable
            Called with positional arguments only.

        Returns
        -------
        cached : callable
            Same signature as ``func``.
        """
        import joblib

        name = f"{func.__module__}.{func.__qualname__}"

        def cached(*args):
            key = joblib.hash((name, args))
            if key not in self.store:
                self.store[key] = func(*args)
            return self.store[key]

        return cached
