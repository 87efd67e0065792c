"""Output spaces, each with an exact linear minimisation oracle ``argmin(C)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecrm._lazy import lazy_exports

#: Where each public name is defined, imported on first use (a hierarchy's model file does
#: not load the flow polytope, the permutations or their LP solvers).
_SOURCES = {
    "MultilabelSpace": "base", "OutputSpace": "base", "CandidateSpace": "candidates",
    "FlowPolytope": "flows", "InfeasibleNetworkError": "flows", "paper_network": "flows",
    "Hierarchy": "hierarchy", "PermutationSpace": "permutations",
    "BucketOrderSpace": "bucket_orders",
    "LinearConstraintSpace": "polytope", "TUCertificate": "polytope",
    "check_total_unimodularity": "polytope",
}

if TYPE_CHECKING:  # the eager imports, for type checkers and IDEs
    from ecrm.spaces.base import MultilabelSpace, OutputSpace
    from ecrm.spaces.bucket_orders import BucketOrderSpace
    from ecrm.spaces.candidates import CandidateSpace
    from ecrm.spaces.flows import FlowPolytope, InfeasibleNetworkError, paper_network
    from ecrm.spaces.hierarchy import Hierarchy
    from ecrm.spaces.permutations import PermutationSpace
    from ecrm.spaces.polytope import LinearConstraintSpace, TUCertificate, check_total_unimodularity

__all__ = ["BucketOrderSpace", "CandidateSpace", "FlowPolytope", "Hierarchy",
           "InfeasibleNetworkError", "LinearConstraintSpace", "MultilabelSpace", "OutputSpace",
           "PermutationSpace", "TUCertificate", "check_total_unimodularity", "paper_network"]

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES, __all__)
