"""``ecrm demo``: noisy handwritten digits as a two-level hierarchy; ECRM, BR-SVM; the oracle.

The problem is scikit-learn's bundled digits (no download) with Gaussian pixel noise, labelled
by a path in a two-level tree: ``round/{0,6,8,9}``, ``straight/{1,4,7}``, ``curved/{2,3,5}``.
ECRM chooses gamma, alpha and the intercept by its exact leave-one-out task loss, once for the
Hamming and once for the hierarchical loss; BR-SVM fits one RBF SVC per label (C by 3-fold
cross-validation on the training set) and closes its label sets bottom-up. The table gives
the test losses; a few test images show the label names ECRM predicts (trained for the
hierarchical loss, it names only the group when it cannot tell the digit). The timing
compares the hierarchy's exact oracle (a batched dynamic programme) with one HiGHS LP per
instance. A short network-flow run (:func:`ecrm.experiments.flow.demo`) follows.
"""

from __future__ import annotations

import sys
import time

from ecrm.commands._options import number_option
from ecrm.estimators._validation import check_int, check_real

__all__ = ["GROUPS", "add_parser", "digits_hierarchy", "run"]

#: ECRM's leave-one-out needs two training points.
_MIN_TRAIN = 2
#: BR-SVM tunes C by 3-fold cross-validation from this many training images on (else C = 1).
_MIN_TUNE = 30
#: The two-level tree over the ten digits.
GROUPS = {"round": (0, 6, 8, 9), "straight": (1, 4, 7), "curved": (2, 3, 5)}


def digits_hierarchy():
    """The noisy-digits problem's hierarchy and the label path of each digit."""
    from ecrm import Hierarchy

    path = {d: f"{g}/{d}" for g, digits in GROUPS.items() for d in digits}
    return Hierarchy([(g, f"{g}/{d}") for g, digits in GROUPS.items() for d in digits]), path


def _oracle_timing(h, C) -> str:
    import numpy as np

    h.argmin(C[:1])  # warm-up: the programme's plan is built once per hierarchy
    h.argmin(C[:1], method="lp")
    t0 = time.perf_counter()
    exact = h.argmin(C)
    t_dp = (time.perf_counter() - t0) / len(C)
    k = min(len(C), 50)
    t0 = time.perf_counter()
    lp = h.argmin(C[:k], method="lp")
    t_lp = (time.perf_counter() - t0) / k
    same = bool(np.array_equal(exact[:k], lp))
    return (f"Oracle: the exact tree programme takes {1e6 * t_dp:.1f} us per instance "
            f"({len(C)} at once); one HiGHS LP per instance takes {1e6 * t_lp:.0f} us "
            f"({t_lp / t_dp:.0f}x slower; same answers on {k} instances: {same}).")


def run(args) -> int:
    """Run ``ecrm demo`` from parsed arguments (``seed``, ``n_train``, ``n_test``, ``noise``)."""
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    from ecrm import ECRMCV
    from ecrm.baselines import BinaryRelevance
    from ecrm.experiments.cache import InMemoryCache
    from ecrm.experiments.flow import demo as flow_demo
    from ecrm.losses import HammingLoss, HierarchicalLoss
    from ecrm.selection import LeaveOneOutSearch

    digits = load_digits()
    rng = np.random.default_rng(args.seed)
    n = len(digits.target)
    if args.n_train + args.n_test > n:
        print(f"ecrm: error: --n-train + --n-test must be at most {n} (the digits); got "
              f"{args.n_train + args.n_test}", file=sys.stderr)
        return 2
    h, path = digits_hierarchy()
    X = digits.data + rng.normal(scale=args.noise, size=digits.data.shape)
    X = (X - X.mean(axis=0)) / X.std(axis=0)  # standardised features (as users should)
    Y = h.to_matrix([[path[d]] for d in digits.target])
    order = rng.permutation(n)
    tr, te = order[: args.n_train], order[args.n_train: args.n_train + args.n_test]
    hamming, hier = HammingLoss(), HierarchicalLoss(h)
    print(f"Noisy handwritten digits (scikit-learn's 8x8 digits, pixel noise sd {args.noise:g}) "
          f"as a two-level hierarchy of {h.n_labels} labels: "
          + ", ".join(f"{g} {{{','.join(map(str, d))}}}" for g, d in GROUPS.items())
          + f"; {args.n_train} training and {args.n_test} test images (seed {args.seed}).")
    print("ECRM: RBF kernel, gamma, alpha and the intercept by exact leave-one-out task loss "
          "on the training set;\nBR-SVM: one RBF SVC per label, C by 3-fold CV on the training "
          "set (C = 1 below 30 images), closed bottom-up.\n")
    rows = []
    grid = {"kernel": ["rbf"], "gamma": [0.003, 0.01, 0.03]}
    memory = InMemoryCache()  # both losses share the three eigendecompositions
    models = {}
    for name, loss in [("Hamming", hamming), ("hierarchical", hier)]:
        t0 = time.perf_counter()
        est = ECRMCV(loss, h, search=LeaveOneOutSearch(
            fit_intercept="auto", kernel_grid=grid, memory=memory)).fit(X[tr], Y[tr])
        fit_s = time.perf_counter() - t0
        models[name] = est
        rows.append((f"ECRM (trained for {name})", est.predict(X[te]), fit_s,
                     f"gamma={est.kernel_params_['gamma']}, alpha={est.alpha_:.0e}, "
                     f"intercept={est.fit_intercept_}"))
    t0 = time.perf_counter()
    tuned = args.n_train >= _MIN_TUNE
    svc = (GridSearchCV(SVC(kernel="rbf"), {"C": [0.3, 1.0, 3.0, 10.0]}, cv=3) if tuned
           else SVC(kernel="rbf", C=1.0))
    br = BinaryRelevance(svc, h).fit(X[tr], Y[tr])
    rows.append(("BR-SVM (per label)", br.predict(X[te]), time.perf_counter() - t0,
                 "C by 3-fold CV" if tuned else "C=1"))
    rows.append(("empty label set", np.zeros_like(Y[te]), 0.0, ""))
    print(f"{'method':<32}{'Hamming':>9}{'hierarchical':>14}{'exact':>7}{'fit s':>7}  params")
    for label, P, fit_s, params in rows:
        exact = np.mean(np.all(P == Y[te], axis=1))
        print(f"{label:<32}{hamming(P, Y[te]).mean():>9.3f}{hier(P, Y[te]).mean():>14.4f}"
              f"{exact:>7.3f}{fit_s:>7.2f}  {params}")
    est = models["hierarchical"]
    P = est.predict(X[te])
    names = h.to_labels(P, leaves_only=True)
    truth = h.to_labels(Y[te], leaves_only=True)
    group_only = [i for i, v in enumerate(names) if v and "/" not in v[0]]
    shown = list(dict.fromkeys(list(range(min(3, len(te)))) + group_only[:3]))
    print(f"\nPredicted label names (ECRM trained for the hierarchical loss; it names only the "
          f"group on {len(group_only)} of {len(te)} test images):")
    for i in shown:
        print(f"  image {te[i]:>4}: true {', '.join(truth[i]):<12} predicted "
              f"{', '.join(names[i]) or '(nothing)'}")
    print()
    print(_oracle_timing(h, est.predict_costs(X[te])))
    print()
    print(flow_demo(args.seed))
    return 0


def add_parser(subparsers) -> None:
    """Add the ``demo`` sub-command to the ``ecrm`` command."""
    parser = subparsers.add_parser(
        "demo", help="fit ECRM and a per-label baseline on noisy digits as a two-level "
        "hierarchy and print test losses, label names and the oracle's speed",
        description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=number_option(check_int, "--seed", low=0,
                                                     high=2**32 - 1), default=0)
    parser.add_argument("--n-train", type=number_option(check_int, "--n-train", low=_MIN_TRAIN),
                        default=400, help=f"training images (at least {_MIN_TRAIN})")
    parser.add_argument("--n-test", type=number_option(check_int, "--n-test"), default=1397,
                        help="test images (at least 1; train + test at most 1797)")
    parser.add_argument("--noise", type=number_option(check_real, "--noise", low_open=False),
                        default=4.0, help="sd of the Gaussian pixel noise (pixels are 0-16)")
    parser.set_defaults(func=run)
