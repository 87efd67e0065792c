"""scikit-lr's label rankers on the folds and deletions of ``ecrm reproduce missing-labels``.

    make peers
    .venv-peers/bin/python benchmarks/label_ranking_missing_sklr.py \
        --data-dir ../shared/data/label_ranking --datasets iris,wine --json peers.json

scikit-lr (0.3.0 needs Python >= 3.13; ``make peers`` makes ``.venv-peers`` with it and this
checkout) is a benchmark-only dependency: never one of ecrm's. Without it the script says so
and exits with status 0.

The folds and the incomplete training rankings are those of ``ecrm reproduce
missing-labels`` (:func:`ecrm.experiments.missing_labels.deleted_folds`: the same repeats,
folds, seeds, capped training points and, per level, the same labels removed); the features
are standardised on the training fold, as there. scikit-lr takes an incomplete ranking as
positions ``1 .. m`` of its ``m`` ranked labels and ``NaN`` for the others
(:func:`to_sklr`); its label rankers learn from such rankings:

* ``IB-M`` and ``IB-PL``: ``KNeighborsLabelRanker`` with the Mallows model (the neighbours'
  center ranking, by Algorithm 1 of Cheng, Hühn & Hüllermeier, ICML 2009, for incomplete
  rankings) or the Plackett-Luce model, ``n_neighbors`` in ``_sklr_common.NEIGHBOURS``;
* ``LRT``: ``DecisionTreeLabelRanker`` (the label ranking tree of the same paper),
  ``min_samples_split`` in ``_sklr_common.MIN_SPLITS``.

Each hyper-parameter is chosen on the training fold only, by 3-fold cross-validation with the
fold's seed. scikit-lr's own ``score`` needs complete rankings, so the validation score is
Kendall's tau restricted to the label pairs each validation ranking observes
(:func:`observed_tau`; ECRM's searches use the same pairs). Kendall's tau on the complete
test rankings is reported. The Plackett-Luce fits that stop at scikit-lr's iteration limit
(its ``ConvergenceWarning``) are counted in each fold's ``params`` (``convergence_warnings``)
instead of printed.

The table prints the mean (standard deviation) of the per-fold tau and the CPU seconds,
per ranker and level; ``--json`` writes one record per data set and level in the layout of
``ecrm reproduce missing-labels --json`` (after every one of them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _sklr_common (and it, for ecrm)
import _sklr_common as common  # noqa: E402

RANKERS = ("IB-M", "IB-PL", "LRT")
LEVELS = "0,0.3,0.6"
DATASETS = "iris,wine,glass,vehicle,stock,housing,bodyfat,wisconsin"


def to_sklr(R) -> np.ndarray:
    """scikit-lr's rankings from ecrm's: positions ``0 .. m-1`` become ``1 .. m``, a missing
    label (``-1``) becomes ``NaN``.

    >>> to_sklr(np.array([[1, -1, 0], [2, 0, 1]])).tolist()
    [[2.0, nan, 1.0], [3.0, 1.0, 2.0]]
    """
    R = np.asarray(R)
    if R.ndim != 2 or (R < -1).any():
        raise ValueError(f"expected rankings (n, k) of positions >= 0 or -1 (missing); got "
                         f"shape {R.shape}")
    return np.where(R < 0, np.nan, R + 1.0)


def observed_tau(Y_true, Y_pred) -> float:
    """Mean over rows of Kendall's tau on the label pairs ``Y_true`` ranks (scikit-lr's
    format: ``NaN`` for a label not ranked); rows with fewer than two ranked labels are
    skipped."""
    Y_true, Y_pred = np.asarray(Y_true, dtype=float), np.asarray(Y_pred, dtype=float)
    a, b = np.triu_indices(Y_true.shape[1], 1)
    true, pred = Y_true[:, a] - Y_true[:, b], Y_pred[:, a] - Y_pred[:, b]
    seen = ~np.isnan(true)
    n_seen = seen.sum(axis=1)
    agree = np.where(seen, np.sign(np.nan_to_num(true)) * np.sign(pred), 0.0).sum(axis=1)
    rows = n_seen > 0
    return float(np.mean(agree[rows] / n_seen[rows]))


def _scorer(estimator, X, Y) -> float:
    return observed_tau(Y, estimator.predict(X))


def _search(name: str, seed: int):
    """The ranker ``name`` with its hyper-parameter chosen by 3-fold CV of observed tau."""
    return common.label_ranker(name, seed, scoring=_scorer, error_score="raise")


def _fold(X, R, train, test, seed, Rtr, rankers) -> dict:
    """Every ranker on one split: ``{ranker: (tau, params, CPU seconds)}``."""
    from ecrm.experiments._ranking_knn import _tau

    return common.run_fold(X, train, test, to_sklr(Rtr), seed, rankers, _search,
                           lambda pred: _tau(pred - 1, R[test]).mean(),
                           count_unconverged=True)


def run_dataset(name: str, data_dir, level: float, *, rankers=RANKERS, repeats=5, folds=10,
                max_train=None, n_jobs=1, random_state=0) -> dict:
    """Kendall's tau of every ranker on every test fold of one data set at one level."""
    from ecrm.datasets.label_ranking import load_label_ranking
    from ecrm.experiments.missing_labels import MAX_TRAIN, deleted_folds

    max_train = MAX_TRAIN if max_train is None else max_train
    data = load_label_ranking(name, data_dir)
    X, R = data.X, data.ranks
    start = time.perf_counter()
    splits = deleted_folds(R, level, repeats=repeats, folds=folds, random_state=random_state,
                           max_train=max_train)
    done = common.run_folds(_fold, ((X, R, train, test, seed, Rtr, rankers)
                                    for _, _, train, test, seed, Rtr in splits), n_jobs)
    return {"dataset": name, "missing": level, "n": X.shape[0], "p": X.shape[1],
            "k": R.shape[1], "max_train": max_train, "repeats": repeats, "folds": folds,
            "seconds_wall": time.perf_counter() - start, "rows": common.summary(done, rankers)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_arguments(parser, DATASETS, RANKERS)
    parser.add_argument("--levels", default=LEVELS,
                        help="comma-separated probabilities of removing a training label")
    parser.add_argument("--max-train", type=int, default=None,
                        help="cap the training folds as `ecrm reproduce missing-labels "
                        "--max-train` (default: its default)")
    parsed = common.parse(parser, argv, RANKERS)
    if parsed is None:
        return 0
    args, rankers = parsed
    levels = [float(p) for p in args.levels.split(",")]
    print(f"scikit-lr {args.sklr_version}; {args.repeats} x {args.folds} folds")
    common.print_header(rankers, "p")
    results = []
    for name in args.datasets.split(","):
        for level in levels:
            info = run_dataset(name, args.data_dir, level, rankers=rankers,
                               repeats=args.repeats, folds=args.folds,
                               max_train=args.max_train, n_jobs=args.n_jobs)
            common.report(results, info, f"{name:<11}{level:>5.1f}", json_path=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
