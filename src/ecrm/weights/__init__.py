r"""Weight families: the estimates :math:`w(x)` of :math:`\hat R(y|x) = \sum_i w_i(x)\,
\ell(y, y_i)`, and the one table of them.

A family is an estimator on :class:`RiskEstimator` (kernel ridge: :class:`ecrm.ECRM` and
:class:`ecrm.ECRMCV`; a forest: :class:`ecrm.ForestECRM` and :class:`ecrm.ForestECRMCV`;
the k nearest neighbours: :class:`ecrm.NeighboursECRM` and :class:`ecrm.NeighboursECRMCV`;
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

from typing import TYPE_CHECKING

from ecrm._lazy import lazy_exports
from ecrm.weights.families import FAMILIES, Family, family_of, register_family, unregister_family

__all__ = ["FAMILIES", "Family", "HonestOutputs", "RiskEstimator", "RiskFit", "RiskTargets",
           "StackedRiskECRM", "family_of", "register_family", "unregister_family"]

#: Where each lazily imported name is defined.
_SOURCES = {"HonestOutputs": "_risk", "RiskEstimator": "_risk", "RiskFit": "_fit",
            "RiskTargets": "kernel._solvers.rows", "StackedRiskECRM": "stack"}

if TYPE_CHECKING:
    from ecrm.weights._fit import RiskFit
    from ecrm.weights._risk import HonestOutputs, RiskEstimator
    from ecrm.weights.kernel._solvers.rows import RiskTargets
    from ecrm.weights.stack import StackedRiskECRM

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES, __all__)
