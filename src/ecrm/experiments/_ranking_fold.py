"""One fold of ``ecrm reproduce ranking``: every method on one train/test split, in one
process with one BLAS thread (the protocol, large folds and ``--missing``:
:mod:`ecrm.experiments.ranking`)."""

from __future__ import annotations

import functools
import time

import numpy as np

from ecrm.experiments._ranking_kernel import (
    ECRM_LOSSES,
    _ecrm,
    _ecrm_large,
    _krr,
    _krr_large,
    large_loo_rows,
)
from ecrm.experiments._ranking_knn import _borda, _kemeny, _knn, _neighbours, _tau
from ecrm.experiments._ranking_missing import _incomplete_methods, remove_labels
from ecrm.experiments._ranking_peers import _forest, _honest, _lwrf, _mixed, _pwrf, _ssvm
from ecrm.experiments._ranking_stack import _stacked

__all__ = ["DUAL_MAX_TRAIN", "N_COMPONENTS", "_cap", "_fold_counting_edges"]

#: Training folds of at most this many points (or ``--n-components``, if larger) are fitted
#: exactly, by the dual; the capped protocol's folds always are.
DUAL_MAX_TRAIN = 1000
#: Nystrom centres of a larger training fold (``--n-components``).
N_COMPONENTS = 500
#: The methods that need the kernel ECRM models of a fold.
KERNEL_ECRM = (*ECRM_LOSSES, "ECRM-selected", "ECRM-honest", "ECRM-mixed", "ECRM-stacked")
#: The methods that need ECRM-forest's model.
FOREST_NEEDED = {"ECRM-honest", "ECRM-mixed", "ECRM-stacked"}


def _fold(X, R, train, test, *, gammas, methods, seed, max_train,
          n_components=N_COMPONENTS, extend_grid=False, missing=None):
    """Every method on one train/test split: (taus, params, seconds) per method; the seconds
    are the CPU time of the fold's process (one core: BLAS and the trees single-threaded), so
    that their sum does not depend on the machine's load or on ``--n-jobs``. ``missing`` (a
    probability) runs :mod:`._ranking_missing`'s methods on incomplete training rankings;
    ``None``: complete rankings."""
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
    if missing is not None:  # the training rankings lose labels; the test ones do not
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
        if {"ECRM-mixed", "ECRM-stacked"} & set(methods):  # the stack's reference
            t0 = time.process_time()
            results["ECRM-mixed"] = _mixed(honest, honest["forest"], Rtr, Xte)
            seconds["ECRM-mixed"] = time.process_time() - t0  # the choice and the predictions
        if "ECRM-stacked" in methods:
            t0 = time.process_time()
            results["ECRM-stacked"] = _stacked(honest, honest["forest"], Xtr, Rtr, Xte,
                                               fit_seed, results["ECRM-mixed"],
                                               exact=not large)
            seconds["ECRM-stacked"] = time.process_time() - t0
    return {m: (float(_tau(results[m][0], Rte).mean()), results[m][1], seconds[m])
            for m in requested}


def _fold_counting_edges(*args, fold=None, **kwargs) -> tuple[dict, int, float]:
    """``fold(*args, **kwargs)`` (default :func:`_fold`), how many of its searches chose an
    end of the protocol's own grid (those :class:`~ecrm.exceptions.GridEdgeWarning` are
    counted for the summary: a user cannot change the grid; every other warning is shown),
    and its wall seconds."""
    import warnings

    from ecrm.exceptions import GridEdgeWarning

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = (fold or _fold)(*args, **kwargs)
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
