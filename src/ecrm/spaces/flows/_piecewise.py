r"""The per-arc piecewise-linear functions of the estimated absolute-loss risk.

For risk weights :math:`w` and training flows :math:`y_i`, arc :math:`a` contributes
:math:`f_a(t) = \sum_i w_i |t - y_{ia}|`, piecewise linear with breakpoints at the arc's
distinct training values (equal values merged: their weights add up). :class:`PiecewiseRisk`
holds these functions for a batch of weight rows and gives their values, (super)gradients and
the block LP of the :math:`\lambda`-formulation used by :mod:`ecrm.spaces.flows.absolute`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.flows.polytope import FlowPolytope

__all__ = ["PiecewiseRisk"]


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


class PiecewiseRisk:
    r"""The functions :math:`f_a(t) = \sum_v \omega_{av} |t - v|` for a batch of weights.

    ``omega[a]`` (n, U_a) holds the merged weights of arc ``a``'s distinct training values.
    Values and one-sided slopes are computed from prefix sums in O(U) per arc and row.
    """

    def __init__(self, W: np.ndarray, Y_ref: np.ndarray, space: FlowPolytope):
        self.space = space
        self.n = W.shape[0]
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

    def value(self, Y: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The objective :math:`\\sum_a f_a(y_a)` for each row of ``Y`` (n, d) (the weight
        rows ``rows`` when given)."""
        return sum((self.at(a, Y[:, a:a + 1], None if rows is None else self.omega[a][rows])[:, 0]
                    for a in range(len(self.arcs))), np.zeros(len(Y)))

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
            for k in range(B):  # lambda_ak: beta_k in the conservation rows, 1 in its own
                rows += [*nz, r + a]
                cols += [col + k] * (len(nz) + 1)
                vals += [*(A_eq[j, a] * arc.breakpoints[k] for j in nz), 1.0]
            self._columns.append((col, col + B))
            col += B
        self._rays = []
        for a, arc in enumerate(self.arcs):
            if not arc.bounded:
                nz = np.flatnonzero(A_eq[:, a])
                rows += nz.tolist()
                cols += [col] * len(nz)
                vals += A_eq[nz, a].tolist()
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
