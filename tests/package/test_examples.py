"""Smoke test: every script in examples/ runs to completion with its default (small) size."""

from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, tmp_path, run_python):
    proc = run_python(str(script), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, f"{script.name} failed:\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"{script.name} printed nothing"
