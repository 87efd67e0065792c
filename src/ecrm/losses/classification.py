r"""The 0-1 loss on a finite output space (binary and multiclass classification)."""

from __future__ import annotations

import numpy as np

from ecrm.losses.base import LinearLoss, paired_rows
from ecrm.spaces.candidates import CandidateSpace

__all__ = ["ZeroOneLoss"]


class ZeroOneLoss(LinearLoss):
    r"""The 0-1 loss :math:`\ell(y, y') = \mathbb 1(y \ne y')` on a finite output space.

    **Linear form.** With :math:`e(y) \in \{0, 1\}^K` the indicator of :math:`y` among the
    :math:`K` candidates,

    .. math:: \ell(y, y') = 1 - \langle e(y), e(y') \rangle, \qquad
              \phi(y) = e(y),\quad \psi(y') = -e(y'),\quad \mathrm{const}(y') = 1 ,

    so the costs are :math:`c_k(x) = -\sum_i w_i(x)\,\mathbb 1(y_i = y_k)`, one per
    candidate, and the oracle picks the candidate of least cost, the one with the largest
    total weight (ties to the first candidate in :meth:`CandidateSpace.enumerate` order). On
    :math:`\{-1, 1\}` this is :math:`\hat h(x) = 1` iff :math:`\sum_i w_i(x) y_i > 0`:
    regularised least squares classification (paper, Section 2.4.1).

    Parameters
    ----------
    space : CandidateSpace or array-like of shape (K, d)
        The candidates (an array is wrapped in :class:`CandidateSpace`).

    Examples
    --------
    >>> loss = ZeroOneLoss([[-1], [1]])
    >>> loss([[1], [1]], [[1], [-1]])
    array([0., 1.])
    >>> loss.psi([[1], [-1]])
    array([[ 0., -1.],
           [-1.,  0.]])
    >>> loss.argmin([[-0.3, -0.7]], loss.space)
    array([[1.]])
    """

    def __init__(self, space):
        self.space = space if isinstance(space, CandidateSpace) else CandidateSpace(space)

    @classmethod
    def for_space(cls, space) -> ZeroOneLoss:
        """The loss on the output space ``space``."""
        return cls(space)

    def __call__(self, Y_pred, Y_true):
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.any(Y_pred != Y_true, axis=1).astype(float)

    def phi(self, Y):
        return self.space.one_hot(Y)

    def psi(self, Y_ref):
        return 0.0 - self.space.one_hot(Y_ref)

    def const(self, Y_ref):
        return np.ones(len(self.space.index(Y_ref)))

    def check_space(self, space) -> None:
        """Raise ``ValueError`` unless ``space`` is the loss's candidate set."""
        if space != self.space:
            raise ValueError(f"ZeroOneLoss was built on {self.space!r} but the output space is "
                             f"{space!r}; build the loss on the same candidates")

    @property
    def cost_form(self) -> str:
        """One cost per candidate: :attr:`CandidateSpace.ONE_HOT`."""
        return CandidateSpace.ONE_HOT

    def __repr__(self):
        return f"ZeroOneLoss({self.space!r})"
