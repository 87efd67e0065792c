r"""The protocol every solver answers: a fitted batch of ridge regressions.

A solver fits the ridge regressions (:mod:`ecrm.weights.kernel._ridge`) of the columns of
:math:`T` (m, c): a linear loss's risk targets :math:`[\psi(Y), \mathrm{const}(Y)]` first
(``n_risk`` columns, 0 without a linear form), then the outputs :math:`Y` (the marginals of
:meth:`ecrm.ECRM.predict_scores`). The result, a :class:`RiskFit`, is a *block* map :math:`b(x)`
(kernel columns in the dual, features in the primal) with coefficients and intercepts, each
regression predicting :math:`b(x)^\top \mathrm{coef} + \mathrm{intercept}`, and the risk
weights :math:`w(x)`; the estimators never ask which solver made it. A solver builds it
through a :class:`Basis` (for :class:`ecrm.ECRM`) and the search of :class:`ecrm.ECRMCV`
through a :class:`Source` of :class:`LooBasis` objects, one per kernel setting.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Basis", "Criterion", "LooBasis", "Outcome", "RiskFit", "Source", "Trial"]


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
    def to_state(self) -> dict:
        """The fit's own state for a model file: keyword arguments of its constructor,
        without the training rows (the estimator's ``X_fit_``, attached on load)."""

    @classmethod
    def from_state(cls, state: dict, X_train=None) -> RiskFit:
        """The fit rebuilt from :meth:`to_state` and the training rows."""
        return cls(**state, X_train=X_train)  # type: ignore[call-arg]

    @abstractmethod
    def slim(self) -> RiskFit:
        """A copy that predicts from blocks without the training data (shipped to workers)."""

    def check_state(self, X, n_features: int, kernel_params: dict) -> None:
        """A loaded fit's own state checked against the estimator's training rows ``X``
        (``None`` if the file holds none), ``n_features`` and ``kernel_params``: a
        ``ValueError`` or ``TypeError`` naming what differs. The shapes of ``coef`` and
        ``intercept`` and the ridge are checked for every fit by
        :func:`ecrm.model_files._state.check_kernel_state`; each fit class checks the rest here."""
        raise TypeError(f"unknown fit object {type(self).__name__}")

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
            raise ValueError(f"the fit produced non-finite coefficients with the kernel "
                             f"{kernel_params} and alpha={alpha!r}: the kernel values are too "
                             f"large or too ill-conditioned for this alpha (rescale the inputs, "
                             f"or increase alpha)")


# -- the exact leave-one-out protocol ------------------------------------------------------
@dataclass(frozen=True)
class Trial:
    """One (alpha, intercept) setting to evaluate: ``ridge`` is the checked :math:`m\\alpha`;
    ``where`` names the kernel and alpha in error messages."""

    alpha: float
    fit_intercept: bool
    ridge: float
    where: str


@dataclass
class Outcome:
    """A criterion's value on the leave-one-out predictions of one trial.

    ``score`` is greater-is-better; ``mean_loss`` the mean task loss (NaN when no oracle
    ran); ``predictions`` the leave-one-out outputs and ``scores`` the label scores, when the
    criterion computed them.
    """

    score: float
    mean_loss: float = float("nan")
    predictions: np.ndarray | None = None
    scores: np.ndarray | None = None


class Criterion(ABC):
    """What a leave-one-out search maximises, from the exact leave-one-out predictions ``P``
    of the regression targets (or, with ``on_labels``, of the label columns ``Y``).

    ``decomposable`` criteria are sums of per-point losses (:meth:`block_total`), scored by
    minus their mean (:meth:`from_total`), so a solver may evaluate them block by block
    (streaming, Dask); the others see every row at once (:meth:`evaluate`).
    """

    on_labels: bool = False
    decomposable: bool = False

    @abstractmethod
    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        """The outcome of the leave-one-out predictions ``P`` of the rows whose outputs are
        ``Y``."""

    def block_total(self, P: np.ndarray, Y: np.ndarray, where: str) -> float:
        """The criterion's sum over a block of rows (decomposable criteria)."""
        raise NotImplementedError

    def from_total(self, total: float, n: int) -> Outcome:
        """The outcome of a sum of :meth:`block_total` over ``n`` rows: minus the mean loss."""
        mean_loss = float(total / n)
        return Outcome(-mean_loss, mean_loss)

    def predict(self, P: np.ndarray, where: str) -> np.ndarray:
        """Leave-one-out outputs of the predictions ``P`` (through the oracle)."""
        raise NotImplementedError


class LooBasis(ABC):
    """A factorised training problem that answers exact leave-one-out questions for every
    ridge and intercept, and refits the chosen one.

    Attributes
    ----------
    n_fit : int
        Training points of the fit (the ridge term is ``n_fit * alpha``).
    diagonal_max : float
        The largest kernel diagonal entry (:func:`ecrm.weights.kernel._ridge.check_ridge`).
    """

    n_fit: int
    diagonal_max: float

    @abstractmethod
    def loo_values(self, criterion: Criterion, trials: Sequence[Trial],
                   rows: np.ndarray) -> list[Outcome]:
        """The criterion of every trial on the leave-one-out predictions of ``rows``."""

    @abstractmethod
    def loo_predictions(self, criterion: Criterion, trial: Trial,
                        rows: np.ndarray) -> np.ndarray:
        """``criterion.predict`` of the leave-one-out predictions of ``rows``."""

    @abstractmethod
    def refit(self, trial: Trial) -> RiskFit:
        """The fit on every training point of the trial's ridge and intercept."""


class Basis(ABC):
    """The training rows of one kernel setting, prepared for the one fit of :class:`ecrm.ECRM`.

    Attributes
    ----------
    diagonal_max : float
        The largest kernel diagonal entry (the round-off floor of the ridge term,
        :func:`ecrm.weights.kernel._ridge.check_ridge`).
    """

    diagonal_max: float

    @abstractmethod
    def fit(self, ridge: float, fit_intercept: bool) -> RiskFit:
        """The risk regressions, then the marginals, with the ridge term ``ridge``."""


class Source(ABC):
    """The leave-one-out bases of a search, one per kernel setting (:class:`ecrm.ECRMCV`).

    Attributes
    ----------
    n_rows : int
        The training rows the search draws its leave-one-out rows from.
    """

    n_rows: int

    @abstractmethod
    def add_setting(self, params: dict) -> int:
        """One more kernel setting (an extended grid); its index."""

    @abstractmethod
    def basis(self, k: int, subset: np.ndarray | None = None) -> LooBasis:
        """The basis of kernel setting ``k`` on every row (or on the rows ``subset``)."""
