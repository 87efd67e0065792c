"""``ecrm evaluate`` scores what it is given: predictions in every form ``ecrm predict``
writes, test files with labels unseen in training, the reading options of the fit.

The command-line tests run the real ``ecrm`` (``ecrm_cmd``) on the example files.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from _csv_tables import error_line as _error
from _csv_tables import read_rows as _rows
from _csv_tables import write_rows as _write
from ecrm import Hierarchy
from ecrm.commands.evaluate import close_predictions

METRICS = ("hamming", "hierarchical", "exact_match", "macro_f1", "hF")











def _evaluate(ecrm_cmd, model, data, *extra, cwd) -> dict:
    proc = ecrm_cmd("evaluate", str(model), str(data), *extra, "--json", "--quiet", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _metrics(ecrm_cmd, model, data, *extra, cwd) -> dict:
    out = _evaluate(ecrm_cmd, model, data, *extra, cwd=cwd)
    return {k: out[k] for k in METRICS}


@pytest.fixture(scope="module")
def model_file(train_csv, tmp_path_factory) -> Path:
    from ecrm.cli import main

    path = tmp_path_factory.mktemp("model") / "m.ecrm"
    assert main(["fit", str(train_csv), "--path-sep", "/", "-o", str(path), "--quiet"]) == 0
    return path


# -- 1. predictions of every form score as the sets they stand for -----------------------------
@pytest.mark.parametrize("out", ["lo.csv", "lo.jsonl"])
def test_leaves_only_predictions_score_as_the_full_sets(ecrm_cmd, model_file, test_csv,
                                                        tmp_path, out):
    pred = ecrm_cmd("predict", str(model_file), str(test_csv), "--leaves-only", "-o", out,
                    "--quiet", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    direct = _metrics(ecrm_cmd, model_file, test_csv, cwd=tmp_path)
    assert _metrics(ecrm_cmd, model_file, test_csv, "--predictions", out,
                    cwd=tmp_path) == direct
    # the example's numbers: unclosed, the same predictions scored 0.34 and 0.02
    np.testing.assert_allclose([direct["hierarchical"], direct["exact_match"]],
                               [0.0967, 0.56], atol=5e-4)


def test_a_file_mixing_full_and_leaves_only_rows_is_refused(ecrm_cmd, model_file, test_csv,
                                                            tmp_path):
    pred = ecrm_cmd("predict", str(model_file), str(test_csv), "-o", "p.csv", "--quiet",
                    cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    rows = _rows(tmp_path / "p.csv")
    full = next(i for i, r in enumerate(rows) if i and ";" in r[1] and "/" in r[1])
    leaf = next(i for i, r in enumerate(rows) if i > full and r[1].count(";") == 1
                and r[1].count("/") == 1)
    rows[leaf][1] = next(v for v in rows[leaf][1].split(";") if "/" in v)
    _write(tmp_path / "mixed.csv", rows)
    err = _error(ecrm_cmd("evaluate", str(model_file), str(test_csv), "--predictions",
                          "mixed.csv", "--quiet", cwd=tmp_path))
    parent = rows[leaf][1].split("/")[0]
    assert err == (f"ecrm: error: mixed.csv, line {leaf + 1}: lists {rows[leaf][1]!r} without "
                   f"{parent!r}; each row of this file lists every label of its set (as ecrm "
                   f"predict writes, and line {full + 1} does), not the most specific ones "
                   "only (--leaves-only)")


H3 = Hierarchy([("a", "a/b"), ("a/b", "a/b/c"), ("d", "d/e")])


def test_closing_predictions_of_a_three_level_hierarchy():
    names = list(H3.labels)
    idx = {n: j for j, n in enumerate(names)}

    def row(*labels):
        y = np.zeros(len(names))
        y[[idx[v] for v in labels]] = 1
        return y

    leaves = np.array([row("a/b/c"), row("d/e", "a/b"), row(), row("a")])
    full = H3.close(leaves)
    np.testing.assert_array_equal(close_predictions(H3, leaves, [2, 3, 4, 5], "p.csv"), full)
    np.testing.assert_array_equal(close_predictions(H3, full, [2, 3, 4, 5], "p.csv"), full)
    # a label with one ancestor but not the other: neither form
    with pytest.raises(ValueError, match=r"^p.csv, line 3: lists 'a/b/c' with 'a' but "
                                         r"'a/b/c' without 'a/b'"):
        close_predictions(H3, np.array([row(), row("a", "a/b/c")]), [2, 3], "p.csv")
    # per level, every level above a label is named
    with pytest.raises(ValueError, match=r"^p.csv, line 2: lists 'd/e' without 'd'; each "
                                         r"row of this file names a label at every level"):
        close_predictions(H3, np.array([row("d/e")]), [2], "p.csv", per_level=True)
    flat = Hierarchy([], labels=["x", "y"])
    Y = np.array([[1.0, 0.0]])
    assert close_predictions(flat, Y, [2], "p.csv") is Y


# -- 3. --task multiclass on label sets --------------------------------------------------------
def test_multiclass_refuses_a_file_of_label_sets(ecrm_cmd, train_csv, tmp_path):
    err = _error(ecrm_cmd("fit", str(train_csv), "--task", "multiclass", "-o", "m.ecrm",
                          "--quiet", cwd=tmp_path))
    sets = [i + 1 for i, r in enumerate(_rows(train_csv)) if i and ";" in r[-1]]
    assert err == (f"ecrm: error: {train_csv}, lines {', '.join(map(str, sets[:5]))} and "
                   f"{len(sets) - 5} more: the label column holds several labels separated "
                   "by ';' (e.g. 'sport/football;arts/film'), but --task multiclass reads "
                   "one class per row; fit label sets with --task multilabel (the default; "
                   "--path-sep / for label paths)")
    assert not (tmp_path / "m.ecrm").exists()
    rows = _rows(train_csv)
    one = [r[:-1] + [r[-1].split(";")[0]] for r in rows]  # one class per row
    one[7][-1] = "arts|music"
    _write(tmp_path / "one.csv", one)
    err = _error(ecrm_cmd("fit", "one.csv", "--task", "multiclass", "-o", "m.ecrm",
                          "--quiet", cwd=tmp_path))
    assert err.startswith("ecrm: error: one.csv, line 8: the label column holds several "
                          "labels separated by '|' (e.g. 'arts|music')")
    assert err.endswith("--path-sep / for label paths, --label-sep '|')")
    one[7][-1] = "arts"
    _write(tmp_path / "one.csv", one)
    fit = ecrm_cmd("fit", "one.csv", "--task", "multiclass", "-o", "m.ecrm", "--quiet",
                   cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr


# -- 2. labels and classes unseen in training --------------------------------------------------
def _replace_first(rows, old: str, new: str) -> int:
    """Replace ``old`` in the first label cell holding it; its file line."""
    i = next(i for i, r in enumerate(rows) if i and old in r[-1].split(";"))
    rows[i][-1] = ";".join(new if v == old else v for v in rows[i][-1].split(";"))
    return i + 1


def test_unseen_labels_are_refused_or_left_out_and_counted(ecrm_cmd, model_file, test_csv,
                                                           tmp_path):
    rows = _rows(test_csv)
    line = _replace_first(rows, "science/maths", "science/chemistry")
    _write(tmp_path / "unseen.csv", rows)
    err = _error(ecrm_cmd("evaluate", str(model_file), "unseen.csv", "--quiet", cwd=tmp_path))
    assert err == (f"ecrm: error: unseen.csv, line {line}: label 'science/chemistry' is not "
                   "one the model knows (1 label unseen in training, in 1 row); to "
                   "score the known labels and count these, give --unseen ignore")
    out = _evaluate(ecrm_cmd, model_file, "unseen.csv", "--unseen", "ignore", cwd=tmp_path)
    assert out["unseen"] == {"labels": {"science/chemistry": 1}, "rows": 1}
    assert out["n_rows"] == len(rows) - 1
    # the row keeps the known ancestor of the unseen path: scored as a file saying 'science'
    _replace_first(rows, "science/chemistry", "science")
    _write(tmp_path / "known.csv", rows)
    known = _evaluate(ecrm_cmd, model_file, "known.csv", cwd=tmp_path)
    assert "unseen" not in known
    assert {k: out[k] for k in METRICS} == {k: known[k] for k in METRICS}
    text = ecrm_cmd("evaluate", str(model_file), "unseen.csv", "--unseen", "ignore", "--quiet",
                    cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.decode().splitlines()[-1] == (
        "  unseen in training (--unseen ignore): 1 label, left out of the labels of 1 row: "
        "'science/chemistry' (1 row)")


def _one_class(source: Path, target: Path) -> Path:
    """``source`` with one class a row: the top of its first label path."""
    rows = _rows(source)
    return _write(target, [rows[0]] + [r[:-1] + [r[-1].split(";")[0].split("/")[0]]
                                       for r in rows[1:]])


def test_rows_of_unseen_classes_are_refused_or_left_out_and_counted(ecrm_cmd, train_csv,
                                                                    test_csv, tmp_path):
    _one_class(train_csv, tmp_path / "train.csv")
    rows = _rows(_one_class(test_csv, tmp_path / "test.csv"))
    fit = ecrm_cmd("fit", "train.csv", "--task", "multiclass", "-o", "m.ecrm", "--quiet",
                   cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    rows[3][-1] = "music"
    _write(tmp_path / "unseen.csv", rows)
    _write(tmp_path / "seen.csv", rows[:3] + rows[4:])
    err = _error(ecrm_cmd("evaluate", "m.ecrm", "unseen.csv", "--quiet", cwd=tmp_path))
    assert err == ("ecrm: error: unseen.csv, line 4: class 'music' is not one the model "
                   "knows (1 class unseen in training, in 1 row); to score the other rows "
                   "and count these, give --unseen ignore")
    seen = _evaluate(ecrm_cmd, "m.ecrm", "seen.csv", cwd=tmp_path)
    pred = ecrm_cmd("predict", "m.ecrm", "unseen.csv", "-o", "p.csv", "--quiet", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    for extra in ([], ["--predictions", "p.csv"]):
        out = _evaluate(ecrm_cmd, "m.ecrm", "unseen.csv", "--unseen", "ignore", *extra,
                        cwd=tmp_path)
        assert out["unseen"] == {"classes": {"music": 1}, "rows": 1}
        assert out["n_rows"] == len(rows) - 2
        assert {k: out[k] for k in ("accuracy", "macro_f1")} == {
            k: seen[k] for k in ("accuracy", "macro_f1")}


# -- 4. the reading options of the fit ----------------------------------------------------------
def test_predict_and_evaluate_read_files_as_fit_did(ecrm_cmd, train_csv, test_csv,
                                                    model_file, tmp_path):
    from ecrm import load

    for name, source in (("train.csv", train_csv), ("test.csv", test_csv)):
        _write(tmp_path / name, [r[:-1] + [r[-1].replace(";", "|")] for r in _rows(source)],
               delimiter=";")
    fit = ecrm_cmd("fit", "train.csv", "--delimiter", ";", "--label-sep", "|", "--path-sep",
                   "/", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert load(tmp_path / "m.ecrm").reading_options_ == {"delimiter": ";", "label_sep": "|",
                                                          "path_sep": "/"}
    assert getattr(load(model_file), "reading_options_", None) == {"path_sep": "/"}
    # the same rows, fitted the same: the same numbers as the comma file's model
    assert _metrics(ecrm_cmd, "m.ecrm", "test.csv", cwd=tmp_path) == _metrics(
        ecrm_cmd, model_file, test_csv, cwd=tmp_path)
    pred = ecrm_cmd("predict", "m.ecrm", "test.csv", "-o", "p.csv", "--quiet", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    cells = [r[1] for r in _rows(tmp_path / "p.csv")[1:]]
    assert any("|" in v for v in cells) and not any(";" in v for v in cells)
    assert _metrics(ecrm_cmd, "m.ecrm", "test.csv", "--predictions", "p.csv",
                    cwd=tmp_path) == _metrics(ecrm_cmd, "m.ecrm", "test.csv", cwd=tmp_path)
    # a separator given against the file: the error says which one the file uses
    err = _error(ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--label-sep", ";", "--quiet",
                          cwd=tmp_path))
    assert err.startswith("ecrm: error: test.csv, line ")
    assert "the labels look separated by '|', not ';': give --label-sep '|'" in err


# -- 5. per-level tables: the same in Python and on the command line ---------------------------
def _level_file(source: Path, target: Path) -> Path:
    """``source``'s first label path per row as the level columns cat1, cat2."""
    rows = _rows(source)
    out = [rows[0][:-1] + ["cat1", "cat2"]]
    for row in rows[1:]:
        out.append(row[:-1] + (row[-1].split(";")[0].split("/") + [""])[:2])
    return _write(target, out)


def _features(path: Path) -> np.ndarray:
    rows = _rows(path)
    p = sum(name.startswith("f") for name in rows[0])
    return np.array([[float(v) for v in r[:p]] for r in rows[1:]])


def _cells(table) -> list[list[str]]:
    return [[";".join(cell) for cell in row] for row in table]


@pytest.mark.parametrize("layout", ["level-columns", "paths"])
def test_python_and_the_cli_write_the_same_level_table(ecrm_cmd, train_csv, test_csv,
                                                       model_file, tmp_path, layout):
    from ecrm import load
    from ecrm.datasets.labels import labels_from_levels, labels_of, level_names, predict_labels

    if layout == "level-columns":
        _level_file(train_csv, tmp_path / "train.csv")
        test = _level_file(test_csv, tmp_path / "test.csv")
        fit = ecrm_cmd("fit", "train.csv", "--level-columns", "cat1,cat2", "-o", "m.ecrm",
                       "--quiet", cwd=tmp_path)
        assert fit.returncode == 0, fit.stderr
        path, columns = tmp_path / "m.ecrm", ["cat1", "cat2"]
    else:
        test, path, columns = test_csv, model_file, ["level_0", "level_1"]
    pred = ecrm_cmd("predict", str(path), str(test), "--per-level", "-o", "p.csv", "--quiet",
                    cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    written = _rows(tmp_path / "p.csv")
    model, X = load(path), _features(test)
    table = predict_labels(model, X, per_level=True)
    # the same columns and cells: each label's last path step, under the file's own columns
    assert ["row"] + level_names(model) == written[0] == ["row"] + columns
    assert _cells(table) == [r[1:] for r in written[1:]]
    assert _cells(model.predict_labels(X, per_level=True)) == _cells(table)
    assert any(v and "/" not in v for r in written[1:] for v in r[2:])
    # the other form: full label names, under level_0, level_1
    h = model.output_space
    full = predict_labels(model, X, per_level=True, path_sep=None)
    assert _cells(full) == _cells(labels_of(h, model.predict(X), per_level=True))
    assert all("/" in v for r in _cells(full) for v in r[1].split(";") if v)
    # both read back into the predictions, and a table written in Python into the metrics
    for form, sep in ((table, "/"), (full, None)):
        np.testing.assert_array_equal(h.to_matrix(labels_from_levels(h, form, path_sep=sep)),
                                      model.predict(X))
    _write(tmp_path / "py.csv", [["row", *level_names(model)]]
           + [[str(i), *row] for i, row in enumerate(_cells(table))])
    direct = _metrics(ecrm_cmd, path, test, cwd=tmp_path)
    for out in ("p.csv", "py.csv"):
        assert _metrics(ecrm_cmd, path, test, "--predictions", out, cwd=tmp_path) == direct


def test_a_remembered_delimiter_is_not_refused_for_a_benchmark_file(ecrm_cmd, tmp_path):
    rng = np.random.default_rng(0)
    rows, bench = [["x1", "x2", "labels"]], ["30,2,3"]
    for x1, x2 in rng.normal(size=(30, 2)):
        order = ["label1", "label2", "label3"] if x1 > 0 else ["label3", "label1", "label2"]
        rows.append([f"{x1:.3f}", f"{x2:.3f}", ">".join(order)])
        ranks = [order.index(f"label{k}") + 1 for k in (1, 2, 3)]
        bench.append(f"{x1:.3f},{x2:.3f}," + ",".join(map(str, ranks)))
    _write(tmp_path / "rank.csv", rows, delimiter=";")
    (tmp_path / "bench.csv").write_text("\n".join(bench) + "\n")
    fit = ecrm_cmd("fit", "rank.csv", "--task", "ranking", "--delimiter", ";", "-o", "m.ecrm",
                   "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    # the same rows in both layouts: the same numbers
    assert _evaluate(ecrm_cmd, "m.ecrm", "bench.csv", cwd=tmp_path)["kendall_tau"] == \
        _evaluate(ecrm_cmd, "m.ecrm", "rank.csv", cwd=tmp_path)["kendall_tau"]
    err = _error(ecrm_cmd("evaluate", "m.ecrm", "bench.csv", "--delimiter", ";", "--quiet",
                          cwd=tmp_path))
    assert "--delimiter is for CSV/TSV files with a header" in err
