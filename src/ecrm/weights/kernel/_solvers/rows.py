r"""The training rows of a streaming fit: in memory, or as a Dask array (:mod:`._dask`).

Every pass of the primal solvers over the training data accumulates the normal equations,
sums a per-block array (leave-one-out losses) or stacks one in row order (leave-one-out
predictions). :class:`Rows` runs them over in-memory blocks sized by ``working_memory``; the
Dask backend runs the same block functions per chunk as a map-reduce. A block's regression
targets are :class:`RiskTargets`, a small picklable callable (shipped to Dask workers).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np

from ecrm.losses.base import LinearLoss, Loss
from ecrm.spaces.base import OutputSpace
from ecrm.weights.kernel._solvers.budget import row_blocks
from ecrm.weights.kernel._solvers.features import FeatureMap
from ecrm.weights.kernel._solvers.normal_equations import NormalEquations

__all__ = ["RiskTargets", "Rows", "is_dask_array", "observed_means", "validate_outputs"]


def is_dask_array(X) -> bool:
    """Whether ``X`` is a Dask collection (checked by its type's module: no Dask import).

    >>> is_dask_array(np.zeros(2))
    False
    """
    return type(X).__module__.split(".")[0] == "dask"


class RiskTargets:
    r"""The regression targets of a block of outputs: :math:`[\psi(Y), \mathrm{const}(Y), Y]`
    for a loss with a linear form, else :math:`Y` (the marginals of :meth:`predict_scores`).

    **Incomplete outputs.** A space may mark an unobserved entry of a training output by
    ``NaN`` (a label an incomplete ranking leaves out). The loss's :math:`\psi` and
    :math:`\mathrm{const}` count only what is observed; in the marginal columns an
    unobserved entry counts as ``fill``, the mean of its column over the training rows that
    observe it (0 when none does), so that the label score :math:`\sum_i w_i(x)\,
    \tilde y_{ij}` shrinks towards the observed frequency where the data say nothing. The
    fill is a statistic of all training rows: :meth:`for_outputs` sets it before the
    targets are computed block by block; without it the mean of the block given is used.

    >>> from ecrm.losses import HammingLoss
    >>> RiskTargets(HammingLoss())(np.array([[1.0, 0.0]])).tolist()
    [[-1.0, 1.0, 1.0, 1.0, 0.0]]
    >>> RiskTargets(None)(np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 0.0]])).tolist()
    [[1.0, 0.5], [0.0, 1.0], [1.0, 0.0]]
    """

    fill: np.ndarray | None = None

    def __init__(self, loss: Loss, fill: np.ndarray | None = None):
        self.loss = loss
        self.fill = fill

    def for_outputs(self, Y) -> RiskTargets:
        """These targets with ``fill`` the observed column means of the training outputs
        ``Y`` (m, d) when ``Y`` is an in-memory array with unobserved (NaN) entries; else
        themselves."""
        if not (isinstance(Y, np.ndarray) and Y.dtype.kind == "f" and np.isnan(Y).any()):
            return self
        other = copy.copy(self)
        other.fill = observed_means(Y)
        return other

    def risk(self, Y) -> np.ndarray:
        r""":math:`[\psi(Y), \mathrm{const}(Y)]` of the outputs ``Y`` as given (a linear loss)."""
        loss = self.loss
        if not isinstance(loss, LinearLoss):
            raise TypeError(f"{type(loss).__name__} has no linear form, hence no risk targets")
        return np.column_stack([loss.psi(Y), loss.const(Y)])

    def marginals(self, Y: np.ndarray) -> np.ndarray:
        """The outputs ``Y`` with every unobserved (NaN) entry replaced by ``fill``."""
        missing = np.isnan(Y)
        if not missing.any():
            return Y
        fill = observed_means(Y) if self.fill is None else self.fill
        return np.where(missing, np.broadcast_to(fill, Y.shape), Y)

    def __call__(self, Y: np.ndarray) -> np.ndarray:
        Y = np.asarray(Y, dtype=float)  # compact (uint8, bool) outputs become floats per block
        if isinstance(self.loss, LinearLoss):
            return np.column_stack([self.loss.psi(Y), self.loss.const(Y), self.marginals(Y)])
        return self.marginals(Y)


def observed_means(Y) -> np.ndarray:
    """The mean of each column of ``Y`` (m, d) over its observed (not NaN) entries; 0 for a
    column no row observes.

    >>> observed_means(np.array([[1.0, np.nan], [0.0, np.nan]])).tolist()
    [0.5, 0.0]
    """
    Y = np.asarray(Y, dtype=float)
    seen = ~np.isnan(Y)
    count = seen.sum(axis=0)
    return np.where(seen, Y, 0.0).sum(axis=0) / np.maximum(count, 1)


class Rows:
    """Training inputs ``X`` (m, p) and outputs ``Y`` (m, d) held in memory.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p)
        Checked float inputs.
    Y : ndarray of shape (m, d)
        Checked outputs.

    Examples
    --------
    >>> rows = Rows(np.arange(6.0).reshape(3, 2), np.ones((3, 1)))
    >>> rows.map_sum(lambda Xb, Yb: Xb.sum(axis=0), np.array([0, 2]), 2).tolist()
    [4.0, 6.0]
    """

    def __init__(self, X, Y: np.ndarray):
        self.X, self.Y = X, Y
        self.n_rows = X.shape[0]

    def equations(self, features: FeatureMap, targets: Callable) -> NormalEquations:
        """The normal equations of ``features`` and ``targets(Y block)`` over all rows."""
        return NormalEquations.accumulate(features, self.X, self.Y, targets)

    def _blocks(self, rows: np.ndarray, width: int):
        for blk in row_blocks(len(rows), width):
            sel = rows[blk]
            yield self.X[sel], np.asarray(self.Y[sel], dtype=float)

    def map_sum(self, fn: Callable, rows: np.ndarray, width: int) -> np.ndarray:
        """``sum fn(X[block], Y[block])`` over row blocks of ``rows`` (``width`` floats a row)."""
        parts = [np.asarray(fn(Xb, Yb), dtype=float) for Xb, Yb in self._blocks(rows, width)]
        if not parts:
            raise ValueError("map_sum needs at least one row")
        return sum(parts[1:], parts[0])

    def map_concat(self, fn: Callable, rows: np.ndarray, width: int) -> np.ndarray:
        """``fn(X[block], Y[block])`` over row blocks of ``rows``, stacked in row order."""
        return np.concatenate([fn(Xb, Yb) for Xb, Yb in self._blocks(rows, width)])


def validate_outputs(space: OutputSpace, Y, *, compact: bool) -> np.ndarray:
    """``space.validate(Y)``; with ``compact``, a 2-D bool or 1-byte integer ``Y`` is checked
    in row blocks and kept in its dtype (a copy), not as float64 (8 times the memory).

    For the primal solvers, whose passes turn each block of outputs into floats
    (:class:`RiskTargets`, :class:`Rows`): at m = 10^6 and d = 500 this keeps ``Y_fit_`` at
    0.5 GB instead of 4 GB. Outputs the space would change (not already its values) fall
    back to the float array of ``space.validate``, as does a failure (its message then names
    the row of ``Y``).

    >>> from ecrm import Hierarchy
    >>> validate_outputs(Hierarchy({"a": None}), np.ones((2, 1), bool), compact=True).dtype
    dtype('bool')
    """
    if not (compact and isinstance(Y, np.ndarray) and Y.ndim == 2 and Y.dtype.itemsize == 1
            and Y.dtype.kind in "biu"):
        return space.validate(Y)
    for blk in row_blocks(Y.shape[0], 3 * Y.shape[1]):
        try:
            same = np.array_equal(space.validate(Y[blk]), Y[blk])
        except ValueError:
            same = False
        if not same:
            return space.validate(Y)
    return Y.copy()
