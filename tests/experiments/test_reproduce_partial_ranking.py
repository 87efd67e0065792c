"""``ecrm reproduce partial-ranking``: tau_x, the kNN-Borda baseline and the protocol end to
end on a small file written here."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import kendalltau

from ecrm.experiments import partial_ranking as pr
from ecrm.losses import tau_x


def _emond_mason(p, q) -> float:
    """tau_x by its definition: a_ij = 1 if i is ahead of or tied with j, else -1, summed
    over the ordered pairs of the labels both rank, over their number."""
    labels = [a for a in range(len(p)) if p[a] > 0 and q[a] > 0]
    pairs = [(i, j) for i, j in itertools.permutations(labels, 2)]
    if not pairs:
        return 1.0
    total = sum((1 if p[i] <= p[j] else -1) * (1 if q[i] <= q[j] else -1) for i, j in pairs)
    return total / len(pairs)


@given(st.integers(2, 6).flatmap(lambda k: st.tuples(
    st.lists(st.integers(0, 4), min_size=k, max_size=k),
    st.lists(st.integers(0, 4), min_size=k, max_size=k))))
def test_the_protocols_tau_x_is_emond_and_masons_coefficient(pq):
    p, q = pq
    q = [max(v, 1) for v in q]  # a complete prediction
    if sum(v > 0 for v in p):
        np.testing.assert_allclose(tau_x([p], [q]), _emond_mason(p, q), atol=1e-12)


def test_tau_x_is_kendalls_tau_without_ties_and_counts_ties_half():
    rng = np.random.default_rng(0)
    P = np.array([rng.permutation(5) + 1 for _ in range(20)])
    Q = np.array([rng.permutation(5) + 1 for _ in range(20)])
    expected = [kendalltau(p, q)[0] for p, q in zip(P, Q, strict=True)]
    np.testing.assert_allclose([tau_x([p], [q]) for p, q in zip(P, Q, strict=True)], expected)
    # one pair tied against a strict order: L = 1 of 3 pairs; opposite: L = 2
    np.testing.assert_allclose(tau_x([[1, 2, 3], [2, 1, 3]], [[1, 1, 2], [1, 2, 3]]),
                               np.mean([1 - 1 / 3, 1 - 2 / 3]))
    np.testing.assert_allclose(tau_x([[1, 0, 2]], [[3, 2, 1]]), -1.0)  # one pair seen


def test_buckets_tie_labels_within_the_threshold():
    scores = np.array([[0.9, 0.1, 0.85, -0.5]])
    np.testing.assert_array_equal(pr._buckets(scores, 0.0), [[1, 3, 2, 4]])
    np.testing.assert_array_equal(pr._buckets(scores, 0.1), [[1, 2, 1, 3]])
    np.testing.assert_array_equal(pr._buckets(scores, 2.0), [[1, 1, 1, 1]])


def test_borda_scores_of_bucket_orders():
    neigh = np.array([[[1, 2, 2], [1, 1, 2]]])  # label 1 ahead of both, then ahead of one
    np.testing.assert_allclose(pr._borda_scores(neigh), [[(1 + 0.5) / 2, (-0.5 + 0.5) / 2,
                                                          (-0.5 - 1) / 2]])


def _toy_file(tmp_path, n=60, p=3, k=4, seed=0, name="toy"):
    """Bucket orders of labels scored linearly in the features, scores rounded to buckets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    S = X @ rng.normal(size=(p, k))
    P = pr._buckets(np.round(S), 0.0)
    lines = [f"{n},{p},{k}"] + [",".join([*(f"{v:.5f}" for v in x), *map(str, q)])
                                for x, q in zip(X, P, strict=True)]
    (tmp_path / f"{name}.csv").write_text("\n".join(lines) + "\n")
    return X, P


def _run(args, capsys):
    from ecrm.cli import build_parser

    argv = ["reproduce", "partial-ranking", *args]
    ns = build_parser(argv).parse_args(argv)
    status = ns.func(ns)
    return status, capsys.readouterr()


def test_reproduce_partial_ranking_end_to_end(tmp_path, capsys):
    pytest.importorskip("ecrm.spaces.bucket_orders")
    _toy_file(tmp_path)
    peers = [{"dataset": "toy", "n": 60, "k": 4, "rows": [
        {"method": "PLRT", "tau_x_mean": 0.5, "tau_x_std": 0.1, "seconds": 1.0}]}]
    (tmp_path / "peers.json").write_text(json.dumps(peers))
    out = tmp_path / "out.json"
    status, printed = _run(["--data-dir", str(tmp_path), "--datasets", "toy", "--repeats", "1",
                            "--folds", "3", "--json", str(out), "--peers",
                            str(tmp_path / "peers.json"), "--quiet"], capsys)
    assert status == 0, printed.err
    (info,) = json.loads(out.read_text())
    assert (info["dataset"], info["n"], info["p"], info["k"]) == ("toy", 60, 3, 4)
    assert [r["method"] for r in info["rows"]] == list(pr.METHODS)
    for row in info["rows"]:
        assert len(row["fold_tau_x"]) == 3 and len(row["params"]) == 3
        np.testing.assert_allclose(row["tau_x_mean"], np.mean(row["fold_tau_x"]))
        np.testing.assert_allclose(row["tau_x_std"], np.std(row["fold_tau_x"]))
        assert all(-1 <= t <= 1 for t in row["fold_tau_x"]) and row["seconds"] >= 0
    ecrm = {r["method"]: r["tau_x_mean"] for r in info["rows"]}
    assert ecrm["ECRM-kernel"] > 0.5  # linear scores: far better than chance (0)
    shares = [p["mixture"] for p in info["rows"][2]["params"]]
    assert all(0 <= s <= 1 for s in shares)
    head, line = printed.out.splitlines()[:2]
    assert "ECRM-mixed" in head and "PLRT" in head
    assert line.startswith("toy") and "0.500 (0.100)" in line


@pytest.mark.filterwarnings("ignore::ecrm.exceptions.GridEdgeWarning")
def test_the_mixed_row_is_mixed_risk_ecrms_choice(tmp_path):
    """ECRM-mixed's choice from the two rows' models equals MixedRiskECRM fitted anew."""
    pytest.importorskip("ecrm.spaces.bucket_orders")
    from ecrm import MixedRiskECRM
    from ecrm.losses import TauXLoss
    from ecrm.spaces import BucketOrderSpace
    from ecrm.spaces.bucket_orders import bucket_order_to_pairs, pairs_to_bucket_order

    X, P = _toy_file(tmp_path, n=50, k=3)
    out, _ = pr._ecrm(X[:40], P[:40], X[40:], seed=7)
    model = MixedRiskECRM(TauXLoss(), BucketOrderSpace(3), kernel_options=pr._kernel_options(
        40, 3), forest_options=pr._forest_options(40, 3), mixing_grid=pr.MIXING_GRID,
        random_state=7).fit(X[:40], bucket_order_to_pairs(P[:40]))
    assert out["ECRM-mixed"][1]["mixture"] == model.mixture_
    np.testing.assert_array_equal(out["ECRM-mixed"][0],
                                  pairs_to_bucket_order(model.predict(X[40:])))
    for alone in ("ECRM-kernel", "ECRM-forest"):  # a row asked alone: the same fit
        own, seconds = pr._ecrm(X[:40], P[:40], X[40:], seed=7, methods=(alone,))
        assert list(own) == list(seconds) == [alone]
        np.testing.assert_array_equal(own[alone][0], out[alone][0])


def test_missing_data_and_bad_peers_are_reported(tmp_path, capsys):
    status, printed = _run(["--data-dir", str(tmp_path / "none"), "--quiet"], capsys)
    assert status == 2 and "does not exist" in printed.err
    _toy_file(tmp_path)
    status, printed = _run(["--data-dir", str(tmp_path), "--datasets", "toy,absent"], capsys)
    assert status == 2 and "data sets not found: ['absent']" in printed.err
    (tmp_path / "peers.json").write_text('{"not": "a list"}')
    status, printed = _run(["--data-dir", str(tmp_path), "--peers",
                            str(tmp_path / "peers.json")], capsys)
    assert status == 2 and "not the peers' results" in printed.err
