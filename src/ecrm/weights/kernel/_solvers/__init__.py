r"""The weights piece of ECRM: ridge regressions behind one small protocol.

Every regression ECRM needs is the kernel ridge objective

.. math:: \min_{f,\, b} \frac1m \sum_{i=1}^m (f(x_i) + b - t_i)^2 + \lambda \|f\|^2

(:mod:`ecrm.weights.kernel._ridge` derives its algebra), for many target columns at once. A solver
(:mod:`.solver`, one table) answers it through the fit and the leave-one-out basis of
:mod:`ecrm.weights._fit`: :class:`~.dual.KernelFit` and :class:`~.dual.EigenLooBasis` on
kernel columns, :class:`~.primal.FeatureFit` and :class:`~.primal.FeatureLooBasis` on a linear
kernel's identity or Nystrom features (:mod:`.centers`). :mod:`.prepare` builds them
from the choice :mod:`.choice` checked (:mod:`.budget`: memory budget and row blocks). The
primal normal equations are sums over row blocks (:mod:`.normal_equations`, :mod:`.rows`),
which :mod:`._dask` runs per chunk of Dask arrays as a map-reduce (``pip install
'ecrm[dask]'``; Dask is imported only when Dask arrays are passed).
"""
