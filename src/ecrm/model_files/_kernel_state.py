"""The fitted state of a kernel model checked against what its ``fit`` would have produced:
the fit object's scalars and arrays, the Nystrom features, the ridge, and the bounds the
ridge solve implies for the coefficients (:func:`check_kernel_state`, which the kernel
estimators' ``_check_own_state`` run after :func:`ecrm.model_files._state.check_training_state`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ecrm.estimators._validation import check_float_array
from ecrm.model_files._values import _finite_floats, _int, _positive_float
from ecrm.weights._fit import RiskFit
from ecrm.weights.kernel._kernels import check_kernel_params, kernel_matrix
from ecrm.weights.kernel._solvers.primal import FeatureFit
from ecrm.weights.kernel._solvers.rows import RiskTargets

if TYPE_CHECKING:
    from ecrm.model_files._state import TrainingState

__all__ = ["MAX_FEATURE_COEF", "check_fit_kwargs", "check_kernel_state",
           "check_linear_features_kwargs", "check_nystrom_kwargs", "check_ridge_state"]


def check_fit_kwargs(kwargs: dict) -> None:
    """The scalars and ``u`` of a :class:`~ecrm.weights.kernel._solvers.dual.KernelFit` or
    :class:`~ecrm.weights.kernel._solvers.primal.FeatureFit`, checked before its constructor's
    ``int()`` and ``float()`` (an ``inf`` would raise ``OverflowError``, a string would be
    converted); :func:`check_kernel_state` then ties them to the estimator."""
    _int(kwargs.get("n_risk"), "n_risk", 0)
    _positive_float(kwargs.get("ridge"), "ridge")
    if not isinstance(kwargs.get("fit_intercept"), bool):
        raise TypeError(f"fit_intercept must be a bool; found "
                        f"{type(kwargs.get('fit_intercept')).__name__}")
    if "n_train" in kwargs:
        _int(kwargs["n_train"], "n_train", 2)
    if kwargs.get("u") is not None:
        _finite_floats(kwargs["u"], "u", 1)
    if kwargs.get("s") is not None:
        _positive_float(kwargs["s"], "s")  # 1'(K + ridge I)^-1 1 > 0


def check_linear_features_kwargs(kwargs: dict) -> None:
    _int(kwargs.get("n_features"), "n_features", 1)


def check_nystrom_kwargs(kwargs: dict) -> None:
    """Nystrom centres (training rows: a float64 array or sparse matrix) and projection as fit
    computes them, finite, checked before the constructor casts the projection."""
    centres = kwargs["centres"]  # the constructor's required argument
    _finite_floats(centres.data if sp.issparse(centres) else centres, "centres",
                   1 if sp.issparse(centres) else 2)  # a file's sparse matrix is CSR: 2-D
    projection = _finite_floats(kwargs.get("projection"), "projection", 2)
    if projection.shape[0] != centres.shape[0] or not projection.shape[1]:
        raise ValueError(f"projection must have shape ({centres.shape[0]}, r) with r >= 1 "
                         f"(one row per centre); found {projection.shape}")
    check_nystrom_orthonormal(centres, kwargs.get("kernel_params"), projection)


def check_nystrom_orthonormal(centres, kernel_params, projection: np.ndarray) -> None:
    r"""The projection :math:`P` (M x r) of Nystrom centres :math:`C` as fit computes it:
    :math:`P = U_r \Lambda_r^{-1/2}` from the eigenvectors of :math:`K = K(C, C)` whose
    eigenvalues it keeps, so that :math:`P^\top K P = I_r`.

    Rounding in the eigendecomposition leaves an error of about
    :math:`M \varepsilon \lVert K\rVert_2 / \lambda_{\min}` with
    :math:`1/\lambda_{\min} = \lVert P\rVert_2^2`; the check allows 64 times that (at most
    1/2): a fitted model meets it with a wide margin, a transposed, rescaled or foreign
    projection does not.
    """
    if not isinstance(kernel_params, dict):
        raise TypeError(f"kernel_params must be a dict; found {type(kernel_params).__name__}")
    params = check_kernel_params(**kernel_params)
    M, r = projection.shape
    if r > M:
        raise ValueError(f"projection has {r} columns, more than its {M} centres")
    with np.errstate(all="ignore"):
        try:
            K = kernel_matrix(centres, centres, **params)
        except ValueError:
            K = np.full((M, M), np.nan)
        if not np.isfinite(K).all():
            raise ValueError("centres: the kernel of the Nystrom centres is not finite (the "
                             "centres are not training rows fit could have kept)")
        gram = projection.T @ K @ projection
        size = float(np.linalg.norm(K, 2)) * float(np.linalg.norm(projection, 2)) ** 2
    tolerance = min(0.5, 64 * M * np.finfo(float).eps * size)
    error = float(np.abs(gram - np.eye(r)).max()) if np.isfinite(gram).all() else np.inf
    if not error <= tolerance:
        raise ValueError(f"projection: P^T K(C, C) P differs from the identity by {error:.3g} "
                         f"(at most {tolerance:.3g} for the projection fit computes)")


def check_ridge_state(fit, m: int, alpha, fit_intercept) -> None:
    """``fit.ridge`` is the ``m * alpha`` of fit (one rounding: a few ulps allowed), its
    intercept the estimator's, and ``s`` the sum of ``u`` as the solve computed it."""
    ridge = m * float(alpha)
    if abs(fit.ridge - ridge) > 4 * np.finfo(float).eps * ridge:
        raise ValueError(f"_fit.ridge={fit.ridge!r} must be m * alpha = {m} * {alpha!r} = "
                         f"{ridge!r}")
    if fit.fit_intercept != fit_intercept:
        raise ValueError(f"_fit.fit_intercept={fit.fit_intercept} differs from the "
                         f"estimator's {fit_intercept}")
    u, s = getattr(fit, "u", None), getattr(fit, "s", None)
    if u is not None and s is not None:
        # a sum of m terms: off by at most about m * eps * sum|u| whatever the order
        total = float(u.sum())
        if abs(s - total) > 4 * len(u) * np.finfo(float).eps * float(np.abs(u).sum()):
            raise ValueError(f"_fit.s={s!r} must be the sum of _fit.u, {total!r}")


def _check_fit(model, fit, X, p: int, n_risk: int, d: int, kernel_params: dict) -> None:
    if not isinstance(fit, RiskFit):
        raise TypeError(f"_fit must be a solver's fit object; found {type(fit).__name__}")
    c = n_risk + (d if model._fits_marginals else 0)
    if fit.n_risk != n_risk:
        raise ValueError(f"_fit has {fit.n_risk} risk regressions; the loss needs {n_risk}")
    fit.check_state(X, p, kernel_params)  # its own arrays and settings
    check_float_array(fit.coef, "_fit.coef", (fit.n_columns, c))
    check_float_array(fit.intercept, "_fit.intercept", (c,))
    if not (np.isfinite(fit.ridge) and fit.ridge > 0):
        raise ValueError(f"_fit.ridge must be a positive number; found {fit.ridge!r}")
    if type(fit).__name__ == "KernelFit" and isinstance(model.Y_fit_, np.ndarray):
        T = RiskTargets(model.loss)(model.Y_fit_)[:, :c]
        check_dual_bound(fit, T)
        if vars(model).get("task_kernel_") is None:  # one ridge regression per column
            check_dual_residual(fit, X, T)
    elif isinstance(fit, FeatureFit):
        check_feature_magnitude(fit)


#: The largest coefficient or intercept a feature fit (primal or Nystrom) may hold.
MAX_FEATURE_COEF = 1e200


def check_feature_magnitude(fit) -> None:
    r"""A feature fit's coefficients and intercept within :data:`MAX_FEATURE_COEF`.

    Its file holds no targets, so the bound of the dual (:func:`check_dual_bound`) cannot be
    computed; the primal solve :math:`w_k = (\Phi^\top\Phi + rI)^{-1}\Phi^\top(t_k - b_k
    \mathbf 1)` still gives :math:`\lVert w_k\rVert \le \max_i |t_{ik} - b_k| /
    (2\sqrt{\alpha})` with :math:`r = m\alpha`, at most :math:`10^{162}` times the targets'
    range for any positive float :math:`\alpha`: a value beyond ``1e200`` needs targets
    beyond :math:`10^{38}`, which no loss of the package has, and would overflow the costs of
    ordinary inputs.
    """
    for name, value in (("coef", fit.coef), ("intercept", fit.intercept)):
        if value.size and not float(np.abs(value).max()) <= MAX_FEATURE_COEF:
            raise ValueError(f"_fit.{name} holds a value of magnitude "
                             f"{float(np.abs(value).max()):.3g}, over {MAX_FEATURE_COEF:g} (no "
                             "solve of ordinary targets makes it)")


#: How far a stored norm may exceed the bound the algebra of fit gives (rounding in the solve
#: of an ill-conditioned system): a fitted model stays far below it.
BOUND_SAFETY = 2.0


def check_dual_bound(fit, T: np.ndarray) -> None:
    r"""The coefficients and intercept of a dual ridge fit against its targets ``T`` (m x c).

    Fit solves :math:`(K + rI) A = T - \mathbf 1 b^\top` with :math:`K` positive
    semi-definite and :math:`r` = ``ridge``, so every column obeys
    :math:`\lVert a_k\rVert_2 \le \lVert t_k - b_k \mathbf 1\rVert_2 / r` (the inverse of
    :math:`K + rI` has norm at most :math:`1/r`); without an intercept :math:`b = 0`
    (:math:`\lVert A\rVert \le \lVert\psi(Y)\rVert / (m\alpha)`), with one
    :math:`b = T^\top u / s`, :math:`u = (K + rI)^{-1}\mathbf 1`, :math:`s = \mathbf 1^\top u`.
    Checked with the safety factor :data:`BOUND_SAFETY`.
    """
    A, b, ridge = fit.coef, fit.intercept, fit.ridge
    if A.shape[0] != T.shape[0] or A.shape[1] != T.shape[1]:
        return  # another layout (checked by the fit's own checks)
    if fit.fit_intercept and fit.u is not None:
        with np.errstate(all="ignore"):
            expected = (fit.u @ T) / fit.s
            scale = (np.abs(fit.u) @ np.abs(T)) / abs(fit.s)
        if not (np.abs(b - expected) <= 1e-8 * scale + 1e-300).all():
            raise ValueError("_fit.intercept must be T^T u / s, the intercept the solve gives")
    elif not fit.fit_intercept and np.any(b != 0):
        raise ValueError("_fit.intercept must be 0 without an intercept")
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.sum(A * A, axis=0))
        bounds = np.sqrt(np.sum((T - b) ** 2, axis=0)) / ridge
        # a column whose bound is 0 (a constant target) holds the solve's rounding only
        slack = 1e-4 * float(np.linalg.norm(T)) / ridge
    if not (norms <= BOUND_SAFETY * bounds + slack).all():
        k = int(np.argmax(~(norms <= BOUND_SAFETY * bounds + slack)))
        raise ValueError(f"_fit.coef: column {k} has norm {norms[k]:.6g}, over the bound "
                         f"||t - b||/ridge = {bounds[k]:.6g} the ridge solve implies")


def check_kernel_state(model, training: TrainingState) -> None:
    """A kernel model's ``kernel_params_`` (checked settings) and its fit object against the
    training state."""
    params = model.kernel_params_
    if not isinstance(params, dict) or set(params) != {"kernel", "gamma", "degree", "coef0"} \
            or check_kernel_params(**params) != params:
        raise ValueError(f"kernel_params_ must be checked kernel settings; found {params!r}")
    _check_fit(model, model._fit, training.X, training.p, training.n_risk, training.d, params)


#: The most work (kernel evaluations times features and targets) a load spends on the
#: residual of a dual fit (:func:`check_dual_residual`): about a second.
MAX_RESIDUAL_WORK = 2**31
#: The relative residual a dual fit's coefficients may leave (:func:`check_dual_residual`):
#: fits of kernels with entries up to 1e6 and ridges down to 1e-9 m leave 4e-8 at most.
RESIDUAL_TOLERANCE = 1e-5


def check_dual_residual(fit, X, T: np.ndarray, block: int = 256) -> None:
    r"""The dual coefficients solve fit's system on the stored training rows.

    Fit solves :math:`G A = T - \mathbf 1 b^\top` with :math:`G = K(X, X) + rI`, by a
    Cholesky or an eigendecomposition, both backward stable, on a kernel computed in another
    order than here: each column's residual is a rounding error of
    :math:`\lVert G\rVert_F\lVert a_k\rVert + \lVert t_k\rVert + \sqrt m\,\lvert b_k\rvert`
    (its relative size at most about :math:`4 \cdot 10^{-8}` over kernels of entries up to
    :math:`10^6` and ridges down to :math:`10^{-9}m`), checked against
    :data:`RESIDUAL_TOLERANCE` times that, in row blocks (never the :math:`m \times m`
    matrix). An edited training row moves its kernel row and column, and the residual of
    every row it touches, by a part of its coefficient of order 1. Skipped for a model of
    more than :data:`MAX_RESIDUAL_WORK` (:math:`m^2(p + c)`), where it would cost a
    noticeable part of the fit.
    """
    A, b, r = fit.coef, fit.intercept, fit.ridge
    m = X.shape[0]
    if A.shape != T.shape or m * m * (X.shape[1] + A.shape[1]) > MAX_RESIDUAL_WORK:
        return
    targets = T - b
    residual = np.zeros(A.shape[1])
    size = 0.0  # ||K||_F^2
    with np.errstate(all="ignore"):
        for start in range(0, m, block):
            K = fit.block(X[start:start + block])
            R = K @ A + r * A[start:start + block] - targets[start:start + block]
            residual += (R * R).sum(axis=0)
            size += float((K * K).sum())
        bound = RESIDUAL_TOLERANCE * ((np.sqrt(size) + r) * np.sqrt((A * A).sum(axis=0))
                                      + np.sqrt((T * T).sum(axis=0)) + np.sqrt(m) * np.abs(b))
        residual = np.sqrt(residual)
    if not (residual <= bound).all():
        k = int(np.argmax(~(residual <= bound)))
        raise ValueError(f"_fit.coef: column {k} leaves a residual of {residual[k]:.3g} in "
                         f"(K(X_fit_, X_fit_) + ridge I) A = T - b (at most {bound[k]:.3g} for "
                         "the solve fit makes): the training rows X_fit_ or the coefficients "
                         "are not those fit computed together")
