r"""ECRM and ECRMCV: scikit-learn estimators that compose risk weights, loss and oracle."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.model_selection import ParameterGrid
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, check_memory

from ecrm.kernels import check_kernel, kernel_matrix
from ecrm.losses.base import LinearLoss, Loss
from ecrm.ridge import CholeskyFactor, EigenFactor, LeaveOneOut, fit_ridge, risk_weights
from ecrm.spaces.base import OutputSpace


class _ECRMBase(BaseEstimator):
    """Prediction shared by :class:`ECRM` and :class:`ECRMCV` (fitted state ends in ``_``)."""

    # -- input checking ---------------------------------------------------------------
    def _check_components(self):
        if not isinstance(self.loss, Loss):
            raise TypeError(f"loss must be an ecrm.losses.Loss; got {type(self.loss).__name__}")
        if not isinstance(self.output_space, OutputSpace):
            raise TypeError(
                "output_space must be an ecrm output space (e.g. ecrm.Hierarchy); "
                f"got {type(self.output_space).__name__}"
            )
        check_kernel(self.kernel)

    def _own_kernel_params(self) -> dict:
        return {"kernel": self.kernel, "gamma": self.gamma, "degree": self.degree,
                "coef0": self.coef0}

    def _check_X(self, X, *, fit: bool):
        X = check_array(X, accept_sparse=("csr", "csc"), dtype=np.float64,
                        input_name="X")
        kernel = self.kernel if fit else self.kernel_params_["kernel"]
        if kernel == "precomputed":
            n_cols = X.shape[0] if fit else self.X_fit_.shape[0]
            if X.shape[1] != n_cols:
                raise ValueError(
                    f"with kernel='precomputed' X must be the kernel matrix of shape "
                    f"(n_samples, {n_cols}); got shape {X.shape}"
                )
        elif not fit and X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but this estimator was fitted with "
                f"{self.n_features_in_}"
            )
        return X

    def _gram(self, X, params=None):
        """Kernel block between ``X`` and the training inputs (``X`` itself if precomputed)."""
        params = self.kernel_params_ if params is None else params
        if params["kernel"] == "precomputed":
            return np.array(X.toarray() if sp.issparse(X) else X, dtype=float)
        return kernel_matrix(X, self.X_fit_, **params)

    def _prepare(self, X, Y):
        self._check_components()
        X = self._check_X(X, fit=True)
        Y = self.output_space.validate(Y)
        if X.shape[0] != Y.shape[0]:
            raise ValueError(
                f"X and Y must have the same number of rows; got {X.shape[0]} and {Y.shape[0]}"
            )
        if X.shape[0] < 2:
            raise ValueError("ECRM needs at least 2 training samples")
        self.X_fit_ = X
        self.Y_fit_ = Y
        self.n_features_in_ = X.shape[1]
        return X, Y

    def _targets(self, Y):
        """Regression targets: psi(Y) and const(Y) for a linear loss; nothing otherwise."""
        if isinstance(self.loss, LinearLoss):
            return np.column_stack([self.loss.psi(Y), self.loss.const(Y)])
        return None

    def _store(self, factor, T, fit_intercept):
        """Keep the factorisation and solve the risk regressions (nothing to solve if T is None)."""
        self._factor = factor
        self._marginals = None
        self._fit = fit_ridge(factor, np.zeros((len(self.Y_fit_), 0)) if T is None else T,
                              fit_intercept)
        if T is not None:
            self.dual_coef_ = self._fit.dual_coef[:, :-1]
            self.intercept_ = self._fit.intercept[:-1]

    # -- prediction -------------------------------------------------------------------
    def _kernel_block(self, X):
        check_is_fitted(self, "X_fit_")
        return self._gram(self._check_X(X, fit=False))

    def conditional_weights(self, X) -> np.ndarray:
        r"""Risk weights :math:`w(x)`, shape (n_samples, m): :math:`\hat R(y|x) = \sum_i w_i(x)
        \ell(y, y_i)`."""
        V = self._kernel_block(X)
        return risk_weights(self._factor, self._fit, V)

    def predict_costs(self, X) -> np.ndarray:
        r"""Costs :math:`c(x) = \sum_i w_i(x)\psi(y_i)` of the linear form, shape (n, e).

        The estimated risk is :math:`\hat R(y|x) = \langle\phi(y), c(x)\rangle + \mathrm{const}`;
        the oracle minimises it. Computed as one kernel block times ``dual_coef_``.
        """
        self._require_linear()
        return self._kernel_block(X) @ self.dual_coef_ + self.intercept_

    def conditional_risk(self, X, Y) -> np.ndarray:
        r"""Estimated risk :math:`\hat R(y_k | x_k)` of each row pair of ``X`` and ``Y``: (n,)."""
        V = self._kernel_block(X)
        Y = np.asarray(Y, dtype=float)
        if isinstance(self.loss, LinearLoss):
            full = V @ self._fit.dual_coef + self._fit.intercept
            return np.einsum("ij,ij->i", self.loss.phi(Y), full[:, :-1]) + full[:, -1]
        W = risk_weights(self._factor, self._fit, V)
        return np.array([W[k] @ self.loss(np.repeat(Y[k:k + 1], len(self.Y_fit_), 0), self.Y_fit_)
                         for k in range(len(Y))])

    def predict(self, X) -> np.ndarray:
        """Predicted outputs: exact minimisers of the estimated conditional risk, shape (n, d)."""
        if isinstance(self.loss, LinearLoss):
            return self.loss.argmin(self.predict_costs(X), self.output_space)
        return self.loss.minimize_risk(self.conditional_weights(X), self.Y_fit_, self.output_space)

    def predict_scores(self, X) -> np.ndarray:
        r"""Estimated marginal of every output coordinate, :math:`\hat p_j(x) = \sum_i
        w_i(x)\, y_{ij}`, clipped to [0, 1]; shape (n, d).

        For the Hamming loss this is the estimated probability of each label (its cost is
        :math:`\sum_i w_i - 2\hat p_j`). On a hierarchy the scores are made consistent by
        capping each label at its parents' scores (:meth:`Hierarchy.cap_by_parents`), so a
        threshold on them always gives a consistent label set. Ranking metrics (AU(PRC))
        use these scores.
        """
        V = self._kernel_block(X)
        if self._marginals is None:  # one more solve with d right-hand sides, on first use
            self._marginals = fit_ridge(self._factor, self.Y_fit_, self._fit.u is not None)
        S = np.clip(V @ self._marginals.dual_coef + self._marginals.intercept, 0.0, 1.0)
        cap = getattr(self.output_space, "cap_by_parents", None)
        return S if cap is None else cap(S)

    def score(self, X, Y) -> float:
        """Minus the mean task loss of :meth:`predict` on ``(X, Y)`` (greater is better)."""
        return -float(np.mean(self.loss(self.predict(X), Y)))

    def _require_linear(self):
        if not isinstance(self.loss, LinearLoss):
            raise TypeError(f"{type(self.loss).__name__} has no linear form, hence no costs")


def _check_alpha(alpha, name="alpha"):
    if not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"{name} must be a positive finite number; got {alpha!r}")
    return float(alpha)


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
    gamma : float, default=None
        Kernel coefficient for rbf, laplacian, poly, sigmoid; ``None`` means
        ``1 / n_features``.
    degree : int, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1
        Constant of the polynomial and sigmoid kernels.
    alpha : float, default=1e-3
        The paper's :math:`\lambda`. The solve adds ``m * alpha`` to the diagonal of the
        Gram matrix (scikit-learn's ``KernelRidge`` adds ``alpha`` itself).
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
        """Fit the risk regressions on inputs ``X`` (n, p; dense or sparse) and outputs ``Y``."""
        alpha = _check_alpha(self.alpha)
        X, Y = self._prepare(X, Y)
        self.kernel_params_ = self._own_kernel_params()
        K = self._gram(X)
        self._store(CholeskyFactor(K, len(K) * alpha), self._targets(Y),
                    bool(self.fit_intercept))
        return self


def _decompose(X, params: dict) -> EigenFactor:
    """Eigendecomposition of the Gram matrix of ``X`` (thin for a linear kernel, p < m)."""
    if params["kernel"] == "linear" and X.shape[1] < X.shape[0]:
        return EigenFactor.from_features(X)
    if params["kernel"] == "precomputed":
        return EigenFactor.from_kernel(np.array(X.toarray() if sp.issparse(X) else X))
    return EigenFactor.from_kernel(kernel_matrix(X, X, **params))


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

    Parameters
    ----------
    loss, output_space, kernel, gamma, degree, coef0 : see :class:`ECRM`.
    alphas : array-like of float, default=np.logspace(-6, 2, 17)
        Candidate values of the paper's :math:`\lambda`.
    fit_intercept : bool or "auto", default=True
        ``"auto"`` tries both and keeps the better by leave-one-out loss.
    kernel_grid : dict or list of dicts, default=None
        Kernel settings to choose from, in :class:`sklearn.model_selection.ParameterGrid`
        form over the keys ``kernel``, ``gamma``, ``degree``, ``coef0`` (the others come from
        the parameters above), e.g. ``[{"kernel": ["linear"]}, {"kernel": ["rbf"],
        "gamma": [0.01, 0.1]}]``. ``None`` uses the single kernel given.
    memory : str, joblib.Memory or object with a ``cache`` method, default=None
        Caches each kernel's eigendecomposition, so that fits with other losses on the same
        inputs reuse it (as :class:`sklearn.pipeline.Pipeline`'s ``memory``).
    loo_samples : int, default=None
        Average the exact leave-one-out loss over this many random training points instead
        of all of them (each point's leave-one-out prediction is still exact); for losses
        whose oracle is costly.
    kernel_subsample : int, default=None
        With several kernel settings, choose the kernel by exact leave-one-out on this many
        random training points, then alpha and the intercept on all of them with that
        kernel: one full eigendecomposition instead of one per kernel.
    random_state : int, RandomState instance or None, default=None
        Draws the subsets of ``loo_samples`` and ``kernel_subsample``.

    Attributes
    ----------
    alpha_ : float
    fit_intercept_ : bool
    kernel_params_ : dict
        The selected kernel settings.
    best_score_ : float
        Minus the best mean leave-one-out task loss.
    cv_results_ : dict
        ``params`` (a list of dicts) and the arrays ``alpha``, ``fit_intercept``,
        ``mean_loo_loss`` and ``rank`` for every candidate.
    kernel_search_results_ : dict or None
        The stage-1 table when ``kernel_subsample`` chose the kernel.
    loo_rows_ : ndarray of int
        The training points the leave-one-out loss was averaged over.
    loo_predictions_ : ndarray of shape (len(loo_rows_), d)
        Their leave-one-out predictions under the selected model.
    """

    def __init__(self, loss, output_space, *, alphas=None, kernel="rbf", gamma=None, degree=3,
                 coef0=1, fit_intercept=True, kernel_grid=None, memory=None,
                 loo_samples=None, kernel_subsample=None, random_state=None):
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

    def _alpha_intercepts(self):
        alphas = np.logspace(-6, 2, 17) if self.alphas is None else np.atleast_1d(self.alphas)
        if alphas.size == 0:
            raise ValueError("alphas must not be empty")
        alphas = [_check_alpha(a, "every alpha in alphas") for a in alphas.tolist()]
        if self.fit_intercept == "auto":
            intercepts = [True, False]
        elif isinstance(self.fit_intercept, (bool, np.bool_)):
            intercepts = [bool(self.fit_intercept)]
        else:
            raise ValueError(f"fit_intercept must be True, False or 'auto'; got "
                             f"{self.fit_intercept!r}")
        return [(a, b) for b in intercepts for a in alphas]

    def _kernel_settings(self) -> list[dict]:
        if self.kernel_grid is None:
            return [self._own_kernel_params()]
        settings = []
        for override in ParameterGrid(self.kernel_grid):
            unknown = set(override) - {"kernel", "gamma", "degree", "coef0"}
            if unknown:
                raise ValueError(f"kernel_grid may only set kernel, gamma, degree and coef0; "
                                 f"got {sorted(unknown)}")
            params = {**self._own_kernel_params(), **override}
            if check_kernel(params["kernel"]) == "precomputed":
                raise ValueError("kernel_grid cannot contain 'precomputed'")
            settings.append(params)
        return settings

    def _search(self, X, Y, settings, candidates, decompose, rng):
        """Exact leave-one-out task loss of every (kernel, alpha, intercept) candidate."""
        m = X.shape[0]
        T = self._targets(Y)
        rows = np.arange(m)
        if self.loo_samples is not None and self.loo_samples < m:
            rows = np.sort(rng.choice(m, int(self.loo_samples), replace=False))
        results, keys, best = [], [], None
        for k, params in enumerate(settings):
            eig = decompose(X, params)
            loo = LeaveOneOut(eig, T, rows)
            for alpha, intercept in candidates:
                costs = loo.predictions(m * alpha, intercept)[:, :-1]
                Y_loo = self.loss.argmin(costs, self.output_space)
                # Order: lower loss, then the earlier kernel, then stronger regularisation.
                key = (float(np.mean(self.loss(Y_loo, Y[rows]))), k, -alpha, not intercept)
                results.append({**params, "alpha": alpha, "fit_intercept": intercept})
                keys.append(key)
                if best is None or key < best[0]:
                    best = (key, alpha, intercept, params, eig, Y_loo)
        rank = np.empty(len(keys), dtype=int)
        rank[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(1, len(keys) + 1)
        table = {
            "params": results,
            "alpha": np.array([r["alpha"] for r in results]),
            "fit_intercept": np.array([r["fit_intercept"] for r in results]),
            "mean_loo_loss": np.array([key[0] for key in keys]),
            "rank": rank,
        }
        return table, best, rows, T

    def fit(self, X, Y):
        """Select the regularisation and kernel by exact leave-one-out task loss, then refit."""
        candidates = self._alpha_intercepts()
        settings = self._kernel_settings()
        X, Y = self._prepare(X, Y)
        self._require_linear()
        decompose = check_memory(self.memory).cache(_decompose)
        rng = check_random_state(self.random_state)
        m = X.shape[0]
        self.kernel_search_results_ = None
        if self.kernel_subsample is not None and len(settings) > 1 and self.kernel_subsample < m:
            # Stage 1: the kernel, by exact leave-one-out on a random subset of the points.
            sub = np.sort(rng.choice(m, int(self.kernel_subsample), replace=False))
            self.kernel_search_results_, best, _, _ = self._search(
                X[sub], Y[sub], settings, candidates, decompose, rng)
            settings = [best[3]]
        self.cv_results_, best, rows, T = self._search(X, Y, settings, candidates, decompose, rng)
        key, self.alpha_, self.fit_intercept_, self.kernel_params_, eig, Y_loo = best
        self.best_score_ = -key[0]
        self.loo_rows_ = rows
        self.loo_predictions_ = Y_loo
        self._store(eig.with_ridge(m * self.alpha_), T, self.fit_intercept_)
        return self
