"""The forest weight family through the real ``ecrm`` command: fit, info, predict, evaluate."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.slow  # subprocesses


def test_forest_family_end_to_end(ecrm_cmd, train_csv, test_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--loss", "hierarchical",
                   "--family", "forest", "--trees", "20", "--seed", "0", "-o", "f.ecrm",
                   "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr.decode()
    assert b"forest weights" in fit.stdout and b"out-of-bag hierarchical loss" in fit.stdout
    info = json.loads(ecrm_cmd("info", "f.ecrm", "--json", cwd=tmp_path).stdout)
    assert info["estimator"] == "ForestECRMCV" and info["weights"] == "forest"
    assert info["n_estimators"] == 20 and info["selection"]["n_candidates"] == 4
    assert info["read_with"] == {"path_sep": "/"}  # what predict reads files with
    text = ecrm_cmd("info", "f.ecrm", cwd=tmp_path).stdout.decode()
    assert re.search(r"^read_with +--path-sep /$", text, re.M), text
    pred = ecrm_cmd("predict", "f.ecrm", str(test_csv), "-o", "p.csv", "--scores", "--quiet",
                    cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr.decode()
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 101
    ev = ecrm_cmd("evaluate", "f.ecrm", str(test_csv), "--json", "--quiet", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr.decode()
    assert "micro AU(PRC)" in ev.stdout.decode() or "micro_auprc" in ev.stdout.decode()


def test_auto_family_reports_both_honest_criteria(ecrm_cmd, train_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--loss", "hierarchical", "--cv",
                   "--gammas", "0.1,0.3,1", "--trees", "20", "--seed", "0", "-o", "m.ecrm",
                   "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr.decode()
    line = [s for s in fit.stdout.decode().splitlines() if s.startswith("weights:")]
    assert len(line) == 1 and "kernel: exact leave-one-out hierarchical loss" in line[0] \
        and "forest: out-of-bag hierarchical loss" in line[0]
    info = json.loads(ecrm_cmd("info", "m.ecrm", "--json", cwd=tmp_path).stdout)
    chosen = line[0].split("; chose ")[1].split()[0]
    assert info["weights"] == chosen


def test_forest_refuses_calibration(ecrm_cmd, train_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--family", "forest", "--cv",
                   "--calibration", "isotonic", "-o", "m.ecrm", cwd=tmp_path)
    assert fit.returncode != 0 and b"--calibration needs --family kernel" in \
        fit.stderr
    assert not (tmp_path / "m.ecrm").exists()


def test_mixed_family_end_to_end(ecrm_cmd, train_csv, test_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--loss", "hierarchical", "--cv",
                   "--family", "mixed", "--gammas", "0.1,0.3,1", "--trees", "20", "--seed",
                   "0", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr.decode()
    assert b"fitted ECRM on the mixed risk" in fit.stdout and b"kernel share" in fit.stdout
    info = json.loads(ecrm_cmd("info", "m.ecrm", "--json", cwd=tmp_path).stdout)
    assert info["estimator"] == "MixedRiskECRM" and info["weights"] == "mixed"
    assert 0 <= info["mixture"] <= 1 and info["selection"]["n_candidates"] == 11
    assert info["members"]["kernel"]["weights"] == "kernel"
    assert info["members"]["forest"]["n_estimators"] == 20
    text = ecrm_cmd("info", "m.ecrm", cwd=tmp_path)
    assert text.returncode == 0 and b"mixed risk, kernel share" in text.stdout, text.stderr
    pred = ecrm_cmd("predict", "m.ecrm", str(test_csv), "-o", "p.csv", "--scores", "--quiet",
                    cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr.decode()
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 101
    ev = ecrm_cmd("evaluate", "m.ecrm", str(test_csv), "--report", "r.html", "--quiet",
                  cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr.decode()
    assert "mixed risk" in (tmp_path / "r.html").read_text()


def test_mixed_family_needs_cv(ecrm_cmd, train_csv, tmp_path):
    fit = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--family", "mixed", "-o",
                   "m.ecrm", cwd=tmp_path)
    assert fit.returncode != 0 and b"--family mixed needs --cv" in fit.stderr
    assert not (tmp_path / "m.ecrm").exists()
