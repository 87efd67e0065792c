"""Flow polytope, absolute/square losses, their inference, simulator, baselines, experiment.

Every oracle is checked against brute force on tiny networks:

* linear oracle and vertices: the LP optimum equals the minimum over enumerated vertices;
* projection: the minimum over every active set (arcs fixed at 0) of the equality QP;
* absolute loss: per-arc segment cells, each an LP with a linear objective;
* square loss with negative weight sum: the best vertex.
"""

from __future__ import annotations

import itertools
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from _ids import named
from ecrm.baselines.flows import KNNFlowRegressor, KRRProjection
from ecrm.datasets.flows import DEFAULT_PARAMETERS, FlowModel, simulate_flows, st_paths
from ecrm.losses import AbsoluteLoss, HammingLoss, SquaredLoss
from ecrm.spaces.base import CertifiedResult
from ecrm.spaces.flows import (
    FlowPolytope,
    InfeasibleNetworkError,
    absolute_risk,
    minimize_absolute_risk,
    minimize_squared_risk,
    paper_network,
    squared_risk,
)
from ecrm.testing import check_oracle
from ecrm.weights.kernel.estimator import ECRM

SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Small networks: a diamond with a cross arc (unit s-t flow), a capacitated variant with two
# sources, and a network with a cycle of uncapacitated arcs (unbounded polytope).
DIAMOND = [("s", "a"), ("s", "b"), ("a", "b"), ("a", "t"), ("b", "t")]


def diamond():
    return FlowPolytope(DIAMOND, {"s": 1, "t": -1})


def capacitated():
    return FlowPolytope(DIAMOND, {"s": 1.5, "a": 0.5, "t": -2},
                        capacity=[1.0, 1.0, 0.6, 1.2, 1.5])


NETWORKS = [diamond, capacitated]

#: Positive rescalings under which every minimiser must give the same answer.
SCALES = (1e-12, 1e-6, 1.0, 1e6, 1e12)


# -- brute-force oracles --------------------------------------------------------------------
def brute_projection(space: FlowPolytope, z: np.ndarray) -> float:
    """min ||y - z||^2 over every choice of arcs fixed at 0 or at capacity (tiny only)."""
    d = space.n_arcs
    best = np.inf
    capped = np.isfinite(space.capacity)
    for status in itertools.product(*[(0, 1, 2) if capped[a] else (0, 1) for a in range(d)]):
        status = np.array(status)  # 0 free, 1 at zero, 2 at capacity
        free = status == 0
        y = np.where(status == 2, space.capacity, 0.0)
        rhs = space.b_eq - space.A_eq[:, ~free] @ y[~free]
        AF = space.A_eq[:, free]
        nf = int(free.sum())
        if nf:
            K = np.block([[np.eye(nf), AF.T], [AF, np.zeros((AF.shape[0], AF.shape[0]))]])
            sol = np.linalg.lstsq(K, np.concatenate([z[free], rhs]), rcond=None)[0]
            y[free] = sol[:nf]
        if space.contains(y[None], atol=1e-9)[0]:
            best = min(best, float(np.sum((y - z) ** 2)))
    return best


def brute_absolute(space: FlowPolytope, w: np.ndarray, Y_ref: np.ndarray) -> float:
    """Exact minimum of sum_i w_i |y - y_i|_1: min over per-arc segment cells of an LP."""
    upper = space.upper_bounds
    segs = []
    for a in range(space.n_arcs):
        bp = np.unique(np.concatenate([[0.0, upper[a]], Y_ref[:, a]]))
        segs.append(list(zip(bp[:-1], bp[1:], strict=False)) or [(0.0, 0.0)])
    best = np.inf
    for cell in itertools.product(*segs):
        lo = np.array([c[0] for c in cell])
        hi = np.array([c[1] for c in cell])
        mid = (lo + hi) / 2
        # On the cell every |y_a - v| is linear: sign fixed by the cell's midpoint.
        sign = np.sign(mid[None, :] - Y_ref)
        c = (w[:, None] * sign).sum(axis=0)
        res = linprog(c, A_eq=space.A_eq, b_eq=space.b_eq, bounds=list(zip(lo, hi, strict=False)),
                      method="highs")
        if res.status == 0:
            best = min(best, float(absolute_risk(w[None], Y_ref, res.x[None])[0]))
    return best


def random_flows(space: FlowPolytope, rng, m: int, grid: int = 4) -> np.ndarray:
    """m random flows: convex combinations of vertices on a coarse grid (shared values)."""
    V = space.vertices()
    lam = rng.integers(0, grid, size=(m, len(V))).astype(float)
    lam[lam.sum(axis=1) == 0, 0] = 1.0
    return space.clip((lam / lam.sum(axis=1, keepdims=True)) @ V)


# -- FlowPolytope ---------------------------------------------------------------------------
def test_paper_network_vertices_are_the_nine_path_flows():
    space = paper_network()
    paths = st_paths(space, "s", "t")
    assert len(paths) == 9
    V = space.vertices()
    np.testing.assert_array_equal(np.unique(paths, axis=0), V)
    np.testing.assert_array_equal(space.upper_bounds, np.ones(10))
    assert space.is_bounded and space.dimension == 5


@pytest.mark.parametrize("make", NETWORKS)
@SETTINGS
@given(seed=st.integers(0, 10_000))
def test_linear_oracle_equals_best_vertex(make, seed):
    space = make()
    c = np.random.default_rng(seed).normal(size=(3, space.n_arcs))
    res = space.minimize_linear(c)
    V = space.vertices()
    np.testing.assert_allclose(res.value, (c @ V.T).min(axis=1), atol=1e-9)
    assert space.contains(res.solution).all()


@pytest.mark.parametrize("make", NETWORKS)
@SETTINGS
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([0.3, 1.0, 5.0]))
def test_projection_equals_brute_force(make, seed, scale):
    space = make()
    z = np.random.default_rng(seed).normal(size=space.n_arcs) * scale
    res = space.project(z)
    assert res.certified[0]
    assert space.contains(res.solution, atol=1e-9).all()
    np.testing.assert_allclose(res.value[0], brute_projection(space, z), rtol=1e-8,
                               atol=1e-10)


def test_projection_of_a_flow_is_itself():
    space = paper_network()
    V = space.vertices()
    Y = V[:4] * 0.25 + V[4:8] * 0.75
    np.testing.assert_allclose(space.project(Y).solution, Y, atol=1e-12)


def test_infeasible_network_is_a_clear_error():
    with pytest.raises(InfeasibleNetworkError, match=r"at most 0.5 of the total supply 1"):
        FlowPolytope([("s", "a"), ("a", "t")], {"s": 1, "t": -1}, capacity=[1.0, 0.5])
    with pytest.raises(InfeasibleNetworkError, match="sum to 1, not zero"):
        FlowPolytope([("s", "a"), ("b", "t")], {"s": 1, "t": -1})
    with pytest.raises(InfeasibleNetworkError, match="unmet supply"):
        FlowPolytope([("a", "s"), ("a", "t")], {"s": 1, "t": -1})


@pytest.mark.parametrize("kwargs, message", named([
    ({"capacity": [1, -2, 1, 1, 1]}, r"non-negative; arc 1 \('s', 'b'\) has capacity -2"),
    ({"capacity": [1, 1]}, r"one entry per arc \(5\)"),
    ({"capacity": [1, np.nan, 1, 1, 1]}, "NaN"),
]))
def test_bad_capacities(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FlowPolytope(DIAMOND, {"s": 1, "t": -1}, **kwargs)


def test_bad_networks():
    with pytest.raises(ValueError, match="sum to zero"):
        FlowPolytope(DIAMOND, {"s": 1, "t": -0.5})
    with pytest.raises(ValueError, match="unknown node 'x'"):
        FlowPolytope(DIAMOND, {"s": 1, "x": -1})
    with pytest.raises(ValueError, match="unknown node 'q'"):
        FlowPolytope([("s", "q")], [1, -1], nodes=["s", "t"])
    with pytest.raises(ValueError, match="self-loop"):
        FlowPolytope([("s", "s")], {"s": 0})
    with pytest.raises(ValueError, match=r"\(tail, head\) pair"):
        FlowPolytope([("s", "a", "b")], {"s": 0})
    with pytest.raises(ValueError, match="one entry per node"):
        FlowPolytope(DIAMOND, [1, -1])


def test_validate_names_row_and_node_or_arc():
    space = paper_network()
    good = space.vertices()[:3]
    Y = good.copy()
    np.testing.assert_array_equal(space.validate(Y), good)
    Y[2, 9] = 0.5  # arc d->t: conservation fails at d and t
    with pytest.raises(ValueError, match="row 2 violates flow conservation at node 'd'"):
        space.validate(Y)
    Y = good.copy()
    Y[1, 0] = -0.1
    with pytest.raises(ValueError, match=r"row 1: negative flow -0.1 on arc 0 \('s', 'a'\)"):
        space.validate(Y)
    with pytest.raises(ValueError, match=r"one column per arc: expected shape \(n, 10\) .* "
                       r"got shape \(3, 9\)"):
        space.validate(good[:, :9])
    cap = capacitated()
    Y = cap.vertices()[:1].copy()
    Y[0, 2] += 5
    with pytest.raises(ValueError, match="exceeds its capacity"):
        cap.validate(Y)
    before = good.copy()
    out = space.validate(good)
    out[0, 0] = 7.0  # validate returns a new array: the caller's is untouched
    np.testing.assert_array_equal(good, before)


def test_unbounded_network_detected():
    space = FlowPolytope([("s", "a"), ("a", "b"), ("b", "a"), ("a", "t")], {"s": 1, "t": -1})
    assert not space.is_bounded
    np.testing.assert_array_equal(np.isinf(space.upper_bounds), [False, True, True, False])
    with pytest.raises(ValueError, match="unbounded"):
        space.vertices()
    with pytest.raises(ValueError, match="unbounded below"):
        space.argmin([[0, -1, 0, 0]])


@pytest.mark.parametrize("make", NETWORKS)
@SETTINGS
@given(seed=st.integers(0, 10_000))
def test_linear_oracle_through_the_shared_checker_at_every_scale(make, seed):
    space = make()
    rng = np.random.default_rng(seed)
    # Rows of mixed magnitudes (1e-12 to 1e12), and near-ties on a half-integer grid.
    C = np.vstack([rng.normal(size=(3, space.n_arcs)) * 10.0 ** rng.uniform(-12, 12, (3, 1)),
                   rng.integers(-2, 3, size=(3, space.n_arcs)) / 2])
    np.testing.assert_array_equal(space.enumerate(), space.vertices())
    Y = check_oracle(space, C)
    for scale in SCALES:
        np.testing.assert_allclose(space.argmin(scale * C[:3]), Y[:3], atol=1e-9)


def test_enumerate_refuses_unbounded_and_large_polytopes():
    space = FlowPolytope([("s", "a"), ("a", "b"), ("b", "a"), ("a", "t")], {"s": 1, "t": -1})
    with pytest.raises(ValueError, match="unbounded"):
        space.enumerate()
    with pytest.raises(ValueError, match=r"refusing to list 9 vertices \(max_outputs=5\)"):
        paper_network().enumerate(max_outputs=5)


# -- absolute loss --------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("make", NETWORKS)
@SETTINGS
@given(seed=st.integers(0, 10_000), m=st.integers(2, 3))
def test_absolute_risk_methods_against_brute_force(make, seed, m):
    space = make()
    rng = np.random.default_rng(seed)
    Y_ref = random_flows(space, rng, m, grid=3)
    w = rng.normal(size=m)
    w[0] = abs(w[0]) + 0.1
    exact = brute_absolute(space, w, Y_ref)
    for method in ("milp", "auto"):
        res = minimize_absolute_risk(w[None], Y_ref, space, method=method)
        assert res.certified[0], method
        np.testing.assert_allclose(res.value[0], exact, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(absolute_risk(w[None], Y_ref, res.solution), res.value,
                                   atol=1e-10)
        assert space.contains(res.solution, atol=1e-7).all()
    local = minimize_absolute_risk(w[None], Y_ref, space, method="local")
    assert local.bound[0] <= exact + 1e-8 <= local.value[0] + 2e-8
    if local.certified[0]:
        np.testing.assert_allclose(local.value[0], exact, rtol=1e-7, atol=1e-8)
    sub = minimize_absolute_risk(w[None], Y_ref, space, method="subgradient",
                                 subgradient_iter=50)
    assert sub.value[0] >= exact - 1e-8 and not sub.certified[0]
    assert space.contains(sub.solution, atol=1e-7).all()


def test_absolute_risk_positive_weights_is_certified_by_the_lp():
    space = paper_network()
    rng = np.random.default_rng(0)
    Y_ref = random_flows(space, rng, 30)
    W = rng.uniform(size=(20, 30))
    res = minimize_absolute_risk(W, Y_ref, space, method="local")
    assert res.certified.all()
    assert res.info["dca_iterations"].max() == 0


@pytest.mark.slow
def test_local_method_batches_and_falls_back_to_milp():
    space = paper_network()
    rng = np.random.default_rng(1)
    Y_ref = random_flows(space, rng, 12, grid=3)
    W = rng.normal(size=(20, 12)) + 0.05
    auto = minimize_absolute_risk(W, Y_ref, space, method="auto")
    milp = minimize_absolute_risk(W, Y_ref, space, method="milp")
    local = minimize_absolute_risk(W, Y_ref, space, method="local")
    assert auto.certified.all() and milp.certified.all()
    np.testing.assert_allclose(auto.value, milp.value, atol=1e-8)
    assert np.all(local.value >= milp.value - 1e-8)
    assert np.all(local.bound <= milp.value + 1e-8)
    np.testing.assert_allclose(local.value[local.certified], milp.value[local.certified],
                               atol=1e-8)


def test_absolute_risk_on_unbounded_network():
    space = FlowPolytope([("s", "a"), ("a", "b"), ("b", "a"), ("a", "t")], {"s": 1, "t": -1})
    Y_ref = np.array([[1, 0, 0, 1], [1, 2, 2, 1], [1, 0.5, 0.5, 1.0]])
    w = np.array([1.0, 0.5, -0.3])
    auto = minimize_absolute_risk(w[None], Y_ref, space)
    milp = minimize_absolute_risk(w[None], Y_ref, space, method="milp")
    np.testing.assert_allclose(auto.value, milp.value, atol=1e-9)
    # Brute force along the only free direction (the cycle): y = (1, t, t, 1).
    t = np.linspace(0, 5, 5001)
    grid = absolute_risk(np.repeat(w[None], len(t), 0), Y_ref,
                         np.column_stack([np.ones_like(t), t, t, np.ones_like(t)]))
    assert milp.value[0] <= grid.min() + 1e-9
    with pytest.raises(ValueError, match="row 0 is unbounded below: its weights sum to"):
        minimize_absolute_risk([[1.0, -1.5, 0.2]], Y_ref, space)


def test_absolute_risk_input_errors():
    space = paper_network()
    V = space.vertices()
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        minimize_absolute_risk([[1.0]], V[:1], space, method="fast")
    with pytest.raises(ValueError, match=r"one column per arc"):
        minimize_absolute_risk([[1.0]], V[:1, :9], space)
    with pytest.raises(ValueError, match=r"weights must have shape \(n, 2\)"):
        minimize_absolute_risk([[1.0]], V[:2], space)
    from ecrm.spaces.base import MultilabelSpace

    with pytest.raises(TypeError, match="FlowPolytope, not MultilabelSpace"):
        minimize_absolute_risk([[1.0]], V[:1], MultilabelSpace(10))
    with pytest.raises(ValueError, match=r"HammingLoss names no risk minimiser .* "
                       r"AbsoluteLoss or SquaredLoss"):
        space.solve_risk([[1.0]], V[:1], HammingLoss())


@pytest.mark.slow
@pytest.mark.parametrize("make", NETWORKS)
@SETTINGS
@given(seed=st.integers(0, 10_000), magnitude=st.floats(-12, 12))
@example(seed=1000, magnitude=0.0)  # the envelope LP's bound 6e-8 above the minimum
def test_absolute_risk_is_invariant_to_the_scale_of_the_weights(make, seed, magnitude):
    # Rows of weights of magnitude 10^magnitude, and integer weights (many near-ties). The
    # tiny networks have degenerate optima (a cycle whose arcs' slopes cancel for any w), so
    # the answer for s * w is compared with the one for w by its risk; on ECRM weights the
    # solutions themselves agree (test_regression_absolute_risk_at_tiny_and_huge_weights).
    space = make()
    rng = np.random.default_rng(seed)
    Y_ref = random_flows(space, rng, 4, grid=3)
    W = rng.normal(size=(3, 4))
    W[:, 0] = np.abs(W[:, 0]) + 0.1
    ties = rng.integers(-2, 3, size=(2, 4)).astype(float)
    ties[:, 0] = 3.0
    W = np.vstack([W * 10.0 ** magnitude, ties])
    exact = minimize_absolute_risk(W, Y_ref, space, method="milp")  # vs brute force: above
    assert exact.certified.all()
    norm = np.abs(W).sum(axis=1)  # compare risks per unit of weight: tolerances per row
    for method, scales in (("auto", SCALES), ("milp", SCALES[::4])):
        for scale in scales:
            res = minimize_absolute_risk(scale * W, Y_ref, space, method=method)
            assert res.certified.all(), (method, scale)
            assert space.contains(res.solution, atol=1e-7).all()
            np.testing.assert_allclose(absolute_risk(W, Y_ref, res.solution) / norm,
                                       exact.value / norm, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(res.value / (scale * norm), exact.value / norm,
                                       rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_regression_absolute_risk_at_tiny_and_huge_weights():
    # Before: at 1e-9 every row came back worse than the minimiser yet flagged certified; at
    # 1e12 "RuntimeError: the block LP of the absolute-loss inference failed".
    space = paper_network()
    X, Y = simulate_flows(125, random_state=0)
    W = ECRM(AbsoluteLoss(), space, gamma=0.03, alpha=1e-4).fit(X[:100], Y[:100]) \
        .conditional_weights(X[100:])
    for method in ("auto", "milp"):
        ref = minimize_absolute_risk(W, Y[:100], space, method=method)
        assert ref.certified.all()
        for scale in (1e-9, *SCALES):
            res = minimize_absolute_risk(scale * W, Y[:100], space, method=method)
            assert res.certified.all()
            np.testing.assert_allclose(res.solution, ref.solution, atol=1e-12)
            np.testing.assert_allclose(res.value, scale * ref.value, rtol=1e-9)


@pytest.mark.slow
def test_regression_ecrm_predict_far_from_training_without_intercept():
    # An RBF kernel without intercept gives weights ~1e-9 (sum |w|) far from the training set;
    # before, every absolute-loss prediction there was worse than some vertex or training flow.
    space = paper_network()
    X, Y = simulate_flows(100, random_state=0)
    far = X[60:] + 5.0
    candidates = np.vstack([space.vertices(), Y[:60]])
    for loss, risk in ((AbsoluteLoss(), absolute_risk), (SquaredLoss(), squared_risk)):
        est = ECRM(loss, space, gamma=0.05, alpha=1e-3, fit_intercept=False).fit(X[:60], Y[:60])
        W = est.conditional_weights(far)
        assert np.abs(W).sum(axis=1).max() < 1e-7
        W1 = W / np.abs(W).sum(axis=1, keepdims=True)
        got = risk(W1, Y[:60], est.predict(far))
        best = np.array([risk(np.repeat(w[None], len(candidates), 0), Y[:60], candidates).min()
                         for w in W1])
        assert np.all(got <= best + 1e-9), type(loss).__name__
        if isinstance(loss, AbsoluteLoss):
            exact = minimize_absolute_risk(W1, Y[:60], space, method="milp")
            np.testing.assert_allclose(got, exact.value, rtol=1e-9, atol=1e-12)


# -- square loss --------------------------------------------------------------------------
@pytest.mark.parametrize("make", NETWORKS)
@SETTINGS
@given(seed=st.integers(0, 10_000), m=st.integers(1, 5), shift=st.sampled_from([-2.0, 0.5]))
def test_squared_risk_against_brute_force(make, seed, m, shift):
    space = make()
    rng = np.random.default_rng(seed)
    Y_ref = random_flows(space, rng, m) + 0.0
    w = rng.normal(size=m) + shift / m
    res = minimize_squared_risk(w[None], Y_ref, space)
    assert res.certified[0]
    np.testing.assert_allclose(squared_risk(w[None], Y_ref, res.solution), res.value,
                               atol=1e-10)
    s = w.sum()
    if s > 1e-9:
        g = w @ Y_ref
        const = w @ np.sum(Y_ref**2, axis=1) - g @ g / s
        exact = s * brute_projection(space, g / s) + const
    else:
        exact = squared_risk(np.repeat(w[None], len(space.vertices()), 0), Y_ref,
                             space.vertices()).min()
    np.testing.assert_allclose(res.value[0], exact, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("make", NETWORKS)
@SETTINGS
@given(seed=st.integers(0, 10_000), magnitude=st.floats(-12, 12))
def test_squared_risk_is_invariant_to_the_scale_of_the_weights(make, seed, magnitude):
    space = make()
    rng = np.random.default_rng(seed)
    Y_ref = random_flows(space, rng, 4)
    W = np.vstack([rng.normal(size=(3, 4)) + 0.3, rng.normal(size=(3, 4)) - 0.3])
    W *= 10.0 ** magnitude
    base = minimize_squared_risk(W, Y_ref, space)
    # The projection's certificate (tol = 1e-9) bounds the duality gap of the 1-strongly
    # convex ||y - z||^2 / 2 by tol * scale^2, so each certified solution is within
    # sqrt(2 tol) * scale of the exact projection: two of them within twice that.
    s = W.sum(axis=1, keepdims=True)
    Z = (W @ Y_ref) / np.where(s > 0, s, 1.0)
    scale = max(1.0, float(np.abs(Z).max()), float(np.abs(space.b_eq).max()))
    for scale_w in SCALES:
        res = minimize_squared_risk(scale_w * W, Y_ref, space)
        assert res.certified.all()
        np.testing.assert_allclose(res.solution, base.solution,
                                   atol=2 * np.sqrt(2 * 1e-9) * scale)
        np.testing.assert_allclose(res.value, scale_w * base.value, rtol=1e-8,
                                   atol=1e-12 * scale_w * float(np.abs(W).sum(axis=1).max()))


@pytest.mark.slow
def test_losses_name_their_minimiser_as_a_callable():
    space = paper_network()
    rng = np.random.default_rng(3)
    Y_ref = random_flows(space, rng, 12, grid=3)
    W = rng.normal(size=(6, 12)) + 0.05
    res = space.solve_risk(W, Y_ref, AbsoluteLoss(method="milp"))
    direct = minimize_absolute_risk(W, Y_ref, space, method="milp")
    np.testing.assert_array_equal(res.solution, direct.solution)
    assert res.info["method"] == "milp" and list(res.method) == ["milp"] * 6
    np.testing.assert_array_equal(AbsoluteLoss("milp").minimize_risk(W, Y_ref, space),
                                  direct.solution)
    auto = space.solve_risk(W, Y_ref, AbsoluteLoss())
    assert set(auto.method) <= {"local", "milp"} and auto.info["method"] == "auto"
    assert SquaredLoss().risk_minimizer() is minimize_squared_risk
    np.testing.assert_array_equal(SquaredLoss().minimize_risk(W, Y_ref, space),
                                  minimize_squared_risk(W, Y_ref, space).solution)
    with pytest.raises(ValueError, match=r"method must be one of \('auto', 'local', 'milp', "
                       r"'subgradient'\) or a callable .* got 'fast'"):
        AbsoluteLoss(method="fast").check_space(space)
    with pytest.raises(TypeError, match="or a callable f.* got int"):
        AbsoluteLoss(method=3).check_space(space)
    with pytest.raises(ValueError, match="time_limit must be a real number in"):
        AbsoluteLoss(time_limit=0).check_space(space)


def test_a_user_callable_is_the_absolute_risk_minimiser():
    space = paper_network()
    rng = np.random.default_rng(4)
    Y_ref = random_flows(space, rng, 8, grid=3)
    W = rng.uniform(size=(3, 8))
    calls = []

    def first_reference(W, Y_ref, space, **options):
        calls.append(options)
        Y = np.repeat(Y_ref[:1], len(W), axis=0)
        value = absolute_risk(W, Y_ref, Y)
        n = len(W)
        return CertifiedResult(Y, value, np.full(n, -np.inf), np.zeros(n, bool),
                               np.full(n, "first"))

    np.testing.assert_array_equal(AbsoluteLoss(first_reference).minimize_risk(W, Y_ref, space),
                                  np.repeat(Y_ref[:1], 3, axis=0))
    res = space.solve_risk(W, Y_ref, AbsoluteLoss(first_reference, time_limit=2.0))
    assert list(res.method) == ["first"] * 3
    assert calls == [{}, {"time_limit": 2.0}]
    # Through the estimator too: predictions are the callable's.
    X, Y = simulate_flows(40, random_state=0)
    est = ECRM(AbsoluteLoss(first_reference), space, gamma=0.05, alpha=1e-3).fit(X[:30], Y[:30])
    np.testing.assert_array_equal(est.predict(X[30:]), np.repeat(Y[:1], 10, axis=0))


def test_a_model_with_a_user_callable_is_refused_by_save(tmp_path):
    from ecrm import save
    from ecrm.model_files.io import ModelFileError

    def nearest(W, Y_ref, space, **options):  # pragma: no cover - never called
        raise AssertionError

    X, Y = simulate_flows(30, random_state=0)
    est = ECRM(AbsoluteLoss(nearest), paper_network(), gamma=0.05).fit(X, Y)
    with pytest.raises(ModelFileError, match=r"AbsoluteLoss method is a function \(nearest\)"):
        save(est, tmp_path / "m.ecrm")
    assert not (tmp_path / "m.ecrm").exists()


def test_losses_evaluate_their_definition():
    np.testing.assert_allclose(AbsoluteLoss()([[0, 1.5], [1, 1]], [[1, 1], [1, 1]]), [1.5, 0])
    np.testing.assert_allclose(SquaredLoss()([[0, 1.5]], [[1, 1]]), [1.25])
    with pytest.raises(ValueError, match="same shape"):
        SquaredLoss()([[0, 1]], [[0, 1, 2]])


# -- ECRM, simulator, baselines --------------------------------------------------------------
def test_ecrm_with_flow_losses_predicts_flows():
    X, Y = simulate_flows(120, random_state=0)
    space = paper_network()
    for loss in (AbsoluteLoss(), SquaredLoss()):
        est = ECRM(loss, space, gamma=0.05, alpha=1e-3).fit(X[:80], Y[:80])
        P = est.predict(X[80:])
        assert space.contains(P, atol=1e-7).all()
        W = est.conditional_weights(X[80:])
        risk = est.conditional_risk(X[80:], P)
        ref = absolute_risk if isinstance(loss, AbsoluteLoss) else squared_risk
        np.testing.assert_allclose(risk, ref(W, Y[:80], P), rtol=1e-9, atol=1e-10)
    bad = Y[:80].copy()
    bad[5, 3] += 0.2
    with pytest.raises(ValueError, match="row 5 violates flow conservation"):
        ECRM(AbsoluteLoss(), space).fit(X[:80], bad)


def test_simulator_and_exact_conditional_distribution():
    X, Y, model = simulate_flows(400, random_state=3, return_model=True)
    assert X.shape == (400, 20) and Y.shape == (400, 10)
    assert paper_network().contains(Y).all()
    x = np.full(20, 0.75)
    outcomes, prob = model.conditional_distribution(x)
    assert len(outcomes) == 165  # C(3 + 8, 8) multinomial outcomes for 3 travellers
    np.testing.assert_allclose(prob.sum(), 1.0)
    np.testing.assert_allclose(prob @ outcomes, model.mean(x[None])[0], atol=1e-12)
    # The loss matters: the absolute-loss Bayes prediction is not the mean, and beats it.
    b_abs, y_abs = model.bayes(x, "absolute")
    b_sq, y_sq = model.bayes(x, "square")
    assert model.conditional_risk(x, y_sq[None], "absolute")[0] > b_abs * 1.05
    assert model.conditional_risk(x, y_abs[None], "square")[0] > b_sq
    # Bayes risk: no vertex or sampled flow does better (exactness of the LP).
    cand = np.vstack([paper_network().vertices(), Y])
    assert model.conditional_risk(x, cand, "absolute").min() >= b_abs - 1e-9
    # Monte Carlo agrees with the exact distribution.
    Ys = model.sample(np.repeat(x[None], 4000, 0), np.random.default_rng(0))
    np.testing.assert_allclose(Ys.mean(0), prob @ outcomes, atol=0.03)


def test_baselines():
    X, Y = simulate_flows(150, random_state=1)
    space = paper_network()
    knn = KNNFlowRegressor(AbsoluteLoss(), space, n_neighbors=1).fit(X[:100], Y[:100])
    idx = knn.neighbors(X[100:])[:, 0]
    np.testing.assert_allclose(knn.predict(X[100:]), Y[idx], atol=1e-9)
    knn_sq = KNNFlowRegressor(SquaredLoss(), space, n_neighbors=7).fit(X[:100], Y[:100])
    nb = knn_sq.neighbors(X[100:])
    np.testing.assert_allclose(knn_sq.predict(X[100:]), Y[nb].mean(axis=1), atol=1e-9)
    krr = KRRProjection(space, ridge=0.1, gamma=0.05).fit(X[:100], Y[:100])
    P = krr.predict(X[100:])
    assert space.contains(P, atol=1e-9).all()
    Z = krr.predict_unconstrained(X[100:])
    assert np.all(np.sum((P - Z) ** 2, 1) <= np.sum((Y[:1] - Z) ** 2, 1) + 1e-12)
    with pytest.raises(ValueError, match="n_neighbors"):
        KNNFlowRegressor(AbsoluteLoss(), space, n_neighbors=500).fit(X[:100], Y[:100])
    with pytest.raises(TypeError, match="FlowPolytope"):
        KRRProjection("network").fit(X, Y)
    with pytest.raises(ValueError, match="ridge must be a real number"):
        KRRProjection(space, ridge=-1.0).fit(X, Y)
    with pytest.raises(ValueError, match="same number of rows"):
        KNNFlowRegressor(AbsoluteLoss(), space).fit(X[:10], Y[:9])


def test_krr_projection_is_kernel_ridge_with_the_ridge_added_as_is():
    from scipy import linalg
    from sklearn.metrics.pairwise import rbf_kernel

    X, Y = simulate_flows(90, random_state=2)
    krr = KRRProjection(paper_network(), ridge=0.01, gamma=0.03).fit(X[:60], Y[:60])
    K = rbf_kernel(X[:60], X[:60], gamma=0.03) + 0.01 * np.eye(60)
    expected = rbf_kernel(X[60:], X[:60], gamma=0.03) @ linalg.solve(K, Y[:60])
    np.testing.assert_allclose(krr.predict_unconstrained(X[60:]), expected, rtol=1e-9,
                               atol=1e-12)


def test_flow_model_parameters():
    model = FlowModel(**DEFAULT_PARAMETERS)
    np.testing.assert_allclose(model.arc_costs(np.zeros((1, 20)))[0],
                               DEFAULT_PARAMETERS["intercepts"])
    with pytest.raises(ValueError, match="n_travellers must be an integer >= 1; got 0"):
        FlowModel(**{**DEFAULT_PARAMETERS, "n_travellers": 0})
    with pytest.raises(ValueError, match="n_features must be an integer >= 20"):
        FlowModel(**DEFAULT_PARAMETERS, n_features=5)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        simulate_flows(-1)


def test_bayes_risk_of_default_model_is_stable():
    model = FlowModel.default()
    b, _ = model.bayes(np.full(20, 0.75), "absolute")
    np.testing.assert_allclose(b, 1.6052310729683736, rtol=1e-8)


# -- experiment -----------------------------------------------------------------------------
@pytest.mark.slow
def test_reproduce_flow_smoke(tmp_path, capsys, monkeypatch):
    import argparse

    from ecrm.experiments import flow

    parser = argparse.ArgumentParser()
    flow.add_parser(parser.add_subparsers())
    out = tmp_path / "rows.json"
    args = parser.parse_args(["flow", "--trials", "2", "--n-train", "50", "--n-test", "50",
                              "--n-val", "40", "--json", str(out), "--plot", str(tmp_path),
                              "--figure-log-sizes", "1.7", "2", "--figure-repeats", "2",
                              "--jobs", "1", "--quiet"])
    monkeypatch.setattr(flow, "GRIDS", {"gamma": (0.03,), "ecrm_alpha": (1e-3,),
                                        "krr_ridge": (0.1,), "k": (5,),
                                        "forest_min_samples_leaf": (5,)})
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "paper mean" in text and "Bayes risk" in text
    rows = json.loads(out.read_text())
    assert {(r["method"], r["loss"]) for r in rows} == {
        (m, loss) for m in ("ECRM", "kNN", "KRR", "ECRM-forest")
        for loss in ("absolute", "square")}
    assert all(set(r) == {"method", "loss", "mean", "std", "trials", "n_train"} for r in rows)
    assert all(r["trials"] == 2 and r["n_train"] == 50 for r in rows)
    assert (tmp_path / "flow_conditional_risk.png").stat().st_size > 1000


@pytest.mark.parametrize("argv, message", named([
    (["--trials", "0"], "--trials must be an integer >= 1; got 0"),
    (["--jobs", "0"], r"--jobs must be an integer from 1 to \d+ \(4 per CPU, \d+ CPUs here\); "
                      "got '0'"),
    (["--n-train", "3"], "--n-train must be an integer >= 5; got 3"),
    (["--n-test", "2.5"], "--n-test must be an integer >= 1; got '2.5'"),
    (["--n-val", "-4"], "--n-val must be an integer >= 1; got -4"),
    (["--seed", "-1"], "--seed must be an integer >= 0; got -1"),
    (["--figure-repeats", "0"], "--figure-repeats must be an integer >= 1"),
    (["--figure-log-sizes", "2", "nan"], r"--figure-log-sizes must be a real number in \[0.7, 5\]"),
]))
def test_reproduce_flow_rejects_bad_arguments_at_parse_time(argv, message, capsys):
    from ecrm.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "flow", *argv])
    assert exc.value.code == 2
    assert f"argument {argv[0]}: " in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["reproduce", "flow", *argv])
    import re

    assert re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize("where", ["missing/rows.json", "."],
                         ids=["in-a-missing-directory", "a-directory"])
def test_reproduce_flow_checks_its_json_path_before_any_work(ecrm_cmd, tmp_path, where):
    proc = ecrm_cmd("reproduce", "flow", "--trials", "1", "--n-train", "5", "--n-test", "5",
                    "--n-val", "5", "--jobs", "1", "--quiet", "--json", where, cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert f"argument --json: --json must be a file path in an existing directory; got " \
           f"'{where}'" in err
    assert not proc.stdout  # no table: nothing was run
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_reproduce_flow_checks_its_plot_directory_before_any_work(ecrm_cmd, tmp_path):
    (tmp_path / "afile").write_text("kept\n")
    proc = ecrm_cmd("reproduce", "flow", "--trials", "1", "--n-train", "5", "--n-test", "5",
                    "--n-val", "5", "--jobs", "1", "--quiet", "--plot", "afile", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err and not proc.stdout
    assert err.strip() == "ecrm: error: --plot 'afile' is a file; expected a directory"
    assert (tmp_path / "afile").read_text() == "kept\n"


def test_reproduce_flow_checks_that_its_json_directory_is_writable(ecrm_cmd, tmp_path):
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs a directory that refuses new files")  # root writes anywhere else
    proc = ecrm_cmd("reproduce", "flow", "--trials", "1", "--n-train", "5", "--n-test", "5",
                    "--n-val", "5", "--jobs", "1", "--quiet", "--json", "/proc/rows.json",
                    cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err and not proc.stdout
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("ecrm: error: --json '/proc/rows.json': cannot create a file in "
                          "'/proc'")


@pytest.mark.slow
def test_demo_returns_a_table():
    from ecrm.experiments.flow import demo

    text = demo(0)
    for name in ("ECRM", "kNN", "KRR", "absolute", "square"):
        assert name in text


# -- invariance under rescaling the outputs -------------------------------
# Supplies, capacities and training flows multiplied by s: every answer is multiplied by s.
# At s = 1e-9 the absolute-loss answers were wrong yet certified, contains() accepted the zero
# flow at supply 1e-8, and at 1e9 project() said "the flow polytope is empty".


@pytest.mark.parametrize("make", NETWORKS)
@pytest.mark.parametrize("s", SCALES)
def test_membership_is_relative_to_the_scale_of_the_outputs(make, s):
    space = make()
    scaled = space.rescaled(s)
    assert scaled.data_scale == pytest.approx(s * space.data_scale, rel=1e-15)
    V = space.vertices()
    # vertices() rounds to 12 decimals of the unit-scaled data (scale within sqrt(2) of it)
    np.testing.assert_allclose(scaled.vertices() / s, V, rtol=0,
                               atol=1e-12 * np.sqrt(2) * space.data_scale)
    assert scaled.contains(s * V).all()
    assert not scaled.contains(np.zeros((1, space.n_arcs)))[0]
    # Off by 1e-6 of the supply on one node: rejected at the default 1e-8, at every scale.
    off = s * V[:1].copy()
    off[0, 0] += 1e-6 * s
    assert not scaled.contains(off)[0]
    with pytest.raises(ValueError, match="row 0 violates flow conservation"):
        scaled.validate(off)
    # Off by 1e-12 of it: accepted (round-off of the data's own magnitude).
    off = s * V[:1].copy()
    off[0, 0] *= 1 + 1e-12
    assert scaled.contains(off)[0]


@pytest.mark.parametrize("s", SCALES, ids="s={}".format)
def test_infeasibility_is_detected_at_every_scale(s):
    import re

    with pytest.raises(InfeasibleNetworkError, match=re.escape(
            f"at most {0.5 * s:g} of the total supply {s:g}")):
        FlowPolytope([("s", "a"), ("a", "t")], {"s": s, "t": -s}, capacity=[s, 0.5 * s])
    with pytest.raises(ValueError, match="supplies must sum to zero"):
        FlowPolytope(DIAMOND, {"s": s, "t": -s * (1 - 1e-6)})


@pytest.mark.parametrize("make", NETWORKS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_linear_oracle_and_projection_scale_with_the_outputs(make, seed):
    space = make()
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(3, space.n_arcs))
    Y = space.argmin(C)
    z = rng.normal(size=space.n_arcs)
    exact = brute_projection(space, z)
    base = space.project(z)
    # The certificate (tol = 1e-9 relative, scale = max(1, |z|, |b|) at unit data) bounds the
    # distance to the exact projection by sqrt(2 tol) * scale: two answers within twice that.
    scale = max(1.0, float(np.abs(z).max()), float(np.abs(space.b_eq).max()))
    for s in SCALES:
        scaled = space.rescaled(s)
        res = scaled.minimize_linear(C)
        np.testing.assert_allclose(res.solution / s, Y, atol=1e-9)
        assert scaled.contains(res.solution).all()
        proj = scaled.project(s * z)
        assert proj.certified[0], s
        assert scaled.contains(proj.solution).all()
        np.testing.assert_allclose(proj.solution / s, base.solution,
                                   atol=2 * np.sqrt(2 * 1e-9) * scale)
        np.testing.assert_allclose(proj.value[0] / s**2, exact, rtol=1e-8, atol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("make", NETWORKS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), shift=st.sampled_from([-2.0, 0.5]))
def test_risk_minimisers_scale_with_the_outputs(make, seed, shift):
    space = make()
    rng = np.random.default_rng(seed)
    Y_ref = random_flows(space, rng, 3, grid=3)
    w = rng.normal(size=3)
    w[0] = abs(w[0]) + 0.1
    exact_abs = brute_absolute(space, w, Y_ref)
    wq = rng.normal(size=3) + shift / 3
    base_sq = minimize_squared_risk(wq[None], Y_ref, space)
    for s in SCALES:
        scaled = space.rescaled(s)
        for method in ("auto", "milp"):
            res = minimize_absolute_risk(w[None], s * Y_ref, scaled, method=method)
            assert res.certified[0], (s, method)
            assert scaled.contains(res.solution, atol=1e-7).all()
            # The certificate's guarantee (rtol 1e-9 of sum |w_i| |y_i|_1) and the brute
            # force's LP tolerance, as in test_absolute_risk_methods_against_brute_force.
            np.testing.assert_allclose(res.value[0] / s, exact_abs, rtol=1e-7, atol=1e-8)
            np.testing.assert_allclose(absolute_risk(w[None], Y_ref, res.solution / s),
                                       res.value / s, rtol=1e-12, atol=1e-12)
        sq = minimize_squared_risk(wq[None], s * Y_ref, scaled)
        assert sq.certified[0], s
        assert scaled.contains(sq.solution, atol=1e-7).all()
        np.testing.assert_allclose(sq.value / s**2, base_sq.value, rtol=1e-8, atol=1e-9)


@pytest.mark.slow
def test_regression_absolute_and_squared_risk_at_tiny_and_huge_outputs():
    # ECRM weights on the paper's network, flows of 1 unit scaled by s: the same answers times
    # s. Before: at s <= 1e-9 every absolute-loss row was wrong and certified.
    space = paper_network()
    X, Y = simulate_flows(125, random_state=0)
    W = ECRM(AbsoluteLoss(), space, gamma=0.03, alpha=1e-4).fit(X[:100], Y[:100]) \
        .conditional_weights(X[100:])
    ref_abs = minimize_absolute_risk(W, Y[:100], space)
    ref_sq = minimize_squared_risk(W, Y[:100], space)
    assert ref_abs.certified.all() and ref_sq.certified.all()
    for s in (1e-9, 1e9, *SCALES):
        scaled = space.rescaled(s)
        res = minimize_absolute_risk(W, s * Y[:100], scaled)
        assert res.certified.all(), s
        np.testing.assert_allclose(res.solution / s, ref_abs.solution, atol=1e-12)
        np.testing.assert_allclose(res.value / s, ref_abs.value, rtol=1e-9)
        sq = minimize_squared_risk(W, s * Y[:100], scaled)
        assert sq.certified.all(), s
        # Within the projection's guarantee, sqrt(2 tol) of the unit-scaled data, twice.
        np.testing.assert_allclose(sq.solution / s, ref_sq.solution, atol=2 * np.sqrt(2e-9))


def test_squared_loss_ecrm_predictions_scale_with_the_outputs():
    # Before: at supplies of 1e9 predict raised "the flow polytope is empty".
    space = paper_network()
    X, Y = simulate_flows(100, random_state=1)
    est = ECRM(SquaredLoss(), space, gamma=0.05, alpha=1e-3).fit(X[:70], Y[:70])
    P = est.predict(X[70:])
    W = est.conditional_weights(X[70:])
    for s in (1e9, *SCALES):
        scaled = space.rescaled(s)
        est_s = ECRM(SquaredLoss(), scaled, gamma=0.05, alpha=1e-3).fit(X[:70], s * Y[:70])
        P_s = est_s.predict(X[70:])
        assert scaled.contains(P_s).all()
        assert scaled.solve_risk(est_s.conditional_weights(X[70:]), s * Y[:70],
                                 SquaredLoss()).certified.all(), s
        # The weights do not depend on the outputs; the projections agree within the
        # certificate's guarantee (sqrt(2 tol) of the unit-scaled data, twice).
        np.testing.assert_allclose(est_s.conditional_weights(X[70:]), W, rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(P_s / s, P, atol=2 * np.sqrt(2e-9))


def test_a_big_m_capacity_does_not_loosen_membership():
    # Capacities of 1e12 standing for "no limit" leave the tolerances at the supplies' scale.
    space = FlowPolytope(DIAMOND, {"s": 1, "t": -1}, capacity=[1e12] * 5)
    assert space.data_scale == 1.0
    y = diamond().vertices()[:1].copy()
    assert space.contains(y)[0]
    y[0, 0] += 1e-6
    assert not space.contains(y)[0]
    circulation = FlowPolytope([("a", "b"), ("b", "a")], {"a": 0}, capacity=[1e-9, 2e-9])
    assert circulation.data_scale == 2e-9
    assert circulation.contains([[1e-9, 1e-9]])[0]
    assert not circulation.contains([[1e-9, 0.9e-9]])[0]
