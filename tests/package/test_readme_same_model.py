"""One model from either door: the README's command line and its "same in Python" block.

Both blocks are read from README.md and run as written (the CLI one through the real
``ecrm`` entry point, ``python -m ecrm`` in a child process), in a directory holding a copy
of ``examples/data``; the chosen mixture of the kernel and the forest, the kernel's alpha,
gamma and intercept and the forest's settings must agree.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import ecrm

ROOT = Path(__file__).resolve().parents[2]


def _readme_blocks() -> tuple[list[str], str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    fit_line = re.search(r"^ecrm fit examples/data/documents-train\.csv .*$", text, re.M)
    python = re.search(r"The same in Python.*?```python\n(.*?)```", text, re.S)
    assert fit_line is not None and python is not None, "README blocks not found"
    return shlex.split(fit_line.group(0))[1:], python.group(1)


def _chosen(path: Path) -> tuple:
    model = ecrm.load(path)
    kernel = model.kernel_estimator_
    return (model.mixture_, kernel.alpha_, kernel.kernel_params_["gamma"],
            kernel.fit_intercept_, model.forest_estimator_.best_params_)


def test_readme_python_and_cli_choose_the_same_model(tmp_path, run_python):
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "examples" / "data")
    cli_args, python_block = _readme_blocks()
    assert "-o" in cli_args and cli_args[cli_args.index("-o") + 1] == "model.ecrm"
    cli_dir, py_dir = tmp_path / "cli", tmp_path / "py"
    for d in (cli_dir, py_dir):
        d.mkdir()
        (d / "examples").symlink_to(tmp_path / "examples")
    cli = run_python("-m", "ecrm", *cli_args, cwd=cli_dir)
    assert cli.returncode == 0, cli.stderr
    py = run_python("-c", python_block, cwd=py_dir)
    assert py.returncode == 0, py.stderr
    from_cli, from_python = _chosen(cli_dir / "model.ecrm"), _chosen(py_dir / "model.ecrm")
    assert from_cli == from_python
    # the CLI's summary line names the same choice
    share, alpha, gamma, intercept, _ = from_cli
    assert f"kernel share {share:g}" in cli.stdout and f"alpha={alpha:g}" in cli.stdout
    assert f"gamma={gamma:g}" in cli.stdout and f"intercept={intercept}" in cli.stdout
