r"""What every ECRM estimator shares: the fit object, its checks, prediction.

:class:`_RiskEstimator` (on the template :mod:`ecrm.estimators._template`) checks a kernel
fit's state and predicts, in row blocks on the array backend of the call, from the one fit object
(:class:`ecrm.weights._fit.RiskFit`) a fitted estimator holds. :class:`RiskEstimator` (public as
:class:`ecrm.weights.RiskEstimator`, the base of ECRM, ECRMCV and ForestECRM) adds the marginal
regressions (:meth:`predict_scores`), the weights and a family's honest outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ecrm.estimators._template import Seen, StructuredEstimator
from ecrm.estimators._validation import check_same_rows
from ecrm.losses.base import LinearLoss
from ecrm.model_files._state import check_kernel_state, check_ridge_state
from ecrm.weights._fit import RiskFit
from ecrm.weights.kernel._kernels import check_kernel_input
from ecrm.weights.kernel._solvers._backend import ChunkCheck, get_backend
from ecrm.weights.kernel._solvers.choice import SolverChoice, check_solver_params, streams_rows
from ecrm.weights.kernel._solvers.primal import FeatureFit

__all__ = ["HonestOutputs", "RiskEstimator"]


class _Costs:
    """The costs ``V @ A + b`` of a block map ``V`` (the constant column left out). It holds
    the fit, not views of its arrays: a prediction step pickled for Dask workers would copy a
    view beside the fit it comes from."""

    def __init__(self, fit: RiskFit):
        self.fit = fit

    def __call__(self, V) -> np.ndarray:
        return V @ self.fit.risk_coef[:, :-1] + self.fit.risk_intercept[:-1]


class _RiskEstimator(StructuredEstimator):
    r"""Checks, the kernel block and prediction shared by every ECRM estimator: for a block
    ``V``, ``V @ _fit.risk_coef + _fit.risk_intercept`` gives the costs and the constant."""

    #: Whether the fit object also holds the regressions of the outputs (predict_scores).
    _fits_marginals = False
    #: The fitted attributes: removed and set together by a successful fit, the only names a
    #: model file holds (``feature_columns_``: the input file's columns, ``level_columns_``:
    #: its ``--level-columns``, ``reading_options_``: how it was read, all set by ``ecrm fit``).
    _fitted_attributes: tuple[str, ...] = (
        "X_fit_", "Y_fit_", "n_features_in_", "feature_names_in_", "label_names_",
        "kernel_params_", "_y_ndim", "_fit", "feature_columns_", "output_mean_",
        "output_mode_", "level_columns_", "reading_options_")

    # -- checks, before any work (nothing is set on self) ---------------------------------
    def _check_training_data(self, X, Y, kernel):
        # the primal solvers' passes turn each block of outputs into floats: keep 1-byte Y
        compact = (streams_rows(getattr(self, "solver", None))
                   and isinstance(self.loss, LinearLoss))
        return super()._check_training_data(X, Y, kernel, compact=compact)

    def _check_own_state(self, plan: Mapping, training) -> None:
        """A kernel fit of the plan's kernel, ``alpha`` and intercept."""
        check_kernel_state(self, training)
        if self.kernel_params_ != plan["kernel_params"]:
            raise ValueError(f"kernel_params_ {self.kernel_params_} differ from the kernel "
                             f"parameters {plan['kernel_params']}")
        check_ridge_state(self._fit, training.m, plan["alpha"], plan["fit_intercept"])

    def _derive(self) -> None:
        """The public views of the fit: ``dual_coef_`` or ``coef_``, and ``intercept_``."""
        fit = self._fit
        if fit.n_risk:  # a linear loss: the costs' coefficients, without the constant
            setattr(self, fit.coef_name, fit.risk_coef[:, :-1])
            self.intercept_ = fit.risk_intercept[:-1]

    @property
    def _n_fit(self) -> int:
        """m, the number of training rows (a loaded feature fit holds no ``X_fit_``)."""
        if self.X_fit_ is not None:
            return self.X_fit_.shape[0]
        if not isinstance(self._fit, FeatureFit):  # only a feature fit is stored without
            raise AttributeError("X_fit_ is None but the fit is not a feature fit")
        return self._fit.n_train

    # -- prediction -----------------------------------------------------------------------
    @property
    def _input_kernel(self):
        """The kernel the inputs are checked for (``"precomputed"`` takes kernel blocks;
        ``None``, a family without ``kernel_params_``: the features as they are)."""
        if "kernel_params_" not in self._fitted_attributes:
            return None
        return self.kernel_params_["kernel"]

    def _check_input(self, X):
        check_is_fitted(self, "X_fit_")
        checked = check_kernel_input(X, self._input_kernel, n_train=self._n_fit)
        validate_data(self, X, reset=False, skip_check_array=True)  # scikit-learn's messages
        return checked

    def _kernel_block(self, X) -> np.ndarray:
        """The fit's block map of ``X``: kernel columns (dual) or features (primal)."""
        return self._fit.block(self._check_input(X))

    def _apply(self, X, step, fit: RiskFit, width: int, out_width: int,
               one_dimensional: bool = False):
        """``step(fit.block(rows))`` over the row blocks of ``X``, stacked: the backend of
        ``X`` (NumPy or Dask, :mod:`ecrm.weights.kernel._solvers._backend`) is chosen here, once.
        ``step`` holds only what prediction needs (never the estimator), so that a Dask graph ships
        nothing else; ``width`` is the floats a row of ``step`` takes."""
        check_is_fitted(self, "X_fit_")
        backend = get_backend(X)
        chunk_check = ChunkCheck(self._input_kernel, self._n_fit,
                                 self.n_features_in_)
        return backend.map_rows(lambda Xb: step(fit.block(Xb)), X, check=self._check_input,
                                chunk_check=chunk_check, block_width=2 * fit.n_columns + width,
                                out_width=out_width, one_dimensional=one_dimensional)

    def _slim_fit(self) -> RiskFit:
        """The fit as prediction steps hold it: without training rows when a linear loss's
        costs are all they need."""
        return self._fit.slim() if isinstance(self.loss, LinearLoss) else self._fit

    def _require_linear(self) -> None:
        if not isinstance(self.loss, LinearLoss):
            raise TypeError(f"{type(self.loss).__name__} has no linear form, hence no costs")

    def predict_costs(self, X) -> np.ndarray:
        r"""Costs :math:`c(x)` of the linear form of the estimated risk.

        The estimated risk is :math:`\hat R(y|x) = \langle\phi(y), c(x)\rangle +
        \mathrm{const}(x)`; the oracle minimises it. Computed as one kernel block times
        ``dual_coef_`` (``coef_`` for a primal solver), in row blocks sized by
        scikit-learn's ``working_memory``.

        Parameters
        ----------
        X : array-like, sparse matrix or Dask array of shape (n, p)
            Inputs (the kernel block against the training points if precomputed).

        Returns
        -------
        C : ndarray of shape (n, e)
            A lazy Dask array with the row chunks of ``X`` if ``X`` is one.
        """
        self._require_linear()
        fit = self._slim_fit()
        return self._apply(X, _Costs(fit), fit, fit.n_risk, fit.n_risk - 1)

    def conditional_risk(self, X, Y) -> np.ndarray:
        r"""Estimated risk :math:`\hat R(y_k | x_k)` of each row pair of ``X`` and ``Y``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
        Y : array-like of shape (n, d)
            Outputs in the output space (checked by its ``validate``).

        Returns
        -------
        risk : ndarray of shape (n,)
        """
        V = self._kernel_block(X)
        Y = self.output_space.validate(Y)
        check_same_rows(V, Y)
        if isinstance(self.loss, LinearLoss):
            full = V @ self._fit.risk_coef + self._fit.risk_intercept
            return np.einsum("ij,ij->i", self.loss.phi(Y), full[:, :-1]) + full[:, -1]
        W = self._fit.weights(V)
        return np.array([W[k] @ self.loss(np.repeat(Y[k:k + 1], len(self.Y_fit_), 0), self.Y_fit_)
                         for k in range(len(Y))])

    def predict(self, X) -> np.ndarray:
        """Predicted outputs: exact minimisers of the estimated conditional risk.

        Parameters
        ----------
        X : array-like, sparse matrix or Dask array of shape (n, p)

        Returns
        -------
        Y : ndarray of shape (n, d), or (n,) if fitted on a 1-D ``y`` (one coordinate)
            A lazy Dask array (the features, costs and oracle per row chunk) if ``X`` is one.
        """
        check_is_fitted(self, "X_fit_")
        fit, loss, space = self._slim_fit(), self.loss, self.output_space
        d = space.n_outputs
        one_dimensional = self._y_ndim == 1
        if isinstance(loss, LinearLoss):  # the space's oracle (the loss was checked at fit)
            costs, form = _Costs(fit), loss.cost_form
            return self._apply(X, lambda V: space.minimize(costs(V), form), fit, fit.n_risk, d,
                               one_dimensional)
        Y_fit = self.Y_fit_
        return self._apply(X, lambda V: loss.minimize_risk(fit.weights(V), Y_fit, space),
                           fit, self.X_fit_.shape[0], d, one_dimensional)


@dataclass(frozen=True)
class HonestOutputs:
    r"""Honest out-of-sample outputs of a family's training points (:meth:`fit_honest`).

    Each row was computed without its own point: the kernel's exact leave-one-out, the
    forest's out-of-bag trees. Mixing the rows of two families gives the honest outputs of
    their mixed risk (:mod:`ecrm.weights.mixture`).

    Attributes
    ----------
    rows : ndarray of int
        The training points judged (all of them, or the search's ``loo_samples``).
    values : ndarray of shape (len(rows), e) or (len(rows), d)
        Their costs :math:`c(x_i)` (the embedding's columns, the constant left out) or label
        scores; a NaN row is a point no honest output exists for (no out-of-bag tree).
    """

    rows: np.ndarray
    values: np.ndarray


class RiskEstimator(_RiskEstimator):
    r"""The base of an ECRM weight family: risk weights :math:`w(x)` held as one fit object.

    A family estimates :math:`\hat R(y|x) = \sum_i w_i(x)\, \ell(y, y_i)`. Its ``fit``
    checks its parameters (``_check_params``) and the data (``_check_training_data``),
    builds a :class:`ecrm.weights.RiskFit` whose ``block(X)`` and coefficients give the
    regressions of the targets :class:`ecrm.weights.RiskTargets` (a linear loss's
    :math:`[\psi(Y), \mathrm{const}(Y)]`, then :math:`Y`) and sets it with
    ``_set_fitted(X, Y, seen, _fit=fit)``; ``_check_own_state`` checks a loaded fit. The
    rest is shared: prediction, costs, risk, weights, label scores, model files, ``ecrm fit
    --family`` and ``ecrm info`` once registered (:func:`ecrm.weights.register_family`). A
    family with an honest criterion also answers :meth:`fit_honest` and
    :attr:`honest_score_` (read by the mixture and :func:`ecrm.selection.select_honestly`).

    A fitted model keeps what prediction needs (training inputs or Nystrom centres, the
    coefficients of the risk and marginal regressions), no m x m factor when the loss has a
    linear form: :meth:`conditional_weights` refactorises on demand (dual: :math:`O(m^3)`;
    primal: one pass over the training blocks). A loss with no linear form predicts
    through the weights, so the dual keeps its factor then.
    """

    def fit_honest(self, X, Y, *, scores: bool = False) -> HonestOutputs:
        """Fit on ``(X, Y)`` (in place, as ``fit`` does) and give the honest outputs of the
        training points: their costs, or with ``scores`` their label scores.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (m, p)
        Y : array-like of shape (m, d)
        scores : bool, default=False

        Returns
        -------
        outputs : HonestOutputs
        """
        raise TypeError(f"{type(self).__name__} has no honest criterion (no leave-one-out "
                        f"or out-of-bag outputs)")

    @property
    def honest_score_(self) -> float:
        """The fitted model's honest criterion, greater is better (minus the mean honest
        task loss, or a metric of the honest label scores): a search's ``best_score_``."""
        if "best_score_" not in self._fitted_attributes:
            raise AttributeError(f"{type(self).__name__} has no honest criterion")
        return float(self.best_score_)

    _fits_marginals = True
    _fits_dask = True

    def _solver_choice(self, X, kernel, *, cv: bool) -> SolverChoice:
        return check_solver_params(self.solver, self.memory_budget, m=X.shape[0],
                                   p=X.shape[1], kernel=kernel, cv=cv)

    def _store(self, X, Y, kernel_params: dict, fit: RiskFit, alpha: float, seen: Seen,
               **extra) -> None:
        """Keep ``fit`` (risk regressions, then the marginals ``Y``) once it is finite."""
        fit.check_finite(kernel_params, alpha)
        self._set_fitted(X, Y, seen, kernel_params_=kernel_params, _fit=fit, **extra)

    def conditional_weights(self, X) -> np.ndarray:
        r"""Risk weights :math:`w(x)`: :math:`\hat R(y|x) = \sum_i w_i(x) \ell(y, y_i)`.

        In the primal (``solver="primal"`` or ``"nystrom"``) the weights are
        :math:`w(x) = F_c (F_c^\top F_c + m\lambda I)^{-1}(f(x) - \mu) + \mathbf 1/m`
        (:mod:`ecrm.weights.kernel._solvers.normal_equations`), computed in a pass over the training
        blocks; in the dual from the factor of :math:`K + m\lambda I`, recomputed on demand for a
        linear loss (see the class docstring).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)

        Returns
        -------
        W : ndarray of shape (n, m)
        """
        return self._fit.weights(self._kernel_block(X))

    def predict_scores(self, X) -> np.ndarray:
        r"""Estimated marginal of every output coordinate, :math:`\hat p_j(x) = \sum_i
        w_i(x)\, y_{ij}`, clipped to [0, 1].

        For the Hamming loss this is each label's estimated probability (its cost is
        :math:`\sum_i w_i - 2\hat p_j`). The output space makes the scores consistent
        (:meth:`ecrm.spaces.base.OutputSpace.consistent_scores`: a hierarchy caps each label
        at its parents', so any threshold gives a consistent label set).

        Parameters
        ----------
        X : array-like, sparse matrix or Dask array of shape (n, p)

        Returns
        -------
        S : ndarray of shape (n, d)
            A lazy Dask array with the row chunks of ``X`` if ``X`` is one.
        """
        check_is_fitted(self, "X_fit_")
        fit, space = self._fit.slim(), self.output_space
        calibration = self._calibration()

        def scores(V):
            S = space.consistent_scores(
                np.clip(V @ fit.marginal_coef + fit.marginal_intercept, 0.0, 1.0))
            if calibration is None:
                return S
            return space.consistent_scores(calibration.transform(S))

        d = fit.marginal_coef.shape[1]
        return self._apply(X, scores, fit, d, d)

    def _calibration(self):
        """The learnt calibration of the label scores, if any."""
        return None

    def decision_function(self, X) -> np.ndarray:
        """The label scores :meth:`predict_scores`, for scikit-learn's ranking scorers.

        ``scoring="average_precision"`` or ``"roc_auc"`` in
        :class:`~sklearn.model_selection.GridSearchCV` rank the (instance, label) pairs by
        these scores.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)

        Returns
        -------
        S : ndarray of shape (n, d), or (n,) if fitted on a 1-D ``y``
        """
        S = self.predict_scores(X)
        return S.ravel() if self._y_ndim == 1 else S

