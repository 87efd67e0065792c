r"""Label-ranking losses, linear in the permutation-matrix embedding.

Outputs are flattened permutation matrices (:class:`ecrm.spaces.permutations.PermutationSpace`):
:math:`y_{jk} = \mathbb 1(\sigma(j) = k)`. A loss that adds a cost :math:`g(k, \sigma'(j))`
for placing label :math:`j` at position :math:`k`,

.. math:: \ell(\sigma, \sigma') = \sum_j g(\sigma(j), \sigma'(j))
          = \sum_{j,k} y_{jk}\, g(k, \sigma'(j)) ,

is linear in :math:`y` with :math:`\psi(y')_{jk} = g(k, \sigma'(j))` and no constant, so ECRM's
inference is one assignment problem per input.
"""

from __future__ import annotations

import numpy as np

from ecrm.losses.base import LinearLoss, paired_rows
from ecrm.spaces.permutations import PermutationSpace

__all__ = ["FootruleLoss", "SquaredRankLoss", "spearman_rho"]


def _ranks(Y: np.ndarray) -> np.ndarray:
    """Rank vectors (n, k) of the flattened permutation matrices ``Y`` (n, k*k), validated
    and complete: a position loss has no value on an incomplete ranking (the positions of
    its labels among all ``k`` are unknown)."""
    R = PermutationSpace.from_n_outputs(Y.shape[1]).to_ranks(Y)
    if (R < 0).any():
        raise ValueError(f"row {int(np.flatnonzero((R < 0).any(axis=1))[0])} is an incomplete "
                         "ranking: the footrule and squared-rank losses compare the positions "
                         "of every label; use KendallLoss, which counts the observed pairs")
    return R


class _PositionLoss(LinearLoss):
    """Shared linear form for losses of the form sum_j g(sigma(j), sigma'(j))."""

    def _g(self, k: np.ndarray, r: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_space(self, space) -> None:
        """Raise ``ValueError`` unless the outputs of ``space`` have a square width ``k*k``."""
        PermutationSpace.from_n_outputs(space.n_outputs)

    def __call__(self, Y_pred, Y_true):
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return self._g(_ranks(Y_pred), _ranks(Y_true)).sum(axis=1).astype(float)

    def psi(self, Y_ref):
        R = _ranks(np.atleast_2d(np.asarray(Y_ref, dtype=float)))
        k = R.shape[1]
        return self._g(np.arange(k)[None, None, :], R[:, :, None]).reshape(len(R), k * k)

    def const(self, Y_ref):
        return np.zeros(len(np.atleast_2d(np.asarray(Y_ref))))


class FootruleLoss(_PositionLoss):
    r"""Spearman's footrule :math:`\ell(\sigma, \sigma') = \sum_j |\sigma(j) - \sigma'(j)|`.

    Linear form (paper, Example 2): :math:`\ell(y, y') = \sum_{j,k,l} |k - l|\, y'_{jl}
    y_{jk}`, i.e. :math:`\psi(y')_{jk} = |k - \sigma'(j)|`, :math:`\mathrm{const} = 0`.

    Examples
    --------
    >>> from ecrm.spaces.permutations import PermutationSpace
    >>> s = PermutationSpace(3)
    >>> FootruleLoss()(s.from_ranks([[0, 1, 2]]), s.from_ranks([[2, 1, 0]]))
    array([4.])
    """

    def _g(self, k, r):
        return np.abs(k - r)


class SquaredRankLoss(_PositionLoss):
    r"""Sum of squared rank differences :math:`\ell(\sigma, \sigma') = \sum_j (\sigma(j) -
    \sigma'(j))^2`, the loss behind Spearman's :math:`\rho`:

    .. math:: \rho(\sigma, \sigma') = 1 - \frac{6\, \ell(\sigma, \sigma')}{d (d^2 - 1)} .

    Linear form: :math:`\psi(y')_{jk} = (k - \sigma'(j))^2`, :math:`\mathrm{const} = 0`.

    Examples
    --------
    >>> from ecrm.spaces.permutations import PermutationSpace
    >>> s = PermutationSpace(3)
    >>> SquaredRankLoss()(s.from_ranks([[0, 1, 2]]), s.from_ranks([[2, 1, 0]]))
    array([8.])
    """

    def _g(self, k, r):
        return (k - r) ** 2


def spearman_rho(Y_pred, Y_true) -> np.ndarray:
    r"""Spearman's rank correlation of each row pair of flattened permutation matrices.

    :math:`1 - 6 \sum_j (\sigma(j) - \sigma'(j))^2 / (k(k^2-1))` for ``k`` items; 1 for
    ``k == 1``.
    """
    Y_pred, Y_true = paired_rows(Y_pred, Y_true)
    k = PermutationSpace.from_n_outputs(Y_pred.shape[1]).n_items
    if k == 1:
        return np.ones(len(Y_pred))
    return 1.0 - 6.0 * SquaredRankLoss()(Y_pred, Y_true) / (k * (k * k - 1))
