r"""Network flows: the flow polytope and exact risk minimisers over it (paper, Section 6.2).

:class:`FlowPolytope` (:mod:`~ecrm.spaces.flows.polytope`) is the output space, with an
exact certified projection (:mod:`~ecrm.spaces.flows.projection`); the absolute and square
losses' risk minimisers (:mod:`~ecrm.spaces.flows.absolute`,
:mod:`~ecrm.spaces.flows.squared`) are plain functions ``f(W, Y_ref, space, **options) ->
CertifiedResult``. A loss names its own (:meth:`ecrm.losses.Loss.risk_minimizer`:
``AbsoluteLoss(method=...)`` takes a name of :data:`ABSOLUTE_METHODS` or any such callable).
"""

from ecrm.spaces.flows.absolute import ABSOLUTE_METHODS, absolute_risk, minimize_absolute_risk
from ecrm.spaces.flows.polytope import (
    PAPER_ARCS,
    FlowPolytope,
    InfeasibleNetworkError,
    paper_network,
)
from ecrm.spaces.flows.squared import minimize_squared_risk, squared_risk

__all__ = ["ABSOLUTE_METHODS", "PAPER_ARCS", "FlowPolytope", "InfeasibleNetworkError",
           "absolute_risk", "minimize_absolute_risk", "minimize_squared_risk", "paper_network",
           "squared_risk"]
