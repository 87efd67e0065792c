r"""The output-space interface: a set Y in R^d with an exact linear minimisation oracle.

Every space implements :attr:`OutputSpace.n_outputs` (the width ``d`` of its output vectors),
:meth:`OutputSpace.argmin` (the exact linear oracle) and :meth:`OutputSpace.validate`. The
other methods are optional hooks with defaults: :meth:`~OutputSpace.minimize` (the oracle the
estimators call, on costs in the embedding a loss declares), :meth:`~OutputSpace.contains`,
:meth:`~OutputSpace.enumerate`, :meth:`~OutputSpace.consistent_scores` and
:meth:`~OutputSpace.minimize_risk` (for losses with no linear form). Solvers that certify
their answers return a :class:`CertifiedResult`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

__all__ = ["OUTPUTS", "CertifiedResult", "MultilabelSpace", "OutputSpace",
           "all_binary_vectors", "check_binary_matrix", "check_item_labels"]

#: The cost form every space minimises: one cost per output coordinate, :math:`\phi(y) = y`.
OUTPUTS = "outputs"


def check_item_labels(labels, n: int, what: str = "labels") -> tuple[str, ...] | None:
    """``labels`` as a tuple of ``n`` distinct non-empty strings (``None`` passes).

    The names a finite space gives its items (a ranking's labels, a classifier's classes):
    what ``ecrm predict`` writes and ``ecrm evaluate`` reads for them.

    >>> check_item_labels(["a", "b"], 2)
    ('a', 'b')
    >>> check_item_labels(["a", "a"], 2)
    Traceback (most recent call last):
    ...
    ValueError: labels must be 2 distinct non-empty strings; 'a' appears twice
    """
    if labels is None:
        return None
    if isinstance(labels, str) or not hasattr(labels, "__len__"):
        raise ValueError(f"{what} must be a sequence of {n} names; got "
                         f"{type(labels).__name__}")
    names = tuple(labels)
    seen: set = set()
    why = f"got {len(names)}" if len(names) != n else None
    for v in names if why is None else ():
        if not isinstance(v, str) or not v:
            why = f"found {type(v).__name__} {v!r}"
        elif v in seen:
            why = f"{v!r} appears twice"
        if why is not None:
            break
        seen.add(v)
    if why is not None:
        raise ValueError(f"{what} must be {n} distinct non-empty strings; {why}")
    return names


@dataclass(frozen=True)
class CertifiedResult:
    """Solutions of a batch of optimisation problems, each with its certificate.

    Attributes
    ----------
    solution : ndarray of shape (n, d)
        One solution per problem (row).
    value : ndarray of shape (n,)
        Objective value of each solution.
    bound : ndarray of shape (n,)
        A proven lower bound on each optimal value (``-inf`` where none is known).
    certified : ndarray of bool, shape (n,)
        Whether each solution is proven optimal: by an exact method (LP with an integrality
        certificate, MILP solved to optimality, exact projection, enumeration) or by a bound
        that matches the value within the solver's relative tolerance.
    method : ndarray of str, shape (n,)
        The method that produced each row's solution (e.g. ``"lp"``, ``"milp"``, ``"local"``).
    info : dict
        Solver-specific extras (tolerances, certificates such as a total-unimodularity proof).
    """

    solution: np.ndarray
    value: np.ndarray
    bound: np.ndarray
    certified: np.ndarray
    method: np.ndarray
    info: dict = field(default_factory=dict, repr=False)

    @property
    def gap(self) -> np.ndarray:
        """``value - bound`` per row (0 where the bound is attained)."""
        return self.value - self.bound

    @property
    def n_certified(self) -> int:
        """Number of rows whose solution is proven optimal."""
        return int(np.count_nonzero(self.certified))


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

    def check_costs(self, C, width: int | None = None, what: str = " for this output space"
                    ) -> np.ndarray:
        """Return ``C`` as a 2-D float array of width ``width`` (default ``n_outputs``) or
        raise ``ValueError`` (``what`` says what the columns are)."""
        width = self.n_outputs if width is None else width
        C = np.asarray(C, dtype=float)
        C = C[None, :] if C.ndim == 1 else C
        if C.ndim != 2 or C.shape[1] != width:
            raise ValueError(f"costs must have shape (n, {width}){what}; got shape {C.shape}")
        if not np.all(np.isfinite(C)):
            raise ValueError("costs contain NaN or infinite values")
        return C

    def minimize(self, C, form: str = OUTPUTS) -> np.ndarray:
        r"""Exact minimisers of :math:`\langle \phi(y), c\rangle` over the space, per row of
        ``C``: the one oracle the estimators call.

        ``form`` names the embedding :math:`\phi` of the costs, declared by the loss
        (:attr:`ecrm.losses.LinearLoss.cost_form`); :data:`OUTPUTS` (:math:`\phi(y) = y`)
        calls :meth:`argmin`. A space that minimises costs in another embedding (a
        hierarchy's parent products, a ranking's pair orders, a finite set's one-hot index)
        overrides this method, handles its forms and passes the others to ``super()``.

        Parameters
        ----------
        C : array-like of shape (n, e)
            Cost rows, any sign; ``e`` is the width of the form's embedding.
        form : str, default="outputs"

        Returns
        -------
        Y : ndarray of shape (n, n_outputs)
        """
        if form == OUTPUTS:
            return self.argmin(C)
        raise ValueError(f"{type(self).__name__} has no oracle for costs of the form "
                         f"{form!r} (it minimises costs of the form {OUTPUTS!r}): the loss "
                         "is not one for this output space")

    # -- optional hooks ---------------------------------------------------------------
    @property
    def output_names(self) -> tuple:
        """A name for each of the ``n_outputs`` coordinates (default ``0 .. d-1``).

        A hierarchy names them by its labels; estimators expose them as ``label_names_``.
        """
        return tuple(range(self.n_outputs))

    def contains(self, Y) -> np.ndarray:
        """Whether each row of ``Y`` lies in the space: a bool array of shape (n,).

        Rows not ``n_outputs`` wide do not; the others are judged by ``_contains_rows``, by
        default :meth:`validate` on each row (spaces override it with a vectorised test).
        """
        Y = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y, dtype=float)
        Y = Y[None, :] if Y.ndim == 1 else Y
        if Y.ndim != 2 or Y.shape[1] != self.n_outputs:
            return np.zeros(len(Y), dtype=bool)
        return self._contains_rows(Y)

    def _contains_rows(self, Y: np.ndarray) -> np.ndarray:
        out = np.ones(len(Y), dtype=bool)
        for i in range(len(Y)):
            try:
                self.validate(Y[i:i + 1])
            except ValueError:
                out[i] = False
        return out

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """Every element of the space, as the rows of an array (n_elements, n_outputs).

        Optional: small spaces implement it (brute-force checks, finite-space losses).
        Raises ``ValueError`` when the space has more than ``max_outputs`` elements and
        ``NotImplementedError`` when it cannot be enumerated at all (the default).
        """
        raise NotImplementedError(f"{type(self).__name__} cannot enumerate its elements")

    def consistent_scores(self, S) -> np.ndarray:
        """Per-coordinate scores (n, n_outputs) made consistent with the space's structure.

        The default returns ``S`` unchanged; a hierarchy caps every label's score at its
        parents' scores (:meth:`ecrm.Hierarchy.cap_by_parents`), so that any threshold gives
        a consistent label set.
        """
        return np.asarray(S, dtype=float)

    def minimize_risk(self, W, Y_ref, loss) -> np.ndarray:
        r"""Exact minimisers of :math:`\sum_i W_{ki}\,\ell(y, y_i)` over the space, per row ``k``.

        The hook for losses with no linear form (:meth:`ecrm.losses.Loss.minimize_risk`). The
        default scans :meth:`enumerate` (ties to the first element); infinite spaces override it.

        Parameters
        ----------
        W : array-like of shape (n, m)
            Risk weights, any sign.
        Y_ref : array-like of shape (m, n_outputs)
            The training outputs.
        loss : ecrm.losses.Loss

        Returns
        -------
        Y : ndarray of shape (n, n_outputs)
        """
        try:
            elements = self.enumerate()
        except NotImplementedError:
            raise NotImplementedError(f"{type(loss).__name__} has no linear form and "
                                      f"{type(self).__name__} has no risk minimiser for "
                                      f"it") from None
        W = np.atleast_2d(np.asarray(W, dtype=float))
        Y_ref = np.asarray(Y_ref, dtype=float)
        n_el, m = len(elements), len(Y_ref)
        L = np.asarray(loss(np.repeat(elements, m, axis=0), np.tile(Y_ref, (n_el, 1))),
                       dtype=float).reshape(n_el, m)
        scale = np.abs(W).max(axis=1, keepdims=True)  # the argmin is invariant to W's scale
        W = W / np.where(scale > 0, scale, 1.0)
        return elements[np.argmin(W @ L.T, axis=1)].copy()


def check_binary_matrix(Y, n_columns: int, what: str = "Y") -> np.ndarray:
    """Return ``Y`` as a new float 0/1 matrix of width ``n_columns`` or raise ``ValueError``."""
    import scipy.sparse as sp

    Y = np.array(Y.toarray() if sp.issparse(Y) else Y, dtype=float, copy=True)
    Y = Y[None, :] if Y.ndim == 1 else Y
    if Y.ndim != 2 or Y.shape[1] != n_columns:
        raise ValueError(f"{what} must have shape (n, {n_columns}); got shape {Y.shape}")
    bad = ~((Y == 0) | (Y == 1))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"{what} must contain only 0 and 1; found {Y[i, j]!r} at row {i}, "
                         f"column {j}")
    return Y


def all_binary_vectors(d: int, max_outputs: int = 50_000) -> np.ndarray:
    """Every vector of ``{0, 1}^d`` as rows (2^d, d), in lexicographic order."""
    if 2.0**d > max_outputs:
        raise ValueError(f"refusing to enumerate 2^{d} label sets (max_outputs={max_outputs})")
    return ((np.arange(2**d)[:, None] >> np.arange(d - 1, -1, -1)) & 1).astype(float)


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

    def _contains_rows(self, Y) -> np.ndarray:
        return np.all((Y == 0) | (Y == 1), axis=1)

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        return all_binary_vectors(self.n_labels, max_outputs)

    def __repr__(self) -> str:
        return f"MultilabelSpace({self.n_labels})"
