"""The checks ``make docs`` runs on the built site (``docs/sphinxext/site_checks.py``): links
to missing anchors and gallery examples without a figure of their own are found."""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(DOCS / "sphinxext"))

import site_checks  # noqa: E402


def test_missing_anchors_are_found(tmp_path):
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "ecrm.weights.forest.estimator.ForestECRM.html").write_text(
        '<dt id="ecrm.weights.forest.estimator.ForestECRM">ForestECRM</dt><p id="here">x</p>')
    (tmp_path / "_modules").mkdir()
    (tmp_path / "_modules" / "forest.html").write_text(
        '<a class="viewcode-back" href="../generated/ecrm.weights.forest.estimator.ForestECRM.html'
        '#ecrm.weights.forest.estimator.ForestECRM">[docs]</a>'
        '<a class="viewcode-back" href="../generated/ecrm.weights.forest.estimator.ForestECRM.html'
        '#ecrm.ForestECRM">[docs]</a>'
        '<a href="../missing.html#x">gone</a><a href="#top">top</a><span id="top"></span>'
        '<a href="https://example.org/page.html#frag">outside</a>')
    assert site_checks.missing_anchors(tmp_path) == [
        "_modules/forest.html: "
        "../generated/ecrm.weights.forest.estimator.ForestECRM.html#ecrm.ForestECRM",
        "_modules/forest.html: ../missing.html#x (no such page)"]


def test_no_missing_anchor_in_a_clean_site(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html#s-1">b</a><a href="#t">t</a>'
                                     '<h1 id="t">t</h1>')
    (tmp_path / "b.html").write_text('<section id="s-1"></section>')
    assert site_checks.missing_anchors(tmp_path) == []


def test_placeholder_thumbnails_are_found(tmp_path):
    examples, gallery = tmp_path / "examples", tmp_path / "auto_examples"
    (gallery / "images").mkdir(parents=True)
    examples.mkdir()
    for name in ("draws", "names_one", "prints_only", "make_data"):
        (examples / f"{name}.py").write_text('"""x"""\nprint(1)\n')
    (examples / "names_one.py").write_text(
        '"""x"""\n# sphinx_gallery_thumbnail_path = "_static/x.png"\nprint(1)\n')
    (gallery / "images" / "sphx_glr_draws_001.png").write_bytes(b"png")
    assert site_checks.placeholder_thumbnails(examples, gallery) == ["prints_only.py"]


def test_every_example_draws_a_figure_or_names_a_thumbnail():
    """Without a built site: each example script makes a matplotlib figure or names one."""
    for script in sorted((DOCS.parent / "examples").glob("*.py")):
        if script.name == "make_data.py":
            continue
        text = script.read_text()
        assert ("plt.subplots" in text or "plt.figure" in text
                or "sphinx_gallery_thumbnail_path" in text), script.name


def _tooltip(script: Path) -> str:
    """The first paragraph after an example's title: sphinx-gallery's tooltip, shown raw."""
    doc = script.read_text().split('"""', 2)[1]
    paragraphs = [p for p in doc.strip().split("\n\n") if p.strip()]
    return " ".join(paragraphs[1].split())  # paragraphs[0] is the title and its underline


def test_gallery_tooltips_are_plain_text():
    markup = ("``", ":class:", ":func:", ":meth:", ":math:", ":doc:", "~ecrm", "\\", "^", "_{",
              "*")
    for script in sorted((DOCS.parent / "examples").glob("*.py")):
        if script.name == "make_data.py":
            continue
        tip = _tooltip(script)
        assert 20 < len(tip) < 300, (script.name, tip)
        assert not [m for m in markup if m in tip], (script.name, tip)
