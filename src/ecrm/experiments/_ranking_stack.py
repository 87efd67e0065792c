"""ECRM-stacked of ``ecrm reproduce ranking``: the risk stacked from the three losses' kernel
ECRM models, ECRM-forest and k-nearest-neighbour weights (:mod:`ecrm.weights.stack`), judged
against ECRM-mixed.

The oracle loss, the embedding the combined weights are applied to, is ECRM-mixed's: the
loss whose kernel-forest line has the smallest honest Kendall distance. Choosing it once,
rather than a stack per loss, keeps the candidates judged on the same few hundred honest
points to one lattice. A convex combination of the members' *weights* is applied to that
loss's embedding. Each member's honest costs in it are known without a refit: the forest's
out of bag (:meth:`ecrm.ForestECRM.weighted_sum`); a kernel model's exact leave-one-out
regression of the embedding (its kernel, ridge :math:`m\\alpha` and intercept; the
leave-one-out of a ridge regression is linear in its targets, so any loss's targets can be
regressed by any kernel model's weights); and the nearest-neighbour weights' exact leave-one-out
(:math:`w_i(x) = 1/k` on the :math:`k` nearest other training points, :math:`k` chosen by the
Kendall distance of its own leave-one-out rankings). :func:`ecrm.weights.stack.choose_stack`
chooses the weights on the lattice of step 1/10 (greedy forward selection over five members)
by the mean Kendall distance of the exact rankings of the combined honest costs on the Kendall
model's leave-one-out points, with the nested honest check (two halves) against the line
between the oracle loss's kernel model and the forest, ECRM-mixed's candidates: unless the
stack wins by more than its standard error, the row is ECRM-mixed's choice (same candidates,
same judge, same ties).

On folds fitted by the Nystrom solver another loss's exact leave-one-out is not at hand: the
members are the oracle loss's kernel model, the forest and the neighbours (the whole lattice
of three members is searched), with the same check against the kernel-forest line.
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


def knn_member(Xtr, psi, Xte, rows, judge_ranks, loss, space):
    """The k-nearest-neighbour weights' member: their exact leave-one-out costs at ``rows``
    (each row's ``k`` nearest other training points) and their test costs, the mean of
    ``psi`` (m, e) over the neighbours, with ``k`` of ``NEIGHBOURS`` (below ``m``) chosen by
    the mean of ``judge_ranks(rankings, rows)`` of the oracle's leave-one-out rankings (ties:
    the smaller ``k``). Returns ``(loo costs, test costs, k)``."""
    from sklearn.neighbors import NearestNeighbors

    from ecrm.experiments._ranking_knn import NEIGHBOURS
    from ecrm.weights.neighbours._fit import neighbour_mean, others

    ks = [k for k in NEIGHBOURS if k < len(Xtr)]
    index = NearestNeighbors().fit(Xtr)
    loo = others(index, Xtr, max(ks), rows)
    costs = [neighbour_mean(loo[:, :k], psi) for k in ks]
    judged = [judge_ranks(space.to_ranks(space.minimize(C, loss.cost_form)), rows).mean()
              for C in costs]
    at = int(np.argmin(judged))
    test = index.kneighbors(Xte, n_neighbors=ks[at], return_distance=False)
    return costs[at], neighbour_mean(test, psi), ks[at]


def _stacked(kernels: dict, forest, Xtr, Rtr, Xte, seed, mixed, *, exact: bool):
    """ECRM-stacked's test rankings and parameters (``kernels[label] = (model, rows,
    leave-one-out costs)`` of the fold's three kernel models; ``mixed``: ECRM-mixed's
    (rankings, parameters); ``exact``: fitted by the dual)."""
    from ecrm.experiments._ranking_kernel import ECRM_LOSSES
    from ecrm.experiments._ranking_knn import _discordant
    from ecrm.losses.kendall import KendallLoss
    from ecrm.weights._stack_choice import choose_stack

    label = mixed[1]["loss"]
    space = forest.output_space
    Ytr = space.from_ranks(Rtr).astype(float)
    rows = kernels["ECRM-Kendall"][1]
    names = list(ECRM_LOSSES) if exact else [label]  # other losses' leave-one-out: the dual
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
    knn_loo, knn_test, k = knn_member(Xtr, psi, Xte, rows,
                                      lambda R, at: _discordant(R, Rtr[at]), loss, space)
    members.append(knn_loo)
    at_forest = len(names)
    choice = choose_stack(np.stack(members), Ytr[rows], loss=loss, output_space=space,
                          judge=KendallLoss(), resolution=RESOLUTION, random_state=seed,
                          reference_pairs=[(names.index(label), at_forest)])
    beta = choice.weights
    C = beta[at_forest] * forest.weighted_sum(psi, Xte) + beta[-1] * knn_test
    for share, name in zip(beta[:at_forest], names, strict=True):
        if share > 0:
            model = kernels[name][0]
            C = C + share * (model.predict_costs(Xte) if name == label
                             else model.conditional_weights(Xte) @ psi)
    return space.to_ranks(space.minimize(C, loss.cost_form)), {
        "loss": label, "members": [*names, "ECRM-forest", "kNN"], "k": k,
        "weights": beta.round(3).tolist(), "stack_used": choice.stack_used,
        "honest_discordant": -choice.best_score, "gain": choice.nested["gain"],
        "std_error": choice.nested["std_error"]}


#: The members' names in the results (their labels in a fold's ``members``).
MEMBER_NAMES = {"ECRM-Kendall": "Kendall", "ECRM-footrule": "footrule",
                "ECRM-squared": "squared", "ECRM-forest": "forest", "kNN": "neighbours"}


def summary(params: list, taus, mixed_taus=None, *, folds: int) -> dict:
    r"""ECRM-stacked's per-fold ``params`` summed up for the results: ``stack_used`` (the
    share of folds whose nested check kept the stack), ``low_rank`` (its folds had three
    members), ``median_k`` (the neighbours'), ``weight_<member>`` (each member's mean
    weight, 0 on a fold without it) and, given ECRM-mixed's fold scores ``mixed_taus``,
    ``folds_as_mixed`` (folds whose test score equals ECRM-mixed's), ``gain_over_mixed``
    (the mean of the per-fold differences of ``taus`` and ``mixed_taus``) and
    ``gain_std_error``, its corrected resampled standard error
    (:func:`ecrm.weights._stack_choice.resampled_std_error`; the rows the folds were
    fitted on overlap, a test fold is :math:`1/(k - 1)` of its training fold for
    ``folds`` = :math:`k`)."""
    from ecrm.weights._stack_choice import resampled_std_error

    out = {"stack_used": float(np.mean([p["stack_used"] for p in params])),
           "low_rank": len(params[0]["members"]) == 3,
           "median_k": float(np.median([p["k"] for p in params]))}
    for name in MEMBER_NAMES.values():
        out["weight_" + name] = 0.0
    for p in params:
        for member, weight in zip(p["members"], p["weights"], strict=True):
            out["weight_" + MEMBER_NAMES[member]] += weight / len(params)
    if mixed_taus is not None:
        gains = np.subtract(taus, mixed_taus)
        out.update(folds_as_mixed=int(np.sum(gains == 0.0)),
                   gain_over_mixed=float(gains.mean()),
                   gain_std_error=resampled_std_error(gains, 1.0 / (folds - 1)))
    return out
