"""The paired bootstrap of the micro AU(PRC) gain: its weighted average precision against the
explicitly repeated rows, its standard error against a direct loop over the same resamples."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score
from sklearn.utils import check_random_state

from ecrm.reporting.metrics import (
    _RankedEntries,
    bootstrap_auprc,
    paired_bootstrap_auprc,
    pooled_average_precision,
)


@st.composite
def _problems(draw, max_n=8, max_d=5):
    """Labels, two score matrices rounded to one decimal (ties within and across rows) and a
    column mask."""
    n, d = draw(st.integers(1, max_n)), draw(st.integers(1, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, d)) < draw(st.sampled_from([0.0, 0.2, 0.5, 0.9]))).astype(int)
    A, B = rng.random((n, d)).round(1), rng.random((n, d)).round(1)
    columns = rng.random(d) < 0.7
    return Y, A, B, columns


def _direct(Y, A, B, columns, n_boot, seed):
    """The gain and its standard error by pooled_average_precision on the resampled rows."""
    draws = check_random_state(seed).randint(len(Y), size=(n_boot, len(Y)))
    gains = [pooled_average_precision(Y[rows], A[rows], columns=columns)
             - pooled_average_precision(Y[rows], B[rows], columns=columns) for rows in draws]
    gain = (pooled_average_precision(Y, A, columns=columns)
            - pooled_average_precision(Y, B, columns=columns))
    return gain, np.std(gains, ddof=1)


@settings(max_examples=200, deadline=None)
@given(_problems(), st.data())
def test_weighted_average_precision_equals_the_repeated_rows(problem, data):
    Y, S, _, columns = problem
    counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(Y),
                                         max_size=len(Y))))
    Y_rep, S_rep = np.repeat(Y, counts, axis=0), np.repeat(S, counts, axis=0)
    for keep in (np.ones(Y.shape[1], dtype=bool), columns):
        ranked = _RankedEntries(Y[:, keep] == 1, S[:, keep])
        got = ranked.average_precision(counts)
        expected = pooled_average_precision(Y_rep, S_rep, columns=keep) if len(Y_rep) else 0.0
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        weights = np.repeat(counts, keep.sum())
        if (Y[:, keep].ravel() * weights).sum() > 0:  # scikit-learn needs a positive
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sk = average_precision_score(Y[:, keep].ravel(), S[:, keep].ravel(),
                                             sample_weight=weights)
            np.testing.assert_allclose(got, sk, rtol=0, atol=1e-12)
        else:
            assert got == 0.0


@settings(max_examples=100, deadline=None)
@given(_problems(), st.integers(2, 6), st.integers(0, 1000), st.booleans())
def test_gain_and_standard_error_equal_a_direct_loop_over_the_resamples(problem, n_boot, seed,
                                                                          some_columns):
    Y, A, B, columns = problem
    columns = columns if some_columns else None
    gain, error = paired_bootstrap_auprc(Y, A, B, columns=columns, n_boot=n_boot,
                                         random_state=seed)
    expected_gain, expected_error = _direct(Y, A, B, columns, n_boot, seed)
    np.testing.assert_allclose(gain, expected_gain, rtol=0, atol=1e-12)
    np.testing.assert_allclose(error, expected_error, rtol=0, atol=1e-12)
    assert error >= 0


@settings(max_examples=50, deadline=None)
@given(_problems())
def test_a_matrix_against_itself_gains_nothing_with_no_error(problem):
    Y, A, _, columns = problem
    assert paired_bootstrap_auprc(Y, A, A, n_boot=20) == (0.0, 0.0)
    assert paired_bootstrap_auprc(Y, A, A.copy(), columns=columns, n_boot=20) == (0.0, 0.0)


def test_resamples_without_a_positive_count_as_pooled_average_precision_does():
    # one positive row in six: about a third of the resamples miss it (their AP is 0)
    Y = np.zeros((6, 3), dtype=int)
    Y[0, 1] = 1
    rng = np.random.default_rng(0)
    A, B = rng.random((6, 3)), rng.random((6, 3))
    draws = check_random_state(0).randint(6, size=(50, 6))
    assert not (draws == 0).any(axis=1).all()
    gain, error = paired_bootstrap_auprc(Y, A, B, n_boot=50, random_state=0)
    expected_gain, expected_error = _direct(Y, A, B, None, 50, 0)
    np.testing.assert_allclose([gain, error], [expected_gain, expected_error], rtol=0,
                               atol=1e-12)
    assert np.isfinite(error) and error > 0
    assert paired_bootstrap_auprc(np.zeros((6, 3)), A, B, n_boot=5) == (0.0, 0.0)


def test_a_large_gain_is_many_standard_errors_and_the_seed_fixes_the_error():
    rng = np.random.default_rng(1)
    Y = (rng.random((300, 20)) < 0.2).astype(int)
    good, noise = Y + 0.8 * rng.random(Y.shape), rng.random(Y.shape)
    gain, error = paired_bootstrap_auprc(Y, good, noise, n_boot=50, random_state=3)
    assert gain > 10 * error > 0
    assert paired_bootstrap_auprc(Y, good, noise, n_boot=50, random_state=3) == (gain, error)
    assert paired_bootstrap_auprc(Y, good, noise, n_boot=50, random_state=4)[1] != error


def test_both_matrices_draw_the_same_resamples_from_a_random_state_instance():
    # an instance would advance between the two matrices' draws: one seed is drawn from it
    rng = np.random.default_rng(2)
    Y = (rng.random((40, 5)) < 0.3).astype(int)
    A = rng.random(Y.shape)
    assert paired_bootstrap_auprc(Y, A, A.copy(), n_boot=30,
                                  random_state=np.random.RandomState(0)) == (0.0, 0.0)


def test_one_matrix_resampled_alone_pairs_with_another():
    # the rows of a table resample the reference once: the paired result from the pieces
    rng = np.random.default_rng(3)
    Y = (rng.random((50, 6)) < 0.3).astype(int)
    A, B = Y + rng.random(Y.shape), rng.random(Y.shape)
    (a, boot_a), (b, boot_b) = (bootstrap_auprc(Y, S, n_boot=40, random_state=7) for S in (A, B))
    assert a == pooled_average_precision(Y, A) and len(boot_a) == 40
    gain, error = paired_bootstrap_auprc(Y, A, B, n_boot=40, random_state=7)
    np.testing.assert_allclose([gain, error], [a - b, np.std(boot_a - boot_b, ddof=1)],
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("args, kwargs, message", [
    (([[1, 0]], [[0.1, 0.2]], [[0.1, 0.2, 0.3]]), {},
     r"Y_true and scores_b must have the same shape; got \(1, 2\) and \(1, 3\)"),
    (([[1, 0]], [[0.1]], [[0.1, 0.2]]), {}, "Y_true and scores_a must have the same shape"),
    (([1, 0], [0.1, 0.2], [0.3, 0.4]), {}, r"must be 2-D .*got shape \(2,\)"),
    ((np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2))), {}, "at least one row"),
    (([[1, 0]], [[0.1, 0.2]], [[0.1, 0.2]]), {"n_boot": 1}, "n_boot must be an integer of "
     "at least 2 resamples; got 1"),
    (([[1, 0]], [[0.1, 0.2]], [[0.1, 0.2]]), {"n_boot": 2.5}, "n_boot must be an integer"),
    (([[1, 0]], [[0.1, 0.2]], [[0.1, np.nan]]), {}, "scores_b contains NaN"),
    (([[1, 2]], [[0.1, 0.2]], [[0.1, 0.2]]), {}, "Y_true must hold only 0 and 1"),
    (([[1, 0]], [[0.1, 0.2]], [[0.1, 0.2]]), {"columns": [True]},
     "columns must be 2 booleans"),
])
def test_bad_input_is_named(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired_bootstrap_auprc(*args, **kwargs)
