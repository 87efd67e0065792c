"""ECRM fit vs scikit-learn KernelRidge fit on the same kernel and the same m x d targets.

Both solve (K + m*alpha*I) A = psi(Y) for d label columns; ECRM also validates Y against the
output space and (with the intercept) solves one extra right-hand side. Medians of repeated
runs, side by side in one process; the ratio is ECRM / KernelRidge.

    python benchmarks/bench_fit.py [--quick]
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.kernel_ridge import KernelRidge

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time

from ecrm import ECRM, MultilabelSpace
from ecrm.losses import HammingLoss


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    sizes = [(500, 50), (1000, 100)] if args.quick else [(1000, 100), (2000, 500), (4000, 1000)]
    repeats = 3 if args.quick else 5
    rng = np.random.default_rng(0)
    alpha = 1e-3
    print(f"machine: {describe()}")
    print(f"{'m':>6}{'d':>6}{'KernelRidge s':>15}{'ECRM s':>10}{'ratio':>7}"
          f"{'ECRM+icpt s':>13}{'ratio':>7}")
    for m, d in sizes:
        X = rng.normal(size=(m, 20))
        Y = (rng.random((m, d)) < 0.1).astype(float)
        targets = HammingLoss().psi(Y)
        space = MultilabelSpace(d)
        kr = median_time(lambda: KernelRidge(alpha=m * alpha, kernel="rbf", gamma=0.05)
                         .fit(X, targets), repeats)
        ec = median_time(lambda: ECRM(HammingLoss(), space, gamma=0.05, alpha=alpha,
                                      fit_intercept=False).fit(X, Y), repeats)
        ei = median_time(lambda: ECRM(HammingLoss(), space, gamma=0.05, alpha=alpha,
                                      fit_intercept=True).fit(X, Y), repeats)
        print(f"{m:>6}{d:>6}{kr:>15.3f}{ec:>10.3f}{ec / kr:>7.2f}{ei:>13.3f}{ei / kr:>7.2f}")


if __name__ == "__main__":
    main()
