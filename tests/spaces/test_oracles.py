"""Every output space and every oracle method against brute force, at every scale.

One parametrised test (networkx's ``validate_flows`` style): each case draws a small random
instance (a space, optionally a loss whose linear form the oracle minimises, the oracle) and
cost rows, and :func:`ecrm.testing.check_oracle` compares the oracle's objective with the
minimum over :meth:`~ecrm.spaces.base.OutputSpace.enumerate`. The costs mix magnitudes from
1e-12 to 1e12 and contain many near-ties; the same rows scaled by ``s`` in ``SCALES`` must
give objectives ``s`` times as large (the minimiser of a linear cost does not depend on its
scale), all within a tolerance relative to ``sum |c|``. A new space joins by implementing
``enumerate`` and adding a case to ``CASES``.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ecrm import Hierarchy
from ecrm.losses import AdditiveLoss, HierarchicalLoss, ZeroOneLoss
from ecrm.losses.kendall import KendallLoss
from ecrm.spaces import (
    CandidateSpace,
    LinearConstraintSpace,
    MultilabelSpace,
    PermutationSpace,
    paper_network,
)
from ecrm.testing import check_oracle

SCALES = (1e-12, 1e-6, 1.0, 1e6, 1e12)
RTOL = 1e-9  # of sum |c|, for every oracle
N_ROWS = 4

# -- cost rows ------------------------------------------------------------------------------
_mixed = st.builds(lambda sign, exponent, mantissa: sign * mantissa * 10.0**exponent,
                   st.sampled_from([-1.0, 1.0]), st.integers(-12, 12), st.floats(1.0, 9.99))
_near_ties = st.builds(lambda base, tweak: base + tweak,
                       st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]),
                       st.sampled_from([0.0, 0.0, 0.0, 1e-12, -1e-12, 1e-9, -1e-9, 1e-6]))


@st.composite
def cost_rows(draw, width: int, risk=None):
    """Rows of costs: mixed magnitudes, near-ties, or (with ``risk = (loss, elements)``) the
    costs ``W @ psi(Y_ref)`` of an estimated risk with weights of mixed magnitudes."""
    kinds = ["mixed", "ties"] + (["risk"] if risk is not None else [])
    kind = draw(st.sampled_from(kinds))
    if kind != "risk":
        return draw(arrays(float, (N_ROWS, width), elements=_mixed if kind == "mixed"
                           else _near_ties))
    loss, elements = risk
    refs = draw(st.lists(st.integers(0, len(elements) - 1), min_size=1, max_size=6))
    W = draw(arrays(float, (N_ROWS, len(refs)), elements=_mixed | _near_ties))
    return W @ loss.psi(elements[refs])


# -- instances ------------------------------------------------------------------------------
@st.composite
def hierarchies(draw, dag: bool, max_labels: int = 8):
    n = draw(st.integers(2, max_labels - 1))
    edges = []
    for j in range(1, n):
        k = draw(st.integers(0, min(j, 3 if dag else 1)))
        parents = draw(st.lists(st.integers(0, j - 1), min_size=k, max_size=k, unique=True))
        edges += [(p, j) for p in parents]
    if dag:
        edges += [(0, n), (1, n)]  # at least one label with two parents
    return Hierarchy(edges, labels=range(n + dag))


@st.composite
def candidate_sets(draw):
    k, d = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    rows = draw(st.lists(st.tuples(*[st.integers(-2, 2)] * d), min_size=k, max_size=k,
                         unique=True))
    return CandidateSpace(np.array(rows, dtype=float))


def _assignment(n):
    A = np.vstack([np.kron(np.eye(n), np.ones(n)), np.kron(np.ones(n), np.eye(n))])
    return {"A_eq": A, "b_eq": np.ones(2 * n)}


@st.composite
def constraint_sets(draw, tu: bool, method: str):
    """Feasible constraint sets: totally unimodular (a DAG's hierarchy constraints, a
    bipartite assignment, a choice per group) or arbitrary small integer constraints."""
    return LinearConstraintSpace(**draw(_constraints(tu)), method=method)


@st.composite
def _constraints(draw, tu: bool):
    if tu:
        kind = draw(st.sampled_from(["hierarchy", "assignment", "groups"]))
        if kind == "hierarchy":
            h = draw(hierarchies(dag=True))
            A = np.zeros((len(h.edges), h.n_labels))
            A[np.arange(len(A)), h.edges[:, 1]], A[np.arange(len(A)), h.edges[:, 0]] = 1, -1
            return {"A_ub": A, "b_ub": np.zeros(len(A))}
        if kind == "assignment":
            return _assignment(draw(st.integers(2, 3)))
        sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
        A = np.zeros((len(sizes), sum(sizes)))
        for g, start in enumerate(np.cumsum([0] + sizes[:-1])):
            A[g, start:start + sizes[g]] = 1
        at_most = draw(st.booleans())
        return ({"A_ub": A, "b_ub": np.ones(len(A))} if at_most
                else {"A_eq": A, "b_eq": np.ones(len(A))})
    d = draw(st.integers(2, 6))
    entries = st.sampled_from([-1.0, 0.0, 1.0, 1.0, 2.0])
    A = draw(arrays(float, (draw(st.integers(1, 3)), d), elements=entries))
    # b >= A y0 for some 0/1 point y0: feasible by construction
    y0 = draw(arrays(float, d, elements=st.sampled_from([0.0, 1.0])))
    slack = draw(arrays(float, len(A), elements=st.sampled_from([0.0, 0.0, 1.0])))
    return {"A_ub": A, "b_ub": A @ y0 + slack}


def _space(strategy):
    return strategy.map(lambda space: (space, None, None))


def _method(strategy, method):
    return strategy.map(lambda space: (space, None,
                                       lambda C: space.argmin(C, method=method)))


def _with_loss(strategy, make_loss):
    return strategy.map(lambda space: (space, make_loss(space), None))


def _random_additive(d):
    rng = np.random.default_rng(d)
    T = rng.normal(size=(d, 2, 2))  # l_j(b, y') = T[j, b, y'_j]
    return AdditiveLoss(lambda Y, R: T[np.arange(d), Y.astype(int), R.astype(int)],
                        n_outputs=d)


CASES = {
    "multilabel": _space(st.integers(1, 6).map(MultilabelSpace)),
    "hierarchy-tree-auto": _space(hierarchies(dag=False)),
    "hierarchy-tree-dp": _method(hierarchies(dag=False), "dp"),
    "hierarchy-tree-mincut": _method(hierarchies(dag=False), "mincut"),
    "hierarchy-tree-lp": _method(hierarchies(dag=False), "lp"),
    "hierarchy-dag-auto": _space(hierarchies(dag=True)),
    "hierarchy-dag-mincut": _method(hierarchies(dag=True), "mincut"),
    "hierarchy-dag-lp": _method(hierarchies(dag=True), "lp"),
    "hierarchical-loss-dag": _with_loss(hierarchies(dag=True), HierarchicalLoss),
    "additive-loss-dag": _with_loss(hierarchies(dag=True),
                                    lambda h: _random_additive(h.n_outputs)),
    "candidates": _space(candidate_sets()),
    "zero-one-loss": _with_loss(candidate_sets(), ZeroOneLoss),
    "permutations": _space(st.integers(1, 5).map(PermutationSpace)),
    "permutations-assignment": _method(st.integers(1, 5).map(PermutationSpace), "assignment"),
    "permutations-enumerate": _method(st.integers(1, 7).map(PermutationSpace), "enumerate"),
    "kendall-loss": _with_loss(st.integers(1, 5).map(PermutationSpace),
                               lambda space: KendallLoss()),
    "polytope-tu-auto": _space(constraint_sets(True, "auto")),
    "polytope-tu-lp": _space(constraint_sets(True, "lp")),
    "polytope-tu-milp": _space(constraint_sets(True, "milp")),
    "polytope-any-auto": _space(constraint_sets(False, "auto")),
    "polytope-any-milp": _space(constraint_sets(False, "milp")),
    "flow-polytope": _space(st.just(paper_network())),
}


def _objective(space, loss, oracle, C):
    Y = check_oracle(space, C, loss=loss, oracle=oracle, rtol=RTOL, atol=0.0)
    embedded = Y if loss is None else loss.phi(Y)
    return np.einsum("ij,ij->i", embedded, C)


@pytest.mark.parametrize("case", CASES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking: the
# failure message names the cost row, and shrinking HiGHS-based cases takes minutes
@given(data=st.data())
def test_oracle_is_exact_and_scale_invariant(case, data):
    space, loss, oracle = data.draw(CASES[case], label="instance")
    elements = space.enumerate()
    width = space.n_outputs if loss is None else loss.phi(elements[:1]).shape[1]
    C = data.draw(cost_rows(width, None if loss is None else (loss, elements)), label="C")
    base = _objective(space, loss, oracle, C)
    for s in SCALES:
        scaled = _objective(space, loss, oracle, s * C)
        np.testing.assert_allclose(scaled, s * base, rtol=0,
                                   atol=2 * RTOL * s * np.abs(C).sum(axis=1).max(),
                                   err_msg=f"{case}: objective not invariant at scale {s:g}")
