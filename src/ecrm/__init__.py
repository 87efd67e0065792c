"""ecrm: structured prediction by estimated conditional risk minimisation.

Goh & Jaillet, "Structured Prediction by Conditional Risk Minimization", ICML 2016.

The names below are imported on first use (:pep:`562`), so that ``import ecrm`` -- and the
``ecrm --version`` / ``ecrm --help`` commands -- do not load NumPy, SciPy or scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecrm._lazy import lazy_exports

__version__ = "0.1.0"

__all__ = ["ECRM", "ECRMCV", "CandidateSpace", "CenterSelector", "DualSolver", "FlowPolytope",
           "ForestECRM", "ForestECRMCV", "GridEdgeWarning", "Hierarchy", "JointKernelECRM",
           "KMeansPlusPlusCenters", "LeverageCenters", "LinearConstraintSpace",
           "MixedRiskECRM", "MultilabelSpace", "NeighboursECRM", "NeighboursECRMCV",
           "NystromSolver", "OutputSpace", "PermutationSpace",
           "PrimalSolver", "Solver", "StackedRiskECRM", "StructuredSVM", "UniformCenters",
           "bounds", "exceptions", "load", "losses", "register_solver", "save", "weights",
           "__version__"]

#: Where each public name is defined, relative to ``ecrm`` (a module's own name: that module).
_SOURCES: dict[str, str] = {
    **{name: "weights.kernel.estimator" for name in ("ECRM", "ECRMCV")},
    **{name: "weights.forest.estimator" for name in ("ForestECRM", "ForestECRMCV")},
    **{name: "weights.neighbours.estimator" for name in ("NeighboursECRM", "NeighboursECRMCV")},
    "MixedRiskECRM": "weights.mixture", "StackedRiskECRM": "weights.stack",
    "JointKernelECRM": "estimators.joint", "StructuredSVM": "estimators.ssvm",
    "load": "model_files.io", "save": "model_files.io",
    "GridEdgeWarning": "exceptions", "bounds": "reporting.bounds",
    "exceptions": "exceptions", "losses": "losses", "weights": "weights",
    **{name: "weights.kernel._solvers.centers"
       for name in ("CenterSelector", "KMeansPlusPlusCenters", "LeverageCenters",
                    "UniformCenters")},
    **{name: "weights.kernel._solvers.solver"
       for name in ("DualSolver", "NystromSolver", "PrimalSolver", "Solver", "register_solver")},
    **{name: "spaces" for name in ("CandidateSpace", "FlowPolytope", "Hierarchy",
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
    from ecrm.weights.neighbours.estimator import NeighboursECRM, NeighboursECRMCV
    from ecrm.weights.stack import StackedRiskECRM


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES, __all__)
