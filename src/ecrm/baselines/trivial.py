r"""Trivial predictors a model must beat: the empty set, the most frequent label set and the
per-label majority of the training outputs.

A kernel model on badly scaled features, or with too strong a regularisation, often predicts
one constant output; its metrics can look plausible until they are read beside those of a
constant. :func:`trivial_baselines` gives the metrics of the three constants on the evaluated
rows and :func:`check_against_baselines` warns (:class:`ecrm.exceptions.TrivialModelWarning`)
when a model is no better than one of them or predicts the empty set for many rows whose
true set is not empty. The constants need only two statistics of the training outputs
(:func:`output_statistics`), which every fitted ECRM estimator keeps as ``output_mean_`` and
``output_mode_``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ecrm.exceptions import TrivialModelWarning
from ecrm.reporting.metrics import multilabel_report

__all__ = ["BASELINE_NAMES", "check_against_baselines", "output_statistics",
           "trivial_baselines", "trivial_model_hint"]

#: The long name of each baseline of :func:`trivial_baselines`.
BASELINE_NAMES = {"empty": "empty set", "most_frequent": "most frequent label set",
                  "majority": "per-label majority"}

_PHRASES = {"empty": "the empty set",
            "most_frequent": "the training outputs' most frequent label set",
            "majority": "the training outputs' per-label majority"}


def output_statistics(Y) -> tuple[np.ndarray, np.ndarray]:
    """The mean training output and the most frequent one.

    Outputs may leave entries unobserved (``NaN``: the labels an incomplete ranking leaves
    out). The mean of a column is then over the rows that observe it (0 if none does), and
    the most frequent output is taken among the complete rows when there are any.

    Parameters
    ----------
    Y : array-like of shape (m, d)
        Training outputs (for label sets: 0/1, one column per label).

    Returns
    -------
    mean : ndarray of float, shape (d,)
        For label sets, the fraction of rows with each label.
    mode : ndarray of float, shape (d,)
        The row that occurs most often (of those, the first).

    Examples
    --------
    >>> mean, mode = output_statistics([[1, 0], [1, 1], [1, 1]])
    >>> mean.tolist(), mode.tolist()
    ([1.0, 0.6666666666666666], [1.0, 1.0])
    >>> mean, mode = output_statistics([[1, np.nan], [0, 1], [0, 1]])
    >>> mean.tolist(), mode.tolist()
    ([0.3333333333333333, 1.0], [0.0, 1.0])
    """
    from ecrm.weights.kernel._solvers.rows import observed_means

    Y = np.ascontiguousarray(Y)
    if Y.ndim != 2 or Y.shape[0] == 0:
        raise ValueError(f"Y must be a non-empty 2-D array; got shape {Y.shape}")
    complete = Y if Y.dtype.kind != "f" else Y[~np.isnan(Y).any(axis=1)]
    pool = complete if len(complete) else Y
    rows = pool.view(np.dtype((np.void, pool.dtype.itemsize * pool.shape[1]))).ravel()
    _, first, counts = np.unique(rows, return_index=True, return_counts=True)  # a row: a key
    mode = pool[first[counts == counts.max()].min()]
    return observed_means(Y), np.asarray(mode, dtype=float)


def trivial_baselines(Y_true, output_mean, output_mode, *,
                      hierarchy=None) -> dict[str, dict[str, float]]:
    """The metrics of three constant predictions of the training outputs on ``Y_true``.

    ``empty``: no label; ``most_frequent``: the most frequent training label set
    (``output_mode``); ``majority``: each label whose training frequency (``output_mean``) is
    above one half, with its ancestors.

    Parameters
    ----------
    Y_true : array-like of shape (n, d), 0/1
    output_mean, output_mode : array-like of shape (d,)
        As returned by :func:`output_statistics` on the training outputs (a fitted
        estimator's ``output_mean_`` and ``output_mode_``).
    hierarchy : ecrm.Hierarchy, optional
        Closes the majority set under ancestors and adds the hierarchical loss.

    Returns
    -------
    reports : dict
        For each of ``"empty"``, ``"most_frequent"``, ``"majority"`` (long names in
        :data:`BASELINE_NAMES`), the :func:`ecrm.reporting.metrics.multilabel_report` of that
        constant on every row of ``Y_true``.

    Examples
    --------
    >>> r = trivial_baselines([[1, 0], [0, 1]], [0.75, 0.25], [1, 0])
    >>> r["empty"]["hamming"], r["most_frequent"]["hamming"], r["majority"]["exact_match"]
    (1.0, 1.0, 0.5)
    """
    Y_true = np.asarray(Y_true, dtype=float)
    mean, mode = np.asarray(output_mean, float), np.asarray(output_mode, float)
    if Y_true.ndim != 2 or mean.shape != (Y_true.shape[1],) or mode.shape != mean.shape:
        raise ValueError(f"output_mean and output_mode must have one value per column of "
                         f"Y_true ({Y_true.shape[-1]}); got shapes {mean.shape} and "
                         f"{mode.shape}")
    majority = (mean > 0.5).astype(float)[None, :]
    if hierarchy is not None:
        majority = hierarchy.close(majority)
    constants = {"empty": np.zeros_like(mean), "most_frequent": mode, "majority": majority[0]}
    return {name: multilabel_report(Y_true, np.broadcast_to(row, Y_true.shape),
                                    hierarchy=hierarchy)
            for name, row in constants.items()}


def check_against_baselines(Y_true, Y_pred, report: dict, baselines: dict, *,
                            metric: str | None = None, empty_share: float = 0.2,
                            warn: bool = True, model=None) -> list[str]:
    """Say whether a model is no better than a trivial baseline, or predicts too many empty sets.

    The model is compared on a task loss (``metric``); it is *no better* than a baseline
    whose loss is as low as its own. It predicts *too many empty sets* when more than
    ``empty_share`` of its rows are empty and that is more than twice the share of empty
    true sets.

    Parameters
    ----------
    Y_true, Y_pred : array-like of shape (n, d), 0/1
    report : dict
        The model's :func:`ecrm.reporting.metrics.multilabel_report` on these rows.
    baselines : dict
        :func:`trivial_baselines` on these rows.
    metric : {"hierarchical", "hamming"}, optional
        The loss compared: the one the model was fitted for (``None``: the hierarchical loss
        if ``report`` has it, else the Hamming loss).
    empty_share : float, default=0.2
    warn : bool, default=True
        Also issue each message as a :class:`~ecrm.exceptions.TrivialModelWarning`.
    model : estimator, optional
        The model evaluated: the warnings' hint fits it (:func:`trivial_model_hint`).

    Returns
    -------
    messages : list of str
        Empty if the model beats every baseline and predicts few empty sets.

    Examples
    --------
    >>> Y = [[1, 0], [0, 1]]
    >>> base = trivial_baselines(Y, [0.5, 0.5], [1, 0])
    >>> msgs = check_against_baselines(Y, [[0, 0], [0, 0]], base["empty"], base, warn=False)
    >>> len(msgs)
    4
    >>> print(msgs[0])  # doctest: +NORMALIZE_WHITESPACE
    the model's Hamming loss 1.0000 is no better than 1.0000, that of always predicting
    the empty set
    >>> print(msgs[-1])  # doctest: +NORMALIZE_WHITESPACE
    the model predicts the empty set for 100.0% of the rows; 0.0% of the true sets are
    empty
    """
    key = metric or ("hierarchical" if "hierarchical" in report else "hamming")
    if key not in ("hierarchical", "hamming") or key not in report:
        raise ValueError(f"metric must be 'hierarchical' or 'hamming' (a key of report); got "
                         f"{metric!r}")
    name = "hierarchical loss" if key == "hierarchical" else "Hamming loss"
    messages = []
    for base, values in baselines.items():
        if report[key] >= values[key] - 1e-12:
            messages.append(f"the model's {name} {report[key]:.4f} is no better than "
                            f"{values[key]:.4f}, that of always predicting "
                            f"{_PHRASES.get(base, base)}")
    empty_pred = float(np.mean(np.asarray(Y_pred).sum(axis=1) == 0))
    empty_true = float(np.mean(np.asarray(Y_true).sum(axis=1) == 0))
    if empty_pred > empty_share and empty_pred > 2 * empty_true:
        messages.append(f"the model predicts the empty set for {empty_pred:.1%} of the rows; "
                        f"{empty_true:.1%} of the true sets are empty")
    if messages and warn:
        hint = trivial_model_hint(model)
        for message in messages:
            warnings.warn(message + hint, TrivialModelWarning, stacklevel=2)
    return messages


def trivial_model_hint(model=None) -> str:
    """What to look at when ``model`` is no better than a trivial baseline (a parenthesis).

    A model whose settings were chosen by an honest criterion (a search: exact leave-one-out, out of
    bag) is not sent to that search again: the hint asks about the features and the data. Otherwise
    (a fixed ``alpha``, or no model given) it names the scales, the regularisation and the search.

    >>> trivial_model_hint()  # doctest: +NORMALIZE_WHITESPACE
    ' (are the features standardised? is alpha too large? compare the leave-one-out choice
    of ECRMCV or `ecrm fit --cv`)'
    """
    if model is None or not hasattr(model, "best_score_"):
        return (" (are the features standardised? is alpha too large? compare the "
                "leave-one-out choice of ECRMCV or `ecrm fit --cv`)")
    if hasattr(model, "oob_loss_"):
        return (" (the forest's settings were chosen out of bag: do the features predict "
                "the labels? are there enough training rows?)")
    return (" (the settings were chosen by the honest criterion: are the features "
            "standardised? do they predict the labels?)")
