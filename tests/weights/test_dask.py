"""ECRM on Dask arrays: the map-reduce fit and lazy prediction equal the
in-memory ones; bad Dask inputs fail before any work and change nothing."""


import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from _shapes import TREE7 as TREE
from ecrm import ECRM, ECRMCV, Hierarchy, NystromSolver
from ecrm.datasets.flows import simulate_flows
from ecrm.losses import HammingLoss, HierarchicalLoss, SquaredLoss
from ecrm.selection import LeaveOneOutSearch
from ecrm.spaces.flows import paper_network

distributed = pytest.importorskip("distributed", reason="the Dask tests need distributed "
                                  "(pip install 'ecrm[dask]')")
da = pytest.importorskip("dask.array")

NYSTROM = dict(solver=NystromSolver(n_components=40), kernel="rbf", gamma=0.2, random_state=0)
PRIMAL = dict(solver="primal", kernel="linear")
SOLVERS = pytest.mark.parametrize("kw", [NYSTROM, PRIMAL], ids=["nystrom", "primal"])


def _problem(m=300, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    scores = X @ rng.normal(size=(p, TREE.n_labels)) + rng.normal(scale=0.8,
                                                                  size=(m, TREE.n_labels))
    return X, TREE.close(scores > 0.3).astype(np.uint8), rng.normal(size=(50, p))


def _dask(X, Y, rows=70):
    """Uneven row chunks (70, 70, 70, 70, 20), one chunk along the columns."""
    return da.from_array(X, chunks=(rows, -1)), da.from_array(Y, chunks=(rows, -1))


def _assert_same_predictions(on_dask, in_memory, Xt):
    Xtd = da.from_array(Xt, chunks=(20, -1))
    for method in ("predict_costs", "predict_scores", "predict"):
        lazy = getattr(on_dask, method)(Xtd)
        assert isinstance(lazy, da.Array) and lazy.chunks[0] == Xtd.chunks[0]
        assert_allclose(lazy.compute(), getattr(in_memory, method)(Xt), rtol=0, atol=1e-10)


@SOLVERS
@pytest.mark.parametrize("loss", [HammingLoss(), HierarchicalLoss(TREE)],
                         ids=["hamming", "hierarchical"])
def test_ecrm_fit_on_dask_equals_in_memory(client, kw, loss):
    X, Y, Xt = _problem()
    ref = ECRM(loss, TREE, alpha=1e-2, **kw).fit(X, Y)
    est = ECRM(loss, TREE, alpha=1e-2, **kw).fit(*_dask(X, Y))
    assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-10)
    assert_allclose(est.intercept_, ref.intercept_, rtol=0, atol=1e-10)
    _assert_same_predictions(est, ref, Xt)
    assert_allclose(est.conditional_weights(Xt), ref.conditional_weights(Xt), atol=1e-10)
    assert isinstance(est.X_fit_, da.Array)  # a reference, never computed whole


@SOLVERS
def test_ecrmcv_fit_on_dask_equals_in_memory(client, kw):
    X, Y, Xt = _problem()
    cv = dict(alphas=np.logspace(-4, 0, 5), search=LeaveOneOutSearch(fit_intercept="auto"), **kw)
    ref = ECRMCV(HammingLoss(), TREE, **cv).fit(X, Y)
    est = ECRMCV(HammingLoss(), TREE, **cv).fit(*_dask(X, Y))
    assert_allclose(est.cv_results_["mean_loss"], ref.cv_results_["mean_loss"],
                    rtol=0, atol=1e-12)
    assert (est.alpha_, est.fit_intercept_) == (ref.alpha_, ref.fit_intercept_)
    assert_array_equal(est.loo_rows_, ref.loo_rows_)
    assert_array_equal(est.loo_predictions_, ref.loo_predictions_)
    _assert_same_predictions(est, ref, Xt)


def test_ecrmcv_loo_samples_and_in_memory_y(client):
    """A NumPy Y with a Dask X is split along X's row chunks; loo_samples picks the same
    rows (spread over several chunks) as in memory."""
    X, Y, Xt = _problem()
    cv = dict(alphas=np.logspace(-4, 0, 5), search=LeaveOneOutSearch(loo_samples=60), **NYSTROM)
    ref = ECRMCV(HammingLoss(), TREE, **cv).fit(X, Y)
    est = ECRMCV(HammingLoss(), TREE, **cv).fit(_dask(X, Y)[0], Y)
    assert_array_equal(est.loo_rows_, ref.loo_rows_)
    assert_array_equal(est.loo_predictions_, ref.loo_predictions_)
    assert_allclose(est.cv_results_["mean_loss"], ref.cv_results_["mean_loss"],
                    rtol=0, atol=1e-12)
    _assert_same_predictions(est, ref, Xt)


def test_in_memory_dual_model_predicts_dask_inputs(client):
    X, Y, Xt = _problem(m=80)
    est = ECRM(HammingLoss(), TREE, solver="dual", gamma=0.2).fit(X, Y)
    _assert_same_predictions(est, est, Xt)


def test_one_output_coordinate_predicts_one_dimensional(client):
    rng = np.random.default_rng(1)
    X, Xt = rng.normal(size=(100, 3)), rng.normal(size=(10, 3))
    space = Hierarchy({"a": None})  # one label: a 1-D y has one row per sample
    y = (X[:, 0] > 0).astype(float)
    ref = ECRM(HammingLoss(), space, **PRIMAL).fit(X, y)
    est = ECRM(HammingLoss(), space, **PRIMAL).fit(da.from_array(X, chunks=(30, -1)), y)
    lazy = est.predict(da.from_array(Xt, chunks=(4, -1)))
    assert lazy.ndim == 1
    assert_array_equal(lazy.compute(), ref.predict(Xt))


def test_kmeanspp_centres_on_a_pulled_subsample(client):
    """k-means++ runs on a uniform subsample pulled to the client: reproducible, and with a
    subsample of all rows (M >= m / 20) the same centres as in memory."""
    X, Y, Xt = _problem(m=200)
    kw = dict(NYSTROM, solver=NystromSolver(n_components=20, center_selection="kmeans++"))
    a = ECRM(HammingLoss(), TREE, **kw).fit(*_dask(X, Y))
    b = ECRM(HammingLoss(), TREE, **kw).fit(*_dask(X, Y))
    assert_array_equal(a._fit.features.centres, b._fit.features.centres)
    assert set(map(tuple, a._fit.features.centres)) <= set(map(tuple, X))
    leverage = NystromSolver(n_components=20, center_selection="leverage")
    lev = ECRM(HammingLoss(), TREE, **dict(kw, solver=leverage)).fit(*_dask(X, Y))
    assert lev._fit.features.centres.shape == (20, 4)


def _pickling_get(dsk, keys, **kwargs):
    """Dask's synchronous scheduler on a graph sent through cloudpickle, as to a worker
    process (no process start-up, no fork of a process running the cluster's threads)."""
    import cloudpickle
    import dask

    return dask.get(cloudpickle.loads(cloudpickle.dumps(dsk)), keys, **kwargs)


def test_every_task_pickles():
    """The fit's graphs and the prediction's survive pickling, and still give the model."""
    import dask

    X, Y, Xt = _problem()
    ref = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1], **NYSTROM).fit(X, Y)
    with dask.config.set(scheduler=_pickling_get):
        est = ECRMCV(HammingLoss(), TREE, alphas=[1e-3, 1e-1], **NYSTROM).fit(*_dask(X, Y))
        costs = est.predict_costs(da.from_array(Xt, chunks=(20, -1))).compute()
    assert_allclose(costs, ref.predict_costs(Xt), rtol=0, atol=1e-10)


def test_ecrm_imports_and_fits_without_dask(run_python):
    code = ("import sys; sys.modules['dask'] = None; import numpy as np; import ecrm; "
            "from ecrm.losses import HammingLoss; h = ecrm.Hierarchy({'a': None, 'b': None}); "
            "X = np.arange(8.0).reshape(4, 2); Y = np.array([[1, 0], [0, 1], [1, 0], [0, 1]]); "
            "ecrm.ECRM(HammingLoss(), h, solver='primal', kernel='linear').fit(X, Y); "
            "assert 'dask.array' not in sys.modules")
    proc = run_python("-c", code)
    assert proc.returncode == 0, proc.stderr


# -- bad input: a clear error before any work, and nothing fitted -------------------------
def _refused(Xd, Yd, match):
    """The bad Dask fit raises ``match`` and leaves the in-memory fit as it was."""
    X, Y, _ = _problem()
    est = ECRM(HammingLoss(), TREE, alpha=1e-2, **PRIMAL).fit(X, Y)
    coef = est.coef_
    with pytest.raises(ValueError, match=match):
        est.fit(Xd, Yd)
    assert est.coef_ is coef and isinstance(est.X_fit_, np.ndarray)


def test_x_chunked_along_columns():
    X, Y, _ = _problem()
    _refused(da.from_array(X, chunks=(70, 2)), Y, r"X must be chunked by rows only.*X.rechunk")


def test_y_chunked_along_columns():
    X, Y, _ = _problem()
    _refused(da.from_array(X, chunks=(70, -1)), da.from_array(Y, chunks=(70, 3)),
             r"Y must be chunked by rows only")


def test_mismatched_row_chunks():
    X, Y, _ = _problem()
    _refused(da.from_array(X, chunks=(70, -1)), da.from_array(Y, chunks=(100, -1)),
             r"Y must have the row chunks of X.*Y.rechunk")


def test_mismatched_rows_in_memory_y():
    X, Y, _ = _problem()
    with pytest.raises(ValueError, match=r"X and Y must have the same number of rows; got "
                                         r"300 and 299"):
        ECRM(HammingLoss(), TREE, **PRIMAL).fit(da.from_array(X, chunks=(70, -1)), Y[1:])


def test_dask_y_with_in_memory_x():
    X, Y, _ = _problem()
    with pytest.raises(TypeError, match=r"Y is a Dask array but X is not"):
        ECRM(HammingLoss(), TREE, **PRIMAL).fit(X, _dask(X, Y)[1])


@pytest.mark.parametrize("solver", ["dual", "auto"])
def test_dual_solver_refuses_dask(solver):
    X, Y, _ = _problem()
    for cls in (ECRM, ECRMCV):
        est = cls(HammingLoss(), TREE, kernel="rbf", solver=solver)
        with pytest.raises(ValueError, match=r"Dask arrays need solver='nystrom'"):
            est.fit(*_dask(X, Y))
        assert not hasattr(est, "X_fit_")


def test_loss_without_linear_form_refuses_dask():
    X, Y = simulate_flows(40, random_state=0)
    est = ECRM(SquaredLoss(), paper_network(), **PRIMAL)
    with pytest.raises(TypeError, match=r"needs a loss with a linear form"):
        est.fit(da.from_array(X, chunks=(10, -1)), Y)
    assert not hasattr(est, "X_fit_")


def test_bad_outputs_in_a_chunk_name_its_rows(client):
    X, Y, _ = _problem()
    bad = Y.copy()
    bad[150, TREE.labels.index("a1")] = 1
    bad[150, TREE.labels.index("a")] = 0  # a child without its parent
    _refused(*_dask(X, bad), r"Y rows 140 to 209 \(one Dask chunk\)")


def test_unknown_chunk_sizes():
    X, Y, _ = _problem()
    Xd = da.from_array(X, chunks=(70, -1))
    Xd = Xd[Xd[:, 0] > -np.inf]  # boolean indexing: unknown row chunks
    _refused(Xd, Y, r"unknown chunk sizes.*compute_chunk_sizes")


def test_predict_checks_the_dask_input():
    X, Y, _ = _problem()
    est = ECRM(HammingLoss(), TREE, **PRIMAL).fit(X, Y)
    with pytest.raises(ValueError, match=r"X must be chunked by rows only"):
        est.predict(da.from_array(X, chunks=(70, 2)))
    with pytest.raises(ValueError, match=r"X has 3 features, but this estimator was fitted "
                                         r"with 4"):
        est.predict_costs(da.from_array(X[:, :3], chunks=(70, -1)))


def test_prediction_graph_ships_no_training_rows():
    # the graph holds the prediction step (fit without training rows, loss, space) once
    import cloudpickle

    X, Y, Xt = _problem()
    X = np.repeat(X, 20, axis=0)
    Y = np.repeat(Y, 20, axis=0)
    est = ECRM(HammingLoss(), TREE, **NYSTROM).fit(X, Y)
    lazy = est.predict(da.from_array(Xt, chunks=(20, -1)))
    size = len(cloudpickle.dumps(dict(lazy.__dask_graph__())))
    assert size < X.nbytes / 4, (size, X.nbytes)
    assert_array_equal(lazy.compute(), est.predict(Xt))
