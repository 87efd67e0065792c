"""Fits and predictions with 1 BLAS thread and with more, across training sizes.

Each measurement runs in a fresh process whose BLAS pools are pinned by threadpoolctl (as
``ecrm fit --threads N`` does), the thread counts interleaved run by run so that a busy
machine weighs on each alike; medians of ``--repeats`` runs. The data: :func:`make_hmc`
(10 features, 30 labels), the hierarchical loss. The models (``--models``):

* ``ecrmcv``: ECRMCV's default alpha grid and one RBF width (one eigendecomposition of the
  m x m kernel), the fit timed;
* ``pipeline``: a scikit-learn pipeline of a StandardScaler and ECRM (fixed alpha, RBF), the
  fit and the prediction of the m training rows timed separately.

The estimators' own rule (one BLAS thread below :data:`ecrm.threads.DEFAULT_SMALL_FIT_ROWS` rows) is
switched off here (``set_small_fit_rows(0)``), so that the counts given are the counts used.
Run: ``python benchmarks/bench_blas_threads.py [--sizes 200,600,1500,3000] [--repeats 3]``.
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe  # noqa: E402

_RUN = """
import sys, time
from threadpoolctl import threadpool_limits
from ecrm import ECRM, ECRMCV
from ecrm.datasets import make_hmc
from ecrm.losses import HierarchicalLoss
from ecrm.selection import LeaveOneOutSearch
try:
    from ecrm.threads import set_small_fit_rows
    set_small_fit_rows(0)  # the counts given below, whatever the size
except ImportError:  # a version without the rule
    pass
model, m, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
X, Y, h = make_hmc(m, random_state=0)
with threadpool_limits(limits=threads, user_api="blas"):
    if model == "ecrmcv":
        t0 = time.perf_counter()
        ECRMCV(HierarchicalLoss(h), h,
               search=LeaveOneOutSearch(kernel_grid={"gamma": [0.1]})).fit(X, Y)
        print(time.perf_counter() - t0, 0.0)
    else:
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        pipe = make_pipeline(StandardScaler(), ECRM(HierarchicalLoss(h), h))
        t0 = time.perf_counter()
        pipe.fit(X, Y)
        t1 = time.perf_counter()
        pipe.predict(X)
        print(t1 - t0, time.perf_counter() - t1)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,600,1500,3000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}")
    parser.add_argument("--models", default="pipeline,ecrmcv")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(t) for t in args.threads.split(",")]
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [src, os.environ.get(
        "PYTHONPATH")])))
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(key, None)  # threadpoolctl sets the count, not the environment
    print(f"machine: {describe()}")
    print(f"{'model':>9} {'rows':>6}" + "".join(f"{f'fit {t} thr. s':>14}" for t in counts)
          + "".join(f"{f'predict {t} thr. s':>18}" for t in counts)
          + "   (medians; load average before and after)")
    for model in args.models.split(","):
        for m in sizes:
            fit: dict[int, list[float]] = {t: [] for t in counts}
            pred: dict[int, list[float]] = {t: [] for t in counts}
            load = os.getloadavg()[0]
            for _ in range(args.repeats):
                for t in counts:
                    out = subprocess.run([sys.executable, "-c", _RUN, model, str(m), str(t)],
                                         env=env, check=True, capture_output=True,
                                         text=True).stdout.split()
                    fit[t].append(float(out[-2]))
                    pred[t].append(float(out[-1]))
            print(f"{model:>9} {m:>6}"
                  + "".join(f"{statistics.median(fit[t]):>14.3f}" for t in counts)
                  + "".join(f"{statistics.median(pred[t]):>18.3f}" for t in counts)
                  + f"   {load:.2f} / {os.getloadavg()[0]:.2f}; fits: "
                  + "; ".join(f"{t}: " + ", ".join(f"{v:.2f}" for v in fit[t])
                              for t in counts), flush=True)


if __name__ == "__main__":
    main()
