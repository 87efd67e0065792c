r"""The memory budget, row blocks, and the choice of solver (checked before any work).

The exact dual solver holds the m x m Gram matrix (one copy for :class:`ecrm.ECRM`'s
Cholesky factor, two for :class:`ecrm.ECRMCV`'s eigendecomposition: the matrix and its
eigenvectors). ``solver="auto"`` takes the dual while that fits ``memory_budget`` (GiB,
default :data:`DEFAULT_MEMORY_BUDGET_GIB`); beyond it the exact primal when the kernel is
linear, and otherwise a ``ValueError`` that names ``solver="nystrom"``: ECRM never
approximates silently. An explicit solver whose main matrices would exceed the budget also
fails before it allocates.

Row blocks (streaming fits and every prediction) are sized by scikit-learn's
``working_memory`` setting (``sklearn.set_config(working_memory=...)``, MiB, default 1024),
as :func:`sklearn.metrics.pairwise_distances_chunked` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sklearn import get_config
from sklearn.utils import gen_batches

from ecrm._validation import check_int, check_real

__all__ = ["DEFAULT_MEMORY_BUDGET_GIB", "SOLVERS", "SolverChoice", "check_solver_names",
           "check_solver_params",
           "row_blocks"]

#: Solver names accepted by ``ECRM(solver=...)`` and ``ECRMCV(solver=...)``.
SOLVERS = ("auto", "dual", "primal", "nystrom")
#: Shorthands of ``center_selection`` (:func:`ecrm.solvers.centers.select_centers`).
CENTER_SELECTIONS = ("uniform", "kmeans++", "leverage")
#: Default ``memory_budget`` in GiB: the largest m x m working set the dual may allocate.
DEFAULT_MEMORY_BUDGET_GIB = 8.0
_GIB = 2.0 ** 30


@dataclass(frozen=True)
class SolverChoice:
    """A checked solver setting: ``solver`` is never ``"auto"`` here."""

    solver: str
    n_components: int | None
    center_selection: str
    budget_bytes: float
    requested: str = "auto"


def row_blocks(n_rows: int, row_floats: int) -> Iterator[slice]:
    """Slices of at most the rows whose ``row_floats`` float64 values fit ``working_memory``.

    >>> [(s.start, s.stop) for s in row_blocks(5, 2**40)]
    [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    """
    budget = get_config()["working_memory"] * 2**20
    size = min(max(int(budget // (8 * max(int(row_floats), 1))), 1), max(n_rows, 1))
    return gen_batches(n_rows, size)


def _dual_bytes(m: int, p: int, kernel, cv: bool) -> float:
    if cv and kernel == "linear" and p < m:  # thin SVD of X: m x p, never m x m
        return 8.0 * m * p * 3
    return 8.0 * m * m * (2 if cv else 1)


def check_solver_names(solver, center_selection) -> None:
    """``solver`` and ``center_selection`` are known names (no data needed)."""
    if not isinstance(solver, str) or solver not in SOLVERS:
        raise ValueError(f"solver must be one of {list(SOLVERS)}; got {solver!r}")
    if not isinstance(center_selection, str) or center_selection not in CENTER_SELECTIONS:
        raise ValueError(f"center_selection must be one of {list(CENTER_SELECTIONS)}; got "
                         f"{center_selection!r}")


def check_solver_params(solver, n_components, center_selection, memory_budget, *, m: int,
                        p: int, kernel, cv: bool = False) -> SolverChoice:
    """Check the solver settings against the data shape, before any work.

    Parameters
    ----------
    solver : {"auto", "dual", "primal", "nystrom"}
    n_components : int >= 1 or None
        Nystrom centres M (``None``: ``min(m, 1000)``); must be at most ``m``.
    center_selection : {"uniform", "kmeans++", "leverage"}
    memory_budget : float in (0, inf) or None
        GiB (``None``: :data:`DEFAULT_MEMORY_BUDGET_GIB`).
    m, p : int
        Training samples and input features.
    kernel : str or callable
    cv : bool
        For :class:`ecrm.ECRMCV` (the dual then needs two m x m arrays).

    Returns
    -------
    SolverChoice

    Examples
    --------
    >>> check_solver_params("auto", None, "uniform", 1e-3, m=10**5, p=3, kernel="rbf")
    Traceback (most recent call last):
    ...
    ValueError: solver='auto': the exact dual solver needs 74.5 GiB for m=100000 training \
samples (the m x m Gram matrix), over memory_budget=0.001 GiB; use solver='nystrom' with \
n_components=M centres (an approximation; M x M memory), or raise memory_budget
    """
    check_solver_names(solver, center_selection)
    requested = solver
    budget = DEFAULT_MEMORY_BUDGET_GIB if memory_budget is None else check_real(
        memory_budget, "memory_budget")
    budget_bytes = budget * _GIB
    M = check_int(n_components, "n_components", allow_none=True)
    if M is not None and M > m:
        raise ValueError(f"n_components={M} must be at most the number of training samples "
                         f"m={m}")
    dual_bytes = _dual_bytes(m, p, kernel, cv)
    if solver == "auto":
        if kernel == "precomputed" or dual_bytes <= budget_bytes:
            solver = "dual"
        elif kernel == "linear" and 8.0 * p * p * 3 <= budget_bytes:
            solver = "primal"  # exact too, and never m x m
        else:
            raise ValueError(
                f"solver='auto': the exact dual solver needs {dual_bytes / _GIB:.1f} GiB for "
                f"m={m} training samples (the m x m Gram matrix), over memory_budget="
                f"{budget:g} GiB; use solver='nystrom' with n_components=M centres (an "
                f"approximation; M x M memory), or raise memory_budget")
    if solver != "dual" and kernel == "precomputed":
        raise ValueError(f"solver={solver!r} needs the inputs, not kernel='precomputed'; use "
                         f"solver='dual'")
    if solver == "primal" and kernel != "linear":
        raise ValueError(f"solver='primal' needs kernel='linear' (explicit features); got "
                         f"kernel={kernel!r}: use solver='nystrom' for other kernels")
    if solver == "dual" and dual_bytes > budget_bytes:
        raise ValueError(f"solver='dual' needs {dual_bytes / _GIB:.1f} GiB for m={m} training "
                         f"samples, over memory_budget={budget:g} GiB; use solver='nystrom' "
                         f"(or 'primal' for a linear kernel), or raise memory_budget")
    if solver == "nystrom":
        M = min(m, 1000) if M is None else M
        need = 8.0 * M * M * 4  # K_MM, its eigenvectors, F'F and its factor
        if need > budget_bytes:
            raise ValueError(f"solver='nystrom' with n_components={M} needs "
                             f"{need / _GIB:.1f} GiB, over memory_budget={budget:g} GiB")
    if solver == "primal" and 8.0 * p * p * 3 > budget_bytes:
        raise ValueError(f"solver='primal' needs a {p} x {p} matrix ({8.0 * p * p * 3 / _GIB:.1f}"
                         f" GiB with its factors), over memory_budget={budget:g} GiB; use "
                         f"solver='nystrom' or 'dual'")
    return SolverChoice(solver, M, center_selection, budget_bytes, requested)
