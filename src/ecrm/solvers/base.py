r"""The protocol every solver answers: a fitted batch of ridge regressions.

A solver fits the ridge regressions of ECRM (:mod:`ecrm.ridge` for the objective) of the
columns of a target matrix :math:`T` (m, c): the risk targets
:math:`[\psi(Y), \mathrm{const}(Y)]` of a linear loss first (``n_risk`` columns, 0 for a loss
without a linear form), then the output columns :math:`Y` (the marginals of
:meth:`ecrm.ECRM.predict_scores`). Its result is a :class:`RiskFit`: a *block* map
:math:`b(x)` (the kernel column against the training points in the dual, the features in the
primal) with coefficients and intercepts, so that every regression predicts
:math:`b(x)^\top \mathrm{coef} + \mathrm{intercept}`, and the risk weights :math:`w(x)` of
the same fit. The estimators hold one :class:`RiskFit` and never ask which solver made it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

__all__ = ["RiskFit"]


class RiskFit(ABC):
    r"""A fitted batch of ridge regressions (see the module docstring).

    Attributes
    ----------
    coef : ndarray of shape (k, c)
        Coefficients on the block columns: ``block(X) @ coef + intercept`` predicts every
        regression.
    intercept : ndarray of shape (c,)
    n_risk : int
        How many leading columns are the risk regressions :math:`[\psi, \mathrm{const}]`.
    ridge : float
        The ridge term :math:`m\lambda` of the solve.
    fit_intercept : bool
    coef_name : str
        The public attribute the estimator shows the risk coefficients under
        (``"dual_coef_"`` or ``"coef_"``).
    """

    coef: np.ndarray
    intercept: np.ndarray
    n_risk: int
    ridge: float
    fit_intercept: bool
    coef_name: str

    @property
    @abstractmethod
    def n_columns(self) -> int:
        """k, the width of :meth:`block` (sizes the row blocks of prediction)."""

    @abstractmethod
    def block(self, X) -> np.ndarray:
        """The block map :math:`b(x)` of checked inputs ``X`` (n, p): an array (n, k)."""

    @abstractmethod
    def weights(self, V: np.ndarray) -> np.ndarray:
        """The risk weights (n, m) of the inputs whose block is ``V`` (n, k)."""

    @abstractmethod
    def slim(self) -> RiskFit:
        """A copy that predicts from blocks without the training data (shipped to workers)."""

    @property
    def risk_coef(self) -> np.ndarray:
        """The coefficients of the risk regressions (k, n_risk)."""
        return self.coef[:, :self.n_risk]

    @property
    def risk_intercept(self) -> np.ndarray:
        return self.intercept[:self.n_risk]

    @property
    def marginal_coef(self) -> np.ndarray:
        """The coefficients of the output columns' regressions (k, d)."""
        return self.coef[:, self.n_risk:]

    @property
    def marginal_intercept(self) -> np.ndarray:
        return self.intercept[self.n_risk:]

    def check_finite(self, kernel_params: dict, alpha: float) -> None:
        """A solve that gave NaN or infinite risk coefficients fails here, at fit."""
        if not (np.isfinite(self.risk_coef).all() and np.isfinite(self.risk_intercept).all()):
            raise ValueError(
                f"the fit produced non-finite coefficients with the kernel {kernel_params} "
                f"and alpha={alpha!r}: the kernel values are too large or too ill-conditioned "
                f"for this alpha (rescale the inputs, or increase alpha)"
            )
