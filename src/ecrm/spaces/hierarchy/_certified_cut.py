r"""The certified minimum cut of a contracted closure problem (scipy's ``maximum_flow``).

Each connected component's costs are scaled to an integer budget and cut by one integer
maximum flow; a second flow then certifies the cut for the float costs (it must saturate the
arcs leaving the source side, rounded up, without the arcs entering it). Components whose
certificate fails are solved again in exact integer arithmetic
(:func:`~ecrm.spaces.hierarchy._exact_flow.min_closure_exact`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components, maximum_flow

from ecrm.spaces.hierarchy._exact_flow import min_closure_exact

__all__ = ["resolve_exact", "scipy_cuts"]

# Components whose budgets add up to at most this go to one call of maximum_flow (flows,
# doubled arcs and "infinite" arcs then stay far below the int32 limit of scipy's solver).
_CALL_BUDGET = 2**29


def scipy_cuts(c: np.ndarray, child: np.ndarray, parent: np.ndarray, q_min: float,
               q_max: float) -> tuple:
    """Certified cuts of the connected components by ``maximum_flow``, each component's
    capacities scaled to an integer budget between ``q_min`` and ``q_max``: ``(on, comp,
    failed, n_cut)``, the answer per node, the component of each, the components whose
    certificate failed and the number of components cut."""
    N = len(c)
    n_comp, comp = connected_components(
        sp.csr_array((np.ones(len(child)), (child, parent)), shape=(N, N)), directed=False)
    neg_sum = np.bincount(comp, np.maximum(-c, 0.0), minlength=n_comp)
    pos_sum = np.bincount(comp, np.maximum(c, 0.0), minlength=n_comp)
    size = np.bincount(comp, minlength=n_comp)
    on = np.zeros(N, dtype=bool)
    on[pos_sum[comp] == 0] = True  # nothing to pay: every candidate on
    # a component with nothing negative left stays off
    by_flow = (pos_sum > 0) & (neg_sum > 0)
    flow = np.flatnonzero(by_flow)
    budget = np.clip(2.0 ** np.ceil(np.log2(np.maximum(size, 1) * 2**16)), q_min, q_max)
    bound = np.minimum(neg_sum, pos_sum)  # the component's max flow is at most this
    scale = np.ones(n_comp)
    scale[flow] = 2.0 ** np.floor(np.log2(budget[flow] / bound[flow]))
    call = np.zeros(n_comp, dtype=np.intp)
    call[flow] = (np.cumsum(budget[flow]) - budget[flow]) // _CALL_BUDGET
    # group the nodes and arcs of each call
    node_call = np.where(by_flow[comp], call[comp], -1)
    order = np.argsort(node_call, kind="stable")
    starts = np.searchsorted(node_call[order], np.arange(call.max(initial=0) + 2))
    arc_call = node_call[child]
    arc_order = np.argsort(arc_call, kind="stable")
    arc_starts = np.searchsorted(arc_call[arc_order], np.arange(call.max(initial=0) + 2))
    local = np.empty(N, dtype=np.intp)  # position of each node within its call
    local[order] = np.arange(N) - starts[np.maximum(node_call[order], 0)]
    failed = []
    for k in range(len(starts) - 1):
        nodes = order[starts[k] : starts[k + 1]]
        if len(nodes) == 0:
            continue
        arcs = arc_order[arc_starts[k] : arc_starts[k + 1]]
        S, ok = _certified_cut(c[nodes], comp[nodes], local[child[arcs]], local[parent[arcs]],
                               scale, budget, bound)
        on[nodes] = S
        failed.extend(np.unique(comp[nodes][~ok]).tolist())
    return on, comp, np.array(failed, dtype=np.intp), len(flow)


def resolve_exact(on, c, child, parent, comp, failed) -> None:
    """Overwrite ``on`` on the components ``failed`` by the exact integer flow."""
    n_comp = int(comp.max(initial=-1)) + 1
    by_comp = np.argsort(comp, kind="stable")
    first = np.searchsorted(comp[by_comp], np.arange(n_comp + 1))
    arc_by_comp = np.argsort(comp[child], kind="stable")
    arc_first = np.searchsorted(comp[child][arc_by_comp], np.arange(n_comp + 1))
    rank = np.empty(len(c), dtype=np.intp)
    rank[by_comp] = np.arange(len(c)) - first[comp[by_comp]]
    for q in np.unique(failed):
        members = by_comp[first[q] : first[q + 1]]
        arcs = arc_by_comp[arc_first[q] : arc_first[q + 1]]
        on[members] = min_closure_exact(c[members], rank[child[arcs]], rank[parent[arcs]])


def _certified_cut(c, comp, child, parent, scale, budget, bound):
    """Cut of a union of components by one integer max flow, then its certificate.

    Returns the source side ``S`` (bool per node) and, per node, whether its component's cut
    is certified optimal for the float costs ``c``.
    """
    n = len(c)
    s, t = n, n + 1
    sc, cap_bound = scale[comp], 2.0 * bound[comp]
    big = 2 * budget[comp] + 1  # "infinite": more than the component's flow can ever be
    neg, pos = np.flatnonzero(c < 0), np.flatnonzero(c > 0)
    a = np.abs(c)
    down = np.floor(np.minimum(a, cap_bound) * sc)
    rows = np.concatenate([np.full(len(neg), s), pos, child])
    cols = np.concatenate([neg, np.full(len(pos), t), parent])
    caps = np.concatenate([down[neg], down[pos], big[child]])
    S = _source_side(rows, cols, caps, n)
    # certificate: saturate the arcs leaving S (demands, rounded up) without the arcs entering
    # S, every other capacity rounded down; a flow meeting every demand proves S optimal
    up = np.ceil(a * sc)
    demand_neg, demand_pos = ~S[neg], S[pos]
    keep = ~(S[parent] & ~S[child])
    caps = np.concatenate([np.where(demand_neg, up[neg], down[neg]),
                           np.where(demand_pos, up[pos], down[pos]), big[child][keep]])
    too_big = np.zeros(n, dtype=bool)  # a demand above the budget cannot be an optimal cut
    too_big[neg[demand_neg & (up[neg] > budget[comp[neg]])]] = True
    too_big[pos[demand_pos & (up[pos] > budget[comp[pos]])]] = True
    caps = np.minimum(caps, np.concatenate([big[neg], big[pos], big[child][keep]]))
    rows = np.concatenate([np.full(len(neg), s), pos, child[keep]])
    cols = np.concatenate([neg, np.full(len(pos), t), parent[keep]])
    _, res = _network(rows, cols, caps, n)  # the flow on each (distinct) arc
    flow = np.asarray(res.flow.tocsr()[rows, cols], dtype=float).ravel()
    short = np.zeros(n)
    short[neg] = np.where(demand_neg, caps[: len(neg)] - flow[: len(neg)], 0.0)
    short[pos] = np.where(demand_pos, caps[len(neg) : len(neg) + len(pos)]
                          - flow[len(neg) : len(neg) + len(pos)], 0.0)
    bad = np.bincount(comp, short + too_big, minlength=len(scale)) > 0
    return S, ~bad[comp]


def _network(rows, cols, caps, n):
    keep = caps > 0
    G = sp.csr_array((caps[keep].astype(np.int32), (rows[keep], cols[keep])),
                     shape=(n + 2, n + 2))
    G.sum_duplicates()
    return G, maximum_flow(G, n, n + 1)


def _source_side(rows, cols, caps, n) -> np.ndarray:
    """Labels reachable from the source in the residual network of a maximum flow."""
    G, res = _network(rows, cols, caps, n)
    R = (G - res.flow).tocsr()
    R.data = (R.data > 0).astype(np.int32)
    R.eliminate_zeros()
    reach = breadth_first_order(R, n, directed=True, return_predecessors=False)
    S = np.zeros(n + 2, dtype=bool)
    S[reach] = True
    return S[:n]
