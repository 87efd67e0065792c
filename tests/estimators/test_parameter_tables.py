"""Tests generated from each estimator's table of parameter constraints.

Every estimator declares a constraint for each constructor parameter but its loss and output
space (``_parameter_constraints``, built by :func:`ecrm.estimators._parameters.table`) and the rules
that tie several parameters together (``_parameter_rules``). One validator walks them
(:func:`ecrm.estimators._parameters.check_params`, the template's ``_check_params``, which ``fit``
and the model-file loader run). The tests below are generated from those tables: a table names
exactly the constructor's parameters, every value a constraint refuses is refused before any work
naming the parameter, and ``fit`` refuses it with the table's own message: no estimator checks a
parameter by hand.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from _constraints import _bad_values
from _shapes import TREE5 as TREE
from ecrm import (
    ECRM,
    ECRMCV,
    ForestECRM,
    ForestECRMCV,
    JointKernelECRM,
    MixedRiskECRM,
    NeighboursECRM,
    NeighboursECRMCV,
    StructuredSVM,
)
from ecrm.baselines import BRSVM
from ecrm.estimators._parameters import Choice, Flag, Number, Plan, Rule, check_params
from ecrm.estimators._template import StructuredEstimator
from ecrm.losses import HammingLoss
from ecrm.selection import LeaveOneOutSearch, OutOfBagSearch
from ecrm.weights.kernel.length_scales import LeaveOneOutLengthScales

ESTIMATORS = (ECRM, ECRMCV, JointKernelECRM, StructuredSVM, ForestECRM, ForestECRMCV,
              MixedRiskECRM, NeighboursECRM, NeighboursECRMCV)
#: Estimators off the template (no loss and output space) that check through a table too.
OTHERS = (LeaveOneOutLengthScales, BRSVM)



CASES = [pytest.param(cls, name, bad, id=f"{cls.__name__}-{name}-{bad!r}")
         for cls in ESTIMATORS
         for name, constraint in cls._parameter_constraints.items()
         for bad in _bad_values(constraint)]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_the_table_names_every_parameter_of_the_constructor(cls):
    parameters = set(inspect.signature(cls.__init__).parameters) - {
        "self", "loss", "output_space"}
    assert set(cls._parameter_constraints) == parameters


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_the_defaults_pass_their_constraints(cls):
    cls(HammingLoss(), TREE)._check_params()
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        constraint = cls._parameter_constraints.get(name)
        if isinstance(constraint, (Number, Choice, Flag)):
            constraint.check(parameter.default, name)


@pytest.mark.parametrize("cls, name, bad", CASES)
def test_a_value_the_table_refuses_is_refused_naming_the_parameter(cls, name, bad):
    estimator = cls(HammingLoss(), TREE, **{name: bad})
    with pytest.raises((ValueError, TypeError), match=name):
        estimator._check_params()


# -- the search objects' tables, through the estimators that hold them ----------------------
SEARCHES = ((ECRMCV, LeaveOneOutSearch), (ForestECRMCV, OutOfBagSearch))
SEARCH_CASES = [pytest.param(cls, kind, name, bad, id=f"{kind.__name__}-{name}-{bad!r}")
                for cls, kind in SEARCHES
                for name, constraint in kind._parameter_constraints.items()
                for bad in _bad_values(constraint)]


@pytest.mark.parametrize("kind", [k for _, k in SEARCHES], ids=lambda k: k.__name__)
def test_a_search_object_s_table_names_every_parameter_and_its_defaults_pass(kind):
    assert set(kind._parameter_constraints) == set(inspect.signature(kind).parameters)
    assert list(kind().plan()) == [*kind._parameter_constraints,
                                   *(r.name for r in kind._parameter_rules)]


@pytest.mark.parametrize("cls, kind, name, bad", SEARCH_CASES)
def test_fit_refuses_a_search_setting_with_the_table_s_message_naming_the_search(
        cls, kind, name, bad):
    estimator = cls(HammingLoss(), TREE, search=kind(**{name: bad}))
    expected = _refusal(kind._parameter_constraints[name], bad, name)
    with pytest.raises((ValueError, TypeError), match=f"^search: .*{name}") as error:
        estimator.fit(*_data(cls))
    if expected is not None:
        assert type(error.value) is type(expected) and str(error.value) == f"search: {expected}"
    assert not [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]


# -- the tables are the checks ---------------------------------------------------------------
def _make(cls, **params):
    if cls is BRSVM:
        return BRSVM(TREE, **params)
    if cls in OTHERS:
        return cls(**params)
    return cls(HammingLoss(), TREE, **params)


def _data(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    if cls is LeaveOneOutLengthScales:
        return X, rng.normal(size=12)
    return X, TREE.close(rng.random((12, TREE.n_labels)) < 0.5).astype(float)


def _refusal(constraint, bad, name):
    """What the table says of ``bad``: the error its constraint raises, or ``None`` when a
    rule of several parameters refuses it (a constraint checked by a rule)."""
    try:
        constraint.check(bad, name)
    except (ValueError, TypeError) as error:
        return error
    return None


FIT_CASES = [pytest.param(cls, name, bad, id=f"{cls.__name__}-{name}-{bad!r}")
             for cls in ESTIMATORS + OTHERS
             for name, constraint in cls._parameter_constraints.items()
             for bad in _bad_values(constraint)]


@pytest.mark.parametrize("cls, name, bad", FIT_CASES)
def test_fit_refuses_a_value_with_the_table_s_message_before_any_work(cls, name, bad):
    estimator = _make(cls, **{name: bad})
    expected = _refusal(cls._parameter_constraints[name], bad, name)
    with pytest.raises((ValueError, TypeError), match=name) as error:
        estimator.fit(*_data(cls))
    if expected is not None:  # the constraint's own words, not a check written elsewhere
        assert type(error.value) is type(expected) and str(error.value) == str(expected)
    assert not [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")
                and k != "n_features_in_"]


@pytest.mark.parametrize("cls", ESTIMATORS + OTHERS, ids=lambda c: c.__name__)
def test_the_rules_read_the_table_or_earlier_rules(cls):
    known = set(cls._parameter_constraints)
    for rule in cls._parameter_rules:
        assert isinstance(rule, Rule)
        assert set(rule.of) <= known, (rule.name, set(rule.of) - known)
        if rule.name is not None:
            assert rule.name not in known  # an entry of its own, never a parameter's
            known.add(rule.name)


@pytest.mark.parametrize("cls", ESTIMATORS + OTHERS, ids=lambda c: c.__name__)
def test_the_plan_is_the_table_s_cleaned_values_and_the_rules_entries(cls):
    estimator = _make(cls)
    plan = check_params(estimator)
    assert isinstance(plan, Plan)
    names = [r.name for r in cls._parameter_rules if r.name is not None]
    assert list(plan) == [*cls._parameter_constraints, *names]
    for name, constraint in cls._parameter_constraints.items():
        if isinstance(constraint, (Number, Flag)):
            assert plan[name] == constraint.check(getattr(estimator, name), name)
        assert getattr(plan, name) is plan[name]
    with pytest.raises(AttributeError, match="read-only"):
        plan.alpha = 1.0
    with pytest.raises(TypeError):
        plan["x"] = 1.0  # a Mapping, not a dict


def test_the_plan_cleans_and_derives():
    search = LeaveOneOutSearch(fit_intercept="auto", kernel_grid={"gamma": [1, 2.0]},
                               alpha_search="coarse-to-fine", loo_samples=np.int64(5))
    plan = ECRMCV(HammingLoss(), TREE, alphas=[np.float64(0.1), 1], gamma=1,
                  search=search)._check_params()
    loo = plan["search_plan"]
    assert loo["alphas"] == [0.1, 1.0] and type(loo["alphas"][1]) is float
    assert loo["intercepts"] == [True, False]
    assert plan["kernel_params"]["gamma"] == 1 and type(plan["kernel_params"]["gamma"]) is int
    assert [s["gamma"] for s in plan["settings"]] == [1, 2.0]
    assert (loo["loo_samples"], loo["kernel_subsample"], loo["alpha_search"]) == (
        5, None, "coarse-to-fine")
    assert loo["metric"] is None
    assert search.alphas is None  # the shortcut is set on a copy, never on the given search


def test_the_forest_s_plan_holds_its_search_s_settings():
    search = OutOfBagSearch(param_grid=[{"max_depth": [np.int64(3)]}, {"flavour": ["extra"]}],
                            search_estimators=np.int64(4))
    plan = ForestECRMCV(HammingLoss(), TREE, scoring="lrap", search=search)._check_params()
    oob = plan["search_plan"]
    assert oob["param_grid"] == [{"max_depth": 3}, {"flavour": "extra"}]
    assert oob["search_estimators"] == 4 and type(oob["search_estimators"]) is int
    assert oob["scoring"] == "lrap" and oob["metric"] is not None
    assert search.scoring == "loss"  # the shortcut is set on a copy, never on the given search
    with pytest.raises(ValueError, match="scoring is given both"):
        ForestECRMCV(HammingLoss(), TREE, scoring="lrap",
                     search=OutOfBagSearch(scoring="micro_auprc"))._check_params()


def test_a_cross_parameter_rule_refuses_what_no_single_constraint_does():
    estimator = ECRMCV(HammingLoss(), TREE, alphas=[1e-2],
                       search=LeaveOneOutSearch(alphas=[1e-1]))
    for name in ("alphas", "search"):  # each value alone is fine
        estimator._parameter_constraints[name].check(getattr(estimator, name), name)
    with pytest.raises(ValueError, match="alphas is given both"):
        estimator._check_params()


def test_no_estimator_checks_its_parameters_by_hand():
    """``_check_params`` is defined once, in the template; every estimator runs it."""
    import ecrm

    root = Path(ecrm.__file__).parent
    texts = {path: path.read_text(encoding="utf-8") for path in root.rglob("*.py")}
    defined = sorted(str(path.relative_to(root)) for path, text in texts.items()
                     if "_check_params" in text
                     for node in ast.walk(ast.parse(text))
                     if isinstance(node, ast.FunctionDef) and node.name == "_check_params")
    assert defined == ["estimators/_template.py"]
    for cls in ESTIMATORS:
        assert cls._check_params is StructuredEstimator._check_params


def test_a_flag_takes_numpy_booleans_and_names_its_words():
    plan = ECRM(HammingLoss(), TREE, fit_intercept=np.False_)._check_params()
    assert plan["fit_intercept"] is False
    search = LeaveOneOutSearch(fit_intercept=np.str_("auto"))
    assert ECRMCV(HammingLoss(), TREE, search=search)._check_params()["search_plan"][
        "intercepts"] == [True, False]
    with pytest.raises(ValueError, match="^fit_intercept must be True or False; got 'no'$"):
        ECRM(HammingLoss(), TREE, fit_intercept="no")._check_params()
    with pytest.raises(ValueError, match="^search: fit_intercept must be True, False or 'auto'; "
                                         "got 'no'$"):
        ECRMCV(HammingLoss(), TREE, search=LeaveOneOutSearch(fit_intercept="no"))._check_params()
