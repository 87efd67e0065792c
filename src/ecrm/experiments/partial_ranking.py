r"""``ecrm reproduce partial-ranking``: partial label ranking (bucket orders) on the standard
benchmark, tau_x.

Protocol (Alfaro, Aledo & Gámez, and the later literature): ``--repeats`` (default 5)
repetitions of ``--folds``-fold (default 10) cross-validation (``KFold(folds, shuffle=True,
random_state=r)`` for ``r`` in ``0 .. repeats - 1``, the folds of ``ecrm reproduce
ranking``), the tau_x rank correlation (Emond & Mason, 2002) between predicted and true
bucket orders averaged over the test points of every fold; the table gives its mean and
standard deviation over the repeats x folds. Everything is fitted on the training fold only:
the features are standardised there, and every hyper-parameter is chosen there.

The bucket orders are the pair indicators :math:`u_{ab} = 1[a \text{ strictly ahead of }
b]` of :class:`ecrm.spaces.BucketOrderSpace`, the loss :class:`ecrm.losses.TauXLoss` (its
distance :math:`L` gives tau_x :math:`= 1 - 2L / (k(k-1))`, :func:`ecrm.losses.tau_x`), the
predictions the exact
minimisers of the estimated risk over all bucket orders.

* **ECRM-kernel**: :class:`ecrm.ECRMCV`: the kernel (linear, or RBF with ``gamma`` in
  ``GAMMAS / p``) on ``KERNEL_SUBSAMPLE`` random training points, then ``alpha`` in
  ``ALPHAS`` and the intercept on all of them, by the exact leave-one-out tau_x distance.
  A training fold of more than ``DUAL_MAX_TRAIN`` points is fitted on Nystrom features
  (``N_COMPONENTS`` centres), its leave-one-out loss averaged over ``LARGE_LOO_ROWS``
  random training points.
* **ECRM-forest**: :class:`ecrm.ForestECRMCV` with the same loss and space, its flavour and
  ``min_samples_split`` by the out-of-bag tau_x distance (the grid of ``ecrm reproduce
  ranking``'s forest; on folds of more than ``FOREST_SEARCH_ABOVE`` points the flavours are
  judged on fewer trees and the leaf sizes by descent).
* **ECRM-mixed**: :class:`ecrm.MixedRiskECRM`'s choice, made from the two rows' fitted
  models (nothing refitted): the kernel's share of the mixed risk in ``MIXING_GRID`` by the
  tau_x distance of the exact minimisers of the mixed honest costs (leave-one-out in the
  kernel, out of bag in the forest), :func:`ecrm.weights.mixture.choose_mixture`.
* **kNN-Borda**: the bucket orders of the ``k`` nearest training points aggregated by their
  Borda count with a tie threshold: label :math:`a` scores the mean of
  :math:`\sum_b (u_{ab} - u_{ba}) / (k - 1)` over the neighbours; labels sorted by score,
  and a label joins the bucket of the one before it when its score is at most ``theta``
  lower. ``k`` in ``NEIGHBOURS`` and ``theta`` in ``THRESHOLDS`` by the exact leave-one-out
  tau_x on the training fold.

The peers (scikit-lr's partial label rankers, ``benchmarks/partial_ranking_sklr.py``, run by
the Python of ``make peers``) write JSON in the same layout on the same folds; ``--peers``
prints their rows beside these.

Time: as in ``ecrm reproduce ranking`` (one pool, one BLAS thread and one seed per fold: the
results do not depend on ``--n-jobs``); the seconds are each method's CPU time, summed.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ecrm.commands._options import names_option
from ecrm.experiments import _ranking_peers as _peers
from ecrm.experiments._ranking_peers import MIXING_GRID
from ecrm.experiments.ranking import fold_seed, protocol_folds

__all__ = ["DEFAULT_DATASETS", "METHODS", "add_parser", "fold_seed", "format_table",
           "protocol_folds", "run", "run_datasets"]

#: The ten sets of the benchmark, smaller label counts and sizes first.
DEFAULT_DATASETS = ("iris", "wine", "glass", "vehicle", "breast", "ecoli", "libras",
                    "segment", "blocks", "satimage")
METHODS = ("ECRM-kernel", "ECRM-forest", "ECRM-mixed", "kNN-Borda")
ALPHAS = np.logspace(-6, 2, 17)
GAMMAS = (0.25, 1.0, 4.0)  # times 1 / n_features
KERNEL_SUBSAMPLE = 600
DUAL_MAX_TRAIN = 1000
N_COMPONENTS = 500
LARGE_LOO_ROWS = 2000
NEIGHBOURS = (1, 3, 5, 7, 10, 15, 20, 30, 50)
THRESHOLDS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)


def _signs(P) -> np.ndarray:
    """:math:`s_{ab} = u_{ab} - u_{ba}` of positions ``P`` (n, k) (1 = top, 0 = missing:
    its pairs are 0), (n, k, k)."""
    P = np.asarray(P)
    seen = (P > 0)[:, :, None] & (P > 0)[:, None, :]
    return np.where(seen, np.sign(P[:, None, :] - P[:, :, None]), 0)


def _buckets(scores, theta) -> np.ndarray:
    """Positions (n, k) of labels sorted by decreasing ``scores``, a label tied with the one
    before it when its score is at most ``theta`` lower."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranked = np.take_along_axis(scores, order, axis=1)
    new = np.concatenate([np.ones((len(scores), 1), dtype=int),
                          (ranked[:, :-1] - ranked[:, 1:] > theta + 1e-12).astype(int)], axis=1)
    P = np.empty_like(order)
    np.put_along_axis(P, order, np.cumsum(new, axis=1), axis=1)
    return P


def _borda_scores(neigh_positions) -> np.ndarray:
    """Mean normalised Borda count of each label over the neighbours: (n, m, k) -> (n, k)."""
    n, m, k = neigh_positions.shape
    S = _signs(neigh_positions.reshape(n * m, k)).reshape(n, m, k, k)
    # S[.., a, b] = sign(p_b - p_a): +1 when a is ahead of b
    return S.sum(axis=3).mean(axis=1) / max(k - 1, 1)


def _knn_borda(Xtr, Ptr, Xte):
    """kNN-Borda: ``k`` and ``theta`` by exact leave-one-out tau_x on the training fold."""
    from sklearn.neighbors import NearestNeighbors

    from ecrm.losses import tau_x

    ks = [k for k in NEIGHBOURS if k < len(Xtr)] or [1]
    nn = NearestNeighbors(n_neighbors=min(max(ks) + 1, len(Xtr))).fit(Xtr)
    loo = nn.kneighbors(Xtr, return_distance=False)
    loo = np.array([row[row != i][: max(ks)] for i, row in enumerate(loo)])
    best = (-np.inf, None, None)
    for k in ks:
        scores = _borda_scores(Ptr[loo[:, :k]])
        for theta in THRESHOLDS:
            value = tau_x(Ptr, _buckets(scores, theta))
            if value > best[0]:
                best = (value, k, theta)
    _, k, theta = best
    test = nn.kneighbors(Xte, n_neighbors=k, return_distance=False)
    return _buckets(_borda_scores(Ptr[test]), theta), {"k": k, "theta": theta}


def _kernel_options(m: int, p: int) -> dict:
    """ECRM-kernel's :class:`ecrm.ECRMCV` settings for ``m`` training points of ``p``
    features (as ``MixedRiskECRM``'s ``kernel_options``)."""
    from ecrm import DualSolver, NystromSolver
    from ecrm.selection import LeaveOneOutSearch

    large = m > DUAL_MAX_TRAIN
    search = LeaveOneOutSearch(
        fit_intercept="auto",
        kernel_grid=[{"kernel": ["linear"]},
                     {"kernel": ["rbf"], "gamma": [g / max(p, 1) for g in GAMMAS]}],
        kernel_subsample=KERNEL_SUBSAMPLE if m > KERNEL_SUBSAMPLE else None,
        loo_samples=LARGE_LOO_ROWS if large else None)
    return {"alphas": ALPHAS, "search": search,
            "solver": NystromSolver(n_components=N_COMPONENTS) if large else DualSolver.name}


def _forest_options(m: int, k: int) -> dict:
    """ECRM-forest's :class:`ecrm.ForestECRMCV` settings for ``m`` training bucket orders of
    ``k`` labels (as ``MixedRiskECRM``'s ``forest_options``)."""
    from ecrm.selection import OutOfBagSearch

    large = m > _peers.FOREST_SEARCH_ABOVE
    search = OutOfBagSearch(param_grid=_peers.FOREST_GRID,
                            search_estimators=_peers.FOREST_SEARCH_TREES if large else None,
                            split_search="descent" if large else "grid")
    return {"search": search, "n_estimators": _peers.FOREST_TREES, "n_split_targets": k,
            "split_projection": "principal"}


def _ecrm(Xtr, Ptr, Xte, seed, methods=METHODS) -> tuple[dict, dict]:
    """The ECRM rows of ``methods`` on one fold: ``{method: (positions, params)}`` and
    ``{method: CPU seconds}``. The two models are seeded as ``MixedRiskECRM(random_state=
    seed)`` seeds its members, so ECRM-mixed is its choice; it needs both (its seconds
    include theirs), the others only their own."""
    from ecrm import ECRMCV, ForestECRMCV
    from ecrm.losses import TauXLoss
    from ecrm.spaces import BucketOrderSpace
    from ecrm.spaces.bucket_orders import bucket_order_to_pairs, pairs_to_bucket_order
    from ecrm.weights.mixture import choose_mixture, kernel_loo_outputs

    (m, p), k = Xtr.shape, Ptr.shape[1]
    loss, space = TauXLoss(), BucketOrderSpace(k)
    Ytr = bucket_order_to_pairs(Ptr)
    seeds = np.random.RandomState(seed).randint(np.iinfo(np.int32).max, size=2)
    mixed = "ECRM-mixed" in methods
    out, seconds = {}, {}
    if mixed or "ECRM-kernel" in methods:
        t0 = time.process_time()
        kernel = ECRMCV(loss, space, **_kernel_options(m, p), random_state=int(seeds[0]))
        rows, K = kernel_loo_outputs(kernel, Xtr, Ytr)
        Ck = kernel.predict_costs(Xte)
        out["ECRM-kernel"] = (space.minimize(Ck, loss.cost_form), {
            **kernel.kernel_params_, "alpha": float(kernel.alpha_),
            "fit_intercept": bool(kernel.fit_intercept_)})
        seconds["ECRM-kernel"] = time.process_time() - t0
    if mixed or "ECRM-forest" in methods:
        t0 = time.process_time()
        forest = ForestECRMCV(loss, space, **_forest_options(m, k), random_state=int(seeds[1]))
        forest.fit(Xtr, Ytr)
        Cf = forest.predict_costs(Xte)
        out["ECRM-forest"] = (space.minimize(Cf, loss.cost_form), dict(forest.best_params_))
        seconds["ECRM-forest"] = time.process_time() - t0
    if mixed:
        t0 = time.process_time()
        share = choose_mixture((rows, K), forest.oob_costs(), kernel.Y_fit_, MIXING_GRID,
                               loss=loss, output_space=space).mixture
        out["ECRM-mixed"] = (space.minimize(share * Ck + (1 - share) * Cf, loss.cost_form),
                             {"mixture": share})
        seconds["ECRM-mixed"] = (time.process_time() - t0 + seconds["ECRM-kernel"]
                                 + seconds["ECRM-forest"])
    return ({name: (pairs_to_bucket_order(Y), params) for name, (Y, params) in out.items()},
            seconds)


def _fold(X, P, train, test, *, methods, seed) -> dict:
    """Every method on one split: ``{method: (mean tau_x, params, CPU seconds)}``."""
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    from ecrm.losses import tau_x

    scaler = StandardScaler().fit(X[train])
    Xtr, Xte, Ptr = scaler.transform(X[train]), scaler.transform(X[test]), P[train]
    results, seconds = {}, {}
    with threadpool_limits(1, user_api="blas"):  # one core per fold: folds run in parallel
        if any(m.startswith("ECRM-") for m in methods):
            ecrm, secs = _ecrm(Xtr, Ptr, Xte, seed, methods)
            results.update(ecrm)
            seconds.update(secs)
        if "kNN-Borda" in methods:
            t0 = time.process_time()
            results["kNN-Borda"] = _knn_borda(Xtr, Ptr, Xte)
            seconds["kNN-Borda"] = time.process_time() - t0
    return {m: (tau_x(P[test], results[m][0]), results[m][1], seconds[m])
            for m in methods}


def run_datasets(names, data_dir, *, repeats=5, folds=10, methods=METHODS, n_jobs=1,
                 random_state=0, progress=None, finished=None) -> list[dict]:
    """tau_x of every method on every test fold of every data set in ``names``, all the
    folds in one pool of ``n_jobs`` processes, the larger sets' first
    (:func:`ecrm.experiments.ranking._pool`). Returns one record per set, in the order of
    ``names``, as :func:`ecrm.experiments.ranking._summary` makes it (``repeats`` and
    ``folds`` the protocol; ``tau_x_mean``, ``tau_x_std`` and ``fold_tau_x`` the scores)."""
    from joblib import delayed

    from ecrm.datasets.partial_ranking import load_partial_label_ranking
    from ecrm.experiments._ranking_fold import _fold_counting_edges
    from ecrm.experiments.ranking import _pool, _summary

    names = list(dict.fromkeys(names))
    data = {name: load_partial_label_ranking(name, data_dir) for name in names}
    tags, tasks = [], []
    for name in sorted(names, key=lambda n: -data[n].X.shape[0]):
        X, P = data[name].X, data[name].positions
        for _, _, train, test, seed in protocol_folds(len(X), repeats=repeats, folds=folds,
                                                      random_state=random_state):
            tags.append(name)
            tasks.append(delayed(_fold_counting_edges)(X, P, train, test, methods=methods,
                                                       seed=seed, fold=_fold))

    def summary(name, done):
        d = data[name]
        return _summary(name, d.X, d.positions.shape[1], done, methods=methods,
                        keys=("tau_x_mean", "tau_x_std", "fold_tau_x"), repeats=repeats,
                        folds=folds)

    return _pool(tags, tasks, names, n_jobs=n_jobs, per_tag=repeats * folds, summary=summary,
                 progress=progress, finished=finished)


def format_table(results, peers=()) -> str:
    """One line per data set: mean (std) tau_x of every method, then of every peer (rows of
    the peers' JSON for the same set; blank where a peer did not run it)."""
    methods = [r["method"] for r in results[0]["rows"]] if results else []
    by_set = {info["dataset"]: {r["method"]: r for r in info["rows"]} for info in peers}
    others = list(dict.fromkeys(r["method"] for info in peers for r in info["rows"]))
    head = f"{'data set':<10}{'n':>6}{'k':>4}" + "".join(f"{m:>16}" for m in methods + others)
    lines = [head]
    for info in results:
        rows = {r["method"]: r for r in info["rows"]} | by_set.get(info["dataset"], {})
        cells = "".join(f"{rows[m]['tau_x_mean']:>9.3f} ({rows[m]['tau_x_std']:.3f})"
                        if m in rows else f"{'':>16}" for m in methods + others)
        lines.append(f"{info['dataset']:<10}{info['n']:>6}{info['k']:>4}{cells}")
    secs = [sum(r["seconds"] for info in list(results) + list(peers) for r in info["rows"]
                if r["method"] == m and info["dataset"] in {i["dataset"] for i in results})
            for m in methods + others]
    lines.append(f"{'CPU seconds':<20}" + "".join(f"{s:>16.1f}" for s in secs))
    return "\n".join(lines)


def _read_peers(path) -> list[dict]:
    """The peers' JSON (a list of per-set results with ``rows`` as :func:`run_datasets`')."""
    with open(path, encoding="utf-8") as f:
        peers = json.load(f)
    if not isinstance(peers, list) or not all(
            isinstance(i, dict) and "dataset" in i and isinstance(i.get("rows"), list)
            and all({"method", "tau_x_mean", "tau_x_std", "seconds"} <= set(r)
                    for r in i["rows"]) for i in peers):
        raise ValueError(f"{path}: not the peers' results (a JSON list of data sets with "
                         f"rows of method, tau_x_mean, tau_x_std and seconds)")
    return peers


def run(args) -> int:
    """Run ``ecrm reproduce partial-ranking`` from parsed arguments; the ``--json`` path and
    the ``--peers`` file are checked before any work."""
    from ecrm.commands import fail
    from ecrm.commands._files import OutputError
    from ecrm.commands._options import progress_bar
    from ecrm.datasets.partial_ranking import PARTIAL_RANKING_HELP, list_partial_label_ranking
    from ecrm.experiments.ranking import _dataset_names, _print_edges, _save_json

    try:
        peers = _read_peers(args.peers) if args.peers else []
        names = _dataset_names(args, list_partial_label_ranking, DEFAULT_DATASETS,
                               PARTIAL_RANKING_HELP)
    except (OutputError, OSError, ValueError) as exc:
        return fail(str(exc))
    with progress_bar(len(names) * args.repeats * args.folds, "partial ranking folds",
                      enabled=not args.quiet) as bar:
        results = run_datasets(names, args.data_dir, repeats=args.repeats, folds=args.folds,
                               methods=args.methods, n_jobs=args.n_jobs, progress=bar,
                               finished=_save_json(args.json))
    print(format_table(results, peers))
    _print_edges(results)
    return 0


def add_parser(subparsers) -> None:
    from ecrm.experiments.ranking import _add_protocol_options

    parser = subparsers.add_parser(
        "partial-ranking", help="partial label ranking benchmark (bucket orders): ECRM kernel, "
        "forest and mixed against kNN-Borda and scikit-lr's peers, tau_x",
        description=__doc__.split("\n\n")[1])
    _add_protocol_options(parser, "$ECRM_DATA_PARTIAL_RANKING")
    parser.add_argument("--methods", default=METHODS, type=names_option("--methods", METHODS),
                        help="comma-separated methods (default: all of " + ", ".join(METHODS)
                        + ")")
    parser.add_argument("--peers", help="JSON of benchmarks/partial_ranking_sklr.py: its rows "
                        "printed beside these")
    parser.set_defaults(func=run)
