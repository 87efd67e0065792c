"""The README's usage example and the demo command run as a user would run them; option checks."""

import re
import sys
from pathlib import Path

import pytest

from _ids import named
from ecrm.cli import main
from ecrm.datasets.synthetic import make_hmc
from ecrm.experiments.cache import InMemoryCache

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_usage_example_runs(capsys):
    text = README.read_text()
    assert text.startswith("# ecrm\n\n```sh\nmake run"), "README must open with the two commands"
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 12
    exec(compile(code, "README.md", "exec"), {})
    assert "sport" in capsys.readouterr().out


def test_demo_prints_a_table(capsys):
    assert main(["demo", "--n-train", "120", "--n-test", "80"]) == 0
    out = capsys.readouterr().out
    for row in ["ECRM (trained for Hamming)", "ECRM (trained for hierarchical)", "BR-SVM",
                "empty label set", "Predicted label names", "true round/", "Oracle: the exact "
                "tree programme", "same answers on 50 instances: True"]:
        assert row in out


@pytest.mark.parametrize("kwargs, match", named([
    ({"n_samples": 0}, "n_samples must be an integer >= 1; got 0"),
    ({"n_labels": -5}, "n_labels must be an integer >= 1; got -5"),
    ({"noise": float("nan")}, r"noise must be a real number in \[0, inf\); got nan"),
]))
def test_make_hmc_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_hmc(**{"n_samples": 10, **kwargs})


def test_synthetic_labels_are_consistent_and_not_trivial():
    X, Y, h = make_hmc(500, n_labels=25, random_state=1)
    assert X.shape == (500, 10) and Y.shape == (500, 25)
    assert h.is_consistent(Y).all()
    assert 0.05 < Y.mean() < 0.6


@pytest.mark.parametrize("argv, message", named([
    (["--n-train", "-5"], "--n-train must be an integer >= 2; got -5"),
    (["--n-train", "1"], "--n-train must be an integer >= 2; got 1"),
    (["--n-train", "2.5"], "--n-train must be an integer >= 2; got '2.5'"),
    (["--n-test", "0"], "--n-test must be an integer >= 1; got 0"),
    (["--noise", "-1"], "--noise must be a real number in [0, inf); got -1"),
    (["--noise", "loud"], "--noise must be a real number in [0, inf); got 'loud'"),
    (["--seed", "-1"], "--seed must be an integer in [0, 4294967295]; got -1"),
    (["--seed", str(2**32)], "--seed must be an integer in [0, 4294967295]; got 4294967296"),
]))
def test_demo_rejects_bad_options_at_parse_time(argv, message, capsys, monkeypatch):
    import ecrm.experiments.demo

    monkeypatch.setattr(ecrm.experiments.demo, "run", None)  # never reached
    with pytest.raises(SystemExit) as exit_:
        main(["demo", *argv])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err and not captured.out


def test_demo_accepts_the_smallest_sizes(capsys, monkeypatch):
    import ecrm.experiments.flow

    monkeypatch.setattr(ecrm.experiments.flow, "demo", lambda seed: "flow demo")
    assert main(["demo", "--n-train", "2", "--n-test", "1"]) == 0
    out = capsys.readouterr().out
    assert "13 labels" in out and "2 training and 1 test images" in out


def test_demo_refuses_more_images_than_the_digits(capsys):
    assert main(["demo", "--n-train", "1000", "--n-test", "1000"]) == 2
    captured = capsys.readouterr()
    assert "--n-train + --n-test must be at most 1797" in captured.err and not captured.out


def test_python_dash_m_ecrm_is_the_command(capsys, monkeypatch):
    import runpy

    import ecrm

    monkeypatch.setattr(sys, "argv", ["ecrm", "--version"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("ecrm", run_name="__main__")
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"ecrm {ecrm.__version__}"


def test_in_memory_cache_computes_each_argument_once():
    calls = []

    def double(x):
        calls.append(x)
        return 2 * x

    def triple(x):
        return 3 * x

    cache = InMemoryCache()
    cached = cache.cache(double)
    assert [cached(2), cached(2), cache.cache(double)(2), cached(3)] == [4, 4, 4, 6]
    assert calls == [2, 3]
    assert cache.cache(triple)(2) == 6  # same arguments, another function: not shared


@pytest.mark.slow  # a child Python
def test_version_and_help_import_nothing_heavy():
    # `ecrm --version` once took 2.4 s importing scikit-learn first
    import os
    import subprocess

    import ecrm

    src = str(Path(ecrm.__file__).resolve().parents[1])
    script = ("import sys\nfrom ecrm.cli import main\n"
              "for argv in (['--version'], ['--help'], ['reproduce', '--help']):\n"
              "    try:\n        main(argv)\n    except SystemExit as e:\n"
              "        assert e.code == 0, e.code\n"
              "heavy = sorted(m for m in ('numpy', 'scipy', 'sklearn', 'tqdm',"
              " 'ecrm.weights.kernel.estimator',"
              " 'ecrm.experiments.flow') if m in sys.modules)\n"
              "print('HEAVY', heavy)\n")
    proc = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=src),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout
    assert "ecrm 0." in proc.stdout and "reproduce one of the paper's experiments" in proc.stdout


def test_the_help_table_is_the_help_each_module_registers():
    from ecrm.cli import COMMANDS, EXPERIMENTS, build_parser

    parser = build_parser()  # every module imported
    top = next(a for a in parser._actions if a.dest == "command")
    helps = {a.dest: a.help for a in top._choices_actions}
    assert {k: v for k, (_, v) in COMMANDS.items()} == {k: helps[k] for k in COMMANDS}
    reproduce = top.choices["reproduce"]
    sub = next(a for a in reproduce._actions if a.dest == "experiment")
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert {k: v for k, (_, v) in EXPERIMENTS.items()} == helps


def test_data_format_choices_match_the_readers():
    from ecrm.commands._options import FORMATS
    from ecrm.datasets.formats import FORMATS as READERS

    assert FORMATS == READERS


def test_unknown_command_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fitt", "x.csv"])
    assert exit_.value.code == 2 and "invalid choice: 'fitt'" in capsys.readouterr().err
