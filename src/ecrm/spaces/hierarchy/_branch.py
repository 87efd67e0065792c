r"""Compiled branch and bound for the medium parts of the hierarchical-loss oracle (numba).

:mod:`ecrm.spaces.hierarchy._products` leaves, after its exact reductions, connected parts of
a row to solve apart: :math:`\min \sum_j c_j y_j + \sum_k p_k \prod_{q \in Q_k} y_q` over the
label sets of the part closed under its parents (the other parents are on). A part of at most
``MAX_LABELS`` labels is searched here depth first, one bit of a ``uint64`` per label, the
labels in a topological order (parents first), so that a label can be on only when its
parents in the part are on and a product is decided when its last parent is.

Bound. At a node of the search (the first :math:`t` labels decided, value :math:`v` so far)
every completion is worth at least :math:`v + \sum_{j \ge t,\ j \text{ alive}}
\min(c'_j, 0) + \sum_{k \text{ open, alive}} \min(p_k, 0)`, a label being *alive* when none
of its ancestors in the part was switched off (else it is off), a product open when its last
parent is undecided, alive when all its parents are, and :math:`c'_j = c_j + \sum p_k` over
the open positive products whose only undecided parent is :math:`j` (the others are on): such
a product is on whenever :math:`j` is, and each is charged to one label only, so
:math:`\sum_j c'_j y_j` never exceeds the value of the labels and positive products. A node
whose bound is not below the best value found is cut. The search starts from the empty set
(value 0) and tries first, at each label, the side its own cost prefers.

The search is exhaustive up to those cuts, hence exact, or it stops after ``budget`` nodes
and says so: such a part goes to the MILP. Numba is the ``fast`` extra; without it every
part goes to the MILP.
"""

from __future__ import annotations

import numpy as np

from ecrm.spaces.hierarchy._jit import jit

try:
    import numba  # noqa: F401
except ImportError:  # optional: the module still imports (doctests)
    AVAILABLE, _jit = False, (lambda f: f)
else:  # compiled once, then loaded from a disk cache (where one can be written: _jit)
    AVAILABLE, _jit = True, jit()

__all__ = ["AVAILABLE", "MAX_LABELS", "search_parts"]

# One bit per label in a uint64.
MAX_LABELS = 63


@_jit
def _bit(t):
    return np.uint64(1) << np.uint64(t)


@_jit
def search(c, parent_mask, product_mask, p, budget):
    """Minimise over the closed label sets of one part; ``(best_mask, solved)``.

    ``c`` (m,) the labels' costs in a topological order; ``parent_mask[j]`` the bits of the
    parents of ``j`` in the part; ``product_mask[k]`` the bits of the parents of product
    ``k`` in the part (nonzero) and ``p[k]`` its cost. ``solved`` is false when the search
    stopped after ``budget`` nodes (``best_mask`` is then only the best set found).
    """
    m, K = len(c), len(p)
    desc = np.zeros(m, dtype=np.uint64)  # descendants-or-self in the part
    for j in range(m - 1, -1, -1):
        desc[j] |= _bit(j)
        for q in range(j):
            if parent_mask[j] & _bit(q):
                desc[q] |= desc[j]
    last = np.zeros(K, dtype=np.int64)  # the position at which a product is decided
    for k in range(K):
        for q in range(m):
            if product_mask[k] & _bit(q):
                last[k] = q
    order = np.argsort(last, kind="mergesort")
    first_at = np.searchsorted(last[order], np.arange(m + 1))
    values = np.zeros(m + 1)
    on = np.zeros(m + 1, dtype=np.uint64)
    off = np.zeros(m + 1, dtype=np.uint64)  # switched off, with their descendants
    stage = np.zeros(m + 1, dtype=np.int8)  # 0 new node, 1 first side tried, 2 both
    prefer = np.zeros(m + 1, dtype=np.int8)
    charged = np.zeros(m)  # a label's cost plus the products it alone would switch on
    best, best_mask, nodes, t = 0.0, np.uint64(0), 0, 0
    while t >= 0:
        if t == m:
            if values[m] < best:
                best, best_mask = values[m], on[m]
            t -= 1
            continue
        if stage[t] == 2:
            stage[t] = 0
            t -= 1
            continue
        if stage[t] == 0:
            nodes += 1
            if nodes > budget:
                return best_mask, False
            bound = values[t]
            for j in range(t, m):
                charged[j] = c[j]
            for e in range(first_at[t], K):
                k = order[e]
                if off[t] & product_mask[k]:
                    continue  # stays off
                if p[k] < 0:
                    bound += p[k]
                    continue
                rest = product_mask[k] & ~on[t]  # undecided factors (the others are on)
                if rest & (rest - np.uint64(1)) == 0:  # one: it carries the product
                    for j in range(t, m):
                        if rest == _bit(j):
                            charged[j] += p[k]
            for j in range(t, m):
                if charged[j] < 0 and not off[t] & _bit(j):
                    bound += charged[j]
            if bound >= best:
                t -= 1
                continue
            if off[t] & _bit(t):
                choose = 0
                stage[t] = 2
            else:
                prefer[t] = 1 if c[t] < 0 else 0
                choose = prefer[t]
                stage[t] = 1
        else:
            choose = 1 - prefer[t]
            stage[t] = 2
        v, now, dead = values[t], on[t], off[t]
        if choose == 1:
            now |= _bit(t)
            v += c[t]
        else:
            dead |= desc[t]
        for e in range(first_at[t], first_at[t + 1]):
            k = order[e]
            if now & product_mask[k] == product_mask[k]:
                v += p[k]
        values[t + 1] = v
        on[t + 1] = now
        off[t + 1] = dead
        stage[t + 1] = 0
        t += 1
    return best_mask, True


@_jit
def search_parts(start, c, parent_mask, product_start, product_mask, p, budget):
    """:func:`search` on each part of a block: part ``i`` has the labels
    ``start[i]:start[i + 1]`` of ``c`` and ``parent_mask`` and the products
    ``product_start[i]:product_start[i + 1]`` of ``product_mask`` and ``p``. Returns the
    best masks and whether each search ended."""
    n = len(start) - 1
    masks = np.zeros(n, dtype=np.uint64)
    solved = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        a, b = start[i], start[i + 1]
        u, v = product_start[i], product_start[i + 1]
        masks[i], solved[i] = search(c[a:b], parent_mask[a:b], product_mask[u:v], p[u:v],
                                     budget)
    return masks, solved
