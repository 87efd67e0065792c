r"""The estimators' solver parameters, checked: which :class:`~ecrm.weights.kernel._solvers.
solver.Solver` a fit uses.

:func:`check_solver` checks ``solver`` (a solver object's own settings too) and
``memory_budget`` before any data is seen; :func:`check_solver_params` checks them against the
data shape and resolves ``"auto"`` (the first exact solver of
:data:`~ecrm.weights.kernel._solvers.solver.SOLVER_CLASSES`, in table order, whose kernel fits
and whose matrices fit ``memory_budget``: the dual, then the primal for a linear kernel; else a
``ValueError`` naming the Nystrom solver: ECRM never approximates silently) into a
:class:`SolverChoice`, which :func:`ecrm.weights.kernel._solvers.prepare.prepare` reads.
"""

from __future__ import annotations

import dataclasses

from ecrm.estimators._parameters import check_parameter
from ecrm.weights.kernel._solvers.budget import GIB, MemoryNeed, check_budget
from ecrm.weights.kernel._solvers.solver import SOLVER_CLASSES, DualSolver, Solver

__all__ = ["SolverChoice", "check_solver", "check_solver_params", "memory_need",
           "streams_rows"]


def check_solver(solver, memory_budget=None) -> None:
    """The estimator's ``solver`` (a :class:`Solver` object's own settings too) and
    ``memory_budget``, checked before any work."""
    check_parameter("solver", solver)
    check_parameter("memory_budget", memory_budget)
    if isinstance(solver, Solver):
        solver.check_params()


def streams_rows(solver) -> bool:
    """Whether the solver (a name or a :class:`Solver`) reads the outputs in row blocks
    (``"auto"`` decides with the data: not known here)."""
    if isinstance(solver, Solver):
        return solver.streams_rows
    cls = SOLVER_CLASSES.get(solver) if isinstance(solver, str) else None
    return cls is not None and cls.streams_rows


@dataclasses.dataclass(frozen=True)
class SolverChoice:
    """A checked solver setting: ``method`` is the solver (never ``"auto"``), ``requested``
    the name asked for (``"auto"`` or the solver's name)."""

    method: Solver
    budget_bytes: float
    requested: str = "auto"

    @property
    def solver(self) -> str:
        """The chosen solver's name."""
        return self.method.name


def _auto(*, m: int, p: int, kernel, cv: bool, budget: float) -> Solver:
    """``solver="auto"``: the first exact solver of the table that takes ``kernel`` and whose
    matrices fit ``budget`` GiB."""
    exact = [cls() for cls in SOLVER_CLASSES.values() if cls.auto]
    usable = [s for s in exact if s.refuses(kernel) is None]
    if kernel == "precomputed" and usable:  # a Gram matrix: its check names its memory
        return usable[0]
    for solver in usable:
        if solver.memory_need(m=m, p=p, kernel=kernel, cv=cv).matrices <= budget * GIB:
            return solver
    dual_bytes = DualSolver().memory_need(m=m, p=p, kernel=kernel, cv=cv).matrices
    raise ValueError(
        f"solver='auto': the exact dual solver needs {dual_bytes / GIB:.1f} GiB for m={m} "
        f"training samples (the m x m Gram matrix), over memory_budget={budget:g} GiB; use "
        f"solver='nystrom' with n_components=M centres (an approximation; M x M memory), or "
        f"raise memory_budget")


def check_solver_params(solver, memory_budget, *, m: int, p: int, kernel,
                        cv: bool = False) -> SolverChoice:
    """Check the solver settings against the data shape, before any work.

    Parameters
    ----------
    solver : {"auto", "dual", "primal", "nystrom"}, a registered name, or Solver
        A name means the solver with its default settings.
    memory_budget : float in (0, inf) or None
        GiB (``None``: :data:`ecrm.weights.kernel._solvers.budget.DEFAULT_MEMORY_BUDGET_GIB`).
    m, p : int
        Training samples and input features.
    kernel : str or callable
    cv : bool
        For :class:`ecrm.ECRMCV` (the dual then holds about three m x m arrays at its peak:
        :meth:`Solver.memory_need`).

    Returns
    -------
    SolverChoice

    Examples
    --------
    >>> check_solver_params("auto", 1e-3, m=10**5, p=3, kernel="rbf")
    Traceback (most recent call last):
    ...
    ValueError: solver='auto': the exact dual solver needs 93.1 GiB for m=100000 training \
samples (the m x m Gram matrix), over memory_budget=0.001 GiB; use solver='nystrom' with \
n_components=M centres (an approximation; M x M memory), or raise memory_budget
    """
    check_solver(solver)
    budget = check_budget(memory_budget)
    if isinstance(solver, Solver):
        method, requested = solver, solver.name
    else:
        requested = solver
        method = (_auto(m=m, p=p, kernel=kernel, cv=cv, budget=budget) if solver == "auto"
                  else SOLVER_CLASSES[solver]())
    method.check(m=m, p=p, kernel=kernel, cv=cv, budget=budget)
    return SolverChoice(method, budget * GIB, requested)


def memory_need(solver: str, *, m: int, p: int, kernel, cv: bool, n_components: int | None = None,
                n_targets: int = 1) -> MemoryNeed:
    """The memory the solver named ``solver`` needs on ``m`` x ``p`` inputs
    (:meth:`Solver.memory_need`; ``n_components`` for the Nystrom solver).

    >>> memory_need("dual", m=1000, p=3, kernel="rbf", cv=True).matrices / 8e6
    3.5
    """
    options = {} if n_components is None else {"n_components": n_components}
    return SOLVER_CLASSES[solver](**options).memory_need(m=m, p=p, kernel=kernel, cv=cv,
                                                        n_targets=n_targets)
