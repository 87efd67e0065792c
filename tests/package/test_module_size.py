"""No module of the package is over 500 lines: one concept per module, readable in one sitting."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "ecrm"
LIMIT = 500


def test_no_module_is_over_the_limit():
    sizes = {path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in sorted(SRC.rglob("*.py"))}
    assert len(sizes) > 100  # the scan sees the package
    over = {name: n for name, n in sizes.items() if n > LIMIT}
    assert over == {}, f"modules over {LIMIT} lines (split them by concept): {over}"
