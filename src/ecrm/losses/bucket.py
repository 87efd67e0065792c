r"""Losses between bucket orders (rankings with ties), linear in the ordered-pair indicators.

Outputs are pair vectors :math:`u` of :class:`ecrm.spaces.BucketOrderSpace`
(:math:`u_{ab} = 1` when label ``a`` is strictly ahead of label ``b``; ``NaN`` when ``a`` or
``b`` is missing from an incomplete reference ranking). For one unordered pair
:math:`\{a, b\}` write :math:`x_{ab} = u_{ab} - u_{ba} \in \{1, 0, -1\}` (ahead, tied, behind).

**The tau_x distance** (Emond and Mason 2002). Their score of a ranking is
:math:`s_{ab} = 1` when ``a`` is ahead of *or tied with* ``b`` and :math:`-1` when behind, so
a tie scores :math:`+1` in both directions and agrees with itself; their correlation is
:math:`\tau_x(y, y') = \sum_{a \ne b} s_{ab} s'_{ab} / (k(k-1))`. Per unordered pair the sum
:math:`s_{ab}s'_{ab} + s_{ba}s'_{ba}` is 2 when the two rankings agree (both strict the same
way, or both tied), 0 for a tie against a strict order and :math:`-2` for opposite orders,
i.e. :math:`2 - 2|x_{ab} - x'_{ab}|`. Hence

.. math:: \tau_x = 1 - \frac{2 L(y, y')}{k(k-1)}, \qquad
          L(y, y') = \sum_{a<b} |x_{ab} - x'_{ab}| = \sum_{a \ne b} |u_{ab} - u'_{ab}| ,

the pair counting 0 (agree), 1 (tie against strict) or 2 (opposite). :math:`L` is the Hamming
distance of the pair vectors, linear in :math:`u` for a fixed :math:`u'`:

.. math:: L(y, y') = \langle u, \mathbf 1 - 2u' \rangle + \textstyle\sum_{a \ne b} u'_{ab},

so :math:`\phi(y) = u`, :math:`\psi(y') = \mathbf 1 - 2u'`, :math:`\mathrm{const}(y') =
\sum u'`, with the unobserved pairs of an incomplete :math:`y'` set to 0 in both.

**Kendall's distance with ties** (Fagin et al. 2004, :math:`K^{(p)}`): 1 per pair ordered
oppositely, a penalty :math:`p` per pair tied in one ranking and strict in the other, 0 when
both tie it. For a fixed :math:`y'` the pair costs :math:`p + (0 - p)\,u_{ab} + (1 - p)\,u_{ba}`
when :math:`y'` puts ``a`` ahead, and :math:`p(u_{ab} + u_{ba})` when it ties them:

.. math:: \psi(y')_{ab} = p - 2p\,u'_{ab} + (1 - 2p)\,u'_{ba}, \qquad
          \mathrm{const}(y') = p \textstyle\sum_{a \ne b} u'_{ab} .

With the usual :math:`p = 1/2` it is exactly half the tau_x distance (same minimiser).

References
----------
Emond & Mason, "A new rank correlation coefficient with application to the consensus ranking
problem", J. Multi-Criteria Decision Analysis 11, 2002.
Fagin, Kumar, Mahdian, Sivakumar & Vee, "Comparing and aggregating rankings with ties",
PODS 2004.
"""

from __future__ import annotations

import numpy as np

from ecrm.estimators._validation import check_int, check_real
from ecrm.losses.base import LinearLoss, paired_rows
from ecrm.spaces.bucket_orders import (
    _width_labels,
    check_positions,
    pair_index,
    pairs_to_bucket_order,
)

__all__ = ["KendallTiesLoss", "TauXLoss", "tau_x"]


def _signs(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per unordered pair a < b (row-major): +1 a ahead, 0 tied, -1 behind; and observed."""
    a, b = np.triu_indices(P.shape[1], 1)
    return np.sign(P[:, b] - P[:, a]), (P[:, a] > 0) & (P[:, b] > 0)


def _pair_states(Y_pred, Y_true):
    """Signs of the predictions (complete) and of the references (possibly incomplete)."""
    Y_pred, Y_true = paired_rows(Y_pred, Y_true)
    P, T = pairs_to_bucket_order(Y_pred), pairs_to_bucket_order(Y_true)
    if (P == 0).any():
        raise ValueError(f"Y_pred row {int(np.flatnonzero((P == 0).any(axis=1))[0])} is "
                         "incomplete (NaN pairs): predictions rank every label")
    (s, _), (t, seen) = _signs(P), _signs(T)
    return s, t, seen


class _PairLoss(LinearLoss):
    """A loss on pair vectors of ``n_labels`` labels (any when ``None``)."""

    def __init__(self, n_labels=None):
        self.n_labels = check_int(n_labels, "n_labels", low=2, allow_none=True)

    @classmethod
    def for_space(cls, space):
        return cls(_width_labels(space.n_outputs))

    def _refs(self, Y) -> np.ndarray:
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        k = _width_labels(Y.shape[1])
        if self.n_labels is not None and k != self.n_labels:
            raise ValueError(f"{self!r} takes pair vectors of {self.n_labels} labels (width "
                             f"{self.n_labels * (self.n_labels - 1)}); got width {Y.shape[1]}")
        return Y

    def phi(self, Y) -> np.ndarray:
        """The pair vectors themselves; a prediction is complete (no NaN)."""
        Y = self._refs(Y)
        if np.isnan(Y).any():
            raise ValueError(f"row {int(np.flatnonzero(np.isnan(Y).any(axis=1))[0])} is "
                             "incomplete (NaN pairs): phi embeds predictions, which rank "
                             "every label")
        return Y

    def check_space(self, space) -> None:
        """Raise ``ValueError`` unless the outputs of ``space`` are pair vectors (of
        ``n_labels`` labels when given)."""
        k = _width_labels(space.n_outputs)
        if self.n_labels is not None and k != self.n_labels:
            raise ValueError(f"{self!r} needs a space of {self.n_labels} labels; got {space!r}")

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, *sorted(vars(self).items())))


class TauXLoss(_PairLoss):
    r"""The tau_x distance of Emond and Mason: per label pair 0 (agree), 1 (a tie against
    a strict order) or 2 (opposite orders); :math:`\tau_x = 1 - 2L / (k(k-1))`.

    Linear form (module docstring): :math:`\phi(y) = u`, :math:`\psi(y') = \mathbf 1 - 2u'`,
    :math:`\mathrm{const}(y') = \sum u'`; the pairs an incomplete reference leaves out count
    nothing. Used with :class:`ecrm.spaces.BucketOrderSpace`, whose oracle minimises it
    exactly.

    Parameters
    ----------
    n_labels : int, optional
        Number of labels ``k``; checked against the space and the outputs when given.

    Examples
    --------
    >>> from ecrm.spaces import BucketOrderSpace
    >>> s = BucketOrderSpace(3)
    >>> TauXLoss(3)(s.from_positions([[1, 2, 3], [1, 1, 2]]),
    ...             s.from_positions([[3, 2, 1], [1, 2, 0]]))
    array([6., 1.])
    """

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        s, t, seen = _pair_states(self._refs(Y_pred), self._refs(Y_true))
        return np.where(seen, np.abs(s - t), 0).sum(axis=1).astype(float)

    def psi(self, Y_ref) -> np.ndarray:
        Y = self._refs(Y_ref)
        return np.where(np.isnan(Y), 0.0, 1.0 - 2.0 * Y)

    def const(self, Y_ref) -> np.ndarray:
        return np.nansum(self._refs(Y_ref), axis=1)

    def __repr__(self) -> str:
        return f"TauXLoss({'' if self.n_labels is None else self.n_labels})"


class KendallTiesLoss(_PairLoss):
    r"""Kendall's distance between rankings with ties (Fagin et al.'s :math:`K^{(p)}`): 1 per
    label pair ordered oppositely, ``penalty`` per pair tied in one ranking only.

    Linear form (module docstring): :math:`\psi(y')_{ab} = p - 2p\,u'_{ab} + (1-2p)\,u'_{ba}`,
    :math:`\mathrm{const}(y') = p\sum u'`; unobserved pairs count nothing. With
    ``penalty=0.5`` it is half the :class:`TauXLoss`.

    Parameters
    ----------
    n_labels : int, optional
        Number of labels ``k``; checked against the space and the outputs when given.
    penalty : float in [0, 1], default=0.5
        The cost of a tie against a strict order.

    Examples
    --------
    >>> from ecrm.spaces import BucketOrderSpace
    >>> s = BucketOrderSpace(3)
    >>> KendallTiesLoss(penalty=0.25)(s.from_positions([[1, 1, 2]]), s.from_positions([[2, 1, 1]]))
    array([1.5])
    """

    def __init__(self, n_labels=None, *, penalty: float = 0.5):
        super().__init__(n_labels)
        self.penalty = check_real(penalty, "penalty", low=0.0, high=1.0, low_open=False)

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        s, t, seen = _pair_states(self._refs(Y_pred), self._refs(Y_true))
        per_pair = np.where(s * t < 0, 1.0, np.where((s == 0) != (t == 0), self.penalty, 0.0))
        return np.where(seen, per_pair, 0.0).sum(axis=1)

    def psi(self, Y_ref) -> np.ndarray:
        Y = self._refs(Y_ref)
        k = _width_labels(Y.shape[1])
        a, b = pair_index(k)
        reverse = Y[:, b * (k - 1) + a - (a > b)]  # u'_ba beside each u'_ab
        p = self.penalty
        return np.where(np.isnan(Y), 0.0, p - 2.0 * p * Y + (1.0 - 2.0 * p) * reverse)

    def const(self, Y_ref) -> np.ndarray:
        return self.penalty * np.nansum(self._refs(Y_ref), axis=1)

    def __repr__(self) -> str:
        args = [] if self.n_labels is None else [str(self.n_labels)]
        args += [] if self.penalty == 0.5 else [f"penalty={self.penalty!r}"]
        return f"KendallTiesLoss({', '.join(args)})"


def tau_x(positions_true, positions_pred) -> float:
    r"""Mean :math:`\tau_x` (Emond and Mason) of predicted bucket orders against references.

    Per row, :math:`\tau_x = 1 - 2L/(m(m-1))` with :math:`L` the :class:`TauXLoss` and
    :math:`m` the number of labels the reference ranks (all ``k`` for a complete one): the
    :math:`\tau_x` of the two rankings restricted to those labels. A row ranking fewer than
    two labels scores 1. Ranges over :math:`[-1, 1]`; 1 when the two rankings agree on every
    pair, ties included.

    Parameters
    ----------
    positions_true : array-like of int, shape (n, k)
        Reference bucket numbers (1 = top, equal numbers tied, 0 = missing label).
    positions_pred : array-like of int, shape (n, k)
        Predicted bucket numbers (complete: no 0).

    Returns
    -------
    score : float

    Examples
    --------
    >>> tau_x([[1, 2, 3], [1, 1, 2]], [[1, 2, 3], [1, 2, 3]])
    0.8333333333333334
    """
    T = check_positions(positions_true, what="positions_true")
    P = check_positions(positions_pred, T.shape[1], what="positions_pred", allow_missing=False)
    if len(T) != len(P):
        raise ValueError(f"positions_true and positions_pred must have the same rows; got "
                         f"{len(T)} and {len(P)}")
    (s, _), (t, seen) = _signs(P), _signs(T)
    loss = np.where(seen, np.abs(s - t), 0).sum(axis=1)
    m = (T > 0).sum(axis=1)
    pairs = m * (m - 1)
    rows = np.where(pairs > 0, 1.0 - 2.0 * loss / np.maximum(pairs, 1), 1.0)
    return float(rows.mean()) if len(rows) else float("nan")
