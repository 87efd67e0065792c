r"""The primal solvers: ridge regressions on an explicit feature map, streamed over rows.

The feature map is the identity of a linear kernel (``solver="primal"``, exact) or Nystrom
features (``solver="nystrom"``); :mod:`ecrm.solvers.normal_equations` accumulates
:math:`F^\top F` and :math:`F^\top T` over row blocks (per chunk on Dask) and solves the
k x k system. The result is a :class:`FeatureFit`: predictions :math:`f(x)^\top W + b`.
"""

from __future__ import annotations

import copy

import numpy as np

from ecrm.solvers.base import RiskFit
from ecrm.solvers.features import FeatureMap
from ecrm.solvers.normal_equations import NormalEquations, PrimalFit, primal_weights

__all__ = ["FeatureFit"]


class FeatureFit(RiskFit):
    r"""Primal ridge regressions: ``coef`` is :math:`W` (k, c) on the features.

    Parameters
    ----------
    features : FeatureMap
    X_train : ndarray, sparse matrix or Dask array of shape (m, p)
        The training inputs (read only by :meth:`weights`, in a pass over row blocks).
    coef : ndarray of shape (k, c)
    intercept : ndarray of shape (c,)
    n_risk : int
    ridge : float
        :math:`m\lambda`.
    fit_intercept : bool
    """

    coef_name = "coef_"

    def __init__(self, features: FeatureMap, X_train, coef: np.ndarray, intercept: np.ndarray,
                 n_risk: int, ridge: float, fit_intercept: bool):
        self.features, self.X_train = features, X_train
        self.coef, self.intercept, self.n_risk = coef, intercept, int(n_risk)
        self.ridge, self.fit_intercept = float(ridge), bool(fit_intercept)

    @classmethod
    def from_solve(cls, features: FeatureMap, X_train, solved: PrimalFit, n_risk: int,
                   ridge: float, fit_intercept: bool) -> FeatureFit:
        return cls(features, X_train, solved.coef, solved.intercept, n_risk, ridge,
                   fit_intercept)

    @property
    def n_columns(self) -> int:
        return int(self.features.n_features_out)

    def block(self, X) -> np.ndarray:
        return self.features.transform(X)

    def weights(self, V: np.ndarray) -> np.ndarray:
        r""":math:`w(x) = F_c (C + m\lambda I)^{-1}(f(x) - \mu) + \mathbf 1/m`, in a pass over
        the training blocks (:func:`ecrm.solvers.normal_equations.primal_weights`)."""
        X = self.X_train
        # only F'F and F'1 enter the weights: one dummy target column
        equations = NormalEquations.accumulate(self.features, X, np.zeros((X.shape[0], 1)),
                                               lambda Tb: Tb)
        return primal_weights(self.features, X, equations, self.ridge, self.fit_intercept, V)

    def slim(self) -> FeatureFit:
        out = copy.copy(self)
        out.X_train = np.empty((self.X_train.shape[0], 0))  # prediction never reads it
        return out
