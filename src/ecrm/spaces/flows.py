r"""Network flow output space: the flow polytope of a directed network.

A *flow* on a network :math:`G = (\mathcal V, \mathcal A)` with supplies
:math:`b \in \mathbb R^{\mathcal V}` and capacities :math:`u \in [0, \infty]^{\mathcal A}` is a
vector :math:`y \in \mathbb R^{\mathcal A}` with

.. math:: \sum_{k:(j,k)\in\mathcal A} y_{jk} - \sum_{k:(k,j)\in\mathcal A} y_{kj} = b_j
          \quad \forall j \in \mathcal V, \qquad 0 \le y \le u

(ECRM paper, Section 6.2, equation (8)): outflow minus inflow equals the supply. In matrix form
:math:`Ny = b` with the node-arc incidence matrix :math:`N` (:math:`+1` at the tail, :math:`-1`
at the head of every arc). :class:`FlowPolytope` is this set, with

* :meth:`FlowPolytope.argmin`: the exact linear oracle (an LP, HiGHS);
* :meth:`FlowPolytope.project`: the exact Euclidean projection (a convex QP solved as a
  least-distance problem by the Lawson-Hanson active-set NNLS, then certified through its
  KKT conditions);
* :meth:`FlowPolytope.vertices`: all vertices of a small polytope (basis enumeration);
* :meth:`FlowPolytope.validate`: checks of training outputs (shape, sign, capacity,
  conservation) naming the offending row, arc or node.

Inference for the absolute and square losses over this space lives in
:mod:`ecrm.losses.continuous`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, lsq_linear, nnls

from ecrm.spaces.base import OutputSpace

__all__ = ["FlowPolytope", "FlowResult", "InfeasibleNetworkError", "paper_network"]


class InfeasibleNetworkError(ValueError):
    """No flow satisfies the supplies within the capacities (the polytope is empty)."""


@dataclass(frozen=True)
class FlowResult:
    """Solutions of a batch of optimisation problems over a flow polytope.

    Attributes
    ----------
    solution : ndarray of shape (n, d)
        One flow per problem (row).
    value : ndarray of shape (n,)
        Objective value of each solution.
    certified : ndarray of bool, shape (n,)
        Whether the solution is proven optimal (to the tolerance ``tol``): by an exact method
        (LP, vertex enumeration, MILP solved to optimality) or, for local methods, by a lower
        bound matching the value.
    lower_bound : ndarray of shape (n,)
        A proven lower bound on the optimal value (``-inf`` when none is known).
    method : str
        The method that was asked for.
    solved_by : ndarray of str, shape (n,)
        The method that produced each row's solution (e.g. ``"local"`` or ``"milp"`` under
        ``method="auto"``).
    tol : float
        Absolute tolerance used for certification.
    """

    solution: np.ndarray
    value: np.ndarray
    certified: np.ndarray
    lower_bound: np.ndarray
    method: str
    solved_by: np.ndarray
    tol: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def gap(self) -> np.ndarray:
        """``value - lower_bound`` per row (0 when certified exactly)."""
        return self.value - self.lower_bound

    @property
    def n_certified(self) -> int:
        return int(np.count_nonzero(self.certified))


def _node_list(arcs: list, supply, nodes) -> list:
    if nodes is not None:
        nodes = list(nodes)
        if len(set(nodes)) != len(nodes):
            raise ValueError("nodes must not contain duplicates")
        return nodes
    seen: dict = {}
    for tail, head in arcs:
        seen.setdefault(tail, None)
        seen.setdefault(head, None)
    return list(seen)


class FlowPolytope(OutputSpace):
    r"""Flows on a directed network with known supplies and optional capacities.

    .. math:: \mathcal Y = \{ y \in \mathbb R^{|\mathcal A|} : N y = b,\; 0 \le y \le u \},

    where :math:`N` is the node-arc incidence matrix (``+1`` at an arc's tail, ``-1`` at its
    head), so that row :math:`j` of :math:`Ny = b` says *outflow minus inflow at node j equals
    its supply* :math:`b_j` (positive at sources, negative at sinks). Output vectors have one
    coordinate per arc, in the order of ``arcs``.

    Parameters
    ----------
    arcs : iterable of (tail, head) pairs
        The directed arcs; node names are any hashable values. Parallel arcs are allowed,
        self-loops are not.
    supply : mapping node -> float, or array-like of shape (n_nodes,)
        External supply :math:`b_j`; a mapping may omit nodes of zero supply. An array
        follows the order of ``nodes``. Supplies must sum to zero.
    capacity : float or array-like of shape (n_arcs,), default=None
        Upper bounds :math:`u` (``None`` or ``inf``: uncapacitated). Must be non-negative.
    nodes : sequence of hashable, default=None
        Node order (default: order of first appearance in ``arcs``). Every arc must name
        nodes of this list.

    Raises
    ------
    InfeasibleNetworkError
        If no flow satisfies the supplies within the capacities; the message says how much
        supply cannot be routed and from which nodes.
    ValueError
        For unknown nodes, self-loops, negative or NaN capacities, or supplies not summing
        to zero.

    Examples
    --------
    The network of the paper's Figure 1 carries one unit from ``s`` to ``t``:

    >>> import numpy as np
    >>> space = paper_network()
    >>> space.n_arcs, space.nodes
    (10, ('s', 'a', 'b', 'c', 'd', 't'))
    >>> y = space.argmin(np.arange(10.0))        # the cheapest s-t path: s->a->c->t
    >>> [arc for arc, f in zip(space.arcs, y[0]) if f > 0.5]
    [('s', 'a'), ('a', 'c'), ('c', 't')]
    """

    def __init__(self, arcs: Iterable, supply, capacity=None, *, nodes=None):
        arc_list = []
        for k, arc in enumerate(arcs):
            try:
                tail, head = arc
            except (TypeError, ValueError):
                raise ValueError(f"arc {k} must be a (tail, head) pair; got {arc!r}") from None
            if tail == head:
                raise ValueError(f"arc {k} ({tail!r}, {head!r}) is a self-loop")
            arc_list.append((tail, head))
        if not arc_list:
            raise ValueError("a flow network needs at least one arc")
        node_list = _node_list(arc_list, supply, nodes)
        index = {v: j for j, v in enumerate(node_list)}
        for k, (tail, head) in enumerate(arc_list):
            for v in (tail, head):
                if v not in index:
                    raise ValueError(f"arc {k} ({tail!r}, {head!r}) names unknown node {v!r}; "
                                     f"known nodes: {node_list}")
        self.arcs: tuple[tuple[Hashable, Hashable], ...] = tuple(arc_list)
        self.nodes: tuple[Hashable, ...] = tuple(node_list)
        self._index = index
        self.supply = self._check_supply(supply)
        self.capacity = self._check_capacity(capacity)
        n_nodes, n_arcs = len(self.nodes), len(self.arcs)
        tails = np.array([index[t] for t, _ in arc_list])
        heads = np.array([index[h] for _, h in arc_list])
        N = np.zeros((n_nodes, n_arcs))
        N[tails, np.arange(n_arcs)] += 1.0
        N[heads, np.arange(n_arcs)] -= 1.0
        N.setflags(write=False)
        self.incidence = N
        self._tails, self._heads = tails, heads
        # One node row per weakly connected component is redundant: drop it, so the
        # equality system A_eq y = b_eq has full row rank.
        self._components = self._weak_components()
        keep = np.ones(n_nodes, dtype=bool)
        for comp in self._components:
            keep[comp[-1]] = False
            total = float(self.supply[comp].sum())
            if abs(total) > 1e-9 * max(1.0, float(np.abs(self.supply).sum())):
                names = [self.nodes[j] for j in comp]
                raise InfeasibleNetworkError(
                    f"infeasible network: the supplies of the connected nodes {names} sum to "
                    f"{total:g}, not zero, so no flow can balance them")
        self._rows = np.flatnonzero(keep)
        self.A_eq = N[self._rows]
        self.b_eq = self.supply[self._rows]
        self._feasible = self._find_feasible_flow()
        self._upper: np.ndarray | None = None
        self._vertices: np.ndarray | None = None

    # -- construction checks --------------------------------------------------------
    def _check_supply(self, supply) -> np.ndarray:
        n = len(self.nodes)
        if isinstance(supply, Mapping):
            b = np.zeros(n)
            for v, value in supply.items():
                if v not in self._index:
                    raise ValueError(f"supply names unknown node {v!r}; known nodes: "
                                     f"{list(self.nodes)}")
                b[self._index[v]] = float(value)
        else:
            b = np.array(supply, dtype=float).ravel()
            if b.shape != (n,):
                raise ValueError(f"supply must have one entry per node ({n}: {list(self.nodes)}"
                                 f"); got shape {np.shape(supply)}")
        if not np.all(np.isfinite(b)):
            raise ValueError("supply contains NaN or infinite values")
        total = float(b.sum())
        if abs(total) > 1e-9 * max(1.0, float(np.abs(b).sum())):
            raise ValueError(f"supplies must sum to zero (total outflow = total inflow); they "
                             f"sum to {total:g}")
        b.setflags(write=False)
        return b

    def _check_capacity(self, capacity) -> np.ndarray:
        n_arcs = len(self.arcs)
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
            raise ValueError(f"capacity of arc {k} {self.arcs[k]} is NaN")
        if (u < 0).any():
            k = int(np.flatnonzero(u < 0)[0])
            raise ValueError(f"capacities must be non-negative; arc {k} {self.arcs[k]} has "
                             f"capacity {u[k]:g}")
        u.setflags(write=False)
        return u

    def _weak_components(self) -> list[np.ndarray]:
        parent = list(range(len(self.nodes)))

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for t, h in zip(self._tails, self._heads, strict=False):
            parent[find(t)] = find(h)
        groups: dict[int, list[int]] = {}
        for j in range(len(self.nodes)):
            groups.setdefault(find(j), []).append(j)
        return [np.array(g) for g in groups.values()]

    def _find_feasible_flow(self) -> np.ndarray:
        """A feasible flow, or :class:`InfeasibleNetworkError` naming the unmet supplies."""
        n_nodes, n_arcs = self.incidence.shape
        # min 1'(p + q) s.t. N y + p - q = b, 0 <= y <= u, p, q >= 0.
        A = np.hstack([self.incidence, np.eye(n_nodes), -np.eye(n_nodes)])
        c = np.concatenate([np.zeros(n_arcs), np.ones(2 * n_nodes)])
        bounds = [(0.0, None if np.isinf(u) else u) for u in self.capacity]
        bounds += [(0.0, None)] * (2 * n_nodes)
        res = linprog(c, A_eq=A, b_eq=self.supply, bounds=bounds, method="highs")
        if res.status != 0:  # pragma: no cover - this LP is always feasible and bounded
            raise RuntimeError("could not decide whether the flow network is feasible")
        scale = max(1.0, float(np.abs(self.supply).sum()))
        unmet = res.x[n_arcs:n_arcs + n_nodes] - res.x[n_arcs + n_nodes:]
        if res.fun > 1e-9 * scale:
            total = float(np.abs(self.supply).sum()) / 2
            routed = total - float(res.fun) / 2
            where = ", ".join(f"{self.nodes[j]!r}: {unmet[j]:+g}"
                              for j in np.flatnonzero(np.abs(unmet) > 1e-9 * scale))
            raise InfeasibleNetworkError(
                f"infeasible network: no flow meets the supplies within the capacities; at "
                f"most {routed:g} of the total supply {total:g} can be routed (unmet supply "
                f"by node: {where})")
        y = np.clip(res.x[:n_arcs], 0.0, self.capacity)
        return y

    # -- basic properties -----------------------------------------------------------
    @property
    def n_outputs(self) -> int:
        return len(self.arcs)

    @property
    def n_arcs(self) -> int:
        return len(self.arcs)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def dimension(self) -> int:
        """Dimension of the affine hull of :math:`\\{Ny = b\\}` (arcs minus the rank of N)."""
        return self.n_arcs - len(self._rows)

    @property
    def is_bounded(self) -> bool:
        """False when a directed cycle of uncapacitated arcs makes the polytope unbounded."""
        return bool(np.all(np.isfinite(self.upper_bounds)))

    @property
    def upper_bounds(self) -> np.ndarray:
        """The largest value each arc takes on the polytope (``inf`` if unbounded), (d,)."""
        if self._upper is None:
            self._upper = self._arc_maxima()
        return self._upper

    def _arc_maxima(self) -> np.ndarray:
        upper = self.capacity.copy()
        cycle_arcs = self._arcs_on_free_cycles()
        bounds = [(0.0, None if np.isinf(u) else u) for u in self.capacity]
        for k in range(self.n_arcs):
            if cycle_arcs[k]:
                upper[k] = np.inf
                continue
            c = np.zeros(self.n_arcs)
            c[k] = -1.0
            res = linprog(c, A_eq=self.A_eq, b_eq=self.b_eq, bounds=bounds, method="highs")
            if res.status == 0:
                upper[k] = min(self.capacity[k], -res.fun)
            else:  # pragma: no cover - unbounded only through a free cycle
                upper[k] = np.inf
        upper.setflags(write=False)
        return upper

    def _arcs_on_free_cycles(self) -> np.ndarray:
        """Arcs lying on a directed cycle of uncapacitated arcs (unbounded directions)."""
        free = np.isinf(self.capacity)
        n = self.n_nodes
        reach = np.eye(n, dtype=bool)
        adj = np.zeros((n, n), dtype=bool)
        adj[self._tails[free], self._heads[free]] = True
        # Transitive closure by repeated squaring (networks here are small).
        closure = reach | adj
        for _ in range(max(1, math.ceil(math.log2(max(n, 2)))) + 1):
            closure = closure | ((closure.astype(np.int64) @ closure.astype(np.int64)) > 0)
        return free & closure[self._heads, self._tails]

    # -- membership -----------------------------------------------------------------
    def _as_flows(self, Y, what: str) -> np.ndarray:
        if sp.issparse(Y):
            Y = Y.toarray()
        Y = np.array(Y, dtype=float, copy=True)
        if Y.ndim == 1:
            Y = Y[None, :]
        if Y.ndim != 2 or Y.shape[1] != self.n_arcs:
            raise ValueError(
                f"{what} must have one column per arc: expected shape (n, {self.n_arcs}) for "
                f"this network of {self.n_arcs} arcs; got shape {np.shape(Y)}")
        if not np.all(np.isfinite(Y)):
            i, k = np.argwhere(~np.isfinite(Y))[0]
            raise ValueError(f"{what} contains a non-finite value at row {i}, arc {k} "
                             f"{self.arcs[k]}")
        return Y

    def _tolerance(self, atol: float) -> float:
        return atol * max(1.0, float(np.abs(self.supply).max(initial=0.0)))

    def violations(self, Y, *, atol: float = 1e-8) -> list[str]:
        """Human-readable reasons why rows of ``Y`` are not flows (empty if all are)."""
        Y = self._as_flows(Y, "Y")
        tol = self._tolerance(atol)
        out = []
        neg = Y < -tol
        over = Y > self.capacity + tol
        imbalance = Y @ self.incidence.T - self.supply
        bad_node = np.abs(imbalance) > tol * max(1.0, float(np.abs(Y).max(initial=0.0)))
        for i in np.flatnonzero(neg.any(1) | over.any(1) | bad_node.any(1)):
            if neg[i].any():
                k = int(np.flatnonzero(neg[i])[0])
                out.append(f"row {i}: negative flow {Y[i, k]:g} on arc {k} {self.arcs[k]}")
            elif over[i].any():
                k = int(np.flatnonzero(over[i])[0])
                out.append(f"row {i}: flow {Y[i, k]:g} on arc {k} {self.arcs[k]} exceeds "
                           f"its capacity {self.capacity[k]:g}")
            else:
                j = int(np.flatnonzero(bad_node[i])[0])
                out.append(
                    f"row {i} violates flow conservation at node {self.nodes[j]!r}: outflow "
                    f"- inflow = {imbalance[i, j] + self.supply[j]:g}, but its supply is "
                    f"{self.supply[j]:g}")
        return out

    def contains(self, Y, *, atol: float = 1e-8) -> np.ndarray:
        """Boolean mask of the rows of ``Y`` that are flows (to the tolerance ``atol``)."""
        Y = self._as_flows(Y, "Y")
        tol = self._tolerance(atol)
        scale = max(1.0, float(np.abs(Y).max(initial=0.0)))
        ok = (Y >= -tol).all(1) & (Y <= self.capacity + tol).all(1)
        return ok & (np.abs(Y @ self.incidence.T - self.supply) <= tol * scale).all(1)

    def validate(self, Y, *, atol: float = 1e-8) -> np.ndarray:
        """Return ``Y`` as a new float array (n, d) after checking every row is a flow.

        Raises ``ValueError`` naming the first offending row with its arc (sign, capacity)
        or node (conservation), or the column count if it differs from the number of arcs.
        """
        problems = self.violations(Y, atol=atol)
        if problems:
            more = f" (and {len(problems) - 1} more rows)" if len(problems) > 1 else ""
            raise ValueError(f"training outputs must be flows on this network: "
                             f"{problems[0]}{more}")
        return self._as_flows(Y, "Y")

    # -- linear oracle --------------------------------------------------------------
    def argmin(self, C) -> np.ndarray:
        r"""Minimum-cost flows :math:`\arg\min_{y\in\mathcal Y} \langle c, y\rangle` per row.

        Solved exactly as an LP by HiGHS (a vertex of the polytope). Raises ``ValueError``
        if some row's cost is unbounded below (a negative-cost cycle of uncapacitated arcs).
        """
        return self.minimize_linear(C).solution

    def minimize_linear(self, C) -> FlowResult:
        """:meth:`argmin` with the optimal values, as a :class:`FlowResult`."""
        C = self.check_costs(C)
        bounds = [(0.0, None if np.isinf(u) else u) for u in self.capacity]
        Y = np.empty_like(C)
        for i, c in enumerate(C):
            res = linprog(c, A_eq=self.A_eq, b_eq=self.b_eq, bounds=bounds, method="highs")
            if res.status == 3:
                raise ValueError(
                    f"the linear cost of row {i} is unbounded below on this flow polytope "
                    "(a directed cycle of uncapacitated arcs has negative total cost)")
            if res.status != 0:  # pragma: no cover - feasible by construction
                raise RuntimeError(f"the min-cost flow LP of row {i} failed")
            Y[i] = self._clean(res.x)
        value = np.einsum("ij,ij->i", C, Y)
        n = len(C)
        return FlowResult(Y, value, np.ones(n, bool), value.copy(), "lp",
                          np.full(n, "lp"))

    def _clean(self, y: np.ndarray) -> np.ndarray:
        return np.clip(y, 0.0, self.capacity)

    # -- Euclidean projection -------------------------------------------------------
    def project(self, Z, *, tol: float = 1e-9) -> FlowResult:
        r"""Euclidean projection of each row of ``Z`` onto the polytope.

        .. math:: \Pi(z) = \arg\min_{y} \tfrac12 \|y - z\|_2^2 \quad \text{s.t.}\quad
                  Ny = b,\; 0 \le y \le u .

        **Method.** With :math:`x = y - z` this is a *least-distance problem*
        :math:`\min \|x\|^2` s.t. :math:`Gx \ge h` (the equalities as two inequalities), which
        Lawson & Hanson (1974, ch. 23) reduce to one non-negative least-squares problem
        :math:`\min_{v\ge0} \|E v - e_{d+1}\|` with :math:`E = [G^\top; h^\top]`: if
        :math:`r = Ev - e_{d+1} \ne 0` then :math:`x = -r_{1:d}/r_{d+1}`. NNLS
        (:func:`scipy.optimize.nnls`) is a finite active-set algorithm, so the answer is exact
        up to its stopping tolerance. We then make it exact and *certify* it: with the arcs
        found at a bound fixed there, the equality-constrained QP on the free arcs is solved
        from its KKT system (primal-dual active-set steps if the active set was wrong), and
        the KKT conditions are checked: feasibility, and multipliers of the right sign for
        the active bounds (a bounded least-squares problem, BVLS, since the potentials
        :math:`\pi` are not unique). Unlike SLSQP or trust-constr, this needs no starting
        point, tolerates the rank-deficient incidence matrix, and is exact; for the tiny
        networks of interest one projection takes well under a millisecond.

        Returns
        -------
        FlowResult
            ``value`` is :math:`\|\Pi(z) - z\|^2`; ``certified`` says whether the KKT
            conditions hold to ``tol``.
        """
        Z = np.atleast_2d(np.asarray(Z, dtype=float))
        if Z.ndim != 2 or Z.shape[1] != self.n_arcs:
            raise ValueError(f"points to project must have shape (n, {self.n_arcs}); "
                             f"got shape {np.shape(Z)}")
        if not np.all(np.isfinite(Z)):
            raise ValueError("points to project contain NaN or infinite values")
        Y = np.empty_like(Z)
        certified = np.zeros(len(Z), dtype=bool)
        for i, z in enumerate(Z):
            Y[i], certified[i] = self._project_one(z, tol)
        value = np.sum((Y - Z) ** 2, axis=1)
        lower = np.where(certified, value, -np.inf)
        return FlowResult(Y, value, certified, lower, "nnls-ldp", np.full(len(Z), "nnls-ldp"),
                          tol)

    def _ldp_system(self):
        if not hasattr(self, "_ldp"):
            d = self.n_arcs
            capped = np.flatnonzero(np.isfinite(self.capacity))
            G = np.vstack([np.eye(d), -np.eye(d)[capped], self.A_eq, -self.A_eq])
            self._ldp = (G, capped)
        return self._ldp

    def _project_one(self, z: np.ndarray, tol: float) -> tuple[np.ndarray, bool]:
        d = self.n_arcs
        G, capped = self._ldp_system()
        Az = self.A_eq @ z
        h = np.concatenate([-z, z[capped] - self.capacity[capped], self.b_eq - Az,
                            Az - self.b_eq])
        E = np.vstack([G.T, h[None, :]])
        f = np.zeros(d + 1)
        f[-1] = 1.0
        v, _ = nnls(E, f, maxiter=50 * E.shape[1])
        r = E @ v - f
        if abs(r[-1]) < 1e-14:  # pragma: no cover - the polytope is non-empty
            raise InfeasibleNetworkError("the flow polytope is empty")
        x = -r[:d] / r[-1]
        y = self._clean(z + x)
        scale = max(1.0, float(np.abs(z).max()), float(np.abs(self.b_eq).max(initial=0.0)))
        # Fast certificate: mu = v / (1 - h'v) >= 0 are multipliers of G x >= h with
        # x = G' mu (stationarity by construction); x is optimal when G x >= h and the
        # duality gap mu'(G x - h) vanishes.
        slack = G @ x - h
        if slack.min() >= -tol * scale and float(v @ slack) / -r[-1] <= tol * scale * scale:
            return y, True
        # NNLS stops at a relative tolerance; identify the active set from its answer and
        # solve exactly on it (primal-dual active-set steps), then certify through KKT.
        lower = y <= 1e-7 * scale
        upper = ~lower & (y >= self.capacity - 1e-7 * scale)
        seen = set()
        for _ in range(2 * d + 2):
            key = (lower.tobytes(), upper.tobytes())
            if key in seen:
                break
            seen.add(key)
            y_new, g = self._kkt_solve(z, lower, upper)
            if self._certify(z, y_new, g, lower, upper, tol * scale):
                return self._clean(y_new), True
            lower = (lower & (g > 0)) | (~upper & (y_new < 0))
            upper = ~lower & ((upper & (g < 0)) | (y_new > self.capacity))
        return y, False

    def _kkt_solve(self, z, lower, upper):
        """Minimiser of ||y - z||^2 / 2 s.t. A y = b with the arcs of ``lower`` at 0 and of
        ``upper`` at capacity; returns it and the gradient ``y - z + A' pi``."""
        free = ~(lower | upper)
        y = np.where(upper, self.capacity, 0.0)
        AF = self.A_eq[:, free]
        rhs = self.b_eq - self.A_eq[:, upper] @ self.capacity[upper]
        nf, r = int(free.sum()), len(self.b_eq)
        K = np.zeros((nf + r, nf + r))
        K[:nf, :nf] = np.eye(nf)
        K[:nf, nf:] = AF.T
        K[nf:, :nf] = AF
        sol = np.linalg.lstsq(K, np.concatenate([z[free], rhs]), rcond=None)[0]
        y[free] = sol[:nf]
        return y, y - z + self.A_eq.T @ sol[nf:]

    def _certify(self, z, y, g, lower, upper, atol) -> bool:
        r"""KKT check: y feasible and :math:`y - z + A^\top\pi = \mu_L - \mu_U` for some
        :math:`\pi` and :math:`\mu \ge 0` on the active arcs (bounded least squares, BVLS)."""
        if (np.any(y < -atol) or np.any(y > self.capacity + atol)
                or np.any(np.abs(self.A_eq @ y - self.b_eq) > atol)):
            return False
        free = ~(lower | upper)
        if (np.all(g[lower] >= -atol) and np.all(g[upper] <= atol)
                and np.all(np.abs(g[free]) <= atol)):
            return True  # the least-squares potentials already certify
        L, U = np.flatnonzero(lower), np.flatnonzero(upper)
        d, r = self.n_arcs, len(self.b_eq)
        M = np.hstack([self.A_eq.T, -np.eye(d)[:, L], np.eye(d)[:, U]])
        lb = np.concatenate([np.full(r, -np.inf), np.zeros(len(L) + len(U))])
        res = lsq_linear(M, z - y, bounds=(lb, np.inf), method="bvls")
        return bool(np.abs(M @ res.x - (z - y)).max() <= atol)

    # -- vertices -------------------------------------------------------------------
    def vertices(self, *, max_bases: int = 200_000) -> np.ndarray:
        r"""All vertices of the polytope, shape (n_vertices, d), by basis enumeration.

        A vertex is a basic feasible solution: a set of ``rank(N)`` arcs forming a spanning
        forest of the network carries the flow determined by the supplies, every other arc
        sits at 0 or at its capacity. All such choices are enumerated (at most ``max_bases``
        of them, else ``ValueError``), so this is for small networks only. For a unit
        :math:`s`-:math:`t` flow on an acyclic uncapacitated network the vertices are the
        :math:`s`-:math:`t` path flows.
        """
        if self._vertices is not None:
            return self._vertices.copy()
        if not self.is_bounded:
            raise ValueError("the flow polytope is unbounded (a directed cycle of "
                             "uncapacitated arcs), so its vertices do not describe it")
        d, r = self.n_arcs, len(self._rows)
        capped = np.isfinite(self.capacity)
        n_bases = math.comb(d, r) * 2 ** int(capped.sum())
        if n_bases > max_bases:
            raise ValueError(f"refusing to enumerate up to {n_bases} bases of a network with "
                             f"{d} arcs (max_bases={max_bases})")
        found = []
        for basis in itertools.combinations(range(d), r):
            B = self.A_eq[:, basis]
            if abs(np.linalg.det(B)) < 0.5:  # incidence bases have determinant +-1
                continue
            others = [k for k in range(d) if k not in basis]
            options = [(0.0, self.capacity[k]) if capped[k] else (0.0,) for k in others]
            for values in itertools.product(*options):
                y = np.zeros(d)
                y[others] = values
                y[list(basis)] = np.linalg.solve(B, self.b_eq - self.A_eq[:, others] @ y[others])
                if np.all(y >= -1e-9) and np.all(y <= self.capacity + 1e-9):
                    found.append(self._clean(y))
        V = np.unique(np.round(np.array(found), 12), axis=0)
        V.setflags(write=False)
        self._vertices = V
        return V.copy()

    def feasible_flow(self) -> np.ndarray:
        """Some flow of the polytope (the one found when checking feasibility), shape (d,)."""
        return self._feasible.copy()

    def __repr__(self) -> str:
        return (f"FlowPolytope({self.n_nodes} nodes, {self.n_arcs} arcs, "
                f"capacitated={bool(np.isfinite(self.capacity).any())})")


#: Arcs of the network of the paper's Figure 1 (a, b, c, d are its unnamed inner nodes).
PAPER_ARCS = (("s", "a"), ("s", "b"), ("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"),
              ("b", "d"), ("c", "d"), ("c", "t"), ("d", "t"))


def paper_network() -> FlowPolytope:
    """The network of the paper's Figure 1: one unit of flow from ``s`` to ``t``.

    Nodes ``s, a, b, c, d, t``; arcs ``s->a, s->b, a->b, a->c, a->d, b->c, b->d, c->d, c->t,
    d->t``; :math:`b_s = 1`, :math:`b_t = -1`; uncapacitated.
    """
    return FlowPolytope(PAPER_ARCS, {"s": 1.0, "t": -1.0})
