r"""One entry to every solver: :func:`prepare` a basis on the training rows, then fit it.

:func:`prepare` reads the checked :class:`~ecrm.solvers.budget.SolverChoice` once and
returns a basis with the same two answers whatever the solver: ``diagonal_max`` (the
round-off floor of the ridge term, :func:`ecrm.ridge.check_ridge`) and
``fit(ridge, fit_intercept) -> RiskFit`` (:class:`~ecrm.solvers.base.RiskFit`).
"""

from __future__ import annotations

import numpy as np

from ecrm.solvers.base import RiskFit
from ecrm.solvers.budget import SolverChoice
from ecrm.solvers.centers import build_feature_map
from ecrm.solvers.dual import CholeskyBasis
from ecrm.solvers.features import FeatureMap
from ecrm.solvers.primal import FeatureFit
from ecrm.solvers.rows import RiskTargets, training_rows
from ecrm.spaces.base import OutputSpace

__all__ = ["DualBasis", "FeatureBasis", "prepare"]


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

    def __init__(self, features: FeatureMap, X, Y, space: OutputSpace, targets: RiskTargets):
        self.features, self.X = features, X
        self.equations = training_rows(X, Y, space).equations(features, targets)
        self.n_risk = self.equations.cross.shape[1] - Y.shape[1]
        self.diagonal_max = self.equations.diagonal_max

    def fit(self, ridge: float, fit_intercept: bool) -> RiskFit:
        return FeatureFit.from_solve(self.features, self.X,
                                     self.equations.solve(ridge, fit_intercept), self.n_risk,
                                     ridge, fit_intercept)


def prepare(choice: SolverChoice, X, Y, kernel_params: dict, targets: RiskTargets, *,
            space: OutputSpace, alpha: float, random_state: np.random.RandomState):
    """The basis of the chosen solver on the checked training rows ``X`` (m, p), ``Y`` (m, d).

    Parameters
    ----------
    choice : SolverChoice
        The checked solver settings (:func:`ecrm.solvers.check_solver_params`).
    X, Y : checked training inputs and outputs (in memory, or Dask arrays for a primal solver)
    kernel_params : dict
    targets : RiskTargets
        The regression targets of a block of outputs.
    space : OutputSpace
    alpha : float
        The ridge of the leverage scores when they choose the Nystrom centres.
    random_state : RandomState
        Draws the Nystrom centres.

    Returns
    -------
    DualBasis or FeatureBasis
    """
    if choice.solver == "dual":
        return DualBasis(X, Y, kernel_params, targets)
    features = build_feature_map(choice.solver, X, kernel_params, choice.n_components,
                                 choice.center_selection, alpha=alpha,
                                 random_state=random_state)
    return FeatureBasis(features, X, Y, space, targets)
