"""Shared test configuration.

Hypothesis runs derandomised under CI (``CI`` set, as ``.ci/run`` is run) or with
``HYPOTHESIS_PROFILE=ci``: the same examples on every machine, so a red run can be replayed.
Locally it explores new examples each run (``HYPOTHESIS_PROFILE=dev``, the default there).

Fixtures shared by the test modules: :func:`subprocess_env`, :func:`run_python` and
:func:`ecrm_cmd`, for the tests that run the command line, the examples or a fresh
interpreter in a child process, and :func:`train_csv` / :func:`test_csv`, the example data
files of the command-line tests. The small hierarchies several modules share are
constants in ``tests/_shapes.py`` (parametrize lists and hypothesis strategies use them
at import time).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


SRC = Path(__file__).resolve().parents[1] / "src"


def _subprocess_env() -> dict:
    """The environment of a child Python: the tree under test first on its path, one BLAS
    thread (numpy and scipy each load OpenBLAS; two pools of two threads on a 2-core machine
    slow small eigendecompositions down many-fold), no start-up script, pictures to files."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("PYTHONSTARTUP", None)
    return env


@pytest.fixture
def subprocess_env() -> dict:
    """The environment for a child Python process on the tree under test."""
    return _subprocess_env()


@pytest.fixture
def run_python():
    """``run_python(*args, cwd=None, **kwargs)``: ``python ARGS`` (``-c CODE``, ``-m ecrm
    ...``, a script) in a child process on the tree under test, output captured as text."""
    def run(*args: str, cwd=None, timeout: float = 300, **kwargs):
        return subprocess.run([sys.executable, *args], cwd=cwd, env=_subprocess_env(),
                              capture_output=True, text=True, timeout=timeout, **kwargs)

    return run


@pytest.fixture(scope="session")
def ecrm_cmd():
    """``ecrm_cmd(*args, cwd)``: the real ``ecrm`` command (``python -m ecrm ARGS``) on the
    tree under test, output captured as bytes."""
    def run(*args: str, cwd, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ecrm", *args], cwd=cwd,
                              env=_subprocess_env(), capture_output=True, timeout=300, **kwargs)

    return run


@pytest.fixture(scope="session")
def train_csv() -> Path:
    """The example training file of the command-line tests (label paths, 300 rows)."""
    return SRC.parent / "examples" / "data" / "documents-train.csv"


@pytest.fixture(scope="session")
def test_csv() -> Path:
    """The example test file beside :func:`train_csv`."""
    return SRC.parent / "examples" / "data" / "documents-test.csv"


#: Fixtures that start a child process, or read the benchmark data sets: a test using one
#: is marked ``slow`` here, so that ``pytest -m "not slow"`` is the fast inner loop.
_SLOW_FIXTURES = {"ecrm_cmd", "run_python", "subprocess_env"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) \
                or item.get_closest_marker("data") is not None:
            item.add_marker(pytest.mark.slow)
