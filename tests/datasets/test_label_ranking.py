"""The label-ranking benchmark loader and ``ecrm reproduce ranking``."""

import gzip
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from ecrm.datasets.label_ranking import list_label_ranking, load_label_ranking

REAL = Path("/work/shared/data/label_ranking")
GOOD = "3,2,3\n0.5,1,1,2,3\n-1,2e-1,3,1,2\n\n4,5,2,3,1\n"


def _write(tmp_path, text, name="toy", gz=False):
    path = tmp_path / f"{name}.csv{'.gz' if gz else ''}"
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("gz", [False, True], ids="gz={}".format)
def test_load_small_file(tmp_path, gz):
    _write(tmp_path, GOOD, gz=gz)
    data = load_label_ranking("toy", tmp_path)
    np.testing.assert_array_equal(data.X, [[0.5, 1], [-1, 0.2], [4, 5]])
    np.testing.assert_array_equal(data.ranks, [[0, 1, 2], [2, 0, 1], [1, 2, 0]])
    np.testing.assert_array_equal(data.space.to_ranks(data.Y), data.ranks)
    assert data.feature_names == ["x1", "x2"] and data.label_names[-1] == "label3"
    assert list_label_ranking(tmp_path) == ["toy"]


def test_data_dir_from_environment(tmp_path, monkeypatch):
    _write(tmp_path, GOOD)
    monkeypatch.delenv("ECRM_DATA", raising=False)
    monkeypatch.setenv("ECRM_DATA_RANKING", str(tmp_path))
    assert load_label_ranking("toy").X.shape == (3, 2)
    monkeypatch.delenv("ECRM_DATA_RANKING")
    monkeypatch.setenv("ECRM_DATA", str(tmp_path))
    assert list_label_ranking() == ["toy"]
    monkeypatch.delenv("ECRM_DATA")
    with pytest.raises(FileNotFoundError, match="ECRM_DATA_RANKING"):
        load_label_ranking("toy")


@pytest.mark.parametrize("text, match", [
    ("3,2\n", r"line 1: expected the header 'n,p,k'"),
    ("a,2,3\n", r"line 1: expected the header"),
    ("0,2,3\n", r"line 1: header 'n,p,k' needs n >= 1"),
    ("1,2,3\n0.5,1,1,2\n", r"line 2: expected 5 comma-separated fields"),
    ("1,2,3\n0.5,x,1,2,3\n", r"line 2: feature 2 is 'x', not a finite number"),
    ("1,2,3\nnan,1,1,2,3\n", r"line 2: feature 1 is 'nan'"),
    ("1,2,3\n0.5,1,1,2.5,3\n", r"line 2: the rank of label 2 is '2.5', not an integer"),
    ("1,2,3\n0.5,1,1,y,3\n", r"line 2: the rank of label 2 is 'y', not a finite number"),
    ("1,2,3\n0.5,1,1,1,3\n", r"line 2: the ranks \[1, 1, 3\] are not a permutation of 1..3"),
    ("1,2,3\n0.5,1,0,1,1\n", r"line 2: the ranks .* not an incomplete ranking"),
    ("1,2,3\n0.5,1,0,1,4\n", r"line 2: the ranks .* not an incomplete ranking"),
    ("2,2,3\n0.5,1,1,2,3\n", r"declares 2 data lines; found 1"),
    ("1,2,3\n0.5,1,1,2,3\n0.5,1,1,2,3\n", r"line 3: more data lines than the 1"),
])
def test_bad_files_name_file_and_line(tmp_path, text, match):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=match) as err:
        load_label_ranking("toy", tmp_path)
    assert str(path) in str(err.value)


def test_missing_file_and_directory(tmp_path):
    _write(tmp_path, GOOD)
    with pytest.raises(FileNotFoundError, match="no iris.csv.gz or iris.csv.*toy"):
        load_label_ranking("iris", tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_label_ranking("toy", tmp_path / "nowhere")


@pytest.mark.data
@pytest.mark.skipif(not REAL.is_dir(), reason=f"benchmark data not present at {REAL}")
def test_real_files_match_their_readme():
    expected = {"iris": (150, 4, 3), "wine": (178, 13, 3), "wisconsin": (194, 16, 16),
                "glass": (214, 9, 6), "bodyfat": (252, 7, 7)}
    assert set(expected) <= set(list_label_ranking(REAL))
    for name, (n, p, k) in expected.items():
        data = load_label_ranking(name, REAL)
        assert data.X.shape == (n, p) and data.ranks.shape == (n, k)
    # README: versicolor rows mostly rank label 2 first.
    assert (load_label_ranking("iris", REAL).ranks[50:100, 1] == 0).mean() > 0.5


@pytest.mark.data
@pytest.mark.skipif(not REAL.is_dir(), reason=f"benchmark data not present at {REAL}")
def test_reproduce_ranking_tiny(tmp_path, capsys):
    import argparse
    import json

    from ecrm.experiments import ranking

    parser = argparse.ArgumentParser()
    ranking.add_parser(parser.add_subparsers())
    out = tmp_path / "r.json"
    args = parser.parse_args(["ranking", "--data-dir", str(REAL), "--datasets", "iris",
                              "--repeats", "1", "--folds", "3", "--quiet", "--json", str(out)])
    assert args.func(args) == 0
    assert "ECRM-Kendall" in capsys.readouterr().out
    rows = {r["method"]: r for r in json.loads(out.read_text())[0]["rows"]}
    assert set(rows) == set(ranking.METHODS)
    assert all(len(r["fold_taus"]) == 3 for r in rows.values())
    assert rows["ECRM-Kendall"]["tau_mean"] > 0.85


def test_reproduce_ranking_reports_missing_data(tmp_path, capsys):
    import argparse

    from ecrm.experiments import ranking

    parser = argparse.ArgumentParser()
    ranking.add_parser(parser.add_subparsers())
    args = parser.parse_args(["ranking", "--data-dir", os.fspath(tmp_path / "none")])
    assert args.func(args) == 2
    assert "does not exist" in capsys.readouterr().out


def test_kendall_loo_rows_bounds_the_dynamic_programme():
    from ecrm.experiments.ranking import KENDALL_LOO_BUDGET, KENDALL_LOO_MIN_ROWS, kendall_loo_rows

    # Every set of the benchmark but wisconsin keeps every training point (k <= 11, m <= 1000).
    assert kendall_loo_rows(1000, 11) is None
    assert kendall_loo_rows(KENDALL_LOO_BUDGET // (2**9 * 9), 9) is None
    assert kendall_loo_rows(KENDALL_LOO_BUDGET // (2**9 * 9) + 1, 9) == \
        KENDALL_LOO_BUDGET // (2**9 * 9)
    # wisconsin (k = 16): the floor, unless the fold is smaller than it.
    assert kendall_loo_rows(175, 16) == KENDALL_LOO_MIN_ROWS
    assert kendall_loo_rows(KENDALL_LOO_MIN_ROWS, 16) is None


def test_ecrm_kendall_reuses_the_squared_rank_kernel_and_intercept():
    from ecrm.experiments import _ranking_kernel as kernel_rankers
    from ecrm.experiments.cache import InMemoryCache

    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    R = np.argsort(np.argsort(X @ rng.randn(3, 4) + 0.3 * rng.randn(60, 4), axis=1), axis=1)
    out = kernel_rankers._ecrm(X[:50], R[:50], X[50:], [0.1, 1.0], InMemoryCache(), rng)
    assert list(out) == ["ECRM-Kendall", "ECRM-footrule", "ECRM-squared", "ECRM-selected"]
    kendall, squared = out["ECRM-Kendall"][1], out["ECRM-squared"][1]
    assert {k: v for k, v in kendall.items() if k != "alpha"} == \
        {k: v for k, v in squared.items() if k != "alpha"}
    P, params = out["ECRM-selected"]  # one of the three, with its parameters
    loss = params.pop("loss")
    assert params.pop("loo_discordant") >= 0
    assert params == out[loss][1]
    np.testing.assert_array_equal(P, out[loss][0])
    for P, _ in out.values():  # rankings: a permutation of 0..3 per test row
        np.testing.assert_array_equal(np.sort(P, axis=1), np.tile(np.arange(4), (10, 1)))


def _toy_ranking(m, k=4, p=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(m, p)
    R = np.argsort(np.argsort(X @ rng.randn(p, k) + 0.5 * rng.randn(m, k), axis=1), axis=1)
    return X, R


@pytest.mark.slow
def test_krr_chooses_kernel_and_alpha_by_leave_one_out_refits(monkeypatch):
    from sklearn.kernel_ridge import KernelRidge

    from ecrm.experiments import _ranking_kernel as kernel_rankers
    from ecrm.experiments import _ranking_knn as knn
    from ecrm.experiments.cache import InMemoryCache

    monkeypatch.setattr(kernel_rankers, "ALPHAS", np.logspace(-4, 2, 7))
    X, R = _toy_ranking(30)
    Xtr, Rtr, Xte = X[:24], R[:24], X[24:]
    m = len(Xtr)
    P, chosen = kernel_rankers._krr(Xtr, Rtr, Xte, [0.5], InMemoryCache(), 0)
    # The same criterion by m refits per candidate, each without its point (ridge m * alpha).
    best = None
    for params in [{"kernel": "linear", "gamma": None, "degree": 3, "coef0": 1},
                   {"kernel": "rbf", "gamma": 0.5, "degree": 3, "coef0": 1}]:
        for alpha in kernel_rankers.ALPHAS[::-1]:
            model = KernelRidge(alpha=m * alpha, kernel=params["kernel"], gamma=params["gamma"])
            loo = np.array([model.fit(np.delete(Xtr, i, 0), np.delete(Rtr, i, 0).astype(float))
                            .predict(Xtr[i:i + 1])[0] for i in range(m)])
            tau = knn._tau(kernel_rankers._rank_labels(loo), Rtr).mean()
            if best is None or tau > best[0] + 1e-12:
                best = (tau, params, alpha)
    assert chosen == {**best[1], "alpha": best[2]}
    model = KernelRidge(alpha=m * best[2], kernel=best[1]["kernel"], gamma=best[1]["gamma"])
    np.testing.assert_array_equal(P, kernel_rankers._rank_labels(model.fit(Xtr, Rtr.astype(float))
                                                          .predict(Xte)))


def test_krr_reuses_the_eigendecompositions_of_ecrm(monkeypatch):
    from ecrm.experiments import _ranking_kernel as kernel_rankers
    from ecrm.experiments.cache import InMemoryCache

    monkeypatch.setattr(kernel_rankers, "KERNEL_SUBSAMPLE", 30)  # both stages on a small fold
    X, R = _toy_ranking(60)
    memory = InMemoryCache()
    kernel_rankers._ecrm(X[:50], R[:50], X[50:], [0.5, 2.0], memory, 7)
    before = len(memory.store)
    kernel_rankers._krr(X[:50], R[:50], X[50:], [0.5, 2.0], memory, 7)
    # Stage 1 (3 kernels on the same 30 points) is all cached; at most the chosen kernel's
    # decomposition on all 50 points is new.
    assert len(memory.store) - before <= 1


@pytest.mark.slow  # joblib worker processes
def test_run_dataset_does_not_depend_on_n_jobs(tmp_path):
    from ecrm.experiments import ranking

    X, R = _toy_ranking(45)
    lines = ["45,3,4"] + [",".join([*(f"{v:.6f}" for v in x), *(str(r + 1) for r in row)])
                          for x, row in zip(X, R, strict=True)]
    _write(tmp_path, "\n".join(lines) + "\n")
    kwargs = {"repeats": 2, "folds": 3, "max_train": 25}
    serial = ranking.run_dataset("toy", tmp_path, n_jobs=1, **kwargs)
    parallel = ranking.run_dataset("toy", tmp_path, n_jobs=2, **kwargs)
    for a, b in zip(serial["rows"], parallel["rows"], strict=True):
        assert a["method"] == b["method"] and a["params"] == b["params"]
        assert a["fold_taus"] == b["fold_taus"] and len(a["fold_taus"]) == 6
    assert serial["grid_edge_warnings"] == parallel["grid_edge_warnings"]
    # several sets share one pool, the larger first; each set's results are its own run's
    _write_toy(tmp_path, 60, seed=1, name="big")
    done = []
    pooled = ranking.run_datasets(["toy", "big"], tmp_path, n_jobs=2, finished=done.append,
                                  **kwargs)
    assert [[info["dataset"] for info in d] for d in done] == [["big"], ["toy", "big"]]
    alone = ranking.run_dataset("big", tmp_path, n_jobs=1, **kwargs)
    for got, expect in zip(pooled, [serial, alone], strict=True):
        assert got["dataset"] == expect["dataset"] and got["n"] == expect["n"]
        for a, b in zip(got["rows"], expect["rows"], strict=True):
            assert a["params"] == b["params"] and a["fold_taus"] == b["fold_taus"]
        assert got["seconds_wall"] > 0


def test_grid_edges_of_the_protocol_grid_are_counted_not_shown(tmp_path, monkeypatch):
    import warnings

    from ecrm.exceptions import GridEdgeWarning
    from ecrm.experiments import _ranking_fold as folds

    def fold(*args, **kwargs):
        warnings.warn("ECRMCV: the chosen alpha is the smallest", GridEdgeWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
        return {"ECRM-Kendall": (1.0, {}, 0.0)}

    monkeypatch.setattr(folds, "_fold", fold)
    with pytest.warns(UserWarning, match="something else") as shown:
        out, edges, wall = folds._fold_counting_edges()
    assert (out, edges) == ({"ECRM-Kendall": (1.0, {}, 0.0)}, 1) and wall >= 0
    assert not any(issubclass(w.category, GridEdgeWarning) for w in shown)


def test_ecrm_selected_takes_the_smallest_leave_one_out_kendall_distance():
    from types import SimpleNamespace

    from ecrm.experiments import _ranking_kernel as ranking
    from ecrm.spaces.permutations import PermutationSpace

    space = PermutationSpace(3)
    Rtr = np.array([[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 2, 1]])
    rows = np.array([1, 3])  # the Kendall model's leave-one-out points

    def model(loo_rows, loo_ranks):
        return SimpleNamespace(loo_rows_=np.asarray(loo_rows),
                               loo_predictions_=space.from_ranks(loo_ranks))

    perfect, reverse = Rtr, Rtr[:, ::-1]
    # footrule is perfect on rows 1 and 3 only, squared rank only on rows 0 and 2: only the
    # Kendall model's points count, so footrule (0 errors) beats squared rank (6).
    footrule = np.where(np.isin(np.arange(4), rows)[:, None], perfect, reverse)
    squared = np.where(np.isin(np.arange(4), rows)[:, None], reverse, perfect)
    models = {"ECRM-Kendall": model(rows, reverse[rows]),
              "ECRM-footrule": model(np.arange(4), footrule),
              "ECRM-squared": model(np.arange(4), squared)}
    assert ranking._select_by_loo(models, Rtr, space) == ("ECRM-footrule", 0.0)
    # A tie goes to the earlier name in ECRM_LOSSES: Kendall.
    models["ECRM-Kendall"] = model(rows, perfect[rows])
    assert ranking._select_by_loo(models, Rtr, space) == ("ECRM-Kendall", 0.0)
    # The distance is the mean over the Kendall model's points: reversing the positions
    # (2, 1, 0) and (0, 2, 1) gives 3 and 1 discordant pairs.
    models["ECRM-Kendall"] = model(rows, reverse[rows])
    models["ECRM-footrule"] = model(np.arange(4), reverse)
    models["ECRM-squared"] = model(np.arange(4), reverse)
    assert ranking._select_by_loo(models, Rtr, space) == ("ECRM-Kendall", 2.0)
    # Points the other model lacks are refused, not silently misaligned.
    models["ECRM-squared"] = model([0, 2], squared[[0, 2]])
    with pytest.raises(ValueError, match="ECRM-squared: its leave-one-out points"):
        ranking._select_by_loo(models, Rtr, space)


@pytest.mark.slow
def test_forest_rankers_and_the_honest_choice():
    from ecrm.experiments import _ranking_knn as knn
    from ecrm.experiments import _ranking_peers as peers

    X, R = _toy_ranking(80)
    for fn in (peers._forest, peers._lwrf, peers._pwrf):
        ranks, params = fn(X[:60], R[:60], X[60:], 0)
        np.testing.assert_array_equal(np.sort(ranks, axis=1), np.tile(np.arange(4), (20, 1)))
        assert knn._tau(ranks, R[60:]).mean() > 0.3
    forest = peers._forest(X[:60], R[:60], X[60:], 0)
    assert forest[1]["flavour"] in ("random", "extra") and forest[1]["oob_discordant"] >= 0
    assert forest[1]["min_samples_split"] in peers.FOREST_SPLITS
    assert forest[1]["search_estimators"] is None  # 60 points: every setting on 100 trees
    kernel = (R[60:], {"loss": "ECRM-Kendall", "loo_discordant": forest[1]["oob_discordant"]})
    assert peers._honest(kernel, forest)[1]["family"] == "kernel"  # a tie goes to the kernel
    kernel[1]["loo_discordant"] += 0.01
    honest = peers._honest(kernel, forest)
    assert honest[1]["family"] == "forest" and honest[0] is forest[0]


@pytest.mark.slow
def test_a_large_fold_judges_the_forest_flavours_on_fewer_trees(monkeypatch):
    from ecrm.experiments import _ranking_peers as peers

    X, R = _toy_ranking(80)
    monkeypatch.setattr(peers, "FOREST_SEARCH_ABOVE", 50)  # 60 training points: large
    fitted: dict = {}
    ranks, params = peers._forest(X[:60], R[:60], X[60:], 0, fitted)
    assert params["search_estimators"] == peers.FOREST_SEARCH_TREES
    forest = fitted["forest"]
    counts = forest.cv_results_["n_estimators"]
    assert {peers.FOREST_SEARCH_TREES, peers.FOREST_TREES} <= set(counts) <= {
        0, peers.FOREST_SEARCH_TREES, peers.FOREST_TREES}
    # one flavour grows on; the leaf sizes are descended, not all judged
    full = [forest.cv_results_["params"][i] for i, n in enumerate(counts)
            if n == peers.FOREST_TREES]
    assert len({p["flavour"] for p in full}) == 1 and forest.search.split_search == "descent"
    assert forest._fit.trees.n_trees == peers.FOREST_TREES


@pytest.mark.slow
def test_the_mixed_ranker_chooses_its_loss_and_share_on_the_honest_costs():
    from ecrm.experiments import _ranking_kernel as kernel_rankers
    from ecrm.experiments import _ranking_peers as peers
    from ecrm.experiments import ranking
    from ecrm.experiments.cache import InMemoryCache

    X, R = _toy_ranking(80)
    fitted = {}
    kernel = kernel_rankers._ecrm(X[:60], R[:60], X[60:], [0.5, 2.0], InMemoryCache(), 0,
                           honest=fitted)
    forest = peers._forest(X[:60], R[:60], X[60:], 0, fitted)
    for label in ranking.ECRM_LOSSES:  # every kernel model is kept with its honest costs
        model, rows, costs = fitted[label]
        psi = model.loss.psi(model.output_space.from_ranks(R[:60]).astype(float))
        assert costs.shape == (len(rows), psi.shape[1]) and len(rows) == 60
    assert fitted["forest"].oob_loss_ == forest[1]["oob_discordant"]
    ranks, params = peers._mixed(fitted, fitted["forest"], R[:60], X[60:])
    table = params["candidates"]
    # share 1 of each loss is that kernel model alone: the best of them is ECRM-selected's
    # leave-one-out criterion; share 0 of the Kendall loss is ECRM-forest's out-of-bag one
    assert min(d[-1] for d in table.values()) == pytest.approx(
        kernel["ECRM-selected"][1]["loo_discordant"], rel=1e-12)
    assert table["ECRM-Kendall"][0] == pytest.approx(forest[1]["oob_discordant"], rel=1e-12)
    assert params["honest_discordant"] == min(min(d) for d in table.values())
    chosen = table[params["loss"]]
    assert chosen[round(params["mixture"] * 10)] == params["honest_discordant"]
    if params["mixture"] == 1.0:
        np.testing.assert_array_equal(ranks, kernel[params["loss"]][0])
    elif params["mixture"] == 0.0 and params["loss"] == "ECRM-Kendall":
        np.testing.assert_array_equal(ranks, forest[0])


@pytest.mark.slow
def test_ssvm_search_passes_do_not_warn_but_an_unconverged_refit_does(monkeypatch):
    from ecrm.datasets import make_label_ranking
    from ecrm.experiments import _ranking_peers as peers

    monkeypatch.setattr(peers, "SSVM_CS", (1e3,))  # too large a C for 20 or 100 passes
    data = make_label_ranking("iris")
    train = np.random.default_rng(0).permutation(len(data.X))[:100]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        peers._ssvm(data.X[train], data.ranks[train], data.X[:5], [1.0], 0)
    # the C search's 20 passes are the protocol's budget; the refit's 100 are not enough
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(messages) == 1 and "stopped at max_iter=100 passes" in messages[0]


@pytest.mark.slow
def test_ssvm_kendall_column_ranks_better_than_chance_and_is_opt_in():
    import argparse

    from ecrm.datasets import make_label_ranking
    from ecrm.experiments import _ranking_knn as knn
    from ecrm.experiments import _ranking_peers as peers
    from ecrm.experiments import ranking

    data = make_label_ranking("iris")
    order = np.random.default_rng(0).permutation(len(data.X))
    train, test = order[:100], order[100:]
    X, R = data.X, data.ranks
    ranks, params = peers._ssvm(X[train], R[train], X[test], [0.25, 1.0, 4.0], 0)
    assert ranks.shape == (50, 3) and sorted(ranks[0]) == [0, 1, 2]
    assert knn._tau(ranks, R[test]).mean() > 0.5 and params["C"] in ranking.SSVM_CS
    parser = argparse.ArgumentParser()
    ranking.add_parser(parser.add_subparsers())
    assert "SSVM-Kendall" not in parser.parse_args(["ranking"]).methods
    assert tuple(parser.parse_args(["ranking", "--methods", "SSVM-Kendall"]).methods) == (
        "SSVM-Kendall",)
    with pytest.raises(SystemExit):
        parser.parse_args(["ranking", "--methods", "SVM"])


def _write_toy(tmp_path, m, seed=0, name="toy"):
    X, R = _toy_ranking(m, seed=seed)
    lines = [f"{m},3,4"] + [",".join([*(f"{v:.6f}" for v in x), *(str(r + 1) for r in row)])
                            for x, row in zip(X, R, strict=True)]
    _write(tmp_path, "\n".join(lines) + "\n", name=name)


@pytest.mark.slow
def test_full_folds_agree_with_the_capped_protocol_under_the_cap(tmp_path):
    """Training folds under the cap: the full-fold and the capped protocol fit the same
    models on the same draws (whatever the cap, as long as no fold exceeds it)."""
    from ecrm.experiments import ranking

    _write_toy(tmp_path, 45)
    kwargs = {"repeats": 1, "folds": 3, "gammas": [1.0]}
    full = ranking.run_dataset("toy", tmp_path, max_train=None, **kwargs)
    capped = ranking.run_dataset("toy", tmp_path, max_train=30, **kwargs)  # folds: 30 points
    assert full["max_train"] is None and capped["max_train"] == 30
    for a, b in zip(full["rows"], capped["rows"], strict=True):
        assert a["method"] == b["method"] and a["params"] == b["params"]
        assert a["fold_taus"] == b["fold_taus"]
    # A cap below the fold size subsamples, so the protocols part there.
    cut = ranking.run_dataset("toy", tmp_path, max_train=20, **kwargs)
    assert any(a["fold_taus"] != b["fold_taus"] for a, b in zip(full["rows"], cut["rows"],
                                                                 strict=True))


@pytest.mark.data
@pytest.mark.skipif(not REAL.is_dir(), reason=f"benchmark data not present at {REAL}")
def test_full_folds_agree_with_the_capped_protocol_on_iris(tmp_path):
    """iris (150 points) is under the 1,000-point cap: both protocols give the same table."""
    from ecrm.experiments import ranking

    kwargs = {"repeats": 1, "folds": 3, "methods": ("ECRM-squared", "kNN-Borda")}
    full = ranking.run_dataset("iris", REAL, max_train=None, **kwargs)
    capped = ranking.run_dataset("iris", REAL, max_train=1000, **kwargs)
    assert [r["fold_taus"] for r in full["rows"]] == [r["fold_taus"] for r in capped["rows"]]
    assert [r["params"] for r in full["rows"]] == [r["params"] for r in capped["rows"]]


@pytest.mark.slow
def test_large_folds_go_low_rank_and_rank_like_the_exact_models(monkeypatch):
    """A fold over the dual's limit: Nystrom features (RBF) or the exact primal (linear),
    the three ECRM models on the same kernel, centres and leave-one-out points."""
    import warnings

    from ecrm.experiments import _ranking_fold as folds
    from ecrm.experiments import _ranking_kernel as kernel_rankers
    from ecrm.experiments import ranking

    monkeypatch.setattr(folds, "DUAL_MAX_TRAIN", 50)
    monkeypatch.setattr(kernel_rankers, "KERNEL_SUBSAMPLE", 40)
    monkeypatch.setattr(kernel_rankers, "LARGE_LOO_ROWS", 60)
    monkeypatch.setattr(kernel_rankers, "ALPHAS", np.logspace(-4, 1, 6))
    X, R = _toy_ranking(110, seed=3)
    train, test = np.arange(90), np.arange(90, 110)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # grid edges of the tiny grids
        low = folds._fold(X, R, train, test, gammas=[0.3, 1.0], methods=ranking.METHODS,
                          seed=5, max_train=None, n_components=30)
        exact = folds._fold(X, R, train, test, gammas=[0.3, 1.0], methods=ranking.METHODS,
                            seed=5, max_train=None, n_components=90)
    for label in (*ranking.ECRM_LOSSES, "KRR-positions"):
        params = low[label][1]
        assert params["solver"] == ("primal" if params["kernel"] == "linear" else "nystrom")
        assert params.get("n_components", 30) == 30
        assert "solver" not in exact[label][1]  # 90 points <= n_components: the dual
    kernels = {tuple(sorted((k, str(v)) for k, v in low[label][1].items()
                            if k in ("kernel", "gamma"))) for label in ranking.ECRM_LOSSES}
    assert len(kernels) == 1  # one kernel for the three losses
    assert low["ECRM-selected"][1]["loss"] in ranking.ECRM_LOSSES
    for label in ranking.METHODS:  # a noisy linear-utility toy: both rank well
        assert low[label][0] > 0.5 and abs(low[label][0] - exact[label][0]) < 0.15


def test_large_loo_rows_are_shared_by_every_model():
    from ecrm.experiments.ranking import LARGE_LOO_ROWS, kendall_loo_rows, large_loo_rows

    assert large_loo_rows(LARGE_LOO_ROWS, 5) is None
    assert large_loo_rows(36691, 5) == LARGE_LOO_ROWS
    assert large_loo_rows(2218, 11) == kendall_loo_rows(2218, 11) < LARGE_LOO_ROWS  # spo


def test_max_train_option():
    import argparse

    from ecrm.experiments import ranking

    parser = argparse.ArgumentParser()
    ranking.add_parser(parser.add_subparsers())
    args = parser.parse_args(["ranking"])
    assert args.max_train is None and args.n_components == ranking.N_COMPONENTS
    assert parser.parse_args(["ranking", "--max-train", "none"]).max_train is None
    assert parser.parse_args(["ranking", "--max-train", "1000"]).max_train == 1000
    for bad in ("0", "x"):
        with pytest.raises(SystemExit):
            parser.parse_args(["ranking", "--max-train", bad])


def test_protocol_folds_are_the_folds_of_run_dataset():
    """Other rankers (benchmarks/ranking_sklr.py) see the training points each fold used."""
    from sklearn.model_selection import KFold

    from ecrm.experiments import ranking

    folds = list(ranking.protocol_folds(45, repeats=2, folds=3, random_state=4, max_train=25))
    assert [(rep, f) for rep, f, *_ in folds] == [(r, f) for r in range(2) for f in range(3)]
    for rep, f, train, test, seed in folds:
        full, held = list(KFold(3, shuffle=True, random_state=4 + rep).split(np.empty(45)))[f]
        np.testing.assert_array_equal(test, held)
        assert seed == ranking.fold_seed(4, rep, f) and len(train) == 25
        np.testing.assert_array_equal(train, ranking._cap(full, 25, np.random.RandomState(seed)))
        assert np.all(np.isin(train, full)) and np.all(np.diff(train) > 0)
    whole = list(ranking.protocol_folds(45, repeats=1, folds=3, max_train=None))
    assert all(len(train) == 30 for _, _, train, _, _ in whole)


def test_reproduce_ranking_checks_that_its_json_directory_is_writable(capsys):
    from ecrm.cli import main

    if not os.path.isdir("/proc/self"):
        pytest.skip("needs a directory that refuses new files")  # root writes anywhere else
    assert main(["reproduce", "ranking", "--json", "/proc/rows.json", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ecrm: error: --json '/proc/rows.json': cannot create a file in "
                          "'/proc'") and len(err.splitlines()) == 1
