"""Training time against the number of labels: ECRM, BR-SVM and the structured SVM.

The paper's Figure 1a, extended to the max-margin column: synthetic trees
(:func:`ecrm.datasets.make_hmc`) of 10 to 10,000 labels on the same 1,000 training points
(20 features, RBF kernel with gamma = 1/p), each method at fixed parameters, side by side in
one process:

- ECRM: ``ECRM(HammingLoss(), h, alpha=1e-3)``: one Cholesky factor, d + 2 right-hand sides;
- BR-SVM: one ``SVC`` per label (C = 1), closed bottom-up (``ecrm.baselines.BinaryRelevance``);
- SSVM: ``StructuredSVM(HammingLoss(), h, C=...)`` until its duality gap is 1% of the primal
  objective (at most ``--ssvm-passes`` passes; the passes run are printed).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_fit_labels.py [--plot DIR]``. Medians of
``--repeats`` fits; BR-SVM is skipped beyond ``--brsvm-max`` labels (its time is linear in
the labels: the table says so rather than extrapolating).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import describe, median_time
from sklearn.svm import SVC

from ecrm import ECRM, StructuredSVM
from ecrm.baselines import BinaryRelevance
from ecrm.datasets import make_hmc
from ecrm.losses import HammingLoss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", default="10,100,1000,10000")
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--brsvm-max", type=int, default=1000)
    parser.add_argument("--ssvm-passes", type=int, default=50)
    parser.add_argument("--ssvm-C", type=float, default=0.1)
    parser.add_argument("--plot", help="directory for fit_time_vs_labels.png")
    args = parser.parse_args()
    print(describe())
    print(f"m = {args.m} training points, 20 features, RBF kernel; seconds (median of "
          f"{args.repeats})")
    print(f"{'labels':>7} {'ECRM':>9} {'BR-SVM':>9} {'SSVM':>9} {'passes':>7} "
          f"{'BR/ECRM':>8} {'SSVM/ECRM':>10}")
    rows = []
    for d in [int(v) for v in args.labels.split(",")]:
        X, Y, h = make_hmc(args.m, n_features=20, n_labels=d, random_state=0)
        gamma = 1.0 / X.shape[1]
        ecrm = median_time(lambda: ECRM(HammingLoss(), h, gamma=gamma, alpha=1e-3).fit(X, Y),
                           args.repeats)
        br = np.nan
        if d <= args.brsvm_max:
            br = median_time(lambda: BinaryRelevance(SVC(C=1.0, gamma=gamma), h).fit(X, Y),
                             max(1, args.repeats // 3), warmup=False)
        passes = []

        def ssvm_fit():
            t0 = time.perf_counter()
            est = StructuredSVM(HammingLoss(), h, gamma=gamma, C=args.ssvm_C, tol=1e-2,
                                max_iter=args.ssvm_passes, random_state=0).fit(X, Y)
            passes.append(est.n_iter_)
            return time.perf_counter() - t0

        ssvm = median_time(ssvm_fit, max(1, args.repeats // 3), warmup=False)
        rows.append((d, ecrm, br, ssvm, passes[-1]))
        print(f"{d:>7} {ecrm:>9.3f} {br:>9.2f} {ssvm:>9.2f} {passes[-1]:>7} {br / ecrm:>8.0f}x "
              f"{ssvm / ecrm:>9.0f}x", flush=True)
    if args.plot:
        import os

        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        os.makedirs(args.plot, exist_ok=True)
        arr = np.array(rows, dtype=float)
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for k, name in ((1, "ECRM"), (2, "BR-SVM (C=1)"), (3, f"SSVM (C={args.ssvm_C:g})")):
            keep = np.isfinite(arr[:, k])
            ax.loglog(arr[keep, 0], arr[keep, k], "o-", label=name)
        ax.set(xlabel="number of labels", ylabel="training time (s)",
               title=f"fit time against labels (m = {args.m})")
        ax.legend()
        fig.tight_layout()
        path = os.path.join(args.plot, "fit_time_vs_labels.png")
        fig.savefig(path, dpi=100)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
