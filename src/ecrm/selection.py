r"""Choosing between weight families by an honest estimate of each one's risk.

Every family's own search ends with a criterion that no training point influenced for
itself: :class:`ecrm.ECRMCV` the exact leave-one-out task loss (or a metric of the
leave-one-out label scores), :class:`ecrm.ForestECRMCV` the out-of-bag task loss (or the
same metric of the out-of-bag label scores). Both report it as ``best_score_`` (greater is
better), so :func:`select_honestly` fits each candidate once and keeps the best, nothing
refitted and nothing judged on a test set.
"""

from __future__ import annotations

from dataclasses import dataclass

from sklearn.base import clone

__all__ = ["HonestChoice", "select_honestly"]


@dataclass
class HonestChoice:
    """The outcome of :func:`select_honestly`.

    Attributes
    ----------
    best_estimator : estimator
        The fitted candidate with the highest ``best_score_`` (the earlier one on ties).
    best_index : int
    scores : list of float
        Every candidate's ``best_score_``, in the order given.
    estimators : list of estimators
        Every fitted candidate.
    """

    best_estimator: object
    best_index: int
    scores: list[float]
    estimators: list


def select_honestly(candidates, X, Y) -> HonestChoice:
    """Fit every candidate on ``(X, Y)`` and keep the one whose honest criterion is best.

    Parameters
    ----------
    candidates : list of estimators
        Unfitted :class:`ecrm.ECRMCV` / :class:`ecrm.ForestECRMCV` (anything with
        ``scoring`` and, once fitted, ``best_score_``), all with the same ``scoring``; they
        are cloned, never fitted in place.
    X : array-like or sparse matrix of shape (m, p)
    Y : array-like of shape (m, d)

    Returns
    -------
    choice : HonestChoice

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import ECRMCV, ForestECRMCV, Hierarchy
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.linspace(0, 1, 40)[:, None]
    >>> Y = np.where(X > 0.5, [1, 0, 1], [1, 1, 0])
    >>> choice = select_honestly([ECRMCV(HammingLoss(), h, alphas=[1e-3, 1e-1]),
    ...                           ForestECRMCV(HammingLoss(), h, n_estimators=20,
    ...                                        random_state=0)], X, Y)
    >>> len(choice.scores), choice.best_estimator.predict([[0.9]]).tolist()
    (2, [[1.0, 0.0, 1.0]])
    """
    candidates = list(candidates)
    if not candidates:
        raise ValueError("select_honestly needs at least one candidate")
    scorings = {repr(getattr(c, "scoring", None)) for c in candidates}
    if len(scorings) != 1 or "None" in scorings:
        raise ValueError(f"the candidates must share one scoring (their best_score_ then "
                         f"compare); got {sorted(scorings)}")
    fitted = [clone(c).fit(X, Y) for c in candidates]
    scores = [float(est.best_score_) for est in fitted]
    best = max(range(len(scores)), key=lambda k: (scores[k], -k))
    return HonestChoice(fitted[best], best, scores, fitted)
