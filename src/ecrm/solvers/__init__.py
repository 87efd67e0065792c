r"""Solvers for the risk regressions beyond one m x m matrix.

ECRM's risk regressions are kernel ridge regressions. :mod:`ecrm.ridge` solves them exactly
in the dual (the m x m Gram matrix). This package solves the same objective

.. math:: \min_{w,\, b} \frac1m \sum_{i=1}^m (f(x_i)^\top w + b - t_i)^2 + \lambda \|w\|^2

in the *primal*, on an explicit feature map :math:`f` with :math:`k \ll m` features
(:mod:`ecrm.solvers.features`: the identity of a linear kernel, or Nystrom features on
centres chosen by :mod:`ecrm.solvers.centers`). The normal equations are sums over row
blocks (:mod:`ecrm.solvers.normal_equations`), so memory does not grow with m, and one
eigendecomposition of the k x k matrix :math:`F^\top F` gives the exact leave-one-out task
loss for every :math:`\lambda` (:mod:`ecrm.solvers.primal_loo`). :mod:`ecrm.solvers.budget`
holds the memory budget, the block sizes and the choice between the solvers;
:mod:`ecrm.solvers.rows` the passes over the training rows, which
:mod:`ecrm.solvers._dask` runs per chunk of Dask arrays as a map-reduce on the active Dask
scheduler (``pip install 'ecrm[dask]'``; Dask is imported only when Dask arrays are passed).
"""

from ecrm.solvers.budget import DEFAULT_MEMORY_BUDGET_GIB, SOLVERS, check_solver_params
from ecrm.solvers.centers import CENTER_SELECTIONS, build_feature_map, select_centers
from ecrm.solvers.features import FeatureMap, LinearFeatures, NystromFeatures
from ecrm.solvers.normal_equations import NormalEquations, PrimalFit

__all__ = ["CENTER_SELECTIONS", "DEFAULT_MEMORY_BUDGET_GIB", "SOLVERS", "FeatureMap",
           "LinearFeatures", "NormalEquations", "NystromFeatures", "PrimalFit", "build_feature_map",
           "check_solver_params", "select_centers"]
