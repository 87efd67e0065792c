"""Checks of the built site, run when ``make docs`` finishes (a warning each, so ``-W`` fails):

* every link to an anchor of a page of the site (``page.html#anchor``, ``#anchor``) finds an
  element with that ``id`` (the source pages' ``[docs]`` back-links among them);
* every gallery example has a real thumbnail: it draws a figure, or its script names one
  with ``sphinx_gallery_thumbnail_path``; otherwise sphinx-gallery shows a placeholder.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import unquote

_LINK = re.compile(r'<a\s[^>]*?href="([^"#:?]*\.html)?#([^"]+)"')
_ID = re.compile(r'\b(?:id|name)="([^"]+)"')


def missing_anchors(html_dir: Path) -> list[str]:
    """``page: href`` for each link to an anchor that its target page does not define."""
    html_dir = Path(html_dir)
    ids: dict[Path, set[str]] = {}

    def anchors(page: Path) -> set[str]:
        if page not in ids:
            ids[page] = set(_ID.findall(page.read_text(encoding="utf-8", errors="replace")))
        return ids[page]

    found = []
    for page in sorted(html_dir.rglob("*.html")):
        rel = page.relative_to(html_dir).as_posix()
        if rel.startswith("_static/"):
            continue
        for target, anchor in _LINK.findall(page.read_text(encoding="utf-8", errors="replace")):
            dest = (page.parent / target).resolve() if target else page
            name = html.unescape(unquote(anchor))
            if not dest.is_file():
                found.append(f"{rel}: {target}#{name} (no such page)")
            elif name not in anchors(dest):
                found.append(f"{rel}: {target}#{name}")
    return found


def placeholder_thumbnails(examples_dir: Path, gallery_dir: Path,
                           ignore: str = r"(__init__|make_data)\.py$") -> list[str]:
    """The example scripts of ``examples_dir`` that neither drew a figure (no
    ``images/sphx_glr_<name>_001.png`` under ``gallery_dir``) nor name a thumbnail."""
    found = []
    for script in sorted(Path(examples_dir).glob("*.py")):
        if re.search(ignore, script.name):
            continue
        drew = (Path(gallery_dir) / "images" / f"sphx_glr_{script.stem}_001.png").is_file()
        named = "sphinx_gallery_thumbnail_path" in script.read_text(encoding="utf-8")
        if not (drew or named):
            found.append(script.name)
    return found


def _check(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for problem in missing_anchors(Path(app.outdir)):
        logger.warning("link to a missing anchor: %s", problem)
    conf = app.config.sphinx_gallery_conf
    gallery = Path(app.srcdir) / conf["gallery_dirs"]
    for script in placeholder_thumbnails(Path(conf["examples_dirs"]), gallery,
                                         conf.get("ignore_pattern", r"__init__\.py$")):
        logger.warning("gallery example %s has a placeholder thumbnail: draw a figure or "
                       "set sphinx_gallery_thumbnail_path", script)


def setup(app):
    app.connect("build-finished", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
