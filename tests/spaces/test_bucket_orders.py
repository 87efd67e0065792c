"""BucketOrderSpace (rankings with ties), its exact oracle and its losses, against brute force
over the enumerated bucket orders and against the definitions."""

import contextlib
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecrm import ECRMCV
from ecrm.losses import KendallTiesLoss, TauXLoss, tau_x
from ecrm.model_files.io import load, save
from ecrm.selection import LeaveOneOutSearch
from ecrm.spaces import BucketOrderSpace, _bucket_solvers, bucket_orders
from ecrm.spaces.bucket_orders import (
    bucket_order_to_pairs,
    n_bucket_orders,
    optimal_bucket_order,
    pair_index,
    pairs_to_bucket_order,
)
from ecrm.testing import check_linear_form, check_oracle

try:
    import numba  # noqa: F401
    ENGINES = ["numpy", "numba"]
except ImportError:  # the 'fast' extra is optional: the NumPy programme is tested alone
    ENGINES = ["numpy"]


@contextlib.contextmanager
def _engine(name):
    """The dynamic programme's path: ``"numpy"`` or ``"numba"``."""
    _bucket_solvers._ENGINE = name
    try:
        yield
    finally:
        _bucket_solvers._ENGINE = "auto"


def _brute_positions(k):
    """Every bucket order as dense positions, by filtering all maps to 1..k (independent of
    the space's enumeration)."""
    P = np.array(list(itertools.product(range(1, k + 1), repeat=k)))
    dense = np.array([set(p) == set(range(1, max(p) + 1)) for p in P])
    return P[dense]


def _costs(rng, kind, n, k):
    d = k * (k - 1)
    if kind == "normal":
        return rng.normal(size=(n, d))
    if kind == "magnitudes":  # 1e-12 .. 1e12 within a row
        return rng.normal(size=(n, d)) * 10.0 ** rng.integers(-12, 13, size=(n, d))
    if kind == "ties":
        return rng.integers(-2, 3, size=(n, d)).astype(float)
    if kind == "near-ties":
        return 1.0 + rng.integers(-1, 2, size=(n, d)) * 1e-13
    if kind in ("positive", "negative"):
        return (1 if kind == "positive" else -1) * np.abs(rng.normal(size=(n, d)))
    # ECRM's costs: signed weighted sums of psi of a few random (incomplete) bucket orders
    P = rng.integers(0 if kind == "incomplete" else 1, 4, size=(5, k))
    return rng.normal(0.2, 1.0, size=(n, 5)) @ TauXLoss().psi(bucket_order_to_pairs(P))


KINDS = ["normal", "magnitudes", "ties", "near-ties", "positive", "negative", "ecrm",
         "incomplete"]


@st.composite
def cost_rows(draw, k_max=6):
    k = draw(st.integers(2, k_max))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _costs(rng, draw(st.sampled_from(KINDS)), draw(st.integers(1, 5)), k)


# -- representation -------------------------------------------------------------------------
def test_pair_index_is_row_major_over_distinct_pairs():
    a, b = pair_index(4)
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [
        (x, y) for x in range(4) for y in range(4) if x != y]
    t = np.arange(12)
    np.testing.assert_array_equal(a * 3 + b - (b > a), t)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6], ids="k={}".format)
def test_enumeration_is_every_bucket_order_once(k):
    brute = _brute_positions(k)
    assert len(brute) == n_bucket_orders(k)
    if k == 1:
        return
    space = BucketOrderSpace(k)
    E = space.enumerate()
    assert E.shape == (n_bucket_orders(k), k * (k - 1)) and space.contains(E).all()
    assert {tuple(r) for r in E} == {tuple(r) for r in bucket_order_to_pairs(brute)}
    np.testing.assert_array_equal(pairs_to_bucket_order(E), space.to_positions(E))


@pytest.mark.parametrize("k", [2, 3, 4], ids="k={}".format)
def test_milp_constraints_cut_out_exactly_the_bucket_orders(k):
    # every 0/1 vector of the right width: feasible for asymmetry and negative transitivity
    # iff it is a bucket order
    d = k * (k - 1)
    V = ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(float)
    con = _bucket_solvers._constraints(k)
    feasible = np.all(con.A @ V.T <= con.ub[:, None], axis=0)
    space = BucketOrderSpace(k)
    np.testing.assert_array_equal(feasible, space.contains(V))
    assert feasible.sum() == n_bucket_orders(k)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_positions_round_trip(k, n, seed):
    rng = np.random.default_rng(seed)
    P = rng.integers(0, 5, size=(n, k)) * rng.integers(1, 3, size=(n, k))  # gaps, 0 = missing
    U = bucket_order_to_pairs(P)
    back = pairs_to_bucket_order(U)
    # the same order and the same missing labels, numbered densely from 1 (a label ranked
    # alone has no pair: it reads back as missing)
    alone = (P > 0).sum(axis=1, keepdims=True) < 2
    np.testing.assert_array_equal(back == 0, (P == 0) | alone)
    np.testing.assert_array_equal(bucket_order_to_pairs(back), U)
    for row in back:
        used = np.unique(row[row > 0])
        np.testing.assert_array_equal(used, np.arange(1, len(used) + 1))
    space = BucketOrderSpace(k)
    np.testing.assert_array_equal(space.validate(U), U)  # incomplete rows are valid outputs
    np.testing.assert_array_equal(space.contains(U), (P > 0).all(axis=1))


def test_conversion_of_named_example():
    U = bucket_order_to_pairs([[2, 1, 2, 0]])  # b > a = c, d missing
    space = BucketOrderSpace(4, labels=["a", "b", "c", "d"])
    a, b = pair_index(4)
    ahead = {(int(x), int(y)) for x, y, u in zip(a, b, U[0], strict=True) if u == 1}
    assert ahead == {(1, 0), (1, 2)}
    with_d = (a == 3) | (b == 3)
    assert np.isnan(U[0, with_d]).all() and not np.isnan(U[0, ~with_d]).any()
    np.testing.assert_array_equal(space.to_positions(U), [[2, 1, 2, 0]])


# -- the oracle -----------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["auto", "dp"])
@settings(max_examples=80, deadline=None)
@given(C=cost_rows())
def test_oracle_matches_brute_force(C, method, engine):
    k = BucketOrderSpace.from_n_outputs(C.shape[1]).n_labels
    space = BucketOrderSpace(k)
    with _engine(engine):
        check_oracle(space, C, oracle=lambda C: space.argmin(C, method=method))
        res = space.solve(C, method=method)
    assert res.certified.all()
    np.testing.assert_array_equal(res.value, res.bound)
    np.testing.assert_allclose(res.value, np.einsum("ij,ij->i", res.solution, C), rtol=0,
                               atol=1e-12 * np.abs(C).sum())


def test_numpy_programme_in_small_blocks_matches_brute_force(monkeypatch):
    # blocks of a few subsets and one row at a time: every chunking path of the NumPy DP
    monkeypatch.setattr(_bucket_solvers, "_CHUNK", 64)
    space = BucketOrderSpace(6)
    C = np.concatenate([_costs(np.random.default_rng(1), kind, 3, 6) for kind in KINDS])
    with _engine("numpy"):
        check_oracle(space, C, oracle=lambda C: space.argmin(C, method="dp"))
    assert space.argmin(np.zeros((0, 30))).shape == (0, 30)
    assert optimal_bucket_order(np.zeros((0, 30)), method="milp").solution.shape == (0, 6)


def test_validation_in_blocks_names_the_row(monkeypatch):
    monkeypatch.setattr(bucket_orders, "_CHUNK", 20)  # two rows of 3 labels per block
    space = BucketOrderSpace(3)
    P = np.random.default_rng(0).integers(0, 3, size=(7, 3))
    U = space.from_positions(P)
    np.testing.assert_array_equal(space.from_positions(space.to_positions(U)), U)
    U[5, 0] = 0.5
    with pytest.raises(ValueError, match="row 5 of the pair vectors"):
        space.validate(U)
    np.testing.assert_array_equal(space.contains(U), (P > 0).all(axis=1) & (np.arange(7) != 5))


@settings(max_examples=30, deadline=None)
@given(C=cost_rows(k_max=5))
def test_milp_matches_brute_force(C):
    k = BucketOrderSpace.from_n_outputs(C.shape[1]).n_labels
    space = BucketOrderSpace(k)
    check_oracle(space, C, oracle=lambda C: space.argmin(C, method="milp"), rtol=1e-9)
    res = space.solve(C, method="milp")
    assert res.certified.all() and (res.bound <= res.value + 1e-12 * np.abs(C).sum()).all()


def _milp_agrees_with_dp(k, rng):
    C = np.concatenate([_costs(rng, kind, 2, k) for kind in ("normal", "ecrm", "ties")])
    dp = optimal_bucket_order(C, method="dp")
    milp = optimal_bucket_order(C, method="milp")
    auto = optimal_bucket_order(C, max_dp_size=3)  # blocks above 3 labels: the MILP
    tol = 1e-9 * np.abs(C).sum(axis=1)
    np.testing.assert_array_less(np.abs(milp.value - dp.value), tol)
    np.testing.assert_array_less(np.abs(auto.value - dp.value), tol)
    assert milp.certified.all() and (milp.bound <= milp.value).all()
    np.testing.assert_array_less(milp.value - milp.bound, tol)  # the gap is HiGHS's, tiny
    np.testing.assert_array_less(dp.value - milp.bound, tol)  # the bound bounds the optimum


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("k", [7, 8], ids="k={}".format)
def test_milp_equals_dp(k, engine):
    with _engine(engine):
        _milp_agrees_with_dp(k, np.random.default_rng(k))


@pytest.mark.slow
@pytest.mark.parametrize("k", [9, 10, 11, 12], ids="k={}".format)
def test_milp_equals_dp_larger(k):
    _milp_agrees_with_dp(k, np.random.default_rng(k))


def test_numpy_and_compiled_programmes_agree():
    if "numba" not in ENGINES:
        pytest.skip("numba (the 'fast' extra) is not installed")
    rng = np.random.default_rng(3)
    B = rng.normal(size=(6, 9, 9))
    B[:, np.arange(9), np.arange(9)] = 0
    a, b = pair_index(9)
    values = []
    for engine in ENGINES:
        with _engine(engine):
            P = _bucket_solvers.dp(B)
        values.append(np.einsum("ij,ij->i", bucket_order_to_pairs(P), B[:, a, b]))
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12)


def _compiled():
    if "numba" not in ENGINES:
        pytest.skip("numba (the 'fast' extra) is not installed")
    from ecrm.spaces import _bucket_compiled

    return _bucket_compiled


def _matrices(C):
    k = bucket_orders._width_labels(C.shape[1])
    B = np.zeros((len(C), k, k))
    B[:, pair_index(k)[0], pair_index(k)[1]] = C
    return B


@settings(max_examples=80, deadline=None)
@given(C=cost_rows(k_max=9))
def test_pruned_programme_gives_the_full_programmes_answer(C):
    # the bound only skips top parts of no optimal order: the same positions, ties included
    compiled = _compiled()
    B = _matrices(C)
    full, n_full = compiled.bucket_dp(B, False)
    pruned, n_pruned = compiled.bucket_dp(B, True)
    np.testing.assert_array_equal(pruned, full)
    assert (n_full == 2 ** B.shape[1] - 1).all() and (n_pruned <= n_full).all()
    with _engine("numpy"):  # sums in another order: ties may go another way, not the cost
        reference = _bucket_solvers.dp(B)
    a, b = pair_index(B.shape[1])
    cost = [np.einsum("ij,ij->i", bucket_order_to_pairs(P), B[:, a, b])
            for P in (pruned, reference)]
    np.testing.assert_allclose(cost[0], cost[1], rtol=1e-12, atol=1e-12 * np.abs(B).max())


@pytest.mark.parametrize("k", [6, 10], ids="k={}".format)
def test_pruned_programme_skips_top_parts_of_clear_costs(k):
    # costs of a clear order with ties (a noisy tau_x risk): the bound rules out most sets
    compiled = _compiled()
    rng = np.random.default_rng(k)
    truth = rng.integers(1, 4, size=(3, k))
    C = TauXLoss().psi(bucket_order_to_pairs(truth)) + 0.05 * rng.normal(size=(3, k * (k - 1)))
    pruned, expanded = compiled.bucket_dp(_matrices(C), True)
    full, _ = compiled.bucket_dp(_matrices(C), False)
    np.testing.assert_array_equal(pruned, full)
    np.testing.assert_array_equal(bucket_order_to_pairs(pruned), bucket_order_to_pairs(truth))
    assert (expanded < 2**k // 4).all(), expanded


@settings(max_examples=40, deadline=None)
@given(C=cost_rows(), s=st.sampled_from([3.0, 2.0**-40, 2.0**40, 1e-12, 1e12]))
def test_oracle_scale_invariant(C, s):
    base = optimal_bucket_order(C)
    scaled = optimal_bucket_order(s * C)
    if np.log2(s) == round(np.log2(s)):  # exact scalings: the very same answer
        np.testing.assert_array_equal(scaled.solution, base.solution)
    np.testing.assert_allclose(scaled.value, s * base.value, rtol=1e-9,
                               atol=1e-12 * s * np.abs(C).sum())


def test_time_limited_milp_keeps_a_valid_bound():
    C = np.random.default_rng(0).normal(size=(1, 14 * 13))
    res = optimal_bucket_order(C, method="milp", time_limit=0.05)
    assert BucketOrderSpace(14).contains(bucket_order_to_pairs(res.solution)).all()
    assert res.bound[0] <= res.value[0] and (res.certified[0] or res.gap[0] > 0)


def test_consistent_costs_split_into_their_buckets():
    # the costs of one bucket order's psi: the decomposition splits them into its buckets
    target = np.array([[3, 1, 2, 1, 4, 2, 5, 3, 6, 6, 7, 1]])
    C = TauXLoss().psi(bucket_order_to_pairs(target))
    for max_dp_size, method in ((16, "dp"), (2, "milp")):  # the bucket of 3: DP or MILP
        res = optimal_bucket_order(C, max_dp_size=max_dp_size)
        np.testing.assert_array_equal(res.solution, target)
        assert res.info["largest_block"][0] == 3 and res.method[0] == method


# -- the losses ----------------------------------------------------------------------------
def _score_matrix(P):
    """Emond and Mason's scores: 1 when ahead of or tied with, -1 when behind, 0 diagonal."""
    S = np.where(P[:, :, None] <= P[:, None, :], 1.0, -1.0)
    S[:, np.arange(P.shape[1]), np.arange(P.shape[1])] = 0.0
    return S


@pytest.mark.parametrize("k", [2, 3, 4, 5], ids="k={}".format)
def test_tau_x_loss_linear_form_and_definition(k):
    space, loss = BucketOrderSpace(k), TauXLoss(k)
    check_linear_form(loss, space)
    # against Emond and Mason's tau_x on every pair of orders (a random sample at k = 5)
    P = _brute_positions(k)
    rng = np.random.default_rng(k)
    i, j = rng.integers(0, len(P), 2000), rng.integers(0, len(P), 2000)
    A, B = _score_matrix(P[i]), _score_matrix(P[j])
    tau = np.einsum("nab,nab->n", A, B) / (k * (k - 1))
    L = loss(bucket_order_to_pairs(P[i]), bucket_order_to_pairs(P[j]))
    np.testing.assert_allclose(tau, 1 - 2 * L / (k * (k - 1)), atol=1e-12)
    assert tau_x(P[j], P[i]) == pytest.approx(tau.mean())


@pytest.mark.parametrize("penalty", [0.0, 0.3, 0.5, 1.0], ids="penalty={}".format)
@pytest.mark.parametrize("k", [2, 3, 4], ids="k={}".format)
def test_kendall_ties_loss_linear_form(k, penalty):
    space = BucketOrderSpace(k)
    loss = KendallTiesLoss(k, penalty=penalty)
    check_linear_form(loss, space)
    E = space.enumerate()
    rows = np.repeat(E, len(E), axis=0), np.tile(E, (len(E), 1))
    if penalty == 0.5:
        np.testing.assert_allclose(loss(*rows), TauXLoss()(*rows) / 2)
    if penalty == 1.0:  # ties cost as much as errors: the number of pairs not agreeing
        agree = TauXLoss()(*rows) == 0
        assert np.all((loss(*rows) == 0) == agree)


def test_losses_on_a_worked_example():
    s = BucketOrderSpace(3)
    pred, ref = s.from_positions([[1, 1, 2]]), s.from_positions([[2, 1, 1]])
    # (0,1): tie vs strict; (0,2): opposite; (1,2): strict vs tie
    assert TauXLoss()(pred, ref)[0] == 4
    assert KendallTiesLoss(penalty=0.25)(pred, ref)[0] == 1.5
    assert tau_x([[2, 1, 1]], [[1, 1, 2]]) == pytest.approx(1 - 8 / 6)


@pytest.mark.parametrize("loss", [TauXLoss(), KendallTiesLoss(penalty=0.2)],
                         ids=["tau-x", "kendall-ties"])
def test_incomplete_references_count_observed_pairs_only(loss):
    rng = np.random.default_rng(0)
    k = 5
    P_ref = rng.integers(0, 4, size=(40, k))
    P_pred = _brute_positions(k)[rng.integers(0, n_bucket_orders(k), 40)]
    U_ref, U_pred = bucket_order_to_pairs(P_ref), bucket_order_to_pairs(P_pred)
    check_linear_form(loss, U_pred, U_ref)
    got = loss(U_pred, U_ref)
    for i in range(40):  # the loss of the rankings restricted to the observed labels
        seen = P_ref[i] > 0
        if seen.sum() < 2:
            assert got[i] == 0
            continue
        sub_pred = bucket_order_to_pairs(P_pred[i:i + 1, seen])
        sub_ref = bucket_order_to_pairs(P_ref[i:i + 1, seen])
        assert got[i] == pytest.approx(type(loss)(**_params(loss))(sub_pred, sub_ref)[0])
        m = seen.sum()
        if isinstance(loss, TauXLoss):
            assert tau_x(P_ref[i:i + 1], P_pred[i:i + 1]) == pytest.approx(
                1 - 2 * got[i] / (m * (m - 1)))


def _params(loss):
    return {"penalty": loss.penalty} if isinstance(loss, KendallTiesLoss) else {}


def test_oracle_on_incomplete_training_costs_is_a_complete_order():
    space = BucketOrderSpace(4)
    U = bucket_order_to_pairs([[1, 2, 0, 0], [0, 1, 1, 2]])
    C = TauXLoss().psi(U).sum(axis=0, keepdims=True)
    Y = space.argmin(C)
    assert space.contains(Y).all()
    check_oracle(space, C)


# -- errors --------------------------------------------------------------------------------
def test_clear_errors():
    space = BucketOrderSpace(3, labels=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"shape \(n, 6\)"):
        space.argmin(np.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"shape \(n, 6\)"):
        space.validate(np.zeros((2, 9)))
    with pytest.raises(ValueError, match=r"row 1 .*\('a', 'b'\).*0.5"):
        space.validate([[0] * 6, [0.5, 0, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"\('a', 'b'\) and its reverse"):
        space.validate([[1, 0, 1, 0, 0, 0]])
    with pytest.raises(ValueError, match="transitivity"):
        space.validate([[1, 0, 0, 1, 1, 0]])  # a > b > c > a
    with pytest.raises(ValueError, match="neither label is missing"):
        space.validate([[np.nan, 0, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"row 0, label 1.*bucket number"):
        bucket_order_to_pairs([[1, -1, 2]])
    with pytest.raises(ValueError, match=r"row 0, label 2"):
        bucket_order_to_pairs([[1, 2, 1.5]])
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        space.from_positions([[1, 2]])
    with pytest.raises(ValueError, match="k\\(k-1\\)"):
        pairs_to_bucket_order(np.zeros((1, 5)))
    with pytest.raises(ValueError, match="n_labels"):
        BucketOrderSpace(1)
    with pytest.raises(ValueError, match="method"):
        optimal_bucket_order(np.zeros((1, 6)), method="greedy")
    with pytest.raises(ValueError, match=r"NaN or infinite values \(row 1\)"):
        optimal_bucket_order([[0.0] * 6, [np.nan] + [0.0] * 5])
    with pytest.raises(ValueError, match="3 labels"):
        TauXLoss(3).check_space(BucketOrderSpace(4))
    with pytest.raises(ValueError, match="width 12"):
        TauXLoss(3).psi(np.zeros((1, 12)))
    with pytest.raises(ValueError, match="incomplete"):
        TauXLoss().phi(bucket_order_to_pairs([[1, 0, 2]]))
    with pytest.raises(ValueError, match="positions_pred row 0, label 1"):
        tau_x([[1, 2, 3]], [[1, 0, 2]])
    with pytest.raises(ValueError, match="penalty"):
        KendallTiesLoss(penalty=1.5)
    assert not space.contains(np.zeros((1, 5))).any()


# -- end to end ----------------------------------------------------------------------------
def _ranked_data(k=4, m=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    scores = X @ rng.normal(size=(3, k))
    P = 1 + np.floor(scores - scores.min(axis=1, keepdims=True)).astype(int)  # ties
    return X, P


def test_ecrmcv_end_to_end_and_model_file(tmp_path):
    k = 4
    X, P = _ranked_data(k)
    space = BucketOrderSpace(k, labels=["w", "x", "y", "z"])
    est = ECRMCV(TauXLoss(k), space, alphas=np.logspace(-3, 0, 3),
                 search=LeaveOneOutSearch(kernel_grid={"kernel": ["rbf"], "gamma": [0.3]}))
    est.fit(X[:60], space.from_positions(P[:60]))
    Y = est.predict(X[60:])
    assert space.contains(Y).all()
    assert tau_x(P[60:], space.to_positions(Y)) > 0.5
    check_oracle(space, est.predict_costs(X[60:]), loss=TauXLoss(k))
    path = tmp_path / "bucket.ecrm"
    save(est, path)
    again = load(path)
    assert again.output_space == space and again.loss == TauXLoss(k)
    np.testing.assert_array_equal(again.predict(X[60:]), Y)


def test_ecrmcv_learns_from_incomplete_rankings():
    k = 4
    X, P = _ranked_data(k)
    P_train = P[:60].copy()
    P_train[::3, 0] = 0  # a third of the training rankings leave label 0 out
    P_train[1::3, 2] = 0
    space = BucketOrderSpace(k)
    est = ECRMCV(TauXLoss(k), space, alphas=np.logspace(-3, 0, 3),
                 search=LeaveOneOutSearch(kernel_grid={"kernel": ["rbf"], "gamma": [0.3]})).fit(
                     X[:60], bucket_order_to_pairs(P_train))
    Y = est.predict(X[60:])
    assert space.contains(Y).all()
    assert tau_x(P[60:], space.to_positions(Y)) > 0.5
    # the costs are the weighted sums of the observed pairs' psi only
    C = est.predict_costs(X[60:])
    assert np.isfinite(C).all()
    check_oracle(space, C, loss=TauXLoss(k))


def test_kendall_ties_loss_in_a_model_file(tmp_path):
    from ecrm import ECRM

    X, P = _ranked_data(3, 30)
    loss = KendallTiesLoss(3, penalty=0.3)
    est = ECRM(loss, BucketOrderSpace(3)).fit(X, bucket_order_to_pairs(P))
    save(est, tmp_path / "m.ecrm")
    again = load(tmp_path / "m.ecrm")
    assert again.loss == loss and again.loss.penalty == 0.3
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
