r"""Kernel ridge solves shared by every ECRM estimator.

With Gram matrix :math:`K` on :math:`m` training points and the paper's :math:`\lambda`
(``alpha``), every regression ECRM needs is

.. math:: \min_{f \in \mathcal{H},\, b} \frac1m \sum_{i=1}^m (f(x_i) + b - t_i)^2
          + \lambda \|f\|_{\mathcal{H}}^2 ,

solved for many targets :math:`t` (the columns of :math:`T`) at once. Write
:math:`G = K + m\lambda I`. Without intercept (:math:`b = 0`) the solution is
:math:`f = \sum_i a_i k(\cdot, x_i)` with :math:`a = G^{-1} t` (the paper's Proposition 2.1).

**Unpenalised intercept.** The stationarity conditions in :math:`(a, b)` are
:math:`G a = t - b\mathbf 1` and :math:`\mathbf 1^\top (K a + b \mathbf 1 - t) = 0`; substituting
the first into the second gives :math:`m\lambda \mathbf 1^\top a = 0`, hence with
:math:`u = G^{-1}\mathbf 1` and :math:`s = \mathbf 1^\top u`:

.. math:: b = u^\top t / s, \qquad a = G^{-1} t - u\, b .

The prediction at :math:`x` with kernel column :math:`v(x)` is
:math:`v^\top a + b = w(x)^\top t` with risk weights

.. math:: w(x) = G^{-1} v(x) + u \, \frac{1 - u^\top v(x)}{s},

which sum to one. The fitted values on the training set are :math:`H t` with the hat matrix
:math:`H = K G^{-1} + m\lambda\, u u^\top / s` (use :math:`K u = \mathbf 1 - m\lambda u`).

**Exact leave-one-out.** For any penalised least-squares fit with a fixed penalty, the fit
without point :math:`i` predicts at :math:`x_i`

.. math:: \hat t_{-i} = \frac{(H t)_i - H_{ii} t_i}{1 - H_{ii}} ,

where the refit keeps the same ridge term :math:`m\lambda` on the diagonal (the penalty of
the full problem). With the eigendecomposition :math:`K = Q \Lambda Q^\top`,
:math:`G^{-1} = Q (\Lambda + m\lambda)^{-1} Q^\top` and :math:`K G^{-1} = Q\,\Lambda(\Lambda +
m\lambda)^{-1} Q^\top`, so :math:`H`'s diagonal and :math:`H T` cost :math:`O(m^2 e)` per
:math:`\lambda` after one :math:`O(m^3)` factorisation. Because ECRM's costs are linear in the
targets, the same formula gives the exact leave-one-out *costs*, hence the exact
leave-one-out predictions and task loss (see :class:`ecrm.ECRMCV`).
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg
from threadpoolctl import threadpool_limits

__all__ = ["CholeskyFactor", "EigenFactor", "Factor", "LeaveOneOut", "RidgeFit", "check_ridge",
           "fit_multitask_ridge", "fit_ridge", "risk_weights"]


def check_ridge(alpha: float, n_samples: int, diagonal_max: float = 0.0,
                name: str = "alpha") -> float:
    r"""The ridge term :math:`m\alpha` of :math:`K + m\alpha I`, after checking it is usable.

    The rule: :math:`m\alpha` is finite, a normal float, and at least
    :math:`\varepsilon \max_i |K_{ii}|` (``diagonal_max``; 0 when ``K`` is not known yet), the
    round-off of the diagonal: a smaller term vanishes in :math:`K + m\alpha I` and the fit
    would not be regularised at all.

    >>> check_ridge(1e-3, 100, diagonal_max=1.0)
    0.1
    >>> check_ridge(1e-300, 100, diagonal_max=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: alpha=1e-300 is too small: the ridge term m * alpha = 1e-298 (m = 100) must ...
    """
    with np.errstate(over="ignore"):
        ridge = n_samples * float(alpha)
    if not np.isfinite(ridge):
        raise ValueError(f"{name}={alpha!r} is too large for {n_samples} training samples: the "
                         f"ridge term m * alpha must be finite (alpha < "
                         f"{np.finfo(float).max / n_samples:.3g})")
    floor = max(np.finfo(float).tiny, np.finfo(float).eps * abs(float(diagonal_max)))
    if ridge < floor:
        raise ValueError(f"{name}={alpha!r} is too small: the ridge term m * alpha = {ridge:.3g} "
                         f"(m = {n_samples}) must be at least {floor:.3g}, the round-off of the "
                         f"kernel diagonal (max {diagonal_max:.3g}); below that it vanishes in "
                         f"K + m*alpha*I")
    return ridge


def _mirror_lower(K: np.ndarray, block: int = 256) -> None:
    """Copy the strict lower triangle of the square C-ordered ``K`` onto its upper, in place."""
    m = K.shape[0]
    for start in range(0, m, block):
        stop = min(start + block, m)
        K[start:stop, stop:] = K[stop:, start:stop].T
        for i in range(start, stop - 1):  # inside the diagonal block
            K[i, i + 1:stop] = K[i + 1:stop, i]


class Factor:
    """A factorisation of :math:`G = K + \\text{ridge}\\cdot I` that solves :math:`G^{-1} B`."""

    ridge: float

    def solve(self, B: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


#: Matrices of this order or more are factorised with one BLAS thread: OpenBLAS's threaded
#: rank-k update segfaults from about 27,000 rows on the 2-core AMD EPYC machines this
#: project is tested on (numpy's ``X @ X.T`` and scipy's Cholesky alike; one thread does not).
SINGLE_THREAD_ORDER = 25_000


def blas_threads_for(order: int):
    """A context for a factorisation of an ``order`` x ``order`` matrix: the BLAS threads as
    they are, or one thread from :data:`SINGLE_THREAD_ORDER` on."""
    if order < SINGLE_THREAD_ORDER:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


class CholeskyFactor(Factor):
    """Cholesky factor of ``K + ridge*I``; falls back to a symmetric eigensolver if needed.

    The factor takes one m x m array: a copy of ``K``, or with ``overwrite_k=True`` the
    memory of ``K`` itself (a C-ordered float array the caller gives up). The ridge is added
    to the diagonal in place, as in scikit-learn's ``_solve_cholesky_kernel``; only the lower
    triangle of ``K`` is read, and ``K`` is never modified unless ``overwrite_k``.
    """

    def __init__(self, K: np.ndarray, ridge: float, *, overwrite_k: bool = False):
        self.ridge = float(ridge)
        m = K.shape[0]
        in_place = overwrite_k and K.dtype == np.float64 and K.flags.c_contiguous
        if in_place:
            # K^T is Fortran-ordered (LAPACK factors it without a copy); make it equal K by
            # mirroring K's lower triangle, which stays intact below the factor.
            _mirror_lower(K)
            G, diagonal = K.T, K.diagonal().copy()
        else:
            G = np.array(K, dtype=float, order="F")
        G[np.diag_indices(m)] += self.ridge
        try:
            with blas_threads_for(m):
                self._chol = linalg.cho_factor(G, lower=True, overwrite_a=True,
                                               check_finite=False)
            self._eig = None
        except linalg.LinAlgError:
            warnings.warn("K + m*alpha*I is not numerically positive definite; using an "
                          "eigendecomposition instead (is the kernel positive semi-definite?)",
                          RuntimeWarning, stacklevel=3)
            if in_place:  # the lower triangle of K is intact: restore the diagonal
                np.fill_diagonal(K, diagonal)
            self._chol = None
            self._eig = EigenFactor.from_kernel(K).with_ridge(self.ridge)

    def solve(self, B):
        if self._chol is None:
            return self._eig.solve(B)
        return linalg.cho_solve(self._chol, B, check_finite=False)


class EigenFactor(Factor):
    """Eigendecomposition ``K = Q diag(lam) Q^T``, reusable for any ridge value.

    ``Q`` may be *thin* (m x k, k < m, orthonormal columns): then ``K`` has eigenvalue 0 on
    the complement of ``Q``'s span, as for a linear kernel ``X X^T`` with fewer features
    than samples (see :meth:`from_features`), and every solve costs O(m k) per column.
    """

    def __init__(self, lam: np.ndarray, Q: np.ndarray, ridge: float = 0.0):
        self.lam, self.Q, self.ridge = lam, Q, float(ridge)
        self.thin = Q.shape[1] < Q.shape[0]
        self._shared: dict = {}  # computed once, shared with the copies of with_ridge

    @classmethod
    def from_kernel(cls, K: np.ndarray, *, overwrite_k: bool = False) -> EigenFactor:
        """Full decomposition of a PSD Gram matrix (round-off negatives clipped to 0).

        Only the lower triangle of ``K`` is read. With ``overwrite_k=True`` and a C-ordered
        float64 ``K`` the caller gives up, the eigenvectors take the memory of ``K`` (no
        second m x m array); otherwise ``K`` is not modified.
        """
        if overwrite_k and K.dtype == np.float64 and K.flags.c_contiguous:
            # K^T is Fortran-ordered: LAPACK works in it without a copy; its upper triangle
            # is the lower triangle of K.
            A, lower = K.T, False
        else:
            A, lower = np.array(K, dtype=float, order="F"), True
        # The divide-and-conquer driver (syevd), as numpy.linalg.eigh; scipy's default
        # (syevr) is slower here. The caller checked that K is finite.
        with blas_threads_for(A.shape[0]):
            lam, Q = linalg.eigh(A, lower=lower, driver="evd", overwrite_a=True,
                                 check_finite=False)
        return cls(np.maximum(lam, 0.0, out=lam), Q)

    @classmethod
    def from_features(cls, X) -> EigenFactor:
        """Thin decomposition of the linear kernel ``X X^T`` from the SVD of ``X`` (m x p)."""
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
        U, sv, _ = np.linalg.svd(X, full_matrices=False)
        keep = sv > sv.max(initial=0.0) * max(X.shape) * np.finfo(float).eps
        return cls(sv[keep] ** 2, U[:, keep])

    def with_ridge(self, ridge: float) -> EigenFactor:
        """The same decomposition for another ridge value (no refactorisation)."""
        other = EigenFactor(self.lam, self.Q, ridge)
        other._shared = self._shared
        return other

    def diagonal(self) -> np.ndarray:
        """The diagonal of :math:`Q\\Lambda Q^\\top` (computed once, in row blocks)."""
        if "diagonal" not in self._shared:
            self._shared["diagonal"] = _weighted_row_norms(self.Q, self.lam[:, None])[:, 0]
        return self._shared["diagonal"]

    def solve(self, B):
        B = np.asarray(B, dtype=float)
        QtB = self.Q.T @ B
        scaled = QtB / ((self.lam + self.ridge)[:, None] if QtB.ndim == 2 else
                        self.lam + self.ridge)
        out = self.Q @ scaled
        if self.thin:  # the complement of span(Q), where K is 0 and G is ridge * I
            out += (B - self.Q @ QtB) / self.ridge
        return out


@dataclass
class RidgeFit:
    """Dual coefficients and intercepts of a batch of ridge regressions.

    Predictions are ``V @ dual_coef + intercept`` for a kernel block ``V`` (n x m).
    ``u`` and ``s`` (``G^{-1} 1`` and ``1^T u``) define the intercept's share of the weights;
    both are ``None`` without intercept (per column, shapes (m, e) and (e,), for
    :func:`fit_multitask_ridge`).
    """

    dual_coef: np.ndarray
    intercept: np.ndarray
    u: np.ndarray | None
    s: float | np.ndarray | None


def fit_ridge(factor: Factor, T: np.ndarray, fit_intercept: bool) -> RidgeFit:
    """Solve the ridge problems for every column of ``T`` (m x e) with one factorisation."""
    m = T.shape[0]
    if not fit_intercept:
        return RidgeFit(factor.solve(T), np.zeros(T.shape[1]), None, None)
    # One solve with the extra right-hand side 1 gives u = G^{-1} 1 alongside G^{-1} T;
    # built in Fortran order, the layout LAPACK solves in (saves a copy).
    B = np.empty((m, T.shape[1] + 1), order="F")
    B[:, :-1] = T
    B[:, -1] = 1.0
    solved = factor.solve(B)
    A, u = solved[:, :-1], solved[:, -1]
    s = float(u.sum())
    b = (u @ T) / s
    A -= np.outer(u, b)
    return RidgeFit(A, b, u, s)


def fit_multitask_ridge(eig: EigenFactor, T: np.ndarray, scales: np.ndarray,
                        fit_intercept: bool) -> RidgeFit:
    r"""Ridge regression of each column :math:`t_k` of ``T`` with its own Gram matrix
    :math:`\sigma_k K`, from one full eigendecomposition ``eig`` of :math:`K` (with its ridge).

    Regression :math:`k` solves :math:`G_k a_k = t_k - b_k \mathbf 1` with
    :math:`G_k = \sigma_k K + \text{ridge}\cdot I`, and the intercept algebra of the module
    docstring with :math:`u_k = G_k^{-1}\mathbf 1`. Its predictions are
    :math:`\sigma_k v(x)^\top a_k + b_k`, so the returned ``dual_coef`` holds
    :math:`\sigma_k a_k` (predictions are ``V @ dual_coef + intercept``, as for
    :func:`fit_ridge`); ``u`` (m, e) and ``s`` (e,) hold every :math:`u_k` and its sum.
    With all :math:`\sigma_k = 1` this is :func:`fit_ridge`.
    """
    if eig.thin:
        raise ValueError("fit_multitask_ridge needs a full eigendecomposition of K")
    Q = eig.Q
    D = eig.lam[:, None] * scales[None, :] + eig.ridge
    A = Q @ ((Q.T @ T) / D)
    if not fit_intercept:
        return RidgeFit(A * scales[None, :], np.zeros(T.shape[1]), None, None)
    U = Q @ (Q.sum(axis=0)[:, None] / D)
    s = U.sum(axis=0)
    b = np.einsum("ik,ik->k", U, T) / s
    A -= U * b[None, :]
    return RidgeFit(A * scales[None, :], b, U, s)


def risk_weights(factor: Factor, fit: RidgeFit, V: np.ndarray) -> np.ndarray:
    """The weights ``w(x)`` for each row of the kernel block ``V`` (n x m): an (n x m) array."""
    W = factor.solve(V.T).T
    if fit.u is not None:
        W += np.outer(1.0 - V @ fit.u, fit.u / fit.s)
    return W


def _weighted_row_norms(Q: np.ndarray, S: np.ndarray, block_bytes: int = 2**24,
                        width: int = 8) -> np.ndarray:
    """``(Q * Q) @ S`` for ``Q`` (n, k) and ``S`` (k, r): one pass over ``Q``, squaring a
    row block at a time, and BLAS-3 products with ``width`` columns of ``S`` at a time (the
    last group padded with zeros). Every product has the same shape, so column j is bitwise
    the same value whichever batch of ridges asks for it (a coarse-to-fine search and the
    full grid agree exactly)."""
    n, k = Q.shape
    r = S.shape[1]
    groups = [np.zeros((k, width)) for _ in range(-(-r // width))]
    for j in range(r):
        groups[j // width][:, j % width] = S[:, j]
    out = np.empty((len(groups), n, width))
    step = max(1, block_bytes // (8 * max(k, 1)))
    for start in range(0, n, step):
        block = np.square(Q[start:start + step])
        for g, W in enumerate(groups):
            np.matmul(block, W, out=out[g, start:start + step])
    return np.concatenate(list(out), axis=1)[:, :r]


class LeaveOneOut:
    """Exact leave-one-out predictions of the ridge regressions of every column of ``T``.

    ``eig`` is the eigendecomposition of ``K``; ``rows`` (default: all) are the points whose
    leave-one-out predictions are wanted. :math:`Q^\\top [T, \\mathbf 1]` is computed once, so
    each ridge value then costs one product of ``len(rows)`` x k by k x (e + 1); the
    leverages :math:`H_{ii}` of a batch of ridges (:meth:`prepare`) cost one pass over
    ``Q``. Each refit keeps the same ridge term on its diagonal (see the module docstring).
    """

    def __init__(self, eig: EigenFactor, T: np.ndarray, rows=None):
        self.eig, self.T = eig, T
        m = len(T)
        self.rows = np.arange(m) if rows is None else np.asarray(rows)
        every = len(self.rows) == m and bool(np.all(self.rows == np.arange(m)))
        # Q^T [T, 1] in one product; all rows: Q itself (never a copy of the m x m array)
        B = np.empty((m, T.shape[1] + 1), order="F")
        B[:, :-1], B[:, -1] = T, 1.0
        QtB = eig.Q.T @ B
        self.QtT, self._Qt1 = QtB[:, :-1], QtB[:, -1]
        self.Q_rows = eig.Q if every else eig.Q[self.rows]
        self._leverage: dict[float, np.ndarray] = {}
        self._last: tuple | None = None  # (ridge, K G^{-1} T rows, G^{-1} 1 rows)

    def prepare(self, ridges) -> None:
        """Compute the leverages :math:`(K G^{-1})_{ii}` of the rows for every ridge of
        ``ridges`` at once (one pass over ``Q``); :meth:`predictions` then reuses them."""
        todo = sorted({float(r) for r in ridges} - set(self._leverage))
        if todo:
            lam = self.eig.lam
            # K G^{-1} vanishes on the complement of a thin Q
            shrink = lam[:, None] / (lam[:, None] + np.asarray(todo)[None, :])
            h = _weighted_row_norms(self.Q_rows, shrink)
            self._leverage.update({r: h[:, j] for j, r in enumerate(todo)})

    def _shrunk(self, ridge: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows of :math:`K G^{-1} T`, of its diagonal and of :math:`G^{-1}\\mathbf 1`
        (without the complement of a thin ``Q``); kept for the last ridge, so that both
        intercept settings of one ridge share the product (the costly step)."""
        if self._last is None or self._last[0] != ridge:
            lam = self.eig.lam
            e = self.QtT.shape[1]
            # one product for K G^{-1} T and the part of G^{-1} 1 in span(Q)
            C = np.empty((len(lam), e + 1), order="F")
            np.multiply((lam / (lam + ridge))[:, None], self.QtT, out=C[:, :e])
            np.divide(self._Qt1, lam + ridge, out=C[:, e])
            product = self.Q_rows @ C
            self._last = (ridge, product[:, :e], product[:, e])
        self.prepare([ridge])
        return self._last[1], self._leverage[ridge], self._last[2]

    def _intercept_share(self, ridge: float, u_span: np.ndarray) -> tuple:
        """``u`` on the rows, ``s = 1^T u`` and ``u^T T`` for :math:`u = G^{-1}\\mathbf 1`."""
        if self.eig.thin:  # with the complement of span(Q), where G is ridge * I
            u = self.eig.with_ridge(ridge).solve(np.ones(len(self.T)))
            return u[self.rows], float(u.sum()), u @ self.T
        # in the eigenbasis: s = sum_k (Q^T 1)_k^2 / (lam_k + ridge), a sum of positive terms
        w = self._Qt1 / (self.eig.lam + ridge)
        return u_span, float(self._Qt1 @ w), w @ self.QtT

    def predictions(self, ridge: float, fit_intercept: bool) -> np.ndarray:
        """``t_{-i}(x_i)`` for ``i`` in ``rows``: an array (len(rows), e)."""
        fitted, h, u_span = self._shrunk(ridge)
        T = self.T[self.rows]
        if fit_intercept:
            u_rows, s, uT = self._intercept_share(ridge, u_span)
            fitted = fitted + np.outer(u_rows, (ridge / s) * uT)
            h = h + ridge * u_rows ** 2 / s
        else:
            fitted = fitted.copy()
        fitted -= h[:, None] * T
        fitted /= (1.0 - h)[:, None]
        return fitted
