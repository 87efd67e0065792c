"""Data-file errors through the real ``ecrm`` entry point: one line naming file, line, column."""

from __future__ import annotations

from pathlib import Path

import pytest

from _ids import named
from ecrm.cli import main
from ecrm.selection import LeaveOneOutSearch


@pytest.mark.parametrize("files, argv, message", [
    ({"d.svm": "1 1:0.5\n1.5 2:1\n"}, ["d.svm"],
     "d.svm, line 2: the label field: label 1.5 is not an integer"),
    ({"d.svm": "1 1:0.5\n2 2:nan\n"}, ["d.svm"], "d.svm, line 2: feature index 2: a missing"),
    ({"d.arff": "@relation 'x: -C 1'\n@attribute L {0,1}\n@attribute f numeric\n@data\n"
      "1,2\n0,?\n"}, ["d.arff", "--no-impute"], "d.arff, line 6: column 'f': a missing value"),
    ({"d.csv": "f,labels\n1,a\n,b\n"}, ["d.csv"],
     "d.csv, line 3: column 'f': a missing value; ecrm needs a finite number in every feature "
     "(impute or drop it first, or fit with --impute)"),
    ({"d.csv": "x,labels\n1,sci/phys\n2,sci\n", "h.tsv": "art\tsci/phys\nsci\n"},
     ["d.csv", "--hierarchy", "h.tsv", "--path-sep", "/"],
     "d.csv, line 2: the label path 'sci/phys' puts 'sci/phys' under 'sci', but the "
     "hierarchy has it under 'art'"),
    ({"d.csv": "x,labels\n1,a\n", "h.tsv": "root\ta\nroot b\n"}, ["d.csv", "--hierarchy", "h.tsv"],
     "h.tsv, line 2: no tab in 'root b'"),
    ({"d.svm": "1 1:1\n2 2:1\n1 200000000:1\n"}, ["d.svm"],
     "d.svm, line 3: the largest feature index makes 200,000,000 feature columns for 3 "
     "non-zero values"),
    ({"d.svm": "1 1:1\n2 1000000000000:1\n"}, ["d.svm"],
     "d.svm: a feature index is too large (at most 2**31 - 1; number the features "
     "compactly)"),
], ids=["svm-label-not-an-integer", "svm-missing-value", "arff-missing-value",
        "csv-missing-value", "label-path-against-hierarchy", "hierarchy-line-without-tab",
        "svm-too-many-columns", "svm-index-too-large"])
def test_fit_refuses_bad_data_with_one_line(ecrm_cmd, tmp_path, files, argv, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = ecrm_cmd("fit", *argv, "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.strip() == f"ecrm: error: {message}" or (message in err and
                                                       len(err.strip().splitlines()) == 1)
    assert "Traceback" not in err and not (tmp_path / "m.ecrm").exists()


def test_fit_warns_about_another_separator_and_goes_on(ecrm_cmd, tmp_path):
    (tmp_path / "d.csv").write_text("x,labels\n0,a|b\n1,b|c\n2,a|c\n")
    proc = ecrm_cmd("fit", "d.csv", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert err.strip() == ("ecrm: warning: d.csv: 3 of 3 rows hold '|' in the label column "
                           "'labels' (e.g. line 2: 'a|b'), which does not separate labels here "
                           "(the separator is ';'); did you mean --label-sep '|'?")


def test_predict_ignores_the_label_column(ecrm_cmd, train_csv, test_csv, tmp_path):
    assert main(["fit", str(train_csv), "--path-sep", "/", "-o", str(tmp_path / "m.ecrm"),
                 "--quiet"]) == 0
    lines = test_csv.read_text().splitlines()
    header = lines[0].split(",")
    k = header.index("labels")
    unseen = [lines[0]] + [",".join(f if j != k else "never/seen;x" for j, f in
                                    enumerate(line.split(","))) for line in lines[1:]]
    (tmp_path / "unseen.csv").write_text("\n".join(unseen) + "\n")
    a = ecrm_cmd("predict", "m.ecrm", "unseen.csv", "-o", "a.csv", "--quiet", cwd=tmp_path)
    assert a.returncode == 0, a.stderr
    assert main(["predict", str(tmp_path / "m.ecrm"), str(test_csv), "-o",
                 str(tmp_path / "b.csv"), "--quiet"]) == 0
    assert Path(tmp_path / "a.csv").read_bytes() == Path(tmp_path / "b.csv").read_bytes()


def test_svmlight_with_a_huge_feature_index_stays_small(ecrm_cmd, tmp_path):
    # the model holds no list of 10 million feature names (the 234 MB file)
    (tmp_path / "d.svm").write_text("1 1:0.5 2:1\n2 2:2\n1,2 1:1 3:1\n2 3:1\n1 10000000:1\n")
    proc = ecrm_cmd("fit", "d.svm", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m.ecrm").stat().st_size < 100_000
    (tmp_path / "p.svm").write_text("1 1:0.5 10000000:2\n")
    proc = ecrm_cmd("predict", "m.ecrm", "p.svm", "-o", "-", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.decode().startswith("row,labels"), proc.stderr


# -- the solver flags ------------------------------------------------------
def test_fit_refusal_for_the_dual_names_the_flags(ecrm_cmd, train_csv, tmp_path):
    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--memory-budget", "1e-5", "-o",
                    "m.ecrm", "--quiet", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1, err
    for flag in ("--solver nystrom", "--n-components M", "--memory-budget"):
        assert flag in err
    assert "solver='" not in err and "n_components=" not in err
    proc = ecrm_cmd("fit", str(train_csv), "--kernel", "linear", "--solver", "dual",
                    "--memory-budget", "1e-5", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert "(or --solver primal with --kernel linear)" in proc.stderr.decode()


@pytest.mark.parametrize("argv, message", named([
    (["--n-components", "5"], "--n-components and --center-selection need --solver nystrom"),
    (["--center-selection", "leverage"], "need --solver nystrom"),
    (["--loo-samples", "10"], "--loo-samples needs --cv"),
    (["--solver", "newton"], "invalid choice: 'newton'"),
    (["--solver", "nystrom", "--n-components", "0"], "--n-components must be an integer >= 1"),
    (["--memory-budget", "-1"], "--memory-budget must be a real number in (0, inf)"),
]))
def test_fit_solver_flags_checked_before_the_work(ecrm_cmd, train_csv, tmp_path, argv, message):
    proc = ecrm_cmd("fit", str(train_csv), *argv, "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "m.ecrm").exists()


@pytest.mark.parametrize("cv", [False, True], ids="cv={}".format)
def test_fit_nystrom_is_the_python_model(ecrm_cmd, train_csv, tmp_path, cv):
    import numpy as np

    from ecrm import ECRM, ECRMCV, NystromSolver, load
    from ecrm.datasets import load_csv
    from ecrm.losses import HammingLoss

    extra = ["--cv", "--alphas", "1e-3,1e-2", "--loo-samples", "120",
             "--standardize", "no", "--family", "kernel"] if cv else []
    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--solver", "nystrom",
                    "--n-components", "40", "--center-selection", "kmeans++", "--seed", "3",
                    "--memory-budget", "2", *extra, "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nystrom solver with 40 centres" in proc.stdout.decode()
    data = load_csv(train_csv, path_sep="/")
    solver = NystromSolver(n_components=40, center_selection="kmeans++")
    common = dict(solver=solver, random_state=3, memory_budget=2.0)
    direct = (ECRMCV(HammingLoss(), data.hierarchy, alphas=[1e-3, 1e-2], **common,
                     search=LeaveOneOutSearch(loo_samples=120, fit_intercept="auto")) if cv
              else ECRM(HammingLoss(), data.hierarchy, **common)).fit(data.X, data.Y)
    model = load(tmp_path / "m.ecrm")
    assert model.get_params()["solver"] == solver
    np.testing.assert_allclose(model.predict_scores(data.X), direct.predict_scores(data.X),
                               rtol=1e-6, atol=1e-8)
