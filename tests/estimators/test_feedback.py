"""Feedback while and after a search: the progress bar, the grid-edge warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from _shapes import TREE5 as TREE
from ecrm import ECRMCV
from ecrm.losses import HammingLoss
from ecrm.selection import LeaveOneOutSearch
from ecrm.selection._grid import grid_edges
from ecrm.selection._loo import Candidate, GridEdgeWarning


def _noise(m=40, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, 3)), TREE.close(rng.random((m, 5)) < 0.4)


def _candidate(alpha, gamma, kernel="rbf"):
    return Candidate({"kernel": kernel, "gamma": gamma, "degree": 3, "coef0": 1}, 0, alpha,
                     True, -1.0, 1.0)


@pytest.mark.parametrize("alpha, gamma, expected", [
    (1e-3, 0.5, []),
    (1e-6, 0.5, ["alpha=1e-06 is the smallest of the grid of alphas [1e-06 .. 1]; add "
                 "smaller values"]),
    (1.0, 0.1, ["alpha=1 is the largest", "gamma=0.1 (rbf kernel) is the smallest of the "
                "gammas [0.1, 0.5, 2.0]; add smaller values"]),
    (1e-3, 2.0, ["gamma=2 (rbf kernel) is the largest"]),
], ids=["inside-the-grid", "smallest-alpha", "largest-alpha-and-smallest-gamma",
        "largest-gamma"])
def test_grid_edges_names_the_parameter_and_the_grid(alpha, gamma, expected):
    settings = [{"kernel": "rbf", "gamma": g, "degree": 3, "coef0": 1} for g in (0.1, 0.5, 2.0)]
    settings.append({"kernel": "linear", "gamma": None, "degree": 3, "coef0": 1})
    notes = grid_edges(_candidate(alpha, gamma), [1e-6, 1e-3, 1.0], settings)
    assert len(notes) == len(expected)
    for note, part in zip(notes, expected, strict=True):
        assert part in note
    # one value in a grid is no edge; a kernel without gamma has no gamma edge
    assert grid_edges(_candidate(1e-3, None, "linear"), [1e-3], settings) == []


def test_ecrmcv_warns_when_the_choice_is_at_an_end_of_its_grid():
    X, Y = _noise()  # labels independent of X: the strongest regularisation wins
    with pytest.warns(GridEdgeWarning, match=r"alpha=0\.01 is the largest of the grid"):
        model = ECRMCV(HammingLoss(), TREE, alphas=[1e-6, 1e-4, 1e-2],
                       search=LeaveOneOutSearch(fit_intercept=True)).fit(X, Y)
    assert model.alpha_ == 1e-2
    rng = np.random.default_rng(0)  # labels with signal and noise: a middle alpha wins
    X = rng.normal(size=(80, 3))
    Y = TREE.close(X @ rng.normal(size=(3, 5)) + 0.7 * rng.normal(size=(80, 5)) > 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)  # an interior choice: no warning
        model = ECRMCV(HammingLoss(), TREE, alphas=[1e-8, 1e-3, 1e4], gamma=0.5,
                       search=LeaveOneOutSearch(fit_intercept=True)).fit(X, Y)
    assert model.alpha_ == 1e-3


def test_verbose_shows_progress_over_the_candidates(capsys):
    X, Y = _noise()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        ECRMCV(HammingLoss(), TREE, alphas=[1e-4, 1e-2],
               search=LeaveOneOutSearch(kernel_grid={"gamma": [0.1, 1.0]}, fit_intercept="auto",
                                        verbose=2)).fit(X, Y)
    err = capsys.readouterr().err
    assert "ECRMCV leave-one-out" in err and "factorising" in err
    assert "8/8" in err  # 2 kernels x 2 alphas x 2 intercepts
    assert "[ECRMCV] selected" in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        ECRMCV(HammingLoss(), TREE, alphas=[1e-4, 1e-2],
               search=LeaveOneOutSearch(verbose=1)).fit(X, Y)
    assert "ECRMCV leave-one-out" not in capsys.readouterr().err  # not a terminal here


def test_ecrm_fit_says_when_the_choice_is_at_the_grid_edge(ecrm_cmd, train_csv, tmp_path):

    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--cv", "--family", "kernel",
                    "--alphas", "1e-9,1e-8",
                    "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert ("ecrm: warning: the chosen alpha=1e-08 is the largest of the grid of alphas "
            "[1e-09 .. 1e-08]; add larger values to --alphas, or give --extend-grid") in err
    assert "gamma=0.166667 (1/features)" in proc.stdout.decode()


def _on_a_terminal(argv: list[str], *, cwd, env) -> tuple[int, str]:
    """``ecrm ARGV`` with its standard error on a pseudo-terminal (a progress bar shows on
    a terminal only): its exit status and what it wrote there."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 cols
    proc = subprocess.Popen([sys.executable, "-m", "ecrm", *argv], cwd=cwd,
                            env=env, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other end closed (Linux: EIO)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=300), b"".join(chunks).decode()


def test_fit_lines_are_not_written_over_the_progress_bar(subprocess_env, train_csv, tmp_path):
    """The search's report and the warnings clear the stage bar and start their own line (a
    terminal shows what follows the last carriage return of a line); the bar shows the
    stage and the time elapsed, no rate or time left (its three stages are unequal)."""
    returncode, err = _on_a_terminal(
        ["fit", str(train_csv), "--path-sep", "/", "--cv", "--family", "kernel",
         "--alphas", "1e-9,1e-8", "-o", "m.ecrm"], cwd=tmp_path, env=subprocess_env)
    assert returncode == 0, err
    shown = [line.split("\r")[-1] for line in err.replace("\r\n", "\n").split("\n")]
    reports = [line for line in shown if "[ECRMCV]" in line or "ecrm: warning" in line]
    assert reports and all(line.startswith(("[ECRMCV]", "ecrm: warning")) for line in reports)
    bars = [part for part in err.replace("\n", "\r").split("\r") if "ecrm fit:" in part]
    assert bars and "3/3, saving" in bars[-1]
    assert not any("it/s" in part or "<" in part for part in bars)


def test_info_shows_the_solver_the_selection_and_every_label(ecrm_cmd, train_csv, tmp_path):
    import json


    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--cv", "--calibration", "isotonic",
                    "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    info = json.loads(ecrm_cmd("info", "m.ecrm", "--json", cwd=tmp_path).stdout)
    assert info["solver"] == "dual" and info["n_labels"] == len(info["labels"]) == 10
    assert info["selection"]["calibration"] == "isotonic"
    assert info["selection"]["scoring"] == "loss" and info["selection"]["n_candidates"] > 1
    text = ecrm_cmd("info", "m.ecrm", cwd=tmp_path).stdout.decode()
    assert "solver          dual" in text and ", ".join(info["labels"]) in text
    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--solver", "nystrom",
                    "--n-components", "40", "--seed", "0", "-o", "n.ecrm", "--quiet",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    info = json.loads(ecrm_cmd("info", "n.ecrm", "--json", cwd=tmp_path).stdout)
    assert info["solver"] == "nystrom" and info["n_components"] == 40


def test_info_text_says_how_many_labels_there_are(capsys, monkeypatch):
    from types import SimpleNamespace

    from ecrm.commands import info

    monkeypatch.setattr(info, "summary", lambda path: {"estimator": "ECRM",
                                                        "labels": [f"l{i}" for i in range(25)]})
    info.run(SimpleNamespace(model="x", json=False, all_labels=False))
    out = capsys.readouterr().out
    assert "l19, ... (25 in all)" in out and "l20" not in out
    info.run(SimpleNamespace(model="x", json=False, all_labels=True))
    assert "l24" in capsys.readouterr().out
