"""
The surrogate loss and the generalisation bound
===============================================

The surrogate loss and the generalisation bound of Theorem 4.2 (paper, Section 4).

For a range of rho: the empirical surrogate risk (loss-augmented inference through the exact
oracle), the test loss, and the bound (kappa = 1 for the rbf kernel).
"""

import matplotlib.pyplot as plt
import numpy as np

from ecrm.losses.classification import ZeroOneLoss
from ecrm.reporting.bounds import generalization_bound, surrogate_loss
from ecrm.spaces.candidates import CandidateSpace
from ecrm.weights.kernel.estimator import ECRM


def main(m=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m + 1000, 2))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=len(X)) > 0, 1, -1)
    space = CandidateSpace([[-1], [1]])
    lam = 1.0
    est = ECRM(ZeroOneLoss(space), space, gamma=0.5, alpha=lam, fit_intercept=False)
    est.fit(X[:m], y[:m, None])
    test = ZeroOneLoss(space)(est.predict(X[m:]), y[m:, None]).mean()
    train = ZeroOneLoss(space)(est.predict(X[:m]), y[:m, None]).mean()
    print(f"m={m}, lambda={lam}: train 0-1 {train:.3f}, test 0-1 {test:.3f}")
    print(f"{'rho':>8s} {'surrogate':>10s} {'bound':>10s}")
    rhos, surrogates, bounds = [1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0], [], []
    for rho in rhos:
        s = surrogate_loss(est, X[:m], y[:m, None], rho, loss_bound=1.0)
        b = generalization_bound(est, rho=rho, delta=0.05, loss_bound=1.0)
        surrogates.append(s.mean)
        bounds.append(b.bound)
        print(f"{rho:8g} {s.mean:10.3f} {b.bound:10.3f}")

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.loglog(rhos, surrogates, "o-", label="empirical surrogate risk")
    ax.loglog(rhos, bounds, "s-", label="bound (delta = 0.05)")
    ax.axhline(test, color="k", ls=":", label="test 0-1 loss")
    ax.set(xlabel="rho", ylabel="risk", title="Surrogate risk and generalisation bound")
    ax.legend()
    fig.tight_layout()


if __name__ == "__main__":
    main()
