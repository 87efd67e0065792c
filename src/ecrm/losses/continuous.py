r"""Losses on real-valued outputs (flows): the absolute and the square loss.

Neither loss is linear in an embedding of :math:`y`, so ECRM minimises the estimated
conditional risk :math:`\hat R(y|x) = \sum_i w_i \ell(y, y_i)` directly through the risk
weights :math:`w`. The minimisers belong to the output space: each loss declares a
``risk_name`` and its ``risk_options``, and :meth:`ecrm.losses.Loss.minimize_risk` asks the
space (:meth:`ecrm.spaces.base.OutputSpace.minimize_risk`). The flow polytope minimises both
exactly (:mod:`ecrm.spaces.flows.absolute`, :mod:`ecrm.spaces.flows.squared`); its
:meth:`~ecrm.spaces.flows.FlowPolytope.solve_risk` returns the certificates too.
"""

from __future__ import annotations

import numpy as np

from ecrm._validation import check_real
from ecrm.losses.base import Loss, paired_rows
from ecrm.spaces.base import OutputSpace
from ecrm.spaces.flows import ABSOLUTE_METHODS

__all__ = ["AbsoluteLoss", "SquaredLoss"]


class AbsoluteLoss(Loss):
    r"""Absolute (:math:`\ell_1`) loss :math:`\ell(y, y') = \sum_a |y_a - y'_a|`.

    It has no linear form in :math:`y`; over a :class:`~ecrm.spaces.flows.FlowPolytope` its
    estimated risk is minimised by :func:`ecrm.spaces.flows.minimize_absolute_risk`
    (``risk_name = "absolute"``).

    Parameters
    ----------
    method : {"auto", "local", "milp", "subgradient"}, default="auto"
        Inference method; ``"auto"`` is exact (certified local method, MILP where
        uncertified).
    time_limit : float, default=None
        Seconds per MILP (``None``: no limit).

    Examples
    --------
    >>> AbsoluteLoss()([[0.5, 0.5]], [[1.0, 0.0]])
    array([1.])
    """

    risk_name = "absolute"

    def __init__(self, method: str = "auto", *, time_limit: float | None = None):
        self.method = method
        self.time_limit = time_limit

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.abs(Y_pred - Y_true).sum(axis=1)

    @property
    def risk_options(self) -> dict:
        """Keyword arguments of the space's risk minimiser: ``method`` and ``time_limit``."""
        return {"method": self.method, "time_limit": self.time_limit}

    def check_space(self, space: OutputSpace) -> None:
        """Check ``method`` and ``time_limit`` (called at fit, before any work)."""
        if self.method not in ABSOLUTE_METHODS:
            raise ValueError(f"method must be one of {ABSOLUTE_METHODS}; got {self.method!r}")
        if self.time_limit is not None:
            check_real(self.time_limit, "time_limit")

    def __repr__(self) -> str:
        return f"AbsoluteLoss(method={self.method!r})"


class SquaredLoss(Loss):
    r"""Square loss :math:`\ell(y, y') = \sum_a (y_a - y'_a)^2 = \|y - y'\|_2^2`.

    Its risk minimiser over a :class:`~ecrm.spaces.flows.FlowPolytope` is a Euclidean
    projection when the weights sum to a positive number
    (:func:`ecrm.spaces.flows.minimize_squared_risk`, ``risk_name = "squared"``).

    Examples
    --------
    >>> SquaredLoss()([[0.5, 0.5]], [[1.0, 0.0]])
    array([0.5])
    """

    risk_name = "squared"

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.sum((Y_pred - Y_true) ** 2, axis=1)

    def __repr__(self) -> str:
        return "SquaredLoss()"
