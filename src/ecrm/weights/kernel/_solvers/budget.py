r"""The memory budget and row blocks (checked before any work).

Each solver states its peak memory (:meth:`ecrm.weights.kernel._solvers.solver.Solver.
memory_need`, checked against the measured peak by ``benchmarks/bench_memory.py``) in the
copies declared here; its matrices are checked against ``memory_budget`` (GiB, default
:data:`DEFAULT_MEMORY_BUDGET_GIB`) before it allocates. Row blocks (streaming fits and every
prediction) are sized by scikit-learn's ``working_memory`` (MiB, default 1024), as
:func:`sklearn.metrics.pairwise_distances_chunked` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sklearn import get_config
from sklearn.utils import gen_batches

from ecrm.estimators._parameters import check_parameter, vocabulary

__all__ = ["BLOCK_FEATURE_COPIES", "DUAL_COPIES", "GIB", "MemoryNeed", "check_budget", "pass_bytes",
           "row_blocks"]

#: Shorthands of ``center_selection`` (:func:`ecrm.weights.kernel._solvers.centers.select_centers`).
CENTER_SELECTIONS = vocabulary("center_selection")
#: Default ``memory_budget`` in GiB: the largest m x m working set the dual may allocate.
DEFAULT_MEMORY_BUDGET_GIB = 8.0
#: Bytes in a GiB.
GIB = 2.0 ** 30


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


def pass_bytes(m: int, row_floats: int) -> float:
    """The largest row block of a pass whose rows take ``row_floats`` floats (20% slack)."""
    rows = max(1, min(m, int(get_config()["working_memory"] * 2**20 // (8 * row_floats))))
    return 1.2 * 8.0 * rows * row_floats


def check_budget(memory_budget) -> float:
    """The checked ``memory_budget`` in GiB (``None``: :data:`DEFAULT_MEMORY_BUDGET_GIB`)."""
    budget = check_parameter("memory_budget", memory_budget)
    return DEFAULT_MEMORY_BUDGET_GIB if budget is None else budget
