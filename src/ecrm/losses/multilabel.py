"""Losses for (hierarchical) multilabel classification: Hamming and hierarchical."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ecrm.losses.base import LinearLoss, paired_rows
from ecrm.spaces.base import check_binary_matrix

__all__ = ["HammingLoss", "HierarchicalLoss"]


class HammingLoss(LinearLoss):
    r"""Number of wrong labels, :math:`\ell(y, y') = \sum_j |y_j - y'_j|`.

    Linear form: :math:`\psi(y') = \mathbf 1 - 2y'`, :math:`\mathrm{const}(y') = \sum_j y'_j`.

    >>> HammingLoss()([[1, 0, 1]], [[1, 1, 0]])
    array([2.])
    """

    def __call__(self, Y_pred, Y_true):
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        return np.abs(Y_pred - Y_true).sum(axis=1)

    def psi(self, Y_ref):
        return 1.0 - 2.0 * np.asarray(Y_ref, dtype=float)

    def const(self, Y_ref):
        return np.asarray(Y_ref, dtype=float).sum(axis=1)


class HierarchicalLoss(LinearLoss):
    r"""The sibling-weighted hierarchical loss of Cesa-Bianchi et al. (paper, Section 3.1).

    .. math:: \ell(y, y') = \sum_j c_j \,\mathbb 1\big(y_j \ne y'_j,\;
              y_p = y'_p \;\forall p \in \mathcal P(j)\big)

    A label is penalised when it is wrong and all its parents are right (for labelings
    consistent with the hierarchy this is the same as all its ancestors being right).
    Top-level labels hang under a virtual root that is always on, has :math:`c = 1` and is not
    scored; a label with parent :math:`p` receives :math:`c_j = c_p / |\mathrm{children}(p)|`.
    On a DAG a label with several parents takes the mean of the shares its parents pass on,
    :math:`c_j = \frac{1}{|\mathcal P(j)|}\sum_{p\in\mathcal P(j)} c_p/|\mathrm{children}(p)|`,
    so that weights never grow down the hierarchy.

    **Linear form.** For consistent :math:`y, y'` write :math:`\pi_j(y) = \prod_{p \in
    \mathcal P(j)} y_p` (1 for top-level labels). Label :math:`j`'s term is
    :math:`c_j[y_j(1-y'_j)\pi_j(y') + y'_j(1-y_j)\pi_j(y)]`
    :math:`= c_j y_j(\pi_j(y') - 2y'_j) + c_j y'_j \pi_j(y)`. On a tree
    :math:`\pi_j(y) = y_{p(j)}` is linear, giving

    .. math:: \psi(y')_j = c_j(\pi_j(y') - 2y'_j) + \sum_{k \in \mathrm{children}(j)} c_k y'_k,
              \qquad \mathrm{const}(y') = \sum_{j\ \mathrm{top}} c_j y'_j ,

    the paper's Proposition 3.2. On a DAG the products :math:`\pi_k(y)` of labels with
    several parents are not linear in :math:`y`: they become extra coordinates of
    :math:`\phi(y) = (y, \pi_k(y))_k` with :math:`\psi(y')_k = c_k y'_k`, and the inference
    is solved exactly as a mixed-integer programme (:meth:`Hierarchy.argmin_products`, the
    hierarchy's oracle of the cost form :attr:`cost_form`).
    """

    def __init__(self, hierarchy):
        self.hierarchy = hierarchy
        d = hierarchy.n_labels
        edges = np.asarray(hierarchy.edges, dtype=int).reshape(-1, 2)
        # P[p, j] = 1 for every edge p -> j.
        self._P = sp.csr_array((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(d, d))
        self._multi = np.asarray(hierarchy.multi_parent, dtype=int)
        self._single = np.array([len(p) == 1 for p in hierarchy.parents])
        self._top = np.asarray(hierarchy.top_level, dtype=int)
        n_children = np.array([len(ch) for ch in hierarchy.children], dtype=float)
        self.weights = np.zeros(d)
        for j in hierarchy.order:
            parents = hierarchy.parents[j]
            self.weights[j] = (1.0 / len(self._top) if len(parents) == 0
                               else np.mean(self.weights[parents] / n_children[parents]))

    @classmethod
    def for_space(cls, space) -> HierarchicalLoss:
        """The loss on the output space ``space``."""
        return cls(space)

    def __call__(self, Y_pred, Y_true):
        Y_pred, Y_true = paired_rows(Y_pred, Y_true)
        d = self.hierarchy.n_labels
        Y_pred, Y_true = (check_binary_matrix(Y, d, what)
                          for Y, what in ((Y_pred, "Y_pred"), (Y_true, "Y_true")))
        wrong = Y_pred != Y_true
        wrong_parents = wrong.astype(float) @ self._P
        return (wrong & (wrong_parents == 0)).astype(float) @ self.weights

    def _parent_products(self, Y) -> np.ndarray:
        """:math:`\\pi_j(y)` for every label: 1 iff every parent is on."""
        return ((1.0 - Y) @ self._P == 0).astype(float)

    def psi(self, Y_ref):
        Y_ref = np.asarray(Y_ref, dtype=float)
        c = self.weights
        own = c * (self._parent_products(Y_ref) - 2.0 * Y_ref)
        from_children = (Y_ref * (c * self._single)) @ self._P.T
        return np.hstack([own + from_children, c[self._multi] * Y_ref[:, self._multi]])

    def const(self, Y_ref):
        Y_ref = np.asarray(Y_ref, dtype=float)
        return Y_ref[:, self._top] @ self.weights[self._top]

    def phi(self, Y):
        Y = np.asarray(Y, dtype=float)
        if not len(self._multi):  # a tree: no product coordinates
            return Y.copy()
        return np.hstack([Y, self._parent_products(Y)[:, self._multi]])

    def check_space(self, space) -> None:
        """Raise ``ValueError`` unless ``space`` is this loss's hierarchy (equal labels, edges)."""
        if space != self.hierarchy:
            raise ValueError(f"HierarchicalLoss was built on {self.hierarchy!r} but the output "
                             f"space is {space!r}: build the loss on the output space's hierarchy")

    @property
    def cost_form(self) -> str:
        """Costs of the labels, then of the parent products of the multi-parent labels (width
        ``d + len(multi_parent)``): :attr:`Hierarchy.PARENT_PRODUCTS`, minimised by
        :meth:`Hierarchy.argmin_products`."""
        return self.hierarchy.PARENT_PRODUCTS

    def __repr__(self):
        return f"HierarchicalLoss({self.hierarchy!r})"
