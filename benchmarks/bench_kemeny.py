"""The exact linear ordering (Kemeny) oracle against one HiGHS MILP per row, k = 4..16.

Two kinds of cost rows: ``random`` (independent normal costs: one strongly connected block,
the dynamic programme's worst case) and ``kemeny`` (a signed weighted sum of 20 random
rankings' pairwise orders, what ECRM's Kendall inference sees; the decomposition usually
splits it). Prints the median time per row of ``linear_ordering`` ("auto": decomposition + DP),
the DP on the whole row, the per-row MILP, and the ratio MILP / auto.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_kemeny.py
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time  # noqa: E402

from ecrm.spaces.linear_ordering import linear_ordering


def _costs(kind, n, k, rng):
    if kind == "random":
        return rng.normal(size=(n, k, k))
    R = np.argsort(rng.random((20, k)), axis=1)
    w = rng.normal(0.3, 1.0, size=(n, 20))
    return np.einsum("nm,mab->nab", w, (R[:, :, None] > R[:, None, :]).astype(float))


def main(repeats: int = 3):
    print(describe())
    rng = np.random.default_rng(0)
    print(f"{'costs':<8}{'k':>3}{'auto ms/row':>13}{'dp ms/row':>11}{'milp ms/row':>13}"
          f"{'milp/auto':>11}{'largest block':>15}")
    for kind in ("random", "kemeny"):
        for k in range(4, 17, 2):
            n = 256 if k <= 10 else 32
            B = _costs(kind, n, k, rng)
            B_milp = B[:8]
            auto = median_time(lambda B=B: linear_ordering(B), repeats) / n
            dp = median_time(lambda B=B: linear_ordering(B, method="dp"), repeats) / n
            milp = median_time(lambda B=B_milp: linear_ordering(B, method="milp"), 1) / len(B_milp)
            a, m = linear_ordering(B_milp), linear_ordering(B_milp, method="milp")
            np.testing.assert_allclose(a.value, m.value, rtol=1e-6, atol=1e-9)
            block = int(np.median(linear_ordering(B).info["largest_block"]))
            print(f"{kind:<8}{k:>3}{1e3 * auto:>13.3f}{1e3 * dp:>11.3f}{1e3 * milp:>13.2f}"
                  f"{milp / auto:>11.0f}{block:>15}")


if __name__ == "__main__":
    main()
