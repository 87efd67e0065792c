"""The docs render maths from a MathJax inside the built site, not from a CDN.

A one-page-and-a-subpage Sphinx build with the docs' own extension (``docs/sphinxext/
local_mathjax.py``, as ``docs/conf.py`` loads it): every page's MathJax script is the site's
``_static/mathjax`` copy (relative to the page), the file and its fonts are there, and no
script is fetched from the network. Needs the ``docs`` extra (Sphinx, django-static-mathjax).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path):
    pytest.importorskip("sphinx")
    if importlib.util.find_spec("mathjax") is None:
        pytest.skip("django-static-mathjax (the docs extra) is not installed")
    from sphinx.cmd.build import build_main

    src = tmp_path / "src"
    (src / "guide").mkdir(parents=True)
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(DOCS / 'sphinxext')!r})\n"
                                 "extensions = ['local_mathjax']\nproject = 'maths'\n")
    (src / "index.rst").write_text("Maths\n=====\n\nInline :math:`\\lambda m`.\n\n"
                                   ".. math:: \\min_y \\sum_i \\alpha_i(x) L(y, y_i)\n\n"
                                   ".. toctree::\n\n   guide/page\n")
    (src / "guide" / "page.rst").write_text("Page\n====\n\n:math:`x^2` below the root.\n")
    out = tmp_path / "html"
    assert build_main(["-W", "-q", "-b", "html", str(src), str(out)]) == 0
    return out


def _scripts(html: str) -> list[str]:
    return re.findall(r'<script[^>]*\bsrc="([^"]+)"', html)


def test_the_pages_load_mathjax_from_the_site(site):
    for page, prefix in [("index.html", ""), ("guide/page.html", "../")]:
        scripts = _scripts((site / page).read_text())
        assert f"{prefix}_static/mathjax/tex-mml-chtml.js" in scripts, scripts
        assert not [s for s in scripts if re.match(r"(https?:)?//", s)], scripts
    component = site / "_static" / "mathjax" / "tex-mml-chtml.js"
    assert component.stat().st_size > 500_000  # the real build, not a stub
    assert list((site / "_static" / "mathjax" / "output" / "chtml" / "fonts").rglob("*.woff"))
    assert (site / "_static" / "mathjax" / "input" / "tex" / "extensions").is_dir()
    assert not (site / "_static" / "mathjax" / "tex-svg-full.js").exists()


def test_the_docs_conf_uses_the_local_mathjax():
    conf = (DOCS / "conf.py").read_text()
    assert '"local_mathjax"' in conf and '"sphinx.ext.mathjax"' not in conf
    assert "mathjax_path" not in conf  # set by the extension, to the copy it makes


def test_a_built_site_loads_the_local_mathjax():
    # the site `make docs` built, when there is one: the method's page and every page with maths
    site = DOCS / "_build" / "html"
    if not (site / "guide" / "method.html").is_file():
        pytest.skip("no built site (make docs)")
    pages = [p for p in site.rglob("*.html") if 'class="math' in p.read_text()]
    assert site / "guide" / "method.html" in pages
    for page in pages:
        prefix = "../" * (len(page.relative_to(site).parts) - 1)
        scripts = _scripts(page.read_text())
        paths = [s.split("?", 1)[0] for s in scripts]  # Sphinx may add ``?v=<digest>``
        assert f"{prefix}_static/mathjax/tex-mml-chtml.js" in paths, page
        assert not [s for s in scripts if "mathjax" in s.lower() and "//" in s], page
    assert (site / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()


def test_the_maths_renders_with_the_network_off(site, tmp_path):
    """Headless Chromium, every connection refused (a proxy on a closed port, no name
    resolution), renders the page's TeX into MathJax's output elements; the screenshot is
    kept beside the page for a person to look at."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no headless Chromium (Debian's chromium package) on this machine")
    offline = ["--headless", "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9",
               "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=20000",
               "--allow-file-access-from-files", f"--user-data-dir={tmp_path / 'profile'}"]
    page = (site / "index.html").as_uri()
    dom = subprocess.run([browser, *offline, "--dump-dom", page], capture_output=True,
                         text=True, timeout=120).stdout
    assert dom.count("<mjx-container") == 2, dom[-2000:]  # the inline and the display formula
    assert "\\lambda" not in re.sub(r"<[^>]+>", "", dom.split("<body", 1)[1])  # no raw TeX
    shot = site / "maths.png"
    subprocess.run([browser, *offline, "--window-size=900,500", f"--screenshot={shot}", page],
                   capture_output=True, timeout=120)
    assert shot.stat().st_size > 5_000
