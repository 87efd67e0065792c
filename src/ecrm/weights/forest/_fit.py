r"""Forest risk weights: a fitted forest as a :class:`~ecrm.weights._fit.RiskFit`.

A forest of :math:`T` trees, each grown on a bootstrap sample (tree :math:`t` draws point
:math:`i` :math:`b_{ti}` times), weighs the training points by leaf co-membership:

.. math:: w_i(x) = \frac1T \sum_{t=1}^T \frac{b_{ti}\, \mathbb 1[\ell_t(x_i) = \ell_t(x)]}
          {\sum_j b_{tj}\, \mathbb 1[\ell_t(x_j) = \ell_t(x)]},

with :math:`\ell_t(x)` the leaf of :math:`x` in tree :math:`t`. The weights are non-negative and
sum to one, and :math:`\sum_i w_i(x)\,\psi(y_i)` is exactly the prediction of a multi-output
forest whose leaves average :math:`\psi(Y)` (Lin & Jeon, 2006; Meinshausen, 2006): growing
the trees on a loss's embedding and handing this prediction to the exact oracle is ECRM with
forest weights. The out-of-bag weights of a training point average only the trees that did
not draw it (:meth:`ForestFit.oob_weights`), an honest estimate of its risk.

The trees are grown by scikit-learn and kept as plain arrays (:class:`Trees`), so that a model
file holds no pickle and is checked at load like every other fit. Prediction maps inputs to
their leaves (:meth:`Trees.apply`, scikit-learn's rule: a float32 input goes left when at most
the threshold) and the *block* of a row is its sparse weight vector :math:`w(x)`, so that the
estimators' costs ``block @ coef`` are the weighted sums of the targets
:math:`[\psi(Y), \mathrm{const}(Y), Y]` and nothing above this module knows it is a forest.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn import get_config

from ecrm.weights._fit import RiskFit
from ecrm.weights.kernel._solvers.budget import row_blocks

__all__ = ["ON_WORKERS", "BagPattern", "ForestFit", "Grown", "Trees", "bootstrap_counts",
           "grow_forest", "prune"]


class Trees:
    """The split structure of a forest, all trees in one set of node arrays.

    Node ``n`` of the packed arrays is a leaf when ``left[n] == -1``; otherwise a row goes to
    ``left[n]`` when ``x[feature[n]] <= threshold[n]`` (compared in float32, as scikit-learn
    grows and applies its trees) and to ``right[n]`` otherwise. Tree ``t``'s root is
    ``roots[t]``; children have larger indices than their parent within their own tree, which
    makes every path finite.

    Parameters
    ----------
    left, right, feature : ndarray of int64, shape (n_nodes,)
    threshold : ndarray of float64, shape (n_nodes,)
    roots : ndarray of int64, shape (n_trees,)
    """

    def __init__(self, left, right, feature, threshold, roots):
        self.left, self.right, self.feature = left, right, feature
        self.threshold, self.roots = threshold, roots

    @classmethod
    def from_estimators(cls, estimators) -> Trees:
        """Pack fitted scikit-learn decision trees."""
        parts, offset = [], 0
        for est in estimators:
            tree = est.tree_
            leaf = tree.children_left == -1
            shift = np.where(leaf, 0, offset)
            parts.append((np.where(leaf, -1, tree.children_left + shift),
                          np.where(leaf, -1, tree.children_right + shift),
                          np.where(leaf, 0, tree.feature), np.where(leaf, 0.0, tree.threshold),
                          offset))
            offset += tree.node_count
        left, right, feature, threshold, roots = zip(*parts, strict=True)
        return cls(np.concatenate(left).astype(np.int64), np.concatenate(right).astype(np.int64),
                   np.concatenate(feature).astype(np.int64),
                   np.concatenate(threshold).astype(np.float64), np.array(roots, np.int64))

    @classmethod
    def concatenate(cls, parts: list[Trees]) -> Trees:
        """One set of node arrays holding the trees of every part, in order."""
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [t.n_nodes for t in parts[:-1]])

        def shifted(child, offset):
            return np.where(child == -1, -1, child + offset)

        pairs = list(zip(parts, offsets, strict=True))
        return cls(np.concatenate([shifted(t.left, o) for t, o in pairs]),
                   np.concatenate([shifted(t.right, o) for t, o in pairs]),
                   np.concatenate([t.feature for t in parts]),
                   np.concatenate([t.threshold for t in parts]),
                   np.concatenate([t.roots + o for t, o in pairs]))

    @property
    def n_trees(self) -> int:
        return len(self.roots)

    @property
    def n_nodes(self) -> int:
        return len(self.left)

    def apply(self, X) -> np.ndarray:
        """The leaf (packed node index) of every row of ``X`` in every tree: (n, n_trees).

        In row blocks (sparse inputs densified block by block); within a block all (row,
        tree) paths advance one level per step and those that reached a leaf drop out, so
        the work is the total path length."""
        kind = np.int32 if self.n_nodes < 2**31 else np.int64  # the m x T leaves: half size
        out = np.empty((X.shape[0], self.n_trees), kind)
        for blk in row_blocks(X.shape[0], 8 * self.n_trees):
            out[blk] = self._apply_block(X[blk])
        return out

    def _apply_block(self, X) -> np.ndarray:
        X32 = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float32)
        n, T = X32.shape[0], self.n_trees
        pair = np.arange(n * T)
        row, node = pair // T, np.tile(self.roots, n)
        out = np.empty(n * T, np.int64)
        while len(pair):
            at_leaf = self.left[node] == -1
            out[pair[at_leaf]] = node[at_leaf]
            inner = ~at_leaf
            pair, row, node = pair[inner], row[inner], node[inner]
            go_left = X32[row, self.feature[node]] <= self.threshold[node]
            node = np.where(go_left, self.left[node], self.right[node])
        return out.reshape(n, T)

    def check(self, n_features: int) -> None:
        """``ValueError`` unless these are trees that fit could have grown on
        ``n_features`` inputs (the model-file check)."""
        left, right, feature, threshold, roots = (self.left, self.right, self.feature,
                                                  self.threshold, self.roots)
        n = len(left)
        for name, a in (("left", left), ("right", right), ("feature", feature),
                        ("roots", roots)):
            if not (isinstance(a, np.ndarray) and a.dtype == np.int64 and a.ndim == 1):
                raise ValueError(f"the trees' {name} must be a 1-D int64 array")
        if not (isinstance(threshold, np.ndarray) and threshold.dtype == np.float64
                and threshold.shape == (n,) and np.isfinite(threshold).all()):
            raise ValueError("the trees' thresholds must be finite float64, one per node")
        if right.shape != (n,) or feature.shape != (n,) or n == 0 or len(roots) == 0:
            raise ValueError("the trees' node arrays must have one entry per node")
        if roots[0] != 0 or (np.diff(roots) <= 0).any() or roots[-1] >= n:
            raise ValueError("the trees' roots must be increasing node indices from 0")
        ends = np.append(roots[1:], n)
        tree_end = np.repeat(ends, np.diff(np.append(roots, n)))  # the end of each node's tree
        leaf = left == -1
        if ((right == -1) != leaf).any():
            raise ValueError("a node has exactly one child")
        inner = ~leaf
        idx = np.arange(n)
        for name, child in (("left", left), ("right", right)):
            if ((child[inner] <= idx[inner]) | (child[inner] >= tree_end[inner])).any():
                raise ValueError(f"a {name} child index is outside its tree or not after its "
                                 "parent")
        if ((feature[inner] < 0) | (feature[inner] >= n_features)).any():
            raise ValueError(f"a split feature is outside [0, {n_features})")
        # every non-root node is the child of exactly one node: the nodes form trees
        parents = np.bincount(np.concatenate([left[inner], right[inner]]), minlength=n)
        is_root = np.zeros(n, bool)
        is_root[roots] = True
        if (parents[~is_root] != 1).any() or (parents[is_root] != 0).any():
            raise ValueError("the nodes do not form trees (a node with no or several parents)")


def leaf_average(leaves: np.ndarray, include: np.ndarray | None, n_nodes: int) -> sp.csr_array:
    """The (n, n_nodes) average over the trees (only those in ``include``, (n, n_trees)) of
    each row's leaf indicators (``leaves``, (n, n_trees))."""
    n, T = leaves.shape
    keep = np.ones((n, T), bool) if include is None else include
    per_row = keep.sum(axis=1)
    r, t = np.nonzero(keep)  # row by row, each row's trees in order: CSR order already
    scale = np.divide(1.0, per_row, out=np.zeros(n), where=per_row > 0)
    return sp.csr_array((scale[r], leaves[r, t], np.concatenate([[0], np.cumsum(per_row)])),
                        shape=(n, n_nodes))


class BagPattern:
    """The (point, tree) pairs a forest's bootstraps left out, found once for the forest
    and every pruning of it (pruning changes the leaves, not the draws).

    ``out`` holds their flat indices into the row-major (m, n_trees) bootstrap counts, point
    by point and each point's trees in order; point ``i``'s are ``out[start[i]:start[i+1]]``.
    """

    def __init__(self, bag: np.ndarray):
        out_of_bag = bag == 0
        self.out = np.flatnonzero(out_of_bag).astype(np.int32 if bag.size < 2**31 else np.int64)
        self.start = np.concatenate([[0], np.cumsum(out_of_bag.sum(axis=1))])

    def tree_average(self, leaves: np.ndarray, rows: slice, n_nodes: int
                     ) -> tuple[sp.csr_array, np.ndarray]:
        """The (n, n_nodes) average over the out-of-bag trees of the leaf indicators of the
        training points ``rows`` (``leaves``: theirs and all others', (m, n_trees)), and which
        of them have any such tree."""
        start = self.start[rows.start:rows.stop + 1]
        count = np.diff(start)
        seen = count > 0
        scale = np.divide(1.0, count, out=np.zeros(len(count)), where=seen)
        pairs = self.out[start[0]:start[-1]]
        return sp.csr_array((np.repeat(scale, count), leaves.ravel()[pairs], start - start[0]),
                            shape=(len(count), n_nodes)), seen


class ForestFit(RiskFit):
    r"""Forest weights over the training points (see the module docstring).

    The block of an input row is its weight vector :math:`w(x)` (a sparse row of length m),
    and ``coef`` holds the targets :math:`[\psi(Y), \mathrm{const}(Y), Y]` of the training
    points, so ``block(X) @ coef`` is the forest's prediction of every target.

    Parameters
    ----------
    trees : Trees
    bag : ndarray of shape (m, n_trees), dtype uint16
        How many times each tree drew each training point (0: out of bag).
    n_risk : int
        Leading target columns that are the risk targets (0 for a loss without a linear
        form).
    X_train : ndarray or sparse matrix of shape (m, p), optional
        The training inputs; their leaves weigh the points (set again on load).
    coef : ndarray of shape (m, c), optional
        The targets of the training points (set on load by the estimator, from its outputs).
    pattern : BagPattern, optional
        Of ``bag``, shared by the prunings of one forest that a search judges (out-of-bag
        sums without finding the pairs again; otherwise found block by block).
    """

    coef_name = "risk_targets_"
    ridge = 0.0
    fit_intercept = False

    def __init__(self, trees: Trees, bag: np.ndarray, n_risk: int, *, X_train=None, coef=None,
                 train_leaves: np.ndarray | None = None, pattern: BagPattern | None = None):
        self.trees, self.bag, self.n_risk = trees, bag, n_risk
        self.pattern = pattern
        self.X_train = X_train
        self.coef = coef
        self._leaf_weights: sp.csr_array | None = None
        self._train_leaves = train_leaves  # else found from X_train when first needed
        self._n_columns: int | None = None

    # -- state ------------------------------------------------------------------------------
    def to_state(self) -> dict:
        return {"trees": self.trees, "bag": self.bag, "n_risk": self.n_risk}

    def slim(self) -> ForestFit:
        """A copy that predicts from the trees, the leaf weights and the targets alone (what
        a Dask graph ships: no training rows, bootstrap counts or training leaves)."""
        L = self.leaf_weights()  # built once, then shipped with the trees
        slim = ForestFit(self.trees, self.bag[:0], self.n_risk, coef=self.coef)
        slim._leaf_weights, slim._n_columns = L, self._n_columns
        return slim

    @property
    def intercept(self) -> np.ndarray:  # type: ignore[override]
        return np.zeros(self.coef.shape[1])

    @property
    def n_columns(self) -> int:
        """The average number of training points a row's weights touch (sizes row blocks)."""
        if self._n_columns is None:
            L = self.leaf_weights()
            leaves = np.diff(L.indptr) > 0
            self._n_columns = max(1, int(self.trees.n_trees * L.nnz / max(1, leaves.sum())))
        return self._n_columns

    # -- weights ----------------------------------------------------------------------------
    def train_leaves(self) -> np.ndarray:
        """The leaf of every training point in every tree, (m, n_trees)."""
        if self._train_leaves is None:
            self._train_leaves = self.trees.apply(self.X_train)
        return self._train_leaves

    def leaf_weights(self) -> sp.csr_array:
        r"""The sparse (n_nodes, m) matrix whose row of a leaf holds
        :math:`b_{ti} / \sum_j b_{tj}` over the points the leaf's tree drew into it."""
        if self._leaf_weights is None:
            leaves, bag = self.train_leaves(), self.bag
            i, t = np.nonzero(bag)
            node, count = leaves[i, t], bag[i, t].astype(np.float64)
            mass = np.bincount(node, weights=count, minlength=self.trees.n_nodes)
            L = sp.csr_array((count / mass[node], (node, i)),
                             shape=(self.trees.n_nodes, bag.shape[0]))
            L.sum_duplicates()
            self._leaf_weights = L
        return self._leaf_weights

    def _average(self, leaves: np.ndarray, include: np.ndarray | None = None) -> sp.csr_array:
        """Rows of the leaf weights averaged over the trees (only those in ``include``)."""
        return leaf_average(leaves, include, self.trees.n_nodes) @ self.leaf_weights()

    def block(self, X) -> sp.csr_array:
        """The forest weights w(x) of the rows of ``X``: a sparse (n, m) array."""
        return self._average(self.trees.apply(X))

    def weights(self, V) -> np.ndarray:
        return V.toarray() if sp.issparse(V) else np.asarray(V)

    def oob_weights(self, rows=slice(None)) -> tuple[sp.csr_array, np.ndarray]:
        """The out-of-bag weights of the training points ``rows``, (n, m), each row averaged
        over the trees that did not draw the point, and which rows have any such tree."""
        out = self.bag[rows] == 0
        return self._average(self.train_leaves()[rows], out), out.any(axis=1)

    def oob_mean(self, T: np.ndarray, fn=None, width: int | None = None, rows=None
                 ) -> np.ndarray:
        r"""The out-of-bag weighted sums :math:`\sum_i w^{oob}_i(x_j)\, t_i` of the training
        points, ``oob_weights() @ T`` (m, e) with NaN rows for the points every tree drew;
        or ``fn(S, seen)`` of those sums (``width`` columns), in row blocks; only those of
        the training points ``rows`` (indices) if given.

        Computed as each leaf's weighted mean of ``T`` averaged over a point's out-of-bag
        trees, so that the m x m weights are never formed; when the leaf means of ``T``
        (nodes x e floats) would not fit sklearn's ``working_memory`` (a wide embedding), as
        the weights times ``T``, row block by row block."""
        width = T.shape[1] if width is None else width
        if 8 * self.trees.n_nodes * T.shape[1] > get_config()["working_memory"] * 2**20:
            def product(W, seen):
                S = W @ T
                S[~seen] = np.nan
                return S if fn is None else fn(S, seen)

            return self.oob_map(product, T.shape[1] + width, rows)
        means = self.leaf_weights() @ T
        workers = ON_WORKERS.get()
        if workers is not None and rows is None:
            return workers.oob_sums(self, means, fn, width)
        n, T_trees = self.bag.shape if rows is None else (len(rows), self.bag.shape[1])
        out = np.empty((n, width))
        pattern = self.pattern if rows is None else None
        for blk in row_blocks(n, 2 * T.shape[1] + width + 3 * T_trees):
            if pattern is not None:
                A, seen = pattern.tree_average(self.train_leaves(), blk, self.trees.n_nodes)
            else:
                at = blk if rows is None else rows[blk]
                out_of_bag = self.bag[at] == 0
                A = leaf_average(self.train_leaves()[at], out_of_bag, self.trees.n_nodes)
                seen = out_of_bag.any(axis=1)
            S = A @ means
            S[~seen] = np.nan
            out[blk] = S if fn is None else fn(S, seen)
        return out

    def oob_map(self, fn, width: int, rows=None) -> np.ndarray:
        """``fn(W, seen)`` of the out-of-bag weights of the training points (those of
        ``rows`` if given), in row blocks (``width``: floats a row of ``fn`` holds), stacked:
        the m x m weights are never held at once."""
        n = self.bag.shape[0] if rows is None else len(rows)
        # a weight entry takes 3 floats' room at the peak: its value and index, and the
        # same again while the product that builds it (or a caller's row selection) is alive
        return np.concatenate([fn(*self.oob_weights(blk if rows is None else rows[blk]))
                               for blk in row_blocks(n, 3 * self.n_columns + width)])

    def check_leaves(self) -> None:
        """``ValueError`` unless every leaf holds some drawn training point (else a row
        reaching it would get weights that do not sum to one)."""
        leaf = self.trees.left == -1
        mass = np.diff(self.leaf_weights().indptr)
        if (mass[leaf] == 0).any():
            raise ValueError(f"{int((mass[leaf] == 0).sum())} leaves hold no drawn training "
                             "point")


#: Bytes the leaf values of the trees grown at once may take: scikit-learn keeps every tree's
#: node values (nodes x targets), which at 10^6 rows dominate the fit's memory; the trees are
#: grown in batches and packed (without those values) batch by batch.
GROW_BATCH_BYTES = 2**29

#: Within a Dask fit (:mod:`ecrm.weights.forest._dask`), what runs on the workers: the
#: training points' leaves of a batch of packed trees (``leaves(trees)``, (m, n_trees)), the
#: out-of-bag sums of all the training points (``oob_sums(fit, means, fn, width)``) and,
#: when ``grows`` (a distributed cluster), the trees of a batch (``grow(G, flavour,
#: settings, k, n_draws, seed)``: packed trees, bootstrap counts, node sizes); ``None``: all
#: here.
ON_WORKERS: ContextVar[Any] = ContextVar("on_workers", default=None)


class Grown(NamedTuple):
    """A grown forest: the packed trees, each tree's bootstrap counts (m, n_trees; uint16),
    the training points' leaves (m, n_trees; packed node indices) and every node's number of
    drawn points (n_nodes; scikit-learn's ``n_node_samples``, what ``min_samples_split`` and
    :func:`prune` compare)."""

    trees: Trees
    bag: np.ndarray
    leaves: np.ndarray
    sizes: np.ndarray

    @classmethod
    def concatenate(cls, parts: list[Grown]) -> Grown:
        """One forest of the trees of every part, in order."""
        if len(parts) == 1:
            return parts[0]
        trees = Trees.concatenate([p.trees for p in parts])
        kind = np.int32 if trees.n_nodes < 2**31 else np.int64
        offsets = np.cumsum([0] + [p.trees.n_nodes for p in parts[:-1]])
        return cls(trees, np.hstack([p.bag for p in parts]),
                   np.hstack([p.leaves.astype(kind) + kind(o)
                              for p, o in zip(parts, offsets, strict=True)]),
                   np.concatenate([p.sizes for p in parts]))


def bootstrap_counts(samples, m: int) -> np.ndarray:
    """The (m, n_trees) uint16 counts of each tree's bootstrap draws ``samples`` (one array
    of drawn row indices per tree)."""
    bag = np.empty((m, len(samples)), np.uint16)
    for t, drawn in enumerate(samples):
        counts = np.bincount(drawn, minlength=m)
        if counts.max() > np.iinfo(np.uint16).max:  # pragma: no cover - 65,536 draws
            raise ValueError("a bootstrap sample drew one point more than 65,535 times")
        bag[:, t] = counts
    return bag


def grow_forest(X, G: np.ndarray, *, flavour: str, n_estimators: int, max_features,
                min_samples_leaf: int, max_depth, n_draws: int, n_jobs, random_state: int,
                min_samples_split: int = 2) -> Grown:
    """Grow scikit-learn's multi-output random forest (``flavour="random"``) or extremely
    randomised trees (``"extra"``, with bootstrap samples of ``n_draws`` points) on the
    targets ``G``. The training points' leaves come from scikit-learn's compiled ``apply``
    while its trees are at hand (our traversal gives the same leaves, and is slower).

    The trees grow in batches whose node values fit ``GROW_BATCH_BYTES`` (one batch, hence
    exactly scikit-learn's forest of ``random_state``, unless that is exceeded; the k-th
    batch is seeded ``random_state + k``). Within a Dask fit on a distributed cluster
    (:data:`ON_WORKERS`), each tree of a batch grows on a worker from its drawn rows alone
    (:mod:`ecrm.weights.forest._dask`): the same trees."""
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

    cls = RandomForestRegressor if flavour == "random" else ExtraTreesRegressor
    settings = dict(max_features=max_features, min_samples_leaf=min_samples_leaf,
                    min_samples_split=min_samples_split, max_depth=max_depth)
    m = X.shape[0]
    tree_bytes = 16 * n_draws / min_samples_leaf * G.shape[1]  # ~2 draws/leaf nodes x 8 B
    per_batch = max(1, min(n_estimators, int(GROW_BATCH_BYTES // max(tree_bytes, 1))))
    workers = ON_WORKERS.get()
    parts: list[Grown] = []
    done = 0
    while done < n_estimators:
        k = min(per_batch, n_estimators - done)
        seed = (random_state + len(parts)) % 2**31
        if workers is not None and workers.grows:
            trees, bag, sizes = workers.grow(G, flavour, settings, k, n_draws, seed)
            leaves = workers.leaves(trees)
        else:
            forest = cls(n_estimators=k, bootstrap=True, max_samples=n_draws, n_jobs=n_jobs,
                         random_state=seed, **settings).fit(X, G)
            bag = bootstrap_counts(forest.estimators_samples_, m)
            trees = Trees.from_estimators(forest.estimators_)
            if workers is None:
                leaves = forest.apply(X)
                leaves += trees.roots  # a tree's packed nodes start at its root
            else:
                leaves = workers.leaves(trees)
            sizes = np.concatenate([e.tree_.n_node_samples for e in forest.estimators_])
            del forest  # its node values go before the next batch grows
        kind = np.int32 if trees.n_nodes < 2**31 else np.int64
        parts.append(Grown(trees, bag, leaves.astype(kind, copy=False), sizes.astype(np.int64)))
        done += k
    return Grown.concatenate(parts)


def prune(grown: Grown, min_samples_split: int) -> Grown:
    """The forest as ``min_samples_split`` would have grown it: every node of fewer drawn
    points becomes a leaf and the nodes below it go.

    scikit-learn splits a node only when it holds at least ``min_samples_split`` drawn
    points, and splits each node with random draws of its own, so the pruned trees are
    distributed exactly as trees grown with that setting (the same trees where the splits
    draw nothing at random: bagged trees with every feature); one deep forest serves every
    ``min_samples_split`` at the cost of growing it once."""
    trees, sizes = grown.trees, grown.sizes
    n = trees.n_nodes
    idx = np.arange(n)
    inner = trees.left != -1
    parent = idx.copy()  # roots are their own parents
    parent[trees.left[inner]] = idx[inner]
    parent[trees.right[inner]] = idx[inner]
    # sizes shrink down every path, so a node stays when its parent is split (or a root)
    keep = (parent == idx) | (sizes[parent] >= min_samples_split)
    end = np.where(keep, idx, parent)  # each node's nearest kept ancestor, by doubling
    while not keep[end].all():
        end = end[end]
    leaf = keep & ((trees.left == -1) | (sizes < min_samples_split))
    new = np.cumsum(keep) - 1  # order kept: children still follow their parents

    def child(a):
        return np.where(leaf, -1, new[np.maximum(a, 0)])[keep]

    pruned = Trees(child(trees.left), child(trees.right), np.where(leaf, 0, trees.feature)[keep],
                   np.where(leaf, 0.0, trees.threshold)[keep], new[trees.roots])
    return Grown(pruned, grown.bag, new[end[grown.leaves]].astype(grown.leaves.dtype),
                 sizes[keep])
