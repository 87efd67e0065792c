"""ecrm: structured prediction by estimated conditional risk minimisation.

Goh & Jaillet, "Structured Prediction by Conditional Risk Minimization", ICML 2016.
"""

from ecrm import bounds, losses
from ecrm.estimator import ECRM, ECRMCV
from ecrm.io import load, save
from ecrm.joint import JointKernelECRM
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

__version__ = "0.1.0"

__all__ = ["ECRM", "ECRMCV", "CandidateSpace", "FlowPolytope", "Hierarchy", "JointKernelECRM",
           "LinearConstraintSpace", "MultilabelSpace", "OutputSpace", "PermutationSpace",
           "StructuredSVM", "bounds", "load", "losses", "save", "__version__"]
