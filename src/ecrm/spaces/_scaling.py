"""Per-row scaling of weights and costs by powers of two, before any LP or MILP.

Every minimiser in :mod:`ecrm.spaces` is invariant to a positive rescaling of a row of weights
(or of linear costs), but HiGHS's tolerances are absolute: costs of order 1e-12 look like
zeros to it and costs of order 1e12 break its pivoting. Every row is therefore divided by the
power of two nearest to its l1 norm before it reaches a solver, and objective values are
multiplied back. A power of two keeps the scaling exact in floating point: rows whose norm is
already near 1 are passed through unchanged, bit for bit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["HIGHS_COST_NORM", "highs_costs", "normalize_rows", "power_of_two"]

# The l1 norm of a cost row as HiGHS sees it. HiGHS's optimality tolerance is an absolute
# 1e-7; at a norm of 2^20 it is 1e-13 of the row, near the round-off of the objective.
HIGHS_COST_NORM = 2.0**20


def normalize_rows(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Rows of ``M`` divided by :math:`2^{e_k}`, with :math:`2^{e_k}` nearest to their l1 norm.

    Parameters
    ----------
    M : ndarray of shape (n, m)
        Finite rows (weights or costs, any sign).

    Returns
    -------
    M_scaled : ndarray of shape (n, m)
        ``M[k] / 2**e[k]``: an l1 norm in :math:`[2^{-1/2}, 2^{1/2})` (rows of zeros unchanged).
    scale : ndarray of shape (n,)
        The factors :math:`2^{e_k}` (1 for rows of zeros); ``M = scale[:, None] * M_scaled``.

    Examples
    --------
    >>> M_scaled, scale = normalize_rows(np.array([[3e-12, -1e-12], [0.25, 0.75]]))
    >>> np.log2(scale).tolist(), np.abs(M_scaled).sum(axis=1).round(3).tolist()
    ([-38.0, 0.0], [1.1, 1.0])
    """
    M = np.asarray(M, dtype=float)
    # First by the largest entry (no overflow in the sum), then by the l1 norm; both powers
    # of two, so both steps are exact.
    _, e_peak = np.frexp(np.abs(M).max(axis=1, initial=0.0))
    M1 = np.ldexp(M, -e_peak[:, None])
    norm = np.abs(M1).sum(axis=1)
    e_norm = np.where(norm > 0, np.round(np.log2(np.where(norm > 0, norm, 1.0))), 0).astype(int)
    exponent = np.where(norm > 0, e_peak + e_norm, 0)
    return np.ldexp(M1, -e_norm[:, None]), np.ldexp(1.0, exponent)


def highs_costs(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cost rows as handed to HiGHS: l1 norm near :data:`HIGHS_COST_NORM`, scaled exactly.

    Returns ``(C_highs, scale)`` with ``C = scale[:, None] * C_highs``; an objective value
    computed on ``C_highs[k]`` is multiplied by ``scale[k]`` to be one of ``C[k]``.

    Examples
    --------
    >>> C = np.array([[1e-12, -3e-12]])
    >>> C_highs, scale = highs_costs(C)
    >>> round(float(np.abs(C_highs).sum() / HIGHS_COST_NORM), 2), bool(np.all(scale * C_highs == C))
    (1.1, True)
    """
    C_scaled, scale = normalize_rows(C)
    return C_scaled * HIGHS_COST_NORM, scale / HIGHS_COST_NORM


def power_of_two(x: float) -> float:
    r"""The power of two nearest to ``x`` > 0 (in log scale), 1.0 for ``x`` <= 0.

    Dividing data by it is exact in floating point, so a problem solved on the scaled data and
    multiplied back gives the same answer at every power-of-two scale of the data.

    >>> power_of_two(3e-12) == 2.0**-38, power_of_two(1.0), power_of_two(0.0)
    (True, 1.0, 1.0)
    """
    x = float(x)
    if not x > 0 or not np.isfinite(x):
        return 1.0
    return float(np.ldexp(1.0, int(np.round(np.log2(x)))))
