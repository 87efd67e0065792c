r"""Label ranking: permutations of ``d`` labels in the assignment embedding (paper, Example 2).

A ranking :math:`\sigma` of labels :math:`0, \dots, d-1` (``sigma[j]`` is the position of label
``j``, 0 = first) is the permutation matrix :math:`y_{jk} = \mathbb 1(\sigma(j) = k)`,
flattened row-major to a vector of length :math:`d^2`. The set of such vectors is the set of
perfect matchings of the complete bipartite graph (labels x positions),

.. math:: \textstyle\sum_k y_{jk} = 1 \;\forall j, \qquad \sum_j y_{jk} = 1 \;\forall k,
          \qquad y \in \{0, 1\}^{d^2},

whose constraint matrix is totally unimodular; the linear oracle
:math:`\arg\min_y \langle c, y\rangle` is the min-cost assignment problem, solved exactly by
:func:`scipy.optimize.linear_sum_assignment` in :math:`O(d^3)`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from ecrm.spaces.base import OutputSpace


def check_ranks(R, n_labels: int | None = None, what: str = "ranks") -> np.ndarray:
    """Return ``R`` as an int array (n, d) whose rows are permutations of ``0..d-1``.

    Raises ``ValueError`` naming the first row that is not a permutation and why.
    """
    R = np.asarray(R)
    if R.ndim == 1:
        R = R[None, :]
    if R.ndim != 2 or (n_labels is not None and R.shape[1] != n_labels):
        want = "d" if n_labels is None else n_labels
        raise ValueError(f"{what} must have shape (n, {want}); got shape {R.shape}")
    d = R.shape[1]
    Rf = np.asarray(R, dtype=float)
    if not np.all(np.isfinite(Rf)) or np.any(Rf != np.round(Rf)):
        i = int(np.argwhere(~np.isfinite(Rf) | (Rf != np.round(Rf)))[0, 0])
        raise ValueError(f"{what} row {i}, {Rf[i].tolist()}, is not a permutation: "
                         "non-integer entries")
    R = Rf.astype(int)
    ok = np.sort(R, axis=1) == np.arange(d)
    if not ok.all():
        i = int(np.flatnonzero(~ok.all(axis=1))[0])
        values, counts = np.unique(R[i], return_counts=True)
        if np.any(counts > 1):
            why = f"position {int(values[counts > 1][0])} is used more than once"
        else:
            why = f"positions must be 0..{d - 1}"
        raise ValueError(f"{what} row {i}, {R[i].tolist()}, is not a permutation: {why}")
    return R


class PermutationSpace(OutputSpace):
    r"""Rankings of ``n_labels`` labels as flattened permutation matrices (length ``d**2``).

    Outputs are rows ``y`` with ``y.reshape(d, d)[j, k] == 1`` iff label ``j`` is at position
    ``k`` (0 = first). Use :meth:`from_ranks` / :meth:`to_ranks` to convert from and to rank
    vectors, and :meth:`from_scores` to rank labels by decreasing score.

    Parameters
    ----------
    n_labels : int
        Number of labels ``d >= 1``.

    Examples
    --------
    >>> space = PermutationSpace(3)
    >>> Y = space.from_ranks([[2, 0, 1]])
    >>> Y.reshape(3, 3)
    array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 1., 0.]])
    >>> space.to_ranks(space.argmin(-Y))
    array([[2, 0, 1]])
    """

    def __init__(self, n_labels: int):
        if isinstance(n_labels, bool) or int(n_labels) != n_labels or n_labels < 1:
            raise ValueError(f"n_labels must be a positive integer; got {n_labels!r}")
        self.n_labels = int(n_labels)

    @property
    def n_outputs(self) -> int:
        return self.n_labels**2

    # -- conversions ------------------------------------------------------------------
    def from_ranks(self, R) -> np.ndarray:
        """Flattened permutation matrices (n, d*d) of rank vectors ``R`` (n, d)."""
        R = check_ranks(R, self.n_labels)
        n, d = R.shape
        Y = np.zeros((n, d, d))
        Y[np.arange(n)[:, None], np.arange(d)[None, :], R] = 1.0
        return Y.reshape(n, d * d)

    def to_ranks(self, Y) -> np.ndarray:
        """Rank vectors (n, d) of flattened permutation matrices ``Y`` (n, d*d)."""
        Y = self.validate(Y)
        d = self.n_labels
        return np.argmax(Y.reshape(len(Y), d, d), axis=2)

    def from_scores(self, S) -> np.ndarray:
        """Rank labels by decreasing score (ties by label index): outputs of shape (n, d*d)."""
        S = np.asarray(S, dtype=float)
        if S.ndim == 1:
            S = S[None, :]
        if S.ndim != 2 or S.shape[1] != self.n_labels:
            raise ValueError(f"scores must have shape (n, {self.n_labels}); got {S.shape}")
        order = np.argsort(-S, axis=1, kind="stable")
        return self.from_ranks(np.argsort(order, axis=1))

    # -- the output-space interface ---------------------------------------------------
    def validate(self, Y) -> np.ndarray:
        if sp.issparse(Y):
            Y = Y.toarray()
        Y = np.array(Y, dtype=float, copy=True)
        d = self.n_labels
        if Y.ndim == 1:
            Y = Y[None, :]
        if Y.ndim != 2 or Y.shape[1] != d * d:
            raise ValueError(
                f"Y must have shape (n, {d * d}) (flattened {d}x{d} permutation matrices; "
                f"use from_ranks for rank vectors); got shape {Y.shape}"
            )
        bad = ~((Y == 0) | (Y == 1))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"row {i} of Y is not a permutation matrix: entry {j} is {Y[i, j]!r}"
                             ", not 0 or 1")
        M = Y.reshape(len(Y), d, d)
        rows, cols = M.sum(axis=2), M.sum(axis=1)
        for i in range(len(Y)):
            if np.any(rows[i] != 1):
                j = int(np.flatnonzero(rows[i] != 1)[0])
                raise ValueError(f"row {i} of Y is not a permutation matrix: label {j} has "
                                 f"{int(rows[i, j])} positions")
            if np.any(cols[i] != 1):
                k = int(np.flatnonzero(cols[i] != 1)[0])
                raise ValueError(f"row {i} of Y is not a permutation matrix: position {k} "
                                 f"holds {int(cols[i, k])} labels")
        return Y

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """Every permutation matrix (flattened), in lexicographic order of the rank vectors."""
        if math.factorial(self.n_labels) > max_outputs:
            raise ValueError(f"refusing to enumerate {self.n_labels}! permutations "
                             f"(max_outputs={max_outputs})")
        return self.from_ranks(np.array(list(itertools.permutations(range(self.n_labels)))))

    def argmin(self, C) -> np.ndarray:
        C = self.check_costs(C)
        d = self.n_labels
        Y = np.zeros((len(C), d, d))
        for i, c in enumerate(C):
            rows, cols = linear_sum_assignment(c.reshape(d, d))
            Y[i, rows, cols] = 1.0
        return Y.reshape(len(C), d * d)

    def __eq__(self, other) -> bool:
        return isinstance(other, PermutationSpace) and other.n_labels == self.n_labels

    def __hash__(self) -> int:
        return hash(("PermutationSpace", self.n_labels))

    def __repr__(self) -> str:
        return f"PermutationSpace({self.n_labels})"
