"""Label ranking: the permutation space's conversions and membership, the ranking losses.

The assignment oracle is checked against brute force in tests/spaces/test_oracles.py.
"""

import itertools

import numpy as np
import pytest
from scipy.stats import spearmanr

from _ids import readable
from ecrm.losses.ranking import FootruleLoss, SquaredRankLoss, spearman_rho
from ecrm.spaces.base import MultilabelSpace
from ecrm.spaces.permutations import PermutationSpace, check_ranks
from ecrm.testing import check_linear_form
from ecrm.weights.kernel.estimator import ECRM


@pytest.mark.parametrize("loss", [FootruleLoss(), SquaredRankLoss()], ids=readable)
@pytest.mark.parametrize("d", [1, 2, 3, 4], ids="d={}".format)
def test_ranking_losses_are_linear_in_the_permutation_matrix(loss, d):
    check_linear_form(loss, PermutationSpace(d))


def test_footrule_is_the_papers_triple_sum():
    space = PermutationSpace(4)
    Y = space.enumerate()
    k = np.arange(4)
    D = np.abs(k[:, None] - k[None, :])
    for y, yr in itertools.product(Y[::5], Y[::7]):
        triple = np.einsum("kl,jl,jk->", D, yr.reshape(4, 4), y.reshape(4, 4))
        assert FootruleLoss()(y, yr)[0] == triple


def test_ranks_round_trip_and_spearman():
    rng = np.random.default_rng(0)
    space = PermutationSpace(6)
    R = np.array([rng.permutation(6) for _ in range(10)])
    Y = space.from_ranks(R)
    np.testing.assert_array_equal(space.to_ranks(Y), R)
    rho = spearman_rho(Y[:5], Y[5:])
    expected = [spearmanr(a, b).statistic for a, b in zip(R[:5], R[5:], strict=True)]
    np.testing.assert_allclose(rho, expected)
    S = np.array([[0.1, 0.5, 0.2, 0.9, 0.0, 0.3]])
    np.testing.assert_array_equal(space.to_ranks(space.from_scores(S)), [[4, 1, 3, 0, 5, 2]])


def test_ecrm_ranking_minimises_the_estimated_risk_over_all_permutations():
    rng = np.random.default_rng(1)
    d, space = 4, PermutationSpace(4)
    X = rng.normal(size=(30, 3))
    Y = space.from_scores(X @ rng.normal(size=(3, d)) + 0.3 * rng.normal(size=(30, d)))
    Xt = rng.normal(size=(8, 3))
    for loss in (FootruleLoss(), SquaredRankLoss()):
        est = ECRM(loss, space, gamma=0.3, alpha=1e-2).fit(X, Y)
        pred = est.predict(Xt)
        allY = space.enumerate()
        risks = np.array([est.conditional_risk(Xt, np.repeat(y[None], len(Xt), 0))
                          for y in allY])
        np.testing.assert_allclose(est.conditional_risk(Xt, pred), risks.min(axis=0),
                                   atol=1e-9)


def test_n_outputs_is_the_width_of_an_output():
    space = PermutationSpace(4)
    assert space.n_items == 4 and space.n_outputs == 16 == space.enumerate().shape[1]
    assert PermutationSpace.from_n_outputs(16) == space
    with pytest.raises(ValueError, match="width 15 is not a perfect square"):
        PermutationSpace.from_n_outputs(15)


def test_contains_agrees_with_validate():
    space = PermutationSpace(3)
    rng = np.random.default_rng(0)
    Y = np.vstack([space.enumerate(), rng.integers(0, 2, size=(200, 9)),
                   space.enumerate()[:2] * 0.5])
    expected = []
    for y in Y:
        try:
            space.validate(y)
            expected.append(True)
        except ValueError:
            expected.append(False)
    np.testing.assert_array_equal(space.contains(Y), expected)
    assert space.contains(Y[:6]).all() and not space.contains(np.eye(3)).any()


def test_ranking_losses_check_their_inputs_and_space():
    space = PermutationSpace(3)
    with pytest.raises(ValueError, match="not a permutation matrix"):
        FootruleLoss()(np.ones((1, 9)), space.enumerate()[:1])
    FootruleLoss().check_space(space)
    with pytest.raises(ValueError, match="perfect square"):
        SquaredRankLoss().check_space(MultilabelSpace(5))


def test_not_a_permutation():
    space = PermutationSpace(3)
    with pytest.raises(ValueError, match="position 1 is used more than once"):
        space.from_ranks([[0, 1, 2], [1, 1, 0]])
    with pytest.raises(ValueError, match="positions must be 0..2"):
        check_ranks([[1, 2, 3]])
    with pytest.raises(ValueError, match="non-integer"):
        check_ranks([[0.5, 1, 2]])
    with pytest.raises(ValueError, match=r"shape \(n, 9\)"):
        space.validate(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="item 0 has 2 positions"):
        space.validate([[1, 1, 0, 0, 0, 1, 0, 0, 0]])
    with pytest.raises(ValueError, match="position 1 holds 2 items"):
        space.validate([[1, 0, 0, 0, 1, 0, 0, 1, 0]])
    with pytest.raises(ValueError, match="only 0 and 1"):
        space.validate([[0.5, 0, 0, 0, 1, 0, 0, 0, 1]])
    with pytest.raises(ValueError, match="perfect square"):
        FootruleLoss().psi(np.zeros((1, 5)))
    with pytest.raises(ValueError, match="n_items must be an integer >= 1; got 0"):
        PermutationSpace(0)
    with pytest.raises(ValueError, match="n_items must be an integer"):
        PermutationSpace(2.0)


def test_permutation_argmin_rejects_an_unknown_method():
    with pytest.raises(ValueError, match="method must be 'auto', 'assignment' or 'enumerate'"):
        PermutationSpace(3).argmin(np.zeros(9), method="lp")


def test_permutation_argmin_enumerates_at_most_eight_items():
    with pytest.raises(ValueError, match="at most 8 items; got 9"):
        PermutationSpace(9).argmin(np.zeros(81), method="enumerate")


def test_permutation_argmin_methods_agree_on_the_optimal_cost():
    rng = np.random.default_rng(3)
    for k in range(1, 8):
        space = PermutationSpace(k)
        C = rng.normal(size=(40, k * k))
        values = [np.einsum("ij,ij->i", space.argmin(C, method=m), C)
                  for m in ("auto", "assignment", "enumerate")]
        for v in values[1:]:
            np.testing.assert_allclose(v, values[0], rtol=0, atol=1e-12)
    assert PermutationSpace(4).argmin(np.zeros((0, 16))).shape == (0, 16)
