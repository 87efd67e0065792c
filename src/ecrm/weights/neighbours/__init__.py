"""The nearest-neighbour family: the conditional risk estimated by the k training points
nearest to :math:`x`, each weighted :math:`1/k`.

- :mod:`.estimator`: :class:`~ecrm.NeighboursECRM` and :class:`~ecrm.NeighboursECRMCV`
  (:math:`k` chosen on the exact leave-one-out criterion).
- :mod:`._search`: the leave-one-out judgement of the weights and the search over :math:`k`.
- :mod:`._fit`: the neighbours as a risk fit: the index, the weights, the leave-one-out
  neighbours and the model-file state.
- :mod:`._dask`: the fit on Dask arrays (the rows gathered, the leave-one-out queries per row
  chunk on the workers).
"""
