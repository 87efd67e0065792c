r"""A finite output space given by its elements; the oracle is an exact scan.

Binary classification (candidates ``[[-1], [1]]``), multiclass classification (one row per
class) and any small structured set (e.g. the label sets observed in training) are finite
output spaces. The linear oracle

.. math:: \hat y(c) = \arg\min_{y \in \{y_1, \dots, y_K\}} \langle c, y \rangle

is one matrix product and a row-wise ``argmin`` (ties go to the first candidate). Losses linear
in the one-hot *index* of the candidate (the 0-1 loss) give one cost per candidate, the cost
form :attr:`CandidateSpace.ONE_HOT`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.base import OUTPUTS, OutputSpace, check_item_labels

__all__ = ["CandidateSpace"]


def _row_keys(Y: np.ndarray) -> np.ndarray:
    """One opaque, comparable key per row of a float matrix (-0.0 and 0.0 are the same)."""
    Y = np.ascontiguousarray(Y + 0.0)
    return Y.view(np.dtype((np.void, Y.dtype.itemsize * Y.shape[1]))).ravel()


class CandidateSpace(OutputSpace):
    r"""The finite output space :math:`\{y_1, \dots, y_K\} \subset \mathbb R^d`.

    Parameters
    ----------
    candidates : array-like of shape (K, d), or (K,) for scalar outputs
        The elements of the space, one per row; rows must be distinct. A 1-D array is read
        as ``K`` scalar outputs (``d = 1``).
    labels : sequence of str, optional
        A name for each candidate, in order: the class names of a classifier (``ecrm
        predict`` writes them; without names it writes a scalar candidate's value, else the
        candidate's position). Part of the space: spaces with other names are different
        spaces.

    Attributes
    ----------
    candidates : ndarray of shape (K, d)
        A read-only copy of the candidates.
    labels : tuple of str or None
        The names given.

    Examples
    --------
    >>> space = CandidateSpace([[-1], [1]])
    >>> space.argmin([[2.0], [-0.5]])
    array([[-1.],
           [ 1.]])
    >>> space.index([[1], [-1]])
    array([1, 0])
    >>> space.contains([[1], [0]])
    array([ True, False])
    """

    def __init__(self, candidates, labels=None):
        if sp.issparse(candidates):
            candidates = candidates.toarray()
        C = np.array(candidates, dtype=float, copy=True)
        if C.ndim == 1:
            C = C[:, None]
        if C.ndim != 2 or C.shape[0] == 0 or C.shape[1] == 0:
            raise ValueError("candidates must be a non-empty array of shape (n_candidates, "
                             "n_outputs) (or a 1-D array of scalar outputs); got shape "
                             f"{np.shape(candidates)}")
        if not np.all(np.isfinite(C)):
            raise ValueError("candidates contain NaN or infinite values")
        _, first, inverse = np.unique(C, axis=0, return_index=True, return_inverse=True)
        if len(first) != len(C):
            inverse = np.asarray(inverse).ravel()
            dup = next(i for i in range(len(C)) if first[inverse[i]] != i)
            raise ValueError(f"candidates must be distinct; row {dup} repeats row "
                             f"{first[inverse[dup]]} ({C[dup].tolist()})")
        C.flags.writeable = False
        self.candidates = C
        self.labels = check_item_labels(labels, len(C))
        keys = _row_keys(C)
        self._order = np.argsort(keys)
        self._sorted_keys = keys[self._order]

    @classmethod
    def from_classes(cls, classes) -> CandidateSpace:
        """Multiclass labels as scalar outputs: ``CandidateSpace(np.asarray(classes)[:, None])``.

        >>> CandidateSpace.from_classes([0, 1, 2]).candidates.ravel()
        array([0., 1., 2.])
        """
        classes = np.asarray(classes, dtype=float)
        if classes.ndim != 1:
            raise ValueError(f"classes must be 1-D; got shape {classes.shape}")
        return cls(classes[:, None])

    @property
    def n_outputs(self) -> int:
        return self.candidates.shape[1]

    @property
    def n_candidates(self) -> int:
        """Number of elements ``K`` of the space."""
        return self.candidates.shape[0]

    def _rows(self, Y, what: str) -> np.ndarray:
        Y = np.array(Y.toarray() if sp.issparse(Y) else Y, dtype=float, copy=True)
        d = self.n_outputs
        if Y.ndim == 1:  # a column of scalar outputs, else one row
            Y = Y[:, None] if d == 1 else Y[None, :]
        if Y.ndim != 2 or Y.shape[1] != d:
            raise ValueError(f"{what} must have shape (n, {d}); got shape {Y.shape}")
        return Y

    def index(self, Y) -> np.ndarray:
        """Position of each row of ``Y`` among the candidates, shape (n,) of int.

        Raises ``ValueError`` naming the first row that is not a candidate.
        """
        Y = self._rows(Y, "Y")
        found, k = self._find(Y)
        if not found.all():
            i = int(np.flatnonzero(~found)[0])
            shown = self.candidates[:5].tolist()
            more = " ..." if self.n_candidates > 5 else ""
            raise ValueError(f"row {i} of Y, {Y[i].tolist()}, is not one of the "
                             f"{self.n_candidates} candidates {shown}{more}")
        return k

    def _find(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether each row is a candidate, and its index (0 where it is not)."""
        keys = _row_keys(Y)
        pos = np.minimum(np.searchsorted(self._sorted_keys, keys), self.n_candidates - 1)
        found = self._sorted_keys[pos] == keys
        return found, np.where(found, self._order[pos], 0)

    def contains(self, Y) -> np.ndarray:
        """Whether each row of ``Y`` is one of the candidates, shape (n,)."""
        try:
            Y = self._rows(Y, "Y")
        except ValueError:
            return np.zeros(len(np.atleast_1d(Y)), dtype=bool)
        return self._find(Y)[0]

    def one_hot(self, Y) -> np.ndarray:
        """Indicator of each row's candidate, shape (n, K)."""
        idx = self.index(Y)
        E = np.zeros((len(idx), self.n_candidates))
        E[np.arange(len(idx)), idx] = 1.0
        return E

    def validate(self, Y) -> np.ndarray:
        Y = self._rows(Y, "Y")
        self.index(Y)
        return Y

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """The candidates, in their given order."""
        if self.n_candidates > max_outputs:
            raise ValueError(f"refusing to enumerate {self.n_candidates} candidates "
                             f"(max_outputs={max_outputs})")
        return self.candidates.copy()

    def argmin(self, C) -> np.ndarray:
        C = self.check_costs(C)
        return self.candidates[np.argmin(C @ self.candidates.T, axis=1)].copy()

    #: The cost form of the one-hot index of the candidate (:meth:`one_hot`; the 0-1 loss,
    #: :class:`ecrm.losses.ZeroOneLoss`): one cost per candidate.
    ONE_HOT = "one_hot"

    def minimize(self, C, form: str = OUTPUTS) -> np.ndarray:
        """:meth:`OutputSpace.minimize`; the form :attr:`ONE_HOT` (costs of shape (n, K))
        picks the candidate of least cost, the first one on ties."""
        if form != self.ONE_HOT:
            return super().minimize(C, form)
        C = self.check_costs(C, self.n_candidates, ", one per candidate")
        return self.candidates[np.argmin(C, axis=1)].copy()

    def __eq__(self, other) -> bool:
        return (isinstance(other, CandidateSpace) and other.labels == self.labels
                and np.array_equal(self.candidates, other.candidates))

    def __hash__(self) -> int:
        return hash((self.candidates.tobytes(), self.labels))

    def __repr__(self) -> str:
        named = "" if self.labels is None else " named"
        return f"CandidateSpace(<{self.n_candidates}{named} candidates in R^{self.n_outputs}>)"
