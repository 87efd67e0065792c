"""MathJax served by the built site itself: the pages render their maths with no network.

``sphinx.ext.mathjax`` loads MathJax from a CDN by default, so a site built and read offline
would show raw TeX. The ``docs`` extra installs ``django-static-mathjax``, which ships
MathJax 3's browser build as package data (no dependencies; the CDN's same files). This
extension copies that build into the HTML output's ``_static/mathjax`` and points
``mathjax_path`` there; Sphinx writes it relative to each page.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

#: The combined component the pages load (TeX and MathML input, HTML-CSS output), as the
#: CDN default of ``sphinx.ext.mathjax``.
COMPONENT = "tex-mml-chtml.js"
#: Where it lands, relative to ``_static``.
TARGET = "mathjax"


def mathjax_source() -> Path:
    """The folder of MathJax's browser build in the installed ``django-static-mathjax``."""
    spec = importlib.util.find_spec("mathjax")
    folder = (Path(spec.origin).parent / "static" / "mathjax" / "es5"
              if spec is not None and spec.origin else None)
    if folder is None or not (folder / COMPONENT).is_file():
        raise ExtensionError("the docs render maths with a local MathJax from the package "
                             "django-static-mathjax: install the docs extra "
                             "(pip install -e '.[docs]', as `make docs` does)")
    return folder


def _ignore(folder: str, names: list[str]) -> list[str]:
    """Leave out what the component never loads: the other combined builds and the Node.js
    parts (kept: the fonts, the TeX extensions it autoloads, the SVG output, the menu and the
    accessibility parts it loads on demand)."""
    if Path(folder).name != "es5":
        return []
    return [n for n in names if (n.endswith(".js") and n != COMPONENT) or n == "adaptors"]


def _set_path(app, config) -> None:
    mathjax_source()  # fail at the start, not after the pages are written
    config.mathjax_path = f"{TARGET}/{COMPONENT}"


def _copy(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / TARGET
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(mathjax_source(), target, ignore=_ignore)


def setup(app):
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", _set_path)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
