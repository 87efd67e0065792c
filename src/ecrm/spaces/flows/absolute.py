r"""Exact minimisation of the estimated absolute-loss risk over a flow polytope.

The estimated conditional risk of the absolute loss :math:`\ell(y, y') = \|y - y'\|_1` with
risk weights :math:`w` (any sign: kernel ridge weights are often negative) is separable over
arcs, :math:`\sum_i w_i \|y - y_i\|_1 = \sum_a f_a(y_a)` with
:math:`f_a(t) = \sum_i w_i |t - y_{ia}|` piecewise linear with breakpoints at the training
values of arc :math:`a` (equal training values merge: their weights add up). With all merged
weights :math:`\ge 0` every :math:`f_a` is convex and the problem is an LP. Otherwise it is not
convex and :func:`minimize_absolute_risk` offers (``method=``):

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

**Scale.** HiGHS's tolerances are absolute, so every row of weights is divided by the power of
two nearest to its l1 norm (:func:`ecrm.spaces._scaling.normalize_rows`) and the outputs by one
power of two near the data's magnitude (:meth:`~ecrm.spaces.flows.FlowPolytope.unit_scaled`),
both exact; certificates are relative to those scales: weights of order 1e-14 or 1e12 and
flows of order 1e-12 or 1e12 give the answers of data of order 1.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from ecrm.spaces._scaling import normalize_rows
from ecrm.spaces.base import CertifiedResult
from ecrm.spaces.flows._checks import check_bounded_below, check_risk_inputs
from ecrm.spaces.flows._piecewise import PiecewiseRisk

__all__ = ["ABSOLUTE_METHODS", "absolute_risk", "minimize_absolute_risk"]

#: Inference methods of :func:`minimize_absolute_risk`.
ABSOLUTE_METHODS = ("auto", "local", "milp", "subgradient")

#: Largest number of LP columns solved in one block-diagonal HiGHS call.
_BLOCK_COLUMNS = 40_000


def absolute_risk(W, Y_ref, Y) -> np.ndarray:
    r"""Values :math:`\sum_i W_{ki} \|Y_k - Y^{ref}_i\|_1` for each row ``k``, shape (n,)."""
    W, Y_ref, Y = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (W, Y_ref, Y))
    return np.einsum("ki,kia->k", W, np.abs(Y[:, None, :] - Y_ref[None, :, :]))


#: The envelope LP's value is the certificates' lower bound, compared at ``tol`` (1e-9): HiGHS's
#: default feasibility tolerances (1e-7) let an "optimal" vertex sit above the LP's minimum by
#: more than that, so the LP is solved to HiGHS's tightest tolerances.
_LP_TOLERANCES = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


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
                      bounds=(0, None), method="highs", options=_LP_TOLERANCES)
        if res.status == 3:
            raise ValueError("the estimated risk is unbounded below on this flow polytope")
        if res.status != 0:  # pragma: no cover - feasible and bounded by construction
            raise RuntimeError("the block LP of the absolute-loss inference failed")
        X[start:stop] = res.x.reshape(k, p)
    return X, np.einsum("kp,kp->k", costs, X)


def _tolerance(W: np.ndarray, Y_ref: np.ndarray, tol: float) -> np.ndarray:
    """Certification tolerance per row of the scaled weights ``W`` (l1 norm ~ 1): relative."""
    scale = np.abs(W) @ np.maximum(np.abs(Y_ref).sum(axis=1), 1.0)
    return tol * np.maximum(scale, 1.0)


def minimize_absolute_risk(W, Y_ref, space, *, method: str = "auto", tol: float = 1e-9,
                           max_iter: int = 50, time_limit: float | None = None,
                           subgradient_iter: int = 500, step: float | None = None
                           ) -> CertifiedResult:
    r"""Minimise :math:`\sum_i W_{ki}\|y - Y^{ref}_i\|_1` over the flow polytope, per row ``k``.

    Parameters
    ----------
    W : array-like of shape (n, m)
        Risk weights (any sign, any scale), one row per problem.
    Y_ref : array-like of shape (m, d)
        Reference (training) outputs, flows of ``space``.
    space : FlowPolytope
    method : {"auto", "local", "milp", "subgradient"}, default="auto"
        The methods of :mod:`ecrm.spaces.flows.absolute`.
    tol : float, default=1e-9
        Relative tolerance of certification: a row is certified when
        ``value - bound <= tol * sum_i |W_ki| max(1, |Y_i|_1)`` (up to the factor of at most
        1.5 of the power-of-two scaling of the row; at least ``tol`` times that scale).
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
    CertifiedResult
        Solutions (n, d), objective values, lower bounds, certificates and, per row, the
        method that produced the solution (``"local"``, ``"milp"`` or ``"subgradient"``);
        ``info`` holds the ``method`` asked for, ``tol`` and the solver's counters.

    Examples
    --------
    >>> from ecrm.spaces.flows import paper_network
    >>> space = paper_network()
    >>> V = space.vertices()                      # the 9 path flows
    >>> res = minimize_absolute_risk([[1.0, 1.0, -0.5]], V[:3], space)
    >>> bool(res.certified[0]), round(float(res.value[0]), 6), str(res.method[0])
    (True, 2.5, 'local')
    """
    if method not in ABSOLUTE_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {ABSOLUTE_METHODS}")
    W, Y_ref = check_risk_inputs(W, Y_ref, space)
    n = W.shape[0]
    info: dict = {"method": method, "tol": tol}
    if n == 0:
        empty = np.zeros(0)
        return CertifiedResult(np.zeros((0, space.n_arcs)), empty, empty.copy(),
                               np.zeros(0, bool), np.zeros(0, dtype="<U11"), info)
    check_bounded_below(W, space, strict=True)
    W, scale = normalize_rows(W)
    # Outputs at unit scale too (exact): the merging of training values, the certificates
    # and HiGHS's feasibility tolerances are then relative to the supplies and capacities.
    space, sigma = space.unit_scaled(Y_ref)
    Y_ref = Y_ref / sigma
    scale = scale * sigma
    pwl = PiecewiseRisk(W, Y_ref, space)
    atol = _tolerance(W, Y_ref, tol)
    if method == "subgradient":
        result = _subgradient(pwl, Y_ref, subgradient_iter, step)
    elif method == "milp":
        result = _milp_all(pwl, W, Y_ref, np.arange(n), atol, time_limit)
    else:
        result = _local(pwl, atol, max_iter)
        if method == "auto" and not result.certified.all():
            result = _milp_fallback(result, pwl, W, Y_ref, atol, time_limit)
    return CertifiedResult(result.solution * sigma, result.value * scale, result.bound * scale,
                           result.certified, result.method, {**info, **result.info})


def _milp_fallback(result: CertifiedResult, pwl: PiecewiseRisk, W, Y_ref, atol,
                   time_limit) -> CertifiedResult:
    """``result`` with the MILP's answer on its uncertified rows where the MILP does better."""
    todo = np.flatnonzero(~result.certified)
    exact = _milp_all(pwl, W, Y_ref, todo, atol, time_limit)
    Y, value = result.solution.copy(), result.value.copy()
    cert, lower, by = result.certified.copy(), result.bound.copy(), result.method.copy()
    better = exact.value <= value[todo] + atol[todo]
    # A MILP "optimum" worse than the local solution means HiGHS's tolerances failed it
    # (seen with thousands of breakpoints): never certify such a row.
    contradicted = exact.value > value[todo] + atol[todo]
    Y[todo[better]] = exact.solution[better]
    value[todo[better]] = exact.value[better]
    cert[todo] = (exact.certified & ~contradicted) | (
        value[todo] - np.maximum(lower[todo], exact.bound) <= atol[todo])
    lower[todo] = np.maximum(lower[todo], exact.bound)
    by[todo[better]] = "milp"
    return CertifiedResult(Y, value, lower, cert, by,
                           {**result.info, "milp_rows": int(todo.size),
                            "milp_contradicted": int(contradicted.sum())})


def _local(pwl: PiecewiseRisk, atol: np.ndarray, max_iter: int) -> CertifiedResult:
    n = pwl.n
    M, rhs = pwl.lp_structure()
    # (i) Convex-envelope LP: a lower bound and a starting point.
    X, lower = _solve_block_lp(M, rhs, pwl.lp_costs(np.arange(n), pwl.omega))
    Y = pwl.space.clip(pwl.decode(X))
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
        Yn = pwl.space.clip(pwl.decode(Xn))
        vn = pwl.value(Yn, active)
        improved = vn < value[active] - atol[active]
        upd = active[improved]
        Y[upd], value[upd] = Yn[improved], vn[improved]
        iters[active] += 1
        certified[upd] = value[upd] - lower[upd] <= atol[upd]
        active = upd[~certified[upd]]
    return CertifiedResult(Y, value, lower, certified, np.full(n, "local"),
                           {"dca_iterations": iters})


def _milp_all(pwl: PiecewiseRisk, W, Y_ref, rows, atol, time_limit) -> CertifiedResult:
    space = pwl.space
    Y = np.empty((len(rows), space.n_arcs))
    lower = np.empty(len(rows))
    ok = np.zeros(len(rows), dtype=bool)
    y0 = space.feasible_flow()
    for j, k in enumerate(rows):
        Y[j], lower[j], ok[j] = _milp_one(pwl, k, W[k], Y_ref, y0, time_limit)
    value = pwl.value(Y, rows)
    # Optimal per HiGHS *and* consistent: the exact value of the flow meets the dual bound.
    cert = ok & (value - lower <= atol[rows] + 1e-9 * np.abs(value))
    return CertifiedResult(Y, value, lower, cert, np.full(len(rows), "milp"))


def _milp_one(pwl: PiecewiseRisk, k: int, w: np.ndarray, Y_ref: np.ndarray, y0: np.ndarray,
              time_limit):
    """Exact incremental MILP of one row; returns (flow, lower bound, optimal?)."""
    space = pwl.space
    A_eq = space.A_eq
    radius = None
    if not space.is_bounded:
        # f(y) >= s |y|_1 - sum |w_i| |y_i|_1, so an optimum has |y|_1 <= radius.
        f0 = float(absolute_risk(w[None], Y_ref, y0[None])[0])
        radius = (f0 + np.abs(w) @ np.abs(Y_ref).sum(axis=1)) / w.sum()
    cost: list[float] = []
    upper: list[float] = []
    integ: list[int] = []
    cons_rows: list[int] = []
    cons_cols: list[int] = []
    cons_vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    seg_cols: list[np.ndarray] = []
    starts: list[tuple[float, float]] = []
    n_rows = 0

    def add(x, y, coef_y, low, high):
        """The row ``low <= delta_x + coef_y * delta_y <= high``."""
        nonlocal n_rows
        cons_rows.extend([n_rows, n_rows])
        cons_cols.extend([x, y])
        cons_vals.extend([1.0, coef_y])
        lo.append(low)
        hi.append(high)
        n_rows += 1

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
                add(cols[j], z, -L[j], 0.0, np.inf)
            for j in range(t + 1, edges[q + 2] + 1):  # run after: delta_j <= L_j z
                add(cols[j], z, -L[j], -np.inf, 0.0)
            if q > 0:  # z <= previous z (implied, but keeps the relaxation tight)
                add(z, z - 1, -1.0, -np.inf, 0.0)
    base = np.array([s for s, _ in starts])
    for a, cols in enumerate(seg_cols):
        for node in np.flatnonzero(A_eq[:, a]):
            cons_rows += [n_rows + int(node)] * len(cols)
            cons_cols += cols.tolist()
            cons_vals += [A_eq[node, a]] * len(cols)
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
    return space.clip(y), float(lower), res.status == 0


def _subgradient(pwl: PiecewiseRisk, Y_ref, n_iter: int, step) -> CertifiedResult:
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
    return CertifiedResult(best, best_value, np.full(n, -np.inf), np.zeros(n, bool),
                           np.full(n, "subgradient"), {"iterations": n_iter, "step": step})


