import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from ecrm.losses import HammingLoss
from ecrm.reporting.metrics import mean_loss, micro_auprc, pooled_average_precision


def test_micro_auprc_by_hand():
    Y = np.array([[1, 0], [0, 1]])
    S = np.array([[0.9, 0.1], [0.8, 0.2]])
    # Ranked pairs: 0.9 (pos), 0.8 (neg), 0.2 (pos), 0.1 (neg): AP = (1/1 + 2/3) / 2.
    assert micro_auprc(Y, S) == pytest.approx((1 + 2 / 3) / 2)
    # Leaving out the second label leaves one positive ranked first.
    assert micro_auprc(Y, S, labels=["a", "b"], exclude=["b", "zzz"]) == pytest.approx(1.0)


def test_micro_auprc_errors():
    with pytest.raises(ValueError, match="same shape"):
        micro_auprc(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="exclude needs labels"):
        micro_auprc(np.eye(2), np.eye(2), exclude=["a"])


def test_mean_loss():
    assert mean_loss(HammingLoss(), [[1, 0], [1, 1]], [[1, 1], [1, 1]]) == 0.5


# Few distinct values (with -0.0 and 0.0 together) make ties everywhere; any floats make none.
_TIED = st.sampled_from([-0.0, 0.0, 0.1, 0.25, 0.5, 1.0, 1e-300, 0.1 + 1e-16])
_ANY = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=True)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(1, 9), st.integers(1, 7), st.booleans())
def test_pooled_average_precision_equals_sklearn_micro(data, n, d, tied):
    Y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n * d, max_size=n * d)))
    S = np.array(data.draw(st.lists(_TIED if tied else _ANY, min_size=n * d,
                                    max_size=n * d)))
    Y, S = Y.reshape(n, d), S.reshape(n, d)
    with warnings.catch_warnings():  # scikit-learn warns when there is no positive
        warnings.simplefilter("ignore")
        expected = average_precision_score(Y.ravel(), S.ravel())
        micro = average_precision_score(Y, S, average="micro") if d > 1 else expected
    assert micro == pytest.approx(expected, rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(pooled_average_precision(Y, S), expected, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(micro_auprc(Y, S), expected, rtol=1e-12, atol=1e-15)
    # a subset of the columns, counted out instead of copied out
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=d, max_size=d)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sub = average_precision_score(Y[:, keep].ravel(), S[:, keep].ravel()) if keep.any() \
            else 0.0
    np.testing.assert_allclose(pooled_average_precision(Y, S, columns=keep), sub,
                               rtol=1e-12, atol=1e-15)
    names = [f"l{j}" for j in range(d)]
    excluded = [n for n, k in zip(names, keep, strict=True) if not k]
    np.testing.assert_allclose(micro_auprc(Y, S, labels=names, exclude=excluded), sub,
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(pooled_average_precision(Y.astype(bool), S, columns=keep), sub,
                               rtol=1e-12, atol=1e-15)


def test_pooled_average_precision_on_a_large_matrix_with_many_ties():
    rng = np.random.default_rng(0)
    Y = rng.random((300, 200)) < 0.05
    S = np.clip(np.round(rng.normal(0.1, 0.3, Y.shape) + 0.3 * Y, 3), 0, 1)  # 60% at 0
    np.testing.assert_allclose(pooled_average_precision(Y, S),
                               average_precision_score(Y, S, average="micro"), rtol=1e-12)


def test_pooled_average_precision_errors_and_no_positive():
    with pytest.raises(ValueError, match="same shape"):
        pooled_average_precision(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="only 0 and 1"):
        pooled_average_precision([[0, 2]], [[0.1, 0.2]])
    with pytest.raises(ValueError, match="NaN or infinite"):
        pooled_average_precision([[0, 1]], [[np.nan, 0.2]])
    with pytest.raises(ValueError, match="NaN or infinite"):
        pooled_average_precision([[0, 1]], [[np.inf, 0.2]])
    assert pooled_average_precision([[0, 0]], [[0.3, 0.2]]) == 0.0
    with pytest.raises(ValueError, match="columns must be 2 booleans"):
        pooled_average_precision([[0, 1]], [[0.1, 0.2]], columns=[1, 0])
    with pytest.raises(ValueError, match="columns must be 2 booleans"):
        pooled_average_precision([[0, 1]], [[0.1, 0.2]], columns=[True])


# -- per-level report and the F1 rows ------------------------------------------------------
def _random_hierarchy_and_sets(seed):
    from ecrm import Hierarchy

    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 12))
    edges = [(f"n{int(rng.integers(0, j))}", f"n{j}") for j in range(1, d) if rng.random() < 0.8]
    h = Hierarchy(edges, labels=[f"n{j}" for j in range(d)])
    n = int(rng.integers(1, 15))
    return h, (rng.random((n, d)) < 0.4).astype(int), (rng.random((n, d)) < 0.4).astype(int)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_per_level_report_counts_each_level_and_pools_to_hierarchical_prf(seed):
    from ecrm.reporting.metrics import hierarchical_prf, per_level_report

    h, T, P = _random_hierarchy_and_sets(seed)
    report = per_level_report(T, P, h)
    Tc, Pc = h.close(T), h.close(P)
    for k, level in enumerate(report["level"]):
        cols = [j for j in range(h.n_labels) if h.depth[j] == level]  # direct count
        both = sum(Tc[i, j] * Pc[i, j] for i in range(len(T)) for j in cols)
        n_true, n_pred = Tc[:, cols].sum(), Pc[:, cols].sum()
        p = both / n_pred if n_pred else 0.0
        r = both / n_true if n_true else 0.0
        assert report["n_labels"][k] == len(cols) and report["support"][k] == n_true
        np.testing.assert_allclose([report["precision"][k], report["recall"][k]], [p, r],
                                   rtol=1e-12)
        np.testing.assert_allclose(report["f1"][k], 2 * p * r / (p + r) if p + r else 0.0,
                                   rtol=1e-12)
    # pooled over the levels, the counts are hierarchical_prf's
    both = (report["precision"] * report["predicted"]).sum()
    hp, hr, _ = hierarchical_prf(T, P, h)
    np.testing.assert_allclose(both / max(report["predicted"].sum(), 1), hp, atol=1e-12)
    np.testing.assert_allclose(both / max(report["support"].sum(), 1), hr, atol=1e-12)


def test_per_level_report_refuses_columns_that_are_not_the_hierarchys():
    from ecrm import Hierarchy
    from ecrm.reporting.metrics import per_level_report

    h = Hierarchy([("a", "a1")])
    with pytest.raises(ValueError, match=r"shape \(n, 2\).*\(1, 3\)"):
        per_level_report([[1, 1, 0]], [[1, 0, 1]], h)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_report_with_a_hierarchy_has_one_f1_row_equal_to_micro_f1_on_closed_sets(seed):
    from sklearn.metrics import f1_score

    from ecrm.reporting.metrics import multilabel_report

    h, T, P = _random_hierarchy_and_sets(seed)
    T, P = h.close(T), h.close(P)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = multilabel_report(T, P, hierarchy=h)
        assert "micro_f1" not in report and "micro_f1" in multilabel_report(T, P)
        np.testing.assert_allclose(report["hF"], f1_score(T, P, average="micro",
                                                          zero_division=0), atol=1e-12)
