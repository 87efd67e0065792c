r"""The weights piece of ECRM: ridge regressions behind one small protocol.

Every regression ECRM needs is the kernel ridge objective

.. math:: \min_{f,\, b} \frac1m \sum_{i=1}^m (f(x_i) + b - t_i)^2 + \lambda \|f\|^2

(:mod:`ecrm._ridge` derives its algebra), for many target columns at once. A solver answers
it through two objects (:mod:`ecrm._solvers.base`):

* a **fit** (:class:`~ecrm._solvers.base.RiskFit`): a block map :math:`b(x)` with
  coefficients and intercepts, the risk weights, and its own model-file state;
  :class:`~ecrm._solvers.dual.KernelFit` (the kernel columns, exact) and
  :class:`~ecrm._solvers.primal.FeatureFit` (a linear kernel's identity, or Nystrom features
  on centres from :mod:`ecrm._solvers.centers`);
* a **leave-one-out basis** (:class:`~ecrm._solvers.base.LooBasis`): one factorisation that
  evaluates a search criterion on the exact leave-one-out predictions for every ridge and
  intercept, then refits the chosen one (:class:`~ecrm._solvers.dual.EigenLooBasis`,
  :class:`~ecrm._solvers.primal.FeatureLooBasis`).

A solver is a declared :class:`~ecrm._solvers.solver.Solver` (its name, memory need, checks,
and the basis and leave-one-out source it builds), listed in one table,
:data:`~ecrm._solvers.solver.SOLVER_CLASSES` (which also drives ``solver="auto"``);
:func:`ecrm._solvers.prepare.prepare` and :func:`~ecrm._solvers.prepare.prepare_search` read
the checked solver choice once (:mod:`ecrm._solvers.budget`: the memory budget and row
blocks). The primal normal equations are sums over row blocks
(:mod:`ecrm._solvers.normal_equations`, :mod:`ecrm._solvers.rows`), which
:mod:`ecrm._solvers._dask` runs per chunk of Dask arrays as a map-reduce on the active Dask
scheduler (``pip install 'ecrm[dask]'``; Dask is imported only when Dask arrays are passed).
"""
