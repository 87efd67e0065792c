"""The :class:`Hierarchy` output space: label sets closed under parents, in a tree or a DAG."""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable, Mapping
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ecrm.spaces._scaling import highs_costs
from ecrm.spaces.base import OutputSpace, all_binary_vectors, check_binary_matrix
from ecrm.spaces.hierarchy._closure import LevelPlan, closure_argmin, make_level_plan
from ecrm.spaces.hierarchy._products import products_argmin

__all__ = ["Hierarchy"]


def _frozen(a) -> np.ndarray:
    a = np.asarray(a)
    a.setflags(write=False)
    return a


def _networkx_digraph(obj):
    """Return ``obj`` if it is a networkx directed graph, ``None`` if not networkx at all."""
    if not type(obj).__module__.startswith("networkx"):
        return None
    import networkx as nx

    if isinstance(obj, nx.DiGraph):
        return obj
    raise TypeError(
        "a networkx hierarchy must be a DiGraph with edges parent -> child; "
        f"got {type(obj).__name__}"
    )


def _pairs_from_parent_map(mapping: Mapping) -> tuple[list, list]:
    """(pairs, nodes in order of first appearance) from ``{child: parent or [parents]}``."""
    pairs: list = []
    nodes: list = []
    for child, value in mapping.items():
        if value is None:
            parents = []
        elif isinstance(value, (list, tuple, set, frozenset)):
            parents = list(value)
        else:
            parents = [value]
        for p in parents:
            nodes.append(p)
            pairs.append((p, child))
        nodes.append(child)
    return pairs, nodes


def _pairs_from_iterable(edges: Iterable) -> tuple[list, list]:
    pairs: list = []
    nodes: list = []
    for e in edges:
        try:
            parent, child = e
        except (TypeError, ValueError):
            raise ValueError(f"each edge must be a (parent, child) pair; got {e!r}") from None
        pairs.append((parent, child))
        nodes.append(parent)
        nodes.append(child)
    return pairs, nodes


class Hierarchy(OutputSpace):
    r"""Label sets closed under taking parents, in a tree or a DAG of labels.

    A label vector :math:`y \in \{0, 1\}^d` is *consistent* when every label on implies
    all its parents on,

    .. math:: y_j \le y_k \quad \text{for every edge } (k, j) \in \mathcal{A}
              \text{ (parent } k \text{, child } j\text{)} ,

    (ECRM paper, Section 3.1, Example 1). Top-level labels hang under a virtual root
    that is always on and is not a column. The linear oracle :meth:`argmin` solves

    .. math:: \hat y(c) \in \arg\min_{y \in \mathcal{Y}} \sum_{j=1}^d c_j y_j

    exactly for costs of any sign: by a batched dynamic programme on trees, by a
    minimum-weight closure (min cut) on DAGs, or by the LP relaxation, which is exact
    because the constraint matrix is totally unimodular.

    Parameters
    ----------
    edges : iterable of (parent, child) pairs, mapping, or networkx.DiGraph
        The hierarchy. Either an iterable of ``(parent, child)`` pairs of hashable
        labels; or a parent map ``{child: parent}`` or ``{child: [parents, ...]}`` (a
        ``list``, ``tuple`` or ``set`` value means several parents; ``None`` or ``[]``
        means top-level); or a networkx ``DiGraph`` with edges parent -> child (its
        isolated nodes become top-level labels).
    root : hashable, optional
        A node to treat as the virtual root (e.g. ``"root"`` in GO-style files with
        edges ``root/GO0003674``). It is dropped and its children become top-level; a
        node with the root and other parents simply loses the root edge. An edge
        *into* the root is an error. The root must not appear in ``labels``.
    labels : iterable of hashable, optional
        Column order, possibly with extra isolated top-level labels. Every node of
        ``edges`` must be in it and labels must be unique. Default: the order of first
        appearance in ``edges`` (parent before child within a pair; networkx node order
        for a graph).

    Attributes
    ----------
    labels : tuple
        Column order (real labels only).
    n_labels, n_outputs : int
        Number of labels ``d``.
    index : mapping
        Read-only ``label -> column``.
    parents, children : tuple of int ndarray
        One array of columns per column.
    edges : int ndarray of shape (E, 2)
        ``(parent, child)`` column pairs, the virtual root excluded.
    top_level : int ndarray
        Columns without parents.
    order : int ndarray of shape (d,)
        A topological order of the columns, parents first (sorted by depth).
    depth : int ndarray of shape (d,)
        0 for top-level labels, else ``1 + max(depth of parents)``.
    is_tree : bool
        Every label has at most one parent (a forest under the virtual root).
    multi_parent : int ndarray
        Columns with two or more parents.

    Raises
    ------
    ValueError
        On a self-loop, a duplicate edge, an edge into ``root``, a cycle (named, e.g.
        ``cycle: a -> b -> a``), nodes missing from ``labels``, duplicate labels, or an
        empty hierarchy.

    Examples
    --------
    >>> h = Hierarchy([("animal", "dog"), ("animal", "cat"), ("dog", "puppy")])
    >>> h.labels
    ('animal', 'dog', 'cat', 'puppy')
    >>> h.argmin([[1.0, 0.5, 2.0, -2.0], [1.0, -0.5, -0.1, 3.0]])
    array([[1., 1., 0., 1.],
           [0., 0., 0., 0.]])
    >>> h.close([[0, 0, 0, 1]])
    array([[1., 1., 0., 1.]])
    """

    def __init__(self, edges, *, root: Hashable | None = None, labels: Iterable | None = None):
        if isinstance(edges, (str, bytes)):
            raise TypeError(
                "edges must be (parent, child) pairs, a parent map or a DiGraph; got a string"
            )
        graph = _networkx_digraph(edges)
        if graph is not None:
            pairs = list(graph.edges())
            nodes = list(graph.nodes())
        elif isinstance(edges, Mapping):
            pairs, nodes = _pairs_from_parent_map(edges)
        else:
            pairs, nodes = _pairs_from_iterable(edges)

        seen_pairs: set = set()
        for p, c in pairs:
            if p == c:
                raise ValueError(f"self-loop on node {p!r}")
            if (p, c) in seen_pairs:
                raise ValueError(f"duplicate edge ({p!r}, {c!r})")
            seen_pairs.add((p, c))
        if root is not None:
            for p, c in pairs:
                if c == root:
                    raise ValueError(f"edge into the root {root!r} from {p!r}")
            pairs = [(p, c) for p, c in pairs if p != root]
            nodes = [v for v in nodes if v != root]

        if labels is None:
            label_list = list(dict.fromkeys(nodes))
        else:
            label_list = list(labels)
            counts: dict = {}
            for v in label_list:
                counts[v] = counts.get(v, 0) + 1
            dups = [v for v, k in counts.items() if k > 1]
            if dups:
                raise ValueError(f"duplicate labels: {', '.join(map(repr, dups))}")
            if root is not None and root in counts:
                raise ValueError(f"the root {root!r} must not appear in labels")
            unknown = [v for v in dict.fromkeys(nodes) if v not in counts]
            if unknown:
                raise ValueError(f"nodes not in labels: {', '.join(map(repr, unknown))}")
        if not label_list:
            raise ValueError("empty hierarchy: no labels")
        _check_distinct_names(label_list + list(nodes))

        index = {v: j for j, v in enumerate(label_list)}
        E = np.array([(index[p], index[c]) for p, c in pairs], dtype=np.intp).reshape(-1, 2)
        self._build(tuple(label_list), index, E)

    # ------------------------------------------------------------------ construction
    def _build(self, labels: tuple, index: dict, E: np.ndarray) -> None:
        d = len(labels)
        self._labels = labels
        self._index = index
        # group edges by child (parents) and by parent (children), stable in edge order
        by_child = np.argsort(E[:, 1], kind="stable")
        by_parent = np.argsort(E[:, 0], kind="stable")
        indeg = np.bincount(E[:, 1], minlength=d)
        outdeg = np.bincount(E[:, 0], minlength=d)
        par_ptr = np.concatenate([[0], np.cumsum(indeg)])
        chi_ptr = np.concatenate([[0], np.cumsum(outdeg)])
        par_idx = E[by_child, 0]
        chi_idx = E[by_parent, 1]
        self._parents = tuple(
            _frozen(par_idx[par_ptr[j] : par_ptr[j + 1]].copy()) for j in range(d)
        )
        self._children = tuple(
            _frozen(chi_idx[chi_ptr[j] : chi_ptr[j + 1]].copy()) for j in range(d)
        )
        self._edges = _frozen(E)

        # Kahn's algorithm: topological order and depth
        remaining = indeg.copy()
        depth = np.zeros(d, dtype=np.intp)
        queue = [j for j in range(d) if remaining[j] == 0]
        head = 0
        while head < len(queue):
            j = queue[head]
            head += 1
            for c in self._children[j]:
                if depth[c] < depth[j] + 1:
                    depth[c] = depth[j] + 1
                remaining[c] -= 1
                if remaining[c] == 0:
                    queue.append(int(c))
        if len(queue) < d:
            raise ValueError(self._cycle_message(remaining))
        self._depth = _frozen(depth)
        self._order = _frozen(np.lexsort((np.arange(d), depth)).astype(np.intp))
        self._top_level = _frozen(np.flatnonzero(indeg == 0))
        self._multi_parent = _frozen(np.flatnonzero(indeg >= 2))
        self._is_tree = bool(np.all(indeg <= 1))
        self._indeg = indeg
        self._ancestors: sp.csr_array | None = None
        self._tree_plan: tuple | None = None
        self._levels: LevelPlan | None = None
        self._plus: tuple | None = None
        self._cap_levels: list | None = None
        self._child_parent: sp.csr_array | None = None
        self._stats: dict = {}  # the DAG oracles' counts: cut components, exact re-solves

    def _cycle_message(self, remaining: np.ndarray) -> str:
        # every node left over by Kahn's algorithm has a parent that is also left over;
        # walk up the parents until a node repeats
        start = int(np.flatnonzero(remaining > 0)[0])
        path = [start]
        pos = {start: 0}
        while True:
            j = path[-1]
            p = next(int(q) for q in self._parents[j] if remaining[q] > 0)
            if p in pos:
                cyc = path[pos[p] :][::-1]  # parent -> child direction
                first = cyc.index(min(cyc))  # start at the earliest column
                cyc = cyc[first:] + cyc[:first]
                names = [str(self._labels[k]) for k in cyc]
                return "cycle: " + " -> ".join(names + [names[0]])
            pos[p] = len(path)
            path.append(p)

    @classmethod
    def from_parents(cls, mapping: Mapping, **kw) -> Hierarchy:
        """Build from a parent map ``{child: parent}`` or ``{child: [parents, ...]}``."""
        if not isinstance(mapping, Mapping):
            raise TypeError(
                f"from_parents expects a mapping child -> parent(s); got {type(mapping).__name__}"
            )
        return cls(mapping, **kw)

    @classmethod
    def from_networkx(cls, graph, **kw) -> Hierarchy:
        """Build from a networkx ``DiGraph`` with edges parent -> child."""
        if _networkx_digraph(graph) is None:
            raise TypeError(f"from_networkx expects a networkx DiGraph; got {type(graph).__name__}")
        return cls(graph, **kw)

    # ------------------------------------------------------------------ attributes
    @property
    def labels(self) -> tuple:
        return self._labels

    @property
    def n_labels(self) -> int:
        return len(self._labels)

    @property
    def output_names(self) -> tuple:
        """The labels, in column order (the names of the output coordinates)."""
        return self._labels

    @property
    def n_outputs(self) -> int:
        return len(self._labels)

    @property
    def index(self) -> Mapping:
        # a read-only view made on access: a stored view would not pickle (clone, joblib)
        return MappingProxyType(self._index)

    @property
    def parents(self) -> tuple:
        return self._parents

    @property
    def children(self) -> tuple:
        return self._children

    @property
    def edges(self) -> np.ndarray:
        return self._edges

    @property
    def top_level(self) -> np.ndarray:
        return self._top_level

    @property
    def order(self) -> np.ndarray:
        return self._order

    @property
    def depth(self) -> np.ndarray:
        return self._depth

    @property
    def is_tree(self) -> bool:
        return self._is_tree

    @property
    def multi_parent(self) -> np.ndarray:
        return self._multi_parent

    def __repr__(self) -> str:
        kind = "tree" if self._is_tree else "DAG"
        return (
            f"Hierarchy(n_labels={self.n_labels}, n_edges={len(self._edges)}, {kind}, "
            f"max_depth={int(self._depth.max())})"
        )

    def _key(self) -> tuple:
        """The labels in column order and the sorted set of (parent, child) column pairs."""
        E = self._edges[np.lexsort((self._edges[:, 1], self._edges[:, 0]))]
        return self._labels, E.tobytes()

    def __eq__(self, other) -> bool:
        """Same labels in the same column order and the same edges (in any order)."""
        if not isinstance(other, Hierarchy):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    # ------------------------------------------------------------------ structure helpers
    def ancestors_matrix(self) -> sp.csr_array:
        """Reflexive-transitive ancestor relation as a sparse boolean matrix.

        Returns
        -------
        A : scipy.sparse.csr_array of bool, shape (d, d)
            ``A[j, k]`` is true iff ``k == j`` or ``k`` is an ancestor of ``j``.
            Computed once and cached; do not modify it.
        """
        if self._ancestors is None:
            d = self.n_labels
            anc: list = [None] * d
            for j in self._order:
                ps = self._parents[j]
                if len(ps) == 0:
                    anc[j] = np.array([j], dtype=np.intp)
                elif len(ps) == 1:
                    anc[j] = np.append(anc[ps[0]], j)
                else:
                    anc[j] = np.union1d(np.concatenate([anc[p] for p in ps]), [j])
            lengths = np.fromiter((len(a) for a in anc), dtype=np.intp, count=d)
            indptr = np.concatenate([[0], np.cumsum(lengths)])
            indices = np.concatenate(anc)
            A = sp.csr_array((np.ones(len(indices), dtype=bool), indices, indptr), shape=(d, d))
            A.sort_indices()
            self._ancestors = A
        return self._ancestors

    def _binary(self, Y, what: str = "Y"):
        """Dense float 0/1 copy of ``Y``, or a sparse CSR copy with 0/1 data."""
        if sp.issparse(Y):
            Y = sp.csr_array(Y, dtype=float, copy=True)
            if Y.shape[1] != self.n_labels:
                raise ValueError(
                    f"{what} must have shape (n, {self.n_labels}); got shape {Y.shape}"
                )
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
        if self._child_parent is None:
            d = self.n_labels
            E = self._edges
            self._child_parent = sp.csr_array(
                (np.ones(len(E)), (E[:, 1], E[:, 0])), shape=(d, d)
            )  # [child, parent]
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
        if sp.issparse(Y):
            Y = Y.toarray()
        return self._violations(Y) == 0

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
            raise ValueError(
                f"Y is not consistent with the hierarchy: in row {i}, label {child!r} is on "
                f"but its parent {parent!r} is off; use hierarchy.close(Y) to switch on "
                "all ancestors"
            )
        return Y

    def contains(self, Y) -> np.ndarray:
        """Whether each row of ``Y`` is a 0/1 vector consistent with the hierarchy, shape (n,)."""
        Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=float)
        Y = Y[None, :] if Y.ndim == 1 else Y
        if Y.ndim != 2 or Y.shape[1] != self.n_labels:
            return np.zeros(len(Y), dtype=bool)
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

    # ------------------------------------------------------------------ oracles
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
              float costs given. Rows are processed in blocks; in each, sparse products with
              the cached ancestor relation switch on labels that are on in some optimum
              (their cost plus their ancestors' unpaid positive costs is not positive) and
              switch off labels with their descendants when that cannot gain (their cost
              plus their descendants' negative costs is not negative), degree-one arcs are
              contracted (a label of cost <= 0 with one parent follows it, one of cost > 0
              with one child follows that child), a small remainder is solved in exact
              integer arithmetic and a large one splits into
              connected components, each solved by a minimum s-t cut on integer capacities
              (``scipy.sparse.csgraph.maximum_flow``) whose optimality is then certified on the
              original costs; a component whose certificate fails (a near-tie finer than the
              rounding) is re-solved in exact integer arithmetic. See
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
            raise ValueError(
                f"unknown method {method!r}; valid methods are "
                + ", ".join(map(repr, self._METHODS))
            )
        if method == "auto":
            method = "dp" if self._is_tree else "mincut"
        if method == "dp":
            if not self._is_tree:
                raise ValueError(
                    "method 'dp' needs a tree or forest; this hierarchy has "
                    f"{len(self._multi_parent)} labels with several parents "
                    "(use 'mincut' or 'auto')"
                )
            return _forest_dp(C, self._forest())
        if method == "mincut":
            if self._is_tree:
                return _forest_dp(C, self._forest())
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
        if self._tree_plan is None:
            self._tree_plan = self._make_forest_plan()
        return self._tree_plan

    def _level_plan(self) -> LevelPlan:
        if self._levels is None:
            self._levels = make_level_plan(self._parents, np.asarray(self._depth),
                                           self.ancestors_matrix())
        return self._levels

    def _product_closure(self) -> tuple:
        """The augmented DAG of :mod:`ecrm.spaces.hierarchy._products` and its product matrix.

        ``(plus, of_product)``: a :class:`Hierarchy` on ``d + K`` labels (these ``d``, then one
        node per multi-parent label ``multi_parent[k]``, child of that label's parents) and
        the 0/1 CSR matrix (K, d) of the parents of each ``multi_parent[k]``. Built once.
        """
        if self._plus is None:
            d, multi = self.n_labels, self._multi_parent
            n_parents = np.array([len(self._parents[m]) for m in multi], dtype=np.intp)
            owner = np.repeat(np.arange(len(multi)), n_parents)
            parents = np.concatenate([self._parents[m] for m in multi]).astype(np.intp)
            plus = Hierarchy([(int(p), int(c)) for p, c in self._edges]
                             + [(int(p), d + int(k)) for p, k in zip(parents, owner, strict=True)],
                             labels=range(d + len(multi)))
            of_product = sp.csr_array((np.ones(len(owner)), (owner, parents)),
                                      shape=(len(multi), d))
            self._plus = (plus, of_product)
        return self._plus

    def _make_forest_plan(self) -> tuple:
        """Levels of the forest (the hierarchy, a tree): nodes, parents, DP sum matrices."""
        par = np.full(self.n_labels, -1, dtype=np.intp)
        has = self._indeg > 0
        par[has] = [self._parents[j][0] for j in np.flatnonzero(has)]
        levels = []
        for nodes, _, _, _ in self._level_plan().levels:
            uniq, inv = np.unique(par[nodes], return_inverse=True)
            S = sp.csr_array(
                (np.ones(len(nodes)), (inv, np.arange(len(nodes)))), shape=(len(uniq), len(nodes))
            )
            levels.append((nodes, par[nodes], uniq, S))
        return self._top_level, levels

    def _constraint_matrix(self) -> sp.csr_array:
        """Rows ``y_child - y_parent`` for every edge."""
        E = self._edges
        m = len(E)
        r = np.concatenate([np.arange(m), np.arange(m)])
        c = np.concatenate([E[:, 1], E[:, 0]])
        v = np.concatenate([np.ones(m), -np.ones(m)])
        return sp.csr_array((v, (r, c)), shape=(m, self.n_labels))

    def _argmin_lp(self, C: np.ndarray) -> np.ndarray:
        from scipy.optimize import linprog

        n, d = C.shape
        A_ub = self._constraint_matrix() if len(self._edges) else None
        b_ub = np.zeros(len(self._edges)) if len(self._edges) else None
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

        where :math:`m_k` = ``multi_parent[k]``: exact reductions by two closures that
        bound the optimum from both sides (cached augmented DAG with a node per product),
        then, per connected component of what is left with a positive product in it,
        enumeration (small components) or a mixed-integer programme (HiGHS ``milp``, its LP
        relaxation first) on the costs scaled per row
        (:mod:`ecrm.spaces.hierarchy._products`). This
        is the oracle of the hierarchical loss on a DAG. The answer is the same for
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
        if P.ndim == 1:
            P = P[None, :]
        if P.shape != (C.shape[0], K):
            raise ValueError(
                f"P must have shape ({C.shape[0]}, {K}) (one column per multi-parent label); "
                f"got shape {P.shape}"
            )
        if not np.all(np.isfinite(P)):
            raise ValueError("P contains NaN or infinite values")
        if K == 0:
            return self.argmin(C)
        return self._in_blocks(lambda B, Q: products_argmin(self, B, Q, self._stats),
                               C, P).astype(float)


def _check_distinct_names(names: list) -> None:
    """Refuse names that are equal in Python but differ in type (``1``, ``1.0`` and ``True``):
    a dict would silently merge them into one label."""
    first: dict = {}
    for v in names:
        w = first.setdefault(v, v)
        if _name_kind(w) != _name_kind(v):
            raise ValueError(f"labels {w!r} and {v!r} are equal in Python but of different "
                             f"types ({type(w).__name__}, {type(v).__name__}); they would be "
                             "merged into one label: give labels of one type")


def _name_kind(v) -> object:
    """Python and numpy integers are one kind of name, as are floats; bools are their own."""
    if isinstance(v, (bool, np.bool_)):
        return bool
    if isinstance(v, numbers.Integral):
        return int
    if isinstance(v, numbers.Real):
        return float
    return type(v)


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
