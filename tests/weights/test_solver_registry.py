"""The solvers' one table: ``register_solver`` adds a line that the estimators, the
constraint table and the command line all read, and nothing else holds the names.

A registration made here is undone after its test (the ``registered`` fixture), so the
table the other tests see is the built-in one.
"""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

import ecrm
from _shapes import TREE5 as TREE
from ecrm import ECRM, ECRMCV
from ecrm.commands._options import choices
from ecrm.estimators._parameters import CONSTRAINTS, vocabulary
from ecrm.losses import HammingLoss
from ecrm.weights.kernel import SOLVERS, DualSolver, register_solver, unregister_solver

#: The built-in names, read before any test registers a solver.
BUILT_IN = tuple(SOLVERS)


class CopySolver(DualSolver):
    """The dual under another name: a solver added through the public function only."""

    name = "dual-copy"
    auto = False


@contextlib.contextmanager
def registration(cls):
    """``cls`` registered inside the block, and no longer after it (even on failure)."""
    register_solver(cls)
    try:
        yield cls
    finally:
        unregister_solver(cls.name)


@pytest.fixture
def registered():
    with registration(CopySolver) as cls:
        yield cls


def _data(m=24):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, 3))
    return X, TREE.close(rng.random((m, TREE.n_labels)) < 0.5).astype(float)


def _fit_parser_solvers() -> tuple[str, ...]:
    from ecrm.cli import build_parser

    parser = build_parser(["fit", "--help"])
    fit = parser._subparsers._group_actions[0].choices["fit"]
    (action,) = [a for a in fit._actions if "--solver" in a.option_strings]
    return tuple(action.choices)


def test_the_public_table_is_the_library_s_and_read_only():
    from ecrm.weights.kernel._solvers.solver import SOLVER_CLASSES

    assert ecrm.register_solver is register_solver
    assert dict(SOLVERS) == SOLVER_CLASSES
    with pytest.raises(TypeError):
        SOLVERS["copy"] = DualSolver  # type: ignore[index]


def test_the_built_in_table():
    assert BUILT_IN == ("dual", "primal", "nystrom")
    assert vocabulary("solver") == choices("solver") == ("auto", *BUILT_IN)
    assert _fit_parser_solvers() == ("auto", *BUILT_IN)


@pytest.mark.filterwarnings("ignore::ecrm.exceptions.GridEdgeWarning")
def test_a_registered_solver_is_accepted_and_offered(registered):
    constraint = CONSTRAINTS["solver"]
    assert vocabulary("solver") == ("auto", *BUILT_IN, registered.name)
    assert choices("solver") == ("auto", *BUILT_IN, registered.name)
    assert _fit_parser_solvers() == ("auto", *BUILT_IN, registered.name)
    assert CONSTRAINTS["solver"] is constraint  # the table is read, never replaced
    X, Y = _data()
    copy = ECRM(HammingLoss(), TREE, solver=registered.name, gamma=0.3).fit(X, Y)
    dual = ECRM(HammingLoss(), TREE, solver="dual", gamma=0.3).fit(X, Y)
    assert_allclose(copy.dual_coef_, dual.dual_coef_, atol=1e-10)
    cv = ECRMCV(HammingLoss(), TREE, solver=registered.name, alphas=[1e-2, 1.0]).fit(X, Y)
    assert cv.alpha_ in (1e-2, 1.0)


def test_a_registration_is_undone_after_its_block():
    X, Y = _data()
    with registration(CopySolver):
        assert CopySolver.name in SOLVERS
    assert tuple(SOLVERS) == BUILT_IN
    assert choices("solver") == ("auto", *BUILT_IN)
    with pytest.raises(ValueError, match=f"solver must be .*; got '{CopySolver.name}'"):
        ECRM(HammingLoss(), TREE, solver=CopySolver.name).fit(X, Y)


def test_registration_refuses_a_taken_name_and_keeps_the_built_in_solvers(registered):
    with pytest.raises(ValueError, match="already registered"):
        register_solver(registered)

    class Auto(DualSolver):
        name = "auto"

    with pytest.raises(ValueError, match="already registered"):
        register_solver(Auto)
    with pytest.raises(TypeError, match="Solver subclass"):
        register_solver(object)
    for name in BUILT_IN:
        with pytest.raises(ValueError, match="not a registered solver that can be removed"):
            unregister_solver(name)
    assert tuple(SOLVERS) == (*BUILT_IN, registered.name)


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_each_solver_name_is_written_in_one_module():
    """Code elsewhere names a solver through its class (``NystromSolver.name``) or the table:
    a string that is exactly a built-in solver's name appears in the solver module only
    (messages and docstrings that mention a name are text, not a name used as a value)."""
    root = Path(ecrm.__file__).parent
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not any(f"{q}{name}{q}" in text for name in BUILT_IN for q in "'\""):
            continue  # no such string at all: nothing to parse
        for line, value in _string_literals(path):
            if value in BUILT_IN:
                found.setdefault(value, []).append(f"{path.relative_to(root)}:{line}")
    assert set(found) == set(BUILT_IN)  # the scan sees the table's own literals
    for name, places in found.items():
        modules = {place.partition(":")[0] for place in places}
        assert modules == {"weights/kernel/_solvers/solver.py"}, (name, places)
