r"""Bucket orders (rankings with ties) of ``k`` labels, with an exact linear oracle.

A *bucket order* splits the labels into ordered buckets: labels in the same bucket are tied,
a label in an earlier bucket is strictly ahead of every label in a later one. It is written
as its **positions**, an int vector of length ``k`` (``1`` = the top bucket, equal numbers
tied; the numbers need not be consecutive) and embedded as its **ordered-pair indicators**

.. math:: u_{ab}(y) = \mathbb 1(a \text{ strictly ahead of } b), \qquad a \ne b,

a 0/1 vector of length ``k(k-1)`` in the order of :func:`pair_index` (row-major over
``(a, b)``, ``a != b``). A tied pair has :math:`u_{ab} = u_{ba} = 0`. The vectors ``u`` of
bucket orders are exactly the 0/1 vectors with

.. math:: u_{ab} + u_{ba} \le 1, \qquad u_{ab} \le u_{ac} + u_{cb}
          \quad (a, b, c \text{ distinct})

(asymmetry and negative transitivity: if ``a`` is ahead of ``b``, every ``c`` is behind
``a`` or ahead of ``b``; transitivity and the transitivity of ties follow).

**Incomplete rankings.** Position ``0`` marks a missing label: the pairs involving it are
not observed and are ``NaN`` in ``u`` (:func:`bucket_order_to_pairs`). Training outputs may
be incomplete (:meth:`BucketOrderSpace.validate` accepts them; the losses of
:mod:`ecrm.losses.bucket` count only observed pairs); the oracle's answers never are.

**The oracle.** For pairwise costs :math:`c` of any sign, :func:`optimal_bucket_order` finds
a bucket order minimising :math:`\langle u(y), c\rangle = \sum_{a \text{ ahead of } b} c_{ab}`
(the optimal bucket order problem) exactly, in three steps:

1. **Decomposition** (exact), as for the linear ordering problem
   (:mod:`ecrm.spaces.linear_ordering`), with ``a`` *beating* ``b`` when :math:`c_{ab} <
   \min(c_{ba}, 0)`: moving the buckets of a set ``A`` that beats every label outside it to
   the front changes only pairs ``a in A, b not in A`` from ``b`` ahead (:math:`c_{ba}`) or
   tied (0) to :math:`c_{ab}`, lower than both.
2. **Dynamic programming over subsets** for blocks of at most ``max_dp_size`` labels. Let
   :math:`g(P)` be the least cost of the pairs ``a ahead of b`` with ``a`` in a top part
   :math:`P` of the order, and :math:`w_P(a) = \sum_{b \notin P} c_{ab}`. The last bucket
   of :math:`P` is :math:`P \setminus Q` for some :math:`Q \subsetneq P`, so

   .. math:: g(\emptyset) = 0, \qquad g(P) = w_P(P) + \min_{Q \subsetneq P}
             \big[g(Q) - w_P(Q)\big],

   with :math:`w_P(Q) = \sum_{a \in Q} w_P(a)`; :math:`g(V)` is the optimum, in
   :math:`O(3^k)` work per row (:mod:`ecrm.spaces._bucket_solvers`: compiled with numba, the
   ``fast`` extra, with an exact pruning bound; else vectorised with NumPy). Rows are scaled
   by a power of two first (exact).
3. **Mixed-integer programming** (HiGHS through :func:`scipy.optimize.milp`) for larger
   blocks: binary :math:`u_{ab}`, the constraints above, costs scaled by a power of two to
   an l1 norm near :math:`2^{20}` (:func:`ecrm.spaces._scaling.highs_costs`), a zero relative
   gap; the result carries HiGHS's dual bound (a :class:`CertifiedResult`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.sparse as sp

from ecrm.estimators._validation import check_int
from ecrm.spaces import _bucket_solvers
from ecrm.spaces.base import CertifiedResult, OutputSpace, check_item_labels
from ecrm.spaces.linear_ordering import dominating_blocks

__all__ = ["MAX_DP_SIZE", "BucketOrderSpace", "bucket_order_to_pairs", "check_positions",
           "n_bucket_orders", "optimal_bucket_order", "pair_index", "pairs_to_bucket_order"]

#: Default largest block solved by dynamic programming (above it: the MILP).
MAX_DP_SIZE = 16
#: Elements per block of rows when checking pair vectors as k x k matrices.
_CHUNK = 1 << 20


def n_bucket_orders(k: int) -> int:
    """The number of bucket orders of ``k`` labels (the ordered Bell or Fubini number).

    >>> [n_bucket_orders(k) for k in range(1, 9)]
    [1, 3, 13, 75, 541, 4683, 47293, 545835]
    """
    a = [1]
    for m in range(1, k + 1):
        a.append(sum(math.comb(m, j) * a[m - j] for j in range(1, m + 1)))
    return a[k]


@functools.cache
def pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ordered pairs ``(a, b)``, ``a != b``, of the pair vectors: row-major over ``(a, b)``.

    Returns ``(first, second)``, two read-only int arrays of length ``k(k-1)``; coordinate
    ``first[t] * (k - 1) + second[t] - (second[t] > first[t])`` is ``t``.

    >>> pair_index(3)
    (array([0, 0, 1, 1, 2, 2]), array([1, 2, 0, 2, 0, 1]))
    """
    a, b = np.nonzero(~np.eye(k, dtype=bool))
    for x in (a, b):
        x.flags.writeable = False
    return a, b


def _width_labels(d: int) -> int:
    k = (1 + math.isqrt(1 + 4 * d)) // 2
    if k * (k - 1) != d or k < 2:
        raise ValueError(f"bucket orders are vectors of k(k-1) ordered-pair indicators; width "
                         f"{d} is not k(k-1) for any k >= 2")
    return k


def check_positions(positions, n_labels: int | None = None, *, what="positions",
                    allow_missing=True) -> np.ndarray:
    """``positions`` as an int array (n, k) of bucket numbers >= 1 (0: a missing label)."""
    P = np.asarray(positions)
    P = P[None, :] if P.ndim == 1 else P
    if P.ndim != 2 or (n_labels is not None and P.shape[1] != n_labels):
        want = "k" if n_labels is None else n_labels
        raise ValueError(f"{what} must have shape (n, {want}); got shape {P.shape}")
    Pf = np.asarray(P, dtype=float)
    low = 0 if allow_missing else 1
    bad = ~np.isfinite(Pf) | (Pf != np.round(Pf)) | (Pf < low)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"{what} row {i}, label {j}: {P[i, j]!r} is not a bucket number "
                         f"(integers >= 1, 1 = top{', 0 = missing' if allow_missing else ''})")
    return Pf.astype(np.int64)


def bucket_order_to_pairs(positions) -> np.ndarray:
    """Pair vectors (n, k(k-1)) of bucket orders given as positions (n, k).

    Entry ``(a, b)`` is 1 when ``positions[a] < positions[b]`` (``a`` strictly ahead), 0
    otherwise, and ``NaN`` when ``a`` or ``b`` is missing (position 0).

    >>> bucket_order_to_pairs([[1, 2, 2], [2, 0, 1]])
    array([[ 1.,  1.,  0.,  0.,  0.,  0.],
           [nan,  0., nan, nan,  1., nan]])
    """
    P = check_positions(positions)
    a, b = pair_index(P.shape[1])
    U = (P[:, a] < P[:, b]).astype(float)
    U[(P[:, a] == 0) | (P[:, b] == 0)] = np.nan
    return U


def pairs_to_bucket_order(U) -> np.ndarray:
    """Positions (n, k) of pair vectors (n, k(k-1)): dense bucket numbers 1, 2, ...; 0 for a
    missing label (all its pairs NaN; a row ranking a single label has no pair and reads back
    as all missing). Raises ``ValueError`` on a vector that is no bucket order.

    >>> pairs_to_bucket_order(bucket_order_to_pairs([[3, 1, 3, 0]]))
    array([[2, 1, 2, 0]])
    """
    U = np.atleast_2d(np.asarray(U, dtype=float))
    positions, _, message = _check_pairs(U, _width_labels(U.shape[1]), True)
    if message is not None:
        raise ValueError(message)
    return positions


def _positions(A: np.ndarray, k: int) -> np.ndarray:
    """Dense positions of valid pair matrices (n, k, k): a label's bucket number is one plus
    the number of distinct counts of labels ahead below its own; 0 for a missing label."""
    missing = np.isnan(A).all(axis=2)
    ahead = np.nansum(A, axis=1)  # labels strictly ahead of each label
    ahead[missing] = np.inf
    order = np.sort(ahead, axis=1)
    new = np.concatenate([np.ones((len(A), 1), bool), order[:, 1:] != order[:, :-1]], axis=1)
    distinct = np.where(np.isfinite(order), np.cumsum(new, axis=1), 0)
    rank = np.take_along_axis(distinct, np.argsort(np.argsort(ahead, axis=1, kind="stable"),
                                                   axis=1), axis=1)
    return np.where(missing, 0, rank).astype(np.int64)


def _check_pairs(U: np.ndarray, k: int, allow_missing: bool, names=None):
    """``(positions, ok, message)``: the positions (n, k) of ``U``, whether each row is a
    (possibly incomplete) bucket order, and the message of the first row that is not (or
    None). Rows are checked in blocks (matrices of k x k per row)."""
    step = max(1, _CHUNK // (k * k))
    positions, ok, message = np.zeros((len(U), k), dtype=np.int64), np.ones(len(U), bool), None
    for lo in range(0, len(U), step):
        A = np.full((len(U[lo:lo + step]), k, k), np.nan)  # pair matrices, NaN diagonal
        A[:, pair_index(k)[0], pair_index(k)[1]] = U[lo:lo + step]
        for mask, why in _problems(A, k, allow_missing):
            rows = mask.any(axis=(1, 2))
            if message is None and rows.any():
                i = int(np.flatnonzero(rows)[0])
                a, b = np.argwhere(mask[i])[0]
                name = (lambda j: repr(names[j])) if names is not None else str
                message = (f"row {lo + i} of the pair vectors: pair ({name(a)}, {name(b)}) "
                           + why.format(v=A[i, a, b]))
            ok[lo:lo + step] &= ~rows
        positions[lo:lo + step] = _positions(A, k)
    return positions, ok, message


def _problems(A: np.ndarray, k: int, allow_missing: bool):
    """(mask (n, k, k), why) of each kind of problem of the pair matrices ``A``."""
    off = ~np.eye(k, dtype=bool)
    nan = np.isnan(A) & off
    bad_value = ~nan & off & (A != 0) & (A != 1)
    yield bad_value, "{v!r} is not 0, 1 or NaN (unobserved)"
    missing = (nan | ~off).all(axis=2)
    if not allow_missing:
        yield nan, "is NaN: an incomplete ranking is not an output of the space"
    expected = (missing[:, :, None] | missing[:, None, :]) & off
    yield nan != expected, ("is NaN but neither label is missing (an incomplete ranking "
                            "leaves labels out: every pair of a missing label NaN, no other)")
    Z = np.where(nan | bad_value, 0.0, A)
    np.einsum("ijj->ij", Z)[...] = 0.0
    yield (Z == 1) & (Z.transpose(0, 2, 1) == 1), "and its reverse are both 1"
    ahead = Z.sum(axis=1)
    implied = (ahead[:, :, None] < ahead[:, None, :]) & ~expected & off
    yield (Z == 1) != implied, "breaks transitivity: the row is not a ranking with ties"


def _milp(B: np.ndarray, time_limit):
    U, gap, ok = _bucket_solvers.milp(B, time_limit)
    positions, _, message = _check_pairs(U, B.shape[1], False)
    if message is not None:  # HiGHS's rounded answer: never expected, never passed on
        raise RuntimeError(f"the MILP's answer is not a bucket order: {message}")
    return positions, gap, ok


def _solve_blocks(B, max_dp_size, time_limit):
    n, k, _ = B.shape
    wins = B < np.minimum(B.transpose(0, 2, 1), 0.0)  # a beats b: B_ab < min(B_ba, 0)
    np.einsum("ijj->ij", wins)[...] = False
    order, starts, (rows, cols, sizes) = dominating_blocks(wins)
    local = np.ones((n, k), dtype=np.int64)  # positions inside each block, sorted coordinates
    gap, ok = np.zeros(n), np.ones(n, dtype=bool)
    largest = np.ones(n, dtype=np.int64)
    for s in np.unique(sizes[sizes > 1]):
        r, c = rows[sizes == s], cols[sizes == s]
        items = order[r[:, None], c[:, None] + np.arange(s)]
        sub = B[r[:, None, None], items[:, :, None], items[:, None, :]]
        if s <= max_dp_size:
            pos = _bucket_solvers.dp(sub)
        else:
            pos, g, o = _milp(sub, time_limit)
            np.add.at(gap, r, g)
            ok[r] &= o
        local[r[:, None], c[:, None] + np.arange(s)] = pos
        np.maximum.at(largest, r, s)
    block = np.cumsum(starts, axis=1) - 1
    every = np.broadcast_to(np.arange(n)[:, None], (n, k))
    n_buckets = np.zeros((n, k), dtype=np.int64)
    np.maximum.at(n_buckets, (every, block), local)
    offset = np.cumsum(n_buckets, axis=1) - n_buckets
    positions = np.empty((n, k), dtype=np.int64)
    positions[every, order] = local + offset[every, block]
    return positions, gap, ok, largest


def optimal_bucket_order(C, *, method: str = "auto", max_dp_size: int = MAX_DP_SIZE,
                         time_limit: float | None = None) -> CertifiedResult:
    r"""Exact minimisers of :math:`\sum_{a \text{ ahead of } b} c_{ab}` over bucket orders.

    Parameters
    ----------
    C : array-like of shape (n, k(k-1)) or (n, k, k)
        Pairwise costs, any sign: pair vectors in the order of :func:`pair_index`, or
        matrices with ``C[i, a, b]`` the cost of ``a`` strictly ahead of ``b`` (diagonal
        ignored). A tied pair costs 0.
    method : {"auto", "dp", "milp"}, default="auto"
        ``"auto"`` splits each row into blocks (module docstring) and solves each by dynamic
        programming if it has at most ``max_dp_size`` labels, else by MILP; ``"dp"`` and
        ``"milp"`` solve every row whole by that method.
    max_dp_size : int, default=16
        Largest block of the dynamic programme (:math:`O(3^s)` per row).
    time_limit : float, optional
        Seconds per MILP; a MILP stopped by it returns its best order, uncertified.

    Returns
    -------
    result : CertifiedResult
        ``solution`` (n, k) int: dense positions (1 = top); ``value`` (n,): its cost;
        ``bound`` (n,): a proven lower bound (``value`` minus the MILPs' gaps); ``certified``;
        ``method`` per row (``"dp"``, or ``"milp"`` when its largest block was);
        ``info["largest_block"]`` (n,).

    Examples
    --------
    >>> C = [[-1.0, 0.25, 3.0, 0.5, 0.5, 4.0]]  # pairs (0,1) (0,2) (1,0) (1,2) (2,0) (2,1)
    >>> res = optimal_bucket_order(C)  # 0 ahead of 1 pays for 0 ahead of 2; 1 and 2 tied
    >>> res.solution, res.value
    (array([[1, 2, 2]]), array([-0.75]))
    """
    C = np.asarray(C, dtype=float)
    C = C[None] if C.ndim == 1 else C
    if C.ndim == 2:
        k = _width_labels(C.shape[1])
        B = np.zeros((len(C), k, k))
        B[:, pair_index(k)[0], pair_index(k)[1]] = C
    elif C.ndim == 3 and C.shape[1] == C.shape[2]:
        B = C.copy()
        np.einsum("ijj->ij", B)[...] = 0.0
    else:
        raise ValueError(f"C must have shape (n, k(k-1)) or (n, k, k); got shape {C.shape}")
    if not np.all(np.isfinite(B)):
        i = int(np.flatnonzero(~np.isfinite(B).reshape(len(B), -1).all(axis=1))[0])
        raise ValueError(f"costs contain NaN or infinite values (row {i})")
    if method not in ("auto", "dp", "milp"):
        raise ValueError(f"method must be 'auto', 'dp' or 'milp'; got {method!r}")
    max_dp_size = check_int(max_dp_size, "max_dp_size")
    n, k, _ = B.shape
    top = np.abs(B).reshape(n, k * k).max(axis=1, initial=0.0)
    scale = np.exp2(np.floor(np.log2(np.where(top > 0, top, 1.0))))
    Bs = B / scale[:, None, None]  # exact: answers invariant to powers of two, no overflow
    if n == 0:
        positions, gap, ok, largest = (np.zeros((0, k), np.int64), np.zeros(0),
                                       np.zeros(0, bool), np.zeros(0, np.int64))
    elif method == "auto":
        positions, gap, ok, largest = _solve_blocks(Bs, max_dp_size, time_limit)
    elif method == "dp":
        positions, gap, ok = _bucket_solvers.dp(Bs), np.zeros(n), np.ones(n, bool)
        largest = np.full(n, k)
    else:
        positions, gap, ok = _milp(Bs, time_limit)
        largest = np.full(n, k)
    U = bucket_order_to_pairs(positions)
    a, b = pair_index(k)
    value = np.einsum("ij,ij->i", U, B[:, a, b])
    used = (np.where(largest > max_dp_size, "milp", "dp") if method == "auto"
            else np.full(n, method))
    return CertifiedResult(positions, value, value - gap * scale, ok, used,
                           {"largest_block": largest})


def _all_positions(k: int) -> np.ndarray:
    """Every bucket order of ``k`` labels as dense positions, label by label: each new label
    joins one of the buckets or opens a new one at any place."""
    P = np.zeros((1, 0), dtype=np.int64)
    for _ in range(k):
        m = P.max(axis=1, initial=0)
        parts = []
        for t in range(1, P.shape[1] + 2):
            joins, opens = P[m >= t], P[m + 1 >= t]
            parts.append(np.column_stack([joins, np.full(len(joins), t)]))
            parts.append(np.column_stack([opens + (opens >= t), np.full(len(opens), t)]))
        P = np.concatenate(parts)
    return P


class BucketOrderSpace(OutputSpace):
    r"""Bucket orders (rankings with ties) of ``n_labels`` labels as ordered-pair indicators.

    An output is a row ``u`` of width ``n_outputs = k(k-1)``: ``u[t] = 1`` when label
    ``pair_index(k)[0][t]`` is strictly ahead of label ``pair_index(k)[1][t]`` (module
    docstring). :meth:`from_positions` and :meth:`to_positions` convert from and to bucket
    numbers (1 = top, equal numbers tied, 0 = missing). Training outputs may be incomplete
    (NaN pairs of missing labels); the oracle's answers are complete bucket orders.

    Parameters
    ----------
    n_labels : int
        Number of labels ``k >= 2``.
    labels : sequence of str, optional
        A name for each label, in label order. Part of the space: spaces with other names
        are different spaces.

    Examples
    --------
    >>> space = BucketOrderSpace(3)
    >>> space.n_outputs, len(space.enumerate())
    (6, 13)
    >>> U = space.from_positions([[1, 2, 1]])
    >>> space.to_positions(space.argmin(-U))
    array([[1, 2, 1]])
    """

    def __init__(self, n_labels: int, *, labels=None):
        self.n_labels = check_int(n_labels, "n_labels", low=2)
        self.labels = check_item_labels(labels, self.n_labels)

    @classmethod
    def from_n_outputs(cls, n_outputs: int) -> BucketOrderSpace:
        """The space whose pair vectors have width ``n_outputs`` = k(k-1).

        >>> BucketOrderSpace.from_n_outputs(12)
        BucketOrderSpace(4)
        """
        return cls(_width_labels(check_int(n_outputs, "n_outputs")))

    @property
    def n_outputs(self) -> int:
        return self.n_labels * (self.n_labels - 1)

    def from_positions(self, positions) -> np.ndarray:
        """Pair vectors (n, k(k-1)) of positions (n, k) (:func:`bucket_order_to_pairs`)."""
        return bucket_order_to_pairs(check_positions(positions, self.n_labels))

    def to_positions(self, Y) -> np.ndarray:
        """Dense positions (n, k) of pair vectors (0 for a missing label)."""
        return self._check(Y)[1]

    def _check(self, Y) -> tuple[np.ndarray, np.ndarray]:
        Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=float)
        Y = Y[None, :] if Y.ndim == 1 else Y
        if Y.ndim != 2 or Y.shape[1] != self.n_outputs:
            raise ValueError(
                f"Y must have shape (n, {self.n_outputs}) (ordered-pair indicators of "
                f"{self.n_labels} labels; use from_positions for bucket numbers); got shape "
                f"{Y.shape}")
        positions, _, message = _check_pairs(Y, self.n_labels, True, self.labels)
        if message is not None:
            raise ValueError(message)
        return Y, positions

    def validate(self, Y) -> np.ndarray:
        """``Y`` as a new float array after checking every row is a bucket order, possibly
        incomplete (the pairs of missing labels NaN); ``ValueError`` naming the first bad
        row and pair otherwise."""
        return self._check(Y)[0].copy()

    def _contains_rows(self, Y) -> np.ndarray:
        """Whether each row of ``Y`` is a complete bucket order, shape (n,)."""
        return _check_pairs(Y, self.n_labels, False)[1]

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """Every bucket order as a pair vector (:func:`n_bucket_orders` rows)."""
        count = n_bucket_orders(self.n_labels)
        if count > max_outputs:
            raise ValueError(f"refusing to enumerate the {count} bucket orders of "
                             f"{self.n_labels} labels (max_outputs={max_outputs})")
        return bucket_order_to_pairs(_all_positions(self.n_labels))

    def argmin(self, C, method: str = "auto") -> np.ndarray:
        """Exact minimisers (n, k(k-1)) of :math:`\\langle c, u\\rangle` over bucket orders for
        costs ``C`` (n, k(k-1)) of any sign in the order of :func:`pair_index`; ``method``:
        see :func:`optimal_bucket_order`."""
        return self.solve(C, method=method).solution

    def solve(self, C, **options) -> CertifiedResult:
        """:func:`optimal_bucket_order` on cost rows of this space; ``solution`` holds the
        pair vectors (n, k(k-1)), ``info["positions"]`` the positions (n, k)."""
        C = self.check_costs(C, what=f" (one per ordered label pair of {self!r})")
        res = optimal_bucket_order(C, **options)
        return CertifiedResult(bucket_order_to_pairs(res.solution), res.value, res.bound,
                               res.certified, res.method,
                               {**res.info, "positions": res.solution})

    def __eq__(self, other) -> bool:
        return (isinstance(other, BucketOrderSpace) and other.n_labels == self.n_labels
                and other.labels == self.labels)

    def __hash__(self) -> int:
        return hash(("BucketOrderSpace", self.n_labels, self.labels))

    def __repr__(self) -> str:
        named = "" if self.labels is None else f", labels={list(self.labels)!r}"
        return f"BucketOrderSpace({self.n_labels}{named})"
