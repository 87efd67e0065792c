"""Lazy re-exports of a package's public names (:pep:`562`).

A package ``__init__`` that lists where each name is defined imports that sub-module on the
name's first use: reading a hierarchy's model file then loads neither the flow polytope and
its LP solvers nor the ranking losses (``ecrm predict`` is mostly imports on a small file).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, sources: dict[str, str],
                 public: list[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``.

    Parameters
    ----------
    package : str
        The package, e.g. ``"ecrm.spaces"``.
    sources : dict
        Public name -> the sub-module (relative to ``package``) that defines it, or that is
        it (a sub-module whose last name is the public name).
    public : list of str
        The package's ``__all__`` (every name of ``sources``).

    Returns
    -------
    getattr, dir : callable
    """
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(f"{package}.{sources[name]}")
        value = module if sources[name].rpartition(".")[2] == name else getattr(module, name)
        namespace[name] = value  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
