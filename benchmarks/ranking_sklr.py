"""scikit-lr's label rankers on the folds of ``ecrm reproduce ranking``: Kendall's tau.

    make peers
    .venv-peers/bin/python benchmarks/ranking_sklr.py \
        --data-dir ../shared/data/label_ranking --datasets iris,wine --json sklr.json

scikit-lr is a benchmark-only dependency, installed in the peers' environment only (see
``_sklr_common``); without it the script says so and exits with status 0.

The folds are those of ``ecrm reproduce ranking`` (:func:`ecrm.experiments.ranking.
protocol_folds`: the same repeats, folds, seeds and, with ``--max-train``, the same capped
training points); the features are standardised on the training fold, as there. Each
ranker's hyper-parameter is chosen on the training fold only, by 3-fold cross-validation of
Kendall's tau (scikit-lr's ``score``), with a fixed seed:

* ``IB-M`` and ``IB-PL``: ``KNeighborsLabelRanker`` with the Mallows or the Plackett-Luce
  model (Cheng, Hühn & Hüllermeier, ICML 2009; Cheng, Dembczyński & Hüllermeier, ICML
  2010), ``n_neighbors`` in ``_sklr_common.NEIGHBOURS``;
* ``LRT``: ``DecisionTreeLabelRanker`` (the label ranking tree of Cheng et al. 2009),
  ``min_samples_split`` in ``_sklr_common.MIN_SPLITS``.

The table prints the mean (standard deviation) of the per-fold tau and the CPU seconds
spent, per ranker; ``--json`` keeps every fold's tau and chosen parameter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _sklr_common (and it, for ecrm)
import _sklr_common as common  # noqa: E402

RANKERS = ("IB-M", "IB-PL", "LRT")
DATASETS = "iris,wine,glass,vehicle,stock,housing,bodyfat,wisconsin"


def _fold(X, R, train, test, seed, rankers) -> dict:
    """Every ranker on one split: ``{ranker: (tau, params, CPU seconds)}``; scikit-lr's
    rankings are ecrm's positions plus one (1 = top)."""
    from ecrm.experiments._ranking_knn import _tau

    return common.run_fold(X, train, test, R[train] + 1, seed, rankers, common.label_ranker,
                           lambda pred: _tau(pred - 1, R[test]).mean())


def run_dataset(name: str, data_dir, *, rankers=RANKERS, repeats=5, folds=10,
                max_train=None, n_jobs=1, random_state=0) -> dict:
    """Kendall's tau of every ranker on every test fold of one data set."""
    from ecrm.datasets.label_ranking import load_label_ranking
    from ecrm.experiments.ranking import protocol_folds

    data = load_label_ranking(name, data_dir)
    X, R = data.X, data.ranks
    splits = protocol_folds(len(X), repeats=repeats, folds=folds, random_state=random_state,
                            max_train=max_train)
    done = common.run_folds(_fold, ((X, R, train, test, seed, rankers)
                                    for _, _, train, test, seed in splits), n_jobs)
    return {"dataset": name, "n": X.shape[0], "k": R.shape[1], "max_train": max_train,
            "repeats": repeats, "folds": folds, "rows": common.summary(done, rankers)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_arguments(parser, DATASETS, RANKERS)
    parser.add_argument("--max-train", default="none",
                        help="cap the training folds as `ecrm reproduce ranking --max-train`")
    parsed = common.parse(parser, argv, RANKERS)
    if parsed is None:
        return 0
    args, rankers = parsed
    max_train = None if args.max_train.lower() == "none" else int(args.max_train)
    print(f"scikit-lr {args.sklr_version}; {args.repeats} x {args.folds} folds, max_train="
          f"{max_train}")
    common.print_header(rankers)
    results = []
    for name in args.datasets.split(","):
        info = run_dataset(name, args.data_dir, rankers=rankers, repeats=args.repeats,
                           folds=args.folds, max_train=max_train, n_jobs=args.n_jobs)
        common.report(results, info, f"{name:<11}", json_path=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
