r"""Branch and bound with closure bounds for the large parts of the hierarchical-loss oracle.

:mod:`ecrm.spaces.hierarchy._products` leaves connected parts of a row to solve apart:
:math:`\min f(y) = \sum_j c_j y_j + \sum_k p_k \pi_k(y)`, :math:`\pi_k(y) = \prod_{q \in F_k}
y_q`, over the label sets of the part closed under its parents. The bit-set search of
:mod:`ecrm.spaces.hierarchy._branch` bounds a node by its negative costs only, which is too weak
beyond a few dozen labels; here each node of a depth-first search is bounded by a *closure*.

Node and bound. A node fixes some labels on (with their ancestors) and some off (with their
descendants); :math:`O` is the set on. A product with a parent off is 0, one with every parent
in :math:`O` is :math:`p_k`; on the free labels :math:`R_k` of another, :math:`\pi_k \ge \ell_k`
with :math:`\ell_k = y_q` when :math:`R_k = \{q\}` (exact), else :math:`\ell_k = y_{j_k}` for a
*cover* :math:`j_k` of the product when it is free (a label whose ancestors-or-self hold every
parent of the product: on, it switches them on), else :math:`\ell_k = 0`. So

.. math:: f(y) \ge \sum_{j \in O} c_j + \sum_{F_k \subseteq O} p_k + \sum_{j \text{ free}} c_j
          y_j + \sum_{p_k < 0} p_k \pi_k(y) + \sum_{p_k > 0} p_k \ell_k(y),

and the right-hand side is a closure problem (a negative product is a node :math:`z_k` of cost
:math:`p_k`, child of its free parents; at an optimum :math:`z_k = \pi_k`) solved exactly by a
maximum flow (Dinic's) on *integer* capacities: the costs scaled by a power of two :math:`2^s`
(the part's :math:`\sum |c| + \sum |p|` to at most :math:`2^{60}`) and rounded down, so that the
bound is rigorous (:math:`\lfloor 2^s a \rfloor y \le 2^s a y` for :math:`y \ge 0`) and lower
than the exact one by less than :math:`2^{-s}` per term, that is by at most
:math:`10^{-15} (\sum |c| + \sum |p|)` on a part of up to 1,000 terms.

The minimiser :math:`y^*` of the bound is a closed set: its value :math:`f(y^*)` updates the
incumbent (the search starts from the empty set, value 0). A positive product is *short* at
:math:`y^*` when its lower bound there is below its value: on with its cover off, for the bound
above. Such products then move, for the rest of the search, to the other valid lower bound
:math:`\ell_k = \sum_{q \in R_k} y_q - (|R_k| - 1)` (exact when at most one free parent is off,
short otherwise), and the node's bound is solved again (``_ROUNDS`` bounds per node; the best
counts: on the GO DAGs this cuts the nodes by four). A node whose bound is not below the
incumbent is cut; one where no product is short is solved by :math:`y^*` (the bound is then
:math:`f(y^*)` up to the rounding); otherwise the search branches on the first free parent of
the dearest short product, on first.

The search is exhaustive up to those cuts, hence exact up to the rounding above, or it stops
after ``budget`` nodes and says so: such a part goes to the MILP. Numba is the ``fast`` extra.
"""

from __future__ import annotations

import math

import numpy as np

from ecrm.spaces.hierarchy._branch import _jit

__all__ = ["search_parts"]

_INF = np.int64(2) ** 62  # capacity of the closure arcs: above any cut of finite arcs
# Bounds per node: after the first, the products on at the bound's minimiser with their cover
# off move to the linear lower bound and the bound is solved again (the best one counts).
_ROUNDS = 2


@_jit
def _max_flow(head, rev, first, cap, source, sink, level, it, path, queue):
    """Dinic's maximum flow on the residual capacities ``cap`` (int64, updated in place);
    arcs ``first[v]:first[v + 1]`` leave ``v``, ``rev[a]`` is the reverse of arc ``a``.
    Returns the flow value; ``level`` then marks (>= 0) the nodes reachable from ``source``."""
    n = len(first) - 1
    flow = np.int64(0)
    while True:
        level[:] = -1
        level[source] = 0
        queue[0], lo, hi = source, 0, 1
        while lo < hi:
            v = queue[lo]
            lo += 1
            for a in range(first[v], first[v + 1]):
                if cap[a] > 0 and level[head[a]] < 0:
                    level[head[a]] = level[v] + 1
                    queue[hi] = head[a]
                    hi += 1
        if level[sink] < 0:
            return flow
        for v in range(n):
            it[v] = first[v]
        top, v = 0, source
        while True:
            if v == sink:  # augment along the path by its bottleneck
                b = cap[path[0]]
                for i in range(1, top):
                    b = min(b, cap[path[i]])
                for i in range(top):
                    cap[path[i]] -= b
                    cap[rev[path[i]]] += b
                flow += b
                top, v = 0, source
                continue
            moved = False
            while it[v] < first[v + 1]:
                a = it[v]
                if cap[a] > 0 and level[head[a]] == level[v] + 1:
                    path[top] = a
                    top += 1
                    v = head[a]
                    moved = True
                    break
                it[v] += 1
            if not moved:  # a dead end: leave it and step back
                if top == 0:
                    break
                level[v] = -1
                top -= 1
                v = head[rev[path[top]]]
                it[v] += 1


@_jit
def _by_tail(tail, n):
    """A stable counting sort of the entries by ``tail`` (in ``0..n-1``): ``(first, where)``,
    entries with tail ``v`` at ``first[v]:first[v + 1]``, entry ``a`` at ``where[a]``."""
    first = np.zeros(n + 1, dtype=np.int64)
    for a in range(len(tail)):
        first[tail[a] + 1] += 1
    for v in range(n):
        first[v + 1] += first[v]
    fill = first[:-1].copy()
    where = np.empty(len(tail), dtype=np.int64)
    for a in range(len(tail)):
        where[a] = fill[tail[a]]
        fill[tail[a]] += 1
    return first, where


@_jit
def _value(c, fac_ptr, fac_idx, p, y):
    """The objective ``f`` of the closed set ``y`` (bool per label)."""
    v = 0.0
    for j in range(len(c)):
        if y[j]:
            v += c[j]
    for k in range(len(p)):
        on = True
        for e in range(fac_ptr[k], fac_ptr[k + 1]):
            if not y[fac_idx[e]]:
                on = False
                break
        if on:
            v += p[k]
    return v


@_jit
def _fix(state, j, value, par_ptr, par_idx, ch_ptr, ch_idx, stack):
    """Fix label ``j`` on (``value`` 1, with its ancestors) or off (-1, with its descendants)."""
    state[j] = value
    stack[0], top = j, 1
    while top > 0:
        top -= 1
        v = stack[top]
        lo, hi = (par_ptr[v], par_ptr[v + 1]) if value == 1 else (ch_ptr[v], ch_ptr[v + 1])
        for e in range(lo, hi):
            u = par_idx[e] if value == 1 else ch_idx[e]
            if state[u] == 0:
                state[u] = value
                stack[top] = u
                top += 1


@_jit
def _bound(state, c, c_int, fac_ptr, fac_idx, p, p_int, cover, linear, w, cap0, par_ptr,
           par_idx, closure_start):
    """Set the weights ``w`` and the capacities ``cap0`` (input order) of a node's bound;
    returns ``(const, low)``: the fixed labels' and products' costs with the lower bounds'
    constants, and the sum of the negative (scaled) weights; the bound is ``const + (low +
    flow) / scale``."""
    m, K = len(c), len(p)
    const = 0.0
    for j in range(m):
        w[j] = c_int[j] if state[j] == 0 else 0
        if state[j] == 1:
            const += c[j]
    for k in range(K):
        w[m + k] = 0
        n_free, first_free, dead = 0, -1, False
        for e in range(fac_ptr[k], fac_ptr[k + 1]):
            s = state[fac_idx[e]]
            if s == -1:
                dead = True
                break
            if s == 0:
                n_free += 1
                first_free = fac_idx[e] if first_free < 0 else first_free
        if dead:
            continue
        if n_free == 0:
            const += p[k]
        elif p[k] < 0:
            w[m + k] = p_int[k]
        elif n_free == 1:
            w[first_free] += p_int[k]
        elif linear[k]:  # pi_k >= sum of its free parents - (n_free - 1)
            for e in range(fac_ptr[k], fac_ptr[k + 1]):
                if state[fac_idx[e]] == 0:
                    w[fac_idx[e]] += p_int[k]
            const -= p[k] * (n_free - 1)
        elif cover[k] >= 0 and state[cover[k]] == 0:
            w[cover[k]] += p_int[k]
    cap0[:] = 0
    low = np.int64(0)
    for v in range(m + K):
        if w[v] < 0:
            cap0[4 * v] = -w[v]
            low += w[v]
        elif w[v] > 0:
            cap0[4 * v + 2] = w[v]
    a = closure_start
    for j in range(m):
        for e in range(par_ptr[j], par_ptr[j + 1]):
            if state[j] == 0 and state[par_idx[e]] == 0:
                cap0[a] = _INF
            a += 2
    for k in range(K):
        for e in range(fac_ptr[k], fac_ptr[k + 1]):
            if w[m + k] < 0 and state[fac_idx[e]] == 0:
                cap0[a] = _INF
            a += 2
    return const, low


@_jit
def _violated(state, y, fac_ptr, fac_idx, p, cover, linear, switch):
    """The dearest positive product whose lower bound is below its value at ``y``, and its
    first free parent (``-1, -1`` if none); with ``switch``, every product on in ``y`` with
    its cover off moves to the linear lower bound (``linear``), and the number moved."""
    dearest, branch, n_new = -1, -1, 0
    for k in range(len(p)):
        if p[k] <= 0:
            continue
        n_free, n_on, first_free, dead = 0, 0, -1, False
        for e in range(fac_ptr[k], fac_ptr[k + 1]):
            q = fac_idx[e]
            if state[q] == -1:
                dead = True
                break
            if state[q] == 0:
                n_free += 1
                n_on += y[q]
                first_free = q if first_free < 0 else first_free
        if dead or n_free < 2:
            continue  # constant or exact
        if linear[k]:
            gap = n_on <= n_free - 2
        else:
            gap = n_on == n_free and not (cover[k] >= 0 and state[cover[k]] == 0
                                          and y[cover[k]])
            if gap and switch:
                linear[k] = True
                n_new += 1
        if gap and (dearest < 0 or p[k] > p[dearest]):
            dearest, branch = k, first_free
    return dearest, branch, n_new


@_jit
def search(c, par_ptr, par_idx, fac_ptr, fac_idx, p, budget):
    """Minimise over the closed label sets of one part; ``(best, solved, nodes)``.

    ``c`` (m,) the labels' costs in a topological order (parents first); the parents of
    ``j`` in the part are ``par_idx[par_ptr[j]:par_ptr[j + 1]]``; the parents in the part of
    product ``k`` (nonempty) ``fac_idx[fac_ptr[k]:fac_ptr[k + 1]]``, ``p[k]`` its cost (>0 or
    <0). ``best`` (bool, m) the best closed set found; ``solved`` false when the search
    stopped after ``budget`` nodes (``best`` is then only the best set found).
    """
    m, K = len(c), len(p)
    # children lists, ancestors-or-self, and a cover of each product (the first label in
    # the order whose ancestors-or-self hold all its parents)
    ch_ptr, where = _by_tail(par_idx, m)
    ch_idx = np.empty(len(par_idx), dtype=np.int64)
    for j in range(m):
        for e in range(par_ptr[j], par_ptr[j + 1]):
            ch_idx[where[e]] = j
    anc = np.zeros((m, m), dtype=np.bool_)
    for j in range(m):
        anc[j, j] = True
        for e in range(par_ptr[j], par_ptr[j + 1]):
            for q in range(j):
                anc[j, q] |= anc[par_idx[e], q]
    cover = -np.ones(K, dtype=np.int64)
    for k in range(K):
        if p[k] > 0 and fac_ptr[k + 1] - fac_ptr[k] > 1:
            for j in range(m):
                holds = True
                for e in range(fac_ptr[k], fac_ptr[k + 1]):
                    if not anc[j, fac_idx[e]]:
                        holds = False
                        break
                if holds:
                    cover[k] = j
                    break
    # the flow network, fixed: source 0, sink 1, label j at 2 + j, negative product k at
    # 2 + m + k; a source and a sink arc per node, closure arcs child -> parent and
    # z_k -> each parent, each arc with its reverse (capacities set at each node)
    n_nodes = 2 + m + K
    n_closure = len(par_idx) + (fac_ptr[K] - fac_ptr[0])
    n_arcs = 2 * (2 * (m + K) + n_closure)
    tail = np.empty(n_arcs, dtype=np.int64)
    head = np.empty(n_arcs, dtype=np.int64)
    a = 0
    for v in range(2, n_nodes):  # arc 4 (v - 2) from the source, 4 (v - 2) + 2 to the sink
        tail[a], head[a], tail[a + 1], head[a + 1] = 0, v, v, 0
        tail[a + 2], head[a + 2], tail[a + 3], head[a + 3] = v, 1, 1, v
        a += 4
    closure_start = a
    for j in range(m):
        for e in range(par_ptr[j], par_ptr[j + 1]):
            tail[a], head[a] = 2 + j, 2 + par_idx[e]
            tail[a + 1], head[a + 1] = 2 + par_idx[e], 2 + j
            a += 2
    for k in range(K):
        for e in range(fac_ptr[k], fac_ptr[k + 1]):
            tail[a], head[a] = 2 + m + k, 2 + fac_idx[e]
            tail[a + 1], head[a + 1] = 2 + fac_idx[e], 2 + m + k
            a += 2
    first, where = _by_tail(tail, n_nodes)  # arc a is at where[a] in the order by tail
    head_s = np.empty(n_arcs, dtype=np.int64)
    rev = np.empty(n_arcs, dtype=np.int64)
    for a in range(n_arcs):
        head_s[where[a]] = head[a]
        rev[where[a]] = where[a ^ 1]
    cap0 = np.zeros(n_arcs, dtype=np.int64)  # the capacities in the input order
    cap = np.empty(n_arcs, dtype=np.int64)
    level = np.empty(n_nodes, dtype=np.int64)
    it = np.empty(n_nodes, dtype=np.int64)
    path = np.empty(n_nodes, dtype=np.int64)
    queue = np.empty(n_nodes, dtype=np.int64)
    # scale: the part's total magnitude to at most 2^60, so that each weight, the sum of the
    # negative ones (hence every flow and minimum cut) are at most 2^60 < _INF
    total = 0.0
    for j in range(m):
        total += abs(c[j])
    for k in range(K):
        total += abs(p[k])
    scale = math.ldexp(1.0, min(60 - math.frexp(total)[1], 1000)) if total > 0 else 1.0
    c_int = np.empty(m, dtype=np.int64)
    for j in range(m):
        c_int[j] = math.floor(c[j] * scale)
    p_int = np.empty(K, dtype=np.int64)
    for k in range(K):
        p_int[k] = math.floor(p[k] * scale)
    w = np.empty(m + K, dtype=np.int64)
    linear = np.zeros(K, dtype=np.bool_)  # the products on their linear lower bound
    # the depth-first search: a stack of nodes, each a state per label (1 on, -1 off, 0 free)
    states = np.zeros((m + 2, m), dtype=np.int8)
    trail = np.empty(m, dtype=np.int64)
    y = np.zeros(m, dtype=np.bool_)
    best_y = np.zeros(m, dtype=np.bool_)
    best, nodes, top = 0.0, 0, 1
    while top > 0:
        top -= 1
        state = states[top]
        nodes += 1
        if nodes > budget:
            return best_y, False, nodes
        # the node's bound (the best of _ROUNDS), its minimiser and the product to branch on
        low_bound, dearest, branch = -np.inf, -1, -1
        for rnd in range(_ROUNDS):
            const, low = _bound(state, c, c_int, fac_ptr, fac_idx, p, p_int, cover, linear, w,
                                cap0, par_ptr, par_idx, closure_start)
            for a in range(len(cap0)):
                cap[where[a]] = cap0[a]
            flow = _max_flow(head_s, rev, first, cap, 0, 1, level, it, path, queue)
            bound = const + float(low + flow) / scale
            for j in range(m):
                y[j] = state[j] == 1 or (state[j] == 0 and level[2 + j] >= 0)
            value = _value(c, fac_ptr, fac_idx, p, y)
            if value < best:
                best = value
                best_y[:] = y
            low_bound = max(low_bound, bound)
            if low_bound >= best:
                break
            dearest, branch, n_new = _violated(state, y, fac_ptr, fac_idx, p, cover, linear,
                                               rnd < _ROUNDS - 1)
            if dearest < 0 or n_new == 0:
                break
        if low_bound >= best or dearest < 0:
            continue  # cut, or y* is optimal in this node
        states[top + 1] = state  # on: popped first
        _fix(states[top + 1], branch, 1, par_ptr, par_idx, ch_ptr, ch_idx, trail)
        _fix(state, branch, -1, par_ptr, par_idx, ch_ptr, ch_idx, trail)  # off: then
        top += 2
    return best_y, True, nodes


@_jit
def search_parts(start, c, par_ptr, par_idx, product_start, fac_ptr, fac_idx, p, budget):
    """:func:`search` on each part of a block: part ``i`` has the labels
    ``start[i]:start[i + 1]`` (``par_ptr`` global over all labels, ``par_idx`` local to the
    part) and the products ``product_start[i]:product_start[i + 1]`` (``fac_ptr`` global,
    ``fac_idx`` local). Returns the best set per label, whether each search ended and its
    number of nodes."""
    n = len(start) - 1
    y = np.zeros(len(c), dtype=np.bool_)
    solved = np.zeros(n, dtype=np.bool_)
    nodes = np.zeros(n, dtype=np.int64)
    for i in range(n):
        a, b = start[i], start[i + 1]
        u, v = product_start[i], product_start[i + 1]
        ptr = par_ptr[a : b + 1] - par_ptr[a]
        fptr = fac_ptr[u : v + 1] - fac_ptr[u]
        best, solved[i], nodes[i] = search(c[a:b], ptr, par_idx[par_ptr[a] : par_ptr[b]], fptr,
                                    fac_idx[fac_ptr[u] : fac_ptr[v]], p[u:v], budget)
        y[a:b] = best
    return y, solved, nodes
