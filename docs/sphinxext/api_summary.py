"""The API page's overview, generated from the package: no hand-written table to drift.

``.. api-summary:: ecrm ecrm.losses ...`` renders, for each module named, its docstring's
summary and a table of the names in its ``__all__``, each linked to its documentation with
the summary line of its docstring (a constant: its type). A top-level name of ``ecrm`` that
another module's page documents (``autosummary_context["documented_elsewhere"]`` in
``conf.py``) links there.
"""

from __future__ import annotations

import importlib
import inspect


def public_names(module_name: str) -> list[tuple[str, object]]:
    """The names of a module's ``__all__`` with their objects, in the module's order."""
    module = importlib.import_module(module_name)
    return [(name, getattr(module, name)) for name in module.__all__]


def _kind(obj) -> str | None:
    """The role that links to ``obj``'s page (None: a constant, which has no page)."""
    if inspect.ismodule(obj):
        return "mod"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "func"
    return None


def _directive():
    from rst_table import list_table, parse
    from sphinx.ext.autosummary import extract_summary
    from sphinx.util.docutils import SphinxDirective

    class ApiSummary(SphinxDirective):
        """``.. api-summary:: MODULE [MODULE ...]``: see the module's docstring."""

        required_arguments = 1
        optional_arguments = 100
        has_content = False

        def _summary(self, obj) -> str:
            doc = inspect.getdoc(obj) or ""
            lines = doc.splitlines()
            return extract_summary(lines, self.state.document.settings) if lines else ""

        def _link(self, module_name: str, name: str, obj) -> str:
            kind = _kind(obj)
            if kind is None:
                return f"``{name}``"
            if kind == "mod":
                return f":mod:`{obj.__name__}`"
            elsewhere = (self.config.autosummary_context.get("documented_elsewhere", {})
                         .get(module_name, {}))
            return f":{kind}:`{name} <{elsewhere.get(name, f'{module_name}.{name}')}>`"

        def run(self):
            lines = []
            for module_name in self.arguments:
                module = importlib.import_module(module_name)
                rows = [[self._link(module_name, name, obj),
                         self._summary(obj) if _kind(obj) is not None
                         else f"a constant (``{type(obj).__name__}``)"]
                        for name, obj in public_names(module_name)]
                lines += [f":mod:`{module_name}`: {self._summary(module)}", ""]
                lines += list_table(rows, widths="30 70")
            return parse(self, lines)

    return ApiSummary


def setup(app):
    app.add_directive("api-summary", _directive())
    return {"parallel_read_safe": True, "parallel_write_safe": True}
