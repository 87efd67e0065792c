"""scikit-lr's partial label rankers on the folds of ``ecrm reproduce partial-ranking``: tau_x.

    make peers
    .venv-peers/bin/python benchmarks/partial_ranking_sklr.py \
        --data-dir ../shared/data/partial_label_ranking --datasets iris,wine --json peers.json
    ecrm reproduce partial-ranking --datasets iris,wine --peers peers.json

scikit-lr (0.3.0 needs Python >= 3.13; ``make peers`` makes ``.venv-peers`` with it and this
checkout) is a benchmark-only dependency: never one of ecrm's. Without it the script says so
and exits with status 0.

The data are read by :func:`ecrm.datasets.load_partial_label_ranking`; the folds are those of
``ecrm reproduce partial-ranking`` (:func:`ecrm.experiments.partial_ranking.protocol_folds`:
``KFold(folds, shuffle=True, random_state=r)`` for ``r`` in ``0 .. repeats - 1``), the
features standardised on the training fold, tau_x by :func:`ecrm.losses.tau_x` (equal to
scikit-lr's ``tau_x_score`` on complete rankings). Every choice is
made on the training fold only, by 3-fold cross-validation of tau_x (the rankers' ``score``)
with the fold's seed:

* ``kNN-PLR``: ``KNeighborsPartialLabelRanker`` (the instance-based partial label ranker,
  bucket pivot consensus of the neighbours), ``n_neighbors`` in ``NEIGHBOURS``;
* ``PLRT``: ``DecisionTreePartialLabelRanker`` with the entropy criterion and its defaults
  (grown until pure);
* ``PLRT-CV``: the same tree, ``min_samples_split`` in ``MIN_SPLITS``.

The table prints the mean (standard deviation) of the per-fold tau_x and the CPU seconds
spent, per ranker; ``--json`` keeps every fold's tau_x and chosen parameter, in the layout of
``ecrm reproduce partial-ranking --json`` (written after every data set).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

try:  # the package from this checkout when it is not installed in the benchmark env
    import ecrm  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

NEIGHBOURS = (3, 5, 10, 15, 20, 30)
MIN_SPLITS = (2, 5, 10, 20, 40, 80)
RANKERS = ("kNN-PLR", "PLRT", "PLRT-CV")
DATASETS = "iris,wine,glass,vehicle,breast,ecoli,libras,segment,blocks,satimage"


def _ranker(name: str, seed: int):
    """The ranker ``name``, wrapped in its 3-fold search of tau_x where it has one."""
    from sklearn.model_selection import GridSearchCV, KFold
    from sklr.neighbors import KNeighborsPartialLabelRanker
    from sklr.tree import DecisionTreePartialLabelRanker

    cv = KFold(3, shuffle=True, random_state=seed)
    if name == "kNN-PLR":
        return GridSearchCV(KNeighborsPartialLabelRanker(), {"n_neighbors": list(NEIGHBOURS)},
                            cv=cv)
    tree = DecisionTreePartialLabelRanker(criterion="entropy", random_state=seed)
    if name == "PLRT":
        return tree
    return GridSearchCV(tree, {"min_samples_split": list(MIN_SPLITS)}, cv=cv)


def _fold(X, P, train, test, seed, rankers) -> dict:
    """Every ranker on one split: ``{ranker: (tau_x, params, CPU seconds)}``."""
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    from ecrm.losses import tau_x

    scaler = StandardScaler().fit(X[train])
    Xtr, Xte = scaler.transform(X[train]), scaler.transform(X[test])
    out = {}
    with threadpool_limits(1, user_api="blas"):
        for r in rankers:
            t0 = time.process_time()  # CPU seconds: the machine's load does not count
            model = _ranker(r, seed % (2**31 - 1)).fit(Xtr, P[train])
            pred = np.asarray(model.predict(Xte))
            seconds = time.process_time() - t0
            out[r] = (tau_x(P[test], pred),
                      getattr(model, "best_params_", {}), seconds)
    return out


def run_dataset(name: str, data_dir, *, rankers=RANKERS, repeats=5, folds=10, n_jobs=1,
                random_state=0) -> dict:
    """tau_x of every ranker on every test fold of one data set."""
    from joblib import Parallel, delayed

    from ecrm.datasets.partial_ranking import load_partial_label_ranking
    from ecrm.experiments.partial_ranking import protocol_folds

    data = load_partial_label_ranking(name, data_dir)
    X, P = data.X, data.positions
    start = time.perf_counter()
    done = Parallel(n_jobs=n_jobs)(
        delayed(_fold)(X, P, train, test, seed, rankers)
        for _, _, train, test, seed in protocol_folds(len(X), repeats=repeats, folds=folds,
                                                      random_state=random_state))
    return {"dataset": name, "n": X.shape[0], "p": X.shape[1], "k": P.shape[1],
            "repeats": repeats, "folds": folds, "seconds_wall": time.perf_counter() - start,
            "rows": [{"method": r, "tau_x_mean": float(np.mean([d[r][0] for d in done])),
                      "tau_x_std": float(np.std([d[r][0] for d in done])),
                      "fold_tau_x": [d[r][0] for d in done],
                      "seconds": float(sum(d[r][2] for d in done)),
                      "params": [d[r][1] for d in done]} for r in rankers]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--datasets", default=DATASETS)
    parser.add_argument("--rankers", default=",".join(RANKERS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="folds in parallel processes (the results do not depend on it)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    try:
        import sklr
    except ImportError:
        print("scikit-lr is not installed in this environment (it needs Python >= 3.13: "
              "`make peers`, then run this script with .venv-peers/bin/python); skipping the "
              "comparison.")
        return 0
    rankers = tuple(args.rankers.split(","))
    unknown = set(rankers) - set(RANKERS)
    if unknown:
        parser.error(f"unknown rankers {sorted(unknown)}; choose from {', '.join(RANKERS)}")
    print(f"scikit-lr {sklr.__version__}; {args.repeats} x {args.folds} folds")
    print(f"{'data set':<11}" + "".join(f"{r:>16}" for r in rankers) + "   seconds")
    results = []
    for name in args.datasets.split(","):
        info = run_dataset(name, args.data_dir, rankers=rankers, repeats=args.repeats,
                           folds=args.folds, n_jobs=args.n_jobs)
        results.append(info)
        cells = "".join(f"{r['tau_x_mean']:>9.3f} ({r['tau_x_std']:.3f})" for r in info["rows"])
        secs = " ".join(f"{r['seconds']:.0f}" for r in info["rows"])
        print(f"{name:<11}{cells}   {secs}", flush=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
