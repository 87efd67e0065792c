r"""ECRM and ECRMCV: scikit-learn estimators that compose risk weights, loss and oracle.

:class:`_RiskEstimator` is what every ECRM estimator shares (:class:`ECRM`, :class:`ECRMCV`
and :class:`ecrm.joint.JointKernelECRM`): the checks, the kernel block and prediction from
the regressions of a linear loss's targets :math:`[\psi(Y), \mathrm{const}(Y)]`. A fit checks
every parameter and the data before any work and sets the fitted attributes (ending in ``_``)
only once it has succeeded: a failed fit leaves the estimator as it was. The ridge algebra
is in :mod:`ecrm.ridge`, the leave-one-out search of :class:`ECRMCV` in
:mod:`ecrm.model_selection`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.model_selection import ParameterGrid
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, check_memory

from ecrm._validation import check_bool, check_int, check_real, check_same_rows
from ecrm.calibration import IsotonicCalibration
from ecrm.kernels import check_kernel_input, check_kernel_params, kernel_matrix
from ecrm.losses.base import LinearLoss, Loss
from ecrm.model_selection import (
    check_scoring,
    gram_eigendecomposition,
    leave_one_out_scores,
    leave_one_out_search,
)
from ecrm.ridge import CholeskyFactor, Factor, RidgeFit, check_ridge, fit_ridge, risk_weights
from ecrm.spaces.base import OutputSpace

__all__ = ["ECRM", "ECRMCV"]


class _RiskEstimator(BaseEstimator):
    r"""Checks, the kernel block and prediction shared by every ECRM estimator.

    A fitted linear model keeps ``_coef`` (m, e + 1) and ``_intercept`` (e + 1,): the risk
    regressions of the targets :math:`[\psi(Y), \mathrm{const}(Y)]`, so that
    ``V @ _coef + _intercept`` gives the costs and the constant for a kernel block ``V``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # -- checks, before any work (nothing is set on self) ---------------------------------
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

    def _check_kernel_params(self) -> dict:
        return check_kernel_params(self.kernel, self.gamma, self.degree, self.coef0)

    def _check_training_data(self, X, Y, kernel):
        X = check_kernel_input(X, kernel)
        Y = self.output_space.validate(Y)
        check_same_rows(X, Y)
        if X.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 training samples; got "
                             f"{X.shape[0]}")
        return X, Y

    def _targets(self, Y):
        """Regression targets: psi(Y) and const(Y) for a linear loss; nothing otherwise."""
        if isinstance(self.loss, LinearLoss):
            return np.column_stack([self.loss.psi(Y), self.loss.const(Y)])
        return None

    @staticmethod
    def _check_finite(coef, intercept, kernel_params: dict, alpha: float) -> None:
        """A solve that gave NaN or infinite coefficients fails here, at fit."""
        if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
            raise ValueError(
                f"the fit produced non-finite coefficients with the kernel {kernel_params} "
                f"and alpha={alpha!r}: the kernel values are too large or too ill-conditioned "
                f"for this alpha (rescale the inputs, or increase alpha)"
            )

    def _set_fitted(self, X, Y, kernel_params: dict, coef=None, intercept=None) -> None:
        """Set the fitted attributes, once every check and solve has succeeded."""
        self.X_fit_, self.Y_fit_, self.n_features_in_ = X, Y, X.shape[1]
        self.kernel_params_ = kernel_params
        if coef is not None:
            self._coef, self._intercept = coef, intercept
            self.dual_coef_ = coef[:, :-1]
            self.intercept_ = intercept[:-1]

    # -- prediction -----------------------------------------------------------------------
    def _kernel_block(self, X) -> np.ndarray:
        check_is_fitted(self, "X_fit_")
        params = self.kernel_params_
        X = check_kernel_input(X, params["kernel"], n_train=self.X_fit_.shape[0],
                               n_features=self.n_features_in_)
        return kernel_matrix(X, self.X_fit_, **params)

    def _require_linear(self) -> None:
        if not isinstance(self.loss, LinearLoss):
            raise TypeError(f"{type(self.loss).__name__} has no linear form, hence no costs")

    def predict_costs(self, X) -> np.ndarray:
        r"""Costs :math:`c(x)` of the linear form of the estimated risk.

        The estimated risk is :math:`\hat R(y|x) = \langle\phi(y), c(x)\rangle +
        \mathrm{const}(x)`; the oracle minimises it. Computed as one kernel block times
        ``dual_coef_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
            Inputs (the kernel block against the training points if precomputed).

        Returns
        -------
        C : ndarray of shape (n, e)
        """
        self._require_linear()
        return self._kernel_block(X) @ self.dual_coef_ + self.intercept_

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
            full = V @ self._coef + self._intercept
            return np.einsum("ij,ij->i", self.loss.phi(Y), full[:, :-1]) + full[:, -1]
        W = self._weights(V)
        return np.array([W[k] @ self.loss(np.repeat(Y[k:k + 1], len(self.Y_fit_), 0), self.Y_fit_)
                         for k in range(len(Y))])

    def _weights(self, V) -> np.ndarray:  # pragma: no cover - estimators with weights
        raise NotImplementedError

    def predict(self, X) -> np.ndarray:
        """Predicted outputs: exact minimisers of the estimated conditional risk.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)

        Returns
        -------
        Y : ndarray of shape (n, d)
        """
        check_is_fitted(self, "X_fit_")
        if isinstance(self.loss, LinearLoss):
            return self.loss.argmin(self.predict_costs(X), self.output_space)
        return self.loss.minimize_risk(self._weights(self._kernel_block(X)), self.Y_fit_,
                                       self.output_space)

    def score(self, X, Y) -> float:
        """Minus the mean task loss of :meth:`predict` on ``(X, Y)`` (greater is better).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
        Y : array-like of shape (n, d)

        Returns
        -------
        score : float
        """
        return -float(np.mean(self.loss(self.predict(X), Y)))


class _ECRMBase(_RiskEstimator):
    """ECRM's fitted state: the factor of ``K + m*alpha*I``, hence the risk weights."""

    def _store(self, X, Y, kernel_params: dict, factor: Factor, fit_intercept: bool,
               alpha: float, T=None) -> None:
        """Solve the risk regressions (nothing to solve for a loss with no linear form)."""
        T = self._targets(Y) if T is None else T
        fit = fit_ridge(factor, np.zeros((len(Y), 0)) if T is None else T, fit_intercept)
        self._check_finite(fit.dual_coef, fit.intercept, kernel_params, alpha)
        self._factor, self._fit = factor, fit
        self._marginals: RidgeFit | None = None  # solved on first use by predict_scores
        if T is None:
            self._set_fitted(X, Y, kernel_params)
        else:
            self._set_fitted(X, Y, kernel_params, fit.dual_coef, fit.intercept)

    def _weights(self, V) -> np.ndarray:
        return risk_weights(self._factor, self._fit, V)

    def conditional_weights(self, X) -> np.ndarray:
        r"""Risk weights :math:`w(x)`: :math:`\hat R(y|x) = \sum_i w_i(x) \ell(y, y_i)`.

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
        consistent label set). Ranking metrics (AU(PRC)) use these scores.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)

        Returns
        -------
        S : ndarray of shape (n, d)
        """
        V = self._kernel_block(X)
        if self._marginals is None:  # one more solve with d right-hand sides, on first use
            self._marginals = fit_ridge(self._factor, self.Y_fit_, self._fit.u is not None)
        S = np.clip(V @ self._marginals.dual_coef + self._marginals.intercept, 0.0, 1.0)
        return self._calibrate(self.output_space.consistent_scores(S))

    def _calibrate(self, S: np.ndarray) -> np.ndarray:
        """Consistent scores, calibrated where the estimator has learnt a calibration."""
        return S


class ECRM(_ECRMBase):
    r"""Structured prediction by estimated conditional risk minimisation.

    Kernel ridge regression of the loss to every training output gives the estimated
    conditional risk (Goh & Jaillet, 2016, Proposition 2.1)

    .. math:: \hat R(y|x) = \sum_{i=1}^m w_i(x)\, \ell(y, y_i), \qquad
              w(x) = (K + m\lambda I)^{-1} v(x),\quad v(x)_i = k(x, x_i),

    and the prediction is :math:`\arg\min_{y \in \mathcal Y} \hat R(y|x)`. For a loss linear in
    an embedding (:class:`ecrm.losses.LinearLoss`) fitting precomputes
    :math:`A = (K + m\lambda I)^{-1}\psi(Y)` once; prediction is one kernel block times
    :math:`A` followed by the output space's exact oracle.

    Parameters
    ----------
    loss : ecrm.losses.Loss
        The task loss, e.g. :class:`~ecrm.losses.HammingLoss`.
    output_space : ecrm.spaces.base.OutputSpace
        The output space with its exact oracle, e.g. :class:`ecrm.Hierarchy`.
    kernel : {"rbf", "linear", "poly", "laplacian", "sigmoid", "cosine", "precomputed"} or \
callable, default="rbf"
        Kernel, evaluated by :func:`sklearn.metrics.pairwise.pairwise_kernels`.
    gamma : float in [0, inf), default=None
        Kernel coefficient for rbf, laplacian, poly, sigmoid; ``None`` means
        ``1 / n_features``.
    degree : int >= 1, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1
        Constant of the polynomial and sigmoid kernels.
    alpha : float in (0, inf), default=1e-3
        The paper's :math:`\lambda`. The solve adds ``m * alpha`` to the diagonal of the
        Gram matrix (scikit-learn's ``KernelRidge`` adds ``alpha`` itself); ``m * alpha``
        must be finite and at least the round-off of that diagonal
        (:func:`ecrm.ridge.check_ridge`).
    fit_intercept : bool, default=True
        Model an unpenalised intercept in every risk regression (the risk weights then sum to
        one); see :mod:`ecrm.ridge` for the derivation.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (m, e)
        :math:`A` with the intercept folded in: costs are ``K(X, X_fit_) @ dual_coef_ +
        intercept_``.
    intercept_ : ndarray of shape (e,)
    X_fit_, Y_fit_ : training inputs and outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import ECRM, Hierarchy
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]])
    >>> Y = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]])
    >>> ECRM(HammingLoss(), h, kernel="rbf", gamma=10.0).fit(X, Y).predict([[0.05], [1.05]])
    array([[1., 1., 0.],
           [1., 0., 1.]])
    """

    def __init__(self, loss, output_space, *, kernel="rbf", gamma=None, degree=3, coef0=1,
                 alpha=1e-3, fit_intercept=True):
        self.loss = loss
        self.output_space = output_space
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.alpha = alpha
        self.fit_intercept = fit_intercept

    def fit(self, X, Y):
        """Fit the risk regressions.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (m, p)
            Training inputs (the training Gram matrix, (m, m), if ``kernel="precomputed"``).
        Y : array-like of shape (m, d)
            Training outputs, in the output space.

        Returns
        -------
        self : ECRM
        """
        params = self._check_kernel_params()
        alpha = check_real(self.alpha, "alpha")
        fit_intercept = check_bool(self.fit_intercept, "fit_intercept")
        self._check_components()
        X, Y = self._check_training_data(X, Y, params["kernel"])
        m = X.shape[0]
        check_ridge(alpha, m)
        K = kernel_matrix(X, X, **params, copy=True)  # ours: the factor overwrites it
        ridge = check_ridge(alpha, m, np.abs(K.diagonal()).max())
        self._store(X, Y, params, CholeskyFactor(K, ridge, overwrite_k=True), fit_intercept,
                    alpha)
        return self


class ECRMCV(_ECRMBase):
    r"""ECRM with ``alpha``, the intercept and the kernel chosen by exact leave-one-out.

    For every candidate :math:`\lambda` the exact leave-one-out costs are

    .. math:: c_{-i}(x_i) = \frac{(H\Psi)_i - H_{ii}\,\psi(y_i)}{1 - H_{ii}},

    with :math:`H` the hat matrix of the risk regressions (:mod:`ecrm.ridge`): because the
    costs are linear in the regression targets :math:`\psi(y_j)`, the fit without point
    :math:`i` (same ridge term :math:`m\lambda` on the diagonal) has exactly these costs at
    :math:`x_i`. Its prediction is :math:`\hat y_{-i} = \arg\min_y \langle \phi(y),
    c_{-i}(x_i)\rangle` and the criterion is the leave-one-out *task loss*
    :math:`\frac1m\sum_i \ell(\hat y_{-i}, y_i)`, for every :math:`\lambda` from one
    eigendecomposition :math:`K = Q\Lambda Q^\top` per kernel (a thin one from the SVD of
    ``X`` for a linear kernel with fewer features than samples). The selected model is
    refitted on all data from the same decomposition.

    With ``scoring`` a ranking metric, the criterion is instead that metric of the exact
    leave-one-out *label scores* :math:`\hat p_{-i}(x_i)` (:meth:`predict_scores` of the fit
    without point :math:`i`: the same hat-matrix formula applied to the label columns, then
    the output space's consistency step, as at prediction); no oracle runs during the search.
    With ``calibration="isotonic"`` each label's score is then mapped through an isotonic
    regression of the label on its exact leave-one-out scores (:mod:`ecrm.calibration`).

    Parameters
    ----------
    loss, output_space, kernel, gamma, degree, coef0 : see :class:`ECRM`.
    alphas : array-like of float, default=np.logspace(-6, 2, 17)
        Candidate values of the paper's :math:`\lambda`, each as ``alpha`` in :class:`ECRM`.
    fit_intercept : bool or "auto", default=True
        ``"auto"`` tries both and keeps the better by leave-one-out loss.
    kernel_grid : dict or list of dicts, default=None
        Kernel settings to choose from, in :class:`sklearn.model_selection.ParameterGrid`
        form over the keys ``kernel``, ``gamma``, ``degree``, ``coef0`` (the others come from
        the parameters above; not with ``kernel="precomputed"``), e.g.
        ``[{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.01, 0.1]}]``. ``None``
        uses the single kernel given.
    memory : str, joblib.Memory or object with a ``cache`` method, default=None
        Caches each kernel's eigendecomposition, so that fits with other losses on the same
        inputs reuse it (as :class:`sklearn.pipeline.Pipeline`'s ``memory``).
    loo_samples : int >= 1, default=None
        Average the exact leave-one-out loss over this many random training points instead
        of all of them (each point's leave-one-out prediction is still exact); for losses
        whose oracle is costly.
    kernel_subsample : int >= 2, default=None
        With several kernel settings, choose the kernel by exact leave-one-out on this many
        random training points, then alpha and the intercept on all of them with that
        kernel: one full eigendecomposition instead of one per kernel.
    random_state : int, RandomState instance or None, default=None
        Draws the subsets of ``loo_samples`` and ``kernel_subsample``.
    scoring : "loss", "micro_auprc", "macro_auprc", "lrap" or callable, default="loss"
        The selection criterion: the leave-one-out task loss, or a ranking metric of the
        leave-one-out label scores (:data:`ecrm.model_selection.SCORERS`; a callable is
        ``f(Y_true, scores) -> float``, greater is better). scikit-learn's
        ``"average_precision"`` is ``"macro_auprc"``.
    calibration : None or "isotonic", default=None
        Calibrate :meth:`predict_scores` label by label on the exact leave-one-out scores of
        the selected model. Monotone per label, so each label's ranking of instances is
        unchanged; the output space's consistency step is applied again afterwards.

    Attributes
    ----------
    alpha_ : float
    fit_intercept_ : bool
    kernel_params_ : dict
        The selected kernel settings.
    best_score_ : float
        The best criterion: minus the mean leave-one-out task loss, or the metric.
    cv_results_ : dict
        ``params`` (a list of dicts) and the arrays ``alpha``, ``fit_intercept``,
        ``mean_loo_score``, ``mean_loo_loss`` (NaN where not computed) and ``rank`` for
        every candidate.
    loo_scores_ : ndarray of shape (len(loo_rows_), d) or None
        The selected model's leave-one-out label scores, when ``scoring`` is a metric.
    score_calibration_ : IsotonicCalibration or None
        The calibration of :meth:`predict_scores`.
    kernel_search_results_ : dict or None
        The stage-1 table when ``kernel_subsample`` chose the kernel.
    loo_rows_ : ndarray of int
        The training points the leave-one-out loss was averaged over.
    loo_predictions_ : ndarray of shape (len(loo_rows_), d)
        Their leave-one-out predictions under the selected model.
    """

    def __init__(self, loss, output_space, *, alphas=None, kernel="rbf", gamma=None, degree=3,
                 coef0=1, fit_intercept=True, kernel_grid=None, memory=None,
                 loo_samples=None, kernel_subsample=None, random_state=None,
                 scoring="loss", calibration=None):
        self.loss = loss
        self.output_space = output_space
        self.alphas = alphas
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.kernel_grid = kernel_grid
        self.memory = memory
        self.loo_samples = loo_samples
        self.kernel_subsample = kernel_subsample
        self.random_state = random_state
        self.scoring = scoring
        self.calibration = calibration

    def _alphas(self) -> list[float]:
        alphas = np.logspace(-6, 2, 17) if self.alphas is None else np.atleast_1d(self.alphas)
        if alphas.size == 0:
            raise ValueError("alphas must not be empty")
        return [check_real(a, f"alphas[{i}]") for i, a in enumerate(alphas.tolist())]

    def _intercepts(self) -> list[bool]:
        if isinstance(self.fit_intercept, str) and self.fit_intercept == "auto":
            return [True, False]
        if isinstance(self.fit_intercept, (bool, np.bool_)):
            return [bool(self.fit_intercept)]
        raise ValueError(f"fit_intercept must be True, False or 'auto'; got "
                         f"{self.fit_intercept!r}")

    def _kernel_settings(self, own: dict) -> list[dict]:
        if self.kernel_grid is None:
            return [own]
        if own["kernel"] == "precomputed":
            raise ValueError("kernel_grid cannot be combined with kernel='precomputed'")
        settings = []
        for override in ParameterGrid(self.kernel_grid):
            unknown = set(override) - {"kernel", "gamma", "degree", "coef0"}
            if unknown:
                raise ValueError(f"kernel_grid may only set kernel, gamma, degree and coef0; "
                                 f"got {sorted(unknown)}")
            params = check_kernel_params(**{**own, **override})
            if params["kernel"] == "precomputed":
                raise ValueError("kernel_grid cannot contain 'precomputed'")
            settings.append(params)
        return settings

    @staticmethod
    def _loo_rows(m: int, loo_samples: int | None, rng) -> np.ndarray | None:
        if loo_samples is not None and loo_samples < m:
            return np.sort(rng.choice(m, loo_samples, replace=False))
        return None

    def fit(self, X, Y):
        """Select the regularisation and kernel by exact leave-one-out task loss, then refit.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (m, p)
            Training inputs (the training Gram matrix, (m, m), if ``kernel="precomputed"``).
        Y : array-like of shape (m, d)
            Training outputs, in the output space.

        Returns
        -------
        self : ECRMCV
        """
        own = self._check_kernel_params()
        settings = self._kernel_settings(own)
        alphas = self._alphas()
        candidates = [(a, b) for b in self._intercepts() for a in alphas]
        loo_samples = check_int(self.loo_samples, "loo_samples", allow_none=True)
        kernel_subsample = check_int(self.kernel_subsample, "kernel_subsample", low=2,
                                     allow_none=True)
        decompose = check_memory(self.memory).cache(gram_eigendecomposition)
        rng = check_random_state(self.random_state)
        metric = check_scoring(self.scoring)
        if self.calibration not in (None, "isotonic"):
            raise ValueError(f"calibration must be None or 'isotonic'; got "
                             f"{self.calibration!r}")
        self._check_components(linear=True)
        X, Y = self._check_training_data(X, Y, own["kernel"])
        m = X.shape[0]
        for i, alpha in enumerate(alphas):
            check_ridge(alpha, m, name=f"alphas[{i}]")
        stage1 = None
        if kernel_subsample is not None and len(settings) > 1 and kernel_subsample < m:
            # Stage 1: the kernel, by exact leave-one-out on a random subset of the points.
            sub = np.sort(rng.choice(m, kernel_subsample, replace=False))
            stage1 = leave_one_out_search(
                self.loss, self.output_space, X[sub], Y[sub], self._targets(Y[sub]), settings,
                candidates, decompose=decompose,
                rows=self._loo_rows(len(sub), loo_samples, rng), metric=metric)
            settings = [stage1.best.kernel_params]
        T = self._targets(Y)
        search = leave_one_out_search(self.loss, self.output_space, X, Y, T, settings,
                                      candidates, decompose=decompose,
                                      rows=self._loo_rows(m, loo_samples, rng), metric=metric)
        best = search.best
        calibration = None
        if self.calibration == "isotonic":
            S = leave_one_out_scores(search.eig, Y, self.output_space, m * best.alpha,
                                     best.fit_intercept)
            calibration = IsotonicCalibration().fit(S, Y)
        self._store(X, Y, best.kernel_params, search.eig.with_ridge(m * best.alpha),
                    best.fit_intercept, best.alpha, T)
        self.alpha_, self.fit_intercept_ = best.alpha, best.fit_intercept
        self.best_score_ = best.score
        self.cv_results_ = search.table()
        self.kernel_search_results_ = None if stage1 is None else stage1.table()
        self.loo_rows_ = search.rows
        self.loo_predictions_ = search.predictions
        self.loo_scores_ = search.scores
        self.score_calibration_ = calibration
        return self

    def _calibrate(self, S: np.ndarray) -> np.ndarray:
        if self.score_calibration_ is None:
            return S
        return self.output_space.consistent_scores(self.score_calibration_.transform(S))
