"""The one leave-one-out search object (ecrm.selection.LeaveOneOutSearch), ECRMCV's
constructor around it, and the one layout of every search's cv_results_."""

from __future__ import annotations

import hashlib
import inspect
import json
import zipfile

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from _shapes import TREE5 as TREE
from ecrm import ECRMCV, ForestECRMCV, MixedRiskECRM, NystromSolver, load, save
from ecrm.losses import HammingLoss
from ecrm.selection import LeaveOneOutSearch, OutOfBagSearch, loo_search, search_results

pytestmark = pytest.mark.filterwarnings("ignore::ecrm.exceptions.GridEdgeWarning")


def _data(m=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    return X, TREE.close(X @ rng.normal(size=(3, TREE.n_labels)) > 0.2).astype(float)


def test_ecrmcv_has_at_most_twelve_parameters_and_no_deprecated_one():
    names = list(inspect.signature(ECRMCV).parameters)
    assert len(names) <= 12, names
    assert not {"n_components", "center_selection", "fit_intercept", "kernel_grid",
                "extend_grid", "max_added_gammas", "loo_samples", "calibration"} & set(names)
    with pytest.raises(TypeError, match="n_components"):
        ECRMCV(HammingLoss(), TREE, n_components=10)


def test_the_shortcuts_equal_the_search_s_own_settings():
    X, Y = _data()
    alphas = [1e-3, 1e-2, 1e-1]
    by_shortcut = ECRMCV(HammingLoss(), TREE, alphas=alphas, scoring="micro_auprc").fit(X, Y)
    by_search = ECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch(
        alphas=alphas, scoring="micro_auprc")).fit(X, Y)
    for key in ("params", "mean_score", "rank", "alpha", "mean_loss"):
        np.testing.assert_array_equal(by_shortcut.cv_results_[key], by_search.cv_results_[key])
    assert by_shortcut.search_settings().get_params() == by_search.search_settings().get_params()


def test_a_shortcut_beside_a_search_that_sets_it_too_is_refused():
    X, Y = _data()
    search = LeaveOneOutSearch(alphas=[1.0])
    with pytest.raises(ValueError, match="alphas is given both to the estimator and to its"):
        ECRMCV(HammingLoss(), TREE, alphas=[0.1], search=search).fit(X, Y)
    with pytest.raises(ValueError, match="scoring is given both"):
        ECRMCV(HammingLoss(), TREE, scoring="lrap",
               search=LeaveOneOutSearch(scoring="micro_auprc")).fit(X, Y)
    with pytest.raises(TypeError, match="search must be None or a LeaveOneOutSearch"):
        ECRMCV(HammingLoss(), TREE, search={"alphas": [1.0]}).fit(X, Y)
    assert search.alphas == [1.0]  # the given search is never changed


def test_the_search_object_is_a_parameter_scikit_learn_searches_and_clones():
    X, Y = _data()
    model = ECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch(alphas=[1e-2, 1e-1]))
    assert model.get_params()["search__alphas"] == [1e-2, 1e-1]
    copy = clone(model)
    assert copy.search is not model.search and copy.search.alphas == [1e-2, 1e-1]
    grid = GridSearchCV(model, {"search__fit_intercept": [True, False]}, cv=2,
                        scoring=lambda est, X, Y: est.score(X, Y)).fit(X, Y)
    assert grid.best_params_["search__fit_intercept"] in (True, False)


def test_the_forest_s_scoring_shortcut_is_its_search_s_own_setting():
    X, Y = _data()
    kw = {"n_estimators": 6, "random_state": 0}
    grid = {"max_features": [0.5, 1.0]}
    by_shortcut = ForestECRMCV(HammingLoss(), TREE, scoring="micro_auprc",
                               search=OutOfBagSearch(param_grid=grid), **kw).fit(X, Y)
    by_search = ForestECRMCV(HammingLoss(), TREE, search=OutOfBagSearch(
        param_grid=grid, scoring="micro_auprc"), **kw).fit(X, Y)
    assert by_shortcut.cv_results_ == by_search.cv_results_
    assert by_shortcut.search_settings().get_params() == by_search.search_settings().get_params()
    assert by_shortcut.search.scoring == "loss"  # the given search is never changed
    with pytest.raises(ValueError, match="scoring is given both"):
        ForestECRMCV(HammingLoss(), TREE, scoring="lrap",
                     search=OutOfBagSearch(scoring="micro_auprc")).fit(X, Y)
    with pytest.raises(TypeError, match="search must be None or an OutOfBagSearch"):
        ForestECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch()).fit(X, Y)
    with pytest.raises(TypeError, match="search must be None or a LeaveOneOutSearch"):
        ECRMCV(HammingLoss(), TREE, search=OutOfBagSearch()).fit(X, Y)
    assert not hasattr(ForestECRMCV(HammingLoss(), TREE), "flavour")  # the grid's setting


def test_an_out_of_bag_search_file_round_trips(tmp_path):
    X, Y = _data()
    search = OutOfBagSearch(param_grid=[{"min_samples_split": [2, 4]}, {"flavour": ["extra"]}],
                            search_estimators=3, split_search="descent")
    model = ForestECRMCV(HammingLoss(), TREE, search=search, n_estimators=6,
                         random_state=0).fit(X, Y)
    save(model, tmp_path / "f.ecrm")
    loaded = load(tmp_path / "f.ecrm")
    assert loaded.search.get_params() == search.get_params() and loaded.scoring is None
    np.testing.assert_equal(loaded.cv_results_, model.cv_results_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))

    def edit(meta):  # a search setting the constraints refuse
        meta["params"]["search"]["kwargs"]["split_search"] = "binary"

    _signed(tmp_path / "f.ecrm", edit)
    with pytest.raises(ValueError, match="split_search"):
        load(tmp_path / "f.ecrm")


def test_loo_search_runs_the_search_object_s_settings():
    X, Y = _data(m=30)
    search = LeaveOneOutSearch(alphas=[1e-3, 1e-2, 1e-1], fit_intercept=True,
                               kernel_grid={"gamma": [0.1, 1.0]}, alpha_search="coarse-to-fine")
    choice = loo_search(X, Y, lambda T, P: ((T - P) ** 2).sum(axis=1), search=search)
    params = choice.cv_results["params"]
    assert {p["gamma"] for p in params} == {0.1, 1.0}
    assert {p["fit_intercept"] for p in params} == {True}
    assert list(choice.cv_results)[:3] == ["params", "mean_score", "rank"]


@pytest.mark.parametrize("make", [
    lambda: ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1],
                   search=LeaveOneOutSearch(kernel_grid={"gamma": [0.1, 1.0]})),
    lambda: ForestECRMCV(HammingLoss(), TREE, n_estimators=8, random_state=0),
    lambda: MixedRiskECRM(HammingLoss(), TREE, kernel_options={"alphas": [1e-2, 1e-1]},
                          forest_options={"n_estimators": 8}, mixing_grid=5, random_state=0),
], ids=["ECRMCV", "ForestECRMCV", "MixedRiskECRM"])
def test_every_search_reports_one_layout_and_ranks_its_choice_first(make):
    X, Y = _data()
    model = make().fit(X, Y)
    results = model.cv_results_
    assert list(results)[:3] == ["params", "mean_score", "rank"]
    n = len(results["params"])
    assert all(isinstance(p, dict) for p in results["params"])
    assert all(len(results[k]) == n for k in results)
    ranks = np.asarray(results["rank"])
    assert sorted(ranks.tolist()) == list(range(1, n + 1))
    best = int(np.argmin(ranks))
    np.testing.assert_allclose(results["mean_score"][best], model.best_score_, rtol=0)
    scores = np.asarray(results["mean_score"], dtype=float)
    assert model.best_score_ == np.nanmax(scores)


def test_search_results_refuses_columns_of_another_length():
    with pytest.raises(ValueError, match="'oob_loss' has 1 entries for 2 candidates"):
        search_results([{}, {}], [0.1, 0.2], [2, 1], oob_loss=[0.1])


# -- model files whose cv_results_ have the layout before the shared one -------------------
def _signed(path, edit):
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(members["ecrm-model.json"])
    edit(meta)
    members["ecrm-model.json"] = json.dumps(meta).encode()
    members["ecrm-model.sha256"] = hashlib.sha256(members["ecrm-model.json"]).hexdigest().encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)


def _items(table: dict) -> list:
    assert table["$type"] == "dict"
    return table["items"]


def test_an_ecrmcv_file_with_the_older_column_names_loads(tmp_path):
    X, Y = _data()
    model = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1]).fit(X, Y)
    save(model, tmp_path / "m.ecrm")
    old = {"mean_score": "mean_loo_score", "mean_loss": "mean_loo_loss"}

    def edit(meta):
        for item in _items(meta["fitted"]["cv_results_"]):
            item[0] = old.get(item[0], item[0])

    _signed(tmp_path / "m.ecrm", edit)
    loaded = load(tmp_path / "m.ecrm")
    for key in ("mean_score", "mean_loss", "rank"):
        np.testing.assert_array_equal(loaded.cv_results_[key], model.cv_results_[key])


def test_a_forest_file_with_the_older_table_loads(tmp_path):
    X, Y = _data()
    model = ForestECRMCV(HammingLoss(), TREE, n_estimators=8, random_state=0).fit(X, Y)
    save(model, tmp_path / "f.ecrm")

    def edit(meta):  # the layout before: score, oob_loss and params, no rank, no trees
        items = _items(meta["fitted"]["cv_results_"])
        items[:] = [["score" if k == "mean_score" else k, v] for k, v in items
                    if k not in ("rank", "n_estimators")]

    _signed(tmp_path / "f.ecrm", edit)
    loaded = load(tmp_path / "f.ecrm")
    assert loaded.cv_results_ == model.cv_results_


def test_a_mixture_file_with_the_older_table_loads(tmp_path):
    X, Y = _data()
    model = MixedRiskECRM(HammingLoss(), TREE, kernel_options={"alphas": [1e-2, 1e-1]},
                          forest_options={"n_estimators": 8}, mixing_grid=3,
                          random_state=0).fit(X, Y)
    save(model, tmp_path / "x.ecrm")

    def edit(meta):  # the layout before: mixture, score, mean_loss
        items = _items(meta["fitted"]["cv_results_"])
        items[:] = [["score" if k == "mean_score" else k, v] for k, v in items
                    if k not in ("params", "rank")]

    _signed(tmp_path / "x.ecrm", edit)
    assert load(tmp_path / "x.ecrm").cv_results_ == model.cv_results_


def test_a_tampered_rank_is_refused(tmp_path):
    X, Y = _data()
    model = ForestECRMCV(HammingLoss(), TREE, n_estimators=8, random_state=0).fit(X, Y)
    save(model, tmp_path / "f.ecrm")

    def edit(meta):
        for item in _items(meta["fitted"]["cv_results_"]):
            if item[0] == "rank":
                item[1] = item[1][::-1]

    _signed(tmp_path / "f.ecrm", edit)
    with pytest.raises(ValueError, match="rank"):
        load(tmp_path / "f.ecrm")


def test_the_nystrom_settings_live_on_the_solver_object():
    X, Y = _data()
    model = ECRMCV(HammingLoss(), TREE, alphas=[1e-2], gamma=0.5,
                   solver=NystromSolver(n_components=15), random_state=0).fit(X, Y)
    assert model._fit.features.centres.shape[0] == 15
