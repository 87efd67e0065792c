"""What a load checks beyond types: required fitted attributes, the invariants of fit's
algebra (Nystrom orthonormality, the dual coefficient bound), and declared sizes against the
memory budget before anything is allocated (model files and label-ranking headers)."""

from __future__ import annotations

import gzip
import tracemalloc
import warnings

import numpy as np
import pytest
from test_model_file_variants import _parts, _write

from _shapes import TREE5 as TREE
from ecrm import ECRM, ECRMCV, MixedRiskECRM, NystromSolver, load, save
from ecrm.cli import main
from ecrm.datasets.label_ranking import load_label_ranking
from ecrm.losses import HammingLoss
from ecrm.model_files import _archive
from ecrm.model_files._kernel_state import (
    check_dual_bound,
    check_dual_residual,
    check_nystrom_orthonormal,
)
from ecrm.model_files.io import ModelFileError
from ecrm.weights.kernel._solvers.rows import RiskTargets

SMALL = 32 * 2**20


def _data(m=18, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    return X, TREE.close(X @ rng.normal(size=(3, TREE.n_outputs)) > 0.2)


def _fitted(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(*_data())


def _edited(model, tmp_path, edit):
    path = tmp_path / "model.ecrm"
    save(_fitted(model), path)
    meta, arrays = _parts(path)
    edit(meta, arrays)
    out = tmp_path / "edited.ecrm"
    _write(out, meta, arrays)
    return out


def _array(meta, *keys):
    node = meta["fitted"]
    for key in keys:
        node = node[key]
    return node["name"]


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


# -- required fitted attributes ---------------------------------------------------------------
def test_a_missing_fitted_attribute_is_refused_at_load(tmp_path):
    path = _edited(ECRMCV(HammingLoss(), TREE, alphas=[0.01, 0.1], gamma=0.5), tmp_path,
                   lambda meta, arrays: meta["fitted"].pop("alpha_"))
    with pytest.raises(ModelFileError, match="missing the fitted attributes.*alpha_"):
        load(path)


def test_ecrm_info_on_a_file_without_a_fitted_attribute_is_one_line(tmp_path, capsys):
    path = _edited(ECRMCV(HammingLoss(), TREE, alphas=[0.01, 0.1], gamma=0.5), tmp_path,
                   lambda meta, arrays: meta["fitted"].pop("alpha_"))
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "alpha_" in err and "Traceback" not in err


def test_a_nested_member_missing_an_attribute_is_refused(tmp_path):
    def edit(meta, arrays):
        meta["fitted"]["kernel_estimator_"]["state"].pop("alpha_")
    path = _edited(MixedRiskECRM(HammingLoss(), TREE, mixing_grid=3, random_state=0,
                                 forest_options={"n_estimators": 3}), tmp_path, edit)
    with pytest.raises(ModelFileError, match="alpha_"):
        load(path)


@pytest.mark.parametrize("value", [[0.5], "0.5", True], ids=["list", "string", "bool"])
def test_a_mixture_share_of_another_type_is_refused(tmp_path, value):
    path = _edited(MixedRiskECRM(HammingLoss(), TREE, mixing_grid=3, random_state=0,
                                 forest_options={"n_estimators": 3}), tmp_path,
                   lambda meta, arrays: meta["fitted"].__setitem__("mixture_", value))
    with pytest.raises(ModelFileError, match="mixture_"):
        load(path)


# -- invariants of fit's algebra --------------------------------------------------------------
NYSTROM = dict(solver=NystromSolver(n_components=6), random_state=0, gamma=0.5)


def test_fitted_nystrom_projections_are_orthonormal_in_the_kernel():
    features = _fitted(ECRM(HammingLoss(), TREE, **NYSTROM))._fit.features
    K = features.kernel_params
    from ecrm.weights.kernel._kernels import kernel_matrix

    P = features.projection
    gram = P.T @ kernel_matrix(features.centres, features.centres, **K) @ P
    np.testing.assert_allclose(gram, np.eye(P.shape[1]), atol=1e-12)
    check_nystrom_orthonormal(features.centres, K, P)


@pytest.mark.parametrize("edit", ["transpose", "scale", "1e308 centres"])
def test_a_nystrom_projection_that_breaks_orthonormality_is_refused(tmp_path, edit):
    def change(meta, arrays):
        features = meta["fitted"]["_fit"]["kwargs"]["features"]["kwargs"]
        P, C = features["projection"]["name"], features["centres"]["name"]
        if edit == "transpose":
            arrays[P] = np.ascontiguousarray(arrays[P].T)
        elif edit == "scale":
            arrays[P] = arrays[P] * 1.01
        else:
            arrays[C] = arrays[C].copy()
            arrays[C][0, 0] = 1e308
    path = _edited(ECRM(HammingLoss(), TREE, **NYSTROM), tmp_path, change)
    with pytest.raises(ModelFileError, match="projection|centres"):
        load(path)


@pytest.mark.parametrize("seed", range(6), ids="seed={}".format)
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_real_dual_fits_never_exceed_the_coefficient_bound(seed, fit_intercept, kernel):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(5, 40))
    X = rng.normal(size=(m, 3)) * 10 ** rng.uniform(-2, 2)
    Y = TREE.close(rng.random((m, TREE.n_outputs)) > 0.5)
    for alpha in (1e-6, 1e-3, 1.0, 1e3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                model = ECRM(HammingLoss(), TREE, kernel=kernel, gamma=1.0, alpha=alpha,
                             fit_intercept=fit_intercept, solver="dual").fit(X, Y)
            except ValueError as exc:  # a ridge below the kernel's round-off: no fit
                assert "too small" in str(exc)
                continue
        fit = model._fit
        T = RiskTargets(model.loss)(model.Y_fit_)[:, :fit.coef.shape[1]]
        norms = np.sqrt((fit.coef ** 2).sum(axis=0))
        bounds = np.sqrt(((T - fit.intercept) ** 2).sum(axis=0)) / fit.ridge
        # the bound itself, up to the solve's rounding (a constant target's column is 0)
        slack = 1e-6 * np.linalg.norm(T) / fit.ridge
        assert (norms <= bounds * (1 + 1e-9) + slack).all()
        check_dual_bound(fit, T)
        check_dual_residual(fit, model.X_fit_, T)  # the solve's residual within its bound


@pytest.mark.parametrize("scale", [3.0, 1e300], ids=["times-3", "times-1e+300"])
def test_dual_coefficients_over_the_bound_are_refused(tmp_path, scale):
    def edit(meta, arrays):
        name = _array(meta, "_fit", "kwargs", "coef")
        arrays[name] = arrays[name] * scale
    path = _edited(ECRM(HammingLoss(), TREE, gamma=0.5, alpha=10.0), tmp_path, edit)
    with pytest.raises(ModelFileError, match="_fit.coef"):
        load(path)


DUAL = {"ECRM": lambda: ECRM(HammingLoss(), TREE, gamma=0.5),
        "ECRMCV": lambda: ECRMCV(HammingLoss(), TREE, alphas=[0.01, 0.1], gamma=0.5),
        "ECRM-linear-sparse": lambda: ECRM(HammingLoss(), TREE, kernel="linear")}


@pytest.mark.parametrize("edit", ["2**28", "row swap", "scale"])
@pytest.mark.parametrize("name", list(DUAL))
def test_training_rows_a_dual_fit_did_not_solve_on_are_refused(tmp_path, name, edit):
    # a finite, well-shaped X_fit_ of other values: the coefficients no longer solve
    # (K + ridge I) A = T - b on it
    import scipy.sparse as sp

    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DUAL[name]().fit(sp.csr_array(X) if name.endswith("sparse") else X, Y)
    path = tmp_path / "model.ecrm"
    save(model, path)
    meta, arrays = _parts(path)
    node = meta["fitted"]["X_fit_"]
    key = node["data"]["name"] if node["$type"] == "sparse" else node["name"]
    values = arrays[key].copy()
    if edit == "2**28":
        values.flat[0] = 2.0**28
    elif edit == "row swap":  # (sparse: the stored values in reverse order)
        values = values[::-1].copy() if values.ndim == 1 else values[[1, 0, *range(2, 18)]]
    else:  # (a common shift is invisible to the rbf kernel: the guide says so)
        values = values * 1.5
    arrays[key] = values
    _write(tmp_path / "edited.ecrm", meta, arrays)
    with pytest.raises(ModelFileError, match="X_fit_"):
        load(tmp_path / "edited.ecrm")


# -- declared sizes against the memory budget -------------------------------------------------
BUDGET_CHILD = """
import tracemalloc
from ecrm import load
from ecrm.model_files import _archive
from ecrm.model_files.io import ModelFileError
assert _archive.MEMORY_BUDGET == {budget}, _archive.MEMORY_BUDGET
load({saved!r})  # the modules a load imports, imported before the count starts
tracemalloc.start()
try:
    load({path!r})
    print("loaded")
except ModelFileError as exc:
    print("refused:", exc)
print("peak", tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.parametrize("member", ["X_fit_", "Y_fit_", "_fit.coef"])
def test_a_member_the_other_fields_contradict_is_refused_before_it_is_read(
        tmp_path, monkeypatch, run_python, member):
    # a real member of 16 MiB (zeros: a small file) whose shape matches its own declaration,
    # under the budget, but not the training rows the rest of the file declares
    path = tmp_path / "model.ecrm"
    save(_fitted(ECRM(HammingLoss(), TREE, gamma=0.5)), path)
    meta, arrays = _parts(path)
    name = _array(meta, *member.replace(".", ".kwargs.").split("."))
    cols = arrays[name].shape[1]
    arrays[name] = np.zeros((2**21 // cols, cols))
    out = tmp_path / "big.ecrm"
    _write(out, meta, arrays)
    budget = 64 * 2**20
    monkeypatch.setenv("ECRM_MEMORY_BUDGET", str(budget))
    result = run_python("-c", BUDGET_CHILD.format(budget=budget, saved=str(path),
                                                       path=str(out)))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("refused:") and member in lines[0], lines[0]
    assert "before reading" in lines[0]
    assert int(lines[-1].split()[1]) < 4 * 2**20  # the 16 MiB member was never inflated


def test_arrays_declared_over_the_budget_are_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "model.ecrm"
    save(_fitted(ECRM(HammingLoss(), TREE, gamma=0.5)), path)
    meta, arrays = _parts(path)
    out = tmp_path / "big.ecrm"
    # a member of 3 GiB whose declared shape matches: the metadata alone refuses it
    name = _array(meta, "X_fit_")
    arrays[name] = np.broadcast_to(np.zeros(1), (1,))  # replaced below in the metadata
    _write(out, meta, arrays)
    import hashlib
    import json
    import zipfile

    with zipfile.ZipFile(out) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    forged = json.loads(members["ecrm-model.json"])
    forged["arrays"][name]["shape"] = [3 * 2**27, 1]
    text = json.dumps(forged).encode()
    members["ecrm-model.json"] = text
    members["ecrm-model.sha256"] = hashlib.sha256(text).hexdigest().encode()
    with zipfile.ZipFile(out, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    monkeypatch.setattr(_archive, "MEMORY_BUDGET", 2**30)
    with pytest.raises(ModelFileError, match="memory budget"):
        assert _peak(lambda: load(out)) < SMALL


@pytest.mark.parametrize("grid", [2**28, 2**31, 2**63], ids=["2**28", "2**31", "2**63"])
def test_a_mixing_grid_of_forged_length_is_refused_without_allocating(tmp_path, grid):
    path = _edited(MixedRiskECRM(HammingLoss(), TREE, mixing_grid=3, random_state=0,
                                 forest_options={"n_estimators": 3}), tmp_path,
                   lambda meta, arrays: meta["params"].__setitem__("mixing_grid", grid))
    outcome = []

    def run():
        with pytest.raises(ModelFileError, match="mixing_grid"):
            load(path)
        outcome.append(True)
    assert _peak(run) < SMALL and outcome


@pytest.mark.parametrize("width", [2**28, 2**31, 2**63], ids=["2**28", "2**31", "2**63"])
def test_a_step_width_of_forged_size_is_refused_without_allocating(tmp_path, width):
    from sklearn.pipeline import make_pipeline

    from ecrm.datasets import HMCPreprocessor

    def edit(meta, arrays):
        meta["fitted"]  # the pipeline's steps are parameters
        step = meta["params"]["steps"][0]["items"][1]
        step["state"]["n_features_in_"] = width
    path = _edited(make_pipeline(HMCPreprocessor(), ECRM(HammingLoss(), TREE, gamma=0.5)),
                   tmp_path, edit)

    def run():
        with pytest.raises(ModelFileError, match="n_features_in_"):
            load(path)
    assert _peak(run) < SMALL


def test_a_label_ranking_header_of_a_trillion_rows_allocates_nothing(tmp_path):
    path = tmp_path / "toy.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("1000000000000,2,3\n0.5,1,1,2,3\n")

    def run():
        with pytest.raises(ValueError, match="memory budget") as err:
            load_label_ranking("toy", tmp_path)
        assert str(path) in str(err.value)
    assert _peak(run) < SMALL


def test_a_label_ranking_header_with_more_rows_than_bytes_is_refused(tmp_path):
    (tmp_path / "toy.csv").write_text("100000,2,3\n0.5,1,1,2,3\n")
    with pytest.raises(ValueError, match="declares 100000 data lines; the file holds"):
        load_label_ranking("toy", tmp_path)


# -- streams: a gzip'd ARFF of comment lines ---------------------------------------------------
ARFF = "@relation toy\n@attribute x numeric\n@attribute class hierarchical a,a/b,c\n@data\n"


def _comment_bomb(path, n_bytes, line=b"%" + b" comment" * 120 + b"\n"):
    """A gzip'd ARFF whose header is followed by ``n_bytes`` of comment lines."""
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(ARFF[:ARFF.index("@data")].encode())
        block = line * (2**20 // len(line))
        for _ in range(n_bytes // len(block)):
            f.write(block)
        f.write(b"%" + b"x" * 3 * 2**20 + b"\n")  # one comment line longer than any chunk
        f.write(b"@data\n1.5,a/b\n?,c\n")
    return path


def test_a_gzipped_arff_of_comment_lines_is_read_streaming(tmp_path):
    from ecrm.datasets import load_hmc_arff

    path = _comment_bomb(tmp_path / "bomb.arff.gz", 64 * 2**20)
    data = {}

    def run():
        data["b"] = load_hmc_arff(path)
    assert _peak(run) < 16 * 2**20  # 64 MiB of comments: a byte a line is kept
    np.testing.assert_array_equal(data["b"].Y, [[1, 1, 0], [0, 0, 1]])


def test_an_arff_over_the_memory_budget_is_refused_while_reading(tmp_path, monkeypatch):
    from ecrm.datasets import load_hmc_arff
    from ecrm.datasets.arff import ArffError

    path = tmp_path / "big.arff.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(ARFF.encode())
        f.write(b"1.5,a/b\n" * 2**20)
    monkeypatch.setattr(_archive, "MEMORY_BUDGET", 2**20)

    def run():
        with pytest.raises(ArffError, match="memory budget"):
            load_hmc_arff(path)
    assert _peak(run) < 8 * 2**20


@pytest.mark.parametrize("value, expected", [("123456", 123456), ("", 4 * 2**30),
                                             ("lots", 4 * 2**30), ("0", 4 * 2**30)],
                         ids=["bytes", "empty", "a-word", "zero"])
def test_the_memory_budget_is_read_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("ECRM_MEMORY_BUDGET", value)
    assert _archive._budget_from_environment() == expected
