r"""The compiled dynamic programme of the optimal bucket order (numba, the ``fast`` extra).

Imported lazily by :mod:`ecrm.spaces.bucket_orders` when numba is installed; without it the
NumPy path of that module runs instead (it is also the reference of the tests). Same recursion
and tie-breaking as the NumPy path: with :math:`w_P(a) = \sum_{b \notin P} B_{ab}`,

.. math:: g(P) = w_P(P) + \min_{Q \subsetneq P} \big[ g(Q) - w_P(Q) \big],

the submasks :math:`Q` of :math:`P` visited in increasing order, the first minimum kept.

**Pruning** (exact, the same answer). With :math:`m_{ab} = \min(B_{ab}, B_{ba}, 0)` and
:math:`h(S) = \sum_{\{a, b\} \subseteq S} m_{ab}`, every order whose top part is :math:`P`
costs at least

.. math:: \ell(P) = w_P(P) + h(P) + h(V \setminus P)

(the pairs across the cut are paid in full, every other pair at least its cheapest
option). A feasible order of cost :math:`U` is found first: the labels sorted by their net
cost :math:`\sum_b (B_{ba} - B_{ab})`, cut into consecutive buckets optimally (an
:math:`O(k^3)` programme over the cut points). A top part with :math:`\ell(P) > U` (beyond a
rounding tolerance) lies on no optimal order, so :math:`g(P)` is not computed (set to
:math:`+\infty`). Every top part of an optimal order keeps its exact value, and so does
every :math:`Q` that attains a minimum in the full programme, so the same first minimum is
kept at every step and the answer is the full programme's.

The first call compiles the kernel (a few seconds), later processes load it from numba's cache.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit
except ImportError:  # optional: the module still imports, bucket_orders does not use it
    AVAILABLE, _jit = False, (lambda f: f)
else:  # compiled once, then loaded from numba's cache
    AVAILABLE, _jit = True, njit(cache=True)

__all__ = ["AVAILABLE"]


@_jit
def _upper_bound(Bi, s):
    """The cost of a feasible bucket order of the costs ``Bi`` (s, s): labels by decreasing
    net cost, cut into consecutive buckets at the cheapest cut points."""
    score = np.zeros(s)
    for a in range(s):
        for b in range(s):
            score[a] += Bi[b, a] - Bi[a, b]
    order = np.argsort(-score, kind="mergesort")
    best = np.full(s + 1, np.inf)
    best[0] = 0.0
    for i in range(1, s + 1):
        for j in range(i):  # last bucket: order[j:i], strictly behind order[:j]
            c = best[j]
            for x in range(j):
                for y in range(j, i):
                    c += Bi[order[x], order[y]]
            if c < best[i]:
                best[i] = c
    return best[s]


@_jit
def bucket_dp(B, prune):
    """Optimal bucket positions (n, s) (1 = top, dense) of cost matrices ``B`` (n, s, s), and
    the number of top parts whose value was computed per row (n,) (all ``2^s - 1`` without
    ``prune``)."""
    n, s = B.shape[0], B.shape[1]
    size = 1 << s
    full = size - 1
    low = np.zeros(size, np.int64)  # index of the lowest set bit
    for q in range(1, size):
        low[q] = low[q >> 1] + 1 if (q & 1) == 0 else 0
    g = np.zeros(size)
    hs = np.zeros(size)
    inner = np.zeros(size)  # h(S)
    cross = np.zeros(size)  # w_S(S)
    back = np.zeros(size, np.int64)
    w, row = np.zeros(s), np.zeros(s)
    m, both = np.zeros((s, s)), np.zeros((s, s))
    out = np.zeros((n, s), np.int64)
    expanded = np.zeros(n, np.int64)
    for i in range(n):
        limit = np.inf
        if prune:
            total = 0.0
            for a in range(s):
                for b in range(s):
                    total += abs(B[i, a, b])
            limit = _upper_bound(B[i], s) + 1e-9 * (total + 1e-300)
            for a in range(s):
                row[a] = 0.0
                for b in range(s):
                    if b != a:
                        row[a] += B[i, a, b]
                        m[a, b] = min(B[i, a, b], B[i, b, a], 0.0)
                        both[a, b] = B[i, a, b] + B[i, b, a]
            for S in range(1, size):  # h(S) and w_S(S) from S minus its lowest label x
                x, R = low[S], S & (S - 1)
                t, c = inner[R], cross[R] + row[x]
                while R != 0:
                    b = low[R]
                    t += m[x, b]
                    c -= both[x, b]
                    R &= R - 1
                inner[S], cross[S] = t, c
        for P in range(1, size):
            if prune and P != full and cross[P] + inner[P] + inner[full ^ P] > limit:
                g[P] = np.inf
                continue
            expanded[i] += 1
            for a in range(s):
                if (P >> a) & 1:
                    t = 0.0
                    for b in range(s):
                        if not (P >> b) & 1:
                            t += B[i, a, b]
                    w[a] = t
            hs[0] = 0.0
            best, best_q = g[0], 0
            Q = ((~P) + 1) & P  # the smallest non-empty submask of P
            while Q != P:
                hs[Q] = hs[Q & (Q - 1)] + w[low[Q]]
                v = g[Q] - hs[Q]
                if v < best:
                    best, best_q = v, Q
                Q = ((Q | ~P) + 1) & P
            hs[P] = hs[P & (P - 1)] + w[low[P]]
            g[P] = hs[P] + best
            back[P] = best_q
        # buckets from the bottom: P minus back[P] is the last bucket of the top part P
        level = np.zeros(s, np.int64)
        P, t = full, 0
        while P != 0:
            Q = back[P]
            for a in range(s):
                if ((P >> a) & 1) and not ((Q >> a) & 1):
                    level[a] = t
            P, t = Q, t + 1
        for a in range(s):
            out[i, a] = t - level[a]
    return out, expanded
