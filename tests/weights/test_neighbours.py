"""Nearest-neighbour weights (ecrm.weights.neighbours) against their definitions.

The weights, costs, scores and predictions are computed here from scratch (every distance,
an argsort, a mean, the oracle); the leave-one-out outputs against a refit without each
point; the search's k against an argmin over separately fitted models; sparse inputs against
dense ones; and the stack against its kNN member.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.metrics.pairwise import pairwise_distances

from _shapes import TREE5 as TREE
from ecrm import (
    CandidateSpace,
    NeighboursECRM,
    NeighboursECRMCV,
    PermutationSpace,
    StackedRiskECRM,
)
from ecrm.losses import HammingLoss, KendallLoss, ZeroOneLoss
from ecrm.selection._criteria import SCORERS
from ecrm.weights import FAMILIES
from ecrm.weights.families import describe

LOSS = HammingLoss()


def _xy(m=40, seed=0, p=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    Y = TREE.close(X @ rng.normal(size=(p, TREE.n_outputs)) + rng.normal(size=(m, 5)) > 0.3)
    return X, Y.astype(float)


def _brute_weights(X_train, X, k, metric="euclidean") -> np.ndarray:
    """w_i(x) = 1/k on the k smallest distances (no ties on continuous random data)."""
    return _nearest(X_train, X, k, metric) / k


def _nearest(X_train, X, k, metric="euclidean") -> np.ndarray:
    """1 on the k smallest distances of each row, else 0."""
    D = pairwise_distances(X, X_train, metric=metric)
    N = np.zeros_like(D)
    np.put_along_axis(N, np.argsort(D, axis=1, kind="stable")[:, :k], 1.0, axis=1)
    return N


def _brute_costs(loss, Y_train, W) -> np.ndarray:
    return W @ loss.psi(Y_train)


def _objective(loss, C, P) -> np.ndarray:
    """The oracle's objective <phi(p), c> of each row's output."""
    return np.einsum("ij,ij->i", loss.phi(P), C)


# -- the weights and what is computed from them ----------------------------------------------
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), m=st.integers(2, 30), k=st.integers(1, 30),
       metric=st.sampled_from(["euclidean", "manhattan", "cosine", "chebyshev"]))
def test_weights_costs_scores_and_predictions_are_the_brute_force(seed, m, k, metric):
    k = min(k, m)
    X, Y = _xy(m, seed)
    Xt = np.random.default_rng(seed + 1).normal(size=(7, 3))
    model = NeighboursECRM(LOSS, TREE, n_neighbors=k, metric=metric).fit(X, Y)
    W = _brute_weights(X, Xt, k, metric)
    np.testing.assert_allclose(model.conditional_weights(Xt), W, rtol=0, atol=1e-15)
    C = _brute_costs(LOSS, Y, W)
    np.testing.assert_allclose(model.predict_costs(Xt), C, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.predict_scores(Xt), W @ Y, rtol=0, atol=1e-12)
    # the oracle's argmin of the brute-force costs (a cost of 0 ties: compare the objective)
    every = TREE.enumerate()
    np.testing.assert_allclose(_objective(LOSS, C, model.predict(Xt)),
                               (C @ LOSS.phi(every).T).min(axis=1), rtol=0, atol=1e-12)
    # the risk of each row's own prediction: the mean loss against its neighbours' outputs
    P = model.predict(Xt)
    risk = np.array([W[r] @ LOSS(np.repeat(P[r:r + 1], m, 0), Y) for r in range(len(Xt))])
    np.testing.assert_allclose(model.conditional_risk(Xt, P), risk, rtol=1e-12, atol=1e-12)


def test_the_oracle_argmin_is_the_brute_force_over_the_hierarchy():
    X, Y = _xy(30, 3)
    Xt = np.random.default_rng(4).normal(size=(10, 3))
    model = NeighboursECRM(LOSS, TREE, n_neighbors=4).fit(X, Y)
    C = _brute_costs(LOSS, Y, _brute_weights(X, Xt, 4))
    every = TREE.enumerate()
    best = every[np.argmin(C @ LOSS.phi(every).T, axis=1)]
    np.testing.assert_allclose(_objective(LOSS, C, model.predict(Xt)),
                               _objective(LOSS, C, best), rtol=0, atol=1e-12)


def test_a_loss_without_linear_form_predicts_through_the_weights():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)
    classes = CandidateSpace.from_classes(range(3))
    model = NeighboursECRM(ZeroOneLoss(classes), classes, n_neighbors=5).fit(X, y)
    Xt = rng.normal(size=(8, 2))
    W = _brute_weights(X, Xt, 5)
    votes = np.stack([W @ (y == c) for c in range(3)], axis=1)
    np.testing.assert_array_equal(model.predict(Xt), np.argmax(votes, axis=1))


def test_rankings_take_the_assignment_oracle_on_the_mean_embedding():
    space, loss = PermutationSpace(4), KendallLoss()
    rng = np.random.default_rng(2)
    X = rng.normal(size=(25, 2))
    Y = space.from_scores(X @ rng.normal(size=(2, 4)) + rng.normal(size=(25, 4)))
    Xt = rng.normal(size=(6, 2))
    model = NeighboursECRM(loss, space, n_neighbors=3).fit(X, Y)
    C = _brute_costs(loss, Y, _brute_weights(X, Xt, 3))
    every = space.enumerate()
    np.testing.assert_allclose(_objective(loss, C, model.predict(Xt)),
                               (C @ loss.phi(every).T).min(axis=1), rtol=0, atol=1e-12)


# -- leave-one-out -----------------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), m=st.integers(3, 16), k=st.integers(1, 15))
def test_leave_one_out_outputs_are_a_refit_without_the_point(seed, m, k):
    k = min(k, m - 2)
    X, Y = _xy(m, seed)
    model = NeighboursECRM(LOSS, TREE, n_neighbors=k)
    costs = model.fit_honest(X, Y)
    scores = clone(model).fit_honest(X, Y, scores=True)
    np.testing.assert_array_equal(costs.rows, np.arange(m))
    for i in range(m):
        keep = np.arange(m) != i
        refit = NeighboursECRM(LOSS, TREE, n_neighbors=k).fit(X[keep], Y[keep])
        np.testing.assert_allclose(costs.values[i], refit.predict_costs(X[i:i + 1])[0],
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(scores.values[i], refit.predict_scores(X[i:i + 1])[0],
                                   rtol=0, atol=1e-12)


def test_leave_one_out_drops_the_points_own_index_not_its_first_neighbour():
    # rows 0 and 1 are the same point: each one's nearest other point is the other copy
    X = np.array([[0.0], [0.0], [1.0], [3.0], [7.0]])
    Y = TREE.close(np.eye(5)[[1, 2, 3, 4, 0]] > 0)
    honest = NeighboursECRM(LOSS, TREE, n_neighbors=1).fit_honest(X, Y, scores=True)
    np.testing.assert_array_equal(honest.values[0], TREE.consistent_scores(Y[1][None])[0])
    np.testing.assert_array_equal(honest.values[1], TREE.consistent_scores(Y[0][None])[0])
    np.testing.assert_array_equal(honest.values[4], Y[3])


def test_leave_one_out_of_some_rows_is_theirs_of_every_row():
    from sklearn.neighbors import NearestNeighbors

    from ecrm.weights.neighbours._fit import others

    X = np.round(np.random.default_rng(2).normal(size=(40, 2)), 1)  # ties and duplicates
    X[5] = X[6]
    index = NearestNeighbors().fit(X)
    rows = np.array([0, 5, 6, 17, 39])
    np.testing.assert_array_equal(others(index, X, 7, rows), others(index, X, 7)[rows])


def test_leave_one_out_refuses_k_of_m_or_more():
    X, Y = _xy(5)
    with pytest.raises(ValueError, match="n_neighbors=5 and m=5"):
        NeighboursECRM(LOSS, TREE, n_neighbors=5).fit_honest(X, Y)


# -- the search over k -------------------------------------------------------------------------
def _loo_criterion(X, Y, k, scoring):
    """The leave-one-out criterion of k from scratch: every point predicted by a refit."""
    m = len(Y)
    C, S = np.empty((m, LOSS.psi(Y[:1]).shape[1])), np.empty(Y.shape)
    for i in range(m):
        keep = np.arange(m) != i
        N = _nearest(X[keep], X[i:i + 1], k)  # sums of integers, then / k: exact
        C[i], S[i] = (N @ LOSS.psi(Y[keep]))[0] / k, (N @ Y[keep])[0] / k
    loss = float(np.mean(LOSS(TREE.minimize(C, LOSS.cost_form), Y)))
    return (-loss if scoring == "loss" else SCORERS[scoring](Y, TREE.consistent_scores(S))), \
        loss


@pytest.mark.parametrize("scoring", ["loss", "micro_auprc"])
@pytest.mark.parametrize("seed", [0, 1], ids="seed={}".format)
def test_the_cv_choice_is_the_argmin_of_the_criterion_over_the_grid(scoring, seed):
    X, Y = _xy(25, seed)
    grid = (1, 2, 3, 5, 8, 13, 30)  # 30 >= m: left out
    model = NeighboursECRMCV(LOSS, TREE, n_neighbors=grid, scoring=scoring).fit(X, Y)
    kept = [k for k in grid if k < 25]
    brute = [_loo_criterion(X, Y, k, scoring) for k in kept]
    scores = [s for s, _ in brute]
    best = int(np.argmax(scores))  # the first, the smaller k, on ties
    assert model.n_neighbors_ == kept[best] and model.best_params_ == {"n_neighbors": kept[best]}
    assert [p["n_neighbors"] for p in model.cv_results_["params"]] == kept
    np.testing.assert_allclose(model.cv_results_["mean_score"], scores, rtol=1e-12)
    np.testing.assert_allclose(model.cv_results_["loo_loss"], [v for _, v in brute], rtol=1e-12)
    assert model.cv_results_["rank"][best] == 1
    np.testing.assert_allclose(model.best_score_, scores[best], rtol=1e-12)
    assert model.honest_score_ == model.best_score_
    single = NeighboursECRM(LOSS, TREE, n_neighbors=kept[best]).fit(X, Y)
    Xt = _xy(9, seed + 10)[0]
    np.testing.assert_array_equal(model.predict_costs(Xt), single.predict_costs(Xt))
    np.testing.assert_array_equal(model.predict(Xt), single.predict(Xt))


def test_the_cv_honest_outputs_are_the_chosen_ks():
    X, Y = _xy(30, 2)
    cv = NeighboursECRMCV(LOSS, TREE, n_neighbors=[2, 6])
    honest = cv.fit_honest(X, Y)
    single = NeighboursECRM(LOSS, TREE, n_neighbors=cv.n_neighbors_).fit_honest(X, Y)
    np.testing.assert_array_equal(honest.values, single.values)


def test_a_grid_with_no_k_below_m_is_refused():
    X, Y = _xy(6)
    with pytest.raises(ValueError, match=r"grid \[6, 10\] is at least the 6 training"):
        NeighboursECRMCV(LOSS, TREE, n_neighbors=[10, 6]).fit(X, Y)


# -- inputs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "cosine"])
def test_sparse_inputs_give_the_dense_model(metric):
    rng = np.random.default_rng(5)
    X, Y = _xy(30, 5, p=6)
    X[:, 1:][rng.random((30, 5)) < 0.6] = 0.0  # the first column stays: distinct rows
    Xt = _xy(10, 6, p=6)[0]
    Xt[:, 1:][rng.random((10, 5)) < 0.6] = 0.0
    dense = NeighboursECRMCV(LOSS, TREE, metric=metric).fit(X, Y)
    sparse = NeighboursECRMCV(LOSS, TREE, metric=metric).fit(sp.csr_matrix(X), Y)
    assert sparse.n_neighbors_ == dense.n_neighbors_
    assert sparse.cv_results_ == dense.cv_results_
    for method in ("predict_costs", "predict_scores", "conditional_weights"):
        np.testing.assert_allclose(getattr(sparse, method)(sp.csr_matrix(Xt)),
                                   getattr(dense, method)(Xt), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(Xt)), dense.predict(Xt))


@pytest.mark.parametrize("cls, kwargs, fit_rows, match", [
    (NeighboursECRM, {"n_neighbors": 11}, None, "n_neighbors=11 exceeds the 10 training"),
    (NeighboursECRM, {"n_neighbors": 0}, None, "n_neighbors must be an integer >= 1"),
    (NeighboursECRM, {"metric": "mahalanobis"}, None, "metric must be one of"),
    (NeighboursECRM, {"metric": "chebyshev"}, "sparse", "metric='chebyshev' takes dense"),
    (NeighboursECRMCV, {"n_neighbors": 5}, None, "non-empty sequence"),
    (NeighboursECRMCV, {"n_neighbors": [3, 0]}, None, r"n_neighbors\[1\] must be an integer"),
    (NeighboursECRMCV, {"scoring": "accuracy"}, None, "scoring must be one of"),
    (NeighboursECRM, {}, "nan", "Input X contains NaN"),
    (NeighboursECRM, {}, "rows", "inconsistent numbers of samples|same number of rows"),
], ids=["NeighboursECRM-k-above-the-rows", "NeighboursECRM-k-zero", "NeighboursECRM-metric-unknown",
        "NeighboursECRM-chebyshev-on-sparse", "NeighboursECRMCV-k-not-a-grid",
        "NeighboursECRMCV-grid-with-a-zero", "NeighboursECRMCV-scoring-unknown",
        "NeighboursECRM-nan-in-X", "NeighboursECRM-rows-of-X-and-Y-differ"])
def test_bad_input_is_refused_with_a_clear_error(cls, kwargs, fit_rows, match):
    X, Y = _xy(10)
    if fit_rows == "sparse":
        X = sp.csr_matrix(X)
    elif fit_rows == "nan":
        X[3, 1] = np.nan
    elif fit_rows == "rows":
        Y = Y[:-1]
    model = cls(LOSS, TREE, **kwargs)
    with pytest.raises(ValueError, match=match):
        model.fit(X, Y)
    assert not hasattr(model, "X_fit_")


def test_predicting_wrong_features_or_nan_is_refused():
    X, Y = _xy(10)
    model = NeighboursECRM(LOSS, TREE, n_neighbors=3).fit(X, Y)
    with pytest.raises(ValueError, match="X has 2 features"):
        model.predict(X[:, :2])
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        model.predict_costs(bad)


# -- the family table, the stack ------------------------------------------------------------
def test_the_family_table_and_info_describe_the_family():
    family = FAMILIES["neighbours"]
    assert family.estimator_class() is NeighboursECRM
    assert family.estimator_class(cv=True) is NeighboursECRMCV
    X, Y = _xy(20)
    cv = NeighboursECRMCV(LOSS, TREE, n_neighbors=[1, 4]).fit(X, Y)
    info = describe(cv)
    assert info["weights"] == "neighbours" and info["n_neighbors"] == cv.n_neighbors_
    assert info["selection"]["n_candidates"] == 2
    assert info["loo_loss"] == cv.loo_loss_
    assert describe(NeighboursECRM(LOSS, TREE, n_neighbors=3).fit(X, Y)) == {
        "weights": "neighbours", "n_neighbors": 3, "metric": "euclidean"}


@pytest.mark.filterwarnings("ignore::ecrm.exceptions.GridEdgeWarning")
def test_a_stack_with_one_hot_weights_is_its_knn_member():
    from ecrm import ECRMCV

    X, Y = _xy(40, 1)
    stack = StackedRiskECRM(LOSS, TREE, members=[
        NeighboursECRMCV(LOSS, TREE, n_neighbors=[2, 5, 9]),
        ECRMCV(LOSS, TREE, alphas=[1e-2, 1.0])], resolution=4, random_state=0).fit(X, Y)
    Xt = _xy(15, 9)[0]
    stack.weights_, stack.label_weights_ = np.array([1.0, 0.0]), None
    member = stack.estimators_[0]
    assert isinstance(member, NeighboursECRMCV)
    np.testing.assert_array_equal(stack.predict(Xt), member.predict(Xt))
    np.testing.assert_array_equal(stack.predict_costs(Xt), member.predict_costs(Xt))
    np.testing.assert_array_equal(stack.predict_scores(Xt), member.predict_scores(Xt))


def test_the_cv_choice_for_a_loss_without_linear_form_is_the_refits_argmin():
    # two classes, odd k: the majority vote never ties
    classes = CandidateSpace.from_classes(range(2))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(35, 2))
    y = (X[:, 0] + 0.8 * rng.normal(size=35) > 0).astype(int)
    grid = np.array([1, 3, 5, 7, 9, 11])  # a 1-D array is a grid too
    model = NeighboursECRMCV(ZeroOneLoss(classes), classes, n_neighbors=grid).fit(X, y)
    brute = []
    for k in grid:
        wrong = 0
        for i in range(35):
            keep = np.arange(35) != i
            votes = _nearest(X[keep], X[i:i + 1], k)[0] @ np.eye(2)[y[keep]]
            wrong += int(np.argmax(votes) != y[i])
        brute.append(wrong / 35)
    np.testing.assert_allclose(model.cv_results_["loo_loss"], brute, rtol=1e-12)
    assert model.n_neighbors_ == grid[int(np.argmin(brute))]
