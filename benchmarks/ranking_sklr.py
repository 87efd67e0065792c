"""scikit-lr's label rankers on the folds of ``ecrm reproduce ranking``: Kendall's tau.

    PYTHONPATH=src /work/sklr-venv/bin/python benchmarks/ranking_sklr.py \
        --data-dir /work/shared/data/label_ranking --datasets iris,wine --json sklr.json

scikit-lr (``pip install scikit-lr``, 0.3 needs Python >= 3.13) is a benchmark-only
dependency: never one of ecrm's. Without it the script says so and exits with status 0.

The folds are those of ``ecrm reproduce ranking`` (:func:`ecrm.experiments.ranking.
protocol_folds`: the same repeats, folds, seeds and, with ``--max-train``, the same capped
training points); the features are standardised on the training fold, as there. Each
ranker's hyper-parameter is chosen on the training fold only, by 3-fold cross-validation of
Kendall's tau (scikit-lr's ``score``), with a fixed seed:

* ``IB-M`` and ``IB-PL``: ``KNeighborsLabelRanker`` with the Mallows or the Plackett-Luce
  model (Cheng, Hühn & Hüllermeier, ICML 2009; Cheng, Dembczyński & Hüllermeier, ICML
  2010), ``n_neighbors`` in ``NEIGHBOURS``;
* ``LRT``: ``DecisionTreeLabelRanker`` (the label ranking tree of Cheng et al. 2009),
  ``min_samples_split`` in ``MIN_SPLITS``.

The table prints the mean (standard deviation) of the per-fold tau and the CPU seconds
spent, per ranker; ``--json`` keeps every fold's tau and chosen parameter.
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

NEIGHBOURS = (5, 10, 20)
MIN_SPLITS = (2, 10, 40)
RANKERS = ("IB-M", "IB-PL", "LRT")


def _search(name: str, seed: int):
    """The ranker ``name`` with its hyper-parameter chosen by 3-fold CV of Kendall's tau."""
    from sklearn.model_selection import GridSearchCV, KFold
    from sklr.neighbors import KNeighborsLabelRanker
    from sklr.tree import DecisionTreeLabelRanker

    if name == "LRT":
        est, grid = DecisionTreeLabelRanker(random_state=seed), {"min_samples_split":
                                                                 list(MIN_SPLITS)}
    else:
        model = "mallows" if name == "IB-M" else "plackett_luce"
        est, grid = KNeighborsLabelRanker(model=model), {"n_neighbors": list(NEIGHBOURS)}
    return GridSearchCV(est, grid, cv=KFold(3, shuffle=True, random_state=seed))


def run_dataset(name: str, data_dir, *, rankers=RANKERS, repeats=5, folds=10,
                max_train=None, random_state=0) -> dict:
    """Kendall's tau of every ranker on every test fold of one data set."""
    from sklearn.preprocessing import StandardScaler

    from ecrm.datasets.label_ranking import load_label_ranking
    from ecrm.experiments._ranking_knn import _tau
    from ecrm.experiments.ranking import protocol_folds

    data = load_label_ranking(name, data_dir)
    X, R = data.X, data.ranks
    taus = {r: [] for r in rankers}
    params = {r: [] for r in rankers}
    seconds = dict.fromkeys(rankers, 0.0)
    for _, _, train, test, seed in protocol_folds(len(X), repeats=repeats, folds=folds,
                                                   random_state=random_state,
                                                   max_train=max_train):
        scaler = StandardScaler().fit(X[train])
        Xtr, Xte = scaler.transform(X[train]), scaler.transform(X[test])
        for r in rankers:
            t0 = time.process_time()  # CPU seconds: the machine's load does not count
            search = _search(r, seed % (2**31 - 1)).fit(Xtr, R[train] + 1)  # ranks: 1 = top
            P = np.asarray(search.predict(Xte)) - 1
            seconds[r] += time.process_time() - t0
            taus[r].append(float(_tau(P, R[test]).mean()))
            params[r].append(search.best_params_)
    return {"dataset": name, "n": X.shape[0], "k": R.shape[1], "max_train": max_train,
            "repeats": repeats, "folds": folds,
            "rows": [{"method": r, "tau_mean": float(np.mean(taus[r])),
                      "tau_std": float(np.std(taus[r])), "fold_taus": taus[r],
                      "seconds": seconds[r], "params": params[r]} for r in rankers]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--datasets", default="iris,wine,glass,vehicle,stock,housing,"
                        "bodyfat,wisconsin")
    parser.add_argument("--rankers", default=",".join(RANKERS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--max-train", default="none",
                        help="cap the training folds as `ecrm reproduce ranking --max-train`")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    try:
        import sklr
    except ImportError:
        print("scikit-lr is not installed in this environment (it needs Python >= 3.13: "
              "python3.13 -m venv sklr-venv && sklr-venv/bin/pip install scikit-lr); "
              "skipping the comparison.")
        return 0
    max_train = None if args.max_train.lower() == "none" else int(args.max_train)
    rankers = tuple(args.rankers.split(","))
    unknown = set(rankers) - set(RANKERS)
    if unknown:
        parser.error(f"unknown rankers {sorted(unknown)}; choose from {', '.join(RANKERS)}")
    print(f"scikit-lr {sklr.__version__}; {args.repeats} x {args.folds} folds, max_train="
          f"{max_train}")
    print(f"{'data set':<11}" + "".join(f"{r:>16}" for r in rankers) + "   seconds")
    results = []
    for name in args.datasets.split(","):
        info = run_dataset(name, args.data_dir, rankers=rankers, repeats=args.repeats,
                           folds=args.folds, max_train=max_train)
        results.append(info)
        cells = "".join(f"{r['tau_mean']:>9.3f} ({r['tau_std']:.3f})" for r in info["rows"])
        secs = " ".join(f"{r['seconds']:.0f}" for r in info["rows"])
        print(f"{name:<11}{cells}   {secs}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
