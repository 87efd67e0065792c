"""Reading a hierarchy: ``(parent, child)`` pairs, parent maps, networkx graphs, label names."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping

import numpy as np

__all__: list[str] = []


def _networkx_digraph(obj):
    """Return ``obj`` if it is a networkx directed graph, ``None`` if not networkx at all."""
    if not type(obj).__module__.startswith("networkx"):
        return None
    import networkx as nx

    if isinstance(obj, nx.DiGraph):
        return obj
    raise TypeError("a networkx hierarchy must be a DiGraph with edges parent -> child; "
                    f"got {type(obj).__name__}")


def _pairs_from_parent_map(mapping: Mapping) -> tuple[list, list]:
    """(pairs, nodes in order of first appearance) from ``{child: parent or [parents]}``."""
    pairs: list = []
    nodes: list = []
    for child, value in mapping.items():
        several = isinstance(value, (list, tuple, set, frozenset))
        parents = [] if value is None else list(value) if several else [value]
        for p in parents:
            nodes.append(p)
            pairs.append((p, child))
        nodes.append(child)
    return pairs, nodes


def _pairs_from_iterable(edges: Iterable) -> tuple[list, list]:
    pairs: list = []
    nodes: list = []
    for e in edges:
        try:
            parent, child = e
        except (TypeError, ValueError):
            raise ValueError(f"each edge must be a (parent, child) pair; got {e!r}") from None
        pairs.append((parent, child))
        nodes += [parent, child]
    return pairs, nodes


def _check_distinct_names(names: list) -> None:
    """Refuse names that are equal in Python but differ in type (``1``, ``1.0`` and ``True``):
    a dict would silently merge them into one label."""
    first: dict = {}
    for v in names:
        w = first.setdefault(v, v)
        if _name_kind(w) != _name_kind(v):
            raise ValueError(f"labels {w!r} and {v!r} are equal in Python but of different "
                             f"types ({type(w).__name__}, {type(v).__name__}); they would be "
                             "merged into one label: give labels of one type")


def _name_kind(v) -> object:
    """Python and numpy integers are one kind of name, as are floats; bools are their own."""
    if isinstance(v, (bool, np.bool_)):
        return bool
    if isinstance(v, numbers.Integral):
        return int
    if isinstance(v, numbers.Real):
        return float
    return type(v)
