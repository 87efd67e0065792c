"""The forest family: the conditional risk estimated by a random forest grown on
:math:`\\psi(y)`, the weights being how often a training point shares a leaf with :math:`x`.

- :mod:`.estimator`: :class:`~ecrm.ForestECRM` and :class:`~ecrm.ForestECRMCV` (settings
  chosen on the out-of-bag task loss).
- :mod:`._fit`: a fitted forest as a risk fit: leaves, out-of-bag sums and model-file state.
"""
