""""ECRM stacked (scores)" of ``ecrm reproduce hmc``: the kernel scores model's and the
forest's risks stacked (:mod:`ecrm.weights.stack`) on the honest label scores of "ECRM mixed"
(the kernel's calibrated leave-one-out scores, the forest's out of bag): the kernel's share by
their micro AU(PRC) on the lattice of step 1/10, which with two members is the kernel-forest
line, also the nested check's reference. One share serves every label: per-label shares passed
the nested check on the honest scores and lost on the held-out test files, a shift between
honest and test scores that the check cannot see. With two members and that reference the
stack's choice is the mixture's, so its test scores are those of "ECRM mixed"; the row records
whether the nested check kept the stack and its gain.
"""

from __future__ import annotations

import numpy as np

__all__ = ["stacked_scores"]

#: The lattice step 1/resolution of the kernel's share.
RESOLUTION = 10


def stacked_scores(kernel, Xte_kernel, forest, Ytr, Xte, metric, random_state):
    """Test predictions, test label scores and the parameters of the stacked row
    (``kernel``: the fitted "ECRM (scores)" model and ``Xte_kernel`` its test inputs;
    ``forest``: the fitted "ECRM forest (scores)" model)."""
    from ecrm.weights._stack_choice import choose_stack

    space = forest.output_space
    S = kernel.loo_scores_
    if kernel.score_calibration_ is not None:  # the map its test scores go through
        S = space.consistent_scores(kernel.score_calibration_.transform(S))
    F = forest.oob_scores()[kernel.loo_rows_]
    keep = np.isfinite(F).all(axis=1) & np.isfinite(S).all(axis=1)
    rows = np.asarray(kernel.loo_rows_)[keep]
    choice = choose_stack(np.stack([S[keep], F[keep]]), np.asarray(Ytr, dtype=float)[rows],
                          output_space=space, metric=metric, resolution=RESOLUTION,
                          label_shrinkage=None, reference_pairs=[(0, 1)],
                          random_state=random_state)
    test = np.stack([np.asarray(kernel.predict_scores(Xte_kernel), dtype=float),
                     np.asarray(forest.predict_scores(Xte), dtype=float)])
    share = float(choice.weights[0])
    scores = share * test[0] + (1 - share) * test[1]
    costs = share * kernel.predict_costs(Xte_kernel) + (1 - share) * forest.predict_costs(Xte)
    P = space.minimize(costs, forest.loss.cost_form)
    return P, scores, {"weights": choice.weights.tolist(), "stack_used": choice.stack_used,
                       "label_shares": False,
                       "honest_auprc": choice.best_score,
                       **choice.nested}
