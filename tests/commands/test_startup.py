"""What ``ecrm predict`` imports: its start-up is most of its time on a small file.

Deterministic checks of ``sys.modules`` in a fresh interpreter, not timings: a real
prediction from a model file loads the modules of that model's classes, never scikit-learn's
clustering, imputation or data-set packages (some 180 modules, pulled in by a module-level
import), nor plotting, Dask, or the estimators the file does not hold.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ecrm import ECRM, Hierarchy, save
from ecrm.losses import HierarchicalLoss

#: Modules no prediction needs: each would be imported by one module-level import.
HEAVY = ("matplotlib", "dask", "distributed", "sklearn.cluster", "sklearn.impute",
         "sklearn.datasets", "sklearn.linear_model", "sklearn.neighbors",
         "sklearn.decomposition", "sklearn.ensemble", "sklearn.tree", "sklearn.svm",
         "ecrm.weights.forest.estimator", "ecrm.estimators.joint", "ecrm.estimators.ssvm",
         "ecrm.datasets.arff", "ecrm.datasets.ranking", "ecrm.datasets.flows", "ecrm.spaces.flows",
         "ecrm.spaces.polytope", "ecrm.spaces.permutations", "ecrm.losses.continuous",
         "ecrm.losses.kendall", "ecrm.experiments", "ecrm.reporting.plotting",
         "ecrm.reporting.report", "ecrm.baselines", "ecrm.commands.fit")

_SCRIPT = """
import json, sys
from ecrm.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def _modules_after(run_python, *argv: str) -> set[str]:
    proc = run_python("-c", _SCRIPT, *argv)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == 0
    return set(out["modules"])


def _loaded(modules: set[str], names) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.mark.slow
@pytest.mark.parametrize("standardize", [False, True], ids=["bare", "pipeline"])
def test_predict_imports_nothing_it_does_not_use(tmp_path, run_python, standardize):
    h = Hierarchy([("a", "a1"), ("a", "a2"), ("b", "b1")])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    Y = h.to_matrix([["a1"] if x[0] > 0 else ["b1"] for x in X])
    model = ECRM(HierarchicalLoss(h), h, gamma=0.5)
    save(make_pipeline(StandardScaler(), model).fit(X, Y) if standardize else model.fit(X, Y),
         tmp_path / "model.ecrm")
    data = tmp_path / "data.csv"
    data.write_text("x0,x1,x2\n" + "".join(f"{a:.4f},{b:.4f},{c:.4f}\n" for a, b, c in X))
    modules = _modules_after(run_python, "predict", str(tmp_path / "model.ecrm"), str(data),
                             "-o", str(tmp_path / "p.csv"), "--quiet")
    assert (tmp_path / "p.csv").read_text().count("\n") == 31
    assert "ecrm.weights.kernel.estimator" in modules
    assert ("sklearn.pipeline" in modules) == standardize
    assert _loaded(modules, HEAVY) == []


@pytest.mark.slow
def test_predict_help_imports_no_numpy(run_python):
    # the parser of `ecrm predict` is built from the standard library alone
    script = _SCRIPT.replace("status = main(sys.argv[1:])",
                             "status = 0\ntry:\n    main(sys.argv[1:])\n"
                             "except SystemExit as e:\n    status = e.code")
    proc = run_python("-c", script, "predict", "--help")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == 0 and "usage: ecrm predict" in proc.stdout
    assert _loaded(set(out["modules"]), ("numpy", "scipy", "sklearn", "tqdm", *HEAVY)) == []


@pytest.mark.parametrize("package", ["ecrm.datasets", "ecrm.spaces", "ecrm.losses"])
def test_a_lazy_package_names_each_public_name_once(package):
    import importlib

    module = importlib.import_module(package)
    assert sorted(module._SOURCES) == sorted(module.__all__)
    for name in module.__all__:
        value = getattr(module, name)
        assert getattr(value, "__name__", name) == name
        assert value is getattr(importlib.import_module(
            f"{package}.{module._SOURCES[name]}"), name)
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nothing'"):
        module.nothing  # noqa: B018


_THREADS_SCRIPT = """
import json, sys
import ecrm.commands.predict as predict
from threadpoolctl import threadpool_info

seen = []

def run(args):  # what the command's BLAS pools are set to while it runs
    seen.append(sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}))
    return 0

predict.run = run
from ecrm.cli import main
model, data, out = sys.argv[1:4]
for extra in ([], ["--threads", "1"], ["--threads", "2"], ["--threads", "0"]):
    assert main(["predict", model, data, "-o", out, *extra]) == 0
after = sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
print(json.dumps({"seen": seen, "after": after}))
"""


@pytest.mark.slow
def test_the_threads_option_reaches_threadpoolctl(tmp_path, subprocess_env):
    import os
    import subprocess
    import sys

    # no pin from the environment: the BLAS libraries start with their own default
    env = {k: v for k, v in subprocess_env.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    for name in ("model.ecrm", "data.csv"):
        (tmp_path / name).write_text("x\n")
    proc = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT, str(tmp_path / "model.ecrm"),
                           str(tmp_path / "data.csv"), str(tmp_path / "p.csv")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    default = out["after"]  # the library's own, restored when the command ends
    assert out["seen"][:2] == [[1], [1]] and out["seen"][3] == default
    if (os.cpu_count() or 1) >= 2:  # OpenBLAS gives no more threads than cores
        assert out["seen"][2] == [2]
    assert default == [os.cpu_count()] or len(os.sched_getaffinity(0)) in default


@pytest.mark.parametrize("value", ["-1", "two", "1.5"], ids="value={}".format)
def test_a_bad_threads_value_is_refused_at_parse_time(tmp_path, capsys, value):
    import os

    from ecrm.cli import main

    data = tmp_path / "data.csv"
    data.write_text("x,labels\n1,a\n")
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(data), "-o", str(tmp_path / "m.ecrm"), "--threads", value])
    assert exc.value.code == 2
    assert (f"--threads must be an integer from 0 to {4 * (os.cpu_count() or 1)} (4 per CPU, "
            f"{os.cpu_count() or 1} CPUs here); got {value!r}") in capsys.readouterr().err
    assert not (tmp_path / "m.ecrm").exists()


def test_only_the_computing_commands_take_threads():
    from ecrm.cli import COMMANDS, build_parser
    from ecrm.commands._threads import COMMANDS as THREADED

    assert set(THREADED) < set(COMMANDS)
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    for name in COMMANDS:
        takes = any("--threads" in a.option_strings for a in sub[name]._actions)
        assert takes == (name in THREADED), name
