"""What ``ecrm predict`` imports: its start-up is most of its time on a small file (issue 30).

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
         "ecrm.forest", "ecrm.joint", "ecrm.ssvm", "ecrm.datasets.arff",
         "ecrm.datasets.ranking", "ecrm.datasets.flows", "ecrm.spaces.flows",
         "ecrm.spaces.polytope", "ecrm.spaces.permutations", "ecrm.losses.continuous",
         "ecrm.losses.kendall", "ecrm.experiments", "ecrm.plotting", "ecrm.report",
         "ecrm.baselines", "ecrm.commands.fit")

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
    assert "ecrm.estimator" in modules and ("sklearn.pipeline" in modules) == standardize
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
