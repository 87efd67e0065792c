"""Shared by the scikit-lr peer scripts (``*_sklr.py``): the label rankers' searches, the fold
runner, the per-data-set summary, the options and the printed table.

The scripts run in the peers' environment (``make peers``: Python >= 3.13 with scikit-lr and
this checkout); each puts its own folder on ``sys.path`` to import this module, which puts
this checkout's ``src`` there when ecrm is not installed.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

try:  # the package from this checkout when it is not installed in the benchmark env
    import ecrm  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

NEIGHBOURS = (5, 10, 20)
MIN_SPLITS = (2, 10, 40)
SKIP = ("scikit-lr is not installed in this environment (it needs Python >= 3.13: `make peers`, "
        "then run this script with .venv-peers/bin/python); skipping the comparison.")


def label_ranker(name: str, seed: int, **search):
    """The label ranker ``name`` in its 3-fold search (``GridSearchCV(**search)``, seeded by
    ``seed``) of ``n_neighbors`` in ``NEIGHBOURS`` (``IB-M``: Mallows, ``IB-PL``:
    Plackett-Luce) or of ``min_samples_split`` in ``MIN_SPLITS`` (``LRT``)."""
    from sklearn.model_selection import GridSearchCV, KFold
    from sklr.neighbors import KNeighborsLabelRanker
    from sklr.tree import DecisionTreeLabelRanker

    if name == "LRT":
        est, grid = DecisionTreeLabelRanker(random_state=seed), {"min_samples_split":
                                                                 list(MIN_SPLITS)}
    else:
        model = "mallows" if name == "IB-M" else "plackett_luce"
        est, grid = KNeighborsLabelRanker(model=model), {"n_neighbors": list(NEIGHBOURS)}
    return GridSearchCV(est, grid, cv=KFold(3, shuffle=True, random_state=seed), **search)


def run_fold(X, train, test, Ytr, seed, rankers, make, score, *,
             count_unconverged=False) -> dict:
    """Every ranker on one split: ``{ranker: (score, params, CPU seconds)}``.

    The features are standardised on the training fold; ``make(name, seed)`` is the unfitted
    ranker ``name`` (seed reduced below ``2**31 - 1``), fitted on ``X[train], Ytr`` with one
    BLAS thread; ``score(predictions)`` scores its predictions on ``X[test]``; ``params`` are
    its ``best_params_`` (none for a ranker without a search). With ``count_unconverged``,
    the fits' "did not converge" warnings are counted in ``params["convergence_warnings"]``
    instead of shown. The CPU seconds cover fit and predict (the machine's load does not
    count).
    """
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    scaler = StandardScaler().fit(X[train])
    Xtr, Xte = scaler.transform(X[train]), scaler.transform(X[test])
    out = {}
    with threadpool_limits(1, user_api="blas"):
        for r in rankers:
            t0 = time.process_time()
            with (warnings.catch_warnings(record=True) if count_unconverged
                  else contextlib.nullcontext()) as caught:
                if count_unconverged:
                    warnings.simplefilter("always")
                model = make(r, seed % (2**31 - 1)).fit(Xtr, Ytr)
                pred = np.asarray(model.predict(Xte))
            seconds = time.process_time() - t0
            params = dict(getattr(model, "best_params_", {}))
            if count_unconverged:
                params["convergence_warnings"] = sum("did not converge" in str(w.message)
                                                     for w in caught)
            out[r] = (float(score(pred)), params, seconds)
    return out


def run_folds(fold, splits, n_jobs=1) -> list:
    """``fold(*split)`` for every split, in ``n_jobs`` processes (the results do not depend
    on it)."""
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(fold)(*split) for split in splits)


def summary(done, rankers, score="tau", folds="fold_taus") -> list:
    """One row per ranker from the folds' ``done`` (:func:`run_fold`): ``method``, the mean
    and standard deviation of the score (``{score}_mean``, ``{score}_std``), every fold's
    score (``folds``), the CPU seconds summed over the folds and every fold's ``params``."""
    return [{"method": r, f"{score}_mean": float(np.mean([d[r][0] for d in done])),
             f"{score}_std": float(np.std([d[r][0] for d in done])),
             folds: [d[r][0] for d in done],
             "seconds": float(sum(d[r][2] for d in done)),
             "params": [d[r][1] for d in done]} for r in rankers]


def add_arguments(parser, datasets: str, rankers) -> None:
    """The options every peer script has (more may follow: see :func:`parse`)."""
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--datasets", default=datasets)
    parser.add_argument("--rankers", default=",".join(rankers))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="folds in parallel processes (the results do not depend on it)")
    parser.add_argument("--json")


def parse(parser, argv, known):
    """The parsed options (with scikit-lr's version as ``sklr_version``) and the chosen
    rankers (a tuple), or ``None`` after saying so when scikit-lr is not installed; a ranker
    not in ``known`` is an argparse error."""
    args = parser.parse_args(argv)
    try:
        import sklr
    except ImportError:
        print(SKIP)
        return None
    rankers = tuple(args.rankers.split(","))
    unknown = set(rankers) - set(known)
    if unknown:
        parser.error(f"unknown rankers {sorted(unknown)}; choose from {', '.join(known)}")
    args.sklr_version = sklr.__version__
    return args, rankers


def print_header(rankers, second="") -> None:
    """The table's column names: the data set, ``second`` (5 wide, if any), the rankers."""
    print(f"{'data set':<11}" + (f"{second:>5}" if second else "")
          + "".join(f"{r:>16}" for r in rankers) + "   seconds")


def report(results, info, label, score="tau", json_path=None) -> None:
    """Append ``info`` to ``results``, print its row of the table after ``label`` (mean
    (standard deviation) of ``score`` per ranker, then the CPU seconds) and write every
    result so far to ``json_path`` (if any)."""
    results.append(info)
    cells = "".join(f"{r[score + '_mean']:>9.3f} ({r[score + '_std']:.3f})"
                    for r in info["rows"])
    secs = " ".join(f"{r['seconds']:.0f}" for r in info["rows"])
    print(f"{label}{cells}   {secs}", flush=True)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
