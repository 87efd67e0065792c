"""Hierarchical multilabel output space (trees and DAGs) with exact linear oracles."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.base import OutputSpace, all_binary_vectors, check_binary_matrix

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
        self._ancestors = None
        self._tree_plan = None
        self._forest_plan = None
        self._child_parent = None

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

    def cap_by_parents(self, S) -> np.ndarray:
        """Scores made monotone down the hierarchy: each capped by its parents' (capped) scores.

        :math:`\\tilde s_j = \\min(s_j, \\min_{p \\in \\mathcal P(j)} \\tilde s_p)`, computed
        parents first, so that thresholding the result at any level gives a consistent label
        set. Returns a new (n, d) float array.
        """
        S = np.array(S, dtype=float).reshape(-1, self.n_labels)
        T = np.ascontiguousarray(S.T)  # node-major: one row per label
        E = self._edges
        child_depth = self.depth[E[:, 1]] if len(E) else np.zeros(0, dtype=int)
        for level in range(1, int(self.depth.max(initial=0)) + 1):
            into = E[child_depth == level]
            np.minimum.at(T, into[:, 1], T[into[:, 0]])
        return np.ascontiguousarray(T.T)

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

    def argmin(self, C, method: str = "auto") -> np.ndarray:
        """Exact minimisers of a linear cost over consistent label vectors.

        For every row :math:`c` of ``C`` solve

        .. math:: \\min_{y \\in \\{0,1\\}^d} \\sum_j c_j y_j \\quad \\text{s.t.} \\quad
                  y_j \\le y_k \\ \\ \\forall (k, j) \\in \\mathcal{A} .

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
            * ``"mincut"`` (any DAG): minimum-weight closure (Picard, 1976). Only
              ancestors-or-self of negative-cost labels can be on in an optimum, so each
              row is reduced to those candidates first; rows whose candidates contain no
              multi-parent label are solved exactly by one batched DP on a spanning
              forest. Other rows solve a min s-t cut with
              ``scipy.sparse.csgraph.maximum_flow`` (s -> j with capacity
              :math:`-c_j` for :math:`c_j<0`, j -> t with capacity :math:`c_j` for
              :math:`c_j>0`, child -> parent infinite). That routine only takes int32
              capacities, so the candidate costs are scaled so that their total is at
              most :math:`2^{30}` and rounded: the answer is an exact optimum of the
              costs rounded to a grid of step
              :math:`h = \\sum_{j \\in K}|c_j| / (2^{30} - |K|)` (``K`` the candidates)
              and its objective is within :math:`|K| h / 2` of the true optimum.
            * ``"lp"``: the paper's LP relaxation, one HiGHS ``linprog`` per row; exact
              because the constraint matrix is totally unimodular. A slow reference.
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
            if self._tree_plan is None:
                self._tree_plan = self._make_forest_plan()
            return _forest_dp(C, self._tree_plan)
        if method == "mincut":
            return self._argmin_mincut(C)
        return self._argmin_lp(C)

    def _make_forest_plan(self) -> tuple:
        """Levels of the spanning forest keeping each label's first parent."""
        d = self.n_labels
        par = np.full(d, -1, dtype=np.intp)
        has = self._indeg > 0
        par[has] = [self._parents[j][0] for j in np.flatnonzero(has)]
        if self._is_tree:
            dep = np.asarray(self._depth)
        else:
            dep = np.zeros(d, dtype=np.intp)
            for j in self._order:
                if par[j] >= 0:
                    dep[j] = dep[par[j]] + 1
        by_depth = np.argsort(dep, kind="stable")
        bounds = np.searchsorted(dep[by_depth], np.arange(int(dep.max()) + 2))
        levels = []
        for L in range(1, int(dep.max()) + 1):
            nodes = by_depth[bounds[L] : bounds[L + 1]]
            uniq, inv = np.unique(par[nodes], return_inverse=True)
            S = sp.csr_array(
                (np.ones(len(nodes)), (inv, np.arange(len(nodes)))), shape=(len(uniq), len(nodes))
            )
            levels.append((nodes, par[nodes], uniq, S))
        top = by_depth[bounds[0] : bounds[1]]
        return top, levels

    def _argmin_mincut(self, C: np.ndarray) -> np.ndarray:
        n, d = C.shape
        if self._is_tree or n == 0:
            if self._tree_plan is None:
                self._tree_plan = self._make_forest_plan()
            return _forest_dp(C, self._tree_plan)
        forced, rest = self._forced_on(C)
        Y = forced.astype(np.float64)
        if len(rest):  # rows with negative costs left: a cut, the forced labels' costs paid
            Y[rest] = np.maximum(self._argmin_cut(np.where(forced[rest], 0.0, C[rest])),
                                 Y[rest])
        return Y

    def _argmin_cut(self, C: np.ndarray) -> np.ndarray:
        """Minimum-weight closure of each row on a DAG by a minimum s-t cut."""
        n, d = C.shape
        A = self.ancestors_matrix().astype(np.float64)
        cand = (sp.csr_array((C < 0).astype(np.float64)) @ A).tocsr()  # (n, d) candidate counts
        multi = np.zeros(d, dtype=bool)
        multi[self._multi_parent] = True
        mp_count = cand @ multi.astype(np.float64)
        hard = np.flatnonzero(mp_count > 0)
        easy = np.flatnonzero(mp_count == 0)
        Y = np.zeros((n, d))
        if len(easy):
            if self._forest_plan is None:
                self._forest_plan = self._make_forest_plan()
            Y[easy] = _forest_dp(C[easy], self._forest_plan)
        if len(hard):
            from scipy.sparse.csgraph import breadth_first_order, maximum_flow

            E = self._edges
            loc = np.full(d, -1, dtype=np.intp)
            for i in hard:
                nodes = cand.indices[cand.indptr[i] : cand.indptr[i + 1]]
                k = len(nodes)
                c = C[i, nodes]
                total = float(np.abs(c).sum())
                if total == 0.0:
                    continue
                loc[nodes] = np.arange(k)
                emask = loc[E[:, 1]] >= 0  # candidates are closed under parents
                child, parent = loc[E[emask, 1]], loc[E[emask, 0]]
                scale = (2.0**30 - k) / total
                caps = np.rint(np.abs(c) * scale).astype(np.int64)
                inf = int(caps.sum()) + 1
                if inf > 2**30 + 1:  # pragma: no cover - guaranteed by the scaling
                    raise RuntimeError("capacity scaling overflow")
                s, t = k, k + 1
                neg, pos = np.flatnonzero(c < 0), np.flatnonzero(c > 0)
                rows = np.concatenate([np.full(len(neg), s), pos, child])
                cols = np.concatenate([neg, np.full(len(pos), t), parent])
                data = np.concatenate([caps[neg], caps[pos], np.full(len(child), inf)])
                keep = data > 0
                G = sp.csr_array(
                    (data[keep].astype(np.int32), (rows[keep], cols[keep])), shape=(k + 2, k + 2)
                )
                G.sum_duplicates()
                res = maximum_flow(G, s, t)
                R = (G - res.flow).tocsr()
                R.data = (R.data > 0).astype(np.int32)
                R.eliminate_zeros()
                reach = breadth_first_order(R, s, directed=True, return_predecessors=False)
                on = reach[reach < k]
                Y[i, nodes[on]] = 1.0
                loc[nodes] = -1
        return Y

    def _forced_on(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Labels on in some optimum, found without a cut (an exact reduction).

        If :math:`c_j < 0` and :math:`c_j + \\sum_{a \\in \\mathrm{Anc}(j)} \\max(0, c_a) \\le 0`,
        adding :math:`j` and its ancestors to any consistent set costs nothing, so some
        optimum contains them; repeated with the forced labels' costs taken as paid. On
        ECRM's costs most negative labels are forced, and most rows need no cut at all.
        Works on the (few) negative entries only. Returns the forced mask (n, d) and the
        rows that still have a negative cost outside it.
        """
        A = self.ancestors_matrix()
        forced = np.zeros(C.shape, dtype=bool)
        r, j = np.nonzero(C < 0)
        while len(r):
            Aj = A[j]  # row k: the ancestors-or-self of label j[k]
            owner, anc = np.repeat(r, np.diff(Aj.indptr)), Aj.indices
            unpaid = np.where(forced[owner, anc], 0.0, np.maximum(C[owner, anc], 0.0))
            new = C[r, j] + np.add.reduceat(unpaid, Aj.indptr[:-1]) <= 0
            if not new.any():
                break
            Anew = A[j[new]]
            forced[np.repeat(r[new], np.diff(Anew.indptr)), Anew.indices] = True
            left = ~forced[r, j]
            r, j = r[left], j[left]
        return forced, np.unique(r)

    def _constraint_matrix(self, n_extra: int = 0) -> sp.csr_array:
        """Rows ``y_child - y_parent`` for every edge, with ``n_extra`` zero columns appended."""
        E = self._edges
        m = len(E)
        r = np.concatenate([np.arange(m), np.arange(m)])
        c = np.concatenate([E[:, 1], E[:, 0]])
        v = np.concatenate([np.ones(m), -np.ones(m)])
        return sp.csr_array((v, (r, c)), shape=(m, self.n_labels + n_extra))

    def _argmin_lp(self, C: np.ndarray) -> np.ndarray:
        from scipy.optimize import linprog

        n, d = C.shape
        A_ub = self._constraint_matrix() if len(self._edges) else None
        b_ub = np.zeros(len(self._edges)) if len(self._edges) else None
        Y = np.zeros((n, d))
        for i in range(n):
            res = linprog(C[i], A_ub=A_ub, b_ub=b_ub, bounds=(0, 1), method="highs")
            if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
                raise RuntimeError(f"HiGHS failed on row {i}: {res.message}")
            Y[i] = res.x > 0.5
        return Y

    def argmin_products(self, C, P) -> np.ndarray:
        """Exact oracle with extra terms on the parents of multi-parent labels.

        For every row solve

        .. math:: \\min_{y \\in \\mathcal{Y}} \\sum_j c_j y_j
                  + \\sum_k p_k \\prod_{q \\in \\mathcal{P}(m_k)} y_q ,

        where :math:`m_k` = ``multi_parent[k]``, as a mixed-integer programme (HiGHS
        ``milp``) with binaries :math:`z_k \\le y_q` for every parent :math:`q` and
        :math:`z_k \\ge \\sum_q y_q - (|\\mathcal{P}(m_k)| - 1)`. This is the oracle of the
        hierarchical loss on a DAG.

        Notes
        -----
        Each row is first reduced, exactly: labels that cannot be on in some optimum are
        fixed off, and a row with no product left is a closure problem for :meth:`argmin`.
        With :math:`D(j)` the descendants-or-self of :math:`j`, switching :math:`D(j)` off in
        any consistent :math:`y` with :math:`y_j = 1` lowers the objective by at least
        :math:`\\big(c_j + \\sum_{D(j) \\setminus j} \\min(0, c) +
        \\sum_{q \\in D(j)} \\sum_{k: q \\in \\mathcal P(m_k)} \\min(0, p_k)\\big)`, so when that
        bracket is non-negative :math:`D(j)` can be off; and labels that are not
        ancestors-or-self of an attractive label (negative cost, or a parent of a product
        with negative cost) can be off too. On ECRM's costs for Gene Ontology data this
        leaves a few dozen of thousands of labels per row.

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
        # Two reductions, each keeping some optimum (see the Notes above):
        # (1) a label can be on only if it is an ancestor-or-self of an "attractive" label
        #     (negative cost, or a parent of a product with negative cost);
        # (2) label j can be off together with its descendants D(j) when the most that
        #     switching D(j) off could lose, b_j + sum_{D(j) - j} min(0, b) + the negative
        #     product costs over D(j)'s parents, is not negative.
        multi = self._multi_parent
        n_parents = np.array([len(self._parents[k]) for k in multi])
        parents_of_product = sp.csr_array(
            (np.ones(n_parents.sum()),
             (np.repeat(np.arange(K), n_parents),
              np.concatenate([self._parents[k] for k in multi]))),
            shape=(K, self.n_labels))
        A = self.ancestors_matrix().astype(float)
        attractive = (C < 0) | (np.asarray((P < 0) @ parents_of_product) > 0)
        negative = np.minimum(C, 0.0)
        gain = np.asarray((negative + np.minimum(P, 0.0) @ parents_of_product) @ A)
        off = np.asarray(((C + gain - negative) >= 0) @ A.T) > 0  # some ancestor-or-self
        candidate = (np.asarray(attractive.astype(float) @ A) > 0) & ~off
        # A product matters only if all its parents are candidates (else it is 0).
        live = (np.asarray(candidate.astype(float) @ parents_of_product.T) == n_parents) & (P != 0)
        Y = np.zeros(C.shape)
        plain = ~live.any(axis=1)
        if plain.any():  # no live product: a closure problem on the candidates
            Y[plain] = self.argmin(np.where(candidate[plain], C[plain], np.abs(C[plain]) + 1.0))
        hard = np.flatnonzero(~plain)
        for start in range(0, len(hard), self._MILP_BLOCK):
            block = hard[start:start + self._MILP_BLOCK]
            problems = [self._row_problem(C[i], P[i], candidate[i], np.flatnonzero(live[i]))
                        for i in block]
            Y[block] = self._solve_milps(problems)
        return Y

    # Rows solved together as one block-diagonal MILP: amortises HiGHS's per-call overhead
    # (about 2.5x faster than one call per row on Gene Ontology data).
    _MILP_BLOCK = 10

    def _solve_milps(self, problems) -> np.ndarray:
        """Solve independent row problems ``(cost, A, ub, nodes)`` as one HiGHS MILP."""
        from scipy.optimize import Bounds, LinearConstraint, milp

        cost = np.concatenate([c for c, _, _, _ in problems])
        A = sp.block_diag([a for _, a, _, _ in problems], format="csr")
        ub = np.concatenate([u for _, _, u, _ in problems])
        res = milp(cost, constraints=LinearConstraint(A, -np.inf, ub),
                   integrality=np.ones(len(cost)), bounds=Bounds(0, 1),
                   options={"mip_rel_gap": 0.0})  # HiGHS stops at a 1e-4 gap by default
        if res.status != 0:  # pragma: no cover - always feasible (y = 0) and bounded
            raise RuntimeError(f"HiGHS failed: {res.message}")
        Y = np.zeros((len(problems), self.n_labels))
        offset = 0
        for row, (c, _, _, nodes) in enumerate(problems):
            Y[row, nodes] = res.x[offset:offset + len(nodes)] > 0.5
            offset += len(c)
        return Y

    def _row_problem(self, c, p, candidate, products):
        """MILP data for one row: the candidate labels and the live products."""
        nodes = np.flatnonzero(candidate)
        local = np.full(self.n_labels, -1)
        local[nodes] = np.arange(len(nodes))
        E = self._edges
        E = E[candidate[E[:, 0]] & candidate[E[:, 1]]]  # candidates are closed upwards
        n_var = len(nodes) + len(products)
        rows, cols, vals, ub = [], [], [], []
        for r, (q, j) in enumerate(E):  # y_child - y_parent <= 0
            rows += [r, r]
            cols += [local[j], local[q]]
            vals += [1.0, -1.0]
            ub.append(0.0)
        r = len(E)
        for k_local, k in enumerate(products):
            z = len(nodes) + k_local
            ps = local[self._parents[self._multi_parent[k]]]
            for q in ps:  # z - y_q <= 0
                rows += [r, r]
                cols += [z, q]
                vals += [1.0, -1.0]
                ub.append(0.0)
                r += 1
            rows += [r] * (len(ps) + 1)  # sum_q y_q - z <= |P| - 1
            cols += list(ps) + [z]
            vals += [1.0] * len(ps) + [-1.0]
            ub.append(len(ps) - 1.0)
            r += 1
        A = sp.csr_array((vals, (rows, cols)), shape=(r, n_var))
        cost = np.concatenate([c[nodes], p[products]])
        # HiGHS stops within an absolute gap of 1e-6: scale the costs so that gap is negligible.
        cost *= 1e6 / max(np.abs(cost).max(), 1e-300)
        return cost, A, np.asarray(ub, dtype=float), nodes


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
