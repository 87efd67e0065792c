"""ECRM-stacked of ``ecrm reproduce ranking``: the risk stacked from the three losses' kernel
ECRM models and ECRM-forest (:mod:`ecrm.weights.stack`), judged against ECRM-mixed.

The oracle loss, the embedding the combined weights are applied to, is ECRM-mixed's: the
loss whose kernel-forest line has the smallest honest Kendall distance. Choosing it once,
rather than a stack per loss, keeps the candidates judged on the same few hundred honest
points to one lattice. A convex combination of the members' *weights* is applied to that
loss's embedding. Each member's honest costs in it are known without a refit: the forest's
out of bag (:meth:`ecrm.ForestECRM.weighted_sum`), and a kernel model's exact leave-one-out
regression of the embedding (its kernel, ridge :math:`m\\alpha` and intercept; the
leave-one-out of a ridge regression is linear in its targets, so any loss's targets can be
regressed by any kernel model's weights). :func:`ecrm.weights.stack.choose_stack` chooses the
weights on the lattice of step 1/10 (greedy forward selection over four members) by the mean
Kendall distance of the exact rankings of the combined honest costs on the Kendall model's
leave-one-out points, with the nested honest check (two halves) against the line between the
oracle loss's kernel model and the forest, ECRM-mixed's candidates: unless the stack wins by
more than its standard error, the row is ECRM-mixed's choice (same candidates, same judge,
same ties).

On folds fitted by the Nystrom solver another loss's exact leave-one-out is not at hand: the
members are the oracle loss's kernel model and the forest, whose stack is their line, and the
row is ECRM-mixed's.
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []  # the protocol takes _stacked

#: The lattice step 1/RESOLUTION of the search.
RESOLUTION = 10


def kernel_loo(model, Xtr, T, rows) -> np.ndarray:
    """Exact leave-one-out predictions, at ``rows``, of the ridge regressions of ``T``
    (m, e) with a fitted dual :class:`ecrm.ECRMCV`'s kernel, ridge and intercept."""
    from ecrm.weights.kernel._kernels import kernel_matrix
    from ecrm.weights.kernel._ridge import EigenFactor, LeaveOneOut

    K = kernel_matrix(Xtr, Xtr, **model.kernel_params_)
    eig = EigenFactor.from_kernel(K, overwrite_k=True)
    loo = LeaveOneOut(eig, np.asarray(T, dtype=float), rows)
    return loo.predictions(len(Xtr) * model.alpha_, model.fit_intercept_)


def _stacked(kernels: dict, forest, Xtr, Rtr, Xte, seed, mixed, *, exact: bool):
    """ECRM-stacked's test rankings and parameters (``kernels[label] = (model, rows,
    leave-one-out costs)`` of the fold's three kernel models; ``mixed``: ECRM-mixed's
    (rankings, parameters); ``exact``: fitted by the dual)."""
    from ecrm.experiments._ranking_kernel import ECRM_LOSSES
    from ecrm.losses.kendall import KendallLoss
    from ecrm.weights._stack_choice import choose_stack

    label, share = mixed[1]["loss"], mixed[1]["mixture"]
    if not exact:  # two members: the stack is the line, ECRM-mixed's choice
        return mixed[0], {"loss": label, "members": [label, "ECRM-forest"],
                          "weights": [round(share, 3), round(1.0 - share, 3)],
                          "stack_used": False,
                          "honest_discordant": mixed[1]["honest_discordant"]}
    space = forest.output_space
    Ytr = space.from_ranks(Rtr).astype(float)
    rows = kernels["ECRM-Kendall"][1]
    names = list(ECRM_LOSSES)
    loss = kernels[label][0].loss
    psi = loss.psi(Ytr)
    members = []
    for name in names:
        model, own_rows, own = kernels[name]
        if name == label:  # its own leave-one-out costs, as the search computed them
            members.append(own[np.searchsorted(own_rows, rows)])
        else:
            members.append(kernel_loo(model, Xtr, psi, rows))
    members.append(forest.weighted_sum(psi, rows=rows))
    choice = choose_stack(np.stack(members), Ytr[rows], loss=loss, output_space=space,
                          judge=KendallLoss(), resolution=RESOLUTION, random_state=seed,
                          reference_pairs=[(names.index(label), len(names))])
    C = forest.weighted_sum(psi, Xte) * choice.weights[-1]
    for beta, name in zip(choice.weights[:-1], names, strict=True):
        if beta > 0:
            model = kernels[name][0]
            C = C + beta * (model.predict_costs(Xte) if name == label
                            else model.conditional_weights(Xte) @ psi)
    return space.to_ranks(space.minimize(C, loss.cost_form)), {
        "loss": label, "members": [*names, "ECRM-forest"],
        "weights": choice.weights.round(3).tolist(), "stack_used": choice.stack_used,
        "honest_discordant": -choice.best_score, "gain": choice.nested["gain"],
        "std_error": choice.nested["std_error"]}
