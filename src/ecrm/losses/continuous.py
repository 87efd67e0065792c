r"""Losses on real-valued outputs (flows) and exact inference for them over a flow polytope.

Neither loss is linear in an embedding of :math:`y`, so ECRM minimises the estimated
conditional risk :math:`\hat R(y|x) = \sum_i w_i \ell(y, y_i)` directly through the risk weights
:math:`w` (any sign; kernel ridge weights are often negative).

**Square loss.** With :math:`s = \sum_i w_i` and :math:`g = \sum_i w_i y_i`,

.. math:: \sum_i w_i \|y - y_i\|_2^2 = s\|y\|^2 - 2\langle y, g\rangle + \sum_i w_i\|y_i\|^2 .

For :math:`s > 0` the minimiser is the Euclidean projection of :math:`g/s` onto the polytope
(:meth:`ecrm.spaces.flows.FlowPolytope.project`, exact and KKT-certified). For :math:`s \le 0`
the objective is concave (or linear), so a vertex is optimal: we enumerate the vertices of
small polytopes (exact); on larger ones we run vertex-to-vertex linearisation (local).

**Absolute loss.** The objective is separable over arcs,
:math:`\sum_a f_a(y_a)` with :math:`f_a(t) = \sum_i w_i |t - y_{ia}|` piecewise linear with
breakpoints at the training values of arc :math:`a` (equal training values merge: their
weights add up). With all merged weights :math:`\ge 0` every :math:`f_a` is convex and the
problem is an LP. Otherwise it is not convex and we offer (``method=``):

``"milp"`` (exact)
    The incremental formulation :math:`y_a = \beta_0 + \sum_k \delta_{ak}`,
    :math:`0 \le \delta_{ak} \le L_k = \beta_k - \beta_{k-1}` with slope
    :math:`\sigma_{ak}` as cost. Concave kinks (where the slope decreases) split the
    segments into convex runs; one binary :math:`z` per kink imposes
    :math:`\delta_j \ge L_j z` on the run before it and :math:`\delta_j \le L_j z` on the
    run after it. Inside a convex run the cheaper (earlier) segments fill first at any
    optimum, so every feasible point costs at least :math:`f(y)` and the representation
    filling in order costs exactly :math:`f(y)`. Solved by
    HiGHS (:func:`scipy.optimize.milp`) to a relative gap of ``1e-9``.
``"local"`` (fast, certified when possible)
    (i) The *convex-envelope LP*: replace every :math:`f_a` by its lower convex envelope
    :math:`\breve f_a` on :math:`[0, \bar u_a]` (:math:`\bar u_a` the arc's largest feasible
    value). In the :math:`\lambda`-formulation :math:`y_a = \sum_k \lambda_{ak}\beta_k`,
    :math:`\sum_k \lambda_{ak} = 1`, :math:`\lambda \ge 0` with cost
    :math:`\sum_k \lambda_{ak} f_a(\beta_k)` the LP computes the envelope itself. Its value
    is a proven **lower bound**; if :math:`f(y^{LP})` equals it, :math:`y^{LP}` is optimal.
    (ii) Otherwise *convex-concave iterations* (DCA) from :math:`y^{LP}`: split the merged
    weights into :math:`f = f^+ + f^-` (convex plus concave), replace :math:`f^-` by its
    linearisation at the current point and solve the LP of :math:`f^+` plus that linear term;
    repeat while the objective decreases. The result is certified when its value matches the
    envelope bound. All instances of a batch are solved in one block-diagonal HiGHS LP.
``"auto"`` (default)
    ``"local"``, then ``"milp"`` on the rows it could not certify: exact, and fast when the
    envelope bound is tight (typically nearly always).
``"subgradient"`` (baseline)
    The paper's method: projected subgradient steps :math:`y \leftarrow \Pi(y - \eta_k
    g/\|g\|)`, :math:`\eta_k = \eta_0/\sqrt{k+1}`, from the mean training output, keeping
    the best iterate. Never certified.

Every solver returns a :class:`~ecrm.spaces.flows.FlowResult` (solution, value, certified,
lower bound); :meth:`AbsoluteLoss.minimize_risk` and :meth:`SquaredLoss.minimize_risk`, which
:meth:`ecrm.ECRM.predict` calls, return its ``solution``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from ecrm.losses.base import Loss, paired_rows
from ecrm.spaces.base import OutputSpace
from ecrm.spaces.flows import FlowPolytope, FlowResult

__all__ = [
    "ABSOLUTE_METHODS",
    "AbsoluteLoss",
    "SquaredLoss",
    "absolute_risk",
    "minimize_absolute_risk",
    "minimize_squared_risk",
    "squared_risk",
]

#: Inference methods of :func:`minimize_absolute_risk`.
ABSOLUTE_METHODS = ("auto", "local", "milp", "subgradient")

#: Largest number of LP columns solved in one block-diagonal HiGHS call.
_BLOCK_COLUMNS = 40_000


# -- input checks ---------------------------------------------------------------------------
def _check_space(space) -> FlowPolytope:
    if not isinstance(space, FlowPolytope):
        raise TypeError(
            "the absolute and square losses have no linear form; their exact inference is "
            f"implemented over ecrm.spaces.flows.FlowPolytope, not {type(space).__name__}")
    return space


def _check_weights(W, Y_ref, space: FlowPolytope) -> tuple[np.ndarray, np.ndarray]:
    W = np.atleast_2d(np.asarray(W, dtype=float))
    Y_ref = np.asarray(Y_ref, dtype=float)
    if Y_ref.ndim != 2 or Y_ref.shape[1] != space.n_arcs:
        raise ValueError(f"reference outputs must have shape (m, {space.n_arcs}) (one column "
                         f"per arc); got shape {Y_ref.shape}")
    if W.ndim != 2 or W.shape[1] != Y_ref.shape[0]:
        raise ValueError(f"weights must have shape (n, {Y_ref.shape[0]}), one column per "
                         f"reference output; got shape {W.shape}")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(Y_ref))):
        raise ValueError("weights and reference outputs must be finite")
    return W, Y_ref


def absolute_risk(W, Y_ref, Y) -> np.ndarray:
    r"""Values :math:`\sum_i W_{ki} \|Y_k - Y^{ref}_i\|_1` for each row ``k``, shape (n,)."""
    W, Y_ref, Y = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (W, Y_ref, Y))
    return np.einsum("ki,kia->k", W, np.abs(Y[:, None, :] - Y_ref[None, :, :]))


def squared_risk(W, Y_ref, Y) -> np.ndarray:
    r"""Values :math:`\sum_i W_{ki} \|Y_k - Y^{ref}_i\|_2^2` for each row ``k``, shape (n,)."""
    W, Y_ref, Y = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (W, Y_ref, Y))
    s = W.sum(axis=1)
    return (s * np.sum(Y**2, axis=1) - 2 * np.einsum("ka,ka->k", Y, W @ Y_ref)
            + W @ np.sum(Y_ref**2, axis=1))


# -- per-arc piecewise-linear functions -----------------------------------------------------
@dataclass
class _Arc:
    values: np.ndarray      # sorted distinct training values of the arc (U,)
    indicator: sp.csr_matrix  # (m, U): training output i has value values[j]
    breakpoints: np.ndarray  # (B,) sorted: 0, the values, the arc's upper bound if finite
    bounded: bool


def _merged_values(v: np.ndarray, rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of ``v``, values closer than ``rtol`` (relative) merged, and
    the index of each entry's value: like ``np.unique(v, return_inverse=True)`` but without
    segments of length ~1e-16 whose slopes would be rounding noise."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    new = np.ones(len(sv), dtype=bool)
    new[1:] = np.diff(sv) > rtol * np.maximum(1.0, np.abs(sv[1:]))
    group = np.cumsum(new) - 1
    inverse = np.empty(len(v), dtype=int)
    inverse[order] = group
    return sv[new], inverse


class _PiecewiseRisk:
    r"""The functions :math:`f_a(t) = \sum_v \omega_{av} |t - v|` for a batch of weights.

    ``omega[a]`` (n, U_a) holds the merged weights of arc ``a``'s distinct training values.
    Values and one-sided slopes are computed from prefix sums in O(U) per arc and row.
    """

    def __init__(self, W: np.ndarray, Y_ref: np.ndarray, space: FlowPolytope):
        self.space = space
        self.n = W.shape[0]
        self.total = W.sum(axis=1)  # slope of every f_a beyond its largest value
        upper = space.upper_bounds
        self.arcs: list[_Arc] = []
        self.omega: list[np.ndarray] = []
        for a in range(space.n_arcs):
            values, inverse = _merged_values(Y_ref[:, a])
            ind = sp.csr_matrix((np.ones(len(inverse)), (np.arange(len(inverse)), inverse)),
                                shape=(len(inverse), len(values)))
            bounded = bool(np.isfinite(upper[a]))
            extra = [0.0, upper[a]] if bounded else [0.0]
            bp = _merged_values(np.concatenate([extra, values]))[0]
            bp = bp[bp >= 0.0]
            if bounded:
                bp = bp[bp <= upper[a]]
            self.arcs.append(_Arc(values, ind, bp, bounded))
            self.omega.append(np.asarray((ind.T @ W.T).T))

    def _prefix(self, a: int, omega: np.ndarray):
        vals = self.arcs[a].values
        zero = np.zeros((omega.shape[0], 1))
        cw = np.hstack([zero, np.cumsum(omega, axis=1)])
        cwv = np.hstack([zero, np.cumsum(omega * vals, axis=1)])
        return cw, cwv

    def at(self, a: int, T: np.ndarray, omega: np.ndarray | None = None) -> np.ndarray:
        """:math:`f_a` at points ``T`` (n, k) (one row of points per weight row)."""
        omega = self.omega[a] if omega is None else omega
        cw, cwv = self._prefix(a, omega)
        idx = np.searchsorted(self.arcs[a].values, T, side="right")
        rows = np.arange(omega.shape[0])[:, None]
        below, below_v = cw[rows, idx], cwv[rows, idx]
        tot, tot_v = cw[:, -1:], cwv[:, -1:]
        return T * (2 * below - tot) - 2 * below_v + tot_v

    def value(self, Y: np.ndarray) -> np.ndarray:
        """The objective :math:`\\sum_a f_a(y_a)` for each row of ``Y`` (n, d)."""
        return sum(self.at(a, Y[:, a:a + 1])[:, 0] for a in range(len(self.arcs)))

    def subgradient(self, Y: np.ndarray, omega: list[np.ndarray] | None = None) -> np.ndarray:
        """A (super)gradient: :math:`\\sum_v \\omega_v\\,\\mathrm{sign}(y_a - v)` per arc."""
        omega = self.omega if omega is None else omega
        G = np.empty_like(Y)
        rows = np.arange(Y.shape[0])
        for a, arc in enumerate(self.arcs):
            cw = np.hstack([np.zeros((Y.shape[0], 1)), np.cumsum(omega[a], axis=1)])
            lo = np.searchsorted(arc.values, Y[:, a], side="left")
            hi = np.searchsorted(arc.values, Y[:, a], side="right")
            G[:, a] = cw[rows, lo] - (cw[:, -1] - cw[rows, hi])
        return G

    # -- block LP in the lambda formulation -----------------------------------------
    def lp_structure(self):
        """Constraint block of one instance: columns lambda_{a,k} then one ray per open arc."""
        space = self.space
        A_eq = space.A_eq
        r, d = A_eq.shape
        rows, cols, vals = [], [], []
        col = 0
        self._columns = []
        for a, arc in enumerate(self.arcs):
            B = len(arc.breakpoints)
            nz = np.flatnonzero(A_eq[:, a])
            for k in range(B):
                for j in nz:
                    rows.append(j)
                    cols.append(col + k)
                    vals.append(A_eq[j, a] * arc.breakpoints[k])
                rows.append(r + a)
                cols.append(col + k)
                vals.append(1.0)
            self._columns.append((col, col + B))
            col += B
        self._rays = []
        for a, arc in enumerate(self.arcs):
            if not arc.bounded:
                for j in np.flatnonzero(A_eq[:, a]):
                    rows.append(j)
                    cols.append(col)
                    vals.append(A_eq[j, a])
                self._rays.append((a, col))
                col += 1
        M = sp.csr_matrix((vals, (rows, cols)), shape=(r + d, col))
        rhs = np.concatenate([space.b_eq, np.ones(d)])
        return M, rhs

    def lp_costs(self, rows: np.ndarray, omega: list[np.ndarray],
                 linear: np.ndarray | None = None) -> np.ndarray:
        """LP costs (len(rows), columns) of ``sum_a f_a`` with merged weights ``omega``.

        Columns: the function at every breakpoint (plus ``linear[:, a]`` times it), then for
        each arc without upper bound its slope beyond the largest value, ``sum_v omega_v``.
        """
        parts = []
        for a, arc in enumerate(self.arcs):
            bp = np.broadcast_to(arc.breakpoints, (len(rows), len(arc.breakpoints)))
            F = self.at(a, bp, omega[a][rows])
            if linear is not None:
                F = F + linear[:, a:a + 1] * arc.breakpoints
            parts.append(F)
        for a, _ in self._rays:
            slope = omega[a][rows].sum(axis=1)
            if linear is not None:
                slope = slope + linear[:, a]
            parts.append(slope[:, None])
        return np.hstack(parts)

    def decode(self, X: np.ndarray) -> np.ndarray:
        """Flows from LP solutions ``X`` (n, columns)."""
        Y = np.empty((X.shape[0], len(self.arcs)))
        for a, (c0, c1) in enumerate(self._columns):
            Y[:, a] = X[:, c0:c1] @ self.arcs[a].breakpoints
        for a, col in self._rays:
            Y[:, a] += X[:, col]
        return Y


def _solve_block_lp(M: sp.csr_matrix, rhs: np.ndarray, costs: np.ndarray):
    """Solve ``min c_k'x s.t. M x = rhs, x >= 0`` for every row ``c_k`` of ``costs`` at once.

    The instances are stacked in block-diagonal LPs of at most ``_BLOCK_COLUMNS`` columns;
    returns the solutions (n, p) and the optimal values (n,).
    """
    n, p = costs.shape
    per = max(1, _BLOCK_COLUMNS // max(p, 1))
    X = np.empty((n, p))
    for start in range(0, n, per):
        stop = min(n, start + per)
        k = stop - start
        A = sp.kron(sp.identity(k, format="csr"), M, format="csr")
        res = linprog(costs[start:stop].ravel(), A_eq=A, b_eq=np.tile(rhs, k),
                      bounds=(0, None), method="highs")
        if res.status == 3:
            raise ValueError("the estimated risk is unbounded below on this flow polytope")
        if res.status != 0:  # pragma: no cover - feasible and bounded by construction
            raise RuntimeError("the block LP of the absolute-loss inference failed")
        X[start:stop] = res.x.reshape(k, p)
    return X, np.einsum("kp,kp->k", costs, X)


def _tolerance(W: np.ndarray, Y_ref: np.ndarray, tol: float) -> np.ndarray:
    scale = np.abs(W) @ np.maximum(np.abs(Y_ref).sum(axis=1), 1.0)
    return tol * np.maximum(scale, 1.0)


# -- absolute loss ----------------------------------------------------------------------
def minimize_absolute_risk(W, Y_ref, space, *, method: str = "auto", tol: float = 1e-9,
                           max_iter: int = 50, time_limit: float | None = None,
                           subgradient_iter: int = 500, step: float | None = None
                           ) -> FlowResult:
    r"""Minimise :math:`\sum_i W_{ki}\|y - Y^{ref}_i\|_1` over the flow polytope, per row ``k``.

    Parameters
    ----------
    W : array-like of shape (n, m)
        Risk weights (any sign), one row per problem.
    Y_ref : array-like of shape (m, d)
        Reference (training) outputs, flows of ``space``.
    space : FlowPolytope
    method : {"auto", "local", "milp", "subgradient"}, default="auto"
        See :mod:`ecrm.losses.continuous`: ``"milp"`` exact, ``"local"`` the envelope LP and
        convex-concave iterations (certified when its value meets the envelope bound),
        ``"auto"`` local then MILP on the uncertified rows, ``"subgradient"`` the paper's
        projected subgradient method.
    tol : float, default=1e-9
        Relative tolerance of certification: a row is certified when
        ``value - lower_bound <= tol * max(1, sum_i |W_ki| max(1, |Y_i|_1))``.
    max_iter : int, default=50
        Maximum convex-concave iterations (``"local"``, ``"auto"``).
    time_limit : float, default=None
        Seconds allowed to each MILP (``None``: no limit); a MILP stopped early returns its
        incumbent, uncertified, with HiGHS's dual bound.
    subgradient_iter : int, default=500
        Iterations of the subgradient method.
    step : float, default=None
        Initial step :math:`\eta_0` of the subgradient method; default half the largest arc
        bound (or of the largest training value on unbounded networks).

    Returns
    -------
    FlowResult
        Solutions (n, d), objective values, certification, lower bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm.spaces.flows import paper_network
    >>> space = paper_network()
    >>> V = space.vertices()                      # the 9 path flows
    >>> res = minimize_absolute_risk([[1.0, 1.0, -0.5]], V[:3], space)
    >>> bool(res.certified[0]), round(float(res.value[0]), 6)
    (True, 2.5)
    """
    if method not in ABSOLUTE_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {ABSOLUTE_METHODS}")
    space = _check_space(space)
    W, Y_ref = _check_weights(W, Y_ref, space)
    n = W.shape[0]
    if n == 0:
        empty = np.zeros(0)
        return FlowResult(np.zeros((0, space.n_arcs)), empty, np.zeros(0, bool), empty,
                          method, np.zeros(0, dtype="<U11"), tol)
    if not space.is_bounded:
        s = W.sum(axis=1)
        scale = np.abs(W).sum(axis=1)
        bad = np.flatnonzero(s <= 1e-12 * np.maximum(scale, 1e-300))
        if bad.size:
            raise ValueError(
                f"the estimated risk of row {bad[0]} is unbounded below: its weights sum to "
                f"{s[bad[0]]:g} <= 0 and the flow polytope is unbounded (a directed cycle of "
                "uncapacitated arcs)")
    pwl = _PiecewiseRisk(W, Y_ref, space)
    atol = _tolerance(W, Y_ref, tol)
    if method == "subgradient":
        return _subgradient(pwl, W, Y_ref, atol, subgradient_iter, step)
    if method == "milp":
        return _milp_all(pwl, W, Y_ref, np.arange(n), atol, time_limit, method)
    result = _local(pwl, atol, max_iter)
    if method == "local" or result.certified.all():
        return result if method == "local" else _relabel(result, method)
    todo = np.flatnonzero(~result.certified)
    exact = _milp_all(pwl, W, Y_ref, todo, atol, time_limit, method, sub=True)
    Y, value = result.solution.copy(), result.value.copy()
    cert, lower, by = result.certified.copy(), result.lower_bound.copy(), result.solved_by.copy()
    better = exact.value <= value[todo] + atol[todo]
    # A MILP "optimum" worse than the local solution means HiGHS's tolerances failed it
    # (seen with thousands of breakpoints): never certify such a row.
    contradicted = exact.value > value[todo] + atol[todo]
    Y[todo[better]] = exact.solution[better]
    value[todo[better]] = exact.value[better]
    cert[todo] = (exact.certified & ~contradicted) | (
        value[todo] - np.maximum(lower[todo], exact.lower_bound) <= atol[todo])
    lower[todo] = np.maximum(lower[todo], exact.lower_bound)
    by[todo[better]] = "milp"
    return FlowResult(Y, value, cert, lower, method, by, tol,
                      {"milp_rows": int(todo.size), "milp_contradicted": int(contradicted.sum())})


def _relabel(result: FlowResult, method: str) -> FlowResult:
    return FlowResult(result.solution, result.value, result.certified, result.lower_bound,
                      method, result.solved_by, result.tol, result.info)


def _local(pwl: _PiecewiseRisk, atol: np.ndarray, max_iter: int) -> FlowResult:
    n = pwl.n
    M, rhs = pwl.lp_structure()
    # (i) Convex-envelope LP: a lower bound and a starting point.
    X, lower = _solve_block_lp(M, rhs, pwl.lp_costs(np.arange(n), pwl.omega))
    Y = pwl.space._clean(pwl.decode(X))
    value = pwl.value(Y)
    certified = value - lower <= atol
    iters = np.zeros(n, dtype=int)
    # (ii) Convex-concave iterations on the rest: f^+ exact, f^- linearised.
    plus = [np.maximum(o, 0.0) for o in pwl.omega]
    minus = [np.minimum(o, 0.0) for o in pwl.omega]
    active = np.flatnonzero(~certified)
    for _ in range(max_iter):
        if active.size == 0:
            break
        G = pwl.subgradient(Y[active], [m[active] for m in minus])
        Xn, _ = _solve_block_lp(M, rhs, pwl.lp_costs(active, plus, linear=G))
        Yn = pwl.space._clean(pwl.decode(Xn))
        vn = _values_for(pwl, Yn, active)
        improved = vn < value[active] - atol[active]
        upd = active[improved]
        Y[upd], value[upd] = Yn[improved], vn[improved]
        iters[active] += 1
        certified[upd] = value[upd] - lower[upd] <= atol[upd]
        active = upd[~certified[upd]]
    return FlowResult(Y, value, certified, lower, "local", np.full(n, "local"),
                      float(atol.max()) if atol.size else 0.0,
                      {"dca_iterations": iters})


def _values_for(pwl: _PiecewiseRisk, Y: np.ndarray, rows: np.ndarray) -> np.ndarray:
    total = np.zeros(len(rows))
    for a in range(len(pwl.arcs)):
        total += pwl.at(a, Y[:, a:a + 1], pwl.omega[a][rows])[:, 0]
    return total


def _milp_all(pwl: _PiecewiseRisk, W, Y_ref, rows, atol, time_limit, method,
              sub: bool = False) -> FlowResult:
    space = pwl.space
    Y = np.empty((len(rows), space.n_arcs))
    lower = np.empty(len(rows))
    ok = np.zeros(len(rows), dtype=bool)
    y0 = space.feasible_flow()
    for j, k in enumerate(rows):
        Y[j], lower[j], ok[j] = _milp_one(pwl, k, W[k], Y_ref, y0, time_limit)
    value = _values_for(pwl, Y, rows)
    # Optimal per HiGHS *and* consistent: the exact value of the flow meets the dual bound.
    cert = ok & (value - lower <= atol[rows] + 1e-9 * np.abs(value))
    return FlowResult(Y, value, cert, lower, method, np.full(len(rows), "milp"),
                      float(atol.max()) if atol.size else 0.0)


def _milp_one(pwl: _PiecewiseRisk, k: int, w: np.ndarray, Y_ref: np.ndarray, y0: np.ndarray,
              time_limit):
    """Exact incremental MILP of one row; returns (flow, lower bound, optimal?)."""
    space = pwl.space
    A_eq = space.A_eq
    radius = None
    if not space.is_bounded:
        # f(y) >= s |y|_1 - sum |w_i| |y_i|_1, so an optimum has |y|_1 <= radius.
        f0 = float(absolute_risk(w[None], Y_ref, y0[None])[0])
        radius = (f0 + np.abs(w) @ np.abs(Y_ref).sum(axis=1)) / w.sum()
    cost, upper, integ = [], [], []
    cons_rows, cons_cols, cons_vals, lo, hi = [], [], [], [], []
    seg_cols, starts = [], []
    n_rows = 0
    for a, arc in enumerate(pwl.arcs):
        bp = arc.breakpoints
        if not arc.bounded:
            bp = np.append(bp, max(radius, bp[-1]) + 1.0)
        F = pwl.at(a, bp[None, :], pwl.omega[a][k:k + 1])[0]
        L = np.diff(bp)
        slope = np.diff(F) / np.where(L > 0, L, 1.0)
        first = len(cost)
        cost += slope.tolist()
        upper += L.tolist()
        integ += [0] * len(L)
        cols = np.arange(first, first + len(L))
        seg_cols.append(cols)
        starts.append((bp[0], F[0]))
        # Concave kinks split the segments into convex runs. With one binary z per kink:
        # the run before the kink is full when z = 1, the run after it is empty when z = 0.
        kinks = [t for t in range(len(L) - 1)
                 if slope[t + 1] < slope[t] - 1e-12 * (1 + abs(slope[t]))]
        edges = [-1] + kinks + [len(L) - 1]
        for q, t in enumerate(kinks):
            z = len(cost)
            cost.append(0.0)
            upper.append(1.0)
            integ.append(1)
            for j in range(edges[q] + 1, t + 1):  # run before: delta_j >= L_j z
                cons_rows += [n_rows, n_rows]
                cons_cols += [cols[j], z]
                cons_vals += [1.0, -L[j]]
                lo.append(0.0)
                hi.append(np.inf)
                n_rows += 1
            for j in range(t + 1, edges[q + 2] + 1):  # run after: delta_j <= L_j z
                cons_rows += [n_rows, n_rows]
                cons_cols += [cols[j], z]
                cons_vals += [1.0, -L[j]]
                lo.append(-np.inf)
                hi.append(0.0)
                n_rows += 1
            if q > 0:  # z <= previous z (implied, but keeps the relaxation tight)
                cons_rows += [n_rows, n_rows]
                cons_cols += [z, z - 1]
                cons_vals += [1.0, -1.0]
                lo.append(-np.inf)
                hi.append(0.0)
                n_rows += 1
    base = np.array([s for s, _ in starts])
    for a, cols in enumerate(seg_cols):
        for j in np.flatnonzero(A_eq[:, a]):
            cons_rows += [n_rows + j] * len(cols)
            cons_cols += cols.tolist()
            cons_vals += [A_eq[j, a]] * len(cols)
    rhs = space.b_eq - A_eq @ base
    lo += rhs.tolist()
    hi += rhs.tolist()
    n_rows += A_eq.shape[0]
    n_cols = len(cost)
    A = sp.csr_matrix((cons_vals, (cons_rows, cons_cols)), shape=(n_rows, n_cols))
    options = {"mip_rel_gap": 1e-9}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    res = milp(np.array(cost), constraints=LinearConstraint(A, lo, hi),
               bounds=Bounds(np.zeros(n_cols), np.array(upper)),
               integrality=np.array(integ), options=options)
    if res.x is None:  # pragma: no cover - feasible by construction; time limit w/o incumbent
        return y0.copy(), -np.inf, False
    y = base + np.array([res.x[c].sum() for c in seg_cols])
    const = sum(F0 for _, F0 in starts)
    bound = getattr(res, "mip_dual_bound", None)
    lower = const + (bound if bound is not None and np.isfinite(bound) else res.fun)
    return space._clean(y), float(lower), res.status == 0


def _subgradient(pwl: _PiecewiseRisk, W, Y_ref, atol, n_iter: int, step) -> FlowResult:
    space = pwl.space
    n = pwl.n
    upper = space.upper_bounds
    if step is None:
        finite = upper[np.isfinite(upper)]
        scale = finite.max() if finite.size else float(np.abs(Y_ref).max(initial=1.0))
        step = 0.5 * max(scale, 1e-12)
    Y = np.repeat(Y_ref.mean(axis=0, keepdims=True), n, axis=0)  # feasible (convex set)
    best, best_value = Y.copy(), pwl.value(Y)
    for it in range(n_iter):
        G = pwl.subgradient(Y)
        norm = np.linalg.norm(G, axis=1)
        moving = norm > 0
        if not moving.any():
            break
        Z = Y.copy()
        Z[moving] -= (step / np.sqrt(it + 1.0)) * G[moving] / norm[moving, None]
        Y = space.project(Z).solution
        v = pwl.value(Y)
        improved = v < best_value
        best[improved], best_value[improved] = Y[improved], v[improved]
    return FlowResult(best, best_value, np.zeros(n, bool), np.full(n, -np.inf),
                      "subgradient", np.full(n, "subgradient"), float(atol.max()),
                      {"iterations": n_iter, "step": step})


# -- square loss --------------------------------------------------------------------------
def minimize_squared_risk(W, Y_ref, space, *, tol: float = 1e-9, max_vertices: int = 200_000,
                          max_iter: int = 100) -> FlowResult:
    r"""Minimise :math:`\sum_i W_{ki}\|y - Y^{ref}_i\|_2^2` over the flow polytope, per row.

    With :math:`s_k = \sum_i W_{ki}` and :math:`g_k = \sum_i W_{ki} Y^{ref}_i` the objective is
    :math:`s_k\|y\|^2 - 2\langle y, g_k\rangle + \mathrm{const}`:

    * :math:`s_k > 0`: the projection :math:`\Pi(g_k/s_k)` (exact, KKT-certified);
    * :math:`s_k \le 0` on a bounded polytope: the best vertex (concave objective), by
      enumerating the vertices when there are at most ``max_vertices`` bases (exact), else by
      vertex-to-vertex linearisation from the LP of the linear part (local, uncertified);
    * :math:`s_k < 0` on an unbounded polytope: ``ValueError`` (unbounded below).

    Returns
    -------
    FlowResult

    Examples
    --------
    >>> from ecrm.spaces.flows import paper_network
    >>> space = paper_network()
    >>> V = space.vertices()
    >>> res = minimize_squared_risk([[0.5, 0.5]], V[:2], space)   # the midpoint
    >>> bool(res.certified[0]), res.solution[0].round(2).tolist() == (V[:2].mean(0)).tolist()
    (True, True)
    """
    space = _check_space(space)
    W, Y_ref = _check_weights(W, Y_ref, space)
    n = W.shape[0]
    s = W.sum(axis=1)
    G = W @ Y_ref
    scale = np.maximum(np.abs(W).sum(axis=1), 1e-300)
    convex = s > 1e-12 * scale
    Y = np.empty((n, space.n_arcs))
    certified = np.zeros(n, dtype=bool)
    by = np.empty(n, dtype="<U11")
    if convex.any():
        proj = space.project(G[convex] / s[convex, None], tol=tol)
        Y[convex], certified[convex], by[convex] = proj.solution, proj.certified, "projection"
    rest = np.flatnonzero(~convex)
    if rest.size:
        if not space.is_bounded:
            if np.any(s[rest] < -1e-12 * scale[rest]):
                k = rest[np.argmax(s[rest] < -1e-12 * scale[rest])]
                raise ValueError(
                    f"the estimated risk of row {k} is unbounded below: its weights sum to "
                    f"{s[k]:g} < 0 and the flow polytope is unbounded (a directed cycle of "
                    "uncapacitated arcs)")
            lin = space.minimize_linear(-2 * G[rest])
            Y[rest], certified[rest], by[rest] = lin.solution, True, "lp"
        else:
            try:
                V = space.vertices(max_bases=max_vertices)
            except ValueError:
                V = None
            if V is not None:
                vals = (s[rest, None] * np.sum(V**2, axis=1)[None, :] - 2 * G[rest] @ V.T)
                Y[rest], certified[rest], by[rest] = V[np.argmin(vals, axis=1)], True, "vertices"
            else:
                for k in rest:
                    Y[k] = _concave_vertex_descent(space, s[k], G[k], max_iter)
                certified[rest], by[rest] = False, "local"
    value = squared_risk(W, Y_ref, Y)
    lower = np.where(certified, value, -np.inf)
    return FlowResult(Y, value, certified, lower, "auto", by, tol)


def _concave_vertex_descent(space: FlowPolytope, s: float, g: np.ndarray, max_iter: int):
    """Local method for s <= 0: y <- argmin_vertex <grad(y), .> until no decrease."""
    y = space.argmin(-2 * g)[0]
    val = s * y @ y - 2 * g @ y
    for _ in range(max_iter):
        y_new = space.argmin(2 * s * y - 2 * g)[0]
        v_new = s * y_new @ y_new - 2 * g @ y_new
        if v_new >= val - 1e-12 * (1 + abs(val)):
            break
        y, val = y_new, v_new
    return y


# -- loss classes -------------------------------------------------------------------------
class AbsoluteLoss(Loss):
    r"""Absolute (:math:`\ell_1`) loss :math:`\ell(y, y') = \sum_a |y_a - y'_a|`.

    It has no linear form in :math:`y`; :meth:`minimize_risk` minimises the estimated
    conditional risk over a :class:`~ecrm.spaces.flows.FlowPolytope` with
    :func:`minimize_absolute_risk`.

    Parameters
    ----------
    method : {"auto", "local", "milp", "subgradient"}, default="auto"
        Inference method; ``"auto"`` is exact (local method, MILP where uncertified).
    time_limit : float, default=None
        Seconds per MILP.

    Examples
    --------
    >>> AbsoluteLoss()([[0.5, 0.5]], [[1.0, 0.0]])
    array([1.])
    """

    def __init__(self, method: str = "auto", *, time_limit: float | None = None):
        self.method = method
        self.time_limit = time_limit

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.abs(Y_pred - Y_true).sum(axis=1)

    def solve(self, W, Y_ref, space: OutputSpace) -> FlowResult:
        """:func:`minimize_absolute_risk` with this loss's method: a :class:`FlowResult`."""
        return minimize_absolute_risk(W, Y_ref, space, method=self.method,
                                      time_limit=self.time_limit)

    def minimize_risk(self, W, Y_ref, space: OutputSpace) -> np.ndarray:
        return self.solve(W, Y_ref, space).solution

    def __repr__(self) -> str:
        return f"AbsoluteLoss(method={self.method!r})"


class SquaredLoss(Loss):
    r"""Square loss :math:`\ell(y, y') = \sum_a (y_a - y'_a)^2 = \|y - y'\|_2^2`.

    Its risk minimiser over a :class:`~ecrm.spaces.flows.FlowPolytope` is a Euclidean
    projection when the weights sum to a positive number (:func:`minimize_squared_risk`).

    Examples
    --------
    >>> SquaredLoss()([[0.5, 0.5]], [[1.0, 0.0]])
    array([0.5])
    """

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.sum((Y_pred - Y_true) ** 2, axis=1)

    def solve(self, W, Y_ref, space: OutputSpace) -> FlowResult:
        """:func:`minimize_squared_risk`: a :class:`FlowResult`."""
        return minimize_squared_risk(W, Y_ref, space)

    def minimize_risk(self, W, Y_ref, space: OutputSpace) -> np.ndarray:
        return self.solve(W, Y_ref, space).solution

    def __repr__(self) -> str:
        return "SquaredLoss()"
