"""An ECRMCV fit with 1 and with 2 BLAS threads, at a small and a larger training size.

Each fit runs in a fresh process whose BLAS pools are pinned by threadpoolctl (as
``ecrm fit --threads N`` does), the thread counts interleaved fit by fit so that a busy
machine weighs on each alike; medians of ``--repeats`` fits. The data: :func:`make_hmc`
(10 features, 30 labels), the hierarchical loss, ECRMCV's default alpha grid and one RBF
width (one eigendecomposition of the m x m kernel). Run:
``python benchmarks/bench_blas_threads.py [--sizes 600,5000] [--repeats 3]``.
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe  # noqa: E402

_FIT = """
import sys, time
from threadpoolctl import threadpool_limits
from ecrm import ECRMCV
from ecrm.datasets import make_hmc
from ecrm.losses import HierarchicalLoss
from ecrm.selection import LeaveOneOutSearch
m, threads = int(sys.argv[1]), int(sys.argv[2])
X, Y, h = make_hmc(m, random_state=0)
with threadpool_limits(limits=threads, user_api="blas"):
    t0 = time.perf_counter()
    ECRMCV(HierarchicalLoss(h), h, search=LeaveOneOutSearch(kernel_grid={"gamma": [0.1]})).fit(X, Y)
    print(time.perf_counter() - t0)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="600,5000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(t) for t in args.threads.split(",")]
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [src, os.environ.get(
        "PYTHONPATH")])))
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(key, None)  # threadpoolctl sets the count, not the environment
    print(f"machine: {describe()}")
    print(f"{'rows':>6}" + "".join(f"{f'{t} thread(s) s':>16}" for t in counts)
          + "   (median of each; load average before)")
    for m in sizes:
        times: dict[int, list[float]] = {t: [] for t in counts}
        load = os.getloadavg()[0]
        for _ in range(args.repeats):
            for t in counts:
                out = subprocess.run([sys.executable, "-c", _FIT, str(m), str(t)], env=env,
                                     check=True, capture_output=True, text=True).stdout
                times[t].append(float(out.split()[-1]))
        print(f"{m:>6}" + "".join(f"{statistics.median(times[t]):>16.2f}" for t in counts)
              + f"   {load:.2f}; all: "
              + "; ".join(f"{t}: " + ", ".join(f"{v:.2f}" for v in times[t]) for t in counts),
              flush=True)


if __name__ == "__main__":
    main()
