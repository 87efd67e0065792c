"""The README's usage example and the demo command run as a user would run them."""

import re
from pathlib import Path

from ecrm.cli import main
from ecrm.datasets.synthetic import make_hmc

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_usage_example_runs(capsys):
    text = README.read_text()
    assert text.startswith("# ecrm\n\n```sh\nmake run"), "README must open with the two commands"
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 12
    exec(compile(code, "README.md", "exec"), {})
    assert "sport" in capsys.readouterr().out


def test_demo_prints_a_table(capsys):
    assert main(["demo", "--n-train", "120", "--n-test", "80", "--labels", "12"]) == 0
    out = capsys.readouterr().out
    for row in ["ECRM (trained for Hamming)", "ECRM (trained for hierarchical)", "BR-SVM",
                "empty label set"]:
        assert row in out


def test_synthetic_labels_are_consistent_and_not_trivial():
    X, Y, h = make_hmc(500, n_labels=25, random_state=1)
    assert X.shape == (500, 10) and Y.shape == (500, 25)
    assert h.is_consistent(Y).all()
    assert 0.05 < Y.mean() < 0.6
