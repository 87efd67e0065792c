"""Tests generated from each estimator's table of parameter constraints (issue 28).

Every estimator declares a constraint for each constructor parameter but its loss and output
space (``_parameter_constraints``, built by :func:`ecrm._parameters.table`). The tests below
are generated from those tables: a table names exactly the constructor's parameters, and
every value a constraint refuses is refused by the estimator's own checks before any work
(``_check_params``, which ``fit`` and the model-file loader run), naming the parameter.
"""

from __future__ import annotations

import inspect
import math

import pytest

from _shapes import TREE5 as TREE
from ecrm import (
    ECRM,
    ECRMCV,
    ForestECRM,
    ForestECRMCV,
    JointKernelECRM,
    MixedRiskECRM,
    StructuredSVM,
)
from ecrm._parameters import Checked, Choice, Flag, Number
from ecrm.losses import HammingLoss

ESTIMATORS = (ECRM, ECRMCV, JointKernelECRM, StructuredSVM, ForestECRM, ForestECRMCV,
              MixedRiskECRM)


def _bad_values(constraint) -> list:
    """Values ``constraint`` refuses, derived from the constraint itself."""
    if isinstance(constraint, Checked):
        return list(constraint.bad)
    if isinstance(constraint, Flag):
        return ["yes", 2] + ([] if constraint.values else ["auto"])
    if isinstance(constraint, Choice):
        return ["not-a-choice"] + ([] if constraint.none else [None])
    assert isinstance(constraint, Number)
    limits = constraint.limits
    bad: list = ["x", math.nan] + ([] if constraint.none else [None])
    if constraint.kind == "int":
        low = limits.get("low", 1)
        bad += [1.5, low - 1]
        if limits.get("high") is not None:
            bad.append(limits["high"] + 1)
    else:
        low, high = limits.get("low", 0.0), limits.get("high", math.inf)
        if math.isfinite(low):
            bad.append(low if limits.get("low_open", True) else low - 1.0)
        if math.isfinite(high):
            bad.append(high if limits.get("high_open", True) else high + 0.5)
    return bad


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
