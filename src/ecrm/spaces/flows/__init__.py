r"""Network flows: the flow polytope and exact risk minimisers over it (paper, Section 6.2).

* :mod:`~ecrm.spaces.flows.polytope` -- :class:`FlowPolytope`, the output space (linear
  oracle, membership, vertices) and the registry :data:`RISK_MINIMIZERS` through which it
  minimises the estimated risk of losses with no linear form;
* :mod:`~ecrm.spaces.flows.projection` -- the exact, certified Euclidean projection;
* :mod:`~ecrm.spaces.flows.absolute` -- the absolute loss's risk minimiser (LP, certified
  local method, MILP, subgradient);
* :mod:`~ecrm.spaces.flows.squared` -- the square loss's risk minimiser (projection or best
  vertex).

A loss reaches its minimiser through :meth:`FlowPolytope.minimize_risk` (the
:meth:`~ecrm.spaces.base.OutputSpace.minimize_risk` hook) by declaring ``risk_name``
(``"absolute"`` or ``"squared"``) and its options in ``risk_options``;
:meth:`FlowPolytope.solve_risk` returns the full :class:`~ecrm.spaces.base.CertifiedResult`.
"""

from ecrm.spaces.flows.absolute import ABSOLUTE_METHODS, absolute_risk, minimize_absolute_risk
from ecrm.spaces.flows.polytope import (
    PAPER_ARCS,
    RISK_MINIMIZERS,
    FlowPolytope,
    InfeasibleNetworkError,
    paper_network,
    register_risk_minimizer,
)
from ecrm.spaces.flows.squared import minimize_squared_risk, squared_risk

__all__ = ["ABSOLUTE_METHODS", "PAPER_ARCS", "RISK_MINIMIZERS", "FlowPolytope",
           "InfeasibleNetworkError", "absolute_risk", "minimize_absolute_risk",
           "minimize_squared_risk", "paper_network", "register_risk_minimizer", "squared_risk"]
