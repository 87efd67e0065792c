"""``ecrm fit --family neighbours``: ``--neighbours``, ``--neighbours-grid`` and ``--metric``
reach the estimator, are refused with another family or where the training rows cannot give
their k; and ``-o -`` writes the bytes of the model file."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from ecrm import NeighboursECRM, NeighboursECRMCV, load, save
from ecrm.cli import build_parser, main
from ecrm.datasets import load_csv
from ecrm.losses import HammingLoss
from ecrm.weights.neighbours.estimator import METRICS

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "examples" / "data" / "documents-train.csv"  # 300 rows
FIT = ["fit", str(TRAIN), "--path-sep", "/", "--standardize", "no", "--quiet"]


def _fit(tmp_path, *options: str, name: str = "m.ecrm") -> Path:
    path = tmp_path / name
    assert main([*FIT, *options, "-o", str(path)]) == 0
    return path


def _info(path: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["info", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _small_csv(tmp_path, rows: int = 6) -> Path:
    """A training file of ``rows`` rows, two features, labels a and b."""
    lines = ["x1,x2,labels", *(f"{i},{i % 3},{'a' if i % 2 else 'b'}" for i in range(rows))]
    path = tmp_path / "small.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_neighbours_and_metric_reach_the_model(tmp_path, capsys):
    path = _fit(tmp_path, "--family", "neighbours", "--neighbours", "7", "--metric",
                "manhattan")
    model = load(path)
    assert type(model) is NeighboursECRM
    assert (model.n_neighbors, model.metric) == (7, "manhattan")
    assert "k=7" in capsys.readouterr().out  # the summary
    info = _info(path, capsys)
    assert (info["n_neighbors"], info["metric"]) == (7, "manhattan")


def test_the_model_is_the_python_estimator_s(tmp_path):
    """The command's k and metric give the predictions of the estimator fitted in Python."""
    model = load(_fit(tmp_path, "--family", "neighbours", "--neighbours", "4", "--metric",
                      "chebyshev"))
    data = load_csv(TRAIN, path_sep="/")
    same = NeighboursECRM(HammingLoss(), data.hierarchy, n_neighbors=4,
                          metric="chebyshev").fit(data.X, data.Y)
    np.testing.assert_allclose(model.predict_scores(data.X), same.predict_scores(data.X),
                               rtol=1e-12, atol=1e-12)


def test_the_grid_reaches_the_search(tmp_path, capsys):
    path = _fit(tmp_path, "--family", "neighbours", "--cv", "--neighbours-grid", "6,2,4",
                "--metric", "cosine")
    model = load(path)
    assert type(model) is NeighboursECRMCV and model.metric == "cosine"
    assert model.cv_results_["params"] == [{"n_neighbors": k} for k in (2, 4, 6)]
    data = load_csv(TRAIN, path_sep="/")
    python = NeighboursECRMCV(HammingLoss(), data.hierarchy, n_neighbors=(2, 4, 6),
                              metric="cosine").fit(data.X, data.Y)
    assert model.n_neighbors_ == python.n_neighbors_
    np.testing.assert_allclose(model.cv_results_["mean_score"],
                               python.cv_results_["mean_score"], rtol=1e-12)
    info = _info(path, capsys)
    assert info["n_neighbors"] == model.n_neighbors_ and info["selection"]["n_candidates"] == 3


def test_a_grid_value_not_below_the_rows_is_left_out_with_a_warning(tmp_path, capsys):
    model = load(_fit(tmp_path, "--family", "neighbours", "--cv", "--neighbours-grid",
                      "3,300,400"))
    assert model.cv_results_["params"] == [{"n_neighbors": 3}]
    err = capsys.readouterr().err
    assert "--neighbours-grid: k=300,400 left out, not below the 300 training rows" in err


def test_k_may_be_every_training_row(tmp_path):
    small = _small_csv(tmp_path)
    path = tmp_path / "m.ecrm"
    assert main(["fit", str(small), "--family", "neighbours", "--neighbours", "6", "-o",
                 str(path), "--quiet"]) == 0
    assert load(path).n_neighbors == 6


def test_the_help_gives_the_estimators_defaults():
    fit = next(a for a in build_parser()._actions if a.dest == "command").choices["fit"]
    helps = {a.dest: " ".join(a.help.split()) for a in fit._actions if a.help}
    assert f"(default {NeighboursECRM(None, None).n_neighbors})" in helps["neighbours"]
    grid = ",".join(map(str, NeighboursECRMCV(None, None).n_neighbors))
    assert f"(default {grid})" in helps["neighbours_grid"]
    assert tuple(next(a for a in fit._actions if a.dest == "metric").choices) == METRICS


@pytest.mark.parametrize(("options", "message"), [
    (["--family", "kernel", "--neighbours", "5"],
     "--neighbours is an option of the neighbours family; --family kernel does not use it"),
    (["--family", "forest", "--cv", "--neighbours-grid", "3,5"],
     "--neighbours-grid is an option of the neighbours family; --family forest does not use"),
    (["--cv", "--metric", "cosine"],
     "--metric is an option of the neighbours family; --family auto does not use it"),
    (["--family", "neighbours", "--trees", "20"],
     "--trees is an option of the forest and mixed families; --family neighbours does not"),
    (["--family", "neighbours", "--cv", "--neighbours", "5"],
     "--neighbours sets k without --cv; with --cv give the candidates as --neighbours-grid"),
    (["--family", "neighbours", "--neighbours-grid", "3,5"],
     "--neighbours-grid needs --cv (without it, --neighbours K sets k)"),
    (["--family", "neighbours", "--neighbours", "301"],
     "--neighbours 301 exceeds the 300 training rows: give --neighbours 300 or fewer"),
    (["--family", "neighbours", "--cv", "--neighbours-grid", "300,500"],
     "every k of --neighbours-grid 300,500 is at least the 300 training rows: leave-one-out "
     "needs k < 300"),
], ids=["neighbours-with-family-kernel", "neighbours-grid-with-family-forest",
        "metric-with-family-auto", "trees-with-family-neighbours", "neighbours-with-cv",
        "neighbours-grid-without-cv", "neighbours-above-the-rows", "grid-all-above-the-rows"])
def test_a_mismatched_option_is_refused_by_name(tmp_path, capsys, options, message):
    path = tmp_path / "m.ecrm"
    assert main([*FIT, *options, "-o", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ecrm: error: ") and message in err, err
    assert err.count("\n") == 1 and not path.exists()


def test_the_default_k_over_the_rows_is_refused_naming_both(tmp_path, capsys):
    small = _small_csv(tmp_path, rows=6)
    assert main(["fit", str(small), "--family", "neighbours", "-o", str(tmp_path / "m.ecrm"),
                 "--quiet"]) == 2
    assert ("--family neighbours takes k=10 neighbours by default, more than the 6 training "
            "rows: give --neighbours 6 or fewer") in capsys.readouterr().err
    assert main(["fit", str(small), "--family", "neighbours", "--cv", "--neighbours-grid",
                 "6,8", "-o", str(tmp_path / "m.ecrm"), "--quiet"]) == 2
    assert "every k of --neighbours-grid 6,8 is at least the 6 training rows" in \
        capsys.readouterr().err


def test_a_dense_metric_on_sparse_rows_is_refused_before_fitting(tmp_path, capsys):
    svm = tmp_path / "train.svm"
    svm.write_text("".join(f"{i % 2} 1:{i}.5 3:1\n" for i in range(12)))
    model = tmp_path / "m.ecrm"
    assert main(["fit", str(svm), "--family", "neighbours", "--neighbours", "3", "--metric",
                 "chebyshev", "-o", str(model), "--quiet"]) == 2
    assert ("--metric chebyshev needs dense features; the training rows are sparse "
            "(svmlight): give --metric euclidean, manhattan or cosine") in \
        capsys.readouterr().err
    assert main(["fit", str(svm), "--family", "neighbours", "--neighbours", "3", "--metric",
                 "manhattan", "-o", str(model), "--quiet"]) == 0
    assert load(model).metric == "manhattan"


@pytest.mark.parametrize(("options", "message"), [
    (["--neighbours", "0"], "--neighbours must be an integer >= 1; got 0"),
    (["--neighbours", "2.5"], "--neighbours must be an integer >= 1"),
    (["--neighbours-grid", "3,0"], "--neighbours-grid must be an integer >= 1; got 0"),
    (["--neighbours-grid", "3,,5"], "--neighbours-grid has an empty value in '3,,5'"),
    (["--metric", "hamming"], "argument --metric: invalid choice: 'hamming'"),
], ids=["neighbours-zero", "neighbours-not-an-integer", "grid-with-a-zero",
        "grid-with-an-empty-value", "metric-unknown"])
def test_a_bad_value_is_refused_at_parse_time(tmp_path, capsys, options, message):
    with pytest.raises(SystemExit) as stop:
        main([*FIT, "--family", "neighbours", "--cv", *options, "-o", str(tmp_path / "m")])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


# -- -o -: the model file's bytes on standard output ------------------------------------------
def test_dash_o_dash_writes_the_bytes_of_the_model_file(tmp_path, capsysbinary):
    options = ["--family", "neighbours", "--neighbours", "5"]
    assert main([*FIT, *options, "-o", "-"]) == 0
    piped = capsysbinary.readouterr()
    assert b"model written to standard output" in piped.err
    written = _fit(tmp_path, *options).read_bytes()
    assert piped.out == written and piped.out.startswith(b"PK\x03\x04")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ecrm"]  # nothing else left


def test_dash_o_dash_into_a_pipe_gives_the_same_bytes(ecrm_cmd, tmp_path):
    """A real pipe cannot seek back: a zip written into it directly would differ."""
    proc = ecrm_cmd(*FIT, "--family", "neighbours", "--neighbours", "5", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == _fit(tmp_path, "--family", "neighbours", "--neighbours", "5",
                               name="file.ecrm").read_bytes()


class _Unseekable(io.RawIOBase):
    """A binary stream that cannot seek back (as a pipe), keeping what it is given."""

    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.data += bytes(b)
        return len(b)


def test_save_to_a_file_object_writes_the_file_s_bytes(tmp_path):
    data = load_csv(TRAIN, path_sep="/")
    model = NeighboursECRMCV(HammingLoss(), data.hierarchy, n_neighbors=(1, 5)).fit(
        data.X, data.Y)
    save(model, tmp_path / "m.ecrm")
    buffer, stream = io.BytesIO(b"head"), _Unseekable()
    buffer.seek(4)
    save(model, buffer)
    save(model, stream)
    expected = (tmp_path / "m.ecrm").read_bytes()
    assert buffer.getvalue() == b"head" + expected  # written at its position
    assert bytes(stream.data) == expected and not buffer.closed


def test_the_neighbours_options_are_documented():
    page = (ROOT / "docs" / "getting_started.rst").read_text()
    for option in ("--neighbours K", "--neighbours-grid", "--metric"):
        assert re.search(re.escape(f"``{option}"), page), option
