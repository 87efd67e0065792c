"""Minimum-weight closure in exact integer arithmetic (the fallback of the certified cut).

A float is a dyadic rational, so the costs of a component times a common power of two are
Python integers, and a maximum flow on them (Dinic's algorithm) has no round-off at all. Slow
(pure Python), and only run on the rare components whose rounded cut could not be certified.
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["min_closure_exact"]


def _exact_integers(values: np.ndarray) -> list[int]:
    """Integers proportional to the floats ``values`` (exactly, by a common power of two)."""
    ratios = [float(v).as_integer_ratio() for v in values]
    den = max((d for _, d in ratios), default=1)
    return [num * (den // d) for num, d in ratios]


def min_closure_exact(c: np.ndarray, child: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Exact minimiser of ``c @ y`` over the sets closed under the arcs ``child -> parent``.

    Returns the smallest optimal set (bool mask): the labels reachable from the source in the
    residual network of a maximum flow (source -> j with capacity ``-c_j`` for ``c_j < 0``,
    j -> sink with ``c_j`` for ``c_j > 0``, child -> parent unbounded).
    """
    n = len(c)
    s, t = n, n + 1
    w = _exact_integers(np.abs(c))
    infinite = sum(w) + 1
    head: list[int] = []
    cap: list[int] = []
    adj: list[list[int]] = [[] for _ in range(n + 2)]

    def add(u: int, v: int, capacity: int) -> None:
        adj[u].append(len(head))
        head.append(v)
        cap.append(capacity)
        adj[v].append(len(head))
        head.append(u)
        cap.append(0)

    for j in range(n):
        if c[j] < 0:
            add(s, j, w[j])
        elif c[j] > 0:
            add(j, t, w[j])
    for u, v in zip(child.tolist(), parent.tolist(), strict=True):
        add(u, v, infinite)

    while True:  # Dinic: BFS levels, then blocking flows by DFS
        level = [-1] * (n + 2)
        level[s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for a in adj[u]:
                if cap[a] > 0 and level[head[a]] < 0:
                    level[head[a]] = level[u] + 1
                    queue.append(head[a])
        if level[t] < 0:
            break
        nxt = [0] * (n + 2)
        while _augment(s, t, adj, head, cap, level, nxt):
            pass
    on = np.zeros(n, dtype=bool)
    on[[u for u in range(n) if level[u] >= 0]] = True
    return on


def _augment(s, t, adj, head, cap, level, nxt) -> bool:
    """Push one augmenting path along the level graph (iterative DFS); False if none."""
    path: list[int] = []  # arcs from s
    u = s
    while True:
        if u == t:
            pushed = min(cap[a] for a in path)
            for a in path:
                cap[a] -= pushed
                cap[a ^ 1] += pushed
            return True
        while nxt[u] < len(adj[u]):
            a = adj[u][nxt[u]]
            v = head[a]
            if cap[a] > 0 and level[v] == level[u] + 1:
                break
            nxt[u] += 1
        else:
            if u == s:
                return False
            level[u] = -2  # dead end: drop it from the level graph for this phase
            a = path.pop()
            u = head[a ^ 1]
            nxt[u] += 1
            continue
        path.append(adj[u][nxt[u]])
        u = head[path[-1]]
