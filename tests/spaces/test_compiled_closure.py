"""The compiled DAG closure (numba) against the scipy reference path and brute force.

The compiled path (:mod:`ecrm.spaces.hierarchy._compiled`) replaces the reductions, the
contraction and the certified cut of :mod:`ecrm.spaces.hierarchy._closure` (all in one call
per block of rows); the scipy path is the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow
from test_hierarchy import brute_closure, check, random_costs, random_hierarchy

from ecrm.spaces.hierarchy import Hierarchy, _closure

pytest.importorskip("numba", reason="numba (the 'fast' extra) is not installed: the compiled "
                                    "closure is not built, the scipy path is tested elsewhere")
from ecrm.spaces.hierarchy import _compiled  # noqa: E402

# share of negative costs: mostly positive, mixed, mostly negative
SHARES = st.sampled_from([0.05, 0.3, 0.5, 0.9])


def sign_mix_costs(rng, n, d, share):
    """|N(0, 1)| rows, half-integer grid rows (ties, zeros) and rows of magnitudes
    1e-12..1e12, each entry negative with probability ``share``."""
    C = np.abs(rng.normal(0, 1, size=(n, d)))
    kind = rng.integers(0, 3, size=n)
    C[kind == 1] = rng.integers(0, 5, size=((kind == 1).sum(), d)) * 0.5
    C[kind == 2] *= 10.0 ** rng.integers(-12, 13, size=((kind == 2).sum(), d))
    return np.where(rng.random((n, d)) < share, -C, C)


def closure(h, C, engine, **constants):
    """``h.argmin(C, method="mincut")`` on the path ``engine`` with the constants of
    ``_closure`` given; its answer and the stats it left."""
    h._stats.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_closure, "_ENGINE", engine)
        for name, value in constants.items():
            mp.setattr(_closure, name, value)
        return h.argmin(C, method="mincut"), dict(h._stats)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.integers(5, 60), SHARES, st.sampled_from([0, 150]), st.integers(0, 2**32 - 1))
def test_compiled_matches_scipy(d, share, small, seed):
    # the same objective as the reference on every row, and a closed set, in blocks of rows
    # (every route: the small problem cut at once, the components cut one by one)
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    C = sign_mix_costs(rng, 30, d, share)
    Y, _ = closure(h, C, "numba", _SMALL_EXACT=small)
    Y_ref, _ = closure(h, C, "scipy", _SMALL_EXACT=small)
    assert h.is_consistent(Y).all()
    gap = np.abs(np.sum(C * Y, axis=1) - np.sum(C * Y_ref, axis=1))
    assert np.all(gap <= 1e-13 * np.abs(C).sum(axis=1))
    for i in range(0, len(C), 7):  # one row per call: the same
        np.testing.assert_array_equal(h.argmin(C[i : i + 1]), Y[i : i + 1])


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 50), SHARES, st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_one_call_closure_matches_scipy_with_bounds(d, share, n, seed):
    # the one-call kernel (closure_block) against the scipy path, with labels that must be on
    # and a set to stay inside (as the hierarchical loss asks), on blocks of any size and on
    # single rows: the same objective, closed, between the bounds
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    C = sign_mix_costs(rng, n, d, share)
    allowed = h.close((rng.random((n, d)) < 0.8).astype(float)).astype(bool)
    on = h.close((allowed & (rng.random((n, d)) < 0.2)).astype(float)).astype(bool)
    plan, edges = h._level_plan(), h.edges
    Y = _closure.closure_argmin(plan, edges, C, on=on, allowed=allowed)
    rows = [_closure.closure_argmin(plan, edges, C[i : i + 1], on=on[i : i + 1],
                                    allowed=allowed[i : i + 1]) for i in range(n)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_closure, "_ENGINE", "scipy")
        Y_ref = _closure.closure_argmin(plan, edges, C, on=on, allowed=allowed)
    scale = 1e-13 * np.abs(C).sum(axis=1)
    for got in (Y, np.vstack(rows)):
        assert h.is_consistent(got.astype(float)).all()
        assert np.all(got >= on) and np.all(got <= allowed)
        assert np.all(np.abs(np.sum(C * got, axis=1) - np.sum(C * Y_ref, axis=1)) <= scale)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.integers(2, 11), SHARES, st.integers(0, 2**32 - 1))
def test_compiled_matches_brute_force(d, share, seed):
    # every route of the compiled cut, and the exact fallback (a budget of 4 fails most
    # certificates), on tiny DAGs
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    C = np.vstack([sign_mix_costs(rng, 8, d, share), random_costs(rng, 4, d)])
    for constants in ({}, {"_SMALL_EXACT": 0}, {"_SMALL_EXACT": 0, "_Q_MIN": 4, "_Q_MAX": 4},
                      {"_Q_SMALL": 4}):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_closure, "_ENGINE", "numba")
            for name, value in constants.items():
                mp.setattr(_closure, name, value)
            check(h, C, "mincut")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), SHARES, st.integers(0, 2**32 - 1))
def test_compiled_reductions_match_scipy(d, share, seed):
    # the same forced and candidate labels (half-integer costs: every sum exact), with labels
    # that must be on and a set they must stay inside, as the hierarchical loss asks
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    G = np.ascontiguousarray(np.where(rng.random((12, d)) < share, -1, 1).T
                             * rng.integers(0, 5, size=(d, 12)) * 0.5)
    allowed = h.close((rng.random((12, d)) < 0.8).astype(float)).astype(bool)
    on = h.close((allowed & (rng.random((12, d)) < 0.2)).astype(float)).astype(bool)
    for kw in ({}, {"on": on, "allowed": allowed}):
        got = [_closure.reduce_closure(h._level_plan(), G, **kw)]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_closure, "_ENGINE", "scipy")
            got.append(_closure.reduce_closure(h._level_plan(), G, **kw))
        for fast, ref in zip(*got, strict=True):
            np.testing.assert_array_equal(fast, ref)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), SHARES, st.integers(0, 2**32 - 1))
def test_forcing_at_once_reaches_the_scipy_fixpoint(d, share, seed):
    # the one-call path forces each label as soon as it passes its test, until no pass finds
    # more: the same forced and candidate labels as the scipy passes run to the end
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    plan = h._level_plan()
    C = np.where(rng.random((12, d)) < share, -1, 1) * rng.integers(0, 5, size=(12, d)) * 0.5
    allowed = h.close((rng.random((12, d)) < 0.8).astype(float)).astype(bool)
    on = h.close((allowed & (rng.random((12, d)) < 0.2)).astype(float)).astype(bool)
    for bounds in ((np.zeros_like(on), np.ones_like(allowed)), (on, allowed)):
        fast = _compiled.reduce_closure(
            plan.anc.indptr, plan.anc.indices, plan.desc.indptr, plan.desc.indices,
            plan.par_ptr, plan.par_idx, plan.order, C, *bounds, d + 1, True)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_closure, "_ENGINE", "scipy")
            mp.setattr(_closure, "_FORCING_PASSES", d + 1)
            ref = _closure.reduce_closure(plan, np.ascontiguousarray(C.T), bounds[0],
                                          bounds[1])
        np.testing.assert_array_equal(fast[0], ref[0].T)
        np.testing.assert_array_equal(fast[1], ref[1].T)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), SHARES, st.integers(0, 2**32 - 1))
def test_compiled_contraction_keeps_an_optimum(d, share, seed):
    # the compiled moves leave groups whose optimum, expanded, is a closed optimum
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=bool(rng.integers(0, 4) == 0))
    child, parent = h.edges[:, 1], h.edges[:, 0]
    for c in sign_mix_costs(rng, 6, d, share):
        group, gc, a, b = _compiled.contract(c, child, parent)
        if h.is_tree:
            assert len(gc) == 0  # a forest is decided entirely
        arcs = set(zip(a.tolist(), b.tolist(), strict=True))
        assert len(arcs) == len(a) and all(x != y and 0 <= min(x, y) and max(x, y) < len(gc)
                                           for x, y in arcs)
        assert np.array_equal(np.unique(group[group >= 0]), np.arange(len(gc)))
        y = expand(group, _closure.min_closure_exact(gc, a, b))
        assert np.all(y[child] <= y[parent])
        assert c @ y <= brute_closure(c, child, parent) + 1e-13 * np.abs(c).sum()


def expand(group, on_groups):
    """The answer per node of a contracted problem's answer per group."""
    return np.where(group >= 0, on_groups[np.maximum(group, 0)] if len(on_groups) else False,
                    group == -1)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_max_flow_matches_scipy(n, seed):
    # value, capacities, conservation, and the source side of the minimal minimum cut
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 4 * n))
    tail, head = rng.integers(0, n, size=m), rng.integers(0, n, size=m)
    keep = tail != head
    tail, head = tail[keep], head[keep]
    cap = rng.integers(0, 50, size=len(tail)) * 10 ** rng.integers(0, 12, size=len(tail))
    flow, reach = _compiled.max_flow(n, 0, n - 1, tail, head, cap)
    assert np.all((flow >= 0) & (flow <= cap))
    net = np.bincount(tail, flow, minlength=n) - np.bincount(head, flow, minlength=n)
    assert np.all(net[1:-1] == 0)
    assert reach[0] and not reach[n - 1]
    assert np.all(flow[reach[tail] & ~reach[head]] == cap[reach[tail] & ~reach[head]])
    assert np.all(flow[~reach[tail] & reach[head]] == 0)  # a minimum cut
    small = cap < 2**20  # scipy's value (int32 capacities) on the smaller capacities
    G = csr_array((cap[small].astype(np.int32), (tail[small], head[small])), shape=(n, n))
    G.sum_duplicates()
    flow, _ = _compiled.max_flow(n, 0, n - 1, tail[small], head[small], cap[small])
    value = flow[tail[small] == 0].sum() - flow[head[small] == 0].sum()
    assert value == maximum_flow(G, 0, n - 1).flow_value


def test_large_block_matches_scipy():
    # a block of many rows on a DAG of a few hundred labels: long contractions (arc lists
    # spliced many times) and many components in one flow
    rng = np.random.default_rng(0)
    h = random_hierarchy(rng, 300, tree=False, max_parents=2)
    for share in (0.05, 0.3, 0.5, 0.9):
        C = sign_mix_costs(rng, 40, 300, share)
        Y, _ = closure(h, C, "numba")
        Y_ref, _ = closure(h, C, "scipy")
        assert h.is_consistent(Y).all()
        gap = np.abs(np.sum(C * Y, axis=1) - np.sum(C * Y_ref, axis=1))
        assert np.all(gap <= 1e-13 * np.abs(C).sum(axis=1))


def test_compiled_path_is_the_default():
    # with numba installed, "auto" must not fall back to scipy silently
    assert _closure._ENGINE == "auto" and _closure._kernels() is _compiled


def test_without_numba_the_scipy_path_runs(monkeypatch):
    # numba is optional: without it "auto" falls back to scipy, "numba" says what is missing
    h = Hierarchy([("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")], labels="abcd")
    C = np.array([[1.0, 1.0, -1.5, -1.5], [1.0, 2.0, -1.5, 0.2]])
    monkeypatch.setattr(_closure, "_import_compiled", lambda: None)
    np.testing.assert_array_equal(h.argmin(C), [[1, 1, 1, 1], [0, 0, 0, 0]])
    monkeypatch.setattr(_closure, "_ENGINE", "numba")
    with pytest.raises(ImportError, match="numba"):
        h.argmin(C)


def test_compiled_certificate_on_near_ties():
    # the small route cuts at 2^52: a tie 2e-14 wide is certified there, and one finer than
    # the budget is re-solved exactly
    h = Hierarchy([("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")], labels="abcd")
    C = np.array([[1.0, 1.0, -1.0 - 1e-14, -1.0 - 1e-14]])
    Y, stats = closure(h, C, "numba")
    np.testing.assert_array_equal(Y, [[1, 1, 1, 1]])
    assert stats == {"small": 1}
    Y, stats = closure(h, np.array([[1.0, 1.0, -1.0 - 2**-52, -1.0]]), "numba")
    np.testing.assert_array_equal(Y, [[1, 1, 1, 1]])
    assert stats == {"small": 1, "exact": 1}
