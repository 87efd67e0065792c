r"""The mixed-integer stage of the hierarchical-loss oracle (HiGHS ``milp``).

:func:`row_problem` writes a row's remaining problem over labels and products, tightened by
cover inequalities; :func:`solve_parts` solves the LP relaxation of a block of rows, keeps the
components whose labels come out integral (an integral relaxed optimum is optimal and the LP
is separable over the components) and sends one MILP per fractional component;
:func:`solve_milps`, the reference of the tests, sends every row with a fractional label
whole. Costs are scaled by a power of two per component (:func:`scale_parts`) so that HiGHS's
absolute optimality gap is relative.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["row_problem", "solve_milps", "solve_parts"]

# An LP solution's label within this of 0 or 1 counts as integral: stricter than the MILP's
# own integrality tolerance (HiGHS's mip_feasibility_tolerance, 1e-6), so no less exact.
_INTEGRAL = 1e-9


def row_problem(edges, of_product, c, p, free, products, anc=None):
    r"""MILP data ``(cost, A, ub, nodes)`` of one row: free labels, live products.

    With ``anc`` (the ancestor matrix, :meth:`Hierarchy.ancestors_matrix`) valid inequalities
    :math:`y_j \le z_k` are added for each positive product :math:`k` and each free label
    :math:`j` whose ancestors-or-self hold every free parent of :math:`m_k` (``j`` on switches
    them on, and the other parents are forced on, so :math:`\pi_k = 1`); only the minimal such
    ``j`` (no parent of ``j`` qualifies), as the others follow through the closure rows. They
    tighten the relaxation where :math:`z_k` is pushed down (it is exact on most rows).
    """
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
    r0 += len(k_pos)
    if anc is not None and len(k_pos):
        n = len(nodes)
        pos_owner, pos_q = owner[pos_pairs], q[pos_pairs]
        Q = sp.csr_array((np.ones(len(pos_q)), (pos_q, pos_owner)), shape=(n, len(products)))
        need = np.bincount(pos_owner, minlength=len(products))
        cover = np.asarray((anc[nodes][:, nodes] @ Q).toarray())  # free parents in A*(j)
        J = (cover == need) & (need > 0)
        up = sp.csr_array((np.ones(m), (local[E[:, 1]], local[E[:, 0]])), shape=(n, n))
        j_cut, k_cut = np.nonzero(J & ~(up @ J.astype(float) > 0))
        rows += [np.repeat(r0 + np.arange(len(j_cut)), 2)]
        cols += [np.column_stack([j_cut, n + k_cut]).ravel()]
        vals += [np.tile([1.0, -1.0], len(j_cut))]
        ub += [np.zeros(len(j_cut))]
        r0 += len(j_cut)
    n_var = len(nodes) + len(products)
    A = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(r0, n_var))
    cost = np.concatenate([c[nodes], p[products]])  # scaled: max|cost| in (2^19, 2^20]
    return scale_parts(cost, np.zeros(len(cost), dtype=np.intp)), A, np.concatenate(ub), nodes


def highs(problems, integer: bool, presolve: bool = True) -> np.ndarray:
    """The solution of the block-diagonal programme of ``problems`` (HiGHS through ``milp``):
    its LP relaxation, or with ``integer`` the MILP (labels integral, ``mip_rel_gap`` 0)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    cost = np.concatenate([c for c, _, _, _ in problems])
    A = sp.block_diag([a for _, a, _, _ in problems], format="csr")
    ub = np.concatenate([u for _, _, u, _ in problems])
    options: dict = {"presolve": presolve}
    integrality = None
    if integer:
        integrality = np.concatenate([np.r_[np.ones(len(nodes)), np.zeros(len(c) - len(nodes))]
                                      for c, _, _, nodes in problems])
        options["mip_rel_gap"] = 0.0
    res = milp(cost, constraints=LinearConstraint(A, -np.inf, ub), integrality=integrality,
               bounds=Bounds(0, 1), options=options)
    if res.status != 0:  # pragma: no cover - always feasible (y = 0) and bounded
        raise RuntimeError(f"HiGHS failed: {res.message}")
    return res.x


def solve_parts(problems, parts, d: int) -> np.ndarray:
    r"""Solve row problems by components: the LP of the block, then the MILP of what is left.

    ``parts[i]`` is the component of each variable of ``problems[i]`` (labels, then products);
    every constraint lies inside one component, so the block's LP relaxation is optimal on
    each component apart and a component whose labels come out integral (within
    ``_INTEGRAL``) is solved: its LP value is a lower bound that a feasible point attains.
    Only the fractional components go on, each to its own MILP. Each component's costs are
    scaled by a power of two to :math:`\max|c| \in (2^{19}, 2^{20}]` (exact), so that
    HiGHS's absolute tolerances are relative to the component; HiGHS's presolve is off (on
    these problems it costs more than it saves). Returns bool (rows, d).
    """
    problems = [(scale_parts(c, part), A, ub, nodes)
                for (c, A, ub, nodes), part in zip(problems, parts, strict=True)]
    Y = np.zeros((len(problems), d), dtype=bool)
    x = highs(problems, integer=False, presolve=False)
    left, where, offset = [], [], 0
    for row, ((c, A, ub, nodes), part) in enumerate(zip(problems, parts, strict=True)):
        y = x[offset : offset + len(nodes)]
        offset += len(c)
        fractional = np.unique(part[: len(nodes)][np.minimum(y, 1.0 - y) > _INTEGRAL])
        done = ~np.isin(part[: len(nodes)], fractional)
        Y[row, nodes[done]] = y[done] > 0.5
        for component in fractional:
            keep = part == component
            sub = A[:, keep].tocsr()
            inside = np.diff(sub.indptr) > 0  # the constraints of the component
            left.append((c[keep], sub[inside], ub[inside], nodes[keep[: len(nodes)]]))
            where.append(row)
    # one MILP per fractional component: HiGHS branches on a block-diagonal programme as a
    # whole, so hard components solved together multiply each other's search trees
    for row, problem in zip(where, left, strict=True):
        nodes = problem[3]
        Y[row, nodes] = highs([problem], integer=True, presolve=False)[: len(nodes)] > 0.5
    return Y


def scale_parts(cost: np.ndarray, part: np.ndarray) -> np.ndarray:
    """``cost`` with each component's entries scaled by a power of two to a maximum
    magnitude in :math:`(2^{19}, 2^{20}]` (a component of zero costs is left as is)."""
    uniq, inv = np.unique(part, return_inverse=True)
    top = np.zeros(len(uniq))
    np.maximum.at(top, inv, np.abs(cost))
    exponent = np.zeros(len(uniq))
    nonzero = top > 0
    exponent[nonzero] = 20 - np.ceil(np.log2(top[nonzero]))
    return cost * 2.0 ** exponent[inv]


def solve_milps(problems, d: int, relax_first: bool = True) -> np.ndarray:
    """Solve independent row problems as one block-diagonal HiGHS MILP; bool (rows, d).

    With ``relax_first``, the LP relaxation of the block is solved first: a row whose labels
    come out integral (within ``_INTEGRAL``) is a feasible point of its MILP at the value of a
    lower bound, hence optimal; only the other rows go on to the MILP.
    """
    Y = np.zeros((len(problems), d), dtype=bool)
    x, offset, left = highs(problems, integer=not relax_first), 0, []
    for row, (c, _, _, nodes) in enumerate(problems):
        y = x[offset : offset + len(nodes)]
        offset += len(c)
        if not relax_first or np.all(np.minimum(y, 1.0 - y) <= _INTEGRAL):
            Y[row, nodes] = y > 0.5
        else:
            left.append(row)
    if left:
        Y[left] = solve_milps([problems[i] for i in left], d, relax_first=False)
    return Y
