"""What the local directives share: a table written as rST lines, parsed into the page."""

from __future__ import annotations


def _escape(cell: str) -> str:
    """A cell starting with a dash (``-``, ``-0.01``) is text, not a bullet list."""
    return "\\" + cell if cell.startswith("-") else cell


def list_table(rows, *, header: bool = False, widths: str | None = None) -> list[str]:
    """The lines of a ``list-table`` of ``rows`` (lists of cell texts in rST)."""
    lines = [".. list-table::"]
    lines += ["   :header-rows: 1"] if header else []
    lines += [f"   :widths: {widths}"] if widths else []
    lines.append("")
    for row in rows:
        lines.append(f"   * - {_escape(row[0])}")
        lines.extend(f"     - {_escape(cell)}" for cell in row[1:])
    return lines + [""]


def parse(directive, lines: list[str]) -> list:
    """The nodes of rST ``lines`` parsed in the page of ``directive`` (a SphinxDirective)."""
    from docutils import nodes
    from docutils.statemachine import StringList

    container = nodes.container()
    directive.state.nested_parse(StringList(lines, source=directive.env.docname), 0, container)
    return container.children
