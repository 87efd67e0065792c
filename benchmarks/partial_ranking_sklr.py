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
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _sklr_common (and it, for ecrm)
import _sklr_common as common  # noqa: E402

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
    from ecrm.losses import tau_x

    return common.run_fold(X, train, test, P[train], seed, rankers, _ranker,
                           lambda pred: tau_x(P[test], pred))


def run_dataset(name: str, data_dir, *, rankers=RANKERS, repeats=5, folds=10, n_jobs=1,
                random_state=0) -> dict:
    """tau_x of every ranker on every test fold of one data set."""
    from ecrm.datasets.partial_ranking import load_partial_label_ranking
    from ecrm.experiments.partial_ranking import protocol_folds

    data = load_partial_label_ranking(name, data_dir)
    X, P = data.X, data.positions
    start = time.perf_counter()
    splits = protocol_folds(len(X), repeats=repeats, folds=folds, random_state=random_state)
    done = common.run_folds(_fold, ((X, P, train, test, seed, rankers)
                                    for _, _, train, test, seed in splits), n_jobs)
    return {"dataset": name, "n": X.shape[0], "p": X.shape[1], "k": P.shape[1],
            "repeats": repeats, "folds": folds, "seconds_wall": time.perf_counter() - start,
            "rows": common.summary(done, rankers, "tau_x", "fold_tau_x")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_arguments(parser, DATASETS, RANKERS)
    parsed = common.parse(parser, argv, RANKERS)
    if parsed is None:
        return 0
    args, rankers = parsed
    print(f"scikit-lr {args.sklr_version}; {args.repeats} x {args.folds} folds")
    common.print_header(rankers)
    results = []
    for name in args.datasets.split(","):
        info = run_dataset(name, args.data_dir, rankers=rankers, repeats=args.repeats,
                           folds=args.folds, n_jobs=args.n_jobs)
        common.report(results, info, f"{name:<11}", "tau_x", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
