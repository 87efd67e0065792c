"""The hierarchical-loss oracle's MILP stage: the path by components against the row path.

:func:`ecrm.spaces.hierarchy._products.products_argmin` sends the parts left by its exact
reductions to HiGHS. The ``"parts"`` path (the default) solves the LP relaxation of a block of
rows and then one MILP on the fractional components only; the ``"rows"`` path (the reference)
sends every row with a fractional label to the MILP whole. Before them, the compiled branch
and bound (:mod:`ecrm.spaces.hierarchy._branch`) solves the medium components. All must reach
the brute-force minimum.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_hierarchy import random_hierarchy, signed_costs

from ecrm import Hierarchy
from ecrm.losses import HierarchicalLoss
from ecrm.spaces.hierarchy import _products, _products_milp
from ecrm.testing import check_oracle


def oracle(h, C, P, path, **constants):
    """``h.argmin_products(C, P)`` on the MILP path ``path`` with the constants of
    ``_products`` given (``_ENUMERATE=0`` sends every hard component to HiGHS)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_products, "_MILP_PATH", path)
        for name, value in constants.items():
            mp.setattr(_products, name, value)
        return h.argmin_products(C, P)


def milp_tolerance(M):
    """How far apart two paths' objectives may be per row of costs ``M`` when either may come
    from HiGHS: its absolute optimality gap (1e-6) on a row scaled to max|c| > 2^19 (see
    ``_products``), once for each path, and the rounding of the sums."""
    return 2 * 1e-6 * 2.0**-19 * np.abs(M).max(axis=1) + 1e-14 * np.abs(M).sum(axis=1)


def sign_mix(rng, n, d, share):
    """Magnitudes of :func:`signed_costs` (ties, zeros, 1e-12..1e12), each entry negative
    with probability ``share``."""
    return np.where(rng.random((n, d)) < share, -1.0, 1.0) * np.abs(signed_costs(rng, n, d))


# the stage that solves the hard components: the MILP; enumeration (small) then the MILP;
# the branch and bound (numba); the branch and bound stopped after 3 nodes, so that most
# components go on to the MILP
STAGES = st.sampled_from([{"_BRANCH_MAX": 0, "_ENUMERATE": 0}, {"_BRANCH_MAX": 0},
                          {"_BRANCH_MAX": 63, "_ENUMERATE": 0},
                          {"_BRANCH_MAX": 63, "_BRANCH_NODES": 3, "_ENUMERATE": 0}])


@settings(max_examples=80, deadline=None)
@given(st.integers(3, 12), st.sampled_from([0.05, 0.3, 0.5, 0.9]), st.sampled_from([1, 3, 10]),
       STAGES, st.integers(0, 2**32 - 1))
def test_parts_match_rows_and_brute_force(d, share, block, stage, seed):
    # the same objective as the row path (MILP only) on every row, and the brute-force
    # minimum, whatever the signs, the scales, the rows per block and the stage
    check_stage(d, share, block, stage, seed)


# the search with closure bounds on every component of more than one label (the bit-set
# search on the others); the same stopped after 3 nodes, so that most go on to the MILP
CUT_STAGES = st.sampled_from([{"_BRANCH_MAX": 1, "_ENUMERATE": 0},
                              {"_BRANCH_MAX": 1, "_CUT_NODES": 3, "_ENUMERATE": 0},
                              {"_BRANCH_MAX": 1, "_BRANCH_NODES": 1, "_ENUMERATE": 0}])


@settings(max_examples=80, deadline=None)
@given(st.integers(3, 12), st.sampled_from([0.05, 0.3, 0.5, 0.9]), st.sampled_from([1, 3, 10]),
       CUT_STAGES, st.integers(0, 2**32 - 1))
def test_cut_search_matches_rows_and_brute_force(d, share, block, stage, seed):
    if not _products._branch.AVAILABLE:
        pytest.skip("numba (the 'fast' extra) is not installed")
    check_stage(d, share, block, stage, seed)


@settings(max_examples=25, deadline=None)
@given(st.integers(25, 60), st.sampled_from([0.3, 0.5]), CUT_STAGES, st.integers(0, 2**32 - 1))
# costs from 1e-12 to 3e11 in one row: the MILP (the reference) is 0.5 (1.5e-12 of the row's
# largest cost) above the search's optimum, within HiGHS's gap
@example(56, 0.5, {"_BRANCH_MAX": 1, "_ENUMERATE": 0}, 196455)
def test_cut_search_matches_the_milp_on_larger_dags(d, share, stage, seed):
    # larger parts (the search branches, and stops early at 3 nodes): the objective of the
    # row path (MILP only) on every row, within the MILP's own tolerance
    if not _products._branch.AVAILABLE:
        pytest.skip("numba (the 'fast' extra) is not installed")
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False, max_parents=4)
    K = len(h.multi_parent)
    C, P = sign_mix(rng, 12, d, share), sign_mix(rng, 12, K, share)
    M = np.hstack([C, P])
    loss = HierarchicalLoss(h)
    Y = oracle(h, C, P, "parts", **stage)
    Y_ref = oracle(h, C, P, "rows", _ENUMERATE=0, _BRANCH_MAX=0)
    assert h.is_consistent(Y).all()
    gap = np.einsum("ij,ij->i", M, loss.phi(Y) - loss.phi(Y_ref))
    assert np.all(np.abs(gap) <= milp_tolerance(M))


def check_stage(d, share, block, stage, seed):
    """On a random DAG of ``d`` labels and 12 rows of costs with the sign mix ``share``:
    the objective of the row path (MILP only) and the brute-force minimum."""
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    K = len(h.multi_parent)
    C, P = sign_mix(rng, 12, d, share), sign_mix(rng, 12, K, share)
    M = np.hstack([C, P])
    loss = HierarchicalLoss(h)
    Y = oracle(h, C, P, "parts", _MILP_ROWS=block, **stage)
    Y_ref = oracle(h, C, P, "rows", _ENUMERATE=0, _MILP_ROWS=block, _BRANCH_MAX=0)
    assert h.is_consistent(Y).all()
    gap = np.einsum("ij,ij->i", M, loss.phi(Y) - loss.phi(Y_ref))
    assert np.all(np.abs(gap) <= milp_tolerance(M))
    check_oracle(h, M, loss=loss, rtol=1e-12, atol=0.0,
                 oracle=lambda M: oracle(h, M[:, :d], M[:, d:], "parts", _MILP_ROWS=block,
                                         **stage))


def test_fractional_components_reach_the_milp(monkeypatch):
    # the MILP stage is exercised: on these DAGs some components have a fractional LP
    # optimum, go on to the MILP, and the answers still reach the brute-force minimum
    calls = []
    solve = _products_milp.highs

    def counting(problems, integer, presolve=True):
        calls.append((integer, sum(len(nodes) for _, _, _, nodes in problems)))
        return solve(problems, integer, presolve)

    monkeypatch.setattr(_products_milp, "highs", counting)
    monkeypatch.setattr(_products, "_ENUMERATE", 0)
    monkeypatch.setattr(_products, "_BRANCH_MAX", 0)
    rng = np.random.default_rng(7)
    for _ in range(10):
        h = random_hierarchy(rng, 12, tree=False)
        C, P = sign_mix(rng, 10, 12, 0.3), sign_mix(rng, 10, len(h.multi_parent), 0.3)
        check_oracle(h, np.hstack([C, P]), loss=HierarchicalLoss(h), rtol=1e-12, atol=0.0,
                     oracle=lambda M, h=h: h.argmin_products(M[:, :12], M[:, 12:]))
    assert any(not integer for integer, _ in calls)
    assert any(integer for integer, _ in calls)


def test_scale_parts_is_a_power_of_two_per_component():
    rng = np.random.default_rng(0)
    part = rng.integers(0, 5, size=40)
    cost = rng.normal(0, 1, size=40) * 10.0 ** rng.integers(-12, 13, size=40)
    cost[part == 4] = 0.0
    scaled = _products_milp.scale_parts(cost, part)
    for k in range(4):
        inside = part == k
        top = np.abs(scaled[inside]).max()
        assert 2.0**19 < top <= 2.0**20
        ratio = scaled[inside] / cost[inside]
        assert np.all(ratio == ratio[0]) and np.log2(ratio[0]) == np.round(np.log2(ratio[0]))
    assert np.all(scaled[part == 4] == 0.0)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_branch_and_bound_matches_brute_force(m, K, seed):
    # one part: the best closed label set by enumeration, against the compiled search
    _branch = pytest.importorskip("ecrm.spaces.hierarchy._branch")
    if not _branch.AVAILABLE:
        pytest.skip("numba (the 'fast' extra) is not installed")
    rng = np.random.default_rng(seed)
    bits = np.uint64(1) << np.arange(m, dtype=np.uint64)
    parent_mask = np.zeros(m, dtype=np.uint64)
    for j in range(1, m):
        for q in rng.choice(j, size=min(j, int(rng.integers(0, 3))), replace=False):
            parent_mask[j] |= bits[q]
    product_mask = np.array([np.bitwise_or.reduce(bits[rng.choice(m, size=min(m, 3),
                                                                   replace=False)])
                             for _ in range(K)], dtype=np.uint64)
    c, p = sign_mix(rng, 1, m, 0.5)[0], sign_mix(rng, 1, K, 0.5)[0]
    B = (np.arange(2**m)[:, None] >> np.arange(m)) & 1 == 1
    masks = B.astype(np.uint64) @ bits
    closed = np.all(~B | ((masks[:, None] & parent_mask) == parent_mask), axis=1)
    values = B @ c + ((masks[:, None] & product_mask) == product_mask) @ p
    best = values[closed].min()
    for budget in (10**7, 1, 5):  # a search stopped early says so; one that ends is exact
        mask, solved = _branch.search(c, parent_mask, product_mask, p, budget)
        found = (np.uint64(mask) & bits) != 0
        assert closed[int(found @ (2 ** np.arange(m)))] and (solved or budget < 10**7)
        value = found @ c + ((np.uint64(mask) & product_mask) == product_mask) @ p
        assert value <= best + 1e-12 * (np.abs(c).sum() + np.abs(p).sum()) or not solved


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12), st.integers(0, 8), st.sampled_from([0.05, 0.3, 0.5, 0.9]),
       st.integers(0, 2**32 - 1))
def test_cut_search_matches_brute_force(m, K, share, seed):
    # one part: the best closed label set by enumeration, against the search with closure
    # bounds (its parents and products' factors as lists of local indices)
    from ecrm.spaces.hierarchy import _branch, _cut_branch

    if not _branch.AVAILABLE:
        pytest.skip("numba (the 'fast' extra) is not installed")
    rng = np.random.default_rng(seed)
    parents = [rng.choice(j, size=min(j, int(rng.integers(0, 3))), replace=False)
               for j in range(m)]
    factors = [rng.choice(m, size=min(m, int(rng.integers(1, 4))), replace=False)
               for _ in range(K)]
    c, p = sign_mix(rng, 1, m, share)[0], sign_mix(rng, 1, K, share)[0]
    p[p == 0] = 1.0  # a live product has a nonzero cost
    B = (np.arange(2**m)[:, None] >> np.arange(m)) & 1 == 1
    closed = np.ones(len(B), dtype=bool)
    for j in range(m):
        closed &= ~B[:, j] | B[:, parents[j]].all(axis=1)
    on = np.column_stack([B[:, q].all(axis=1) for q in factors] or [np.zeros((len(B), 0))])
    values = B @ c + on @ p
    best = values[closed].min()
    ptr = np.cumsum([0] + [len(q) for q in parents])
    fptr = np.cumsum([0] + [len(q) for q in factors])
    idx = np.concatenate([np.zeros(0, dtype=np.int64)] + parents).astype(np.int64)
    fidx = np.concatenate([np.zeros(0, dtype=np.int64)] + factors).astype(np.int64)
    for budget in (10**7, 1, 3):  # a search stopped early says so; one that ends is exact
        y, solved, nodes = _cut_branch.search(c, ptr, idx, fptr, fidx, p, budget)
        row = int(y @ (2 ** np.arange(m)))
        assert closed[row] and (solved or budget < 10**7) and nodes <= max(budget, 1) + 1
        assert (values[row] <= best + 1e-12 * (np.abs(c).sum() + np.abs(p).sum())
                or not solved)


@pytest.mark.parametrize("n", [2, 9, 16], ids="n={}".format)
def test_cut_search_product_of_many_parents(n):
    # one product on n free labels (no cover), each worth -1, the product p = n - 0.5: the
    # best is all but one on (-(n - 1)), found through the linear bound (p on each label)
    from ecrm.spaces.hierarchy import _branch, _cut_branch

    if not _branch.AVAILABLE:
        pytest.skip("numba (the 'fast' extra) is not installed")
    none = np.zeros(0, dtype=np.int64)
    c, p = -np.ones(n), np.array([n - 0.5])
    y, solved, _ = _cut_branch.search(c, np.zeros(n + 1, dtype=np.int64), none,
                                      np.array([0, n]), np.arange(n), p, 10**6)
    assert solved and y.sum() == n - 1


def test_each_fractional_component_of_a_row_is_its_own_milp(monkeypatch):
    # two disjoint copies of a DAG whose row leaves a fractional LP, with the same costs: the
    # row has two fractional components, each goes to its own MILP (together, HiGHS would
    # branch on both at once), and the answer is the brute-force minimum of each copy
    calls = []
    solve = _products_milp.highs

    def counting(problems, integer, presolve=True):
        if integer:
            calls.append(len(problems))
        return solve(problems, integer, presolve)

    monkeypatch.setattr(_products_milp, "highs", counting)
    for name, value in {"_ENUMERATE": 0, "_BRANCH_MAX": 0, "_MILP_ROWS": 1}.items():
        monkeypatch.setattr(_products, name, value)
    rng = np.random.default_rng(7)
    for _ in range(200):  # a DAG and a row that reach the MILP
        half = random_hierarchy(rng, 12, tree=False)
        c, p = sign_mix(rng, 1, 12, 0.3), sign_mix(rng, 1, len(half.multi_parent), 0.3)
        half.argmin_products(c, p)
        if calls:
            break
    assert calls == [1]
    names = [f"{side}{label}" for side in "ab" for label in half.labels]
    h = Hierarchy([(f"{side}{half.labels[a]}", f"{side}{half.labels[b]}")
                   for side in "ab" for a, b in half.edges], labels=names)
    at = {label: j for j, label in enumerate(half.labels)}
    product = {j: k for k, j in enumerate(half.multi_parent)}
    C = np.array([[c[0, at[name[1:]]] for name in names]])
    P = np.array([[p[0, product[at[names[j][1:]]]] for j in h.multi_parent]])
    calls.clear()
    Y = h.argmin_products(C, P)
    assert calls == [1, 1]
    subsets = (np.arange(2**12)[:, None] >> np.arange(12) & 1).astype(float)
    closed = subsets[half.is_consistent(subsets)]
    best = (HierarchicalLoss(half).phi(closed) @ np.r_[c[0], p[0]]).min()
    value = HierarchicalLoss(h).phi(Y) @ np.r_[C[0], P[0]]
    assert h.is_consistent(Y).all()
    np.testing.assert_allclose(value, 2 * best, rtol=1e-12, atol=1e-12 * np.abs(C).sum())
