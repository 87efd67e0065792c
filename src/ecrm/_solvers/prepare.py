r"""One entry to every solver: :func:`prepare` a basis on the training rows, then fit it.

:func:`prepare` reads the checked :class:`~ecrm._solvers.budget.SolverChoice` once and
returns a basis with the same two answers whatever the solver: ``diagonal_max`` (the
round-off floor of the ridge term, :func:`ecrm._ridge.check_ridge`) and
``fit(ridge, fit_intercept) -> RiskFit`` (:class:`~ecrm._solvers.base.RiskFit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ecrm._solvers._backend import Backend
from ecrm._solvers.base import LooBasis, RiskFit
from ecrm._solvers.budget import SolverChoice
from ecrm._solvers.centers import build_feature_map
from ecrm._solvers.dual import CholeskyBasis, EigenLooBasis, gram_eigendecomposition
from ecrm._solvers.features import FeatureMap
from ecrm._solvers.normal_equations import NormalEquations
from ecrm._solvers.primal import FeatureFit, FeatureLooBasis
from ecrm._solvers.rows import RiskTargets
from ecrm.spaces.base import OutputSpace

__all__ = ["prepare", "prepare_search"]


class DualBasis:
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


class FeatureBasis:
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
            backend: Backend):
    """The basis of the chosen solver on the checked training rows ``X`` (m, p), ``Y`` (m, d).

    Parameters
    ----------
    choice : SolverChoice
        The checked solver settings (:func:`ecrm._solvers.check_solver_params`).
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
        NumPy or Dask (:func:`ecrm._solvers._backend.get_backend`), chosen by the caller.

    Returns
    -------
    DualBasis or FeatureBasis
    """
    backend.check_solver(choice.solver, choice.requested, kernel_params["kernel"])
    if choice.solver == "dual":
        return DualBasis(X, Y, kernel_params, targets)
    features = build_feature_map(choice.solver, X, kernel_params, choice.n_components,
                                 choice.center_selection, alpha=alpha,
                                 random_state=random_state, centres=backend.centres)
    return FeatureBasis(features, X, Y, space, targets, backend)


class DualSource:
    """The dual's leave-one-out bases: an eigendecomposition per kernel (and subset)."""

    def __init__(self, X, Y: np.ndarray, T: np.ndarray, settings: Sequence[dict],
                 decompose: Callable):
        self.X, self.Y, self.T, self.decompose = X, Y, T, decompose
        self.settings = list(settings)
        self.n_rows = int(X.shape[0])

    def add_setting(self, params: dict) -> int:
        """One more kernel setting (an extended grid); its index."""
        self.settings.append(params)
        return len(self.settings) - 1

    def basis(self, k: int, subset: np.ndarray | None = None) -> LooBasis:
        """Kernel setting ``k`` on every point, or refactorised on ``subset`` alone."""
        X, Y, T = (self.X, self.Y, self.T) if subset is None else (
            self.X[subset], self.Y[subset], self.T[subset])
        params = self.settings[k]
        return EigenLooBasis(X, Y, T, params, self.decompose(X, params))


class FeatureSource:
    """The primal solvers' leave-one-out bases: one feature map per kernel setting, drawn
    up front, and its normal equations over every row (a subset only restricts the rows the
    leave-one-out loss is averaged over)."""

    def __init__(self, choice: SolverChoice, X, Y, settings: Sequence[dict],
                 targets: RiskTargets, n_risk: int, *, space: OutputSpace, alpha: float,
                 random_state, backend: Backend):
        self._draw = (choice, X, alpha, random_state, backend)
        self.maps = [self._map(params) for params in settings]
        self.data = backend.training_rows(X, Y, space)
        self.targets, self.n_risk = targets, n_risk
        self.n_rows = int(self.data.n_rows)
        self._equations: dict[int, NormalEquations] = {}

    def _map(self, params: dict) -> FeatureMap:
        choice, X, alpha, random_state, backend = self._draw
        return build_feature_map(choice.solver, X, params, choice.n_components,
                                 choice.center_selection, alpha=alpha,
                                 random_state=random_state, centres=backend.centres)

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
                   needs_scores: bool = False, refine: bool = False):
    """The leave-one-out source of the chosen solver, after checking it can answer.

    Parameters
    ----------
    choice : SolverChoice
    X, Y : checked training inputs and outputs
    settings : sequence of dict
        The checked kernel settings.
    targets : RiskTargets
        The regression targets of a block of outputs (a loss with a linear form).
    space : OutputSpace
    alphas : sequence of float
        The candidate alphas; their median is the ridge of the leverage scores.
    random_state : RandomState
        Draws the Nystrom centres (one feature map per setting, in order).
    backend : Backend
        NumPy or Dask, chosen by the caller.
    decompose : callable, default=gram_eigendecomposition
        ``decompose(X, kernel_params) -> EigenFactor`` of the dual (e.g. cached).
    needs_scores : bool
        The search or a calibration needs the leave-one-out label scores (the dual only).
    refine : bool
        A coarse-to-fine search over alpha (the dual only).

    Returns
    -------
    DualSource or FeatureSource
        ``n_rows`` and ``basis(k, subset=None) -> LooBasis``.
    """
    backend.check_solver(choice.solver, choice.requested, settings[0]["kernel"])
    if choice.solver == "dual":
        return DualSource(X, Y, targets.risk(Y), settings, decompose)
    if needs_scores:
        raise ValueError(f"scoring and calibration need solver='dual' (the leave-one-out "
                         f"label scores of the {choice.solver} solver are not implemented)")
    if refine:
        raise ValueError(f"alpha_search='coarse-to-fine' needs solver='dual' (the "
                         f"{choice.solver} solver evaluates every alpha from one "
                         f"eigendecomposition)")
    if choice.solver == "primal" and any(s["kernel"] != "linear" for s in settings):
        raise ValueError("solver='primal' needs kernel='linear' in every kernel_grid "
                         "setting; use solver='nystrom' for other kernels")
    n_risk = targets.risk(space.validate(np.asarray(Y[:1]))).shape[1]
    return FeatureSource(choice, X, Y, settings, targets, n_risk, space=space,
                         alpha=float(np.median(alphas)), random_state=random_state,
                         backend=backend)
