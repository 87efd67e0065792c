"""StructuredSVM model files (saved with :func:`ecrm.save`, bare or as a pipeline's last step)
through the real ``ecrm`` command: ``info``, ``predict`` and ``evaluate`` read them; what needs
label scores, which this model kind has not, is refused or left out with one clear line."""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path

import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ecrm
from ecrm.datasets.formats import load_data
from ecrm.losses import HammingLoss


@pytest.fixture(scope="module", params=["bare", "pipeline"])
def ssvm_file(request, train_csv, tmp_path_factory) -> tuple[Path, object]:
    pd = pytest.importorskip("pandas")
    data = load_data(str(train_csv), path_sep="/")
    svm = ecrm.StructuredSVM(HammingLoss(), data.hierarchy, C=10.0, max_iter=5,
                             random_state=0)
    model = svm if request.param == "bare" else make_pipeline(StandardScaler(), svm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # five passes: a quick model
        model.fit(pd.DataFrame(data.X, columns=data.feature_names), data.Y)  # named columns
    path = tmp_path_factory.mktemp("ssvm") / f"{request.param}.ecrm"
    ecrm.save(model, path)
    return path, model


def _ok(proc) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return err


def test_info_describes_a_structured_svm(ecrm_cmd, tmp_path, ssvm_file):
    path, model = ssvm_file
    proc = ecrm_cmd("info", "--json", str(path), cwd=tmp_path)
    _ok(proc)
    info = json.loads(proc.stdout)
    svm = model.steps[-1][1] if hasattr(model, "steps") else model
    assert info["estimator"] == "StructuredSVM" and info["C"] == 10.0
    assert info["n_iter"] == 5 and info["duality_gap"] == pytest.approx(svm.duality_gap_)
    assert info["labels"] == [str(n) for n in svm.output_space.output_names]
    assert len(info["preprocessing"]) == (1 if hasattr(model, "steps") else 0)
    text = ecrm_cmd("info", str(path), cwd=tmp_path)
    assert "StructuredSVM" in _ok(text) + text.stdout.decode()


def test_predict_writes_the_structured_svm_predictions(ecrm_cmd, tmp_path, test_csv,
                                                       ssvm_file):
    path, model = ssvm_file
    proc = ecrm_cmd("predict", str(path), str(test_csv), "-o", "p.csv", "--quiet", cwd=tmp_path)
    _ok(proc)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "p.csv").read_text())))
    pd = pytest.importorskip("pandas")
    test = load_data(str(test_csv), path_sep="/")
    X = pd.DataFrame(test.X, columns=test.feature_names)
    expected = model.predict_labels(X) if not hasattr(model, "steps") else \
        model.steps[-1][1].predict_labels(model[:-1].transform(X))
    assert [row["labels"].split(";") if row["labels"] else [] for row in rows] == \
        [[str(v) for v in labels] for labels in expected]


def test_predict_matches_the_columns_by_the_names_the_model_was_fitted_on(
        ecrm_cmd, tmp_path, test_csv, ssvm_file):
    rows = list(csv.reader(io.StringIO(test_csv.read_text())))
    with open(tmp_path / "reversed.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(row[-2::-1] + row[-1:] for row in rows)  # f5, ..., f0, labels
    assert rows[0][0] == "f0" and (tmp_path / "reversed.csv").read_text().startswith("f5,f4")
    for name in ("given.csv", "reversed.csv"):
        data = test_csv if name == "given.csv" else tmp_path / name
        proc = ecrm_cmd("predict", str(ssvm_file[0]), str(data), "-o", f"p-{name}",
                        "--quiet", cwd=tmp_path)
        assert _ok(proc) == ""  # no warning about feature names either
    assert (tmp_path / "p-given.csv").read_bytes() == (tmp_path / "p-reversed.csv").read_bytes()


def test_predict_scores_of_a_structured_svm_are_refused(ecrm_cmd, tmp_path, test_csv,
                                                        ssvm_file):
    proc = ecrm_cmd("predict", str(ssvm_file[0]), str(test_csv), "-o", "p.csv", "--scores",
                    "--quiet", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert err.strip() == ("ecrm: error: --scores: label scores are not available for a "
                           "StructuredSVM model (it predicts label sets, not the label "
                           "marginals); predict without --scores")
    assert not (tmp_path / "p.csv").exists()


def test_evaluate_reports_the_metrics_without_scores(ecrm_cmd, tmp_path, test_csv, ssvm_file):
    proc = ecrm_cmd("evaluate", str(ssvm_file[0]), str(test_csv), "--path-sep", "/", "--json",
                    "--quiet", cwd=tmp_path)
    err = _ok(proc)
    report = json.loads(proc.stdout)
    assert report["n_rows"] == 100 and 0 <= report["hF"] <= 1 and "micro_auprc" not in report
    assert "label scores are not available for a StructuredSVM model" in err
    assert "AU(PRC)" in err and len(err.strip().splitlines()) == 1


def test_evaluate_text_and_report_describe_the_structured_svm(ecrm_cmd, tmp_path, test_csv,
                                                              ssvm_file):
    proc = ecrm_cmd("evaluate", str(ssvm_file[0]), str(test_csv), "--path-sep", "/",
                    "--report", "r.html", "--quiet", cwd=tmp_path)
    _ok(proc)
    text = proc.stdout.decode()
    assert "model: StructuredSVM, HammingLoss, rbf kernel, gamma=1/features, C=10;" in text
    assert "hierarchical F1" in text and "micro AU(PRC)" not in text
    page = (tmp_path / "r.html").read_text()
    assert "StructuredSVM" in page and "5 passes, duality gap" in page
