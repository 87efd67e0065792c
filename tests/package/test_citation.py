"""The licence and citation files agree with the package's metadata."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ecrm

ROOT = Path(__file__).resolve().parents[2]


def test_license_file_is_the_licence_pyproject_declares():
    declared = re.search(r'^license = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(),
                         re.MULTILINE).group(1)  # type: ignore[union-attr]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "BSD-3-Clause" and text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, the ecrm developers" in text


def test_citation_cites_this_version_and_the_paper():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == ecrm.__version__ and cff["license"] == "BSD-3-Clause"
    (paper,) = cff["references"]
    assert paper["title"] == "Structured Prediction by Conditional Risk Minimization"
    assert [a["family-names"] for a in paper["authors"]] == ["Goh", "Jaillet"]
    assert paper["year"] == 2016 and "ICML 2016" in paper["conference"]["name"]
    # the README cites the same paper
    assert re.search(r"Goh & Jaillet, \*Structured Prediction by Conditional Risk "
                     r"Minimization\*,\s+ICML 2016", (ROOT / "README.md").read_text())
