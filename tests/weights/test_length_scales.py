"""Per-feature length-scales by the exact leave-one-out error: the closed forms against
direct computation (refits without each point, central differences), then the learner."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import sparse
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

from ecrm.weights.kernel.length_scales import LeaveOneOutLengthScales, leave_one_out_error

KERNELS = {"rbf": rbf_kernel, "laplacian": laplacian_kernel}


def _problem(seed, m=14, p=3, d=2):
    rng = np.random.default_rng(seed)
    X, T = rng.normal(size=(m, p)), rng.normal(size=(m, d))
    return X, T, np.exp(rng.uniform(-2, 1, size=p)), float(np.exp(rng.uniform(-3, 1)))


def _ard_gram(X, scales, kernel):
    """The ARD kernel entry by entry, from its definition."""
    power = 2 if kernel == "rbf" else 1
    diff = np.abs(X[:, None, :] - X[None, :, :]) ** power
    return np.exp(-(diff * scales).sum(axis=2))


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@given(seed=st.integers(0, 2**32 - 1))
def test_error_equals_refits_without_each_point(kernel, seed):
    X, T, scales, ridge = _problem(seed)
    K, m, d = _ard_gram(X, scales, kernel), *T.shape
    total = 0.0
    for i in range(m):
        rest = np.arange(m) != i
        coef = np.linalg.solve(K[np.ix_(rest, rest)] + ridge * np.eye(m - 1), T[rest])
        total += np.sum((T[i] - K[i, rest] @ coef) ** 2)
    # both are O(cond(K + rI)) * eps away from the exact value
    assert leave_one_out_error(X, T, scales, ridge, kernel) == pytest.approx(
        total / (m * d), rel=1e-8)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@given(seed=st.integers(0, 2**32 - 1))
def test_gradient_equals_central_differences(kernel, seed):
    X, T, scales, ridge = _problem(seed)
    _, grad_s, grad_r = leave_one_out_error(X, T, scales, ridge, kernel, gradient=True)
    h = 1e-5  # central differences: O(h^2) truncation, O(eps / h) round-off

    def error(log_s, log_r):
        return leave_one_out_error(X, T, np.exp(log_s), np.exp(log_r), kernel)

    log_s, log_r = np.log(scales), np.log(ridge)
    numeric = [(error(log_s + h * e, log_r) - error(log_s - h * e, log_r)) / (2 * h)
               for e in np.eye(len(scales))]
    numeric_r = (error(log_s, log_r + h) - error(log_s, log_r - h)) / (2 * h)
    scale = max(np.abs(numeric).max(), abs(numeric_r), 1e-3)
    np.testing.assert_allclose(grad_s, numeric, atol=1e-5 * scale)
    assert grad_r == pytest.approx(numeric_r, abs=1e-5 * scale)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_transformed_features_give_the_learned_kernel(kernel):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    ard = LeaveOneOutLengthScales(kernel, max_iter=5, random_state=0).fit(X, y)
    Z = ard.transform(X)
    np.testing.assert_allclose(KERNELS[kernel](Z, gamma=1.0), _ard_gram(X, ard.scales_, kernel),
                               rtol=1e-12, atol=1e-14)
    Zs = ard.transform(sparse.csr_matrix(X))
    assert sparse.issparse(Zs)
    np.testing.assert_allclose(Zs.toarray(), Z, rtol=1e-15)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_an_irrelevant_feature_is_switched_off(kernel):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 3))
    Y = np.c_[np.sin(2 * X[:, 0]), X[:, 1] ** 2] + 0.05 * rng.normal(size=(150, 2))
    ard = LeaveOneOutLengthScales(kernel, gamma=1 / 3, random_state=0).fit(X, Y)
    assert ard.loo_error_ < 0.5 * ard.initial_loo_error_
    assert ard.scales_[2] < 0.1 * min(ard.scales_[:2])  # feature 2 is noise
    low, high = np.array(ard.bounds) / 3
    assert np.all((ard.scales_ >= low * (1 - 1e-9)) & (ard.scales_ <= high * (1 + 1e-9)))
    assert 1e-8 <= ard.alpha_ <= 1e2


def test_the_subsample_is_drawn_by_random_state():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 2)), rng.normal(size=60)
    a = LeaveOneOutLengthScales(subsample=30, max_iter=3, random_state=1).fit(X, y)
    b = LeaveOneOutLengthScales(subsample=30, max_iter=3, random_state=1).fit(X, y)
    np.testing.assert_array_equal(a.scales_, b.scales_)
    full = LeaveOneOutLengthScales(subsample=None, max_iter=3).fit(X, y)
    assert not np.array_equal(a.scales_, full.scales_)


@pytest.mark.parametrize(("params", "message"), [
    ({"kernel": "linear"}, "kernel must be 'rbf' or 'laplacian'"),
    ({"gamma": -1.0}, "gamma > 0"),
    ({"alpha": 0.0}, "alpha > 0"),
    ({"bounds": (2.0, 3.0)}, "bounds"),
    ({"subsample": 1}, "subsample must be at least 2"),
], ids=["kernel-linear", "gamma-negative", "alpha-zero", "bounds-above-one",
        "subsample-one"])
def test_bad_parameters_are_named(params, message):
    X, y = np.zeros((5, 2)), np.zeros(5)
    with pytest.raises(ValueError, match=message):
        LeaveOneOutLengthScales(**params).fit(X, y)


def test_transform_checks_the_width():
    ard = LeaveOneOutLengthScales(max_iter=2).fit(np.eye(6)[:, :3], np.arange(6.0))
    with pytest.raises(ValueError, match="3 features"):
        ard.transform(np.zeros((2, 4)))


def test_constant_targets_leave_the_start_and_one_point_is_refused():
    X = np.random.default_rng(0).normal(size=(10, 2))
    ard = LeaveOneOutLengthScales(gamma=0.5, max_iter=5).fit(X, np.ones(10))
    assert ard.loo_error_ == ard.initial_loo_error_ == 0.0
    np.testing.assert_allclose(ard.scales_, [0.5, 0.5], rtol=1e-14)
    with pytest.raises(ValueError, match="at least 2 samples; got 1"):
        LeaveOneOutLengthScales().fit(X[:1], [1.0])
