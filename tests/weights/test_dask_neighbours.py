"""The nearest-neighbour family on Dask arrays: the fit on a LocalCluster (and on Dask's
local schedulers) is the in-memory model (the same rows, criterion, chosen k and honest
outputs), its leave-one-out queries run per row chunk on the workers, and prediction on a
Dask array is lazy and per row chunk."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from test_dask import _dask, _problem
from test_dask_forest import _assert_same_predictions

from _shapes import TREE7 as TREE
from ecrm import NeighboursECRM, NeighboursECRMCV
from ecrm.losses import HammingLoss, HierarchicalLoss

distributed = pytest.importorskip("distributed", reason="the Dask tests need distributed "
                                  "(pip install 'ecrm[dask]')")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

GRID = (1, 2, 3, 5, 8, 13, 21)


def _task_names(stream) -> set[str]:
    return {(t["key"] if isinstance(t["key"], str) else t["key"][0]).split("-")[0]
            for t in stream.data}


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "cosine"])
@pytest.mark.parametrize("loss", [HammingLoss(), HierarchicalLoss(TREE)],
                         ids=["hamming", "hierarchical"])
def test_neighbours_on_dask_is_the_in_memory_model(client, loss, metric):
    X, Y, Xt = _problem()
    ref = NeighboursECRM(loss, TREE, n_neighbors=7, metric=metric).fit(X, Y)
    est = NeighboursECRM(loss, TREE, n_neighbors=7, metric=metric).fit(*_dask(X, Y))
    # the model keeps its training rows in memory, as the in-memory fit does
    assert isinstance(est.X_fit_, np.ndarray) and isinstance(est.Y_fit_, np.ndarray)
    assert_array_equal(est.X_fit_, ref.X_fit_)
    assert_array_equal(est.Y_fit_, ref.Y_fit_)
    assert_array_equal(est.risk_targets_, ref.risk_targets_)
    _assert_same_predictions(est, ref, Xt)


@pytest.mark.parametrize("scoring", ["loss", "micro_auprc"])
def test_the_cv_on_dask_makes_the_in_memory_choice_on_the_workers(client, scoring):
    X, Y, Xt = _problem(seed=1)
    ref = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID, scoring=scoring).fit(X, Y)
    with distributed.get_task_stream() as stream:
        est = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID,
                               scoring=scoring).fit(*_dask(X, Y))
    # one leave-one-out query task per row chunk (70, 70, 70, 70, 20)
    keys = [t["key"][0] if isinstance(t["key"], tuple) else t["key"] for t in stream.data]
    assert sum(str(key).startswith("_others_of_rows") for key in keys) == 5
    assert est.n_neighbors_ == ref.n_neighbors_ and est.best_params_ == ref.best_params_
    assert est.best_score_ == ref.best_score_ and est.loo_loss_ == ref.loo_loss_
    assert est.cv_results_ == ref.cv_results_
    assert est.honest_score_ == ref.honest_score_
    _assert_same_predictions(est, ref, Xt)


@pytest.mark.parametrize("scores", [False, True], ids=["outputs", "scores"])
@pytest.mark.parametrize("cls, k", [(NeighboursECRM, 6), (NeighboursECRMCV, GRID)],
                         ids=["NeighboursECRM", "NeighboursECRMCV"])
def test_honest_outputs_on_dask_are_the_in_memory_ones(client, cls, k, scores):
    X, Y, _ = _problem(seed=2)
    ref = cls(HierarchicalLoss(TREE), TREE, n_neighbors=k)
    est = cls(HierarchicalLoss(TREE), TREE, n_neighbors=k)
    expected = ref.fit_honest(X, Y, scores=scores)
    with distributed.get_task_stream() as stream:
        got = est.fit_honest(*_dask(X, Y), scores=scores)
    assert "_others_of_rows" in _task_names(stream)
    assert_array_equal(got.rows, expected.rows)
    assert_array_equal(got.values, expected.values)
    assert est.get_params()["n_neighbors"] == k
    assert getattr(est, "n_neighbors_", None) == getattr(ref, "n_neighbors_", None)


def test_a_dask_x_with_an_in_memory_or_one_dimensional_y(client):
    from ecrm import Hierarchy

    X, Y, Xt = _problem()
    Xd, _ = _dask(X, Y)
    ref = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID).fit(X, Y)
    est = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID).fit(Xd, Y)  # Y split along X
    assert est.cv_results_ == ref.cv_results_
    y, space = Y[:, 1], Hierarchy({"a": None})  # one label: a 1-D y, 1-D predictions
    ref = NeighboursECRMCV(HammingLoss(), space, n_neighbors=GRID).fit(X, y)
    est = NeighboursECRMCV(HammingLoss(), space, n_neighbors=GRID).fit(
        da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100))
    assert est.n_neighbors_ == ref.n_neighbors_
    assert est.predict(Xt).shape == (50,)
    lazy = est.predict(da.from_array(Xt, chunks=(20, -1)))
    assert lazy.shape == (50,)
    assert_array_equal(lazy.compute(), ref.predict(Xt))


def test_dask_local_schedulers_query_per_chunk_too(monkeypatch):
    """Without a distributed client the index is one key of the graph, and the threads
    scheduler runs the per-chunk queries: the same choice."""
    from ecrm.weights.forest import _dask as forest_dask
    from ecrm.weights.neighbours import _dask as neighbours_dask

    monkeypatch.setattr(forest_dask, "_client", lambda: None)
    calls = []
    real = neighbours_dask._others_of_rows
    monkeypatch.setattr(neighbours_dask, "_others_of_rows",
                        lambda *a: calls.append(a[2:]) or real(*a))
    X, Y, Xt = _problem(seed=3)
    ref = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID).fit(X, Y)
    with dask.config.set(scheduler="threads"):
        est = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID).fit(*_dask(X, Y))
        assert sorted(calls) == [(0, 70), (70, 140), (140, 210), (210, 280), (280, 300)]
        assert est.cv_results_ == ref.cv_results_
        _assert_same_predictions(est, ref, Xt)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_per_chunk_queries_are_the_whole_query(data):
    """:func:`others_by_chunk` over any row chunks is :func:`others` of all the rows, with
    duplicate rows (ties, a point not among its own nearest) and both index algorithms."""
    from sklearn.neighbors import NearestNeighbors

    from ecrm.weights.neighbours._dask import others_by_chunk
    from ecrm.weights.neighbours._fit import others

    m = data.draw(st.integers(2, 30), label="m")
    k = data.draw(st.integers(1, m - 1), label="k")
    sizes = data.draw(st.lists(st.integers(1, m), min_size=1, max_size=6), label="chunks")
    starts = np.unique(np.clip(np.concatenate([[0], np.cumsum(sizes), [m]]), 0, m))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    X = rng.integers(0, 3, size=(m, 2)).astype(float)  # small integers: many duplicates
    algorithm = data.draw(st.sampled_from(["brute", "kd_tree"]), label="algorithm")
    metric = data.draw(st.sampled_from(["euclidean", "manhattan"]), label="metric")
    index = NearestNeighbors(metric=metric, algorithm=algorithm).fit(X)
    with dask.config.set(scheduler="sync"), \
            mock.patch("ecrm.weights.forest._dask._client", lambda: None):
        got = others_by_chunk(starts, index, X, k)
    assert_array_equal(got, others(index, X, k))


def test_a_dask_fitted_model_file_round_trips(client, tmp_path):
    import ecrm

    X, Y, Xt = _problem()
    X = X.astype(np.float32)  # kept as float64 rows, as the in-memory fit keeps them
    ref = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID).fit(X, Y)
    est = NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID).fit(*_dask(X, Y))
    ecrm.save(est, tmp_path / "knn.ecrm")
    back = ecrm.load(tmp_path / "knn.ecrm")
    assert_array_equal(back.X_fit_, ref.X_fit_)
    assert back.n_neighbors_ == ref.n_neighbors_ and back.cv_results_ == ref.cv_results_
    _assert_same_predictions(back, ref, Xt)


def test_a_stack_with_a_neighbours_member_fits_on_dask(client):
    from ecrm import ForestECRMCV
    from ecrm.weights.stack import StackedRiskECRM

    X, Y, Xt = _problem(m=200)
    members = [NeighboursECRMCV(HammingLoss(), TREE, n_neighbors=GRID),
               ForestECRMCV(HammingLoss(), TREE, n_estimators=10)]
    ref = StackedRiskECRM(HammingLoss(), TREE, members=members, random_state=0).fit(X, Y)
    est = StackedRiskECRM(HammingLoss(), TREE, members=members, random_state=0).fit(
        *_dask(X, Y))
    assert_array_equal(est.weights_, ref.weights_)
    assert_allclose(est.cv_results_["score"], ref.cv_results_["score"], rtol=0, atol=1e-12)
    assert est.estimators_[0].n_neighbors_ == ref.estimators_[0].n_neighbors_
    assert_array_equal(est.predict(da.from_array(Xt, chunks=(20, -1))).compute(),
                       ref.predict(Xt))


def test_bad_dask_input_is_refused_before_any_work(client):
    from ecrm.datasets.flows import simulate_flows
    from ecrm.losses import SquaredLoss
    from ecrm.spaces.flows import paper_network

    Xf, Yf = simulate_flows(40, random_state=0)
    with pytest.raises(TypeError, match="needs a loss with a linear form"):
        NeighboursECRM(SquaredLoss(), paper_network(), n_neighbors=3).fit(
            *_dask(Xf, Yf, rows=20))
    X, Y, _ = _problem()
    Xd, Yd = _dask(X, Y)
    est = NeighboursECRM(HammingLoss(), TREE, n_neighbors=5)
    with pytest.raises(ValueError, match="row chunks of X"):
        est.fit(Xd, Yd.rechunk({0: 100}))
    with pytest.raises(ValueError, match="chunked by rows only"):
        est.fit(Xd.rechunk({1: 2}), Yd)
    with pytest.raises(ValueError, match="n_neighbors=301 exceeds the 300 training samples"):
        NeighboursECRM(HammingLoss(), TREE, n_neighbors=301).fit(Xd, Yd)
    with pytest.raises(ValueError, match="leave-one-out needs n_neighbors < m"):
        NeighboursECRM(HammingLoss(), TREE, n_neighbors=300).fit_honest(Xd, Yd)
    X[123, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(*_dask(X, Y))
    assert not hasattr(est, "X_fit_")  # a failed fit sets nothing


@pytest.mark.slow  # the real ecrm command, clusters of workers
def test_cli_fits_and_predicts_neighbours_on_a_cluster(fit_and_predict_on_dask, ecrm_run, hmc_csv,
                                                        tmp_path):
    """``ecrm fit --family neighbours [--cv] --scheduler`` (``local``, and an address) writes
    the model fitted without it; ``ecrm predict --scheduler`` writes its predictions."""
    import json

    cv = ["--family", "neighbours", "--cv", "--standardize", "no"]
    single = ["--family", "neighbours"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        for name, options, scheduler in (("cv", cv, "local"), ("single", single, address)):
            run, ref, got = fit_and_predict_on_dask(name, options, scheduler, scheduler,
                                                    cwd=tmp_path)
            assert "neighbours weights" in run.stdout
            infos = [json.loads(ecrm_run("info", f"{name}{s}.ecrm", "--json", cwd=tmp_path).stdout)
                     for s in ("", "-dask")]
            assert infos[0]["n_neighbors"] == infos[1]["n_neighbors"]
            assert len(got) == 301
            assert got == ref  # the same rows and neighbours: the same file
    # --cv on a cluster takes the features as they are (no standardised candidate)
    run = ecrm_run("fit", hmc_csv, "--path-sep", "/", "--family", "neighbours", "--cv",
                "--scheduler", "local", "-o", "x.ecrm", cwd=tmp_path, code=2)
    assert "--scheduler needs the features as they are (--standardize no" in run.stderr
    assert not (tmp_path / "x.ecrm").exists()
