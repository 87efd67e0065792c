"""The ``ecrm`` command."""

from __future__ import annotations

import argparse
import importlib
import sys
import time

#: Modules of ``reproduce`` sub-commands; each defines ``add_parser(subparsers)``.
EXPERIMENTS: list[str] = ["ecrm.experiments.hmc", "ecrm.experiments.flow"]


def _demo(args) -> int:
    import numpy as np
    from sklearn.svm import SVC

    from ecrm import ECRMCV
    from ecrm.baselines import BinaryRelevance
    from ecrm.datasets.synthetic import make_hmc
    from ecrm.experiments.hmc import InMemoryCache
    from ecrm.losses import HammingLoss, HierarchicalLoss

    n = args.n_train + args.n_test
    X, Y, h = make_hmc(n, n_labels=args.labels, random_state=args.seed)
    Xtr, Ytr, Xte, Yte = X[: args.n_train], Y[: args.n_train], X[args.n_train:], Y[args.n_train:]
    hamming, hier = HammingLoss(), HierarchicalLoss(h)
    print(f"Synthetic hierarchical multilabel problem: {h.n_labels} labels in a tree, "
          f"{X.shape[1]} features, {args.n_train} training and {args.n_test} test points "
          f"(seed {args.seed}).")
    print("ECRM: RBF kernel, gamma, alpha and the intercept by exact leave-one-out task loss "
          "on the training set;\nBR-SVM: one RBF SVC per label (C = 1), closed bottom-up.\n")
    rows = []
    grid = {"kernel": ["rbf"], "gamma": [0.03, 0.1, 0.3]}
    memory = InMemoryCache()  # both losses share the three eigendecompositions
    for name, loss in [("Hamming", hamming), ("hierarchical", hier)]:
        t0 = time.perf_counter()
        est = ECRMCV(loss, h, kernel="rbf", fit_intercept="auto", kernel_grid=grid,
                     memory=memory).fit(Xtr, Ytr)
        fit_s = time.perf_counter() - t0
        P = est.predict(Xte)
        rows.append((f"ECRM (trained for {name})", P, fit_s,
                     f"gamma={est.kernel_params_['gamma']}, alpha={est.alpha_:.0e}, "
                     f"intercept={est.fit_intercept_}"))
    t0 = time.perf_counter()
    br = BinaryRelevance(SVC(kernel="rbf", C=1.0), h).fit(Xtr, Ytr)
    rows.append(("BR-SVM (per label)", br.predict(Xte), time.perf_counter() - t0, "C=1"))
    rows.append(("empty label set", np.zeros_like(Yte), 0.0, ""))
    print(f"{'method':<32}{'Hamming':>10}{'hierarchical':>14}{'fit s':>8}  params")
    for label, P, fit_s, params in rows:
        print(f"{label:<32}{hamming(P, Yte).mean():>10.3f}{hier(P, Yte).mean():>14.4f}"
              f"{fit_s:>8.2f}  {params}")
    from ecrm.experiments.flow import demo as flow_demo

    print()
    print(flow_demo(args.seed))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from ecrm import __version__

    parser = argparse.ArgumentParser(
        prog="ecrm", description="Structured prediction by estimated conditional risk "
        "minimisation (Goh & Jaillet, ICML 2016).")
    parser.add_argument("--version", action="version", version=f"ecrm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit ECRM and a per-label baseline on an embedded "
                          "synthetic hierarchical multilabel problem and print test losses")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--n-train", type=int, default=800)
    demo.add_argument("--n-test", type=int, default=1000)
    demo.add_argument("--labels", type=int, default=40)
    demo.set_defaults(func=_demo)
    reproduce = sub.add_parser("reproduce", help="reproduce one of the paper's experiments")
    experiments = reproduce.add_subparsers(dest="experiment", required=True)
    for module in EXPERIMENTS:
        # Each experiment module adds its own sub-command: add_parser(subparsers) sets func.
        importlib.import_module(module).add_parser(experiments)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
