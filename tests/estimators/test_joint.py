"""Joint-kernel additive models: the eigen solve against the full (me) x (me) system."""

import numpy as np
import pytest
from scipy import linalg
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import KFold, cross_val_score

from _shapes import TREE6 as H
from ecrm.datasets.synthetic import make_hmc
from ecrm.estimators.joint import JointKernelECRM, check_task_kernel, hierarchy_task_kernel
from ecrm.losses.multilabel import HammingLoss, HierarchicalLoss
from ecrm.weights.kernel.estimator import ECRM


def _data(m=25, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    Y = H.close((X @ rng.normal(size=(3, H.n_labels)) + rng.normal(size=(m, 6)) > 0) * 1.0)
    return X, Y, rng.normal(size=(7, 3))


def _full_solve(K, Kt, B, T, ridge, intercept):
    """Costs from the (me) x (me) system with kernel B (x) K (tasks major), no shortcuts."""
    m, e = T.shape
    Kf = np.kron(B, K)
    t = T.T.ravel()
    if not intercept:
        alpha = linalg.solve(Kf + ridge * np.eye(m * e), t)
        return (np.kron(B, Kt) @ alpha).reshape(e, -1).T
    E = np.kron(np.eye(e), np.ones((m, 1)))
    M = np.block([[Kf + ridge * np.eye(m * e), E], [E.T @ Kf, m * np.eye(e)]])
    sol = linalg.solve(M, np.concatenate([t, E.T @ t]))
    alpha, b = sol[:m * e], sol[m * e:]
    return (np.kron(B, Kt) @ alpha).reshape(e, -1).T + b


@pytest.mark.parametrize("intercept", [False, True], ids=["no-intercept", "intercept"])
@pytest.mark.parametrize("kind", ["adjacency", "ancestors"])
def test_eigen_solve_equals_the_full_system(intercept, kind):
    X, Y, Xt = _data()
    B = hierarchy_task_kernel(H, kind)
    loss = HammingLoss()
    est = JointKernelECRM(loss, H, task_kernel=B, gamma=0.4, alpha=1e-2,
                          fit_intercept=intercept).fit(X, Y)
    K, Kt = rbf_kernel(X, gamma=0.4), rbf_kernel(Xt, X, gamma=0.4)
    expected = _full_solve(K, Kt, B, loss.psi(Y), len(X) * 1e-2, intercept)
    np.testing.assert_allclose(est.predict_costs(Xt), expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("intercept", [False, True], ids="intercept={}".format)
def test_identity_task_kernel_is_plain_ecrm(intercept):
    X, Y, Xt = _data(seed=1)
    loss = HierarchicalLoss(H)
    joint = JointKernelECRM(loss, H, gamma=0.4, alpha=1e-2, fit_intercept=intercept).fit(X, Y)
    plain = ECRM(loss, H, gamma=0.4, alpha=1e-2, fit_intercept=intercept).fit(X, Y)
    np.testing.assert_allclose(joint.predict_costs(Xt), plain.predict_costs(Xt), atol=1e-10)
    np.testing.assert_allclose(joint.conditional_risk(Xt, plain.predict(Xt)),
                               plain.conditional_risk(Xt, plain.predict(Xt)), atol=1e-10)
    np.testing.assert_array_equal(joint.predict(Xt), plain.predict(Xt))


def test_prediction_minimises_the_joint_risk_over_the_hierarchy():
    X, Y, Xt = _data(seed=2)
    est = JointKernelECRM(HammingLoss(), H, task_kernel=hierarchy_task_kernel(H),
                          gamma=0.4, alpha=1e-2).fit(X, Y)
    allY = H.enumerate()
    risks = np.array([est.conditional_risk(Xt, np.repeat(y[None], len(Xt), 0)) for y in allY])
    np.testing.assert_allclose(est.conditional_risk(Xt, est.predict(Xt)), risks.min(axis=0),
                               atol=1e-9)


def test_joint_model_learns_synthetic_hmc():
    X, Y, h = make_hmc(300, n_labels=12, random_state=0)
    est = JointKernelECRM(HammingLoss(), h, task_kernel=hierarchy_task_kernel(h), gamma=0.1,
                          alpha=1e-3).fit(X[:200], Y[:200])
    assert -est.score(X[200:], Y[200:]) < HammingLoss()(np.zeros_like(Y[200:]), Y[200:]).mean()


def test_bad_task_kernels():
    with pytest.raises(ValueError, match="square"):
        check_task_kernel(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"must be 6 x 6"):
        check_task_kernel(np.eye(5), 6)
    with pytest.raises(ValueError, match="symmetric"):
        check_task_kernel([[1, 0.5], [0, 1]])
    with pytest.raises(ValueError, match="positive semi-definite"):
        check_task_kernel([[1, 2], [2, 1]])
    with pytest.raises(ValueError, match=r"weight must lie in \[0, "):
        hierarchy_task_kernel(H, weight=5.0)
    with pytest.raises(ValueError, match="kind"):
        hierarchy_task_kernel(H, "siblings")
    X, Y, _ = _data()
    with pytest.raises(ValueError, match="must be 6 x 6"):
        JointKernelECRM(HammingLoss(), H, task_kernel=np.eye(3)).fit(X, Y)


def test_precomputed_kernel_and_pairwise_cross_validation():
    X, Y, Xt = _data(m=30, seed=3)
    B = hierarchy_task_kernel(H)
    named = JointKernelECRM(HammingLoss(), H, task_kernel=B, gamma=0.4, alpha=1e-2).fit(X, Y)
    pre = JointKernelECRM(HammingLoss(), H, task_kernel=B, kernel="precomputed", alpha=1e-2)
    pre.fit(rbf_kernel(X, gamma=0.4), Y)
    np.testing.assert_allclose(pre.predict_costs(rbf_kernel(Xt, X, gamma=0.4)),
                               named.predict_costs(Xt), rtol=1e-9, atol=1e-11)
    cv = KFold(3, shuffle=True, random_state=0)
    np.testing.assert_allclose(
        cross_val_score(pre, rbf_kernel(X, gamma=0.4), Y, cv=cv),
        cross_val_score(named, X, Y, cv=cv), rtol=1e-12)
