"""The forest family: the conditional risk estimated by a random forest grown on
:math:`\\psi(y)`, the weights being how often a training point shares a leaf with :math:`x`.

- :mod:`.estimator`: :class:`~ecrm.ForestECRM` and :class:`~ecrm.ForestECRMCV` (settings
  chosen on the out-of-bag task loss).
- :mod:`._search`: ForestECRMCV's out-of-bag search over the grid of settings and its table of
  results; :mod:`._oob`: the out-of-bag judgement of one forest; :mod:`._old_layouts`: the
  search's fitted state as model files of an earlier layout hold it.
- :mod:`._dask`: the trees grown on a Dask cluster.
- :mod:`._fit`: a fitted forest as a risk fit: leaves, out-of-bag sums and model-file state.
"""
