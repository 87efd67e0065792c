"""``ecrm demo``: ECRM and BR-SVM on a synthetic hierarchical multilabel problem, then flows.

The hierarchical problem is :func:`ecrm.datasets.make_hmc` (a random tree of labels): ECRM
chooses gamma, alpha and the intercept by its exact leave-one-out task loss, once for the
Hamming and once for the hierarchical loss; BR-SVM fits one RBF SVC per label. A short
network-flow run (:func:`ecrm.experiments.flow.demo`) follows.
"""

from __future__ import annotations

import time

from ecrm._validation import check_int
from ecrm.experiments import number_option

__all__ = ["add_parser", "run"]

#: ECRM's leave-one-out needs two training points.
_MIN_TRAIN = 2


def run(args) -> int:
    """Run ``ecrm demo`` from parsed arguments (``seed``, ``n_train``, ``n_test``, ``labels``)."""
    import numpy as np
    from sklearn.svm import SVC

    from ecrm import ECRMCV
    from ecrm.baselines import BinaryRelevance
    from ecrm.datasets.synthetic import make_hmc
    from ecrm.experiments.cache import InMemoryCache
    from ecrm.experiments.flow import demo as flow_demo
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
    print()
    print(flow_demo(args.seed))
    return 0


def add_parser(subparsers) -> None:
    """Add the ``demo`` sub-command to the ``ecrm`` command."""
    parser = subparsers.add_parser(
        "demo", help="fit ECRM and a per-label baseline on an embedded synthetic hierarchical "
        "multilabel problem and print test losses", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=number_option(check_int, "--seed", low=0,
                                                     high=2**32 - 1), default=0)
    parser.add_argument("--n-train", type=number_option(check_int, "--n-train", low=_MIN_TRAIN),
                        default=800, help=f"training points (at least {_MIN_TRAIN})")
    parser.add_argument("--n-test", type=number_option(check_int, "--n-test"), default=1000,
                        help="test points (at least 1)")
    parser.add_argument("--labels", type=number_option(check_int, "--labels"), default=40,
                        help="labels in the tree (at least 1)")
    parser.set_defaults(func=run)
