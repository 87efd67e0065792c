"""Closed forms of the risk regressions against direct solves."""

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel

from ecrm.weights.kernel._ridge import (
    CholeskyFactor,
    EigenFactor,
    LeaveOneOut,
    check_ridge,
    fit_multitask_ridge,
    fit_ridge,
    risk_weights,
)


def _data(seed=0, m=30, p=4, e=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    T = rng.normal(size=(m, e))
    return X, T, rng


def test_weights_equal_kernel_ridge_on_identity_targets():
    X, _, rng = _data()
    m, alpha = len(X), 0.01
    Xt = rng.normal(size=(7, X.shape[1]))
    K, V = rbf_kernel(X, X, gamma=0.3), rbf_kernel(Xt, X, gamma=0.3)
    fit = fit_ridge(CholeskyFactor(K, m * alpha), np.eye(m), fit_intercept=False)
    W = risk_weights(CholeskyFactor(K, m * alpha), fit, V)
    kr = KernelRidge(alpha=m * alpha, kernel="rbf", gamma=0.3).fit(X, np.eye(m))
    np.testing.assert_allclose(W, kr.predict(Xt), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("seed", range(3), ids="seed={}".format)
def test_intercept_equals_least_squares_with_bias_column(seed):
    """Linear kernel: ECRM's intercept is ridge regression with an unpenalised bias column."""
    X, T, rng = _data(seed, m=25, p=5, e=4)
    m, lam = len(X), 0.05
    Xt = rng.normal(size=(6, X.shape[1]))
    factor = CholeskyFactor(X @ X.T, m * lam)
    fit = fit_ridge(factor, T, fit_intercept=True)
    pred = Xt @ X.T @ fit.dual_coef + fit.intercept
    # Direct: minimise (1/m)|Z theta - T|^2 + lam |beta|^2 with Z = [X, 1], bias unpenalised.
    Z = np.column_stack([X, np.ones(m)])
    P = lam * np.diag([1.0] * X.shape[1] + [0.0])
    theta = np.linalg.solve(Z.T @ Z / m + P, Z.T @ T / m)
    np.testing.assert_allclose(pred, np.column_stack([Xt, np.ones(len(Xt))]) @ theta,
                               rtol=1e-8, atol=1e-10)
    # The weights reproduce the same predictions and sum to one.
    W = risk_weights(factor, fit, Xt @ X.T)
    np.testing.assert_allclose(W @ T, pred, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-10)


def test_eigen_factor_solves_like_cholesky():
    X, T, _ = _data()
    K = rbf_kernel(X, X)
    np.testing.assert_allclose(EigenFactor.from_kernel(K).with_ridge(0.7).solve(T),
                               CholeskyFactor(K, 0.7).solve(T), rtol=1e-8, atol=1e-10)


def test_cholesky_failure_warns_and_falls_back():
    K = -np.eye(4)  # not positive definite even after the ridge
    with pytest.warns(RuntimeWarning, match="positive definite"):
        f = CholeskyFactor(K, 0.5)
    np.testing.assert_allclose(f.solve(np.ones(4)), np.full(4, 2.0))


@pytest.mark.parametrize("fit_intercept", [False, True], ids="fit_intercept={}".format)
@pytest.mark.parametrize("alpha", [1e-4, 1e-2, 1.0], ids="alpha={}".format)
def test_leave_one_out_equals_refit_without_each_point(fit_intercept, alpha):
    X, T, _ = _data(3, m=20)
    m = len(X)
    K = rbf_kernel(X, X, gamma=0.5)
    loo = LeaveOneOut(EigenFactor.from_kernel(K), T).predictions(m * alpha, fit_intercept)
    for i in range(m):
        keep = np.arange(m) != i
        # The refit keeps the full problem's ridge term m * alpha on its diagonal.
        fit = fit_ridge(CholeskyFactor(K[np.ix_(keep, keep)], m * alpha), T[keep], fit_intercept)
        direct = K[i, keep] @ fit.dual_coef + fit.intercept
        np.testing.assert_allclose(loo[i], direct, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("fit_intercept", [False, True], ids="fit_intercept={}".format)
def test_thin_linear_decomposition_matches_the_full_one(fit_intercept):
    X, T, _ = _data(5, m=30, p=4)
    thin, full = EigenFactor.from_features(X), EigenFactor.from_kernel(X @ X.T)
    assert thin.Q.shape == (30, 4) and thin.thin
    np.testing.assert_allclose(thin.with_ridge(0.3).solve(T), full.with_ridge(0.3).solve(T),
                               rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(LeaveOneOut(thin, T).predictions(0.3, fit_intercept),
                               LeaveOneOut(full, T).predictions(0.3, fit_intercept),
                               rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("m", [7, 600],  # one block of the in-place mirror, and several
                         ids="m={}".format)
def test_in_place_cholesky_is_bitwise_the_copy_and_reads_only_the_lower_triangle(m):
    rng = np.random.default_rng(m)
    X = rng.normal(size=(m, 5))
    K = rbf_kernel(X, gamma=0.2)
    K[np.triu_indices(m, 1)] += rng.normal(size=m * (m - 1) // 2)  # garbage, never read
    T = rng.normal(size=(m, 3))
    K0 = K.copy()
    copied = CholeskyFactor(K, 0.3)
    np.testing.assert_array_equal(K, K0)  # the default never touches K
    own = K.copy()
    in_place = CholeskyFactor(own, 0.3, overwrite_k=True)
    assert np.shares_memory(in_place._chol[0], own)  # no second m x m array
    np.testing.assert_array_equal(in_place.solve(T), copied.solve(T))
    lower = np.tril(K0) + np.tril(K0, -1).T
    np.testing.assert_allclose(copied.solve(T), np.linalg.solve(lower + 0.3 * np.eye(m), T),
                               rtol=1e-8, atol=1e-10)


def test_in_place_cholesky_failure_restores_K_for_the_fallback():
    rng = np.random.default_rng(1)
    Q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    K = (Q * np.array([-3.0, 1, 2, 3, 4, 5])) @ Q.T  # indefinite
    T = rng.normal(size=(6, 2))
    with pytest.warns(RuntimeWarning, match="positive definite"):
        expected = CholeskyFactor(K, 0.5).solve(T)
    with pytest.warns(RuntimeWarning, match="positive definite"):
        f = CholeskyFactor(K.copy(), 0.5, overwrite_k=True)
    np.testing.assert_array_equal(f.solve(T), expected)


@pytest.mark.parametrize("fit_intercept", [False, True], ids="fit_intercept={}".format)
def test_multitask_ridge_is_one_scaled_ridge_per_column(fit_intercept):
    X, T, rng = _data(7, m=25, e=4)
    K = rbf_kernel(X, gamma=0.3)
    V = rbf_kernel(rng.normal(size=(5, X.shape[1])), X, gamma=0.3)
    eig = EigenFactor.from_kernel(K).with_ridge(0.2)
    scales = np.array([0.0, 0.5, 1.0, 3.0])
    fit = fit_multitask_ridge(eig, T, scales, fit_intercept)
    for k, s in enumerate(scales):
        # column k alone, with the Gram matrix s * K
        one = fit_ridge(CholeskyFactor(s * K, 0.2), T[:, [k]], fit_intercept)
        np.testing.assert_allclose(V @ fit.dual_coef[:, k] + fit.intercept[k],
                                   (s * V) @ one.dual_coef[:, 0] + one.intercept[0],
                                   rtol=1e-8, atol=1e-10)
    plain = fit_ridge(eig, T, fit_intercept)
    ones = fit_multitask_ridge(eig, T, np.ones(4), fit_intercept)
    np.testing.assert_allclose(ones.dual_coef, plain.dual_coef, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ones.intercept, plain.intercept, rtol=1e-8, atol=1e-10)


def test_check_ridge_rule():
    assert check_ridge(1e-3, 100, diagonal_max=1.0) == 100 * 1e-3
    assert check_ridge(1e-300, 100, diagonal_max=0.0) == 100 * 1e-300  # K = 0: nothing to lose
    with pytest.raises(ValueError, match=r"alpha=1e\+307 is too large for 100 training"):
        check_ridge(1e307, 100)
    with pytest.raises(ValueError, match="alpha=5e-324 is too small"):
        check_ridge(5e-324, 100)
    eps = np.finfo(float).eps
    check_ridge(eps * 1e4 / 10, 10, diagonal_max=1e4)
    with pytest.raises(ValueError, match=r"alphas\[2\]=.* is too small"):
        check_ridge(0.5 * eps * 1e4 / 10, 10, diagonal_max=1e4, name="alphas[2]")


# -- large products in row blocks -----------------------------------------------------------
@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "linear", "poly", "cosine", "sigmoid"])
def test_large_kernel_blocks_are_computed_in_row_blocks_with_the_same_values(kernel,
                                                                           monkeypatch):
    """Past MAX_PRODUCT_ENTRIES a Gram matrix is built in row blocks (one huge X @ X.T
    crashes OpenBLAS at 27,000 rows): the entries are the one-block entries up to the
    rounding of a different BLAS routine, a few ulps of p |x|^2."""
    from ecrm.weights.kernel import _kernels
    from ecrm.weights.kernel._solvers.dual import gram_matrix

    X = np.random.default_rng(1).normal(size=(50, 4))
    params = {"kernel": kernel, "gamma": 0.3, "degree": 2, "coef0": 1.0}
    whole = _kernels.kernel_matrix(X, X, **params)
    monkeypatch.setattr(_kernels, "MAX_PRODUCT_ENTRIES", 7 * 50)  # blocks of 7 rows
    assert len(_kernels.large_product_rows(50, 50)) == 8
    tol = 50 * np.finfo(float).eps * (1 + np.abs(whole).max())
    np.testing.assert_allclose(_kernels.kernel_matrix(X, X, **params), whole, rtol=0, atol=tol)
    np.testing.assert_allclose(gram_matrix(X, params), whole, rtol=0, atol=tol)


def test_huge_factorisations_run_on_one_blas_thread():
    from threadpoolctl import threadpool_info

    from ecrm.weights.kernel._ridge import SINGLE_THREAD_ORDER, blas_threads_for

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    with blas_threads_for(SINGLE_THREAD_ORDER - 1):
        assert blas_threads() == before
    with blas_threads_for(SINGLE_THREAD_ORDER):
        assert set(blas_threads()) <= {1}
    assert blas_threads() == before


# -- the fast exact fit ------------------------------------------------------
def test_gram_matrix_is_bitwise_the_kernel_matrix():
    from ecrm.weights.kernel._kernels import kernel_matrix
    from ecrm.weights.kernel._solvers.dual import gram_matrix

    X = np.random.default_rng(0).normal(size=(120, 6))
    for params in ({"kernel": "rbf", "gamma": None}, {"kernel": "rbf", "gamma": 0.37},
                   {"kernel": "laplacian", "gamma": 0.2}, {"kernel": "poly", "gamma": 0.1}):
        params = {"degree": 3, "coef0": 1.0, **params}
        K = gram_matrix(X, params)
        assert K.flags.c_contiguous and K.dtype == np.float64
        np.testing.assert_array_equal(K, kernel_matrix(X, X, **params))
    K = rbf_kernel(X)
    own = gram_matrix(K, {"kernel": "precomputed", "gamma": None, "degree": 3, "coef0": 1.0})
    assert not np.shares_memory(own, K)  # a precomputed matrix is copied, never overwritten
    huge = np.array([[1e200], [-1e200], [3.0]])  # overflowing distances: as sklearn does
    params = {"kernel": "rbf", "gamma": 1.0, "degree": 3, "coef0": 1.0}
    np.testing.assert_array_equal(gram_matrix(huge, params), kernel_matrix(huge, huge, **params))


def test_in_place_eigendecomposition_reads_the_lower_triangle_and_takes_K_memory():
    rng = np.random.default_rng(2)
    m = 80
    K = rbf_kernel(rng.normal(size=(m, 4)), gamma=0.5)
    lam_ref = np.linalg.eigvalsh(K)
    garbage = K.copy()
    garbage[np.triu_indices(m, 1)] = rng.normal(size=m * (m - 1) // 2)  # never read
    copied = EigenFactor.from_kernel(garbage)
    own = garbage.copy()
    in_place = EigenFactor.from_kernel(own, overwrite_k=True)
    assert np.shares_memory(in_place.Q, own)  # no second m x m array
    # a backward-stable decomposition: |lam - lam_ref| <= c m eps ||K||
    bound = 10 * m * np.finfo(float).eps * lam_ref[-1]
    for eig in (copied, in_place):
        np.testing.assert_allclose(eig.lam, np.maximum(lam_ref, 0.0), rtol=0, atol=bound)
        np.testing.assert_allclose((eig.Q * eig.lam) @ eig.Q.T, K, rtol=0, atol=bound)
        np.testing.assert_allclose(eig.diagonal(), np.diag(K), rtol=0, atol=bound)


@pytest.mark.parametrize("fit_intercept", [False, True], ids="fit_intercept={}".format)
@pytest.mark.parametrize("alpha", [1e-8, 1e-5, 1e-2, 10.0], ids="alpha={}".format)
def test_leave_one_out_to_the_perturbation_bound_of_the_direct_solve(fit_intercept, alpha):
    """The leave-one-out predictions from one eigendecomposition against a float64 direct
    solve without each point. The decomposition is exact for K + E with
    ||E|| <= c m eps ||K||, which moves G^{-1} t by at most ||E|| / ridge relative to it: the
    tolerance is that condition number times c m eps (c = 10), on the scale of the targets."""
    rng = np.random.default_rng(4)
    m = 40
    X, T = rng.normal(size=(m, 3)), rng.normal(size=(m, 3))
    K = rbf_kernel(X, gamma=0.3)
    ridge = m * alpha
    norm = np.linalg.eigvalsh(K)[-1]
    tol = 10 * m * np.finfo(float).eps * (norm + ridge) / ridge * np.abs(T).max()
    loo = LeaveOneOut(EigenFactor.from_kernel(K), T)
    loo.prepare([ridge, 2 * ridge])
    P = loo.predictions(ridge, fit_intercept)
    for i in range(m):
        keep = np.arange(m) != i
        Kk = K[np.ix_(keep, keep)]
        G = Kk + ridge * np.eye(m - 1)
        if fit_intercept:  # [G 1; 1^T 0] [a; b] = [t; 0] (the stationarity conditions)
            A = np.block([[G, np.ones((m - 1, 1))], [np.ones((1, m - 1)), np.zeros((1, 1))]])
            sol = np.linalg.solve(A, np.vstack([T[keep], np.zeros((1, T.shape[1]))]))
            direct = K[i, keep] @ sol[:-1] + sol[-1]
        else:
            direct = K[i, keep] @ np.linalg.solve(G, T[keep])
        np.testing.assert_allclose(P[i], direct, rtol=0, atol=tol)


def test_leave_one_out_is_bitwise_the_same_whatever_the_batch_of_ridges():
    rng = np.random.default_rng(5)
    m = 300
    K = rbf_kernel(rng.normal(size=(m, 5)), gamma=0.2)
    T = rng.normal(size=(m, 4))
    eig = EigenFactor.from_kernel(K)
    ridges = np.logspace(-3, 2, 11) * m
    together = LeaveOneOut(eig, T)
    together.prepare(ridges)
    for r in ridges[::3]:
        alone = LeaveOneOut(eig, T)
        for icpt in (True, False):
            np.testing.assert_array_equal(alone.predictions(r, icpt),
                                          together.predictions(r, icpt))
    rows = np.array([0, 17, 299])
    np.testing.assert_allclose(LeaveOneOut(eig, T, rows).predictions(ridges[2], True),
                               together.predictions(ridges[2], True)[rows], rtol=1e-12,
                               atol=1e-12)
