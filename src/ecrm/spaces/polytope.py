r"""Any output space given by linear constraints over :math:`\{0, 1\}^d` (paper, Theorem 3.1).

.. math:: \mathcal Y = \{y \in \{0,1\}^d : A_{ub}\, y \le b_{ub},\; A_{eq}\, y = b_{eq}\} .

(A constraint :math:`a^\top y \ge b` is :math:`-a^\top y \le -b`.) The linear oracle
:math:`\arg\min_{y \in \mathcal Y} \langle c, y \rangle` is an integer programme. When the
constraint matrix :math:`A = [A_{ub}; A_{eq}]` is totally unimodular (every square submatrix
has determinant 0 or :math:`\pm 1`) and :math:`b` is integral, every vertex of the relaxation
:math:`\{0 \le y \le 1, A_{ub} y \le b_{ub}, A_{eq} y = b_{eq}\}` is integral, so a
simplex solve of the LP relaxation is exact (Theorem 3.1).

:class:`LinearConstraintSpace` solves the LP relaxation with HiGHS' dual simplex (which
returns a vertex) and checks an **integrality certificate** on every answer: the LP solution
rounds to a 0/1 point that satisfies the constraints and whose cost equals the LP optimum, a
lower bound on the integer optimum; such a point is optimal whatever :math:`A` is. When the
relaxation's optimum is fractional (possible only if :math:`A` is not totally unimodular or
:math:`b` is not integral) the row is solved exactly by HiGHS' branch and bound
(:func:`scipy.optimize.milp`, zero gap). The answer, a
:class:`~ecrm.spaces.base.CertifiedResult`, records the method each row took.

:func:`check_total_unimodularity` decides total unimodularity (Heller-Tompkins for the
incidence matrices the paper uses, else an enumeration of square submatrices).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from ecrm.estimators._validation import check_bool, check_int
from ecrm.spaces._scaling import HIGHS_COST_NORM, normalize_rows
from ecrm.spaces.base import CertifiedResult, OutputSpace, all_binary_vectors, check_binary_matrix

__all__ = ["LinearConstraintSpace", "TUCertificate", "check_total_unimodularity"]

_INT_TOL = 1e-7  # distance of an LP vertex's coordinates to 0/1
_FEAS_TOL = 1e-7  # constraint violation of a 0/1 point (the constraints need not be integral)
_CERT_RTOL = 1e-12  # integrality certificate: rounded cost <= LP optimum, relative to sum |c|


@dataclass(frozen=True)
class TUCertificate:
    """The answer of :func:`check_total_unimodularity`.

    Attributes
    ----------
    is_tu : bool or None
        True or False when decided, None when the matrix is too large to enumerate and no
        recogniser applies.
    method : str
        How it was decided: ``"entries"`` (an entry outside {0, 1, -1}), ``"empty"``,
        ``"directed-graph incidence"``, ``"bipartite-graph incidence"``, ``"two nonzeros per
        column (Heller-Tompkins)"`` (each possibly followed by ``" (transpose)"``),
        ``"enumeration"`` or ``"undecided"``.
    witness : tuple of (rows, cols) or None
        Indices of a square submatrix whose determinant is not in {0, 1, -1}, when one was
        found.
    determinant : float or None
        That submatrix's determinant.
    """

    is_tu: bool | None
    method: str
    witness: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    determinant: float | None = None

    def __bool__(self) -> bool:
        return bool(self.is_tu)


def _two_colouring(A: np.ndarray) -> tuple[bool, str] | None:
    """Heller-Tompkins on the columns of A (at most two nonzeros each), or None if n/a.

    Returns (is_tu, kind). Rows must be split in two parts so that the two nonzeros of each
    column lie in different parts when they have the same sign, in the same part otherwise.
    """
    nz = A != 0
    if np.any(nz.sum(axis=0) > 2):
        return None
    m = A.shape[0]
    # parity[c] = 1: rows of column c in different parts (same sign); 0: same part.
    adj: list[list[tuple[int, int]]] = [[] for _ in range(m)]
    same_sign_any, opposite_any = False, False
    for c in np.flatnonzero(nz.sum(axis=0) == 2):
        r1, r2 = (int(r) for r in np.flatnonzero(nz[:, c]))
        parity = int(A[r1, c] == A[r2, c])
        same_sign_any |= bool(parity)
        opposite_any |= not parity
        adj[r1].append((r2, parity))
        adj[r2].append((r1, parity))
    colour = -np.ones(m, dtype=int)
    for start in range(m):
        if colour[start] >= 0:
            continue
        colour[start] = 0
        stack = [start]
        while stack:
            r = stack.pop()
            for s, parity in adj[r]:
                want = colour[r] ^ parity
                if colour[s] < 0:
                    colour[s] = want
                    stack.append(s)
                elif colour[s] != want:
                    return False, "two nonzeros per column (Heller-Tompkins)"
    if opposite_any and not same_sign_any:
        kind = "directed-graph incidence"
    elif same_sign_any and not opposite_any and np.all(A >= 0):
        kind = "bipartite-graph incidence"
    else:
        kind = "two nonzeros per column (Heller-Tompkins)"
    return True, kind


def _reduce(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop zero rows/cols, rows/cols with one nonzero, and duplicates up to sign.

    Each operation preserves total unimodularity both ways for {0, +-1} matrices. Returns the
    reduced matrix and the original indices of its rows and columns.
    """
    rows, cols = np.arange(A.shape[0]), np.arange(A.shape[1])
    changed = True
    while changed and A.size:
        changed = False
        for axis in (0, 1):
            if A.size == 0:
                break
            M = A if axis == 0 else A.T
            keep = (M != 0).sum(axis=1) > 1
            # duplicates up to sign: normalise each line so its first nonzero is positive
            first = np.argmax(M != 0, axis=1)
            sign = np.sign(M[np.arange(len(M)), first])
            sign[sign == 0] = 1
            normal = M * sign[:, None]
            _, uniq = np.unique(normal, axis=0, return_index=True)
            unique_mask = np.zeros(len(M), dtype=bool)
            unique_mask[uniq] = True
            keep &= unique_mask
            if not keep.all():
                changed = True
                if axis == 0:
                    A, rows = A[keep], rows[keep]
                else:
                    A, cols = A[:, keep], cols[keep]
    return A, rows, cols


def check_total_unimodularity(A, *, max_submatrices: int = 200_000) -> TUCertificate:
    r"""Decide whether ``A`` is totally unimodular (every square submatrix has determinant in
    :math:`\{0, 1, -1\}`).

    In order: entries outside :math:`\{0, \pm 1\}` (not TU); at most two nonzeros per column
    (or per row): the Heller-Tompkins criterion, exact for such matrices (covers incidence
    matrices of directed graphs, e.g. hierarchy constraints :math:`y_j \le y_{p}`, and of
    bipartite graphs, e.g. the assignment constraints); otherwise, after removing zero,
    unit and duplicate rows and columns (which preserve total unimodularity), every square
    submatrix's determinant when there are at most ``max_submatrices`` of them.

    Parameters
    ----------
    A : array-like or sparse matrix of shape (n, d)
    max_submatrices : int, default=200_000
        Enumeration budget; beyond it the answer is ``is_tu=None`` ("undecided").

    Returns
    -------
    TUCertificate

    Examples
    --------
    Hierarchy constraints :math:`y_j - y_{p(j)} \le 0` of a root with three children:

    >>> check_total_unimodularity([[-1, 1, 0, 0], [-1, 0, 1, 0], [-1, 0, 0, 1]]).method
    'directed-graph incidence (transpose)'
    >>> cert = check_total_unimodularity([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> cert.is_tu, cert.determinant
    (False, 2.0)
    """
    A = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"A must be 2-D; got shape {A.shape}")
    if A.size == 0:
        return TUCertificate(True, "empty")
    bad = ~np.isin(A, (-1.0, 0.0, 1.0))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        return TUCertificate(False, "entries", ((int(i),), (int(j),)), float(A[i, j]))
    for M, suffix in ((A, ""), (A.T, " (transpose)")):
        decided = _two_colouring(M)
        if decided is not None:  # if not TU, a witness when the matrix is small enough
            found = None if decided[0] else _enumerate(A, max_submatrices)
            if found is None or found.is_tu is not False:
                return TUCertificate(decided[0], decided[1] + suffix)
            return TUCertificate(False, decided[1] + suffix, found.witness, found.determinant)
    found = _enumerate(A, max_submatrices)
    return found if found is not None else TUCertificate(None, "undecided")


def _enumerate(A: np.ndarray, budget: int) -> TUCertificate | None:
    R, rows, cols = _reduce(A)
    m, n = R.shape
    total = sum(comb(m, k) * comb(n, k) for k in range(2, min(m, n) + 1))
    if total > budget:
        return None
    for k in range(2, min(m, n) + 1):
        row_sets = list(itertools.combinations(range(m), k))
        col_sets = np.array(list(itertools.combinations(range(n), k)))
        for rs in row_sets:
            sub = R[np.array(rs)][:, col_sets]  # (k, n_colsets, k)
            dets = np.linalg.det(np.transpose(sub, (1, 0, 2)))
            off = np.abs(np.abs(dets) - 0.5) < 0.25
            off |= np.abs(dets) > 1.5
            if off.any():
                t = int(np.flatnonzero(off)[0])
                witness = (tuple(int(rows[r]) for r in rs),
                           tuple(int(cols[c]) for c in col_sets[t]))
                return TUCertificate(False, "enumeration", witness, float(np.round(dets[t])))
    return TUCertificate(True, "enumeration")


def _as_matrix(A, name: str) -> sp.csr_array | None:
    if A is None:
        return None
    M = sp.csr_array(A, dtype=float) if sp.issparse(A) else sp.csr_array(
        np.atleast_2d(np.asarray(A, dtype=float)))
    if M.ndim != 2:
        raise ValueError(f"{name} must be 2-D; got shape {M.shape}")
    if not np.all(np.isfinite(M.data)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return M


def _as_vector(b, n_rows: int, name: str, a_name: str) -> np.ndarray:
    if b is None:
        return np.zeros(0)
    b = np.asarray(b, dtype=float).ravel()
    if b.shape != (n_rows,):
        raise ValueError(f"{name} must have one entry per row of {a_name} ({n_rows}); "
                         f"got shape {b.shape}")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return b


class LinearConstraintSpace(OutputSpace):
    r"""The 0/1 points of a polyhedron: :math:`\{y \in \{0,1\}^d : A_{ub} y \le b_{ub},\,
    A_{eq} y = b_{eq}\}`, with an exact, certified oracle.

    Parameters
    ----------
    A_ub, b_ub : array-like or sparse of shape (n_ub, d) and (n_ub,), optional
        Inequality constraints :math:`A_{ub} y \le b_{ub}`.
    A_eq, b_eq : array-like or sparse of shape (n_eq, d) and (n_eq,), optional
        Equality constraints.
    n_outputs : int, optional
        The dimension ``d``; required when there are no constraints, else checked against
        the constraint matrices' width.
    method : {"auto", "lp", "milp"}, default="auto"
        ``"auto"``: LP relaxation with the integrality certificate, branch and bound for rows
        where it fails. ``"lp"``: raise instead of falling back. ``"milp"``: always branch
        and bound.
    check_feasible : bool, default=True
        Solve one integer feasibility problem at construction and raise ``ValueError`` if no
        0/1 point satisfies the constraints.
    max_submatrices : int, default=200_000
        Budget of :func:`check_total_unimodularity`.

    Notes
    -----
    HiGHS's tolerances are absolute (about 1e-7), so each cost row is scaled exactly by powers
    of two to an l1 norm near :math:`2^{20}` first: the answers are optimal to about 1e-13
    relative to :math:`\sum_j |c_j|` at any magnitude, the bounds multiplied back with one
    rounding (within :math:`2^{-1074}` per coordinate for subnormal costs).

    Attributes
    ----------
    tu : TUCertificate
        Whether :math:`[A_{ub}; A_{eq}]` is totally unimodular, and how that was decided.
    integral_rhs : bool
        Whether :math:`b` is integral (with total unimodularity, Theorem 3.1's condition).

    Examples
    --------
    One of labels 0 and 1, one of labels 2 and 3, never both 0 and 2:

    >>> space = LinearConstraintSpace(A_eq=[[1, 1, 0, 0], [0, 0, 1, 1]], b_eq=[1, 1],
    ...                               A_ub=[[1, 0, 1, 0]], b_ub=[1])
    >>> space.tu.is_tu, space.tu.method
    (True, 'bipartite-graph incidence')
    >>> res = space.solve([[-3.0, 1.0, -1.0, 0.5]])
    >>> res.solution, res.value, res.method
    (array([[1., 0., 0., 1.]]), array([-2.5]), array(['lp'], dtype='<U4'))
    >>> space.contains([[1, 0, 0, 1], [1, 0, 1, 0]])
    array([ True, False])
    """

    def __init__(self, A_ub=None, b_ub=None, A_eq=None, b_eq=None, *, n_outputs=None,
                 method="auto", check_feasible=True, max_submatrices=200_000):
        if method not in ("auto", "lp", "milp"):
            raise ValueError(f"method must be 'auto', 'lp' or 'milp'; got {method!r}")
        self.method = method
        A_ub, A_eq = _as_matrix(A_ub, "A_ub"), _as_matrix(A_eq, "A_eq")
        if (A_ub is None) != (b_ub is None) or (A_eq is None) != (b_eq is None):
            raise ValueError("give A_ub with b_ub and A_eq with b_eq")
        widths = {name: M.shape[1] for name, M in (("A_ub", A_ub), ("A_eq", A_eq))
                  if M is not None}
        if n_outputs is not None:
            widths["n_outputs"] = check_int(n_outputs, "n_outputs")
        if not widths:
            raise ValueError("give constraints or n_outputs")
        if len(set(widths.values())) > 1:
            raise ValueError("the constraint matrices must have one column per output; got widths "
                             + ", ".join(f"{k}={v}" for k, v in widths.items()))
        self._d = next(iter(widths.values()))
        d = self._d
        self.A_ub = A_ub if A_ub is not None else sp.csr_array((0, d))
        self.A_eq = A_eq if A_eq is not None else sp.csr_array((0, d))
        self.b_ub = _as_vector(b_ub, self.A_ub.shape[0], "b_ub", "A_ub")
        self.b_eq = _as_vector(b_eq, self.A_eq.shape[0], "b_eq", "A_eq")
        b = np.concatenate([self.b_ub, self.b_eq])
        self.integral_rhs = bool(np.all(b == np.round(b)))
        self.tu = check_total_unimodularity(sp.vstack([self.A_ub, self.A_eq]),
                                            max_submatrices=max_submatrices)
        self._constraints = []
        if self.A_ub.shape[0]:
            self._constraints.append(LinearConstraint(self.A_ub, -np.inf, self.b_ub))
        if self.A_eq.shape[0]:
            self._constraints.append(LinearConstraint(self.A_eq, self.b_eq, self.b_eq))
        if check_bool(check_feasible, "check_feasible"):
            res = self._milp(np.zeros(d))
            if res.status == 2 or res.x is None:
                raise ValueError("the constraint set is infeasible: no 0/1 vector satisfies "
                                 f"{self.A_ub.shape[0]} inequality and {self.A_eq.shape[0]} "
                                 f"equality constraints ({res.message})")

    @property
    def n_outputs(self) -> int:
        return self._d

    @property
    def exact_by_lp(self) -> bool:
        """Theorem 3.1's condition: totally unimodular matrix and integral right-hand side."""
        return bool(self.tu.is_tu) and self.integral_rhs

    def _milp(self, c):
        return milp(c, constraints=self._constraints, integrality=np.ones(self._d),
                    bounds=Bounds(0, 1), options={"mip_rel_gap": 0.0})

    def _violation(self, Y: np.ndarray) -> np.ndarray:
        """Largest violation of any constraint, per row (0 when feasible)."""
        v = np.zeros(len(Y))
        if self.A_ub.shape[0]:
            v = np.maximum(v, np.max(self.A_ub @ Y.T - self.b_ub[:, None], axis=0))
        if self.A_eq.shape[0]:
            v = np.maximum(v, np.max(np.abs(self.A_eq @ Y.T - self.b_eq[:, None]), axis=0))
        return v

    def _certified_vertex(self, c: np.ndarray, i: int):
        """The LP relaxation of one (scaled) row: its optimum, and its rounded vertex when
        that carries the integrality certificate (else None)."""
        ub, eq = self.A_ub.shape[0] > 0, self.A_eq.shape[0] > 0
        res = linprog(c, A_ub=self.A_ub if ub else None, b_ub=self.b_ub if ub else None,
                      A_eq=self.A_eq if eq else None, b_eq=self.b_eq if eq else None,
                      bounds=(0, 1), method="highs-ds")
        if res.status != 0:
            raise RuntimeError(f"HiGHS failed on the LP relaxation of row {i}: {res.message}")
        r = np.round(res.x) + 0.0  # no negative zeros
        if (np.max(np.abs(res.x - r), initial=0.0) <= _INT_TOL
                and self._violation(r[None, :])[0] <= _FEAS_TOL
                and c @ r <= res.fun + _CERT_RTOL * np.abs(c).sum()):
            return res.fun, r
        if self.method == "lp":
            raise RuntimeError(f"the LP relaxation of row {i} has a fractional optimum (the "
                               f"constraint matrix is {'not ' if self.tu.is_tu is False else ''}"
                               f"totally unimodular by {self.tu.method}); use method='auto' "
                               "or 'milp'")
        return res.fun, None

    def solve(self, C) -> CertifiedResult:
        r"""Exact minimisers of :math:`\langle c, y\rangle` for every row of ``C``, certified.

        Parameters
        ----------
        C : array-like of shape (n, d)
            Cost rows, any sign and any scale.

        Returns
        -------
        CertifiedResult
            ``solution`` (n, d) the 0/1 minimisers; ``value`` their costs; ``bound`` a proven
            lower bound (the LP relaxation's optimum on ``"lp"`` rows, where it equals the
            value up to HiGHS' tolerance; branch and bound's dual bound on ``"milp"`` rows);
            ``method`` ``"lp"`` where the rounded LP vertex carried the integrality
            certificate (integral, feasible, cost equal to the LP bound), ``"milp"`` where
            the row was solved by branch and bound with zero gap; ``certified`` is true on
            every row that HiGHS solved to optimality; ``info["tu"]`` the space's
            :class:`TUCertificate` and ``info["lp_bound"]`` the LP relaxation's optimum per
            row (NaN where it was not solved).
        """
        C = self.check_costs(C)
        n, d = C.shape
        Y = np.zeros((n, d))
        bound, lp_bound = np.empty(n), np.full(n, np.nan)
        certified = np.ones(n, dtype=bool)
        method = np.empty(n, dtype="<U4")
        # the bounds multiplied back by / HIGHS_COST_NORM then * scale: highs_costs' factor
        # scale / HIGHS_COST_NORM underflows to 0 for costs below 2^-1054
        C_scaled, scale = normalize_rows(C)
        for i, c in enumerate(C_scaled * HIGHS_COST_NORM):
            if self.method != "milp":
                lp_bound[i], r = self._certified_vertex(c, i)
                if r is not None:
                    Y[i], bound[i], method[i] = r, lp_bound[i], "lp"
                    continue
            res = self._milp(c)
            if res.x is None:
                raise RuntimeError(f"HiGHS failed on the integer programme of row {i}: "
                                   f"{res.message}")
            Y[i], method[i] = np.round(res.x) + 0.0, "milp"
            bound[i], certified[i] = res.mip_dual_bound, res.status == 0
        return CertifiedResult(Y, np.einsum("ij,ij->i", C, Y),
                               bound / HIGHS_COST_NORM * scale, certified, method,
                               {"tu": self.tu, "lp_bound": lp_bound / HIGHS_COST_NORM * scale})

    def argmin(self, C) -> np.ndarray:
        return self.solve(C).solution

    def validate(self, Y) -> np.ndarray:
        Y = check_binary_matrix(Y, self._d)
        for A, b, kind, sign, size in ((self.A_ub, self.b_ub, "inequality", ">", np.asarray),
                                       (self.A_eq, self.b_eq, "equality", "!=", np.abs)):
            slack = size(A @ Y.T - b[:, None])
            if A.shape[0] and np.any(slack > _FEAS_TOL):
                k, i = np.argwhere(slack > _FEAS_TOL)[0]
                raise ValueError(f"row {i} of Y violates {kind} constraint {k}: "
                                 f"{(A @ Y[i])[k]:g} {sign} {b[k]:g}")
        return Y

    def _contains_rows(self, Y) -> np.ndarray:
        """Whether each row of ``Y`` is a 0/1 vector satisfying the constraints, shape (n,)."""
        return np.all((Y == 0) | (Y == 1), axis=1) & (self._violation(Y) <= _FEAS_TOL)

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """Every 0/1 point of the space, as rows in lexicographic order.

        Scans :math:`\\{0, 1\\}^d`: raises ``ValueError`` when :math:`2^d` exceeds
        ``max_outputs``.
        """
        allpts = all_binary_vectors(self._d, max_outputs)
        return allpts[self._violation(allpts) <= _FEAS_TOL]

    def __repr__(self) -> str:
        return (f"LinearConstraintSpace(<{self.A_ub.shape[0]} inequalities, "
                f"{self.A_eq.shape[0]} equalities on {self._d} outputs>, tu={self.tu.is_tu})")
