"""The linear oracles of a hierarchy (tree DP, DAG closure, LP, the hierarchical loss's oracle)
and the set-up they cache: :class:`Oracles`, a mixin of :class:`~ecrm.spaces.hierarchy.Hierarchy`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ecrm.spaces._scaling import highs_costs
from ecrm.spaces.hierarchy._closure import LevelPlan, closure_argmin, make_level_plan
from ecrm.spaces.hierarchy._products import products_argmin

__all__ = ["Oracles"]


class Oracles:
    """The oracle methods of :class:`~ecrm.spaces.hierarchy.Hierarchy`."""

    if TYPE_CHECKING:  # built by Hierarchy
        _edges: np.ndarray
        _parents: tuple
        _depth: np.ndarray
        _indeg: np.ndarray
        _is_tree: bool
        _multi_parent: np.ndarray
        _top_level: np.ndarray
        _tree_plan: tuple | None
        _levels: LevelPlan | None
        _plus: tuple | None
        _stats: dict

        @property
        def n_labels(self) -> int: ...
        def ancestors_matrix(self) -> sp.csr_array: ...
        def check_costs(self, C, width: int | None = None,
                        what: str = ...) -> np.ndarray: ...

    _METHODS = ("auto", "dp", "mincut", "lp")
    # Rows per block of the DAG oracles: a block holds a few (rows, d + E) arrays, so memory
    # stays bounded (about 2^20 entries per array) whatever the batch.
    _BLOCK_ENTRIES = 2**20

    def argmin(self, C, method: str = "auto") -> np.ndarray:
        """Exact minimisers of a linear cost over consistent label vectors.

        For every row :math:`c` of ``C`` solve

        .. math:: \\min_{y \\in \\{0,1\\}^d} \\sum_j c_j y_j \\quad \\text{s.t.} \\quad
                  y_j \\le y_k \\ \\ \\forall (k, j) \\in \\mathcal{A} .

        Every method gives the same answer for costs ``s * C``, ``s > 0``.

        Parameters
        ----------
        C : array-like of shape (n, d) or (d,)
            Costs, any sign.
        method : {"auto", "dp", "mincut", "lp"}, default="auto"
            * ``"dp"`` (trees/forests only): batched dynamic programme over depth
              levels, :math:`O(nd)` work. Bottom-up
              :math:`g_j = c_j + \\sum_{i \\in \\mathrm{ch}(j)} \\min(0, g_i)`, then
              top-down :math:`y_j = y_{p(j)} \\wedge [g_j < 0]`. Exact in floating point
              (up to the rounding of the sums).
            * ``"mincut"`` (any DAG): minimum-weight closure (Picard, 1976), exact for the
              float costs given: exact reductions (forcing, switching off, contraction of
              degree-one arcs), then minimum s-t cuts on integer capacities certified on the
              original costs, a component whose certificate fails being re-solved in exact
              integer arithmetic; compiled when numba is installed (the ``fast`` extra). See
              :mod:`ecrm.spaces.hierarchy._closure`.
            * ``"lp"``: the paper's LP relaxation, one HiGHS ``linprog`` per row on the row
              scaled by a power of two to an l1 norm near :math:`2^{20}`; exact because the
              constraint matrix is totally unimodular, up to HiGHS's absolute tolerances
              (about :math:`10^{-13}` of :math:`\\sum_j |c_j|`). A slow reference.
            * ``"auto"``: ``"dp"`` on a tree, ``"mincut"`` otherwise.

        Returns
        -------
        Y : ndarray of float, shape (n, d)
            Consistent 0/1 minimisers. Among ties, ``"dp"`` leaves a subtree off when
            its best value is exactly zero.
        """
        C = self.check_costs(C)
        if method not in self._METHODS:
            raise ValueError(f"unknown method {method!r}; valid methods are "
                             + ", ".join(map(repr, self._METHODS)))
        if method == "auto":
            method = "dp" if self._is_tree else "mincut"
        if method == "dp" and not self._is_tree:
            raise ValueError("method 'dp' needs a tree or forest; this hierarchy has "
                             f"{len(self._multi_parent)} labels with several parents "
                             "(use 'mincut' or 'auto')")
        if method in ("dp", "mincut") and self._is_tree:
            return _forest_dp(C, self._forest())
        if method == "mincut":
            return self._in_blocks(
                lambda B: closure_argmin(self._level_plan(), self._edges, B, stats=self._stats),
                C).astype(float)
        return self._argmin_lp(C)

    def _in_blocks(self, solve, C: np.ndarray, *more) -> np.ndarray:
        """``solve(C[block], *(M[block] for M in more))`` over blocks of rows, stacked."""
        n = len(C)
        step = max(1, self._BLOCK_ENTRIES // (self.n_labels + len(self._edges)))
        if n <= step:
            return solve(C, *more)
        return np.concatenate([solve(C[i : i + step], *(M[i : i + step] for M in more))
                               for i in range(0, n, step)])

    def _forest(self) -> tuple:
        """Levels of the forest (the hierarchy, a tree): nodes, parents, DP sum matrices."""
        if self._tree_plan is None:
            par = np.full(self.n_labels, -1, dtype=np.intp)
            has = self._indeg > 0
            par[has] = [self._parents[j][0] for j in np.flatnonzero(has)]
            levels = []
            for nodes, _, _, _ in self._level_plan().levels:
                uniq, inv = np.unique(par[nodes], return_inverse=True)
                S = sp.csr_array((np.ones(len(nodes)), (inv, np.arange(len(nodes)))),
                                 shape=(len(uniq), len(nodes)))
                levels.append((nodes, par[nodes], uniq, S))
            self._tree_plan = self._top_level, levels
        return self._tree_plan

    def _level_plan(self) -> LevelPlan:
        if self._levels is None:
            self._levels = make_level_plan(self._parents, np.asarray(self._depth),
                                           self.ancestors_matrix())
        return self._levels

    def _product_closure(self) -> tuple:
        """The augmented DAG of :mod:`ecrm.spaces.hierarchy._products` and its product matrix.

        ``(plus, of_product, parents_of)``: a :class:`Hierarchy` on ``d + K`` labels (these
        ``d``, then one node per multi-parent label ``multi_parent[k]``, child of that label's
        parents), the 0/1 CSR matrix (K, d) of the parents of each ``multi_parent[k]`` and its
        transpose (CSR, (d, K)). Built once, with the augmented DAG's closure set-up.
        """
        if self._plus is None:
            d, multi = self.n_labels, self._multi_parent
            n_parents = np.array([len(self._parents[m]) for m in multi], dtype=np.intp)
            owner = np.repeat(np.arange(len(multi)), n_parents)
            parents = np.concatenate([self._parents[m] for m in multi]).astype(np.intp)
            from ecrm.spaces.hierarchy._space import Hierarchy

            plus = Hierarchy([(int(p), int(c)) for p, c in self._edges]
                             + [(int(p), d + int(k)) for p, k in zip(parents, owner, strict=True)],
                             labels=range(d + len(multi)))
            of_product = sp.csr_array((np.ones(len(owner)), (owner, parents)),
                                      shape=(len(multi), d))
            plus._level_plan()  # cached on plus: single-row calls pay it once
            self._plus = (plus, of_product, of_product.T.tocsr())
        return self._plus

    def _argmin_lp(self, C: np.ndarray) -> np.ndarray:
        from scipy.optimize import linprog

        n, d = C.shape
        E, m = self._edges, len(self._edges)
        A_ub = b_ub = None
        if m:  # rows y_child - y_parent <= 0, one per edge
            A_ub = sp.csr_array((np.concatenate([np.ones(m), -np.ones(m)]),
                                 (np.tile(np.arange(m), 2), np.concatenate([E[:, 1], E[:, 0]]))),
                                shape=(m, d))
            b_ub = np.zeros(m)
        Y = np.zeros((n, d))
        C_highs = highs_costs(C)[0]
        for i in np.flatnonzero(np.any(C != 0, axis=1)):  # a zero row: the empty set
            res = linprog(C_highs[i], A_ub=A_ub, b_ub=b_ub, bounds=(0, 1), method="highs")
            if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
                raise RuntimeError(f"HiGHS failed on row {i}: {res.message}")
            Y[i] = res.x > 0.5
        return Y

    def argmin_products(self, C, P) -> np.ndarray:
        """Exact oracle with extra terms on the parents of multi-parent labels.

        For every row solve

        .. math:: \\min_{y \\in \\mathcal{Y}} \\sum_j c_j y_j
                  + \\sum_k p_k \\prod_{q \\in \\mathcal{P}(m_k)} y_q ,

        where :math:`m_k` = ``multi_parent[k]``, the oracle of the hierarchical loss on a
        DAG: exact reductions by two closures, then per connected component left a branch
        and bound (enumeration without numba) or a MILP
        (:mod:`ecrm.spaces.hierarchy._products`). The answer is the same for
        ``(s * C, s * P)``, ``s > 0``.

        Parameters
        ----------
        C : array-like of shape (n, d)
            Linear costs, any sign.
        P : array-like of shape (n, len(multi_parent))
            Costs of the parent-products, any sign.

        Returns
        -------
        Y : ndarray of float, shape (n, d)
        """
        C = self.check_costs(C)
        K = len(self._multi_parent)
        P = np.asarray(P, dtype=float)
        P = P[None, :] if P.ndim == 1 else P
        if P.shape != (C.shape[0], K):
            raise ValueError(f"P must have shape ({C.shape[0]}, {K}) (one column per "
                             f"multi-parent label); got shape {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ValueError("P contains NaN or infinite values")
        if K == 0:
            return self.argmin(C)
        return self._in_blocks(lambda B, Q: products_argmin(self, B, Q, self._stats),
                               C, P).astype(float)


def _forest_dp(C: np.ndarray, plan: tuple) -> np.ndarray:
    """Batched tree DP on a forest given by ``plan = (top, levels)``; returns (n, d) float."""
    top, levels = plan
    G = np.array(C.T, dtype=float, order="C")  # node-major (d, n)
    for nodes, _, uniq, S in reversed(levels):
        G[uniq] += S @ np.minimum(G[nodes], 0.0)
    on = np.zeros(G.shape, dtype=bool)
    on[top] = G[top] < 0
    for nodes, par, _, _ in levels:
        on[nodes] = on[par] & (G[nodes] < 0)
    return on.T.astype(float)
