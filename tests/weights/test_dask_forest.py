"""The forest family and the mixture on Dask arrays: the trees grown on a LocalCluster's
workers give the in-memory model (same trees, out-of-bag criterion, choice and
predictions), and prediction on a Dask array is lazy and per row chunk."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from test_dask import _dask, _problem

from _shapes import TREE7 as TREE
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.selection import OutOfBagSearch
from ecrm.weights.forest.estimator import ForestECRM, ForestECRMCV

distributed = pytest.importorskip("distributed", reason="the Dask tests need distributed "
                                  "(pip install 'ecrm[dask]')")
da = pytest.importorskip("dask.array")


def _assert_same_predictions(on_dask, in_memory, Xt):
    Xtd = da.from_array(Xt, chunks=(20, -1))
    for method in ("predict_costs", "predict_scores", "predict"):
        lazy = getattr(on_dask, method)(Xtd)
        assert isinstance(lazy, da.Array) and lazy.chunks[0] == Xtd.chunks[0]
        assert_allclose(lazy.compute(), getattr(in_memory, method)(Xt), rtol=0, atol=1e-12)
        assert_allclose(getattr(on_dask, method)(Xt), getattr(in_memory, method)(Xt),
                        rtol=0, atol=1e-12)


def _task_names(stream) -> set[str]:
    return {(t["key"] if isinstance(t["key"], str) else t["key"][0]).split("-")[0]
            for t in stream.data}


@pytest.mark.parametrize("loss", [HammingLoss(), HierarchicalLoss(TREE)],
                         ids=["hamming", "hierarchical"])
def test_forest_on_dask_grows_the_in_memory_forest(client, loss):
    X, Y, Xt = _problem()
    kw = dict(n_estimators=15, max_samples=0.5, min_samples_leaf=2, random_state=0)
    ref = ForestECRM(loss, TREE, **kw).fit(X, Y)
    with distributed.get_task_stream() as stream:
        est = ForestECRM(loss, TREE, **kw).fit(*_dask(X, Y))
    names = _task_names(stream)
    # the trees (from their drawn rows), the training leaves and the out-of-bag sums were
    # found on the workers
    assert {"_drawn_rows", "_grow_tree", "_leaves_of_chunk", "_oob_chunk"} <= names
    for name in ("left", "right", "feature", "threshold", "roots"):
        assert_array_equal(getattr(est._fit.trees, name), getattr(ref._fit.trees, name))
    assert_array_equal(est._fit.bag, ref._fit.bag)
    assert_array_equal(est._fit.train_leaves(), ref._fit.train_leaves())
    assert est.oob_loss_ == ref.oob_loss_
    assert_array_equal(est.oob_predictions_, ref.oob_predictions_)
    _assert_same_predictions(est, ref, Xt)


def _assert_same_forest(got, ref):
    for name in ("left", "right", "feature", "threshold", "roots"):
        assert_array_equal(getattr(got.trees, name), getattr(ref.trees, name))
    assert_array_equal(got.bag, ref.bag)
    assert_array_equal(got.train_leaves(), ref.train_leaves())


@pytest.mark.parametrize("flavour", ["random", "extra"])
@pytest.mark.parametrize("max_samples", [0.4, None], ids="max_samples={}".format)
def test_trees_grown_from_their_drawn_rows_are_the_forests(client, flavour, max_samples,
                                                           monkeypatch):
    """Each tree grown on a worker from its drawn rows alone, weighted by their bootstrap
    counts, is scikit-learn's tree of the forest grown on all the rows (the packed arrays,
    node sizes and leaves exactly), in one batch of trees and in several."""
    from ecrm.weights.forest import _fit

    X, Y, Xt = _problem(seed=2)
    X = np.round(X, 1)  # ties between rows: split thresholds between repeated values
    kw = dict(flavour=flavour, n_estimators=7, max_samples=max_samples, max_features=0.6,
              min_samples_leaf=2, random_state=5)
    Xd, Yd = _dask(X, Y)
    for batch_bytes in (_fit.GROW_BATCH_BYTES, 1):  # all trees at once; one tree a batch
        monkeypatch.setattr(_fit, "GROW_BATCH_BYTES", batch_bytes)
        ref = ForestECRM(HammingLoss(), TREE, **kw).fit(X, Y)
        est = ForestECRM(HammingLoss(), TREE, **kw).fit(Xd, Yd)
        _assert_same_forest(est._fit, ref._fit)
        assert est.oob_loss_ == ref.oob_loss_
        assert_array_equal(est.predict(Xt), ref.predict(Xt))
    # the model keeps the Dask array (never gathered by the fit); a model file holds its rows
    assert isinstance(est.X_fit_, da.Array)


def test_a_dask_fit_on_a_cluster_refuses_non_finite_rows(client):
    X, Y, _ = _problem()
    X[123, 2] = np.nan
    with pytest.raises(ValueError, match="row 123 is the first"):
        ForestECRM(HammingLoss(), TREE, n_estimators=3).fit(*_dask(X, Y))


def test_a_dask_forest_model_file_round_trips(client, tmp_path):
    import ecrm

    X, Y, Xt = _problem()
    X = X.astype(np.float32)  # kept as float64 rows, as the in-memory fit keeps them
    ref = ForestECRMCV(HammingLoss(), TREE, n_estimators=8, random_state=0).fit(X, Y)
    est = ForestECRMCV(HammingLoss(), TREE, n_estimators=8, random_state=0).fit(*_dask(X, Y))
    ecrm.save(est, tmp_path / "forest.ecrm")
    back = ecrm.load(tmp_path / "forest.ecrm")
    assert back.X_fit_.dtype == np.float64
    assert_array_equal(back.X_fit_, ref.X_fit_)
    _assert_same_forest(back._fit, ref._fit)
    assert_array_equal(back.predict(Xt), ref.predict(Xt))


def test_forest_search_on_dask_makes_the_in_memory_choice(client):
    X, Y, Xt = _problem(seed=1)
    search = OutOfBagSearch(param_grid={"max_features": [0.5, 1.0],
                                        "min_samples_split": [2, 8, 20]}, search_estimators=8)
    kw = dict(search=search, n_estimators=20, random_state=3)
    ref = ForestECRMCV(HammingLoss(), TREE, **kw).fit(X, Y)
    est = ForestECRMCV(HammingLoss(), TREE, **kw).fit(*_dask(X, Y))
    assert est.best_params_ == ref.best_params_
    assert est.best_score_ == ref.best_score_ and est.oob_loss_ == ref.oob_loss_
    for key in ("mean_score", "oob_loss"):
        assert_array_equal(est.cv_results_[key], ref.cv_results_[key])
    assert est.cv_results_["n_estimators"] == ref.cv_results_["n_estimators"]
    assert_array_equal(est.oob_scores(), ref.oob_scores())
    _assert_same_predictions(est, ref, Xt)


def test_forest_on_dask_with_a_one_dimensional_y(client):
    from ecrm import Hierarchy

    X, Y, Xt = _problem()
    y, space = Y[:, 1], Hierarchy({"a": None})  # one label: a 1-D y has one row per sample
    ref = ForestECRM(HammingLoss(), space, n_estimators=10, random_state=0).fit(X, y)
    est = ForestECRM(HammingLoss(), space, n_estimators=10, random_state=0).fit(
        da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100))
    assert est.predict(Xt).shape == (50,)
    assert_array_equal(est.predict(Xt), ref.predict(Xt))
    assert_array_equal(est.predict(da.from_array(Xt, chunks=(20, -1))).compute(),
                       ref.predict(Xt))


def test_forest_on_dask_refuses_what_it_cannot_fit(client):
    from ecrm.datasets.flows import simulate_flows
    from ecrm.losses import SquaredLoss
    from ecrm.spaces.flows import paper_network

    Xf, Yf = simulate_flows(40, random_state=0)
    with pytest.raises(TypeError, match="needs a loss with a linear form"):
        ForestECRM(SquaredLoss(), paper_network()).fit(*_dask(Xf, Yf, rows=20))
    X, Y, _ = _problem()
    Xd, Yd = _dask(X, Y)
    with pytest.raises(ValueError, match="row chunks of X"):
        ForestECRM(HammingLoss(), TREE).fit(Xd, Yd.rechunk({0: 100}))
    with pytest.raises(ValueError, match="chunked by rows only"):
        ForestECRM(HammingLoss(), TREE).fit(Xd.rechunk({1: 2}), Yd)


def _graph_bytes(lazy) -> int:
    import cloudpickle

    return len(cloudpickle.dumps(dict(lazy.__dask_graph__())))


def test_prediction_graph_holds_the_model_once_or_a_scattered_future(client):
    """The prediction step (the trees, leaf weights and targets: the bulk of the graph) is
    held once whatever the number of chunks with Dask's local schedulers, and with a
    distributed client not at all: it is scattered to the workers and the graph holds its
    future. The predictions are the same either way."""
    import dask

    X, Y, Xt = _problem()
    X, Y = np.repeat(X, 20, axis=0), np.repeat(Y, 20, axis=0)  # a step of a few MB
    est = ForestECRM(HammingLoss(), TREE, n_estimators=5, random_state=0).fit(X, Y)
    Xt = np.repeat(Xt, 4, axis=0)
    expected = est.predict(Xt)
    with dask.config.set(scheduler="sync"):  # the client stays open but does not compute
        few, many = (est.predict(da.from_array(Xt, chunks=(rows, -1))) for rows in (100, 5))
        once = _graph_bytes(few)
        assert once > 4 * est._fit.coef.nbytes / 5, once  # the step is in this graph
        assert _graph_bytes(many) - once < once / 10, (_graph_bytes(many), once)
        assert_array_equal(many.compute(), expected)
    with distributed.get_task_stream() as stream:
        lazy = est.predict(da.from_array(Xt, chunks=(5, -1)))
        assert _graph_bytes(lazy) < once / 20, (_graph_bytes(lazy), once)
        assert_array_equal(lazy.compute(), expected)
    assert "_Box" not in _task_names(stream)  # no task built the step on a worker

def _mixed_problem(m=300, p=4, seed=0):
    """Labels a kernel and a forest each get partly right (the chosen share is inside
    (0, 1))."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    scores = np.sign(X[:, :1]) * X @ rng.normal(size=(p, TREE.n_labels)) \
        + rng.normal(scale=0.8, size=(m, TREE.n_labels))
    return X, TREE.close(scores > 0.3).astype(np.uint8), rng.normal(size=(50, p))


KERNEL = dict(solver=None, kernel="rbf", gamma=1.0, alphas=[1e-4, 1e-3, 1e-2, 0.1, 1.0])


def _kernel_options():
    from ecrm import NystromSolver

    return {**KERNEL, "solver": NystromSolver(n_components=40)}


def test_mixture_on_dask_makes_the_in_memory_choice(client):
    from ecrm.weights.mixture import MixedRiskECRM

    X, Y, Xt = _mixed_problem()
    kw = dict(kernel_options=_kernel_options(), forest_options=dict(n_estimators=20),
              random_state=0)
    ref = MixedRiskECRM(HammingLoss(), TREE, **kw).fit(X, Y)
    est = MixedRiskECRM(HammingLoss(), TREE, **kw).fit(*_dask(X, Y))
    assert 0 < ref.mixture_ < 1
    assert est.mixture_ == ref.mixture_
    # the kernel's sums run in another order on the chunks: the criterion to rounding
    assert_allclose(est.cv_results_["mean_score"], ref.cv_results_["mean_score"],
                    rtol=0, atol=1e-12)
    assert est.best_score_ == pytest.approx(ref.best_score_, abs=1e-12)
    forest, forest_ref = est.forest_estimator_, ref.forest_estimator_
    assert forest.best_params_ == forest_ref.best_params_
    assert forest.oob_loss_ == forest_ref.oob_loss_
    assert est.kernel_estimator_.alpha_ == ref.kernel_estimator_.alpha_
    Xtd = da.from_array(Xt, chunks=(20, -1))
    for method in ("predict_costs", "predict_scores", "predict"):
        lazy = getattr(est, method)(Xtd)
        assert isinstance(lazy, da.Array) and lazy.chunks[0] == Xtd.chunks[0]
        assert_allclose(lazy.compute(), getattr(ref, method)(Xt), rtol=0, atol=1e-10)


def test_stack_on_dask_makes_the_in_memory_choice(client):
    from ecrm import ECRMCV
    from ecrm.weights.stack import StackedRiskECRM

    X, Y, Xt = _mixed_problem()
    members = [ECRMCV(HammingLoss(), TREE, **_kernel_options()),
               ForestECRMCV(HammingLoss(), TREE, n_estimators=20)]
    ref = StackedRiskECRM(HammingLoss(), TREE, members=members, random_state=0).fit(X, Y)
    est = StackedRiskECRM(HammingLoss(), TREE, members=members, random_state=0).fit(
        *_dask(X, Y))
    assert_array_equal(est.weights_, ref.weights_)
    assert est.stack_used_ == ref.stack_used_
    assert_allclose(est.cv_results_["score"], ref.cv_results_["score"], rtol=0, atol=1e-12)
    lazy = est.predict(da.from_array(Xt, chunks=(20, -1)))
    assert isinstance(lazy, da.Array)
    assert_array_equal(lazy.compute(), ref.predict(Xt))


@pytest.mark.slow  # the real ecrm command, a cluster of two processes
def test_cli_fits_and_predicts_forest_and_mixture_on_a_cluster(fit_and_predict_on_dask, tmp_path):
    """``ecrm fit --family forest|mixed --scheduler`` (an address, and ``local``) writes the
    model fitted without it; ``ecrm predict --scheduler`` writes its predictions."""
    forest = ["--family", "forest", "--cv", "--trees", "20", "--seed", "0"]
    mixed = ["--family", "mixed", "--cv", "--trees", "20", "--solver", "nystrom",
             "--n-components", "30", "--standardize", "no", "--seed", "0"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        for name, options, scheduler in (("forest", forest, address),
                                         ("mixed", mixed, "local")):
            run, ref, got = fit_and_predict_on_dask(name, options, scheduler, address,
                                                    cwd=tmp_path)
            assert "fitted ECRM" in run.stdout
            assert len(got) == 301
            assert [r.split(",")[1] for r in got] == [r.split(",")[1] for r in ref]
            a, b = (np.loadtxt(tmp_path / f"{name}{s}.csv", delimiter=",", skiprows=1,
                               usecols=range(2, 12)) for s in ("", "-dask"))
            assert_allclose(b, a, rtol=1e-5, atol=1e-5)  # scores written to 6 digits
