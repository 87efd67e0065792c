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

What is left splits into connected components (free labels linked to their free parents,
live products to theirs), solved apart (the objective is a constant plus one term per
component): one with no positive product left takes :math:`T'` (:math:`h` is constant there);
with numba (the ``fast`` extra) one of at most ``_BRANCH_MAX`` labels goes to the bit-set
branch and bound of :mod:`ecrm.spaces.hierarchy._branch`, a larger one (or one it left) to
the branch and bound with closure bounds of :mod:`ecrm.spaces.hierarchy._cut_branch`; without
numba one of at most ``_ENUMERATE`` labels is enumerated. The rest goes, per block of rows, to
a MILP (HiGHS, :mod:`ecrm.spaces.hierarchy._products_milp`) with costs scaled by a power of
two to :math:`\max|c| \in (2^{19}, 2^{20}]`, so that HiGHS's absolute gap (:math:`10^{-6}`)
is :math:`10^{-12}` relative.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ecrm.spaces.hierarchy import _branch, _cut_branch
from ecrm.spaces.hierarchy._closure import closure_argmin
from ecrm.spaces.hierarchy._products_milp import row_problem, solve_milps, solve_parts

__all__ = ["products_argmin"]

# Rows whose LP relaxations are solved together as one block-diagonal LP (amortises HiGHS's
# per-call overhead; the "rows" path also solves their MILP together).
_MILP_ROWS = 10
# Components of at most this many free labels are solved by enumeration, the others by MILP.
_ENUMERATE = 12
# Upper-lower pairs of the sandwich (each exact; later pairs charge fewer products).
_SANDWICH_ROUNDS = 1
# Components of up to _BRANCH_MAX free labels go to the bit-set branch and bound (stopped
# after _BRANCH_NODES nodes); beyond about 20 labels the closure bounds are faster (GO DAGs).
_BRANCH_MAX, _BRANCH_NODES = 20, 2**14
# Larger ones (and those left) up to _CUT_MAX labels go to the search with closure bounds,
# stopped after _CUT_NODES nodes (0: off; both searches are off when _BRANCH_MAX is 0), then
# to the MILP: on the hardest pheno_GO rows 2^14 nodes take about half HiGHS's time.
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
    stats = {} if stats is None else stats
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
        stats["branched"] = stats.get("branched", 0) + int(searched.sum()) - len(left)
    cut = big & (size <= _CUT_MAX) if most and _CUT_NODES else np.zeros_like(big)
    if cut.any():  # the search with closure bounds
        left = _cut_parts(cut, comp, arcs, r, j, h.depth, C, P, live, Y)
        big &= ~cut
        big[left] = True
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
            problems.append(row_problem(edges, of_product, C[i], P[i], free_big[i], products,
                                         anc))
            parts.append(comp[np.concatenate([node[i, problems[-1][3]], pnode[i, products]])])
        Y[block] |= (solve_parts(problems, parts, d) if _MILP_PATH == "parts"
                     else solve_milps(problems, d))
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
    ``(nodes, parts, start, local, links, pairs, pstart)``: their free nodes by component
    then depth, the components and where each starts in ``nodes``, each node's index in its
    component, the arcs ``(child, parent)`` and factors ``(product, factor)`` inside them
    (child, product: positions in ``nodes``, ``pairs``; parent, factor: local indices), and
    their live (row, product) pairs by component with where each component starts."""
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
    """Solve the components ``searched`` (bool, per component) in one call of
    :mod:`ecrm.spaces.hierarchy._branch` (arcs and products as bit masks); write the solved
    ones into ``Y`` and return the others (stopped after ``_BRANCH_NODES`` nodes)."""
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
    """:func:`_branch_parts` by :mod:`ecrm.spaces.hierarchy._cut_branch` (arcs and factors as
    lists of local indices; stopped after ``_CUT_NODES`` nodes)."""
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


@functools.cache
def _all_vectors(m: int) -> np.ndarray:
    """Every 0/1 vector of length ``m`` as the rows of a bool (2^m, m) array (cached)."""
    return (np.arange(2**m)[:, None] >> np.arange(m)) & 1 == 1
