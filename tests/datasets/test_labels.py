"""Labels as users hold them: names, paths and per-level columns in; names, leaves and
levels out, from Python and through the real ``ecrm`` entry point."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

from ecrm import ECRM, Hierarchy
from ecrm.datasets.labels import (
    LabelRowError,
    as_label_matrix,
    labels_from_levels,
    labels_of,
    level_names,
)
from ecrm.losses import HammingLoss

NAMES = Hierarchy([("animal", "mammal"), ("mammal", "dog"), ("animal", "bird"),
                   ("plant", "tree")])
PATHS = Hierarchy([("animal", "animal/mammal"), ("animal/mammal", "animal/mammal/dog"),
                   ("animal", "animal/bird"), ("plant", "plant/tree")])


def test_names_single_names_and_sets_give_the_closed_matrix():
    expected = NAMES.to_matrix([["dog"], ["bird", "plant"], []])
    assert_array_equal(as_label_matrix(NAMES, [["dog"], ["bird", "plant"], []]), expected)
    assert_array_equal(as_label_matrix(NAMES, [{"dog"}, ("bird", "plant"), []]), expected)
    assert_array_equal(as_label_matrix(NAMES, ["dog", "tree"]),
                       NAMES.to_matrix([["dog"], ["tree"]]))
    assert_array_equal(as_label_matrix(NAMES, np.array(["dog", "tree"])),
                       NAMES.to_matrix([["dog"], ["tree"]]))


def test_a_matrix_passes_unchanged():
    Y = NAMES.to_matrix([["dog"], []])
    assert as_label_matrix(NAMES, Y) is Y
    nested = Y.astype(int).tolist()
    assert as_label_matrix(NAMES, nested) is nested


@pytest.mark.parametrize("space", [NAMES, PATHS], ids=["plain names", "path names"])
def test_per_level_columns_name_paths_or_deepest_values(space):
    table = pd.DataFrame({"Cat1": ["animal", "animal", "plant", None],
                          "Cat2": ["mammal", "bird", "", None],
                          "Cat3": ["dog", None, None, None]})
    Y = as_label_matrix(space, table)
    leaves = [["dog"], ["bird"], ["plant"], []] if space is NAMES else \
        [["animal/mammal/dog"], ["animal/bird"], ["plant"], []]
    assert_array_equal(Y, space.to_matrix(leaves))
    assert_array_equal(as_label_matrix(space, table.to_numpy(dtype=object)), Y)


def test_levels_that_contradict_the_hierarchy_name_the_row():
    table = np.array([["animal", "mammal"], ["plant", "dog"]], dtype=object)
    with pytest.raises(LabelRowError, match=r"row 1: the levels \['plant', 'dog'\] contradict "
                       r"the hierarchy, where 'dog' is under \['animal', 'mammal'\]"):
        as_label_matrix(NAMES, table)
    with pytest.raises(LabelRowError, match="row 0: the levels .* name neither"):
        as_label_matrix(NAMES, np.array([["fungus"]], dtype=object))
    with pytest.raises(ValueError, match="row 1 has the label 'cat'"):
        as_label_matrix(NAMES, [["dog"], ["cat"]])


def _data(m=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 2))
    names = [["dog"] if x > 0.5 else ["bird"] if x > 0 else ["tree"] if y > 0 else []
             for x, y in X]
    return X, names


def test_fit_and_score_take_label_names_as_the_matrix():
    X, names = _data()
    by_names = ECRM(HammingLoss(), NAMES, gamma=1.0).fit(X, names)
    by_matrix = ECRM(HammingLoss(), NAMES, gamma=1.0).fit(X, NAMES.to_matrix(names))
    assert_array_equal(by_names.predict(X), by_matrix.predict(X))
    assert by_names.score(X, names) == by_matrix.score(X, NAMES.to_matrix(names))


def test_predict_labels_names_leaves_and_levels():
    X, names = _data()
    model = ECRM(HammingLoss(), NAMES, gamma=1.0).fit(X, names)
    Y = model.predict(X)
    assert model.predict_labels(X) == NAMES.to_labels(Y)
    assert model.predict_labels(X, leaves_only=True) == NAMES.to_labels(Y, leaves_only=True)
    levels = model.predict_labels(X, per_level=True)
    assert isinstance(levels, np.ndarray) and levels.shape == (len(X), 3)
    assert levels.dtype == object and all(isinstance(c, list) for c in levels.ravel())
    depth = dict(zip(NAMES.labels, NAMES.depth, strict=True))
    for row, by_level in zip(NAMES.to_labels(Y), levels.tolist(), strict=True):
        assert len(by_level) == 3
        assert sorted(v for level in by_level for v in level) == sorted(row)
        assert all(depth[v] == k for k, level in enumerate(by_level) for v in level)
    # one column per level for pandas, under the names ecrm predict --per-level writes
    frame = pd.DataFrame(levels, columns=level_names(NAMES))
    assert list(frame.columns) == ["level_0", "level_1", "level_2"]
    assert frame["level_2"].tolist() == [["dog"] if "dog" in r else []
                                         for r in NAMES.to_labels(Y)]
    with pytest.raises(ValueError, match="choose one"):
        labels_of(NAMES, Y, leaves_only=True, per_level=True)


def _write_levels(path, m=50, seed=1):
    rng = np.random.default_rng(seed)
    rows = ["x,y,Cat1,Cat2,Cat3"]
    for x, y in rng.normal(size=(m, 2)):
        levels = (["animal", "mammal", "dog"] if x > 0.5 else ["animal", "bird", ""] if x > 0
                  else ["plant", "tree", ""] if y > 0 else ["plant", "", ""])
        rows.append(f"{x:.4f},{y:.4f},{','.join(levels)}")
    path.write_text("\n".join(rows) + "\n")


def test_cli_reads_level_columns_and_writes_levels(ecrm_cmd, tmp_path):
    _write_levels(tmp_path / "d.csv")
    cols = ["--level-columns", "Cat1,Cat2,Cat3"]
    fit = ecrm_cmd("fit", "d.csv", *cols, "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert "6 labels (tree, 4 edges)" in fit.stdout.decode()
    pred = ecrm_cmd("predict", "m.ecrm", "d.csv", *cols, "--per-level", "--path-sep", "/",
                    "-o", "p.csv", "--quiet", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["row", "Cat1", "Cat2", "Cat3"]  # the model's level columns
    given = [line.split(",")[2:] for line in (tmp_path / "d.csv").read_text().split("\n")[1:]
             if line]
    agree = np.mean([row[1:] == levels for row, levels in zip(rows[1:], given, strict=True)])
    assert agree > 0.8  # the training file, a well separated problem
    ev = ecrm_cmd("evaluate", "m.ecrm", "d.csv", *cols, "--quiet", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    # what predict wrote, evaluate reads (the scores, not written, aside)
    runs = [json.loads(ecrm_cmd("evaluate", "m.ecrm", "d.csv", *extra, "--json", "--quiet",
                                cwd=tmp_path).stdout)
            for extra in ([], ["--predictions", "p.csv"])]
    for run in runs:
        run.pop("micro_auprc", None)
    assert runs[0] == runs[1]


def test_cli_refuses_a_level_value_holding_the_separator(ecrm_cmd, tmp_path):
    (tmp_path / "d.csv").write_text("x,Cat1,Cat2\n1,a,b/c\n")
    proc = ecrm_cmd("fit", "d.csv", "--level-columns", "Cat1,Cat2", "-o", "m.ecrm",
                    "--quiet", cwd=tmp_path)
    assert proc.returncode == 2
    assert "d.csv, line 2: the level value 'b/c' holds the path separator '/'" in \
        proc.stderr.decode()


def test_predict_labels_reaches_through_a_pipeline():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from ecrm.datasets.labels import predict_labels

    h = Hierarchy([("a", "a1"), ("a", "a2"), ("b", "b1")])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) * [1.0, 100.0, 0.01]
    Y = h.close(np.c_[X[:, 0] > 0, X[:, 1] > 0, X[:, 1] < 0, X[:, 2] > 0, X[:, 2] > 0.01])
    pipe = make_pipeline(StandardScaler(), ECRM(HammingLoss(), h)).fit(X, Y)
    inner = pipe[-1]
    Z = pipe[0].transform(X)
    for kw in ({}, {"leaves_only": True}):
        assert predict_labels(pipe, X, **kw) == inner.predict_labels(Z, **kw)
    assert predict_labels(pipe, X, per_level=True).tolist() == \
        inner.predict_labels(Z, per_level=True).tolist()
    assert predict_labels(inner, Z) == inner.predict_labels(Z)  # an estimator alone


def test_hierarchy_from_levels_reads_the_table_back():
    import pandas as pd

    from ecrm.datasets.labels import LabelRowError, hierarchy_from_levels

    table = pd.DataFrame({"l1": ["news", "news", "science", "science", "news"],
                          "l2": ["sport", "politics", None, "sport", ""]})
    h = hierarchy_from_levels(table)
    # "sport" under two parents: two labels; missing or empty cells end a path
    assert h.labels == ("news", "news/politics", "news/sport", "science", "science/sport")
    assert h.is_tree and len(h.edges) == 3
    Y = as_label_matrix(h, table)
    assert labels_of(h, Y, leaves_only=True) == [["news/sport"], ["news/politics"],
                                                 ["science"], ["science/sport"], ["news"]]
    model = ECRM(HammingLoss(), h).fit(np.eye(5), table)  # y as the level table itself
    assert model.Y_fit_.tolist() == Y.tolist()
    with pytest.raises(LabelRowError, match="row 0: .*separator '/'"):
        hierarchy_from_levels([["a/b", "c"]])
    with pytest.raises(ValueError, match="names no label"):
        hierarchy_from_levels([[None, None]])


# the same step under two parents, and a DAG label ("c" under "a/x" and "b")
STEPS = Hierarchy([("a", "a/x"), ("b", "b/x"), ("a/x", "c"), ("b", "c"), ("b/x", "b/x/y")])
# a tree where the same step ("x") is under two parents and nothing is below it
TWICE = Hierarchy([("a", "a/x"), ("b", "b/x"), ("b", "b/y"), ("b/y", "b/y/z")])


def _closed_sets(h):
    """Every label set of ``h`` closed under parents (brute force over all subsets)."""
    rows = []
    for bits in range(2 ** h.n_labels):
        on = np.array([(bits >> j) & 1 for j in range(h.n_labels)], dtype=float)
        if np.array_equal(h.close(on[None, :])[0], on):
            rows.append(on)
    return np.array(rows)


@pytest.mark.parametrize("h", [STEPS, TWICE], ids=["dag", "tree"])
def test_level_names_read_back_for_every_closed_label_set(h):
    Y = _closed_sets(h)
    back = labels_from_levels(h, labels_of(h, Y, per_level=True))
    assert_array_equal(h.to_matrix(back, close=False), Y)


def test_last_steps_read_back_unless_another_label_set_writes_the_same_row():
    Y = _closed_sets(TWICE)
    # what ecrm predict --per-level --path-sep / writes
    written = [[sorted(v.rsplit("/", 1)[-1] for v in cell) for cell in row]
               for row in labels_of(TWICE, Y, per_level=True)]
    refused = 0
    for i, row in enumerate(written):
        try:
            back = labels_from_levels(TWICE, [row], path_sep="/")
        except LabelRowError:
            assert written.count(row) > 1  # "x" under a or under b, both on
            refused += 1
            continue
        assert_array_equal(TWICE.to_matrix(back, close=False)[0], Y[i])
        assert written.count(row) == 1
    assert 0 < refused < len(Y) // 2


def test_a_level_value_that_names_no_label_or_too_many_names_the_row():
    with pytest.raises(LabelRowError, match="row 1: the level-1 value 'z' names no label"):
        labels_from_levels(STEPS, [["a"], ["b", "z"]], path_sep="/")
    # "x" under a and b, both on: given once it cannot say which
    with pytest.raises(LabelRowError, match=r"row 0: the level-1 value 'x' names 2 labels "
                       r"of depth 1 \(\['a/x', 'b/x'\]\)"):
        labels_from_levels(STEPS, [[["a", "b"], "x"]], path_sep="/")
    assert labels_from_levels(STEPS, [[["a", "b"], ["x", "x"]], [["b"], "x"]],
                              path_sep="/") == [["a", "b", "a/x", "b/x"], ["b", "b/x"]]
