"""The exact bucket-order oracle: time per row for k = 5, 10, 15 and 26 labels, beside the MILP.

Two kinds of cost rows: ``random`` (independent normal costs per ordered pair: one block, the
dynamic programme's worst case and a hard MILP) and ``ecrm`` (a signed weighted sum of the
tau_x embeddings psi of 20 random bucket orders, what ECRM's inference sees; the decomposition
often splits it). Columns, in ms per row:

* ``auto``: :func:`optimal_bucket_order` as the space calls it (decomposition, then the
  dynamic programme on blocks of at most 16 labels, the MILP above);
* ``dp`` / ``dp numpy``: the dynamic programme on the whole row, compiled (numba, if
  installed) and on its NumPy path (the DP columns are empty at k = 26: 3^26 steps);
* ``milp``: one HiGHS MILP per row on the whole row, the median over the rows timed, each
  with a time limit (``certified`` counts the rows it proved optimal).

DP columns: the median of 3 runs of a batch, divided by its rows. The values of every path are
checked against each other (the MILP's to its gap).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_bucket_orders.py
"""

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time  # noqa: E402

from ecrm.losses import TauXLoss
from ecrm.spaces import _bucket_solvers
from ecrm.spaces.bucket_orders import bucket_order_to_pairs, optimal_bucket_order

MILP_TIME_LIMIT = 30.0
#: (k, rows of the batches, rows of the NumPy DP batch, rows solved by the MILP); at k = 26
#: ``auto`` is timed row by row on the MILP's rows
PLAN = [(5, 256, 256, 16), (10, 64, 16, 8), (15, 8, 2, 3), (26, 0, 0, 3)]


def _costs(kind, n, k, rng):
    if kind == "random":
        return rng.normal(size=(n, k * (k - 1)))
    P = rng.integers(1, k // 2 + 2, size=(20, k))  # bucket orders with ties
    w = rng.normal(0.3, 1.0, size=(n, 20))
    return w @ TauXLoss().psi(bucket_order_to_pairs(P))


def _dp(C, engine):
    _bucket_solvers._ENGINE = engine
    try:
        return optimal_bucket_order(C, method="dp")
    finally:
        _bucket_solvers._ENGINE = "auto"


def _rows(C, method):
    """Median time per row solving the rows one by one, the values, the certified count."""
    times, values, certified = [], [], 0
    for c in C:
        t0 = time.perf_counter()
        res = optimal_bucket_order(c[None], method=method, time_limit=MILP_TIME_LIMIT)
        times.append(time.perf_counter() - t0)
        values.append(res.value[0])
        certified += int(res.certified[0])
    return float(np.median(times)), np.array(values), certified


def _ms(seconds):
    return "-" if seconds is None else f"{1e3 * seconds:.3f}"


def main(repeats: int = 3):
    print(describe())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    compiled = _bucket_solvers._import_compiled() is not None
    print(f"compiled dynamic programme: {'numba' if compiled else 'not installed'}")
    rng = np.random.default_rng(0)
    print(f"{'costs':<8}{'k':>3}{'auto':>11}{'dp':>11}{'dp numpy':>11}{'milp':>11}"
          f"{'certified':>11}{'milp/auto':>11}{'largest block':>15}")
    for kind in ("random", "ecrm"):
        for k, n, n_numpy, n_milp in PLAN:
            C = _costs(kind, max(n, n_milp), k, rng)
            auto_res = optimal_bucket_order(C[:n_milp], time_limit=MILP_TIME_LIMIT)
            if n:
                auto = median_time(lambda C=C: optimal_bucket_order(C), repeats) / n
            else:
                auto = _rows(C[:n_milp], "auto")[0]
            dp = dp_np = None
            if k <= 16:
                dp = median_time(lambda C=C: _dp(C, "auto"), repeats) / n
                ref = _dp(C[:n_milp], "auto").value
                if n_numpy:
                    dp_np = median_time(lambda C=C[:n_numpy]: _dp(C, "numpy"),
                                        repeats if k <= 10 else 1, warmup=k <= 10) / n_numpy
                    np.testing.assert_allclose(_dp(C[:n_numpy], "numpy").value,
                                               _dp(C[:n_numpy], "auto").value, rtol=1e-9)
                np.testing.assert_allclose(auto_res.value, ref, rtol=1e-9)
            milp, values, certified = _rows(C[:n_milp], "milp")
            done = auto_res.certified
            np.testing.assert_allclose(values[done], auto_res.value[done], rtol=1e-6)
            block = int(np.median(auto_res.info["largest_block"]))
            print(f"{kind:<8}{k:>3}{_ms(auto):>11}{_ms(dp):>11}{_ms(dp_np):>11}{_ms(milp):>11}"
                  f"{f'{certified}/{n_milp}':>11}{milp / auto:>11.1f}{block:>15}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
