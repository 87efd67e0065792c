"""The nearest-neighbour weight family through the real ``ecrm`` command: fit (with and
without ``--cv``), info, predict, evaluate."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow  # subprocesses


def test_neighbours_family_end_to_end(ecrm_cmd, train_csv, test_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--loss", "hierarchical",
                   "--family", "neighbours", "--cv", "-o", "n.ecrm", "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr.decode()
    assert b"neighbours weights" in fit.stdout
    info = json.loads(ecrm_cmd("info", "n.ecrm", "--json", cwd=tmp_path).stdout)
    assert info["estimator"] == "NeighboursECRMCV" and info["weights"] == "neighbours"
    assert info["selection"]["n_candidates"] == 9  # the default grid, every k below 300
    assert info["n_neighbors"] in (1, 3, 5, 7, 10, 15, 20, 30, 50)
    pred = ecrm_cmd("predict", "n.ecrm", str(test_csv), "-o", "p.csv", "--scores", "--quiet",
                    cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr.decode()
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 101
    single = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--family", "neighbours",
                      "-o", "s.ecrm", "--quiet", cwd=tmp_path)
    assert single.returncode == 0, single.stderr.decode()
    info = json.loads(ecrm_cmd("info", "s.ecrm", "--json", cwd=tmp_path).stdout)
    assert info["estimator"] == "NeighboursECRM" and info["n_neighbors"] == 10
    ev = ecrm_cmd("evaluate", "s.ecrm", str(test_csv), "--json", "--quiet", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr.decode()


def test_neighbours_refuses_another_familys_option(ecrm_cmd, train_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--family", "neighbours",
                   "--trees", "20", "-o", "m.ecrm", cwd=tmp_path)
    assert fit.returncode != 0 and b"--family neighbours does not use it" in fit.stderr
    assert not (tmp_path / "m.ecrm").exists()
