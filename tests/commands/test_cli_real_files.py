"""Real files as they come, through the real ``ecrm`` command (``python -m ecrm``): an ID
column carried through to the predictions, another field separator (``--delimiter``), level
columns remembered by the model, a warning for another label separator, and predictions on
standard output by default (nothing written before the first row is ready)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ecrm.model_files.io import load


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def _write(path: Path, rows, delimiter: str = ",") -> Path:
    with open(path, "w", newline="") as fh:
        csv.writer(fh, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return path


def _error(proc) -> str:
    """The one error line of a failed command (no traceback)."""
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def _with_ids(rows, name="doc_id"):
    return [[name] + rows[0]] + [[f"d{i}"] + row for i, row in enumerate(rows[1:])]


# -- 1. --id-column ----------------------------------------------------------------------------
def test_an_id_column_is_carried_through_to_the_predictions_and_not_stored(
        ecrm_cmd, train_csv, test_csv, tmp_path):
    _write(tmp_path / "train.csv", _with_ids(_rows(train_csv)))
    test = _with_ids(_rows(test_csv))
    _write(tmp_path / "test.csv", test)
    # never guessed: without --id-column the column is a feature, and its text is refused
    err = _error(ecrm_cmd("fit", "train.csv", "--path-sep", "/", "-o", "m.ecrm", "--quiet",
                          cwd=tmp_path))
    assert err == ("ecrm: error: train.csv, line 2: column 'doc_id': expected a finite number; "
                   "found 'd0' (if it identifies the rows, leave it out with --id-column "
                   "'doc_id')")
    fit = ecrm_cmd("fit", "train.csv", "--path-sep", "/", "--id-column", "doc_id", "-o",
                   "m.ecrm", "--quiet", cwd=tmp_path)
    assert fit.returncode == 0 and not fit.stderr, fit.stderr
    model = load(tmp_path / "m.ecrm")
    assert model.feature_columns_ == ["f0", "f1", "f2", "f3", "f4", "f5"]
    assert not any("doc_id" in str(v) for v in vars(model).values() if isinstance(v, list))
    pred = ecrm_cmd("predict", "m.ecrm", "test.csv", "--id-column", "doc_id", "-o", "p.csv",
                    "--quiet", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    out = _rows(tmp_path / "p.csv")
    assert out[0] == ["doc_id", "labels"]
    assert [r[0] for r in out[1:]] == [r[0] for r in test[1:]]
    # the model remembers nothing about it: another file names none (rows numbered) ...
    plain = ecrm_cmd("predict", "m.ecrm", str(test_csv), "-o", "q.csv", "--quiet",
                     cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    numbered = _rows(tmp_path / "q.csv")
    assert numbered[0] == ["row", "labels"] and [r[1] for r in numbered] == [r[1] for r in out]
    # ... or another one, in JSON lines too, beside a ranking or class model's output
    _write(tmp_path / "other.csv", _with_ids(_rows(test_csv), "key"))
    js = ecrm_cmd("predict", "m.ecrm", "other.csv", "--id-column", "key", "-o", "p.jsonl",
                  "--quiet", cwd=tmp_path)
    assert js.returncode == 0, js.stderr
    first = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    assert first == {"key": "d0", "labels": out[1][1].split(";")}
    err = _error(ecrm_cmd("predict", "m.ecrm", str(test_csv), "--id-column", "doc_id", "-o",
                          "r.csv", "--quiet", cwd=tmp_path))
    assert "no ID column 'doc_id' in the header" in err and "--id-column)" in err


def test_a_numeric_column_named_like_an_id_is_used_but_warned_about(ecrm_cmd, train_csv,
                                                                    tmp_path):
    rows = _rows(train_csv)
    _write(tmp_path / "train.csv", [["id"] + rows[0]]
           + [[str(i)] + row for i, row in enumerate(rows[1:])])
    proc = ecrm_cmd("fit", "train.csv", "--path-sep", "/", "-o", "m.ecrm", "--quiet",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().strip() == (
        "ecrm: warning: the feature column 'id' looks like a row ID but is used as a feature; "
        "to leave it out, give --id-column id")
    assert load(tmp_path / "m.ecrm").n_features_in_ == 7


def test_id_column_and_delimiter_with_classes(ecrm_cmd, tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    classes = np.where(X[:, 0] > 0, "up", "down")
    _write(tmp_path / "c.csv", [["key", "x1", "x2", "labels"]]
           + [[f"k{i}", f"{a:.4f}", f"{b:.4f}", c] for i, ((a, b), c)
              in enumerate(zip(X, classes, strict=True))], ";")
    flags = ["--id-column", "key", "--delimiter", ";", "--quiet"]
    fit = ecrm_cmd("fit", "c.csv", "--task", "multiclass", "-o", "m.ecrm", *flags,
                   cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    pred = ecrm_cmd("predict", "m.ecrm", "c.csv", *flags, cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    lines = pred.stdout.decode().splitlines()
    assert lines[0] == "key,class" and lines[1].startswith("k0,") and len(lines) == 31
    ev = ecrm_cmd("evaluate", "m.ecrm", "c.csv", "--json", *flags, cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["accuracy"] > 0.8


# -- 2. --delimiter ----------------------------------------------------------------------------
def test_the_field_separator_is_suggested_and_chosen_with_delimiter(ecrm_cmd, train_csv,
                                                                    test_csv, tmp_path):
    rows = _rows(train_csv)
    _write(tmp_path / "semi.csv", rows, ";")
    _write(tmp_path / "tabs.csv", _rows(test_csv), "\t")
    err = _error(ecrm_cmd("fit", "semi.csv", "-o", "m.ecrm", "--quiet", cwd=tmp_path))
    assert err.endswith("semi.csv, line 1: the header is one column "
                        f"{';'.join(rows[0])!r}: the fields look separated by ';', not ',' "
                        "(give --delimiter ';')")
    fit = ecrm_cmd("fit", "semi.csv", "--delimiter", ";", "--path-sep", "/", "-o", "m.ecrm",
                   "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    err = _error(ecrm_cmd("predict", "m.ecrm", "tabs.csv", "-o", "p.csv", "--quiet",
                          cwd=tmp_path))
    assert err.endswith("(give --delimiter '\\t')")
    for tab in ("\\t", "tab", "\t"):
        pred = ecrm_cmd("predict", "m.ecrm", "tabs.csv", "--delimiter", tab, "-o", "p.csv",
                        "--quiet", cwd=tmp_path)
        assert pred.returncode == 0, pred.stderr
        assert len(_rows(tmp_path / "p.csv")) == len(_rows(test_csv))
    ev = ecrm_cmd("evaluate", "m.ecrm", "tabs.csv", "--delimiter", "\\t", "--json", "--quiet",
                  cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["n_rows"] == len(_rows(test_csv)) - 1
    # the readers' hint names the flags, not the Python parameters
    _write(tmp_path / "nolabels.csv", [["x", "tags"], ["1", "a"], ["2", "b"]])
    err = _error(ecrm_cmd("fit", "nolabels.csv", "-o", "m2.ecrm", "--quiet", cwd=tmp_path))
    assert err.endswith("(choose it with --label-column, or --level-columns)")
    bad = ecrm_cmd("fit", "nolabels.csv", "--delimiter", "ab", "-o", "m2.ecrm", "--quiet",
                   cwd=tmp_path)  # refused at parse time (argparse's usage, then the error)
    assert bad.returncode == 2 and b"--delimiter must be one character" in bad.stderr


# -- 3. level columns remembered -----------------------------------------------------------------
def _levels(source: Path, target: Path) -> Path:
    """``source``'s first label path per row as the level columns cat1, cat2."""
    rows = _rows(source)
    k = rows[0].index("labels")
    out = [[h for h in rows[0] if h != "labels"] + ["cat1", "cat2"]]
    for row in rows[1:]:
        steps = row[k].split(";")[0].split("/") + [""]
        out.append([v for j, v in enumerate(row) if j != k] + steps[:2])
    return _write(target, out)


def test_a_model_remembers_its_level_columns(ecrm_cmd, train_csv, test_csv, tmp_path):
    _levels(train_csv, tmp_path / "train.csv")
    _levels(test_csv, tmp_path / "test.csv")
    fit = ecrm_cmd("fit", "train.csv", "--level-columns", "cat1,cat2", "-o", "m.ecrm",
                   "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert load(tmp_path / "m.ecrm").level_columns_ == ["cat1", "cat2"]
    runs = {}
    for name, flag in [("given", ["--level-columns", "cat1,cat2"]), ("remembered", [])]:
        pred = ecrm_cmd("predict", "m.ecrm", "test.csv", *flag, "-o", f"{name}.csv",
                        "--quiet", cwd=tmp_path)
        assert pred.returncode == 0, pred.stderr
        runs[name] = (tmp_path / f"{name}.csv").read_bytes()
    assert runs["given"] == runs["remembered"]
    # a file without the level columns (nothing to predict from there) is read too
    rows = _rows(tmp_path / "test.csv")
    _write(tmp_path / "features.csv", [row[:-2] for row in rows])
    bare = ecrm_cmd("predict", "m.ecrm", "features.csv", "-o", "bare.csv", "--quiet",
                    cwd=tmp_path)
    assert bare.returncode == 0, bare.stderr
    assert (tmp_path / "bare.csv").read_bytes() == runs["given"]
    ev = ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--json", "--quiet", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["n_rows"] == len(rows) - 1
    info = ecrm_cmd("info", "m.ecrm", "--json", cwd=tmp_path)
    assert json.loads(info.stdout)["level_columns"] == ["cat1", "cat2"], info.stderr


# -- 4. another label separator ----------------------------------------------------------------
def test_fit_warns_when_some_rows_use_another_label_separator(ecrm_cmd, train_csv, tmp_path):
    rows = _rows(train_csv)
    k = rows[0].index("labels")
    changed = [i for i, row in enumerate(rows[1:], 1) if ";" in row[k]][:40]
    for i in changed:
        rows[i][k] = rows[i][k].replace(";", "|")
    _write(tmp_path / "mixed.csv", rows)
    proc = ecrm_cmd("fit", "mixed.csv", "--path-sep", "/", "-o", "m.ecrm", "--quiet",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode().strip()
    assert err == (f"ecrm: warning: mixed.csv: {len(changed)} of {len(rows) - 1} rows hold '|' "
                   f"in the label column 'labels' (e.g. line {changed[0] + 1}: "
                   f"{rows[changed[0]][k]!r}), which does not separate labels here (the "
                   "separator is ';'); did you mean --label-sep '|'?")
    quiet = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "-o", "n.ecrm", "--quiet",
                     cwd=tmp_path)
    assert quiet.returncode == 0 and not quiet.stderr, quiet.stderr


# -- 5. standard output by default -------------------------------------------------------------
@pytest.fixture(scope="module")
def model_file(train_csv, tmp_path_factory) -> Path:
    from ecrm.cli import main

    path = tmp_path_factory.mktemp("model") / "m.ecrm"
    assert main(["fit", str(train_csv), "--path-sep", "/", "-o", str(path), "--quiet"]) == 0
    return path


def test_predict_writes_to_standard_output_without_o(ecrm_cmd, model_file, test_csv,
                                                     tmp_path):
    proc = ecrm_cmd("predict", str(model_file), str(test_csv), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"row,labels\n0,") and b"\r" not in proc.stdout
    assert proc.stdout.count(b"\n") == len(_rows(test_csv))
    assert b"predictions written to standard output" in proc.stderr
    assert list(tmp_path.iterdir()) == []
    rows = _rows(test_csv)
    rows[3][0] = "oops"
    _write(tmp_path / "bad.csv", rows)
    for out in ([], ["-o", "-"]):
        bad = ecrm_cmd("predict", str(model_file), "bad.csv", *out, "--quiet", cwd=tmp_path)
        assert bad.stdout == b""  # not even the header
        assert _error(bad) == ("ecrm: error: bad.csv, line 4: column 'f0': expected a finite "
                               "number; found 'oops'")


# -- 6. --per-level: what predict writes, evaluate reads ---------------------------------------
def _metrics(ecrm_cmd, model, data, *extra, cwd) -> dict:
    proc = ecrm_cmd("evaluate", str(model), str(data), *extra, "--json", "--quiet", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    return {k: out[k] for k in ("hamming", "hierarchical", "exact_match", "macro_f1")}


def test_per_level_predictions_keep_the_level_columns_and_read_back(ecrm_cmd, train_csv,
                                                                    test_csv, tmp_path):
    _levels(train_csv, tmp_path / "train.csv")
    _levels(test_csv, tmp_path / "test.csv")
    fit = ecrm_cmd("fit", "train.csv", "--level-columns", "cat1,cat2", "-o", "m.ecrm",
                   "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    flat = ecrm_cmd("predict", "m.ecrm", "test.csv", "--quiet", cwd=tmp_path)
    assert flat.returncode == 0, flat.stderr
    paths = [row[1] for row in csv.reader(flat.stdout.decode().splitlines()[1:])]
    direct = _metrics(ecrm_cmd, "m.ecrm", "test.csv", cwd=tmp_path)
    for out in ("p.csv", "p.jsonl"):
        pred = ecrm_cmd("predict", "m.ecrm", "test.csv", "--per-level", "-o", out, "--quiet",
                        cwd=tmp_path)
        assert pred.returncode == 0, pred.stderr
        assert _metrics(ecrm_cmd, "m.ecrm", "test.csv", "--predictions", out,
                        cwd=tmp_path) == direct
    rows = _rows(tmp_path / "p.csv")
    assert rows[0] == ["row", "cat1", "cat2"]  # the training file's layout
    # each cell: the last path steps of the row's labels at that depth, as the input file
    # holds its values (several when a row branches)
    for row, labels in zip(rows[1:], paths, strict=True):
        assert row[1:] == [";".join(p.rsplit("/", 1)[-1] for p in labels.split(";")
                                    if p and p.count("/") == k) for k in range(2)]
    assert any(";" not in v and v for row in rows[1:] for v in row[1:])
    # a value no label of its level has is one line naming it
    rows[3][2] = "nonsense"
    _write(tmp_path / "bad.csv", rows)
    err = _error(ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--predictions", "bad.csv",
                          "--quiet", cwd=tmp_path))
    assert err == ("ecrm: error: bad.csv, line 4: the level-1 value 'nonsense' names no "
                   "label of depth 1")


@pytest.mark.parametrize("path_sep", [[], ["--path-sep", "/"], ["--path-sep", "|"]],
                         ids=["remembered", "given", "other"])
def test_per_level_predictions_of_branching_rows_read_back(ecrm_cmd, model_file, test_csv,
                                                           tmp_path, path_sep):
    # rows with labels on two branches ("sport/football;arts/film"): two labels a level
    pred = ecrm_cmd("predict", str(model_file), str(test_csv), "--per-level", *path_sep,
                    "-o", "p.csv", "--quiet", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    rows = _rows(tmp_path / "p.csv")
    assert rows[0] == ["row", "level_0", "level_1"]
    assert any(";" in row[2] for row in rows[1:])
    # the last path steps by the fit's --path-sep /; another separator splits no name
    full = path_sep[1:] == ["|"]
    assert all("/" in v for row in rows[1:] for v in row[2].split(";") if v) == full
    assert _metrics(ecrm_cmd, model_file, test_csv, "--predictions", "p.csv", *path_sep,
                    cwd=tmp_path) == _metrics(ecrm_cmd, model_file, test_csv, cwd=tmp_path)


# -- 7. a failure after rows were streamed -------------------------------------------------------
@pytest.mark.parametrize("per_level", [[], ["--per-level"]], ids=["labels", "per-level"])
def test_a_failure_after_the_first_chunk_says_what_was_written(model_file, test_csv, tmp_path,
                                                               monkeypatch, capsys, per_level):
    from ecrm.cli import main
    from ecrm.datasets import _csv

    monkeypatch.setattr(_csv, "CHUNK_ROWS", 10)  # the 4th chunk holds the bad row
    rows = _rows(test_csv)
    rows[34][1] = "oops"  # line 35: data row 33
    bad = _write(tmp_path / "bad.csv", rows)
    args = ["predict", str(model_file), str(bad), *per_level, "--quiet"]
    assert main(args) == 2
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("row,") and [r[0] for r in csv.reader(lines[1:])] == \
        [str(i) for i in range(30)]  # three whole chunks, then nothing
    assert err == ("ecrm: error: bad.csv, line 35: column 'f1': expected a finite number; "
                   "found 'oops' (30 prediction rows were already written to standard output "
                   "before this failure: the predictions there are incomplete)\n"
                   ).replace("bad.csv", str(bad))
    # a file is written whole or not at all: an existing one stays as it was
    target = tmp_path / "p.csv"
    target.write_text("earlier\n")
    assert main([*args, "-o", str(target)]) == 2
    assert capsys.readouterr().err.endswith(
        f"found 'oops' (after 30 rows; {target} is not written, an existing file there is "
        "left as it was)\n")
    assert target.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "p.csv"]
