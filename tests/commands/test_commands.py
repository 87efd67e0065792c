"""The ``ecrm fit / predict / evaluate / info`` commands: the walk-through, and each bad input."""

import csv
import json
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from ecrm import load
from ecrm.cli import main
from ecrm.datasets import load_csv
from ecrm.selection import LeaveOneOutSearch

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TRAIN = ROOT / "examples" / "data" / "documents-train.csv"
TEST = ROOT / "examples" / "data" / "documents-test.csv"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory where ``examples/`` is the repository's (outputs stay in tmp)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _section():
    text = README.read_text()
    start = text.index("## Use your own data")
    return text[start:text.index("\n## ", start + 1)]


def test_walkthrough_runs_as_written(workdir, capsys):
    block = re.search(r"```sh\n(.*?)```", _section(), re.S).group(1)
    commands = [shlex.split(line) for line in block.strip().splitlines()]
    assert [c[:2] for c in commands] == [["ecrm", "fit"], ["ecrm", "predict"],
                                         ["ecrm", "evaluate"], ["ecrm", "info"]]
    outputs = []
    for argv in commands:
        assert main(argv[1:] + (["--quiet"] if argv[1] != "info" else [])) == 0
        outputs.append(capsys.readouterr().out)
    assert "alpha=" in outputs[0] and "exact leave-one-out hierarchical loss" in outputs[0]
    with open("predictions.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 100 and all("score:science" in r for r in rows)
    model = load("model.ecrm")
    test = load_csv(TEST, hierarchy=model.output_space)
    names = [r["labels"].split(";") if r["labels"] else [] for r in rows]
    np.testing.assert_array_equal(model.output_space.to_matrix(names, close=False),
                                  model.predict(test.X))
    assert "hierarchical F1" in outputs[2] and "micro AU(PRC)" in outputs[2]
    assert "HierarchicalLoss" in outputs[3] and "n_train         300" in outputs[3]


def test_python_walkthrough_runs(workdir, capsys):
    code = re.search(r"```python\n(.*?)```", _section(), re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.startswith("[['sport/tennis']")


def test_evaluate_json_matches_the_predictions_file(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "-o", "m.ecrm", "--quiet"]) == 0
    assert main(["predict", "m.ecrm", str(TEST), "-o", "p.jsonl", "--scores", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["evaluate", "m.ecrm", str(TEST), "--json", "--quiet"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["evaluate", "m.ecrm", str(TEST), "--predictions", "p.jsonl", "--json",
                 "--quiet"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert direct.keys() == from_file.keys()
    for key in direct:
        if key in ("per_level", "baselines"):
            for column, values in direct[key].items():
                assert from_file[key][column] == pytest.approx(values, abs=1e-6)
        elif key in ("model", "warnings"):
            assert from_file[key] == direct[key]
        else:
            assert from_file[key] == pytest.approx(direct[key], abs=1e-6)


def test_predict_reorders_feature_columns_by_name(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "-o", "m.ecrm", "--quiet"]) == 0
    with open(TEST) as fh:
        rows = list(csv.reader(fh))
    order = [6, 5, 4, 3, 2, 1, 0]
    with open("shuffled.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([[r[k] for k in order] for r in rows])
    assert main(["predict", "m.ecrm", str(TEST), "-o", "a.csv", "--quiet"]) == 0
    assert main(["predict", "m.ecrm", "shuffled.csv", "-o", "b.csv", "--quiet"]) == 0
    assert Path("a.csv").read_text() == Path("b.csv").read_text()


def _fails(argv, message, capsys, created=()):
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    for path in created:
        assert not os.path.exists(path)


def test_fit_missing_train_file(workdir, capsys):
    _fails(["fit", "none.csv", "-o", "m.ecrm"], "TRAIN must be a readable file", capsys,
           ["m.ecrm"])


def test_fit_negative_alpha(workdir, capsys):
    _fails(["fit", str(TRAIN), "--alpha", "-1", "-o", "m.ecrm"],
           "--alpha must be a real number in (0, inf); got -1", capsys, ["m.ecrm"])


def test_fit_alpha_and_cv_together(workdir, capsys):
    _fails(["fit", str(TRAIN), "--alpha", "1", "--cv", "-o", "m.ecrm"],
           "not allowed with argument", capsys, ["m.ecrm"])


def test_fit_output_in_missing_directory(workdir, capsys):
    _fails(["fit", str(TRAIN), "-o", "nodir/m.ecrm"], "-o must be a file path in an existing "
           "directory", capsys)


def test_fit_unknown_loss(workdir, capsys):
    _fails(["fit", str(TRAIN), "--loss", "f1", "-o", "m.ecrm"], "invalid choice: 'f1'", capsys)


def test_fit_bad_gamma_list(workdir, capsys):
    _fails(["fit", str(TRAIN), "--cv", "--gammas", "0.1,,1", "-o", "m.ecrm"],
           "--gammas has an empty value", capsys)


def test_fit_grid_without_cv(workdir, capsys):
    _fails(["fit", str(TRAIN), "--alphas", "0.1", "-o", "m.ecrm"], "--alphas, --gammas, "
           "--kernels, --scoring and --calibration need --cv", capsys, ["m.ecrm"])


def test_fit_hierarchical_loss_on_flat_labels(workdir, capsys):
    _fails(["fit", str(TRAIN), "--loss", "hierarchical", "-o", "m.ecrm", "--quiet"],
           "--loss hierarchical needs a hierarchy", capsys, ["m.ecrm"])


def test_fit_malformed_data_names_line(workdir, capsys):
    Path("bad.csv").write_text("x,labels\n1,a\nfoo,b\n")
    _fails(["fit", "bad.csv", "-o", "m.ecrm", "--quiet"], "bad.csv, line 3: column 'x'", capsys,
           ["m.ecrm"])


def test_predict_on_a_file_that_is_not_a_model(workdir, capsys):
    _fails(["predict", str(TRAIN), str(TEST), "-o", "p.csv", "--quiet"],
           "not an ecrm model file", capsys, ["p.csv"])


def test_predict_unknown_output_format(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "-o", "m.ecrm", "--quiet"]) == 0
    _fails(["predict", "m.ecrm", str(TEST), "-o", "p.xlsx", "--quiet"],
           "cannot tell the output format", capsys, ["p.xlsx"])


def test_predict_missing_feature_column(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "-o", "m.ecrm", "--quiet"]) == 0
    Path("few.csv").write_text("f0,f1,labels\n1,2,science\n")
    _fails(["predict", "m.ecrm", "few.csv", "-o", "p.csv", "--quiet"],
           "missing the feature columns", capsys, ["p.csv"])


def test_evaluate_needs_labels(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "-o", "m.ecrm", "--quiet"]) == 0
    Path("nolabels.csv").write_text("f0,f1,f2,f3,f4,f5\n1,2,3,4,5,6\n")
    _fails(["evaluate", "m.ecrm", "nolabels.csv", "--quiet"], "no label column 'labels'", capsys)


def test_info_on_a_truncated_model(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "-o", "m.ecrm", "--quiet"]) == 0
    data = Path("m.ecrm").read_bytes()
    Path("cut.ecrm").write_bytes(data[:100])
    _fails(["info", "cut.ecrm"], "not a complete zip archive", capsys)


def test_fit_chooses_the_kernel_by_leave_one_out(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "--cv", "--kernels", "rbf, linear",
                 "--gammas", "0.1,0.3", "--alphas", "1e-3,1e-2", "--family", "kernel",
                 "-o", "m.ecrm", "--quiet"]) == 0
    out = capsys.readouterr().out
    model = load("m.ecrm")
    assert set(model.cv_results_["params"][0]) >= {"kernel"}
    assert {p["kernel"] for p in model.cv_results_["params"]} == {"rbf", "linear"}
    assert f"{model.kernel_params_['kernel']} kernel)" in out


def test_fit_unknown_kernel_in_the_grid(workdir, capsys):
    _fails(["fit", str(TRAIN), "--cv", "--kernels", "rbf,gauss", "-o", "m.ecrm"],
           "--kernels has unknown names gauss", capsys, ["m.ecrm"])


@pytest.mark.parametrize("option", [["--scoring", "micro_auprc"], ["--calibration", "isotonic"]],
                         ids=["scoring", "calibration"])
def test_fit_score_options_without_cv(workdir, capsys, option):
    _fails(["fit", str(TRAIN), *option, "-o", "m.ecrm"], "--scoring and --calibration need "
           "--cv", capsys, ["m.ecrm"])


def test_fit_unknown_scoring(workdir, capsys):
    _fails(["fit", str(TRAIN), "--cv", "--scoring", "accuracy", "-o", "m.ecrm"],
           "invalid choice: 'accuracy'", capsys, ["m.ecrm"])


def test_fit_chooses_by_the_leave_one_out_scores_and_calibrates(workdir, capsys):
    assert main(["fit", str(TRAIN), "--path-sep", "/", "--cv", "--alphas", "1e-3,1e-2,1e-1",
                 "--scoring", "micro_auprc", "--calibration", "isotonic", "-o", "m.ecrm",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    model = load("m.ecrm")
    assert (model.scoring, model.calibration_) == ("micro_auprc", "isotonic")
    # the selection is the one the Python API makes on the same data
    data = load_csv(str(TRAIN), path_sep="/")
    from ecrm import ECRMCV
    from ecrm.losses import HammingLoss

    direct = ECRMCV(HammingLoss(), data.hierarchy, alphas=[1e-3, 1e-2, 1e-1], kernel="rbf",
                    scoring="micro_auprc",
                    search=LeaveOneOutSearch(fit_intercept="auto", calibration="isotonic"))
    direct.fit(data.X, data.Y)
    assert (model.alpha_, model.fit_intercept_) == (direct.alpha_, direct.fit_intercept_)
    assert f"micro_auprc {direct.best_score_:.4f}" in out
    assert "calibration=isotonic" in out
    np.testing.assert_allclose(model.predict_scores(data.X), direct.predict_scores(data.X))
