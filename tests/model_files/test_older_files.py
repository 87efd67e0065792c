"""Model files written by an older version of the package still load and predict the same.

``data/`` holds small files written by the package before its parameters and modules took
their present layout (commit 97de6ea, format version 2): an ECRMCV with the Nystrom solver
chosen by name and ``n_components``, an ECRMCV with ``calibration="platt"`` (both parameters
of the constructor then, held by the solver object and the search object now), a
ForestECRMCV, a MixedRiskECRM, a StructuredSVM and a Pipeline of a StandardScaler before an
ECRMCV. Each was fitted on 18 random points of three features and a two-root tree of five
labels (``a`` over ``a1`` and ``a2``, ``b`` over ``b1``), ``HammingLoss``; ``expected.npz``
holds the older version's ``predict`` (and ``predict_scores`` where the class has it) on
seven test points, ``X_test``. The files cannot be written again by the present code: they are
kept as they were written.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from ecrm import ECRMCV, ForestECRMCV, MixedRiskECRM, NystromSolver, StructuredSVM, load

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
