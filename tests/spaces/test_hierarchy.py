"""Tests for ecrm.spaces.hierarchy.Hierarchy: construction, consistency and exact oracles."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.spaces import MultilabelSpace
from ecrm.spaces.hierarchy import Hierarchy, _closure, _products
from ecrm.testing import check_oracle

# --------------------------------------------------------------------------- generators


def random_hierarchy(rng, d, *, tree, max_parents=3):
    """Random forest/DAG on nodes 'n0'..; parents among earlier nodes; shuffled columns."""
    edges = []
    for j in range(1, d):
        if tree:
            p = rng.integers(-1, j)
            if p >= 0:
                edges.append((f"n{p}", f"n{j}"))
        else:
            k = rng.integers(0, min(j, max_parents) + 1)
            for p in rng.choice(j, size=k, replace=False):
                edges.append((f"n{p}", f"n{j}"))
    labels = [f"n{j}" for j in rng.permutation(d)]
    return Hierarchy(edges, labels=labels)


def random_costs(rng, n, d):
    """Signed costs: a half-integer grid (ties, zeros), near-ties, and magnitudes 1e-12..1e12.

    One row in four has entries of very different magnitudes; one in four is a grid row
    with tiny perturbations (near-ties); the others are a grid or N(0.3, 1) times 10^k.
    """
    C = rng.integers(-4, 5, size=(n, d)) * 0.5
    kind = rng.integers(0, 4, size=n)
    C[kind == 1] += rng.normal(0, 1e-9, size=((kind == 1).sum(), d))
    mixed = kind == 2
    C[mixed] = rng.normal(0, 1, size=(mixed.sum(), d)) * 10.0 ** rng.integers(
        -12, 13, size=(mixed.sum(), d))
    scaled = kind == 3
    C[scaled] = rng.normal(0.3, 1.0, size=(scaled.sum(), d)) * 10.0 ** rng.integers(
        -12, 13, size=(scaled.sum(), 1))
    return C


def objective(C, Y):
    return np.einsum("ij,ij->i", np.asarray(C, dtype=float), Y)


def check(h, C, method, **kw):
    """The shared brute-force check, tolerance at the round-off of the objective."""
    return check_oracle(h, C, oracle=lambda C: h.argmin(C, method=method),
                        rtol=kw.get("rtol", 1e-13), atol=0.0)


# --------------------------------------------------------------------------- construction

EDGES = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("e", "f")]


def structure(h):
    return (h.labels, h.edges.tolist(), [p.tolist() for p in h.parents], h.depth.tolist())


def test_constructor_variants_agree():
    ref = Hierarchy(EDGES)
    assert ref.labels == ("a", "b", "c", "d", "e", "f")
    parent_map = {"b": "a", "c": ["a"], "d": ["b", "c"], "f": "e"}
    by_map = Hierarchy({"a": None, **parent_map, "e": []})
    g = nx.DiGraph()
    g.add_edges_from(EDGES)
    variants = [
        by_map,
        Hierarchy.from_parents({"a": None, **parent_map, "e": []}),
        Hierarchy(g),
        Hierarchy.from_networkx(g),
        Hierarchy(
            [("root", "a"), *EDGES[:4], ("root", "e"), ("e", "f"), ("root", "d")], root="root"
        ),
        Hierarchy(iter(EDGES)),
    ]
    for h in variants:
        assert structure(h) == structure(ref)
        assert h.is_tree == ref.is_tree is False
    assert ref.multi_parent.tolist() == [3]
    assert ref.top_level.tolist() == [0, 4]
    assert ref.depth.tolist() == [0, 1, 1, 2, 0, 1]
    assert ref.children[0].tolist() == [1, 2]
    assert dict(ref.index) == {v: j for j, v in enumerate(ref.labels)}
    assert ref.n_labels == ref.n_outputs == 6
    assert "n_labels=6" in repr(ref) and "DAG" in repr(ref)


def test_labels_order_and_extra_label():
    h = Hierarchy(EDGES, labels=["f", "d", "c", "b", "a", "e", "x"])
    assert h.labels == ("f", "d", "c", "b", "a", "e", "x")
    assert h.n_labels == 7
    assert sorted(h.top_level.tolist()) == [4, 5, 6]
    assert sorted(h.parents[1].tolist()) == [2, 3]
    # topological order: parents before children
    pos = np.empty(7, int)
    pos[h.order] = np.arange(7)
    assert all(pos[p] < pos[c] for p, c in h.edges)
    # networkx isolated nodes are top-level labels
    g = nx.DiGraph()
    g.add_edges_from(EDGES)
    g.add_node("x")
    assert Hierarchy(g).labels[-1] == "x"


def test_root_with_other_parents_only_loses_root_edge():
    h = Hierarchy([("r", "a"), ("r", "b"), ("a", "b")], root="r")
    assert h.labels == ("a", "b")
    assert h.edges.tolist() == [[0, 1]]
    assert h.is_tree


def test_tree_attributes_and_read_only():
    h = Hierarchy([("a", "b"), ("a", "c"), ("c", "d")])
    assert h.is_tree and h.multi_parent.size == 0
    with pytest.raises(AttributeError):
        h.labels = ("z",)
    with pytest.raises(ValueError):
        h.edges[0, 0] = 3
    with pytest.raises(TypeError):
        h.index["z"] = 9
    A = h.ancestors_matrix()
    assert sp.issparse(A) and A.dtype == bool and A.shape == (4, 4)
    assert A.toarray().astype(int).tolist() == [
        [1, 0, 0, 0],
        [1, 1, 0, 0],
        [1, 0, 1, 0],
        [1, 0, 1, 1],
    ]
    assert h.ancestors_matrix() is A  # cached


@pytest.mark.parametrize(
    "edges, kw, match",
    [
        ([("a", "a")], {}, "self-loop on node 'a'"),
        ([("a", "b"), ("a", "b")], {}, r"duplicate edge \('a', 'b'\)"),
        ({"b": ["a", "a"]}, {}, r"duplicate edge \('a', 'b'\)"),
        ([("a", "b"), ("b", "c"), ("c", "a")], {}, "cycle: a -> b -> c -> a"),
        ([("x", "a"), ("a", "b"), ("b", "a")], {}, "cycle: a -> b -> a"),
        ([("a", "b"), ("c", "d")], {"labels": ["a", "b"]}, "nodes not in labels: 'c', 'd'"),
        ([("a", "b")], {"labels": ["a", "b", "a"]}, "duplicate labels: 'a'"),
        ([], {}, "empty hierarchy"),
        ({}, {}, "empty hierarchy"),
        ([("r", "a"), ("a", "r")], {"root": "r"}, "edge into the root 'r' from 'a'"),
        ([("r", "a")], {"root": "r", "labels": ["r", "a"]}, "root 'r' must not appear in labels"),
        ([("a", "b", "c")], {}, "each edge must be a"),
        ([(1, "a"), (True, "b")], {}, "labels 1 and True are equal in Python"),
        ([(0, 1)], {"labels": [0.0, 1.0]}, "labels 0.0 and 0 are equal in Python"),
    ],
    ids=["self-loop", "duplicate-edge", "duplicate-parent", "cycle-of-three", "cycle-of-two",
         "nodes-not-in-labels", "duplicate-labels", "no-edges", "empty-mapping",
         "edge-into-the-root", "root-in-labels", "edge-of-three", "labels-1-and-True",
         "labels-0.0-and-0"],
)
def test_validation_errors(edges, kw, match):
    with pytest.raises(ValueError, match=match):
        Hierarchy(edges, **kw)


def test_numpy_and_python_integers_name_the_same_label():
    h = Hierarchy(np.array([[0, 1], [0, 2]]), labels=range(3))
    assert h.labels == (0, 1, 2) and len(h.edges) == 2


def test_type_errors():
    with pytest.raises(TypeError, match="string"):
        Hierarchy("ab")
    with pytest.raises(TypeError, match="DiGraph"):
        Hierarchy(nx.Graph([("a", "b")]))
    with pytest.raises(TypeError, match="mapping"):
        Hierarchy.from_parents([("a", "b")])
    with pytest.raises(TypeError, match="DiGraph"):
        Hierarchy.from_networkx([("a", "b")])


# --------------------------------------------------------------------------- consistency


def test_close_is_consistent_validate():
    h = Hierarchy(EDGES)  # a b c d e f ; d has parents b and c
    Y = np.array([[0, 0, 0, 1, 0, 0], [1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0]])
    Y0 = Y.copy()
    closed = h.close(Y)
    assert closed.dtype == float
    np.testing.assert_array_equal(
        closed, [[1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(Y, Y0)
    np.testing.assert_array_equal(h.is_consistent(Y), [False, True, False, True])
    assert h.is_consistent(closed).all()
    np.testing.assert_array_equal(Y, Y0)
    # sparse input
    Ys = sp.csr_matrix(Y)
    np.testing.assert_array_equal(h.close(Ys), closed)
    np.testing.assert_array_equal(h.is_consistent(sp.csr_array(Y)), [False, True, False, True])
    np.testing.assert_array_equal(Ys.toarray(), Y0)
    # validate
    out = h.validate(closed)
    assert out is not closed and out.dtype == float
    np.testing.assert_array_equal(out, closed)
    with pytest.raises(
        ValueError, match=r"row 0, label 'd' is on but its parent 'b' is off.*close\(Y\)"
    ):
        h.validate(Y)
    with pytest.raises(ValueError, match=r"row 1, label 'f' is on but its parent 'e' is off"):
        h.validate(Y[1:])
    with pytest.raises(ValueError, match="shape"):
        h.validate(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="only 0 and 1"):
        h.validate(np.full((1, 6), 0.5))
    with pytest.raises(ValueError, match="only 0 and 1"):
        h.close(sp.csr_array(np.full((1, 6), 2.0)))
    np.testing.assert_array_equal(h.close([0, 0, 0, 1, 0, 0]), closed[:1])


# --------------------------------------------------------------------------- oracles


def test_argmin_small_examples_and_errors():
    h = Hierarchy(EDGES)
    C = np.array([[1.0, 1.0, 1.0, -4.0, 0.1, 0.0], [1.0, 1.0, 1.0, -2.9, -1.0, 2.0]])
    C0 = C.copy()
    for method in ["mincut", "lp", "auto"]:
        np.testing.assert_array_equal(
            h.argmin(C, method=method), [[1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 0]]
        )
    np.testing.assert_array_equal(C, C0)
    with pytest.raises(ValueError, match="'dp' needs a tree"):
        h.argmin(C, method="dp")
    with pytest.raises(ValueError, match="unknown method 'foo'; valid methods are 'auto', 'dp'"):
        h.argmin(C, method="foo")
    with pytest.raises(ValueError, match="shape"):
        h.argmin(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="NaN"):
        h.argmin(np.full((1, 6), np.nan))
    assert h.argmin(np.zeros((0, 6))).shape == (0, 6)
    t = Hierarchy([("a", "b")])
    np.testing.assert_array_equal(t.argmin([2.0, -3.0], method="dp"), [[1.0, 1.0]])
    np.testing.assert_array_equal(t.argmin([[-1.0, 3.0]], method="dp"), [[1.0, 0.0]])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10), st.booleans(), st.integers(0, 2**32 - 1))
def test_mincut_exact_on_mixed_magnitudes_and_near_ties(d, tree, seed):
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=tree)
    check(h, random_costs(rng, 12, d), "mincut")


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 10), st.integers(0, 2**32 - 1))
def test_exact_fallback_matches_brute_force(d, seed):
    # a tiny integer budget: most rounded cuts fail their certificate and are re-solved exactly
    # (every contracted problem goes to the certified cut, none straight to the exact flow)
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    C = random_costs(rng, 12, d)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_closure, "_Q_MIN", 4)
        mp.setattr(_closure, "_Q_MAX", 4)
        mp.setattr(_closure, "_SMALL_EXACT", 0)
        check(h, C, "mincut")


def test_certificate_fails_only_on_near_ties():
    # two parents of two children: nothing to force, switch off or contract, so the cut
    # decides (with the exact flow for small problems switched off)
    h = Hierarchy([("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")], labels="abcd")
    C = np.array([[1.0, 1.0, -1.0 - 4e-5, -1.0 - 4e-5], [1.0, 1.0, -1.0 - 1e-14, -1.0 - 1e-14]])
    h._stats.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_closure, "_SMALL_EXACT", 0)
        np.testing.assert_array_equal(h.argmin(C[:1]), [[1, 1, 1, 1]])
        assert h._stats == {"components": 1, "exact": 0}
        np.testing.assert_array_equal(h.argmin(C[1:]), [[1, 1, 1, 1]])  # margin 2e-14: exact
        assert h._stats == {"components": 2, "exact": 1}
    h._stats.clear()
    np.testing.assert_array_equal(h.argmin(C), [[1, 1, 1, 1]] * 2)  # small: exact at once
    assert h._stats == {"small": 1}


@pytest.mark.slow
def test_lp_is_scale_invariant():
    # regression: HiGHS on unscaled costs of order 1e-12 was wrong on most rows, and a single
    # label of cost -1e-9 gave the empty set
    rng = np.random.default_rng(0)
    h = Hierarchy(EDGES)
    C = rng.normal(0, 1, size=(60, 6))
    Y = check(h, C, "lp", rtol=1e-9)
    for s in (1e-12, 1e-6, 1e6, 1e12):
        np.testing.assert_array_equal(h.argmin(s * C, method="lp"), Y)
    single = Hierarchy([], labels=["z"])
    np.testing.assert_array_equal(single.argmin([[-1e-9]], method="lp"), [[1.0]])
    np.testing.assert_array_equal(single.argmin([[0.0]], method="lp"), [[0.0]])


def test_diamond_beside_large_unrelated_costs():
    # regression: one rounding scale per row lost the diamond's 1e-3 margin next to +-1e6
    h = Hierarchy([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("p", "q")])
    C = np.array([[1.0, -0.2, -0.2, -0.601, 1e6, -(1e6 - 1)]])
    np.testing.assert_array_equal(h.argmin(C), [[1, 1, 1, 1, 0, 0]])
    # (the LP is exact only to HiGHS's tolerance, 1e-7 of the largest cost: not here)


@pytest.mark.slow
def test_many_diamonds_with_small_margins():
    # regression: 50,000 independent diamonds, each worth -4e-5, came back empty
    k = 50_000
    edges = [(f"{v}{i}", f"{w}{i}") for i in range(k)
             for v, w in (("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"))]
    h = Hierarchy(edges)
    C = np.tile([1.0, -0.2, -0.2, -0.6 - 4e-5], k)[None, :]
    Y = h.argmin(C)
    assert Y.sum() == 4 * k
    np.testing.assert_allclose(objective(C, Y), [-2.0], rtol=0, atol=1e-6)  # sums of 2e5 terms


def test_blocks_bound_memory_and_give_the_same_answers(monkeypatch):
    # regression: memory grew with negatives x ancestors for the whole batch at once
    import tracemalloc

    rng = np.random.default_rng(3)
    h = random_hierarchy(rng, 200, tree=False)
    C = rng.normal(0, 1, size=(400, 200))
    P = rng.normal(0, 1, size=(10, len(h.multi_parent)))
    Y, Y_products = h.argmin(C), h.argmin_products(C[:10], P)
    monkeypatch.setattr(Hierarchy, "_BLOCK_ENTRIES", 20 * (200 + len(h.edges)))  # 20 rows
    tracemalloc.start()
    Y_blocks = h.argmin(C)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_array_equal(Y_blocks, Y)
    np.testing.assert_array_equal(h.argmin_products(C[:10], P), Y_products)
    assert peak < 2 * Y.nbytes + 2**22  # the answer (float) and its bool copy, plus a little


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(0, 2**32 - 1))
def test_argmin_products_match_brute_force(d, seed):
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    loss = HierarchicalLoss(h)
    C = np.hstack([random_costs(rng, 6, d),
                   rng.integers(-4, 5, size=(6, len(h.multi_parent))) * 0.5])
    check_oracle(h, C, loss=loss, rtol=1e-12, atol=0.0)
    check_oracle(h, C, loss=loss, oracle=lambda C: h.argmin_products(C[:, :d], C[:, d:]),
                 rtol=1e-12, atol=0.0)


def test_argmin_products_shapes():
    h = Hierarchy(EDGES)
    with pytest.raises(ValueError, match=r"P must have shape \(1, 1\)"):
        h.argmin_products(np.zeros((1, 6)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="NaN"):
        h.argmin_products(np.zeros((1, 6)), [[np.nan]])
    # a negative product term switches on both parents of d without d itself
    Y = h.argmin_products([[0.5, 0.5, 0.5, 1.0, 1, 1]], [[-2.0]])
    np.testing.assert_array_equal(Y, [[1, 1, 1, 0, 0, 0]])
    for s in (1e-12, 1e12):  # scale-invariant
        np.testing.assert_array_equal(h.argmin_products(s * np.array([[0.5, 0.5, 0.5, 1.0, 1, 1]]),
                                                        [[-2.0 * s]]), Y)
    t = Hierarchy([("a", "b")])
    np.testing.assert_array_equal(t.argmin_products([[-1.0, -1.0]], np.zeros((1, 0))), [[1, 1]])


def test_hierarchical_loss_needs_its_own_hierarchy():
    # regression: a loss on another hierarchy gave a matmul error, or nothing
    h = Hierarchy(EDGES)
    loss = HierarchicalLoss(h)
    loss.check_space(Hierarchy(list(reversed(EDGES)), labels=h.labels))  # equal: accepted
    other = Hierarchy([("a", "b"), ("a", "c"), ("b", "d"), ("a", "d"), ("e", "f")])
    assert other.n_labels == h.n_labels and other != h
    for space in (other, MultilabelSpace(6), Hierarchy(EDGES, labels=list("fedcba"))):
        with pytest.raises(ValueError, match="HierarchicalLoss was built on"):
            loss.check_space(space)
        with pytest.raises(ValueError, match="HierarchicalLoss was built on"):
            loss.argmin(np.zeros((1, 7)), space)
    with pytest.raises(ValueError, match=r"C must have shape \(n, 7\)"):
        loss.argmin(np.zeros((1, 6)), h)
    HammingLoss().check_space(other)


def test_equality_and_hash():
    a, b = Hierarchy(EDGES), Hierarchy({"b": "a", "c": "a", "d": ["c", "b"], "f": "e"})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != Hierarchy(EDGES[:4] + [("a", "f")], labels=a.labels)
    assert a != Hierarchy(EDGES, labels=[*a.labels, "x"])
    assert (a == "abc") is False


def test_docstring_examples():
    import doctest

    import ecrm.spaces.hierarchy._labelsets as labelsets
    import ecrm.spaces.hierarchy._space as space

    for mod, examples in ((space, 3), (labelsets, 2)):
        result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.attempted >= examples and result.failed == 0


def test_dp_empty_batch_and_validate_sparse():
    t = Hierarchy({"b": "a", "c": "a"})
    assert t.argmin(np.zeros((0, 3)), method="dp").shape == (0, 3)
    np.testing.assert_array_equal(t.validate(sp.csr_array([[1, 0, 1]])), [[1, 0, 1]])


def test_cap_by_parents_is_monotone_and_minimal():
    h = Hierarchy([("a", "c"), ("b", "c"), ("c", "d"), ("a", "e")])
    rng = np.random.default_rng(0)
    S = rng.random((50, h.n_labels))
    S0 = S.copy()
    C = h.cap_by_parents(S)
    np.testing.assert_array_equal(S, S0)
    for p, c in h.edges:
        assert np.all(C[:, c] <= C[:, p])
    # Nothing is lowered more than needed: the cap is the minimum over ancestors-or-self.
    A = h.ancestors_matrix().toarray()
    expected = np.array([[S[k, A[j]].min() for j in range(h.n_labels)] for k in range(50)])
    np.testing.assert_allclose(C, expected)
    for t in (0.2, 0.5, 0.8):
        assert h.is_consistent(C > t).all()


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(2, 9), st.integers(1, 6))
def test_cap_by_parents_equals_the_minimum_over_ancestors_on_random_dags(data, d, n):
    # any DAG: edges only from a lower to a higher node number; several parents allowed
    pairs = [(i, j) for j in range(d) for i in range(j)]
    chosen = data.draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=3 * d,
                                unique=True))
    h = Hierarchy(chosen, labels=range(d))
    S = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 0.3, 0.7]),
                                    min_size=n * d, max_size=n * d))).reshape(n, d)
    S0 = S.copy()
    A = h.ancestors_matrix().toarray()
    expected = np.array([[S[k, A[j]].min() for j in range(d)] for k in range(n)])
    C = h.cap_by_parents(S)
    np.testing.assert_array_equal(C, expected)
    np.testing.assert_array_equal(S, S0)  # the input is not modified
    np.testing.assert_array_equal(h.cap_by_parents(S[0]), expected[:1])


# ------------------------------------------------- reductions of the DAG oracles


def signed_costs(rng, n, d):
    """Random signs at a random share of negatives (0-100%): half-integer grid rows (ties,
    zeros), |N(0, 1)| rows and rows of magnitudes 1e-12..1e12."""
    share = rng.random((n, 1))
    sign = np.where(rng.random((n, d)) < share, -1.0, 1.0)
    C = rng.integers(0, 5, size=(n, d)) * 0.5
    kind = rng.integers(0, 3, size=n)
    C[kind == 1] = np.abs(rng.normal(0, 1, size=((kind == 1).sum(), d)))
    mixed = kind == 2
    C[mixed] = np.abs(rng.normal(0, 1, size=(mixed.sum(), d))) * 10.0 ** rng.integers(
        -12, 13, size=(mixed.sum(), d))
    return sign * C


def best_inside(values, Y, low, high):
    """Minimum of ``values`` over the rows of ``Y`` with ``low <= y <= high``."""
    inside = np.all(Y >= low, axis=1) & np.all(Y <= high, axis=1)
    return values[inside].min(initial=np.inf)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 11), st.integers(0, 2**32 - 1))
def test_closure_reductions_keep_an_optimum(d, seed):
    # forcing and switching off must leave an optimum between forced and forced | cand
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=bool(rng.integers(0, 4) == 0))
    Y = h.enumerate()
    C = signed_costs(rng, 8, d)
    forced, cand = _closure.reduce_closure(h._level_plan(), np.ascontiguousarray(C.T))
    assert h.is_consistent(forced.T.astype(float)).all()
    values = C @ Y.T  # (rows, outputs)
    for i in range(len(C)):
        slack = 1e-13 * np.abs(C[i]).sum()
        best = best_inside(values[i], Y, forced[:, i], forced[:, i] | cand[:, i])
        assert best <= values[i].min() + slack
    check(h, C, "mincut")


def brute_closure(c, child, parent):
    """Minimum of ``c @ y`` over 0/1 vectors with ``y[child] <= y[parent]`` (enumerated)."""
    Y = np.array(np.meshgrid(*[[0, 1]] * len(c), indexing="ij")).reshape(len(c), -1).T
    Y = Y[np.all(Y[:, child] <= Y[:, parent], axis=1)]
    return (Y @ c).min()


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.integers(1, 11), st.integers(0, 2**32 - 1), st.sampled_from([0, 400]))
def test_contraction_keeps_an_optimum(d, seed, sequential):
    # the degree-one contractions (vectorised rounds, then one move at a time) must leave a
    # problem whose every optimum, expanded, is a closed optimum of the original
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=bool(rng.integers(0, 4) == 0))
    child, parent = h.edges[:, 1], h.edges[:, 0]
    for c in signed_costs(rng, 6, d):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_closure, "_SEQUENTIAL", sequential)
            group, gc, a, b = _closure.contract(c, child, parent)
        assert len(gc) == 0 or group.max() == len(gc) - 1
        assert np.all((a >= 0) & (a < len(gc)) & (b >= 0) & (b < len(gc)) & (a != b))
        if len(gc):  # the groups' optimum (by the exact flow), expanded
            Yg = _closure.min_closure_exact(gc, a, b)
            y = np.where(group >= 0, Yg[np.maximum(group, 0)], group == -1)
        else:
            y = group == -1
        assert np.all(y[child] <= y[parent])
        slack = 1e-13 * np.abs(c).sum()
        assert c @ y <= brute_closure(c, child, parent) + slack
        if h.is_tree:
            assert len(gc) == 0  # a forest is decided entirely


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**32 - 1))
def test_mincut_paths_match_brute_force(d, seed):
    # every path of the closure: vectorised contraction rounds, the certified cut (no exact
    # flow for small problems) and the exact flow, on mixed signs and ties
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    C = signed_costs(rng, 10, d)
    for sequential, small in ((0, 0), (0, 150), (400, 0)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_closure, "_SEQUENTIAL", sequential)
            mp.setattr(_closure, "_SMALL_EXACT", small)
            check(h, C, "mincut")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 10), st.integers(0, 2**32 - 1))
def test_sandwich_keeps_an_optimum(d, seed):
    # the upper and lower closures of the hierarchical-loss oracle must leave an optimum
    # between them, and solve the rows where no positive product is left undecided
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    K = len(h.multi_parent)
    if K == 0:
        return
    loss = HierarchicalLoss(h)
    Y = h.enumerate()
    C, P = signed_costs(rng, 8, d), signed_costs(rng, 8, K)
    on, allowed, live, undecided = _products.sandwich(h, C, P)
    assert h.is_consistent(on[:, :d].astype(float)).all()
    assert h.is_consistent(allowed[:, :d].astype(float)).all()
    assert np.all(on <= allowed) and not np.any(undecided & ~live)
    values = np.hstack([C, P]) @ loss.phi(Y).T
    for i in range(len(C)):
        slack = 1e-13 * (np.abs(C[i]).sum() + np.abs(P[i]).sum())
        assert best_inside(values[i], Y, on[i, :d], allowed[i, :d]) <= values[i].min() + slack
        if not undecided[i].any():
            mine = np.hstack([C[i], P[i]]) @ loss.phi(allowed[i : i + 1, :d].astype(float))[0]
            assert mine <= values[i].min() + slack
    limit = _products._ENUMERATE
    try:  # the parts left solved by enumeration (small) and by the MILP (large)
        for _products._ENUMERATE in (limit, 0):
            check_oracle(h, np.hstack([C, P]), loss=loss, rtol=1e-12, atol=0.0,
                         oracle=lambda M: h.argmin_products(M[:, :d], M[:, d:]))
    finally:
        _products._ENUMERATE = limit
    M = np.hstack([C, P])
    for s in (1e-12, 1e12):  # optimal at every scale (ties may be broken either way)
        Y_s = h.argmin_products(s * C, s * P)
        gap = np.einsum("ij,ij->i", M, loss.phi(Y_s)) - (M @ loss.phi(Y).T).min(axis=1)
        assert np.all(gap <= 1e-12 * np.abs(M).sum(axis=1))
