"""A new user's first hour, through the real ``ecrm`` command, one journey after another.

Each step checks what the user reads: the numbers, the warnings, the refusals and their
hints. The unscaled file's scale warning is checked in ``test_cli_text.py`` (its data and its
message), the thread rule of the Python estimators in ``test_threads.py``.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from _csv_tables import error_line
from _csv_tables import read_rows as _rows
from _csv_tables import write_rows as _write

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("first_hour")]

METRICS = ("hamming", "hierarchical", "exact_match", "macro_f1", "hF")








def _ok(ecrm_cmd, *args, cwd) -> str:
    proc = ecrm_cmd(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    return proc.stdout.decode()


def _error(ecrm_cmd, *args, cwd) -> str:
    return error_line(ecrm_cmd(*args, cwd=cwd))


def _metrics(ecrm_cmd, *args, cwd) -> dict:
    out = json.loads(_ok(ecrm_cmd, "evaluate", *args, "--json", "--quiet", cwd=cwd))
    return {k: out[k] for k in METRICS}


def _with_ids(source: Path, target: Path, delimiter: str = ",", label_sep: str = ";"):
    rows = _rows(source)
    body = [[f"doc{i}", *r[:-1], r[-1].replace(";", label_sep)] for i, r in enumerate(rows[1:])]
    return _write(target, [["id", *rows[0]], *body], delimiter)


def test_a_hierarchy_file_with_an_id_column_in_every_form(ecrm_cmd, train_csv, test_csv,
                                                          tmp_path):
    _with_ids(train_csv, tmp_path / "train.csv")
    _with_ids(test_csv, tmp_path / "test.csv")
    _ok(ecrm_cmd, "fit", "train.csv", "--id-column", "id", "--path-sep", "/", "-o", "m.ecrm",
        "--quiet", cwd=tmp_path)
    err = _error(ecrm_cmd, "evaluate", "m.ecrm", "test.csv", cwd=tmp_path)
    assert err.endswith("leave it out with --id-column 'id')")  # ids are never guessed
    direct = _metrics(ecrm_cmd, "m.ecrm", "test.csv", "--id-column", "id", cwd=tmp_path)
    np.testing.assert_allclose([direct["hierarchical"], direct["exact_match"]],
                               [0.0967, 0.56], atol=5e-4)
    for form in ((), ("--leaves-only",), ("--per-level",)):
        _ok(ecrm_cmd, "predict", "m.ecrm", "test.csv", "--id-column", "id", *form, "-o",
            "p.csv", "--quiet", cwd=tmp_path)
        written = _rows(tmp_path / "p.csv")
        assert written[0][0] == "id" and written[1][0] == "doc0"  # the rows by their ids
        assert _metrics(ecrm_cmd, "m.ecrm", "test.csv", "--id-column", "id", "--predictions",
                        "p.csv", cwd=tmp_path) == direct, form
    info = _ok(ecrm_cmd, "info", "m.ecrm", cwd=tmp_path).splitlines()
    width = info[0].index(info[0].split()[1], len(info[0].split()[0]))
    assert all(line[:width].strip() == "" or line[width - 2:width] == "  " for line in info)


def test_a_semicolon_file_with_bar_labels_is_read_back_as_fitted(ecrm_cmd, train_csv,
                                                                 test_csv, tmp_path):
    _with_ids(train_csv, tmp_path / "train.csv", ";", "|")
    _with_ids(test_csv, tmp_path / "test.csv", ";", "|")
    _ok(ecrm_cmd, "fit", "train.csv", "--delimiter", ";", "--label-sep", "|", "--id-column",
        "id", "--path-sep", "/", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    # predict and evaluate remember the reading options of the fit
    got = _metrics(ecrm_cmd, "m.ecrm", "test.csv", "--id-column", "id", cwd=tmp_path)
    np.testing.assert_allclose(got["hierarchical"], 0.0967, atol=5e-4)
    _ok(ecrm_cmd, "predict", "m.ecrm", "test.csv", "--id-column", "id", "-o", "p.csv",
        "--quiet", cwd=tmp_path)


def test_a_multiclass_file_and_a_file_of_label_sets_given_as_classes(ecrm_cmd, train_csv,
                                                                     test_csv, tmp_path):
    err = _error(ecrm_cmd, "fit", str(train_csv), "--task", "multiclass", "-o", "m.ecrm",
                 "--quiet", cwd=tmp_path)
    assert "--task multiclass reads one class per row" in err
    assert not (tmp_path / "m.ecrm").exists()
    for name, source in (("train.csv", train_csv), ("test.csv", test_csv)):
        rows = _rows(source)
        _write(tmp_path / name, [rows[0]] + [r[:-1] + [r[-1].split(";")[0].split("/")[0]]
                                             for r in rows[1:]])
    _ok(ecrm_cmd, "fit", "train.csv", "--task", "multiclass", "-o", "m.ecrm", "--quiet",
        cwd=tmp_path)
    out = json.loads(_ok(ecrm_cmd, "evaluate", "m.ecrm", "test.csv", "--json", "--quiet",
                         cwd=tmp_path))
    assert 0.0 <= out["accuracy"] <= 1.0


def test_a_ranking_file(ecrm_cmd, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    labels = np.array(["a", "b", "c", "d"])
    scores = X @ rng.normal(size=(3, 4)) + 0.3 * rng.normal(size=(120, 4))
    rows = [["f0", "f1", "f2", "labels"]] + [
        [f"{v:.5f}" for v in x] + [">".join(labels[np.argsort(-s)])]
        for x, s in zip(X, scores, strict=True)]
    _write(tmp_path / "train.csv", rows[:91])
    _write(tmp_path / "test.csv", [rows[0]] + rows[91:])
    _ok(ecrm_cmd, "fit", "train.csv", "--task", "ranking", "-o", "m.ecrm", "--quiet",
        cwd=tmp_path)
    _ok(ecrm_cmd, "predict", "m.ecrm", "test.csv", "-o", "p.csv", "--quiet", cwd=tmp_path)
    assert all(sorted(r[-1].split(">")) == list(labels) for r in _rows(tmp_path / "p.csv")[1:])
    out = json.loads(_ok(ecrm_cmd, "evaluate", "m.ecrm", "test.csv", "--json", "--quiet",
                         cwd=tmp_path))
    assert out["kendall_tau"] > 0.3  # the rankings follow the features


def test_a_test_file_with_a_label_unseen_in_training(ecrm_cmd, train_csv, test_csv, tmp_path):
    _ok(ecrm_cmd, "fit", str(train_csv), "--path-sep", "/", "-o", "m.ecrm", "--quiet",
        cwd=tmp_path)
    rows = _rows(test_csv)
    i = next(i for i, r in enumerate(rows) if i and "science/maths" in r[-1].split(";"))
    rows[i][-1] = rows[i][-1].replace("science/maths", "science/chemistry")
    _write(tmp_path / "unseen.csv", rows)
    err = _error(ecrm_cmd, "evaluate", "m.ecrm", "unseen.csv", "--quiet", cwd=tmp_path)
    assert err.endswith("give --unseen ignore") and f"line {i + 1}" in err
    out = json.loads(_ok(ecrm_cmd, "evaluate", "m.ecrm", "unseen.csv", "--unseen", "ignore",
                         "--json", "--quiet", cwd=tmp_path))
    assert out["unseen"] == {"labels": {"science/chemistry": 1}, "rows": 1}
