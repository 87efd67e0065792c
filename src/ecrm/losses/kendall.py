r"""Kendall's distance between rankings, linear in the pairwise-order (Kemeny) embedding.

Outputs are flattened permutation matrices (:class:`ecrm.spaces.permutations.PermutationSpace`;
``sigma[j]`` is the position of label ``j``, 0 = first). Kendall's distance counts the
discordant pairs,

.. math:: \ell(\sigma, \sigma') = \#\{a < b : (\sigma(a) - \sigma(b))(\sigma'(a) - \sigma'(b))
          < 0\} .

With the pairwise-order indicators :math:`z_{ab}(\sigma) = \mathbb 1(\sigma(a) < \sigma(b))`
for :math:`a < b` (the Kemeny embedding), a pair is discordant iff :math:`z_{ab} \ne z'_{ab}`,
so

.. math:: \ell(\sigma, \sigma') = \sum_{a<b} z_{ab} + z'_{ab} - 2 z_{ab} z'_{ab}
          = \langle z, \mathbf 1 - 2 z' \rangle + \textstyle\sum_{a<b} z'_{ab} :

:math:`\phi(y) = z`, :math:`\psi(y') = \mathbf 1 - 2z'`, :math:`\mathrm{const}(y') =
\sum_{a<b} z'_{ab}`. ECRM's estimated risk is then :math:`\langle z, c\rangle` + const with
:math:`c = \sum_i w_i (\mathbf 1 - 2 z_i)`, and its minimiser over rankings is a weighted
Kemeny aggregation of the training rankings: the linear ordering problem with cost
:math:`c_{ab}` for placing :math:`a` before :math:`b` (and 0 for the reverse), solved exactly by
:func:`ecrm.spaces.linear_ordering.linear_ordering`, the permutation space's oracle of
the cost form :attr:`ecrm.PermutationSpace.PAIR_ORDERS`.

**Incomplete references.** A training ranking that leaves labels out (rank ``-1``, its rows
NaN in the permutation matrix) observes only the pairs of two ranked labels; the loss counts
the discordant pairs among those, and the linear form follows: :math:`z'_{ab}` of an
unobserved pair is unknown, and both :math:`\psi(y')_{ab}` and its share of
:math:`\mathrm{const}(y')` are 0 there, so that the sum above over the observed pairs still
equals :math:`\langle z, \psi(y')\rangle + \mathrm{const}(y')`. A prediction ranks every
label.
"""

from __future__ import annotations

import numpy as np

from ecrm.losses.base import LinearLoss, paired_rows
from ecrm.spaces.permutations import PermutationSpace

__all__ = ["KendallLoss", "kendall_tau"]


def _ranks(Y) -> np.ndarray:
    """Rank vectors (n, d) of flattened d x d permutation matrices (n, d*d); -1 for a missing
    label (its row NaN)."""
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    d = PermutationSpace.from_n_outputs(Y.shape[1]).n_items
    M = Y.reshape(len(Y), d, d)
    return np.where(np.isnan(M).all(axis=2), -1, np.argmax(np.nan_to_num(M), axis=2))


def _pair_orders(R) -> np.ndarray:
    """Pairwise-order indicators (n, d(d-1)/2): for a < b in row-major order, R[a] < R[b];
    NaN where a label of the pair is missing (rank -1)."""
    a, b = np.triu_indices(R.shape[1], 1)
    Z = (R[:, a] < R[:, b]).astype(float)
    Z[(R[:, a] < 0) | (R[:, b] < 0)] = np.nan
    return Z


def _complete(R: np.ndarray, what: str) -> np.ndarray:
    if (R < 0).any():
        raise ValueError(f"{what} row {int(np.flatnonzero((R < 0).any(axis=1))[0])} is an "
                         "incomplete ranking (NaN rows): predictions rank every label")
    return R


class KendallLoss(LinearLoss):
    r"""Kendall's distance: the number of label pairs two rankings order differently.

    Used with :class:`ecrm.PermutationSpace` (any number of labels ``d``). Linear form over
    the ``d(d-1)/2`` pairs :math:`a < b` (row-major, as :func:`numpy.triu_indices`):
    :math:`\phi(y) = z(y)`, :math:`\psi(y') = 1 - 2 z(y')`, :math:`\mathrm{const}(y') =
    \sum z(y')`, :math:`z_{ab} = 1` when :math:`a` is ranked before :math:`b`; minimised
    exactly by the space's oracle of :attr:`cost_form`.

    Examples
    --------
    >>> from ecrm import PermutationSpace
    >>> s = PermutationSpace(3)
    >>> KendallLoss()(s.from_ranks([[0, 1, 2], [0, 1, 2]]), s.from_ranks([[2, 1, 0], [0, 2, 1]]))
    array([3., 1.])
    """

    def __call__(self, Y_pred, Y_true) -> np.ndarray:
        """Discordant pairs of each row pair; only the pairs ``Y_true`` observes count."""
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        R, S = _complete(_ranks(Y_pred), "Y_pred"), _ranks(Y_true)
        a, b = np.triu_indices(R.shape[1], 1)
        seen = (S[:, a] >= 0) & (S[:, b] >= 0)
        return (seen & ((R[:, a] - R[:, b]) * (S[:, a] - S[:, b]) < 0)).sum(axis=1) \
            .astype(float)

    def phi(self, Y) -> np.ndarray:
        return _pair_orders(_complete(_ranks(Y), "Y"))

    def psi(self, Y_ref) -> np.ndarray:
        Z = _pair_orders(_ranks(Y_ref))
        return np.where(np.isnan(Z), 0.0, 1.0 - 2.0 * Z)

    def const(self, Y_ref) -> np.ndarray:
        return np.nansum(_pair_orders(_ranks(Y_ref)), axis=1)

    def check_space(self, space) -> None:
        """Raise ``ValueError`` unless ``space`` is a :class:`~ecrm.PermutationSpace`."""
        if not isinstance(space, PermutationSpace):
            raise ValueError(f"KendallLoss needs a PermutationSpace; got {space!r}")

    @property
    def cost_form(self) -> str:
        """A cost per label pair ``a < b`` for ranking ``a`` before ``b``:
        :attr:`PermutationSpace.PAIR_ORDERS`, minimised exactly (Kemeny aggregation)."""
        return PermutationSpace.PAIR_ORDERS


def kendall_tau(Y_pred, Y_true) -> np.ndarray:
    r"""Kendall's :math:`\tau` of each row pair of flattened permutation matrices.

    :math:`\tau = 1 - 4\,\ell_K(\sigma, \sigma') / (m(m-1))` for rankings without ties
    (concordant minus discordant pairs over all pairs), with ``m`` the labels ``Y_true``
    ranks (``d`` for a complete reference; an incomplete one is compared on its observed
    pairs); 1 when ``m < 2``.

    Examples
    --------
    >>> from ecrm import PermutationSpace
    >>> s = PermutationSpace(3)
    >>> kendall_tau(s.from_ranks([[0, 1, 2], [0, 1, 2]]), s.from_ranks([[2, 1, 0], [0, 2, 1]]))
    array([-1.        ,  0.33333333])
    """
    Y_pred, Y_true = paired_rows(Y_pred, Y_true)
    m = (_ranks(Y_true) >= 0).sum(axis=1)
    pairs = m * (m - 1)
    return np.where(pairs > 0, 1.0 - 4.0 * KendallLoss()(Y_pred, Y_true)
                    / np.maximum(pairs, 1), 1.0)
