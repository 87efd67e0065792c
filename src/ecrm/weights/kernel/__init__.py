"""The kernel family: kernel ridge weights :math:`w(x) = (K + m\\lambda I)^{-1} v(x)`.

- :mod:`.estimator`: :class:`~ecrm.ECRM` and :class:`~ecrm.ECRMCV`.
- :mod:`._ridge` and :mod:`._kernels`: the ridge algebra and the kernels' names, parameters
  and blocks; :mod:`.length_scales`: per-feature length-scales learned on the exact
  leave-one-out error.
- :mod:`._solvers`: the dual, primal and Nystrom solvers behind one protocol, and the Nystrom
  centre selectors; NumPy or Dask is chosen once per call.

The solvers' table is public here: :data:`SOLVERS` (name -> class), which
:func:`register_solver` extends with a :class:`Solver` subclass (the estimators' ``solver=``
and ``ecrm fit --solver`` then accept its name) and :func:`unregister_solver` undoes.
"""

from __future__ import annotations

from ecrm._lazy import lazy_exports

__all__ = ["ECRM", "ECRMCV", "SOLVERS", "CenterSelector", "DualSolver", "KMeansPlusPlusCenters",
           "LeverageCenters", "NystromSolver", "PrimalSolver", "Solver", "UniformCenters",
           "register_solver", "unregister_solver"]

_SOURCES = {"ECRM": "estimator", "ECRMCV": "estimator",
            **{name: "_solvers.solver" for name in ("SOLVERS", "DualSolver", "NystromSolver",
                                                     "PrimalSolver", "Solver", "register_solver",
                                                     "unregister_solver")},
            **{name: "_solvers.centers" for name in ("CenterSelector", "KMeansPlusPlusCenters",
                                                      "LeverageCenters", "UniformCenters")}}

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES, __all__)
