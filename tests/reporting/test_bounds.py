"""Section 4: surrogacy, monotonicity, tightness (by enumeration) and the bound's arithmetic."""

import numpy as np
import pytest

from _shapes import TREE5 as H
from ecrm.losses.classification import ZeroOneLoss
from ecrm.losses.multilabel import HammingLoss, HierarchicalLoss
from ecrm.losses.ranking import FootruleLoss
from ecrm.reporting.bounds import generalization_bound, surrogate_loss, theorem_bound
from ecrm.selection import LeaveOneOutSearch
from ecrm.spaces.candidates import CandidateSpace
from ecrm.spaces.permutations import PermutationSpace
from ecrm.weights.kernel.estimator import ECRM, ECRMCV


def _problems():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    Yh = H.close((X @ rng.normal(size=(2, 5)) + rng.normal(size=(30, 5)) > 0) * 1.0)
    perm = PermutationSpace(3)
    Yp = perm.from_scores(X @ rng.normal(size=(2, 3)) + rng.normal(size=(30, 3)))
    cands = CandidateSpace.from_classes([0, 1, 2])
    yc = np.argmax(X @ rng.normal(size=(2, 3)) + rng.normal(size=(30, 3)), axis=1)[:, None]
    return [
        (HammingLoss(), H, X, Yh, 5.0),
        (HierarchicalLoss(H), H, X, Yh, 1.0),
        (FootruleLoss(), perm, X, Yp, 4.0),
        (ZeroOneLoss(cands), cands, X, yc, 1.0),
    ]


def _brute_force_surrogate(est, X, Y, rho, L):
    loss, space = est.loss, est.output_space
    allY = space.enumerate()
    out = []
    for x, y in zip(X, Y, strict=True):
        R = est.conditional_risk(np.repeat(x[None], len(allY), 0), allY)
        losses = loss(allY, np.repeat(y[None], len(allY), 0))
        out.append(min(np.max(losses + (R.min() - R) / rho), L))
    return np.array(out)


@pytest.mark.parametrize("k", range(4), ids="k={}".format)
def test_surrogate_by_enumeration_surrogacy_and_monotonicity(k):
    loss, space, X, Y, L = _problems()[k]
    est = ECRM(loss, space, gamma=1.0, alpha=1e-2, fit_intercept=False).fit(X[:20], Y[:20])
    Xt, Yt = X[20:], Y[20:]
    previous = None
    for rho in [1e-4, 1e-2, 0.1, 1.0, 10.0]:
        res = surrogate_loss(est, Xt, Yt, rho, loss_bound=L)
        np.testing.assert_allclose(res.value, _brute_force_surrogate(est, Xt, Yt, rho, L),
                                   atol=1e-8)
        assert np.all(res.value >= loss(est.predict(Xt), Yt) - 1e-12)  # surrogacy
        assert np.all(res.value <= L)
        if previous is not None:
            assert np.all(res.value >= previous - 1e-10)  # monotone in rho
        previous = res.value


@pytest.mark.parametrize("k", range(4), ids="k={}".format)
def test_tight_for_small_rho_on_finite_spaces(k):
    loss, space, X, Y, L = _problems()[k]
    est = ECRM(loss, space, gamma=1.0, alpha=1e-2).fit(X[:20], Y[:20])
    allY = space.enumerate()
    for x, y in zip(X[20:], Y[20:], strict=True):
        R = est.conditional_risk(np.repeat(x[None], len(allY), 0), allY)
        losses = loss(allY, np.repeat(y[None], len(allY), 0))
        minimisers = R <= R.min() + 1e-12
        gaps = R[~minimisers] - R.min()
        rho_star = gaps.min() / (losses.max() + 1) if gaps.size else 1.0
        res = surrogate_loss(est, x[None], y[None], rho_star / 2, loss_bound=L)
        # the worst minimiser's loss (the paper's tie rule) equals L^rho below rho*
        np.testing.assert_allclose(res.value, [losses[minimisers].max()], atol=1e-8)


def test_theorem_arithmetic_and_bad_parameters():
    b = theorem_bound(0.2, n_samples=100, rho=2.0, delta=0.1, kappa=1.0, lam=0.5,
                      loss_bound=3.0)
    nu = 2.0 + 2.0**1.5
    assert b.nu == pytest.approx(nu)
    assert b.stability_term == pytest.approx(4 * 3 * nu / (2 * 100))
    assert b.confidence_term == pytest.approx(3 * (8 * nu / 2 + 1) * np.sqrt(np.log(10) / 200))
    assert b.bound == pytest.approx(0.2 + b.stability_term + b.confidence_term)
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match=r"rho must be a real number in \(0, inf\)"):
            theorem_bound(0.1, n_samples=10, rho=bad, delta=0.1, kappa=1, lam=1, loss_bound=1)
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"delta must be a real number in \(0, 1\)"):
            theorem_bound(0.1, n_samples=10, rho=1, delta=bad, kappa=1, lam=1, loss_bound=1)


def test_generalization_bound_of_a_fitted_estimator():
    loss, space, X, Y, L = _problems()[0]
    est = ECRM(loss, space, gamma=1.0, alpha=0.5, fit_intercept=False).fit(X, Y)
    b = generalization_bound(est, rho=5.0, delta=0.05, loss_bound=L)
    s = surrogate_loss(est, X, Y, 5.0, loss_bound=L)
    assert b.empirical_risk == pytest.approx(s.mean) and b.kappa == 1.0 and b.lam == 0.5
    with pytest.warns(UserWarning, match="without intercept"):
        generalization_bound(ECRM(loss, space, gamma=1.0).fit(X, Y), rho=1.0, delta=0.05,
                             loss_bound=L)
    with pytest.raises(ValueError, match="give kappa"):
        generalization_bound(ECRM(loss, space, kernel="linear", fit_intercept=False).fit(X, Y),
                             rho=1.0, delta=0.05, loss_bound=L)
    with pytest.raises(ValueError, match=r"rho must be a real number in \(0, inf\)"):
        surrogate_loss(est, X, Y, 0.0)


def test_generalization_bound_reads_the_fitted_kernel():
    """Regression: ECRMCV's kernel is "rbf" but its grid chose the linear kernel; the bound
    used to read ``estimator.kernel`` and silently take kappa = 1."""
    loss, space, X, Y, L = _problems()[0]
    cv = ECRMCV(loss, space, kernel="rbf", alphas=[0.5],
                search=LeaveOneOutSearch(kernel_grid={"kernel": ["linear"]},
                                         fit_intercept=False)).fit(X, Y)
    assert cv.kernel_params_["kernel"] == "linear"
    with pytest.raises(ValueError, match="give kappa = sup_x k.*for kernel 'linear'"):
        generalization_bound(cv, rho=1.0, delta=0.05, loss_bound=L)
    kappa = float(np.max(np.sum(X**2, axis=1)))
    b = generalization_bound(cv, rho=1.0, delta=0.05, loss_bound=L, kappa=kappa)
    assert b.kappa == kappa and b.lam == 0.5
    # and the other way round: a grid choosing rbf for an estimator built with "linear"
    rbf = ECRMCV(loss, space, kernel="linear", alphas=[0.5],
                 search=LeaveOneOutSearch(kernel_grid={"kernel": ["rbf"]},
                                          fit_intercept=False)).fit(X, Y)
    assert generalization_bound(rbf, rho=1.0, delta=0.05, loss_bound=L).kappa == 1.0
