""""ECRM stacked (scores)" of ``ecrm reproduce hmc``: the kernel scores model's, the forest's
and nearest-neighbour weights' risks stacked (:mod:`ecrm.weights.stack`) on their honest label
scores (the kernel's leave-one-out scores through its calibration cross-fitted, the forest's
out of bag, the neighbours' exact leave-one-out: :class:`ecrm.NeighboursECRMCV` on the
standardised features, its ``k`` chosen by the same micro AU(PRC)), weighted by their micro
AU(PRC) on the lattice of step 1/10, with the nested check against the kernel-forest line, the
candidates of "ECRM mixed": unless the stack wins by more than its standard error, its share
and test scores are the mixed row's. One share serves every label: per-label shares passed the
nested check on the honest scores and lost on the held-out test files, a shift between honest
and test scores that the check cannot see. The row records whether the nested check kept the
stack and its gain.
"""

from __future__ import annotations

import numpy as np

__all__ = ["stacked_scores"]

#: The lattice step 1/resolution of the kernel's share.
RESOLUTION = 10


def stacked_scores(kernel, Xte_kernel, forest, Xtr, Ytr, Xte, metric, random_state):
    """Test predictions, test label scores and the parameters of the stacked row
    (``kernel``: the fitted "ECRM (scores)" model and ``Xte_kernel`` its test inputs;
    ``forest``: the fitted "ECRM forest (scores)" model; the neighbours are fitted here)."""
    from sklearn.preprocessing import StandardScaler

    from ecrm import NeighboursECRMCV
    from ecrm.experiments._hmc_scores import honest_scores
    from ecrm.weights._stack_choice import choose_stack

    space = forest.output_space
    scaler = StandardScaler().fit(Xtr)
    neighbours = NeighboursECRMCV(forest.loss, space, scoring=metric)
    N = neighbours.fit_honest(scaler.transform(Xtr), Ytr, scores=True).values
    rows = np.asarray(kernel.loo_rows_)
    S = honest_scores(kernel, random_state)
    F = forest.oob_scores()[rows]
    keep = np.isfinite(F).all(axis=1) & np.isfinite(S).all(axis=1)
    choice = choose_stack(np.stack([S[keep], F[keep], N[rows[keep]]]),
                          np.asarray(Ytr, dtype=float)[rows[keep]], output_space=space,
                          metric=metric, resolution=RESOLUTION, label_shrinkage=None,
                          reference_pairs=[(0, 1)], random_state=random_state)
    Xte_neighbours = scaler.transform(Xte)
    beta = choice.weights
    scores = (beta[0] * np.asarray(kernel.predict_scores(Xte_kernel), dtype=float)
              + beta[1] * np.asarray(forest.predict_scores(Xte), dtype=float)
              + beta[2] * np.asarray(neighbours.predict_scores(Xte_neighbours), dtype=float))
    costs = (beta[0] * kernel.predict_costs(Xte_kernel) + beta[1] * forest.predict_costs(Xte)
             + beta[2] * neighbours.predict_costs(Xte_neighbours))
    P = space.minimize(costs, forest.loss.cost_form)
    return P, scores, {"weights": beta.tolist(), "members": ["kernel", "forest", "neighbours"],
                       "k": neighbours.n_neighbors_, "stack_used": choice.stack_used,
                       "label_shares": False, "honest_auprc": choice.best_score,
                       **choice.nested}
