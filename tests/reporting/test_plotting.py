"""Pictures and the HTML report of an evaluation (ecrm.reporting.plotting and .report)."""

from __future__ import annotations

import base64
import html.parser
import re

import numpy as np
import pytest

from ecrm import Hierarchy

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DAG = Hierarchy([("a", "a1"), ("a", "a2"), ("b", "b1"), ("a1", "x"), ("b1", "x"), ("b", "b2")])


def _data(seed=0, n=40):
    rng = np.random.default_rng(seed)
    T = DAG.close((rng.random((n, DAG.n_labels)) < 0.35).astype(int))
    scores = np.clip(T + rng.normal(scale=0.6, size=T.shape), 0, 1)
    return T, DAG.close((scores > 0.5).astype(int)), scores


def _is_png(blob: bytes) -> bool:
    import io

    import matplotlib.image

    return blob.startswith(PNG_MAGIC) and matplotlib.image.imread(io.BytesIO(blob)).ndim == 3


def test_label_f1_is_scikit_learns_per_label_f1():
    from sklearn.metrics import f1_score

    from ecrm.reporting.plotting import label_f1

    T, P, _ = _data(1)
    P[:, 0] = 0
    T[:, 0] = 0  # a label neither true nor predicted: 0, as zero_division=0
    np.testing.assert_allclose(label_f1(T, P), f1_score(T, P, average=None, zero_division=0),
                               atol=1e-12)


@pytest.mark.slow
def test_evaluation_figures_are_png_files_that_follow_the_predictions(tmp_path):
    from ecrm.reporting.plotting import evaluation_figures

    T, P, S = _data()
    paths = evaluation_figures(tmp_path / "a", T, P, S, hierarchy=DAG, baseline=S ** 2)
    names = sorted(p.rsplit("/", 1)[-1] for p in paths)
    assert names == ["ap_by_frequency.png", "hierarchy_f1.png", "per_level.png",
                     "precision_recall.png"]
    blobs = {p.rsplit("/", 1)[-1]: open(p, "rb").read() for p in paths}
    assert all(_is_png(b) for b in blobs.values())
    # other predictions and scores draw other pictures
    T2, P2, S2 = _data(7)
    other = evaluation_figures(tmp_path / "b", T, P2, S2, hierarchy=DAG)
    for p in other:
        assert open(p, "rb").read() != blobs[p.rsplit("/", 1)[-1]]
    # without scores or hierarchy only what applies is drawn
    assert evaluation_figures(tmp_path / "c", T, P) == []


def test_plot_functions_refuse_mismatched_shapes():
    from ecrm.reporting.plotting import plot_hierarchy, plot_precision_recall

    T, P, S = _data()
    with pytest.raises(ValueError, match=r"one shape.*\(40, 7\) and \(40, 6\)"):
        plot_precision_recall(T, S[:, :-1])
    with pytest.raises(ValueError, match=r"one entry per label, shape \(7,\)"):
        plot_hierarchy(DAG, np.ones(3))


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tables, self.open = [], 0, []

    def handle_starttag(self, tag, attrs):
        if tag not in ("img", "meta"):
            self.open.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        self.tables += tag == "table"

    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, f"unbalanced </{tag}>"


def test_write_report_is_one_self_contained_html_page(tmp_path):
    from ecrm.reporting.metrics import multilabel_report
    from ecrm.reporting.report import write_report

    T, P, S = _data()
    path = write_report(tmp_path / "r.html", T, P, S, hierarchy=DAG, notes=["model m.ecrm"])
    text = open(path, encoding="utf-8").read()
    page = _Page()
    page.feed(text)
    page.close()
    assert page.open == [] and page.tables == 3 and len(page.images) == 4  # 3: per label
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert _is_png(base64.b64decode(src.split(",", 1)[1]))
    hF = multilabel_report(T, P, S, hierarchy=DAG)["hF"]
    assert f"{hF:.4f}" in text and "model m.ecrm" in text
    assert not re.search(r"(src|href)=['\"](?!data:)", text)  # nothing outside the page


# -- ecrm evaluate --plot / --report through the real entry point ---------------------------
def test_evaluate_writes_pictures_and_a_report_that_follow_the_model(ecrm_cmd, train_csv,
                                                                     test_csv, tmp_path):
    import json


    for name, extra in (("a", ["--gammas", "0.1"]), ("b", ["--gammas", "3"])):
        proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--cv", *extra, "-o",
                        f"{name}.ecrm", "--quiet", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr.decode()
    proc = ecrm_cmd("predict", "b.ecrm", str(test_csv), "--scores", "-o", "b.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    pages = {}
    for name in ("a", "b"):
        proc = ecrm_cmd("evaluate", f"{name}.ecrm", str(test_csv), "--plot", f"fig-{name}",
                        "--report", f"{name}.html", "--baseline", "b.csv", "--json",
                        "--quiet", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr.decode()
        out = json.loads(proc.stdout)
        assert out["per_level"]["level"] == [0, 1] and "micro_f1" not in out
        figs = sorted(p.name for p in (tmp_path / f"fig-{name}").iterdir())
        assert figs == ["ap_by_frequency.png", "hierarchy_f1.png", "per_level.png",
                        "precision_recall.png"]
        assert all(_is_png((tmp_path / f"fig-{name}" / f).read_bytes()) for f in figs)
        pages[name] = (tmp_path / f"{name}.html").read_text()
        page = _Page()
        page.feed(pages[name])
        assert page.open == [] and len(page.images) == 4
        assert f"{out['hF']:.4f}" in pages[name]
    assert pages["a"] != pages["b"]  # another model, another page
    a_pr = (tmp_path / "fig-a" / "precision_recall.png").read_bytes()
    assert a_pr != (tmp_path / "fig-b" / "precision_recall.png").read_bytes()


def test_evaluate_refuses_a_report_over_its_input_before_any_work(ecrm_cmd, train_csv,
                                                                  test_csv, tmp_path):

    data = tmp_path / "test.csv"
    data.write_bytes(test_csv.read_bytes())
    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "-o", "m.ecrm", "--quiet",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    proc = ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--report", "test.csv", "--quiet",
                    cwd=tmp_path)
    assert proc.returncode == 2 and "refusing to write over it" in proc.stderr.decode()
    assert data.read_bytes() == test_csv.read_bytes()
    (tmp_path / "afile").write_text("x")
    proc = ecrm_cmd("evaluate", "m.ecrm", "test.csv", "--plot", "afile", "--quiet",
                    cwd=tmp_path)
    assert proc.returncode == 2 and "is a file; expected a directory" in proc.stderr.decode()


@pytest.mark.slow
def test_report_renders_in_a_headless_browser(tmp_path):
    """The page opens in Chromium (Debian's ``chromium``) and its screenshot is not blank."""
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    from ecrm.reporting.report import write_report

    T, P, S = _data()
    page = write_report(tmp_path / "r.html", T, P, S, hierarchy=DAG)
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    f"--screenshot={shot}", "--window-size=1000,1800", f"file://{page}"],
                   capture_output=True, timeout=120, check=False)
    import matplotlib.image

    image = matplotlib.image.imread(shot)
    assert image.shape[:2] == (1800, 1000)
    assert image[..., :3].std() > 0.05  # text, tables and figures, not an empty page


def test_a_picture_the_disk_refuses_leaves_no_truncated_file(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from ecrm.reporting.plotting import evaluation_figures

    def full_disk(fig, fname, **kwargs):
        with open(fname, "wb") as fh:
            fh.write(b"\x89PNG\r\n")  # the first bytes, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full_disk)
    T, P, S = _data()
    with pytest.raises(OSError, match="No space left"):
        evaluation_figures(tmp_path, T, P, S, hierarchy=DAG)
    assert list(tmp_path.iterdir()) == []
