"""The :class:`Hierarchy` output space and its structure (labels, edges, depths, ancestors); its
label-set methods are in :mod:`._labelsets`, its oracles in :mod:`._oracles`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ecrm.spaces.base import OUTPUTS, OutputSpace
from ecrm.spaces.hierarchy._closure import LevelPlan
from ecrm.spaces.hierarchy._inputs import (
    _check_distinct_names,
    _networkx_digraph,
    _pairs_from_iterable,
    _pairs_from_parent_map,
)
from ecrm.spaces.hierarchy._labelsets import LabelSets
from ecrm.spaces.hierarchy._oracles import Oracles

__all__ = ["Hierarchy"]


def _frozen(a) -> np.ndarray:
    a = np.asarray(a)
    a.setflags(write=False)
    return a


def _grouped(E: np.ndarray, end: int, d: int) -> tuple:
    """Per column ``j``, the other ends of the edges whose end ``end`` (0: parent, 1: child) is
    ``j``, in edge order: the parents (``end=1``) or the children (``end=0``)."""
    other = E[np.argsort(E[:, end], kind="stable"), 1 - end]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(E[:, end], minlength=d))])
    return tuple(_frozen(other[ptr[j] : ptr[j + 1]].copy()) for j in range(d))


class Hierarchy(LabelSets, Oracles, OutputSpace):
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
            raise TypeError("edges must be (parent, child) pairs, a parent map or a DiGraph; "
                            "got a string")
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
            counts = Counter(label_list)
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
        d = len(label_list)
        self._labels, self._index = tuple(label_list), index
        indeg = np.bincount(E[:, 1], minlength=d)
        self._parents, self._children = _grouped(E, 1, d), _grouped(E, 0, d)
        self._edges = _frozen(E)

        # Kahn's algorithm: topological order and depth
        remaining = indeg.copy()
        depth = np.zeros(d, dtype=np.intp)
        queue = [j for j in range(d) if remaining[j] == 0]
        for j in queue:  # the loop also visits the labels appended to the queue
            for c in self._children[j]:
                depth[c] = max(depth[c], depth[j] + 1)
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
            raise TypeError("from_parents expects a mapping child -> parent(s); got "
                            f"{type(mapping).__name__}")
        return cls(mapping, **kw)

    @classmethod
    def from_networkx(cls, graph, **kw) -> Hierarchy:
        """Build from a networkx ``DiGraph`` with edges parent -> child."""
        if _networkx_digraph(graph) is None:
            raise TypeError(f"from_networkx expects a networkx DiGraph; got {type(graph).__name__}")
        return cls(graph, **kw)

    @property
    def labels(self) -> tuple:
        """The labels in column order (real labels only)."""
        return self._labels

    @property
    def output_names(self) -> tuple:
        """The labels, in column order."""
        return self._labels

    @property
    def n_labels(self) -> int:
        """The number of labels ``d``."""
        return len(self._labels)

    @property
    def n_outputs(self) -> int:
        """The number of output columns ``d`` (one per label)."""
        return len(self._labels)

    @property
    def parents(self) -> tuple:
        """Each column's parents: one int array of columns per column."""
        return self._parents

    @property
    def children(self) -> tuple:
        """Each column's children: one int array of columns per column."""
        return self._children

    @property
    def edges(self) -> np.ndarray:
        """The ``(parent, child)`` column pairs (E, 2), the virtual root excluded."""
        return self._edges

    @property
    def top_level(self) -> np.ndarray:
        """The columns without parents."""
        return self._top_level

    @property
    def order(self) -> np.ndarray:
        """A topological order of the columns, parents first (sorted by depth)."""
        return self._order

    @property
    def depth(self) -> np.ndarray:
        """Each column's depth: 0 at the top level, else 1 + its parents' greatest."""
        return self._depth

    @property
    def is_tree(self) -> bool:
        """Whether every label has at most one parent."""
        return self._is_tree

    @property
    def multi_parent(self) -> np.ndarray:
        """The columns with two or more parents."""
        return self._multi_parent

    @property
    def index(self) -> Mapping:
        """The read-only map ``label -> column``."""
        # a read-only view made on access: a stored view would not pickle (clone, joblib)
        return MappingProxyType(self._index)

    #: The cost form of the hierarchical loss (:class:`ecrm.losses.HierarchicalLoss`): a cost
    #: per label, then one per multi-parent label on the product of its parents.
    PARENT_PRODUCTS = "parent_products"

    def minimize(self, C, form: str = OUTPUTS) -> np.ndarray:
        """:meth:`OutputSpace.minimize`; the form :attr:`PARENT_PRODUCTS` (costs of shape
        ``(n, d + len(multi_parent))``, the labels' then the parent products') is solved by
        :meth:`argmin_products`, which is :meth:`argmin` on a tree."""
        if form != self.PARENT_PRODUCTS:
            return super().minimize(C, form)
        C = np.asarray(C, dtype=float)
        d, width = self.n_labels, self.n_labels + len(self._multi_parent)
        if C.ndim != 2 or C.shape[1] != width:
            raise ValueError(f"C must have shape (n, {width}) (labels, then parent-products); "
                             f"got shape {C.shape}")
        return self.argmin_products(C[:, :d], C[:, d:])

    def __repr__(self) -> str:
        kind = "tree" if self._is_tree else "DAG"
        return (f"Hierarchy(n_labels={self.n_labels}, n_edges={len(self._edges)}, {kind}, "
                f"max_depth={int(self._depth.max())})")

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
