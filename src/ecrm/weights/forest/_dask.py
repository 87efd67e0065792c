r"""Forests on Dask arrays: the trees grown on the workers, the same model as in memory.

:class:`~ecrm.weights.forest.estimator.ForestECRM` and
:class:`~ecrm.weights.forest.estimator.ForestECRMCV` take ``X`` and ``Y`` as Dask arrays
chunked by rows (the checks of :mod:`ecrm.weights.kernel._solvers._dask`: a loss with a
linear form, one chunk along the columns, the same row chunks). Their fit (:func:`fits_dask`)
checks the Dask inputs before any work and gathers ``Y`` on the client (the outputs are
small; the split targets and the out-of-bag judgement are computed from them there). With
a :class:`distributed.Client` active, the training matrix never comes to the client:

* ``X`` is persisted on the workers once for the whole fit (every forest a search grows),
  and its values are checked there, chunk by chunk;
* each tree grows in one task (:func:`grow_trees`). The client draws the tree's seed and
  its bootstrap sample as scikit-learn's forest does: the forest of seed ``s`` gives its
  trees the seeds ``RandomState(s).randint(2**31 - 1)`` in turn, and tree ``t`` of seed
  :math:`s_t` draws ``RandomState(s_t).randint(0, m, n_draws)``. The tree's task takes only
  its drawn rows from the chunks of ``X`` (one small task per chunk it draws from) and the
  split targets ``G`` (scattered once per forest), and fits one scikit-learn
  :class:`~sklearn.tree.DecisionTreeRegressor` (``ExtraTreeRegressor``) with the forest's
  settings and seed :math:`s_t`, the bootstrap counts :math:`b_{ti}` as sample weights.
  scikit-learn's forest fits the same tree on all m rows with those weights, and its tree
  builder drops the rows of weight zero before any split is sought, so the drawn rows (kept
  in their order) give the same tree; only the packed tree (no node values) comes back;
* the training points' leaves are found on the workers, chunk by chunk of ``X``
  (:func:`training_leaves`: ``dask.array.map_blocks`` of the packed trees' traversal, which
  gives scikit-learn's leaves);
* the out-of-bag sums of every setting a search judges, and the exact oracle on them, run
  one task per row chunk (:func:`oob_sums`): each task gets its rows' leaves and bootstrap
  counts, the leaf means of the targets once; the sums come back in order (the forest's
  arrays stay on the client, which builds the leaf weights). A wide embedding whose leaf
  means would not fit ``working_memory`` is summed on the client.

The client holds the model (the packed trees, the m x trees bootstrap counts and leaves) and
``Y``, never ``X``: the model's ``X_fit_`` is the Dask array the fit was given (it is computed
only when a model file is written, which stores the training rows). With Dask's local
schedulers (no distributed client) the checked inputs are gathered and the trees grow on
the client, as ``n_jobs`` says; the leaves and the out-of-bag sums still run per chunk.

Prediction on a Dask array is lazy and per row chunk (:meth:`ecrm.weights.RiskEstimator.
predict`, ``predict_costs``, ``predict_scores``): each chunk's task holds the packed trees,
the leaf weights and the targets, never the training rows.

Dask is imported only here, and only when Dask arrays are passed.
"""

from __future__ import annotations

import contextlib
import functools
from contextvars import ContextVar

import numpy as np

from ecrm.weights.forest._fit import ON_WORKERS, ForestFit, Trees, bootstrap_counts, leaf_average
from ecrm.weights.kernel._solvers.budget import row_blocks
from ecrm.weights.kernel._solvers.rows import is_dask_array

__all__ = ["checked_training", "fits_dask", "minimize_rows"]

#: scikit-learn's bound of the seeds it gives a forest's trees.
MAX_INT = np.iinfo(np.int32).max


def _client():
    """The active :class:`distributed.Client`, or ``None`` (no distributed scheduler)."""
    try:
        from distributed import get_client
    except ImportError:  # pragma: no cover - distributed is in the dask extra
        return None
    try:
        return get_client()
    except ValueError:  # no client: Dask's local schedulers
        return None


def gather_training(X, Y, y_ndim: int):
    """The checked Dask training rows ``X`` (m, p) and ``Y`` (m, d) as in-memory arrays on
    the client (``Y`` raveled back when the fit was given a 1-D ``y``)."""
    import dask

    X, Y = dask.compute(X, Y)
    return X, (Y[:, 0] if y_ndim == 1 else Y)


def _first_bad_row(Xb) -> np.ndarray:
    bad = np.flatnonzero(~np.isfinite(np.asarray(Xb, dtype=np.float64)).all(axis=1))
    return np.array([[bad[0] if len(bad) else -1]])


def persist_rows(X, name: str):
    """``X`` persisted on the workers, once its values are checked there (``ValueError``
    naming the first row of NaN or infinite values, as fit refuses them)."""
    X = X.persist()
    first = X.map_blocks(_first_bad_row, dtype=np.int64,
                         chunks=((1,) * len(X.chunks[0]), (1,))).compute()[:, 0]
    starts = np.cumsum((0,) + X.chunks[0][:-1])
    if (first >= 0).any():
        at = int(np.argmax(first >= 0))
        raise ValueError(f"{name}: X holds NaN or infinite values (row {starts[at] + first[at]} "
                         f"is the first); fit refuses them")
    return X


def bootstrap_draws(seed: int, m: int, n_draws: int) -> np.ndarray:
    """Tree seed ``seed``'s bootstrap sample of ``n_draws`` of the ``m`` rows (scikit-learn's
    draws for a forest's tree of that seed)."""
    return np.random.RandomState(seed).randint(0, m, n_draws)


def _drawn_rows(Xb, seed: int, m: int, n_draws: int, start: int) -> np.ndarray:
    """The rows of the chunk ``Xb`` (rows ``start`` on) that tree seed ``seed`` drew, each once
    and in order, as the float32 a tree splits."""
    drawn = bootstrap_draws(seed, m, n_draws)
    local = np.unique(drawn[(drawn >= start) & (drawn < start + len(Xb))]) - start
    return np.asarray(Xb[local], dtype=np.float64).astype(np.float32)


def _grow_tree(pieces, G: np.ndarray, seed: int, m: int, n_draws: int, flavour: str,
               settings: dict) -> tuple[Trees, np.ndarray]:
    """One tree of seed ``seed`` grown on its drawn rows (``pieces``, in row order) with
    their bootstrap counts as sample weights: the packed tree and its node sizes."""
    from sklearn.tree import DecisionTreeRegressor, ExtraTreeRegressor

    cls = DecisionTreeRegressor if flavour == "random" else ExtraTreeRegressor
    counts = np.bincount(bootstrap_draws(seed, m, n_draws), minlength=m)
    rows = np.flatnonzero(counts)
    tree = cls(random_state=seed, **settings).fit(
        np.concatenate(pieces), G[rows], sample_weight=counts[rows].astype(np.float64))
    return Trees.from_estimators([tree]), tree.tree_.n_node_samples.astype(np.int64)


def grow_trees(X, G, flavour: str, settings: dict, k: int, n_draws: int, seed: int
               ) -> tuple[Trees, np.ndarray, np.ndarray]:
    """The ``k`` trees scikit-learn's forest of seed ``seed`` grows on the Dask array ``X``
    (persisted) and the targets ``G`` (a future of the scattered array), one task per tree
    (module docstring): the packed trees, the (m, k) bootstrap counts and the node sizes."""
    import dask
    from dask import delayed

    m = X.shape[0]
    rng = np.random.RandomState(seed)
    seeds = [rng.randint(MAX_INT) for _ in range(k)]  # as the forest seeds its trees
    bag = bootstrap_counts([bootstrap_draws(s, m, n_draws) for s in seeds], m)
    chunks = X.to_delayed().ravel()
    starts = np.cumsum((0,) + X.chunks[0])
    tasks = []
    for t, s in enumerate(seeds):
        drawn = np.concatenate([[0], np.cumsum(bag[:, t], dtype=np.int64)])
        drawn_in = drawn[starts[1:]] > drawn[starts[:-1]]  # the chunks it draws from
        pieces = [delayed(_drawn_rows)(chunks[c], s, m, n_draws, int(starts[c]))
                  for c in np.flatnonzero(drawn_in)]
        tasks.append(delayed(_grow_tree)(pieces, G, s, m, n_draws, flavour, settings))
    grown = dask.compute(*tasks)
    trees = Trees.concatenate([tree for tree, _ in grown])
    return trees, bag, np.concatenate([sizes for _, sizes in grown])


def _leaves_of_chunk(Xb, box) -> np.ndarray:
    return box.value.apply(Xb)


def training_leaves(X, trees: Trees) -> np.ndarray:
    """The leaf (packed node index) of every row of the Dask array ``X`` in every tree,
    (m, n_trees), each row chunk traversed on its worker (:meth:`Trees.apply`); the packed
    trees are one key of the graph."""
    from dask import delayed

    from ecrm.weights.kernel._solvers._dask import _Box

    kind = np.int32 if trees.n_nodes < 2**31 else np.int64
    box = delayed(_Box(trees))
    leaves = X.map_blocks(_leaves_of_chunk, box, dtype=kind,
                          chunks=(X.chunks[0], (trees.n_trees,)), meta=np.empty((0, 0), kind))
    return leaves.compute()


def _oob_chunk(box, piece: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The out-of-bag sums of one row chunk of training points (their leaves and bootstrap
    counts), as :meth:`ForestFit.oob_mean` computes them, row block by row block."""
    means, fn, width, n_nodes = box.value
    leaves, bag = piece
    n, n_trees = leaves.shape
    out = np.empty((n, width))
    for blk in row_blocks(n, 2 * means.shape[1] + width + 3 * n_trees):
        keep = bag[blk] == 0
        seen = keep.any(axis=1)
        S = leaf_average(leaves[blk], keep, n_nodes) @ means
        S[~seen] = np.nan
        out[blk] = S if fn is None else fn(S, seen)
    return out


def oob_sums(starts: np.ndarray, fit: ForestFit, means: np.ndarray, fn, width: int
             ) -> np.ndarray:
    r"""The out-of-bag sums of every training point (NaN rows: every tree drew it), or
    ``fn(S, seen)`` of them (``width`` columns), one task per row chunk ``starts[k]`` to
    ``starts[k + 1]``: each ships that chunk's leaves and bootstrap counts, and the leaf
    means ``means`` (n_nodes, e) and ``fn`` once; the rows come back in order
    (:meth:`ForestFit.oob_mean` in memory). With a distributed client these arrays are
    scattered to the workers, not held in the graph (whose scheduler may share the client's
    process)."""
    import dask
    from dask import delayed

    from ecrm.weights.kernel._solvers._dask import _Box

    box = _Box((means, fn, width, fit.trees.n_nodes))
    leaves, bag = fit.train_leaves(), fit.bag
    pieces = [(leaves[a:b], bag[a:b]) for a, b in zip(starts[:-1], starts[1:], strict=True)]
    client = _client()
    if client is None:
        box = delayed(box)
    else:
        box = client.scatter(box, hash=False)
        pieces = client.scatter(pieces, hash=False)
    parts = [delayed(_oob_chunk)(box, piece) for piece in pieces]
    return np.concatenate(dask.compute(*parts))


class _OnWorkers:
    """What a Dask fit runs on the workers (:data:`ecrm.weights.forest._fit.ON_WORKERS`):
    the trees too when ``client`` (a distributed client) is given."""

    def __init__(self, X, client=None):
        self.X, self.client, self.grows = X, client, client is not None
        self.starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
        self._scattered: tuple = (None, None)  # the targets last scattered, and their future

    def leaves(self, trees: Trees) -> np.ndarray:
        return training_leaves(self.X, trees)

    def grow(self, G: np.ndarray, flavour: str, settings: dict, k: int, n_draws: int,
             seed: int) -> tuple[Trees, np.ndarray, np.ndarray]:
        if self._scattered[0] is not G:  # once per forest, not per batch of trees
            self._scattered = (G, self.client.scatter(G, broadcast=False, hash=False))
        return grow_trees(self.X, self._scattered[1], flavour, settings, k, n_draws, seed)

    def oob_sums(self, fit: ForestFit, means: np.ndarray, fn, width: int) -> np.ndarray:
        return oob_sums(self.starts, fit, means, fn, width)


@contextlib.contextmanager
def growing_on_workers(X, client=None):
    """Within: the training leaves of the Dask array ``X`` and the out-of-bag sums are
    found on the workers, chunk by chunk of ``X``, and with ``client`` the trees grow
    there too."""
    token = ON_WORKERS.set(_OnWorkers(X, client))
    try:
        yield
    finally:
        ON_WORKERS.reset(token)


#: The training data a Dask fit has checked and the fit it calls is given (:func:`fits_dask`).
_CHECKED: ContextVar = ContextVar("checked_training", default=None)


def checked_training(X, Y):
    """``(X, Y, seen)`` as :func:`fits_dask` checked them, when ``X`` and ``Y`` are the
    arrays it handed to the fit it runs; else ``None`` (check them as usual)."""
    checked = _CHECKED.get()
    if checked is not None and checked[0] is X and checked[1] is Y:
        return checked
    return None


def fits_dask(fit):
    """``fit(self, X, Y)`` of a forest estimator that also takes Dask arrays (module
    docstring): the Dask inputs are checked before any work and ``Y`` is gathered; with a
    distributed client the in-memory ``fit`` runs on the persisted Dask ``X`` (its trees,
    training leaves and out-of-bag sums on the workers), else on ``X`` gathered."""

    @functools.wraps(fit)
    def run(self, X, Y):
        if not (is_dask_array(X) or is_dask_array(Y)):
            return fit(self, X, Y)
        self._check_params()
        X_dask, Y_dask, seen = self._check_training_data(X, Y, None)
        client = _client()
        if client is None:
            X_mem, Y_mem = gather_training(X_dask, Y_dask, seen.y_ndim)
            with growing_on_workers(X_dask):
                return fit(self, X_mem, Y_mem)
        from ecrm.weights.kernel._solvers.rows import validate_outputs

        X_rows = persist_rows(X_dask, type(self).__name__)
        Y_mem = validate_outputs(self.output_space, Y_dask.compute(), compact=False)
        token = _CHECKED.set((X_rows, Y_mem, seen))
        try:
            with growing_on_workers(X_rows, client):
                fit(self, X_rows, Y_mem)
        finally:
            _CHECKED.reset(token)
        # the model keeps the (lazy) Dask array it was given as the in-memory fit keeps its
        # rows (float64), not the workers' persisted copy
        self.X_fit_ = self._fit.X_train = X_dask.astype(np.float64)
        return self

    return run


def minimize_rows(space, C, form):
    """The output space's exact oracle on the costs ``C`` (n, e): per row chunk, lazily, when
    ``C`` is a Dask array."""
    if not is_dask_array(C):
        return space.minimize(C, form)
    d = space.n_outputs
    return C.map_blocks(space.minimize, form, dtype=float, chunks=(C.chunks[0], (d,)),
                        meta=np.empty((0, d)))
