"""How many BLAS threads the estimators use: one for small problems.

BLAS libraries (OpenBLAS, MKL) start one thread per core. On a machine that other work
shares, those threads wait for each other at every step of a factorisation, and a small
fit can take ten times longer with them than with one thread
(``benchmarks/bench_blas_threads.py`` measures both). So inside ``fit``,
``predict`` and ``predict_scores`` of every estimator of this package, a call on fewer
than :func:`small_fit_rows` rows (``X``'s) runs with **one BLAS thread**; a larger one
keeps the BLAS library's threads as they are. Nested calls (a search fitting its members)
follow the outermost one.

To choose yourself, for every estimator at once:

* ``set_small_fit_rows(0)`` switches the rule off (the BLAS library's threads for every
  size, or those of your own ``threadpoolctl.threadpool_limits`` around the call);
  ``set_small_fit_rows(n)`` moves the threshold;
* ``with small_fits(rows): ...`` does the same for a block of code only.

The ``ecrm`` commands choose the threads themselves (``--threads``, default one), with
the rule off.

The limit is threadpoolctl's, on the BLAS libraries loaded when it is first used (NumPy's
and SciPy's); like every BLAS setting it holds for the whole process, so estimators fitted
at the same time in several threads of one process share it.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["DEFAULT_SMALL_FIT_ROWS", "set_small_fit_rows", "small_fit_rows", "small_fits",
           "within_rule"]

#: Problems (rows of ``X``) below this size run with one BLAS thread by default.
DEFAULT_SMALL_FIT_ROWS = 5000

_setting = {"rows": DEFAULT_SMALL_FIT_ROWS}
_local: ContextVar[int | None] = ContextVar("ecrm_small_fit_rows", default=None)
_decided: ContextVar[bool] = ContextVar("ecrm_blas_threads_decided", default=False)
_controller = None
_lock = threading.Lock()


def _check_rows(rows) -> int:
    from ecrm.estimators._validation import check_int

    return check_int(rows, "rows", low=0)


def small_fit_rows() -> int:
    """The threshold in force: calls on fewer rows run with one BLAS thread (0: never)."""
    local = _local.get()
    return _setting["rows"] if local is None else local


def set_small_fit_rows(rows: int) -> int:
    """Set the threshold for every estimator (0: the rule off); return the previous one.

    Parameters
    ----------
    rows : int >= 0

    Returns
    -------
    previous : int

    Examples
    --------
    >>> from ecrm.threads import set_small_fit_rows
    >>> previous = set_small_fit_rows(0)  # the BLAS library's threads, whatever the size
    >>> set_small_fit_rows(previous)
    0
    """
    rows = _check_rows(rows)
    previous, _setting["rows"] = _setting["rows"], rows
    return previous


@contextlib.contextmanager
def small_fits(rows: int) -> Iterator[None]:
    """Use the threshold ``rows`` (0: the rule off) inside the block only.

    Examples
    --------
    >>> from ecrm.threads import small_fit_rows, small_fits
    >>> with small_fits(0):
    ...     small_fit_rows()
    0
    """
    token = _local.set(_check_rows(rows))
    try:
        yield
    finally:
        _local.reset(token)


def _one_thread():
    """threadpoolctl's limit of the BLAS libraries to one thread (the controller found once:
    looking for the libraries takes milliseconds, a limit microseconds)."""
    global _controller
    with _lock:
        if _controller is None:
            import numpy  # noqa: F401 - their BLAS libraries loaded before the search
            import scipy.linalg  # noqa: F401
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")


def _rows(X) -> int | None:
    shape = getattr(X, "shape", None)
    try:
        return int(shape[0]) if shape is not None else len(X)
    except (TypeError, ValueError, IndexError):  # a Dask array of unknown chunks, no len
        return None


def within_rule(method: Callable) -> Callable:
    """``method(self, X, ...)`` run with one BLAS thread when ``X`` has fewer rows than
    :func:`small_fit_rows` (the outermost such call decides)."""

    @functools.wraps(method)
    def run(self, X, *args, **kwargs):
        if _decided.get():
            return method(self, X, *args, **kwargs)
        token = _decided.set(True)
        try:
            n = _rows(X)
            if n is None or n >= small_fit_rows():
                return method(self, X, *args, **kwargs)
            with _one_thread():
                return method(self, X, *args, **kwargs)
        finally:
            _decided.reset(token)

    return run
