r"""Compiled kernels of the DAG closure (numba): reductions, contraction, certified cut.

The compiled path of :mod:`ecrm.spaces.hierarchy._closure` (whose docstring states the
method), imported lazily when numba is installed (the ``fast`` extra); the scipy path there is
the reference of the tests. A kernel takes a whole block of rows (its (row, label) pairs form
one graph, the disjoint union of the rows' graphs): :func:`closure_block` runs
:func:`reduce_closure`, :func:`contract` and :func:`certified_cuts` (by the Dinic flow of
:func:`max_flow`) in one call, so a single row pays one dispatch. The first call compiles them
(about 10 s), later processes load them from the disk cache of
:mod:`ecrm.spaces.hierarchy._jit`. The kernels share this one module: numba's cache of a
function is renewed when the file that defines it changes, not when a function it calls
changes in another file. The helpers are inlined (``inline="always"``): a call between
kernels passes its arrays with reference counting, which costs more than these loops.
"""

from __future__ import annotations

import math

import numpy as np

from ecrm.spaces.hierarchy._jit import jit

try:
    import numba  # noqa: F401
except ImportError:  # optional: the module still imports (doctests), _closure does not use it
    AVAILABLE, _jit, _inline = False, (lambda f: f), (lambda f: f)
else:  # compiled once, then loaded from a disk cache (where one can be written: _jit)
    AVAILABLE, _jit, _inline = True, jit(), jit(inline="always")

__all__ = ["AVAILABLE"]


@_inline
def _find(rep, x):
    root = x
    while rep[root] != root:
        root = rep[root]
    while rep[x] != root:  # path compression
        rep[x], x = root, rep[x]
    return root


@_jit
def contract(c, child, parent):
    """Degree-one contractions until none applies (see ``_closure.contract``), one at a time
    on the whole problem.

    *up*: a node of cost ``<= 0`` with at most one parent joins it (or is on);
    *down*: a node of cost ``> 0`` with at most one child joins it (or is off).
    A merged node is tracked by union-find, so the arcs of a node swallowed by another are
    renamed for free; each node keeps linked lists of its parent and child arcs (one array
    per side, so both moves share one code path), spliced on a merge and cleaned of
    self-loops, duplicates and decided ends as they are scanned.
    Returns ``(group, gc, gchild, gparent)`` as ``_closure.contract`` does.
    """
    n, m = len(c), len(child)
    cost = c.astype(np.float64)
    rep = np.arange(n)
    state = np.zeros(n, np.int8)  # of a root: 0 live, 1 on, 2 off
    # arc lists of each node, side 0: its parent arcs (it is the child), side 1: its child
    # arcs; ends[0] / ends[1]: the arc's parent / child before any merge
    head, tail, nxt = np.full((2, n), -1), np.full((2, n), -1), np.full((2, m), -1)
    ends = np.empty((2, m), np.int64)
    for i in range(m - 1, -1, -1):
        a, b = child[i], parent[i]
        ends[0, i], ends[1, i] = b, a
        if head[0, a] < 0:
            tail[0, a] = i
        nxt[0, i], head[0, a] = head[0, a], i
        if head[1, b] < 0:
            tail[1, b] = i
        nxt[1, i], head[1, b] = head[1, b], i
    work = np.arange(n - 1, -1, -1)  # a stack of nodes to look at, each at most once
    queued = np.ones(n, np.bool_)
    top = n
    while top:
        top -= 1
        k = work[top]
        queued[k] = False
        if rep[k] != k or state[k] != 0:
            continue
        # up (side 0): cost <= 0, at most one parent; down (side 1): cost > 0, one child
        side = 0 if cost[k] <= 0 else 1
        count, into, prev, arc = 0, -1, -1, head[side, k]
        while arc >= 0:  # distinct live neighbours on that side, unlinking the dead arcs
            x = _find(rep, ends[side, arc])
            if x == k or state[x] != 0 or x == into:
                arc = nxt[side, arc]
                if prev < 0:
                    head[side, k] = arc
                else:
                    nxt[side, prev] = arc
                if arc < 0:
                    tail[side, k] = prev
                continue
            if count == 1:
                count = 2
                break
            count, into, prev, arc = 1, x, arc, nxt[side, arc]
        if count == 2:
            continue
        keep = 1 - side  # the move: the neighbours on the other side look again
        arc = head[keep, k]
        while arc >= 0:
            x = _find(rep, ends[keep, arc])
            if state[x] == 0 and x != k and not queued[x]:
                queued[x] = True
                work[top] = x
                top += 1
            arc = nxt[keep, arc]
        if count == 0:
            state[k] = 1 + side  # on (up) or off (down)
        else:
            rep[k] = into
            cost[into] += cost[k]
            if head[keep, k] >= 0:  # the arcs of k on that side become those of into
                if head[keep, into] < 0:
                    head[keep, into] = head[keep, k]
                else:
                    nxt[keep, tail[keep, into]] = head[keep, k]
                tail[keep, into] = tail[keep, k]
                head[keep, k] = -1
            if not queued[into]:
                queued[into] = True
                work[top] = into
                top += 1
    new = np.full(n, -3)
    size = 0
    for k in range(n):
        if rep[k] == k and state[k] == 0:
            new[k] = size
            size += 1
    group = np.empty(n, np.int64)
    for k in range(n):
        r = _find(rep, k)
        group[k] = new[r] if state[r] == 0 else -np.int64(state[r])
    gc = np.empty(size)
    seen = np.full(n, -1)  # the last group whose children were listed
    gchild, gparent, m_out = np.empty(m, np.int64), np.empty(m, np.int64), 0
    for k in range(n):
        if new[k] < 0:
            continue
        gc[new[k]] = cost[k]
        arc = head[1, k]
        while arc >= 0:
            x = _find(rep, ends[1, arc])
            if x != k and state[x] == 0 and seen[x] != k:
                seen[x] = k
                gchild[m_out], gparent[m_out] = new[x], new[k]
                m_out += 1
            arc = nxt[1, arc]
    return group, gc, gchild[:m_out], gparent[:m_out]


@_jit
def max_flow(n, s, t, tail, head, cap):
    """A maximum ``s``-``t`` flow (Dinic) on ``n`` nodes and int64 arcs ``tail -> head``.

    Returns ``(flow, reach)``: the flow on each arc and the nodes reachable from ``s`` in the
    residual network (the source side of the minimal minimum cut).
    """
    m = len(tail)
    start = np.zeros(n + 1, np.int64)
    for i in range(m):
        start[tail[i] + 1] += 1
        start[head[i] + 1] += 1
    for u in range(n):
        start[u + 1] += start[u]
    adj, fill = np.empty(2 * m, np.int64), start[:n].copy()
    to, res = np.empty(2 * m, np.int64), np.zeros(2 * m, np.int64)
    for i in range(m):  # half-arc 2i forward, 2i + 1 its reverse
        adj[fill[tail[i]]], adj[fill[head[i]]] = 2 * i, 2 * i + 1
        fill[tail[i]] += 1
        fill[head[i]] += 1
        to[2 * i], to[2 * i + 1], res[2 * i] = head[i], tail[i], cap[i]
    level, queue = np.empty(n, np.int64), np.empty(n, np.int64)
    it, path = np.empty(n, np.int64), np.empty(n, np.int64)
    while True:
        level[:] = -1  # BFS levels on the residual arcs
        level[s], queue[0], q0, q1 = 0, s, 0, 1
        while q0 < q1:
            u = queue[q0]
            q0 += 1
            for j in range(start[u], start[u + 1]):
                v = to[adj[j]]
                if res[adj[j]] > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    queue[q1] = v
                    q1 += 1
        if level[t] < 0:
            break
        it[:] = start[:n]
        depth, u = 0, s  # augmenting paths along the levels, by DFS with arc pointers
        while True:
            if u == t:
                pushed = res[path[0]]
                for j in range(1, depth):
                    pushed = min(pushed, res[path[j]])
                for j in range(depth):
                    res[path[j]] -= pushed
                    res[path[j] ^ 1] += pushed
                depth, u = 0, s
                continue
            while it[u] < start[u + 1]:
                a = adj[it[u]]
                if res[a] > 0 and level[to[a]] == level[u] + 1:
                    break
                it[u] += 1
            if it[u] < start[u + 1]:
                path[depth] = adj[it[u]]
                depth += 1
                u = to[adj[it[u]]]
            elif u == s:
                break
            else:  # a dead end: out of the level graph for this phase
                level[u] = -2
                depth -= 1
                u = to[path[depth] ^ 1]
                it[u] += 1
    flow = np.empty(m, np.int64)
    for i in range(m):
        flow[i] = res[2 * i + 1]
    return flow, level >= 0


@_jit
def _scale_exponent(budget, bound):
    """``floor(log2(budget / bound))`` exactly, for a power of two ``budget``."""
    m, e = math.frexp(bound)  # bound = m 2^e, 1/2 <= m < 1
    return int(math.frexp(budget)[1]) - 1 - int(e) + (1 if m == 0.5 else 0)


@_jit
def certified_cuts(c, child, parent, q_min, q_max):
    r"""Minimum-weight closure of a contracted problem by certified integer cuts.

    Per connected component: nothing positive, every node on; nothing negative, every node
    off; else the costs are scaled by :math:`2^k` with :math:`2^k \le Q / \min(\sum c^-,
    \sum c^+)` (:math:`Q` a power of two in ``[q_min, q_max]`` growing with the size),
    rounded down, and cut (:func:`max_flow`). The cut :math:`S` is certified as in
    ``_closure``: a flow with capacities rounded against the claim (the arcs leaving
    :math:`S` up, the others down, no arc entering :math:`S`) saturating every arc leaving
    :math:`S` proves it optimal for the float costs.

    Returns ``(on, comp, failed, n_cut)``: the answer per node, the component of each node,
    the components whose certificate failed, and the number cut by a flow.
    """
    n, m = len(c), len(child)
    rep = np.arange(n)
    for i in range(m):
        a, b = _find(rep, child[i]), _find(rep, parent[i])
        if a != b:
            rep[max(a, b)] = min(a, b)
    comp, n_comp = np.full(n, -1), 0
    for k in range(n):
        r = _find(rep, k)
        if comp[r] < 0:
            comp[r] = n_comp
            n_comp += 1
        comp[k] = comp[r]
    neg, pos, size = np.zeros(n_comp), np.zeros(n_comp), np.zeros(n_comp)
    for k in range(n):
        neg[comp[k]] += max(-c[k], 0.0)
        pos[comp[k]] += max(c[k], 0.0)
        size[comp[k]] += 1
    cut = (pos > 0) & (neg > 0)
    expo = np.zeros(n_comp, np.int64)  # the scale 2^expo of each component cut
    budget = np.zeros(n_comp)
    big = np.zeros(n_comp, np.int64)  # more than the component's flow can ever be
    for q in range(n_comp):
        if cut[q]:
            budget[q] = min(max(2.0 ** math.ceil(math.log2(size[q] * 2.0**16)), q_min), q_max)
            expo[q] = _scale_exponent(budget[q], min(neg[q], pos[q]))
            big[q] = 2 * np.int64(budget[q]) + 1
    down, up = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for k in range(n):  # node capacities, rounded down and up, at most "infinite"
        q = comp[k]
        if cut[q] and c[k] != 0:
            a = abs(c[k])
            bound = min(neg[q], pos[q])
            down[k] = np.int64(math.floor(math.ldexp(min(a, 2.0 * bound), expo[q])))
            up[k] = np.int64(min(math.ceil(math.ldexp(a, expo[q])), float(big[q])))
    # the cut: s -> j (c_j < 0), j -> t (c_j > 0), child -> parent "infinite"
    s, t = n, n + 1
    tail, head = np.empty(n + m, np.int64), np.empty(n + m, np.int64)
    cap = np.zeros(n + m, np.int64)
    for k in range(n):
        tail[k], head[k] = (s, k) if c[k] < 0 else (k, t)
        cap[k] = down[k]
    for i in range(m):
        tail[n + i], head[n + i] = child[i], parent[i]
        cap[n + i] = big[comp[child[i]]] if cut[comp[child[i]]] else 0
    S = max_flow(n + 2, s, t, tail, head, cap)[1][:n]
    # certificate: demands on the arcs leaving S, rounded up; no arc entering S
    demand = np.zeros(n, np.bool_)
    failed = np.zeros(n_comp, np.bool_)
    for k in range(n):
        if cut[comp[k]] and c[k] != 0 and (S[k] != (c[k] < 0)):
            demand[k] = True
            cap[k] = up[k]
            if up[k] > budget[comp[k]]:  # a cut above the budget cannot be optimal
                failed[comp[k]] = True
    for i in range(m):
        if S[parent[i]] and not S[child[i]]:
            cap[n + i] = 0
    flow = max_flow(n + 2, s, t, tail, head, cap)[0]
    on = np.zeros(n, np.bool_)
    for k in range(n):
        q = comp[k]
        if demand[k] and flow[k] < cap[k]:
            failed[q] = True
        on[k] = S[k] if cut[q] else pos[q] == 0
    return on, comp, np.flatnonzero(failed), int(cut.sum())


@_inline
def _force(j, par_ptr, par_idx, desc_ptr, desc_idx, c, f, unpaid, dirty, stack):
    """Force ``j`` (not forced) and its ancestors, by a search up the parents that stops at
    the labels forced already; a positive label forced is paid (``unpaid`` 0) and the tests
    below it are due again (``dirty``)."""
    f[j], stack[0], top = True, j, 1  # j is negative: nothing to pay
    while top:
        top -= 1
        x = stack[top]
        for i in range(par_ptr[x], par_ptr[x + 1]):
            a = par_idx[i]
            if f[a]:
                continue
            f[a], stack[top] = True, a
            top += 1
            if c[a] > 0:
                unpaid[a] = 0.0
                for k in range(desc_ptr[a], desc_ptr[a + 1]):
                    dirty[desc_idx[k]] = True


@_inline
def _reduce_row(anc_ptr, anc_idx, desc_ptr, desc_idx, par_ptr, par_idx, order, c, f, ok, cand,
                passes, at_once, new, stack, blocked, negative, open_, dirty):
    """The reductions of :func:`reduce_closure` on one row: ``f`` (forced, updated) and
    ``cand`` (written); the other arrays are scratch space of length ``d``.

    Forcing tests, in each pass, the open labels (negative, allowed, not forced) whose test
    is due: all of them at first, then those below a label paid (forced, positive) since
    their last test. With ``at_once`` a label that passes is forced at once, so the tests
    after it in the pass see its ancestors paid (fewer passes to the same fixpoint), else
    after the pass (the passes of the scipy path, whatever their number)."""
    d = len(c)
    n_open = 0
    for j in order:  # parents first: tested after them, a label often finds them forced
        if c[j] < 0 and ok[j] and not f[j]:
            open_[n_open] = j
            n_open += 1
            dirty[j] = True
        negative[j] = c[j] if c[j] > 0 and not f[j] else 0.0  # unpaid (while forcing)
    for _ in range(passes):
        n_new = 0
        for t in range(n_open):
            j = open_[t]
            if f[j] or not dirty[j]:  # forced in this pass, or the same test as last pass
                continue
            dirty[j] = False
            paid = True  # every parent forced: so is every ancestor, nothing left to pay
            for i in range(par_ptr[j], par_ptr[j + 1]):
                if not f[par_idx[i]]:
                    paid = False
                    break
            if not paid:
                above = c[j]  # with the unpaid positive costs of its ancestors
                for i in range(anc_ptr[j], anc_ptr[j + 1]):
                    above += negative[anc_idx[i]]
                    if above > 0:  # only grows
                        break
                if above > 0:
                    continue
            if at_once:
                _force(j, par_ptr, par_idx, desc_ptr, desc_idx, c, f, negative, dirty, stack)
            new[n_new] = j
            n_new += 1
        if n_new == 0:
            break
        for t in range(n_new):
            if not f[new[t]]:
                _force(new[t], par_ptr, par_idx, desc_ptr, desc_idx, c, f, negative, dirty,
                       stack)
        kept = 0
        for t in range(n_open):
            if not f[open_[t]]:
                open_[kept] = open_[t]
                kept += 1
        n_open = kept
    for j in range(d):
        negative[j] = min(c[j], 0.0) if ok[j] and not f[j] else 0.0
    # parents first: a label is blocked (off) below a switched-off one, else tested itself;
    # a label not allowed has no allowed descendant, a forced one no blocked parent
    for j in order:
        cand[j] = False
        if f[j] or not ok[j]:
            blocked[j] = not f[j]
            continue
        below = 0.0
        for i in range(par_ptr[j], par_ptr[j + 1]):
            if blocked[par_idx[i]]:
                below = 1.0
                break
        if below == 0.0:  # the switching-off test of j itself
            below = c[j] - negative[j]
            for i in range(desc_ptr[j], desc_ptr[j + 1]):
                below += negative[desc_idx[i]]
                if below < 0:  # only falls
                    break
        blocked[j] = below >= 0
        cand[j] = not blocked[j]


@_jit
def reduce_closure(anc_ptr, anc_idx, desc_ptr, desc_idx, par_ptr, par_idx, order, C, on,
                   allowed, passes, at_once=False):
    r"""The exact reductions of ``_closure.reduce_closure`` (forcing, then switching off),
    one row of the row-major costs ``C`` (n, d) at a time; ``on`` and ``allowed`` bool
    (n, d) as there. ``anc``/``desc``: the CSR patterns of the ancestors-or-self and the
    descendants-or-self of each label; ``par``: of the parents; ``order``: the labels,
    parents first.

    Forcing: :math:`j` (negative, allowed) and its ancestors when :math:`c_j + \sum_{a \in
    \mathcal A^*(j)} \max(c_a, 0) [a \text{ not forced}] \le 0`, repeated at most ``passes``
    times. Switching off: every label below a :math:`k` with :math:`c_k + \sum_{\mathcal
    D^*(k) \setminus k} \min(c, 0) \ge 0` (sums over the labels allowed and not forced),
    tested in the order ``order`` and only on the labels not below one found already.
    Both sums are monotone, so each stops once its sign is known. ``at_once``: a label
    that passes the forcing test is forced before the next test (the same forced labels
    once no pass finds any more; else those of the scipy path's passes).
    Returns ``(forced, cand)``, bool (n, d).
    """
    n, d = C.shape
    forced, cand = on.copy(), np.zeros((n, d), np.bool_)
    new, stack, open_ = np.empty(d, np.int64), np.empty(d, np.int64), np.empty(d, np.int64)
    blocked, dirty, negative = np.zeros(d, np.bool_), np.zeros(d, np.bool_), np.zeros(d)
    for r in range(n):
        _reduce_row(anc_ptr, anc_idx, desc_ptr, desc_idx, par_ptr, par_idx, order, C[r],
                    forced[r], allowed[r], cand[r], passes, at_once, new, stack, blocked,
                    negative, open_, dirty)
    return forced, cand


@_jit
def closure_block(anc_ptr, anc_idx, desc_ptr, desc_idx, par_ptr, par_idx, order, C, on,
                  allowed, passes, small_max, q_small, q_min, q_max):
    """The whole compiled closure of a block of rows in one call: :func:`reduce_closure`
    (forcing at once), :func:`contract` on the pairs (row, label) left with the arcs between
    them, then :func:`certified_cuts` on the groups left (at the budget ``q_small`` when there
    are at most ``small_max``, else between ``q_min`` and ``q_max``).

    Returns ``(Y, row, label, group, gc, gchild, gparent, on, comp, failed, n_cut)``: the
    answer (bool (n, d)), then what the caller needs to re-solve the components whose
    certificate failed (``failed``) and to count: the pairs left and their groups, the
    contracted problem, :func:`certified_cuts`'s answer per group and component of each.
    """
    Y, cand = reduce_closure(anc_ptr, anc_idx, desc_ptr, desc_idx, par_ptr, par_idx, order, C,
                             on, allowed, passes, True)
    n, d = C.shape
    N, M = 0, 0  # the pairs, and at most their arcs (their parents)
    for r in range(n):
        for j in range(d):
            if cand[r, j]:
                N += 1
                M += par_ptr[j + 1] - par_ptr[j]
    row, label, cost = np.empty(N, np.int64), np.empty(N, np.int64), np.empty(N)
    ident = np.empty(d, np.int64)  # the pair of each label of the row
    child, parent = np.empty(M, np.int64), np.empty(M, np.int64)
    k, M = 0, 0
    for r in range(n):
        first = k
        for j in range(d):
            if cand[r, j]:
                row[k], label[k], cost[k] = r, j, C[r, j]
                ident[j] = k
                k += 1
        for t in range(first, k):
            j = label[t]
            for i in range(par_ptr[j], par_ptr[j + 1]):
                p = par_idx[i]
                if cand[r, p]:
                    child[M], parent[M] = t, ident[p]
                    M += 1
    group, gc, gchild, gparent = contract(cost, child[:M], parent[:M])
    on_g, comp = np.zeros(len(gc), np.bool_), np.zeros(len(gc), np.int64)
    failed, n_cut = np.zeros(0, np.int64), 0
    if len(gc):
        if len(gc) <= small_max:
            q_min, q_max = q_small, q_small
        on_g, comp, failed, n_cut = certified_cuts(gc, gchild, gparent, q_min, q_max)
    for t in range(len(row)):
        g = group[t]
        if g == -1 or (g >= 0 and on_g[g]):
            Y[row[t], label[t]] = True
    return Y, row, label, group, gc, gchild, gparent, on_g, comp, failed, n_cut
