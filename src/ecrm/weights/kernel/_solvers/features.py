r"""Explicit feature maps :math:`f(x)` whose linear kernel is (an approximation of) the kernel.

* :class:`LinearFeatures`: :math:`f(x) = x`, the linear kernel exactly (dense or sparse).
* :class:`NystromFeatures`: on centres :math:`c_1, \dots, c_M`,

  .. math:: f(x) = K(x, C)\, U_r \Lambda_r^{-1/2}, \qquad K_{MM} = U \Lambda U^\top,

  where :math:`r` keeps the eigenvalues above :math:`M \varepsilon \lambda_{\max}` (a
  rank-revealing pseudo-inverse square root). Then :math:`f(x)^\top f(z) = K(x, C)
  K_{MM}^{+} K(C, z)`, the Nystrom approximation, exact on the centres' span: with every
  training point a centre the ridge fit equals the exact dual one. :math:`U_r
  \Lambda_r^{-1/2}` is :math:`K_{MM}^{+1/2}` up to a rotation of the features, to which a
  ridge fit is invariant.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ecrm.estimators._validation import check_float_array
from ecrm.weights.kernel._kernels import kernel_matrix

__all__ = ["FeatureMap", "LinearFeatures", "NystromFeatures"]


class FeatureMap:
    """An explicit feature map; :meth:`transform` maps a row block of inputs."""

    n_features_out: int

    def transform(self, X) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_state(self, n_features: int, kernel_params: dict) -> None:
        """A loaded map against the estimator's ``n_features`` inputs and kernel."""
        raise TypeError(f"unknown feature map {type(self).__name__}")


class LinearFeatures(FeatureMap):
    """The identity map of the linear kernel :math:`k(x, z) = x^\\top z`.

    >>> LinearFeatures(2).transform(np.eye(2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(self, n_features: int):
        self.n_features_out = int(n_features)

    def transform(self, X) -> np.ndarray:
        return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)

    def check_state(self, n_features: int, kernel_params: dict) -> None:
        if kernel_params["kernel"] != "linear" or self.n_features_out != n_features:
            raise ValueError(f"_fit.features: the identity of {self.n_features_out} "
                             f"features needs kernel='linear' on {n_features} features "
                             f"(n_features_in_)")


class NystromFeatures(FeatureMap):
    """Nystrom features on the rows of ``centres`` (see the module docstring).

    Parameters
    ----------
    centres : ndarray or sparse matrix of shape (M, p)
    kernel_params : dict
        ``kernel``, ``gamma``, ``degree``, ``coef0``
        (:func:`ecrm.weights.kernel._kernels.kernel_matrix`).
    projection : ndarray of shape (M, r), optional
        A projection computed before (a model file restores it): coefficients fitted on these
        features are tied to this basis, which an eigendecomposition recomputed elsewhere
        may rotate.

    Attributes
    ----------
    projection : ndarray of shape (M, r)
        :math:`U_r \\Lambda_r^{-1/2}`; ``r = n_features_out`` is the numerical rank of
        :math:`K_{MM}`.

    Examples
    --------
    >>> C = np.array([[0.0], [1.0]])
    >>> f = NystromFeatures(C, {"kernel": "rbf", "gamma": 1.0, "degree": 3, "coef0": 1})
    >>> F = f.transform(C)
    >>> np.allclose(F @ F.T, np.exp(-np.array([[0.0, 1.0], [1.0, 0.0]])))
    True
    """

    def __init__(self, centres, kernel_params: dict, projection=None):
        self.centres, self.kernel_params = centres, dict(kernel_params)
        if projection is not None:
            self.projection = np.asarray(projection, dtype=float)
            if self.projection.ndim != 2 or self.projection.shape[0] != centres.shape[0]:
                raise ValueError(f"projection must have shape ({centres.shape[0]}, r); got "
                                 f"{self.projection.shape}")
            self.n_features_out = self.projection.shape[1]
            return
        K = kernel_matrix(centres, centres, **self.kernel_params)
        lam, U = np.linalg.eigh((K + K.T) / 2)
        top = max(float(lam.max(initial=0.0)), 0.0)
        keep = lam > top * K.shape[0] * np.finfo(float).eps
        if not keep.any():
            raise ValueError("the kernel matrix of the Nystrom centres is 0: no features")
        self.projection = U[:, keep] / np.sqrt(lam[keep])
        self.n_features_out = int(keep.sum())

    def transform(self, X) -> np.ndarray:
        return kernel_matrix(X, self.centres, **self.kernel_params) @ self.projection

    def check_state(self, n_features: int, kernel_params: dict) -> None:
        M = self.centres.shape[0]
        if self.centres.ndim != 2 or self.centres.shape[1] != n_features:
            raise ValueError(f"the Nystrom centres must have {n_features} columns "
                             f"(n_features_in_); found shape {self.centres.shape}")
        check_float_array(self.projection, "the Nystrom projection", (M, self.n_features_out))
        if self.kernel_params != kernel_params:
            raise ValueError(f"the Nystrom kernel {self.kernel_params} differs from "
                             f"kernel_params_ {kernel_params}")
