"""HMC benchmarks on the Clus data sets, side by side in one process.

1. Inference per instance: ECRM's batched oracle (``h.minimize`` on a batch of test cost
   rows) vs the paper's LP solved per instance with ``scipy.optimize.linprog`` (HiGHS), for
   the Hamming loss on every data set and the hierarchical loss on the trees (on a DAG the
   hierarchical loss is not linear: its batched oracle is timed alone).
2. Fit time against hierarchy size (the paper's Figure 1a): the hierarchy truncated to 10,
   25, 50 and 100% of its labels (a parents-first prefix); ECRM fit, its label-dependent part
   (psi(Y) and the solve with the Cholesky factor, which does not depend on the labels), a
   bare ``scipy.linalg.cho_solve`` with d right-hand sides, and BR-SVM fit (fixed C). Drawn
   as a PNG with ``--plot DIR``.
3. ECRM fit vs BR-SVM fit on every data set (fixed hyper-parameters: the time of one fit).

    python benchmarks/bench_hmc.py [--data-dir DIR] [--datasets a,b] [--plot DIR] [--quick]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import linalg

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time

from ecrm import ECRM, Hierarchy
from ecrm.baselines import BRSVM, BinaryRelevance
from ecrm.commands._options import directory_option, names_option
from ecrm.datasets import HMCPreprocessor, list_hmc, load_hmc
from ecrm.experiments.hmc import DEFAULT_DATASETS, PAPER_KERNEL
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.weights.kernel._kernels import kernel_matrix
from ecrm.weights.kernel._ridge import CholeskyFactor, fit_ridge


def timed(fn, repeats=1):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def prepare(name, data_dir, max_train):
    data = load_hmc(name, data_dir)
    pre = HMCPreprocessor(data.categories).fit(data.train.X)
    Xtr, Ytr = pre.transform(data.train.X), data.train.Y
    if max_train and len(Xtr) > max_train:
        keep = np.random.default_rng(0).choice(len(Xtr), max_train, replace=False)
        Xtr, Ytr = Xtr[keep], Ytr[keep]
    return data, Xtr, Ytr, pre.transform(data.test.X)


def model(loss, h, kernel, n_features):
    gamma = 1.0 / n_features if kernel == "rbf" else None
    return ECRM(loss, h, kernel=kernel, gamma=gamma, alpha=1e-2)


def inference(name, data, Xtr, Ytr, Xte, n_lp):
    h, kernel = data.hierarchy, PAPER_KERNEL.get(name, "linear")
    out = []
    for loss_name, loss in (("Hamming", HammingLoss()), ("hierarchical", HierarchicalLoss(h))):
        C = model(loss, h, kernel, Xtr.shape[1]).fit(Xtr, Ytr).predict_costs(Xte)
        Y, t_batch = timed(lambda C=C, loss=loss: h.minimize(C, loss.cost_form), repeats=3)
        per_batch = t_batch / len(C)
        linear = loss_name == "Hamming" or h.is_tree
        if linear:
            Y_lp, t_lp = timed(lambda C=C: h.argmin(C[:n_lp], method="lp"))
            per_lp = t_lp / n_lp
            gap = np.max(np.abs(np.sum(C[:n_lp] * (Y[:n_lp] - Y_lp), axis=1)))
            out.append((loss_name, per_batch, per_lp, gap))
        else:
            out.append((loss_name, per_batch, float("nan"), float("nan")))
    return out


def truncated(h, fraction):
    keep = [h.labels[j] for j in h.order[: max(1, int(round(fraction * h.n_labels)))]]
    kept = set(keep)
    edges = [(h.labels[p], h.labels[c]) for p, c in h.edges if h.labels[c] in kept]
    return Hierarchy(edges, labels=keep), [h.index[label] for label in keep]


def scaling(name, data, Xtr, Ytr, br_svm):
    kernel = PAPER_KERNEL.get(name, "linear")
    repeats = 3 if len(Xtr) < 5000 else 1
    # The label-independent part: the kernel matrix and its Cholesky factor.
    est = model(HammingLoss(), data.hierarchy, kernel, Xtr.shape[1]).fit(Xtr, Ytr)
    # the fitted model keeps no factor for a linear loss: rebuild the one its fit used
    K = kernel_matrix(Xtr, Xtr, **est.kernel_params_, copy=True)
    factor = CholeskyFactor(K, est._fit.ridge, overwrite_k=True)
    rows = []
    for fraction in (0.1, 0.25, 0.5, 1.0):
        h, cols = truncated(data.hierarchy, fraction)
        Y = Ytr[:, cols]
        _, t_fit = timed(lambda h=h, Y=Y: model(HammingLoss(), h, kernel, Xtr.shape[1])
                         .fit(Xtr, Y), repeats=repeats)
        # The part that grows with the labels: psi(Y) and one solve with d + 2 right-hand sides.
        loss = HammingLoss()
        t_label = median_time(lambda Y=Y, loss=loss: fit_ridge(
            factor, np.column_stack([loss.psi(Y), loss.const(Y)]), True), 5)
        t_solve = median_time(lambda Y=Y: linalg.cho_solve(factor._chol, Y), 5)
        t_br = float("nan")
        if br_svm:  # the estimator BRSVM uses for this data set, at C = 1
            base = BRSVM(h, kernel=kernel)._base(Xtr)
            _, t_br = timed(lambda h=h, Y=Y, base=base: BinaryRelevance(base, h).fit(Xtr, Y))
        rows.append((h.n_labels, t_fit, t_label, t_solve, t_br))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=directory_option("--data-dir"),
                        default=os.environ.get("ECRM_DATA"))
    parser.add_argument("--datasets", type=names_option("--datasets"))
    parser.add_argument("--plot", help="directory for the Figure 1a PNG")
    parser.add_argument("--quick", action="store_true",
                        help="at most 2000 training points and 10 LP instances")
    args = parser.parse_args(argv)
    if not args.data_dir:
        parser.error("no data: set ECRM_DATA or pass --data-dir (see `ecrm reproduce hmc`)")
    found = list_hmc(args.data_dir)
    names = args.datasets or [n for n in DEFAULT_DATASETS if n in found]
    unknown = sorted(set(names) - set(found))
    if unknown:
        parser.error(f"--datasets: no data set {', '.join(unknown)} in {args.data_dir}")
    n_lp, max_train = (10, 2000) if args.quick else (40, None)
    print(f"machine: {describe()}")
    print("\n1. inference per instance: batched oracle vs per-instance HiGHS LP "
          f"({n_lp} LP instances; median of 3 batched runs over the whole test set)")
    print(f"{'data set':<11}{'loss':<14}{'batched us':>11}{'LP us':>10}{'speed-up':>10}"
          f"{'obj. gap':>10}")
    prepared = {}
    for name in names:
        data, Xtr, Ytr, Xte = prepared[name] = prepare(name, args.data_dir, max_train)
        for loss_name, per_batch, per_lp, gap in inference(name, data, Xtr, Ytr, Xte, n_lp):
            ratio = per_lp / per_batch
            print(f"{name:<11}{loss_name:<14}{1e6 * per_batch:>11.1f}{1e6 * per_lp:>10.0f}"
                  f"{ratio:>9.0f}x{gap:>10.1e}")
    print("\n2/3. fit seconds against hierarchy size (Figure 1a); ECRM's label-dependent part "
          "vs a bare cho_solve with d right-hand sides; BR-SVM (fixed C)")
    print(f"{'data set':<11}{'d':>6}{'ECRM fit':>10}{'label part':>11}{'cho_solve':>10}"
          f"{'ratio':>7}{'BR-SVM fit':>11}{'BR/ECRM':>9}")
    figure = {}
    for name in names:
        data, Xtr, Ytr, _ = prepared[name]
        rows = scaling(name, data, Xtr, Ytr, br_svm=True)
        figure[name] = rows
        for d, t_fit, t_label, t_solve, t_br in rows:
            print(f"{name:<11}{d:>6}{t_fit:>10.3f}{t_label:>11.4f}{t_solve:>10.4f}"
                  f"{t_label / t_solve:>7.2f}{t_br:>11.2f}{t_br / t_fit:>8.0f}x")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(figure), figsize=(3.2 * len(figure), 3), squeeze=False)
        for ax, (name, rows) in zip(axes[0], figure.items(), strict=True):
            d = [r[0] for r in rows]
            ax.plot(d, [r[1] for r in rows], "o-", label="ECRM")
            ax.plot(d, [r[4] for r in rows], "s-", label="BR-SVM")
            ax.set(title=name, xlabel="labels", ylabel="fit seconds", yscale="log")
            ax.legend()
        fig.tight_layout()
        os.makedirs(args.plot, exist_ok=True)
        path = os.path.join(args.plot, "fit_time_vs_labels.png")
        fig.savefig(path, dpi=120)
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
