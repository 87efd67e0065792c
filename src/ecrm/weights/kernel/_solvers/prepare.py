r"""One entry to every solver: :func:`prepare` a basis on the training rows, then fit it.

:func:`prepare` and :func:`prepare_search` read the checked
:class:`~ecrm.weights.kernel._solvers.choice.SolverChoice` once and return what its solver builds: a
:class:`~ecrm.weights._fit.Basis` (``diagonal_max``, the round-off floor of the ridge term,
:func:`ecrm.weights.kernel._ridge.check_ridge`, and ``fit(ridge, fit_intercept) -> RiskFit``) or a
:class:`~ecrm.weights._fit.Source` of leave-one-out bases. The bases and sources of the
built-in solvers are here: the dual's (the Gram matrix) and the feature solvers' (the normal
equations of a feature map).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ecrm.spaces.base import OutputSpace
from ecrm.weights._fit import Basis, LooBasis, RiskFit, Source
from ecrm.weights.kernel._solvers._backend import Backend
from ecrm.weights.kernel._solvers.dual import CholeskyBasis, EigenLooBasis, gram_eigendecomposition
from ecrm.weights.kernel._solvers.features import FeatureMap
from ecrm.weights.kernel._solvers.normal_equations import NormalEquations
from ecrm.weights.kernel._solvers.primal import FeatureFit, FeatureLooBasis
from ecrm.weights.kernel._solvers.rows import RiskTargets

if TYPE_CHECKING:  # the solvers build the bases and sources of this module
    from ecrm.weights.kernel._solvers.choice import SolverChoice
    from ecrm.weights.kernel._solvers.solver import FeatureSolver

__all__ = ["DualBasis", "DualSource", "FeatureBasis", "FeatureSource", "prepare",
           "prepare_search"]


class DualBasis(Basis):
    """The Cholesky basis of the Gram matrix with the targets of every regression."""

    def __init__(self, X, Y, kernel_params: dict, targets: RiskTargets):
        self.T = targets(Y)
        self.n_risk = self.T.shape[1] - Y.shape[1]
        self._basis = CholeskyBasis(X, kernel_params)
        self.diagonal_max = self._basis.diagonal_max

    def fit(self, ridge: float, fit_intercept: bool) -> RiskFit:
        # a loss without a linear form predicts through the weights: keep the factor then
        return self._basis.fit(self.T, ridge, fit_intercept, n_risk=self.n_risk,
                               keep_factor=self.n_risk == 0)


class FeatureBasis(Basis):
    """The normal equations of a feature map and the targets, summed over the rows."""

    def __init__(self, features: FeatureMap, X, Y, space: OutputSpace, targets: RiskTargets,
                 backend: Backend):
        self.features, self.X = features, X
        self.equations = backend.training_rows(X, Y, space).equations(features, targets)
        self.n_risk = self.equations.cross.shape[1] - Y.shape[1]
        self.diagonal_max = self.equations.diagonal_max

    def fit(self, ridge: float, fit_intercept: bool) -> RiskFit:
        return FeatureFit.from_solve(self.features, self.X,
                                     self.equations.solve(ridge, fit_intercept), self.n_risk,
                                     ridge, fit_intercept)


def prepare(choice: SolverChoice, X, Y, kernel_params: dict, targets: RiskTargets, *,
            space: OutputSpace, alpha: float, random_state: np.random.RandomState,
            backend: Backend) -> Basis:
    """The basis of the chosen solver on the checked training rows ``X`` (m, p), ``Y`` (m, d).

    Parameters
    ----------
    choice : SolverChoice
        The checked solver settings
        (:func:`ecrm.weights.kernel._solvers.choice.check_solver_params`).
    X, Y : checked training inputs and outputs (in memory, or Dask arrays for a primal solver)
    kernel_params : dict
    targets : RiskTargets
        The regression targets of a block of outputs.
    space : OutputSpace
    alpha : float
        The ridge of the leverage scores when they choose the Nystrom centres.
    random_state : RandomState
        Draws the Nystrom centres.
    backend : Backend
        NumPy or Dask (:func:`ecrm.weights.kernel._solvers._backend.get_backend`), chosen by the
        caller.

    Returns
    -------
    Basis
    """
    backend.check_solver(choice.method, choice.requested, kernel_params["kernel"])
    return choice.method.basis(X, Y, kernel_params, targets.for_outputs(Y), space=space,
                               alpha=alpha, random_state=random_state, backend=backend)


class DualSource(Source):
    """The dual's leave-one-out bases: an eigendecomposition per kernel (and subset)."""

    def __init__(self, X, Y: np.ndarray, T: np.ndarray, settings: Sequence[dict],
                 decompose: Callable, marginals: np.ndarray | None = None):
        self.X, self.Y, self.T, self.decompose = X, Y, T, decompose
        self.M = Y if marginals is None else marginals
        self.settings = list(settings)
        self.n_rows = int(X.shape[0])

    def add_setting(self, params: dict) -> int:
        """One more kernel setting (an extended grid); its index."""
        self.settings.append(params)
        return len(self.settings) - 1

    def basis(self, k: int, subset: np.ndarray | None = None) -> LooBasis:
        """Kernel setting ``k`` on every point, or refactorised on ``subset`` alone."""
        X, Y, T, M = (self.X, self.Y, self.T, self.M) if subset is None else (
            self.X[subset], self.Y[subset], self.T[subset], self.M[subset])
        params = self.settings[k]
        return EigenLooBasis(X, Y, T, params, self.decompose(X, params), M)


class FeatureSource(Source):
    """The primal solvers' leave-one-out bases: one feature map per kernel setting, drawn
    up front, and its normal equations over every row (a subset only restricts the rows the
    leave-one-out loss is averaged over)."""

    def __init__(self, solver: FeatureSolver, X, Y, settings: Sequence[dict],
                 targets: RiskTargets, n_risk: int, *, space: OutputSpace, alpha: float,
                 random_state, backend: Backend):
        self._draw = (solver, X, alpha, random_state, backend)
        self.maps = [self._map(params) for params in settings]
        self.data = backend.training_rows(X, Y, space)
        self.targets, self.n_risk = targets, n_risk
        self.n_rows = int(self.data.n_rows)
        self._equations: dict[int, NormalEquations] = {}

    def _map(self, params: dict) -> FeatureMap:
        solver, X, alpha, random_state, backend = self._draw
        return solver.feature_map(X, params, alpha=alpha, random_state=random_state,
                                  centres=backend.centres)

    def add_setting(self, params: dict) -> int:
        """One more kernel setting (an extended grid), its centres drawn now; its index."""
        self.maps.append(self._map(params))
        return len(self.maps) - 1

    def basis(self, k: int, subset: np.ndarray | None = None) -> LooBasis:
        if k not in self._equations:
            self._equations[k] = self.data.equations(self.maps[k], self.targets)
        return FeatureLooBasis(self.maps[k], self.data, self._equations[k], self.targets,
                               self.n_risk, subset)


def prepare_search(choice: SolverChoice, X, Y, settings: Sequence[dict], targets: RiskTargets,
                   *, space: OutputSpace, alphas: Sequence[float], random_state,
                   backend: Backend, decompose: Callable = gram_eigendecomposition,
                   needs_scores: bool = False, refine: bool = False) -> Source:
    """The leave-one-out source of the chosen solver, after checking it can answer.

    Parameters
    ----------
    choice, X, Y, targets, space, random_state, backend :
        As in :func:`prepare` (``targets`` of a loss with a linear form; the Nystrom centres
        drawn for one feature map per setting, in order).
    settings : sequence of dict
        The checked kernel settings.
    alphas : sequence of float
        The candidate alphas; their median is the ridge of the leverage scores.
    decompose : callable, default=gram_eigendecomposition
        ``decompose(X, kernel_params) -> EigenFactor`` of the dual (e.g. cached).
    needs_scores : bool
        The search or a calibration needs the leave-one-out label scores (the dual only).
    refine : bool
        A coarse-to-fine search over alpha (the dual only).

    Returns
    -------
    Source
        ``n_rows`` and ``basis(k, subset=None) -> LooBasis``.
    """
    backend.check_solver(choice.method, choice.requested, settings[0]["kernel"])
    return choice.method.source(X, Y, settings, targets.for_outputs(Y), space=space, alphas=alphas,
                                random_state=random_state, backend=backend,
                                decompose=decompose, needs_scores=needs_scores, refine=refine)
