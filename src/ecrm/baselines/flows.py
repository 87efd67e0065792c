r"""Baselines of the paper's flow-prediction experiment (Section 6.2): kNN and KRR + projection.

* :class:`KNNFlowRegressor`: with :math:`\mathcal N_k(x)` the :math:`k` nearest training
  inputs, predict :math:`\arg\min_{y\in\mathcal Y} \sum_{i\in\mathcal N_k(x)} \ell(y, y_i)`
  (an LP for the absolute loss, the mean of the neighbours' flows for the square loss);
* :class:`KRRProjection`: kernel ridge regression of every arc's flow
  (:class:`sklearn.kernel_ridge.KernelRidge`; its ``ridge`` is added to the kernel's diagonal
  as is, unlike ECRM's ``alpha``, the paper's :math:`\lambda`, which adds
  :math:`m\lambda`), then the Euclidean projection
  :math:`\arg\min_{y\in\mathcal Y}\|y - \hat y(x)\|_2` onto the flow polytope.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.kernel_ridge import KernelRidge
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_array, check_is_fitted

from ecrm.estimators._validation import check_int, check_real, check_same_rows
from ecrm.losses.base import Loss
from ecrm.spaces.flows import FlowPolytope

__all__ = ["KNNFlowRegressor", "KRRProjection", "knn_weights"]


def _check_training_data(space, X, Y):
    """X as floats and Y validated on the output space ``space`` (same rows)."""
    if not isinstance(space, FlowPolytope):
        raise TypeError(f"output_space must be a FlowPolytope; got {type(space).__name__}")
    X = check_array(X, dtype=np.float64)
    Y = space.validate(Y)
    check_same_rows(X, Y)
    return X, Y


def knn_weights(indices: np.ndarray, n_train: int) -> np.ndarray:
    """Dense weights (n, n_train) with ``1/k`` on each row's ``k`` neighbour indices."""
    n, k = indices.shape
    W = np.zeros((n, n_train))
    np.add.at(W, (np.repeat(np.arange(n), k), indices.ravel()), 1.0 / k)
    return W


class KNNFlowRegressor(BaseEstimator):
    r"""k-nearest-neighbour flow prediction minimising the neighbours' summed loss.

    .. math:: \hat y(x) \in \arg\min_{y\in\mathcal Y} \sum_{i\in\mathcal N_k(x)} \ell(y, y_i)

    Parameters
    ----------
    loss : ecrm.losses.Loss
        :class:`~ecrm.losses.continuous.AbsoluteLoss` or
        :class:`~ecrm.losses.continuous.SquaredLoss`.
    output_space : FlowPolytope
    n_neighbors : int, default=10

    Examples
    --------
    >>> from ecrm.datasets.flows import simulate_flows
    >>> from ecrm.losses.continuous import AbsoluteLoss
    >>> from ecrm.spaces.flows import paper_network
    >>> X, Y = simulate_flows(60, random_state=0)
    >>> knn = KNNFlowRegressor(AbsoluteLoss(), paper_network(), n_neighbors=5).fit(X, Y)
    >>> knn.predict(X[:2]).shape
    (2, 10)
    """

    def __init__(self, loss, output_space, *, n_neighbors: int = 10):
        self.loss = loss
        self.output_space = output_space
        self.n_neighbors = n_neighbors

    def fit(self, X, Y):
        """Fit on inputs ``X`` (m, p) and training flows ``Y`` (m, d) of ``output_space``;
        returns ``self``."""
        if not isinstance(self.loss, Loss):
            raise TypeError(f"loss must be an ecrm Loss; got {type(self.loss).__name__}")
        X, Y = _check_training_data(self.output_space, X, Y)
        n_neighbors = check_int(self.n_neighbors, "n_neighbors", high=len(X))
        self.nn_ = NearestNeighbors(n_neighbors=n_neighbors).fit(X)
        self.Y_fit_ = Y
        self.n_features_in_ = X.shape[1]
        return self

    def neighbors(self, X, n_neighbors: int | None = None) -> np.ndarray:
        """Indices of the nearest training points, shape (n, k)."""
        check_is_fitted(self, "nn_")
        X = check_array(X, dtype=np.float64)
        return self.nn_.kneighbors(X, n_neighbors=n_neighbors, return_distance=False)

    def predict(self, X) -> np.ndarray:
        """Predicted flows (n, d) for the rows of ``X`` (n, p)."""
        W = knn_weights(self.neighbors(X), len(self.Y_fit_))
        return self.loss.minimize_risk(W, self.Y_fit_, self.output_space)


class KRRProjection(BaseEstimator):
    r"""Kernel ridge regression per arc, then Euclidean projection onto the flow polytope.

    .. math:: \hat y(x) = \Pi_{\mathcal Y}\big(k(x, X)(K + r I)^{-1} Y\big)

    Parameters
    ----------
    output_space : FlowPolytope
    ridge : float, default=1.0
        The ridge :math:`r` added to the kernel's diagonal as is (scikit-learn's
        :class:`~sklearn.kernel_ridge.KernelRidge` ``alpha``; ECRM's ``alpha`` is the paper's
        :math:`\lambda` and adds :math:`m\lambda`).
    kernel : str or callable, default="rbf"
    gamma : float, default=None

    Examples
    --------
    >>> from ecrm.datasets.flows import simulate_flows
    >>> from ecrm.spaces.flows import paper_network
    >>> X, Y = simulate_flows(60, random_state=0)
    >>> space = paper_network()
    >>> P = KRRProjection(space, ridge=0.1, gamma=0.05).fit(X, Y).predict(X[:3])
    >>> bool(space.contains(P).all())
    True
    """

    def __init__(self, output_space, *, ridge: float = 1.0, kernel="rbf", gamma=None):
        self.output_space = output_space
        self.ridge = ridge
        self.kernel = kernel
        self.gamma = gamma

    def fit(self, X, Y):
        """Fit on inputs ``X`` (m, p) and training flows ``Y`` (m, d) of ``output_space``;
        returns ``self``."""
        X, Y = _check_training_data(self.output_space, X, Y)
        ridge = check_real(self.ridge, "ridge")
        self.krr_ = KernelRidge(alpha=ridge, kernel=self.kernel, gamma=self.gamma).fit(X, Y)
        self.n_features_in_ = X.shape[1]
        return self

    def predict_unconstrained(self, X) -> np.ndarray:
        """The kernel ridge predictions before projection, shape (n, d)."""
        check_is_fitted(self, "krr_")
        return np.atleast_2d(self.krr_.predict(check_array(X, dtype=np.float64)))

    def predict(self, X) -> np.ndarray:
        """Predicted flows (n, d) for the rows of ``X`` (n, p)."""
        return self.output_space.project(self.predict_unconstrained(X)).solution
