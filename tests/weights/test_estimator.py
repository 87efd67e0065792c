"""ECRM and ECRMCV: risk minimisation against brute force, bad input, scikit-learn conventions."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import laplacian_kernel, polynomial_kernel, rbf_kernel
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from _shapes import DAG6 as DAG
from _shapes import TREE7 as TREE
from ecrm import ECRM, ECRMCV, MultilabelSpace
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.losses.base import Loss
from ecrm.selection import LeaveOneOutSearch
from ecrm.weights.kernel._ridge import EigenFactor, LeaveOneOut


def _problem(h, m=40, p=3, seed=0):
    """Inputs with a noisy label model: label j switches on with a random linear score."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    scores = X @ rng.normal(size=(p, h.n_labels)) + rng.normal(scale=0.8, size=(m, h.n_labels))
    return X, h.close(scores > 0.3), rng


CASES = [(TREE, HammingLoss()), (TREE, HierarchicalLoss(TREE)),
         (DAG, HammingLoss()), (DAG, HierarchicalLoss(DAG))]
IDS = ["tree-hamming", "tree-hier", "dag-hamming", "dag-hier"]


@pytest.mark.parametrize("fit_intercept", [True, False], ids="fit_intercept={}".format)
@pytest.mark.parametrize(("h", "loss"), CASES, ids=IDS)
def test_predict_minimises_the_estimated_risk_by_brute_force(h, loss, fit_intercept):
    X, Y, rng = _problem(h)
    est = ECRM(loss, h, kernel="rbf", gamma=0.5, alpha=0.01, fit_intercept=fit_intercept)
    est.fit(X, Y)
    Xt = rng.normal(size=(15, X.shape[1]))
    W = est.conditional_weights(Xt)
    candidates = h.enumerate()
    # R(y|x) = sum_i w_i(x) loss(y, y_i), straight from the definition of the loss.
    L = np.array([loss(np.repeat(c[None], len(Y), 0), Y) for c in candidates])  # (|Y|, m)
    R = W @ L.T
    Y_hat = est.predict(Xt)
    assert h.is_consistent(Y_hat).all()
    chosen = np.array([R[k, np.flatnonzero((candidates == Y_hat[k]).all(1))[0]]
                       for k in range(len(Xt))])
    np.testing.assert_allclose(chosen, R.min(axis=1), rtol=1e-9, atol=1e-9)
    # The linear form gives the same risk values.
    np.testing.assert_allclose(est.conditional_risk(Xt, Y_hat), chosen, rtol=1e-8, atol=1e-10)


def test_costs_are_weights_times_psi_and_weights_sum_to_one():
    X, Y, rng = _problem(TREE)
    est = ECRM(HierarchicalLoss(TREE), TREE, gamma=0.3, alpha=1e-3).fit(X, Y)
    Xt = rng.normal(size=(5, 3))
    W = est.conditional_weights(Xt)
    np.testing.assert_allclose(W.sum(1), 1.0, rtol=1e-9)
    np.testing.assert_allclose(est.predict_costs(Xt), W @ est.loss.psi(Y), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("fit_intercept", [True, False, "auto"], ids="fit_intercept={}".format)
def test_ecrmcv_leave_one_out_equals_refit_without_each_point(fit_intercept):
    X, Y, _ = _problem(TREE, m=25)
    m = len(X)
    loss = HierarchicalLoss(TREE)
    cv = ECRMCV(loss, TREE, alphas=[1e-3, 1e-2, 1e-1], gamma=0.5,
                search=LeaveOneOutSearch(fit_intercept=fit_intercept)).fit(X, Y)
    best = cv.cv_results_["rank"] == 1
    assert cv.alpha_ == cv.cv_results_["alpha"][best][0]
    assert cv.best_score_ == -cv.cv_results_["mean_loss"].min()
    for i in range(m):
        keep = np.arange(m) != i
        # Same ridge term on the diagonal: (m-1) * alpha' = m * alpha_.
        refit = ECRM(loss, TREE, gamma=0.5, alpha=cv.alpha_ * m / (m - 1),
                     fit_intercept=cv.fit_intercept_).fit(X[keep], Y[keep])
        np.testing.assert_array_equal(refit.predict(X[i:i + 1])[0], cv.loo_predictions_[i])
        np.testing.assert_allclose(refit.predict_costs(X[i:i + 1])[0],
                                   _loo_costs(cv, X, Y, i), rtol=1e-6, atol=1e-8)
    # The final model is the plain fit at the selected alpha.
    plain = ECRM(loss, TREE, gamma=0.5, alpha=cv.alpha_, fit_intercept=cv.fit_intercept_)
    np.testing.assert_allclose(cv.predict_costs(X), plain.fit(X, Y).predict_costs(X),
                               rtol=1e-7, atol=1e-9)


def _loo_costs(cv, X, Y, i):
    K = rbf_kernel(X, gamma=0.5)
    T = np.column_stack([cv.loss.psi(Y), cv.loss.const(Y)])
    loo = LeaveOneOut(EigenFactor.from_kernel(K), T)
    return loo.predictions(len(X) * cv.alpha_, cv.fit_intercept_)[i, :-1]


def test_ecrmcv_selects_the_minimum_of_its_own_table():
    X, Y, _ = _problem(TREE, m=60, seed=4)
    cv = ECRMCV(HammingLoss(), TREE, gamma=0.5,
                search=LeaveOneOutSearch(fit_intercept="auto")).fit(X, Y)
    res = cv.cv_results_
    assert len(res["alpha"]) == 34 and set(res["fit_intercept"]) == {True, False}
    assert res["mean_loss"][res["rank"] == 1][0] == res["mean_loss"].min()


@pytest.mark.parametrize(
    ("kernel", "func"),
    [("linear", lambda A, B: A @ B.T),
     ("poly", lambda A, B: polynomial_kernel(A, B, degree=2, gamma=0.4, coef0=1)),
     ("laplacian", lambda A, B: laplacian_kernel(A, B, gamma=0.4))],
    ids=["linear", "poly", "laplacian"],
)
def test_named_kernels_precomputed_and_callable_agree(kernel, func):
    X, Y, rng = _problem(TREE)
    Xt = rng.normal(size=(6, 3))
    kw = dict(alpha=0.05, gamma=0.4, degree=2, coef0=1)
    named = ECRM(HammingLoss(), TREE, kernel=kernel, **kw).fit(X, Y).predict_costs(Xt)
    pre = ECRM(HammingLoss(), TREE, kernel="precomputed", **kw).fit(func(X, X), Y)
    np.testing.assert_allclose(pre.predict_costs(func(Xt, X)), named, rtol=1e-8, atol=1e-10)
    call = ECRM(HammingLoss(), TREE, kernel=lambda a, b: func(a[None], b[None])[0, 0], **kw)
    np.testing.assert_allclose(call.fit(X, Y).predict_costs(Xt), named, rtol=1e-8, atol=1e-10)


def test_sparse_inputs_match_dense():
    X, Y, rng = _problem(TREE)
    Xt = rng.normal(size=(6, 3))
    dense = ECRM(HammingLoss(), TREE, kernel="rbf", gamma=0.2).fit(X, Y).predict_costs(Xt)
    sparse = ECRM(HammingLoss(), TREE, kernel="rbf", gamma=0.2).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(sparse.predict_costs(sp.csr_matrix(Xt)), dense, rtol=1e-8)


def test_scikit_learn_conventions():
    X, Y, _ = _problem(TREE)
    est = ECRM(HammingLoss(), TREE, gamma=0.5)
    assert clone(est).get_params()["gamma"] == 0.5
    gs = GridSearchCV(est, {"alpha": [1e-3, 1e-1]}, cv=3).fit(X, Y)
    assert gs.best_params_["alpha"] in (1e-3, 1e-1)
    assert est.fit(X, Y).score(X, Y) == -np.mean(HammingLoss()(est.predict(X), Y))


def test_unconstrained_multilabel_space():
    X, Y, _ = _problem(TREE)
    space = MultilabelSpace(TREE.n_labels)
    est = ECRM(HammingLoss(), space, gamma=0.5).fit(X, Y)
    np.testing.assert_array_equal(est.predict(X[:5]), est.predict_costs(X[:5]) < 0)


# -- bad input ----------------------------------------------------------------------------
def _fit(**kw):
    X, Y, _ = _problem(TREE)
    return ECRM(HammingLoss(), TREE, **kw), X, Y


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_X_is_rejected(value):
    est, X, Y = _fit()
    X[3, 1] = value
    with pytest.raises(ValueError, match="X contains"):
        est.fit(X, Y)


def test_row_mismatch_and_bad_Y_are_named():
    est, X, Y = _fit()
    with pytest.raises(ValueError, match="same number of rows; got 40 and 39"):
        est.fit(X, Y[:-1])
    Y2 = Y.astype(float)
    Y2[2, 1] = 0.5
    with pytest.raises(ValueError, match="only 0 and 1.*row 2"):
        est.fit(X, Y2)
    Y3 = np.zeros_like(Y2)
    Y3[5, TREE.index["a11"]] = 1
    with pytest.raises(ValueError, match="row 5.*a11"):
        est.fit(X, Y3)


@pytest.mark.parametrize("alpha", [0, -1.0, np.nan, "big"], ids="alpha={}".format)
def test_bad_alpha(alpha):
    est, X, Y = _fit(alpha=alpha)
    with pytest.raises(ValueError, match=r"alpha must be a real number in \(0, inf\)"):
        est.fit(X, Y)


def test_unknown_kernel_and_predict_before_fit():
    est, X, Y = _fit(kernel="gaussian")
    with pytest.raises(ValueError, match="kernel must be one of .* or a callable; got 'gaussian'"):
        est.fit(X, Y)
    with pytest.raises(NotFittedError):
        ECRM(HammingLoss(), TREE).predict(X)
    with pytest.raises(ValueError, match="X has 2 features, but ECRM is expecting 3 features"):
        ECRM(HammingLoss(), TREE).fit(X, Y).predict(X[:, :2])


def test_caller_arrays_are_never_modified():
    est, X, Y = _fit(kernel="linear")
    X0, Y0 = X.copy(), Y.copy()
    K = X @ X.T
    K0 = K.copy()
    est.fit(X, Y).predict(X)
    ECRMCV(HierarchicalLoss(TREE), TREE, kernel="precomputed").fit(K, Y).predict(K)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(Y, Y0)
    np.testing.assert_array_equal(K, K0)


class _CountingMemory:
    """A memory with a ``cache`` method that counts the decompositions it computes."""

    def __init__(self):
        self.calls, self.store = 0, {}

    def cache(self, func):
        def cached(X, params):
            key = (X.tobytes(), tuple(sorted(params.items())))
            if key not in self.store:
                self.calls += 1
                self.store[key] = func(X, params)
            return self.store[key]
        return cached


def test_kernel_grid_selects_by_loo_and_memory_shares_decompositions():
    X, Y, rng = _problem(TREE, m=50, seed=2)
    grid = [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.1, 1.0]}]
    memory = _CountingMemory()
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1],
                search=LeaveOneOutSearch(kernel_grid=grid, memory=memory,
                                         fit_intercept=True))  # one intercept: 3 kernels x 2 alphas
    cv.fit(X, Y)
    assert memory.calls == 3 and len(cv.cv_results_["params"]) == 6
    best = cv.cv_results_["params"][int(np.argmin(cv.cv_results_["rank"]))]
    assert cv.kernel_params_["kernel"] == best["kernel"] and cv.alpha_ == best["alpha"]
    # Each candidate's LOO loss equals a single-kernel ECRMCV's.
    for params, loss in zip(cv.cv_results_["params"], cv.cv_results_["mean_loss"],
                            strict=True):
        one = ECRMCV(HammingLoss(), TREE, alphas=[params["alpha"]], kernel=params["kernel"],
                     gamma=params["gamma"], search=LeaveOneOutSearch(fit_intercept=True)).fit(X, Y)
        assert -one.best_score_ == loss
    ECRMCV(HierarchicalLoss(TREE), TREE, alphas=[1e-3],
           search=LeaveOneOutSearch(kernel_grid=grid, memory=memory)).fit(X, Y)
    assert memory.calls == 3  # a second loss on the same inputs reuses every decomposition
    Xt = rng.normal(size=(4, 3))
    plain = ECRM(HammingLoss(), TREE, alpha=cv.alpha_, fit_intercept=cv.fit_intercept_,
                 **{k: v for k, v in cv.kernel_params_.items()})
    np.testing.assert_allclose(cv.predict_costs(Xt), plain.fit(X, Y).predict_costs(Xt),
                               rtol=1e-6, atol=1e-8)


def test_kernel_grid_rejects_unknown_keys():
    X, Y, _ = _problem(TREE)
    with pytest.raises(ValueError, match="may only set kernel"):
        search = LeaveOneOutSearch(kernel_grid={"alpha": [1.0]})
        ECRMCV(HammingLoss(), TREE, search=search).fit(X, Y)


def test_predict_scores_are_label_marginals_capped_by_parents():
    X, Y, rng = _problem(TREE)
    est = ECRM(HammingLoss(), TREE, gamma=0.5, alpha=1e-2).fit(X, Y)
    Xt = rng.normal(size=(8, 3))
    raw = np.clip(est.conditional_weights(Xt) @ Y, 0, 1)
    np.testing.assert_allclose(est.predict_scores(Xt), TREE.cap_by_parents(raw), atol=1e-9)
    # Hamming loss: label j is predicted on iff its cost is negative, i.e. marginal > 1/2.
    S = est.predict_scores(Xt)
    np.testing.assert_allclose(est.predict_costs(Xt), 1 - 2 * np.clip(
        est.conditional_weights(Xt) @ Y, -np.inf, np.inf), atol=1e-9)
    assert TREE.is_consistent(S > 0.5).all()


def test_loo_samples_give_the_same_exact_predictions_on_a_subset():
    X, Y, _ = _problem(TREE, m=60, seed=5)
    full = ECRMCV(HammingLoss(), TREE, alphas=[1e-2], gamma=0.5).fit(X, Y)
    part = ECRMCV(HammingLoss(), TREE, alphas=[1e-2], gamma=0.5, random_state=0,
                  search=LeaveOneOutSearch(loo_samples=20)).fit(X, Y)
    assert len(part.loo_rows_) == 20
    np.testing.assert_array_equal(part.loo_predictions_, full.loo_predictions_[part.loo_rows_])
    expected = np.mean(HammingLoss()(part.loo_predictions_, Y[part.loo_rows_]))
    assert part.best_score_ == -expected


def test_kernel_subsample_chooses_the_kernel_first():
    X, Y, _ = _problem(TREE, m=80, seed=6)
    grid = {"kernel": ["rbf"], "gamma": [0.05, 0.5, 5.0]}
    cv = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1], random_state=0,
                search=LeaveOneOutSearch(kernel_grid=grid, kernel_subsample=40,
                                         fit_intercept=True)).fit(X, Y)
    stage1 = cv.kernel_search_results_
    assert len(stage1["params"]) == 6 and len(cv.cv_results_["params"]) == 2
    winner = stage1["params"][int(np.argmin(stage1["rank"]))]
    assert cv.kernel_params_["gamma"] == winner["gamma"]
    assert {p["gamma"] for p in cv.cv_results_["params"]} == {winner["gamma"]}


def test_cross_val_score_slices_a_precomputed_kernel_on_both_axes():
    """Regression: without the pairwise tag scikit-learn sliced only the rows of K."""
    X, Y, _ = _problem(TREE, m=45)
    K = rbf_kernel(X, gamma=0.5)
    cv = KFold(3, shuffle=True, random_state=0)
    for make in (lambda **kw: ECRM(HammingLoss(), TREE, alpha=1e-2, **kw),
                 lambda **kw: ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1], **kw)):
        assert make(kernel="precomputed").__sklearn_tags__().input_tags.pairwise
        assert not make(kernel="rbf").__sklearn_tags__().input_tags.pairwise
        pre = cross_val_score(make(kernel="precomputed"), K, Y, cv=cv)
        named = cross_val_score(make(kernel="rbf", gamma=0.5), X, Y, cv=cv)
        np.testing.assert_allclose(pre, named, rtol=1e-12)


def test_fit_with_a_precomputed_kernel_makes_one_m_by_m_array():
    """The factor is the only m x m array a fit allocates: the ridge goes on the diagonal of
    that one copy in place (no K + ridge*I, no second copy of K), and the caller's K stays
    untouched, even read-only."""
    X, Y, _ = _problem(TREE, m=300)
    K = rbf_kernel(X, gamma=0.5)
    K.setflags(write=False)
    K0 = K.copy()
    block = K.nbytes
    for est in (ECRM(HammingLoss(), TREE, kernel="precomputed"), ECRM(HammingLoss(), TREE)):
        data = K if est.kernel == "precomputed" else X
        clone(est).fit(data, Y)  # imports and caches outside the measurement
        tracemalloc.start()
        try:
            est.fit(data, Y)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1.5 * block, f"{est.kernel}: peak {peak / block:.2f} x m*m*8 bytes"
    np.testing.assert_array_equal(K, K0)
    np.testing.assert_allclose(
        ECRM(HammingLoss(), TREE, kernel="precomputed").fit(K, Y).predict_costs(K[:5]),
        ECRM(HammingLoss(), TREE, gamma=0.5).fit(X, Y).predict_costs(X[:5]), rtol=1e-9)


class _Reversed(MultilabelSpace):
    """A space whose consistent scores are 1 - S: shows which hook predict_scores uses."""

    def consistent_scores(self, S):
        return 1.0 - np.asarray(S)


def test_predict_scores_use_the_consistent_scores_hook():
    X, Y, rng = _problem(TREE)
    est = ECRM(HammingLoss(), _Reversed(TREE.n_labels), gamma=0.5).fit(X, Y)
    Xt = rng.normal(size=(5, 3))
    raw = np.clip(est.conditional_weights(Xt) @ Y, 0, 1)
    np.testing.assert_allclose(est.predict_scores(Xt), 1.0 - raw, atol=1e-9)


class _PlainHamming(Loss):
    """The Hamming loss with no linear form: ECRM minimises it through the risk weights."""

    def __call__(self, Y_pred, Y_true):
        return np.abs(np.asarray(Y_pred, float) - np.asarray(Y_true, float)).sum(axis=1)


def test_a_loss_without_linear_form_goes_through_the_weights():
    X, Y, rng = _problem(TREE)
    space = MultilabelSpace(TREE.n_labels)
    Xt = rng.normal(size=(10, 3))
    plain = ECRM(_PlainHamming(), space, gamma=0.5).fit(X, Y)
    linear = ECRM(HammingLoss(), space, gamma=0.5).fit(X, Y)
    np.testing.assert_array_equal(plain.predict(Xt), linear.predict(Xt))
    Yt = linear.predict(Xt)
    np.testing.assert_allclose(plain.conditional_risk(Xt, Yt), linear.conditional_risk(Xt, Yt),
                               rtol=1e-9, atol=1e-9)
    with pytest.raises(TypeError, match="no linear form"):
        plain.predict_costs(Xt)


def test_the_cost_step_pickles_no_copy_of_the_fit():
    # a prediction step shipped to Dask workers holds the fit and the cost map: the map must
    # not add a pickled copy of the fit's coefficients (a view pickles as a copy)
    import pickle

    from ecrm import Hierarchy
    from ecrm.weights._risk import _Costs

    rng = np.random.default_rng(0)
    X = rng.random((500, 4))
    Y = np.array([[1, 1, 0], [1, 0, 1]])[rng.integers(0, 2, 500)]
    fit = ECRM(HammingLoss(), Hierarchy([("a", "a1"), ("a", "a2")])).fit(X, Y)._slim_fit()
    costs = _Costs(fit)
    np.testing.assert_allclose(costs(fit.block(X[:3])),
                               fit.block(X[:3]) @ fit.risk_coef[:, :-1]
                               + fit.risk_intercept[:-1], rtol=1e-12, atol=1e-12)
    assert len(pickle.dumps((fit, costs))) < len(pickle.dumps(fit)) + 1000
