r"""Exact minimisation of the estimated square-loss risk over a flow polytope.

With :math:`s = \sum_i w_i` and :math:`g = \sum_i w_i y_i`,

.. math:: \sum_i w_i \|y - y_i\|_2^2 = s\|y\|^2 - 2\langle y, g\rangle + \sum_i w_i\|y_i\|^2 .

For :math:`s > 0` the minimiser is the Euclidean projection of :math:`g/s` onto the polytope
(:meth:`ecrm.spaces.flows.FlowPolytope.project`, exact and KKT-certified). For :math:`s \le 0`
the objective is concave (or linear), so a vertex is optimal: we enumerate the vertices of
small polytopes (exact); on larger ones we run vertex-to-vertex linearisation (local).

Weights and outputs are scaled exactly by powers of two first, as for the absolute loss
(:mod:`ecrm.spaces.flows.absolute`), so the sign test of :math:`s` and every comparison are
relative.
"""

from __future__ import annotations

import numpy as np

from ecrm.spaces._scaling import normalize_rows
from ecrm.spaces.base import CertifiedResult
from ecrm.spaces.flows._checks import check_bounded_below, check_risk_inputs
from ecrm.spaces.flows.polytope import FlowPolytope

__all__ = ["minimize_squared_risk", "squared_risk"]


def squared_risk(W, Y_ref, Y) -> np.ndarray:
    r"""Values :math:`\sum_i W_{ki} \|Y_k - Y^{ref}_i\|_2^2` for each row ``k``, shape (n,)."""
    W, Y_ref, Y = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (W, Y_ref, Y))
    s = W.sum(axis=1)
    return (s * np.sum(Y**2, axis=1) - 2 * np.einsum("ka,ka->k", Y, W @ Y_ref)
            + W @ np.sum(Y_ref**2, axis=1))


def minimize_squared_risk(W, Y_ref, space, *, tol: float = 1e-9, max_vertices: int = 200_000,
                          max_iter: int = 100) -> CertifiedResult:
    r"""Minimise :math:`\sum_i W_{ki}\|y - Y^{ref}_i\|_2^2` over the flow polytope, per row.

    With :math:`s_k = \sum_i W_{ki}` and :math:`g_k = \sum_i W_{ki} Y^{ref}_i` the objective is
    :math:`s_k\|y\|^2 - 2\langle y, g_k\rangle + \mathrm{const}`:

    * :math:`s_k > 0`: the projection :math:`\Pi(g_k/s_k)` (exact, KKT-certified);
    * :math:`s_k \le 0` on a bounded polytope: the best vertex (concave objective), by
      enumerating the vertices when there are at most ``max_vertices`` bases (exact), else by
      vertex-to-vertex linearisation from the LP of the linear part (local, uncertified);
    * :math:`s_k < 0` on an unbounded polytope: ``ValueError`` (unbounded below).

    Parameters
    ----------
    W, Y_ref, space :
        As in :func:`~ecrm.spaces.flows.minimize_absolute_risk`.
    tol : float, default=1e-9
        Relative tolerance of the projection's KKT certificate.
    max_vertices : int, default=200_000
        Largest number of bases enumerated to list the vertices.
    max_iter : int, default=100
        Iterations of the local vertex method.

    Returns
    -------
    CertifiedResult
        ``method`` per row: ``"projection"``, ``"vertices"``, ``"lp"`` or ``"local"``.

    Examples
    --------
    >>> from ecrm.spaces.flows import paper_network
    >>> space = paper_network()
    >>> V = space.vertices()
    >>> res = minimize_squared_risk([[0.5, 0.5]], V[:2], space)   # the midpoint
    >>> bool(res.certified[0]), res.solution[0].round(2).tolist() == (V[:2].mean(0)).tolist()
    (True, True)
    """
    W_in, Y_in = check_risk_inputs(W, Y_ref, space)
    check_bounded_below(W_in, space, strict=False)
    W = normalize_rows(W_in)[0]
    space, sigma = space.unit_scaled(Y_in)  # outputs at unit scale (exact), as the weights
    Y_ref = Y_in / sigma
    n = W.shape[0]
    s = W.sum(axis=1)
    G = W @ Y_ref
    convex = s > 1e-12 * np.maximum(np.abs(W).sum(axis=1), 1e-300)
    Y = np.empty((n, space.n_arcs))
    certified = np.zeros(n, dtype=bool)
    by = np.empty(n, dtype="<U11")
    if convex.any():
        proj = space.project(G[convex] / s[convex, None], tol=tol)
        Y[convex], certified[convex], by[convex] = proj.solution, proj.certified, "projection"
    rest = np.flatnonzero(~convex)
    if rest.size and not space.is_bounded:  # s = 0 here: a linear objective
        Y[rest], certified[rest], by[rest] = space.argmin(-2 * G[rest]), True, "lp"
    elif rest.size:
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
    Y = Y * sigma
    value = squared_risk(W_in, Y_in, Y)
    return CertifiedResult(Y, value, np.where(certified, value, -np.inf), certified, by,
                           {"tol": tol})


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
