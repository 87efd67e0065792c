r"""User-defined additive losses over :math:`\{0,1\}^d` and their automatic linear form.

A loss additive over the coordinates of a 0/1 prediction (paper, Section 3),

.. math:: \ell(y, y') = \sum_{j=1}^d \ell_j(y_j, y'), \qquad y \in \{0, 1\}^d ,

is linear in :math:`y` because :math:`\ell_j(y_j, y') = \ell_j(0, y') + y_j\,(\ell_j(1, y')
- \ell_j(0, y'))`:

.. math:: \psi(y')_j = \ell_j(1, y') - \ell_j(0, y'), \qquad
          \mathrm{const}(y') = \sum_j \ell_j(0, y') ,

the costs of Theorem 3.1. :class:`AdditiveLoss` builds this form from the per-coordinate
terms; its call evaluates the terms at the actual predictions, so
:func:`ecrm.testing.check_linear_form` can verify one against the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ecrm.estimators._validation import check_int
from ecrm.losses.base import LinearLoss, paired_rows
from ecrm.spaces.base import check_binary_matrix

__all__ = ["AdditiveLoss"]


class AdditiveLoss(LinearLoss):
    r"""A loss :math:`\sum_j \ell_j(y_j, y')` given by its per-coordinate terms.

    Parameters
    ----------
    terms : callable or sequence of callables
        Either one vectorised function ``terms(Y, Y_ref) -> L`` taking a 0/1 array ``Y`` and
        reference outputs ``Y_ref`` of the same number of rows and returning ``L`` of shape
        (n, d) with ``L[i, j] = l_j(Y[i, j], Y_ref[i])``; or a sequence of ``d`` functions
        ``l_j(y_j, Y_ref) -> (n,)`` taking the column ``y_j`` (n,) and ``Y_ref`` (n, e).
    n_outputs : int
        The dimension ``d`` of the predictions.
    name : str, optional
        Shown in ``repr``.

    Examples
    --------
    A weighted Hamming loss that charges false negatives twice:

    >>> import numpy as np
    >>> w = np.array([1.0, 2.0, 0.5])
    >>> loss = AdditiveLoss(lambda Y, R: w * np.where(Y < R, 2.0, Y != R), n_outputs=3)
    >>> loss([[1, 0, 0]], [[1, 1, 1]])
    array([5.])
    >>> loss.psi([[1, 1, 1]]), loss.const([[1, 1, 1]])
    (array([[-2., -4., -1.]]), array([7.]))
    """

    def __init__(self, terms: Callable | Sequence[Callable], *, n_outputs: int,
                 name: str | None = None):
        self.n_outputs = check_int(n_outputs, "n_outputs")
        if callable(terms):
            self._terms = terms
        else:
            terms = list(terms)
            if len(terms) != self.n_outputs or not all(callable(t) for t in terms):
                raise ValueError(f"terms must be a callable or a sequence of {self.n_outputs} "
                                 f"callables (one per output); got {len(terms)} items")

            def stacked(Y, R):
                cols = []
                for j, t in enumerate(terms):
                    v = np.asarray(t(Y[:, j], R), dtype=float)
                    if v.shape != (len(Y),):
                        raise ValueError(f"term {j} must return shape ({len(Y)},); got {v.shape}")
                    cols.append(v)
                return np.column_stack(cols)

            self._terms = stacked
        self.terms = terms
        self.name = name
        self._definition: Callable | None = None

    @classmethod
    def from_callable(cls, loss: Callable, *, n_outputs: int, name: str | None = None):
        r"""The additive loss that agrees with ``loss(Y_pred, Y_ref) -> (n,)`` on 0/1 inputs,
        assuming ``loss`` is additive over the coordinates of ``Y_pred``.

        Its terms are read off at the zero vector and the unit vectors:
        :math:`\ell_j(0, y') = \ell(0, y')/d` and :math:`\ell_j(1, y') - \ell_j(0, y') =
        \ell(e_j, y') - \ell(0, y')`. Whether ``loss`` really is additive on an output space
        is checked by :func:`ecrm.testing.check_linear_form`: calling
        the returned loss evaluates ``loss`` itself, while ``psi``/``const`` use the terms.
        """
        d = check_int(n_outputs, "n_outputs")

        def terms(Y, R):
            R = np.asarray(R, dtype=float)
            n = len(R)
            base = np.asarray(loss(np.zeros((n, d)), R), dtype=float)
            diff = np.column_stack([
                np.asarray(loss(np.tile(np.eye(d)[j], (n, 1)), R), dtype=float) - base
                for j in range(d)
            ])
            return base[:, None] / d + Y * diff

        out = cls(terms, n_outputs=d, name=name or getattr(loss, "__name__", None))
        out._definition = loss  # calls evaluate the loss itself, so the form can be checked
        return out

    def check_space(self, space) -> None:
        """Raise ``ValueError`` unless ``space`` has outputs of width ``n_outputs``."""
        if space.n_outputs != self.n_outputs:
            raise ValueError(f"{self!r} is defined on outputs of width {self.n_outputs} but "
                             f"the output space {space!r} has width {space.n_outputs}")

    def _eval(self, Y, Y_ref) -> np.ndarray:
        L = np.asarray(self._terms(Y, Y_ref), dtype=float)
        if L.shape != Y.shape:
            raise ValueError(f"the terms must return shape {Y.shape} (one value per row and "
                             f"output); got {L.shape}")
        return L

    def __call__(self, Y_pred, Y_true):
        Y_pred = check_binary_matrix(Y_pred, self.n_outputs, "Y_pred")
        Y_true = self._reference(Y_true)
        if len(Y_true) != len(Y_pred):
            paired_rows(Y_pred, Y_true)  # raises the standard shape error
        if self._definition is not None:
            return np.asarray(self._definition(Y_pred, Y_true), dtype=float)
        return self._eval(Y_pred, Y_true).sum(axis=1)

    def _reference(self, Y_ref) -> np.ndarray:
        Y_ref = np.asarray(Y_ref, dtype=float)
        return Y_ref[None, :] if Y_ref.ndim == 1 else Y_ref

    def psi(self, Y_ref):
        R = self._reference(Y_ref)
        shape = (len(R), self.n_outputs)
        return self._eval(np.ones(shape), R) - self._eval(np.zeros(shape), R)

    def const(self, Y_ref):
        R = self._reference(Y_ref)
        return self._eval(np.zeros((len(R), self.n_outputs)), R).sum(axis=1)

    def __repr__(self):
        label = f", name={self.name!r}" if self.name else ""
        return f"AdditiveLoss(<terms>, n_outputs={self.n_outputs}{label})"
