"""Large files through the real ``ecrm`` entry point, on small files: the CSV read in row
chunks gives what the whole file gives (errors included), ``ecrm predict`` streams, and
``ecrm fit --scheduler`` on a LocalCluster fits the same model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ecrm.datasets import make_hmc
from ecrm.datasets.formats import DataFileError, iter_csv, load_csv

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _ecrm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "ecrm", *args, "--quiet"], env=env,
                          capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def hmc_csv(tmp_path_factory) -> str:
    """A make_hmc CSV (labels as paths) of 400 rows, 4 features."""
    X, Y, h = make_hmc(400, n_features=4, n_labels=12, random_state=0)
    folder = tmp_path_factory.mktemp("scale")
    names = np.asarray(h.labels, dtype=object)
    lines = ["x0,x1,x2,x3,labels"] + [",".join(f"{v:.6g}" for v in x) + "," + ";".join(
        names[y > 0.5]) for x, y in zip(X, Y, strict=True)]
    (folder / "h.tsv").write_text("\n".join([f"{h.labels[p]}\t{h.labels[c]}"
                                             for p, c in np.asarray(h.edges)]
                                            + list(h.labels)) + "\n")  # lone names too
    path = folder / "train.csv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("chunk_rows", [1, 3, 64, 1000], ids="chunk_rows={}".format)
def test_chunked_reading_is_the_whole_file(tmp_path, chunk_rows):
    path = tmp_path / "d.csv"
    path.write_text("x1,labels,x2\n0.5,a/b;c,1\n\n0.25,a,2e3\n-1,c/d/e,?\n3,,4\n1.5,a/b,NA\n")
    whole = load_csv(path, path_sep="/", chunk_rows=10**6)
    part = load_csv(path, path_sep="/", chunk_rows=chunk_rows)
    np.testing.assert_array_equal(whole.X, part.X)  # NaN in the same cells
    np.testing.assert_array_equal(whole.Y, part.Y)
    assert whole.label_names == part.label_names and whole.label_lists == part.label_lists
    np.testing.assert_array_equal(part.row_lines, [2, 4, 5, 6, 7])
    compact = load_csv(path, path_sep="/", chunk_rows=chunk_rows, compact_labels=True)
    assert compact.Y.dtype == bool
    np.testing.assert_array_equal(compact.Y, whole.Y)
    np.testing.assert_array_equal(whole.Y, whole.hierarchy.to_matrix(whole.label_lists))
    streamed = list(iter_csv(path, chunk_rows=chunk_rows))
    np.testing.assert_array_equal(np.vstack([c.X for c in streamed]), whole.X)
    np.testing.assert_array_equal(np.concatenate([c.row_lines for c in streamed]),
                                  whole.row_lines)


@pytest.mark.parametrize("chunk_rows", [1, 2, 1000], ids="chunk_rows={}".format)
def test_chunked_errors_name_the_line_and_column(tmp_path, chunk_rows):
    path = tmp_path / "bad.csv"
    path.write_text("x1,x2,labels\n1,2,a\n3,4,b\n5,six,a\n")
    for read in (lambda: load_csv(path, chunk_rows=chunk_rows),
                 lambda: list(iter_csv(path, chunk_rows=chunk_rows))):
        with pytest.raises(DataFileError, match=r"bad\.csv, line 4: column 'x2'.*'six'"):
            read()
    path.write_text("x1,x2,labels\n1,2,a\n3,4,b\n5,a\n")
    with pytest.raises(DataFileError, match=r"line 4: expected 3 fields"):
        load_csv(path, chunk_rows=chunk_rows)


def test_latin1_and_gzip_files_are_read_as_before(tmp_path):
    import gzip

    text = "x1,labels\n1,caf\xe9\n2,th\xe9\n"
    (tmp_path / "l.csv").write_bytes(text.encode("latin-1"))
    assert load_csv(tmp_path / "l.csv", chunk_rows=1).label_names == ("caf\xe9", "th\xe9")
    (tmp_path / "g.csv.gz").write_bytes(gzip.compress(("\ufeff" + text).encode("utf-8")))
    data = load_csv(tmp_path / "g.csv.gz", sep=",", chunk_rows=1)
    assert data.feature_names == ("x1",) and data.X.ravel().tolist() == [1.0, 2.0]


@pytest.mark.slow  # the real ecrm command
def test_predict_streams_the_same_predictions(hmc_csv, tmp_path, monkeypatch):
    """``ecrm predict`` (row chunks) writes what one whole-file prediction writes."""
    from ecrm.model_files.io import load

    model = str(tmp_path / "m.ecrm")
    hier = str(Path(hmc_csv).with_name("h.tsv"))
    _ecrm("fit", hmc_csv, "--hierarchy", hier, "--solver", "nystrom", "--n-components", "30",
          "--standardize", "yes", "--seed", "0", "-o", model)
    out = tmp_path / "p.csv"
    _ecrm("predict", model, hmc_csv, "-o", str(out), "--scores")
    lines = out.read_text().splitlines()
    assert len(lines) == 401 and lines[1].startswith("0,") and lines[-1].startswith("399,")
    loaded = load(model)
    X = load_csv(hmc_csv).X
    Y = loaded.predict(X)
    names = loaded.steps[-1][1].label_names_
    expected = [";".join(names[j] for j in np.flatnonzero(y > 0.5)) for y in Y]
    assert [line.split(",")[1] for line in lines[1:]] == expected
    # in-process with a tiny chunk: the same file
    from ecrm.cli import main

    monkeypatch.setattr("ecrm.datasets._csv.CHUNK_ROWS", 7)
    small = tmp_path / "small.csv"
    assert main(["predict", model, hmc_csv, "-o", str(small), "--scores", "--quiet"]) == 0
    assert small.read_text() == out.read_text()


@pytest.mark.slow  # the real ecrm command
def test_predict_bad_cell_names_line_and_leaves_no_output(hmc_csv, tmp_path):
    model = str(tmp_path / "m.ecrm")
    _ecrm("fit", hmc_csv, "--kernel", "linear", "--standardize", "no", "-o", model)
    rows = Path(hmc_csv).read_text().splitlines()
    rows[300] = "1,2,oops,4,x"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(rows) + "\n")
    out = tmp_path / "p.csv"
    run = _ecrm("predict", model, str(bad), "-o", str(out), check=False)
    assert run.returncode == 2
    assert "bad.csv, line 301: column 'x2'" in run.stderr and "'oops'" in run.stderr
    assert sorted(os.listdir(tmp_path)) == ["bad.csv", "m.ecrm"]  # no output, no temporary


@pytest.mark.slow  # the real ecrm command
def test_scheduler_needs_a_streaming_solver(hmc_csv, tmp_path):
    run = _ecrm("fit", hmc_csv, "--scheduler", "tcp://127.0.0.1:1", "-o",
                str(tmp_path / "m.ecrm"), check=False)
    assert run.returncode == 2 and "--scheduler needs --solver primal or nystrom" in run.stderr


@pytest.mark.slow  # the real ecrm command
def test_scheduler_fits_the_same_model(hmc_csv, tmp_path):
    """``--scheduler`` on a LocalCluster (workers in this process, reached over TCP by the
    ``ecrm`` process) gives the model fitted without it."""
    distributed = pytest.importorskip("distributed")
    hier = str(Path(hmc_csv).with_name("h.tsv"))
    fit = ["fit", hmc_csv, "--hierarchy", hier, "--solver", "nystrom", "--n-components",
           "30", "--standardize", "no", "--seed", "0"]
    _ecrm(*fit, "-o", str(tmp_path / "a.ecrm"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", dashboard_address=None) as cluster:
        _ecrm(*fit, "--scheduler", cluster.scheduler_address, "-o", str(tmp_path / "b.ecrm"))
        bad = tmp_path / "bad.csv"
        rows = Path(hmc_csv).read_text().splitlines()
        rows[200] = "1,,3,4,L0"
        bad.write_text("\n".join(rows) + "\n")
        run = _ecrm(*fit[:1], str(bad), *fit[2:], "--scheduler", cluster.scheduler_address,
                    "-o", str(tmp_path / "c.ecrm"), check=False)
    assert run.returncode == 2 and "bad.csv, line 201: column 'x1'" in run.stderr
    assert not (tmp_path / "c.ecrm").exists()
    for name in "ab":
        _ecrm("predict", str(tmp_path / f"{name}.ecrm"), hmc_csv, "-o",
              str(tmp_path / f"{name}.csv"), "--scores")
    a = np.loadtxt(tmp_path / "a.csv", delimiter=",", skiprows=1, usecols=range(2, 14))
    b = np.loadtxt(tmp_path / "b.csv", delimiter=",", skiprows=1, usecols=range(2, 14))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)  # scores written to 6 digits
    labels = [line.split(",")[1] for line in (tmp_path / "a.csv").read_text().splitlines()]
    assert labels == [line.split(",")[1] for line in
                      (tmp_path / "b.csv").read_text().splitlines()]
