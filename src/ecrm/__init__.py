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

#: Where each public name is defined (a module's own name: that module).
_SOURCES: dict[str, str] = {
    **{name: "ecrm.weights.kernel.estimator" for name in ("ECRM", "ECRMCV")},
    **{name: "ecrm.weights.forest.estimator" for name in ("ForestECRM", "ForestECRMCV")},
    "MixedRiskECRM": "ecrm.weights.mixture", "StackedRiskECRM": "ecrm.weights.stack",
    "JointKernelECRM": "ecrm.estimators.joint", "StructuredSVM": "ecrm.estimators.ssvm",
    "load": "ecrm.model_files.io", "save": "ecrm.model_files.io",
    "GridEdgeWarning": "ecrm.exceptions", "bounds": "ecrm.reporting.bounds",
    "exceptions": "ecrm.exceptions", "losses": "ecrm.losses", "weights": "ecrm.weights",
    **{name: "ecrm.weights.kernel._solvers.centers"
       for name in ("CenterSelector", "KMeansPlusPlusCenters", "LeverageCenters",
                    "UniformCenters")},
    **{name: "ecrm.weights.kernel._solvers.solver"
       for name in ("DualSolver", "NystromSolver", "PrimalSolver", "Solver", "register_solver")},
    **{name: "ecrm.spaces" for name in ("CandidateSpace", "FlowPolytope", "Hierarchy",
                                         "LinearConstraintSpace", "MultilabelSpace",
                                         "OutputSpace", "PermutationSpace")},
}

if TYPE_CHECKING:  # the eager imports, for type checkers and IDEs
    from ecrm import exceptions, losses, weights
    from ecrm.estimators.joint import JointKernelECRM
    from ecrm.estimators.ssvm import StructuredSVM
    from ecrm.exceptions import GridEdgeWarning
    from ecrm.model_files.io import load, save
    from ecrm.reporting import bounds
    from ecrm.spaces import (
        CandidateSpace,
        FlowPolytope,
        Hierarchy,
        LinearConstraintSpace,
        MultilabelSpace,
        OutputSpace,
        PermutationSpace,
    )
    from ecrm.weights.forest.estimator import ForestECRM, ForestECRMCV
    from ecrm.weights.kernel._solvers.centers import (
        CenterSelector,
        KMeansPlusPlusCenters,
        LeverageCenters,
        UniformCenters,
    )
    from ecrm.weights.kernel._solvers.solver import (
        DualSolver,
        NystromSolver,
        PrimalSolver,
        Solver,
        register_solver,
    )
    from ecrm.weights.kernel.estimator import ECRM, ECRMCV
    from ecrm.weights.mixture import MixedRiskECRM
    from ecrm.weights.stack import StackedRiskECRM


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:
        raise AttributeError(f"module 'ecrm' has no attribute {name!r}")
    source = _SOURCES[name]
    module = importlib.import_module(source)
    value = module if source.rpartition(".")[2] == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
