r"""The flow polytope of a directed network: the output space of network-flow prediction.

A *flow* on a network :math:`G = (\mathcal V, \mathcal A)` with supplies
:math:`b \in \mathbb R^{\mathcal V}` and capacities :math:`u \in [0, \infty]^{\mathcal A}` is a
vector :math:`y \in \mathbb R^{\mathcal A}` with

.. math:: \sum_{k:(j,k)\in\mathcal A} y_{jk} - \sum_{k:(k,j)\in\mathcal A} y_{kj} = b_j
          \quad \forall j \in \mathcal V, \qquad 0 \le y \le u

(ECRM paper, Section 6.2, equation (8)): outflow minus inflow equals the supply. In matrix form
:math:`Ny = b` with the node-arc incidence matrix :math:`N` (:math:`+1` at the tail, :math:`-1`
at the head of every arc). :class:`FlowPolytope` is this set, with its exact linear oracle (an
LP), exact projection (:mod:`ecrm.spaces.flows.projection`), vertices, membership checks and
the risk minimiser a loss with no linear form names (:meth:`ecrm.losses.Loss.risk_minimizer`,
networkx's ``flow_func`` style; :mod:`ecrm.spaces.flows.absolute` and ``flows.squared``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ecrm.spaces._scaling import highs_costs, power_of_two
from ecrm.spaces.base import CertifiedResult, OutputSpace
from ecrm.spaces.flows import _network, _vertices, projection
from ecrm.spaces.flows._network import InfeasibleNetworkError

__all__ = ["PAPER_ARCS", "FlowPolytope", "InfeasibleNetworkError", "paper_network"]


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
        node_list = _network.node_list(arc_list, nodes)
        index = {v: j for j, v in enumerate(node_list)}
        for k, (tail, head) in enumerate(arc_list):
            for v in (tail, head):
                if v not in index:
                    raise ValueError(f"arc {k} ({tail!r}, {head!r}) names unknown node {v!r}; "
                                     f"known nodes: {node_list}")
        self.arcs: tuple[tuple[Hashable, Hashable], ...] = tuple(arc_list)
        self.nodes: tuple[Hashable, ...] = tuple(node_list)
        self._index = index
        self.supply = _network.check_supply(supply, self.nodes, index)
        self.capacity = _network.check_capacity(capacity, self.arcs)
        finite = self.capacity[np.isfinite(self.capacity)]
        #: Magnitude of the data: the largest supply; for a circulation (all supplies 0) the
        #: largest finite capacity; 0 if there is neither. Capacities do not count otherwise:
        #: a big-M capacity of 1e12 must not loosen the tolerances of unit supplies.
        self.data_scale = float(np.abs(self.supply).max(initial=0.0)) or float(
            finite.max(initial=0.0))
        # Every LP, vertex and projection runs on the data divided by this power of two
        # (exact): HiGHS's tolerances are absolute.
        self.scale = power_of_two(self.data_scale)
        self._unit_capacity = self.capacity / self.scale
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
        self._components = _network.weak_components(n_nodes, tails, heads)
        keep = np.ones(n_nodes, dtype=bool)
        for comp in self._components:
            keep[comp[-1]] = False
            total = float(self.supply[comp].sum())
            if abs(total) > 1e-9 * float(np.abs(self.supply).sum()):
                names = [self.nodes[j] for j in comp]
                raise InfeasibleNetworkError(
                    f"infeasible network: the supplies of the connected nodes {names} sum to "
                    f"{total:g}, not zero, so no flow can balance them")
        self._rows = np.flatnonzero(keep)
        self.A_eq = N[self._rows]
        self.b_eq = self.supply[self._rows]
        self._unit_b_eq = self.b_eq / self.scale
        self._feasible = _network.find_feasible_flow(self)
        self._upper: np.ndarray | None = None
        self._vertices: np.ndarray | None = None

    def _unit_bounds(self) -> list[tuple[float, float | None]]:
        """Arc bounds ``[0, u / scale]`` for HiGHS (``None``: uncapacitated)."""
        return [(0.0, None if np.isinf(u) else u) for u in self._unit_capacity]

    @property
    def n_outputs(self) -> int:
        return len(self.arcs)

    @property
    def output_names(self) -> tuple:
        """The arcs ``(tail, head)``, one per output coordinate."""
        return self.arcs

    n_arcs = n_outputs

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
        if self._upper is not None:
            return self._upper
        upper = self.capacity.copy()
        cycle_arcs = self._arcs_on_free_cycles()
        bounds = self._unit_bounds()
        for k in range(self.n_arcs):
            if cycle_arcs[k]:
                upper[k] = np.inf
                continue
            c = np.zeros(self.n_arcs)
            c[k] = -1.0
            res = linprog(c, A_eq=self.A_eq, b_eq=self._unit_b_eq, bounds=bounds,
                          method="highs")
            if res.status == 0:
                upper[k] = min(self.capacity[k], -res.fun * self.scale)
            else:  # pragma: no cover - unbounded only through a free cycle
                upper[k] = np.inf
        upper.setflags(write=False)
        self._upper = upper
        return upper

    def _arcs_on_free_cycles(self) -> np.ndarray:
        """Arcs lying on a directed cycle of uncapacitated arcs (unbounded directions)."""
        free = np.isinf(self.capacity)
        n = self.n_nodes
        closure = np.eye(n, dtype=bool)  # transitive closure by repeated squaring
        closure[self._tails[free], self._heads[free]] = True
        for _ in range(max(1, math.ceil(math.log2(max(n, 2)))) + 1):
            closure = closure | ((closure.astype(np.int64) @ closure.astype(np.int64)) > 0)
        return free & closure[self._heads, self._tails]

    def _as_flows(self, Y, what: str) -> np.ndarray:
        Y = np.array(Y.toarray() if sp.issparse(Y) else Y, dtype=float, copy=True)
        Y = Y[None, :] if Y.ndim == 1 else Y
        if Y.ndim != 2 or Y.shape[1] != self.n_arcs:
            raise ValueError(
                f"{what} must have one column per arc: expected shape (n, {self.n_arcs}) for "
                f"this network of {self.n_arcs} arcs; got shape {np.shape(Y)}")
        if not np.all(np.isfinite(Y)):
            i, k = np.argwhere(~np.isfinite(Y))[0]
            raise ValueError(f"{what} contains a non-finite value at row {i}, arc {k} "
                             f"{self.arcs[k]}")
        return Y

    def _tolerance(self, Y: np.ndarray, atol: float) -> np.ndarray:
        """Tolerance per row of ``Y``: ``atol`` times the larger of the data's magnitude
        (:attr:`data_scale`) and the row's, so that membership is invariant to a common
        rescaling of supplies, capacities and flows (0 only for zero data and a zero row)."""
        return atol * np.maximum(self.data_scale, np.abs(Y).max(axis=1, initial=0.0))

    def _checks(self, Y: np.ndarray, atol: float):
        tol = self._tolerance(Y, atol)[:, None]
        imbalance = Y @ self.incidence.T - self.supply
        return Y < -tol, Y > self.capacity + tol, np.abs(imbalance) > tol, imbalance

    def violations(self, Y, *, atol: float = 1e-8) -> list[str]:
        """Human-readable reasons why rows of ``Y`` are not flows (empty if all are).

        Tolerances are relative: ``atol`` times the larger of :attr:`data_scale` (the largest
        supply) and the row's largest entry.
        """
        Y = self._as_flows(Y, "Y")
        out = []
        neg, over, bad_node, imbalance = self._checks(Y, atol)
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
        """Boolean mask of the rows of ``Y`` that are flows, to ``atol`` relative to the larger
        of the data's magnitude (:attr:`data_scale`) and the row's largest entry."""
        Y = self._as_flows(Y, "Y")
        neg, over, bad_node, _ = self._checks(Y, atol)
        return ~(neg.any(1) | over.any(1) | bad_node.any(1))

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

    def argmin(self, C) -> np.ndarray:
        r"""Minimum-cost flows :math:`\arg\min_{y\in\mathcal Y} \langle c, y\rangle` per row.

        Solved exactly as an LP by HiGHS (a vertex of the polytope). Raises ``ValueError``
        if some row's cost is unbounded below (a negative-cost cycle of uncapacitated arcs).
        """
        return self.minimize_linear(C).solution

    def minimize_linear(self, C) -> CertifiedResult:
        """:meth:`argmin` with the optimal values, as a :class:`~ecrm.spaces.base.CertifiedResult`
        (each cost row scaled exactly to an l1 norm near :math:`2^{20}` for HiGHS)."""
        C = self.check_costs(C)
        bounds = self._unit_bounds()
        Y = np.empty_like(C)
        for i, c in enumerate(highs_costs(C)[0]):
            res = linprog(c, A_eq=self.A_eq, b_eq=self._unit_b_eq, bounds=bounds,
                          method="highs")
            if res.status == 3:
                raise ValueError(
                    f"the linear cost of row {i} is unbounded below on this flow polytope "
                    "(a directed cycle of uncapacitated arcs has negative total cost)")
            if res.status != 0:  # pragma: no cover - feasible by construction
                raise RuntimeError(f"the min-cost flow LP of row {i} failed")
            Y[i] = self.clip(res.x * self.scale)
        value = np.einsum("ij,ij->i", C, Y)
        n = len(C)
        return CertifiedResult(Y, value, value.copy(), np.ones(n, bool), np.full(n, "lp"))

    def clip(self, Y) -> np.ndarray:
        """``Y`` clipped to the arc bounds ``[0, u]`` (removes solvers' round-off)."""
        return np.clip(Y, 0.0, self.capacity)

    def project(self, Z, *, tol: float = 1e-9) -> CertifiedResult:
        r"""Euclidean projection :math:`\Pi(z) = \arg\min_{y \in \mathcal Y} \|y - z\|_2^2` of
        each row of ``Z`` (n, d), exact and certified to the relative tolerance ``tol``
        (:func:`ecrm.spaces.flows.projection.project`)."""
        return projection.project(self, Z, tol=tol)

    def vertices(self, *, max_bases: int = 200_000) -> np.ndarray:
        r"""All vertices of the polytope, shape (n_vertices, d), by basis enumeration.

        A vertex is a basic feasible solution: ``rank(N)`` arcs forming a spanning forest carry
        the flow the supplies determine, every other arc sits at 0 or at its capacity. All
        such choices are enumerated (at most ``max_bases``, else ``ValueError``). For a unit
        :math:`s`-:math:`t` flow on an acyclic uncapacitated network they are the path flows.
        """
        if self._vertices is None:
            V = _vertices.basis_vertices(self, max_bases)
            V.setflags(write=False)
            self._vertices = V
        return self._vertices.copy()

    def rescaled(self, factor: float) -> FlowPolytope:
        """The same network with supplies and capacities multiplied by ``factor`` > 0.

        Its flows are those of this polytope times ``factor``.

        >>> paper_network().rescaled(1e-9).supply.tolist()
        [1e-09, 0.0, 0.0, 0.0, 0.0, -1e-09]
        """
        factor = float(factor)
        if not (np.isfinite(factor) and factor > 0):
            raise ValueError(f"factor must be a positive finite number; got {factor!r}")
        return FlowPolytope(self.arcs, self.supply * factor, self.capacity * factor,
                            nodes=self.nodes)

    def unit_scaled(self, Y_ref: np.ndarray) -> tuple[FlowPolytope, float]:
        r"""This polytope and flows ``Y_ref`` divided by one power of two :math:`\sigma`.

        :math:`\sigma` is :attr:`scale` (the data's magnitude), or that of ``Y_ref`` when
        supplies and capacities are all zero. Returns ``(space, sigma)`` with ``space`` the
        polytope of the flows divided by :math:`\sigma` (``self`` when :math:`\sigma = 1`;
        cached): the risk minimisers solve on it, where HiGHS's absolute tolerances are
        relative to the data, and multiply back (exactly).
        """
        sigma = self.scale if self.data_scale > 0 else power_of_two(
            float(np.abs(Y_ref).max(initial=0.0)))
        if sigma == 1.0:
            return self, 1.0
        cache = self.__dict__.setdefault("_unit_cache", {})
        if sigma not in cache:
            cache[sigma] = self.rescaled(1.0 / sigma)
        return cache[sigma], sigma

    def feasible_flow(self) -> np.ndarray:
        """Some flow of the polytope (the one found when checking feasibility), shape (d,)."""
        return self._feasible.copy()

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """The vertices of the polytope (:meth:`vertices`), shape (n_vertices, d).

        A linear function attains its minimum over a bounded polytope at a vertex, so they
        serve brute-force checks of :meth:`argmin`. Raises ``ValueError`` if the polytope is
        unbounded or has more than ``max_outputs`` vertices.
        """
        V = self.vertices()
        if len(V) > max_outputs:
            raise ValueError(f"refusing to list {len(V)} vertices (max_outputs={max_outputs})")
        return V

    def solve_risk(self, W, Y_ref, loss) -> CertifiedResult:
        r"""Minimise :math:`\sum_i W_{ki}\,\ell(y, Y^{ref}_i)` over the polytope, per row ``k``.

        The minimiser is the callable the loss names (:meth:`ecrm.losses.Loss.risk_minimizer`,
        with the loss's options bound), called as ``f(W, Y_ref, self)``.

        Parameters
        ----------
        W : array-like of shape (n, m)
            Risk weights, any sign and any scale (the minimisers are invariant to a positive
            rescaling of a row).
        Y_ref : array-like of shape (m, d)
            The training outputs, flows of this network.
        loss : ecrm.losses.Loss
            A loss naming a risk minimiser (:class:`~ecrm.losses.AbsoluteLoss`,
            :class:`~ecrm.losses.SquaredLoss`, or one of your own).

        Returns
        -------
        CertifiedResult
            Solutions, risk values, lower bounds, certificates and the method of each row.

        Raises
        ------
        ValueError
            If the loss names no risk minimiser.

        Examples
        --------
        >>> from ecrm.losses import AbsoluteLoss
        >>> space = paper_network()
        >>> V = space.vertices()
        >>> res = space.solve_risk([[1.0, 1.0, -0.5]], V[:3], AbsoluteLoss())
        >>> bool(res.certified[0]), round(float(res.value[0]), 6)
        (True, 2.5)
        """
        minimizer = loss.risk_minimizer()
        if minimizer is None:
            raise ValueError(
                f"{type(loss).__name__} names no risk minimiser (its risk_minimizer() is None), "
                "and the flow polytope cannot enumerate its flows: use a loss with one, such "
                "as AbsoluteLoss or SquaredLoss, or pass your own f(W, Y_ref, space)")
        return minimizer(W, Y_ref, self)

    def minimize_risk(self, W, Y_ref, loss) -> np.ndarray:
        """The solutions of :meth:`solve_risk`, shape (n, d)."""
        return self.solve_risk(W, Y_ref, loss).solution

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
