r"""The exact solvers of :func:`ecrm.spaces.bucket_orders.optimal_bucket_order`.

* :func:`dp`: the dynamic programme over subsets of :mod:`ecrm.spaces.bucket_orders`,
  :math:`O(3^s)` per row of ``s`` labels. Compiled with numba when installed
  (:mod:`ecrm.spaces._bucket_compiled`: it skips every top part :math:`P` whose lower bound,
  the pairs across the cut at full cost and the others at their cheapest, exceeds the cost of
  a feasible order found first; exact), else vectorised with NumPy over the subsets :math:`P`
  of each size, all :math:`2^r` submasks :math:`Q` of each at once, and the rows (last axis).
* :func:`milp`: one HiGHS MILP per row on the pair indicators, with its optimality gap.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint
from scipy.optimize import milp as _highs

from ecrm.spaces._scaling import highs_costs

__all__ = ["dp", "milp"]

#: Elements per array of the NumPy dynamic programme (rows x subsets): bounds its memory.
_CHUNK = 1 << 20
# "auto": the compiled programme when numba imports, else NumPy; "numpy" or "numba" to choose.
_ENGINE = "auto"


@functools.cache
def _layer(s: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The subsets of ``s`` items of size ``r`` (L,) and their members (L, r), increasing."""
    subsets = np.arange(1 << s)
    bits = (subsets[:, None] >> np.arange(s)) & 1
    P = np.flatnonzero(bits.sum(axis=1) == r)
    return P, np.nonzero(bits[P])[1].reshape(len(P), r)


def _dp_numpy(B: np.ndarray) -> np.ndarray:
    """Positions (n, s) by the dynamic programme, vectorised over subsets and rows."""
    n, s, _ = B.shape
    Bt = np.ascontiguousarray(B.transpose(1, 2, 0))  # (s, s, n): rows last
    g = np.zeros((1 << s, n))
    back = np.zeros((1 << s, n), dtype=np.int64)
    for r in range(1, s + 1):
        P_all, M_all = _layer(s, r)
        step = max(1, _CHUNK // ((1 << r) * n))
        for lo in range(0, len(P_all), step):
            P, M = P_all[lo:lo + step], M_all[lo:lo + step]
            outside = (((P[:, None] >> np.arange(s)) & 1) == 0).astype(float)
            w = np.einsum("lb,ljbn->ljn", outside, Bt[M])  # w_P(a) per member a
            h, q = np.zeros((len(P), 1, n)), np.zeros((len(P), 1), dtype=np.int64)
            for j in range(r):  # w_P(Q) and Q for the 2^r submasks, doubled member by member
                h = np.concatenate([h, h + w[:, j, None, :]], axis=1)
                q = np.concatenate([q, q | (1 << M[:, j:j + 1])], axis=1)
            values = g[q[:, :-1]] - h[:, :-1]
            best = values.argmin(axis=1)
            g[P] = h[:, -1] + np.take_along_axis(values, best[:, None], axis=1)[:, 0]
            back[P] = np.take_along_axis(q, best, axis=1)
    level, P, rows = np.zeros((n, s), dtype=np.int64), np.full(n, (1 << s) - 1), np.arange(n)
    n_buckets = np.zeros(n, dtype=np.int64)
    for t in range(s):
        Q = back[P, rows]
        bucket = (((P & ~Q)[:, None] >> np.arange(s)) & 1).astype(bool)
        level[bucket] = t
        n_buckets += P != 0
        P = Q
    return n_buckets[:, None] - level


@functools.cache
def _import_compiled():
    from ecrm.spaces import _bucket_compiled

    return _bucket_compiled if _bucket_compiled.AVAILABLE else None  # numba is optional


def dp(B: np.ndarray, prune: bool = True) -> np.ndarray:
    """Dense positions (n, s) minimising the costs ``B`` (n, s, s), by the programme
    (the compiled one skips the top parts its bound rules out unless ``prune`` is false:
    the same answer, :mod:`ecrm.spaces._bucket_compiled`)."""
    if B.shape[1] == 1:
        return np.ones((len(B), 1), dtype=np.int64)
    compiled = None if _ENGINE == "numpy" else _import_compiled()
    if compiled is None and _ENGINE == "numba":
        raise ImportError("the compiled bucket-order programme needs numba: "
                          "pip install 'ecrm[fast]'")
    if compiled is not None:
        return compiled.bucket_dp(np.ascontiguousarray(B), prune)[0]
    chunk = max(1, _CHUNK // (1 << B.shape[1]))
    return np.concatenate([_dp_numpy(B[i:i + chunk]) for i in range(0, len(B), chunk)])


@functools.cache
def _constraints(s: int) -> LinearConstraint:
    """Asymmetry and negative transitivity of the pair vectors of ``s`` labels."""
    def at(a, b):
        return a * (s - 1) + b - (b > a)

    rows, cols, vals, t = [], [], [], 0
    for a, b in itertools.combinations(range(s), 2):  # u_ab + u_ba <= 1
        rows += [t, t]
        cols += [at(a, b), at(b, a)]
        vals += [1.0, 1.0]
        t += 1
    n_asym = t
    for a, b, c in itertools.permutations(range(s), 3):  # u_ab - u_ac - u_cb <= 0
        rows += [t] * 3
        cols += [at(a, b), at(a, c), at(c, b)]
        vals += [1.0, -1.0, -1.0]
        t += 1
    A = sp.csr_array((vals, (rows, cols)), shape=(t, s * (s - 1)))
    ub = np.concatenate([np.ones(n_asym), np.zeros(t - n_asym)])
    return LinearConstraint(A, -np.inf, ub)


def milp(B: np.ndarray, time_limit=None):
    """Pair vectors (n, s(s-1)) minimising the costs ``B`` (n, s, s), their optimality gaps
    (n,) and proven optimality (n,), by one HiGHS MILP per row."""
    n, s, _ = B.shape
    if s == 1:
        return np.zeros((n, 0)), np.zeros(n), np.ones(n, dtype=bool)
    a, b = np.nonzero(~np.eye(s, dtype=bool))  # the pair order of pair_index
    C_highs, scale = highs_costs(B[:, a, b])
    options = {"mip_rel_gap": 0.0}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    U, gap, ok = np.zeros((n, s * (s - 1))), np.zeros(n), np.zeros(n, dtype=bool)
    for i, c in enumerate(C_highs):
        res = _highs(c, constraints=_constraints(s), integrality=np.ones(len(c)),
                   bounds=Bounds(0, 1), options=options)
        if res.x is None:
            raise RuntimeError(f"HiGHS found no bucket order for cost row {i}: {res.message}")
        U[i] = np.round(res.x)
        bound = getattr(res, "mip_dual_bound", np.nan)
        gap[i] = (max(res.fun - bound, 0.0) if np.isfinite(bound) else np.inf) * scale[i]
        ok[i] = res.status == 0
    return U, gap, ok
