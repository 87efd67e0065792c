"""The structured SVM: its dual against a generic QP, loss-augmented inference against brute
force on every space, the duality gap, scikit-learn conventions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from _ids import named
from _shapes import TREE5 as TREE
from ecrm import CandidateSpace, Hierarchy, MultilabelSpace, PermutationSpace, StructuredSVM
from ecrm.estimators.ssvm import loss_augmented_argmax
from ecrm.losses import FootruleLoss, HammingLoss, HierarchicalLoss, KendallLoss, ZeroOneLoss

DAG = Hierarchy([("a", "x"), ("b", "x"), ("a", "a1"), ("x", "y")])
CLASSES = CandidateSpace.from_classes(range(4))
PERM = PermutationSpace(3)

CASES = {"hamming-multilabel": (HammingLoss(), MultilabelSpace(3)),
         "hierarchical-tree": (HierarchicalLoss(TREE), TREE),
         "hierarchical-dag": (HierarchicalLoss(DAG), DAG),
         "zero-one-classes": (ZeroOneLoss(CLASSES), CLASSES),
         "footrule-permutations": (FootruleLoss(), PERM),
         "kendall-permutations": (KendallLoss(), PERM)}


def _sample(space, rng, n):
    outputs = space.enumerate()
    return outputs[rng.integers(0, len(outputs), n)]


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_loss_augmented_inference_is_the_brute_force_maximum(case, seed):
    loss, space = CASES[case]
    rng = np.random.default_rng(seed)
    Y_ref = _sample(space, rng, 4)
    F = rng.normal(size=(4, loss.phi(Y_ref).shape[1])) * 10.0 ** rng.uniform(-3, 3)
    got = loss_augmented_argmax(loss, space, F, loss.psi(Y_ref))
    outputs = space.enumerate()
    for i in range(4):
        # the loss by its definition (not its linear form) plus the model's score
        values = loss(outputs, np.repeat(Y_ref[i:i + 1], len(outputs), 0)) \
            + loss.phi(outputs) @ F[i]
        mine = loss(got[i:i + 1], Y_ref[i:i + 1])[0] + loss.phi(got[i:i + 1])[0] @ F[i]
        np.testing.assert_allclose(mine, values.max(), rtol=1e-9,
                                   atol=1e-9 * (1 + np.abs(F[i]).sum()))


def _dual_qp(loss, space, K, Y, C):
    """The SSVM dual over every output of a small space by a generic solver (SLSQP), in the
    lambda form (lam = 1/(C n)):  max_a  sum_iy a_iy D_i(y)/n - lam/2 ||w(a)||^2  with
    w(a) = sum_iy a_iy psi_i(y) / (lam n) and each a_i in the simplex.

    Returns the dual value of the solver's point and the primal value of its w, by brute
    force over the outputs: the optimum lies between the two whatever the solver's status."""
    n = len(Y)
    outputs = space.enumerate()
    q = len(outputs)
    lam = 1.0 / (C * n)
    E, Eall = loss.phi(Y), loss.phi(outputs)
    D = np.array([loss(outputs, np.repeat(Y[i:i + 1], q, 0)) for i in range(n)])  # (n, q)
    diff = (E[:, None, :] - Eall[None, :, :]).reshape(n * q, -1)  # psi_i(y) directions
    Q = np.repeat(np.repeat(K, q, 0), q, 1) * (diff @ diff.T) / (lam * n) ** 2
    b = D.ravel() / n

    def neg(a):
        return 0.5 * lam * a @ Q @ a - b @ a, lam * Q @ a - b

    a0 = np.full(n * q, 1.0 / q)
    cons = [{"type": "eq", "fun": lambda a, i=i: a[i * q:(i + 1) * q].sum() - 1.0,
             "jac": lambda a, i=i: np.eye(n * q)[i * q:(i + 1) * q].sum(0)} for i in range(n)]
    a = minimize(neg, a0, jac=True, method="SLSQP", bounds=[(0, 1)] * (n * q),
                 constraints=cons, options={"ftol": 1e-13, "maxiter": 1000}).x
    a = np.clip(a, 0, None).reshape(n, q)
    a /= a.sum(axis=1, keepdims=True)  # exactly feasible
    dual = -neg(a.ravel())[0]
    B = np.einsum("iy,iye->ie", a, diff.reshape(n, q, -1)) / (lam * n)
    F = K @ B
    hinge = (D - (F[:, None, :] * (E[:, None, :] - Eall[None, :, :])).sum(-1)).max(axis=1)
    primal = 0.5 * lam * float(np.einsum("ij,ij->", B, F)) + hinge.sum() / n
    return dual, primal, lam


@pytest.mark.slow
@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize("case", ["hamming-multilabel", "hierarchical-tree",
                                  "hierarchical-dag", "kendall-permutations"])
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.sampled_from([0.1, 1.0, 10.0]),
       gap_every=st.sampled_from([1, 3]))
def test_dual_matches_a_generic_qp_to_the_reported_gap(case, cached, seed, C, gap_every):
    loss, space = CASES[case]
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(5, 2))
    Y = _sample(space, rng, 5)
    K = rbf_kernel(X, gamma=0.7) + 1.0  # the intercept adds 1 to the kernel
    low, high, lam = _dual_qp(loss, space, K, Y, C)  # the optimum is in [low, high]
    scale = C * len(Y)  # the estimator reports C n times the lambda form
    low, high = scale * low, scale * high
    assert high - low <= 1e-4 * abs(high)  # the generic solver converged (certified)
    svm = StructuredSVM(loss, space, gamma=0.7, C=C, tol=1e-4, max_iter=1000,
                        cached_oracle=cached, gap_every=gap_every, random_state=seed).fit(X, Y)
    rounding = 1e-12 * abs(high)
    assert svm.dual_objective_ <= high + rounding  # a feasible dual point
    assert svm.primal_objective_ >= low - rounding  # weak duality
    # the reported gap bounds the primal suboptimality
    assert svm.primal_objective_ - high <= svm.duality_gap_ + rounding
    assert abs(svm.primal_objective_ - low) <= svm.duality_gap_ + (high - low) + rounding
    assert svm.duality_gap_ <= 1e-4 * abs(svm.primal_objective_)  # converged to tol
    # the primal objective the estimator reports is the definition's, by brute force
    F = K @ svm.dual_coef_
    outputs = space.enumerate()
    hinge = [max(loss(o[None], Y[i:i + 1])[0] + loss.phi(o[None])[0] @ F[i]
                 - loss.phi(Y[i:i + 1])[0] @ F[i] for o in outputs) for i in range(len(Y))]
    norm2 = float(np.einsum("ij,ij->", svm.dual_coef_, F))
    np.testing.assert_allclose(svm.primal_objective_, 0.5 * norm2 / (lam * scale) ** 2 * scale
                               * lam + C * float(np.sum(hinge)), rtol=1e-9)


def _counting_oracle(monkeypatch):
    """Count the rows the exact oracle is called on (loss-augmented inference)."""
    import ecrm.estimators.ssvm

    rows, exact = [0], ecrm.estimators.ssvm.loss_augmented_argmax

    def counted(loss, space, F, Psi):
        rows[0] += len(F)
        return exact(loss, space, F, Psi)

    monkeypatch.setattr(ecrm.estimators.ssvm, "loss_augmented_argmax", counted)
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("case", ["hierarchical-dag", "kendall-permutations"])
def test_cached_oracle_reaches_the_same_optimum_with_fewer_calls(case, monkeypatch):
    loss, space = CASES[case]
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    Y = space.enumerate()[np.argmax(X @ rng.normal(size=(3, len(space.enumerate())))
                                    + rng.gumbel(size=(120, len(space.enumerate()))), axis=1)]
    rows = _counting_oracle(monkeypatch)
    fits = {}
    for cached in (False, True):
        rows[0] = 0
        fits[cached] = StructuredSVM(loss, space, gamma=0.5, C=1.0, tol=1e-3, max_iter=200,
                                     cached_oracle=cached, random_state=0).fit(X, Y)
        fits[cached].rows = rows[0]
    plain, cached = fits[False], fits[True]
    for svm in (plain, cached):
        assert svm.duality_gap_ <= 1e-3 * svm.primal_objective_  # both converged
    # each fit's dual is a lower bound on the other's primal (weak duality), so the two
    # primal objectives agree to the larger reported gap
    rounding = 1e-12 * plain.primal_objective_
    assert cached.dual_objective_ <= plain.primal_objective_ + rounding
    assert plain.dual_objective_ <= cached.primal_objective_ + rounding
    assert abs(cached.primal_objective_ - plain.primal_objective_) <= \
        max(plain.duality_gap_, cached.duality_gap_) + rounding
    assert cached.rows < 0.5 * plain.rows  # the cache saves most oracle calls


def test_gap_every_computes_the_gap_on_its_passes_and_the_last(monkeypatch):
    X, Y = _tree_data(40)
    rows = _counting_oracle(monkeypatch)
    svm = StructuredSVM(HammingLoss(), TREE, gamma=0.5, tol=0.0, max_iter=7, gap_every=3,
                        random_state=0).fit(X, Y)
    assert svm.n_iter_ == 7 and len(svm.gap_history_) == 3  # after passes 3, 6 and 7
    assert rows[0] >= 3 * len(X)
    assert svm.duality_gap_ == pytest.approx(svm.gap_history_[-1])
    assert svm.duality_gap_ == pytest.approx(svm.primal_objective_ - svm.dual_objective_)


def _tree_data(m=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    return X, TREE.close(X @ rng.normal(size=(3, 5)) + 0.3 * rng.normal(size=(m, 5)) > 0.2)


@pytest.mark.slow
def test_gap_decreases_on_average_and_warm_start_continues():
    X, Y = _tree_data()
    svm = StructuredSVM(HierarchicalLoss(TREE), TREE, gamma=0.5, C=1.0, tol=0.0, max_iter=30,
                        random_state=0).fit(X, Y)
    gaps = svm.gap_history_
    assert np.all(gaps >= -1e-9 * svm.primal_objective_)
    half = len(gaps) // 2
    assert gaps[half:].mean() < 0.5 * gaps[:half].mean() and gaps[-1] < 0.05 * gaps[0]
    # 10 passes, then 20 more from there: the same dual objective as 30 from the start
    warm = StructuredSVM(HierarchicalLoss(TREE), TREE, gamma=0.5, C=1.0, tol=0.0, max_iter=10,
                         random_state=0, warm_start=True).fit(X, Y)
    first = warm.dual_objective_
    warm.set_params(max_iter=20).fit(X, Y)
    assert warm.dual_objective_ >= first - 1e-12 * abs(first)
    assert svm.primal_objective_ - warm.dual_objective_ <= max(svm.duality_gap_,
                                                               warm.duality_gap_) * 1.01 + 1e-9


def test_stopping_at_max_iter_above_the_target_gap_warns():
    from sklearn.exceptions import ConvergenceWarning

    X, Y = _tree_data(40)
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=1 passes with a duality "
                      r"gap of .*, above its target 1e-09"):
        svm = StructuredSVM(HammingLoss(), TREE, gamma=0.5, tol=1e-9, max_iter=1,
                            random_state=0).fit(X, Y)
    assert svm.duality_gap_ > 1e-9 * svm.primal_objective_


def test_an_empty_support_is_refused_at_fit_and_sets_nothing():
    # an extreme C: every step is lost to rounding, no block leaves its own output
    h = Hierarchy([("a", "a1"), ("a", "a2")])
    X = np.array([[0.0], [0.1], [1.0], [1.1]])
    Y = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]])
    svm = StructuredSVM(HammingLoss(), h, C=1e300, max_iter=2, random_state=0)
    with pytest.raises(ValueError, match=r"C=1e\+300 ended with an empty support.*choose a C"):
        svm.fit(X, Y)
    assert not hasattr(svm, "dual_coef_") and not hasattr(svm, "support_")


@pytest.mark.slow
def test_learns_the_tree_better_than_the_empty_prediction():
    X, Y = _tree_data(200)
    Xt, Yt = _tree_data(200, seed=1)
    loss = HierarchicalLoss(TREE)
    svm = StructuredSVM(loss, TREE, gamma=0.5, C=1.0, random_state=0).fit(X, Y)
    assert -svm.score(Xt, Yt) < 0.85 * loss(np.zeros_like(Yt), Yt).mean()  # noisy labels
    # the support vectors alone give the same scores as the whole dual
    full = (rbf_kernel(Xt, X, gamma=0.5) + 1.0) @ svm.dual_coef_
    np.testing.assert_allclose(svm.decision_function(Xt), full, atol=1e-10 * np.abs(full).max())


def test_precomputed_kernel_gives_the_same_model():
    X, Y = _tree_data(60)
    Xt = _tree_data(20, seed=2)[0]
    named = StructuredSVM(HammingLoss(), TREE, gamma=0.5, random_state=0).fit(X, Y)
    pre = StructuredSVM(HammingLoss(), TREE, kernel="precomputed", random_state=0).fit(
        rbf_kernel(X, gamma=0.5), Y)
    np.testing.assert_allclose(pre.dual_coef_, named.dual_coef_, atol=1e-10)
    np.testing.assert_array_equal(pre.predict(rbf_kernel(Xt, X, gamma=0.5)), named.predict(Xt))


@pytest.mark.parametrize("params, match", named([({"C": 0}, "C must"), ({"tol": -1}, "tol must"),
                                                 ({"max_iter": 0}, "max_iter must"),
                                                 ({"gap_every": 0}, "gap_every must"),
                                                 ({"cached_oracle": "yes"}, "cached_oracle"),
                                                 ({"gamma": -0.5}, "gamma")]))
def test_bad_parameters_are_refused_and_set_nothing(params, match):
    X, Y = _tree_data(20)
    svm = StructuredSVM(HammingLoss(), TREE, **params)
    with pytest.raises(ValueError, match=match):
        svm.fit(X, Y)
    assert not hasattr(svm, "dual_coef_") and not hasattr(svm, "n_features_in_")
    with pytest.raises(TypeError, match="must be an ecrm.losses.Loss"):
        StructuredSVM(object(), TREE).fit(X, Y)
    from ecrm.losses import SquaredLoss

    with pytest.raises(TypeError, match="needs a loss with a linear form"):
        StructuredSVM(SquaredLoss(), TREE).fit(X, Y)
    assert clone(svm).get_params()["loss"] is not None


@pytest.mark.slow
@parametrize_with_checks([StructuredSVM(ZeroOneLoss(CandidateSpace.from_classes(range(10))),
                                        CandidateSpace.from_classes(range(10)), max_iter=20,
                                        random_state=0)])
def test_sklearn_common_checks(estimator, check):
    check(estimator)


def test_model_file_round_trip_and_tampered_state(tmp_path):
    import json
    import zipfile

    from ecrm import load, save
    from ecrm.model_files.io import ModelFileError

    X, Y = _tree_data(60)
    Xt = _tree_data(20, seed=3)[0]
    svm = StructuredSVM(HierarchicalLoss(TREE), TREE, gamma=0.5, C=1.0, random_state=0).fit(X, Y)
    path = tmp_path / "s.ecrm"
    save(svm, path)
    back = load(path)
    np.testing.assert_array_equal(back.predict(Xt), svm.predict(Xt))
    np.testing.assert_allclose(back.decision_function(Xt), svm.decision_function(Xt),
                               atol=1e-12 * np.abs(svm.decision_function(Xt)).max())
    assert back.duality_gap_ == svm.duality_gap_ and back.n_iter_ == svm.n_iter_
    # a file whose support_ disagrees with dual_coef_ is refused, not loaded
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(members["ecrm-model.json"])
    meta["fitted"]["n_iter_"] = "__class__"
    meta["fitted"]["predict"] = 1
    import hashlib

    text = json.dumps(meta, sort_keys=True).encode()
    members["ecrm-model.json"] = text
    members["ecrm-model.sha256"] = hashlib.sha256(text).hexdigest().encode()
    bad = tmp_path / "bad.ecrm"
    with zipfile.ZipFile(bad, "w") as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    with pytest.raises(ModelFileError, match=r"\['predict'\] are not those of a fitted"):
        load(bad)


@pytest.mark.parametrize("attribute, value, match", named([
    ("support_", np.array([0]), "support_ must be"),
    ("dual_coef_", np.zeros((3, 5)), "dual_coef_ must be"),
    ("kernel_params_", {"kernel": "rbf", "gamma": 9.0, "degree": 3, "coef0": 1}, "do not match"),
]))
def test_state_check_refuses_what_fit_could_not_have_made(attribute, value, match):
    X, Y = _tree_data(30)
    svm = StructuredSVM(HammingLoss(), TREE, gamma=0.5, random_state=0).fit(X, Y)
    svm._check_fitted_state()  # the state fit made passes
    setattr(svm, attribute, value)
    with pytest.raises(ValueError, match=match):
        svm._check_fitted_state()
