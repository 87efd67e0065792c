"""Model files written by an older version of the package still load and predict the same.

``data/`` holds small files written by the package before its parameters and modules took
their present layout (commit 97de6ea, format version 2): an ECRMCV with the Nystrom solver
chosen by name and ``n_components``, an ECRMCV with ``calibration="platt"`` (both parameters
of the constructor then, held by the solver object and the search object now), a
ForestECRMCV (its search's and its trees' settings flat then, on its OutOfBagSearch now; a
fixed trees' setting joins the grid), a MixedRiskECRM, a StructuredSVM and a Pipeline of a
StandardScaler before an ECRMCV. Each was fitted on 18 random points of three features and a
two-root tree of five labels (``a`` over ``a1`` and ``a2``, ``b`` over ``b1``),
``HammingLoss``; ``expected.npz`` holds the older version's ``predict`` (and
``predict_scores`` where the class has it) on seven test points, ``X_test``. The files cannot
be written again by the present code: they are kept as they were written.
"""

from __future__ import annotations

import hashlib
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ecrm import ECRMCV, ForestECRMCV, MixedRiskECRM, NystromSolver, StructuredSVM, load
from ecrm.selection import OutOfBagSearch

DATA = Path(__file__).parent / "data"
CLASSES = {"ECRMCV-nystrom": ECRMCV, "ECRMCV-platt": ECRMCV, "ForestECRMCV": ForestECRMCV,
           "MixedRiskECRM": MixedRiskECRM, "StructuredSVM": StructuredSVM,
           "Pipeline-ECRMCV": ECRMCV}


@pytest.fixture(scope="module")
def expected():
    with np.load(DATA / "expected.npz") as f:
        return {k: f[k] for k in f.files}


def _load(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(DATA / f"{name}.ecrm")


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_older_file_predicts_what_it_predicted(name, expected):
    model = _load(name)
    final = model.steps[-1][1] if name.startswith("Pipeline") else model
    assert type(final) is CLASSES[name]
    X = expected["X_test"]
    np.testing.assert_allclose(model.predict(X), expected[f"{name}/predict"],
                               rtol=1e-9, atol=1e-12)
    if f"{name}/scores" in expected:
        np.testing.assert_allclose(model.predict_scores(X), expected[f"{name}/scores"],
                                   rtol=1e-9, atol=1e-12)


def test_pipeline_file_keeps_its_scaler():
    model = _load("Pipeline-ECRMCV")
    assert [type(step).__name__ for _, step in model.steps] == ["StandardScaler", "ECRMCV"]


def test_older_parameters_take_their_present_places():
    nystrom = _load("ECRMCV-nystrom").get_params(deep=False)
    assert isinstance(nystrom["solver"], NystromSolver)
    assert nystrom["solver"].n_components == 6
    assert "n_components" not in nystrom
    platt = _load("ECRMCV-platt")
    assert platt.get_params(deep=False)["search"].calibration == "platt"
    assert platt.calibration_ == "platt"


def _edited(tmp_path, name, edit):
    """The stored file ``name`` with its metadata edited by ``edit`` and signed again."""
    with zipfile.ZipFile(DATA / f"{name}.ecrm") as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(members["ecrm-model.json"])
    edit(meta)
    members["ecrm-model.json"] = json.dumps(meta).encode()
    members["ecrm-model.sha256"] = hashlib.sha256(members["ecrm-model.json"]).hexdigest().encode()
    path = tmp_path / f"{name}.ecrm"
    with zipfile.ZipFile(path, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    return path


def test_an_older_forest_s_search_settings_live_on_its_search_object():
    params = _load("ForestECRMCV").get_params(deep=False)
    assert params["search"].get_params() == {
        "param_grid": {"min_samples_leaf": [1, 3]}, "scoring": "loss",
        "search_estimators": None, "split_search": "grid"}
    assert params["scoring"] == "loss"  # the shortcut, as the file gave it
    assert not {"flavour", "max_features", "param_grid", "split_search"} & set(params)
    member = _load("MixedRiskECRM").forest_estimator_
    assert member.search.get_params() == OutOfBagSearch().get_params()


def test_an_older_forest_s_fixed_tree_settings_join_its_grid(tmp_path, expected):
    def edit(meta):  # min_samples_leaf: the grid names it, so the fixed value was never used
        meta["params"].update(flavour="extra", max_depth=5, min_samples_leaf=7)

    model = load(_edited(tmp_path, "ForestECRMCV", edit))
    assert model.search.param_grid == {"min_samples_leaf": [1, 3], "flavour": ["extra"],
                                       "max_depth": [5]}
    assert model.cv_results_["params"] == [
        {"flavour": "extra", "max_depth": 5, "min_samples_leaf": leaf} for leaf in (1, 3)]
    assert model.best_params_ in model.cv_results_["params"]
    assert model.best_params_["min_samples_leaf"] == _load("ForestECRMCV").best_params_[
        "min_samples_leaf"]
    np.testing.assert_allclose(model.predict(expected["X_test"]),
                               expected["ForestECRMCV/predict"], rtol=1e-9, atol=1e-12)


def test_an_older_mixture_s_forest_options_take_the_search_object(tmp_path, expected):
    def edit(meta):
        meta["params"]["forest_options"]["items"] += [
            ["split_search", "descent"], ["max_depth", 4], ["flavour", "random"]]

    model = load(_edited(tmp_path, "MixedRiskECRM", edit))
    options = model.forest_options
    assert set(options) == {"n_estimators", "search"} and options["n_estimators"] == 3
    assert options["search"].get_params() == {
        "param_grid": {"flavour": ["random", "extra"], "max_features": [0.5, 1.0],
                       "max_depth": [4]},
        "scoring": "loss", "search_estimators": None, "split_search": "descent"}
    np.testing.assert_allclose(model.predict(expected["X_test"]),
                               expected["MixedRiskECRM/predict"], rtol=1e-9, atol=1e-12)
