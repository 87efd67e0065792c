"""The documentation's generated tables: every table of the results pages is a ``results-table``
directive (none typed into a page), every results file carries its provenance and is shown by
some table, every table's files load and fill its columns, and the API page lists every name
of ``ecrm.__all__``."""

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(DOCS / "sphinxext"))

import api_summary  # noqa: E402
import results_table  # noqa: E402


def _directives(name: str):
    """(page, arguments, options, content lines) of every ``.. name::`` in the docs' pages."""
    for page in sorted(DOCS.rglob("*.rst")):
        if "_build" in page.parts or "auto_examples" in page.parts:
            continue
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if not line.startswith(f".. {name}::"):
                continue
            args = line.split("::", 1)[1].split()
            options, content = {}, []
            for body in lines[i + 1:]:
                if body and not body.startswith("   "):
                    break
                text = body.strip()
                if text.startswith(":") and not content:
                    key, _, value = text[1:].partition(":")
                    options[key] = value.strip()
                elif text:
                    content.append(text)
            yield page, args, options, content


TABLES = list(_directives("results-table"))


def _table_ids(tables):
    """``page:first-file`` of each table, ``#2``, ``#3``, ... after those of a page that show
    the same first file again."""
    ids, seen = [], Counter()
    for page, args, *_ in tables:
        name = f"{page.name}:{args[0]}"
        seen[name] += 1
        ids.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return ids


def test_the_results_pages_have_tables():
    pages = {page.relative_to(DOCS).as_posix() for page, *_ in TABLES}
    assert {"results/reproduction.rst", "results/benchmarks.rst"} <= pages


@pytest.mark.parametrize("page, args, options, content", TABLES,
                         ids=_table_ids(TABLES))
def test_results_table_builds(page, args, options, content):
    """The files load and every column is filled, as the directive requires at build time."""
    records = results_table.load_records([page.parent / a for a in args])
    columns = [results_table.parse_column(line) for line in content]
    assert columns
    body = results_table.build_table(records, columns, options.get("rows", "dataset"),
                                     options.get("best"))
    assert body and all(len(row) == len(columns) + 1 for row in body)


def test_every_results_file_is_shown_and_loads():
    used = {(page.parent / a).resolve() for page, args, *_ in TABLES for a in args}
    files = sorted((DOCS / "results" / "data").glob("*.json"))
    assert files
    for path in files:
        assert isinstance(results_table.load_records([path]), list), path.name
        assert path.resolve() in used, f"{path.name} is in no results table"


RESULTS_FILES = sorted((DOCS / "results" / "data").glob("*.json"))


@pytest.mark.parametrize("path", RESULTS_FILES, ids=[p.name for p in RESULTS_FILES])
def test_every_results_file_has_its_provenance(path):
    """Each file names its run (command, commit, date, machine, each a text, ``not recorded``
    where unknown) or, for published numbers, its source."""
    data = json.loads(path.read_text())
    assert isinstance(data, dict) and set(data) == {"provenance", "records"}, path.name
    provenance = data["provenance"]
    assert results_table.check_provenance(provenance, path) is provenance
    if "source" not in provenance:
        assert set(results_table.RUN_FIELDS) <= set(provenance), path.name
    line = results_table.provenance_line(path)
    assert line.startswith(f"``{path.name}``: ")
    for field in ("commit", "date", "machine"):
        assert field in line or "source" in provenance


def test_provenance_line_and_refusals(tmp_path):
    path = tmp_path / "run.json"
    records = [{"dataset": "a", "v": 1}]
    run = {"command": ["ecrm reproduce a", "ecrm reproduce b"], "commit": "abc1234",
           "date": "not recorded", "machine": "2 cores", "notes": "idle"}
    path.write_text(json.dumps({"provenance": run, "records": records}))
    assert results_table.load_records([path]) == [{"_file": "run", **records[0]}]
    assert results_table.provenance_line(path) == (
        "``run.json``: command ``ecrm reproduce a`` and ``ecrm reproduce b``; commit abc1234; "
        "date not recorded; machine 2 cores; idle.")
    path.write_text(json.dumps({"provenance": {"source": "the paper"}, "records": records}))
    assert results_table.provenance_line(path) == "``run.json``: published numbers: the paper."
    bad = [({**run, "commit": ""}, "'commit' must be a non-empty text"),
           ({k: v for k, v in run.items() if k != "date"}, "'date' must be"),
           ({**run, "machin": "x"}, "unknown provenance field"),
           ({**run, "command": []}, "'command' must be"),
           ("abc", "no provenance")]
    for provenance, message in bad:
        path.write_text(json.dumps({"provenance": provenance, "records": records}))
        with pytest.raises(results_table.ResultsTableError, match=message):
            results_table.load_records([path])
    path.write_text(json.dumps(records))  # a bare list, as ``--json`` writes it: no provenance
    assert results_table.load_records([path])[0]["v"] == 1
    with pytest.raises(results_table.ResultsTableError, match="run.json: no provenance"):
        results_table.provenance_line(path)
    path.write_text(json.dumps({"records": records}))
    with pytest.raises(results_table.ResultsTableError, match="'provenance' and 'records'"):
        results_table.load_records([path])


def test_the_script_gives_a_run_its_provenance(tmp_path):
    """``results_table.py RUN OUT --command ...`` writes the run's records with their
    provenance, the fields not given filled from this checkout and machine."""
    run, out = tmp_path / "run.json", tmp_path / "out.json"
    records = [{"dataset": "a", "rows": [{"method": "x", "tau_mean": 0.5}]}]
    run.write_text(json.dumps(records))
    results_table.main([str(run), str(out), "--command", "ecrm reproduce ranking --json r.json",
                        "--commit", "abc1234", "--date", "2026-01-02", "--machine", "m",
                        "--notes", "idle"])
    assert json.loads(out.read_text()) == {
        "provenance": {"command": "ecrm reproduce ranking --json r.json", "commit": "abc1234",
                       "date": "2026-01-02", "machine": "m", "notes": "idle"},
        "records": records}
    results_table.main([str(out), str(out), "--command", "a", "--command", "b"])
    provenance = json.loads(out.read_text())["provenance"]
    assert provenance["command"] == ["a", "b"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", provenance["date"])
    assert provenance["commit"] and "CPUs" in provenance["machine"]
    run.write_text("{not json")
    with pytest.raises(SystemExit):
        results_table.main([str(run), str(out), "--command", "a"])


def test_the_script_joins_runs_and_drops_fields(tmp_path):
    """Several runs' records are joined in the order given, and ``--drop`` leaves a field out
    of every record and row (the per-fold params a table does not show)."""
    first, second, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "out.json"
    first.write_text(json.dumps([{"dataset": "a", "params": 1,
                                  "rows": [{"method": "x", "tau_mean": 0.5, "params": [2]}]}]))
    second.write_text(json.dumps([{"dataset": "b", "rows": [{"method": "x", "tau_mean": 0.6}]}]))
    results_table.main([str(first), str(second), str(out), "--command", "a", "--command", "b",
                        "--drop", "params", "--commit", "c", "--date", "d", "--machine", "m"])
    assert json.loads(out.read_text())["records"] == [
        {"dataset": "a", "rows": [{"method": "x", "tau_mean": 0.5}]},
        {"dataset": "b", "rows": [{"method": "x", "tau_mean": 0.6}]}]


#: a line of a table typed into a page: a grid table's border, a simple table's border
_TABLE_BORDER = re.compile(r"^\s*(\+[-=]+)+\+\s*$|^\s*=+( +=+)+\s*$")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(\.\d+)?(?![\w.])")
_SHELL = {"sh", "bash", "console", "shell", "python", "pycon"}


def typed_tables(text: str) -> list[str]:
    """``line: what`` for each table typed into an rST page rather than rendered from data:
    a ``list-table``, ``csv-table`` or ``table`` directive, a grid or simple table, or a
    literal block (other than shell or Python code) with two or more lines of three or more
    numbers."""
    found, lines = [], text.splitlines()
    for i, line in enumerate(lines, 1):
        directive = re.match(r"\s*\.\. (list-table|csv-table|table)::", line)
        if directive:
            found.append(f"{i}: {directive.group(1)}")
        elif _TABLE_BORDER.match(line):
            found.append(f"{i}: a typed table")
        literal = re.match(r"\s*\.\. (?:code-block|code|sourcecode)::\s*(\S*)", line)
        if (literal and literal.group(1) not in _SHELL) or (
                line.rstrip().endswith("::") and not line.lstrip().startswith("..")):
            indent = len(line) - len(line.lstrip())
            block = []
            for body in lines[i:]:
                if body.strip() and len(body) - len(body.lstrip()) <= indent:
                    break
                block.append(body)
            if sum(len(_NUMBER.findall(b)) >= 3 for b in block) >= 2:
                found.append(f"{i}: numbers in a literal block")
    return found


RESULT_PAGES = sorted((DOCS / "results").glob("*.rst"))


@pytest.mark.parametrize("page", RESULT_PAGES, ids=[p.name for p in RESULT_PAGES])
def test_no_table_is_typed_into_the_results_pages(page):
    assert not typed_tables(page.read_text()), page.name


@pytest.mark.parametrize("text", [
    ".. list-table::\n   :header-rows: 1\n", "  .. csv-table:: x\n",
    "+-----+-----+\n| a   | 1   |\n+=====+=====+\n", "=====  =====\na      1\n=====  =====\n",
    ".. code-block:: text\n\n   iris 150 3 0.964\n   wine 178 3 0.963\n",
    "The table::\n\n   iris 150 3 0.964\n   wine 178 3 0.963\n"])
def test_typed_tables_are_found(text):
    assert typed_tables(text)


@pytest.mark.parametrize("text", [
    "Title\n=====\n", ".. code-block:: sh\n\n   bench --sizes 1,2,3 --m 4 5\n   a 1 2 3\n",
    "One line::\n\n   iris 150 3 0.964\n", ".. results-table:: data/x.json\n   :rows: m\n"])
def test_plain_text_is_not_a_typed_table(text):
    assert not typed_tables(text)


def test_rows_flattened_bold_and_missing(tmp_path):
    """A data set's ``rows`` inherit its fields; the best value as displayed is bold, ties
    included; a cell no record fills is ``-``."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps([
        {"dataset": "a", "n": 3, "rows": [{"method": "x", "tau": 0.12, "sd": 0.01},
                                          {"method": "y", "tau": 0.1249}]},
        {"dataset": "b", "method": "x", "tau": 0.3}]))
    records = results_table.load_records([path])
    assert records[0] == {"_file": "run", "dataset": "a", "n": 3, "method": "x", "tau": 0.12,
                          "sd": 0.01}
    columns = [results_table.parse_column("X | _file=run method=x | tau+-sd | .2f | best"),
               results_table.parse_column("Y | method=y | tau | .2f | best"),
               results_table.parse_column("n | method=x | n | ")]
    body = results_table.build_table(records, columns, "dataset", "max")
    assert body == [["a", "**0.12 +- 0.01**", "**0.12**", "3"], ["b", "-", "-", "-"]]
    body = results_table.build_table(records, columns[1:], "dataset", "min")
    assert body == [["a", "**0.12**", "3"], ["b", "-", "-"]]
    assert results_table.build_table(records, columns, "dataset", rows_of="run")[0][0] == "a"
    with pytest.raises(results_table.ResultsTableError, match="no record"):
        results_table.build_table(records, columns, "dataset", rows_of="other")


def test_time_format():
    shown = [results_table._show(v, "time") for v in (4e-7, 0.0021, 93.7, 1.5e-5)]
    assert shown == ["0.4 us", "2.1 ms", "93.7 s", "15 us"]


@pytest.mark.parametrize("line", ["A | method | f | .3f", "A | m=x | | .3f", "A | m=x | f",
                                  "A | m=x | f | .3f | worst"])
def test_malformed_column_lines_are_refused(line):
    with pytest.raises(results_table.ResultsTableError):
        results_table.parse_column(line)


def test_ambiguous_or_empty_columns_are_refused():
    records = [{"dataset": "a", "method": "x", "v": 1}, {"dataset": "a", "method": "x", "v": 2}]
    with pytest.raises(results_table.ResultsTableError, match="2 records match"):
        results_table.build_table(records, [results_table.parse_column("X | | v | ")],
                                  "dataset")
    with pytest.raises(results_table.ResultsTableError, match="no record fills"):
        results_table.build_table(records[:1], [results_table.parse_column("X | | v | "),
                                                results_table.parse_column("W | | w | ")],
                                  "dataset")


def test_api_page_lists_every_public_name():
    """The API page's overview is generated from ``__all__``: every name of ``ecrm.__all__``
    is in it, and it covers the same modules as the page's module list (the autosummary)."""
    import ecrm

    summaries = list(_directives("api-summary"))
    assert [p.name for p, *_ in summaries] == ["api.rst"]
    _, modules, _, _ = summaries[0]
    listed = {f"{module}.{name}" for module in modules
              for name, _ in api_summary.public_names(module)}
    assert {f"ecrm.{name}" for name in ecrm.__all__} <= listed
    (_, _, _, autosummary), = [d for d in _directives("autosummary") if d[0].name == "api.rst"]
    assert sorted(modules) == sorted(autosummary)


def _numbers(value):
    """Every number anywhere in a JSON value."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


def test_the_readme_results_come_from_the_data():
    """Each decimal number of the README's results table is a value of the results files of
    its benchmark, as rounded there, and of the data set it names (no number typed from
    memory)."""
    import re

    text = (DOCS.parent / "README.md").read_text()
    start = text.index("## Results")
    section = text[start:text.index("\n## ", start + 1)]
    table = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    files = {"hmc": "hmc_*.json", "flow": "flow_*.json", "partial-ranking": "partial_ranking*.json",
             "ranking": "ranking_*.json"}
    checked = 0
    for line in table[1:]:
        kind = next(k for k in files if f"reproduce {k}" in line or f"{k}_" in line
                    or (k == "hmc" and "ecrm-scores" in line))
        records = results_table.load_records(sorted((DOCS / "results" / "data").glob(files[kind])))
        values = [v for r in records for v in _numbers(r)]
        by_set = {}
        for r in records:
            by_set.setdefault(r.get("dataset"), []).extend(_numbers(r))
        names: list[str] = []
        for cell in line.strip("|").split("|")[2:]:
            numbers = re.findall(r"(?<![\w.^])\d+\.\d+", cell)
            sets = [n for n, _ in re.findall(r"\b(\w+) (\d+\.\d+)", cell) if n in by_set]
            if len(sets) == len(numbers) and sets:
                names = sets
            elif len(names) != len(numbers):  # the peers' cell lists the same sets in order
                names = []
            for k, number in enumerate(numbers):
                pool = by_set[names[k]] if names else values
                places = len(number.split(".")[1])
                assert any(round(v, places) == float(number) for v in pool), (number, line)
                checked += 1
    assert checked >= 15
