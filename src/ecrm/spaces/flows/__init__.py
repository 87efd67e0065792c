r"""Network flows: the flow polytope and exact risk minimisers over it (paper, Section 6.2).

* :mod:`~ecrm.spaces.flows.polytope` -- :class:`FlowPolytope`, the output space (linear
  oracle, membership, vertices, projection);
* :mod:`~ecrm.spaces.flows.projection` -- the exact, certified Euclidean projection;
* :mod:`~ecrm.spaces.flows.absolute` -- the absolute loss's risk minimiser (LP, certified
  local method, MILP, subgradient);
* :mod:`~ecrm.spaces.flows.squared` -- the square loss's risk minimiser (projection or best
  vertex).

The minimisers are plain functions ``f(W, Y_ref, space, **options) -> CertifiedResult``; a
loss names its own (:meth:`ecrm.losses.Loss.risk_minimizer`: ``AbsoluteLoss(method=...)``
takes a name of :data:`ABSOLUTE_METHODS` or any such callable), and
:meth:`FlowPolytope.solve_risk` returns the full :class:`~ecrm.spaces.base.CertifiedResult`.
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
