"""Results files (``--json``, pictures, reports) are written whole or not at all, like models.

A write that fails (a full disk, a file-size limit) leaves the old file as it was and no
partial or temporary file beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from _shapes import DAG6 as DAG

resource = pytest.importorskip("resource", reason="file-size limits are POSIX")


def _file_size_limit(limit: int):
    """A ``preexec_fn`` that limits the files the child writes to ``limit`` bytes (its writes
    beyond fail with EFBIG: Python ignores SIGXFSZ)."""
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return set_limit


def test_reproduce_flow_json_over_a_file_size_limit_keeps_the_old_results(subprocess_env,
                                                                            tmp_path):
    old = json.dumps([{"method": "the old results", "mean": 1.0}] * 40, indent=2)
    assert len(old) > 2000  # larger than the limit: only a new write can be refused
    (tmp_path / "rows.json").write_text(old)
    proc = subprocess.run(
        [sys.executable, "-m", "ecrm", "reproduce", "flow", "--trials", "1", "--n-train", "5",
         "--n-test", "5", "--n-val", "5", "--jobs", "1", "--quiet", "--json", "rows.json"],
        cwd=tmp_path, env=subprocess_env, capture_output=True, text=True, timeout=300,
        preexec_fn=_file_size_limit(512))  # the new rows are about 1,100 bytes
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "ecrm: error: cannot write the output")
    assert (tmp_path / "rows.json").read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.json"]


def test_a_report_over_a_file_size_limit_keeps_the_old_report(subprocess_env, tmp_path):
    old = "<p>the old report</p>\n" * 200
    (tmp_path / "report.html").write_text(old)
    code = (
        "import numpy as np\n"
        "from ecrm import Hierarchy\n"
        "from ecrm.reporting.report import write_report\n"
        "h = Hierarchy([(1, 2), (1, 3), (2, 4)])\n"
        "rng = np.random.default_rng(0)\n"
        "Y = h.close(rng.random((30, h.n_outputs)) < 0.4)\n"
        "write_report('report.html', Y, Y, rng.random(Y.shape), hierarchy=h)\n")
    reference = tmp_path / "reference"
    reference.mkdir()
    subprocess.run([sys.executable, "-c", code], cwd=reference, env=subprocess_env,
                   capture_output=True, timeout=300, check=True)
    # one byte short of the page: its pictures (drawn first, to temporary files) fit
    limit = (reference / "report.html").stat().st_size - 1
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=subprocess_env,
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=_file_size_limit(limit))
    assert proc.returncode != 0 and "File too large" in proc.stderr, proc.stderr
    assert "savefig" not in proc.stderr  # the page failed, not a picture
    assert (tmp_path / "report.html").read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reference", "report.html"]


def _data():
    rng = np.random.default_rng(0)
    Y = DAG.close(rng.random((40, DAG.n_outputs)) < 0.4)
    P = DAG.close(rng.random((40, DAG.n_outputs)) < 0.4)
    return Y, P, rng.random(Y.shape)


def test_pictures_are_all_replaced_or_none_when_the_disk_fills(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from ecrm.reporting.plotting import evaluation_figures

    names = ["ap_by_frequency.png", "hierarchy_f1.png", "per_level.png", "precision_recall.png"]
    for name in names:
        (tmp_path / name).write_bytes(b"the old picture " + name.encode())
    save = Figure.savefig
    written = []

    def fills_at_the_third(fig, fname, **kwargs):
        if len(written) == 2:
            with open(fname, "wb") as fh:
                fh.write(b"\x89PNG\r\n")  # the first bytes, then the disk is full
            raise OSError(28, "No space left on device")
        written.append(fname)
        return save(fig, fname, **kwargs)

    monkeypatch.setattr(Figure, "savefig", fills_at_the_third)
    T, P, S = _data()
    with pytest.raises(OSError, match="No space left"):
        evaluation_figures(tmp_path, T, P, S, hierarchy=DAG)
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # no temporary file
    for name in names:
        assert (tmp_path / name).read_bytes() == b"the old picture " + name.encode()
    monkeypatch.setattr(Figure, "savefig", save)
    paths = evaluation_figures(tmp_path, T, P, S, hierarchy=DAG)
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    for path in paths:
        with open(path, "rb") as fh:
            assert fh.read(4) == b"\x89PNG"
