"""Kernels over :func:`sklearn.metrics.pairwise.pairwise_kernels`: names, parameters, blocks.

This is the one module that knows about ``kernel="precomputed"``: :func:`check_kernel_input`
checks the shape of a precomputed block and :func:`kernel_matrix` returns it as it is.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils.validation import check_array

from ecrm.estimators._parameters import check_parameter

__all__ = ["check_kernel_input", "check_kernel_params", "kernel_diagonal_mean", "kernel_matrix",
           "large_product_rows"]

#: The hyper-parameters each kernel uses, by the names of
#: ``ecrm.estimators._parameters.CONSTRAINTS["kernel"]``.
KERNEL_PARAMS: dict[str, tuple[str, ...]] = {
    "linear": (),
    "rbf": ("gamma",),
    "laplacian": ("gamma",),
    "poly": ("gamma", "degree", "coef0"),
    "polynomial": ("gamma", "degree", "coef0"),
    "sigmoid": ("gamma", "coef0"),
    "cosine": (),
    "precomputed": (),
}


def check_kernel_params(kernel, gamma=None, degree=3, coef0=1.0) -> dict:
    """The kernel settings as a dict, after checking each (``ValueError`` naming it).

    ``gamma`` is ``None`` or a real number in [0, inf), ``degree`` an integer >= 1 and
    ``coef0`` a finite real number. The values are returned unchanged.

    >>> check_kernel_params("rbf", gamma=0.5)
    {'kernel': 'rbf', 'gamma': 0.5, 'degree': 3, 'coef0': 1.0}
    >>> check_kernel_params("poly", degree=2.5)
    Traceback (most recent call last):
    ...
    ValueError: degree must be an integer >= 1; got 2.5
    """
    params = {"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0}
    for name, value in params.items():
        check_parameter(name, value)
    return params


def check_kernel_input(X, kernel, *, n_train: int | None = None,
                       n_features: int | None = None):
    """``X`` as a float array (or CSR/CSC matrix) that ``kernel`` can be evaluated on.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, p)
        Inputs; for ``kernel="precomputed"`` the kernel block against the training points.
    kernel : str or callable
    n_train : int, optional
        Number of training points: a precomputed block must have that many columns
        (default: as many as rows, the training Gram matrix).
    n_features : int, optional
        Number of features seen at fit (other kernels).

    Returns
    -------
    X : ndarray or sparse matrix of shape (n, p)
        Not a copy when ``X`` already is a float64 array.
    """
    X = check_array(X, accept_sparse=("csr", "csc"), dtype=np.float64, input_name="X")
    if kernel == "precomputed":
        n_cols = X.shape[0] if n_train is None else n_train
        if X.shape[1] != n_cols:
            raise ValueError(f"with kernel='precomputed' X must be the kernel matrix of shape "
                             f"(n_samples, {n_cols}); got shape {X.shape}")
    elif n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but this estimator was fitted with "
                         f"{n_features}")
    return X


#: Products with more entries than this are computed in row blocks: one BLAS call with a very
#: large output (``X @ X.T`` of 27,000 rows and more) crashes OpenBLAS here (a segmentation
#: fault in its threaded rank-k update), while row blocks of the same product do not.
MAX_PRODUCT_ENTRIES = 2**26


def large_product_rows(n_rows: int, n_cols: int) -> list[slice]:
    """Row slices of an (n_rows, n_cols) product: one slice unless it has more than
    :data:`MAX_PRODUCT_ENTRIES` entries, else blocks of at most that many.

    >>> large_product_rows(3, 4)
    [slice(0, 3, None)]
    """
    if n_rows * n_cols <= MAX_PRODUCT_ENTRIES:
        return [slice(0, n_rows)]
    step = max(1, MAX_PRODUCT_ENTRIES // max(n_cols, 1))
    return [slice(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]


def kernel_matrix(X, Z, kernel, *, gamma=None, degree=3, coef0=1.0,
                  copy: bool = False) -> np.ndarray:
    """The kernel block ``[k(x_i, z_j)]`` as a dense float array of shape (len(X), len(Z)).

    Parameters
    ----------
    X, Z : ndarray or sparse matrix
        Inputs checked by :func:`check_kernel_input`. For ``kernel="precomputed"`` ``X`` is
        already the block (``Z`` is not used).
    kernel, gamma, degree, coef0 : as in :class:`ecrm.ECRM`.
    copy : bool, default=False
        For ``"precomputed"``: return a new array even when ``X`` is a dense float array
        (otherwise ``X`` itself is returned, and must not be modified). Other kernels always
        return a new array.

    Returns
    -------
    K : ndarray of shape (len(X), len(Z))

    Raises
    ------
    ValueError
        If the kernel gives NaN or infinite values (a callable returning NaN, or inputs so
        large that the kernel overflows).
    """
    kernel = check_parameter("kernel", kernel)
    if kernel == "precomputed":
        if sp.issparse(X):
            return X.toarray()
        return np.array(X, dtype=float, copy=True) if copy else np.asarray(X, dtype=float)
    values = {"gamma": gamma, "degree": degree, "coef0": coef0}
    params = {} if callable(kernel) else {name: values[name] for name in KERNEL_PARAMS[kernel]}
    blocks = large_product_rows(X.shape[0], Z.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, with the cause
        if len(blocks) == 1:
            K = np.asarray(pairwise_kernels(X, Z, metric=kernel, filter_params=True, **params),
                           dtype=float)
        else:
            K = np.empty((X.shape[0], Z.shape[0]))
            for rows in blocks:
                K[rows] = pairwise_kernels(X[rows], Z, metric=kernel, filter_params=True,
                                           **params)
    if not np.isfinite(K).all():
        scale = max(float(abs(X).max()), float(abs(Z).max()))
        raise ValueError(f"the kernel {kernel!r} gave NaN or infinite values on these inputs "
                         f"(largest |x| = {scale:.3g}): rescale the inputs or check the kernel "
                         f"and its parameters")
    return K


def kernel_diagonal_mean(X, kernel_params: dict, block: int = 32) -> float:
    """The mean of the diagonal of the kernel on the rows of ``X`` (the StructuredSVM's
    intercept scale), in row blocks: O(m * block * p), never the m x m matrix."""
    if kernel_params["kernel"] == "precomputed":
        return float(np.mean(X.diagonal()))
    total = 0.0
    for start in range(0, X.shape[0], block):
        rows = X[start:start + block]
        total += float(np.diag(kernel_matrix(rows, rows, **kernel_params)).sum())
    return total / X.shape[0]
