"""What ``ecrm fit`` and the other commands say: the scale check against the trivial
baselines, each weight family's honest criterion and cost, the preprocessing and why, the
warnings in the command's words, ``info``'s columns, progress on a terminal only, a hint
for decimal commas, plain help."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from _threshold_labels import write_threshold_file
from ecrm.cli import main
from ecrm.datasets import make_hmc
from ecrm.losses import HammingLoss
from ecrm.selection import LeaveOneOutSearch

#: The scale check's warning: the raw leave-one-out loss, the baseline's, the standardised.
SCALE = re.compile(r"ecrm: warning: the model's exact leave-one-out hierarchical loss "
                   r"(\d+\.\d+) does not beat (\d+\.\d+), that of always predicting the empty "
                   r"set, by two standard errors; the features' standard deviations range "
                   r"from 0\.\d+ \('b'\) to 1\d\.?\d* \('a'\), and the rbf "
                   r"kernel sees mostly the widest\. With the features standardised, the same "
                   r"fit's leave-one-out hierarchical loss is (\d+\.\d+): standardise them "
                   r"\(--standardize yes, or --cv to choose by leave-one-out\)")


def _unscaled_data(m: int = 300):
    """Features of standard deviations 15, 0.1 and 3; the labels follow the narrow one only
    (the two others are noise), so that a kernel of the default width sees noise."""
    X1, Y, h = make_hmc(m, n_features=1, n_labels=8, random_state=0)
    rng = np.random.default_rng(0)
    X = np.column_stack([100 + 15 * rng.normal(size=m), 0.5 + 0.1 * X1[:, 0],
                         -2 + 3 * rng.normal(size=m)])
    return X, Y, h


@pytest.fixture(scope="module")
def unscaled(tmp_path_factory) -> Path:
    """:func:`_unscaled_data` as a CSV of label names and its hierarchy file."""
    X, Y, h = _unscaled_data()
    folder = tmp_path_factory.mktemp("unscaled")
    names = np.asarray(h.labels, dtype=object)
    (folder / "train.csv").write_text("a,b,c,labels\n" + "".join(
        ",".join(f"{v:.6g}" for v in x) + "," + ";".join(names[y > 0.5]) + "\n"
        for x, y in zip(X, Y, strict=True)))
    (folder / "h.tsv").write_text("\n".join(
        [f"{h.labels[p]}\t{h.labels[c]}" for p, c in np.asarray(h.edges)] + list(h.labels))
        + "\n")
    return folder


@pytest.fixture(scope="module")
def steps(tmp_path_factory) -> Path:
    """Labels that are thresholds of single features (trees find them; a kernel less so)."""
    folder = tmp_path_factory.mktemp("steps")
    write_threshold_file(folder)
    return folder


def _ok(ecrm_cmd, *args, cwd) -> tuple[str, str]:
    proc = ecrm_cmd(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode(), proc.stderr.decode()


# -- the scale check (the model against its trivial baselines, honestly) ----------------------
def test_unscaled_features_that_ruin_the_default_fit_are_named(ecrm_cmd, unscaled):
    """The default fit does no better than the empty set on its leave-one-out criterion,
    and standardised features do much better: the warning says both, and how."""
    from ecrm import ECRMCV
    from ecrm.datasets import load_csv
    from ecrm.losses import HierarchicalLoss
    from ecrm.model_files.io import load

    _, err = _ok(ecrm_cmd, "fit", "train.csv", "--hierarchy", "h.tsv", "--loss",
                 "hierarchical", "-o", "raw.ecrm", "--quiet", cwd=unscaled)
    found = SCALE.search(err)
    assert found, err
    raw, empty, standardised = map(float, found.groups())
    assert "ecrm fit:" not in err and err.count("ecrm: warning") == 1  # one prefix, once
    # the numbers: the exact leave-one-out losses of the same fit, raw and standardised, and
    # the empty set's loss on the training rows
    h = load(unscaled / "raw.ecrm").output_space
    data = load_csv(unscaled / "train.csv", hierarchy=h)
    loss = HierarchicalLoss(h)
    for X, said in ((data.X, raw), ((data.X - data.X.mean(0)) / data.X.std(0), standardised)):
        search = ECRMCV(loss, h, alphas=[1e-3],
                        search=LeaveOneOutSearch(fit_intercept=True)).fit(X, data.Y)
        np.testing.assert_allclose(-search.best_score_, said, atol=5e-5)
    np.testing.assert_allclose(np.mean(loss(np.zeros_like(data.Y), data.Y)), empty, atol=5e-5)
    assert raw >= empty and standardised < empty - 0.05  # 0.50 / 0.43 / 0.32
    _, err = _ok(ecrm_cmd, "fit", "train.csv", "--hierarchy", "h.tsv", "--loss",
                 "hierarchical", "--standardize", "yes", "-o", "std.ecrm", "--quiet",
                 cwd=unscaled)
    assert "warning" not in err


def test_the_scale_check_is_quiet_where_it_should_be():
    import warnings

    from ecrm import ECRM
    from ecrm.estimators._validation import honest_scale_check
    from ecrm.exceptions import FeatureScaleWarning
    from ecrm.losses import HierarchicalLoss

    X, Y, h = make_hmc(150, n_features=3, n_labels=6, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        model = ECRM(HammingLoss(), h).fit(X, Y)
        assert honest_scale_check(model, X, Y) is None  # deviations near 1: nothing changes
        # widths that standardising changes, but a model that beats every baseline
        Xw = X * 4.0
        model = ECRM(HammingLoss(), h, gamma=1 / 48).fit(Xw, Y)
        assert honest_scale_check(model, Xw, Y) is None
    # on a subsample of the rows (a large fit's check): said, and warned
    X, Y, h = _unscaled_data()
    model = ECRM(HierarchicalLoss(h), h).fit(X, Y)
    with pytest.warns(FeatureScaleWarning, match=r"loss \(on 200 random training rows\)"):
        result = honest_scale_check(model, X, Y, max_rows=200)
    assert len(result["rows"]) == 200 and result["standardised"] < result["baseline_loss"]


def test_the_scale_check_speaks_of_classes_too(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 1] > 0.3, "a", np.where(X[:, 1] < -0.3, "b", "c"))
    X = X * np.array([15, 0.1, 3])
    (tmp_path / "c.csv").write_text("x,y,z,label\n" + "".join(
        ",".join(f"{v:.5g}" for v in row) + f",{c}\n" for row, c in zip(X, y, strict=True)))
    assert main(["fit", str(tmp_path / "c.csv"), "--task", "multiclass", "--label-column",
                 "label", "-o", str(tmp_path / "c.ecrm"), "--quiet"]) == 0
    err = capsys.readouterr().err
    found = re.search(r"leave-one-out zero-one loss (\d\.\d+) does not beat (\d\.\d+), that "
                      r"of always predicting the most frequent training output, by two "
                      r"standard errors;.*standardised, the same fit's leave-one-out zero-one "
                      r"loss is (\d\.\d+)", err)
    assert found, err
    raw, mode, standardised = map(float, found.groups())
    np.testing.assert_allclose(mode, 1 - max(np.mean(y == c) for c in "abc"), atol=5e-5)
    assert standardised < mode - 0.3 <= raw


def test_beside_the_scale_warning_the_grid_edge_asks_for_scaling_first(ecrm_cmd, unscaled):
    _, err = _ok(ecrm_cmd, "fit", "train.csv", "--hierarchy", "h.tsv", "--loss",
                 "hierarchical", "--cv", "--family", "kernel", "--standardize", "no",
                 "--alphas", "10,100", "-o", "edge.ecrm", "--quiet", cwd=unscaled)
    lines = err.splitlines()
    assert len(lines) == 2 and "standardise them (--standardize yes, or --standardize auto " \
        "to choose by leave-one-out)" in lines[0]
    assert lines[1] == ("ecrm: warning: the chosen alpha=100 is the largest of the grid of "
                        "alphas [10 .. 100]; standardise the features first (see the warning "
                        "on their scales)")


def test_the_grid_edge_defers_to_the_scale_warning():
    from ecrm.commands._choice import grid_note

    note = "ECRMCV: the chosen alpha=1e-08 is the largest of the grid of alphas [1e-09 .. " \
           "1e-08]; add larger values"
    assert grid_note(note, False) == ("the chosen alpha=1e-08 is the largest of the grid of "
                                      "alphas [1e-09 .. 1e-08]; add larger values to "
                                      "--alphas, or give --extend-grid")
    assert grid_note(note, True).endswith("; standardise the features first (see the warning "
                                          "on their scales)")
    gamma = "ECRMCV: the chosen gamma=0.1 (rbf kernel) is the smallest of the gammas [0.1, 1.0]" \
            "; add smaller values"
    assert grid_note(gamma, False).endswith("; add smaller values to --gammas, or give "
                                            "--extend-grid")


# -- the families, the preprocessing, the search's blocks -------------------------------------
def test_fit_cv_reports_each_family_and_why_the_preprocessing(ecrm_cmd, steps):
    out, err = _ok(ecrm_cmd, "fit", "train.csv", "--path-sep", "/", "--cv", "--trees", "20",
                   "-o", "m.ecrm", cwd=steps)
    line = next(line for line in out.splitlines() if line.startswith("weights:"))
    found = re.fullmatch(r"weights: kernel: exact leave-one-out hamming loss (\d\.\d{4}) in "
                         r"[\d.]+ s; forest: out-of-bag hamming loss (\d\.\d{4}) in [\d.]+ s; "
                         r"mixed \(kernel share 0\): mixed leave-one-out and out-of-bag hamming "
                         r"loss \d\.\d{4} in [\d.]+ s, no refit; "
                         r"chose forest \(the difference, (\d\.\d{4}), is (.*)\)", line)
    assert found, line
    kernel, forest, gap = map(float, found.groups()[:3])
    assert forest < kernel and gap == pytest.approx(kernel - forest, abs=2e-4)
    assert found.group(4).startswith("more than two standard errors")
    pre = next(line for line in out.splitlines() if line.startswith("preprocessing:"))
    assert pre == ("preprocessing: none (the features as they are); a forest's splits do not "
                   "depend on the features' scales")
    # the search's two blocks, each under its features
    blocks = [line for line in err.splitlines() if line.startswith("[ECRMCV] on the")]
    assert blocks == ["[ECRMCV] on the features as they are:",
                      "[ECRMCV] on the standardised features:"]
    after = err.split("[ECRMCV] on the features as they are:\n", 1)[1]
    assert after.startswith("[ECRMCV] kernel")


def test_the_kernel_says_which_preprocessing_leave_one_out_chose(ecrm_cmd, unscaled):
    out, err = _ok(ecrm_cmd, "fit", "train.csv", "--hierarchy", "h.tsv", "--cv", "--family",
                   "kernel", "--quiet", "-o", "k.ecrm", cwd=unscaled)
    pre = next(line for line in out.splitlines() if line.startswith("preprocessing:"))
    found = re.fullmatch(r"preprocessing: standardise the numeric columns \(3 -> 3 columns\); "
                         r"chosen by exact leave-one-out \(hamming loss (\d\.\d{4}) as they are "
                         r"against hamming loss (\d\.\d{4}) standardised\)", pre)
    assert found, pre
    assert float(found.group(2)) < float(found.group(1))
    assert "standard deviations" not in err  # leave-one-out saw the standardised features


def test_within_noise_is_said():
    from ecrm.commands._choice import Fit, families_line

    rng = np.random.default_rng(0)
    Y = (rng.random((200, 5)) < 0.3).astype(float)
    P = Y.copy()
    flip = rng.random(Y.shape) < 0.1
    P[flip] = 1 - P[flip]
    Q = P.copy()
    Q[0, 0] = 1 - Q[0, 0]  # one cell apart: a difference well within noise
    loss = HammingLoss()
    kernel = SimpleNamespace(honest_score_=-loss(P, Y).mean(), loo_rows_=np.arange(200),
                             loo_predictions_=P, loss=loss)
    forest = SimpleNamespace(honest_score_=-loss(Q, Y).mean(), oob_predictions_=Q, loss=loss)
    args = SimpleNamespace(loss="hamming", scoring="loss")
    line = families_line(args, SimpleNamespace(Y=Y), "kernel",
                         [Fit("kernel", None, kernel, 51.0), Fit("forest", None, forest, 112.0)])
    gap = abs(loss(P, Y).mean() - loss(Q, Y).mean())
    assert line.startswith(f"weights: kernel: exact leave-one-out hamming loss "
                           f"{-kernel.honest_score_:.4f} in 51.0 s; forest: out-of-bag hamming "
                           f"loss {-forest.honest_score_:.4f} in 1 min 52 s; chose kernel "
                           f"(the difference, {gap:.4f}, is within noise")


# -- the trivial-model hint -------------------------------------------------------------------
def test_the_trivial_model_hint_does_not_send_a_search_to_its_search():
    import warnings

    from ecrm.baselines import check_against_baselines, trivial_baselines
    from ecrm.exceptions import TrivialModelWarning

    Y = np.array([[1, 0], [0, 1], [1, 1]])
    base = trivial_baselines(Y, [0.5, 0.5], [1, 0])
    empty = np.zeros_like(Y)
    forest = SimpleNamespace(best_score_=-1.0, oob_loss_=1.0)
    search = SimpleNamespace(best_score_=-1.0, alpha_=1e-3)
    for model, expected in ((None, "`ecrm fit --cv`"), (forest, "chosen out of bag"),
                            (search, "chosen by the honest criterion")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_against_baselines(Y, empty, base["empty"], base, model=model)
        texts = [str(w.message) for w in caught if w.category is TrivialModelWarning]
        assert texts and all(expected in t for t in texts)
        assert model is None or not any("--cv" in t for t in texts)


# -- presentation -----------------------------------------------------------------------------
def test_info_keeps_long_keys_apart_from_their_values(ecrm_cmd, steps):
    _ok(ecrm_cmd, "fit", "train.csv", "--path-sep", "/", "--family", "forest", "--cv",
        "--trees", "10", "-o", "f.ecrm", "--quiet", cwd=steps)
    out, _ = _ok(ecrm_cmd, "info", "f.ecrm", cwd=steps)
    lines = out.splitlines()
    keys = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert "min_samples_leaf" in keys and "min_samples_split" in keys
    column = len(lines[0]) - len(lines[0].split(None, 1)[1])
    assert all(len(line) > column and line[column - 2:column] == "  " and line[column] != " "
               for line in lines), out


def test_progress_goes_to_a_terminal_only(ecrm_cmd, steps):
    _, err = _ok(ecrm_cmd, "fit", "train.csv", "--path-sep", "/", "--family", "kernel",
                 "-o", "p.ecrm", cwd=steps)
    assert "\r" not in err and "ecrm fit:" not in err and "[00:" not in err


def test_warnings_have_one_prefix(capsys):
    from ecrm.cli import _show_warning

    _show_warning(UserWarning("ecrm fit: the features look odd"), UserWarning, "x.py", 1)
    assert capsys.readouterr().err == "ecrm: warning: the features look odd\n"


@pytest.mark.parametrize("text, argv", [
    ("a;b;labels\n1,5;2,25;x\n0,5;3,75;y\n", ["--delimiter", ";"]),
    ('a,b,labels\n"1,5","2",x\n"0,5","3",y\n', []),
    ("a;b;labels\n1.234,5;2;x\n0;3;y\n", ["--delimiter", ";"]),
], ids=["semicolon-delimited", "quoted-in-comma-delimited", "with-a-thousands-point"])
def test_a_decimal_comma_is_named(tmp_path, capsys, text, argv):
    (tmp_path / "d.csv").write_text(text)
    assert main(["fit", str(tmp_path / "d.csv"), *argv, "-o", str(tmp_path / "m.ecrm"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "line 2: column 'a': expected a finite number" in err
    assert "a number with a decimal comma? numbers are read with '.' as the decimal mark" in err


def test_a_bad_number_without_a_comma_gets_no_decimal_hint(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("a,b,labels\n1,x,y\n2,3,y\n")
    assert main(["fit", str(tmp_path / "d.csv"), "-o", str(tmp_path / "m.ecrm"),
                 "--quiet"]) == 2
    assert "decimal" not in capsys.readouterr().err


def test_ranking_help_is_plain_text(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["reproduce", "ranking", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "label ranking benchmark" in out and "--repeats" in out
    for markup in ("``", ":func:", ":class:", "ECRMCV(", "ALPHAS", "GAMMAS", "**"):
        assert markup not in out, markup
