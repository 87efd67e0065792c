r"""The primal solvers: ridge regressions on an explicit feature map, streamed over rows.

The feature map is the identity of a linear kernel (``solver="primal"``, exact) or Nystrom
features (``solver="nystrom"``); :mod:`ecrm.weights.kernel._solvers.normal_equations` accumulates
:math:`F^\top F` and :math:`F^\top T` over row blocks (per chunk on Dask) and solves the
k x k system. The result is a :class:`FeatureFit`: predictions :math:`f(x)^\top W + b`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from ecrm.weights._fit import Criterion, LooBasis, Outcome, RiskFit, Trial
from ecrm.weights.kernel._solvers.budget import BLOCK_FEATURE_COPIES
from ecrm.weights.kernel._solvers.features import FeatureMap
from ecrm.weights.kernel._solvers.normal_equations import NormalEquations, PrimalFit, primal_weights

__all__ = ["FeatureFit", "FeatureLooBasis"]


class FeatureFit(RiskFit):
    r"""Primal ridge regressions: ``coef`` is :math:`W` (k, c) on the features.

    Parameters
    ----------
    features : FeatureMap
    coef, intercept, n_risk, ridge, fit_intercept : as :class:`~ecrm.weights._fit.RiskFit`
    n_train : int
        m, the number of training rows.
    X_train : ndarray, sparse matrix or Dask array of shape (m, p), optional
        The training inputs (read only by :meth:`weights`, in a pass over row blocks): the
        estimator's ``X_fit_``. A model file of a linear loss's feature fit holds none
        (prediction needs only the features and ``coef``); :meth:`weights` then refuses.
    """

    coef_name = "coef_"

    def __init__(self, features: FeatureMap, coef: np.ndarray, intercept: np.ndarray,
                 n_risk: int, ridge: float, fit_intercept: bool, n_train: int, *,
                 X_train=None):
        self.features, self.X_train, self.n_train = features, X_train, int(n_train)
        self.coef, self.intercept, self.n_risk = coef, intercept, int(n_risk)
        self.ridge, self.fit_intercept = float(ridge), bool(fit_intercept)

    @classmethod
    def from_solve(cls, features: FeatureMap, X_train, solved: PrimalFit, n_risk: int,
                   ridge: float, fit_intercept: bool) -> FeatureFit:
        return cls(features, solved.coef, solved.intercept, n_risk, ridge, fit_intercept,
                   X_train.shape[0], X_train=X_train)

    @property
    def n_columns(self) -> int:
        return int(self.features.n_features_out)

    def block(self, X) -> np.ndarray:
        return self.features.transform(X)

    def weights(self, V: np.ndarray) -> np.ndarray:
        r""":math:`w(x) = F_c (C + m\lambda I)^{-1}(f(x) - \mu) + \mathbf 1/m`, in a pass over
        the training blocks
        (:func:`ecrm.weights.kernel._solvers.normal_equations.primal_weights`)."""
        X = self.X_train
        if X is None:
            raise ValueError("the risk weights need the training rows, which this model does "
                             "not hold (a model file of a primal or Nystrom fit keeps only "
                             "what prediction needs): refit the model to get them")
        # only F'F and F'1 enter the weights: one dummy target column
        equations = NormalEquations.accumulate(self.features, X, np.zeros((X.shape[0], 1)),
                                               lambda Tb: Tb)
        return primal_weights(self.features, X, equations, self.ridge, self.fit_intercept, V)

    def to_state(self) -> dict:
        return {"features": self.features, "coef": self.coef, "intercept": self.intercept,
                "n_risk": self.n_risk, "ridge": self.ridge, "fit_intercept": self.fit_intercept,
                "n_train": self.n_train}

    def slim(self) -> FeatureFit:
        out = copy.copy(self)
        out.X_train = None  # prediction never reads it
        return out

    def check_state(self, X, n_features: int, kernel_params: dict) -> None:
        """The training rows (``None`` in a file without them) and the feature map."""
        if self.X_train is not X:
            raise ValueError("_fit.X_train must be X_fit_ (the training inputs)")
        if X is not None and self.n_train != X.shape[0]:
            raise ValueError(f"_fit.n_train={self.n_train} but X_fit_ has {X.shape[0]} rows")
        if not isinstance(self.features, FeatureMap):
            raise TypeError(f"unknown feature map {type(self.features).__name__}")
        self.features.check_state(n_features, kernel_params)


class PrimalLeaveOneOut:
    r"""Leave-one-out targets of the primal fits for any ridge, from one eigendecomposition.

    The fit is a penalised least-squares fit on :math:`[F, \mathbf 1]` with the penalty
    :math:`m\lambda` on :math:`W` only; its hat matrix is

    .. math:: H = \tfrac1m \mathbf 1\mathbf 1^\top + F_c (C + m\lambda I)^{-1} F_c^\top

    (without intercept :math:`H = F (F^\top F + m\lambda I)^{-1} F^\top`), and the refit
    without point :math:`i` (same features, same ridge term) predicts at :math:`x_i`
    :math:`\hat t_{-i} = ((HT)_i - H_{ii} t_i)/(1 - H_{ii})`. With :math:`C = V\Lambda
    V^\top` (k x k), :math:`B = V^\top R` and :math:`z_i = V^\top (f_i - \mu)`,

    .. math:: (HT)_i = \bar t + z_i^\top (\Lambda + m\lambda)^{-1} B, \qquad
              H_{ii} = \tfrac1m + z_i^\top (\Lambda + m\lambda)^{-1} z_i ,

    so every :math:`\lambda` costs :math:`O(k e)` per point.

    Parameters
    ----------
    equations : NormalEquations
        Over all training points; the first ``n_targets`` columns of its targets are used.
    fit_intercept : bool
    n_targets : int
        How many leading target columns to predict (the others, e.g. marginals, are not).
    """

    def __init__(self, equations: NormalEquations, fit_intercept: bool, n_targets: int):
        C, R, self.mu, tbar = equations.centred(fit_intercept)
        lam, self.V = np.linalg.eigh(C)
        self.lam = np.maximum(lam, 0.0)
        self.B = self.V.T @ R  # all target columns (refits need them all)
        self.tbar, self.e = tbar, n_targets
        self.fit_intercept, self.n = fit_intercept, equations.n

    def project(self, F: np.ndarray) -> np.ndarray:
        """:math:`z_i` for a block of features (b, k) -> (b, k)."""
        return (F - self.mu) @ self.V

    def predictions(self, Z: np.ndarray, T: np.ndarray, ridge: float) -> np.ndarray:
        """Leave-one-out targets (b, e) of a block with projections ``Z`` and targets ``T``."""
        scale = 1.0 / (self.lam + ridge)
        fitted = Z @ (scale[:, None] * self.B[:, :self.e]) + self.tbar[:self.e]
        h = np.einsum("ik,k,ik->i", Z, scale, Z)
        if self.fit_intercept:
            h = h + 1.0 / self.n
        return (fitted - h[:, None] * T[:, :self.e]) / (1.0 - h)[:, None]

    def refit(self, ridge: float) -> PrimalFit:
        """The full fit (every target column) for ``ridge``, with no further solve."""
        coef = self.V @ (self.B / (self.lam + ridge)[:, None])
        return PrimalFit(coef, self.tbar - self.mu @ coef)


class FeatureLooBasis(LooBasis):
    """The exact leave-one-out of a primal fit, in passes over the training rows.

    Parameters
    ----------
    features : FeatureMap
    data : Rows
        The training rows (in memory or Dask: the backend's ``training_rows``,
        :mod:`ecrm.weights.kernel._solvers._backend`).
    equations : NormalEquations
        Of ``features`` and ``targets`` over every training row.
    targets : callable
        ``targets(Y block)``: the risk targets (``n_risk`` columns) then the outputs.
    n_risk : int
    subset : ndarray of int, optional
        The rows of the leave-one-out questions index into it (the kernel-subsample stage:
        points of the full-data fit).

    Only decomposable criteria (sums over the points) are evaluated: every trial's sum is
    accumulated in one pass over the row blocks (one map-reduce on Dask).
    """

    def __init__(self, features: FeatureMap, data, equations: NormalEquations, targets,
                 n_risk: int, subset: np.ndarray | None = None):
        self.features, self.data, self.equations = features, data, equations
        self.targets, self.n_risk, self.subset = targets, int(n_risk), subset
        self.n_fit = int(data.n_rows)
        self.diagonal_max = equations.diagonal_max
        self._loos: dict[bool, PrimalLeaveOneOut] = {}

    def _loo(self, fit_intercept: bool) -> PrimalLeaveOneOut:
        if fit_intercept not in self._loos:
            self._loos[fit_intercept] = PrimalLeaveOneOut(self.equations, fit_intercept,
                                                          self.n_risk)
        return self._loos[fit_intercept]

    def _rows(self, rows: np.ndarray) -> np.ndarray:
        return rows if self.subset is None else self.subset[rows]

    @property
    def _width(self) -> int:
        return BLOCK_FEATURE_COPIES[True] * self.features.n_features_out + 3 * self.n_risk

    def loo_values(self, criterion: Criterion, trials: Sequence[Trial],
                   rows: np.ndarray) -> list[Outcome]:
        if not criterion.decomposable or criterion.on_labels:
            raise ValueError("the primal solvers evaluate only criteria that are sums over "
                             "the points of the leave-one-out costs (the task loss)")
        loos = {t.fit_intercept: self._loo(t.fit_intercept) for t in trials}
        features, targets = self.features, self.targets

        def block_totals(Xb, Yb):
            F, T = features.transform(Xb), targets(Yb)
            Z = {b: loo.project(F) for b, loo in loos.items()}
            return np.array([criterion.block_total(
                loos[t.fit_intercept].predictions(Z[t.fit_intercept], T, t.ridge), Yb, t.where)
                for t in trials])

        rows = self._rows(rows)
        totals = self.data.map_sum(block_totals, rows, self._width)
        return [criterion.from_total(float(total), len(rows)) for total in totals]

    def loo_predictions(self, criterion: Criterion, trial: Trial,
                        rows: np.ndarray) -> np.ndarray:
        loo, features, targets = self._loo(trial.fit_intercept), self.features, self.targets

        def block_predictions(Xb, Yb):
            P = loo.predictions(loo.project(features.transform(Xb)), targets(Yb), trial.ridge)
            return criterion.predict(P, trial.where)

        return self.data.map_concat(block_predictions, self._rows(rows), self._width)

    def refit(self, trial: Trial) -> FeatureFit:
        """Every target column for the trial, from the leave-one-out eigendecomposition."""
        return FeatureFit.from_solve(self.features, self.data.X,
                                     self._loo(trial.fit_intercept).refit(trial.ridge),
                                     self.n_risk, trial.ridge, trial.fit_intercept)
