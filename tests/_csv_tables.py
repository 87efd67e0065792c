"""Reading and writing the small CSV tables the command-line tests make, and the one error
line of a refused command."""

import csv
from pathlib import Path


def read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def write_rows(path: Path, rows, delimiter: str = ",") -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return path


def error_line(proc) -> str:
    """The one ``ecrm: error:`` line of a refused command (status 2, no traceback)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert b"Traceback" not in proc.stderr
    lines = [v for v in proc.stderr.decode().splitlines() if v.startswith("ecrm: error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]
