r"""What every ECRM estimator shares: checks, declared fitted state, prediction.

:class:`_RiskEstimator` is the base of :class:`ecrm.ECRM`, :class:`ecrm.ECRMCV` and
:class:`ecrm.joint.JointKernelECRM`: the checks of the components and the training data, the
declared fitted attributes (``_fitted_attributes``, set together and only by a successful
fit; :mod:`ecrm.io` writes exactly these), and prediction from the one fit object a fitted
estimator holds (:class:`ecrm._solvers.base.RiskFit`: the block map, the regressions of a
linear loss's targets :math:`[\psi(Y), \mathrm{const}(Y)]`, the risk weights), in row blocks
on the array backend chosen at the call (:mod:`ecrm._solvers._backend`).
:class:`_ECRMBase` adds the marginal regressions (:meth:`predict_scores`) and the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from ecrm._kernels import check_kernel_input, check_kernel_params
from ecrm._solvers._backend import Backend, ChunkCheck, get_backend
from ecrm._solvers.base import RiskFit
from ecrm._solvers.primal import FeatureFit
from ecrm._solvers.rows import validate_outputs
from ecrm._solvers.solver import SolverChoice, check_solver_params, streams_rows
from ecrm._validation import check_feature_scales, check_same_rows
from ecrm.labels import as_label_matrix, labels_of
from ecrm.losses.base import LinearLoss, Loss
from ecrm.spaces.base import OutputSpace

__all__: list[str] = []


class _Costs:
    """The costs ``V @ A + b`` of a block map ``V`` (the constant column left out)."""

    def __init__(self, fit: RiskFit):
        self.coef, self.intercept = fit.risk_coef[:, :-1], fit.risk_intercept[:-1]

    def __call__(self, V) -> np.ndarray:
        return V @ self.coef + self.intercept


class _FeatureNames(BaseEstimator):
    """Receives scikit-learn's feature-name checks at fit, so that a failed fit sets nothing."""


@dataclass(frozen=True)
class _Seen:
    """What the training inputs say about the fitted model (set only when the fit succeeds)."""

    feature_names: np.ndarray | None
    y_ndim: int
    backend: Backend


#: Views of the fit object, set by :meth:`_RiskEstimator._derive` (never stored).
_DERIVED = ("dual_coef_", "coef_", "intercept_")


class _StructuredEstimator(BaseEstimator):
    """What every estimator of this package shares, ECRM's and the structured SVM: the
    scikit-learn tags of a (loss, output space, kernel) estimator, the check of its loss and
    output space, and ``score`` (minus the mean task loss)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = getattr(self, "kernel", None) == "precomputed"
        tags.target_tags.required = True
        tags.target_tags.multi_output = True  # outputs are vectors of the output space
        tags.target_tags.single_output = getattr(self.output_space, "n_outputs", 0) == 1
        return tags

    def _check_components(self, *, linear: bool = False) -> None:
        if not isinstance(self.loss, Loss):
            raise TypeError(f"loss must be an ecrm.losses.Loss; got {type(self.loss).__name__}")
        if not isinstance(self.output_space, OutputSpace):
            raise TypeError(
                "output_space must be an ecrm output space (e.g. ecrm.Hierarchy); "
                f"got {type(self.output_space).__name__}"
            )
        if linear and not isinstance(self.loss, LinearLoss):
            raise TypeError(f"{type(self).__name__} needs a loss with a linear form (an "
                            f"ecrm.losses.LinearLoss); {type(self.loss).__name__} has none")
        self.loss.check_space(self.output_space)


    def predict_labels(self, X, *, leaves_only: bool = False, per_level: bool = False) -> list:
        """The predicted label names of each row (a model of a label hierarchy).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
        leaves_only : bool, default=False
            The most specific labels only (those with no predicted child).
        per_level : bool, default=False
            One list of labels per depth level of the hierarchy, for each row.

        Returns
        -------
        labels : list of n lists
            See :func:`ecrm.labels.labels_of`.
        """
        if not hasattr(self.output_space, "to_labels"):
            raise TypeError(f"predict_labels needs a model of a label hierarchy; this one's "
                            f"outputs are a {type(self.output_space).__name__}")
        return labels_of(self.output_space, self.predict(X), leaves_only=leaves_only,
                         per_level=per_level)

    def score(self, X, y) -> float:
        """Minus the mean task loss of :meth:`predict` on ``(X, y)`` (greater is better).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
        y : array-like of shape (n, d), or (n,) for one output coordinate
            True outputs (named ``y`` as in scikit-learn's ``score``).

        Returns
        -------
        score : float
        """
        P = self.predict(X)
        y = as_label_matrix(self.output_space, y)
        if np.ndim(P) == 1:
            P, y = P[:, None], np.reshape(y, (-1, 1))
        return -float(np.mean(self.loss(P, y)))



class _RiskEstimator(_StructuredEstimator):
    r"""Checks, the kernel block and prediction shared by every ECRM estimator.

    A fitted linear model keeps ``_coef`` (m, e + 1) and ``_intercept`` (e + 1,): the risk
    regressions of the targets :math:`[\psi(Y), \mathrm{const}(Y)]`, so that
    ``V @ _coef + _intercept`` gives the costs and the constant for a kernel block ``V``.
    """

    #: Whether the fit object also holds the regressions of the outputs (predict_scores).
    _fits_marginals = False
    #: The fitted attributes: removed and set together by a successful fit, the only names a
    #: model file holds (``feature_columns_``: the input file's columns, ``level_columns_``:
    #: its ``--level-columns``, both set by ``ecrm fit``).
    _fitted_attributes: tuple[str, ...] = (
        "X_fit_", "Y_fit_", "n_features_in_", "feature_names_in_", "label_names_",
        "kernel_params_", "_y_ndim", "_fit", "feature_columns_", "output_mean_",
        "output_mode_", "level_columns_")

    # -- checks, before any work (nothing is set on self) ---------------------------------
    def _check_kernel_params(self) -> dict:
        return check_kernel_params(self.kernel, self.gamma, self.degree, self.coef0)

    def _check_training_data(self, X, Y, kernel):
        if Y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None")
        Y = as_label_matrix(self.output_space, Y)  # names, paths or levels -> 0/1
        backend = get_backend(X, Y)  # chosen once per fit
        if backend.lazy:  # checked per chunk on the workers
            X, Y, y_ndim = backend.check_training_data(X, Y, self.loss, self.output_space,
                                                       type(self).__name__)
            return X, Y, _Seen(None, y_ndim, backend)
        checked = check_kernel_input(X, kernel)
        # scikit-learn's own reading of the feature names; set on self by _set_fitted
        probe = _FeatureNames()
        validate_data(probe, X, reset=True, skip_check_array=True)
        X = checked
        y_ndim = np.ndim(Y)
        if y_ndim == 1 and self.output_space.n_outputs == 1:
            Y = np.reshape(Y, (-1, 1))  # one coordinate: a 1-D y has one row per sample
        compact = (streams_rows(getattr(self, "solver", None))
                   and isinstance(self.loss, LinearLoss))  # floats per block in the passes
        Y = validate_outputs(self.output_space, Y, compact=compact)
        check_same_rows(X, Y)
        if X.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 training samples; got "
                             f"{X.shape[0]} (n_samples = {X.shape[0]})")
        if kernel not in (None, "precomputed"):  # None: trees, which need no scaling
            check_feature_scales(X, type(self).__name__,
                                 names=getattr(probe, "feature_names_in_", None))
        # what the inputs say about the fitted model, applied by _set_fitted on success
        return X, Y, _Seen(getattr(probe, "feature_names_in_", None), y_ndim, backend)

    def _set_fitted(self, X, Y, kernel_params: dict, fit: RiskFit, seen: _Seen,
                    **extra) -> None:
        """Set the fitted attributes, once every check and solve has succeeded: every
        declared one of an earlier fit is removed first, so none survives a refit."""
        for name in self._fitted_attributes + _DERIVED:
            if name in vars(self):
                delattr(self, name)
        self.X_fit_, self.Y_fit_, self.n_features_in_ = X, Y, X.shape[1]
        self._y_ndim = seen.y_ndim
        if seen.feature_names is not None:
            self.feature_names_in_ = seen.feature_names
        names = list(self.output_space.output_names)
        self.label_names_ = np.array(names + [None], dtype=object)[:-1]  # tuples stay items
        if "kernel_params_" in self._fitted_attributes:
            self.kernel_params_ = kernel_params
        self._fit = fit
        if isinstance(Y, np.ndarray) and Y.ndim == 2:  # the baselines' statistics (not Dask)
            from ecrm.baselines.trivial import output_statistics

            self.output_mean_, self.output_mode_ = output_statistics(Y)
        for name, value in extra.items():
            if name not in self._fitted_attributes:
                raise AttributeError(f"{name!r} is not a declared fitted attribute")
            setattr(self, name, value)
        self._derive()

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
        """The kernel the inputs are checked for (``"precomputed"`` takes kernel blocks)."""
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
        ``X`` (NumPy or Dask, :mod:`ecrm._solvers._backend`) is chosen here, once. ``step``
        holds only what prediction needs (never the estimator), so that a Dask graph ships
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
        W = self._weights(V)
        return np.array([W[k] @ self.loss(np.repeat(Y[k:k + 1], len(self.Y_fit_), 0), self.Y_fit_)
                         for k in range(len(Y))])

    def _weights(self, V) -> np.ndarray:
        return self._fit.weights(V)

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
        if isinstance(loss, LinearLoss):
            costs = _Costs(fit)
            Y = self._apply(X, lambda V: loss.argmin(costs(V), space), fit, fit.n_risk, d,
                            one_dimensional)
        else:
            Y_fit = self.Y_fit_
            Y = self._apply(X, lambda V: loss.minimize_risk(fit.weights(V), Y_fit, space),
                            fit, self.X_fit_.shape[0], d, one_dimensional)
        return Y


class _ECRMBase(_RiskEstimator):
    """ECRM's fitted state: the risk regressions of every solver (:mod:`ecrm._solvers`).

    A fitted model keeps what prediction needs: the training inputs (or the Nystrom
    centres), the coefficients and intercepts of the risk regressions and of the output
    marginals (:meth:`predict_scores`), all solved at fit. No m x m factor is kept when the
    loss has a linear form: :meth:`conditional_weights` refactorises on demand (the dual:
    :math:`O(m^3)`; the primal: one pass over the training blocks). A loss with no linear
    form predicts through the weights, so the dual keeps its factor then.
    """

    _fits_marginals = True

    def _solver_choice(self, X, kernel, *, cv: bool) -> SolverChoice:
        return check_solver_params(self.solver, self.n_components, self.center_selection,
                                   self.memory_budget, m=X.shape[0], p=X.shape[1],
                                   kernel=kernel, cv=cv)

    def _store(self, X, Y, kernel_params: dict, fit: RiskFit, alpha: float, seen: _Seen,
               **extra) -> None:
        """Keep ``fit`` (risk regressions, then the marginals ``Y``) once it is finite."""
        fit.check_finite(kernel_params, alpha)
        self._set_fitted(X, Y, kernel_params, fit, seen, **extra)

    def conditional_weights(self, X) -> np.ndarray:
        r"""Risk weights :math:`w(x)`: :math:`\hat R(y|x) = \sum_i w_i(x) \ell(y, y_i)`.

        In the primal (``solver="primal"`` or ``"nystrom"``) the weights are
        :math:`w(x) = F_c (F_c^\top F_c + m\lambda I)^{-1}(f(x) - \mu) + \mathbf 1/m`
        (:mod:`ecrm._solvers.normal_equations`), computed in a pass over the training blocks;
        in the dual from the factor of :math:`K + m\lambda I`, recomputed on demand for a
        linear loss (see the class docstring).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)

        Returns
        -------
        W : ndarray of shape (n, m)
        """
        return self._weights(self._kernel_block(X))

    def predict_scores(self, X) -> np.ndarray:
        r"""Estimated marginal of every output coordinate, :math:`\hat p_j(x) = \sum_i
        w_i(x)\, y_{ij}`, clipped to [0, 1].

        For the Hamming loss this is the estimated probability of each label (its cost is
        :math:`\sum_i w_i - 2\hat p_j`). The output space makes the scores consistent with
        its structure (:meth:`ecrm.spaces.base.OutputSpace.consistent_scores`; a hierarchy
        caps each label at its parents' scores, so a threshold on them always gives a
        consistent label set). Ranking metrics (AU(PRC)) use these scores. Computed in row
        blocks from the marginal regressions solved at fit.

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
