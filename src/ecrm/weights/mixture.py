r"""One conditional risk from two estimators: the kernel's and the forest's, mixed.

Kernel ridge (:class:`ecrm.ECRMCV`) and a forest (:class:`ecrm.ForestECRMCV`) each estimate
the conditional risk as a weighted sum of the training losses. A convex mixture of the two,

.. math:: \hat R_\lambda(y|x) = \lambda \hat R_{\mathrm{kernel}}(y|x)
          + (1 - \lambda) \hat R_{\mathrm{forest}}(y|x),
          \qquad w_\lambda(x) = \lambda w_{\mathrm{kernel}}(x) + (1-\lambda) w_{\mathrm{forest}}(x),

is again one; its costs (a linear loss) and label scores are the same mixture of the
families'. Mixing the families' honest costs of their training points (the kernel's exact
leave-one-out, the forest's out-of-bag) gives the mixture's for every :math:`\lambda` at once:
:func:`choose_mixture` picks :math:`\lambda` on a grid (1: the kernel alone, 0: the forest
alone) by the task loss of the exact oracle on them, or a ranking metric of the mixed label
scores, with nothing refitted. :class:`MixedRiskECRM` fits both families and makes that choice.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._parameters import RANDOM_STATE, Checked, Rule, table
from ecrm.selection import OutOfBagSearch
from ecrm.selection._criteria import check_scoring
from ecrm.selection._search import RESULTS_COLUMNS, LeaveOneOutSearch, ranks, search_results
from ecrm.weights._combination import Combination, check_members
from ecrm.weights.forest.estimator import ForestECRMCV
from ecrm.weights.kernel.estimator import ECRMCV

__all__ = ["MixedRiskECRM", "MixingChoice", "check_mixing_grid", "choose_mixture",
           "honest_criterion", "kernel_loo_outputs"]


#: The most shares a grid holds: each costs one evaluation of the mixed out-of-sample costs,
#: and shares closer than 1e-4 give the same choice (a file's forged 2**28 is refused).
MAX_MIXING_GRID = 10_001


def check_mixing_grid(grid) -> np.ndarray:
    """The grid of kernel shares :math:`\\lambda`: ``k`` (an int >= 2) evenly spaced values
    from 0 to 1, or the given values, sorted, each in [0, 1]."""
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        if not 2 <= grid <= MAX_MIXING_GRID:
            raise ValueError(f"mixing_grid must be at least 2 (the two pure families) and at "
                             f"most {MAX_MIXING_GRID}; got {grid}")
        return np.round(np.linspace(0.0, 1.0, int(grid)), 12)  # 0.3, not 0.30000000000000004
    try:
        values = np.asarray(grid, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"mixing_grid must be an int >= 2 or a sequence of floats in [0, 1]; "
                        f"got {grid!r}") from None
    if values.ndim != 1 or not 0 < values.size <= MAX_MIXING_GRID \
            or not np.all((values >= 0) & (values <= 1)):
        raise ValueError(f"mixing_grid must be a non-empty sequence of floats in [0, 1]; got "
                         f"{grid!r}")
    return np.unique(values)


def _member_options(value, name: str, member: type) -> dict:
    """A member's keyword arguments (``None``: none): its constructor's, without those the
    mixture sets (nor its ``search``'s scoring)."""
    if value is not None and not (isinstance(value, dict)
                                  and all(isinstance(k, str) for k in value)):
        raise TypeError(f"{name} must be a dict of keyword arguments; got {value!r}")
    unknown = sorted(set(value or {}) - set(inspect.signature(member).parameters))
    if unknown:
        raise ValueError(f"{name} must be keyword arguments of {member.__name__}; got "
                         f"{unknown}")
    reserved = {"loss", "output_space", "scoring", "random_state"} & set(value or {})
    scoring = getattr((value or {}).get("search"), "scoring", "loss")
    if not (isinstance(scoring, str) and scoring == "loss"):
        reserved.add("the search's scoring")
    if reserved:
        raise ValueError(f"{name} must not set {sorted(reserved)}: the mixture sets them for "
                         f"both families")
    return dict(value or {})


def _kernel_options(value) -> dict:
    """The kernel member's keyword arguments: no calibration of its search either."""
    options = _member_options(value, "kernel_options", ECRMCV)
    if getattr(options.get("search"), "calibration", None) is not None:
        raise ValueError("kernel_options must not set a calibration: the kernel's scores are "
                         "mixed as the leave-one-out search judged them")
    return options


def kernel_loo_outputs(model: ECRMCV, X, Y, *, scores: bool = False):
    """:meth:`ecrm.ECRMCV.fit_honest` as a pair ``(rows, outputs)``: fit ``model`` in place,
    then the points its selection averaged over (``loo_rows_``) and their exact leave-one-out
    costs, (len(rows), e), or with ``scores`` uncalibrated label scores, (len(rows), d)."""
    honest = model.fit_honest(X, Y, scores=scores)
    return honest.rows, honest.values


def honest_criterion(outputs, Y, *, loss=None, output_space=None, metric=None,
                     judge=None) -> tuple[float, float]:
    """The criterion of combined honest outputs (greater is better) and their mean task
    loss: minus the mean task loss of the exact oracle on the costs ``outputs`` (judged by
    ``judge(outputs, Y)`` when given), or ``metric(Y, outputs)`` of label scores (the mean
    loss is then NaN). Shared by :func:`choose_mixture` and :mod:`ecrm.weights.stack`."""
    return _judged(outputs, Y, loss, output_space, metric, judge)[:2]


def _judged(outputs, Y, loss, output_space, metric, judge) -> tuple:
    """:func:`honest_criterion`'s pair, then the exact oracle's outputs (``None`` under a
    metric)."""
    if metric is not None:
        return float(metric(np.asarray(Y, dtype=float), outputs)), np.nan, None
    predictions = output_space.minimize(outputs, loss.cost_form)
    mean_loss = float(np.mean((loss if judge is None else judge)(predictions, Y)))
    return -mean_loss, mean_loss, predictions


@dataclass(frozen=True)
class MixingChoice:
    """The outcome of :func:`choose_mixture`.

    Attributes
    ----------
    mixture : float
        The chosen kernel share :math:`\\lambda`.
    grid : ndarray
        Every share tried, ascending.
    scores : ndarray
        The honest criterion of each (greater is better: minus the mean task loss, or the
        metric).
    mean_losses : ndarray
        The mean task loss of each (NaN when a metric chose).
    rows : ndarray of int
        The training points judged (out of sample in both families).
    predictions : ndarray of shape (len(rows), d) or None
        The exact oracle's outputs of ``rows`` on the chosen share's mixed costs (``None``
        when a metric chose).
    """

    mixture: float
    grid: np.ndarray
    scores: np.ndarray
    mean_losses: np.ndarray
    rows: np.ndarray
    predictions: np.ndarray | None = None


def choose_mixture(kernel, forest, Y, grid, *, loss=None, output_space=None,
                   metric=None, judge=None) -> MixingChoice:
    r"""The kernel share :math:`\lambda` whose mixed out-of-sample outputs judge best.

    Parameters
    ----------
    kernel : tuple (rows, outputs)
        The kernel's leave-one-out costs (or label scores) of the training points ``rows``
        (:func:`kernel_loo_outputs`).
    forest : ndarray of shape (m, e) or (m, d)
        The forest's out-of-bag costs (or label scores) of every training point; NaN rows
        (no tree left the point out) are not judged.
    Y : ndarray of shape (m, d)
        The training outputs.
    grid : int or sequence of float
        See :func:`check_mixing_grid`.
    loss, output_space : LinearLoss and OutputSpace
        Judge the costs by the mean task loss of the exact oracle's outputs.
    metric : callable, optional
        Judge label scores by ``metric(Y, scores)`` instead (greater is better).
    judge : callable, optional
        Judge the oracle's outputs by ``judge(outputs, Y)`` (per-row losses) instead of
        ``loss``: the costs are still ``loss``'s, minimised by its exact oracle (a model
        trained for one loss, chosen by another).

    Returns
    -------
    choice : MixingChoice
        The first best share of the grid, in ascending order.
    """
    rows, K = kernel
    rows, F = np.asarray(rows), np.asarray(forest, dtype=float)
    if F.ndim != 2 or K.shape != (len(rows), F.shape[1]):
        raise ValueError(f"the kernel's outputs {K.shape} and the forest's {F.shape} do not "
                         f"describe the same points' same columns")
    seen = ~np.isnan(F[rows]).any(axis=1)
    rows, K, F = rows[seen], K[seen], F[rows[seen]]
    if not len(rows):
        raise ValueError("no training point is out of sample in both families")
    grid = check_mixing_grid(grid)
    Y = np.asarray(Y)[rows]
    judged, best, predictions = [], 0, None
    for t, share in enumerate(grid):
        score, mean_loss, outputs = _judged(share * K + (1.0 - share) * F, Y, loss,
                                            output_space, metric, judge)
        judged.append((score, mean_loss))
        if t == 0 or np.argmax([judged[best][0], score]) == 1:  # np.argmax's first best
            best, predictions = t, outputs
    scores, losses = np.array(judged).T
    return MixingChoice(float(grid[best]), grid, scores, losses, rows, predictions)


class MixedRiskECRM(Combination):
    r"""ECRM on the honest mixture of a kernel's and a forest's conditional-risk estimates.

    Fits :class:`ecrm.ECRMCV` and :class:`ecrm.ForestECRMCV` on the same data, then chooses
    the kernel share :math:`\lambda` on ``mixing_grid`` by the honest criterion of the mixed
    out-of-sample costs or label scores (:mod:`ecrm.weights.mixture`). Prediction is the
    exact oracle on the mixed costs.

    Parameters
    ----------
    loss : LinearLoss
    output_space : OutputSpace
    kernel_options : dict, optional
        Keyword arguments of the :class:`ecrm.ECRMCV` (not ``calibration``: a calibration is
        chosen on the scores it is then judged on).
    forest_options : dict, optional
        Keyword arguments of the :class:`ecrm.ForestECRMCV` (its ``search`` not ``scoring``).
    mixing_grid : int or sequence of float, default=11
        The kernel shares tried: ``k`` evenly spaced values in [0, 1] (0 and 1, the pure
        families, included), or the values given.
    scoring : "loss", a metric name or callable, default="loss"
        What the mixture and both families are chosen by: the task loss, or a ranking
        metric of the label scores (as :class:`ecrm.ECRMCV`'s ``scoring``).
    random_state : int, RandomState or None
        Seeds both families (the kernel's subsets, the forest's trees).

    Attributes
    ----------
    kernel_estimator_ : ECRMCV
    forest_estimator_ : ForestECRMCV
    mixture_ : float
        The chosen :math:`\lambda` (the kernel's share).
    best_score_ : float
        Its honest criterion (greater is better).
    cv_results_ : dict
        The layout every search shares (:func:`ecrm.selection.search_results`): ``params``
        (``{"mixture": share}``), ``mean_score`` (the honest criterion) and ``rank``, then
        ``mixture`` (the grid) and ``mean_loss`` (NaN under a metric), one entry per share;
        the two pure families are its ends.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import Hierarchy
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.linspace(0, 1, 60)[:, None]
    >>> Y = np.where(X > 0.5, [1, 0, 1], [1, 1, 0])
    >>> model = MixedRiskECRM(HammingLoss(), h, kernel_options={"alphas": [1e-2, 0.1, 1, 10]},
    ...                       forest_options={"n_estimators": 20}, random_state=0).fit(X, Y)
    >>> shares = model.cv_results_["mixture"]
    >>> (shares[0], shares[-1]), model.predict([[0.9]]).tolist()
    ((0.0, 1.0), [[1.0, 0.0, 1.0]])
    """

    _parameter_constraints = table(
        "scoring",
        kernel_options=Checked("ECRMCV's keyword arguments", bad=(
            "x", {"loss": None}, {"calibration": "auto"},
            {"search": LeaveOneOutSearch(calibration="auto")},
            {"search": LeaveOneOutSearch(scoring="lrap")}),
                               function=_kernel_options),
        forest_options=Checked("ForestECRMCV's keyword arguments", bad=(
            "x", {"random_state": 0}, {"max_features": 1.0},
            {"search": OutOfBagSearch(scoring="lrap")}), function=lambda value: _member_options(
                value, "forest_options", ForestECRMCV)),
        mixing_grid=Checked("an int >= 2 or shares in [0, 1] (the rule grid)",
                            bad=(1, [], [0.5, 1.5], "x")),
        random_state=RANDOM_STATE)
    #: The plan's grid of shares and scoring metric (``None``: the task loss).
    _parameter_rules = (Rule("grid", check_mixing_grid, ("mixing_grid",)),
                        Rule("metric", check_scoring, ("scoring",)))
    _linear_loss = True
    _fits_dask = True  # both members do

    def __init__(self, loss, output_space, *, kernel_options=None, forest_options=None,
                 mixing_grid=11, scoring="loss", random_state=None):
        self.loss = loss
        self.output_space = output_space
        self.kernel_options = kernel_options
        self.forest_options = forest_options
        self.mixing_grid = mixing_grid
        self.scoring = scoring
        self.random_state = random_state

    _fitted_attributes = ("kernel_estimator_", "forest_estimator_", "mixture_", "best_score_",
                          "cv_results_", "n_features_in_", "feature_names_in_",
                          "feature_columns_", "level_columns_", "reading_options_")

    def fit(self, X, Y):
        """Fit both families, then choose the mixture by its honest criterion.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (m, p)
        Y : array-like of shape (m, d)

        Returns
        -------
        self : MixedRiskECRM
        """
        plan = self._check_params()
        grid, metric = plan["grid"], plan["metric"]
        checked_X, checked_Y, seen = self._check_training_data(X, Y, None)  # before any work
        seeds = check_random_state(self.random_state).randint(np.iinfo(np.int32).max, size=2)
        kernel = ECRMCV(self.loss, self.output_space, scoring=self.scoring,
                        **plan["kernel_options"], random_state=int(seeds[0]))
        forest = ForestECRMCV(self.loss, self.output_space, scoring=self.scoring,
                              **plan["forest_options"], random_state=int(seeds[1]))
        on_scores = metric is not None
        loo, bag = (member.fit_honest(X, Y, scores=on_scores) for member in (kernel, forest))
        choice = self._choose(loo, bag, forest.Y_fit_, grid, metric)
        self._set_fitted(
            checked_X, checked_Y, seen, kernel_estimator_=kernel, forest_estimator_=forest,
            mixture_=choice.mixture, best_score_=float(np.max(choice.scores)),
            cv_results_=_results(choice.grid.tolist(), choice.scores.tolist(),
                                 choice.mean_losses.tolist()))
        return self

    @classmethod
    def from_fitted(cls, kernel, forest, kernel_honest, forest_honest, *, mixing_grid=11,
                    return_choice=False):
        r"""The mixture of a kernel and a forest already fitted on the same data, the share
        chosen as :meth:`fit` chooses it, with nothing refitted.

        :meth:`fit` fits both members, then chooses :math:`\lambda` on their honest outputs;
        this makes the same choice for members fitted on their own (each judged alone
        first, as ``ecrm fit --cv`` does), so that the pure families and their mixtures are
        judged on the same honest outputs.

        Parameters
        ----------
        kernel : ECRMCV
            Fitted; its parameters (but ``random_state``) become ``kernel_options``.
        forest : ForestECRMCV
            Fitted on the same rows, with the kernel's loss, output space and ``scoring``;
            its parameters (but ``random_state``) become ``forest_options``.
        kernel_honest, forest_honest : HonestOutputs
            What each member's ``fit_honest`` gave: costs when ``scoring`` is the task loss,
            label scores (``scores=True``) for a metric.
        mixing_grid : int or sequence of float, default=11
            The kernel shares tried (see :class:`MixedRiskECRM`).
        return_choice : bool, default=False
            Return the :class:`MixingChoice` made too (its ``rows`` and ``predictions``: the
            mixture's honest outputs).

        Returns
        -------
        model : MixedRiskECRM
            Fitted: ``mixture_``, ``best_score_`` and ``cv_results_`` as :meth:`fit` sets
            them. Its ``random_state`` is ``None``: the members keep the seeds they were
            fitted with, and :meth:`fit` on the same data would draw new ones.
        choice : MixingChoice
            Only with ``return_choice``.

        Raises
        ------
        TypeError, ValueError
            When the members do not make a mixture (the checks :func:`ecrm.load` runs on a
            model file's): not fitted, another loss, space, scoring or training data.
        """
        if type(kernel) is not ECRMCV or type(forest) is not ForestECRMCV:
            raise TypeError("the members must be a fitted ECRMCV and a fitted ForestECRMCV")
        for member in (kernel, forest):
            check_is_fitted(member, "best_score_")
        own = ("loss", "output_space", "scoring", "random_state")
        kernel_options, forest_options = (
            {k: v for k, v in member.get_params(deep=False).items() if k not in own}
            for member in (kernel, forest))
        model = cls(kernel.loss, kernel.output_space, kernel_options=kernel_options,
                    forest_options=forest_options, mixing_grid=mixing_grid,
                    scoring=kernel.scoring)
        plan = model._check_params()
        choice = model._choose(kernel_honest, forest_honest, forest.Y_fit_, plan["grid"],
                               plan["metric"])
        names = getattr(kernel, "feature_names_in_", None)
        model._set_state({
            "kernel_estimator_": kernel, "forest_estimator_": forest,
            "mixture_": choice.mixture, "best_score_": float(np.max(choice.scores)),
            "cv_results_": _results(choice.grid.tolist(), choice.scores.tolist(),
                                    choice.mean_losses.tolist()),
            "n_features_in_": kernel.n_features_in_,
            **({} if names is None else {"feature_names_in_": names})})
        model._check_fitted_state()
        return (model, choice) if return_choice else model

    def _choose(self, kernel_honest, forest_honest, Y, grid, metric) -> MixingChoice:
        """:func:`choose_mixture` on the members' honest outputs (the forest's placed by
        training point, NaN where no tree left a point out)."""
        oob = np.full((Y.shape[0], forest_honest.values.shape[1]), np.nan)
        oob[forest_honest.rows] = forest_honest.values
        return choose_mixture((kernel_honest.rows, kernel_honest.values), oob, Y, grid,
                              loss=self.loss, output_space=self.output_space, metric=metric)

    def _parts(self) -> list[tuple[float, Any]]:
        check_is_fitted(self, "mixture_")
        share = self.mixture_
        return [(share, self.kernel_estimator_), (1.0 - share, self.forest_estimator_)]

    def _keeper(self):
        """The forest member: it always keeps its rows (a kernel fitted in the primal or on
        Nystrom features drops them from model files)."""
        return self.forest_estimator_

    def _check_own_state(self, plan: Mapping, training) -> None:
        """The members against the mixture's parameters and each other, and the choice
        (the members checked their own state)."""
        from ecrm.model_files._state import check_level_columns, check_reading_options

        grid = plan["grid"]
        check_level_columns(getattr(self, "level_columns_", None))
        check_reading_options(getattr(self, "reading_options_", None))
        kernel, forest = self.kernel_estimator_, self.forest_estimator_
        if type(kernel) is not ECRMCV or type(forest) is not ForestECRMCV:
            raise TypeError("the members must be a fitted ECRMCV and a fitted ForestECRMCV")
        check_members(self, {"the kernel member": kernel, "the forest member": forest},
                      "the mixture")
        for name, member in (("kernel", kernel), ("forest", forest)):
            if repr(member.scoring) != repr(self.scoring):
                raise ValueError(f"the {name} member's scoring is not the mixture's")
        results = self.cv_results_
        if not (isinstance(results, dict)
                and set(results) == {*RESULTS_COLUMNS, "mixture", "mean_loss"}
                and results["mixture"] == grid.tolist()
                and all(isinstance(results[k], list) and len(results[k]) == len(grid)
                        and all(isinstance(v, float) for v in results[k])
                        for k in ("mean_score", "mean_loss"))
                and results == _results(grid.tolist(), results["mean_score"],
                                        results["mean_loss"])):
            raise ValueError("cv_results_ must hold params and mixture (the grid), mean_score "
                             "and mean_loss, one float per share, and their rank")
        if isinstance(self.mixture_, (bool, np.bool_)) or \
                not isinstance(self.mixture_, (float, np.floating)):
            raise TypeError(f"mixture_ must be a float share of the grid; found "
                            f"{type(self.mixture_).__name__}")
        best = int(np.argmax(results["mean_score"]))
        if self.mixture_ != grid[best] or self.best_score_ != results["mean_score"][best]:
            raise ValueError("mixture_ and best_score_ must be the best share's of cv_results_")


def _results(grid: list[float], scores: list[float], mean_losses: list[float]) -> dict:
    """The mixture's ``cv_results_`` (:func:`ecrm.selection.search_results`): per kernel
    share its criterion and mean honest loss, ranked by the criterion (ties: the earlier
    share, as the choice)."""
    keys = [(-s, i) for i, s in enumerate(scores)]
    return search_results([{"mixture": s} for s in grid], scores, ranks(keys), mixture=grid,
                          mean_loss=mean_losses)


def mixture_state_of_old_layout(params: dict, state: dict) -> dict:
    """MixedRiskECRM's fitted state as a model file written before every search shared one
    layout of ``cv_results_`` (``mixture``, ``score``, ``mean_loss``)."""
    results = state.get("cv_results_")
    if not (isinstance(results, dict) and set(results) == {"mixture", "score", "mean_loss"}
            and all(isinstance(results[k], list) for k in results)):
        return state
    return {**state, "cv_results_": _results(results["mixture"], results["score"],
                                             results["mean_loss"])}
