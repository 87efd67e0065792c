"""ecrm: structured prediction by estimated conditional risk minimisation.

Goh & Jaillet, "Structured Prediction by Conditional Risk Minimization", ICML 2016.

The names below are imported on first use (:pep:`562`), so that ``import ecrm`` -- and the
``ecrm --version`` / ``ecrm --help`` commands -- do not load NumPy, SciPy or scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["ECRM", "ECRMCV", "CandidateSpace", "CenterSelector", "DualSolver", "FlowPolytope",
           "ForestECRM", "ForestECRMCV", "GridEdgeWarning", "Hierarchy", "JointKernelECRM",
           "KMeansPlusPlusCenters", "LeverageCenters", "LinearConstraintSpace",
           "MixedRiskECRM", "MultilabelSpace", "NystromSolver", "OutputSpace", "PermutationSpace",
           "PrimalSolver", "Solver", "StackedRiskECRM", "StructuredSVM", "UniformCenters",
           "bounds", "exceptions", "load", "losses", "register_solver", "save", "weights",
           "__version__"]

#: Where each public name is defined (``None``: a sub-module of that name).
_SOURCES: dict[str, str | None] = {
    "ECRM": "ecrm.estimator", "ECRMCV": "ecrm.estimator", "JointKernelECRM": "ecrm.joint",
    "load": "ecrm.io", "save": "ecrm.io", "StructuredSVM": "ecrm.ssvm", "bounds": None,
    "exceptions": None, "losses": None, "weights": None, "ForestECRM": "ecrm.forest",
    "ForestECRMCV": "ecrm.forest", "GridEdgeWarning": "ecrm.exceptions",
    "MixedRiskECRM": "ecrm.mixture", "StackedRiskECRM": "ecrm.weights.stack",
    **{name: "ecrm._solvers.centers" for name in ("CenterSelector", "KMeansPlusPlusCenters",
                                                   "LeverageCenters", "UniformCenters")},
    **{name: "ecrm._solvers.solver" for name in ("DualSolver", "NystromSolver", "PrimalSolver",
                                                  "Solver", "register_solver")},
    **{name: "ecrm.spaces" for name in ("CandidateSpace", "FlowPolytope", "Hierarchy",
                                         "LinearConstraintSpace", "MultilabelSpace",
                                         "OutputSpace", "PermutationSpace")},
}

if TYPE_CHECKING:  # the eager imports, for type checkers and IDEs
    from ecrm import bounds, exceptions, losses, weights
    from ecrm._solvers.centers import (
        CenterSelector,
        KMeansPlusPlusCenters,
        LeverageCenters,
        UniformCenters,
    )
    from ecrm._solvers.solver import (
        DualSolver,
        NystromSolver,
        PrimalSolver,
        Solver,
        register_solver,
    )
    from ecrm.estimator import ECRM, ECRMCV
    from ecrm.exceptions import GridEdgeWarning
    from ecrm.forest import ForestECRM, ForestECRMCV
    from ecrm.io import load, save
    from ecrm.joint import JointKernelECRM
    from ecrm.mixture import MixedRiskECRM
    from ecrm.spaces import (
        CandidateSpace,
        FlowPolytope,
        Hierarchy,
        LinearConstraintSpace,
        MultilabelSpace,
        OutputSpace,
        PermutationSpace,
    )
    from ecrm.ssvm import StructuredSVM
    from ecrm.weights.stack import StackedRiskECRM


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:
        raise AttributeError(f"module 'ecrm' has no attribute {name!r}")
    source = _SOURCES[name]
    value = (importlib.import_module(f"ecrm.{name}") if source is None
             else getattr(importlib.import_module(source), name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
