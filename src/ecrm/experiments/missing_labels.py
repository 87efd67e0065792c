r"""``ecrm reproduce missing-labels``: label ranking from incomplete training rankings.

The second protocol of the label ranking literature (Cheng, Hühn & Hüllermeier, ICML 2009):
each label of each *training* ranking is removed independently with probability ``p``, for
``p`` in ``--levels`` (default 0, 0.3 and 0.6); the models are trained on what is left and
scored by Kendall's tau on the complete test rankings.

* The folds are those of ``ecrm reproduce ranking`` (:func:`ecrm.experiments.ranking.
  protocol_folds`): ``--repeats`` repetitions of ``--folds``-fold cross-validation, the same
  fold seeds, every training fold of more than ``--max-train`` points (default 1,000, the
  capped protocol) replaced by that many of its points drawn from the fold's seed. The test
  fold is always complete.
* The deletion (:func:`ecrm.experiments._ranking_missing.remove_labels`): in the training ranking
  :math:`\pi_i` each label is dropped with probability :math:`p`, independently, by a
  generator seeded from the fold's seed alone (so every level and every method, and the peers
  of ``benchmarks/label_ranking_missing_sklr.py``, see the same folds and, per level, the
  same deletions); a ranking left with fewer than two labels gets dropped labels back at
  random until it has two. The share of labels removed is therefore :math:`p` for many
  labels and less for few (about 0.31 for :math:`k = 3` at :math:`p = 0.6`).
* The methods are those of ``ecrm reproduce ranking --missing``
  (:data:`ecrm.experiments.ranking.MISSING_METHODS`), run by the same code at every level,
  ``p = 0`` included (there the training rankings are complete, but each method is still
  the one of the other levels): **ECRM-Kendall** (kernel ECRM with Kendall's loss; the kernel,
  intercept and ``alpha`` by the exact leave-one-out Kendall distance over the pairs each
  held-out ranking observes), **ECRM-forest** (forest weights, Kendall's loss) and
  **ECRM-mixed** (the risk mixed from the two, the kernel's share by the honest Kendall
  distance on the observed pairs). A training ranking that observes labels :math:`O_i`
  contributes only its pairs :math:`\{a, b\} \subseteq O_i` to the estimated risk.

The results are one record per data set and level, in the layout of ``ecrm reproduce ranking
--json`` (with ``missing`` the level), written after every one of them.
"""

from __future__ import annotations

import numpy as np

from ecrm.commands._options import names_option, number_option

__all__ = ["LEVELS", "MAX_TRAIN", "deleted_folds", "format_table", "run", "run_levels"]

#: The shares of training labels removed, as in the literature.
LEVELS = (0.0, 0.3, 0.6)
#: Training folds are capped at this many points (the capped protocol of ``reproduce ranking``).
MAX_TRAIN = 1000


def deleted_folds(R, level: float, *, repeats=5, folds=10, random_state=0,
                  max_train=MAX_TRAIN):
    r"""The folds of the protocol with their incomplete training rankings.

    Parameters
    ----------
    R : ndarray of shape (n, k)
        Complete rankings as positions (0 = top).
    level : float
        The probability :math:`p \in [0, 1)` that a label of a training ranking is removed.
    repeats, folds, random_state, max_train
        As in :func:`ecrm.experiments.ranking.protocol_folds`.

    Yields
    ------
    repeat, fold : int
    train, test : ndarray of int
        The fold's (capped) training and test indices.
    seed : int
        The fold's seed.
    R_train : ndarray of shape (len(train), k)
        ``R[train]`` with the removed labels at ``-1`` and the others at ``0 .. m - 1`` in
        their order; equal to ``R[train]`` when ``level`` is 0.
    """
    from ecrm.experiments._ranking_missing import remove_labels
    from ecrm.experiments.ranking import protocol_folds

    if not 0.0 <= level < 1.0:
        raise ValueError(f"a missing-label level is a probability in [0, 1); got {level!r}")
    R = np.asarray(R)
    for rep, f, train, test, seed in protocol_folds(len(R), repeats=repeats, folds=folds,
                                                    random_state=random_state,
                                                    max_train=max_train):
        # the generator of the fold's deletions in ``reproduce ranking --missing``
        yield rep, f, train, test, seed, remove_labels(R[train], level,
                                                       np.random.default_rng([seed, 1]))


def _fold(X, R, train, test, *, level, seed, gammas, methods, max_train):
    """The methods on one split at one level, as ``reproduce ranking --missing`` fits them:
    ``({method: (tau, params, CPU seconds)}, grid-edge warnings, wall seconds)``."""
    from ecrm.experiments._ranking_fold import _fold_counting_edges

    return _fold_counting_edges(X, R, train, test, gammas=gammas, methods=methods, seed=seed,
                                max_train=max_train, missing=level)


def run_levels(names, data_dir, *, levels=LEVELS, repeats=5, folds=10, max_train=MAX_TRAIN,
               methods=None, n_jobs=1, random_state=0, progress=None,
               finished=None) -> list[dict]:
    """Kendall's tau of every method on every test fold of every data set and level.

    All folds run in one pool of ``n_jobs`` processes (joblib; the larger sets' first), each
    with one BLAS thread; the results do not depend on ``n_jobs``. ``finished(records)`` is
    called whenever a data set's level is done, with the records done so far. Returns one
    record per data set and level (sets in the order of ``names``, then levels).
    """
    from joblib import delayed

    from ecrm.datasets.label_ranking import load_label_ranking
    from ecrm.experiments.ranking import GAMMAS, MISSING_METHODS, _pool, _summary, protocol_folds

    methods = tuple(MISSING_METHODS if methods is None else methods)
    names, levels = list(dict.fromkeys(names)), list(dict.fromkeys(levels))
    for level in levels:
        if not 0.0 <= level < 1.0:
            raise ValueError(f"a missing-label level is a probability in [0, 1); got {level!r}")
    data = {name: load_label_ranking(name, data_dir) for name in names}
    for name in names:
        if (data[name].ranks < 0).any():
            raise ValueError(f"{name}: the protocol removes labels from complete rankings; "
                             f"the file already holds incomplete ones")
    tags, tasks = [], []
    for name in sorted(names, key=lambda n: -data[n].X.shape[0]):
        X, R = data[name].X, data[name].ranks
        gammas = [g / X.shape[1] for g in GAMMAS]
        for level in levels:  # whole training folds: each fold caps its own
            for *_, train, test, seed in protocol_folds(len(X), repeats=repeats, folds=folds,
                                                        random_state=random_state):
                tags.append((name, level))
                tasks.append(delayed(_fold)(X, R, train, test, level=level, seed=seed,
                                            gammas=gammas, methods=methods,
                                            max_train=max_train))

    def summary(tag, done):  # the ranking protocol's record, with the level after the name
        d = data[tag[0]]
        return {"dataset": tag[0], "missing": tag[1],
                **_summary(tag[0], d.X, d.ranks.shape[1], done, methods=methods,
                           max_train=max_train, repeats=repeats, folds=folds)}

    return _pool(tags, tasks, [(n, p) for n in names for p in levels], n_jobs=n_jobs,
                 per_tag=repeats * folds, summary=summary, progress=progress,
                 finished=finished, label=lambda tag: f"{tag[0]} p={tag[1]}")


def format_table(records) -> str:
    """One line per data set and level: mean (std) tau of every method."""
    methods = [r["method"] for r in records[0]["rows"]] if records else []
    lines = [f"{'data set':<11}{'k':>4}{'p':>6}" + "".join(f"{m:>17}" for m in methods)]
    for info in records:
        cells = "".join(f"{r['tau_mean']:>10.3f} ({r['tau_std']:.3f})" for r in info["rows"])
        lines.append(f"{info['dataset']:<11}{info['k']:>4}{info['missing']:>6.1f}{cells}")
    secs = {m: sum(r["seconds"] for info in records for r in info["rows"] if r["method"] == m)
            for m in methods}
    lines.append(f"{'CPU seconds':<21}" + "".join(f"{secs[m]:>17.1f}" for m in methods))
    return "\n".join(lines)


def run(args) -> int:
    """Run ``ecrm reproduce missing-labels`` from parsed arguments."""
    from ecrm.commands import fail
    from ecrm.commands._files import OutputError
    from ecrm.commands._options import progress_bar
    from ecrm.datasets.label_ranking import LABEL_RANKING_HELP, list_label_ranking
    from ecrm.experiments.ranking import DEFAULT_DATASETS, _dataset_names, _save_json

    try:
        names = _dataset_names(args, list_label_ranking, DEFAULT_DATASETS, LABEL_RANKING_HELP)
    except (OutputError, FileNotFoundError, ValueError) as err:
        return fail(str(err))
    with progress_bar(len(names) * len(args.levels) * args.repeats * args.folds,
                      "missing-label folds", enabled=not args.quiet) as bar:
        records = run_levels(names, args.data_dir, levels=args.levels, repeats=args.repeats,
                             folds=args.folds, max_train=args.max_train, methods=args.methods,
                             n_jobs=args.n_jobs, progress=bar, finished=_save_json(args.json))
    print(format_table(records))
    return 0


def _levels(text: str) -> list[float]:
    """``--levels``: comma-separated probabilities in [0, 1)."""
    check = number_option("real", "--levels", low=0.0, low_open=False, high=1.0,
                          high_open=True)
    return [float(check(part)) for part in text.split(",")]  # type: ignore[arg-type]


def add_parser(subparsers) -> None:
    from ecrm.experiments.ranking import MISSING_METHODS, _add_protocol_options

    parser = subparsers.add_parser(
        "missing-labels", help="label ranking from training rankings with labels removed at "
        "random: ECRM kernel, forest and mixed, Kendall's tau",
        description=__doc__.split("\n\n")[1])
    _add_protocol_options(parser, "$ECRM_DATA_RANKING")
    parser.add_argument("--levels", type=_levels, default=list(LEVELS),
                        help="comma-separated probabilities of removing a training label "
                        "(default 0,0.3,0.6)")
    parser.add_argument("--max-train", type=number_option("int", "--max-train", low=1),
                        default=MAX_TRAIN,
                        help=f"cap every training fold at this many random points (default "
                        f"{MAX_TRAIN}; the dual fits of the methods need it)")
    parser.add_argument("--methods", default=MISSING_METHODS,
                        type=names_option("--methods", MISSING_METHODS),
                        help="comma-separated methods (default: " + ", ".join(MISSING_METHODS)
                        + ")")
    parser.set_defaults(func=run)
