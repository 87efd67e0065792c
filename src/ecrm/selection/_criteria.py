r"""What the leave-one-out search maximises: the criteria of a candidate's exact leave-one-out
predictions (:class:`ecrm.weights._fit.Criterion`).

:class:`TaskLoss` is minus the mean leave-one-out task loss through the output space's oracle;
:class:`ScoreMetric` a ranking metric (:data:`SCORERS`) of the leave-one-out *label scores*
(the scores :math:`\hat p_j(x) = \sum_i w_i(x) y_{ij}` are ridge regressions of the label
columns, so no oracle runs); :class:`CallableCriterion` any ``score(Y, P)``. :class:`LooCosts`
hands back the leave-one-out costs themselves.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.metrics import label_ranking_average_precision_score

from ecrm.estimators._parameters import check_parameter
from ecrm.losses.base import LinearLoss
from ecrm.reporting.metrics import macro_auprc, micro_auprc
from ecrm.spaces.base import OutputSpace
from ecrm.weights._fit import Criterion, Outcome

__all__ = ["SCORERS", "LooCosts", "ScoreMetric", "TaskLoss", "check_scoring"]


#: Ranking metrics of label scores, by name: ``f(Y_true, scores) -> float``, greater is better
#: (the names of ``ecrm.estimators._parameters.CONSTRAINTS["scoring"]`` other than ``"loss"``).
SCORERS: dict[str, Callable] = {
    "micro_auprc": micro_auprc,
    "macro_auprc": macro_auprc,
    "lrap": label_ranking_average_precision_score,
}


def check_scoring(scoring) -> Callable | None:
    """The metric of label scores that ``scoring`` names (a key of :data:`SCORERS`, or a
    callable ``f(Y_true, scores) -> float``, greater is better), or ``None`` for the task
    loss (``None`` or ``"loss"``).

    >>> check_scoring("loss") is None, check_scoring("micro_auprc").__name__
    (True, 'micro_auprc')
    """
    scoring = check_parameter("scoring", scoring)
    if scoring is None or (isinstance(scoring, str) and scoring == "loss"):
        return None
    return SCORERS[scoring] if isinstance(scoring, str) else scoring


class TaskLoss(Criterion):
    """Minus the mean leave-one-out task loss: the leave-one-out costs (all target columns
    but the constant) through the output space's exact oracle, compared with the outputs."""

    decomposable = True

    def __init__(self, loss: LinearLoss, output_space: OutputSpace):
        self.loss, self.output_space = loss, output_space

    def predict(self, P: np.ndarray, where: str) -> np.ndarray:
        costs = P[:, :-1]
        if not np.isfinite(costs).all():
            raise ValueError(f"the leave-one-out costs are not finite for {where}: the kernel "
                             f"values are too large or alpha too small for this data")
        return self.output_space.minimize(costs, self.loss.cost_form)

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        Y_loo = self.predict(P, where)
        mean_loss = float(np.mean(self.loss(Y_loo, Y)))
        return Outcome(-mean_loss, mean_loss, predictions=Y_loo)

    def block_total(self, P: np.ndarray, Y: np.ndarray, where: str) -> float:
        return float(np.sum(self.loss(self.predict(P, where), Y)))


class LooCosts(Criterion):
    """Not a criterion to maximise: :meth:`predict` hands back the leave-one-out costs
    themselves (all target columns but the constant), for
    :meth:`~ecrm.weights._fit.LooBasis.loo_predictions`."""

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        raise NotImplementedError("LooCosts only gives the costs (predict)")

    def predict(self, P: np.ndarray, where: str) -> np.ndarray:
        return np.array(P[:, :-1], dtype=float)


class ScoreMetric(Criterion):
    """A ranking metric of the exact leave-one-out label scores (the label columns'
    regressions, clipped to [0, 1] and made consistent as at prediction); no oracle runs."""

    on_labels = True

    def __init__(self, metric: Callable, output_space: OutputSpace):
        self.metric, self.output_space = metric, output_space

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        # as predict_scores makes them: clipped (P is a fresh array), then consistent
        S = self.output_space.consistent_scores(np.clip(P, 0.0, 1.0, out=P))
        return Outcome(float(self.metric(Y, S)), scores=S)


class CallableCriterion(Criterion):
    """``score(Y, P) -> float`` (greater is better) of the leave-one-out predictions ``P`` of
    the regression targets, e.g. minus the discordant pairs of the rankings they give."""

    def __init__(self, score: Callable):
        self.score = score

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        return Outcome(float(self.score(Y, P)))
