r"""The linear ordering problem, solved exactly: the oracle behind Kendall's (Kemeny's) loss.

Given a cost matrix :math:`B \in \mathbb R^{k \times k}` (:math:`B_{ab}` is the cost of placing
item :math:`a` before item :math:`b`), find the order :math:`\pi` of the items minimising

.. math:: \mathrm{cost}(\pi) = \sum_{a \text{ before } b \text{ in } \pi} B_{ab} .

Kemeny aggregation (:math:`B_{ab}` = weight of the rankings that put :math:`b` before
:math:`a`) and ECRM's inference under Kendall's distance are instances, with costs of any sign.
The problem is NP-hard in general; :func:`linear_ordering` solves it exactly, batched over the
rows of a stack of cost matrices, in three steps:

1. **Decomposition** (exact). Say :math:`a` *beats* :math:`b` when :math:`B_{ab} < B_{ba}`.
   If a set :math:`A` of items beats every item outside it, some optimal order puts
   :math:`A` first: moving the members of :math:`A` to the front, keeping the relative order
   inside :math:`A` and inside its complement, changes only pairs :math:`(a \in A, b \notin A)`
   that were in the order :math:`b, a`, each by :math:`B_{ab} - B_{ba} < 0`. Every member of
   such an :math:`A` beats more items than every non-member, so sorting the items by their
   number of wins, the dominating sets are exactly the prefixes whose members beat every later
   item, found with one cumulative sum per row. The problem splits into independent blocks
   (the strongly connected components of the "beats or ties" digraph). Comparisons of floats
   are exact, so this step makes no rounding error.
2. **Dynamic programming over subsets** for every block of at most ``max_dp_size`` items
   (Held-Karp style): with :math:`f(\emptyset) = 0`,

   .. math:: f(S) = \min_{j \in S} \Big[ f(S \setminus \{j\})
             + \sum_{a \in S \setminus \{j\}} B_{aj} \Big],

   :math:`f` of the whole block being its optimal cost and the minimising :math:`j` the item
   placed last among :math:`S`. The column sums are carried one popcount layer at a time:
   :math:`O(2^s s)` time for a block of :math:`s` items, about 2 MB per row at :math:`s = 16`,
   vectorised over the blocks of one size and the subsets of a layer. The sums are formed in
   a fixed order, so near-ties may be resolved by round-off (within a few ulps of
   :math:`\sum |B_{ab}|`). Rows are scaled by a power of two first (exact, no overflow).
3. **Mixed-integer programming** (HiGHS through :func:`scipy.optimize.milp`) for larger blocks:
   binary :math:`x_{ab}` (:math:`a < b`, 1 when :math:`a` comes first), objective
   :math:`\sum_{a<b} (B_{ab} - B_{ba})\, x_{ab}` scaled by a power of two to an l1 norm near
   :math:`2^{20}` (:func:`ecrm.spaces._scaling.highs_costs`), and the 3-cycle inequalities
   :math:`x_{ab} + x_{bc} - x_{ac} \le 1`, :math:`x_{ac} - x_{ab} - x_{bc} \le 0` for
   :math:`a < b < c`, solved to a zero relative gap: optimal within :data:`MILP_RTOL` (about
   1.35e-12) of :math:`\sum_{a<b} |B_{ab} - B_{ba}|`.

References
----------
Held & Karp, "A dynamic programming approach to sequencing problems", J. SIAM 10, 1962.
Martí & Reinelt, *The Linear Ordering Problem*, Springer, 2011.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from ecrm.spaces._scaling import HIGHS_COST_NORM, highs_costs
from ecrm.spaces.base import CertifiedResult

__all__ = ["MAX_DP_SIZE", "MILP_RTOL", "linear_ordering", "ordering_cost"]

#: Default largest block solved by dynamic programming.
MAX_DP_SIZE = 16
#: HiGHS's absolute optimality gap on the scaled objective (its default ``mip_abs_gap``,
#: which scipy's ``milp`` does not expose).
MILP_ABS_GAP = 1e-6
#: The MILP's guarantee relative to the l1 norm of the row's differences.
MILP_RTOL = MILP_ABS_GAP / HIGHS_COST_NORM * math.sqrt(2)
#: Rows x subsets per DP chunk (16 rows of 16 items): bounds the memory of the tables.
_CHUNK_ELEMENTS = 1 << 20


def _check_costs(B) -> np.ndarray:
    B = np.asarray(B, dtype=float)
    B = B[None] if B.ndim == 2 else B
    if B.ndim != 3 or B.shape[1] != B.shape[2]:
        raise ValueError(f"B must have shape (n, k, k) or (k, k); got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        i = int(np.flatnonzero(~np.isfinite(B).reshape(len(B), -1).all(axis=1))[0])
        raise ValueError(f"B contains NaN or infinite values (row {i})")
    return B


def ordering_cost(B, orders) -> np.ndarray:
    r"""Cost :math:`\sum_{a \text{ before } b} B_{ab}` of each order; shape (n,).

    Parameters
    ----------
    B : array-like of shape (n, k, k) or (k, k)
    orders : array-like of int, shape (n, k) or (k,)
        ``orders[i, t]`` is the item at position ``t`` (0 = first) of row ``i``.
    """
    B = _check_costs(B)
    orders = np.atleast_2d(np.asarray(orders))
    pos = np.argsort(orders, axis=1)
    before = pos[:, :, None] < pos[:, None, :]
    return np.einsum("ijk,ijk->i", B, before.astype(float))


@functools.cache
def _plan(s: int):
    """Index arrays of the DP's popcount layers r = 2..s (int32, cached per size).

    Per layer: the subsets ``T`` (L,), their members ``J`` (L, r) in increasing order, the
    position of ``T - {j}`` in layer r-1 (L, r), and for the column sums
    ``H[T, j] = sum_{a in T - {j}} B[a, j]`` the flat source ``H[T - {a0}, j]`` in layer r-1
    and the flat index of ``B[a0, j]``, with ``a0`` the smallest member of ``T`` other than j.
    """
    subsets = np.arange(1 << s)
    popcount = np.zeros(1 << s, dtype=np.int64)
    for j in range(s):
        popcount += (subsets >> j) & 1
    pos = np.zeros(1 << s, dtype=np.int64)  # position of each subset within its layer
    pos[1 << np.arange(s)] = np.arange(s)
    plan = []
    for r in range(2, s + 1):
        T = np.flatnonzero(popcount == r)
        pos[T] = np.arange(len(T))
        J = np.nonzero((T[:, None] >> np.arange(s)) & 1)[1].reshape(len(T), r)
        a0 = np.where(np.arange(r) == 0, J[:, [1]], J[:, [0]])
        h_src = pos[T[:, None] ^ (1 << a0)] * (r - 1) + np.maximum(np.arange(r) - 1, 0)
        plan.append(tuple(a.astype(np.int32) for a in (
            T, J, pos[T[:, None] ^ (1 << J)], h_src.ravel(), (a0 * s + J).ravel())))
    return plan


def _dp(B: np.ndarray) -> np.ndarray:
    """Exact orders (n, s) of a batch of cost matrices (n, s, s) by DP over subsets.

    Rows are the last axis of every table, so each gather moves n contiguous floats.
    """
    n, s, _ = B.shape
    Bt = B.transpose(1, 2, 0).reshape(s * s, n)
    H = np.zeros((s, n))  # layer 1: H[{j}, j] = 0
    f = np.zeros((s, n))  # f({j}) = 0
    last = np.zeros((1 << s, n), dtype=np.int8)  # the item placed last among each subset
    last[1 << np.arange(s)] = np.arange(s)[:, None]
    for T, J, pred, h_src, b_src in _plan(s):
        L, r = J.shape
        H = np.take(H, h_src, axis=0)
        H += np.take(Bt, b_src, axis=0)
        values = np.take(f, pred, axis=0)
        values += H.reshape(L, r, n)  # f(T - {j}) + cost of placing j last in T
        best = values.argmin(axis=1)
        f = np.take_along_axis(values, best[:, None, :], axis=1)[:, 0, :]
        last[T] = np.take_along_axis(J, best, axis=1)
    orders = np.empty((n, s), dtype=np.int64)
    S = np.full(n, (1 << s) - 1)
    for t in range(s - 1, -1, -1):
        j = last[S, np.arange(n)].astype(np.int64)
        orders[:, t] = j
        S ^= 1 << j
    return orders


def _dp_chunked(B: np.ndarray) -> np.ndarray:
    if B.shape[1] == 1:
        return np.zeros((len(B), 1), dtype=np.int64)
    chunk = max(1, _CHUNK_ELEMENTS // (1 << B.shape[1]))
    return np.concatenate([_dp(B[i:i + chunk]) for i in range(0, len(B), chunk)])


@functools.cache
def _transitivity(s: int):
    """Pair index of (a, b), a < b, and the 3-cycle constraint matrix for s items."""
    pairs = {p: i for i, p in enumerate(itertools.combinations(range(s), 2))}
    rows, cols, vals = [], [], []
    for t, (a, b, c) in enumerate(itertools.combinations(range(s), 3)):
        ab, bc, ac = pairs[a, b], pairs[b, c], pairs[a, c]
        rows += [2 * t] * 3 + [2 * t + 1] * 3
        cols += [ab, bc, ac, ab, bc, ac]
        vals += [1.0, 1.0, -1.0, -1.0, -1.0, 1.0]
    n_tri = math.comb(s, 3)
    A = sp.csr_array((vals, (rows, cols)), shape=(2 * n_tri, len(pairs)))
    ub = np.tile([1.0, 0.0], n_tri)
    iu = np.triu_indices(s, 1)
    return iu, LinearConstraint(A, -np.inf, ub)


def _milp(B: np.ndarray) -> np.ndarray:
    """Exact orders (n, s) by one HiGHS MILP per row (zero relative gap)."""
    n, s, _ = B.shape
    if s == 1:
        return np.zeros((n, 1), dtype=np.int64)
    iu, constraint = _transitivity(s)
    D = (B - B.transpose(0, 2, 1))[:, iu[0], iu[1]]
    orders = np.empty((n, s), dtype=np.int64)
    for i, c in enumerate(highs_costs(D)[0]):
        res = milp(c, constraints=constraint if s > 2 else None, integrality=np.ones(len(c)),
                   bounds=Bounds(0, 1), options={"mip_rel_gap": 0.0})
        if res.x is None or res.status != 0:
            raise RuntimeError(f"HiGHS did not solve the linear ordering MILP of row {i}: "
                               f"{res.message}")
        X = np.zeros((s, s))
        X[iu] = np.round(res.x)
        X.T[iu] = 1.0 - X[iu]
        orders[i] = np.argsort(X.sum(axis=0), kind="stable")  # items beaten by fewer first
    return orders


def dominating_blocks(wins: np.ndarray):
    """Items by decreasing wins and the start of every dominating block, per row, given
    ``wins[i, a, b]`` (a beats b, false on the diagonal); and the blocks as ``(rows, cols,
    sizes)``: the row, first sorted position and number of items of each."""
    n, k, _ = wins.shape
    order = np.argsort(-wins.sum(axis=2), axis=1, kind="stable")
    W = np.take_along_axis(np.take_along_axis(wins, order[:, :, None], axis=1),
                           order[:, None, :], axis=2)
    # cross[i, t] = wins of the first t sorted items over the others; t(k - t) when they
    # beat all of them, i.e. when a block ends before position t.
    cum = W.cumsum(axis=1).cumsum(axis=2)  # cum[i, t-1, u-1] = sum W[:t, :u]
    t = np.arange(1, k)
    cross = cum[:, t - 1, k - 1] - cum[:, t - 1, t - 1]
    starts = np.column_stack([np.ones((n, 1), dtype=bool), cross == t * (k - t)])
    rows, cols = np.nonzero(starts)
    ends = np.append(cols[1:], k)
    ends[np.append(rows[1:] != rows[:-1], True)] = k
    return order, starts, (rows, cols, ends - cols)


def linear_ordering(B, *, method: str = "auto", max_dp_size: int = MAX_DP_SIZE
                    ) -> CertifiedResult:
    r"""Exact minimisers of :math:`\sum_{a \text{ before } b} B_{ab}` over the orders of k items.

    Parameters
    ----------
    B : array-like of shape (n, k, k) or (k, k)
        One cost matrix per row; ``B[i, a, b]`` is the cost of placing item ``a`` before item
        ``b`` (the diagonal is ignored). Any sign.
    method : {"auto", "dp", "milp"}, default="auto"
        ``"auto"`` splits every row into blocks (module docstring) and solves each by dynamic
        programming if it has at most ``max_dp_size`` items, by MILP otherwise; ``"dp"`` and
        ``"milp"`` solve every row whole by that method.
    max_dp_size : int, default=16
        Largest block solved by dynamic programming (:math:`O(2^s s)` time per row: about
        8 ms at 16 items with random costs, HiGHS about 20 ms).

    Returns
    -------
    result : CertifiedResult
        ``solution`` (n, k) int: the items in order, first to last; ``value`` = ``bound`` (n,):
        the optimal cost; ``certified`` all True; ``method`` per row: ``"dp"`` or ``"milp"``
        (the largest block's method); ``info["largest_block"]`` (n,).

    Examples
    --------
    >>> B = [[0, 1, 5], [4, 0, 0], [1, 2, 0]]
    >>> linear_ordering(B).solution
    array([[2, 0, 1]])
    """
    B = _check_costs(B)
    if method not in ("auto", "dp", "milp"):
        raise ValueError(f"method must be 'auto', 'dp' or 'milp'; got {method!r}")
    if isinstance(max_dp_size, bool) or int(max_dp_size) != max_dp_size or max_dp_size < 1:
        raise ValueError(f"max_dp_size must be a positive integer; got {max_dp_size!r}")
    n, k, _ = B.shape
    B0 = B
    # An exact power-of-two scaling per row: invariant answers, no overflow or underflow.
    top = np.abs(B).reshape(n, -1).max(axis=1, initial=0.0)
    B = B / np.exp2(np.floor(np.log2(np.where(top > 0, top, 1.0))))[:, None, None]
    if method != "auto":
        orders = (_dp_chunked if method == "dp" else _milp)(B) if n else np.zeros((0, k), int)
        largest = np.full(n, k)
    else:
        orders, largest = _solve_blocks(B, max_dp_size)
    used = (np.where(largest > max_dp_size, "milp", "dp") if method == "auto"
            else np.full(n, method))
    value = ordering_cost(B0, orders)
    return CertifiedResult(orders, value, value.copy(), np.ones(n, dtype=bool), used,
                           {"largest_block": largest})


def _solve_blocks(B: np.ndarray, max_dp_size: int):
    n, k, _ = B.shape
    order, _, (rows, cols, sizes) = dominating_blocks(B < B.transpose(0, 2, 1))
    orders = order.copy()
    largest = np.ones(n, dtype=np.int64)
    for s in np.unique(sizes[sizes > 1]):
        sel = sizes == s
        r, c = rows[sel], cols[sel]
        items = order[r[:, None], c[:, None] + np.arange(s)]  # (blocks, s)
        sub = B[r[:, None, None], items[:, :, None], items[:, None, :]]
        local = (_dp_chunked if s <= max_dp_size else _milp)(sub)
        orders[r[:, None], c[:, None] + np.arange(s)] = np.take_along_axis(items, local, axis=1)
        np.maximum.at(largest, r, s)
    return orders, largest
