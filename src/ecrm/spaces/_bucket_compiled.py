r"""The compiled dynamic programme of the optimal bucket order (numba, the ``fast`` extra).

Imported lazily by :mod:`ecrm.spaces.bucket_orders` when numba is installed; without it the
NumPy path of that module runs instead (it is also the reference of the tests). Same recursion
and tie-breaking as the NumPy path: with :math:`w_P(a) = \sum_{b \notin P} B_{ab}`,

.. math:: g(P) = w_P(P) + \min_{Q \subsetneq P} \big[ g(Q) - w_P(Q) \big],

the submasks :math:`Q` of :math:`P` visited in increasing order, the first minimum kept.
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
def bucket_dp(B):
    """Optimal bucket positions (n, s) (1 = top, dense) of cost matrices ``B`` (n, s, s)."""
    n, s = B.shape[0], B.shape[1]
    size = 1 << s
    full = size - 1
    low = np.zeros(size, np.int64)  # index of the lowest set bit
    for q in range(1, size):
        low[q] = low[q >> 1] + 1 if (q & 1) == 0 else 0
    g = np.zeros(size)
    hs = np.zeros(size)
    back = np.zeros(size, np.int64)
    w = np.zeros(s)
    out = np.zeros((n, s), np.int64)
    for i in range(n):
        for P in range(1, size):
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
    return out
