r"""Label ranking: permutations of ``k`` items in the assignment embedding (paper, Example 2).

A ranking :math:`\sigma` of items :math:`0, \dots, k-1` (``sigma[j]`` is the position of item
``j``, 0 = first) is the permutation matrix :math:`P_{jl} = \mathbb 1(\sigma(j) = l)`,
flattened row-major to an output vector :math:`y` of width ``n_outputs`` :math:`= k^2`. The
set of such vectors is the set of perfect matchings of the complete bipartite graph (items x
positions),

.. math:: \textstyle\sum_l P_{jl} = 1 \;\forall j, \qquad \sum_j P_{jl} = 1 \;\forall l,
          \qquad P \in \{0, 1\}^{k \times k},

whose constraint matrix is totally unimodular; the linear oracle
:math:`\arg\min_y \langle c, y\rangle` is the min-cost assignment problem, solved exactly by
:func:`scipy.optimize.linear_sum_assignment` in :math:`O(k^3)` per row, or, for
:math:`k \le` ``ENUMERATE_MAX_ITEMS``, for a whole batch as the smallest entry of each row of
:math:`C P^\top` over all :math:`k!` permutation matrices :math:`P`.

**Incomplete rankings.** A training ranking may order only the ``m`` labels it observes: its
rank vector holds ``-1`` for a missing label and ``0 .. m-1`` for the observed ones, its
matrix a row of ``NaN`` for a missing label. The pairwise losses
(:class:`ecrm.losses.KendallLoss`) count only the pairs of two observed labels; the losses of
absolute positions refuse incomplete references. :meth:`validate` accepts incomplete
rankings (training outputs); :meth:`contains` and the oracle's answers are complete.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from ecrm.estimators._validation import check_int
from ecrm.spaces.base import OUTPUTS, OutputSpace, check_binary_matrix, check_item_labels

__all__ = ["ENUMERATE_MAX_ITEMS", "PermutationSpace", "check_ranks"]

#: Largest ``k`` whose batched oracle enumerates the ``k!`` permutations (auto method).
ENUMERATE_MAX_ITEMS = 6
#: Rows x permutations per product of the enumeration oracle (bounds its memory).
_CHUNK_ELEMENTS = 1 << 20


def check_ranks(R, n_items: int | None = None, what: str = "ranks", *,
                allow_missing: bool = False) -> np.ndarray:
    """Return ``R`` as an int array (n, k) whose rows are permutations of ``0..k-1``.

    With ``allow_missing``, a row may be incomplete: ``-1`` for a missing label, the ``m``
    observed labels at positions ``0..m-1`` (at least one observed). Raises ``ValueError``
    naming the first row that is not a (possibly incomplete) ranking and why.

    >>> check_ranks([[1, -1, 0]], allow_missing=True).tolist()
    [[1, -1, 0]]
    """
    R = np.asarray(R)
    R = R[None, :] if R.ndim == 1 else R
    if R.ndim != 2 or (n_items is not None and R.shape[1] != n_items):
        want = "k" if n_items is None else n_items
        raise ValueError(f"{what} must have shape (n, {want}); got shape {R.shape}")
    Rf = np.asarray(R, dtype=float)
    if not np.all(np.isfinite(Rf)) or np.any(Rf != np.round(Rf)):
        i = int(np.argwhere(~np.isfinite(Rf) | (Rf != np.round(Rf)))[0, 0])
        raise ValueError(f"{what} row {i}, {Rf[i].tolist()}, is not a permutation: "
                         "non-integer entries")
    R = Rf.astype(int)
    seen = R >= 0 if allow_missing else np.ones(R.shape, dtype=bool)
    m = seen.sum(axis=1)
    # the observed positions sorted, missing ones (-1) first: then 0..m-1 must follow them
    expected = np.arange(R.shape[1])[None, :] - (R.shape[1] - m)[:, None]
    ok = np.where(expected >= 0, np.sort(R, axis=1) == expected, True) & (m >= 1)[:, None]
    if not ok.all():
        i = int(np.flatnonzero(~ok.all(axis=1))[0])
        values, counts = np.unique(R[i][seen[i]], return_counts=True)
        if m[i] == 0:
            why = "no label is ranked"
        elif np.any(counts > 1):
            why = f"position {int(values[counts > 1][0])} is used more than once"
        elif allow_missing:
            why = (f"the {m[i]} ranked labels must hold positions 0..{m[i] - 1} (-1: a "
                   f"missing label)")
        else:
            why = f"positions must be 0..{R.shape[1] - 1}"
        raise ValueError(f"{what} row {i}, {R[i].tolist()}, is not a permutation: {why}")
    return R


class PermutationSpace(OutputSpace):
    r"""Rankings of ``n_items`` items as flattened ``n_items x n_items`` permutation matrices.

    An output is a row ``y`` of width ``n_outputs = n_items**2`` with
    ``y.reshape(n_items, n_items)[j, l] == 1`` iff item ``j`` is at position ``l``
    (0 = first). Use :meth:`from_ranks` / :meth:`to_ranks` to convert from and to rank
    vectors of width ``n_items``, and :meth:`from_scores` to rank items by decreasing score.

    Parameters
    ----------
    n_items : int
        Number of items (labels) ``k >= 1`` to rank.
    labels : sequence of str, optional
        A name for each item, in item order (``ecrm predict`` writes rankings with them,
        ``a>c>b``; without names it writes the item numbers ``0 .. k-1``). Part of the
        space: spaces with other names are different spaces.

    Examples
    --------
    >>> space = PermutationSpace(3)
    >>> space.n_items, space.n_outputs
    (3, 9)
    >>> Y = space.from_ranks([[2, 0, 1]])
    >>> Y.reshape(3, 3)
    array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 1., 0.]])
    >>> space.to_ranks(space.argmin(-Y))
    array([[2, 0, 1]])
    """

    def __init__(self, n_items: int, labels=None):
        self.n_items = check_int(n_items, "n_items")
        self.labels = check_item_labels(labels, self.n_items)

    @classmethod
    def from_n_outputs(cls, n_outputs: int) -> PermutationSpace:
        """The permutation space whose outputs have width ``n_outputs`` (a perfect square).

        >>> PermutationSpace.from_n_outputs(16)
        PermutationSpace(4)
        """
        k = math.isqrt(check_int(n_outputs, "n_outputs"))
        if k * k != n_outputs:
            raise ValueError("ranking outputs are flattened k x k permutation matrices; width "
                             f"{n_outputs} is not a perfect square")
        return cls(k)

    @property
    def n_outputs(self) -> int:
        return self.n_items**2

    def from_ranks(self, R) -> np.ndarray:
        """Flattened permutation matrices (n, k*k) of rank vectors ``R`` (n, k); ``-1`` marks a
        missing label of an incomplete ranking (its row of the matrix NaN; module docstring).

        >>> PermutationSpace(2).from_ranks([[-1, 0]])
        array([[nan, nan,  1.,  0.]])
        """
        R = check_ranks(R, self.n_items, allow_missing=True)
        n, k = R.shape
        Y = np.zeros((n, k, k))
        rows, labels = np.nonzero(R >= 0)
        Y[rows, labels, R[rows, labels]] = 1.0
        Y[R < 0] = np.nan
        return Y.reshape(n, k * k)

    def to_ranks(self, Y) -> np.ndarray:
        """Rank vectors (n, k) of flattened permutation matrices ``Y`` (n, k*k); ``-1`` for
        the missing labels of an incomplete ranking."""
        Y = self.validate(Y)
        k = self.n_items
        M = Y.reshape(len(Y), k, k)
        return np.where(np.isnan(M[:, :, 0]), -1, np.argmax(np.nan_to_num(M), axis=2))

    def from_scores(self, S) -> np.ndarray:
        """Rank items by decreasing score (ties by item index): outputs of shape (n, k*k)."""
        S = np.asarray(S, dtype=float)
        S = S[None, :] if S.ndim == 1 else S
        if S.ndim != 2 or S.shape[1] != self.n_items:
            raise ValueError(f"scores must have shape (n, {self.n_items}); got {S.shape}")
        order = np.argsort(-S, axis=1, kind="stable")
        return self.from_ranks(np.argsort(order, axis=1))

    def validate(self, Y) -> np.ndarray:
        k = self.n_items
        Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=float)
        Y = Y[None, :] if Y.ndim == 1 else Y
        if Y.ndim != 2 or Y.shape[1] != k * k:
            raise ValueError(f"Y must have shape (n, {k * k}) (flattened {k}x{k} permutation "
                             f"matrices; use from_ranks for rank vectors); got shape {Y.shape}")
        M = Y.reshape(len(Y), k, k)
        nan = np.isnan(M)
        missing = nan.all(axis=2)  # the rows of the labels an incomplete ranking leaves out
        partly = nan.any(axis=2) & ~missing
        if partly.any():
            i, j = np.argwhere(partly)[0]
            raise ValueError(f"row {i} of Y: item {j} has NaN and non-NaN entries (a missing "
                             f"item of an incomplete ranking has its whole row NaN)")
        check_binary_matrix(np.where(np.isnan(Y), 0.0, Y), k * k)
        m = k - missing.sum(axis=1)  # observed items: at positions 0..m-1
        if np.any(m == 0):
            raise ValueError(f"row {int(np.flatnonzero(m == 0)[0])} of Y ranks no item (every "
                             f"entry NaN)")
        Z = np.where(nan, 0.0, M)
        want = (np.arange(k)[None, :] < m[:, None]).astype(float)
        for counts, expected, what in (
                (Z.sum(axis=2), 1.0 - missing, "item {j} has {v} positions"),
                (Z.sum(axis=1), want, "position {j} holds {v} items")):
            if np.any(counts != expected):
                i, j = np.argwhere(counts != expected)[0]
                extra = "" if m[i] == k else f" ({m[i]} observed items: positions 0..{m[i] - 1})"
                raise ValueError(f"row {i} of Y is not a permutation matrix: "
                                 + what.format(j=j, v=int(counts[i, j])) + extra)
        return Y.copy()

    def _contains_rows(self, Y) -> np.ndarray:
        """Whether each row of ``Y`` is a flattened permutation matrix, shape (n,)."""
        M = Y.reshape(len(Y), self.n_items, self.n_items)
        return (np.all((Y == 0) | (Y == 1), axis=1) & np.all(M.sum(axis=1) == 1, axis=1)
                & np.all(M.sum(axis=2) == 1, axis=1))

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """Every permutation matrix (flattened), in lexicographic order of the rank vectors."""
        if math.factorial(self.n_items) > max_outputs:
            raise ValueError(f"refusing to enumerate {self.n_items}! permutations "
                             f"(max_outputs={max_outputs})")
        return self.from_ranks(np.array(list(itertools.permutations(range(self.n_items)))))

    def argmin(self, C, method: str = "auto") -> np.ndarray:
        """Exact minimisers of :math:`\\langle c, y\\rangle` over permutation matrices, per row.

        Parameters
        ----------
        C : array-like of shape (n, k*k) or (k*k,)
            Costs of any sign; ``C[i, j*k + l]`` is the cost of placing item ``j`` at
            position ``l``.
        method : {"auto", "assignment", "enumerate"}, default="auto"
            ``"assignment"``: :func:`scipy.optimize.linear_sum_assignment` per row;
            ``"enumerate"``: the smallest of the :math:`k!` values of each row (the first
            permutation in lexicographic order of the rank vectors on ties; :math:`k \\le
            8`); ``"auto"``: enumerate for :math:`k \\le` ``ENUMERATE_MAX_ITEMS``, else
            assignment. Both are exact; they may pick different minimisers on (near-)ties.

        Returns
        -------
        Y : ndarray of shape (n, k*k)

        Examples
        --------
        >>> space = PermutationSpace(3)
        >>> C = [[0, 1, 2, 2, 0, 1, 1, 2, 0]]  # every item prefers its own position
        >>> space.to_ranks(space.argmin(C)), space.to_ranks(space.argmin(C, "assignment"))
        (array([[0, 1, 2]]), array([[0, 1, 2]]))
        """
        C = self.check_costs(C)
        k = self.n_items
        if method not in ("auto", "assignment", "enumerate"):
            raise ValueError(f"method must be 'auto', 'assignment' or 'enumerate'; got "
                             f"{method!r}")
        if method == "enumerate" and k > 8:
            raise ValueError(f"method='enumerate' is for at most 8 items; got {k}")
        if method == "enumerate" or (method == "auto" and k <= ENUMERATE_MAX_ITEMS):
            P = _permutation_matrices(k)
            chunk = max(1, _CHUNK_ELEMENTS // len(P))
            best = np.concatenate([np.argmin(C[i:i + chunk] @ P.T, axis=1)
                                   for i in range(0, len(C), chunk)] or [np.zeros(0, int)])
            return P[best]
        Y = np.zeros((len(C), k, k))
        for i, c in enumerate(C):
            rows, cols = linear_sum_assignment(c.reshape(k, k))
            Y[i, rows, cols] = 1.0
        return Y.reshape(len(C), k * k)

    #: The cost form of Kendall's distance (:class:`ecrm.losses.KendallLoss`): a cost per
    #: label pair ``a < b`` (row-major, as :func:`numpy.triu_indices`) for ranking ``a``
    #: before ``b``.
    PAIR_ORDERS = "pair_orders"

    def minimize(self, C, form: str = OUTPUTS) -> np.ndarray:
        r""":meth:`OutputSpace.minimize`; the form :attr:`PAIR_ORDERS` minimises
        :math:`\sum_{a<b} c_{ab}\,\mathbb 1(\sigma(a) < \sigma(b))`, a weighted Kemeny
        aggregation, exactly by the linear ordering problem
        (:func:`ecrm.spaces.linear_ordering.linear_ordering`).

        Parameters
        ----------
        C : array-like of shape (n, n_outputs), or (n, k(k-1)/2) for :attr:`PAIR_ORDERS`
        form : str, default="outputs"

        Returns
        -------
        Y : ndarray of shape (n, k*k)
            Flattened permutation matrices.
        """
        if form != self.PAIR_ORDERS:
            return super().minimize(C, form)
        from ecrm.spaces.linear_ordering import linear_ordering

        k = self.n_items
        C = self.check_costs(C, k * (k - 1) // 2, f" (one per label pair of {self!r})")
        B = np.zeros((len(C), k, k))
        a, b = np.triu_indices(k, 1)
        B[:, a, b] = C
        orders = linear_ordering(B).solution
        return self.from_ranks(np.argsort(orders, axis=1))

    def __eq__(self, other) -> bool:
        return (isinstance(other, PermutationSpace) and other.n_items == self.n_items
                and other.labels == self.labels)

    def __hash__(self) -> int:
        return hash(("PermutationSpace", self.n_items, self.labels))

    def __repr__(self) -> str:
        named = "" if self.labels is None else f", labels={list(self.labels)!r}"
        return f"PermutationSpace({self.n_items}{named})"


@functools.cache
def _permutation_matrices(k: int) -> np.ndarray:
    """Every flattened k x k permutation matrix (k!, k*k), in lexicographic order of ranks."""
    R = np.array(list(itertools.permutations(range(k))), dtype=np.int64).reshape(-1, k)
    M = np.zeros((len(R), k, k))
    M[np.arange(len(R))[:, None], np.arange(k)[None, :], R] = 1.0
    Y = M.reshape(len(R), k * k)
    Y.flags.writeable = False
    return Y
