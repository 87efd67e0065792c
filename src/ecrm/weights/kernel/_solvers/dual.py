r"""The exact dual solver: ridge regressions on the m x m Gram matrix.

The algebra (the intercept, the risk weights, the exact leave-one-out) is derived in
:mod:`ecrm.weights.kernel._ridge`. A basis factorises :math:`K` once: :class:`CholeskyBasis` for one
ridge value (:math:`K + m\lambda I = LL^\top`, the factor overwrites the Gram matrix),
:class:`EigenBasis` for many (:math:`K = Q\Lambda Q^\top`, every ridge and the exact leave-one-out
from it). Either fits a :class:`KernelFit`: predictions :math:`v(x)^\top A + b` with :math:`v(x) =
k(x, X_{\mathrm{train}})`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import linalg

from ecrm.estimators._validation import check_float_array
from ecrm.weights._fit import Basis, Criterion, LooBasis, Outcome, RiskFit, Trial
from ecrm.weights.kernel._kernels import kernel_diagonal_mean, kernel_matrix, large_product_rows
from ecrm.weights.kernel._ridge import (
    CholeskyFactor,
    EigenFactor,
    Factor,
    LeaveOneOut,
    RidgeFit,
    fit_multitask_ridge,
    fit_ridge,
    risk_weights,
)

__all__ = ["CholeskyBasis", "EigenLooBasis", "JointKernelBasis", "KernelFit",
           "gram_eigendecomposition"]


class KernelFit(RiskFit):
    r"""Dual ridge regressions: ``coef`` is :math:`A` (m, c) on the kernel columns.

    Parameters
    ----------
    kernel_params : dict
    coef, intercept, n_risk, ridge, fit_intercept : as :class:`~ecrm.weights._fit.RiskFit`
    u, s : ndarray of shape (m,) and float, optional
        :math:`G^{-1}\mathbf 1` and :math:`\mathbf 1^\top u` (the intercept's share of the
        weights; ``None`` without intercept).
    X_train : ndarray or sparse matrix of shape (m, p)
        The training inputs (the Gram matrix's rows for ``kernel="precomputed"``): the
        estimator's ``X_fit_``, attached again when a model file is loaded (not part of the
        fit's own state).
    factor : Factor, optional
        The factor of :math:`G`, kept when the weights are wanted at every prediction (a
        loss without a linear form); otherwise it is rebuilt by :meth:`weights` on demand.
        Never part of the state of a model file.
    """

    coef_name = "dual_coef_"

    def __init__(self, kernel_params: dict, coef: np.ndarray, intercept: np.ndarray,
                 n_risk: int, ridge: float, fit_intercept: bool, u=None, s=None, *,
                 X_train=None, factor: Factor | None = None):
        self.X_train, self.kernel_params = X_train, dict(kernel_params)
        self.coef, self.intercept, self.n_risk = coef, intercept, int(n_risk)
        self.ridge, self.fit_intercept = float(ridge), bool(fit_intercept)
        self.u, self.s = u, (None if s is None else float(s))
        self.factor = factor

    @property
    def n_columns(self) -> int:
        return int(self.X_train.shape[0])

    def block(self, X) -> np.ndarray:
        return kernel_matrix(X, self.X_train, **self.kernel_params)

    def weights(self, V: np.ndarray) -> np.ndarray:
        r""":math:`w(x) = G^{-1}v(x) + u(1 - u^\top v(x))/s`
        (:func:`ecrm.weights.kernel._ridge.risk_weights`)."""
        factor = self.factor
        if factor is None:  # recomputed on demand: a fitted model keeps no m x m factor
            K = kernel_matrix(self.X_train, self.X_train, **self.kernel_params, copy=True)
            factor = CholeskyFactor(K, self.ridge, overwrite_k=True)
        return risk_weights(factor, RidgeFit(self.coef, self.intercept, self.u, self.s), V)

    def to_state(self) -> dict:
        return {"kernel_params": self.kernel_params, "coef": self.coef,
                "intercept": self.intercept, "n_risk": self.n_risk, "ridge": self.ridge,
                "fit_intercept": self.fit_intercept, "u": self.u, "s": self.s}

    def slim(self) -> KernelFit:
        return self  # the kernel block needs the training inputs

    def check_state(self, X, n_features: int, kernel_params: dict) -> None:
        """The training rows, kernel and intercept sums of a loaded fit."""
        if self.X_train is not X:
            raise ValueError("_fit.X_train must be X_fit_ (the training inputs)")
        if self.kernel_params != kernel_params:
            raise ValueError(f"_fit.kernel_params {self.kernel_params} differ from "
                             f"kernel_params_ {kernel_params}")
        if kernel_params["kernel"] != "precomputed":
            try:  # fit refused rows whose kernel overflows; its diagonal blocks show them
                kernel_diagonal_mean(X, kernel_params)
            except ValueError as exc:
                raise ValueError(f"X_fit_: {exc}") from None
        if self.u is not None:
            check_float_array(self.u, "_fit.u", (X.shape[0],))
        if (self.u is None) != (self.s is None) or (self.u is not None
                                                    and not self.fit_intercept):
            raise ValueError("_fit.u and _fit.s are set together, and only with an intercept "
                             "(_fit.fit_intercept)")


def _fit(factor: Factor, X, kernel_params: dict, T: np.ndarray, n_risk: int,
         fit_intercept: bool, keep_factor: bool) -> KernelFit:
    solved = fit_ridge(factor, T, fit_intercept)
    return KernelFit(kernel_params, solved.dual_coef, solved.intercept, n_risk, factor.ridge,
                     fit_intercept, solved.u, solved.s, X_train=X,
                     factor=factor if keep_factor else None)


class CholeskyBasis:
    """The Gram matrix of ``X``, factorised (in its own memory) at the one :meth:`fit`.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p)
    kernel_params : dict
    """

    def __init__(self, X, kernel_params: dict):
        self.X, self.kernel_params = X, dict(kernel_params)
        self._K: np.ndarray | None = kernel_matrix(X, X, **kernel_params, copy=True)
        self.diagonal_max = float(np.abs(self._K.diagonal()).max())

    def fit(self, T: np.ndarray, ridge: float, fit_intercept: bool, *, n_risk: int,
            keep_factor: bool = False) -> KernelFit:
        """Solve for every column of ``T`` (m, c); the Gram matrix becomes the factor."""
        if self._K is None:
            raise RuntimeError("a CholeskyBasis fits once (its Gram matrix became the factor)")
        K, self._K = self._K, None
        factor = CholeskyFactor(K, ridge, overwrite_k=True)
        return _fit(factor, self.X, self.kernel_params, T, n_risk, fit_intercept, keep_factor)


class EigenBasis:
    """An eigendecomposition of the Gram matrix of ``X``: every ridge, and the exact
    leave-one-out (:class:`ecrm.weights.kernel._ridge.LeaveOneOut`), from one factorisation.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p)
    kernel_params : dict
    eig : EigenFactor
        The decomposition of the Gram matrix of ``X`` (possibly thin, possibly cached).
    """

    def __init__(self, X, kernel_params: dict, eig: EigenFactor):
        self.X, self.kernel_params, self.eig = X, dict(kernel_params), eig
        self.diagonal_max = float(eig.diagonal().max())

    def loo(self, T: np.ndarray, rows=None) -> LeaveOneOut:
        """Exact leave-one-out predictions of the regressions of ``T`` for any ridge."""
        return LeaveOneOut(self.eig, T, rows)

    def fit(self, T: np.ndarray, ridge: float, fit_intercept: bool, *, n_risk: int,
            keep_factor: bool = False) -> KernelFit:
        return _fit(self.eig.with_ridge(ridge), self.X, self.kernel_params, T, n_risk,
                    fit_intercept, keep_factor)


class JointKernelBasis(Basis):
    r"""The dual of the joint kernel :math:`k(x, x') B_{jk}` (:mod:`ecrm.estimators.joint`),
    from one eigendecomposition of the Gram matrix and one of the task kernel.

    With :math:`B = P \Sigma P^\top` the rotated tasks :math:`T P` are ridge regressions with
    the Gram matrices :math:`\sigma_k K` (:func:`ecrm.weights.kernel._ridge.fit_multitask_ridge`),
    and the constant with :math:`K` itself; the fit rotates their coefficients back.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p)
    kernel_params : dict
    T : ndarray of shape (m, e)
        The cost targets :math:`\psi(Y)`.
    const : ndarray of shape (m,)
        The constant targets :math:`\mathrm{const}(Y)`.
    task_kernel : ndarray of shape (e, e)
        The checked task kernel :math:`B`.
    """

    def __init__(self, X, kernel_params: dict, T: np.ndarray, const: np.ndarray,
                 task_kernel: np.ndarray):
        self.X, self.kernel_params = X, dict(kernel_params)
        K = kernel_matrix(X, X, **kernel_params)
        self.diagonal_max = float(np.abs(K.diagonal()).max())
        self._eig = EigenFactor.from_kernel(K)
        del K
        sig, self._P = linalg.eigh(task_kernel)
        self._scales = np.append(np.maximum(sig, 0.0), 1.0)
        self._targets = np.column_stack([T @ self._P, const])

    def fit(self, ridge: float, fit_intercept: bool) -> KernelFit:
        P = self._P
        fit = fit_multitask_ridge(self._eig.with_ridge(ridge), self._targets, self._scales,
                                  fit_intercept)
        coef = np.column_stack([fit.dual_coef[:, :-1] @ P.T, fit.dual_coef[:, -1]])
        intercept = np.append(fit.intercept[:-1] @ P.T, fit.intercept[-1])
        return KernelFit(self.kernel_params, coef, intercept, coef.shape[1], ridge,
                         fit_intercept, X_train=self.X)


def gram_eigendecomposition(X, kernel_params: dict) -> EigenFactor:
    """Eigendecomposition of the Gram matrix of ``X`` (thin for a linear kernel, p < m).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p)
        Training inputs (the training Gram matrix for ``kernel="precomputed"``).
    kernel_params : dict
        ``kernel``, ``gamma``, ``degree`` and ``coef0``
        (:func:`ecrm.weights.kernel._kernels.kernel_matrix`).

    Returns
    -------
    EigenFactor
    """
    if kernel_params["kernel"] == "linear" and X.shape[1] < X.shape[0]:
        with np.errstate(over="ignore"):
            eig = EigenFactor.from_features(X)
        if not np.isfinite(eig.lam).all():
            raise ValueError(f"the kernel 'linear' gave infinite values on these inputs (largest "
                             f"|x| = {float(abs(X).max()):.3g}): rescale the inputs")
        return eig
    # a fresh array (copied for "precomputed"): the eigenvectors overwrite it
    return EigenFactor.from_kernel(gram_matrix(X, kernel_params), overwrite_k=True)


def gram_matrix(X, kernel_params: dict) -> np.ndarray:
    """The training Gram matrix of ``X`` as a new C-ordered float64 array.

    For the RBF kernel on dense inputs it is built in place, in the operations and order of
    :func:`sklearn.metrics.pairwise.rbf_kernel` (the same values), without its m x m
    temporaries; every other kernel through :func:`ecrm.weights.kernel._kernels.kernel_matrix`.
    """
    if kernel_params["kernel"] != "rbf" or not isinstance(X, np.ndarray):
        return kernel_matrix(X, X, **kernel_params, copy=True)
    X = np.asarray(X, dtype=float)
    gamma = kernel_params.get("gamma")
    gamma = 1.0 / X.shape[1] if gamma is None else float(gamma)
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, with the cause
        sq = np.einsum("ij,ij->i", X, X)[:, None]
        blocks = large_product_rows(X.shape[0], X.shape[0])
        if len(blocks) == 1:
            K = X @ X.T
        else:  # one huge product can crash OpenBLAS (_kernels.MAX_PRODUCT_ENTRIES)
            K = np.empty((X.shape[0], X.shape[0]))
            for rows in blocks:
                np.matmul(X[rows], X.T, out=K[rows])
        K *= -2.0
        K += sq
        K += sq.T
        np.maximum(K, 0.0, out=K)  # squared distances: round-off negatives clipped
        np.fill_diagonal(K, 0.0)
        K *= -gamma
        np.exp(K, out=K)
    if not np.isfinite(K.sum()):  # the kernel's values lie in [0, 1]: a NaN shows in the sum
        raise ValueError(
            f"the kernel 'rbf' gave NaN or infinite values on these inputs (largest "
            f"|x| = {float(abs(X).max()):.3g}): rescale the inputs or check the kernel and its "
            f"parameters")
    return K


class EigenLooBasis(LooBasis):
    r"""The exact leave-one-out of the dual, every ridge from one eigendecomposition.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p)
    Y : ndarray of shape (m, d)
        The outputs (the criterion compares with them; their columns are the marginals).
    T : ndarray of shape (m, c)
        The regression targets (:math:`[\psi(Y), \mathrm{const}(Y)]` for ECRM).
    kernel_params : dict
    eig : EigenFactor
        The decomposition of the Gram matrix of ``X``.
    marginals : ndarray of shape (m, d), optional
        The marginal regression targets when they differ from ``Y``: its unobserved (NaN)
        entries filled (:meth:`ecrm.weights.kernel._solvers.rows.RiskTargets.marginals`).

    Each leave-one-out object (:class:`ecrm.weights.kernel._ridge.LeaveOneOut`: :math:`Q^\top T`
    once) is kept for the rows it was made for, so that the trials of a coarse-to-fine search share
    it, and the trials of one ridge share its product.
    """

    def __init__(self, X, Y: np.ndarray, T: np.ndarray, kernel_params: dict,
                 eig: EigenFactor, marginals: np.ndarray | None = None):
        self.X, self.Y, self.T, self.eig = X, Y, T, eig
        self.M = Y if marginals is None else marginals  # unobserved entries filled
        self.kernel_params = dict(kernel_params)
        self.n_fit = int(X.shape[0])
        self.diagonal_max = float(eig.diagonal().max())
        self._loo: dict[tuple, LeaveOneOut] = {}

    def _of(self, on_labels: bool, rows: np.ndarray) -> LeaveOneOut:
        key = (on_labels, rows.tobytes())
        if key not in self._loo:
            T = self.M.astype(float) if on_labels else self.T
            self._loo[key] = LeaveOneOut(self.eig, T, rows)
        return self._loo[key]

    def loo_values(self, criterion: Criterion, trials: Sequence[Trial],
                   rows: np.ndarray) -> list[Outcome]:
        loo, Y_rows = self._of(criterion.on_labels, rows), self.Y[rows]
        loo.prepare([t.ridge for t in trials])  # the leverages of every ridge in one pass
        return [criterion.evaluate(loo.predictions(t.ridge, t.fit_intercept), Y_rows, t.where)
                for t in trials]

    def loo_predictions(self, criterion: Criterion, trial: Trial,
                        rows: np.ndarray) -> np.ndarray:
        loo = self._of(criterion.on_labels, rows)
        return criterion.predict(loo.predictions(trial.ridge, trial.fit_intercept), trial.where)

    def refit(self, trial: Trial) -> KernelFit:
        """The risk regressions, then the marginals ``Y``, from the same decomposition."""
        return EigenBasis(self.X, self.kernel_params, self.eig).fit(
            np.column_stack([self.T, self.M]), trial.ridge, trial.fit_intercept,
            n_risk=self.T.shape[1])
