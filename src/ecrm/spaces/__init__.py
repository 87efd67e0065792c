"""Output spaces, each with an exact linear minimisation oracle ``argmin(C)``."""

from ecrm.spaces.base import MultilabelSpace, OutputSpace
from ecrm.spaces.candidates import CandidateSpace
from ecrm.spaces.flows import FlowPolytope, InfeasibleNetworkError, paper_network
from ecrm.spaces.hierarchy import Hierarchy
from ecrm.spaces.permutations import PermutationSpace
from ecrm.spaces.polytope import (
    LinearConstraintSpace,
    TUCertificate,
    check_total_unimodularity,
)

__all__ = ["CandidateSpace", "FlowPolytope", "Hierarchy", "InfeasibleNetworkError",
           "LinearConstraintSpace", "MultilabelSpace", "OutputSpace", "PermutationSpace",
           "TUCertificate", "check_total_unimodularity", "paper_network"]
