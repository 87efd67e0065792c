"""The ranking protocol's forest grid, beside the grid it replaced, in one process.

On the first training fold of each label ranking set (``KFold(10, shuffle=True,
random_state=0)``, features standardised on it; training data only), two searches of
:class:`ecrm.ForestECRMCV` with the Kendall loss, 100 trees, the protocol's draws:

* ``before``: four forests, random forest (half the features) and extremely randomised trees
  (all), each with ``min_samples_leaf`` 1 and 10;
* ``now``: ``_ranking_peers.forest_model``, what ``ecrm reproduce ranking`` runs: one deep
  forest per flavour pruned for every ``min_samples_split`` of ``FOREST_SPLITS``, split on
  the embedding's top principal components, the flavours judged on ``FOREST_SEARCH_TREES``
  trees on folds of more than ``FOREST_SEARCH_ABOVE`` points, there (and on wisconsin) the
  leaf sizes descended rather than all judged (``split_search="descent"``).

For each: median CPU seconds over ``--repeats`` (one core, BLAS single-threaded), the chosen
setting and its out-of-bag mean Kendall distance (the honest criterion; lower is better);
``--json`` writes one record per data set (the docs' layout).

    python benchmarks/bench_forest_grid.py --data-dir ../shared/data/label_ranking
        [--datasets fried,elevators,...] [--repeats 1] [--json out.json]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe

BEFORE = [{"flavour": ["random"], "max_features": [0.5], "min_samples_leaf": [1, 10]},
          {"flavour": ["extra"], "max_features": [1.0], "min_samples_leaf": [1, 10]}]
HEAVY = "fried,elevators,calhousing,cpu,spo,diau,heat,dtt,cold,segment"


def search(model, X, Y) -> dict:
    t0 = time.process_time()
    model.fit(X, Y)
    return {"cpu_s": time.process_time() - t0, "choice": model.best_params_,
            "oob_discordant": model.oob_loss_}


def main() -> None:
    from sklearn.base import clone
    from sklearn.model_selection import KFold
    from threadpoolctl import threadpool_limits

    from ecrm import ForestECRMCV
    from ecrm.datasets.label_ranking import load_label_ranking
    from ecrm.experiments import _ranking_peers as peers
    from ecrm.losses.kendall import KendallLoss
    from ecrm.selection import OutOfBagSearch
    from ecrm.spaces.permutations import PermutationSpace

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("ECRM_DATA_RANKING",
                                                         os.environ.get("ECRM_DATA")))
    ap.add_argument("--datasets", default=HEAVY)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    print(describe())
    rows, total = [], {"before": 0.0, "now": 0.0}
    for name in args.datasets.split(","):
        data = load_label_ranking(name, args.data_dir)
        train, _ = next(KFold(10, shuffle=True, random_state=0).split(data.X))
        X = data.X[train]
        X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        space = PermutationSpace(data.ranks.shape[1])
        Y = space.from_ranks(data.ranks[train])
        now = peers.forest_model(*data.ranks[train].shape, 0)
        before = ForestECRMCV(KendallLoss(), space, search=OutOfBagSearch(param_grid=BEFORE),
                              n_estimators=100, max_samples=now.max_samples, random_state=0)
        row = {"dataset": name, "m": len(X)}
        with threadpool_limits(1, user_api="blas"):
            for label, model in (("before", before), ("now", now)):
                runs = [search(clone(model), X, Y) for _ in range(args.repeats)]
                row[label] = {**runs[0], "cpu_s": float(np.median([r["cpu_s"] for r in runs]))}
                total[label] += row[label]["cpu_s"]
        rows.append(row)
        b, n = row["before"], row["now"]
        print(f"{name:<11}{len(X):>7}  before {b['cpu_s']:6.2f} s  {b['oob_discordant']:.4f}"
              f"   now {n['cpu_s']:6.2f} s  {n['oob_discordant']:.4f}  "
              f"({b['cpu_s'] / n['cpu_s']:.2f}x)  {n['choice']}", flush=True)
    print(f"all: before {total['before']:.1f} s, now {total['now']:.1f} s "
          f"({total['before'] / total['now']:.2f}x)")
    if args.json:  # the docs' record layout: one flat record per data set
        with open(args.json, "w") as f:
            json.dump([record(row) for row in rows], f, indent=1)


def record(row: dict) -> dict:
    b, n = row["before"], row["now"]
    return {"dataset": row["dataset"], "m": row["m"],
            "before_seconds": round(b["cpu_s"], 2), "before_oob": round(b["oob_discordant"], 4),
            "now_seconds": round(n["cpu_s"], 2), "now_oob": round(n["oob_discordant"], 4),
            "speedup": round(b["cpu_s"] / n["cpu_s"], 2),
            "choice": f"{n['choice']['flavour']}, {n['choice']['min_samples_split']}"}


if __name__ == "__main__":
    main()
