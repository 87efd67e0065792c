"""The documentation's generated tables: every results table's JSON files load and fill its
columns, and the API page lists every name of ``ecrm.__all__`` """

import json
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
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


def test_the_results_pages_have_tables():
    pages = {page.relative_to(DOCS).as_posix() for page, *_ in TABLES}
    assert {"results/reproduction.rst", "results/benchmarks.rst"} <= pages


@pytest.mark.parametrize("page, args, options, content", TABLES,
                         ids=[f"{p.name}:{a[0]}" for p, a, *_ in TABLES])
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
        assert isinstance(json.loads(path.read_text()), list), path.name
        assert path.resolve() in used, f"{path.name} is in no results table"


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
    files = {"hmc": "hmc_*.json", "flow": "flow_*.json", "ranking": "ranking_*.json"}
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
