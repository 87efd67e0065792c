"""Checks of a flow network's description: its nodes, supplies and capacities, and its weakly
connected components (each has one redundant conservation row)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components

__all__ = ["InfeasibleNetworkError", "check_capacity", "check_supply", "find_feasible_flow",
           "node_list", "weak_components"]


class InfeasibleNetworkError(ValueError):
    """No flow satisfies the supplies within the capacities (the polytope is empty)."""


def node_list(arcs: list, nodes) -> list:
    """The nodes in the given order, or in order of first appearance in ``arcs``."""
    if nodes is not None:
        nodes = list(nodes)
        if len(set(nodes)) != len(nodes):
            raise ValueError("nodes must not contain duplicates")
        return nodes
    return list(dict.fromkeys(v for arc in arcs for v in arc))


def check_supply(supply, nodes: Sequence[Hashable], index: Mapping) -> np.ndarray:
    """The supplies as a read-only vector in node order, summing to zero."""
    n = len(nodes)
    if isinstance(supply, Mapping):
        b = np.zeros(n)
        for v, value in supply.items():
            if v not in index:
                raise ValueError(f"supply names unknown node {v!r}; known nodes: "
                                 f"{list(nodes)}")
            b[index[v]] = float(value)
    else:
        b = np.array(supply, dtype=float).ravel()
        if b.shape != (n,):
            raise ValueError(f"supply must have one entry per node ({n}: {list(nodes)}"
                             f"); got shape {np.shape(supply)}")
    if not np.all(np.isfinite(b)):
        raise ValueError("supply contains NaN or infinite values")
    total = float(b.sum())
    if abs(total) > 1e-9 * float(np.abs(b).sum()):  # relative: any scale of supplies
        raise ValueError(f"supplies must sum to zero (total outflow = total inflow); they "
                         f"sum to {total:g}")
    b.setflags(write=False)
    return b


def check_capacity(capacity, arcs: Sequence) -> np.ndarray:
    """The capacities as a read-only vector in arc order (``inf``: uncapacitated)."""
    n_arcs = len(arcs)
    if capacity is None:
        u = np.full(n_arcs, np.inf)
    else:
        u = np.array(capacity, dtype=float)
        if u.ndim == 0:
            u = np.full(n_arcs, float(u))
        if u.shape != (n_arcs,):
            raise ValueError(f"capacity must be a number or have one entry per arc "
                             f"({n_arcs}); got shape {np.shape(capacity)}")
    if np.isnan(u).any():
        k = int(np.flatnonzero(np.isnan(u))[0])
        raise ValueError(f"capacity of arc {k} {arcs[k]} is NaN")
    if (u < 0).any():
        k = int(np.flatnonzero(u < 0)[0])
        raise ValueError(f"capacities must be non-negative; arc {k} {arcs[k]} has "
                         f"capacity {u[k]:g}")
    u.setflags(write=False)
    return u


def weak_components(n_nodes: int, tails: np.ndarray, heads: np.ndarray) -> list[np.ndarray]:
    """The weakly connected components, each an ascending array of node indices, ordered by
    their smallest node."""
    graph = sp.coo_matrix((np.ones(len(tails)), (tails, heads)), shape=(n_nodes, n_nodes))
    _, labels = connected_components(graph, directed=True, connection="weak")
    return [np.flatnonzero(labels == g) for g in dict.fromkeys(labels.tolist())]


def find_feasible_flow(space) -> np.ndarray:
    """A feasible flow of ``space`` (a :class:`~ecrm.spaces.flows.FlowPolytope` being built),
    or :class:`InfeasibleNetworkError` naming the unmet supplies."""
    n_nodes, n_arcs = space.incidence.shape
    # min 1'(p + q) s.t. N y + p - q = b, 0 <= y <= u, p, q >= 0, on the unit-scaled data.
    A = np.hstack([space.incidence, np.eye(n_nodes), -np.eye(n_nodes)])
    c = np.concatenate([np.zeros(n_arcs), np.ones(2 * n_nodes)])
    bounds = space._unit_bounds() + [(0.0, None)] * (2 * n_nodes)
    unit_supply = space.supply / space.scale
    res = linprog(c, A_eq=A, b_eq=unit_supply, bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - this LP is always feasible and bounded
        raise RuntimeError("could not decide whether the flow network is feasible")
    scale = max(1.0, float(np.abs(unit_supply).sum()))
    unmet = (res.x[n_arcs:n_arcs + n_nodes] - res.x[n_arcs + n_nodes:]) * space.scale
    if res.fun > 1e-9 * scale:
        total = float(np.abs(space.supply).sum()) / 2
        routed = total - float(res.fun) * space.scale / 2
        where = ", ".join(f"{space.nodes[j]!r}: {unmet[j]:+g}"
                          for j in np.flatnonzero(np.abs(unmet) > 1e-9 * scale * space.scale))
        raise InfeasibleNetworkError(
            f"infeasible network: no flow meets the supplies within the capacities; at "
            f"most {routed:g} of the total supply {total:g} can be routed (unmet supply "
            f"by node: {where})")
    return np.clip(res.x[:n_arcs] * space.scale, 0.0, space.capacity)
