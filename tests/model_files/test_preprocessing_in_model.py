"""Preprocessing stored in the model: pipelines in model files, and ``ecrm fit``'s defaults."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.decomposition import PCA
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    MinMaxScaler,
    OneHotEncoder,
    PolynomialFeatures,
    StandardScaler,
)
from test_model_state import _edited

from _shapes import TREE5 as TREE
from ecrm import ECRM, load, save
from ecrm.datasets import HMCPreprocessor
from ecrm.losses import HammingLoss
from ecrm.model_files.io import ModelFileError
from ecrm.weights.kernel.length_scales import LeaveOneOutLengthScales


def _data(m=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3)) * [1.0, 100.0, 0.01]
    Y = TREE.close(np.c_[X[:, 0] > 0, X[:, 0] > 0.5, X[:, 0] < 0, X[:, 1] > 0,
                         X[:, 1] > 50] > 0)
    X[::7, 1] = np.nan
    return X, Y


def _ecrm():
    return ECRM(HammingLoss(), TREE, gamma=0.5)


STEPS = {
    "imputer+scaler": lambda: [SimpleImputer(add_indicator=True), StandardScaler()],
    "median+scaler": lambda: [SimpleImputer(strategy="median"), StandardScaler(with_mean=False)],
    "hmc": lambda: [HMCPreprocessor([None, None, None], scale="all")],
    "imputer+minmax": lambda: [SimpleImputer(), MinMaxScaler(feature_range=(-1, 2), clip=True)],
    "imputer+length-scales": lambda: [SimpleImputer(), StandardScaler(),
                                      LeaveOneOutLengthScales(max_iter=5)],
    "imputer+onehot": lambda: [SimpleImputer(strategy="most_frequent"),
                               OneHotEncoder(handle_unknown="ignore", sparse_output=False)],
    "imputer+scaler+pca": lambda: [SimpleImputer(), StandardScaler(), PCA(2)],
    "imputer+pca-whiten": lambda: [SimpleImputer(), PCA(0.9, whiten=True,
                                                         svd_solver="covariance_eigh")],
}


@pytest.mark.parametrize("kind", sorted(STEPS))
def test_pipeline_round_trip_predicts_and_transforms_as_saved(kind, tmp_path):
    X, Y = _data()
    if kind == "imputer+onehot":
        X = np.round(X / [0.5, 50.0, 0.005])  # a few categories per column
    pipe = make_pipeline(*STEPS[kind](), _ecrm()).fit(X, Y)
    save(pipe, tmp_path / "m.ecrm")
    back = load(tmp_path / "m.ecrm")
    assert isinstance(back, Pipeline)
    assert [type(s) for _, s in back.steps] == [type(s) for _, s in pipe.steps]
    X_new, _ = _data(m=25, seed=1)
    if kind == "imputer+onehot":
        X_new = np.round(X_new / [0.5, 50.0, 0.005])
    # the rebuilt steps compute from the same stored numbers: equal to rounding
    assert_allclose(back[:-1].transform(X_new), pipe[:-1].transform(X_new), rtol=1e-13,
                    atol=1e-13)
    assert_array_equal(back.predict(X_new), pipe.predict(X_new))


def test_onehot_of_strings_round_trips(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.choice(np.array(["red", "green", "light blue"], dtype=object), size=(40, 2))
    Y = TREE.close(np.c_[X[:, 0] == "red", X[:, 1] == "red", X[:, 0] == "green",
                         X[:, 1] == "green", X[:, 0] == "light blue"])
    pipe = make_pipeline(OneHotEncoder(drop="if_binary", sparse_output=False), _ecrm()).fit(X, Y)
    save(pipe, tmp_path / "m.ecrm")
    back = load(tmp_path / "m.ecrm")
    assert [c.tolist() for c in back[0].categories_] == [c.tolist()
                                                         for c in pipe[0].categories_]
    assert_array_equal(back.predict(X), pipe.predict(X))


@pytest.mark.parametrize("pipe, match", [
    (lambda: make_pipeline(PolynomialFeatures(), _ecrm()),
     "step .polynomialfeatures. must be one of .*; found PolynomialFeatures"),
    (lambda: make_pipeline(SimpleImputer(missing_values=0.0), _ecrm()),
     "SimpleImputer of numbers with missing_values=np.nan"),
    (lambda: make_pipeline(SimpleImputer(), OneHotEncoder(min_frequency=3), _ecrm()),
     "no OneHotEncoder with infrequent categories"),
    (lambda: make_pipeline(SimpleImputer(), StandardScaler()), "the last step must be"),
], ids=["polynomial-features", "imputer-of-zeros", "infrequent-categories",
        "no-estimator-last"])
def test_save_refuses_what_a_file_cannot_rebuild_and_writes_nothing(pipe, match, tmp_path):
    X, Y = _data()
    X = np.round(np.nan_to_num(X) / [0.5, 50.0, 0.005]) + 1.0
    model = pipe()
    model.fit(X, Y) if hasattr(model[-1], "loss") else model.fit(X)
    with pytest.raises(ModelFileError, match=match):
        save(model, tmp_path / "m.ecrm")
    assert not list(tmp_path.iterdir())


def _step_state(meta, k=0):
    return meta["params"]["steps"][k]["items"][1]["state"]


@pytest.mark.parametrize("edit, match", [
    (lambda meta: _step_state(meta).update(n_features_in_=4),
     "the categories make 4|at least n_features_in_=4"),
    (lambda meta: _step_state(meta).update(predict=1), r"fitted attributes \['predict'\]"),
    (lambda meta: _step_state(meta).update(n_features_out_=7), "n_features_out_=7"),
    (lambda meta: meta["params"]["steps"][0]["items"][1].update({"$type": "object"}),
     "entry without a fitted state"),
    (lambda meta: meta["params"]["steps"][0]["items"][1].update({"class": "KernelPCA"}),
     "unknown class 'KernelPCA'"),
], ids=["n_features_in_-changed", "an-undeclared-attribute", "n_features_out_-changed",
        "no-fitted-state", "unknown-class"])
def test_load_refuses_a_tampered_step(edit, match, tmp_path):
    X, Y = _data()
    pipe = make_pipeline(HMCPreprocessor(), _ecrm()).fit(X, Y)
    with pytest.raises(ModelFileError, match=match):
        load(_edited(tmp_path, pipe, edit))


# -- a StandardScaler's statistics within what its fit reaches ------------------------------
def _scaler_file(tmp_path, estimator, edit):
    from _model_file_edits import _tampered

    X, Y = _data()
    pipe = make_pipeline(SimpleImputer(), StandardScaler(), estimator).fit(X, Y)
    save(pipe, tmp_path / "m.ecrm")

    def change(meta, arrays):
        state = _step_state(meta, 1)
        names = {k: state[k]["name"] for k in ("mean_", "var_", "scale_")}
        names["X_fit_"] = (meta["params"]["steps"][2]["items"][1]["state"]["forest_estimator_"]
                           ["state"]["X_fit_"]["name"] if "forest_estimator_" in
                           meta["params"]["steps"][2]["items"][1]["state"]
                           else meta["params"]["steps"][2]["items"][1]["state"]["X_fit_"]
                           ["name"])
        edit({k: arrays[v] for k, v in names.items()})
    return _tampered(tmp_path / "m.ecrm", tmp_path / "edited.ecrm", change)


def _set(**values):
    def edit(arrays):
        for name, value in values.items():
            arrays[name][0] = value
    return edit


@pytest.mark.parametrize("edit, field", [
    (_set(mean_=1e308), r"mean_\[0\]=1e\+308 is beyond what fit"),
    (lambda a: a["mean_"].__imul__(1e300), r"mean_\[0\]=.* is no column fit could have seen"),
    (_set(mean_=1e20), r"mean_\[0\]=1e\+20 with scale_\[0\]"),
    (_set(var_=1e308, scale_=1e154), r"var_\[0\]=1e\+308 is beyond what fit"),
], ids=["mean-1e+308", "mean-times-1e+300", "mean-1e+20-for-its-scale", "var-1e+308"])
def test_scaler_statistics_beyond_what_fit_reaches_are_refused(edit, field, tmp_path):
    with pytest.raises(ModelFileError, match=field):
        load(_scaler_file(tmp_path, _ecrm(), edit))


def test_training_rows_before_a_scaler_must_be_finite(tmp_path):
    from ecrm import ForestECRM

    # a forest takes any rows; the scaler's statistics are ones fit reaches (std 1e150)
    def edit(arrays):
        _set(var_=1e300, scale_=1e150)(arrays)
        X = arrays["X_fit_"]  # its largest value in a column: the same side of every split
        X[np.argmax(X[:, 0]), 0] = 1e200
    forest = ForestECRM(HammingLoss(), TREE, n_estimators=3, random_state=0)
    with pytest.raises(ModelFileError, match=r"X_fit_ \* scale_ \+ mean_ are not finite"):
        load(_scaler_file(tmp_path, forest, edit))


def test_scalers_of_data_far_from_zero_round_trip(tmp_path):
    X, Y = _data()
    for offset in (1e6, -3e12):
        pipe = make_pipeline(SimpleImputer(), StandardScaler(), _ecrm()).fit(X + offset, Y)
        save(pipe, tmp_path / "m.ecrm")
        assert_array_equal(load(tmp_path / "m.ecrm").predict(X + offset), pipe.predict(X + offset))


# -- ecrm fit: the preprocessing it applies and stores ---------------------------------------
ARFF_HEAD = """@relation toy
@attribute x1 numeric
@attribute size numeric
@attribute colour {red,green,blue}
@attribute class hierarchical a,a/a1,a/a2,b,b/b1
@data
"""


def _write_arff(path, m=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(m):
        x = rng.normal()
        size = "?" if i % 9 == 0 else f"{1000 * rng.normal():.3f}"
        colour = "?" if i % 11 == 0 else ("red", "green", "blue")[i % 3]
        label = ("a/a1" if x > 0.3 else "a/a2") if x > 0 else ("b/b1" if x < -0.5 else "b")
        rows.append(f"{x:.4f},{size},{colour},{label}")
    path.write_text(ARFF_HEAD + "\n".join(rows) + "\n")


def test_fit_on_arff_one_hots_imputes_and_standardises(ecrm_cmd, tmp_path):
    _write_arff(tmp_path / "train.arff")
    fit = ecrm_cmd("fit", "train.arff", "--standardize", "yes", "-o", "m.ecrm", "--quiet",
                   cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert ("preprocessing: standardise the numeric columns; mean-impute missing values; "
            "one-hot 1 nominal columns (3 -> 5 columns)") in fit.stdout.decode()
    info = json.loads(ecrm_cmd("info", "m.ecrm", "--json", cwd=tmp_path).stdout)
    assert [s["step"] for s in info["preprocessing"]] == ["HMCPreprocessor"]
    assert info["n_features"] == 5
    text = ecrm_cmd("info", "m.ecrm", cwd=tmp_path).stdout.decode()
    assert "preprocessing   HMCPreprocessor: standardise the numeric columns" in text
    pred = ecrm_cmd("predict", "m.ecrm", "train.arff", "-o", "p.jsonl", "--quiet",
                    cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    # the same model from Python: the pipeline predicts the file's raw features
    from ecrm.datasets import load_hmc_arff

    data = load_hmc_arff(tmp_path / "train.arff")
    model = load(tmp_path / "m.ecrm")
    assert isinstance(model, Pipeline) and isinstance(model[0], HMCPreprocessor)
    assert model[0].feature_names_in_.tolist() == ["x1", "size", "colour"]
    rows = [json.loads(line)["labels"] for line in (tmp_path / "p.jsonl").read_text().split(
        "\n") if line]
    h = model[-1].output_space
    assert rows == h.to_labels(model.predict(data.X))


def test_fit_without_imputation_names_the_missing_value(ecrm_cmd, tmp_path):
    _write_arff(tmp_path / "train.arff")
    proc = ecrm_cmd("fit", "train.arff", "--no-impute", "-o", "m.ecrm", "--quiet",
                    cwd=tmp_path)
    assert proc.returncode == 2
    assert "train.arff, line 7: column 'size': a missing value" in proc.stderr.decode()


@pytest.mark.parametrize("flag, steps", [("no", []), ("auto", []), ("yes", ["HMCPreprocessor"])],
                         ids=["no", "auto", "yes"])
def test_standardize_yes_and_no_on_a_csv(ecrm_cmd, tmp_path, flag, steps):
    X, Y = _data()
    names = TREE.to_labels(Y)
    lines = ["f0,f1,f2,labels"] + [f"{a:.6g},{np.nan_to_num(b):.6g},{c:.6g},{';'.join(r)}"
                                   for (a, b, c), r in zip(X, names, strict=True)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "h.tsv").write_text("a\ta1\na\ta2\nb\tb1\n")
    proc = ecrm_cmd("fit", "d.csv", "--hierarchy", "h.tsv", "--standardize", flag, "-o",
                    "m.ecrm", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(ecrm_cmd("info", "m.ecrm", "--json", cwd=tmp_path).stdout)
    assert [s["step"] for s in info["preprocessing"]] == steps


def _two_scales(tmp_path, m: int):
    """``d.csv`` (and its ``h.tsv``): the label follows a feature in thousandths; another in
    thousands is noise. On the raw scale an RBF kernel sees only the noise, standardised it
    sees both. Returns the features and the file's lines."""
    rng = np.random.default_rng(3)
    signal, noise = rng.normal(size=m), rng.normal(size=m)
    lines = ["s,n,labels"] + [f"{1e-3 * s:.6g},{1e3 * n:.6g},{'a;a1' if s > 0 else 'b'}"
                              for s, n in zip(signal, noise, strict=True)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "h.tsv").write_text("a\ta1\na\ta2\nb\tb1\n")
    return signal, noise, lines


def test_standardize_auto_keeps_the_lower_leave_one_out_loss(ecrm_cmd, tmp_path):
    signal, noise, _ = _two_scales(tmp_path, 80)
    proc = ecrm_cmd("fit", "d.csv", "--hierarchy", "h.tsv", "--cv", "--family", "kernel",
                    "-o", "m.ecrm",
                    "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "preprocessing: standardise the numeric columns" in out
    assert "; chosen by exact leave-one-out (hamming loss" in out
    model = load(tmp_path / "m.ecrm")
    raw = type(model[-1])(**model[-1].get_params(deep=False)).fit(
        np.c_[1e-3 * signal, 1e3 * noise].round(9), model[-1].Y_fit_)
    assert model[-1].best_score_ > raw.best_score_  # the chosen one is the better


def test_impute_on_a_csv_with_missing_cells(ecrm_cmd, tmp_path):
    rng = np.random.default_rng(4)
    x = rng.normal(size=30)
    cells = ["" if i % 5 == 0 else "NA" if i % 7 == 0 else f"{v:.4f}" for i, v in enumerate(x)]
    lines = ["x,y,labels"] + [f"{c},{v:.4f},{'a' if v > 0 else 'b'}"
                              for c, v in zip(cells, x, strict=True)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    refused = ecrm_cmd("fit", "d.csv", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    assert refused.returncode == 2 and "d.csv, line 2: column 'x': a missing value" in \
        refused.stderr.decode() and "--impute" in refused.stderr.decode()
    fit = ecrm_cmd("fit", "d.csv", "--impute", "--standardize", "no", "-o", "m.ecrm",
                   "--quiet", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert "preprocessing: no scaling; mean-impute missing values" in fit.stdout.decode()
    pred = ecrm_cmd("predict", "m.ecrm", "d.csv", "-o", "p.csv", "--quiet", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    step = load(tmp_path / "m.ecrm")[0]
    observed = np.array([float(c) for c in cells if c not in ("", "NA")])
    assert_allclose(step.mean_[0], observed.mean(), rtol=1e-4)  # the cells' 4 decimals


def test_one_rule_for_missing_cells_whatever_cv_chose(ecrm_cmd, tmp_path):
    # standardising wins the leave-one-out choice here (the signal is in thousandths): the
    # model holds an HMCPreprocessor, which still refuses a missing cell without --impute
    _, _, lines = _two_scales(tmp_path, 60)
    lines[3] = ",".join(["", *lines[3].split(",")[1:]])  # line 4: a missing cell
    (tmp_path / "missing.csv").write_text("\n".join(lines) + "\n")
    common = ["--hierarchy", "h.tsv", "--quiet"]
    fit = ecrm_cmd("fit", "d.csv", "--cv", "--family", "kernel", *common, "-o", "cv.ecrm",
                   cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert ("preprocessing: standardise the numeric columns (2 -> 2 columns); chosen by "
            "exact leave-one-out (") in fit.stdout.decode()  # and no imputation
    assert load(tmp_path / "cv.ecrm")[0].impute is False
    fit = ecrm_cmd("fit", "d.csv", "--standardize", "yes", "--impute", *common, "-o",
                   "imputes.ecrm", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    for command in ("predict", "evaluate"):
        refused = ecrm_cmd(command, "cv.ecrm", "missing.csv", "--quiet", cwd=tmp_path)
        assert refused.returncode == 2 and refused.stdout == b""
        assert refused.stderr.decode().startswith(
            "ecrm: error: missing.csv, line 4: column 's': a missing value"), refused.stderr
        assert "--impute" in refused.stderr.decode()
        imputed = ecrm_cmd(command, "imputes.ecrm", "missing.csv", "--quiet", cwd=tmp_path)
        assert imputed.returncode == 0, imputed.stderr


def test_an_hmc_preprocessor_without_imputation_refuses_missing_values(tmp_path):
    X, Y = _data()  # NaN in column 1, from row 0 on
    with pytest.raises(ValueError, match=r"missing value \(NaN\) in row 0, column 1, and "
                       r"this HMCPreprocessor does not impute \(impute=False\)"):
        HMCPreprocessor(impute=False).fit(X)
    step = HMCPreprocessor(impute=False).fit(np.nan_to_num(X))
    assert_allclose(step.transform(np.nan_to_num(X)),
                    HMCPreprocessor().fit(np.nan_to_num(X)).transform(np.nan_to_num(X)))
    with pytest.raises(ValueError, match="does not impute"):
        step.transform(X)
    import scipy.sparse as sp

    with pytest.raises(ValueError, match="column 1, and this HMCPreprocessor does not"):
        step.transform(sp.csr_matrix(X))
    pipe = make_pipeline(HMCPreprocessor(impute=False), _ecrm()).fit(np.nan_to_num(X), Y)
    save(pipe, tmp_path / "m.ecrm")
    assert load(tmp_path / "m.ecrm")[0].impute is False
    with pytest.raises(ModelFileError, match="impute must be true or false; found 'no'"):
        load(_edited(tmp_path, pipe, lambda meta: meta["params"]["steps"][0]["items"][1][
            "kwargs"].update(impute="no")))


@pytest.mark.parametrize("edit, match", [
    (lambda meta: _step_state(meta).update(alpha_=-1.0), "alpha_ must be a finite non-negative"),
    (lambda meta: _step_state(meta).update(n_iter_=2.5), "n_iter_ must be an integer"),
    (lambda meta: _step_state(meta).update(n_features_in_=4), r"scales_ must be a float64 "
     r"array of shape \(4,\)"),
], ids=["alpha_-negative", "n_iter_-not-an-integer", "n_features_in_-changed"])
def test_load_refuses_tampered_length_scales(edit, match, tmp_path):
    X, Y = _data()
    pipe = make_pipeline(LeaveOneOutLengthScales(max_iter=2), _ecrm()).fit(np.nan_to_num(X), Y)
    with pytest.raises(ModelFileError, match=match):
        load(_edited(tmp_path, pipe, edit))


def test_a_minmax_scaler_state_is_rebuilt_only_as_fit_makes_it():
    from ecrm.model_files._steps import STEPS

    X = np.c_[np.linspace(0, 3, 20), np.full(20, 5.0)]  # a constant column: scale 1 there
    fitted = MinMaxScaler(feature_range=(-1, 2)).fit(X)
    _, names, state_of, rebuild = STEPS["MinMaxScaler"]
    state = state_of(fitted)
    back = MinMaxScaler(feature_range=(-1, 2))
    rebuild(back, dict(state))
    assert_array_equal(back.transform(X), fitted.transform(X))
    for name, value, match in [
            ("scale_", state["scale_"] * 1.01, "scale_ is not the one"),
            ("min_", state["min_"] + 1.0, "min_ is not the one"),
            ("data_range_", state["data_range_"] + 1.0, "data_range_ must be"),
            ("data_min_", np.array([0.0, np.inf]), "finite values"),
            ("n_samples_seen_", -3, "n_samples_seen_")]:
        with pytest.raises(ValueError, match=match):
            rebuild(MinMaxScaler(feature_range=(-1, 2)), {**state, name: value})
    with pytest.raises(ValueError, match="feature_range"):
        rebuild(MinMaxScaler(feature_range=(2, 1)), dict(state))


def _pca_state(**params):
    from ecrm.model_files._steps import STEPS

    X, _ = _data()
    fitted = PCA(**params).fit(np.nan_to_num(X))
    return fitted, STEPS["PCA"][2](fitted), STEPS["PCA"][3]


@pytest.mark.parametrize("params", [{"n_components": 2}, {"whiten": True}],
                         ids=["n_components=2", "whiten"])
def test_a_pca_state_is_rebuilt_only_as_fit_makes_it(params):
    fitted, state, rebuild = _pca_state(**params)
    back = PCA(**params)
    rebuild(back, dict(state))
    X, _ = _data(m=20, seed=5)
    assert_allclose(back.transform(np.nan_to_num(X)), fitted.transform(np.nan_to_num(X)),
                    rtol=1e-13, atol=1e-13)
    V = state["components_"]
    turned = V.copy()
    turned[0] = V[0] * 0.9 + V[-1] * 0.1  # still finite, no longer orthonormal
    for name, value, match in [
            ("components_", turned, "orthonormal rows"),
            ("components_", V[:, :2], r"shape \(\d, 3\)"),
            ("components_", np.where(V == V[0, 0], np.nan, V), "finite float64"),
            ("mean_", state["mean_"][:2], r"mean_ must be a float64 array of shape \(3,\)"),
            ("mean_", np.array([0.0, np.inf, 1.0]), "mean_ must hold finite values"),
            ("explained_variance_", state["explained_variance_"] * 2, "singular_values_"),
            ("explained_variance_", state["explained_variance_"][::-1], "non-increasing"),
            ("singular_values_", state["singular_values_"] * 1.001, "singular_values_"),
            ("explained_variance_ratio_", state["explained_variance_ratio_"] * 3,
             "summing to at most 1"),
            ("n_components_", state["n_components_"] + 1, "n_components_"),
            ("n_samples_", 1, "n_samples_ must be at least 2"),
            ("noise_variance_", -1.0, "noise_variance_"),
            ("whiten", True, "unknown fitted attributes")]:
        with pytest.raises(ValueError, match=match):
            rebuild(PCA(**params), {**state, name: value})
    if "n_components" in params:
        with pytest.raises(ValueError, match="n_components=3 gives 3"):
            rebuild(PCA(3), dict(state))


def _pca_entry(meta):
    return meta["params"]["steps"][1]["items"][1]


@pytest.mark.parametrize("edit, match", [
    (lambda meta: _pca_entry(meta)["kwargs"].update(whiten="yes"), "'whiten' parameter"),
    (lambda meta: _pca_entry(meta)["state"].update(n_components_=3),
     "n_components_=3, but n_components=2 gives 2"),
    (lambda meta: _pca_entry(meta)["state"].update(noise_variance_=-1.0), "noise_variance_"),
    (lambda meta: _pca_entry(meta)["state"].update(n_features_in_=4),
     r"components_ must be a finite float64 array of shape \(2, 4\)"),
], ids=["whiten", "n_components_", "noise", "n_features_in_"])
def test_load_refuses_a_tampered_pca(edit, match, tmp_path):
    X, Y = _data()
    pipe = make_pipeline(SimpleImputer(), PCA(2, whiten=True), _ecrm()).fit(X, Y)
    with pytest.raises(ModelFileError, match=match):
        load(_edited(tmp_path, pipe, edit))


def test_a_fitted_search_is_refused_naming_what_to_save(tmp_path):
    from sklearn.model_selection import GridSearchCV

    X, Y = _data()
    X = np.nan_to_num(X)
    search = GridSearchCV(_ecrm(), {"alpha": [0.01, 0.1]}, cv=2).fit(X, Y)
    with pytest.raises(ModelFileError, match=r"save its best_estimator_"):
        save(search, tmp_path / "m.ecrm")
    save(search.best_estimator_, tmp_path / "m.ecrm")
    assert_array_equal(load(tmp_path / "m.ecrm").predict(X), search.predict(X))
