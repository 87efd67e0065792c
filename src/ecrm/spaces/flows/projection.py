r"""Exact, certified Euclidean projection onto a flow polytope.

.. math:: \Pi(z) = \arg\min_{y} \tfrac12 \|y - z\|_2^2 \quad \text{s.t.}\quad
          Ny = b,\; 0 \le y \le u .

**Method.** With :math:`x = y - z` this is a *least-distance problem* :math:`\min \|x\|^2`
s.t. :math:`Gx \ge h` (the equalities as two inequalities), which Lawson & Hanson (1974,
ch. 23) reduce to one non-negative least-squares problem
:math:`\min_{v\ge0} \|E v - e_{d+1}\|` with :math:`E = [G^\top; h^\top]`: if
:math:`r = Ev - e_{d+1} \ne 0` then :math:`x = -r_{1:d}/r_{d+1}`. NNLS
(:func:`scipy.optimize.nnls`) is a finite active-set algorithm, so the answer is exact up to
its stopping tolerance. We then make it exact and *certify* it: with the arcs found at a bound
fixed there, the equality-constrained QP on the free arcs is solved from its KKT system
(primal-dual active-set steps if the active set was wrong), and the KKT conditions are
checked: feasibility, and multipliers of the right sign for the active bounds (a bounded
least-squares problem, BVLS, since the potentials :math:`\pi` are not unique). No starting
point is needed and the rank-deficient incidence matrix is no obstacle.
**Scale.** The problem is solved on the data divided by the polytope's power-of-two
:attr:`~ecrm.spaces.flows.FlowPolytope.scale` (exact), every tolerance relative to the larger
of 1 and the scaled magnitudes: the projection is equivariant under a common rescaling of
supplies, capacities and points, from 1e-12 to 1e12.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from scipy.optimize import lsq_linear, nnls

from ecrm.spaces.base import CertifiedResult

if TYPE_CHECKING:
    from ecrm.spaces.flows.polytope import FlowPolytope

__all__ = ["project"]


class _Data(NamedTuple):
    """The polytope's data divided by its scale: ``A y = b``, ``0 <= y <= u``."""

    A: np.ndarray
    b: np.ndarray
    u: np.ndarray

    def clip(self, y: np.ndarray) -> np.ndarray:
        return np.clip(y, 0.0, self.u)


def project(space: FlowPolytope, Z, *, tol: float = 1e-9) -> CertifiedResult:
    r"""Euclidean projection of each row of ``Z`` onto ``space`` (see the module docstring).

    Parameters
    ----------
    space : FlowPolytope
    Z : array-like of shape (n, d)
        Points to project, one per row.
    tol : float, default=1e-9
        Relative tolerance of the KKT certificate.

    Returns
    -------
    CertifiedResult
        ``value`` is :math:`\|\Pi(z) - z\|^2`; ``certified`` says whether the KKT conditions
        hold to ``tol``; ``method`` is ``"nnls-ldp"`` on every row.
    """
    Z = np.atleast_2d(np.asarray(Z, dtype=float))
    if Z.ndim != 2 or Z.shape[1] != space.n_arcs:
        raise ValueError(f"points to project must have shape (n, {space.n_arcs}); "
                         f"got shape {np.shape(Z)}")
    if not np.all(np.isfinite(Z)):
        raise ValueError("points to project contain NaN or infinite values")
    d = space.n_arcs
    data = _Data(space.A_eq, space._unit_b_eq, space._unit_capacity)
    capped = np.flatnonzero(np.isfinite(data.u))
    G = np.vstack([np.eye(d), -np.eye(d)[capped], data.A, -data.A])
    Y = np.empty_like(Z)
    certified = np.zeros(len(Z), dtype=bool)
    for i, z in enumerate(Z / space.scale):
        Y[i], certified[i] = _project_one(data, G, capped, z, tol)
    Y = space.clip(Y * space.scale)
    value = np.sum((Y - Z) ** 2, axis=1)
    return CertifiedResult(Y, value, np.where(certified, value, -np.inf), certified,
                           np.full(len(Z), "nnls-ldp"), {"tol": tol})


def _project_one(space: _Data, G: np.ndarray, capped: np.ndarray, z: np.ndarray,
                 tol: float) -> tuple[np.ndarray, bool]:
    d = len(z)
    Az = space.A @ z
    h = np.concatenate([-z, z[capped] - space.u[capped], space.b - Az, Az - space.b])
    E = np.vstack([G.T, h[None, :]])
    f = np.zeros(d + 1)
    f[-1] = 1.0
    v, _ = nnls(E, f, maxiter=50 * E.shape[1])
    r = E @ v - f
    if abs(r[-1]) < 1e-14:  # pragma: no cover - the polytope is non-empty
        raise ValueError("the flow polytope is empty")
    x = -r[:d] / r[-1]
    y = space.clip(z + x)
    scale = max(1.0, float(np.abs(z).max()), float(np.abs(space.b).max(initial=0.0)))
    # Fast certificate: mu = v / (1 - h'v) >= 0 are multipliers of G x >= h with
    # x = G' mu (stationarity by construction); x is optimal when G x >= h and the
    # duality gap mu'(G x - h) vanishes.
    slack = G @ x - h
    if slack.min() >= -tol * scale and float(v @ slack) / -r[-1] <= tol * scale * scale:
        return y, True
    # NNLS stops at a relative tolerance; identify the active set from its answer and
    # solve exactly on it (primal-dual active-set steps), then certify through KKT.
    lower = y <= 1e-7 * scale
    upper = ~lower & (y >= space.u - 1e-7 * scale)
    seen = set()
    for _ in range(2 * d + 2):
        key = (lower.tobytes(), upper.tobytes())
        if key in seen:
            break
        seen.add(key)
        y_new, g = _kkt_solve(space, z, lower, upper)
        if _certify(space, z, y_new, g, lower, upper, tol * scale):
            return space.clip(y_new), True
        lower = (lower & (g > 0)) | (~upper & (y_new < 0))
        upper = ~lower & ((upper & (g < 0)) | (y_new > space.u))
    return y, False


def _kkt_solve(space: _Data, z, lower, upper):
    """Minimiser of ||y - z||^2 / 2 s.t. A y = b with the arcs of ``lower`` at 0 and of
    ``upper`` at capacity; returns it and the gradient ``y - z + A' pi``."""
    A, u = space.A, space.u
    free = ~(lower | upper)
    y = np.where(upper, u, 0.0)
    AF = A[:, free]
    rhs = space.b - A[:, upper] @ u[upper]
    nf, r = int(free.sum()), len(space.b)
    K = np.zeros((nf + r, nf + r))
    K[:nf, :nf] = np.eye(nf)
    K[:nf, nf:] = AF.T
    K[nf:, :nf] = AF
    sol = np.linalg.lstsq(K, np.concatenate([z[free], rhs]), rcond=None)[0]
    y[free] = sol[:nf]
    return y, y - z + A.T @ sol[nf:]


def _certify(space: _Data, z, y, g, lower, upper, atol) -> bool:
    r"""KKT check: y feasible and :math:`y - z + A^\top\pi = \mu_L - \mu_U` for some
    :math:`\pi` and :math:`\mu \ge 0` on the active arcs (bounded least squares, BVLS)."""
    A, u = space.A, space.u
    if (np.any(y < -atol) or np.any(y > u + atol)
            or np.any(np.abs(A @ y - space.b) > atol)):
        return False
    free = ~(lower | upper)
    if (np.all(g[lower] >= -atol) and np.all(g[upper] <= atol)
            and np.all(np.abs(g[free]) <= atol)):
        return True  # the least-squares potentials already certify
    L, U = np.flatnonzero(lower), np.flatnonzero(upper)
    d, r = len(z), len(space.b)
    M = np.hstack([A.T, -np.eye(d)[:, L], np.eye(d)[:, U]])
    lb = np.concatenate([np.full(r, -np.inf), np.zeros(len(L) + len(U))])
    res = lsq_linear(M, z - y, bounds=(lb, np.inf), method="bvls")
    return bool(np.abs(M @ res.x - (z - y)).max() <= atol)
