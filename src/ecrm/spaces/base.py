"""The output-space interface: a set Y in R^d with an exact linear minimisation oracle."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class OutputSpace(ABC):
    """A structured output space with an exact linear oracle.

    Subclasses implement :meth:`argmin`, which solves, for every row ``c`` of a cost
    matrix ``C``,

    .. math:: \\hat y(c) \\in \\arg\\min_{y \\in \\mathcal{Y}} \\langle c, y \\rangle ,

    for costs of any sign, and :meth:`validate`, which checks training outputs.
    """

    @property
    @abstractmethod
    def n_outputs(self) -> int:
        """Dimension ``d`` of the output vectors."""

    @abstractmethod
    def argmin(self, C) -> np.ndarray:
        """Exact minimisers of ``<c, y>`` over the space, one per row of ``C``.

        Parameters
        ----------
        C : array-like of shape (n, d)
            Cost rows, any sign.

        Returns
        -------
        Y : ndarray of shape (n, d)
        """

    @abstractmethod
    def validate(self, Y) -> np.ndarray:
        """Return ``Y`` as a new float array after checking it lies in the space.

        Raises ``ValueError`` naming the first offending row (and label) otherwise.
        The caller's array is never modified.
        """

    def check_costs(self, C) -> np.ndarray:
        """Return ``C`` as a 2-D float array of width ``n_outputs`` or raise ``ValueError``."""
        C = np.asarray(C, dtype=float)
        if C.ndim == 1:
            C = C[None, :]
        if C.ndim != 2 or C.shape[1] != self.n_outputs:
            raise ValueError(
                f"costs must have shape (n, {self.n_outputs}) for this output space; "
                f"got shape {C.shape}"
            )
        if not np.all(np.isfinite(C)):
            raise ValueError("costs contain NaN or infinite values")
        return C


def check_binary_matrix(Y, n_columns: int, what: str = "Y") -> np.ndarray:
    """Return ``Y`` as a new float 0/1 matrix of width ``n_columns`` or raise ``ValueError``."""
    import scipy.sparse as sp

    if sp.issparse(Y):
        Y = Y.toarray()
    Y = np.array(Y, dtype=float, copy=True)
    if Y.ndim == 1:
        Y = Y[None, :]
    if Y.ndim != 2 or Y.shape[1] != n_columns:
        raise ValueError(f"{what} must have shape (n, {n_columns}); got shape {Y.shape}")
    bad = ~((Y == 0) | (Y == 1))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"{what} must contain only 0 and 1; found {Y[i, j]!r} at row {i}, column {j}"
        )
    return Y


class MultilabelSpace(OutputSpace):
    """All label sets ``{0, 1}^d`` with no constraint; the oracle switches on negative costs.

    >>> MultilabelSpace(3).argmin([[-1.0, 2.0, -0.5]])
    array([[1., 0., 1.]])
    """

    def __init__(self, n_labels: int):
        if int(n_labels) != n_labels or n_labels < 1:
            raise ValueError(f"n_labels must be a positive integer; got {n_labels!r}")
        self.n_labels = int(n_labels)

    @property
    def n_outputs(self) -> int:
        return self.n_labels

    def argmin(self, C) -> np.ndarray:
        C = self.check_costs(C)
        return (C < 0).astype(float)

    def validate(self, Y) -> np.ndarray:
        return check_binary_matrix(Y, self.n_labels)

    def __repr__(self) -> str:
        return f"MultilabelSpace({self.n_labels})"
