r"""Per-feature kernel length-scales learned by the gradient of the exact leave-one-out error.

A fixed grid can only stretch every input feature alike. :class:`LeaveOneOutLengthScales`
learns one scale :math:`s_j > 0` per feature (automatic relevance determination) for the
kernels

.. math::
    k_s(x, x') = \exp\Bigl(-\sum_j s_j (x_j - x'_j)^2\Bigr) \ \text{(RBF)}, \qquad
    k_s(x, x') = \exp\Bigl(-\sum_j s_j |x_j - x'_j|\Bigr) \ \text{(Laplacian)},

together with the ridge :math:`r = m\lambda`, by minimising the exact leave-one-out squared
error of kernel ridge regression of the (centred) targets :math:`T \in \mathbb R^{m\times d}`.
With :math:`G = (K + rI)^{-1}` and :math:`A = GT`, the leave-one-out residual of point
:math:`i` is :math:`A_{i\cdot} / G_{ii}`, so

.. math:: L = \frac{1}{md} \sum_i \frac{\lVert A_{i\cdot}\rVert^2}{G_{ii}^2}.

Since :math:`dG = -G\,dK\,G`, every partial derivative is one trace,
:math:`\partial L / \partial\theta = \operatorname{tr}(M\,\partial K/\partial\theta)` with

.. math:: M = \frac{2}{md}\Bigl(G\,\operatorname{diag}(c)\,G - A\,(GB)^\top\Bigr), \quad
          B_{i\cdot} = \frac{A_{i\cdot}}{G_{ii}^2}, \quad
          c_i = \frac{\lVert A_{i\cdot}\rVert^2}{G_{ii}^3},

and :math:`\partial K / \partial \log s_j = -s_j\, K \odot D_j` (:math:`D_j` the squared or
absolute differences of feature :math:`j`), :math:`\partial K / \partial \log r = rI`: one
factorisation and two :math:`m \times m` products give the whole gradient, as the marginal
likelihood does in Gaussian-process practice. L-BFGS-B minimises :math:`L` over
:math:`\log s` and :math:`\log r` within bounds.

The learned kernel is the plain kernel of rescaled features: :meth:`~LeaveOneOutLengthScales.
transform` multiplies feature :math:`j` by :math:`\sqrt{s_j}` (RBF) or :math:`s_j`
(Laplacian), so that any estimator with ``kernel="rbf"`` or ``"laplacian"`` and
``gamma=1`` uses :math:`k_s` (and a ``gamma`` grid around 1 rescales it as a whole).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, optimize, sparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.metrics.pairwise import euclidean_distances, manhattan_distances
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ecrm.estimators._parameters import (
    CONSTRAINTS,
    RANDOM_STATE,
    Checked,
    Rule,
    check_params,
    vocabulary,
)

__all__ = ["LeaveOneOutLengthScales", "leave_one_out_error"]

KERNELS = vocabulary("width_kernel")


def _ard_kernel(X: np.ndarray, scales: np.ndarray, kernel: str) -> np.ndarray:
    if kernel == "rbf":
        return np.exp(-euclidean_distances(X * np.sqrt(scales), squared=True))
    return np.exp(-manhattan_distances(X * scales))


def _ridge_inverse(K: np.ndarray, ridge: float) -> np.ndarray:
    """``(K + ridge I)^{-1}``, by Cholesky; by the clipped eigendecomposition if round-off
    leaves ``K + ridge I`` numerically indefinite."""
    A = K + ridge * np.eye(len(K))
    try:
        factor = linalg.cho_factor(A, lower=True, check_finite=False)
        return linalg.cho_solve(factor, np.eye(len(K)), check_finite=False)
    except linalg.LinAlgError:
        lam, Q = linalg.eigh(K, check_finite=False)
        return (Q / (np.maximum(lam, 0.0) + ridge)) @ Q.T


def leave_one_out_error(X, T, scales, ridge, kernel="rbf", *, gradient=False):
    r"""The exact leave-one-out mean squared error :math:`L` of kernel ridge regression.

    Parameters
    ----------
    X : ndarray of shape (m, p)
    T : ndarray of shape (m, d)
        The regression targets (not centred here).
    scales : ndarray of shape (p,)
        The per-feature scales :math:`s_j > 0` of the kernel.
    ridge : float
        :math:`r = m\lambda > 0`.
    kernel : {"rbf", "laplacian"}
    gradient : bool, default=False
        Also return :math:`\partial L / \partial \log s` (shape (p,)) and
        :math:`\partial L / \partial \log r`.

    Returns
    -------
    float, or (float, ndarray, float)
    """
    X, T = np.asarray(X, dtype=float), np.asarray(T, dtype=float)
    m, d = T.shape
    K = _ard_kernel(X, scales, kernel)
    G = _ridge_inverse(K, ridge)
    A = G @ T
    g = np.diag(G).copy()
    loss = float(np.sum((A / g[:, None]) ** 2)) / (m * d)
    if not gradient:
        return loss
    c = np.einsum("ij,ij->i", A, A) / g**3
    M = (G * c) @ G - A @ (G @ (A / g[:, None] ** 2)).T
    M *= 2.0 / (m * d)
    W = K * (M + M.T) * 0.5  # only the symmetric part of M meets a symmetric dK
    if kernel == "rbf":
        # sum_ab W_ab (x_aj - x_bj)^2 = 2 sum_a x_aj^2 w_a - 2 x_j^T W x_j for symmetric W
        weighted = 2.0 * (X**2).T @ W.sum(axis=1) - 2.0 * np.einsum("aj,aj->j", X, W @ X)
    else:
        weighted = np.array([np.sum(W * np.abs(x[:, None] - x[None, :])) for x in X.T])
    return loss, -scales * weighted, ridge * float(np.trace(M))


def _check_subsample(subsample):
    if subsample is not None and int(subsample) < 2:
        raise ValueError(f"subsample must be at least 2; got {subsample!r}")
    return subsample


def _check_start(gamma, alpha, bounds) -> None:
    """The starting ``gamma`` (``None``: 1 / n_features, positive) and ``alpha`` positive,
    and the box of the scales around the start."""
    low, high = bounds
    if not ((gamma is None or float(gamma) > 0) and float(alpha) > 0
            and 0 < low <= 1 <= high):
        raise ValueError(f"need gamma > 0, alpha > 0 and 0 < bounds[0] <= 1 <= bounds[1]; "
                         f"got gamma={gamma!r}, alpha={alpha!r}, bounds={bounds!r}")


class LeaveOneOutLengthScales(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Learn per-feature kernel scales by the exact leave-one-out error (see the module).

    Parameters
    ----------
    kernel : {"rbf", "laplacian"}, default="rbf"
    gamma : float, optional
        The starting scale of every feature (default ``1 / n_features``): the isotropic
        kernel's ``gamma``.
    alpha : float, default=1e-3
        The starting regularisation :math:`\lambda` (ridge :math:`m\lambda`).
    subsample : int or None, default=1500
        Learn on at most this many training points, drawn uniformly (each step costs a
        factorisation of their Gram matrix).
    bounds : (float, float), default=(1e-4, 1e2)
        Each scale stays within these multiples of ``gamma``; the regularisation within
        ``[1e-8, 1e2]``.
    max_iter : int, default=100
        L-BFGS-B iterations.
    random_state : int, RandomState or None, default=None
        Draws the subsample.

    Attributes
    ----------
    scales_ : ndarray of shape (n_features_in_,)
        The learned :math:`s_j`.
    alpha_ : float
        The learned regularisation :math:`\lambda`.
    loo_error_ : float
        The leave-one-out mean squared error at the learned parameters (on the subsample);
        ``initial_loo_error_`` the same at the start.
    n_iter_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 3))
    >>> y = np.sin(2 * X[:, :1])                      # only the first feature matters
    >>> ard = LeaveOneOutLengthScales(gamma=0.5, random_state=0).fit(X, y)
    >>> bool(ard.scales_[0] > 10 * max(ard.scales_[1:]))
    True
    >>> ard.loo_error_ < ard.initial_loo_error_
    True
    """

    #: The fitted state (what a model file stores).
    _fitted_attributes = ("n_features_in_", "scales_", "alpha_", "loo_error_",
                          "initial_loo_error_", "n_iter_", "feature_names_in_")

    #: Each parameter's constraint (:func:`ecrm.estimators._parameters.check_params` walks them);
    #: the start and its box are one rule, ``gamma`` and ``alpha`` are checked there.
    _parameter_constraints = {
        "kernel": CONSTRAINTS["width_kernel"],
        "gamma": Checked("None or a real number > 0 (the start's rule)", bad=(-1.0, 0.0)),
        "alpha": Checked("a real number > 0 (the start's rule)", bad=(0.0,)),
        "subsample": Checked("None or an int >= 2", bad=(1, 0), function=_check_subsample),
        "bounds": Checked("(low, high) with 0 < low <= 1 <= high (the start's rule)",
                          bad=((2.0, 3.0), (0.0, 1.0))),
        "max_iter": Checked("L-BFGS-B's iterations (an int, at fit)"),
        "random_state": RANDOM_STATE}
    _parameter_rules = (Rule(None, _check_start, ("gamma", "alpha", "bounds")),)

    def __init__(self, kernel="rbf", *, gamma=None, alpha=1e-3, subsample=1500,
                 bounds=(1e-4, 1e2), max_iter=100, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.alpha = alpha
        self.subsample = subsample
        self.bounds = bounds
        self.max_iter = max_iter
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, Y):
        """Learn the scales on ``X`` (m, p) and targets ``Y`` (m,) or (m, d)."""
        check_params(self)
        X, Y = validate_data(self, X, Y, accept_sparse="csr", multi_output=True, y_numeric=True)
        T = np.asarray(Y, dtype=float).reshape(len(Y), -1)
        gamma = 1.0 / X.shape[1] if self.gamma is None else float(self.gamma)
        if len(T) < 2:
            raise ValueError(f"leave-one-out needs at least 2 samples; got {len(T)} sample")
        if self.subsample is not None and len(T) > self.subsample:
            rng = check_random_state(self.random_state)
            keep = np.sort(rng.choice(len(T), int(self.subsample), replace=False))
            X, T = X[keep], T[keep]
        X = X.toarray() if sparse.issparse(X) else X
        T = T - T.mean(axis=0)  # stands in for an intercept
        m, p = X.shape
        low, high = self.bounds

        def error(theta, gradient=False):
            return leave_one_out_error(X, T, np.exp(theta[:p]), np.exp(theta[p]), self.kernel,
                                       gradient=gradient)

        start = np.append(np.full(p, np.log(gamma)), np.log(m * float(self.alpha)))
        initial = error(start)
        unit = initial if initial > 0 else 1.0  # 0: constant targets, nothing to learn

        def objective(theta):  # relative to the start: the tolerances below mean the same
            loss, grad_s, grad_r = error(theta, gradient=True)  # on every scale of targets
            return loss / unit, np.append(grad_s, grad_r) / unit

        box = [(np.log(gamma * low), np.log(gamma * high))] * p + [(np.log(m * 1e-8),
                                                                  np.log(m * 1e2))]
        result = optimize.minimize(objective, start, jac=True, method="L-BFGS-B", bounds=box,
                                   options={"maxiter": int(self.max_iter), "ftol": 1e-9,
                                            "gtol": 1e-7})
        self.scales_ = np.exp(result.x[:p])
        self.alpha_ = float(np.exp(result.x[p]) / m)
        self.loo_error_ = float(result.fun) * unit
        self.initial_loo_error_ = float(initial)
        self.n_iter_ = int(result.nit)
        return self

    def transform(self, X):
        """Features rescaled so that the plain kernel with ``gamma=1`` is the learned one."""
        check_is_fitted(self, "scales_")
        X = validate_data(self, X, accept_sparse="csr", reset=False)
        factor = np.sqrt(self.scales_) if self.kernel == "rbf" else self.scales_
        return sparse.csr_matrix(X.multiply(factor)) if sparse.issparse(X) else X * factor
