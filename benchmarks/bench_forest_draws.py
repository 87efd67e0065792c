"""The forest's bootstrap draws per tree against its out-of-bag loss and fit time.

On training folds (``--folds``, default the first two) of each large label ranking set
(``KFold(10, shuffle=True, random_state=0)``, features standardised on it; training data
only), the training fold is split once more, 80 / 20 (``random_state=0``). The ranking protocol's
:class:`ecrm.ForestECRMCV` (``_ranking_peers.forest_model``: Kendall loss, 100 trees, its
flavour and leaf-size search) is fitted on the 80 % with each cap on the draws per tree
(``max_samples``: e.g. 3,000, 10,000 and the whole bootstrap sample) and judged by

* its out-of-bag mean Kendall distance (the honest criterion the search uses);
* the mean Kendall distance and Kendall tau of its predictions on the held-out 20 %
  (a check of the out-of-bag estimate, still inside the training fold);
* CPU seconds of the fit and of the prediction (one core, BLAS single-threaded).

``--json`` writes one flat record per data set and cap (the docs' layout).

    python benchmarks/bench_forest_draws.py --data-dir ../shared/data/label_ranking
        [--datasets fried,calhousing,elevators] [--caps 3000,10000,whole] [--folds 0,1]
        [--json out.json]
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


def cap_value(text: str):
    """``"whole"`` -> ``None`` (every point drawn), else the count."""
    return None if text == "whole" else int(text)


def main() -> None:
    from sklearn.model_selection import KFold, train_test_split
    from threadpoolctl import threadpool_limits

    from ecrm.datasets.label_ranking import load_label_ranking
    from ecrm.experiments import _ranking_peers as peers
    from ecrm.losses.kendall import KendallLoss
    from ecrm.spaces.permutations import PermutationSpace

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("ECRM_DATA_RANKING",
                                                         os.environ.get("ECRM_DATA")))
    ap.add_argument("--datasets", default="fried,calhousing,elevators")
    ap.add_argument("--caps", default="3000,10000,whole")
    ap.add_argument("--folds", default="0,1")
    ap.add_argument("--json")
    args = ap.parse_args()
    print(describe())
    records = []
    folds = [int(f) for f in args.folds.split(",")]
    for name, fold in ((n, f) for n in args.datasets.split(",") for f in folds):
        data = load_label_ranking(name, args.data_dir)
        train, _ = list(KFold(10, shuffle=True, random_state=0).split(data.X))[fold]
        X, ranks = data.X[train], data.ranks[train]
        X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        fit, held = train_test_split(np.arange(len(X)), test_size=0.2, random_state=0)
        k = ranks.shape[1]
        space, loss = PermutationSpace(k), KendallLoss()
        Yfit, Yheld = space.from_ranks(ranks[fit]), space.from_ranks(ranks[held])
        pairs = k * (k - 1) / 2
        for text in args.caps.split(","):
            model = peers.forest_model(len(fit), k, 0)
            model.set_params(max_samples=cap_value(text))
            with threadpool_limits(1, user_api="blas"):
                t0 = time.process_time()
                model.fit(X[fit], Yfit)
                t1 = time.process_time()
                pred = model.predict(X[held])
                t2 = time.process_time()
            distance = float(np.mean(loss(pred, Yheld)))
            record = {"dataset": name, "fold": fold, "m": len(fit), "cap": text,
                      "draws": min(len(fit), cap_value(text) or len(fit)),
                      "fit_seconds": round(t1 - t0, 2), "predict_seconds": round(t2 - t1, 2),
                      "oob_discordant": round(float(model.oob_loss_), 4),
                      "held_discordant": round(distance, 4),
                      "held_tau": round(1 - 2 * distance / pairs, 4),
                      "choice": f"{model.best_params_['flavour']}, "
                                f"{model.best_params_['min_samples_split']}"}
            records.append(record)
            print(json.dumps(record), flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
