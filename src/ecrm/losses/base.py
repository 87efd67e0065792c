r"""The loss interface: a task loss and, where it has one, its linear form.

A loss is *linear in an embedding* when

.. math:: \ell(y, y') = \langle \phi(y), \psi(y') \rangle + \mathrm{const}(y') ,

with :math:`\phi(y)` a vector the output space can minimise over. Then the estimated
conditional risk is :math:`\hat R(y|x) = \langle \phi(y), c(x) \rangle + \mathrm{const}` with
costs :math:`c(x) = \sum_i w_i(x) \psi(y_i)`, and ECRM precomputes
:math:`(K + m\lambda I)^{-1} \psi(Y)` at fit time. Losses without a linear form implement
:meth:`Loss.minimize_risk` over the risk weights instead.

Every loss is callable on ``(Y_pred, Y_true)`` and returns the loss of each row pair; the
call evaluates the definition, independently of the linear form, so that one checks the
other (:func:`ecrm.testing.check_linear_form`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.base import OUTPUTS, CertifiedResult, OutputSpace

__all__ = ["LinearLoss", "Loss", "RiskMinimizer", "paired_rows"]

#: A risk minimiser: ``f(W, Y_ref, space, **options)`` returning one certified solution per
#: row of the weights ``W`` (n, m) given the reference outputs ``Y_ref`` (m, d).
RiskMinimizer = Callable[..., CertifiedResult]


def paired_rows(Y_pred, Y_true) -> tuple[np.ndarray, np.ndarray]:
    Y_pred, Y_true = (np.atleast_2d(np.asarray(Y.toarray() if sp.issparse(Y) else Y,
                                               dtype=float)) for Y in (Y_pred, Y_true))
    if Y_pred.shape != Y_true.shape:
        raise ValueError(f"Y_pred and Y_true must have the same shape; got {Y_pred.shape} and "
                         f"{Y_true.shape}")
    return Y_pred, Y_true


class Loss(ABC):
    """A task loss :math:`\\ell(y, y')` between a prediction and a reference output.

    A loss without a linear form may name the callable that minimises its estimated risk
    over a space (:meth:`risk_minimizer`): the absolute and square losses name the flow
    polytope's minimisers this way, as plain functions. ``None`` (the default) names none,
    and enumerable spaces minimise the risk by brute force.
    """

    @classmethod
    def for_space(cls, space: OutputSpace) -> Loss:
        """This kind of loss on ``space``: what ``ecrm fit --loss`` builds
        (:mod:`ecrm.tasks`). Built without arguments by default; a loss built on its output
        space (the hierarchical and 0-1 losses) takes it."""
        return cls()

    def risk_minimizer(self) -> RiskMinimizer | None:
        """The callable ``f(W, Y_ref, space) -> CertifiedResult`` minimising this loss's
        estimated risk, with the loss's options bound; ``None`` by default."""
        return None

    @abstractmethod
    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        """The loss of each row: an array of shape (n,)."""

    def __repr__(self) -> str:
        """``Name()`` for a loss without parameters (no attributes)."""
        return f"{type(self).__name__}()" if not vars(self) else super().__repr__()

    def check_space(self, space: OutputSpace) -> None:
        """Raise ``ValueError`` if this loss cannot be used with ``space``.

        Called by the estimators at ``fit`` before any work. The default accepts every space;
        a loss built on a particular space (a hierarchy, a candidate set) checks that it is
        the same one.
        """
        return None

    def minimize_risk(self, W, Y_ref, space: OutputSpace) -> np.ndarray:
        """Rows of ``argmin_y sum_i W[k, i] * loss(y, Y_ref[i])`` over ``space``.

        Losses without a linear form call their :meth:`risk_minimizer`; a loss naming none
        falls back on the space's hook :meth:`ecrm.spaces.base.OutputSpace.minimize_risk`
        (brute force on enumerable spaces). Linear losses never need it: their risk is
        minimised by :meth:`LinearLoss.argmin`.
        """
        minimizer = self.risk_minimizer()
        if minimizer is None:
            return space.minimize_risk(W, Y_ref, self)
        return minimizer(W, Y_ref, space).solution


class LinearLoss(Loss):
    r"""A loss with a linear form :math:`\langle \phi(y), \psi(y')\rangle + \mathrm{const}(y')`.

    Subclasses give :meth:`psi` and :meth:`const`; :meth:`phi` defaults to ``y`` itself, and
    :attr:`cost_form`, the name of the embedding :math:`\phi` the output space minimises
    over, to ``"outputs"``. A loss never minimises: the space does,
    ``space.minimize(C, loss.cost_form)`` (:meth:`ecrm.spaces.base.OutputSpace.minimize`).
    """

    @abstractmethod
    def psi(self, Y_ref) -> np.ndarray:
        """The reference-side embedding :math:`\\psi(y')`, shape (m, e)."""

    @abstractmethod
    def const(self, Y_ref) -> np.ndarray:
        """The constant :math:`\\mathrm{const}(y')`, shape (m,)."""

    def phi(self, Y) -> np.ndarray:
        """The prediction-side embedding :math:`\\phi(y)`, shape (n, e)."""
        return np.asarray(Y, dtype=float)

    @property
    def cost_form(self) -> str:
        """What the ``e`` coordinates of a cost row mean: the form of :meth:`phi` the output
        space minimises (:meth:`ecrm.spaces.base.OutputSpace.minimize`); ``"outputs"``
        (:math:`\\phi(y) = y`) by default."""
        return OUTPUTS

    def argmin(self, C, space: OutputSpace) -> np.ndarray:
        """Exact minimisers of :math:`\\langle \\phi(y), c\\rangle` over ``space``, per row:
        :meth:`check_space`, then ``space.minimize(C, self.cost_form)``."""
        self.check_space(space)
        return space.minimize(C, self.cost_form)
