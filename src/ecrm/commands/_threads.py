"""``--threads``: how many BLAS threads ``ecrm fit``, ``predict`` and ``evaluate`` use.

BLAS threads wait for each other on a machine that other work shares (:mod:`ecrm.threads`): on a
shared 2-core machine (load average 6-8) an ECRMCV fit of 600 rows took 0.34 s with one thread and
8.2 s with two, one of 5,000 rows 37 s and 80 s (medians of 3,
``benchmarks/bench_blas_threads.py``); no size measured there made the second thread pay. So the
commands use **one thread** unless ``--threads N`` says otherwise (``0``: the BLAS library's
default, one per core, for a machine to yourself), around the whole command (:func:`limit_threads`,
with threadpoolctl), the estimators' own rule for small problems off.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

__all__ = ["COMMANDS", "add_threads_option", "limit_threads", "workers_option"]

#: The commands that compute, and take ``--threads``.
COMMANDS = ("fit", "predict", "evaluate")

#: The BLAS threads of a command without ``--threads`` (one: measured above).
DEFAULT_THREADS = 1
#: Threads or worker processes an option accepts per CPU of the machine: a few more than the
#: CPUs is a choice (a run that shares them), thousands only exhaust memory and processes.
PER_CPU = 4


def most_workers() -> int:
    """The most threads or worker processes an option accepts: :data:`PER_CPU` per CPU."""
    return PER_CPU * (os.cpu_count() or 1)


def workers_option(name: str, *, low: int = 1):
    """An argparse ``type=`` for a count of threads or worker processes: an integer from
    ``low`` to :func:`most_workers`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        top = most_workers()
        if not low <= value <= top:
            raise argparse.ArgumentTypeError(
                f"{name} must be an integer from {low} to {top} ({PER_CPU} per CPU, "
                f"{os.cpu_count() or 1} CPUs here); got {text!r}")
        return value

    return parse


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--threads N`` to a command's parser."""
    parser.add_argument(
        "--threads", type=workers_option("--threads", low=0), default=DEFAULT_THREADS, metavar="N",
        help=f"BLAS threads (default: {DEFAULT_THREADS}, the fastest on a shared machine; "
        "0: the BLAS library's default, one per core, for a machine to yourself)")


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` BLAS threads (``0``: the library's default), the
    estimators' rule for small problems off; ``None`` (a command without ``--threads``):
    nothing changed.

    threadpoolctl limits the libraries loaded when the block starts: NumPy's and SciPy's
    (each wheel ships its own OpenBLAS) are loaded first, as every such command loads them.
    """
    from ecrm.threads import small_fits

    if threads is None:  # a command without --threads: the estimators' rule
        yield
        return
    with contextlib.ExitStack() as stack:
        if threads:
            import numpy  # noqa: F401
            import scipy.linalg  # noqa: F401
            from threadpoolctl import threadpool_limits

            stack.enter_context(threadpool_limits(limits=threads, user_api="blas"))
        with small_fits(0):
            yield
