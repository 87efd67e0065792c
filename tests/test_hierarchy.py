"""Tests for ecrm.spaces.hierarchy.Hierarchy: construction, consistency and exact oracles."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ecrm.spaces.hierarchy import Hierarchy

# --------------------------------------------------------------------------- brute force


def brute_force(h: Hierarchy, C, P=None):
    """Minimum objective per row over all consistent labelings (enumeration, d <= ~12).

    ``P`` (n, len(multi_parent)) adds ``sum_k P_k * prod_{q in parents(multi_parent[k])} y_q``.
    """
    d = h.n_labels
    Y = np.array(list(itertools.product([0.0, 1.0], repeat=d)))
    E = h.edges
    ok = np.all(Y[:, E[:, 1]] <= Y[:, E[:, 0]], axis=1) if len(E) else np.ones(len(Y), bool)
    Y = Y[ok]
    obj = np.asarray(C, float) @ Y.T
    if P is not None and len(h.multi_parent):
        prods = np.stack([Y[:, h.parents[m]].prod(axis=1) for m in h.multi_parent], axis=1)
        obj = obj + np.asarray(P, float) @ prods.T
    return obj.min(axis=1)


def objective(C, Y, h=None, P=None):
    val = np.sum(np.asarray(C) * Y, axis=1)
    if P is not None and len(h.multi_parent):
        prods = np.stack([Y[:, h.parents[m]].prod(axis=1) for m in h.multi_parent], axis=1)
        val = val + np.sum(P * prods, axis=1)
    return val


def consistent(h, Y):
    E = h.edges
    return bool(np.all(Y[:, E[:, 1]] <= Y[:, E[:, 0]])) and set(np.unique(Y)) <= {0.0, 1.0}


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
    """Signed costs with exact zeros and ties (a half-integer grid) plus continuous rows."""
    C = rng.integers(-4, 5, size=(n, d)) * 0.5
    cont = rng.random(n) < 0.4
    C[cont] = rng.normal(0.3, 1.0, size=(cont.sum(), d))
    C[cont] *= rng.random((cont.sum(), d)) > 0.15  # some exact zeros
    return C


def check_methods(h, C, methods):
    best = brute_force(h, C)
    scale = 1.0 + np.abs(C).sum(axis=1)
    for method in methods:
        Y = h.argmin(C, method=method)
        assert Y.shape == C.shape and Y.dtype == float
        assert consistent(h, Y), method
        # mincut: documented bound |K| * h / 2 <= d * sum|c| / 2^31; others exact
        np.testing.assert_allclose(
            objective(C, Y), best, rtol=0, atol=1e-8 * scale.max(), err_msg=method
        )


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
    ],
)
def test_validation_errors(edges, kw, match):
    with pytest.raises(ValueError, match=match):
        Hierarchy(edges, **kw)


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


@st.composite
def instances(draw, tree):
    d = draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    return random_hierarchy(rng, d, tree=tree), random_costs(rng, 8, d)


@settings(max_examples=300, deadline=None)
@given(instances(tree=True))
def test_oracles_match_brute_force_on_forests(inst):
    h, C = inst
    assert h.is_tree
    check_methods(h, C, ["dp", "mincut", "auto", "lp"])


@settings(max_examples=300, deadline=None)
@given(instances(tree=False))
def test_oracles_match_brute_force_on_dags(inst):
    h, C = inst
    methods = ["mincut", "auto", "lp"] + (["dp"] if h.is_tree else [])
    check_methods(h, C, methods)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(0, 2**32 - 1))
def test_argmin_products_match_brute_force(d, seed):
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, d, tree=False)
    C = random_costs(rng, 4, d)
    P = rng.integers(-4, 5, size=(4, len(h.multi_parent))) * 0.5
    Y = h.argmin_products(C, P)
    assert consistent(h, Y)
    np.testing.assert_allclose(objective(C, Y, h, P), brute_force(h, C, P), atol=1e-9)


def test_argmin_products_shapes():
    h = Hierarchy(EDGES)
    with pytest.raises(ValueError, match=r"P must have shape \(1, 1\)"):
        h.argmin_products(np.zeros((1, 6)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="NaN"):
        h.argmin_products(np.zeros((1, 6)), [[np.nan]])
    # a negative product term switches on both parents of d without d itself
    Y = h.argmin_products([[0.5, 0.5, 0.5, 1.0, 1, 1]], [[-2.0]])
    np.testing.assert_array_equal(Y, [[1, 1, 1, 0, 0, 0]])
    t = Hierarchy([("a", "b")])
    np.testing.assert_array_equal(t.argmin_products([[-1.0, -1.0]], np.zeros((1, 0))), [[1, 1]])


def test_large_tree_dp_equals_mincut_flow():
    rng = np.random.default_rng(0)
    d, n = 2000, 50
    edges = [(f"n{rng.integers(0, j)}", f"n{j}") for j in range(1, d)]
    tree = Hierarchy(edges)
    # two new parents 'x', 'y' (cost 0) of the root make it multi-parent, so every row
    # with a negative cost goes through the min-cut (max-flow) code path
    dag = Hierarchy([*edges, ("x", "n0"), ("y", "n0")], labels=[*tree.labels, "x", "y"])
    assert tree.is_tree and not dag.is_tree
    C = rng.normal(0.3, 1.0, size=(n, d))
    Yt = tree.argmin(C, method="dp")
    Yd = dag.argmin(np.hstack([C, np.zeros((n, 2))]), method="mincut")
    assert tree.is_consistent(Yt).all() and dag.is_consistent(Yd).all()
    bound = d * np.abs(C).sum(axis=1) / 2**30
    np.testing.assert_allclose(objective(C, Yd[:, :d]), objective(C, Yt), rtol=0, atol=bound.max())
    np.testing.assert_array_equal(tree.argmin(C, method="mincut"), Yt)  # tree: DP shortcut


def test_large_dag_mincut_equals_lp():
    rng = np.random.default_rng(1)
    h = random_hierarchy(rng, 300, tree=False)
    assert len(h.multi_parent) > 50
    C = rng.normal(0.3, 1.0, size=(10, 300))
    C[:, rng.random(300) < 0.2] -= 1.0
    Ym = h.argmin(C, method="mincut")
    Yl = h.argmin(C, method="lp")
    assert h.is_consistent(Ym).all() and h.is_consistent(Yl).all()
    bound = 300 * np.abs(C).sum(axis=1) / 2**30
    np.testing.assert_allclose(objective(C, Ym), objective(C, Yl), rtol=0, atol=bound.max() + 1e-7)
    assert (Ym.sum(axis=1) > 0).all()


def test_docstring_examples():
    import doctest

    import ecrm.spaces.hierarchy as mod

    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 3 and result.failed == 0


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
