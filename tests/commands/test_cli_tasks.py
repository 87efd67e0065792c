"""Rankings and classes through the real ``ecrm`` command: ``fit --task ranking|multiclass``
on CSV files the tests write (and on the label ranking benchmark's ``n,p,k`` layout), then
``predict``, ``evaluate`` and ``info`` from the model file alone; what a command cannot do
for them is refused in one line; a ranking model saved in Python predicts orderings."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

import ecrm
from _ids import named, readable
from ecrm import ECRM, CandidateSpace, PermutationSpace
from ecrm.commands import _outputs, _tasks
from ecrm.losses import KendallLoss, ZeroOneLoss

# one worker runs the module (make test: --dist loadgroup), so its models are fitted once
pytestmark = pytest.mark.xdist_group("cli_tasks")

NAMES = ["red", "green", "blue", "gold"]
_W = np.random.RandomState(0).randn(3, 4)


def _rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features and each label's utility (the labels ranked by it, the class its best)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    return X, X @ _W + 0.3 * rng.randn(n, 4)


def _write(path: Path, X, cells) -> Path:
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["f1", "f2", "f3", "labels"])
        out.writerows([*(f"{v:.4f}" for v in x), c] for x, c in zip(X, cells, strict=True))
    return path


def _ranking(s) -> str:
    return ">".join(NAMES[j] for j in np.argsort(-s))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """rank-{train,test}.csv, class-{train,test}.csv and bench-{train,test}.csv (the
    benchmark layout: n,p,k, then the features and each label's rank, 1 = top)."""
    folder = tmp_path_factory.mktemp("tasks")
    for part, (n, seed) in {"train": (60, 1), "test": (20, 2)}.items():
        X, S = _rows(n, seed)
        _write(folder / f"rank-{part}.csv", X, [_ranking(s) for s in S])
        _write(folder / f"class-{part}.csv", X, [NAMES[int(np.argmax(s))] for s in S])
        ranks = np.argsort(np.argsort(-S, axis=1), axis=1) + 1
        lines = [f"{n},3,4"] + [",".join([*(f"{v:.4f}" for v in x), *map(str, r)])
                                for x, r in zip(X, ranks, strict=True)]
        (folder / f"bench-{part}.csv").write_text("\n".join(lines) + "\n")
    return folder


def _ok(proc) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return proc.stdout.decode()


def _refused(proc, *needles: str) -> None:
    """Exit 2, one line ``ecrm: error: ...`` holding every needle, no traceback."""
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.replace("\r", "\n").splitlines()
              if line.startswith("ecrm: error:")]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), err


@pytest.fixture(scope="module")
def models(files, ecrm_cmd) -> dict[str, Path]:
    """Models fitted by the command: ranking (kernel, Kendall, by leave-one-out), ranking
    with the footrule loss and forest weights, multiclass, and on the benchmark layout."""
    fits = {"ranking": ["rank-train.csv", "--task", "ranking", "--cv", "--family", "kernel"],
            "footrule": ["rank-train.csv", "--task", "ranking", "--loss", "footrule", "--cv",
                         "--family", "forest", "--trees", "20"],
            "multiclass": ["class-train.csv", "--task", "multiclass", "--cv",
                           "--family", "kernel"],
            "bench": ["bench-train.csv", "--task", "ranking", "--cv", "--family", "kernel"]}
    out = {}
    for name, argv in fits.items():
        out[name] = files / f"{name}.ecrm"
        _ok(ecrm_cmd("fit", *argv, "-o", out[name].name, "--quiet", cwd=files))
    return out


def _predicted(model_path: Path, data: Path) -> np.ndarray:
    """The model's own predictions (in Python) on a file's features."""
    from ecrm.datasets.formats import load_data

    X = load_data(str(data), require_labels=False, ignore_labels=True).X
    return ecrm.load(model_path).predict(X)


def test_a_ranking_csv_end_to_end(files, models, ecrm_cmd):
    path = models["ranking"]
    info = json.loads(_ok(ecrm_cmd("info", "--json", path.name, cwd=files)))
    assert info["task"] == "ranking" and info["loss"] == "KendallLoss"
    assert info["output_space"] == "PermutationSpace" and info["labels"] == sorted(NAMES)
    assert "task            ranking" in _ok(ecrm_cmd("info", path.name, cwd=files))

    _ok(ecrm_cmd("predict", path.name, "rank-test.csv", "-o", "r.csv", "--quiet", cwd=files))
    rows = list(csv.DictReader(io.StringIO((files / "r.csv").read_text())))
    assert list(rows[0]) == ["row", "ranking"] and len(rows) == 20
    space = PermutationSpace(4, labels=sorted(NAMES))
    R = space.to_ranks(_predicted(path, files / "rank-test.csv"))
    expected = [">".join(np.array(sorted(NAMES))[np.argsort(r)]) for r in R]
    assert [row["ranking"] for row in rows] == expected

    report = json.loads(_ok(ecrm_cmd("evaluate", path.name, "rank-test.csv", "--json",
                                     "--quiet", cwd=files)))
    assert report["task"] == "ranking" and report["n_rows"] == 20 and report["n_labels"] == 4
    assert set(report["baselines"]) == {"most_frequent", "mean_rank"}
    best = max(b["kendall_tau"] for b in report["baselines"].values())
    assert 0.5 < report["kendall_tau"] <= 1 and report["kendall_tau"] > best
    assert report["kendall"] == pytest.approx((1 - report["kendall_tau"]) * 4 * 3 / 4)
    assert report["warnings"] == [] and report["model"]["task"] == "ranking"
    text = _ok(ecrm_cmd("evaluate", path.name, "rank-test.csv", "--quiet", cwd=files))
    assert "4 labels ranked" in text and "Kendall tau (mean)" in text and "mean rank" in text

    # what predict writes, evaluate reads back (CSV and JSON lines)
    _ok(ecrm_cmd("predict", path.name, "rank-test.csv", "-o", "r.jsonl", "--quiet", cwd=files))
    first = json.loads((files / "r.jsonl").read_text().splitlines()[0])
    assert first == {"row": 0, "ranking": expected[0].split(">")}
    for name in ("r.csv", "r.jsonl"):
        again = json.loads(_ok(ecrm_cmd("evaluate", path.name, "rank-test.csv", "--json",
                                        "--predictions", name, "--quiet", cwd=files)))
        assert again["kendall_tau"] == report["kendall_tau"]


def test_a_footrule_forest_reports_its_own_loss(files, models, ecrm_cmd):
    path = models["footrule"]
    info = json.loads(_ok(ecrm_cmd("info", "--json", path.name, cwd=files)))
    assert info["loss"] == "FootruleLoss" and info["weights"] == "forest"
    report = json.loads(_ok(ecrm_cmd("evaluate", path.name, "rank-test.csv", "--json",
                                     "--quiet", cwd=files)))
    assert "footrule" in report and "footrule" in report["baselines"]["mean_rank"]


def test_a_multiclass_csv_end_to_end(files, models, ecrm_cmd):
    path = models["multiclass"]
    info = json.loads(_ok(ecrm_cmd("info", "--json", path.name, cwd=files)))
    assert info["task"] == "multiclass" and info["loss"] == "ZeroOneLoss"
    assert info["output_space"] == "CandidateSpace" and info["labels"] == sorted(NAMES)

    _ok(ecrm_cmd("predict", path.name, "class-test.csv", "-o", "c.jsonl", "--quiet",
                 cwd=files))
    records = [json.loads(line) for line in (files / "c.jsonl").read_text().splitlines()]
    expected = [sorted(NAMES)[j] for j in _predicted(path, files / "class-test.csv").argmax(1)]
    assert records == [{"row": i, "class": c} for i, c in enumerate(expected)]
    out = _ok(ecrm_cmd("predict", path.name, "class-test.csv", "-o", "-", "--quiet",
                       cwd=files))
    assert out.splitlines() == ["row,class"] + [f"{i},{c}" for i, c in enumerate(expected)]

    report = json.loads(_ok(ecrm_cmd("evaluate", path.name, "class-test.csv", "--json",
                                     "--quiet", cwd=files)))
    truth = [row["labels"] for row in csv.DictReader(open(files / "class-test.csv"))]
    assert report["accuracy"] == pytest.approx(np.mean(np.array(expected) == truth))
    assert report["zero_one"] == pytest.approx(1 - report["accuracy"])
    assert list(report["baselines"]) == ["majority"]
    assert report["accuracy"] > report["baselines"]["majority"]["accuracy"]
    text = _ok(ecrm_cmd("evaluate", path.name, "class-test.csv", "--quiet", cwd=files))
    assert "4 classes" in text and "accuracy" in text and "majority" in text


def test_the_label_ranking_benchmark_layout(files, models, ecrm_cmd):
    path = models["bench"]
    info = json.loads(_ok(ecrm_cmd("info", "--json", path.name, cwd=files)))
    assert info["labels"] == ["label1", "label2", "label3", "label4"]
    out = _ok(ecrm_cmd("predict", path.name, "bench-test.csv", "-o", "-", "--quiet",
                       cwd=files))
    assert out.splitlines()[0] == "row,ranking" and len(out.splitlines()) == 21
    assert sorted(out.splitlines()[1].split(",")[1].split(">")) == info["labels"]
    report = json.loads(_ok(ecrm_cmd("evaluate", path.name, "bench-test.csv", "--json",
                                     "--quiet", cwd=files)))
    # the same rows as rank-test.csv, the labels numbered instead of named
    same = json.loads(_ok(ecrm_cmd("evaluate", models["ranking"].name, "rank-test.csv",
                                   "--json", "--quiet", cwd=files)))
    assert report["kendall_tau"] == pytest.approx(same["kendall_tau"])
    # its features are x1..x3: a CSV must name its columns so
    _refused(ecrm_cmd("predict", path.name, "rank-test.csv", "-o", "-", "--quiet", cwd=files),
             "rank-test.csv", "missing the feature columns")


def test_a_model_no_better_than_its_trivial_baseline_is_warned_about(files, ecrm_cmd):
    # alpha=100: nearly uniform weights, the most frequent class for every row
    _ok(ecrm_cmd("fit", "class-train.csv", "--task", "multiclass", "--alpha", "100", "-o",
                 "weak.ecrm", "--quiet", cwd=files))
    proc = ecrm_cmd("evaluate", "weak.ecrm", "class-test.csv", "--json", "--quiet", cwd=files)
    report = json.loads(_ok(proc))
    assert report["accuracy"] == report["baselines"]["majority"]["accuracy"]
    assert report["warnings"] == ["the model is no better than the most frequent class "
                                  f"(accuracy {report['accuracy']:.4f} against "
                                  f"{report['accuracy']:.4f})"]
    assert f"ecrm: warning: {report['warnings'][0]}" in proc.stderr.decode()


def test_a_ranking_model_saved_in_python_predicts_orderings(files, ecrm_cmd):
    X, S = _rows(40, 3)
    space = PermutationSpace(4)  # no names: the labels are the item numbers 0..3
    model = ECRM(KendallLoss(), space, alpha=1e-2).fit(X, space.from_scores(S))
    ecrm.save(model, files / "python.ecrm")
    out = _ok(ecrm_cmd("predict", "python.ecrm", "rank-test.csv", "-o", "-", "--quiet",
                       cwd=files))
    R = space.to_ranks(_predicted(files / "python.ecrm", files / "rank-test.csv"))
    assert out.splitlines() == ["row,ranking"] + [
        f"{i},{'>'.join(map(str, np.argsort(r)))}" for i, r in enumerate(R)]
    info = json.loads(_ok(ecrm_cmd("info", "--json", "python.ecrm", cwd=files)))
    assert info["task"] == "ranking" and info["labels"] == ["0", "1", "2", "3"]


@pytest.mark.parametrize("argv, needles", named([
    (["fit", "rank-train.csv", "--task", "ranking", "--loss", "hamming"],
     ["--loss hamming", "--task ranking", "kendall"]),
    (["fit", "class-train.csv", "--task", "multiclass", "--path-sep", "/"],
     ["--path-sep", "is for label sets (--task multilabel), not for classes"]),
    (["fit", "rank-train.csv", "--task", "ranking", "--cv", "--scoring", "lrap"],
     ["--scoring"]),
    (["fit", "class-train.csv", "--task", "ranking"],
     ["class-train.csv, line 2", "at least two labels"]),
    (["fit", "bad-rank.csv", "--task", "ranking"],
     ["bad-rank.csv, line 3", "leaves out 'gold'"]),
    (["fit", "unknown-rank.csv", "--task", "ranking"],
     ["unknown-rank.csv, line 3", "'x' is not one of the ranked labels (a, b)"]),
    (["fit", "twice-rank.csv", "--task", "ranking"],
     ["twice-rank.csv, line 2", "'a' appears twice"]),
    (["fit", "one-class.csv", "--task", "multiclass"], ["at least two classes"]),
    (["predict", "ranking.ecrm", "rank-test.csv", "-o", "-", "--scores"],
     ["--scores", "not for rankings", "ranking.ecrm"]),
    (["predict", "multiclass.ecrm", "class-test.csv", "-o", "-", "--per-level"],
     ["--per-level", "not for classes"]),
    (["evaluate", "ranking.ecrm", "rank-test.csv", "--plot", "."], ["--plot"]),
    (["evaluate", "multiclass.ecrm", "bad-class.csv"],
     ["bad-class.csv, line 3", "class 'purple' is not one the model knows"]),
    (["evaluate", "ranking.ecrm", "class-test.csv"], ["class-test.csv, line 2", "leaves out"]),
]))
def test_what_a_command_cannot_do_is_refused_in_one_line(files, models, ecrm_cmd, argv,
                                                           needles):
    for name, text in [("bad-rank.csv", "f1,labels\n1,red>green>blue>gold\n2,red>green>blue\n"),
                       ("unknown-rank.csv", "f1,labels\n1,a>b\n2,x>a\n"),
                       ("twice-rank.csv", "f1,labels\n1,a>b>a\n"),
                       ("one-class.csv", "f1,labels\n1,red\n2,red\n"),
                       ("bad-class.csv", "f1,f2,f3,labels\n1,2,3,red\n1,2,3,purple\n")]:
        (files / name).write_text(text)
    output = ["-o", "refused.ecrm"] if argv[0] == "fit" else []
    _refused(ecrm_cmd(*argv, *output, "--quiet", cwd=files), *needles)
    assert not (files / "refused.ecrm").exists()


def test_named_spaces_are_written_and_read_with_their_names(tmp_path):
    X, S = _rows(30, 4)
    ranking = PermutationSpace(4, labels=NAMES)
    classes = CandidateSpace(np.eye(4), labels=NAMES)
    for space, loss, Y in [(ranking, KendallLoss(), ranking.from_scores(S)),
                           (classes, ZeroOneLoss(classes), np.eye(4)[S.argmax(1)])]:
        ecrm.save(ECRM(loss, space).fit(X, Y), tmp_path / "m.ecrm")
        loaded = ecrm.load(tmp_path / "m.ecrm").output_space
        assert loaded == space and loaded.labels == tuple(NAMES)
        assert loaded != type(space)(*([4] if space is ranking else [np.eye(4)]))
    assert repr(ranking) == f"PermutationSpace(4, labels={NAMES!r})"
    assert repr(PermutationSpace(4)) == "PermutationSpace(4)"


@pytest.mark.parametrize("labels, message", [
    (["a", "a", "b"], "'a' appears twice"), (["a", "b"], "got 2"), ("abc", "got str"),
    ([1, 2, 3], "found int 1"), (["a", "", "c"], "found str ''"),
], ids=readable)
def test_space_names_are_checked(labels, message):
    with pytest.raises(ValueError, match=message):
        PermutationSpace(3, labels=labels)
    with pytest.raises(ValueError, match=message):
        CandidateSpace(np.eye(3), labels=labels)


def test_unnamed_candidates_are_named_by_value_or_position():
    assert _outputs.Classes(CandidateSpace.from_classes([-1, 1])).names == ["-1", "1"]
    assert _outputs.Classes(CandidateSpace([[0.5, 1], [1, 0]])).names == ["0", "1"]


def test_an_output_space_the_commands_do_not_read_is_named():
    from types import SimpleNamespace

    from ecrm.spaces import paper_network

    with pytest.raises(ValueError, match="classes and bucket orders; this model's outputs are a "
                                         "FlowPolytope"):
        _tasks.task_of(SimpleNamespace(output_space=paper_network()))


def test_task_of_names_the_task_of_every_space_the_command_line_reads():
    from ecrm import FlowPolytope, Hierarchy, MultilabelSpace
    from ecrm.losses import HammingLoss

    spaces = {"multilabel": [Hierarchy([("a", "b")]), MultilabelSpace(3)],
              "ranking": [PermutationSpace(3)],
              "multiclass": [CandidateSpace.from_classes([0, 1])]}
    for task, found in spaces.items():
        for space in found:
            assert _tasks.task_of(ECRM(HammingLoss(), space)) == task
    with pytest.raises(ValueError, match="FlowPolytope"):
        _tasks.task_of(ECRM(HammingLoss(), FlowPolytope([(0, 1)], [1, -1])))
