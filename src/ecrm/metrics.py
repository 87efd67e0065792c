"""Task losses as metric functions, and ranking metrics of label scores."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score

__all__ = ["macro_auprc", "mean_loss", "micro_auprc"]


def mean_loss(loss, Y_pred, Y_true) -> float:
    """The mean of a task loss over rows (the quantity the paper's tables report).

    Parameters
    ----------
    loss : ecrm.losses.Loss
        Called as ``loss(Y_pred, Y_true)``, one value per row.
    Y_pred, Y_true : array-like of shape (n, d)

    Returns
    -------
    mean : float
    """
    return float(np.mean(loss(Y_pred, Y_true)))


def _label_columns(Y_true, scores, labels, exclude) -> tuple[np.ndarray, np.ndarray]:
    """``Y_true`` and ``scores`` as float arrays of one shape, without the excluded labels."""
    Y_true = np.asarray(Y_true, dtype=float)
    scores = np.asarray(scores, dtype=float)
    if Y_true.shape != scores.shape:
        raise ValueError(f"Y_true and scores must have the same shape; got {Y_true.shape} "
                         f"and {scores.shape}")
    excluded = set(exclude)
    if not excluded:
        return Y_true, scores
    if labels is None or len(labels) != Y_true.shape[1]:
        raise ValueError("exclude needs labels: one name per column of Y_true")
    keep = np.array([name not in excluded for name in labels])
    return Y_true[:, keep], scores[:, keep]


def macro_auprc(Y_true, scores, *, labels=None, exclude=()) -> float:
    """Mean over labels of the area under each label's precision-recall curve.

    Labels that are positive on every row or on none are left out (their average precision
    is 1 or undefined whatever the scores); NaN if none is left.

    Parameters
    ----------
    Y_true : array-like of shape (n, d), 0/1
    scores : array-like of shape (n, d)
    labels, exclude : as in :func:`micro_auprc`.

    Returns
    -------
    auprc : float

    Examples
    --------
    >>> macro_auprc([[1, 0, 1], [0, 1, 1]], [[0.9, 0.2, 0.5], [0.1, 0.8, 0.5]])
    1.0
    """
    Y_true, scores = _label_columns(Y_true, scores, labels, exclude)
    mixed = (Y_true.min(axis=0) == 0) & (Y_true.max(axis=0) == 1)
    if not mixed.any():
        return float("nan")
    return float(average_precision_score(Y_true[:, mixed], scores[:, mixed], average="macro"))


def micro_auprc(Y_true, scores, *, labels=None, exclude=()) -> float:
    """Micro-averaged area under the precision-recall curve (average precision).

    Every (instance, label) pair is one binary decision ranked by its score, as in
    ``sklearn.metrics.average_precision_score(..., average="micro")`` — the evaluation of
    C-HMCNN (Giunchiglia & Lukasiewicz, 2020), which leaves out the root and, on Gene
    Ontology data, the three aspect nodes.

    Parameters
    ----------
    Y_true : array-like of shape (n, d), 0/1
    scores : array-like of shape (n, d)
    labels : sequence of d label names, optional
        Needed only to name labels in ``exclude``.
    exclude : iterable of label names
        Labels left out of the evaluation (names absent from ``labels`` are ignored).

    Returns
    -------
    auprc : float
    """
    Y_true, scores = _label_columns(Y_true, scores, labels, exclude)
    return float(average_precision_score(Y_true, scores, average="micro"))
