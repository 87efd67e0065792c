"""Tables of measured results rendered from the JSON files the commands write.

The results pages hold no hand-copied numbers: each table is a ``results-table`` directive
naming one or more JSON files under ``docs/results/data`` and, one line per column, which
records fill it and which field they show::

    .. results-table:: data/hmc_table1.json
       :rows: dataset
       :row-header: data set
       :best: min

       ECRM   | method=ECRM protocol=paper trained_for=hamming | hamming | .3f | best
       BR-SVM | method=BR-SVM trained_for=hamming                 | hamming | .3f | best

A file's records are a list of flat dictionaries, as ``ecrm reproduce hmc --json`` and
``ecrm reproduce flow --json`` write them; a record with a ``rows`` list (``ecrm reproduce
ranking --json``: one record per data set) stands for its rows, each inheriting the record's
scalar fields (the records sit beside their provenance: see below). A column line is
``header | selector | field | format [| best]``:

* the selector is ``key=value`` pairs (all must match; values compared as text; quote a
  value with spaces: ``method="paper ECRM"``; ``_file=NAME`` selects the records of the
  file ``NAME.json``, when two runs have the same fields);
* the field is a record key, a dotted path into a nested one (``params.C``), or ``mean+-std``
  (two fields shown as ``mean +- std``);
* the format is a Python format specification (``.3f``, ``,``, ``.1%``), ``time`` (a number
  of seconds shown in s, ms or us), or empty for the value as it is;
* ``best`` marks the columns among which each row's best value (``:best: min`` or ``max``,
  as displayed, ties included) is set in bold.

The table's rows are the values of the ``:rows:`` key (or keys, separated by spaces) in
the order the files first give them (with ``:rows-of: FILE``, those of that file only); a
cell no record fills shows ``:missing:`` (default ``-``). A column that no record
fills, a file that does not load, or a malformed line stops the build with the reason.

**Provenance.** A file of the results pages is an object ``{"provenance": {...}, "records":
[...]}``: the records as the command wrote them, and where they come from (a bare list of
records loads too, as the commands write it, but a table will not show it). The provenance
holds ``command`` (the command line, or a list of them), ``commit`` (of the code run),
``date`` (of the run) and ``machine``, each a text (``"not recorded"`` where it is not
known), and optionally ``notes`` (the conditions of the run, such as the load); a file of
published numbers holds ``source`` (the publication) instead of the four. Under each table
the directive prints one provenance line per file; a file without provenance, or with a
field missing or misspelt, stops the build. Run as a script, this module gives a command's
records their provenance (``python docs/sphinxext/results_table.py --help``).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

MISSING = "-"


class ResultsTableError(ValueError):
    """A ``results-table`` directive whose files or column lines do not give a table."""


#: the fields of a run's provenance, each required; ``notes`` is optional
RUN_FIELDS = ("command", "commit", "date", "machine")
NOT_RECORDED = "not recorded"


def check_provenance(provenance, path) -> dict:
    """``provenance`` if it names its run (``command``, ``commit``, ``date``, ``machine``) or
    its publication (``source``), each a non-empty text; otherwise the reason, naming ``path``."""
    name = Path(path).name
    if not isinstance(provenance, dict):
        raise ResultsTableError(f"{name}: no provenance: write the file as "
                                '{"provenance": {"command": ..., "commit": ..., "date": ..., '
                                '"machine": ...}, "records": [...]}')
    required = ("source",) if "source" in provenance else RUN_FIELDS
    unknown = set(provenance) - set(RUN_FIELDS) - {"source", "notes"}
    if unknown:
        raise ResultsTableError(f"{name}: unknown provenance field(s) {sorted(unknown)}; "
                                f"expected {', '.join(RUN_FIELDS)} (or source) and notes")
    for field in required + tuple(f for f in ("notes",) if f in provenance):
        value = provenance.get(field)
        texts = value if field == "command" and isinstance(value, list) else [value]
        if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
            raise ResultsTableError(f"{name}: provenance field {field!r} must be a non-empty "
                                    f"text (write {NOT_RECORDED!r} if it is not known), "
                                    f"not {value!r}")
    return provenance


def load_file(path) -> tuple[dict | None, list[dict]]:
    """A results file's provenance (``None`` for a bare list of records, as the commands'
    ``--json`` writes it) and its records."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ResultsTableError(f"cannot read results file {path}: {exc}") from exc
    provenance = None
    if isinstance(data, dict):
        if set(data) != {"provenance", "records"}:
            raise ResultsTableError(f"{path}: expected the keys 'provenance' and 'records', "
                                    f"not {sorted(data)}")
        provenance, data = check_provenance(data["provenance"], path), data["records"]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ResultsTableError(f"{path}: expected a JSON list of records (objects)")
    return provenance, data


def load_records(paths) -> list[dict]:
    """The records of the JSON files, in order, a record's ``rows`` flattened into it; each
    record's ``_file`` is its file's name without ``.json`` (a selector can name the run)."""
    records = []
    for path in paths:
        origin = {"_file": Path(path).stem}
        for record in load_file(path)[1]:
            if isinstance(record.get("rows"), list):
                scalars = {k: v for k, v in record.items() if not isinstance(v, (list, dict))}
                records.extend({**origin, **scalars, **row} for row in record["rows"])
            else:
                records.append({**origin, **record})
    return records


def provenance_line(path) -> str:
    """The rST line under a table that says where the records of ``path`` come from."""
    provenance = check_provenance(load_file(path)[0], path)
    name = f"``{Path(path).name}``"
    if "source" in provenance:
        return f"{name}: published numbers: {provenance['source']}."
    commands = provenance["command"]
    commands = commands if isinstance(commands, list) else [commands]
    shown = " and ".join(f"``{c}``" if c != NOT_RECORDED else c for c in commands)
    notes = f"; {provenance['notes']}" if "notes" in provenance else ""
    return (f"{name}: command {shown}; commit {provenance['commit']}; "
            f"date {provenance['date']}; machine {provenance['machine']}{notes}.")


def parse_column(line: str) -> dict:
    """One column line: ``header | key=value ... | field | format [| best]``."""
    parts = [p.strip() for p in line.split("|")]
    if len(parts) not in (4, 5) or (len(parts) == 5 and parts[4] != "best"):
        raise ResultsTableError(f"column line {line!r}: expected "
                                "'header | key=value ... | field | format [| best]'")
    header, selector, field, spec = parts[:4]
    select = {}
    try:
        pairs = shlex.split(selector)
    except ValueError as exc:
        raise ResultsTableError(f"column {header!r}: selector {selector!r}: {exc}") from exc
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ResultsTableError(f"column {header!r}: selector item {pair!r} is not key=value")
        select[key] = value
    if not field:
        raise ResultsTableError(f"column {header!r}: no field")
    return {"header": header, "select": select, "field": field, "format": spec,
            "best": len(parts) == 5}


def _get(record: dict, path: str):
    value = record
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(value, spec: str) -> str:
    """``spec`` applied to a number (``time``: seconds in s, ms or us, 4 digits)."""
    if not spec or not _number(value):
        return str(value)
    if spec == "time":
        scale, unit = next(((f, u) for f, u in ((1.0, "s"), (1e-3, "ms"))
                            if abs(value) >= f), (1e-6, "us"))
        return f"{value / scale:.4g} {unit}"
    return format(value, spec)


def _cell(record: dict, column: dict) -> tuple[str, float | None] | None:
    """The displayed text of a column's field in a record and the number ranked for bold
    (as displayed, so that values shown equal are equally best)."""
    mean, sep, spread = column["field"].partition("+-")
    value = _get(record, mean)
    if value is None:
        return None
    text = _show(value, column["format"])
    if sep:
        other = _get(record, spread)
        if other is None:
            return None
        text += " +- " + _show(other, column["format"])
    rank = None
    if _number(value):
        try:
            rank = (float(value) if column["format"] in ("", "time")
                    else float(_show(value, column["format"]).replace(",", "")))
        except ValueError:  # a format that does not give a plain number, such as "%"
            rank = float(value)
    return text, rank


def _matches(record: dict, select: dict) -> bool:
    return all(key in record and str(record[key]) == value for key, value in select.items())


def _row_key(record: dict, keys: list[str]) -> str:
    return ", ".join(str(record[k]) for k in keys)


def build_table(records: list[dict], columns: list[dict], rows_key: str,
                best: str | None = None, missing: str = MISSING,
                rows_of: str | None = None) -> list[list[str]]:
    """The table's body: one list of cell texts per value of ``rows_key`` (first the key;
    several keys separated by spaces give rows such as ``pheno_GO, 30%``), the values of
    the file ``rows_of`` only if given."""
    if best not in (None, "min", "max"):
        raise ResultsTableError(f":best: must be min or max, not {best!r}")
    row_keys = rows_key.split()
    chosen = [[r for r in records if _matches(r, c["select"]) and all(k in r for k in row_keys)]
              for c in columns]
    keys = list(dict.fromkeys(_row_key(r, row_keys) for recs in chosen for r in recs
                              if rows_of is None or r.get("_file") == rows_of))
    if not keys:
        raise ResultsTableError(f"no record has the row key {rows_key!r} and a column's fields")
    body, filled = [], [False] * len(columns)
    for key in keys:
        cells = []
        for j, (column, recs) in enumerate(zip(columns, chosen, strict=True)):
            hits = [r for r in recs if _row_key(r, row_keys) == key]
            if len(hits) > 1:
                raise ResultsTableError(f"column {column['header']!r}, row {key!r}: "
                                        f"{len(hits)} records match; make the selector narrower")
            cells.append(_cell(hits[0], column) if hits else None)
            filled[j] = filled[j] or cells[-1] is not None
        ranked = [c[1] for c, col in zip(cells, columns, strict=True)
                  if col["best"] and c is not None and c[1] is not None]
        top = (min if best == "min" else max)(ranked) if best and ranked else None
        body.append([key] + [missing if c is None else
                             (f"**{c[0]}**" if top is not None and col["best"] and c[1] == top
                              else c[0]) for c, col in zip(cells, columns, strict=True)])
    empty = [c["header"] for c, f in zip(columns, filled, strict=True) if not f]
    if empty:
        raise ResultsTableError(f"no record fills the column(s) {', '.join(map(repr, empty))}")
    return body


def _directive():
    from docutils.parsers.rst import directives
    from rst_table import list_table, parse
    from sphinx.util.docutils import SphinxDirective

    class ResultsTable(SphinxDirective):
        """``.. results-table:: FILE [FILE ...]``: see the module's docstring."""

        required_arguments = 1
        optional_arguments = 10
        has_content = True
        option_spec = {"rows": directives.unchanged_required,
                       "row-header": directives.unchanged,
                       "best": directives.unchanged,
                       "missing": directives.unchanged,
                       "rows-of": directives.unchanged}

        def run(self):
            paths = []
            for name in self.arguments:
                rel, absolute = self.env.relfn2path(name, self.env.docname)
                self.env.note_dependency(rel)
                paths.append(absolute)
            rows_key = self.options.get("rows", "dataset")
            try:
                columns = [parse_column(line) for line in self.content if line.strip()]
                if not columns:
                    raise ResultsTableError("no column lines")
                body = build_table(load_records(paths), columns, rows_key,
                                   self.options.get("best"),
                                   self.options.get("missing", MISSING),
                                   self.options.get("rows-of"))
                lines = [provenance_line(path) for path in paths]
            except ResultsTableError as exc:
                raise self.error(f"results-table {' '.join(self.arguments)}: {exc}") from exc
            header = [self.options.get("row-header", rows_key)] + [c["header"] for c in columns]
            source = [".. rst-class:: results-provenance", ""]
            source += ["| " + line for line in lines] + [""]
            return parse(self, list_table([header] + body, header=True) + source)

    return ResultsTable


def setup(app):
    app.add_directive("results-table", _directive())
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _this_commit() -> str:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True, cwd=Path(__file__).parent)
    except (OSError, subprocess.CalledProcessError):
        return NOT_RECORDED
    return out.stdout.strip() or NOT_RECORDED


def _this_machine() -> str:
    import os
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        names = [line.split(":", 1)[1].strip() for line in
                 Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def main(argv=None) -> None:
    """``python docs/sphinxext/results_table.py RUN.json [RUN2.json ...] OUT.json --command
    "..."``: the records the commands wrote to the RUN files, joined, with their provenance,
    written to OUT.json (``--drop FIELD``: without that field); the commit, the date and the
    machine default to this checkout's, today and this machine."""
    import argparse
    import datetime

    parser = argparse.ArgumentParser(description=main.__doc__.split(": ", 1)[1])
    parser.add_argument("records", nargs="+",
                        help="the JSON file(s) the command(s) wrote (lists of records, "
                             "joined in the order given)")
    parser.add_argument("out", help="the results file to write, under docs/results/data")
    parser.add_argument("--command", action="append", required=True,
                        help="the command line that wrote the records (repeat for several)")
    parser.add_argument("--commit", help="default: this checkout's commit")
    parser.add_argument("--date", help="default: today (YYYY-MM-DD)")
    parser.add_argument("--machine", help="default: this machine's CPU, CPUs and Python")
    parser.add_argument("--notes", help="the conditions of the run, such as the load")
    parser.add_argument("--drop", action="append", default=[], metavar="FIELD",
                        help="a field left out of every record and row, such as the per-fold "
                             "params the tables do not show (repeat for several)")
    args = parser.parse_args(argv)
    try:
        records = [record for path in args.records for record in load_file(path)[1]]
        for record in records:
            for item in [record, *record.get("rows", [])]:
                for field in args.drop:
                    item.pop(field, None)
        provenance = {"command": args.command[0] if len(args.command) == 1 else args.command,
                      "commit": args.commit or _this_commit(),
                      "date": args.date or datetime.date.today().isoformat(),
                      "machine": args.machine or _this_machine()}
        if args.notes:
            provenance["notes"] = args.notes
        check_provenance(provenance, args.out)
    except ResultsTableError as exc:
        parser.error(str(exc))
    text = json.dumps({"provenance": provenance, "records": records}, indent=1,
                      ensure_ascii=False)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
