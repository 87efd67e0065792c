"""``ecrm evaluate`` beside the trivial baselines, its warnings, the report's model summary and
per-label table, and ``ecrm fit``'s feature-scale warning, through the real command."""

import csv
import json
from html.parser import HTMLParser

import numpy as np
import pytest

from ecrm import load
from ecrm.baselines import output_statistics, trivial_baselines
from ecrm.datasets import load_csv


@pytest.fixture(scope="module")
def unscaled(tmp_path_factory, train_csv, test_csv):
    """The example files with an income column in dollars (noise) before the features."""
    folder = tmp_path_factory.mktemp("unscaled")
    rng = np.random.default_rng(0)
    for name, source in (("train", train_csv), ("test", test_csv)):
        with open(source, newline="") as fh:
            rows = list(csv.reader(fh))
        with open(folder / f"{name}.csv", "w", newline="") as fh:
            csv.writer(fh).writerows([["income", *rows[0]]] + [
                [f"{rng.normal(50000, 20000):.2f}", *row] for row in rows[1:]])
    return folder


def _run(ecrm_cmd, *args, cwd):
    proc = ecrm_cmd(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode(), proc.stderr.decode()


def test_evaluate_shows_the_baselines_of_the_training_outputs(ecrm_cmd, train_csv, test_csv,
                                                               tmp_path):
    _run(ecrm_cmd, "fit", str(train_csv), "--path-sep", "/", "-o", "m.ecrm", "--quiet",
         cwd=tmp_path)
    out, err = _run(ecrm_cmd, "evaluate", "m.ecrm", str(test_csv), "--json", "--quiet",
                    cwd=tmp_path)
    got = json.loads(out)
    h = load(tmp_path / "m.ecrm").output_space
    train, test = load_csv(train_csv, hierarchy=h), load_csv(test_csv, hierarchy=h)
    expected = trivial_baselines(test.Y, *output_statistics(train.Y), hierarchy=h)
    assert list(got["baselines"]) == ["empty", "most_frequent", "majority"]
    for name, metrics in expected.items():
        assert got["baselines"][name] == pytest.approx(metrics)
    assert got["warnings"] == [] and "warning" not in err  # a model that learnt something
    assert got["model"]["n_train"] == 300 and got["model"]["estimator"] == "ECRM"
    assert got["model"]["kernel"]["kernel"] == "rbf" and got["model"]["alpha"] == 0.001
    text, _ = _run(ecrm_cmd, "evaluate", "m.ecrm", str(test_csv), "--quiet", cwd=tmp_path)
    lines = text.splitlines()
    assert "model: ECRM, HammingLoss, rbf kernel, gamma=1/features, alpha=0.001; " \
           "preprocessing: none; 300 training rows" in lines[1]
    assert lines[2].split() == ["model", "empty", "set", "most", "freq.", "majority"]
    loss = next(line for line in lines if "hierarchical loss" in line).split()[-4:]
    assert [float(v) for v in loss] == pytest.approx(
        [got["hierarchical"], *(expected[b]["hierarchical"] for b in expected)], abs=5e-5)


def test_unscaled_features_warn_at_fit_and_the_trivial_model_at_evaluate(ecrm_cmd, unscaled):
    _, err = _run(ecrm_cmd, "fit", "train.csv", "--path-sep", "/", "-o", "raw.ecrm",
                  "--quiet", cwd=unscaled)
    assert "ecrm: warning: the model's exact leave-one-out hamming loss" in err \
        and "by two standard errors" in err
    assert "ecrm fit:" not in err  # one prefix
    assert "standard deviations range from" in err and "('income')" in err
    assert "With the features standardised, the same fit's leave-one-out" in err
    assert "--standardize yes" in err and err.count("standard deviations") == 1
    _, err = _run(ecrm_cmd, "fit", "train.csv", "--path-sep", "/", "--standardize", "yes",
                  "-o", "std.ecrm", "--quiet", cwd=unscaled)
    assert "standard deviations" not in err
    out, err = _run(ecrm_cmd, "evaluate", "raw.ecrm", "test.csv", "--json", "--quiet",
                    "--report", "raw.html", cwd=unscaled)
    got = json.loads(out)
    page = (unscaled / "raw.html").read_text(encoding="utf-8")
    assert page.count("<p class=warn>warning: the model&#x27;s Hamming loss") == \
        sum("Hamming loss" in w for w in got["warnings"])
    # the model fitted on raw features predicts nearly one set: no better than the empty set
    assert any("no better than" in w and "the empty set" in w for w in got["warnings"])
    assert got["hamming"] >= got["baselines"]["empty"]["hamming"]
    assert err.count("ecrm: warning: the model's Hamming loss") == \
        sum("Hamming loss" in w for w in got["warnings"]) >= 1
    out, err = _run(ecrm_cmd, "evaluate", "std.ecrm", "test.csv", "--json", "--quiet",
                    cwd=unscaled)
    assert json.loads(out)["warnings"] == [] and "warning" not in err


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.headings, self.cells, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(dict(attrs).get("class"))
        self._in = tag

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "h2":
            self.headings.append(data)
        elif self._in in ("td", "th"):
            self.cells.append(data)


def test_report_has_the_model_summary_the_baselines_and_a_sortable_label_table(
        ecrm_cmd, unscaled):
    _run(ecrm_cmd, "fit", "train.csv", "--path-sep", "/", "--cv", "--alphas", "1e-3,1e-2",
         "--family", "kernel", "-o", "cv.ecrm", "--quiet", cwd=unscaled)
    _run(ecrm_cmd, "evaluate", "cv.ecrm", "test.csv", "--report", "r.html", "--quiet",
         cwd=unscaled)
    page = _Tables()
    page.feed((unscaled / "r.html").read_text(encoding="utf-8"))
    assert page.headings[:4] == ["Model", "Metrics", "Per level", "Per label"]
    assert page.tables[-1] == "sortable"
    cells = page.cells
    rows = cells[:cells.index("metric")]  # the model table's (what, value) rows (no heads)
    model = dict(zip(rows[::2], rows[1::2], strict=True))
    assert model["estimator"] == "ECRMCV" and model["training rows"] == "300"
    assert model["kernel"] == "rbf kernel, gamma=1/features"
    assert model["alpha"] in ("0.001 (chosen by exact leave-one-out)",
                              "0.01 (chosen by exact leave-one-out)")
    assert model["preprocessing"].startswith("HMCPreprocessor: standardise")  # chosen
    for head in ("empty set (baseline)", "most frequent label set (baseline)",
                 "per-label majority (baseline)", "training frequency", "F1"):
        assert head in cells
    h = load(unscaled / "cv.ecrm").steps[-1][1].output_space
    first = cells.index("training frequency") + 6  # the first label's row
    assert cells[first] == str(h.labels[0])
    assert all(str(label) in cells for label in h.labels)


@pytest.mark.slow  # node
def test_the_per_label_table_sorts_by_the_clicked_column(tmp_path):
    """The report's sort script on a stand-in of the page's table (Node, when installed)."""
    import shutil
    import subprocess

    from ecrm.reporting.report import _SORT

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on this machine")
    fake_page = """
const cell = t => ({textContent: t});
const row = (...ts) => ({cells: ts.map(cell)});
const body = {rows: [row("label", "F1"), row("01/02", "0.5"), row("01/01/03", "10.0"),
                     row("01/01", "2")],
              appendChild(r) { this.rows.splice(this.rows.indexOf(r), 1); this.rows.push(r); }};
const table = {tBodies: [body]};
const heads = [0, 1].map(() => ({dataset: {}, closest: () => table}));
const document = {querySelectorAll: () => heads};
""" + _SORT + """
const order = () => body.rows.map(r => r.cells[0].textContent).join(" ");
heads[1].onclick(); console.log(order());
heads[1].onclick(); console.log(order());
heads[0].onclick(); console.log(order());
"""
    (tmp_path / "sort.js").write_text(fake_page)
    out = subprocess.run([node, "sort.js"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    # by F1 as numbers (0.5 < 2 < 10), then the other way; by name (FunCat paths are names,
    # not the numbers they start with); the heads stay first
    assert out.stdout.splitlines() == ["label 01/02 01/01 01/01/03",
                                       "label 01/01/03 01/01 01/02",
                                       "label 01/01 01/01/03 01/02"]


def test_a_file_without_training_outputs_or_their_statistics_says_so(ecrm_cmd, train_csv,
                                                                      test_csv, tmp_path):
    from ecrm import save

    _run(ecrm_cmd, "fit", str(train_csv), "--path-sep", "/", "--kernel", "linear", "--solver",
         "primal", "-o", "m.ecrm", "--quiet", cwd=tmp_path)
    old = load(tmp_path / "m.ecrm")  # as written before the statistics were kept
    assert old.Y_fit_ is None
    del old.output_mean_, old.output_mode_
    save(old, tmp_path / "old.ecrm")
    out, err = _run(ecrm_cmd, "evaluate", "old.ecrm", str(test_csv), "--quiet", cwd=tmp_path)
    assert "ecrm: warning: old.ecrm holds neither the training outputs nor their " \
           "statistics: no trivial baselines" in err
    assert out.splitlines()[2].split() == ["model"]  # no baseline columns
    out, _ = _run(ecrm_cmd, "evaluate", "m.ecrm", str(test_csv), "--json", "--quiet",
                  cwd=tmp_path)
    assert list(json.loads(out)["baselines"]) == ["empty", "most_frequent", "majority"]
