"""Forest weights (ecrm.weights.forest) against their definitions.

The weights of a row are computed here from scratch, tree by tree, with scikit-learn's own
``apply`` and bootstrap draws; the costs, the out-of-bag criterion, every oracle on forest
costs and the model files are checked against that, against scikit-learn's forest
predictions and against brute force.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

from _ids import named
from _round_off import ROOM, term_scale
from _shapes import TREE5 as TREE
from ecrm import (
    CandidateSpace,
    FlowPolytope,
    ForestECRM,
    ForestECRMCV,
    Hierarchy,
    LinearConstraintSpace,
    MultilabelSpace,
    PermutationSpace,
    load,
    save,
)
from ecrm.losses import (
    AbsoluteLoss,
    FootruleLoss,
    HammingLoss,
    HierarchicalLoss,
    KendallLoss,
    SquaredRankLoss,
    ZeroOneLoss,
)
from ecrm.model_files._archive import ModelFileError
from ecrm.selection import OutOfBagSearch
from ecrm.testing import check_oracle
from ecrm.weights.forest._fit import ForestFit, grow_forest, prune

DAG = Hierarchy([("a", "c"), ("b", "c"), ("a", "d"), ("c", "e")])


def _explicit_weights(forest, X_train, X, split=None) -> np.ndarray:
    """w_i(x) = 1/T sum_t b_ti 1[leaf_t(x_i) = leaf_t(x)] / sum_j b_tj 1[...], tree by tree;
    with ``split``, the leaves of the trees stopped at nodes of fewer drawn points."""
    m, W = len(X_train), np.zeros((len(X), len(X_train)))
    for est, drawn in zip(forest.estimators_, forest.estimators_samples_, strict=True):
        b = np.bincount(drawn, minlength=m)
        lx, lt = (_stopped_leaves(est, Z, split) for Z in (X, X_train))
        same = (lx[:, None] == lt[None, :]) * b[None, :]
        W += same / same.sum(axis=1, keepdims=True)
    return W / len(forest.estimators_)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), flavour=st.sampled_from(["random", "extra"]),
       leaf=st.integers(1, 4), draws=st.integers(10, 40))
@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
def test_weights_are_the_definition_and_the_costs_the_forest_prediction(seed, flavour, leaf,
                                                                        draws):
    rng = np.random.default_rng(seed)
    X, Xt = rng.normal(size=(40, 3)), rng.normal(size=(15, 3))
    G = rng.normal(size=(40, 2))
    trees, bag, leaves, _ = grow_forest(X, G, flavour=flavour, n_estimators=7, max_features=0.5,
                                     min_samples_leaf=leaf, max_depth=None, n_draws=draws,
                                     n_jobs=None, random_state=seed)
    np.testing.assert_array_equal(leaves, trees.apply(X))  # scikit-learn's leaves are ours
    cls = RandomForestRegressor if flavour == "random" else ExtraTreesRegressor
    forest = cls(7, max_features=0.5, min_samples_leaf=leaf, bootstrap=True, oob_score=True,
                 max_samples=draws, random_state=seed).fit(X, G)
    np.testing.assert_array_equal(bag.sum(axis=0), draws)
    fit = ForestFit(trees, bag, 3, X_train=X, coef=G)
    W = fit.weights(fit.block(Xt))
    assert (W >= 0).all()
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(W, _explicit_weights(forest, X, Xt), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fit.block(Xt) @ G, forest.predict(Xt), rtol=1e-10, atol=1e-12)
    W_oob, seen = fit.oob_weights()
    np.testing.assert_array_equal(seen, (bag == 0).any(axis=1))
    np.testing.assert_allclose((W_oob @ G)[seen], forest.oob_prediction_[seen], rtol=1e-10,
                               atol=1e-12)
    assert np.all(W_oob.diagonal() == 0)  # a point never weighs itself out of bag


def _stopped_leaves(tree, X, split=None) -> np.ndarray:
    """Each row's leaf in a scikit-learn tree; with ``split``, the first node of its path
    that holds fewer than ``split`` drawn points (or its leaf)."""
    X = X.astype(np.float32)
    if split is None:
        return tree.apply(X)
    path, sizes = tree.decision_path(X), tree.tree_.n_node_samples
    out = []
    for r in range(len(X)):
        nodes = np.sort(path.indices[path.indptr[r]:path.indptr[r + 1]])  # root to leaf
        small = nodes[sizes[nodes] < split]
        out.append(small[0] if len(small) else nodes[-1])
    return np.array(out)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), flavour=st.sampled_from(["random", "extra"]),
       split=st.integers(2, 16), draws=st.integers(10, 40))
def test_a_pruned_forest_weighs_by_the_leaves_of_its_stopped_trees(seed, flavour, split,
                                                                    draws):
    rng = np.random.default_rng(seed)
    X, Xt, G = rng.normal(size=(40, 3)), rng.normal(size=(15, 3)), rng.normal(size=(40, 2))
    grown = grow_forest(X, G, flavour=flavour, n_estimators=6, max_features=0.5,
                        min_samples_leaf=1, max_depth=None, n_draws=draws, n_jobs=None,
                        random_state=seed)
    pruned = prune(grown, split)
    pruned.trees.check(3)
    np.testing.assert_array_equal(pruned.leaves, pruned.trees.apply(X))
    assert pruned.trees.n_nodes <= grown.trees.n_nodes
    inner = pruned.trees.left != -1
    assert (pruned.sizes[inner] >= split).all()  # what is split holds enough points
    cls = RandomForestRegressor if flavour == "random" else ExtraTreesRegressor
    forest = cls(6, max_features=0.5, bootstrap=True, max_samples=draws,
                 random_state=seed).fit(X, G)  # grow_forest's trees
    fit = ForestFit(pruned.trees, pruned.bag, 3, X_train=X, coef=G)
    fit.check_leaves()
    W = fit.weights(fit.block(Xt))
    assert (W >= 0).all()
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(W, _explicit_weights(forest, X, Xt, split), rtol=1e-12,
                               atol=1e-15)
    W_oob, seen = fit.oob_weights()
    S = fit.oob_mean(G)
    np.testing.assert_array_equal(np.isnan(S).any(axis=1), ~seen)
    np.testing.assert_allclose(S[seen], (W_oob @ G)[seen], rtol=1e-12, atol=1e-14)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), split=st.integers(2, 16), draws=st.integers(10, 60))
def test_pruning_bagged_trees_is_growing_them_with_that_min_samples_split(seed, split, draws):
    """Bagged trees that try every feature split on no random draw: pruned at ``split``, the
    deep trees part each tree's drawn points exactly as trees grown with it (features that
    tie may move the undrawn points, so those are not compared)."""
    rng = np.random.default_rng(seed)
    X, G = rng.normal(size=(60, 3)), rng.normal(size=(60, 2))
    options = dict(flavour="random", n_estimators=5, max_features=1.0, min_samples_leaf=1,
                   max_depth=None, n_draws=draws, n_jobs=None, random_state=seed)
    pruned = prune(grow_forest(X, G, **options), split)
    direct = grow_forest(X, G, **options, min_samples_split=split)
    assert pruned.trees.n_nodes == direct.trees.n_nodes
    np.testing.assert_array_equal(pruned.bag, direct.bag)
    np.testing.assert_array_equal(np.sort(pruned.sizes), np.sort(direct.sizes))
    for t in range(5):
        drawn = pruned.bag[:, t] > 0
        a, b = pruned.leaves[drawn, t], direct.leaves[drawn, t]
        # the same partition: a leaf of one is a leaf of the other
        pairs = np.unique(np.column_stack([a, b]), axis=0)
        assert len(pairs) == len(np.unique(a)) == len(np.unique(b))


def _ranking_data(m=60, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    ranks = np.argsort(np.argsort(X[:, :1] * rng.normal(size=k) + rng.normal(size=(m, k)),
                                  axis=1), axis=1)
    space = PermutationSpace(k)
    return X, space.from_ranks(ranks), space


def _tree_data(m=60, seed=0, space=TREE):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    scores = X @ rng.normal(size=(3, space.n_outputs)) + rng.normal(size=(m, space.n_outputs))
    return X, space.close(scores > 0)


def _constrained_data(space, m=60, seed=0):
    """Outputs of a finite space (its enumeration) that depend on the inputs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    elements = np.asarray(space.enumerate(), dtype=float)
    pick = (np.floor((X[:, 0] + 3) * 2).astype(int) + rng.integers(0, 2, m)) % len(elements)
    return X, elements[pick]


AT_MOST_TWO = LinearConstraintSpace(A_ub=np.ones((1, 4)), b_ub=[2])
FOUR_SETS = CandidateSpace([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]])

CASES = [
    ("candidates-hamming", lambda: (*_constrained_data(FOUR_SETS), FOUR_SETS, HammingLoss())),
    ("constraints-hamming", lambda: (*_constrained_data(AT_MOST_TWO), AT_MOST_TWO,
                                     HammingLoss())),
    ("tree-hamming", lambda: (*_tree_data(), TREE, HammingLoss())),
    ("tree-hierarchical", lambda: (*_tree_data(), TREE, HierarchicalLoss(TREE))),
    ("dag-hierarchical", lambda: (*_tree_data(space=DAG), DAG, HierarchicalLoss(DAG))),
    ("ranking-kendall", lambda: (*_ranking_data(), KendallLoss())),
    ("ranking-footrule", lambda: (*_ranking_data(), FootruleLoss())),
    ("ranking-squared", lambda: (*_ranking_data(), SquaredRankLoss())),
]


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_costs_are_the_weighted_embedding_and_every_oracle_is_exact_on_them(name):
    X, Y, space, loss = dict(CASES)[name]()
    model = ForestECRM(loss, space, n_estimators=15, random_state=0).fit(X, Y)
    Xt = np.random.default_rng(1).normal(size=(12, 3))
    W = model.conditional_weights(Xt)
    C = model.predict_costs(Xt)
    np.testing.assert_allclose(C, W @ loss.psi(Y.astype(float)), rtol=1e-10, atol=1e-12)
    P = check_oracle(space, C, loss=loss)
    np.testing.assert_array_equal(model.predict(Xt), P)
    # the estimated risk is the weighted loss to the training outputs
    risk = model.conditional_risk(Xt, P)
    direct = [W[k] @ loss(np.repeat(P[k:k + 1], len(Y), 0), Y) for k in range(len(Xt))]
    np.testing.assert_allclose(risk, direct, rtol=1e-10, atol=1e-10)


def _explicit_oob_costs(model, Y, loss) -> np.ndarray:
    """The out-of-bag costs from scratch: per point, the trees that did not draw it."""
    fit = model._fit
    leaves, bag, m = fit.train_leaves(), fit.bag, len(Y)
    psi = loss.psi(Y.astype(float))
    C = np.full((m, psi.shape[1]), np.nan)
    for i in range(m):
        trees = np.flatnonzero(bag[i] == 0)
        if len(trees):
            w = sum((leaves[:, t] == leaves[i, t]) * bag[:, t]
                    / ((leaves[:, t] == leaves[i, t]) * bag[:, t]).sum() for t in trees)
            C[i] = (w / len(trees)) @ psi
    return C


@pytest.mark.parametrize("name", ["tree-hierarchical", "dag-hierarchical", "ranking-kendall"])
def test_out_of_bag_criterion_is_the_explicit_computation(name):
    X, Y, space, loss = dict(CASES)[name]()
    model = ForestECRM(loss, space, n_estimators=10, max_samples=0.7,
                       random_state=3).fit(X, Y)
    C = _explicit_oob_costs(model, Y, loss)
    seen = ~np.isnan(C).any(axis=1)
    np.testing.assert_array_equal(seen, ~np.isnan(model.oob_predictions_).any(axis=1))
    np.testing.assert_allclose(model.oob_costs()[seen], C[seen], rtol=1e-12, atol=1e-14)
    # the predictions minimise those costs (forest costs tie often: compare objectives)
    P = model.oob_predictions_[seen]
    best = check_oracle(space, C[seen], loss=loss)
    value = np.einsum("ij,ij->i", loss.phi(P), C[seen])
    np.testing.assert_allclose(value, np.einsum("ij,ij->i", loss.phi(best), C[seen]),
                               atol=1e-12 * np.abs(C[seen]).sum(axis=1).max())
    np.testing.assert_allclose(model.oob_loss_, np.mean(loss(P, Y[seen])), rtol=1e-12)


def test_weighted_sum_applies_the_weights_to_another_losss_embedding():
    # one forest grown for the Kendall loss gives the footrule and squared-rank costs
    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    model = ForestECRM(loss, space, n_estimators=10, max_samples=0.7,
                       random_state=1).fit(X, Y)
    Xt = X[:6] + 0.05
    W = model.conditional_weights(Xt)  # tested against the definition above
    for other in (FootruleLoss(), SquaredRankLoss(), loss):
        psi = other.psi(Y.astype(float))
        np.testing.assert_allclose(model.weighted_sum(psi, Xt), W @ psi, rtol=1e-10,
                                   atol=1e-12)
        C = _explicit_oob_costs(model, Y, other)
        seen = ~np.isnan(C).any(axis=1)
        S = model.weighted_sum(psi)
        np.testing.assert_array_equal(np.isnan(S).any(axis=1), ~seen)
        np.testing.assert_allclose(S[seen], C[seen], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(model.weighted_sum(loss.psi(Y.astype(float)), Xt),
                               model.predict_costs(Xt), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"one row per training point.*got shape \(5, 3\)"):
        model.weighted_sum(np.ones((5, 3)))


def test_scores_are_weighted_marginals_and_consistent():
    X, Y = _tree_data()
    model = ForestECRM(HammingLoss(), TREE, n_estimators=10, random_state=0).fit(X, Y)
    Xt = X[:7] + 0.1
    S = model.predict_scores(Xt)
    np.testing.assert_allclose(S, TREE.consistent_scores(model.conditional_weights(Xt) @ Y),
                               rtol=1e-12, atol=1e-15)
    oob = model.oob_scores()
    assert oob.shape == Y.shape and np.nanmax(oob) <= 1 and np.nanmin(oob) >= 0


def test_a_loss_without_linear_form_predicts_through_the_weights():
    arcs = [("s", "a"), ("s", "b"), ("a", "t"), ("b", "t")]
    space = FlowPolytope(arcs, {"s": 2, "t": -2}, capacity=2)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    Y = np.where(X[:, :1] > 0, [2, 0, 2, 0], [0, 2, 0, 2]).astype(float)
    model = ForestECRM(AbsoluteLoss(), space, n_estimators=10, random_state=0).fit(X, Y)
    P = model.predict([[1.0, 0.0], [-1.0, 0.0]])
    np.testing.assert_allclose(P, [[2, 0, 2, 0], [0, 2, 0, 2]], atol=1e-9)
    assert model.oob_loss_ >= 0


def test_the_cv_choice_is_the_smallest_out_of_bag_loss_of_separate_fits():
    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    grid = {"flavour": ["random", "extra"], "min_samples_leaf": [1, 4]}
    cv = _cv(loss, space, param_grid=grid, n_estimators=8, random_state=5).fit(X, Y)
    seeds = np.random.RandomState(5).randint(np.iinfo(np.int32).max, size=4)
    from sklearn.model_selection import ParameterGrid

    losses = [ForestECRM(loss, space, n_estimators=8, random_state=int(s), **p).fit(X, Y)
              .oob_loss_ for p, s in zip(ParameterGrid(grid), seeds, strict=True)]
    np.testing.assert_allclose(cv.cv_results_["oob_loss"], losses, rtol=1e-12)
    assert cv.best_params_ == list(ParameterGrid(grid))[int(np.argmin(losses))]
    assert cv.oob_loss_ == min(losses) and cv.best_score_ == -min(losses)


def test_the_cv_prunes_one_forest_for_its_leaf_sizes_and_keeps_the_best_pruning():
    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    grid = {"flavour": ["random", "extra"], "min_samples_split": [2, 6, 500, 1000]}
    cv = _cv(loss, space, param_grid=grid, n_estimators=8, random_state=5).fit(X, Y)
    results = cv.cv_results_
    assert results["n_estimators"] == [8] * 8
    best = int(np.argmin(results["oob_loss"]))
    assert cv.best_params_ == results["params"][best] and cv.oob_loss_ == min(results["oob_loss"])
    # the kept forest is judged on its own trees: its out-of-bag costs from scratch
    C = _explicit_oob_costs(cv, Y, loss)
    seen = ~np.isnan(C).any(axis=1)
    np.testing.assert_allclose(cv.oob_costs()[seen], C[seen], rtol=1e-12, atol=1e-14)
    assert (cv._fit.trees.left == -1).sum() <= 8 * len(X)
    # above every tree's size a pruning leaves the roots alone: the same forest, judged once
    for first in (0, 4):
        assert results["oob_loss"][first + 2] == results["oob_loss"][first + 3]


def test_a_cv_search_on_fewer_trees_grows_only_the_best_setting_on():
    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    grid = {"flavour": ["random", "extra"], "min_samples_split": [2, 8]}
    small = _cv(loss, space, param_grid=grid, n_estimators=4,
                         random_state=2).fit(X, Y)
    cv = _cv(loss, space, param_grid=grid, n_estimators=12, search_estimators=4,
                      random_state=2).fit(X, Y)
    # the search is the 4-tree fit; the best setting's flavour grows on to 12 trees
    lead = small.best_params_["flavour"]
    group = [p["flavour"] == lead for p in grid_params(grid)]
    assert cv.cv_results_["n_estimators"] == [12 if g else 4 for g in group]
    for key in ("oob_loss", "mean_score"):
        assert [v for v, g in zip(cv.cv_results_[key], group, strict=True) if not g] == \
            [v for v, g in zip(small.cv_results_[key], group, strict=True) if not g]
    assert cv.best_params_["flavour"] == lead and cv._fit.trees.n_trees == 12
    np.testing.assert_array_equal(cv._fit.bag[:, :4], small._fit.bag)  # grown on
    C = _explicit_oob_costs(cv, Y, loss)
    seen = ~np.isnan(C).any(axis=1)
    np.testing.assert_allclose(cv.oob_costs()[seen], C[seen], rtol=1e-12, atol=1e-14)
    # every setting at full size: no search
    full = _cv(loss, space, param_grid=grid, n_estimators=4, search_estimators=9,
                        random_state=2).fit(X, Y)
    assert full.cv_results_ == small.cv_results_


def _descent(scores, order, at) -> tuple[set, int]:
    """``split_search="descent"`` simulated on known scores of the settings ``order`` (sorted
    by ``min_samples_split``) from position ``at``: the settings it judges and its end."""
    def key(n):
        return scores[order[n]], -order[n]

    judged = {order[at]}
    while True:
        near = [n for n in (at - 1, at + 1) if 0 <= n < len(order)]
        judged |= {order[n] for n in near}
        step = max(near, key=key, default=at)
        if not key(step) > key(at):
            return judged, order[at]
        at = step


DESCENT_GRID = {"flavour": ["random", "extra"], "min_samples_split": [2, 3, 4, 6, 9, 14, 20, 30]}


def test_a_descent_over_the_leaf_sizes_judges_the_grid_s_settings_along_its_path():
    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    kw = {"param_grid": DESCENT_GRID, "n_estimators": 6, "random_state": 3}
    every = _cv(loss, space, **kw).fit(X, Y)
    cv = _cv(loss, space, split_search="descent", **kw).fit(X, Y)
    scores = every.cv_results_["mean_score"]
    paths = [_descent(scores, list(group), 3) for group in (range(8), range(8, 16))]
    judged = set().union(*(j for j, _ in paths))
    assert 6 <= len(judged) < 16  # the descents moved, and skipped settings
    results = cv.cv_results_
    assert {i for i, n in enumerate(results["n_estimators"]) if n} == judged
    for i in range(16):  # the same forests and prunings: the grid's criteria, or not judged
        expect = (scores[i], every.cv_results_["oob_loss"][i], 6) if i in judged \
            else (np.nan, np.nan, 0)
        np.testing.assert_allclose([results[k][i] for k in ("mean_score", "oob_loss",
                                                             "n_estimators")],
                                   expect, rtol=1e-12)
    chosen = max((end for _, end in paths), key=lambda i: (scores[i], -i))
    assert cv.best_params_ == grid_params(DESCENT_GRID)[chosen]
    assert cv.oob_loss_ == results["oob_loss"][chosen]


def test_after_a_search_the_descent_starts_from_its_choice_on_all_trees():
    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    kw = {"param_grid": DESCENT_GRID, "random_state": 4}
    few = _cv(loss, space, n_estimators=4, **kw).fit(X, Y)
    searched = _cv(loss, space, n_estimators=12, search_estimators=4, **kw).fit(X, Y)
    cv = _cv(loss, space, n_estimators=12, search_estimators=4,
                      split_search="descent", **kw).fit(X, Y)
    groups = [list(range(8)), list(range(8, 16))]
    first = [_descent(few.cv_results_["mean_score"], g, 3) for g in groups]
    lead = max((end for _, end in first), key=lambda i: (few.cv_results_["mean_score"][i], -i))
    group = groups[lead // 8]
    full = searched.cv_results_
    assert set(full["n_estimators"][i] for i in group) == {12}  # the grid's lead: this data
    second, end = _descent(full["mean_score"], group, group.index(lead))
    results = cv.cv_results_
    for i in range(16):
        if i in second:
            trees, score = 12, full["mean_score"][i]
        elif any(i in judged for judged, _ in first):
            trees, score = 4, few.cv_results_["mean_score"][i]
        else:
            trees, score = 0, np.nan
        assert results["n_estimators"][i] == trees
        np.testing.assert_allclose(results["mean_score"][i], score, rtol=1e-12)
    assert cv.best_params_ == grid_params(DESCENT_GRID)[end] and cv._fit.trees.n_trees == 12
    # a model file keeps the unjudged settings' NaN criteria
    assert sum(n == 0 for n in results["n_estimators"]) > 0


def _cv(loss, space, *, param_grid=None, search_estimators=None, split_search="grid", **kw):
    """ForestECRMCV with these settings of its search."""
    return ForestECRMCV(loss, space, search=OutOfBagSearch(
        param_grid=param_grid, search_estimators=search_estimators, split_search=split_search),
                        **kw)


def grid_params(grid) -> list[dict]:
    from sklearn.model_selection import ParameterGrid

    return list(ParameterGrid(grid))


def test_the_cv_choice_by_a_score_metric_is_the_metric_of_the_out_of_bag_scores():
    from ecrm.reporting.metrics import micro_auprc

    X, Y = _tree_data()
    grid = {"max_features": [0.5, 1.0]}
    cv = _cv(HammingLoss(), TREE, param_grid=grid, scoring="micro_auprc",
                      n_estimators=8, random_state=1).fit(X, Y)
    S = cv.oob_scores()
    seen = ~np.isnan(S).any(axis=1)
    np.testing.assert_allclose(cv.best_score_, micro_auprc(Y[seen].astype(float), S[seen]),
                               rtol=1e-12)
    assert cv.best_score_ == max(cv.cv_results_["mean_score"])


def _wide_data():
    """Five labels of 40 points: an embedding wider than two split targets."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return MultilabelSpace(5), X, (X @ rng.normal(size=(3, 5)) > 0).astype(float)


def test_wide_embeddings_split_on_a_projection_but_average_the_whole():
    space, X, Y = _wide_data()
    model = ForestECRM(HammingLoss(), space, n_estimators=5, n_split_targets=2,
                       random_state=0).fit(X, Y)
    W = model.conditional_weights(X[:4])
    np.testing.assert_allclose(model.predict_costs(X[:4]), W @ (1 - 2 * Y), rtol=1e-12)


def test_principal_split_targets_are_the_embeddings_top_components():
    from sklearn.decomposition import PCA

    space, X, Y = _wide_data()
    model = ForestECRM(HammingLoss(), space, n_estimators=5, n_split_targets=2,
                       split_projection="principal", random_state=0).fit(X, Y)
    # the trees are those grown on the two top principal components of psi(Y)
    seeds = np.random.RandomState(0).randint(np.iinfo(np.int32).max, size=2)
    psi = HammingLoss().psi(Y)
    G = PCA(2, random_state=seeds[0]).fit_transform(psi)
    grown = grow_forest(X, G, flavour="random", n_estimators=5, max_features=0.5,
                        min_samples_leaf=1, max_depth=None, n_draws=40, n_jobs=None,
                        random_state=seeds[1])
    for name in ("left", "right", "feature", "threshold", "roots"):
        np.testing.assert_array_equal(getattr(model._fit.trees, name),
                                      getattr(grown.trees, name))
    W = model.conditional_weights(X[:4])  # the leaves average the whole embedding
    np.testing.assert_allclose(model.predict_costs(X[:4]), W @ psi, rtol=1e-12)


@pytest.mark.parametrize("bad, match", named([
    ({"flavour": "gradient"}, "flavour"), ({"n_estimators": 0}, "n_estimators"),
    ({"max_features": 1.5}, "max_features"), ({"max_features": True}, "max_features"),
    ({"min_samples_leaf": 0}, "min_samples_leaf"), ({"n_split_targets": 0}, "n_split_targets"),
    ({"min_samples_split": 1}, "min_samples_split"),
    ({"split_projection": "sparse"}, "split_projection"),
    ({"search": OutOfBagSearch(split_search="binary")}, "split_search"),
    ({"search": OutOfBagSearch(search_estimators=0)}, "search: search_estimators"),
    ({"search": OutOfBagSearch(param_grid={"max_depth": [0]})}, "search: max_depth"),
    ({"search": OutOfBagSearch(param_grid={"n_estimators": [5]})}, "param_grid may set"),
    ({"search": {"param_grid": None}}, "search must be None or an OutOfBagSearch"),
]))
def test_bad_parameters_are_refused_before_any_work(bad, match):
    X, Y = _tree_data()
    model = (ForestECRMCV if "search" in bad else ForestECRM)(HammingLoss(), TREE, **bad)
    with pytest.raises((ValueError, TypeError), match=match):
        model.fit(X, Y)
    assert not hasattr(model, "X_fit_")


# -- model files -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def forest_file(tmp_path_factory):
    X, Y = _tree_data(m=30)
    model = ForestECRM(HierarchicalLoss(TREE), TREE, n_estimators=4, random_state=0).fit(X, Y)
    path = tmp_path_factory.mktemp("forest") / "forest.ecrm"
    save(model, path)
    return path, model, X


def test_a_forest_file_predicts_as_the_model(forest_file):
    path, model, X = forest_file
    loaded = load(path)
    # labels exact, though forest weights can tie: their sums run in scipy's sparse loops
    # (no BLAS), in the order of the sparse structure the file keeps, so a tie breaks alike
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # the same sums, the forest's arrays in another layout: a few ulps of the terms' size apart
    np.testing.assert_allclose(loaded.predict_scores(X), model.predict_scores(X), rtol=0,
                               atol=ROOM * term_scale(model, X))
    assert loaded.oob_loss_ == model.oob_loss_


def _tamper(path, out, field, edit):
    """Rewrite one array of the forest's fit (``field`` of the trees, or ``bag``) with
    ``edit`` and recompute every digest, as a careful forger would."""
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    meta = json.loads(members["ecrm-model.json"])
    fit = meta["fitted"]["_fit"]["kwargs"]
    ref = fit["bag"] if field == "bag" else fit["trees"]["kwargs"][field]
    name = f"arrays/{ref['name']}.npy"
    array = edit(np.load(io.BytesIO(members[name])).copy())
    buf = io.BytesIO()
    np.save(buf, array)
    members[name] = buf.getvalue()
    entry = meta["arrays"][ref["name"]]
    entry["sha256"] = hashlib.sha256(members[name]).hexdigest()
    for key in ("dtype", "shape"):
        if key in entry:
            entry[key] = str(array.dtype) if key == "dtype" else list(array.shape)
    members["ecrm-model.json"] = json.dumps(meta).encode()
    members["ecrm-model.sha256"] = hashlib.sha256(members["ecrm-model.json"]).hexdigest().encode()
    with zipfile.ZipFile(out, "w") as zf:
        for key, data in members.items():
            zf.writestr(key, data)
    return out


def _set(index, value):
    def edit(a):
        a[index] = value
        return a
    return edit


def _first_inner(a):
    return int(np.flatnonzero(a != -1)[0])


@pytest.mark.parametrize("field, edit", [
    ("left", lambda a: _set(_first_inner(a), 10**6)(a)),  # child out of range
    ("left", lambda a: _set(_first_inner(a), 0)(a)),  # a cycle: back to the root
    ("right", lambda a: _set(_first_inner(a), -1)(a)),  # one child only
    ("feature", lambda a: a + 7),  # feature beyond n_features_in_
    ("threshold", _set(0, np.nan)),
    ("threshold", lambda a: a.astype(np.float32)),
    ("roots", lambda a: a[::-1].copy()),
    ("bag", lambda a: a[:-1]),
    ("bag", lambda a: a.astype(np.int64)),
    ("bag", _set((0, 0), 60000)),
    ("bag", lambda a: np.roll(a, 7, axis=0)),  # leaves left with no drawn point
], ids=["left-out-of-range", "left-a-cycle", "right-missing", "feature-out-of-range",
        "threshold-nan", "threshold-float32", "roots-reversed", "bag-short", "bag-int64",
        "bag-draws-beyond-the-rows", "bag-rolled"])
def test_a_tampered_forest_is_refused_at_load(forest_file, tmp_path, field, edit):
    path, _, _ = forest_file
    bad = _tamper(path, tmp_path / "bad.ecrm", field, edit)
    with pytest.raises(ModelFileError):
        load(bad)


def test_classes_and_zero_one_loss_as_multiclass():
    classes = CandidateSpace.from_classes(range(3))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)
    model = ForestECRM(ZeroOneLoss(classes), classes, n_estimators=20, random_state=0).fit(X, y)
    assert model.predict(X).shape == (60,)
    assert model.score(X, y) > -0.1


def test_select_honestly_keeps_the_best_honest_score_and_refuses_mixed_criteria():
    from ecrm import ECRMCV
    from ecrm.selection import select_honestly

    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    kernel = ECRMCV(loss, space, alphas=[1e-3, 1e-1])
    forest = ForestECRMCV(loss, space, n_estimators=10, random_state=0)
    choice = select_honestly([kernel, forest], X, Y)
    k, f = (est.best_score_ for est in choice.estimators)
    assert choice.scores == [k, f] and choice.best_index == int(f > k)
    assert choice.best_estimator is choice.estimators[choice.best_index]
    assert not hasattr(kernel, "best_score_")  # the candidates were cloned
    # minus the leave-one-out and the out-of-bag mean Kendall distance
    np.testing.assert_allclose(f, -choice.estimators[1].oob_loss_)
    with pytest.raises(ValueError, match="share one scoring"):
        select_honestly([kernel, ForestECRMCV(loss, space, scoring="lrap")], X, Y)


def test_a_cv_forest_file_round_trips_and_its_choice_is_checked(tmp_path):
    X, Y = _tree_data(m=30)
    model = ForestECRMCV(HammingLoss(), TREE, n_estimators=3, random_state=0).fit(X, Y)
    save(model, tmp_path / "cv.ecrm")
    loaded = load(tmp_path / "cv.ecrm")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.best_params_ == model.best_params_
    loaded.best_params_ = {**loaded.best_params_, "flavour": "other"}
    with pytest.raises(ValueError, match="best setting"):
        loaded._check_fitted_state()


def test_a_searched_and_pruned_cv_forest_file_round_trips_and_is_checked(tmp_path):
    X, Y = _tree_data(m=40)
    grid = {"flavour": ["random", "extra"], "min_samples_split": [2, 5]}
    model = _cv(HammingLoss(), TREE, param_grid=grid, n_estimators=6,
                         search_estimators=2, random_state=0).fit(X, Y)
    save(model, tmp_path / "cv.ecrm")
    loaded = load(tmp_path / "cv.ecrm")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.cv_results_ == model.cv_results_
    for counts in ([6, 6, 2, 7], [6, 6, 2.0, 2], [2, 2, 2, 2]):  # beyond n_estimators, a
        loaded.cv_results_ = {**model.cv_results_, "n_estimators": counts}  # float, none full
        with pytest.raises(ValueError, match="cv_results_|best setting"):
            loaded._check_fitted_state()
    # a choice among the settings judged on fewer trees is refused
    results = dict(model.cv_results_)
    short = results["n_estimators"].index(2)
    results["mean_score"] = [s + (1.0 if i == short else 0.0)
                             for i, s in enumerate(results["mean_score"])]
    loaded.cv_results_ = results
    loaded.best_params_, loaded.best_score_ = grid_params(grid)[short], results["mean_score"][short]
    with pytest.raises(ValueError, match="best setting"):
        loaded._check_fitted_state()


def test_a_descended_cv_forest_file_keeps_its_settings_not_judged(tmp_path):
    X, Y = _tree_data(m=40)
    grid = {"min_samples_split": [2, 3, 4, 6, 9, 14, 20]}
    model = _cv(HammingLoss(), TREE, param_grid=grid, n_estimators=4,
                         split_search="descent", random_state=0).fit(X, Y)
    assert 0 in model.cv_results_["n_estimators"]
    save(model, tmp_path / "cv.ecrm")
    loaded = load(tmp_path / "cv.ecrm")
    np.testing.assert_equal(loaded.cv_results_, model.cv_results_)  # NaN where not judged
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    loaded.cv_results_ = {**model.cv_results_,
                          "n_estimators": [-1 if n == 0 else n
                                           for n in model.cv_results_["n_estimators"]]}
    with pytest.raises(ValueError, match="cv_results_"):
        loaded._check_fitted_state()


def test_sparse_inputs_give_the_dense_model():
    import scipy.sparse as sp

    X, Y = _tree_data()
    X[np.abs(X) < 0.5] = 0.0
    dense = ForestECRM(HammingLoss(), TREE, n_estimators=5, random_state=0).fit(X, Y)
    sparse = ForestECRM(HammingLoss(), TREE, n_estimators=5, random_state=0).fit(
        sp.csr_matrix(X), Y)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(X)), dense.predict(X))
    assert sparse.oob_loss_ == dense.oob_loss_


def test_trees_grown_in_batches_are_the_definition_too(monkeypatch):
    """Past GROW_BATCH_BYTES the trees grow in batches (seeds random_state + k): the packed
    forest still weighs by its own bootstrap counts, as the definition says."""
    from ecrm.weights.forest import _fit as module

    monkeypatch.setattr(module, "GROW_BATCH_BYTES", 1)  # one tree a batch
    rng = np.random.default_rng(0)
    X, Xt, G = rng.normal(size=(30, 3)), rng.normal(size=(9, 3)), rng.normal(size=(30, 2))
    trees, bag, leaves, _ = grow_forest(X, G, flavour="random", n_estimators=4,
                                     max_features=0.5, min_samples_leaf=2, max_depth=None,
                                     n_draws=30, n_jobs=None, random_state=7)
    np.testing.assert_array_equal(leaves, trees.apply(X))  # across batches too
    assert trees.n_trees == 4 and bag.shape == (30, 4)
    fit = ForestFit(trees, bag, 3, X_train=X, coef=G)
    trees.check(3)
    fit.check_leaves()
    # tree k is the one tree of scikit-learn's forest seeded 7 + k
    forests = [RandomForestRegressor(1, max_features=0.5, min_samples_leaf=2, bootstrap=True,
                                     max_samples=30, random_state=7 + k).fit(X, G)
               for k in range(4)]
    W = np.mean([_explicit_weights(f, X, Xt) for f in forests], axis=0)
    np.testing.assert_allclose(fit.weights(fit.block(Xt)), W, rtol=1e-12, atol=1e-15)


def test_the_model_summary_names_the_chosen_leaf_size():
    from ecrm.commands.info import _weights
    from ecrm.reporting.report import weights_line

    X, Y = _tree_data(m=40)
    grid = {"min_samples_split": [30, 60]}  # 60: above every tree's size, only roots
    model = _cv(HammingLoss(), TREE, param_grid=grid, n_estimators=4,
                         random_state=0).fit(X, Y)
    summary = _weights(model)
    assert summary["min_samples_split"] == model.best_params_["min_samples_split"]
    assert f"min_samples_split={summary['min_samples_split']})" in weights_line(summary)
    plain = _weights(ForestECRM(HammingLoss(), TREE, n_estimators=2).fit(X, Y))
    assert plain["min_samples_split"] == 2 and "split" not in weights_line(plain)


def test_out_of_bag_sums_by_leaf_means_and_by_weights_agree():
    """Where the leaf means of a wide embedding would not fit the working memory, the
    out-of-bag sums are the weights times the values instead: the same numbers."""
    from sklearn import config_context

    X, Y, space, loss = dict(CASES)["ranking-kendall"]()
    model = ForestECRM(loss, space, n_estimators=6, max_samples=0.6, random_state=4).fit(X, Y)
    T = np.random.default_rng(0).normal(size=(len(X), 7))
    by_leaf = model.weighted_sum(T)
    with config_context(working_memory=1e-4):  # 100 bytes: the weights' path
        by_weights = model.weighted_sum(T)
    np.testing.assert_array_equal(np.isnan(by_leaf), np.isnan(by_weights))
    seen = ~np.isnan(by_leaf).any(axis=1)
    assert 0 < seen.sum() < len(X)
    np.testing.assert_allclose(by_weights[seen], by_leaf[seen], rtol=1e-12, atol=1e-14)
    W, _ = model._fit.oob_weights()
    np.testing.assert_allclose(by_leaf[seen], (W @ T)[seen], rtol=1e-12, atol=1e-14)
    # some training points only, on both paths: their rows of the whole
    rows = np.array([7, 0, 3, 3, len(X) - 1])
    for memory in (None, 1e-4):
        with config_context(working_memory=memory or 1024):
            some = model.weighted_sum(T, rows=rows)
        np.testing.assert_array_equal(np.isnan(some), np.isnan(by_leaf[rows]))
        np.testing.assert_allclose(some, by_leaf[rows], rtol=1e-12, atol=1e-14)
    assert model.weighted_sum(T, rows=np.array([], int)).shape == (0, 7)
    for bad in ([len(X)], [-1], [0.5], [[0]]):
        with pytest.raises(ValueError, match=rf"rows must be indices of training points in "
                                             rf"\[0, {len(X)}\)"):
            model.weighted_sum(T, rows=np.array(bad))
    with pytest.raises(ValueError, match="needs X=None"):
        model.weighted_sum(T, X[:2], rows=rows)
