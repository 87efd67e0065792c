r"""Additive models of the conditional risk with joint kernels (paper, Section 5).

For a loss linear in :math:`y`, :math:`\ell(y, y') = \sum_j y_j \psi_j(y') + \mathrm{const}(y')`
(an additive loss over 0/1 coordinates has :math:`\psi_j(y') = \ell_j(1, y') - \ell_j(0, y')`),
the conditional risk is :math:`R(y|x) = \sum_j y_j\, r_j(x) + \mathrm{const}(x)` with
:math:`r_j(x) = \mathbb E[\psi_j(Y) \mid X = x]`. Plain ECRM regresses each :math:`r_j`
separately with the kernel :math:`k`. The additive model with a *joint kernel*

.. math:: K\big((x, j), (x', k)\big) = k(x, x')\, B_{jk}

regresses all of them at once, sharing strength between related coordinates (e.g.
:math:`B = I + w\,\mathrm{adjacency}` on a hierarchy):

.. math:: \min_{f \in \mathcal H_K,\; b \in \mathbb R^e} \frac1m \sum_{i=1}^m \sum_{j=1}^e
          \big(f(x_i, j) + b_j - \psi_j(y_i)\big)^2 + \lambda \|f\|_{\mathcal H_K}^2 ,

(:math:`b = 0` without intercept). With :math:`B = I` this is plain ECRM.

**Solving without the** :math:`(me) \times (me)` **system.** With the eigendecompositions
:math:`K = Q \Lambda Q^\top` and :math:`B = P \Sigma P^\top`, rotate the tasks:
:math:`T' = \Psi P`. Rotated task :math:`k` is an ordinary kernel ridge regression with the
kernel :math:`\sigma_k k` (the Gram matrix :math:`\sigma_k K`), decoupled from the others, so

.. math:: f'_k(x) = \sigma_k\, v(x)^\top a_k + b'_k, \qquad
          a_k = Q\,\mathrm{diag}\big(1/(\sigma_k \Lambda + m\lambda)\big)\, Q^\top (t'_k -
          b'_k \mathbf 1), \qquad b'_k = \frac{u_k^\top t'_k}{\mathbf 1^\top u_k},

with :math:`u_k = (\sigma_k K + m\lambda I)^{-1}\mathbf 1` (the intercept formula of
:mod:`ecrm.weights.kernel._ridge`), and the costs are :math:`c(x) = f'(x) P^\top`: :math:`O(m^3 +
e^3 + m^2 e)` time (:func:`ecrm.weights.kernel._ridge.fit_multitask_ridge`). The estimated risk is
linear in :math:`y`, so the output space's exact oracle applies unchanged. Checks and prediction are
those of :class:`ecrm.ECRM` (a shared base class).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from ecrm.estimators._parameters import KERNEL_PARAMS, Checked, Flag, table
from ecrm.estimators._validation import check_real
from ecrm.weights._risk import _RiskEstimator
from ecrm.weights.kernel._ridge import check_ridge
from ecrm.weights.kernel._solvers.solver import DualSolver

__all__ = ["JointKernelECRM", "check_task_kernel", "hierarchy_task_kernel"]


def check_task_kernel(B, n_tasks: int | None = None) -> np.ndarray:
    """Return ``B`` as a symmetric positive semi-definite float matrix or raise ``ValueError``."""
    B = B.toarray() if sp.issparse(B) else np.array(B, dtype=float, copy=True)
    if B.ndim != 2 or B.shape[0] != B.shape[1]:
        raise ValueError(f"the task kernel must be a square matrix; got shape {B.shape}")
    if n_tasks is not None and B.shape[0] != n_tasks:
        raise ValueError(f"the task kernel must be {n_tasks} x {n_tasks} (one row per cost "
                         f"coordinate of the loss); got {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("the task kernel contains NaN or infinite values")
    if not np.allclose(B, B.T, rtol=1e-10, atol=1e-12):
        i, j = np.unravel_index(np.argmax(np.abs(B - B.T)), B.shape)
        raise ValueError(f"the task kernel must be symmetric; B[{i}, {j}] = {B[i, j]!r} but "
                         f"B[{j}, {i}] = {B[j, i]!r}")
    sig = linalg.eigvalsh(B)
    if sig[0] < -1e-10 * max(1.0, abs(sig[-1])):
        raise ValueError(f"the task kernel must be positive semi-definite; its smallest "
                         f"eigenvalue is {sig[0]:.4g}")
    return (B + B.T) / 2.0


def hierarchy_task_kernel(hierarchy, kind: str = "adjacency", weight: float | None = None
                          ) -> np.ndarray:
    r"""A task kernel :math:`B` over the labels of a hierarchy.

    Parameters
    ----------
    hierarchy : ecrm.Hierarchy
    kind : {"adjacency", "ancestors"}, default="adjacency"
        ``"adjacency"``: :math:`B = I + w\,A` with :math:`A` the symmetric parent-child
        adjacency (the paper's :math:`\mathbb 1(j \in \delta(k))` with a weight on the
        neighbours). It is positive semi-definite iff :math:`w \le 1/|\lambda_{\min}(A)|`.
        ``"ancestors"``: :math:`B_{jk}` = number of common ancestors (each label its own
        ancestor) normalised to a unit diagonal, :math:`B = D^{-1/2} M M^\top D^{-1/2}`.
    weight : float, optional
        :math:`w` for ``"adjacency"``; default :math:`0.5/|\lambda_{\min}(A)|`, half the
        largest admissible value.

    Examples
    --------
    >>> from ecrm import Hierarchy
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> hierarchy_task_kernel(h, weight=0.5).round(2)
    array([[1. , 0.5, 0.5],
           [0.5, 1. , 0. ],
           [0.5, 0. , 1. ]])
    """
    d = hierarchy.n_labels
    if kind == "adjacency":
        E = np.asarray(hierarchy.edges, dtype=int).reshape(-1, 2)
        A = np.zeros((d, d))
        A[E[:, 0], E[:, 1]] = A[E[:, 1], E[:, 0]] = 1.0
        lam_min = float(linalg.eigvalsh(A)[0]) if d > 1 else 0.0
        w_max = np.inf if lam_min >= 0 else 1.0 / -lam_min
        if weight is None:
            weight = 0.0 if not np.isfinite(w_max) else 0.5 * w_max
        if check_real(weight, "weight", low_open=False) > w_max * (1 + 1e-12):
            raise ValueError(f"weight must lie in [0, {w_max:.4g}] for I + weight*adjacency "
                             f"to be positive semi-definite on this hierarchy; got {weight!r}")
        return np.eye(d) + float(weight) * A
    if kind == "ancestors":
        if weight is not None:
            raise ValueError("weight applies to kind='adjacency' only")
        M = hierarchy.ancestors_matrix().astype(float).toarray()
        G = M @ M.T
        s = 1.0 / np.sqrt(np.diag(G))
        return G * s[:, None] * s[None, :]
    raise ValueError(f"kind must be 'adjacency' or 'ancestors'; got {kind!r}")


class JointKernelECRM(_RiskEstimator):
    r"""ECRM with an additive risk model and the joint kernel :math:`k(x, x') B_{jk}`.

    See the module docstring for the model and the solve. With ``task_kernel=None``
    (:math:`B = I`) the costs equal those of :class:`ecrm.ECRM`.

    Parameters
    ----------
    loss : ecrm.losses.LinearLoss
        Its cost coordinates (the columns of ``psi``) are the tasks.
    output_space : ecrm.spaces.base.OutputSpace
    task_kernel : array-like of shape (e, e), default=None
        :math:`B`, symmetric positive semi-definite (e.g. :func:`hierarchy_task_kernel`);
        ``None`` is the identity.
    kernel, gamma, degree, coef0 : as in :class:`ecrm.ECRM`.
    alpha : float in (0, inf), default=1e-3
        The paper's :math:`\lambda`; the solve adds ``m * alpha`` as in :class:`ecrm.ECRM`.
    fit_intercept : bool, default=True
        An unpenalised intercept per task.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (m, e)
    intercept_ : ndarray of shape (e,)
        Costs are ``k(X, X_fit_) @ dual_coef_ + intercept_``.
    task_kernel_ : ndarray of shape (e, e)
    X_fit_, Y_fit_, kernel_params_ : training inputs, outputs and kernel settings.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import Hierarchy
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]])
    >>> Y = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]])
    >>> est = JointKernelECRM(HammingLoss(), h, task_kernel=hierarchy_task_kernel(h),
    ...                       gamma=10.0).fit(X, Y)
    >>> est.predict([[0.05], [1.05]])
    array([[1., 1., 0.],
           [1., 0., 1.]])
    """

    _fitted_attributes = _RiskEstimator._fitted_attributes + ("task_kernel_",)

    _parameter_constraints = table(
        "kernel", "gamma", "degree", "coef0", "alpha", fit_intercept=Flag(),
        task_kernel=Checked("None or a symmetric positive semi-definite matrix of the loss's "
                            "size (at fit, which knows the size)"))
    _parameter_rules = (KERNEL_PARAMS,)
    _linear_loss = True

    def __init__(self, loss, output_space, *, task_kernel=None, kernel="rbf", gamma=None,
                 degree=3, coef0=1, alpha=1e-3, fit_intercept=True):
        self.loss = loss
        self.output_space = output_space
        self.task_kernel = task_kernel
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.alpha = alpha
        self.fit_intercept = fit_intercept

    def _check_own_state(self, plan: Mapping, training) -> None:
        """The kernel fit, and ``task_kernel_`` the checked ``task_kernel``."""
        super()._check_own_state(plan, training)
        B, expected = self.task_kernel_, self._task_kernel(training.n_risk - 1)
        if not isinstance(B, np.ndarray) or not np.array_equal(B, expected):
            raise ValueError("task_kernel_ must be the checked task_kernel parameter")

    def _task_kernel(self, n_tasks: int) -> np.ndarray:
        """The checked task kernel :math:`B` (e x e; the identity for ``None``)."""
        if self.task_kernel is None:
            return np.eye(n_tasks)
        return check_task_kernel(self.task_kernel, n_tasks)

    def fit(self, X, Y):
        """Fit the multitask risk regression.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (m, p)
            Training inputs (the training Gram matrix, (m, m), if ``kernel="precomputed"``).
        Y : array-like of shape (m, d)
            Training outputs, in the output space.

        Returns
        -------
        self : JointKernelECRM
        """
        plan = self._check_params()
        params, alpha, fit_intercept = plan["kernel_params"], plan["alpha"], plan["fit_intercept"]
        X, Y, seen = self._check_training_data(X, Y, params["kernel"])
        T = np.asarray(self.loss.psi(Y), dtype=float)
        e = T.shape[1]
        B = self._task_kernel(e)
        m = X.shape[0]
        check_ridge(alpha, m)
        basis = DualSolver().joint_basis(X, params, T, self.loss.const(Y), B)
        ridge = check_ridge(alpha, m, basis.diagonal_max)
        fitted = basis.fit(ridge, fit_intercept)
        fitted.check_finite(params, alpha)
        self._set_fitted(X, Y, seen, kernel_params_=params, _fit=fitted, task_kernel_=B)
        return self
