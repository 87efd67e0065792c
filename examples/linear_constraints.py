"""
Output spaces given by linear constraints
=========================================

Any output space of binary vectors given by linear constraints (paper, Theorem 3.1).

Outputs pick one label per group (two groups of three) and may switch on a bonus label only
when label 0 is on. The constraint matrix is checked for total unimodularity; every answer
carries the method that found it ("lp" when the certified LP relaxation is exact, "milp"
otherwise) and a proven lower bound.
"""

import matplotlib.pyplot as plt
import numpy as np

from ecrm.losses.multilabel import HammingLoss
from ecrm.spaces.polytope import LinearConstraintSpace
from ecrm.weights.kernel.estimator import ECRM


def main(n=120, seed=0):
    A_eq = [[1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 0]]  # one label per group
    A_ub = [[-1, 0, 0, 0, 0, 0, 1]]  # bonus (label 6) only with label 0
    space = LinearConstraintSpace(A_ub=A_ub, b_ub=[0], A_eq=A_eq, b_eq=[1, 1])
    print(f"{space!r}\n  totally unimodular: {space.tu.is_tu} ({space.tu.method})")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g1, g2 = np.argmax(X @ rng.normal(size=(3, 3)), 1), np.argmax(X @ rng.normal(size=(3, 3)), 1)
    Y = np.zeros((n, 7))
    Y[np.arange(n), g1] = 1
    Y[np.arange(n), 3 + g2] = 1
    Y[:, 6] = (g1 == 0) & (X[:, 2] > 0)
    est = ECRM(HammingLoss(), space, gamma=0.5, alpha=1e-3).fit(X[:80], Y[:80])
    res = space.solve(est.predict_costs(X[80:]))
    n_lp = int(np.sum(res.method == "lp"))
    print(f"  test Hamming loss {HammingLoss()(res.solution, Y[80:]).mean():.3f}; "
          f"methods: {n_lp} lp, {len(res.method) - n_lp} milp; "
          f"{res.n_certified} of {len(res.method)} certified optimal")

    # the test outputs: true and predicted labels, every row feasible
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6, 3.5), sharey=True)
    for ax, Z, title in ((ax1, Y[80:], "true"), (ax2, res.solution, "predicted")):
        ax.imshow(np.asarray(Z, dtype=float), aspect="auto", cmap="Greys", interpolation="none")
        ax.set(title=title, xlabel="label (groups 0-2, 3-5; bonus 6)", xticks=range(7))
    ax1.set_ylabel("test point")
    fig.tight_layout()

    # A matrix that is not totally unimodular (an odd cycle): the relaxation can be
    # fractional and the MILP fallback takes over.
    odd = LinearConstraintSpace(A_ub=[[1, 1, 0], [0, 1, 1], [1, 0, 1]], b_ub=[1, 1, 1])
    res = odd.solve([[-1.0, -1.0, -1.0]])
    print(f"odd cycle: TU={odd.tu.is_tu} (det {odd.tu.determinant:g} on rows/cols "
          f"{odd.tu.witness}); LP bound {res.info['lp_bound'][0]:.2f}, integer optimum "
          f"{res.value[0]:.2f} via {res.method[0]}")


if __name__ == "__main__":
    main()
