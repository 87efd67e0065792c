"""Linear-constraint output spaces: TU check, membership, certificates, MILP fallback."""

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ecrm.spaces.base import CertifiedResult, all_binary_vectors
from ecrm.spaces.hierarchy import Hierarchy
from ecrm.spaces.permutations import PermutationSpace
from ecrm.spaces.polytope import LinearConstraintSpace, check_total_unimodularity

finite = st.floats(-10, 10, allow_nan=False)


def brute_force_tu(A):
    """Every square submatrix's determinant, no pruning."""
    A = np.asarray(A, dtype=float)
    m, n = A.shape
    for k in range(1, min(m, n) + 1):
        for r in itertools.combinations(range(m), k):
            for c in itertools.combinations(range(n), k):
                det = round(float(np.linalg.det(A[np.ix_(r, c)])))
                if det not in (-1, 0, 1):
                    return False
    return True


@settings(max_examples=150, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 5), st.integers(1, 5)),
              elements=st.sampled_from([-1.0, 0.0, 0.0, 1.0])))
def test_tu_check_agrees_with_all_determinants(A):
    cert = check_total_unimodularity(A)
    assert cert.is_tu == brute_force_tu(A), cert
    if cert.witness is not None:
        rows, cols = cert.witness
        det = np.linalg.det(A[np.ix_(rows, cols)])
        assert round(abs(det)) not in (0, 1)


def test_tu_recognisers_for_the_papers_classes():
    h = Hierarchy([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e")])  # a DAG
    d = h.n_labels
    A = np.zeros((len(h.edges), d))
    for r, (p, c) in enumerate(h.edges):
        A[r, c], A[r, p] = 1, -1  # y_child - y_parent <= 0
    assert check_total_unimodularity(A).method.startswith("directed-graph incidence")
    n = 4
    rows = np.kron(np.eye(n), np.ones(n))  # sum_k y_jk = 1
    cols = np.kron(np.ones(n), np.eye(n))  # sum_j y_jk = 1
    cert = check_total_unimodularity(np.vstack([rows, cols]))
    assert cert.is_tu and cert.method == "bipartite-graph incidence"
    assert check_total_unimodularity([[2, 0]]).method == "entries"
    assert check_total_unimodularity(np.ones((12, 12)), max_submatrices=10).is_tu is True
    big = np.random.default_rng(0).choice([-1, 0, 1], size=(30, 30))
    assert check_total_unimodularity(big, max_submatrices=1000).is_tu in (False, None)


@st.composite
def constraint_sets(draw):
    d = draw(st.integers(1, 6))
    n_ub, n_eq = draw(st.integers(0, 3)), draw(st.integers(0, 2))
    entries = st.sampled_from([-1.0, 0.0, 1.0, 1.0, 2.0])
    A_ub = draw(arrays(float, (n_ub, d), elements=entries))
    A_eq = draw(arrays(float, (n_eq, d), elements=entries))
    b_ub = draw(arrays(float, n_ub, elements=st.integers(-1, 3).map(float)))
    b_eq = draw(arrays(float, n_eq, elements=st.integers(0, 2).map(float)))
    return dict(A_ub=A_ub if n_ub else None, b_ub=b_ub if n_ub else None,
                A_eq=A_eq if n_eq else None, b_eq=b_eq if n_eq else None, n_outputs=d)


def _certificate_tolerance(C) -> np.ndarray:
    """How far a bound may exceed the value of row of ``C``: the solver's relative tolerance
    (1e-13 of sum |c|, here 1e-9), and at least one subnormal spacing per coordinate, the
    rounding of a bound multiplied back onto subnormal costs, where the relative term
    underflows to 0 (a cost of -5e-324 gave 1e-9 * 5e-324 = 0)."""
    return np.maximum(1e-9 * np.abs(C).sum(axis=1),
                      C.shape[1] * np.finfo(float).smallest_subnormal)


_NONE = dict(A_ub=None, b_ub=None, A_eq=None, b_eq=None)


# The oracle itself is checked against brute force in tests/spaces/test_oracles.py; here the
# space's own duties: its elements, membership, infeasibility and the certificates.
@settings(max_examples=40, deadline=None)
@given(constraint_sets(), arrays(float, (3, 6), elements=finite))
@example(dict(_NONE, n_outputs=1), np.pad([[-5e-324], [0.0], [1.0]], ((0, 0), (0, 5))))
@example(dict(_NONE, A_ub=np.array([[1.0, 1.0]]), b_ub=np.array([1.0]), n_outputs=2),
         np.pad([[-1e-318, -2e-318], [-1e-310, 0.0], [3e-320, -5e-324]], ((0, 0), (0, 4))))
def test_elements_membership_and_certificates_on_random_constraint_sets(kw, C):
    d = kw["n_outputs"]
    C = C[:, :d]  # the first d columns: the costs of this space
    allpts = all_binary_vectors(d)
    ok = np.ones(len(allpts), dtype=bool)
    if kw["A_ub"] is not None:
        ok &= np.all(allpts @ kw["A_ub"].T <= kw["b_ub"], axis=1)
    if kw["A_eq"] is not None:
        ok &= np.all(allpts @ kw["A_eq"].T == kw["b_eq"], axis=1)
    if not ok.any():
        with pytest.raises(ValueError, match="infeasible"):
            LinearConstraintSpace(**kw)
        return
    space = LinearConstraintSpace(**kw)
    np.testing.assert_array_equal(space.enumerate(), allpts[ok])
    np.testing.assert_array_equal(space.contains(allpts), ok)
    res = space.solve(C)
    assert isinstance(res, CertifiedResult) and res.info["tu"] is space.tu
    assert res.certified.all()
    np.testing.assert_allclose(res.value, np.einsum("ij,ij->i", C, res.solution))
    tol = _certificate_tolerance(C)
    if space.exact_by_lp:
        assert np.all(res.method == "lp")  # Theorem 3.1: the relaxation is exact
    assert np.all(res.bound <= res.value + tol)
    assert np.all(res.info["lp_bound"] <= res.value + tol)
    lp = res.method == "lp"
    np.testing.assert_allclose(res.bound[lp], res.value[lp], rtol=0, atol=tol.max())
    milp = LinearConstraintSpace(**kw, method="milp").solve(C)
    assert np.all(milp.method == "milp") and np.isnan(milp.info["lp_bound"]).all()
    np.testing.assert_allclose(milp.bound, milp.value, rtol=0, atol=tol.max())


def test_fractional_relaxation_falls_back_to_milp():
    # odd cycle: the LP optimum is (1/2, 1/2, 1/2)
    space = LinearConstraintSpace(A_ub=[[1, 1, 0], [0, 1, 1], [1, 0, 1]], b_ub=[1, 1, 1])
    assert space.tu.is_tu is False and space.tu.determinant == 2.0
    res = space.solve([[-1.0, -1.0, -1.0], [-1.0, 0.0, 0.0]])
    np.testing.assert_allclose(res.info["lp_bound"], [-1.5, -1.0])
    np.testing.assert_allclose(res.bound, [-1.0, -1.0])  # branch and bound closes the gap
    np.testing.assert_array_equal(res.method, ["milp", "lp"])
    np.testing.assert_allclose(res.value, [-1.0, -1.0])
    lp_only = LinearConstraintSpace(A_ub=[[1, 1, 0], [0, 1, 1], [1, 0, 1]], b_ub=[1, 1, 1],
                                    method="lp")
    with pytest.raises(RuntimeError, match="fractional"):
        lp_only.solve([[-1.0, -1.0, -1.0]])


@pytest.mark.parametrize("A_ub, b_ub, c", [
    ([[0, -1, 1, -1], [0, 0, 0, 1], [1, 1, -1, -1]], [0, 1, 0],
     [-0.999999, -1e-12, -0.5, 1.0]),
    ([[-1, 1, 1, 2, 1], [2, 2, -1, -1, 1]], [3, 1],
     [1.66206615e-11, -1.63293628e08, 8.81968865e04, 6.70662981, -5.46914524e08]),
], ids=["costs-near-a-tie", "costs-over-twenty-decades"])
@pytest.mark.parametrize("method", ["auto", "milp"])
def test_branch_and_bound_is_exact_at_every_scale(A_ub, b_ub, c, method):
    # Regression: with rows scaled to max |c| = 1, HiGHS's absolute MIP
    # tolerances (1e-6) returned -0.499999 instead of -0.5 in the first case, and missed the
    # minimum by 1.2e-8 of sum |c| in the second.
    space = LinearConstraintSpace(A_ub=A_ub, b_ub=b_ub, method=method)
    elements = space.enumerate()
    for s in (1e-12, 1e-6, 1.0, 1e6, 1e12):
        C = s * np.array([c])
        res = space.solve(C)
        best = (elements @ C.T).min()
        assert abs(res.value[0] - best) <= 1e-12 * np.abs(C).sum(), (s, res.value, best)


def test_assignment_constraints_match_the_permutation_oracle():
    n = 4
    A_eq = np.vstack([np.kron(np.eye(n), np.ones(n)), np.kron(np.ones(n), np.eye(n))])
    space = LinearConstraintSpace(A_eq=A_eq, b_eq=np.ones(2 * n))
    assert space.exact_by_lp
    C = np.random.default_rng(0).normal(size=(5, n * n))
    res = space.solve(C)
    assert np.all(res.method == "lp")
    np.testing.assert_array_equal(res.solution, PermutationSpace(n).argmin(C))


def test_bad_constraints():
    with pytest.raises(ValueError, match="widths A_ub=3, A_eq=2"):
        LinearConstraintSpace(A_ub=np.ones((1, 3)), b_ub=[1], A_eq=np.ones((1, 2)), b_eq=[1])
    with pytest.raises(ValueError, match="widths A_ub=3, n_outputs=4"):
        LinearConstraintSpace(A_ub=np.ones((1, 3)), b_ub=[1], n_outputs=4)
    with pytest.raises(ValueError, match=r"b_ub must have one entry per row of A_ub \(2\)"):
        LinearConstraintSpace(A_ub=np.ones((2, 3)), b_ub=[1])
    with pytest.raises(ValueError, match="infeasible"):
        LinearConstraintSpace(A_eq=[[1, 1]], b_eq=[3])
    with pytest.raises(ValueError, match="give A_ub with b_ub"):
        LinearConstraintSpace(A_ub=[[1, 1]])
    with pytest.raises(ValueError, match="method"):
        LinearConstraintSpace(n_outputs=2, method="simplex")
    with pytest.raises(ValueError, match="n_outputs must be an integer >= 1; got 2.5"):
        LinearConstraintSpace(n_outputs=2.5)
    with pytest.raises(ValueError, match="check_feasible must be True or False"):
        LinearConstraintSpace(n_outputs=2, check_feasible="no")
    space = LinearConstraintSpace(A_ub=[[1, 1, 0]], b_ub=[1], A_eq=[[0, 0, 1]], b_eq=[1])
    with pytest.raises(ValueError, match="row 1 of Y violates inequality constraint 0: 2 > 1"):
        space.validate([[1, 0, 1], [1, 1, 1]])
    with pytest.raises(ValueError, match="row 0 of Y violates equality constraint 0: 0 != 1"):
        space.validate([[1, 0, 0]])
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        space.argmin(np.zeros((1, 4)))
    np.testing.assert_array_equal(
        space.contains([[1, 0, 1], [1, 1, 1], [0.5, 0, 1], [0, 0, 0]]),
        [True, False, False, False])
    assert not space.contains(np.ones((2, 4))).any()
