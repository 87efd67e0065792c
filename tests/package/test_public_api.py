"""What the package declares: a private module's ``__all__`` names only what other code takes
from it, and every warning class the package defines or issues is public in
:mod:`ecrm.exceptions`.

Read from the source (``ast``), nothing imported but :mod:`ecrm.exceptions`: a private
module is one with a path component starting with ``_`` below ``ecrm``
(``ecrm.weights.kernel._ridge``, ``ecrm.weights.kernel._solvers.dual``,
``ecrm.experiments._ranking_knn``). Its name is taken from it by ``from module import name``, by
``alias.name`` of an imported module, by a star import, by a table of ``"module"`` and ``"name"``
strings in one file (``ecrm.__init__``'s lazy imports, the model-file registry), or by a
``"module:name"`` path, in another module of the package, a benchmark or an example (also in a
script held in a string, a benchmark's subprocess probe); tests do not count (they may read
internals that no module needs).
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
CONSUMERS = [SRC / "ecrm", ROOT / "benchmarks", ROOT / "examples"]


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package)."""
    out = {}
    for path in sorted((SRC / "ecrm").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = _modules()
TREES = {path: ast.parse(path.read_text(encoding="utf-8"))
         for root in CONSUMERS for path in sorted(root.rglob("*.py"))}
NAME_OF = {path: name for name, (path, _) in MODULES.items()}


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


def _absolute(path: Path, level: int, module: str | None) -> str | None:
    """The module a (possibly relative) ``from ... import`` in ``path`` reads."""
    if level == 0:
        return module
    own = NAME_OF.get(path)
    if own is None:
        return None
    base = own.split(".")
    if not MODULES[own][1]:
        base = base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _taken(path: Path, tree: ast.Module) -> dict[str, set[str]]:
    """The names ``path`` takes from each module of the package (``"*"``: all of them)."""
    taken: dict[str, set[str]] = {}
    aliases: dict[str, str] = {}  # local name -> dotted module (or package prefix)
    nodes = list(ast.walk(tree))
    for node in list(nodes):  # a script in a string (a benchmark's subprocess probe)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                "import " in node.value:
            try:
                nodes.extend(ast.walk(ast.parse(node.value)))
            except SyntaxError:
                pass
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            source = _absolute(path, node.level, node.module)
            for alias in node.names:
                if f"{source}.{alias.name}" in MODULES:  # a submodule
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
                else:
                    taken.setdefault(source or "", set()).add(alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    aliases[head] = head
    for node in nodes:
        if not isinstance(node, ast.Attribute):
            continue
        chain, value = [], node
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not isinstance(value, ast.Name) or value.id not in aliases:
            continue
        dotted = [aliases[value.id], *reversed(chain)]
        for cut in range(len(dotted) - 1, 0, -1):
            module = ".".join(dotted[:cut])
            if module in MODULES:
                taken.setdefault(module, set()).add(dotted[cut])
                break
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    for module in strings & MODULES.keys():  # a table of module and name strings
        taken.setdefault(module, set()).update(strings)
    own = NAME_OF.get(path)
    if own is not None and MODULES[own][1]:  # a package's lazy table: relative module strings
        for module in {f"{own}.{s}" for s in strings} & MODULES.keys():
            taken.setdefault(module, set()).update(strings)
    for module, _, name in (s.partition(":") for s in strings):  # "module:name" paths
        if name and module in MODULES:
            taken.setdefault(module, set()).add(name)
    return taken


def _taken_by_others() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path, tree in TREES.items():
        for module, names in _taken(path, tree).items():
            if module != NAME_OF.get(path):
                out.setdefault(module, set()).update(names)
    return out


def _declared(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    return None


TAKEN = _taken_by_others()
PRIVATE = sorted(m for m in MODULES if _is_private(m) and _declared(MODULES[m][0]))
#: Private modules whose ``__all__`` is not trimmed yet, and why (a strict xfail: once one
#: is trimmed, its entry must go).
PENDING: dict[str, str] = {}  # private modules whose __all__ is not trimmed yet, and why


def test_the_scan_sees_imports_attributes_and_tables():
    # from-imports (absolute and relative), a module's attribute, a lazy table's strings
    assert {"check_kernel_params", "kernel_matrix"} <= TAKEN["ecrm.weights.kernel._kernels"]
    assert "leave_one_out_search" in TAKEN["ecrm.selection._loo"]
    assert "KernelFit" in TAKEN["ecrm.weights.kernel._solvers.dual"]  # the model-file registry
    # ecrm.__init__'s lazy table
    assert "CenterSelector" in TAKEN["ecrm.weights.kernel._solvers.centers"]
    assert "ecrm.weights.kernel._ridge" in PRIVATE
    assert "ecrm.weights.kernel._solvers.dual" in PRIVATE
    assert "ecrm.weights.kernel.estimator" not in PRIVATE and not PENDING.keys() - set(PRIVATE)


@pytest.mark.parametrize("module", [
    pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=PENDING[m]))
    if m in PENDING else m for m in PRIVATE])
def test_private_all_names_only_what_other_modules_take(module):
    """A name only its own module uses leaves ``__all__`` (so the list cannot drift back to
    naming internals); a name the module re-exports must be taken from it."""
    declared = _declared(MODULES[module][0])
    taken = TAKEN.get(module, set())
    unused = [name for name in declared if "*" not in taken and name not in taken]
    assert not unused, f"{module}.__all__ names what no other module takes: {unused}"


def _warning_classes() -> dict[str, str]:
    """Every class in the package that derives from a ``...Warning`` base: name -> module."""
    out = {}
    for module, (path, _) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    (getattr(base, "id", None) or getattr(base, "attr", "")).endswith("Warning")
                    for base in node.bases):
                out[node.name] = module
    return out


def _issued_categories() -> set[str]:
    """The categories the package passes to ``warnings.warn`` (second argument or
    ``category=``) by name."""
    out = set()
    for path, _ in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "warn":
                args = node.args[1:2] + [k.value for k in node.keywords if k.arg == "category"]
                for arg in args:
                    for sub in ast.walk(arg):
                        if isinstance(sub, ast.Name) and sub.id.endswith("Warning"):
                            out.add(sub.id)
    return out


def test_every_warning_class_is_public_in_ecrm_exceptions():
    import ecrm
    import ecrm.exceptions as exceptions

    defined = _warning_classes()
    assert defined, "the scan found no warning class"
    for name, module in defined.items():
        assert module == "ecrm.exceptions", f"{name} is defined in {module}, not ecrm.exceptions"
        cls = getattr(exceptions, name)
        assert name in exceptions.__all__ and issubclass(cls, UserWarning)
        doc = cls.__doc__ or ""
        assert "Issued" in doc or "fires" in doc, f"{name}'s docstring does not say when"
    assert set(exceptions.__all__) == set(defined)
    # what the package issues is the standard library's, scikit-learn's or its own
    foreign = {"ConvergenceWarning"}  # sklearn.exceptions
    for name in _issued_categories():
        assert hasattr(builtins, name) or name in foreign or name in exceptions.__all__, name
    assert ecrm.GridEdgeWarning is exceptions.GridEdgeWarning


#: The public names of the weight families' package (:mod:`ecrm.weights`).
WEIGHTS = ["FAMILIES", "Family", "HonestOutputs", "RiskEstimator", "RiskFit", "RiskTargets",
           "StackedRiskECRM",
           "family_of", "register_family", "unregister_family"]


def test_the_weight_families_public_names():
    """A new family needs only these (tests/weights/test_weight_family.py builds one with them)."""
    from sklearn.base import BaseEstimator

    import ecrm.weights as weights

    assert sorted(weights.__all__) == sorted(WEIGHTS) and set(WEIGHTS) <= set(dir(weights))
    for name in WEIGHTS:
        assert getattr(weights, name) is not None, name
    assert issubclass(weights.RiskEstimator, BaseEstimator)
    assert {"kernel", "forest", "neighbours", "mixed"} <= set(weights.FAMILIES)


def test_the_table_of_families_imports_nothing_heavy(run_python):
    # the command line builds `ecrm fit --family`'s choices from it before any command runs
    proc = run_python("-c", "import sys, ecrm.weights as w; print(sorted(w.FAMILIES)); "
                      "print('numpy' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["['forest',", "'kernel',", "'mixed',", "'neighbours',",
                                   "'stack']", "False"]
