"""The rankers of the benchmark fitted by other estimators than ECRMCV: ECRM with forest
weights, the label-wise and pairwise random forests, and the structured SVM.

:mod:`ecrm.experiments.ranking` runs them on its folds. Rankings are position vectors
(n, k): entry ``j`` is label ``j``'s place, 0 first.

* **ECRM-forest**: :class:`ecrm.ForestECRMCV` with the Kendall loss (:func:`forest_model`):
  ``FOREST_TREES`` trees split on the Kendall embedding's top principal components (as many
  as labels), the flavour and ``min_samples_split`` in ``FOREST_GRID`` by the out-of-bag
  Kendall distance (one deep forest per flavour, pruned), exact Kemeny aggregation of the
  forest-weighted training rankings. A fold of more than ``FOREST_SEARCH_ABOVE`` points
  judges the flavours on ``FOREST_SEARCH_TREES`` trees and descends along
  ``min_samples_split``, as does one whose exact Kemeny judgements cost more than the
  Kendall model's leave-one-out budget (wisconsin). Every tree draws a whole bootstrap
  sample (``FOREST_MAX_DRAWS``; ``benchmarks/bench_forest_draws.py`` measured a cap worse).
* **ECRM-mixed** (:func:`_mixed`), **LWRF** (:func:`_lwrf`), **PWRF** (:func:`_pwrf`) and
  **SSVM-Kendall** (:func:`_ssvm`, loss-augmented inference by the exact Kemeny oracle).
"""

from __future__ import annotations

import numpy as np

from ecrm.experiments._ranking_knn import _rank_labels

__all__ = ["PUBLISHED", "SSVM_CS", "forest_model"]

#: Best published tau per set: the best of label-wise / pairwise random forests and
#: label-wise linear regression in a 2023 study of nonparametric label ranking (5 x 10-fold
#: CV).
_BEST_2023 = {"iris": 0.968, "wine": 0.956, "glass": 0.906, "vehicle": 0.886, "stock": 0.926,
              "housing": 0.833, "bodyfat": 0.283, "wisconsin": 0.619, "cpu": 0.519,
              "elevators": 0.803, "calhousing": 0.491, "fried": 0.995, "segment": 0.977,
              "cold": 0.108, "diau": 0.220, "dtt": 0.141, "heat": 0.067, "spo": 0.137}
PUBLISHED: dict[str, tuple[float, str, str]] = {
    name: (tau, "LWRF/PWRF/LWLR", "2023 study") for name, tau in _BEST_2023.items()}

FOREST_TREES = 100
#: Random forests (half the features per split) and extremely randomised trees (all of them),
#: each with leaves from fine to coarse: the leaf size matters most on the noisy yeast sets.
FOREST_SPLITS = [2, 5, 10, 20, 40, 80, 160, 320]
FOREST_GRID = [{"flavour": ["random"], "max_features": [0.5], "min_samples_split": FOREST_SPLITS},
               {"flavour": ["extra"], "max_features": [1.0], "min_samples_split": FOREST_SPLITS}]
#: Training folds of more points judge the flavours on ``FOREST_SEARCH_TREES`` trees first.
FOREST_SEARCH_ABOVE = 2000
FOREST_SEARCH_TREES = 25
#: Bootstrap draws per tree at most (``None``: the whole bootstrap sample).
FOREST_MAX_DRAWS = None
#: ECRM-mixed's kernel shares (0: the forest alone, 1: the kernel alone).
MIXING_GRID = 11
#: The structured SVM's C grid (RBF kernel with gamma = 1/p, intercept included: the diagonal
#: is 2).
SSVM_CS = (0.005, 0.05, 0.5, 5.0)


def _forest(Xtr, Rtr, Xte, seed, honest=None):
    """ECRM-forest: test rankings and the chosen settings, with the out-of-bag mean Kendall
    distance (``oob_discordant``) that ECRM-honest compares; ``honest["forest"]`` is set to
    the fitted model (for ECRM-mixed)."""
    from ecrm.spaces.permutations import PermutationSpace

    space = PermutationSpace(Rtr.shape[1])
    model = forest_model(*Rtr.shape, seed).fit(Xtr, space.from_ranks(Rtr))
    if honest is not None:
        honest["forest"] = model
    return space.to_ranks(model.predict(Xte)), {
        **model.best_params_, "max_samples": model.max_samples,
        "search_estimators": model.search.search_estimators, "oob_discordant": model.oob_loss_}


def forest_model(m: int, k: int, seed: int, max_draws: int | None = FOREST_MAX_DRAWS):
    """ECRM-forest's unfitted :class:`ecrm.ForestECRMCV` for a training fold of ``m``
    rankings of ``k`` labels, each tree drawing at most ``max_draws`` points (``None``: a
    whole bootstrap sample)."""
    from ecrm import ForestECRMCV
    from ecrm.experiments._ranking_kernel import KENDALL_LOO_BUDGET
    from ecrm.losses.kendall import KendallLoss
    from ecrm.selection import OutOfBagSearch
    from ecrm.spaces.permutations import PermutationSpace

    large = m > FOREST_SEARCH_ABOVE
    costly = m * 2**k * k > KENDALL_LOO_BUDGET  # exact Kemeny judgements: wisconsin, k = 16
    search = OutOfBagSearch(param_grid=FOREST_GRID,
                            search_estimators=FOREST_SEARCH_TREES if large else None,
                            split_search="descent" if large or costly else "grid")
    return ForestECRMCV(KendallLoss(), PermutationSpace(k), search=search,
                        n_estimators=FOREST_TREES,
                        max_samples=max_draws if max_draws is not None and m > max_draws
                        else None,
                        n_split_targets=k, split_projection="principal", random_state=seed)


def _honest(kernel, forest):
    """ECRM-honest: of the kernel model ECRM-selected chose and the forest, the one with the
    smaller honest mean Kendall distance on the training fold (exact leave-one-out against
    out-of-bag; ties go to the kernel)."""
    if forest[1]["oob_discordant"] < kernel[1]["loo_discordant"]:
        return forest[0], {"family": "forest", **forest[1]}
    return kernel[0], {"family": "kernel", **kernel[1]}


def _mixed(kernels: dict, forest, Rtr, Xte):
    """ECRM-mixed (described in :mod:`ecrm.experiments.ranking`): for each loss of
    ``ECRM_LOSSES`` (``kernels[name] = (model, rows, leave-one-out costs)``) and each kernel
    share in ``MIXING_GRID``, the share of the kernel model's and the rest of the forest's
    weights (:meth:`ecrm.ForestECRM.weighted_sum`: one forest serves the three losses)
    applied to that loss, judged on the Kendall model's leave-one-out points; ties go to the
    earlier loss, then the smaller share (as :func:`ecrm.weights.mixture.choose_mixture`)."""
    from ecrm.experiments._ranking_kernel import ECRM_LOSSES
    from ecrm.losses.kendall import KendallLoss
    from ecrm.weights.mixture import choose_mixture

    space = forest.output_space
    Ytr = space.from_ranks(Rtr).astype(float)
    rows = kernels["ECRM-Kendall"][1]
    best: tuple = (np.inf,)
    table = {}
    for label in ECRM_LOSSES:
        model, own_rows, K = kernels[label]
        psi = model.loss.psi(Ytr)
        K = K[np.searchsorted(own_rows, rows)]  # every model's points include Kendall's
        F = np.full(psi.shape, np.nan)  # out of bag only where the kernel's points are
        F[rows] = forest.weighted_sum(psi, rows=rows)
        choice = choose_mixture((rows, K), F, Ytr, MIXING_GRID,
                                loss=model.loss, output_space=space, judge=KendallLoss())
        table[label] = choice.mean_losses.tolist()
        at = int(np.argmax(choice.scores))
        if choice.mean_losses[at] < best[0]:
            best = (float(choice.mean_losses[at]), label, choice.mixture, model, psi)
    distance, label, share, model, psi = best
    C = share * model.predict_costs(Xte) + (1.0 - share) * forest.weighted_sum(psi, Xte)
    return space.to_ranks(space.minimize(C, model.loss.cost_form)), {
        "loss": label, "mixture": share, "honest_discordant": distance,
        "candidates": table}


def _lwrf(Xtr, Rtr, Xte, seed):
    """LWRF: one regression forest per label on its position."""
    from sklearn.ensemble import RandomForestRegressor

    P = np.column_stack([
        RandomForestRegressor(FOREST_TREES, random_state=seed + j).fit(Xtr, Rtr[:, j])
        .predict(Xte) for j in range(Rtr.shape[1])])
    return _rank_labels(P), {"n_estimators": FOREST_TREES}


def _pwrf(Xtr, Rtr, Xte, seed):
    """PWRF: one classification forest per pair (a, b) on whether a comes before b, then the
    exact Kemeny ranking of the predicted probabilities (placing a first costs P(b before a))."""
    from sklearn.ensemble import RandomForestClassifier

    from ecrm.spaces.linear_ordering import linear_ordering

    k = Rtr.shape[1]
    before = np.zeros((len(Xte), k, k))  # before[:, a, b] = P(a before b)
    for a, b in zip(*np.triu_indices(k, 1), strict=True):
        z = Rtr[:, a] < Rtr[:, b]
        if z.all() or not z.any():  # one order in the training fold
            p = np.full(len(Xte), float(z[0]))
        else:
            clf = RandomForestClassifier(FOREST_TREES, random_state=seed + a * k + b)
            p = clf.fit(Xtr, z).predict_proba(Xte)[:, list(clf.classes_).index(True)]
        before[:, a, b], before[:, b, a] = p, 1 - p
    order = linear_ordering(np.transpose(before, (0, 2, 1))).solution
    return np.argsort(order, axis=1), {"n_estimators": FOREST_TREES}


def _ssvm(Xtr, Rtr, Xte, gammas, seed):
    """:class:`ecrm.StructuredSVM` with the Kendall loss: the RBF kernel with the middle of
    ``gammas``, C in ``SSVM_CS`` by 3-fold cross-validation of the Kendall loss on the
    training fold (20 passes), refitted with up to 100 passes (duality gap 1% of the primal)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import GridSearchCV, KFold

    from ecrm import StructuredSVM
    from ecrm.losses.kendall import KendallLoss
    from ecrm.spaces.permutations import PermutationSpace

    space = PermutationSpace(Rtr.shape[1])
    Ytr = space.from_ranks(Rtr)
    gamma = sorted(gammas)[len(gammas) // 2]
    base = StructuredSVM(KendallLoss(), space, gamma=gamma, tol=1e-2, max_iter=20,
                         random_state=seed)
    search = GridSearchCV(base, {"C": list(SSVM_CS)},
                          cv=KFold(3, shuffle=True, random_state=seed), refit=False)
    with warnings.catch_warnings():  # the search's 20 passes are the protocol's, by design
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(Xtr, Ytr)
    C = search.best_params_["C"]
    model = base.set_params(C=C, max_iter=100).fit(Xtr, Ytr)
    return space.to_ranks(model.predict(Xte)), {"kernel": "rbf", "gamma": gamma, "C": C,
                                                "passes": model.n_iter_}
