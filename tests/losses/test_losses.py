"""Every loss's linear form against its definition; the hierarchical weights."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecrm import Hierarchy
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.testing import check_linear_form

TREE = Hierarchy([("a", "a1"), ("a", "a2"), ("a1", "a11"), ("b", "b1"), ("a1", "a12"),
                  ("a1", "a13")])
DAG = Hierarchy([("a", "c"), ("b", "c"), ("a", "d"), ("c", "e"), ("d", "e"), ("b", "f"),
                 ("e", "g")])


@st.composite
def hierarchies(draw, max_nodes=8):
    n = draw(st.integers(1, max_nodes))
    dag = draw(st.booleans())
    edges, labels = [], list(range(n))
    for j in range(1, n):
        k = draw(st.integers(0, min(j, 3 if dag else 1)))
        parents = draw(st.lists(st.integers(0, j - 1), min_size=k, max_size=k, unique=True))
        edges += [(p, j) for p in parents]
    return Hierarchy(edges, labels=labels)


def test_hamming_definition_and_linear_form():
    rng = np.random.default_rng(0)
    Y, Yr = rng.integers(0, 2, (6, 5)), rng.integers(0, 2, (7, 5))
    np.testing.assert_array_equal(HammingLoss()(Y[:1], Yr[:1]), [np.sum(Y[0] != Yr[0])])
    check_linear_form(HammingLoss(), Y, Yr)


def test_sibling_weights_on_a_tree():
    c = dict(zip(TREE.labels, HierarchicalLoss(TREE).weights, strict=True))
    assert c["a"] == c["b"] == 0.5
    assert c["a1"] == c["a2"] == 0.25 and c["b1"] == 0.5
    assert c["a11"] == c["a12"] == c["a13"] == pytest.approx(0.25 / 3)


def test_dag_weight_is_the_mean_of_parent_shares():
    c = dict(zip(DAG.labels, HierarchicalLoss(DAG).weights, strict=True))
    # a, b top-level: 1/2 each; a has children c, d; b has c, f.
    assert c["c"] == pytest.approx(np.mean([0.5 / 2, 0.5 / 2]))
    assert c["e"] == pytest.approx(np.mean([c["c"] / 1, c["d"] / 1]))


def test_hierarchical_loss_definition_by_hand():
    loss = HierarchicalLoss(TREE)
    idx = TREE.index
    y_true = np.zeros(TREE.n_labels)
    y_true[[idx["a"], idx["a1"], idx["a11"]]] = 1
    y_pred = np.zeros(TREE.n_labels)
    y_pred[[idx["a"], idx["a2"]]] = 1
    # a1 wrong under a right parent (0.25); a2 wrong (0.25); a11 wrong but its parent is wrong.
    assert loss(y_pred, y_true)[0] == pytest.approx(0.5)
    assert loss(np.zeros_like(y_true), y_true)[0] == pytest.approx(0.5)  # only 'a' counts


@pytest.mark.parametrize("h", [TREE, DAG], ids=["tree", "dag"])
def test_hierarchical_linear_form_on_all_consistent_pairs(h):
    Y = h.enumerate()
    check_linear_form(HierarchicalLoss(h), Y, Y)


@settings(max_examples=150, deadline=None)
@given(hierarchies())
def test_linear_forms_on_random_hierarchies(h):
    Y = h.enumerate()
    check_linear_form(HierarchicalLoss(h), Y, Y)
    check_linear_form(HammingLoss(), Y, Y)


def test_check_linear_form_catches_a_wrong_form():
    class Wrong(HammingLoss):
        def const(self, Y_ref):
            return super().const(Y_ref) + 1e-3

    with pytest.raises(AssertionError, match="linear form"):
        check_linear_form(Wrong(), np.eye(3), np.eye(3))


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="same shape"):
        HammingLoss()(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="only 0 and 1"):
        HierarchicalLoss(TREE)(np.full((1, TREE.n_labels), 0.5), np.zeros((1, TREE.n_labels)))
