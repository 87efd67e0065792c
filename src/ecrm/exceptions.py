"""Warnings of the ``ecrm`` estimators, importable without NumPy.

>>> from ecrm.exceptions import GridEdgeWarning
>>> issubclass(GridEdgeWarning, UserWarning)
True
"""

from __future__ import annotations

__all__ = ["GridEdgeWarning"]


class GridEdgeWarning(UserWarning):
    """The selected value of a searched parameter lies at an end of the values searched.

    With a fixed grid (``ECRMCV(extend_grid=False)``) it fires when the choice is an end of
    its grid: the best value may lie beyond it, so widen the grid on that side. With the
    grid extended by the search it fires only when a stated bound stopped the extension
    (the numerical limits of alpha, or ``max_added_gammas``), once per fit, naming it.
    """
