"""The nested check of :func:`ecrm.weights._stack_choice.choose_stack` judged against a
reference: the two-member mixtures between given pairs of members.

A fallback is exactly the mixture :func:`ecrm.weights.mixture.choose_mixture` chooses on the
same outputs; the stack is kept only when its nested gain over the reference exceeds its
standard error; without a reference the choice is the one against the members alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _ids import readable
from _shapes import TREE5 as TREE
from ecrm.losses import HammingLoss
from ecrm.weights._stack_choice import choose_stack
from ecrm.weights.mixture import choose_mixture

LOSS = HammingLoss()


def _members(seed, n, J, informative=()):
    """Honest costs of ``J`` members of ``n`` points: each the true costs plus noise of its
    own scale (members in ``informative`` nearly noiseless), and the points' outputs."""
    rng = np.random.default_rng(seed)
    Y = TREE.close(rng.normal(size=(n, TREE.n_outputs)) > 0.3).astype(float)
    truth = LOSS.psi(Y)
    scales = rng.uniform(0.5, 3.0, J)
    scales[list(informative)] = 0.05
    noise = rng.normal(size=(J, n, truth.shape[1])) * scales[:, None, None]
    return truth[None] + noise, Y


def _mixture(outputs, Y, i, j, k):
    """``choose_mixture``'s choice on the line from member ``j`` (share 0) to ``i``, as weights."""
    n = Y.shape[0]
    choice = choose_mixture((np.arange(n), outputs[i]), outputs[j], Y, k + 1, loss=LOSS,
                            output_space=TREE)
    weights = np.zeros(outputs.shape[0])
    weights[j] += 1.0 - choice.mixture
    weights[i] += choice.mixture
    return weights, float(np.max(choice.scores))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), J=st.integers(2, 5), k=st.sampled_from([2, 4, 10]),
       data=st.data())
def test_a_fallback_is_exactly_the_best_reference_mixture(seed, J, k, data):
    i = data.draw(st.integers(0, J - 1))
    j = data.draw(st.integers(0, J - 1).filter(lambda m: m != i))
    outputs, Y = _members(seed, 40, J)
    choice = choose_stack(outputs, Y, loss=LOSS, output_space=TREE, resolution=k,
                          reference_pairs=[(i, j)], random_state=seed)
    nested = choice.nested
    assert choice.stack_used == (nested["gain"] > nested["std_error"])
    best = int(np.argmax(choice.scores))
    assert choice.scores[best] >= max(_mixture(outputs, Y, i, j, k)[1], *choice.scores[:J])
    if choice.stack_used:
        np.testing.assert_array_equal(choice.weights, choice.grid[best])
    else:
        weights, score = _mixture(outputs, Y, i, j, k)
        np.testing.assert_array_equal(choice.weights, weights)
        assert choice.best_score == score


@pytest.mark.parametrize("seed", range(4), ids="seed={}".format)
def test_two_members_with_their_line_as_reference_fall_back_to_the_mixture(seed):
    # The line is the whole lattice: the stack's candidates are the reference's.
    outputs, Y = _members(seed, 60, 2)
    choice = choose_stack(outputs, Y, loss=LOSS, output_space=TREE, resolution=10,
                          reference_pairs=[(0, 1)], random_state=seed)
    assert not choice.stack_used
    assert choice.nested["gain"] <= choice.nested["std_error"]
    weights, score = _mixture(outputs, Y, 0, 1, 10)
    np.testing.assert_array_equal(choice.weights, weights)
    assert choice.best_score == score


@pytest.mark.parametrize("seed", range(4), ids="seed={}".format)
def test_a_member_off_the_reference_line_that_wins_keeps_the_stack(seed):
    # Members 0 and 1 are noise, member 2 nearly the truth: the stack beats the 0-1 line by
    # far more than its error.
    outputs, Y = _members(seed, 80, 3, informative=[2])
    choice = choose_stack(outputs, Y, loss=LOSS, output_space=TREE, resolution=10,
                          reference_pairs=[(0, 1)], random_state=seed)
    nested = choice.nested
    assert nested["gain"] > nested["std_error"] > 0
    assert choice.stack_used
    np.testing.assert_array_equal(choice.weights, choice.grid[np.argmax(choice.scores)])
    assert choice.weights[2] > 0.5


def test_the_reference_candidates_are_searched_beyond_three_members():
    # Greedy selection over five members: the reference's mixtures are candidates too, so the
    # stack's choice is at least as good as any of them.
    outputs, Y = _members(7, 60, 5)
    choice = choose_stack(outputs, Y, loss=LOSS, output_space=TREE, resolution=10,
                          reference_pairs=[(3, 4), (0, 4)], random_state=0)
    ref = choice.grid[-22:]
    np.testing.assert_allclose(ref[:11, 3], np.arange(11) / 10)
    np.testing.assert_allclose(ref[11:, 0], np.arange(11) / 10)
    lines = max(_mixture(outputs, Y, 3, 4, 10)[1], _mixture(outputs, Y, 0, 4, 10)[1])
    assert np.max(choice.scores) >= lines
    np.testing.assert_allclose(np.max(choice.scores[-22:]), lines, rtol=0, atol=0)


@pytest.mark.parametrize("seed", range(3), ids="seed={}".format)
def test_without_a_reference_the_members_alone_are_the_reference(seed):
    outputs, Y = _members(seed, 50, 3)
    kw = {"loss": LOSS, "output_space": TREE, "resolution": 4}
    plain = choose_stack(outputs, Y, random_state=seed, **kw)
    vertices = choose_stack(outputs, Y, random_state=seed,
                            reference_pairs=[(0, 0), (1, 1), (2, 2)], **kw)
    searched = len(plain.scores)  # the reference's 3 x 5 points come after the search
    assert len(vertices.scores) == searched + 15
    np.testing.assert_array_equal(vertices.scores[:searched], plain.scores)
    np.testing.assert_array_equal(vertices.grid[:searched], plain.grid)
    assert plain.nested == vertices.nested
    assert plain.stack_used == vertices.stack_used
    np.testing.assert_array_equal(plain.weights, vertices.weights)


@pytest.mark.parametrize("pairs", [[], [(0, 3)], [(0,)], [(0, 1.5)], "ab"], ids=readable)
def test_a_bad_reference_is_refused_naming_it(pairs):
    outputs, Y = _members(0, 10, 3)
    with pytest.raises(ValueError, match="reference_pairs"):
        choose_stack(outputs, Y, loss=LOSS, output_space=TREE, reference_pairs=pairs)


# -- StackedRiskECRM(reference="kernel-forest") ------------------------------------------------
def _fitted(**kw):
    from ecrm import ECRMCV, ForestECRMCV, StackedRiskECRM

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    Y = TREE.close(X @ rng.normal(size=(3, TREE.n_outputs)) > 0.3)
    members = [ECRMCV(LOSS, TREE, alphas=[1e-2, 0.1, 1.0]),
               ForestECRMCV(LOSS, TREE, n_estimators=15),
               ECRMCV(LOSS, TREE, alphas=[1e-2, 0.1], kernel="linear")]
    kw = {"members": members, "resolution": 4, "random_state": 0, **kw}
    return StackedRiskECRM(LOSS, TREE, **kw).fit(X, Y), X


@pytest.fixture(scope="module")
def kernel_forest():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # grid edges of the tiny grids
        return _fitted(reference="kernel-forest")


def test_the_estimators_reference_is_each_kernel_member_with_each_forest_member(kernel_forest):
    model, _ = kernel_forest
    grid = np.array(model.cv_results_["weights"])
    scores = np.array(model.cv_results_["score"])
    a = np.arange(5) / 4
    ref = np.concatenate([np.column_stack([a, 1 - a, 0 * a]), np.column_stack([0 * a, 1 - a, a])])
    np.testing.assert_array_equal(grid[-10:], ref)
    nested = model.nested_results_
    assert model.stack_used_ == (nested["gain"] > nested["std_error"])
    chosen = np.argmax(scores) if model.stack_used_ else len(grid) - 10 + np.argmax(scores[-10:])
    np.testing.assert_array_equal(model.weights_, grid[chosen])
    assert model.best_score_ == scores[chosen]


def test_a_kernel_forest_stack_file_round_trips_and_an_older_one_loads(kernel_forest, tmp_path):
    from _model_file_edits import _tampered
    from ecrm import load, save
    from ecrm.model_files.io import ModelFileError

    model, X = kernel_forest
    save(model, tmp_path / "s.ecrm")
    loaded = load(tmp_path / "s.ecrm")
    # the same model; its arrays come back in another layout, so BLAS may round differently
    np.testing.assert_allclose(loaded.predict_costs(X), model.predict_costs(X), rtol=1e-12,
                               atol=1e-12)
    assert loaded.reference == "kernel-forest" and loaded.stack_used_ == model.stack_used_

    def members_reference(meta, arrays):  # the candidates are not those of "members"
        meta["params"]["reference"] = "members"
    with pytest.raises(ModelFileError, match="candidates of the search"):
        load(_tampered(tmp_path / "s.ecrm", tmp_path / "bad.ecrm", members_reference))

    plain, _ = _fitted()
    save(plain, tmp_path / "p.ecrm")

    def older(meta, arrays):  # written before the parameter existed
        del meta["params"]["reference"]
    loaded = load(_tampered(tmp_path / "p.ecrm", tmp_path / "old.ecrm", older))
    assert loaded.reference == "members"
    np.testing.assert_array_equal(loaded.predict(X), plain.predict(X))


def test_a_kernel_forest_reference_without_a_forest_is_refused_naming_it():
    from ecrm import ECRMCV, StackedRiskECRM

    members = [ECRMCV(LOSS, TREE, alphas=[0.1]), ECRMCV(LOSS, TREE, alphas=[1.0])]
    model = StackedRiskECRM(LOSS, TREE, members=members, reference="kernel-forest")
    with pytest.raises(ValueError, match="kernel-forest.*forest member"):
        model.fit(np.zeros((4, 3)), np.ones((4, TREE.n_outputs)))


@pytest.mark.parametrize(("J", "pairs"), [(2, [(0, 1)]), (3, [(0, 2), (1, 2)]), (5, [(3, 4)])],
                         ids=["J=2-pair-0,1", "J=3-pairs-0,2-and-1,2", "J=5-pair-3,4"])
def test_each_distinct_candidate_is_judged_once(monkeypatch, J, pairs):
    # The lattice holds the reference's mixtures, the greedy search its vertices: a candidate
    # whose combined costs were judged before is not judged again, and every score is the
    # one judging it alone gives (the lattice's combined by weights, the lines' as
    # choose_mixture mixes them).
    import ecrm.weights._stack_choice as stack_choice
    from ecrm.weights.mixture import honest_criterion

    outputs, Y = _members(J, 40, J)
    judged = []

    def counted(costs, *args, **kwargs):
        judged.append(costs)
        return honest_criterion(costs, *args, **kwargs)

    monkeypatch.setattr(stack_choice, "honest_criterion", counted)
    choice = choose_stack(outputs, Y, loss=LOSS, output_space=TREE, resolution=10,
                          nested=False, reference_pairs=pairs)
    assert all(not np.array_equal(a, b) for n, a in enumerate(judged) for b in judged[:n])
    lines = [(i, j, t / 10) for i, j in pairs for t in range(11)]
    # every candidate once: the lattice's and the lines', or greedy's vertices, its trials
    # of steps 2 to 10 and the lines'
    assert len(judged) < (len(choice.scores) if J <= 3 else J + 9 * J + len(lines))
    searched = len(choice.scores) - len(lines)
    expected = [honest_criterion(np.tensordot(beta, outputs, axes=1), Y, loss=LOSS,
                                 output_space=TREE)[0] for beta in choice.grid[:searched]]
    expected += [honest_criterion(a * outputs[i] + (1 - a) * outputs[j], Y, loss=LOSS,
                                  output_space=TREE)[0] for i, j, a in lines]
    np.testing.assert_array_equal(choice.scores, expected)
