"""Values a parameter constraint refuses, derived from the constraint itself."""

from __future__ import annotations

import math

from ecrm.estimators._parameters import Checked, Choice, Flag, Number


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
