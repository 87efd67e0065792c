"""Sphinx configuration of the ecrm documentation (``make docs``)."""

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))  # document the source tree, installed or not
sys.path.insert(0, str(HERE / "sphinxext"))
# the gallery runs every example at build time: one BLAS thread each (2-core machines)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import ecrm  # noqa: E402

project = "ecrm"
author = "the ecrm developers"
copyright = "the ecrm developers"
version = release = ecrm.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "local_mathjax",  # sphinx.ext.mathjax with MathJax copied into the site (offline maths)
    "results_table",  # tables of docs/results/ rendered from the JSON the commands write
    "api_summary",  # the API page's overview generated from each module's __all__
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "site_checks",  # when the build ends: no link to a missing anchor, no placeholder thumbnail
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
default_role = "literal"

# -- API reference: autosummary stubs from each public module's __all__ -------------------
autosummary_generate = True
autosummary_ignore_module_all = False  # a module page lists exactly its __all__
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's type lines say it; signatures stay readable
numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def _api_modules() -> list[str]:
    """The submodules that have a page of their own: the ``autosummary`` list of api.rst."""
    text = (HERE / "api.rst").read_text()
    block = text.split(".. autosummary::", 1)[1].split("\n\n", 2)[1]
    return [line.strip() for line in block.splitlines() if line.strip() not in ("", "ecrm")]


def _documented_elsewhere() -> dict:
    """Top-level names of ``ecrm`` that re-export a name of a submodule with a page of its
    own: the ``ecrm`` page links to the submodule's page instead of documenting the object
    twice (twice documented, the source pages' back-links would point at a missing anchor)."""
    import importlib

    out = {}
    for name in ecrm.__all__:
        module = getattr(getattr(ecrm, name), "__module__", "") or ""
        for public in _api_modules():
            if ((module == public or module.startswith(public + "."))
                    and name in getattr(importlib.import_module(public), "__all__", ())):
                out[name] = f"{public}.{name}"
                break
    return out


autosummary_context = {"documented_elsewhere": {"ecrm": _documented_elsewhere()}}

# -- gallery: every examples/*.py runs at build time and its figures are shown ------------
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",  # execute them all (each takes a few seconds)
    "ignore_pattern": r"(__init__|make_data)\.py$",
    "within_subsection_order": "gallery_order.FiguresFirst",  # plot_* scripts first
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "min_reported_time": 1,
    "show_memory": False,
    "show_signature": False,
    # "Examples using ..." under each class and function of the API pages
    "doc_module": ("ecrm",),
    "backreferences_dir": "generated/backreferences",
}

# -- HTML -----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"ecrm {release}"
html_static_path = ["_static"]
html_css_files = ["ecrm.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False


# -- docstrings: two rST pitfalls fixed on the way in, not in the source ----------------------
_TYPE_LINE = re.compile(r"^(\s*[A-Za-z_][\w, *]* : )(.*)$")
_TRAILING_UNDERSCORE = re.compile(r"(?<![`\w\\])([A-Za-z]\w*)_(?![\w`])")


def _tidy_docstring(app, what, name, obj, options, lines):
    """Join a numpydoc type line continued by a backslash (raw docstrings keep the backslash)
    and escape fitted-attribute names such as ``loo_rows_`` in type lines, which rST would
    otherwise read as hyperlink references."""
    i = 0
    while i < len(lines) - 1:
        if _TYPE_LINE.match(lines[i]) and lines[i].endswith("\\"):
            lines[i] = lines[i][:-1] + lines[i + 1].lstrip()
            del lines[i + 1]
        else:
            i += 1
    for i, line in enumerate(lines):
        m = _TYPE_LINE.match(line)
        if m and "``" not in m.group(2):
            lines[i] = m.group(1) + _TRAILING_UNDERSCORE.sub(r"\1\\_", m.group(2))


def _skip_sklearn_members(app, what, name, obj, skip, options):
    """Leave out members inherited from scikit-learn's mixins (get_params, set_output, ...):
    their docstrings point into scikit-learn's own documentation."""
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and module.startswith("sklearn"):
        return True
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _tidy_docstring, priority=400)  # before numpydoc
    app.connect("autodoc-skip-member", _skip_sklearn_members)
