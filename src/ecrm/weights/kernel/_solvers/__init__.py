r"""The weights piece of ECRM: ridge regressions behind one small protocol.

Every regression ECRM needs is the kernel ridge objective

.. math:: \min_{f,\, b} \frac1m \sum_{i=1}^m (f(x_i) + b - t_i)^2 + \lambda \|f\|^2

(:mod:`ecrm.weights.kernel._ridge` derives its algebra), for many target columns at once. A solver
answers it through two objects (:mod:`ecrm.weights._fit`):

* a **fit** (:class:`~ecrm.weights._fit.RiskFit`): a block map :math:`b(x)` with
  coefficients and intercepts, the risk weights, and its own model-file state;
  :class:`~ecrm.weights.kernel._solvers.dual.KernelFit` (the kernel columns, exact) and
  :class:`~ecrm.weights.kernel._solvers.primal.FeatureFit` (a linear kernel's identity, or Nystrom
  features on centres from :mod:`ecrm.weights.kernel._solvers.centers`);
* a **leave-one-out basis** (:class:`~ecrm.weights._fit.LooBasis`): one factorisation that
  evaluates a search criterion on the exact leave-one-out predictions for every ridge and
  intercept, then refits the chosen one (:class:`~ecrm.weights.kernel._solvers.dual.EigenLooBasis`,
  :class:`~ecrm.weights.kernel._solvers.primal.FeatureLooBasis`).

A solver is a declared :class:`~ecrm.weights.kernel._solvers.solver.Solver` (its name, memory need,
checks, and the basis and leave-one-out source it builds), listed in one table,
:data:`~ecrm.weights.kernel._solvers.solver.SOLVER_CLASSES` (which also drives ``solver="auto"``);
:func:`ecrm.weights.kernel._solvers.prepare.prepare` and
:func:`~ecrm.weights.kernel._solvers.prepare.prepare_search` read the solver choice, checked
once by :mod:`ecrm.weights.kernel._solvers.choice`
(:mod:`ecrm.weights.kernel._solvers.budget`: the memory budget and row blocks). The primal normal
equations are sums over row blocks (:mod:`ecrm.weights.kernel._solvers.normal_equations`,
:mod:`ecrm.weights.kernel._solvers.rows`), which :mod:`ecrm.weights.kernel._solvers._dask` runs per
chunk of Dask arrays as a map-reduce on the active Dask scheduler (``pip install 'ecrm[dask]'``;
Dask is imported only when Dask arrays are
passed).
"""
