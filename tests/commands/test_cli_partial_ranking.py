"""Bucket orders through the real ``ecrm`` command: ``fit --task partial-ranking`` on a CSV
of ``a>b=c`` rows (some incomplete) and on the benchmark's position layout, then ``predict``,
``evaluate`` and ``info``; bad cells refused naming their line; the cell parser and writer
round trip."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecrm.commands._bucket_orders import format_bucket_order, parse_bucket_order

pytestmark = pytest.mark.xdist_group("cli_partial_ranking")

NAMES = ["a", "b", "c", "d"]
_W = np.random.RandomState(0).randn(3, 4)


def _positions(S, rng, missing: float) -> np.ndarray:
    """Bucket numbers: labels ranked by utility, close ones tied; some left out (0)."""
    P = np.zeros(S.shape, dtype=np.int64)
    for i, s in enumerate(S):
        level, last = 0, None
        for j in np.argsort(-s):
            if last is None or last - s[j] > 0.5:
                level += 1
            P[i, j], last = level, s[j]
    P[rng.rand(*P.shape) < missing] = 0
    return P


def _cell(p) -> str:
    return format_bucket_order([[NAMES[j] for j in np.flatnonzero(p == v)]
                                for v in sorted(set(p.tolist()) - {0})])


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("plr")
    for part, (n, seed, missing) in {"train": (60, 1, 0.2), "test": (25, 2, 0.0)}.items():
        rng = np.random.RandomState(seed)
        X = rng.randn(n, 3)
        P = _positions(X @ _W + 0.3 * rng.randn(n, 4), rng, missing)
        with open(folder / f"{part}.csv", "w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["f1", "f2", "f3", "labels"])
            out.writerows([*(f"{v:.4f}" for v in x), _cell(p)] for x, p in zip(X, P, strict=True))
        lines = [f"{n},3,4"] + [",".join([*(f"{v:.4f}" for v in x),
                                          *(str(v) if v else "" for v in p)])
                                for x, p in zip(X, P, strict=True)]
        (folder / f"bench-{part}.csv").write_text("\n".join(lines) + "\n")
    return folder


def _ok(proc) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return proc.stdout.decode()


def _refused(proc, *needles: str) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("ecrm: error:")]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), err


@pytest.mark.parametrize("family", ["kernel", "forest", "mixed", "stack", "neighbours"])
def test_every_family_fits_bucket_orders(files, ecrm_cmd, family):
    extra = {"kernel": [], "forest": ["--trees", "10"], "mixed": ["--trees", "10", "--cv"],
             "stack": ["--cv"], "neighbours": ["--cv"]}[family]
    name = f"{family}.ecrm"
    _ok(ecrm_cmd("fit", "train.csv", "--task", "partial-ranking", "--family", family, *extra,
                 "-o", name, "--quiet", cwd=files))
    report = json.loads(_ok(ecrm_cmd("evaluate", name, "test.csv", "--json", "--quiet",
                                     cwd=files)))
    assert report["task"] == "partial-ranking" and report["n_rows"] == 25
    assert -1 <= report["tau_x"] <= 1


def test_a_bucket_order_csv_end_to_end(files, ecrm_cmd):
    _ok(ecrm_cmd("fit", "train.csv", "--task", "partial-ranking", "--cv", "--family",
                 "kernel", "-o", "m.ecrm", "--quiet", cwd=files))
    info = json.loads(_ok(ecrm_cmd("info", "--json", "m.ecrm", cwd=files)))
    assert info["task"] == "partial-ranking" and info["loss"] == "TauXLoss"
    assert info["output_space"] == "BucketOrderSpace" and info["labels"] == NAMES

    _ok(ecrm_cmd("predict", "m.ecrm", "test.csv", "-o", "p.csv", "--quiet", cwd=files))
    rows = list(csv.DictReader(io.StringIO((files / "p.csv").read_text())))
    assert list(rows[0]) == ["row", "ranking"] and len(rows) == 25
    for row in rows:  # complete bucket orders of the model's labels
        assert sorted(n for b in parse_bucket_order(row["ranking"]) for n in b) == NAMES

    report = json.loads(_ok(ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--json", "--quiet",
                                     cwd=files)))
    assert set(report["baselines"]) == {"most_frequent", "all_tied"}
    # all tied: tau_x is the share of the true rows' tied pairs (complete test rows)
    cells = [r["labels"] for r in csv.DictReader(io.StringIO((files / "test.csv").read_text()))]
    tied = [sum(len(b) * (len(b) - 1) for b in parse_bucket_order(c)) / 12 for c in cells]
    np.testing.assert_allclose(report["baselines"]["all_tied"]["tau_x"], np.mean(tied))
    best = max(b["tau_x"] for b in report["baselines"].values())
    assert 0.3 < report["tau_x"] <= 1 and report["tau_x"] > best
    # on complete rows, tau_x = 1 - 2 L / (k (k - 1))
    np.testing.assert_allclose(report["tau_x"], 1 - 2 * report["tau_x_distance"] / 12)
    text = _ok(ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--quiet", cwd=files))
    assert "tau_x" in text and "all tied" in text

    for out in ("p.csv", "p.jsonl"):  # what predict writes, evaluate reads back
        _ok(ecrm_cmd("predict", "m.ecrm", "test.csv", "-o", out, "--quiet", cwd=files))
        again = json.loads(_ok(ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--json",
                                        "--predictions", out, "--quiet", cwd=files)))
        np.testing.assert_allclose(again["tau_x"], report["tau_x"])
        np.testing.assert_allclose(again["tau_x_distance"], report["tau_x_distance"])

    # a position-layout file names its labels label1 .. labelk, not the model's
    _refused(ecrm_cmd("evaluate", "m.ecrm", "bench-test.csv", "--quiet", cwd=files),
             "bench-test.csv", "label1", "the model ranks a, b, c, d")


def test_the_position_layout_fits_and_predicts(files, ecrm_cmd):
    _ok(ecrm_cmd("fit", "bench-train.csv", "--task", "partial-ranking", "--loss",
                 "kendall-ties", "-o", "b.ecrm", "--quiet", cwd=files))
    info = json.loads(_ok(ecrm_cmd("info", "--json", "b.ecrm", cwd=files)))
    assert info["labels"] == ["label1", "label2", "label3", "label4"]
    assert info["loss"] == "KendallTiesLoss"
    out = _ok(ecrm_cmd("predict", "b.ecrm", "bench-test.csv", cwd=files))
    assert out.splitlines()[0] == "row,ranking" and "label" in out.splitlines()[1]
    report = json.loads(_ok(ecrm_cmd("evaluate", "b.ecrm", "bench-test.csv", "--json",
                                     "--quiet", cwd=files)))
    assert "kendall_ties" in report and report["tau_x"] > 0.3


@pytest.mark.parametrize(("cell", "needle"), [
    ("a>>b", "empty bucket"), ("a>b=a", "label 'a' appears twice"),
    ("a>b;c", "unknown separator ';'"), ("a>b=", "empty label"), ("", "no bucket order")])
def test_bad_cells_are_refused_naming_the_line(files, ecrm_cmd, cell, needle):
    text = (files / "train.csv").read_text().splitlines()
    first = text[1].rsplit(",", 1)[0]
    (files / "bad.csv").write_text("\n".join([text[0], text[2], f"{first},{cell}"]) + "\n")
    _refused(ecrm_cmd("fit", "bad.csv", "--task", "partial-ranking", "-o", "x.ecrm",
                      "--quiet", cwd=files), "bad.csv, line 3", needle)


def test_unseen_labels_follow_the_unseen_option(files, ecrm_cmd):
    _ok(ecrm_cmd("fit", "train.csv", "--task", "partial-ranking", "-o", "u.ecrm", "--quiet",
                 cwd=files))
    text = (files / "test.csv").read_text().splitlines()
    first = text[1].rsplit(",", 1)[0]
    (files / "new.csv").write_text("\n".join([*text, f"{first},a>e=b"]) + "\n")
    _refused(ecrm_cmd("evaluate", "u.ecrm", "new.csv", "--quiet", cwd=files),
             "line 27", "'e'", "--unseen ignore")
    report = json.loads(_ok(ecrm_cmd("evaluate", "u.ecrm", "new.csv", "--unseen", "ignore",
                                     "--json", "--quiet", cwd=files)))
    assert report["n_rows"] == 25


_LABELS = st.lists(st.sampled_from("abcdefgh") | st.text("xyz_0123", min_size=2, max_size=4),
                   min_size=1, max_size=8, unique=True)


@settings(deadline=None)
@given(_LABELS, st.data())
def test_cells_round_trip(names, data):
    cuts = data.draw(st.lists(st.booleans(), min_size=len(names) - 1,
                              max_size=len(names) - 1))
    buckets, current = [], [names[0]]
    for name, cut in zip(names[1:], cuts, strict=True):
        if cut:
            buckets.append(current)
            current = []
        current.append(name)
    buckets.append(current)
    cell = format_bucket_order(buckets)
    assert parse_bucket_order(cell) == buckets
    assert parse_bucket_order(cell.replace(">", " > ").replace("=", " = ")) == buckets


@settings(deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=6))
def test_positions_round_trip_through_cells(levels):
    """Bucket numbers (0 = missing) -> cell -> bucket numbers, through the task's reader
    and writer (dense numbers; a row ranking under two labels has no pair and reads back as
    all missing)."""
    from ecrm.commands._bucket_orders import BucketOrders
    from ecrm.spaces import BucketOrderSpace

    names = [f"l{j}" for j in range(len(levels))]
    task = BucketOrders(BucketOrderSpace(len(names), labels=names))
    P = np.array([levels])
    if not P.any():
        return
    cell = format_bucket_order([[names[j] for j in np.flatnonzero(P[0] == v)]
                                for v in sorted(set(levels) - {0})])
    got = task.positions([cell], None, "f")
    dense = np.searchsorted(np.unique(P[P > 0]), P) + 1
    np.testing.assert_array_equal(got, np.where(P > 0, dense, 0))
    Y = task.outputs([cell], None, "f")
    if (P > 0).sum() >= 2:
        assert task.text(Y) == [cell]


def test_the_most_frequent_baseline_completes_an_incomplete_mode():
    """Without a complete training row, the constant is a complete bucket order agreeing
    with every pair the most frequent incomplete one observes."""
    from ecrm.commands._bucket_orders import BucketOrders
    from ecrm.spaces import BucketOrderSpace

    space = BucketOrderSpace(4, labels=NAMES)
    mode = space.from_positions([[2, 1, 0, 2]])[0]
    const = BucketOrders(space).constants(None, mode)
    P = space.to_positions(const["most_frequent"][None])[0]
    assert (P > 0).all()
    assert P[1] < P[0] == P[3]
    np.testing.assert_array_equal(const["all_tied"], np.zeros(12))
