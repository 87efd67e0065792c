"""Small hierarchies that many test modules share.

Constants rather than fixtures: the modules use them at import time (in parametrize lists,
hypothesis strategies and module-level helpers). The name gives the shape and the number of
labels; a module imports the one it needs under its own local name (``TREE``, ``DAG``,
``H``). The edges are listed in the order the modules listed them, which fixes the label
order (the columns of ``Y``).

A :class:`~ecrm.Hierarchy` fills some caches on first use (the ancestor matrix, oracle
plans); they depend only on the edges, so sharing one instance does not change any answer.
"""

from __future__ import annotations

from ecrm import Hierarchy

#: Two roots: ``a`` over ``a1`` and ``a2``, ``b`` over ``b1`` (5 labels).
TREE5 = Hierarchy([("a", "a1"), ("a", "a2"), ("b", "b1")])

#: :data:`TREE5` with ``a11`` under ``a1``: a second level on one side (6 labels).
TREE6 = Hierarchy([("a", "a1"), ("a", "a2"), ("a1", "a11"), ("b", "b1")])

#: :data:`TREE6` with ``b2`` under ``b``: both roots have two children (7 labels).
TREE7 = Hierarchy([("a", "a1"), ("a", "a2"), ("a1", "a11"), ("b", "b1"), ("b", "b2")])

#: A DAG of 6 labels: ``c`` under both roots, ``e`` under ``c`` and ``d``, ``f`` under ``b``.
DAG6 = Hierarchy([("a", "c"), ("b", "c"), ("a", "d"), ("c", "e"), ("d", "e"), ("b", "f")])
