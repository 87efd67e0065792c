"""The missing-labels protocol of the label ranking benchmark: the deletions are seeded, remove
each training label with the given probability, leave the test rankings complete, are the
ones ``reproduce ranking --missing`` makes, and reach scikit-lr's rankers in its format."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _label_ranking_files import write_toy_rankings
from ecrm.cli import main
from ecrm.experiments import _ranking_fold, _ranking_missing, missing_labels, ranking
from ecrm.experiments._ranking_knn import _tau
from ecrm.experiments.missing_labels import deleted_folds

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "label_ranking_missing_sklr.py"


@pytest.fixture(scope="module")
def peers():
    """The peers' script as a module (it needs scikit-lr only to run its rankers)."""
    spec = importlib.util.spec_from_file_location("label_ranking_missing_sklr", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rankings(n, k, seed=0):
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n, k)), axis=1).argsort(axis=1)


# -- the deletions -----------------------------------------------------------------------------
def test_deletions_are_seeded_and_follow_the_protocol_folds():
    R = _rankings(120, 6)
    first = list(deleted_folds(R, 0.3, repeats=2, folds=4))
    again = list(deleted_folds(R, 0.3, repeats=2, folds=4))
    assert len(first) == 8
    for a, b in zip(first, again, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    other = list(deleted_folds(R, 0.3, repeats=2, folds=4, random_state=1))
    assert any(not np.array_equal(a[5], b[5]) for a, b in zip(first, other, strict=True))
    folds = list(ranking.protocol_folds(120, repeats=2, folds=4, max_train=1000))
    for (rep, f, train, test, seed, _), ref in zip(first, folds, strict=True):
        assert (rep, f, seed) == ref[:2] + (ref[4],)
        np.testing.assert_array_equal(train, ref[2])
        np.testing.assert_array_equal(test, ref[3])


@pytest.mark.parametrize("level", [0.3, 0.6], ids="level={}".format)
def test_each_training_label_is_removed_with_the_given_probability(level):
    R = _rankings(3000, 12, seed=1)
    removed = np.concatenate([(Rtr < 0).ravel() for *_, Rtr in deleted_folds(
        R, level, repeats=1, folds=5)])
    # 12 labels: a row keeps fewer than two with probability < 1e-3 at p = 0.6
    np.testing.assert_allclose(removed.mean(), level, atol=0.01)


def test_the_levels_share_folds_and_seeds_and_level_zero_removes_nothing():
    R = _rankings(200, 5, seed=2)
    none, some = (list(deleted_folds(R, p, repeats=1, folds=10)) for p in (0.0, 0.6))
    for a, b in zip(none, some, strict=True):
        np.testing.assert_array_equal(a[2], b[2])
        assert a[4] == b[4]
        np.testing.assert_array_equal(a[5], R[a[2]])  # complete at level 0
        assert (b[5] < 0).any()


@given(st.integers(2, 8), st.floats(0.0, 0.95), st.integers(0, 2**16))
def test_a_deletion_keeps_two_labels_in_their_order(k, level, seed):
    R = _rankings(30, k, seed)
    for *_, train, _, _, Rtr in deleted_folds(R, level, repeats=1, folds=3,
                                              random_state=seed):
        kept = Rtr >= 0
        assert (kept.sum(axis=1) >= 2).all()
        for row, full in zip(Rtr, R[train], strict=True):
            m = (row >= 0).sum()
            np.testing.assert_array_equal(np.sort(row[row >= 0]), np.arange(m))
            seen = row >= 0  # the kept labels in the order of the complete ranking
            np.testing.assert_array_equal(np.argsort(row[seen]), np.argsort(full[seen]))


def test_a_level_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match=r"probability in \[0, 1\); got 1.0"):
        next(deleted_folds(_rankings(20, 3), 1.0))


# -- the fold: what the methods see and what they are scored on -------------------------------
class _Recorder:
    """Stands in for the methods: records their inputs, predicts the reverse of label order."""

    def __init__(self):
        self.calls = []

    def __call__(self, Xtr, Rtr, Xte, *, gammas, methods, fit_seed, memory, extend_grid):
        self.calls.append((Xtr, Rtr, fit_seed))
        pred = np.tile(np.arange(Rtr.shape[1])[::-1], (len(Xte), 1))
        return {m: (pred, {}) for m in methods}, dict.fromkeys(methods, 0.0)


@pytest.mark.parametrize("level", [0.3, 0.6], ids="level={}".format)
def test_the_fold_trains_on_the_deletions_and_scores_complete_test_rankings(monkeypatch,
                                                                            level):
    rng = np.random.default_rng(5)
    X, R = rng.normal(size=(1400, 3)), _rankings(1400, 4, seed=5)
    recorder = _Recorder()
    monkeypatch.setattr(_ranking_missing, "_incomplete_methods", recorder)
    monkeypatch.setattr(_ranking_fold, "_incomplete_methods", recorder)
    (_, _, train, test, seed, Rtr), *_ = deleted_folds(R, level, repeats=1, folds=10)
    assert len(train) == 1000  # capped, as the large sets are
    whole = next(ranking.protocol_folds(1400, repeats=1, folds=10))[2]
    out, _, _ = missing_labels._fold(X, R, whole, test, level=level, seed=seed, gammas=[1.0],
                                     methods=ranking.MISSING_METHODS, max_train=1000)
    Xtr, seen, _ = recorder.calls[-1]
    np.testing.assert_array_equal(seen, Rtr)
    X0 = X[train]
    np.testing.assert_allclose(Xtr, (X0 - X0.mean(0)) / X0.std(0), atol=1e-12)
    reverse = np.tile(np.arange(4)[::-1], (len(test), 1))
    for method in ranking.MISSING_METHODS:  # scored against the complete test rankings
        np.testing.assert_allclose(out[method][0], _tau(reverse, R[test]).mean())
    assert (R[test] >= 0).all()
    # the same inputs as ``ecrm reproduce ranking --missing``
    _ranking_fold._fold(X, R, whole, test, gammas=[1.0], methods=ranking.MISSING_METHODS,
                        seed=seed, max_train=1000, missing=level)
    ref_X, ref_R, ref_seed = recorder.calls[-1]
    np.testing.assert_array_equal(ref_R, Rtr)
    np.testing.assert_array_equal(ref_X, Xtr)
    assert ref_seed == recorder.calls[0][2]


def test_reproduce_missing_labels_end_to_end(tmp_path, capsys):
    write_toy_rankings(tmp_path / "toy.csv", n=40)
    out = tmp_path / "out.json"
    assert main(["reproduce", "missing-labels", "--data-dir", str(tmp_path), "--datasets",
                 "toy", "--levels", "0,0.5", "--repeats", "1", "--folds", "3", "--quiet",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert all(m in printed for m in ranking.MISSING_METHODS)
    records = json.loads(out.read_text())
    assert [(r["dataset"], r["missing"]) for r in records] == [("toy", 0.0), ("toy", 0.5)]
    for info in records:
        assert [r["method"] for r in info["rows"]] == list(ranking.MISSING_METHODS)
        for row in info["rows"]:
            assert len(row["fold_taus"]) == 3
            assert -1.0 <= row["tau_mean"] <= 1.0
    with pytest.raises(SystemExit) as exc:  # argparse: the level is checked at parse time
        main(["reproduce", "missing-labels", "--data-dir", str(tmp_path), "--datasets",
              "toy", "--levels", "0.3,1", "--quiet"])
    assert exc.value.code == 2
    assert "--levels must be a real number in [0, 1); got 1.0" in capsys.readouterr().err
    assert main(["reproduce", "missing-labels", "--data-dir", str(tmp_path), "--datasets",
                 "nosuch", "--quiet"]) == 2
    assert "data sets not found: ['nosuch']" in capsys.readouterr().err


# -- the peers' side ---------------------------------------------------------------------------
def test_peers_format_marks_missing_labels_nan_and_ranks_from_one(peers):
    R = np.array([[1, -1, 0, 2], [3, 0, 2, 1], [-1, -1, 0, 1]])
    np.testing.assert_array_equal(peers.to_sklr(R), [[2, np.nan, 1, 3], [4, 1, 3, 2],
                                                     [np.nan, np.nan, 1, 2]])
    with pytest.raises(ValueError, match=r"positions >= 0 or -1 \(missing\); got shape"):
        peers.to_sklr(np.array([[0, -2, 1]]))
    with pytest.raises(ValueError, match=r"got shape \(3,\)"):
        peers.to_sklr(np.array([0, 1, 2]))


@given(st.integers(2, 6), st.integers(0, 2**16), st.floats(0.0, 0.9))
def test_observed_tau_is_kendall_tau_on_the_observed_pairs(peers, k, seed, level):
    rng = np.random.default_rng(seed)
    R = _rankings(7, k, seed)
    Rin = _ranking_missing.remove_labels(R, level, rng)
    pred = _rankings(7, k, seed + 1)
    expected = []
    for row, p in zip(Rin, pred, strict=True):  # brute force over the observed pairs
        pairs = [(a, b) for a in range(k) for b in range(a + 1, k) if row[a] >= 0 <= row[b]]
        expected.append(np.mean([np.sign(row[a] - row[b]) * np.sign(p[a] - p[b])
                                 for a, b in pairs]))
    np.testing.assert_allclose(peers.observed_tau(peers.to_sklr(Rin), pred + 1),
                               np.mean(expected), atol=1e-12)
    np.testing.assert_allclose(peers.observed_tau(peers.to_sklr(R), pred + 1),
                               _tau(pred, R).mean(), atol=1e-12)


class _Ranker:
    """Stands in for a scikit-lr search: records what it is fitted on, predicts the reverse."""

    fitted: list = []

    def __init__(self, name, seed):
        self.best_params_ = {"name": name}

    def fit(self, X, Y):
        _Ranker.fitted.append((X, Y))
        return self

    def predict(self, X):
        k = _Ranker.fitted[-1][1].shape[1]
        return np.tile(np.arange(k, 0, -1), (len(X), 1))  # scikit-lr's positions: 1 = top


def test_peers_fold_fits_the_same_deletions_and_scores_complete_test_rankings(peers,
                                                                            monkeypatch):
    rng = np.random.default_rng(7)
    X, R = rng.normal(size=(60, 3)), _rankings(60, 5, seed=7)
    monkeypatch.setattr(peers, "_search", _Ranker)
    _Ranker.fitted.clear()
    (_, _, train, test, seed, Rtr), *_ = deleted_folds(R, 0.6, repeats=1, folds=5)
    out = peers._fold(X, R, train, test, seed, Rtr, ("IB-M", "LRT"))
    assert len(_Ranker.fitted) == 2
    for _, Y in _Ranker.fitted:
        np.testing.assert_array_equal(Y, peers.to_sklr(Rtr))
        assert np.isnan(Y).any()
    reverse = np.tile(np.arange(5)[::-1], (len(test), 1))
    for r in ("IB-M", "LRT"):
        np.testing.assert_allclose(out[r][0], _tau(reverse, R[test]).mean())
        assert out[r][1]["convergence_warnings"] == 0
