r"""Weight families: the estimates :math:`w(x)` of :math:`\hat R(y|x) = \sum_i w_i(x)\,
\ell(y, y_i)`, and the one table of them.

A family is an estimator on :class:`RiskEstimator` (kernel ridge: :class:`ecrm.ECRM` and
:class:`ecrm.ECRMCV`; a forest: :class:`ecrm.ForestECRM` and :class:`ecrm.ForestECRMCV`;
or one of your own) whose fit holds a :class:`RiskFit`, the regressions of the targets
:class:`RiskTargets`. :func:`register_family` adds it to :data:`FAMILIES`, the table that
``ecrm fit --family``, ``ecrm info`` and the model files read; :class:`HonestOutputs` are a
family's leave-one-out or out-of-bag outputs (:meth:`RiskEstimator.fit_honest`), which
:class:`ecrm.MixedRiskECRM` mixes, :class:`StackedRiskECRM` stacks and
:func:`ecrm.selection.select_honestly` compares.

The estimator classes are imported on first use (:pep:`562`): the command line reads the
table without loading NumPy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ecrm.weights.families import (
    FAMILIES,
    Family,
    family_of,
    register_family,
    unregister_family,
)

__all__ = ["FAMILIES", "Family", "HonestOutputs", "RiskEstimator", "RiskFit", "RiskTargets",
           "StackedRiskECRM", "family_of", "register_family", "unregister_family"]

#: Where each lazily imported name is defined.
_SOURCES = {"HonestOutputs": "ecrm.weights._risk", "RiskEstimator": "ecrm.weights._risk",
            "RiskFit": "ecrm.weights._fit", "RiskTargets": "ecrm.weights.kernel._solvers.rows",
            "StackedRiskECRM": "ecrm.weights.stack"}

if TYPE_CHECKING:
    from ecrm.weights._fit import RiskFit
    from ecrm.weights._risk import HonestOutputs, RiskEstimator
    from ecrm.weights.kernel._solvers.rows import RiskTargets
    from ecrm.weights.stack import StackedRiskECRM


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:
        raise AttributeError(f"module 'ecrm.weights' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
