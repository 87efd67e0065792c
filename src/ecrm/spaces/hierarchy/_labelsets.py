"""Label sets of a hierarchy (checking, closing, naming them, capping scores): :class:`LabelSets`,
a mixin of :class:`~ecrm.spaces.hierarchy.Hierarchy` on the structure that class builds."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.base import all_binary_vectors, check_binary_matrix

__all__ = ["LabelSets"]


class LabelSets:
    """The label-set methods of :class:`~ecrm.spaces.hierarchy.Hierarchy`."""

    if TYPE_CHECKING:  # built by Hierarchy
        _labels: tuple
        _index: dict
        _edges: np.ndarray
        _indeg: np.ndarray
        _cap_levels: list | None
        _child_parent: sp.csr_array | None

        @property
        def n_labels(self) -> int: ...
        @property
        def labels(self) -> tuple: ...
        @property
        def edges(self) -> np.ndarray: ...
        def ancestors_matrix(self) -> sp.csr_array: ...
        def _level_plan(self): ...

    def _binary(self, Y, what: str = "Y"):
        """Dense float 0/1 copy of ``Y``, or a sparse CSR copy with 0/1 data."""
        if sp.issparse(Y):
            Y = sp.csr_array(Y, dtype=float, copy=True)
            if Y.shape[1] != self.n_labels:
                raise ValueError(f"{what} must have shape (n, {self.n_labels}); got shape "
                                 f"{Y.shape}")
            bad = ~((Y.data == 0) | (Y.data == 1))
            if bad.any():
                raise ValueError(f"{what} must contain only 0 and 1; found {Y.data[bad][0]!r}")
            Y.eliminate_zeros()
            return Y
        return check_binary_matrix(Y, self.n_labels, what)

    def close(self, Y) -> np.ndarray:
        """Switch on every ancestor of every label that is on.

        Parameters
        ----------
        Y : array-like or scipy.sparse matrix of shape (n, d)
            0/1 label matrix (not modified).

        Returns
        -------
        Y_closed : ndarray of float, shape (n, d)
            The smallest consistent labelling above ``Y``:
            :math:`\\bar y_k = \\max_{j : k \\preceq j} y_j` (``k`` ancestor-or-self of ``j``).
        """
        Y = self._binary(Y)
        A = self.ancestors_matrix().astype(np.float64)
        if sp.issparse(Y):
            return ((Y @ A).toarray() > 0).astype(float)
        return (np.asarray((A.T @ Y.T).T) > 0).astype(float)

    def to_matrix(self, label_lists, *, close: bool = True) -> np.ndarray:
        """The 0/1 label matrix of a list of label-name collections (one per instance).

        Parameters
        ----------
        label_lists : iterable of iterables of labels
            The labels of each instance, e.g. ``[["dog"], ["cat", "animal"], []]``.
        close : bool, default=True
            Switch on every ancestor of a given label (:meth:`close`); with ``False`` the
            rows are exactly the given labels (and may be inconsistent).

        Returns
        -------
        Y : ndarray of float, shape (n, d)

        Raises
        ------
        ValueError
            Naming the row and the label for a label not in the hierarchy.

        Examples
        --------
        >>> from ecrm import Hierarchy
        >>> h = Hierarchy([("animal", "dog"), ("animal", "cat")])
        >>> h.to_matrix([["dog"], []])
        array([[1., 1., 0.],
               [0., 0., 0.]])
        >>> h.to_labels(h.to_matrix([["dog"], ["cat"]]))
        [['animal', 'dog'], ['animal', 'cat']]
        """
        if isinstance(label_lists, (str, bytes)):
            raise TypeError("label_lists must be a list of label collections; got a string")
        rows = list(label_lists)
        Y = np.zeros((len(rows), self.n_labels))
        for i, labels in enumerate(rows):
            if isinstance(labels, (str, bytes)):
                raise TypeError(f"row {i} of label_lists must be a collection of labels; got "
                                f"the string {labels!r} (wrap it in a list)")
            for v in labels:
                j = self._index.get(v) if isinstance(v, Hashable) else None
                if j is None:
                    raise ValueError(f"row {i} has the label {v!r}, which is not in the "
                                     f"hierarchy ({self.n_labels} labels)")
                Y[i, j] = 1.0
        return self.close(Y) if close else Y

    def to_labels(self, Y, *, leaves_only: bool = False) -> list[list]:
        """The label names switched on in each row of a 0/1 matrix, in column order.

        Parameters
        ----------
        Y : array-like or sparse matrix of shape (n, d)
        leaves_only : bool, default=False
            Keep only the most specific labels of each row (those with no child on).

        Returns
        -------
        labels : list of lists
        """
        Y = self._binary(Y)
        Y = Y.toarray() if sp.issparse(Y) else Y
        on = Y > 0
        if leaves_only:
            child_on = np.zeros_like(on)
            for p, c in np.asarray(self.edges).reshape(-1, 2):
                child_on[:, p] |= on[:, c]
            on = on & ~child_on
        names = self.labels
        return [[names[j] for j in np.flatnonzero(row)] for row in on]

    def cap_by_parents(self, S) -> np.ndarray:
        """Scores made monotone down the hierarchy: each capped by its parents' (capped) scores.

        :math:`\\tilde s_j = \\min(s_j, \\min_{p \\in \\mathcal P(j)} \\tilde s_p)`, computed
        parents first, so that thresholding the result at any level gives a consistent label
        set. Returns a new (n, d) float array.
        """
        S = np.asarray(S, dtype=float).reshape(-1, self.n_labels)
        T = np.ascontiguousarray(S.T)  # node-major: one row per label (a copy if d > 1)
        if T is S or np.shares_memory(T, S):
            T = T.copy()
        for nodes, slots in self._cap_plan():
            # the minimum over the parents, one parent "slot" at a time (row r of slot k:
            # the k-th parent of the r-th node that has more than k parents)
            lowest = T[slots[0][1]]
            for rows, parents in slots[1:]:
                lowest[rows] = np.minimum(lowest[rows], T[parents])
            T[nodes] = np.minimum(T[nodes], lowest)
        return np.ascontiguousarray(T.T)

    def _cap_plan(self) -> list:
        """Per depth level: its nodes and, per parent slot k, (rows, k-th parents)."""
        if self._cap_levels is None:
            levels = []
            for nodes, ups, K, _ in self._level_plan().levels:
                counts = np.diff(K.indptr)  # at least one parent below the top level
                slots = []
                for k in range(int(counts.max(initial=0))):
                    rows = np.flatnonzero(counts > k)
                    slots.append((rows, ups[K.indices[K.indptr[rows] + k]]))
                levels.append((nodes, slots))
            self._cap_levels = levels
        return self._cap_levels

    def _violations(self, Y: np.ndarray) -> np.ndarray:
        """Number of edges (parent off, child on) per row of a dense 0/1 matrix."""
        if len(self._edges) == 0:
            return np.zeros(Y.shape[0])
        if self._child_parent is None:  # [child, parent]
            E, d = self._edges, self.n_labels
            self._child_parent = sp.csr_array((np.ones(len(E)), (E[:, 1], E[:, 0])), shape=(d, d))
        on_children = np.asarray((self._child_parent.T @ Y.T).T)  # (n, d): on children of p
        both_on = np.sum(on_children * Y, axis=1)
        child_on = Y @ self._indeg.astype(float)
        return child_on - both_on

    def is_consistent(self, Y) -> np.ndarray:
        """Whether each row of a 0/1 matrix ``Y`` (n, d) is consistent with the hierarchy.

        Returns
        -------
        ok : ndarray of bool, shape (n,)
        """
        Y = self._binary(Y)
        return self._violations(Y.toarray() if sp.issparse(Y) else Y) == 0

    def validate(self, Y) -> np.ndarray:
        """Check that ``Y`` (n, d) is 0/1 and consistent; return it as a new float array.

        Raises
        ------
        ValueError
            On a wrong shape, a value other than 0/1, or an inconsistent row (naming
            the row, the label and its parent that is off).
        """
        Y = check_binary_matrix(Y, self.n_labels)
        bad = np.flatnonzero(self._violations(Y) > 0)
        if len(bad):
            i = int(bad[0])
            E = self._edges
            e = int(np.flatnonzero((Y[i, E[:, 1]] == 1) & (Y[i, E[:, 0]] == 0))[0])
            parent, child = self._labels[E[e, 0]], self._labels[E[e, 1]]
            raise ValueError(f"Y is not consistent with the hierarchy: in row {i}, label "
                             f"{child!r} is on but its parent {parent!r} is off; use "
                             "hierarchy.close(Y) to switch on all ancestors")
        return Y

    def _contains_rows(self, Y) -> np.ndarray:
        """Whether each row of ``Y`` is a 0/1 vector consistent with the hierarchy, shape (n,)."""
        binary = np.all((Y == 0) | (Y == 1), axis=1)
        return binary & (self._violations(np.where(binary[:, None], Y, 0.0)) == 0)

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        """Every label set consistent with a small hierarchy (at most 16 labels), as rows."""
        Y = all_binary_vectors(self.n_labels, max(max_outputs, 2**16))
        Y = Y[self._violations(Y) == 0]
        if len(Y) > max_outputs:
            raise ValueError(f"refusing to enumerate {len(Y)} label sets "
                             f"(max_outputs={max_outputs})")
        return Y

    def consistent_scores(self, S) -> np.ndarray:
        """Scores capped by their parents' (:meth:`cap_by_parents`)."""
        return self.cap_by_parents(S)
