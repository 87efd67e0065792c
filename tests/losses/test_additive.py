"""User-defined additive losses: automatic linear form, verified by enumeration.

Their oracle (the output space's) is checked against brute force in tests/spaces/test_oracles.py.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from _shapes import TREE6 as TREE
from ecrm.losses.additive import AdditiveLoss
from ecrm.losses.multilabel import HammingLoss, HierarchicalLoss
from ecrm.losses.ranking import FootruleLoss
from ecrm.spaces.base import MultilabelSpace
from ecrm.spaces.permutations import PermutationSpace
from ecrm.testing import check_linear_form
from ecrm.weights.kernel.estimator import ECRM


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.data())
def test_random_per_coordinate_tables(d, data):
    # l_j(b, y') = T[j, b, y'_j] + U[j, b] * sum(y'): an arbitrary additive loss
    T = data.draw(arrays(float, (d, 2, 2), elements=st.floats(0, 5)))
    U = data.draw(arrays(float, (d, 2), elements=st.floats(0, 1)))

    def terms(Y, R):
        j = np.arange(Y.shape[1])[None, :]
        Yi, Ri = Y.astype(int), R.astype(int)
        return T[j, Yi, Ri] + U[j, Yi] * R.sum(axis=1, keepdims=True)

    loss = AdditiveLoss(terms, n_outputs=d)
    space = MultilabelSpace(d)
    check_linear_form(loss, space)
    # the same loss from a list of per-coordinate callables
    per = [lambda b, R, j=j: T[j, b.astype(int), R[:, j].astype(int)]
           + U[j, b.astype(int)] * R.sum(axis=1) for j in range(d)]
    Y = space.enumerate()
    np.testing.assert_allclose(AdditiveLoss(per, n_outputs=d)(Y, Y[::-1]), loss(Y, Y[::-1]))


def test_from_callable_recovers_known_losses():
    space = MultilabelSpace(4)
    hamming = AdditiveLoss.from_callable(HammingLoss(), n_outputs=4)
    check_linear_form(hamming, space)
    Y = space.enumerate()
    np.testing.assert_allclose(hamming.psi(Y), HammingLoss().psi(Y))
    np.testing.assert_allclose(hamming.const(Y), HammingLoss().const(Y))
    # the footrule, read off on unit vectors of {0,1}^(d*d), is linear on permutations
    def triple_sum(Yp, R):
        d = 3
        k = np.arange(d)
        D = np.abs(k[:, None] - k[None, :])
        return np.einsum("kl,njl,njk->n", D, R.reshape(-1, d, d), Yp.reshape(-1, d, d))

    foot = AdditiveLoss.from_callable(triple_sum, n_outputs=9)
    check_linear_form(foot, PermutationSpace(3))
    P = PermutationSpace(3).enumerate()
    np.testing.assert_allclose(foot(P, P[::-1]), FootruleLoss()(P, P[::-1]))


def test_hierarchical_loss_as_additive_on_consistent_label_sets():
    # On a tree the hierarchical loss is additive on consistent label sets (Prop. 3.2)
    ref = HierarchicalLoss(TREE)
    loss = AdditiveLoss(lambda Y, R: np.column_stack(
        [Y[:, j] * ref.psi(R)[:, j] for j in range(TREE.n_labels)])
        + ref.const(R)[:, None] / TREE.n_labels, n_outputs=TREE.n_labels)
    check_linear_form(loss, TREE)
    Y = TREE.enumerate()
    np.testing.assert_allclose(loss(Y, Y[::-1]), ref(Y, Y[::-1]), atol=1e-12)


def test_a_non_additive_loss_is_caught_by_enumeration():
    # exact-match (0-1) loss over {0,1}^3 is not additive over coordinates
    loss = AdditiveLoss.from_callable(lambda Y, R: np.any(Y != R, axis=1).astype(float),
                                      n_outputs=3)
    with pytest.raises(AssertionError, match="linear form"):
        check_linear_form(loss, MultilabelSpace(3))


def test_ecrm_with_an_additive_loss_on_a_hierarchy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    Y = TREE.close((X @ rng.normal(size=(2, 6)) > 0).astype(float))
    w = np.array([1.0, 2.0, 2.0, 3.0, 1.0, 2.0])
    loss = AdditiveLoss(lambda Yp, R: w * (Yp != R), n_outputs=6, name="weighted hamming")
    est = ECRM(loss, TREE, gamma=0.5, alpha=1e-2).fit(X, Y)
    allY = TREE.enumerate()
    Xt = rng.normal(size=(5, 2))
    pred = est.predict(Xt)
    risks = np.array([est.conditional_risk(Xt, np.repeat(y[None], 5, 0)) for y in allY])
    np.testing.assert_allclose(est.conditional_risk(Xt, pred), risks.min(axis=0), atol=1e-9)


def test_bad_terms():
    with pytest.raises(ValueError, match="sequence of 3 callables"):
        AdditiveLoss([lambda b, R: b], n_outputs=3)
    with pytest.raises(ValueError, match="n_outputs must be an integer >= 1; got 0"):
        AdditiveLoss(lambda Y, R: Y, n_outputs=0)
    with pytest.raises(ValueError, match="n_outputs must be an integer"):
        AdditiveLoss.from_callable(HammingLoss(), n_outputs=2.5)
    with pytest.raises(ValueError, match="width 2 but the output space"):
        AdditiveLoss(lambda Y, R: Y, n_outputs=2).check_space(MultilabelSpace(3))
    AdditiveLoss(lambda Y, R: Y, n_outputs=3).check_space(MultilabelSpace(3))
    with pytest.raises(ValueError, match=r"must return shape \(1, 2\)"):
        AdditiveLoss(lambda Y, R: Y[:, :1], n_outputs=2)([[1, 0]], [[0, 0]])
    with pytest.raises(ValueError, match="only 0 and 1"):
        AdditiveLoss(lambda Y, R: Y, n_outputs=2)([[0.5, 0]], [[0, 0]])
