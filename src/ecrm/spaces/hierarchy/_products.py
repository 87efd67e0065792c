r"""The oracle of the hierarchical loss on a DAG: a closure with products of parents.

For each row solve

.. math:: \min_{y \in \mathcal Y} f(y) = \sum_j c_j y_j + \sum_k p_k \pi_k(y), \qquad
          \pi_k(y) = \prod_{q \in \mathcal P(m_k)} y_q

(:math:`m_k` the labels with several parents). Split :math:`f = g + h` with
:math:`g(y) = c^\top y + \sum_{p_k < 0} p_k \pi_k(y)` and :math:`h(y) = \sum_{p_k > 0} p_k
\pi_k(y)`. A product is supermodular, so :math:`g` is submodular on the lattice of closed
sets and :math:`\min g` is itself a closure problem: on the *augmented* DAG with one more node
:math:`z_k` per product, child of the parents of :math:`m_k` and of cost :math:`\min(p_k, 0)`
(at an optimum :math:`z_k = \pi_k(y)` when :math:`p_k < 0`). Only :math:`h` is hard (it makes
the problem NP-hard in general); it is nondecreasing. Two closures on the augmented DAG bound
the optimum from both sides (the *sandwich*), each keeping some optimum of :math:`f`:

1. **Upper closure (forcing).** Charge each positive product to every one of its parents that
   is still free, :math:`w_q = \sum_{k \ni q} \max(p_k, 0)`, and let :math:`T` minimise
   :math:`g + w^\top y`. For an optimum :math:`y`, :math:`h(y \cup T) - h(y) \le w(T
   \setminus y)` (a product that switches on has a parent in :math:`T \setminus y`) and, by
   submodularity and the optimality of :math:`T` against :math:`y \cap T`,
   :math:`g(y \cup T) - g(y) \le g(T) - g(y \cap T) \le -w(T \setminus y)`: so
   :math:`y \cup T` is optimal and :math:`T` can be switched on.
2. **Lower closure (switching off).** Let :math:`T'` minimise :math:`g` over the sets
   containing the forced ones. For an optimum :math:`y \supseteq T`,
   :math:`g(y \cap T') \le g(y) + g(T') - g(y \cup T') \le g(y)` and :math:`h(y \cap T') \le
   h(y)` (:math:`h` nondecreasing): so :math:`y \cap T'` is optimal and every label outside
   :math:`T'` can be off.

The order is: the lower closure alone (switching off; no label forced), then the upper closure
inside the interval it leaves, then the lower closure again with the new forced labels; the
arguments above hold verbatim on any interval known to hold an optimum, with only the
products that can still change charged (every parent allowed, one free), and only to their
free parents. (``_SANDWICH_ROUNDS`` upper-lower pairs; a second pair gave nothing more on
the GO DAGs.)

What is left is split into connected components (free labels linked to their free parents,
live products to theirs); on the interval the objective is a constant plus one term per
component, so each is solved apart: a component with no positive product left takes the
lower closure :math:`T'` (there :math:`h` is constant, and :math:`T'` minimises :math:`g`);
with numba (the ``fast`` extra) one of at most ``_BRANCH_MAX`` labels is searched by the
compiled branch and bound of :mod:`ecrm.spaces.hierarchy._branch` (exhaustive up to valid
bounds, or it stops after ``_BRANCH_NODES`` nodes and says so), a larger one (or one that
search left) by the branch and bound with closure bounds of
:mod:`ecrm.spaces.hierarchy._cut_branch` (the same, ``_CUT_NODES``); without numba a small one
(at most ``_ENUMERATE`` labels) is enumerated. The others go, per block of rows, to a
mixed-integer programme (HiGHS ``milp``) tightened by the cover inequalities of
:func:`_row_problem`: the LP relaxation of the block first, a component whose labels come out
integral being solved (an integral relaxed optimum is optimal, and the LP is separable over
the components), then one MILP per fractional component (:func:`_solve_parts`;
:func:`_solve_milps`, the reference of the tests, sends every row with a fractional label
whole). The programme's costs are scaled by a power of two to :math:`\max|c| \in (2^{19},
2^{20}]`, per row and then per component, so that HiGHS's absolute optimality gap
(:math:`10^{-6}`) is :math:`10^{-12}` relative.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ecrm.spaces.hierarchy import _branch, _cut_branch
from ecrm.spaces.hierarchy._closure import closure_argmin

__all__ = ["products_argmin"]

# Rows whose LP relaxations are solved together as one block-diagonal LP (amortises HiGHS's
# per-call overhead; the "rows" path also solves their MILP together).
_MILP_ROWS = 10
# An LP solution's label within this of 0 or 1 counts as integral: stricter than the MILP's
# own integrality tolerance (HiGHS's mip_feasibility_tolerance, 1e-6), so no less exact.
_INTEGRAL = 1e-9
# Components of at most this many free labels are solved by enumeration, the others by MILP.
_ENUMERATE = 12
# Upper-lower pairs of the sandwich (each exact; later pairs charge fewer products).
_SANDWICH_ROUNDS = 1
# Components of more free labels, up to this many (at most _branch.MAX_LABELS), are searched
# by the compiled branch and bound (numba), stopped after _BRANCH_NODES nodes (then the search
# below). Beyond about 20 labels the search with closure bounds is faster on the GO DAGs.
_BRANCH_MAX, _BRANCH_NODES = 20, 2**14
# The larger components (and those the search above left), up to _CUT_MAX free labels, are
# searched by the branch and bound with closure bounds, stopped after _CUT_NODES nodes (then
# the MILP; 0 turns it off). Both compiled searches are off when _BRANCH_MAX is 0. On the
# structured SVM's hardest pheno_GO rows the search ends within 2^14 nodes in about half
# the time HiGHS takes on what 2^11 nodes leave it.
_CUT_MAX, _CUT_NODES = 1000, 2**14
# "parts": the LP of a block, then the MILP on its fractional components only, each scaled
# apart, without HiGHS's presolve; "rows": the LP, then the MILP on every row with a
# fractional label (the reference of the tests).
_MILP_PATH = "parts"


def products_argmin(h, C: np.ndarray, P: np.ndarray, stats: dict | None = None) -> np.ndarray:
    """Exact minimisers (bool, (n, d)) for costs ``C`` (n, d) and product costs ``P`` (n, K).

    ``h._product_closure()`` gives the augmented DAG (labels, then one node per product) and
    ``of_product`` (K, d), ``of_product[k, q] = 1`` iff ``q`` is a parent of ``multi[k]``.
    """
    on, allowed, live, undecided = sandwich(h, C, P, stats)
    d = h.n_labels
    of_product = h._product_closure()[1]
    free = allowed[:, :d] & ~on[:, :d]
    Y = allowed[:, :d].copy()  # the answer of the parts with no positive product left
    node, comp, hard, size, arcs = _parts(h.edges, of_product, free, live, undecided)
    r, j = np.nonzero(free)
    in_hard = hard[comp[: len(r)]]
    Y[r[in_hard], j[in_hard]] = False  # decided below
    small = hard & (size <= _ENUMERATE)
    big = hard & (size > _ENUMERATE)
    most = min(_BRANCH_MAX, _branch.MAX_LABELS) if _branch.AVAILABLE else 0  # one bit each
    searched = hard & (size <= most)
    small &= ~searched
    if searched.any():  # the compiled search, small parts included
        big &= ~searched
        left = _branch_parts(searched, comp, arcs, r, j, h.depth, C, P, live, Y)
        big[left] = True
        if stats is not None:
            stats["branched"] = stats.get("branched", 0) + int(searched.sum()) - len(left)
    cut = big & (size <= _CUT_MAX) if most and _CUT_NODES else np.zeros_like(big)
    if cut.any():  # the search with closure bounds
        left = _cut_parts(cut, comp, arcs, r, j, h.depth, C, P, live, Y)
        big &= ~cut
        big[left] = True
        if stats is not None:
            stats["cut_branched"] = stats.get("cut_branched", 0) + int(cut.sum()) - len(left)
    small = np.flatnonzero(small)
    if len(small):
        _enumerate_parts(small, comp, r, j, h.parents, C, P, of_product, live, free, Y)
    big_label = big[comp[: len(r)]]
    free_big = np.zeros_like(free)
    free_big[r[big_label], j[big_label]] = True
    n_free_big = _per_product(of_product, free_big)
    live_big = live & (n_free_big > 0)
    rows = np.flatnonzero(free_big.any(axis=1))
    if stats is not None:
        stats["milp_rows"] = stats.get("milp_rows", 0) + len(rows)
        stats["enumerated"] = stats.get("enumerated", 0) + len(small)
    edges, anc = h.edges, h._level_plan().anc
    pnode = np.full(live.shape, -1, dtype=np.intp)  # the node of each live (row, product)
    pnode[live] = len(r) + np.arange(np.count_nonzero(live))
    for start in range(0, len(rows), _MILP_ROWS):
        block = rows[start : start + _MILP_ROWS]
        problems, parts = [], []
        for i in block:
            products = np.flatnonzero(live_big[i])
            problems.append(_row_problem(edges, of_product, C[i], P[i], free_big[i], products,
                                         anc))
            parts.append(comp[np.concatenate([node[i, problems[-1][3]], pnode[i, products]])])
        Y[block] |= (_solve_parts(problems, parts, d) if _MILP_PATH == "parts"
                     else _solve_milps(problems, d))
    return Y


def _parts(edges, of_product, free, live, undecided) -> tuple:
    """Independent parts of the problem left on the interval: connected components.

    Nodes are the free (row, label) pairs (numbered in the order of ``np.nonzero(free)``)
    followed by the live (row, product) pairs; a free label is linked to its free parents and
    a live product to its free parents. On the interval the objective is a constant plus one
    term per component (a product's free parents lie in one component), so the components are
    solved apart. Returns ``(node, comp, hard, size, arcs)``: the node of each free pair (-1
    elsewhere), the component of each node, whether a component holds an undecided (positive)
    product, its number of labels, and the links ``(child, parent, product, factor)``: the
    free arcs (child and parent nodes) and each live product's free parents (the product as
    its index among the live pairs, the parent as a node).
    """
    r, j = np.nonzero(free)
    N = len(r)
    node = np.full(free.shape, -1, dtype=np.intp)
    node[r, j] = np.arange(N)
    er, e = np.nonzero(free[:, edges[:, 0]] & free[:, edges[:, 1]])
    a, b = node[er, edges[e, 1]], node[er, edges[e, 0]]
    lr, lk = np.nonzero(live)
    counts = np.diff(of_product.indptr)[lk]
    owner = np.repeat(np.arange(len(lr)), counts)
    first = np.repeat(of_product.indptr[lk] - (np.cumsum(counts) - counts), counts)
    q = of_product.indices[first + np.arange(len(owner))]
    keep = free[lr[owner], q]
    arcs = (a, b, owner[keep], node[lr[owner[keep]], q[keep]])
    a = np.concatenate([a, N + arcs[2]])
    b = np.concatenate([b, arcs[3]])
    total = N + len(lr)
    n_comp, comp = connected_components(
        sp.csr_array((np.ones(len(a)), (a, b)), shape=(total, total)), directed=False)
    hard = np.zeros(n_comp, dtype=bool)
    hard[comp[N:][undecided[lr, lk]]] = True
    size = np.bincount(comp[:N], minlength=n_comp)
    return node, comp, hard, size, arcs


def _members(parts, comp, r, j, live):
    """``(row, labels, products)`` of each component of ``parts``: its row, its free labels
    (ascending) and its live products."""
    N = len(r)
    by_comp = np.argsort(comp[:N], kind="stable")
    first = np.searchsorted(comp[:N][by_comp], np.arange(comp.max(initial=0) + 2))
    lr, lk = np.nonzero(live)
    prod_by_comp = np.argsort(comp[N:], kind="stable")
    prod_first = np.searchsorted(comp[N:][prod_by_comp], np.arange(comp.max(initial=0) + 2))
    for part in parts:
        members = by_comp[first[part] : first[part + 1]]
        yield (r[members[0]], j[members],
               lk[prod_by_comp[prod_first[part] : prod_first[part + 1]]])


def _local(labels, products, parents, of_product, free_row, d):
    """The structure of one component on its labels numbered ``0..m-1`` in the order given:
    ``(child, parent, factors)``, its arcs (free parents only: the others are on) and the
    local free parents of each product."""
    local = np.full(d, -1, dtype=np.intp)
    local[labels] = np.arange(len(labels))
    child = np.repeat(np.arange(len(labels)), [len(parents[lab]) for lab in labels])
    parent = local[np.concatenate([parents[lab] for lab in labels])]
    inside = parent >= 0
    factors = []
    for k in products:
        q = of_product.indices[of_product.indptr[k] : of_product.indptr[k + 1]]
        factors.append(local[q[free_row[q]]])
    return child[inside], parent[inside], factors


def _enumerate_parts(parts, comp, r, j, parents, C, P, of_product, live, free, Y) -> None:
    """Solve small components by enumerating their label sets (at most ``2^_ENUMERATE``).

    Every 0/1 vector of the component's labels is scored, the inconsistent ones (a label on,
    a free parent off) excluded; a product counts when all its free parents are on (the
    others are forced on). The best consistent vector is written into ``Y``.
    """
    for row, labels, products in _members(parts, comp, r, j, live):
        B = _all_vectors(len(labels))
        child, parent, factors = _local(labels, products, parents, of_product, free[row],
                                        Y.shape[1])
        bad = np.any(B[:, child] & ~B[:, parent], axis=1)
        value = B @ C[row, labels]
        for k, q in zip(products, factors, strict=True):
            value = value + P[row, k] * B[:, q].all(axis=1)
        value[bad] = np.inf
        Y[row, labels] = B[int(np.argmin(value))]


def _pack(searched, comp, arcs, r, j, depth, n_live: int) -> tuple:
    """The components ``searched`` (bool, per component) laid out for a compiled search:
    ``(nodes, parts, start, local, links, pairs, pstart)``, their free (row, label) nodes
    by component then depth (parents first), the components, where each starts in
    ``nodes``, each node's index in its component, the free arcs ``(child, parent)`` and
    the product factors ``(product, factor)`` inside them (child and product as positions in
    ``nodes`` and ``pairs``, parent and factor as indices in their component), and their
    live (row, product) pairs by component with where each component's start."""
    N = len(r)
    child, parent, product, factor = arcs
    nodes = np.flatnonzero(searched[comp[:N]])
    nodes = nodes[np.lexsort((depth[j[nodes]], comp[nodes]))]  # by component, then depth
    parts, start = np.unique(comp[nodes], return_index=True)
    slot = np.full(N, -1, dtype=np.intp)  # a node's place in ``nodes``
    slot[nodes] = np.arange(len(nodes))
    local = np.arange(len(nodes)) - np.repeat(start, np.diff(np.append(start, len(nodes))))
    inside = slot[child] >= 0
    links = [slot[child[inside]], local[slot[parent[inside]]]]
    pairs = np.flatnonzero(searched[comp[N:]])  # the live products of these components
    pairs = pairs[np.argsort(comp[N + pairs], kind="stable")]
    pslot = np.full(n_live, -1, dtype=np.intp)
    pslot[pairs] = np.arange(len(pairs))
    inside = pslot[product] >= 0
    links += [pslot[product[inside]], local[slot[factor[inside]]]]
    pstart = np.searchsorted(comp[N + pairs], parts)
    return nodes, parts, start, local, links, pairs, pstart


def _branch_parts(searched, comp, arcs, r, j, depth, C, P, live, Y) -> np.ndarray:
    """Solve the components ``searched`` (bool, per component) by the compiled branch and
    bound of :mod:`ecrm.spaces.hierarchy._branch`, all in one call: each component's labels
    in order of depth (parents first), its arcs and products as bit masks. Writes the solved
    ones into ``Y`` and returns the others (stopped after ``_BRANCH_NODES`` nodes)."""
    lr, lk = np.nonzero(live)
    nodes, parts, start, local, (a, b, k, q), pairs, pstart = _pack(
        searched, comp, arcs, r, j, depth, len(lr))
    bit = np.uint64(1) << local.astype(np.uint64)  # a label's bit in its component
    parent_mask = np.zeros(len(nodes), dtype=np.uint64)
    np.bitwise_or.at(parent_mask, a, np.uint64(1) << b.astype(np.uint64))
    product_mask = np.zeros(len(pairs), dtype=np.uint64)
    np.bitwise_or.at(product_mask, k, np.uint64(1) << q.astype(np.uint64))
    masks, solved = _branch.search_parts(
        np.append(start, len(nodes)), C[r[nodes], j[nodes]], parent_mask,
        np.append(pstart, len(pairs)), product_mask, P[lr[pairs], lk[pairs]], _BRANCH_NODES)
    whose = np.repeat(np.arange(len(parts)), np.diff(np.append(start, len(nodes))))
    on = solved[whose] & ((masks[whose] & bit) != 0)
    Y[r[nodes[on]], j[nodes[on]]] = True
    return parts[~solved]


def _cut_parts(searched, comp, arcs, r, j, depth, C, P, live, Y) -> np.ndarray:
    """Solve the components ``searched`` (bool, per component) by the branch and bound with
    closure bounds of :mod:`ecrm.spaces.hierarchy._cut_branch`, all in one call: each
    component's labels in order of depth (parents first), its arcs and products' factors as
    lists of local indices. Writes the solved ones into ``Y`` and returns the others
    (stopped after ``_CUT_NODES`` nodes)."""
    lr, lk = np.nonzero(live)
    nodes, parts, start, local, (a, b, k, q), pairs, pstart = _pack(
        searched, comp, arcs, r, j, depth, len(lr))
    by = np.argsort(a, kind="stable")
    par_ptr = np.searchsorted(a[by], np.arange(len(nodes) + 1))
    by_k = np.argsort(k, kind="stable")
    fac_ptr = np.searchsorted(k[by_k], np.arange(len(pairs) + 1))
    y, solved, _ = _cut_branch.search_parts(
        np.append(start, len(nodes)), C[r[nodes], j[nodes]], par_ptr, b[by].astype(np.int64),
        np.append(pstart, len(pairs)), fac_ptr, q[by_k].astype(np.int64),
        P[lr[pairs], lk[pairs]], _CUT_NODES)
    whose = np.repeat(np.arange(len(parts)), np.diff(np.append(start, len(nodes))))
    on = solved[whose] & y
    Y[r[nodes[on]], j[nodes[on]]] = True
    return parts[~solved]


def sandwich(h, C: np.ndarray, P: np.ndarray, stats: dict | None = None) -> tuple:
    """The exact reductions of the module docstring (rounds of the upper and lower closures).

    Returns ``(on, allowed, live, undecided)``: ``on`` and ``allowed`` bool (n, d + K) on the
    augmented DAG, closed under parents, with some optimum ``y`` (its products appended) such
    that ``on <= y <= allowed``; ``live`` (n, K) the products not constant on that interval
    (nonzero, every parent allowed, one free); ``undecided = live & (P > 0)``. A row with
    no undecided product is solved by ``allowed[:, :d]``.
    """
    plus, of_product, parents_of = h._product_closure()
    plan, edges_plus = plus._level_plan(), plus.edges
    d = h.n_labels
    n_parents = np.diff(of_product.indptr)
    G = np.hstack([C, np.minimum(P, 0.0)])  # the costs of g on the augmented DAG
    # the lower closure first, on its own: the upper closure then only charges the products
    # whose parents can all be on
    allowed = closure_argmin(plan, edges_plus, G, stats=stats)
    on = np.zeros_like(allowed)
    charged = None
    for pair in range(_SANDWICH_ROUNDS + 1):
        free = allowed[:, :d] & ~on[:, :d]
        n_free = _per_product(of_product, free)
        n_open = _per_product(of_product, allowed[:, :d])
        live = (n_open == n_parents) & (n_free > 0) & (P != 0)
        undecided = live & (P > 0)
        now = np.where(undecided, P, 0.0)
        if pair == _SANDWICH_ROUNDS or (charged is not None and np.array_equal(now, charged)):
            break
        charged = now
        W = _per_product(parents_of, charged) * free  # each product charged to its free parents
        on = closure_argmin(plan, edges_plus, G + np.hstack([W, np.zeros_like(P)]), on=on,
                            allowed=allowed, stats=stats)
        allowed = closure_argmin(plan, edges_plus, G, on=on, allowed=allowed, stats=stats)
    return on, allowed, live, undecided


def _per_product(S, M: np.ndarray) -> np.ndarray:
    """``M @ S.T`` (n, K) for a sparse CSR ``S`` (K, d) and a dense ``M`` (n, d), as a
    sparse-times-dense product (a dense-times-sparse one transposes ``S`` on every call)."""
    return np.asarray(S @ np.asarray(M, dtype=float).T).T


_VECTORS: dict = {}


def _all_vectors(m: int) -> np.ndarray:
    """Every 0/1 vector of length ``m`` as the rows of a bool (2^m, m) array (cached)."""
    if m not in _VECTORS:
        _VECTORS[m] = (np.arange(2**m)[:, None] >> np.arange(m)) & 1 == 1
    return _VECTORS[m]


def _row_problem(edges, of_product, c, p, free, products, anc=None):
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
    cost = np.concatenate([c[nodes], p[products]])
    top = np.abs(cost).max(initial=0.0)
    if top > 0:  # a power of two: max|cost| in (2^19, 2^20]
        cost = cost * 2.0 ** (20 - np.ceil(np.log2(top)))
    return cost, A, np.concatenate(ub), nodes


def _highs(problems, integer: bool, presolve: bool = True) -> np.ndarray:
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


def _solve_parts(problems, parts, d: int) -> np.ndarray:
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
    problems = [(_scale_parts(c, part), A, ub, nodes)
                for (c, A, ub, nodes), part in zip(problems, parts, strict=True)]
    Y = np.zeros((len(problems), d), dtype=bool)
    x = _highs(problems, integer=False, presolve=False)
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
        Y[row, nodes] = _highs([problem], integer=True, presolve=False)[: len(nodes)] > 0.5
    return Y


def _scale_parts(cost: np.ndarray, part: np.ndarray) -> np.ndarray:
    """``cost`` with each component's entries scaled by a power of two to a maximum
    magnitude in :math:`(2^{19}, 2^{20}]` (a component of zero costs is left as is)."""
    uniq, inv = np.unique(part, return_inverse=True)
    top = np.zeros(len(uniq))
    np.maximum.at(top, inv, np.abs(cost))
    exponent = np.zeros(len(uniq))
    nonzero = top > 0
    exponent[nonzero] = 20 - np.ceil(np.log2(top[nonzero]))
    return cost * 2.0 ** exponent[inv]


def _solve_milps(problems, d: int, relax_first: bool = True) -> np.ndarray:
    """Solve independent row problems as one block-diagonal HiGHS MILP; bool (rows, d).

    With ``relax_first``, the LP relaxation of the block is solved first: a row whose labels
    come out integral (within ``_INTEGRAL``) is a feasible point of its MILP at the value of a
    lower bound, hence optimal; only the other rows go on to the MILP.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    cost = np.concatenate([c for c, _, _, _ in problems])
    A = sp.block_diag([a for _, a, _, _ in problems], format="csr")
    ub = np.concatenate([u for _, _, u, _ in problems])
    integrality = np.concatenate([np.r_[np.ones(len(nodes)), np.zeros(len(c) - len(nodes))]
                                  for c, _, _, nodes in problems])
    Y = np.zeros((len(problems), d), dtype=bool)
    if relax_first:
        res = milp(cost, constraints=LinearConstraint(A, -np.inf, ub), bounds=Bounds(0, 1))
        if res.status != 0:  # pragma: no cover - always feasible (y = 0) and bounded
            raise RuntimeError(f"HiGHS failed: {res.message}")
        left, offset = [], 0
        for row, (c, _, _, nodes) in enumerate(problems):
            x = res.x[offset : offset + len(nodes)]
            if np.all(np.minimum(x, 1.0 - x) <= _INTEGRAL):
                Y[row, nodes] = x > 0.5
            else:
                left.append(row)
            offset += len(c)
        if left:
            Y[left] = _solve_milps([problems[i] for i in left], d, relax_first=False)
        return Y
    res = milp(cost, constraints=LinearConstraint(A, -np.inf, ub), integrality=integrality,
               bounds=Bounds(0, 1), options={"mip_rel_gap": 0.0})
    if res.status != 0:  # pragma: no cover - always feasible (y = 0) and bounded
        raise RuntimeError(f"HiGHS failed: {res.message}")
    offset = 0
    for row, (c, _, _, nodes) in enumerate(problems):
        Y[row, nodes] = res.x[offset : offset + len(nodes)] > 0.5
        offset += len(c)
    return Y
