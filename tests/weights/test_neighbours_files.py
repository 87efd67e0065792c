"""Model files of the nearest-neighbour family: written and read back (the index rebuilt from
the stored training rows), and a tampered file refused."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from _model_file_edits import _tampered
from _round_off import ROOM, term_scale
from _shapes import TREE5 as TREE
from ecrm import NeighboursECRM, NeighboursECRMCV, load, save
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.model_files.io import ModelFileError


def _xy(m=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    return X, TREE.close(X @ rng.normal(size=(3, TREE.n_outputs)) > 0.3)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    X, Y = _xy()
    root = tmp_path_factory.mktemp("neighbours")
    models = {"single": NeighboursECRM(HierarchicalLoss(TREE), TREE, n_neighbors=4,
                                       metric="manhattan").fit(X, Y),
              "cv": NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=[1, 3, 6, 40],
                                     scoring="micro_auprc").fit(X, Y),
              "sparse": NeighboursECRMCV(HammingLoss(), TREE, metric="cosine").fit(
                  sp.csr_matrix(X), Y)}
    paths = {}
    for name, model in models.items():
        paths[name] = root / f"{name}.ecrm"
        save(model, paths[name])
    return paths, models


@pytest.mark.parametrize("name", ["single", "cv", "sparse"])
def test_a_file_predicts_as_the_model(files, name):
    paths, models = files
    model, loaded = models[name], load(paths[name])
    Xt = _xy(12, 3)[0]
    if name == "sparse":
        Xt = sp.csr_matrix(Xt)
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    for method in ("predict_costs", "predict_scores"):
        np.testing.assert_allclose(getattr(loaded, method)(Xt), getattr(model, method)(Xt),
                                   rtol=0, atol=ROOM * term_scale(model, Xt))
    assert loaded.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    if name != "single":
        assert loaded.n_neighbors_ == model.n_neighbors_
        assert loaded.cv_results_ == model.cv_results_
        assert loaded.best_score_ == model.best_score_


def _other(meta, value):
    """``value``, or for ``"other"`` a k of the grid other than the chosen one."""
    return (value if value != "other"
            else 1 if meta["fitted"]["n_neighbors_"] != 1 else 3)


def _fit_field(key, value):
    def edit(meta, arrays):
        meta["fitted"]["_fit"]["kwargs"][key] = _other(meta, value)
    return edit


def _fitted(key, value):
    def edit(meta, arrays):
        meta["fitted"][key] = _other(meta, value)
    return edit


def _results(column, edit_column):
    def edit(meta, arrays):
        items = dict(meta["fitted"]["cv_results_"]["items"])
        items[column] = edit_column(items[column])
        meta["fitted"]["cv_results_"]["items"] = list(map(list, items.items()))
    return edit


@pytest.mark.parametrize("name, edit, words", [
    ("single", _fit_field("n_neighbors", 5), "n_neighbors must be 4"),
    ("single", _fit_field("n_neighbors", 31), "n_neighbors must be 4"),
    ("single", _fit_field("n_neighbors", "4"), "n_neighbors"),
    ("single", _fit_field("n_neighbors", 4.0), "n_neighbors"),
    ("single", _fit_field("metric", "euclidean"), "metric must be 'manhattan'"),
    ("single", _fit_field("n_risk", 3), "risk targets"),
    ("cv", _fitted("n_neighbors_", "other"), "best k"),
    ("cv", _fitted("best_score_", 0.5), "best k"),
    ("cv", _fitted("loo_loss_", 0.5), "best k"),
    ("cv", _fit_field("n_neighbors", "other"), "n_neighbors must be"),
], ids=["single-k-changed", "single-k-above-the-rows", "single-k-a-string",
        "single-k-a-float", "single-metric-changed", "single-n_risk-changed",
        "cv-best-k-changed", "cv-best_score_-changed", "cv-loo_loss_-changed",
        "cv-k-of-the-fit-changed"])
def test_a_tampered_file_is_refused(files, tmp_path, name, edit, words):
    paths, _ = files
    bad = _tampered(paths[name], tmp_path / "bad.ecrm", edit)
    with pytest.raises(ModelFileError, match=words):
        load(bad)


@pytest.mark.parametrize("column, edit_column, words", [
    ("rank", lambda r: r[1:2] + r[:1] + r[2:], "rank"),
    ("mean_score", lambda v: [x + 0.01 for x in v], "best k"),
    ("loo_loss", lambda v: v[:-1], "cv_results_ must hold"),
    ("params", lambda v: v[::-1], "cv_results_ must hold"),
], ids=["rank-swapped", "mean_score-shifted", "loo_loss-shortened", "params-reversed"])
def test_tampered_search_results_are_refused(files, tmp_path, column, edit_column, words):
    paths, _ = files
    bad = _tampered(paths["cv"], tmp_path / "bad.ecrm", _results(column, edit_column))
    with pytest.raises(ModelFileError, match=words):
        load(bad)
