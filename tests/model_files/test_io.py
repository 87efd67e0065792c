"""Model files: a loaded model predicts exactly what the saved one did; every bad file fails."""

import json
import os
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import ecrm
from _round_off import ROOM, term_scale
from _shapes import DAG6 as DAG
from _shapes import TREE7 as TREE
from ecrm import (
    ECRM,
    ECRMCV,
    CandidateSpace,
    Hierarchy,
    JointKernelECRM,
    MultilabelSpace,
    NystromSolver,
    PermutationSpace,
    load,
    save,
)
from ecrm.datasets.flows import simulate_flows
from ecrm.losses import (
    AbsoluteLoss,
    FootruleLoss,
    HammingLoss,
    HierarchicalLoss,
    KendallLoss,
    SquaredLoss,
    SquaredRankLoss,
    ZeroOneLoss,
)
from ecrm.model_files.io import FORMAT_VERSION, ModelFileError, read_metadata
from ecrm.selection import LeaveOneOutSearch
from ecrm.spaces import paper_network

INT_LABELS = Hierarchy([(1, 2), (1, 3), (4, 5)])
CANDIDATES = CandidateSpace([[0.0], [1.0], [2.0]])
PERM = PermutationSpace(3)


def _binary(space, m, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    d = space.n_outputs
    scores = X @ rng.normal(size=(3, d)) + rng.normal(scale=0.8, size=(m, d))
    Y = scores > 0.3
    return X, (space.close(Y) if isinstance(space, Hierarchy) else Y.astype(float))


def _data(space, m=40, seed=0):
    rng = np.random.default_rng(seed)
    if isinstance(space, CandidateSpace):
        X = rng.normal(size=(m, 3))
        return X, (np.digitize(X[:, 0], [-0.4, 0.4]))[:, None].astype(float)
    if isinstance(space, PermutationSpace):
        X = rng.normal(size=(m, 3))
        return X, space.from_ranks(np.argsort(np.argsort(X + rng.normal(size=X.shape), 1), 1))
    if space == "flows":
        return simulate_flows(m, random_state=seed)
    return _binary(space, m, seed)


CASES = {
    "tree-hamming": (HammingLoss(), TREE),
    "tree-hierarchical": (HierarchicalLoss(TREE), TREE),
    "dag-hamming": (HammingLoss(), DAG),
    "dag-hierarchical": (HierarchicalLoss(DAG), DAG),
    "int-labels-hierarchical": (HierarchicalLoss(INT_LABELS), INT_LABELS),
    "multilabel-hamming": (HammingLoss(), MultilabelSpace(4)),
    "candidates-zero-one": (ZeroOneLoss(CANDIDATES), CANDIDATES),
    "permutation-footrule": (FootruleLoss(), PERM),
    "permutation-squared-rank": (SquaredRankLoss(), PERM),
    "permutation-kendall": (KendallLoss(), PERM),
    "flows-absolute": (AbsoluteLoss(), "flows"),
    "flows-squared": (SquaredLoss(), "flows"),
}


def _roundtrip(model, tmp_path):
    path = tmp_path / "model.ecrm"
    save(model, path)
    return load(path)


@pytest.mark.parametrize("case", list(CASES))
def test_loaded_ecrm_predicts_exactly_as_saved(case, tmp_path):
    loss, space = CASES[case]
    flows = isinstance(space, str)
    X, Y = _data(space, 25 if flows else 40)
    Xt = _data(space, 6 if flows else 15, seed=1)[0]
    space = paper_network() if flows else space
    model = ECRM(loss, space, gamma=0.3, alpha=1e-2).fit(X, Y)
    before = model.predict(Xt)
    loaded = _roundtrip(model, tmp_path)
    assert type(loaded) is ECRM and type(loaded.loss) is type(loss)
    assert loaded.output_space == space or repr(loaded.output_space) == repr(space)
    np.testing.assert_array_equal(loaded.predict(Xt), before)
    assert loaded.get_params().keys() == model.get_params().keys()
    assert list(loaded.label_names_) == list(model.label_names_)  # str, int, tuple names


@pytest.mark.parametrize("case", ["tree-hamming", "dag-hierarchical", "permutation-footrule"])
def test_loaded_ecrmcv_predicts_exactly_as_saved(case, tmp_path):
    loss, space = CASES[case]
    X, Y = _data(space)
    Xt = _data(space, 15, seed=1)[0]
    model = ECRMCV(loss, space, alphas=[1e-3, 1e-2, 1e-1],
                   search=LeaveOneOutSearch(fit_intercept="auto", kernel_grid={
                       "kernel": ["rbf"], "gamma": [0.1, 0.5]})).fit(X, Y)
    loaded = _roundtrip(model, tmp_path)
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    assert loaded.alpha_ == model.alpha_ and loaded.kernel_params_ == model.kernel_params_
    np.testing.assert_array_equal(loaded.cv_results_["mean_loss"],
                                  model.cv_results_["mean_loss"])
    # The eigendecomposition is rebuilt on first use: scores match to round-off.
    np.testing.assert_allclose(loaded.predict_scores(Xt), model.predict_scores(Xt), atol=1e-10)


@pytest.mark.parametrize("estimator", [ECRM, ECRMCV])
@pytest.mark.parametrize("solver", [{"solver": "primal", "kernel": "linear"},
                                    {"solver": NystromSolver(n_components=12,
                                                             center_selection="kmeans++"),
                                     "gamma": 0.3, "random_state": 0}],
                         ids=["primal", "nystrom"])
def test_primal_and_nystrom_models_round_trip(estimator, solver, tmp_path):
    loss, space = CASES["tree-hamming"]
    X, Y = _data(space)
    Xt = _data(space, 15, seed=1)[0]
    model = estimator(loss, space, **solver).fit(X, Y)
    loaded = _roundtrip(model, tmp_path)
    # labels exact: here the best label set beats the next by over 1e-4, far above round-off
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    # the same sums, the arrays in another layout: apart by a few ulps of the terms' size
    atol = ROOM * term_scale(model, Xt)
    for method in ("predict_costs", "predict_scores"):
        np.testing.assert_allclose(getattr(loaded, method)(Xt), getattr(model, method)(Xt),
                                   rtol=0, atol=atol)


def test_sparse_precomputed_and_joint_models_round_trip(tmp_path):
    X, Y = _data(TREE)
    Xt = _data(TREE, 10, seed=1)[0]
    sparse = ECRM(HammingLoss(), TREE, gamma=0.3).fit(sp.csr_matrix(X), Y)
    loaded = _roundtrip(sparse, tmp_path)
    assert sp.issparse(loaded.X_fit_)
    np.testing.assert_array_equal(loaded.predict(sp.csr_matrix(Xt)), sparse.predict(Xt))
    K = X @ X.T
    pre = ECRM(HammingLoss(), TREE, kernel="precomputed").fit(K, Y)
    np.testing.assert_array_equal(_roundtrip(pre, tmp_path).predict(Xt @ X.T),
                                  pre.predict(Xt @ X.T))
    joint = JointKernelECRM(HammingLoss(), TREE, gamma=0.3).fit(X, Y)
    np.testing.assert_array_equal(_roundtrip(joint, tmp_path).predict(Xt), joint.predict(Xt))


def test_scores_and_weights_after_load_match(tmp_path):
    X, Y = _data(TREE)
    Xt = _data(TREE, 10, seed=1)[0]
    model = ECRM(HierarchicalLoss(TREE), TREE, gamma=0.3).fit(X, Y)
    loaded = _roundtrip(model, tmp_path)
    # the factor is rebuilt on first use: equal to round-off (BLAS is not bit-reproducible
    # across memory layouts); scores solved before saving are stored and come back exactly
    np.testing.assert_allclose(loaded.predict_scores(Xt), model.predict_scores(Xt), atol=1e-12)
    np.testing.assert_allclose(loaded.conditional_weights(Xt), model.conditional_weights(Xt),
                               atol=1e-12)
    # stored coefficients come back equal; the product may take another BLAS path (another
    # memory order or kernel), so equal to the round-off of an m-term sum of O(1) terms
    np.testing.assert_allclose(_roundtrip(model, tmp_path).predict_scores(Xt),
                               model.predict_scores(Xt), rtol=0, atol=1e-12)
    # ... and a loaded model saves again to an equivalent file.
    again = _roundtrip(loaded, tmp_path)
    np.testing.assert_array_equal(again.predict(Xt), model.predict(Xt))


def test_file_holds_no_m_by_m_array_and_describes_the_model(tmp_path):
    X, Y = _data(TREE, m=60)
    model = ECRM(HierarchicalLoss(TREE), TREE, gamma=0.3).fit(X, Y)
    model.predict_scores(X[:1])  # the marginal regressions are stored once solved
    path = tmp_path / "m.ecrm"
    save(model, path)
    meta = read_metadata(path)
    assert meta["format"] == "ecrm-model" and meta["format_version"] == FORMAT_VERSION
    assert meta["ecrm_version"] == ecrm.__version__ and meta["estimator"] == "ECRM"
    assert all(shape["shape"] != [60, 60] for shape in meta["arrays"].values())
    assert meta["rebuild"] == {}  # a linear loss: the fitted model keeps no factor
    hier = meta["params"]["loss"]
    assert hier["class"] == "HierarchicalLoss"
    assert hier["kwargs"]["hierarchy"]["kwargs"]["labels"] == list(TREE.labels)
    with zipfile.ZipFile(path) as zf:
        assert not any(n.endswith(".pkl") for n in zf.namelist())


def _saved(tmp_path):
    X, Y = _data(TREE)
    path = tmp_path / "good.ecrm"
    save(ECRM(HammingLoss(), TREE, gamma=0.3).fit(X, Y), path)
    return path


def _rewrite(src, dst, change):
    """Copy the zip ``src`` to ``dst``, passing every (name, bytes) through ``change``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            out = change(name, zin.read(name))
            if out is not None:
                zout.writestr(out[0], out[1])
    return dst


def _with_meta(tmp_path, edit):
    import hashlib

    def change(name, data):
        if name == "ecrm-model.json":
            meta = json.loads(data)
            edit(meta)
            return name, json.dumps(meta).encode()
        return name, data

    path = _rewrite(_saved(tmp_path), tmp_path / "edited.ecrm", change)
    # re-sign the metadata, as a careful tamperer (or a newer writer) would
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["ecrm-model.sha256"] = hashlib.sha256(members["ecrm-model.json"]).hexdigest().encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    return path


def test_truncated_file_is_refused(tmp_path):
    data = _saved(tmp_path).read_bytes()
    bad = tmp_path / "cut.ecrm"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="not a complete zip archive"):
        load(bad)


def test_modified_array_is_refused(tmp_path):
    def change(name, data):
        if name.startswith("arrays/") and len(data) > 200:
            data = data[:-8] + np.float64(1.5).tobytes()
        return name, data

    bad = _rewrite(_saved(tmp_path), tmp_path / "bad.ecrm", change)
    with pytest.raises(ModelFileError, match="does not match its SHA-256 digest"):
        load(bad)


def test_modified_metadata_is_refused(tmp_path):
    def change(name, data):
        if name == "ecrm-model.json":
            return name, data.replace(b'"alpha": 0.001', b'"alpha": 0.5')
        return name, data

    bad = _rewrite(_saved(tmp_path), tmp_path / "bad.ecrm", change)
    with pytest.raises(ModelFileError, match="metadata does not match"):
        load(bad)


def test_missing_array_member_is_refused(tmp_path):
    def change(name, data):
        return None if name == "arrays/a0.npy" else (name, data)

    bad = _rewrite(_saved(tmp_path), tmp_path / "bad.ecrm", change)
    with pytest.raises(ModelFileError, match="missing members"):
        load(bad)


def test_extra_member_is_refused(tmp_path):
    def change(name, data):
        return name, data

    bad = _rewrite(_saved(tmp_path), tmp_path / "bad.ecrm", change)
    with zipfile.ZipFile(bad, "a") as z:
        z.writestr("payload.pkl", b"\x80\x04")
    with pytest.raises(ModelFileError, match="unexpected members"):
        load(bad)


def test_newer_format_version_is_refused(tmp_path):
    path = _with_meta(tmp_path, lambda meta: meta.update(format_version=FORMAT_VERSION + 1))
    with pytest.raises(ModelFileError, match=f"format version {FORMAT_VERSION + 1}.*upgrade"):
        load(path)


def test_unknown_class_is_refused(tmp_path):
    def edit(meta):
        meta["params"]["loss"]["class"] = "os.system"

    with pytest.raises(ModelFileError, match="unknown class 'os.system'"):
        load(_with_meta(tmp_path, edit))


def test_other_format_name_is_refused(tmp_path):
    path = _with_meta(tmp_path, lambda meta: meta.update(format="skops"))
    with pytest.raises(ModelFileError, match="format 'skops'"):
        load(path)


def test_other_zip_file_is_refused(tmp_path):
    path = tmp_path / "arrays.npz"
    np.savez(path, a=np.arange(3))
    with pytest.raises(ModelFileError, match="without ecrm-model.json"):
        load(path)


def test_text_file_is_refused(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("x,labels\n1,a\n")
    with pytest.raises(ModelFileError, match="not an ecrm model file"):
        load(path)


def test_pickle_array_is_refused(tmp_path):
    import hashlib
    import io as _io

    buf = _io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    blob = buf.getvalue()

    names = []

    def edit(meta):  # the intercept: an array no other field's shape constrains before reading
        names.append(meta["fitted"]["_fit"]["kwargs"]["intercept"]["name"])
        meta["arrays"][names[0]].update(sha256=hashlib.sha256(blob).hexdigest(), shape=[1],
                                        dtype="|O")

    path = _with_meta(tmp_path, edit)
    _rewrite(path, tmp_path / "pickled.ecrm",
             lambda n, d: (n, blob if n == f"arrays/{names[0]}.npy" else d))
    with pytest.raises(ModelFileError, match="not a plain NumPy array"):
        load(tmp_path / "pickled.ecrm")


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(ModelFileError, match="no such model file"):
        load(tmp_path / "nothing.ecrm")


def test_unsavable_models_write_nothing(tmp_path):
    X, Y = _data(TREE)
    path = tmp_path / "m.ecrm"
    with pytest.raises(NotFittedError):
        save(ECRM(HammingLoss(), TREE), path)
    call = ECRM(HammingLoss(), TREE, kernel=lambda a, b: float(a @ b)).fit(X[:6], Y[:6])
    with pytest.raises(ModelFileError, match="callable kernel"):
        save(call, path)
    with pytest.raises(ModelFileError, match="cannot save a"):
        save(object(), path)
    assert os.listdir(tmp_path) == []


# -- files of the layout before ECRMCV's search settings moved to its search object ---------
def _signed(path, edit):
    """``path`` with its metadata passed through ``edit`` and signed again."""
    import hashlib

    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(members["ecrm-model.json"])
    edit(meta)
    members["ecrm-model.json"] = json.dumps(meta).encode()
    members["ecrm-model.sha256"] = hashlib.sha256(members["ecrm-model.json"]).hexdigest().encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    return path


#: ECRMCV's parameters as files wrote them when ECRMCV took the search's settings itself.
_OLD_ECRMCV = {"fit_intercept": "auto", "memory": None,
               "kernel_grid": {"$type": "dict", "items": [["gamma", [0.1, 0.5]]]},
               "loo_samples": 30, "kernel_subsample": None, "verbose": 0, "scoring": "loss",
               "calibration": None, "alpha_search": "grid", "extend_grid": False,
               "max_added_gammas": 3, "solver": "nystrom", "n_components": 12,
               "center_selection": "kmeans++"}


def _to_old_layout(params: dict) -> None:
    del params["search"]
    params.update(_OLD_ECRMCV)


def test_a_file_of_the_flat_ecrmcv_layout_loads_into_the_search_object(tmp_path):
    from ecrm.selection import LeaveOneOutSearch

    loss, space = CASES["tree-hamming"]
    X, Y = _data(space)
    Xt = _data(space, 15, seed=1)[0]
    search = LeaveOneOutSearch(kernel_grid={"gamma": [0.1, 0.5]}, loo_samples=30)
    model = ECRMCV(loss, space, alphas=[1e-3, 1e-2],
                   solver=NystromSolver(n_components=12, center_selection="kmeans++"),
                   search=search, random_state=0).fit(X, Y)
    path = tmp_path / "old.ecrm"
    save(model, path)
    _signed(path, lambda meta: _to_old_layout(meta["params"]))
    assert "loo_samples" in read_metadata(path)["params"]  # the flat layout, by hand
    loaded = load(path)
    assert loaded.search.loo_samples == 30 and loaded.search.kernel_grid == {"gamma": [0.1, 0.5]}
    assert loaded.solver == NystromSolver(n_components=12, center_selection="kmeans++")
    assert loaded.search_settings().alphas == [1e-3, 1e-2] == loaded.alphas
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    assert loaded.alpha_ == model.alpha_ and loaded.kernel_params_ == model.kernel_params_


@pytest.mark.parametrize("old,solver", [
    ({"solver": "nystrom", "n_components": 12, "center_selection": "kmeans++"},
     NystromSolver(n_components=12, center_selection="kmeans++")),
    ({"solver": "dual", "n_components": None, "center_selection": "uniform"}, "dual")],
    ids=["nystrom", "dual"])
def test_an_ecrm_file_with_the_nystrom_settings_of_the_estimator_loads(old, solver, tmp_path):
    loss, space = CASES["tree-hamming"]
    X, Y = _data(space)
    Xt = _data(space, 15, seed=1)[0]
    model = ECRM(loss, space, gamma=0.3, solver=solver, random_state=0).fit(X, Y)
    path = tmp_path / "old.ecrm"
    save(model, path)
    _signed(path, lambda meta: meta["params"].update(old))
    assert "n_components" in read_metadata(path)["params"]  # the older layout, by hand
    loaded = load(path)
    assert loaded.solver == solver and "n_components" not in loaded.get_params()
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))


def test_a_flat_layout_file_whose_state_the_parameters_do_not_allow_is_refused(tmp_path):
    loss, space = CASES["tree-hamming"]
    X, Y = _data(space)
    model = ECRMCV(loss, space, alphas=[1e-3, 1e-2], gamma=0.5).fit(X, Y)
    path = tmp_path / "old.ecrm"
    save(model, path)

    def edit(meta):
        _to_old_layout(meta["params"])
        meta["params"].update(solver="auto", n_components=None, center_selection="uniform",
                              kernel_grid={"$type": "dict", "items": [["gamma", [0.1, 0.2]]]})
        # the fitted gamma, 0.5, is not one of the grid's

    _signed(path, edit)
    with pytest.raises(ModelFileError, match="kernel_params_"):
        load(path)


def test_a_file_of_an_older_format_version_is_refused_naming_it(tmp_path):
    loss, space = CASES["tree-hamming"]
    X, Y = _data(space)
    path = tmp_path / "v1.ecrm"
    save(ECRMCV(loss, space, alphas=[1e-2]).fit(X, Y), path)
    _signed(path, lambda meta: meta.update(format_version=1))
    with pytest.raises(ModelFileError, match="format version 1"):
        load(path)


def test_a_mixture_file_of_the_flat_ecrmcv_layout_loads(tmp_path):
    from ecrm import MixedRiskECRM
    from ecrm.selection import LeaveOneOutSearch

    loss, space = CASES["tree-hamming"]
    X, Y = _data(space)
    model = MixedRiskECRM(loss, space, kernel_options={
        "alphas": [1e-3, 1e-1], "search": LeaveOneOutSearch(fit_intercept=True)},
        forest_options={"n_estimators": 5}, mixing_grid=3, random_state=0).fit(X, Y)
    path = tmp_path / "old-mixture.ecrm"
    save(model, path)

    def edit(meta):
        options = meta["params"]["kernel_options"]["items"]
        options[:] = [item for item in options if item[0] != "search"]
        options.append(["fit_intercept", True])
        kernel = meta["fitted"]["kernel_estimator_"]["kwargs"]
        del kernel["search"]
        kernel.update(fit_intercept=True, loo_samples=None, n_components=None,
                      center_selection="uniform", extend_grid=False)

    _signed(path, edit)
    loaded = load(path)
    assert loaded.kernel_options["search"].fit_intercept is True
    assert loaded.kernel_estimator_.search.fit_intercept is True
    np.testing.assert_array_equal(loaded.predict(X[:5]), model.predict(X[:5]))
