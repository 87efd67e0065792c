r"""The oracle of the hierarchical loss on a DAG: a closure with products of parents.

For each row solve

.. math:: \min_{y \in \mathcal Y} \sum_j c_j y_j + \sum_k p_k \prod_{q \in \mathcal P(m_k)} y_q

(:math:`m_k` the labels with several parents) by exact reductions and, for the rows where a
product is left, a mixed-integer programme (HiGHS ``milp``). The reductions, each keeping some
optimum, applied in this order:

1. **Forcing.** With :math:`u_a = \max(0, c_a) + \sum_{k: a \in \mathcal P(m_k)} \max(0, p_k)`
   (what switching :math:`a` on can cost at most) summed top-down over the paths to each label,
   a label with :math:`c_j < 0` and :math:`c_j + \sum_{k \ni j} \max(0, p_k) + \sum_{p \in
   \mathcal P(j)} U_p \le 0` is on with its ancestors in some optimum; repeated with the forced
   labels' costs taken as paid.
2. **Attraction.** A label can be on only if it is an ancestor-or-self of an *attractive* label
   (negative cost, or a parent of a product with negative cost).
3. **Switching off.** With :math:`D(j)` the descendants-or-self of an unforced :math:`j`,
   switching :math:`D(j)` off lowers the objective by at least
   :math:`c_j + \sum_{D(j) \setminus j} \min(0, c) + \sum_{q \in D(j)} \sum_{k \ni q}
   \min(0, p_k)`; when that is not negative, :math:`D(j)` can be off.

A row with no product left (a product is a constant once all its parents are forced, zero
once one is off) is a closure problem (:func:`ecrm.spaces.hierarchy._closure.closure_argmin`).
The MILP's costs are scaled per row by a power of two to :math:`\max|c| \in (2^{19}, 2^{20}]`,
so that HiGHS's absolute optimality gap (:math:`10^{-6}`) is :math:`10^{-12}` relative.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.hierarchy._closure import closure_argmin, sum_down, up_closure

__all__ = ["products_argmin"]

# Rows solved together as one block-diagonal MILP: amortises HiGHS's per-call overhead.
_MILP_ROWS = 10
_FORCING_PASSES = 4


def products_argmin(h, C: np.ndarray, P: np.ndarray, stats: dict | None = None) -> np.ndarray:
    """Exact minimisers (bool, (n, d)) for costs ``C`` (n, d) and product costs ``P`` (n, K)."""
    plan, edges = h._level_plan(), h.edges
    multi = h.multi_parent
    K, d = len(multi), h.n_labels
    n_parents = np.array([len(h.parents[m]) for m in multi])
    of_product = sp.csr_array(  # of_product[k, q] = 1 iff q is a parent of multi[k]
        (np.ones(n_parents.sum()), (np.repeat(np.arange(K), n_parents),
                                    np.concatenate([h.parents[m] for m in multi]))),
        shape=(K, d))
    A = h.ancestors_matrix().astype(float)
    # 1. forcing (node-major passes over the edges)
    G = C.T
    neg = G < 0
    product_cost = np.asarray(of_product.T @ np.maximum(P, 0.0).T)  # (d, n)
    forced = np.zeros(G.shape, dtype=bool)
    for _ in range(_FORCING_PASSES):
        unpaid = np.where(forced, 0.0, np.maximum(G, 0.0) + product_cost)
        above = sum_down(plan, unpaid) - unpaid
        new = neg & ~forced & (G + product_cost + above <= 0)
        if not new.any():
            break
        forced |= up_closure(plan, new)
    F = forced.T
    # 2. attraction, 3. switching off (exact descendant sums through the ancestor matrix)
    attractive = (C < 0) | (np.asarray((P < 0) @ of_product) > 0)
    negative = np.minimum(C, 0.0)
    gain = np.asarray((negative + np.minimum(P, 0.0) @ of_product) @ A)
    off_root = ((C + gain - negative) >= 0) & ~F
    off = np.asarray(off_root.astype(float) @ A.T) > 0
    free = (np.asarray(attractive.astype(float) @ A) > 0) & ~off & ~F
    # a product is live when all its parents can be on, at least one is free, and p != 0
    n_free = np.asarray(free.astype(float) @ of_product.T)
    n_open = np.asarray((free | F).astype(float) @ of_product.T)
    live = (n_open == n_parents) & (n_free > 0) & (P != 0)
    Y = F.copy()
    plain = ~live.any(axis=1)
    if plain.any():
        Y[plain] = closure_argmin(plan, edges, C[plain], on=F[plain], allowed=(free | F)[plain],
                                  stats=stats)
    hard = np.flatnonzero(~plain)
    for start in range(0, len(hard), _MILP_ROWS):
        block = hard[start : start + _MILP_ROWS]
        problems = [_row_problem(edges, of_product, C[i], P[i], free[i], np.flatnonzero(live[i]))
                    for i in block]
        Y[block] |= _solve_milps(problems, d)
    return Y


def _row_problem(edges, of_product, c, p, free, products):
    """MILP data ``(cost, A, ub, nodes, n_binary)`` of one row: free labels, live products."""
    nodes = np.flatnonzero(free)
    local = np.full(len(free), -1)
    local[nodes] = np.arange(len(nodes))
    E = edges[free[edges[:, 0]] & free[edges[:, 1]]]  # y_child - y_parent <= 0
    m = len(E)
    rows = [np.repeat(np.arange(m), 2)]
    cols = [np.column_stack([local[E[:, 1]], local[E[:, 0]]]).ravel()]
    vals = [np.tile([1.0, -1.0], m)]
    ub = [np.zeros(m)]
    sub = of_product[products].tocsr()  # parents of the live products
    owner = np.repeat(np.arange(len(products)), np.diff(sub.indptr))
    inside = free[sub.indices]  # forced parents are 1: they drop out of the product
    owner, q = owner[inside], local[sub.indices[inside]]
    z = len(nodes) + owner
    attract = p[products][owner] < 0
    # p_k < 0: z_k <= y_q for each free parent q (z_k is pushed up)
    k_neg = np.flatnonzero(attract)
    r0 = m
    rows += [np.repeat(r0 + np.arange(len(k_neg)), 2)]
    cols += [np.column_stack([z[k_neg], q[k_neg]]).ravel()]
    vals += [np.tile([1.0, -1.0], len(k_neg))]
    ub += [np.zeros(len(k_neg))]
    # p_k > 0: sum_q y_q - z_k <= (number of free parents) - 1 (z_k is pushed down)
    r0 += len(k_neg)
    k_pos = np.flatnonzero(p[products] > 0)
    row_of = np.full(len(products), -1)
    row_of[k_pos] = r0 + np.arange(len(k_pos))
    pos_pairs = np.flatnonzero(~attract)
    rows += [row_of[owner[pos_pairs]], row_of[k_pos]]
    cols += [q[pos_pairs], len(nodes) + k_pos]
    vals += [np.ones(len(pos_pairs)), -np.ones(len(k_pos))]
    ub += [np.bincount(owner[pos_pairs], minlength=len(products))[k_pos] - 1.0]
    n_var = len(nodes) + len(products)
    A = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(r0 + len(k_pos), n_var))
    cost = np.concatenate([c[nodes], p[products]])
    top = np.abs(cost).max(initial=0.0)
    if top > 0:  # a power of two: max|cost| in (2^19, 2^20]
        cost = cost * 2.0 ** (20 - np.ceil(np.log2(top)))
    return cost, A, np.concatenate(ub), nodes


def _solve_milps(problems, d: int) -> np.ndarray:
    """Solve independent row problems as one block-diagonal HiGHS MILP; bool (rows, d)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    cost = np.concatenate([c for c, _, _, _ in problems])
    A = sp.block_diag([a for _, a, _, _ in problems], format="csr")
    ub = np.concatenate([u for _, _, u, _ in problems])
    integrality = np.concatenate([np.r_[np.ones(len(nodes)), np.zeros(len(c) - len(nodes))]
                                  for c, _, _, nodes in problems])
    res = milp(cost, constraints=LinearConstraint(A, -np.inf, ub), integrality=integrality,
               bounds=Bounds(0, 1), options={"mip_rel_gap": 0.0})
    if res.status != 0:  # pragma: no cover - always feasible (y = 0) and bounded
        raise RuntimeError(f"HiGHS failed: {res.message}")
    Y = np.zeros((len(problems), d), dtype=bool)
    offset = 0
    for row, (c, _, _, nodes) in enumerate(problems):
        Y[row, nodes] = res.x[offset : offset + len(nodes)] > 0.5
        offset += len(c)
    return Y
