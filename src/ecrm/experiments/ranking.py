"""``ecrm reproduce ranking``: label ranking on the standard benchmark, Kendall's tau.

Protocol (Cheng, Hühn & Hüllermeier, ICML 2009, and the later literature): ``--repeats``
(default 5) repetitions of ``--folds``-fold (default 10) cross-validation, Kendall's tau
between predicted and true rankings averaged over the test points of every fold; the table
gives its mean and standard deviation over the repeats x folds. Everything is fitted on the
training fold only: the features are standardised there, and every hyper-parameter is chosen
there.

* **ECRM** with the squared-rank and footrule losses: :class:`ecrm.ECRMCV` chooses the kernel
  (linear, or RBF with ``gamma`` in ``GAMMAS / p``), the intercept (with or without) and
  ``alpha`` in ``ALPHAS`` by the exact leave-one-out task loss (the kernel on a random subset of
  ``KERNEL_SUBSAMPLE`` training points, then ``alpha`` and the intercept on all of them). Every
  model of a fold draws the same subset, so one eigendecomposition per kernel and subset,
  cached, serves every loss and the kernel ridge baseline.
* **ECRM** with the Kendall loss (exact Kemeny inference,
  :class:`ecrm.losses.kendall.KendallLoss`): the kernel and intercept the squared-rank model
  chose, and ``alpha`` by Kendall's own exact leave-one-out loss. Every leave-one-out
  prediction solves a linear ordering problem, :math:`O(2^k k)` by dynamic programming, so the
  loss is averaged over all training points when that costs at most ``KENDALL_LOO_BUDGET``
  DP operations per candidate, else over ``KENDALL_LOO_MIN_ROWS`` random training points
  (:func:`kendall_loo_rows`; only wisconsin, ``k = 16``, is affected).
* **ECRM-selected**: of those three models, the one with the smallest exact leave-one-out
  Kendall distance on the training fold (on the Kendall model's leave-one-out points; ties go
  to Kendall, then footrule). Model selection on the task loss, nothing fitted anew; each
  model's leave-one-out loss is the minimum over its candidates (slightly optimistic for
  footrule and squared rank, which have more).
* **ECRM-forest**: ECRM with forest weights and the Kendall loss, its settings by the
  out-of-bag Kendall distance (:mod:`._ranking_peers`); **ECRM-honest**: of ECRM-selected's
  model and the forest, the one with the smaller honest training-fold Kendall distance
  (exact leave-one-out against out-of-bag). Nothing fitted anew. **ECRM-mixed**: the
  risk mixed from one of the three kernel models' and the forest's weights applied to that
  model's loss; the loss and the kernel's share in ``MIXING_GRID`` chosen together by the
  Kendall distance of the exact rankings of the mixed honest costs (the Kendall model's
  leave-one-out points, out of bag in the forest). Its candidates include ECRM-selected's
  model (share 1) and ECRM-forest (share 0), so it is the protocol's honestly selected row.
  **ECRM-stacked** (on request, ``--methods``): the risk stacked from the three kernel
  models' and the forest's weights
  (:mod:`._ranking_stack`): the weights on the simplex and the loss they are applied to
  chosen on the same honest costs, guarded by the nested honest check (the best single
  member unless the stack wins by more than its standard error).
* **kNN + Borda** and **kNN + Kemeny**: the rankings of the ``k`` nearest training points,
  aggregated by mean position or exactly by Kemeny's rule
  (:func:`ecrm.spaces.linear_ordering.linear_ordering`); ``k`` in ``NEIGHBOURS`` by the exact
  leave-one-out Kendall's tau on the training fold.
* **KRR on positions**: scikit-learn's ``KernelRidge`` (no intercept) on the rank vector,
  labels ranked by predicted position; the kernel and ``alpha`` (``KernelRidge(alpha=m *
  alpha)``, ``alpha`` in ``ALPHAS``) by the exact leave-one-out Kendall distance from the same
  eigendecompositions as ECRM, in the same two stages (:func:`._ranking_kernel._krr`).

Large sets. By default every model trains on the whole training fold (the published
protocol). A fold of at most ``DUAL_MAX_TRAIN`` points (1,000; or ``--n-components``, if
larger) is fitted exactly as above. A larger one (at ten folds every set with more than 1,111
instances: segment, cpu, elevators, calhousing, fried and the five yeast sets), where the
m x m dual would cost minutes and gigabytes per fold, is fitted in low rank
(:mod:`._ranking_kernel`, ``_ecrm_large`` and ``_krr_large``): the kernel is still chosen by
the exact dual on ``KERNEL_SUBSAMPLE`` random training points (by the squared-rank model,
for all three ECRM losses, and by kernel ridge for itself), then every model is fitted on the
whole fold through Nystrom features on ``--n-components`` (default 500) uniformly drawn centres
(``solver="nystrom"``), or through the exact primal when the kernel is linear; ``alpha``, the
intercept and kNN's ``k`` by the exact leave-one-out criterion averaged over
``LARGE_LOO_ROWS`` (2,000) random training points (:func:`large_loo_rows`). Kendall's
Kemeny oracle runs batched, as on small folds.

The capped protocol (``--max-train 1000``): a training fold with more than ``--max-train``
points is replaced by a random subset of that size, drawn without replacement from the
training fold; every fold is then fitted exactly. The test fold is always complete. Where a
training fold is under the cap the two protocols fit the same models on the same draws, so
they agree.

Missing labels (``--missing p``, the second protocol of the label ranking literature):
each label of each *training* ranking is removed independently with probability ``p``
(at least two labels kept per ranking), by a generator seeded from the fold's seed; the test
rankings stay complete. Only the methods that learn from incomplete rankings run
(``MISSING_METHODS``): ECRM-Kendall (its own kernel, intercept and ``alpha`` by the exact
leave-one-out Kendall distance over the pairs each held-out ranking observes), ECRM-forest,
and ECRM-mixed of the two (the kernel's share by the honest Kendall distance on the observed
pairs). They run on training folds of at most ``DUAL_MAX_TRAIN`` points (``--max-train``
caps larger ones).

Time: the folds of every data set run in one pool of ``--n-jobs`` processes (joblib), the
larger sets' first, so that no process idles at the end of a set; every fold uses one BLAS
thread, also with ``--n-jobs 1``, so that its floating-point results are the same either way.
Every fold's random draws (the training subset, the kernel subset, the leave-one-out rows)
come from its own seed, :func:`fold_seed` ``(random_state, repeat, fold)``, so the results do
not depend on the number of processes.
"""

from __future__ import annotations

import functools
import json
import time

import numpy as np

from ecrm.commands._options import names_option, number_option, output_file_option, parameter_option
from ecrm.commands._threads import workers_option
from ecrm.experiments._ranking_kernel import (
    ALPHAS,
    ECRM_LOSSES,
    KENDALL_LOO_BUDGET,
    KENDALL_LOO_MIN_ROWS,
    LARGE_LOO_ROWS,
    _ecrm,
    _ecrm_large,
    _krr,
    _krr_large,
    kendall_loo_rows,
    large_loo_rows,
)
from ecrm.experiments._ranking_knn import NEIGHBOURS, _borda, _kemeny, _knn, _neighbours, _tau
from ecrm.experiments._ranking_peers import (
    PUBLISHED,
    SSVM_CS,
    _forest,
    _honest,
    _lwrf,
    _mixed,
    _pwrf,
    _ssvm,
)
from ecrm.experiments._ranking_stack import _stacked
from ecrm.model_files._atomic import write_text

__all__ = ["ALPHAS", "DEFAULT_DATASETS", "DUAL_MAX_TRAIN", "ECRM_LOSSES", "GAMMAS",
           "KENDALL_LOO_BUDGET", "KENDALL_LOO_MIN_ROWS", "LARGE_LOO_ROWS", "METHODS",
           "N_COMPONENTS", "NEIGHBOURS", "PUBLISHED", "SSVM_CS", "add_parser", "fold_seed",
           "format_table", "kendall_loo_rows", "large_loo_rows", "protocol_folds", "run",
           "run_dataset", "run_datasets"]

#: The benchmark in the usual order: 13 semi-synthetic sets, then the 5 yeast sets.
DEFAULT_DATASETS = ("iris", "wine", "glass", "vehicle", "stock", "housing", "bodyfat",
                    "wisconsin", "segment", "cpu", "elevators", "calhousing", "fried",
                    "cold", "diau", "dtt", "heat", "spo")
GAMMAS = (0.25, 1.0, 4.0)  # times 1 / n_features
#: Training folds of at most this many points (or ``--n-components``, if larger) are fitted
#: exactly, by the dual; the capped protocol's folds always are.
DUAL_MAX_TRAIN = 1000
#: Nystrom centres of a larger training fold (``--n-components``).
N_COMPONENTS = 500

METHODS = ("ECRM-Kendall", "ECRM-footrule", "ECRM-squared", "ECRM-selected", "ECRM-forest",
           "ECRM-honest", "ECRM-mixed", "kNN-Borda", "kNN-Kemeny", "KRR-positions")
#: Methods run only when asked for (``--methods``): the structured SVM with the Kendall loss
#: (loss-augmented inference by the exact Kemeny oracle), C by 3-fold cross-validation; the
#: label-wise and pairwise random-forest peers (:mod:`._ranking_forest`); ECRM-stacked
#: (:mod:`._ranking_stack`; its search runs the exact oracle about ten times as often as
#: ECRM-mixed's, and on one repeat of the small sets it did not improve on it).
OPTIONAL_METHODS = ("SSVM-Kendall", "LWRF", "PWRF", "ECRM-stacked")
#: The methods that need the kernel ECRM models of a fold.
KERNEL_ECRM = (*ECRM_LOSSES, "ECRM-selected", "ECRM-honest", "ECRM-mixed", "ECRM-stacked")
#: The methods that need ECRM-forest's model.
FOREST_NEEDED = {"ECRM-honest", "ECRM-mixed", "ECRM-stacked"}
#: The methods of the missing-labels protocol (``--missing``): they learn from incomplete
#: rankings.
MISSING_METHODS = ("ECRM-Kendall", "ECRM-forest", "ECRM-mixed")


def remove_labels(R, fraction: float, rng, *, keep: int = 2) -> np.ndarray:
    """Incomplete copies of the rankings ``R`` (n, k; 0 = top): each label removed with
    probability ``fraction``, at least ``keep`` labels left per row (removed labels put back
    at random until then); ranks ``-1`` for a removed label, ``0 .. m-1`` for the ``m`` left,
    in their order.

    >>> remove_labels(np.array([[2, 0, 1, 3]]), 0.5, np.random.default_rng(0)).tolist()
    [[1, 0, -1, -1]]
    """
    R = np.asarray(R)
    n, k = R.shape
    drop = rng.random((n, k)) < fraction
    short = np.maximum(keep - (k - drop.sum(axis=1)), 0)  # labels to put back per row
    for i in np.flatnonzero(short):
        drop[i, rng.choice(np.flatnonzero(drop[i]), short[i], replace=False)] = False
    order = np.argsort(np.argsort(np.where(drop, k + R, R), axis=1), axis=1)
    return np.where(drop, -1, order)


def _incomplete_methods(Xtr, Rtr, Xte, *, gammas, methods, fit_seed, memory,
                        extend_grid) -> tuple[dict, dict]:
    """The ``MISSING_METHODS`` on incomplete training rankings ``Rtr`` (-1: missing):
    (test rankings, parameters) and CPU seconds per method."""
    from ecrm import ECRMCV
    from ecrm.experiments._ranking_kernel import KERNEL_SUBSAMPLE, _fit, _kernel_candidates
    from ecrm.experiments._ranking_peers import MIXING_GRID
    from ecrm.losses.kendall import KendallLoss
    from ecrm.selection import LeaveOneOutSearch
    from ecrm.spaces.permutations import PermutationSpace
    from ecrm.weights.mixture import choose_mixture

    space, loss = PermutationSpace(Rtr.shape[1]), KendallLoss()
    Ytr = space.from_ranks(Rtr)
    results, seconds = {}, {}
    honest: dict = {}
    if {"ECRM-Kendall", "ECRM-mixed"} & set(methods):
        t0 = time.process_time()
        search = LeaveOneOutSearch(
            fit_intercept="auto", kernel_grid=_kernel_candidates(gammas), memory=memory,
            kernel_subsample=KERNEL_SUBSAMPLE, extend_grid=extend_grid,
            loo_samples=kendall_loo_rows(*Rtr.shape))
        model = _fit(honest, "ECRM-Kendall", ECRMCV(
            loss, space, alphas=ALPHAS, search=search, random_state=fit_seed), Xtr, Ytr)
        results["ECRM-Kendall"] = (space.to_ranks(model.predict(Xte)), {
            **model.kernel_params_, "alpha": model.alpha_,
            "fit_intercept": model.fit_intercept_})
        seconds["ECRM-Kendall"] = time.process_time() - t0
    if {"ECRM-forest", "ECRM-mixed"} & set(methods):
        t0 = time.process_time()
        results["ECRM-forest"] = _forest(Xtr, Rtr, Xte, fit_seed, honest)
        seconds["ECRM-forest"] = time.process_time() - t0
    if "ECRM-mixed" in methods:
        t0 = time.process_time()
        (model, rows, K), forest = honest["ECRM-Kendall"], honest["forest"]
        psi = loss.psi(Ytr)
        F = np.full(psi.shape, np.nan)
        F[rows] = forest.weighted_sum(psi, rows=rows)
        choice = choose_mixture((rows, K), F, Ytr, MIXING_GRID, loss=loss, output_space=space)
        share = choice.mixture
        C = share * model.predict_costs(Xte) + (1.0 - share) * forest.weighted_sum(psi, Xte)
        results["ECRM-mixed"] = (space.to_ranks(space.minimize(C, loss.cost_form)), {
            "mixture": share, "honest_discordant": float(np.min(choice.mean_losses))})
        seconds["ECRM-mixed"] = time.process_time() - t0
    return results, seconds


def _fold(X, R, train, test, *, gammas, methods, seed, max_train,
          n_components=N_COMPONENTS, extend_grid=False, missing=0.0):
    """Every method on one train/test split: (taus, params, seconds) per method; the seconds
    are the CPU time of the fold's process (one core: BLAS and the trees single-threaded), so
    that their sum does not depend on the machine's load or on ``--n-jobs``."""
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    from ecrm.experiments.cache import InMemoryCache

    rng = np.random.RandomState(seed)
    train = _cap(train, max_train, rng)
    scaler = StandardScaler().fit(X[train])
    Xtr, Xte, Rtr, Rte = scaler.transform(X[train]), scaler.transform(X[test]), R[train], R[test]
    results, seconds, honest = {}, {}, {}
    memory = InMemoryCache()  # one eigendecomposition per kernel and subset, for every method
    fit_seed = rng.randint(2**31 - 1)
    large = () if len(train) <= max(DUAL_MAX_TRAIN, n_components) else (n_components,)
    ecrm, krr = (_ecrm_large, _krr_large) if large else (_ecrm, _krr)
    requested = methods
    if missing:  # the training rankings lose labels; the test rankings stay complete
        Rtr = remove_labels(Rtr, missing, np.random.default_rng([seed, 1]))
        with threadpool_limits(1, user_api="blas"):
            results, seconds = _incomplete_methods(Xtr, Rtr, Xte, gammas=gammas,
                                                   methods=methods, fit_seed=fit_seed,
                                                   memory=memory, extend_grid=extend_grid)
        methods = ()
    with threadpool_limits(1, user_api="blas"):  # one core per fold: folds run in parallel
        if any(m in KERNEL_ECRM for m in methods):
            t0 = time.process_time()
            results.update(ecrm(Xtr, Rtr, Xte, gammas, memory, fit_seed, *large,
                                honest=honest, extend_grid=extend_grid))
            share = (time.process_time() - t0) / len(ECRM_LOSSES)
            seconds.update({m: share for m in ECRM_LOSSES})
            seconds["ECRM-selected"] = 0.0  # no fit of its own
        knn = (large_loo_rows(*Rtr.shape), fit_seed) if large else ()
        neighbours = functools.cache(lambda: _neighbours(Xtr, Xte, *knn))  # shared, once
        for m, fn, extra in [("ECRM-forest", _forest, (fit_seed, honest)),
                             ("kNN-Borda", _knn, (_borda, neighbours)),
                             ("kNN-Kemeny", _knn, (_kemeny, neighbours)),
                             ("KRR-positions", krr, (gammas, memory, fit_seed, *large)),
                             ("SSVM-Kendall", _ssvm, (gammas, fit_seed)),
                             ("LWRF", _lwrf, (fit_seed,)), ("PWRF", _pwrf, (fit_seed,))]:
            if m in methods or (m == "ECRM-forest" and FOREST_NEEDED & set(methods)):
                t0 = time.process_time()
                results[m] = fn(Xtr, Rtr, Xte, *extra)
                seconds[m] = time.process_time() - t0
        if "ECRM-honest" in methods:
            results["ECRM-honest"] = _honest(results["ECRM-selected"], results["ECRM-forest"])
            seconds["ECRM-honest"] = 0.0  # no fit of its own
        if "ECRM-mixed" in methods:
            t0 = time.process_time()
            results["ECRM-mixed"] = _mixed(honest, honest["forest"], Rtr, Xte)
            seconds["ECRM-mixed"] = time.process_time() - t0  # the choice and the predictions
        if "ECRM-stacked" in methods:
            t0 = time.process_time()
            results["ECRM-stacked"] = _stacked(honest, honest["forest"], Xtr, Rtr, Xte,
                                               fit_seed, exact=not large)
            seconds["ECRM-stacked"] = time.process_time() - t0
    return {m: (float(_tau(results[m][0], Rte).mean()), results[m][1], seconds[m])
            for m in requested}


def _fold_counting_edges(*args, **kwargs) -> tuple[dict, int, float]:
    """:func:`_fold`, how many of its searches chose an end of the protocol's own grid (those
    :class:`~ecrm.exceptions.GridEdgeWarning` are counted for the summary: a user cannot
    change the grid; every other warning is shown), and its wall seconds."""
    import warnings

    from ecrm.exceptions import GridEdgeWarning

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _fold(*args, **kwargs)
    edges = [w for w in caught if issubclass(w.category, GridEdgeWarning)]
    for w in caught:
        if not issubclass(w.category, GridEdgeWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out, len(edges), time.perf_counter() - start


def _cap(train, max_train, rng) -> np.ndarray:
    """``train``, or ``max_train`` of its points drawn by ``rng`` when it has more."""
    if max_train is not None and len(train) > max_train:
        return np.sort(rng.choice(train, max_train, replace=False))
    return train


def protocol_folds(n_samples: int, *, repeats=5, folds=10, random_state=0, max_train=None):
    """The folds of :func:`run_dataset`: ``(repeat, fold, train, test, seed)`` for each,
    ``train`` already capped at ``max_train`` points as the fold capped it, ``seed`` its
    :func:`fold_seed`. Other label rankers run on exactly these folds
    (``benchmarks/ranking_sklr.py``)."""
    from sklearn.model_selection import KFold

    for rep in range(repeats):
        split = KFold(folds, shuffle=True, random_state=random_state + rep)
        for f, (train, test) in enumerate(split.split(np.empty((n_samples, 1)))):
            seed = fold_seed(random_state, rep, f)
            yield rep, f, _cap(train, max_train, np.random.RandomState(seed)), test, seed


def fold_seed(random_state: int, repeat: int, fold: int) -> int:
    """The seed of one fold's random draws: the same whatever the number of jobs."""
    return int(np.random.SeedSequence([random_state, repeat, fold]).generate_state(1)[0])


def run_dataset(name, data_dir, *, repeats=5, folds=10, max_train=None, methods=METHODS,
                progress=None, random_state=0, n_jobs=1, gammas=None,
                n_components=N_COMPONENTS, extend_grid=False, missing=0.0) -> dict:
    """Kendall's tau of every method on every test fold of one data set.

    ``max_train=None`` trains on whole folds (Nystrom with ``n_components`` centres on folds
    of more than ``max(DUAL_MAX_TRAIN, n_components)`` points); an integer caps every
    training fold at that many random points. The folds run in ``n_jobs`` processes
    (joblib), each with one BLAS thread; every fold's random draws come from
    :func:`fold_seed`, so the results do not depend on ``n_jobs``. ``missing`` > 0 runs the
    missing-labels protocol (module docstring) with ``MISSING_METHODS``.
    """
    return run_datasets([name], data_dir, repeats=repeats, folds=folds, max_train=max_train,
                        methods=methods, progress=progress, random_state=random_state,
                        n_jobs=n_jobs, gammas=gammas, n_components=n_components,
                        extend_grid=extend_grid, missing=missing)[0]


def run_datasets(names, data_dir, *, repeats=5, folds=10, max_train=None, methods=METHODS,
                 progress=None, random_state=0, n_jobs=1, gammas=None,
                 n_components=N_COMPONENTS, extend_grid=False, finished=None,
                 missing=0.0) -> list[dict]:
    """:func:`run_dataset` of every data set in ``names``, all their folds in one pool of
    ``n_jobs`` processes: the larger sets' folds first, so that no process waits for a set's
    last fold while another set's remain. ``finished(results)`` is called with the results
    of the sets done so far (in the order of ``names``) whenever a set is done; the results
    of every set are returned in that order."""
    from joblib import Parallel, delayed

    from ecrm.datasets.label_ranking import load_label_ranking

    names = list(dict.fromkeys(names))  # each set once
    methods = _check_missing(missing, methods)
    data = {name: load_label_ranking(name, data_dir) for name in names}
    for name in names if missing else ():
        if (data[name].ranks < 0).any():
            raise ValueError(f"{name}: --missing removes labels from complete rankings; the "
                             f"file already holds incomplete ones")
        if max_train is None and len(data[name].X) - len(data[name].X) // folds \
                > DUAL_MAX_TRAIN:
            raise ValueError(f"{name}: the missing-labels protocol fits training folds of "
                             f"at most {DUAL_MAX_TRAIN} points; pass --max-train "
                             f"{DUAL_MAX_TRAIN}")
    tags, tasks = [], []
    for name in sorted(names, key=lambda n: -data[n].X.shape[0]):  # stable: ties as given
        X, R = data[name].X, data[name].ranks
        scaled = [g / X.shape[1] for g in (GAMMAS if gammas is None else gammas)]
        # whole training folds here: each fold caps its own from its seed (``_fold``)
        for _, _, train, test, seed in protocol_folds(len(X), repeats=repeats, folds=folds,
                                                      random_state=random_state):
            tags.append(name)
            tasks.append(delayed(_fold_counting_edges)(
                X, R, train, test, gammas=scaled, methods=methods, seed=seed,
                max_train=max_train, n_components=n_components, extend_grid=extend_grid,
                missing=missing))
    done: dict[str, list] = {name: [] for name in names}
    results: dict[str, dict] = {}
    for name, (out, n_edges, wall) in zip(tags, Parallel(n_jobs=n_jobs,
                                                         return_as="generator")(tasks),
                                          strict=True):
        done[name].append((out, n_edges, wall))
        if progress is not None:
            progress.set_postfix_str(name)
            progress.update()
        if len(done[name]) == repeats * folds:
            results[name] = _summary(name, data[name], done.pop(name), methods=methods,
                                     max_train=max_train, n_components=n_components,
                                     extend_grid=extend_grid, repeats=repeats, folds=folds,
                                     missing=missing)
            if finished is not None:
                finished([results[n] for n in names if n in results])
    return [results[name] for name in names]


def _check_missing(missing, methods) -> tuple:
    """The methods to run: ``MISSING_METHODS`` (of those asked for) when ``missing`` > 0;
    ``ValueError`` for a fraction outside [0, 1) or a method that needs complete rankings."""
    if not 0.0 <= missing < 1.0:
        raise ValueError(f"--missing must be a fraction in [0, 1); got {missing!r}")
    if not missing:
        return tuple(methods)
    if tuple(methods) == METHODS:
        return MISSING_METHODS
    other = [m for m in methods if m not in MISSING_METHODS]
    if other:
        raise ValueError(f"--missing: {', '.join(other)} need complete training rankings; "
                         f"the missing-labels protocol runs {', '.join(MISSING_METHODS)}")
    return tuple(methods)


def _summary(name, data, done, *, methods, **protocol) -> dict:
    """One data set's results from its folds' ``(taus, grid edges, wall seconds)``;
    ``seconds_wall`` is the sum of its folds' wall times (each fold runs in one process)."""
    folds = [out for out, _, _ in done]
    return {"dataset": name, "n": data.X.shape[0], "p": data.X.shape[1],
            "k": data.ranks.shape[1], **protocol,
            "seconds_wall": sum(wall for _, _, wall in done),
            "grid_edge_warnings": sum(edges for _, edges, _ in done),
            "rows": [{"method": m, "tau_mean": float(np.mean([d[m][0] for d in folds])),
                      "tau_std": float(np.std([d[m][0] for d in folds])),
                      "fold_taus": [d[m][0] for d in folds],
                      "seconds": float(sum(d[m][2] for d in folds)),
                      "params": [d[m][1] for d in folds]} for m in methods]}


def format_table(results) -> str:
    """One line per data set: mean (std) tau of every method and the best published tau."""
    methods = [r["method"] for r in results[0]["rows"]] if results else []
    head = f"{'data set':<11}{'n':>7}{'k':>4}" + "".join(f"{m:>16}" for m in methods)
    lines = [head + "   best published (source)"]
    for info in results:
        cells = "".join(f"{r['tau_mean']:>9.3f} ({r['tau_std']:.3f})" for r in info["rows"])
        pub = None if info.get("missing") else PUBLISHED.get(info["dataset"])  # complete
        ref = f"{pub[0]:.3f} ({pub[1]}, {pub[2]})" if pub else "n/a"
        lines.append(f"{info['dataset']:<11}{info['n']:>7}{info['k']:>4}{cells}   {ref}")
    secs = {m: sum(r["seconds"] for info in results for r in info["rows"] if r["method"] == m)
            for m in methods}
    lines.append(f"{'CPU seconds':<22}" + "".join(f"{secs[m]:>16.1f}" for m in methods))
    return "\n".join(lines)


def run(args) -> int:
    """Run ``ecrm reproduce ranking`` from parsed arguments; the ``--json`` path is checked
    before any work, as ``ecrm fit`` checks ``-o``."""
    from ecrm.commands import fail
    from ecrm.commands._files import OutputError, check_output
    from ecrm.datasets.label_ranking import LABEL_RANKING_HELP, list_label_ranking
    from ecrm.experiments.progress import progress_bar

    try:
        if args.json:
            check_output(args.json, option="--json")
    except OutputError as exc:
        return fail(str(exc))
    try:
        available = list_label_ranking(args.data_dir)
    except FileNotFoundError as err:
        print(f"ecrm reproduce ranking: {err}")
        return 2
    names = args.datasets.split(",") if args.datasets else [
        n for n in DEFAULT_DATASETS if n in available]
    missing = [n for n in names if n not in available]
    if missing or not names:
        print(f"ecrm reproduce ranking: data sets not found: {missing or 'none given'}; "
              f"available: {available}. {LABEL_RANKING_HELP}")
        return 2

    try:
        _check_missing(args.missing, args.methods)
    except ValueError as err:
        return fail(str(err))

    def save(results):  # after every data set, so that a long run keeps what it finished
        if args.json:
            write_text(args.json, json.dumps(results, indent=1))

    with progress_bar(len(names) * args.repeats * args.folds, "label ranking folds",
                      enabled=not args.quiet) as bar:
        results = run_datasets(names, args.data_dir, repeats=args.repeats, folds=args.folds,
                               max_train=args.max_train, progress=bar, n_jobs=args.n_jobs,
                               methods=args.methods, n_components=args.n_components,
                               extend_grid=args.extend_grid, finished=save,
                               missing=args.missing)
    print(format_table(results))
    edges = sum(info["grid_edge_warnings"] for info in results)
    if edges:  # once, here: the protocol's grid is fixed, a warning per fit helps no one
        print(f"note: {edges} searches chose an end of the protocol's grid of alphas or "
              f"gammas (GridEdgeWarning; per data set in the JSON's grid_edge_warnings)")
    return 0


def _count_option(name: str):
    """A positive count (``--repeats``, ``--folds``, ...), checked at parse time."""
    return number_option("int", name, low=1)


def _max_train(text: str) -> int | None:
    """``--max-train``: a positive integer, or ``none`` (whole training folds)."""
    return None if text.strip().lower() == "none" else _count_option("--max-train")(text)


#: The ``--help`` description: the protocol in plain words (the module docstring's first
#: paragraph holds markup and code names for the documentation).
DESCRIPTION = (
    "The label ranking benchmark (Cheng, Hühn & Hüllermeier, ICML 2009, and the later "
    "literature): --repeats repetitions (default 5) of --folds-fold cross-validation "
    "(default 10). The table gives Kendall's tau between predicted and true rankings, "
    "averaged over the test points of every fold, as its mean and standard deviation over "
    "the repeats and folds. Everything is fitted on the training fold only: the features "
    "are standardised there, and every hyper-parameter is chosen there.")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "ranking", help="label ranking benchmark: ECRM (Kendall, footrule, squared rank) "
        "against kNN and kernel ridge, Kendall's tau", description=DESCRIPTION)
    parser.add_argument("--data-dir", help="directory of the <name>.csv.gz files (default: "
                        "$ECRM_DATA_RANKING, else $ECRM_DATA)")
    parser.add_argument("--datasets", help="comma-separated names (default: every data set "
                        "of the benchmark found)")
    parser.add_argument("--repeats", type=_count_option("--repeats"), default=5,
                        help="repetitions of the cross-validation (default 5)")
    parser.add_argument("--folds", type=_count_option("--folds"), default=10,
                        help="folds of each repetition (default 10)")
    parser.add_argument("--max-train", type=_max_train, default=None,
                        help="cap every training fold at this many random points (the "
                        "capped protocol, e.g. 1000); default 'none': whole training folds")
    parser.add_argument("--n-components", type=parameter_option("n_components", "--n-components"),
                        default=N_COMPONENTS,
                        help=f"Nystrom centres of a training fold of more than "
                        f"max({DUAL_MAX_TRAIN}, this) points (default {N_COMPONENTS}); "
                        f"smaller folds are fitted exactly")
    parser.add_argument("--n-jobs", type=workers_option("--n-jobs"), default=1,
                        help="folds run in parallel in this many processes, one BLAS thread "
                        "per fold (default 1; the results do not depend on it)")
    parser.add_argument("--methods", default=METHODS,
                        type=names_option("--methods", METHODS + OPTIONAL_METHODS),
                        help="comma-separated methods (default: all of " + ", ".join(METHODS)
                        + "; also " + ", ".join(OPTIONAL_METHODS) + ")")
    parser.add_argument("--json", type=output_file_option("--json"),
                        help="write the results as JSON to this file")
    parser.add_argument("--extend-grid", action="store_true",
                        help="the ECRM searches extend the regularisation (by decades) and "
                        "the RBF kernel width past an end of their grids that wins (default: "
                        "the fixed grids of the protocol)")
    parser.add_argument("--missing", type=number_option("real", "--missing", low=0.0,
                                                        low_open=False, high=1.0,
                                                        high_open=True),
                        default=0.0,
                        help="remove each label of each training ranking with this probability "
                        "(e.g. 0.3; at least two labels kept, test rankings complete) and run "
                        "the methods that learn from incomplete rankings: "
                        + ", ".join(MISSING_METHODS) + " (default 0: complete rankings)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)

