"""The kernel family: kernel ridge weights :math:`w(x) = (K + m\\lambda I)^{-1} v(x)`.

- :mod:`.estimator`: :class:`~ecrm.ECRM` and :class:`~ecrm.ECRMCV`.
- :mod:`._ridge` and :mod:`._kernels`: the ridge algebra and the kernels' names, parameters
  and blocks; :mod:`.length_scales`: per-feature length-scales learned on the exact
  leave-one-out error.
- :mod:`._solvers`: the dual, primal and Nystrom solvers behind one protocol, their table
  (:func:`~ecrm.register_solver`) and the Nystrom centre selectors; NumPy or Dask is chosen
  once per call.
"""
