"""
Label ranking with Spearman's footrule
======================================

Label ranking (paper, Example 2) on semi-synthetic sets from scikit-learn's bundled data.

Rankings come from cross-fitted naive Bayes class probabilities with 30% of the features held
out of X (see ecrm.datasets.ranking). Three methods predict a ranking of the classes:

* ECRM with Spearman's footrule (alpha by exact leave-one-out, ECRMCV), exact inference by
  the assignment problem;
* kernel ridge regression of each class's position, then ranking by predicted position;
* kNN with footrule aggregation: the exact footrule median of the k neighbours' rankings
  (one assignment problem), k chosen by leave-one-out on the training set.

Run:  python examples/label_ranking.py --datasets iris wine digits breast_cancer --repeats 5
"""

import argparse
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import NearestNeighbors

from ecrm.datasets.ranking import RANKING_DATASETS, make_label_ranking
from ecrm.losses.ranking import FootruleLoss, spearman_rho
from ecrm.weights.kernel.estimator import ECRMCV

ALPHAS = np.logspace(-6, 0, 13)


def ecrm_footrule(X, Y, Xt, space):
    est = ECRMCV(FootruleLoss(), space, alphas=ALPHAS, gamma=1.0 / X.shape[1]).fit(X, Y)
    return est.predict(Xt)


def krr_positions(X, Y, Xt, space):
    ranks = space.to_ranks(Y).astype(float)
    grid = {"alpha": len(X) * ALPHAS}
    krr = GridSearchCV(KernelRidge(kernel="rbf", gamma=1.0 / X.shape[1]), grid, cv=3)
    return space.from_scores(-krr.fit(X, ranks).predict(Xt))


def knn_footrule(X, Y, Xt, space, ks=(1, 3, 5, 9, 15, 25)):
    psi = FootruleLoss().psi(Y)
    nn = NearestNeighbors(n_neighbors=max(ks) + 1).fit(X)
    _, idx = nn.kneighbors(X)
    idx = idx[:, 1:]  # leave-one-out: drop the point itself
    loo = [FootruleLoss()(space.argmin(psi[idx[:, :k]].sum(axis=1)), Y).mean() for k in ks]
    k = ks[int(np.argmin(loo))]
    _, idx = nn.kneighbors(Xt, n_neighbors=k)
    return space.argmin(psi[idx].sum(axis=1))


METHODS = {"ECRM (footrule)": ecrm_footrule, "KRR positions": krr_positions,
           "kNN footrule median": knn_footrule}


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Label ranking: ECRM (footrule) against kernel ridge and kNN.")
    parser.add_argument("--datasets", nargs="+", default=["iris"], choices=RANKING_DATASETS)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"{'data set':14s} {'d':>3s} {'method':22s} {'footrule':>9s} {'spearman':>9s} "
          f"{'time s':>7s}")
    rhos = {}
    for name in args.datasets:
        scores = {m: [] for m in METHODS}
        for rep in range(args.repeats):
            data = make_label_ranking(name, random_state=rep)
            X, Xt, Y, Yt = train_test_split(data.X, data.Y, test_size=0.3, random_state=rep)
            for method, fn in METHODS.items():
                start = time.perf_counter()
                pred = fn(X, Y, Xt, data.space)
                scores[method].append((FootruleLoss()(pred, Yt).mean(),
                                       spearman_rho(pred, Yt).mean(),
                                       time.perf_counter() - start))
        for method, s in scores.items():
            foot, rho, sec = np.mean(s, axis=0)
            rhos.setdefault(method, []).append(rho)
            print(f"{name:14s} {data.space.n_items:3d} {method:22s} {foot:9.3f} {rho:9.3f} "
                  f"{sec:7.2f}")

    # mean test Spearman's rho of each method on the first data set
    fig, ax = plt.subplots(figsize=(6, 2.6))
    values = [v[0] for v in rhos.values()]
    ax.barh(list(rhos), values, color=["C0", "C1", "C2"])
    for k, v in enumerate(values):
        ax.text(v, k, f" {v:.3f}", va="center")
    ax.set(xlabel="test Spearman's rho", title=f"Label ranking ({args.datasets[0]})",
           xlim=(min(values) - 0.05, 1.0))
    ax.invert_yaxis()
    fig.tight_layout()


if __name__ == "__main__":
    main()
