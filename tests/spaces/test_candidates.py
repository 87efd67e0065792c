"""Finite output spaces and the 0-1 loss: membership, linear form, RLSC equivalence (Sec. 2.4.1).

The oracles (the space's and the 0-1 loss's) are checked against brute force in
tests/spaces/test_oracles.py.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel

from ecrm.losses.classification import ZeroOneLoss
from ecrm.losses.multilabel import HammingLoss
from ecrm.spaces.candidates import CandidateSpace
from ecrm.testing import check_linear_form
from ecrm.weights.kernel.estimator import ECRM


@st.composite
def candidate_sets(draw):
    k = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    rows = draw(st.lists(st.tuples(*[st.integers(-2, 2)] * d), min_size=k, max_size=k,
                         unique=True))
    return CandidateSpace(np.array(rows, dtype=float))


@settings(max_examples=40, deadline=None)
@given(candidate_sets())
def test_zero_one_linear_form_index_and_membership(space):
    check_linear_form(ZeroOneLoss(space), space)
    Y = space.enumerate()
    np.testing.assert_array_equal(space.index(Y[::-1]), np.arange(len(Y))[::-1])
    assert space.contains(Y).all()
    assert not space.contains(Y + 0.5).any()


def test_hamming_works_on_a_finite_set_of_label_sets():
    check_linear_form(HammingLoss(), CandidateSpace([[0, 0, 1], [1, 1, 0], [1, 0, 1]]))


def test_zero_one_argmin_picks_the_candidate_of_least_cost_first_on_ties():
    space = CandidateSpace([[2, 0], [0, 1], [-1, -1]])
    loss = ZeroOneLoss(space)
    Y = loss.argmin([[0.0, -1.0, -1.0], [3.0, 2.0, 1.0], [0.0, 0.0, 0.0]], space)
    np.testing.assert_array_equal(Y, [[0, 1], [-1, -1], [2, 0]])
    with pytest.raises(ValueError, match=r"shape \(n, 3\), one per candidate"):
        loss.argmin(np.zeros((1, 2)), space)
    with pytest.raises(ValueError, match="NaN"):
        loss.argmin([[0.0, np.nan, 1.0]], space)


def test_membership_and_index_are_vectorised_lookups():
    space = CandidateSpace([[0.0, 1.0], [-1.0, 0.0], [2.5, -3.0]])
    Y = np.array([[-1.0, -0.0], [2.5, -3.0], [1.0, 1.0], [0.0, 1.0], [np.nan, 0.0]])
    np.testing.assert_array_equal(space.contains(Y), [True, True, False, True, False])
    np.testing.assert_array_equal(space.index(Y[[0, 1, 3]]), [1, 2, 0])
    assert not space.contains(np.zeros((2, 3))).any()
    np.testing.assert_array_equal(CandidateSpace.from_classes([0, 1, 2]).contains([2, 3]),
                                  [True, False])


def _binary_problem(m=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=m) > 0.2, 1.0, -1.0)
    Xt = rng.normal(size=(60, 2))
    return X, y, Xt


@pytest.mark.parametrize("lam", [1e-3, 1e-1], ids="lam={}".format)
def test_zero_one_ecrm_is_rlsc_without_intercept(lam):
    X, y, Xt = _binary_problem()
    space = CandidateSpace([[-1], [1]])
    est = ECRM(ZeroOneLoss(space), space, gamma=0.5, alpha=lam, fit_intercept=False)
    pred = est.fit(X, y[:, None]).predict(Xt)[:, 0]
    f = KernelRidge(alpha=len(X) * lam, kernel="rbf", gamma=0.5).fit(X, y).predict(Xt)
    assert np.min(np.abs(f)) > 1e-9  # no ties
    np.testing.assert_array_equal(pred, np.sign(f))


@pytest.mark.parametrize("lam", [1e-3, 1e-1], ids="lam={}".format)
def test_zero_one_ecrm_is_rlsc_with_an_unpenalised_bias(lam):
    X, y, Xt = _binary_problem(seed=1)
    y = np.where(np.arange(len(y)) < 30, 1.0, y)  # unbalanced: the bias matters
    m = len(X)
    K = rbf_kernel(X, gamma=0.5)
    # min (1/m)||K a + b 1 - y||^2 + lam a'Ka:  (K + m lam I) a + b 1 = y,  1'K a + m b = 1'y
    M = np.block([[K + m * lam * np.eye(m), np.ones((m, 1))],
                  [K.sum(axis=0)[None, :], np.array([[m]])]])
    sol = linalg.solve(M, np.concatenate([y, [y.sum()]]))
    f = rbf_kernel(Xt, X, gamma=0.5) @ sol[:m] + sol[m]
    space = CandidateSpace([[-1], [1]])
    # a 1-D y gives 1-D predictions
    pred = ECRM(ZeroOneLoss(space), space, gamma=0.5, alpha=lam).fit(X, y).predict(Xt)
    assert np.min(np.abs(f)) > 1e-9
    np.testing.assert_array_equal(pred, np.sign(f))


def test_multiclass_predicts_the_class_with_the_largest_weight():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = np.argmax(X @ rng.normal(size=(2, 3)), axis=1).astype(float)
    space = CandidateSpace.from_classes([0, 1, 2])
    est = ECRM(ZeroOneLoss(space), space, gamma=1.0, alpha=1e-3).fit(X, y[:, None])
    W = est.conditional_weights(X)
    votes = np.column_stack([W[:, y == k].sum(axis=1) for k in range(3)])
    np.testing.assert_array_equal(est.predict(X)[:, 0], np.argmax(votes, axis=1))
    assert np.mean(est.predict(X)[:, 0] == y) > 0.9


def test_bad_candidates_and_outputs():
    with pytest.raises(ValueError, match="shape"):
        CandidateSpace(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="non-empty"):
        CandidateSpace(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="distinct; row 2 repeats row 0"):
        CandidateSpace([[0, 1], [1, 0], [0, 1]])
    space = CandidateSpace([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        space.validate(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"row 1 of Y, \[1.0, 1.0\], is not one of"):
        space.validate([[0, 1], [1, 1]])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        space.argmin(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="same candidates"):
        ZeroOneLoss([[0, 1], [1, 0]]).argmin(np.zeros((1, 2)), CandidateSpace([[1, 1], [0, 0]]))
    with pytest.raises(ValueError, match="same candidates"):
        ZeroOneLoss([[0, 1], [1, 0]]).check_space(CandidateSpace([[1, 0], [0, 1]]))  # order
    ZeroOneLoss([[0, 1], [1, 0]]).check_space(CandidateSpace([[0, 1], [1, 0]]))


def test_validate_does_not_modify_its_input():
    Y = np.array([[-1.0], [1.0]])
    out = CandidateSpace([[-1], [1]]).validate(Y)
    out[0, 0] = 7
    assert Y[0, 0] == -1.0
