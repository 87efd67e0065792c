r"""The candidate grid of the leave-one-out search and its ends.

The alphas, the intercept settings and the kernel settings a search tries (:func:`alpha_grid`,
:func:`intercept_options`, :func:`kernel_settings`), the numerical limits an extension of the
grid stays within (:func:`alpha_limits`, decades of alpha; the widths of
:data:`WIDTH_KERNELS`), and which end of its grid a choice lies at (:func:`grid_end`,
:func:`grid_edges`: what :class:`~ecrm.exceptions.GridEdgeWarning` says).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from sklearn.model_selection import ParameterGrid

from ecrm.estimators._parameters import check_parameter, vocabulary
from ecrm.weights.kernel._kernels import check_kernel_params

if TYPE_CHECKING:
    from ecrm.selection._loo import Candidate

__all__ = ["ALPHA_STEP", "WIDTH_KERNELS", "alpha_grid", "alpha_limits", "grid_edges", "grid_end",
           "intercept_options", "kernel_gammas", "kernel_settings"]

#: Kernels whose ``gamma`` is a width the search extends (by the grid's own ratio).
WIDTH_KERNELS = vocabulary("width_kernel")
#: Alpha is extended one decade at a time.
ALPHA_STEP = 10.0
_SQRT_EPS = float(np.sqrt(np.finfo(float).eps))


def alpha_grid(alphas) -> list[float]:
    """The checked candidate alphas (``None``: ``np.logspace(-6, 2, 17)``).

    >>> alpha_grid([1e-3, 0.1])
    [0.001, 0.1]
    """
    alphas = np.logspace(-6, 2, 17) if alphas is None else np.atleast_1d(alphas)
    if alphas.size == 0:
        raise ValueError("alphas must not be empty")
    return [check_parameter("alpha", a, f"alphas[{i}]") for i, a in enumerate(alphas.tolist())]


def intercept_options(fit_intercept) -> list[bool]:
    """The intercept settings ``fit_intercept`` asks to try: both for ``"auto"``.

    >>> intercept_options("auto"), intercept_options(False)
    ([True, False], [False])
    """
    if isinstance(fit_intercept, str) and fit_intercept == "auto":
        return [True, False]
    if isinstance(fit_intercept, (bool, np.bool_)):
        return [bool(fit_intercept)]
    raise ValueError(f"fit_intercept must be True, False or 'auto'; got {fit_intercept!r}")


def kernel_settings(own: dict, kernel_grid) -> list[dict]:
    """The checked kernel settings of a search: ``own`` (the checked kernel parameters)
    overridden by each setting of ``kernel_grid`` in
    :class:`~sklearn.model_selection.ParameterGrid` order, or ``[own]`` without a grid.

    Every search expands a grid here, so the same grid gives the same settings, hence the
    same keys of a cached eigendecomposition (``memory``), whoever searches.

    >>> own = check_kernel_params("rbf")
    >>> [s["kernel"] for s in kernel_settings(own, {"kernel": ["linear", "rbf"]})]
    ['linear', 'rbf']
    """
    if kernel_grid is None:
        return [own]
    if own["kernel"] == "precomputed":
        raise ValueError("kernel_grid cannot be combined with kernel='precomputed'")
    settings = []
    for override in ParameterGrid(kernel_grid):
        unknown = set(override) - {"kernel", "gamma", "degree", "coef0"}
        if unknown:
            raise ValueError(f"kernel_grid may only set kernel, gamma, degree and coef0; "
                             f"got {sorted(unknown)}")
        try:
            params = check_kernel_params(**{**own, **override})
        except ValueError as exc:  # name the grid: the setting is not the estimator's own
            raise ValueError(f"kernel_grid: {exc}") from None
        if params["kernel"] == "precomputed":
            raise ValueError("kernel_grid cannot contain 'precomputed'")
        settings.append(params)
    return settings


def alpha_limits(diagonal_max: float) -> tuple[float, float]:
    r"""The alphas an extended search stays within: ``(sqrt(eps) * d, d / sqrt(eps))``.

    With :math:`d = \max_i K_{ii}` (``diagonal_max``; for the primal solvers the largest
    squared feature-row norm, the diagonal of :math:`FF^\top`), the largest eigenvalue obeys
    :math:`\lambda_{\max} \le \operatorname{tr} K \le m d`. Hence

    * the floor :math:`\alpha \ge \sqrt\varepsilon\, d` keeps the condition number of
      :math:`K + m\alpha I` below :math:`1 + 1/\sqrt\varepsilon \approx 6.7\times 10^7` and
      every leave-one-out denominator :math:`1 - H_{ii} \ge m\alpha / (\lambda_{\max} +
      m\alpha)` above :math:`\sqrt\varepsilon`: the solves and the exact leave-one-out values
      keep about half of the float64 digits (eigenvalue round-off is about
      :math:`\varepsilon\lambda_{\max}`, below :math:`\sqrt\varepsilon\, m\alpha`);
    * the ceiling :math:`\alpha \le d / \sqrt\varepsilon` is where every eigendirection is
      shrunk by :math:`\lambda_k / (\lambda_k + m\alpha) \le \sqrt\varepsilon`: the fit is the
      intercept alone (or zero) to about eight digits, and larger alphas change nothing.

    >>> low, high = alpha_limits(1.0)  # an RBF kernel
    >>> f"{low:.3g} {high:.3g}"
    '1.49e-08 6.71e+07'
    """
    d = abs(float(diagonal_max))
    return _SQRT_EPS * d, d / _SQRT_EPS


def grid_end(value: float, grid: Sequence[float]) -> str | None:
    """Which end of the sorted ``grid`` ``value`` is, ``"smallest"`` or ``"largest"``;
    ``None`` when it is neither or the grid has one value.

    >>> grid_end(0.1, [0.1, 1.0]), grid_end(0.5, [0.1, 0.5, 1.0]), grid_end(1.0, [1.0])
    ('smallest', None, None)
    """
    if len(grid) < 2 or value not in (grid[0], grid[-1]):
        return None
    return "smallest" if value == grid[0] else "largest"


def kernel_gammas(settings: Sequence[dict], kernel: str) -> list[float]:
    """The sorted gammas of the settings of ``kernel`` (those that set one)."""
    return sorted({s["gamma"] for s in settings
                   if s["kernel"] == kernel and s.get("gamma") is not None})


def grid_edges(best: Candidate, alphas: Sequence[float], settings: Sequence[dict]) -> list[str]:
    """What of ``best`` lies at an end of its grid: alpha, and gamma among the settings of
    its kernel; one sentence each (empty when nothing does, or a grid has one value)."""
    notes = []
    more = {"smallest": "smaller", "largest": "larger"}
    grid = sorted(set(alphas))
    end = grid_end(best.alpha, grid)
    if end is not None:
        notes.append(f"the chosen alpha={best.alpha:g} is the {end} of the grid of alphas "
                     f"[{grid[0]:g} .. {grid[-1]:g}]; add {more[end]} values")
    kernel, gamma = best.kernel_params["kernel"], best.kernel_params.get("gamma")
    gammas = kernel_gammas(settings, kernel)
    end = None if gamma is None else grid_end(gamma, gammas)
    if end is not None:
        notes.append(f"the chosen gamma={gamma:g} ({kernel} kernel) is the {end} of the "
                     f"gammas {[float(f'{g:.4g}') for g in gammas]}; add {more[end]} values")
    return notes
