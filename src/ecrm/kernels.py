"""Kernel resolution over :func:`sklearn.metrics.pairwise.pairwise_kernels`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.metrics.pairwise import pairwise_kernels

#: Kernel names ECRM accepts, with the hyper-parameters each one uses.
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


def check_kernel(kernel) -> str | Callable:
    """Return ``kernel`` if it is a known name or a callable, else raise ``ValueError``."""
    if callable(kernel) or kernel in KERNEL_PARAMS:
        return kernel
    raise ValueError(
        f"unknown kernel {kernel!r}; expected one of {sorted(KERNEL_PARAMS)} or a callable"
    )


def kernel_matrix(X, Z, kernel, *, gamma=None, degree=3, coef0=1.0) -> np.ndarray:
    """The kernel block ``[k(x_i, z_j)]`` as a dense float array of shape (len(X), len(Z)).

    For ``kernel="precomputed"`` ``X`` is already that block and is returned as a copy.
    """
    kernel = check_kernel(kernel)
    if kernel == "precomputed":
        return np.array(X, dtype=float, copy=True)
    if callable(kernel):
        return np.asarray(pairwise_kernels(X, Z, metric=kernel), dtype=float)
    values = {"gamma": gamma, "degree": degree, "coef0": coef0}
    params = {name: values[name] for name in KERNEL_PARAMS[kernel]}
    return np.asarray(pairwise_kernels(X, Z, metric=kernel, filter_params=True, **params),
                      dtype=float)
