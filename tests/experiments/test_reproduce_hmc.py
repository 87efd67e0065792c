"""`ecrm reproduce hmc` end to end on small data sets the test writes (tree and DAG)."""

import json

import numpy as np
import pytest

from ecrm.cli import main
from ecrm.selection import LeaveOneOutSearch


def _write(path, name, split, hierarchy, label_sets, rng):
    lines = ["@relation toy", "@attribute x1 numeric", "@attribute x2 numeric",
             "@attribute colour {red,blue}", f"@attribute class hierarchical {hierarchy}",
             "@data"]
    for labels in label_sets:
        x = rng.normal(size=2)
        lines.append(f"{x[0]:.4f},{x[1]:.4f},{rng.choice(['red', 'blue'])},{labels}")
    (path / f"{name}.{split}.arff").write_text("\n".join(lines) + "\n")


@pytest.fixture
def data_dir(tmp_path):
    rng = np.random.default_rng(0)
    tree_sets = ["a/b", "a/c", "d", "a/b@d", "a"]
    dag_sets = ["C", "E@A", "D", "B", "A"]
    for split, n in [("trainvalid", 40), ("test", 15)]:
        _write(tmp_path, "toytree", split, "a,a/b,a/c,d",
               [tree_sets[i % 5] for i in range(n)], rng)
    for split, n in [("train", 25), ("valid", 15), ("test", 15)]:
        _write(tmp_path, "toydag", split, "root/A,root/B,A/C,B/C,C/D,B/E",
               [dag_sets[i % 5] for i in range(n)], rng)
    return tmp_path


@pytest.mark.slow
def test_reproduce_hmc_prints_table_and_writes_json(data_dir, tmp_path, capsys):
    out = tmp_path / "rows.json"
    code = main(["reproduce", "hmc", "--data-dir", str(data_dir), "--datasets",
                 "toytree,toydag", "--json", str(out), "--quiet"])
    assert code == 0
    text = capsys.readouterr().out
    for piece in ["toytree: m=40 train, n=15 test", "toydag: m=40 train", "(DAG)", "BR-SVM",
                  "ECRM (kernel LOO)", "ECRM (scores)", "ECRM stacked", "empty label set",
                  "majority labels"]:
        assert piece in text
    rows = json.loads(out.read_text())
    assert len(rows) == 2 * 10  # per data set: 4 ECRM, 5 scores rows (the forest's), BR-SVM
    keys = {"dataset", "method", "trained_for", "hamming", "hierarchical", "fit_seconds",
            "predict_seconds_per_instance", "params"}
    for row in rows:
        assert keys <= set(row) and row["method"] in (
            "ECRM", "ECRM forest", "ECRM selected", "ECRM mixed", "ECRM stacked", "BR-SVM")
        assert row["trained_for"] in ("hamming", "hierarchical", None)
        assert 0 <= row["hierarchical"] <= 1 and row["hamming"] >= 0
        # the gain over "ECRM (scores)" is on its other scores rows only
        compared = row["protocol"] == "scores" and row["method"] != "ECRM"
        assert ("auprc_gain" in row) == ("auprc_gain_std_error" in row) == compared


def _write_mixing(path, n_train=50, n_test=30, seed=0):
    """A tree problem that both families learn, each part of it better: the leaf under ``a``
    follows ``x1`` with noise, ``d`` the sign of ``x1 * x2`` (flipped 15% of the time); its
    mixture's kernel share is strictly between 0 and 1."""
    rng = np.random.default_rng(seed)
    for split, n in [("trainvalid", n_train), ("test", n_test)]:
        lines = ["@relation toy", "@attribute x1 numeric", "@attribute x2 numeric",
                 "@attribute colour {red,blue}", "@attribute class hierarchical a,a/b,a/c,d",
                 "@data"]
        for _ in range(n):
            x, colour = rng.normal(size=2), rng.choice(["red", "blue"])
            u = x[0] + 0.5 * rng.normal()
            labels = ["a/b" if u > 0.3 else "a/c" if u < -0.3 else "a"]
            if (x[0] * x[1] > 0) != (rng.uniform() < 0.15):
                labels.append("d")
            lines.append(f"{x[0]:.4f},{x[1]:.4f},{colour},{'@'.join(labels)}")
        (path / f"toymix.{split}.arff").write_text("\n".join(lines) + "\n")


def _recording(monkeypatch, module, name, seen):
    """Wrap ``module.name`` so that each call's return value is kept in ``seen[name]``."""
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        seen[name] = original(*args, **kwargs)
        return seen[name]
    monkeypatch.setattr(module, name, wrapped)


@pytest.mark.slow
def test_forest_scores_and_the_honestly_selected_row(tmp_path, capsys, monkeypatch):
    from ecrm.datasets import load_hmc
    from ecrm.experiments import _hmc_forest, _hmc_scores, _hmc_stack
    from ecrm.reporting.metrics import paired_bootstrap_auprc

    seen = {}
    _recording(monkeypatch, _hmc_forest, "mixed_scores", seen)
    _recording(monkeypatch, _hmc_stack, "stacked_scores", seen)
    _recording(monkeypatch, _hmc_scores, "scores_row", seen)
    _write_mixing(tmp_path)
    out = tmp_path / "rows.json"
    assert main(["reproduce", "hmc", "--data-dir", str(tmp_path), "--datasets", "toymix",
                 "--methods", "ecrm-scores,forest-scores", "--json", str(out), "--quiet"]) == 0
    assert "ECRM forest (scores)" in capsys.readouterr().out
    kernel, forest, selected, mixed, stacked = json.loads(out.read_text())
    assert (kernel["method"], forest["method"], selected["method"], mixed["method"],
            stacked["method"]) == ("ECRM", "ECRM forest", "ECRM selected", "ECRM mixed",
                                   "ECRM stacked")
    np.testing.assert_allclose(sum(stacked["params"]["weights"]), 1.0)
    assert stacked["params"]["stack_used"] == (stacked["params"]["gain"]
                                               > stacked["params"]["std_error"])
    # the kernel-forest line as the reference, one share for every label: unless the nested
    # check keeps the stack, the row is the mixture (its share, test predictions, test scores
    # and their metrics) and the neighbours' weight is 0
    assert stacked["params"]["label_shares"] is False
    assert stacked["params"]["members"] == ["kernel", "forest", "neighbours"]
    assert not stacked["params"]["stack_used"]
    assert 0 < mixed["params"]["mixture"] < 1  # else the test could not tell them apart
    np.testing.assert_allclose(stacked["params"]["weights"],
                               [mixed["params"]["mixture"], 1 - mixed["params"]["mixture"], 0],
                               rtol=0, atol=1e-12)
    (P_mixed, S_mixed, _), (P_stacked, S_stacked, _) = (seen["mixed_scores"],
                                                        seen["stacked_scores"])
    np.testing.assert_array_equal(P_stacked, P_mixed)
    np.testing.assert_allclose(S_stacked, S_mixed, rtol=0, atol=1e-12)
    for key in ("hamming", "hierarchical", "auprc", "auprc_all"):
        np.testing.assert_allclose(stacked[key], mixed[key], rtol=0, atol=1e-12)
    shares = mixed["params"]
    assert 0 <= shares["mixture"] <= 1
    assert shares["honest_auprc"] >= max(shares["kernel_auprc"], shares["forest_auprc"])
    # the forest's end of the mixture judges exactly what the forest's own criterion did
    assert shares["forest_auprc"] == pytest.approx(forest["params"]["oob_auprc"], rel=1e-12)
    family = selected["params"].pop("family")
    better = "forest" if forest["params"]["oob_auprc"] > kernel["params"]["loo_auprc"] \
        else "kernel"
    assert family == better
    assert selected["params"] == {"kernel": kernel, "forest": forest}[family]["params"]
    assert selected["auprc"] == {"kernel": kernel, "forest": forest}[family]["auprc"]
    # each other scores row's gain over the kernel's and its paired bootstrap standard error
    assert not {"auprc_gain", "auprc_gain_std_error"} & set(kernel)
    for row in (forest, selected, mixed, stacked):
        np.testing.assert_allclose(row["auprc_gain"], row["auprc"] - kernel["auprc"],
                                   rtol=0, atol=1e-12)
        assert np.isfinite(row["auprc_gain_std_error"]) and row["auprc_gain_std_error"] >= 0
    assert selected["auprc_gain_std_error"] == (0.0 if family == "kernel" else
                                                forest["auprc_gain_std_error"])
    assert mixed["auprc_gain_std_error"] > 0  # the mixture moved the scores
    Yte, S_kernel = load_hmc("toymix", tmp_path).test.Y, seen["scores_row"][3]
    np.testing.assert_allclose([mixed["auprc_gain"], mixed["auprc_gain_std_error"]],
                               paired_bootstrap_auprc(Yte, S_mixed, S_kernel, n_boot=200,
                                                      random_state=0), rtol=0, atol=1e-12)


def test_reproduce_hmc_without_data_says_where_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ECRM_DATA", raising=False)
    assert main(["reproduce", "hmc"]) == 2
    captured = capsys.readouterr()
    assert "ECRM_DATA" in captured.err and not captured.out
    monkeypatch.setenv("ECRM_DATA", str(tmp_path / "missing"))
    assert main(["reproduce", "hmc"]) == 2
    assert "does not exist" in capsys.readouterr().err
    monkeypatch.setenv("ECRM_DATA", str(tmp_path))
    assert main(["reproduce", "hmc"]) == 2
    assert "no data sets in" in capsys.readouterr().err


@pytest.fixture
def no_work(monkeypatch):
    """Make any fit fail: the checks under test must stop the command before the work."""
    import ecrm.experiments.hmc

    def fail(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(ecrm.experiments.hmc, "run_dataset", fail)


def test_reproduce_hmc_checks_that_its_json_directory_is_writable(data_dir, no_work, capsys):
    import os

    if not os.path.isdir("/proc/self"):
        pytest.skip("needs a directory that refuses new files")  # root writes anywhere else
    assert main(["reproduce", "hmc", "--data-dir", str(data_dir), "--json",
                 "/proc/rows.json", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ecrm reproduce hmc: error: --json '/proc/rows.json': cannot "
                          "create a file in '/proc'") and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv, message", [
    (["--methods", "ecrm,svm"], "--methods has unknown names svm; expected a comma-separated "
     "list of ecrm, ecrm-scores, forest-scores, br-svm"),
    (["--methods", "ecrm,,br-svm"], "--methods has an empty name"),
    (["--methods", "ecrm, ECRM"], "--methods repeats ecrm"),
    (["--datasets", "toytree,"], "--datasets has an empty name"),
    (["--data-dir", "/no/such/dir"], "--data-dir must be an existing directory"),
    (["--json", "/no/such/dir/rows.json"], "--json must be a file path in an existing directory"),
], ids=["methods-unknown", "methods-empty-name", "methods-repeated", "datasets-empty-name",
        "data-dir-missing", "json-in-a-missing-directory"])
def test_reproduce_hmc_rejects_bad_options_at_parse_time(argv, message, data_dir, no_work,
                                                         capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["reproduce", "hmc", "--data-dir", str(data_dir), *argv])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err and not captured.out


def test_reproduce_hmc_rejects_unknown_data_sets_before_any_work(data_dir, no_work, capsys):
    argv = ["reproduce", "hmc", "--data-dir", str(data_dir), "--datasets", "toytree, nope"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no data set 'nope'" in err and "available: toydag, toytree" in err


def test_reproduce_hmc_reports_a_malformed_file_without_traceback(data_dir, capsys):
    f = data_dir / "toytree.test.arff"
    f.write_text(f.read_text().replace("@data\n", "@data\nnan,1,red,a\n"))
    argv = ["reproduce", "hmc", "--data-dir", str(data_dir), "--datasets", "toytree", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{f}, line 7: expected a finite number" in err and "Traceback" not in err


def test_reproduce_hmc_strips_spaces_in_lists_and_shows_progress(data_dir, capsys,
                                                                 monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the bar shows on a terminal
    argv = ["reproduce", "hmc", "--data-dir", str(data_dir), "--datasets", " toytree ",
            "--methods", " ECRM "]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "toytree: m=40 train" in captured.out and "BR-SVM" not in captured.out
    assert "Table 1" in captured.err and "4/4" in captured.err


def test_reproduce_hmc_low_rank_with_nystrom(data_dir, tmp_path, capsys):
    out = tmp_path / "rows.json"
    code = main(["reproduce", "hmc", "--data-dir", str(data_dir), "--datasets", "toytree",
                 "--methods", "ecrm", "--solver", "nystrom", "--n-components", "20",
                 "--center-selection", "kmeans++", "--json", str(out), "--quiet"])
    assert code == 0
    rows = json.loads(out.read_text())
    assert len(rows) == 4 and all(r["params"]["solver"] in ("nystrom", "primal") for r in rows)
    assert "solver=nystrom" in capsys.readouterr().out


def test_reproduce_hmc_rejects_a_bad_n_components(data_dir, no_work, capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "hmc", "--data-dir", str(data_dir), "--n-components", "0"])
    assert "--n-components" in capsys.readouterr().err


def test_length_scales_for_the_scores_are_kept_only_past_a_standard_error():
    import functools

    from ecrm import ECRMCV
    from ecrm.datasets import make_hmc
    from ecrm.experiments._hmc_scores import length_scales
    from ecrm.experiments.hmc import ALPHAS
    from ecrm.losses import HammingLoss
    from ecrm.reporting.metrics import micro_auprc

    X, Y, h = make_hmc(160, n_features=3, n_labels=8, noise=0.2, random_state=0)
    X = np.c_[X, np.random.default_rng(1).normal(size=(160, 5))]  # five irrelevant features
    metric = functools.partial(micro_auprc, labels=h.labels)

    def search(grid):
        return ECRMCV(HammingLoss(), h, alphas=ALPHAS[::4], scoring=metric, random_state=0,
                      search=LeaveOneOutSearch(kernel_grid=grid))

    assert length_scales(search({"kernel": ["linear"]}).fit(X, Y), X, Y, search, metric,
                          0) is None
    isotropic = search({"kernel": ["rbf"], "gamma": [1 / 8]}).fit(X, Y)
    out = length_scales(isotropic, X, Y, search, metric, 0)
    choice, scaled = out["choice"], out["estimator"]
    assert choice["judged_on"] == 80  # the half the scales were not learned on
    judged = np.ones(160, dtype=bool)
    judged[np.random.default_rng(0).choice(160, 80, replace=False)] = False
    gain = (metric(Y[judged], scaled.loo_scores_[judged])
            - metric(Y[judged], isotropic.loo_scores_[judged]))
    assert choice["gain"] == pytest.approx(gain, abs=1e-5)
    assert choice["kept"] == (choice["gain"] > choice["standard_error"])
    # five irrelevant features of eight: the scales win by far (0.15 against 0.015 here)
    assert choice["kept"] and choice["gain"] > 3 * choice["standard_error"]
    assert choice["loo_error_ratio"] < 1
    assert scaled.kernel_params_["kernel"] == "rbf" and out["transform"](X).shape == X.shape


def test_the_ssvm_c_search_fits_each_c_on_each_fold_once_and_leaves_the_refit(monkeypatch):
    # GridSearchCV's own refit would be one more fit on the search's points, thrown away
    from ecrm import Hierarchy, StructuredSVM
    from ecrm.experiments import _hmc_baselines as baselines
    from ecrm.losses import HammingLoss

    h = Hierarchy([("a", "b"), ("a", "c"), ("d", "e")])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    sets = [{"a", "b"}, {"a", "c"}, {"d", "e"}, {"d"}, {"a"}]
    Y = np.array([[label in sets[i % 5] for label in h.labels] for i in range(30)], float)
    fits = []
    original = StructuredSVM.fit
    monkeypatch.setattr(StructuredSVM, "fit",
                        lambda self, X, Y: (fits.append(len(X)), original(self, X, Y))[1])
    model, params = baselines.tuned_ssvm(HammingLoss(), h, X, Y, "linear", 0)
    assert fits == [20] * (3 * len(baselines.SSVM_CS))  # 3 folds of 30 points
    assert params["C"] == model.C and model.max_iter == baselines.SSVM_PASSES[1]


@pytest.mark.slow
def test_the_stacked_rows_test_scores_weigh_every_member(tmp_path, monkeypatch):
    # Weights forced into the interior of the simplex: the row's test scores and costs are
    # the members' combined (the kernel's on its inputs, the neighbours' standardised).
    import dataclasses

    from sklearn.preprocessing import StandardScaler

    from ecrm import NeighboursECRMCV
    from ecrm.experiments import _hmc_stack
    from ecrm.weights import _stack_choice

    calls = {}
    original = _hmc_stack.stacked_scores

    def recorded(*args):
        calls["args"] = args
        return original(*args)
    monkeypatch.setattr(_hmc_stack, "stacked_scores", recorded)
    chosen = _stack_choice.choose_stack
    monkeypatch.setattr(_stack_choice, "choose_stack", lambda *a, **k: dataclasses.replace(
        chosen(*a, **k), weights=np.array([0.2, 0.3, 0.5])))
    _write_mixing(tmp_path)
    assert main(["reproduce", "hmc", "--data-dir", str(tmp_path), "--datasets", "toymix",
                 "--methods", "ecrm-scores,forest-scores", "--quiet"]) == 0
    kernel, Xte_kernel, forest, Xtr, Ytr, Xte, metric, seed = calls["args"]
    P, S, params = original(*calls["args"])
    assert params["weights"] == [0.2, 0.3, 0.5]
    scaler = StandardScaler().fit(Xtr)
    neighbours = NeighboursECRMCV(forest.loss, forest.output_space, scoring=metric).fit(
        scaler.transform(Xtr), Ytr)
    assert neighbours.n_neighbors_ == params["k"]
    expected = (0.2 * kernel.predict_scores(Xte_kernel) + 0.3 * forest.predict_scores(Xte)
                + 0.5 * neighbours.predict_scores(scaler.transform(Xte)))
    np.testing.assert_allclose(S, expected, rtol=1e-12, atol=1e-12)
    costs = (0.2 * kernel.predict_costs(Xte_kernel) + 0.3 * forest.predict_costs(Xte)
             + 0.5 * neighbours.predict_costs(scaler.transform(Xte)))
    np.testing.assert_array_equal(P, forest.output_space.minimize(costs, forest.loss.cost_form))


@pytest.mark.parametrize("calibration", ["isotonic", "platt"])
def test_honest_scores_never_calibrate_a_row_by_a_map_that_saw_its_label(calibration):
    # a row's honest score does not move when its own label flips (a map fitted on every row
    # would move it: isotonic regression nearly interpolates), and no calibration: the scores
    import types

    from ecrm.experiments._hmc_scores import honest_scores
    from ecrm.selection.calibration import CALIBRATIONS

    rng = np.random.default_rng(3)
    S = rng.random((60, 2))
    Y = (rng.random((60, 2)) < S).astype(float)
    rows = np.arange(10, 70)
    space = types.SimpleNamespace(consistent_scores=lambda C: C)

    def model(Y_rows, name):
        Y_fit = np.zeros((80, 2))
        Y_fit[rows] = Y_rows
        return types.SimpleNamespace(loo_scores_=S, loo_rows_=rows, Y_fit_=Y_fit,
                                     calibration_=name, output_space=space)

    assert honest_scores(model(Y, None), 0) is S
    flipped = Y.copy()
    flipped[7, 0] = 1 - flipped[7, 0]
    before, after = honest_scores(model(Y, calibration), 0), honest_scores(
        model(flipped, calibration), 0)
    assert after[7, 0] == before[7, 0]
    assert not np.allclose(after, before)  # the other folds' maps saw the flip
    in_sample = CALIBRATIONS[calibration]().fit(S, flipped).transform(S)
    assert in_sample[7, 0] != CALIBRATIONS[calibration]().fit(S, Y).transform(S)[7, 0]
