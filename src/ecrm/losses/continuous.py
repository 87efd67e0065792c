r"""Losses on real-valued outputs (flows): the absolute and the square loss.

Neither loss is linear in an embedding of :math:`y`, so ECRM minimises the estimated
conditional risk :math:`\hat R(y|x) = \sum_i w_i \ell(y, y_i)` directly through the risk
weights :math:`w`. Each loss names its minimiser as a plain callable
(:meth:`ecrm.losses.Loss.risk_minimizer`), as networkx passes a ``flow_func``: by default
:func:`ecrm.spaces.flows.minimize_absolute_risk` and
:func:`ecrm.spaces.flows.minimize_squared_risk`, exact over a
:class:`~ecrm.spaces.flows.FlowPolytope`; :meth:`~ecrm.spaces.flows.FlowPolytope.solve_risk`
returns their certificates too.
"""

from __future__ import annotations

import functools

import numpy as np

from ecrm.estimators._validation import check_real
from ecrm.losses.base import Loss, RiskMinimizer, paired_rows
from ecrm.spaces.base import OutputSpace
from ecrm.spaces.flows import ABSOLUTE_METHODS, minimize_absolute_risk, minimize_squared_risk

__all__ = ["AbsoluteLoss", "SquaredLoss"]


class AbsoluteLoss(Loss):
    r"""Absolute (:math:`\ell_1`) loss :math:`\ell(y, y') = \sum_a |y_a - y'_a|`.

    It has no linear form in :math:`y`; its estimated risk
    :math:`\sum_i w_i \|y - y_i\|_1` is minimised by the callable ``method`` names.

    Parameters
    ----------
    method : {"auto", "local", "milp", "subgradient"} or callable, default="auto"
        A name is a shorthand for :func:`ecrm.spaces.flows.minimize_absolute_risk` with that
        ``method`` (``"auto"`` is exact: certified local method, MILP where uncertified). A
        callable ``f(W, Y_ref, space, **options) -> CertifiedResult`` is used as it is (it
        receives ``time_limit=`` only when ``time_limit`` is set).
    time_limit : float, default=None
        Seconds per MILP (``None``: no limit).

    Examples
    --------
    >>> AbsoluteLoss()([[0.5, 0.5]], [[1.0, 0.0]])
    array([1.])
    >>> AbsoluteLoss("milp").risk_minimizer().keywords
    {'method': 'milp', 'time_limit': None}
    """

    def __init__(self, method: str | RiskMinimizer = "auto", *,
                 time_limit: float | None = None):
        self.method = method
        self.time_limit = time_limit

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.abs(Y_pred - Y_true).sum(axis=1)

    def risk_minimizer(self) -> RiskMinimizer:
        """``method`` resolved to a callable ``f(W, Y_ref, space)``, ``time_limit`` bound.

        Raises ``ValueError`` for an unknown name (listing the valid ones) and ``TypeError``
        for a value that is neither a name nor a callable.
        """
        if isinstance(self.method, str):
            if self.method not in ABSOLUTE_METHODS:
                raise ValueError(f"method must be one of {ABSOLUTE_METHODS} or a callable "
                                 f"f(W, Y_ref, space); got {self.method!r}")
            return functools.partial(minimize_absolute_risk, method=self.method,
                                     time_limit=self.time_limit)
        if not callable(self.method):
            raise TypeError(f"method must be one of {ABSOLUTE_METHODS} or a callable "
                            f"f(W, Y_ref, space); got {type(self.method).__name__}")
        if self.time_limit is None:
            return self.method
        return functools.partial(self.method, time_limit=self.time_limit)

    def check_space(self, space: OutputSpace) -> None:
        """Check ``method`` and ``time_limit`` (called at fit, before any work)."""
        if self.time_limit is not None:
            check_real(self.time_limit, "time_limit")
        self.risk_minimizer()

    def __repr__(self) -> str:
        return f"AbsoluteLoss(method={self.method!r})"


class SquaredLoss(Loss):
    r"""Square loss :math:`\ell(y, y') = \sum_a (y_a - y'_a)^2 = \|y - y'\|_2^2`.

    Its risk minimiser over a :class:`~ecrm.spaces.flows.FlowPolytope`
    (:meth:`risk_minimizer`, :func:`ecrm.spaces.flows.minimize_squared_risk`) is a Euclidean
    projection when the weights sum to a positive number, the best vertex otherwise.

    Examples
    --------
    >>> SquaredLoss()([[0.5, 0.5]], [[1.0, 0.0]])
    array([0.5])
    """

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.sum((Y_pred - Y_true) ** 2, axis=1)

    def risk_minimizer(self) -> RiskMinimizer:
        """:func:`ecrm.spaces.flows.minimize_squared_risk`."""
        return minimize_squared_risk
