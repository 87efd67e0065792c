"""The hot path of ``ECRMCV(scoring="micro_auprc")``, old vs new in one process.

Each candidate (kernel, alpha, intercept) of the selection on the leave-one-out label scores
costs: the leave-one-out scores (a (m x m) by (m x d) product per alpha), the hierarchy's
consistency step (``cap_by_parents``) and the pooled micro AU(PRC) of m x d scores. On the
same arrays (a 1,500-point subsample of a Clus data set, default spo_GO: 1,500 x 4,119
scores; Laplacian kernel, gamma = 1/p, alpha = 1e-3) this times, as medians:

1. the metric: ``sklearn.metrics.average_precision_score(average="micro")`` against
   :func:`ecrm.reporting.metrics.pooled_average_precision` (the values are printed: equal to 1e-12);
2. the consistency step: the previous ``np.minimum.at`` per depth level against
   :meth:`ecrm.Hierarchy.cap_by_parents` (equal exactly);
3. the two intercept candidates of one alpha: two products (before) against one shared;
4. one whole candidate pair, before against now.

    python benchmarks/bench_score_selection.py [--data-dir DIR] [--dataset spo_GO]
           [--rows 1500] [--repeats 3]
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time

from ecrm.datasets import HMCPreprocessor, load_hmc
from ecrm.experiments.hmc import C_HMCNN_EXCLUDE
from ecrm.reporting.metrics import micro_auprc
from ecrm.weights.kernel._kernels import check_kernel_params
from ecrm.weights.kernel._ridge import LeaveOneOut
from ecrm.weights.kernel._solvers.dual import gram_eigendecomposition


def cap_by_parents_before(h, S):
    """``Hierarchy.cap_by_parents`` as it was: ``np.minimum.at`` over the edges per level."""
    S = np.array(S, dtype=float).reshape(-1, h.n_labels)
    T = np.ascontiguousarray(S.T)
    E = h._edges
    child_depth = h.depth[E[:, 1]]
    for level in range(1, int(h.depth.max(initial=0)) + 1):
        into = E[child_depth == level]
        np.minimum.at(T, into[:, 1], T[into[:, 0]])
    return np.ascontiguousarray(T.T)


def sklearn_micro(Y, S, labels):
    keep = np.array([name not in set(C_HMCNN_EXCLUDE) for name in labels])
    return float(average_precision_score(Y[:, keep], S[:, keep], average="micro"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("ECRM_DATA"))
    parser.add_argument("--dataset", default="spo_GO")
    parser.add_argument("--rows", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(describe())
    print(f"load average {os.getloadavg()[0]:.2f}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    data = load_hmc(args.dataset, args.data_dir)
    h = data.hierarchy
    X = HMCPreprocessor(data.categories).fit(data.train.X).transform(data.train.X)
    rng = np.random.RandomState(0)
    sub = np.sort(rng.choice(len(X), min(args.rows, len(X)), replace=False))
    X, Y = X[sub], data.train.Y[sub].astype(float)
    params = check_kernel_params("laplacian", 1.0 / X.shape[1], 3, 1)
    eig = gram_eigendecomposition(X, params)
    ridge = len(X) * 1e-3
    labels = h.labels
    print(f"{args.dataset}: {len(X)} rows x {h.n_labels} labels "
          f"({'tree' if h.is_tree else 'DAG'}), {len(h.edges)} edges\n")

    loo = LeaveOneOut(eig, Y)
    S = np.clip(loo.predictions(ridge, True), 0, 1)
    S = h.cap_by_parents(S)
    r = args.repeats
    rows = []

    old = median_time(lambda: sklearn_micro(Y, S, labels), r)
    new = median_time(lambda: micro_auprc(Y, S, labels=labels, exclude=C_HMCNN_EXCLUDE), r)
    v_old = sklearn_micro(Y, S, labels)
    v_new = micro_auprc(Y, S, labels=labels, exclude=C_HMCNN_EXCLUDE)
    rows.append(("micro AU(PRC)", old, new, f"{v_old:.15f} vs {v_new:.15f}"))

    raw = np.clip(loo.predictions(ridge, True), 0, 1)
    old = median_time(lambda: cap_by_parents_before(h, raw), r)
    new = median_time(lambda: h.cap_by_parents(raw), r)
    same = np.array_equal(cap_by_parents_before(h, raw), h.cap_by_parents(raw))
    rows.append(("cap_by_parents", old, new, f"identical: {same}"))

    def two_products():
        for intercept in (True, False):
            loo._last = None  # no shared product: one per candidate, as before
            loo.predictions(ridge, intercept)

    def shared_product():
        loo._last = None
        for intercept in (True, False):
            loo.predictions(ridge, intercept)

    rows.append(("LOO scores, 2 intercepts", median_time(two_products, r),
                 median_time(shared_product, r), "one product instead of two"))

    def pair_before():
        for intercept in (True, False):
            loo._last = None
            P = cap_by_parents_before(h, np.clip(loo.predictions(ridge, intercept), 0, 1))
            sklearn_micro(Y, P, labels)

    def pair_now():
        loo._last = None
        for intercept in (True, False):
            P = h.cap_by_parents(np.clip(loo.predictions(ridge, intercept), 0, 1))
            micro_auprc(Y, P, labels=labels, exclude=C_HMCNN_EXCLUDE)

    rows.append(("one alpha, 2 candidates", median_time(pair_before, r),
                 median_time(pair_now, r), "all of the above"))
    print(f"{'step':<28}{'before s':>10}{'now s':>10}{'ratio':>8}  note")
    for name, old, new, note in rows:
        print(f"{name:<28}{old:>10.3f}{new:>10.3f}{old / new:>8.1f}  {note}")


if __name__ == "__main__":
    main()
