r"""The memory budget, row blocks, and the choice of solver (checked before any work).

Each solver states the memory it needs at its peak (:func:`memory_need`, checked against
the measured peak by ``benchmarks/bench_memory.py``): the exact dual about 1.25 m x m arrays
for :class:`ecrm.ECRM`'s Cholesky factor and 3.5 for :class:`ecrm.ECRMCV`'s
eigendecomposition (in the matrix's own memory, with LAPACK's workspace and the eigenvectors).
``solver="auto"`` takes the dual while that fits ``memory_budget`` (GiB,
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

from ecrm._parameters import check_parameter, vocabulary

__all__ = ["BLOCK_FEATURE_COPIES", "DEFAULT_MEMORY_BUDGET_GIB", "SOLVERS", "SolverChoice",
           "check_solver_names", "check_solver_params", "memory_need", "row_blocks"]

#: Solver names accepted by ``ECRM(solver=...)`` and ``ECRMCV(solver=...)`` (declared in
#: :data:`ecrm._parameters.CONSTRAINTS`).
SOLVERS = vocabulary("solver")
#: Shorthands of ``center_selection`` (:func:`ecrm._solvers.centers.select_centers`).
CENTER_SELECTIONS = vocabulary("center_selection")
#: Default ``memory_budget`` in GiB: the largest m x m working set the dual may allocate.
DEFAULT_MEMORY_BUDGET_GIB = 8.0
_GIB = 2.0 ** 30


@dataclass(frozen=True)
class SolverChoice:
    """A checked solver setting: ``solver`` is never ``"auto"`` here."""

    solver: str
    n_components: int | None
    center_selection: object  # a CenterSelector, or its shorthand
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


#: m x m arrays the dual holds at its peak: ECRM's Cholesky factor overwrites its own copy of
#: the Gram matrix (plus the kernel's temporaries); ECRMCV's eigendecomposition runs in the
#: Gram matrix's own memory (LAPACK's workspace and the eigenvectors beside it), then the
#: eigenvectors and their leave-one-out blocks (measured 1.16 and 3.10 by
#: benchmarks/bench_memory.py).
DUAL_COPIES = {False: 1.25, True: 3.5}
#: Feature-wide (k floats) arrays a row block of the primal and Nystrom passes holds at its
#: peak: the fit's normal equations hold the features and a product; the leave-one-out pass
#: the features, their centred copy and one projection per intercept option, plus a
#: temporary of the feature map (measured by benchmarks/bench_memory.py).
BLOCK_FEATURE_COPIES = {False: 2, True: 5}


@dataclass(frozen=True)
class MemoryNeed:
    """The bytes a solver takes at its peak, stated by the solver.

    ``matrices`` are its own arrays (checked against ``memory_budget``); ``blocks`` the row
    blocks of its passes over the training data (bounded by scikit-learn's
    ``working_memory``).
    """

    matrices: float
    blocks: float = 0.0

    @property
    def total(self) -> float:
        return self.matrices + self.blocks


def _pass_bytes(m: int, row_floats: int) -> float:
    """The largest row block of a pass whose rows take ``row_floats`` floats (20% slack)."""
    rows = max(1, min(m, int(get_config()["working_memory"] * 2**20 // (8 * row_floats))))
    return 1.2 * 8.0 * rows * row_floats


def memory_need(solver: str, *, m: int, p: int, kernel, cv: bool, n_components: int | None = None,
                n_targets: int = 1) -> MemoryNeed:
    """The memory a checked ``solver`` needs on ``m`` x ``p`` inputs (see :class:`MemoryNeed`).

    * ``"dual"``: ``DUAL_COPIES`` m x m arrays (for ECRMCV with a linear kernel and p < m,
      the thin SVD of ``X``: three m x p arrays);
    * ``"primal"``: :math:`X^\top X`, its centred copy and factor (3 p x p), and the row
      blocks of the normal equations (2p + 3c floats a row, c = ``n_targets``) or, for
      ECRMCV, of the leave-one-out pass (5p + 3c: :data:`BLOCK_FEATURE_COPIES`);
    * ``"nystrom"``: :math:`K_{MM}`, its eigenvectors, :math:`F^\top F` and its factor
      (4 M x M), and the row blocks as for the primal with M features.

    >>> memory_need("dual", m=1000, p=3, kernel="rbf", cv=True).matrices / 8e6
    3.5
    """
    if solver == "dual":
        if cv and kernel == "linear" and p < m:  # thin SVD of X: m x p, never m x m
            return MemoryNeed(8.0 * m * p * 3)
        return MemoryNeed(8.0 * m * m * DUAL_COPIES[cv])
    k = p if solver == "primal" else (min(m, 1000) if n_components is None else n_components)
    width = BLOCK_FEATURE_COPIES[cv] * k + 3 * n_targets
    return MemoryNeed(8.0 * k * k * (3 if solver == "primal" else 4), _pass_bytes(m, width))


def check_solver_names(solver) -> None:
    """``solver`` is a known name (no data needed)."""
    check_parameter("solver", solver)


def check_solver_params(solver, n_components, center_selection, memory_budget, *, m: int,
                        p: int, kernel, cv: bool = False) -> SolverChoice:
    """Check the solver settings against the data shape, before any work.

    Parameters
    ----------
    solver : {"auto", "dual", "primal", "nystrom"}
    n_components : int >= 1 or None
        Nystrom centres M (``None``: ``min(m, 1000)``); must be at most ``m``.
    center_selection : CenterSelector or its shorthand (checked by
        :func:`ecrm._solvers.centers.check_center_selection`)
    memory_budget : float in (0, inf) or None
        GiB (``None``: :data:`DEFAULT_MEMORY_BUDGET_GIB`).
    m, p : int
        Training samples and input features.
    kernel : str or callable
    cv : bool
        For :class:`ecrm.ECRMCV` (the dual then holds about three m x m arrays at its peak:
        :func:`memory_need`).

    Returns
    -------
    SolverChoice

    Examples
    --------
    >>> check_solver_params("auto", None, "uniform", 1e-3, m=10**5, p=3, kernel="rbf")
    Traceback (most recent call last):
    ...
    ValueError: solver='auto': the exact dual solver needs 93.1 GiB for m=100000 training \
samples (the m x m Gram matrix), over memory_budget=0.001 GiB; use solver='nystrom' with \
n_components=M centres (an approximation; M x M memory), or raise memory_budget
    """
    check_solver_names(solver)
    requested = solver
    budget = check_parameter("memory_budget", memory_budget)
    budget = DEFAULT_MEMORY_BUDGET_GIB if budget is None else budget
    budget_bytes = budget * _GIB
    M = check_parameter("n_components", n_components)
    if M is not None and M > m:
        raise ValueError(f"n_components={M} must be at most the number of training samples "
                         f"m={m}")
    dual_bytes = memory_need("dual", m=m, p=p, kernel=kernel, cv=cv).matrices
    if solver == "auto":
        if kernel == "precomputed" or dual_bytes <= budget_bytes:
            solver = "dual"
        elif kernel == "linear" and memory_need("primal", m=m, p=p, kernel=kernel,
                                                cv=cv).matrices <= budget_bytes:
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
        need = memory_need("nystrom", m=m, p=p, kernel=kernel, cv=cv,
                           n_components=M).matrices
        if need > budget_bytes:
            raise ValueError(f"solver='nystrom' with n_components={M} needs "
                             f"{need / _GIB:.1f} GiB, over memory_budget={budget:g} GiB")
    if solver == "primal" and memory_need("primal", m=m, p=p, kernel=kernel,
                                          cv=cv).matrices > budget_bytes:
        raise ValueError(f"solver='primal' needs a {p} x {p} matrix ({8.0 * p * p * 3 / _GIB:.1f}"
                         f" GiB with its factors), over memory_budget={budget:g} GiB; use "
                         f"solver='nystrom' or 'dual'")
    return SolverChoice(solver, M, center_selection, budget_bytes, requested)
