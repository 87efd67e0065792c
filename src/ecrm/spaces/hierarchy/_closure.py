r"""Exact minimum-weight closure on a DAG: reductions by sparse passes, then a certified min cut.

For a row of costs :math:`c` the problem is :math:`\min \sum_j c_j y_j` over label sets
closed under parents. :func:`closure_argmin` solves it for a block of rows in four steps.
Write :math:`\mathcal A^*(j)` and :math:`\mathcal D^*(j)` for the ancestors-or-self and the
descendants-or-self of :math:`j` (the cached matrix of the ancestor relation gives every sum
over them as one sparse product).

1. **Forcing** (exact reduction). For any optimum :math:`S` not containing :math:`j`, the set
   :math:`S \cup \mathcal A^*(j)` is closed and costs at most
   :math:`c_j + \sum_{a \in \mathcal A^*(j) \setminus j} \max(c_a, 0)` more; when that bound is
   :math:`\le 0` it is an optimum too, so :math:`\mathcal A^*(j)` is on in some optimum (the
   optimal closures form a lattice, so all such labels are on together in the largest one).
   Repeated with the costs of the labels already forced taken as paid (zero).
2. **Switching off** (exact reduction). For any optimum :math:`S \ni k`, the set
   :math:`S \setminus \mathcal D^*(k)` is closed (a down-set is removed) and costs
   :math:`-\sum_{\mathcal D^*(k) \cap S} c \le -(c_k + \sum_{\mathcal D^*(k) \setminus k}
   \min(c, 0))` more; when :math:`c_k + \sum_{\mathcal D^*(k)\setminus k} \min(c, 0) \ge 0`,
   :math:`\mathcal D^*(k)` is off in some optimum. A :math:`k` not forced has no forced
   descendant (the forced set is closed under parents), so both reductions hold at once: from
   any optimum, add every forced set, then remove every switched-off set. (A label with no
   negative descendant-or-self is switched off: its bound is :math:`c_k \ge 0`.)
3. **Contraction** (exact reduction, :func:`contract`). A label of cost :math:`\le 0` with
   at most one parent can follow it (on whenever its parent is), a label of cost
   :math:`> 0` with at most one child can follow that child; those arcs are contracted
   (all at once in vectorised rounds, then one at a time in Python on the small tail),
   until none applies. A forest vanishes entirely (this is the dynamic programme of a
   tree); on pheno_GO the 600-950 labels left per row by steps 1-2 at 30-50% negative
   costs become 20-40 groups (median; about 100 at the 95th percentile).
4. **Certified cut.** A small contracted problem is solved in exact integer arithmetic
   (:func:`ecrm.spaces.hierarchy._exact_flow.min_closure_exact`). A large one splits into
   connected components, each solved by a minimum s-t cut (Picard, 1976) on integer
   capacities (the costs scaled by a power of two to a budget :math:`Q`, rounded down). The
   cut :math:`S` is then *certified on the original costs*: it is optimal iff some flow
   saturates every arc leaving :math:`S` while using no arc entering it, searched with
   capacities rounded against the claim (:mod:`ecrm.spaces.hierarchy._certified_cut`). A
   component whose certificate fails (a near-tie finer than the rounding) is re-solved
   exactly in integer arithmetic.

The contracted costs are sums of the labels' costs, so the answer is exact up to the
rounding of those sums (as for the dynamic programme on trees).

When numba imports (``_ENGINE``), the whole closure of a block of rows runs in one compiled
call (:mod:`ecrm.spaces.hierarchy._compiled`, the ``fast`` extra) with the same budgets (the
same integer problems), except that a small problem is cut once at the budget ``_Q_SMALL``
instead of going to the exact flow; only the components whose certificate fails come back
to Python. The scipy path stays the reference of the tests. Every step works on blocks of
rows, with memory :math:`O(\text{rows} \times (d + E))`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.hierarchy._certified_cut import resolve_exact, scipy_cuts
from ecrm.spaces.hierarchy._exact_flow import min_closure_exact

__all__ = ["LevelPlan", "closure_argmin", "make_level_plan"]

# Integer budget of the cut: a component's capacities are scaled so that its flow is at most
# its budget Q (between 2^22 and 2^27, growing with its size; see _certified_cut).
_Q_MIN, _Q_MAX = 2**22, 2**27
# Forcing is repeated while it finds new labels, at most this many times (each pass is exact;
# more only shrink the cut). The compiled path repeats it until nothing is new (its passes
# test only the labels below one newly paid: 6-16% less time per row on the GO DAGs).
_FORCING_PASSES = 6
# contract: vectorised rounds down to this many groups, or while a round removes at least
# this share of them; then the moves one at a time in Python if at most _SEQUENTIAL_MAX left
_SEQUENTIAL, _ROUND_GAIN, _SEQUENTIAL_MAX = 400, 0.05, 4000
# A contracted problem of at most this many groups goes straight to the exact integer flow
# (on the compiled path: to one certified cut at the budget _Q_SMALL, 150 * 2^52 < 2^63).
_SMALL_EXACT = 150
_Q_SMALL = 2**52
# "auto": the compiled path when numba imports, else scipy; "scipy" or "numba" to choose.
_ENGINE = "auto"


@functools.cache
def _import_compiled():
    from ecrm.spaces.hierarchy import _compiled

    return _compiled if _compiled.AVAILABLE else None  # numba is an optional extra


def _kernels():
    """The compiled kernels, or None for the scipy path (see ``_ENGINE``)."""
    if _ENGINE == "scipy":
        return None
    kernels = _import_compiled()
    if kernels is None and _ENGINE == "numba":
        raise ImportError("the compiled closure needs numba: pip install 'ecrm[fast]'")
    return kernels


@dataclass(frozen=True)
class LevelPlan:
    """The edges grouped by the depth of their child, for passes over the edges in order.

    ``levels[L - 1] = (nodes, ups, K, KT)``: the labels of depth ``L``, the union of their
    parents, the 0/1 matrix ``K`` (len(nodes), len(ups)) with ``K[a, b] = 1`` iff ``ups[b]`` is
    a parent of ``nodes[a]``, and its transpose (CSR). ``depth`` is the depth of each label.
    ``anc`` (float CSR, (d, d)): ``anc[j, k] = 1`` iff ``k`` is an ancestor-or-self of ``j``,
    so ``anc @ v`` sums ``v`` over each label's ancestors-or-self and ``desc @ v``
    (``desc = anc.T``, CSR) over its descendants-or-self, each in one sparse product.
    ``par_ptr``, ``par_idx``: the parents of each label (CSR pattern), and ``order`` the labels
    parents first, for the compiled path.
    """

    levels: tuple
    depth: np.ndarray
    anc: sp.csr_array
    desc: sp.csr_array
    par_ptr: np.ndarray
    par_idx: np.ndarray
    order: np.ndarray


def make_level_plan(parents: tuple, depth: np.ndarray, ancestors: sp.csr_array) -> LevelPlan:
    levels = []
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max(initial=0)) + 2))
    for L in range(1, int(depth.max(initial=0)) + 1):
        nodes = by_depth[bounds[L] : bounds[L + 1]]
        counts = np.array([len(parents[j]) for j in nodes])
        par = np.concatenate([parents[j] for j in nodes])
        ups, col = np.unique(par, return_inverse=True)
        K = sp.csr_array((np.ones(len(par)), (np.repeat(np.arange(len(nodes)), counts), col)),
                         shape=(len(nodes), len(ups)))
        levels.append((nodes, ups, K, K.T.tocsr()))
    anc = sp.csr_array(ancestors, dtype=float)
    par_ptr = np.concatenate([[0], np.cumsum([len(p) for p in parents])]).astype(np.intp)
    par_idx = np.concatenate([np.zeros(0, dtype=np.intp), *parents]).astype(np.intp)
    return LevelPlan(tuple(levels), depth, anc, anc.T.tocsr(), par_ptr, par_idx, by_depth)


def sum_down(plan: LevelPlan, V: np.ndarray) -> np.ndarray:
    """``U_j = V_j + sum_{p parent of j} U_p`` for node-major ``V`` (d, n); a new array."""
    U = np.array(V, dtype=float)
    for nodes, ups, K, _ in plan.levels:
        U[nodes] += K @ U[ups]
    return U


def up_closure(plan: LevelPlan, M: np.ndarray) -> np.ndarray:
    """Node-major boolean ``M`` (d, n) with every ancestor of a true entry set true."""
    M = np.array(M, dtype=bool)
    for nodes, ups, _, KT in reversed(plan.levels):
        M[ups] |= (KT @ M[nodes].astype(float)) > 0
    return M


def closure_argmin(plan: LevelPlan, edges: np.ndarray, C: np.ndarray, on=None, allowed=None,
                   stats: dict | None = None) -> np.ndarray:
    """Minimum-weight closures of the rows of ``C`` (n, d); returns a bool array (n, d).

    ``on`` (n, d), closed under parents: labels that must be on (their costs are taken as
    paid). ``allowed`` (n, d), closed under parents: the only labels that may be on (default
    all). ``stats`` (optional) counts the cut components and the exact re-solves.
    """
    fast = _kernels()
    if fast is not None:
        return _compiled_argmin(fast, plan, C, on, allowed, stats)
    G = np.ascontiguousarray(C.T)  # node-major (d, n)
    Y, cand = reduce_closure(plan, G, on, allowed)  # Y: the forced labels
    rows = np.flatnonzero(cand.any(axis=0))
    if len(rows):  # the cut on what is left
        Y[:, rows] |= _cut(cand[:, rows], G[:, rows], edges, stats)
    return Y.T


def _compiled_argmin(fast, plan: LevelPlan, C: np.ndarray, on, allowed, stats) -> np.ndarray:
    """:func:`closure_argmin` on the compiled path: the reductions, the contraction and the
    certified cut in one call over the block (no per-row work in Python); the components
    whose certificate failed are re-solved here in exact arithmetic."""
    shape = C.shape
    Y, row, label, group, gc, child, parent, on_g, comp, failed, n_cut = fast.closure_block(
        plan.anc.indptr, plan.anc.indices, plan.desc.indptr, plan.desc.indices,
        plan.par_ptr, plan.par_idx, plan.order, np.ascontiguousarray(C, dtype=float),
        np.zeros(shape, dtype=bool) if on is None else np.ascontiguousarray(on, dtype=bool),
        np.ones(shape, dtype=bool) if allowed is None
        else np.ascontiguousarray(allowed, dtype=bool), shape[1] + 1, _SMALL_EXACT,
        float(_Q_SMALL), float(_Q_MIN), float(_Q_MAX))
    if len(failed):
        resolve_exact(on_g, gc, child, parent, comp, failed)
        grouped = group >= 0
        Y[row[grouped], label[grouped]] = on_g[group[grouped]]
    if len(gc):
        _count(stats, len(gc) <= _SMALL_EXACT, n_cut, len(failed))
    return Y


def reduce_closure(plan: LevelPlan, G: np.ndarray, on=None, allowed=None) -> tuple:
    """The exact reductions 1-2 of the module docstring, on node-major costs ``G`` (d, n).

    Returns ``(forced, cand)``, bool (d, n): some optimum (among the closures containing ``on``
    and inside ``allowed``, row-major (n, d) as in :func:`closure_argmin`) contains
    ``forced`` (closed under parents) and lies inside ``forced | cand``; ``cand`` is what the
    cut decides.
    """
    ok = np.ones(G.shape, dtype=bool) if allowed is None else np.asarray(allowed.T, dtype=bool)
    forced = np.zeros(G.shape, dtype=bool) if on is None else np.array(on.T, dtype=bool)
    fast = _kernels()
    if fast is not None:
        forced, cand = fast.reduce_closure(
            plan.anc.indptr, plan.anc.indices, plan.desc.indptr, plan.desc.indices,
            plan.par_ptr, plan.par_idx, plan.order, np.ascontiguousarray(G.T, dtype=float),
            np.ascontiguousarray(forced.T), np.ascontiguousarray(ok.T),
            _FORCING_PASSES)  # row-major: one row contiguous
        return forced.T, cand.T
    neg = (G < 0) & ok
    positive = np.maximum(G, 0.0)
    for _ in range(_FORCING_PASSES):  # 1. forcing, over exact ancestor sets
        above = plan.anc @ np.where(forced, 0.0, positive)  # unpaid cost of A*(j)
        new = neg & ~forced & (G + above <= 0)
        if not new.any():
            break
        forced |= (plan.desc @ new.astype(float)) > 0  # with their ancestors
    # 2. switching off: k's bound c_k + sum over D*(k) \ k of min(c, 0), then D*(k) off
    negative = np.where(ok & ~forced, np.minimum(G, 0.0), 0.0)
    root = ~forced & (G - negative + plan.desc @ negative >= 0)
    cand = ok & ~forced & ((plan.anc @ root.astype(float)) == 0)
    return forced, cand


def _cut(cand: np.ndarray, G: np.ndarray, edges: np.ndarray, stats) -> np.ndarray:
    """Closures of the candidate subgraphs (node-major ``cand``, ``G``), one per column.

    The (row, label) pairs left are contracted (:func:`contract`), and the groups left over
    are solved by certified cuts.
    """
    row, lab = np.nonzero(cand.T)
    N = len(lab)
    ident = np.full(cand.shape, -1, dtype=np.intp)
    ident[lab, row] = np.arange(N)
    r, e = np.nonzero((cand[edges[:, 1]] & cand[edges[:, 0]]).T)
    group, c, child, parent = contract(G[lab, row], ident[edges[e, 1], r], ident[edges[e, 0], r])
    on = group == -1
    if len(c):
        grouped = group >= 0
        on[grouped] = _cut_groups(c, child, parent, stats)[group[grouped]]
    Y = np.zeros(cand.shape, dtype=bool)
    Y[lab[on], row[on]] = True
    return Y


def contract(c: np.ndarray, child: np.ndarray, parent: np.ndarray) -> tuple:
    """Exact degree-one contractions of a closure problem, repeated until none applies.

    The nodes carry costs ``c``; the arcs ``child[i] -> parent[i]`` say ``y_child <=
    y_parent``. Two moves never raise the cost of a closed set and keep it closed:

    * *up*: a node ``k`` with ``c_k <= 0`` and at most one parent ``p``: switch ``k`` on
      when ``p`` is (or always, without a parent), so ``y_k = y_p`` (``y_k = 1``);
    * *down*: a node ``j`` with ``c_j > 0`` and at most one child ``k``: switch ``j`` off
      when ``k`` is (or always, without a child), so ``y_j = y_k`` (``y_j = 0``).

    Up moves only switch on nodes of cost ``<= 0`` and down moves only switch off nodes of
    cost ``> 0``, so from any optimum the moves, applied while some relation is violated,
    reach an optimum satisfying *all* the relations of a round at once (a switch-on of ``k``
    can only break the relations of its up-children, a switch-off of ``j`` those of its
    down-parents, so the process ends). Hence all those arcs are contracted together: a
    group is on, off, or one node of cost the sum of its members' costs. A chain of up
    pointers climbs, of down pointers descends, and an up step next to a down step is the
    same arc seen from both ends (a 2-cycle of pointers), so the groups are found by pointer
    jumping. A group holding a node without parents (up) is on and has no other parents; one
    holding a node without children (down) is off and has no other children; contracting an
    arc into a node with one parent (or out of a node with one child) leaves a DAG.

    Vectorised rounds run while the problem is large and a round still removes a good share
    of it; a tail of at most ``_SEQUENTIAL_MAX`` groups is finished one move at a time.

    Returns ``(group, gc, gchild, gparent)``: the group of each node (``-1`` on, ``-2`` off),
    the groups' costs and their distinct arcs.
    """
    group = np.arange(len(c))
    gc, a, b = np.asarray(c, dtype=float), np.asarray(child), np.asarray(parent)
    while len(gc) > _SEQUENTIAL:  # vectorised rounds while they pay
        n = len(gc)
        step = _contract_round(gc, a, b)
        if step is None:
            return group, gc, a, b
        label, gc, a, b = step
        decided = group >= 0
        group[decided] = label[group[decided]]
        if len(gc) > (1.0 - _ROUND_GAIN) * n:
            break
    if 0 < len(gc) <= _SEQUENTIAL_MAX:  # the tail, one move at a time
        label, gc, a, b = _contract_sequential(gc, a, b)
        decided = group >= 0
        group[decided] = label[group[decided]]
    return group, gc, a, b


def _contract_round(gc, a, b):
    """One round of :func:`contract`: every move at once. ``(label, gc, a, b)`` (the new
    group of each group, -1 on, -2 off; the new costs and arcs), or None if no move applies."""
    n = len(gc)
    indeg = np.bincount(a, minlength=n)
    outdeg = np.bincount(b, minlength=n)
    up = (gc <= 0) & (indeg <= 1)
    down = (gc > 0) & (outdeg <= 1)
    if not (up.any() or down.any()):
        return None
    on, off = n, n + 1  # the always-on root and the always-off sink
    ptr = np.arange(n + 2)
    ptr[:n][up & (indeg == 0)] = on
    ptr[:n][down & (outdeg == 0)] = off
    u = up[a]  # arcs into an up node: its only parent
    ptr[a[u]] = b[u]
    v = down[b]  # arcs out of a down node: its only child
    ptr[b[v]] = a[v]
    ids = np.arange(n + 2)
    pair = (ptr[ptr] == ids) & (ptr != ids)  # an arc seen from both ends
    ptr[pair & (ids < ptr)] = ids[pair & (ids < ptr)]
    while True:  # pointer jumping: every node to the root of its group
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    rep = ptr[:n]
    roots = np.flatnonzero(rep == ids[:n])  # a group is named by its root
    m = len(roots)
    new = np.empty(n + 2, dtype=np.intp)
    new[on], new[off] = -1, -2
    new[roots] = np.arange(m)
    label = new[rep]
    keep = label >= 0
    gc = np.bincount(label[keep], gc[keep], minlength=m)
    size = np.bincount(label[keep], minlength=m)
    a, b = label[a], label[b]
    live = (a >= 0) & (b >= 0) & (a != b)
    a, b = a[live], b[live]
    # only arcs at a group of several nodes can repeat: keep one of each
    touched = (size[a] > 1) | (size[b] > 1)
    if touched.any():
        pairs = np.unique(a[touched] * m + b[touched])
        a = np.concatenate([a[~touched], pairs // m])
        b = np.concatenate([b[~touched], pairs % m])
    return label, gc, a, b


def _contract_sequential(gc, a, b):
    """The moves of :func:`contract` one at a time, in plain Python (fast on small graphs,
    where a vectorised round costs more in overhead than in work); same return value as
    :func:`_contract_round`, with nothing left to contract."""
    n = len(gc)
    cost = gc.tolist()
    par: list = [set() for _ in range(n)]
    chi: list = [set() for _ in range(n)]
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        par[x].add(y)
        chi[y].add(x)
    into = list(range(n))  # merged into (a node of the same group), or -1 on, -2 off
    alive = [True] * n
    work = list(range(n))

    def merge(k, target, others, near, far, end):
        """Merge ``k`` into its only ``target`` (parent: up; child: down), or decide it
        (``end``); ``near`` holds the sets of ``others`` that point back to ``k``."""
        alive[k] = False
        if target:
            (p,) = target
            into[k] = p
            cost[p] += cost[k]
            far[p].discard(k)
            for x in others:
                near[x].discard(k)
                near[x].add(p)
                far[p].add(x)
            work.append(p)
        else:
            into[k] = end
            for x in others:
                near[x].discard(k)
        work.extend(others)

    while work:
        k = work.pop()
        if not alive[k]:
            continue
        if cost[k] <= 0 and len(par[k]) <= 1:  # up: on with its only parent (or always)
            merge(k, par[k], chi[k], par, chi, -1)
        elif cost[k] > 0 and len(chi[k]) <= 1:  # down: off with its only child (or always)
            merge(k, chi[k], par[k], chi, par, -2)
    live = [k for k in range(n) if alive[k]]
    new = [-3] * n
    for i, k in enumerate(live):
        new[k] = i
    label = [0] * n
    for k in range(n):  # follow the merges (each points to a node merged later, or alive)
        t = k
        while t >= 0 and new[t] == -3:
            t = into[t]
        label[k] = t if t < 0 else new[t]
    arcs = [(new[x], new[k]) for k in live for x in chi[k]]
    child = np.array([x for x, _ in arcs], dtype=np.intp)
    parent = np.array([y for _, y in arcs], dtype=np.intp)
    return (np.array(label, dtype=np.intp), np.array([cost[k] for k in live], dtype=float),
            child, parent)


def _cut_groups(c: np.ndarray, child: np.ndarray, parent: np.ndarray, stats) -> np.ndarray:
    """Minimum-weight closure of a contracted problem by certified cuts on its connected
    components; bool per node. A small problem is solved at once in exact arithmetic instead
    (:func:`min_closure_exact`): cheaper than the calls of the cut and its certificate."""
    small = len(c) <= _SMALL_EXACT
    if small:
        _count(stats, small, 0, 0)
        return min_closure_exact(c, child, parent)
    on, comp, failed, n_cut = scipy_cuts(c, child, parent, _Q_MIN, _Q_MAX)
    if len(failed):  # re-solve exactly, one component at a time
        resolve_exact(on, c, child, parent, comp, failed)
    _count(stats, small, n_cut, len(failed))
    return on


def _count(stats, small: bool, n_cut: int, n_failed: int) -> None:
    """Count a contracted problem in ``stats`` (if given): ``small`` ones, the components
    cut (of the others) and the exact re-solves."""
    if stats is None:
        return
    key, count = ("small", 1) if small else ("components", n_cut)
    stats[key] = stats.get(key, 0) + count
    if n_failed or not small:
        stats["exact"] = stats.get("exact", 0) + n_failed
