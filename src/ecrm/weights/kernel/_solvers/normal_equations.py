r"""The primal ridge normal equations, accumulated over row blocks.

With features :math:`F` (m x k), targets :math:`T` (m x c) and the paper's :math:`\lambda`,

.. math:: \min_{W,\, b} \frac1m \|F W + \mathbf 1 b^\top - T\|_F^2 + \lambda \|W\|_F^2 .

This is the dual objective of :mod:`ecrm.weights.kernel._ridge` for the kernel :math:`K = F F^\top`:
the same ridge term :math:`m\lambda`, the same unpenalised intercept. Only the sums
:math:`F^\top F`, :math:`F^\top T`, :math:`F^\top \mathbf 1`, :math:`T^\top\mathbf 1` enter:
with :math:`\mu = F^\top\mathbf 1/m`, :math:`\bar t = T^\top \mathbf 1/m` and the centred
sums :math:`C = F^\top F - m\mu\mu^\top`, :math:`R = F^\top T - m\mu\bar t^\top`,

.. math:: W = (C + m\lambda I)^{-1} R, \qquad b = \bar t - W^\top\mu

(without intercept: :math:`C = F^\top F`, :math:`R = F^\top T`, :math:`b = 0`). Each sum is
accumulated over row blocks, so memory is :math:`O(k^2 + k c + \text{block}\cdot k)`, never
the m x k feature matrix.

**Risk weights.** The prediction at :math:`x` is :math:`w(x)^\top t` with

.. math:: w(x) = F_c (C + m\lambda I)^{-1} (f(x) - \mu) + \mathbf 1/m, \qquad
          F_c = F - \mathbf 1\mu^\top

(without intercept :math:`w(x) = F (C + m\lambda I)^{-1} f(x)`), an n x m matrix computed
by :func:`primal_weights` in a second pass over the training blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from ecrm.weights.kernel._solvers.budget import row_blocks
from ecrm.weights.kernel._solvers.features import FeatureMap

__all__ = ["NormalEquations", "PrimalFit", "primal_weights"]


@dataclass
class PrimalFit:
    """Coefficients (k, c) and intercepts (c,): predictions are ``f(X) @ coef + intercept``."""

    coef: np.ndarray
    intercept: np.ndarray


@dataclass
class NormalEquations:
    """The sums :math:`F^\\top F`, :math:`F^\\top T`, :math:`F^\\top\\mathbf 1`,
    :math:`T^\\top\\mathbf 1`, the row count and :math:`\\max_i \\|f_i\\|^2`.

    Examples
    --------
    >>> from ecrm.weights.kernel._solvers.features import LinearFeatures
    >>> X = np.array([[0.0], [1.0], [2.0]]); T = np.array([[1.0], [3.0], [5.0]])
    >>> ne = NormalEquations.accumulate(LinearFeatures(1), X, T, lambda Tb: Tb)
    >>> fit = ne.solve(ridge=1e-12, fit_intercept=True)
    >>> np.round(fit.coef, 6).tolist(), np.round(fit.intercept, 6).tolist()
    ([[2.0]], [1.0])
    """

    gram: np.ndarray
    cross: np.ndarray
    feature_sum: np.ndarray
    target_sum: np.ndarray
    n: int
    diagonal_max: float

    @classmethod
    def accumulate(cls, features: FeatureMap, X, Y, targets: Callable,
                   rows: np.ndarray | None = None) -> NormalEquations:
        """Sum over row blocks of ``X`` (and of ``targets(Y[block])``, shape (b, c)).

        ``rows`` restricts the sums to those training rows (refits without some points).
        """
        k = features.n_features_out
        idx = np.arange(X.shape[0]) if rows is None else np.asarray(rows)
        gram = np.zeros((k, k), order="F")
        cross = fsum = tsum = None
        dmax = 0.0
        for b in row_blocks(len(idx), 2 * k + Y.shape[1] * 3):
            sel = idx[b] if rows is not None else b
            F = features.transform(X[sel])
            T = np.asarray(targets(Y[sel]), dtype=float)
            # F'F by a rank-b update of the upper triangle (half a GEMM); F.T is F-ordered
            gram = linalg.blas.dsyrk(1.0, F.T, beta=1.0, c=gram, trans=0, lower=0,
                                     overwrite_c=1)
            if cross is None:
                cross, fsum, tsum = np.zeros((k, T.shape[1])), np.zeros(k), np.zeros(T.shape[1])
            cross += F.T @ T
            fsum += F.sum(axis=0)
            tsum += T.sum(axis=0)
            dmax = max(dmax, float(np.einsum("ij,ij->i", F, F).max(initial=0.0)))
        assert cross is not None and fsum is not None and tsum is not None
        gram = np.triu(gram) + np.triu(gram, 1).T
        return cls(gram, cross, fsum, tsum, len(idx), dmax)

    def __add__(self, other: NormalEquations) -> NormalEquations:
        """The sums over the rows of both (a map-reduce adds the sums of row chunks)."""
        return NormalEquations(self.gram + other.gram, self.cross + other.cross,
                               self.feature_sum + other.feature_sum,
                               self.target_sum + other.target_sum, self.n + other.n,
                               max(self.diagonal_max, other.diagonal_max))

    def centred(self, fit_intercept: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                     np.ndarray]:
        """``(C, R, mu, tbar)`` of the module docstring (zero means without intercept)."""
        if not fit_intercept:
            return (self.gram, self.cross, np.zeros(len(self.feature_sum)),
                    np.zeros(len(self.target_sum)))
        mu, tbar = self.feature_sum / self.n, self.target_sum / self.n
        return (self.gram - self.n * np.outer(mu, mu), self.cross - self.n * np.outer(mu, tbar),
                mu, tbar)

    def factor(self, ridge: float, fit_intercept: bool):
        """Cholesky factor of :math:`C + \\text{ridge}\\, I` and ``mu``."""
        C, _, mu, _ = self.centred(fit_intercept)
        G = C.copy()
        G[np.diag_indices(len(G))] += ridge
        return linalg.cho_factor(G, lower=True, check_finite=False), mu

    def solve(self, ridge: float, fit_intercept: bool) -> PrimalFit:
        """The coefficients and intercepts for the ridge term ``ridge`` (= m * alpha)."""
        C, R, mu, tbar = self.centred(fit_intercept)
        G = C.copy()
        G[np.diag_indices(len(G))] += ridge
        try:
            coef = linalg.solve(G, R, assume_a="pos", check_finite=False)
        except linalg.LinAlgError:  # round-off made C + ridge I indefinite: eigen fallback
            lam, V = np.linalg.eigh(C)
            coef = V @ ((V.T @ R) / (np.maximum(lam, 0.0) + ridge)[:, None])
        return PrimalFit(coef, tbar - mu @ coef)


def primal_weights(features: FeatureMap, X_train, equations: NormalEquations, ridge: float,
                   fit_intercept: bool, F_test: np.ndarray) -> np.ndarray:
    """Risk weights (n, m) of the test features ``F_test`` (module docstring)."""
    chol, mu = equations.factor(ridge, fit_intercept)
    P = linalg.cho_solve(chol, (F_test - mu).T, check_finite=False)  # (k, n)
    m = X_train.shape[0]
    W = np.empty((F_test.shape[0], m))
    for b in row_blocks(m, features.n_features_out + F_test.shape[0]):
        W[:, b] = ((features.transform(X_train[b]) - mu) @ P).T
    if fit_intercept:
        W += 1.0 / m
    return W
