"""KendallLoss and the exact linear ordering oracle, against brute force over permutations."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecrm import ECRMCV, PermutationSpace
from ecrm.losses.kendall import KendallLoss, kendall_tau
from ecrm.selection import LeaveOneOutSearch
from ecrm.spaces.linear_ordering import MILP_RTOL, linear_ordering, ordering_cost
from ecrm.testing import check_linear_form, check_oracle


def _brute_force(B):
    """Minimum cost over all k! orders, per row."""
    B = np.atleast_3d(B) if B.ndim == 2 else B
    perms = np.array(list(itertools.permutations(range(B.shape[1]))))
    costs = np.stack([ordering_cost(B, np.tile(p, (len(B), 1))) for p in perms], axis=1)
    return costs.min(axis=1)


def _check_optimal(B, orders, rtol=1e-12):
    """Optimal within ``rtol * sum|B|`` (the MILP: its gap, MILP_RTOL of the row, plus
    the round-off of the sums)."""
    B = np.asarray(B, dtype=float)
    assert np.array_equal(np.sort(orders, axis=1), np.tile(np.arange(B.shape[1]), (len(B), 1)))
    best = _brute_force(B)
    scale = np.abs(B).sum(axis=(1, 2))
    np.testing.assert_array_less(ordering_cost(B, orders) - best, rtol * scale + 1e-300)


@st.composite
def _costs(draw):
    k = draw(st.integers(1, 7))
    n = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["normal", "magnitudes", "ties", "near-ties", "transitive"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "normal":
        B = rng.normal(size=(n, k, k))
    elif kind == "magnitudes":  # mixed magnitudes 1e-12 .. 1e12 within a row
        B = rng.normal(size=(n, k, k)) * 10.0 ** rng.integers(-12, 13, size=(n, k, k))
    elif kind == "ties":
        B = rng.integers(-2, 3, size=(n, k, k)).astype(float)
    elif kind == "near-ties":
        B = 1.0 + rng.integers(-1, 2, size=(n, k, k)) * 1e-13
    else:  # a weighted average of a few rankings: what Kemeny aggregation sees
        R = np.argsort(rng.random((4, k)), axis=1)
        w = rng.normal(size=(n, 4))
        B = np.einsum("nm,mab->nab", w, (R[:, :, None] > R[:, None, :]).astype(float))
    return B


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_costs(), st.sampled_from(["auto", "dp", "milp"]))
def test_linear_ordering_matches_brute_force(B, method):
    res = linear_ordering(B, method=method)
    _check_optimal(B, res.solution, rtol=MILP_RTOL + 1e-12 if method == "milp" else 1e-12)
    np.testing.assert_allclose(res.value, ordering_cost(B, res.solution))
    assert res.certified.all()


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(_costs(), st.sampled_from([2.0**-40, 0.5, 3.0, 1e-12, 1e12]))
def test_linear_ordering_scale_invariant(B, s):
    base = linear_ordering(B)
    scaled = linear_ordering(B * s)
    if np.log2(s) == round(np.log2(s)):  # power-of-two scalings are exact: the same answer
        np.testing.assert_array_equal(scaled.solution, base.solution)
    _check_optimal(B * s, scaled.solution)
    # the DP sums in another order than ordering_cost: round-off relative to sum |B|
    np.testing.assert_allclose(scaled.value, s * ordering_cost(B, scaled.solution), rtol=0,
                               atol=1e-12 * s * np.abs(B).sum())


def test_decomposition_and_dp_agree_with_milp_on_larger_blocks():
    rng = np.random.default_rng(0)
    for k in (8, 10, 12):
        B = rng.normal(size=(4, k, k))
        dp, milp = linear_ordering(B, method="dp"), linear_ordering(B, method="milp")
        auto = linear_ordering(B, max_dp_size=5)  # blocks above 5 items go to the MILP
        np.testing.assert_allclose(dp.value, milp.value, rtol=1e-9)
        np.testing.assert_allclose(auto.value, dp.value, rtol=1e-9)
        assert set(auto.method) <= {"dp", "milp"}


def _milp_rows(rng, k):
    """Cost rows on which HiGHS's absolute tolerances matter: differences B_ab - B_ba of
    about 1e-7 of the row's largest (near-ties on a large common part), one huge entry
    next to ordinary ones, and rows of tiny or huge magnitude."""
    near = 1.0 + 1e-7 * rng.normal(size=(2, k, k))
    spike = rng.normal(size=(2, k, k))
    spike[:, 0, 1] = 1e6
    plain = rng.normal(size=(2, k, k)) * np.array([1e-12, 1e12])[:, None, None]
    return np.concatenate([near, spike, plain])


@pytest.mark.parametrize("k", [6, 10, 13, 16], ids="k={}".format)
def test_kendall_milp_is_exact_to_its_gap_against_the_dp(k):
    # Before: the MILP's objective was divided by its largest entry, so HiGHS's absolute gap
    # (1e-6) let it stop at orders costing up to 1e-6 of the row more than the optimum, and
    # they were marked certified. Scaled to an l1 norm near 2^20, the gap is MILP_RTOL.
    B = _milp_rows(np.random.default_rng(k), k)
    dp = linear_ordering(B, method="dp")
    milp = linear_ordering(B, method="milp")
    assert milp.certified.all() and set(milp.method) == {"milp"}
    iu = np.triu_indices(k, 1)
    l1 = np.abs(B - B.transpose(0, 2, 1))[:, iu[0], iu[1]].sum(axis=1)
    # The DP is exact up to a few ulps of sum |B| (its sums in a fixed order).
    slack = MILP_RTOL * l1 + 1e-14 * np.abs(B).sum(axis=(1, 2))
    np.testing.assert_array_less(milp.value - dp.value, slack)
    np.testing.assert_array_less(dp.value - milp.value, 1e-14 * np.abs(B).sum(axis=(1, 2)))
    # And through the automatic path with every block sent to the MILP.
    auto = linear_ordering(B, max_dp_size=1)
    np.testing.assert_array_less(auto.value - dp.value, slack)


def test_transitive_costs_split_into_single_items():
    rng = np.random.default_rng(1)
    order = rng.permutation(16)
    pos = np.argsort(order)
    B = (pos[:, None] > pos[None, :]).astype(float) * rng.uniform(0.5, 2.0, (16, 16))
    res = linear_ordering(B)
    np.testing.assert_array_equal(res.solution[0], order)
    assert res.info["largest_block"][0] == 1


def test_linear_ordering_rejects_bad_input():
    with pytest.raises(ValueError, match="shape"):
        linear_ordering(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        linear_ordering(np.array([[0.0, np.nan], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="method"):
        linear_ordering(np.zeros((2, 2)), method="greedy")
    with pytest.raises(ValueError, match="max_dp_size"):
        linear_ordering(np.zeros((2, 2)), max_dp_size=0)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5], ids="k={}".format)
def test_kendall_linear_form_and_oracle(k):
    space, loss = PermutationSpace(k), KendallLoss()
    check_linear_form(loss, space)
    C = np.random.default_rng(k).normal(size=(30, k * (k - 1) // 2))
    check_oracle(space, C, loss=loss)


def test_kendall_loss_definition_and_tau():
    s = PermutationSpace(4)
    Y = s.from_ranks([[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 2, 3]])
    ref = s.from_ranks([[0, 1, 2, 3]] * 3)
    np.testing.assert_array_equal(KendallLoss()(Y, ref), [0, 6, 1])
    np.testing.assert_allclose(kendall_tau(Y, ref), [1.0, -1.0, 1 - 4 / 12])


def test_kendall_check_space_and_cost_shape():
    from ecrm import MultilabelSpace

    with pytest.raises(ValueError, match="PermutationSpace"):
        KendallLoss().check_space(MultilabelSpace(3))
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        KendallLoss().argmin(np.zeros((2, 4)), PermutationSpace(3))


def test_ecrm_with_kendall_loss_end_to_end():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    scores = X @ rng.normal(size=(3, 5)) + 0.1 * rng.normal(size=(120, 5))
    space = PermutationSpace(5)
    Y = space.from_scores(scores)
    est = ECRMCV(KendallLoss(), space, alphas=np.logspace(-4, 0, 5),
                 search=LeaveOneOutSearch(kernel_grid={"kernel": ["rbf"], "gamma": [0.1, 0.3]}))
    est.fit(X[:90], Y[:90])
    P = est.predict(X[90:])
    assert space.contains(P).all()
    assert kendall_tau(P, Y[90:]).mean() > 0.6
    # The prediction minimises the estimated risk: the oracle equals brute force on its costs.
    check_oracle(space, est.predict_costs(X[90:]), loss=KendallLoss())
