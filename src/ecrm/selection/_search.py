r"""The search objects: the exact leave-one-out search :class:`LeaveOneOutSearch` and the
forest's out-of-bag search :class:`OutOfBagSearch`.

:class:`ecrm.ECRMCV` holds one (its ``search``) and :func:`ecrm.selection.loo_search` calls
one: both run :meth:`LeaveOneOutSearch.run`, which checks the settings, prepares the solver's
leave-one-out bases (:func:`ecrm.weights.kernel._solvers.prepare.prepare_search`) and runs
:func:`ecrm.selection._loo.leave_one_out_search` over them. :class:`ecrm.ForestECRMCV` holds
an :class:`OutOfBagSearch`, run by :func:`ecrm.weights.forest._search.search_forests`.

Every search of the package reports its candidates in one layout (:func:`search_results`):
``params`` (a list of dicts), ``mean_score`` (greater is better) and ``rank`` (1 = best), one
entry per candidate, then the columns of the family.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_memory

from ecrm.estimators._parameters import Checked, Flag, Plan, Rule, _imported, check_params, table
from ecrm.selection._criteria import ScoreMetric, check_scoring
from ecrm.selection._grid import alpha_grid, grid_edges, intercept_options, kernel_settings
from ecrm.selection._loo import GridEdgeWarning, leave_one_out_search
from ecrm.weights.kernel._ridge import check_ridge
from ecrm.weights.kernel._solvers.dual import gram_eigendecomposition
from ecrm.weights.kernel._solvers.prepare import prepare_search

__all__ = ["RESULTS_COLUMNS", "LeaveOneOutSearch", "OutOfBagSearch", "check_search",
           "effective_search", "ranks", "search_results"]

#: The columns every ``cv_results_`` has, whatever the family.
RESULTS_COLUMNS = ("params", "mean_score", "rank")


def search_results(params: list, mean_score, rank, **columns) -> dict:
    """A ``cv_results_`` dict in the layout every search of the package shares.

    Parameters
    ----------
    params : list of dict
        Each candidate's settings.
    mean_score : sequence of float
        Each candidate's criterion, greater is better (NaN: not evaluated).
    rank : sequence of int
        Each candidate's rank by the family's choice rule, 1 for the chosen one.
    **columns
        The family's own columns, one value per candidate.

    Returns
    -------
    results : dict
        ``params``, ``mean_score``, ``rank`` then ``columns``, in that order.

    >>> list(search_results([{"a": 1}, {"a": 2}], [0.5, 0.7], [2, 1], oob_loss=[0.5, 0.3]))
    ['params', 'mean_score', 'rank', 'oob_loss']
    """
    n = len(params)
    for name, value in (("mean_score", mean_score), ("rank", rank), *columns.items()):
        if len(value) != n:
            raise ValueError(f"results column {name!r} has {len(value)} entries for {n} "
                             f"candidates")
    return {"params": params, "mean_score": mean_score, "rank": rank, **columns}


def ranks(keys: list) -> list[int]:
    """Each entry's rank (1 = the smallest key; ties by position)."""
    order = sorted(range(len(keys)), key=lambda i: (keys[i], i))
    out = [0] * len(keys)
    for r, i in enumerate(order, start=1):
        out[i] = r
    return out


class LeaveOneOutSearch(BaseEstimator):
    r"""The settings of an exact leave-one-out search of ridge regressions.

    For every candidate :math:`(k, \lambda, b)` (kernel setting, the paper's
    :math:`\lambda`, intercept) the exact leave-one-out predictions of the regression
    targets are

    .. math:: \hat t_{-i}(x_i) = \frac{(HT)_i - H_{ii}\, t_i}{1 - H_{ii}},

    with :math:`H` the hat matrix of the ridge regressions (ridge term :math:`m\lambda`,
    :mod:`ecrm.weights.kernel._ridge`), every :math:`\lambda` from one factorisation per kernel
    setting. The criterion is the task loss of the oracle's outputs (:class:`ecrm.ECRMCV`), a metric
    of the leave-one-out label scores, or a loss of the predictions themselves
    (:func:`ecrm.selection.loo_search`). Ties go to the earlier kernel setting, then the stronger
    regularisation, then the intercept.

    Parameters
    ----------
    alphas : array-like of float, default=np.logspace(-6, 2, 17)
        Candidate values of the paper's :math:`\lambda`.
    fit_intercept : bool or "auto", default="auto"
        ``"auto"`` tries both and keeps the better by the leave-one-out criterion.
    kernel_grid : dict or list of dicts, default=None
        Kernel settings to choose from, in :class:`sklearn.model_selection.ParameterGrid`
        form over the keys ``kernel``, ``gamma``, ``degree``, ``coef0`` (the others come from
        the estimator's kernel parameters; not with ``kernel="precomputed"``), e.g.
        ``[{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.01, 0.1]}]``. ``None``
        uses the estimator's single kernel.
    scoring : "loss", "micro_auprc", "macro_auprc", "lrap" or callable, default="loss"
        The criterion: the leave-one-out task loss, or a ranking metric of the leave-one-out
        label scores (:data:`ecrm.selection._criteria.SCORERS`; a callable is
        ``f(Y_true, scores) -> float``, greater is better). Metrics of the scores need
        ``solver="dual"``.
    calibration : None, "isotonic", "platt" or "auto", default=None
        Calibrate the label scores label by label on the exact leave-one-out scores of the
        selected model (:func:`ecrm.selection.calibration.choose_calibration`; ``"auto"`` keeps the
        option whose 5-fold cross-fitted calibrated scores score best by ``scoring``, micro
        AU(PRC) under ``scoring="loss"``).
    loo_samples : int >= 1, default=None
        Average the criterion over this many random training points instead of all of
        them (each point's leave-one-out prediction is still exact).
    kernel_subsample : int >= 2, default=None
        With several kernel settings, choose the kernel by exact leave-one-out on this many
        random training points, then alpha and the intercept on all of them with that
        kernel: one full factorisation instead of one per kernel.
    alpha_search : "grid" or "coarse-to-fine", default="grid"
        ``"coarse-to-fine"``, per kernel setting: every other alpha of the sorted grid (both
        ends included), then the grid neighbours of the best of them, every intercept each
        time: about half the work, and the full grid's choice whenever the criterion has no
        maximum between two coarse points away from the best one (e.g. it is unimodal in
        alpha).
    extend_grid : bool, default=False
        Extend a grid of more than one value past an end that wins, while the last step
        strictly improved the criterion: alpha, per kernel setting, by decades (every
        intercept, the same factorisation) within :math:`\sqrt\varepsilon\, d \le \alpha
        \le d / \sqrt\varepsilon` (:func:`ecrm.selection._grid.alpha_limits`); the
        ``gamma`` of an RBF or laplacian kernel of ``kernel_grid``, in the stage that
        chooses the kernel, by the ratio of its grid's two end values (the whole alpha
        search, one more factorisation each). A :class:`~ecrm.exceptions.GridEdgeWarning`
        then fires only when a bound stopped an extension at the selected value; with
        ``False`` whenever the choice is an end of its grid.
    max_added_gammas : int >= 0, default=3
        The most kernel widths ``extend_grid`` adds per search.
    memory : str, joblib.Memory or object with a ``cache`` method, default=None
        Caches each kernel's eigendecomposition (the dual solver), so that searches with
        other losses or targets on the same inputs reuse it.
    verbose : int >= 0, default=0
        With 1 or more, a progress bar over the candidates on standard error while the
        search runs and, after it, one line per kernel setting and the selected candidate
        (1: on an interactive terminal only; 2: always).

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import ECRMCV, Hierarchy
    >>> from ecrm.losses import HammingLoss
    >>> from ecrm.selection import LeaveOneOutSearch
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.linspace(0, 1, 40)[:, None]
    >>> Y = np.where(X > 0.5, [1, 0, 1], [1, 1, 0])
    >>> search = LeaveOneOutSearch(alphas=[1e-3, 1e-1], kernel_grid={"gamma": [1.0, 10.0]})
    >>> model = ECRMCV(HammingLoss(), h, search=search).fit(X, Y)
    >>> sorted(model.cv_results_)[:3], int(model.cv_results_["rank"].min())
    (['added', 'alpha', 'fit_intercept'], 1)
    """

    _parameter_constraints = table(
        "scoring", "calibration", "loo_samples", "kernel_subsample", "alpha_search",
        "max_added_gammas", "verbose",
        alphas=Checked("a non-empty list of alphas", bad=([], [0.0], [1e-3, -1.0]),
                       function=alpha_grid),
        fit_intercept=Flag(("auto",)),
        kernel_grid=Checked("settings of kernel, gamma, degree and coef0"),
        extend_grid=Flag(),
        memory=Checked("a joblib Memory or a directory (scikit-learn's check_memory, at a run)"))
    #: The plan's intercepts and scoring metric (``None``: the task loss or the caller's).
    _parameter_rules = (Rule("intercepts", intercept_options, ("fit_intercept",)),
                        Rule("metric", check_scoring, ("scoring",)))

    def __init__(self, *, alphas=None, fit_intercept="auto", kernel_grid=None, scoring="loss",
                 calibration=None, loo_samples=None, kernel_subsample=None,
                 alpha_search="grid", extend_grid=False, max_added_gammas=3, memory=None,
                 verbose=0):
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.kernel_grid = kernel_grid
        self.scoring = scoring
        self.calibration = calibration
        self.loo_samples = loo_samples
        self.kernel_subsample = kernel_subsample
        self.alpha_search = alpha_search
        self.extend_grid = extend_grid
        self.max_added_gammas = max_added_gammas
        self.memory = memory
        self.verbose = verbose

    def plan(self) -> Plan:
        """The checked settings (:func:`ecrm.estimators._parameters.check_params`)."""
        return check_params(self)

    def run(self, X, Y, targets, *, space, kernel_params: dict, solver, criterion,
            random_state, backend, oracle=None, caller: str | None = None):
        """Search the candidates on checked training data ``X`` (m, p) and ``Y`` (m, d).

        ``targets`` (the ``RiskTargets`` of ``Y``), ``space`` (makes the label scores
        consistent under a metric ``scoring``), the chosen ``solver``
        (:func:`ecrm.weights.kernel._solvers.choice.check_solver_params`), the checked
        ``kernel_params`` (which ``kernel_grid`` overrides) and ``backend`` describe the fit;
        ``criterion`` is the criterion under ``scoring="loss"``, the optional ``oracle``
        gives the best candidate's predictions under a metric ``scoring``;
        ``random_state`` draws the Nystrom centres, the kernel subsample and the
        ``loo_samples`` rows; grid-edge warnings and the progress lines carry the name
        ``caller`` (none without it). Returns ``(search, stage1)``, as
        ``leave_one_out_search``.
        """
        plan = self.plan()
        settings, alphas = kernel_settings(kernel_params, plan["kernel_grid"]), plan["alphas"]
        candidates = [(a, b) for b in plan["intercepts"] for a in alphas]
        for i, alpha in enumerate(alphas):
            check_ridge(alpha, X.shape[0], name=f"alphas[{i}]")
        metric = plan["metric"]
        refine = plan["alpha_search"] == "coarse-to-fine"
        source = prepare_search(
            solver, X, Y, settings, targets, space=space, alphas=alphas,
            random_state=random_state, backend=backend,
            decompose=check_memory(plan["memory"]).cache(gram_eigendecomposition),
            needs_scores=metric is not None or plan["calibration"] is not None,
            refine=refine)
        options = {"loo_samples": plan["loo_samples"],
                   "kernel_subsample": plan["kernel_subsample"], "refine": refine,
                   "extend": plan["extend_grid"], "max_added_gammas": plan["max_added_gammas"]}
        judge = criterion if metric is None else ScoreMetric(metric, space)
        with self._progress(len(settings), len(candidates), caller) as bar:
            search, stage1 = leave_one_out_search(source, settings, candidates, judge,
                                                  random_state=random_state, oracle=oracle,
                                                  progress=bar, **options)
        if caller is not None:
            notes = (search.bounds_hit() if options["extend"]
                     else grid_edges(search.best, alphas, settings))
            if options["extend"] and notes:  # once per fit, naming the bounds
                notes = ["; ".join(notes)]
            for note in notes:
                warnings.warn(f"{caller}: {note}", GridEdgeWarning, stacklevel=4)
        if self.verbose:  # checked by plan()
            self._report(search, caller or "loo_search")
        return search, stage1

    def _progress(self, n_settings: int, n_candidates: int, caller: str | None):
        """A progress bar over the candidates on standard error (``verbose``: 1 on an
        interactive terminal only, 2 always), else a context that does nothing."""
        if not self.verbose:
            return contextlib.nullcontext()
        from tqdm.auto import tqdm

        subsample = self.kernel_subsample is not None and n_settings > 1
        total = n_candidates * (n_settings + 1 if subsample else n_settings)
        return tqdm(total=total, desc=f"{caller or 'loo_search'} leave-one-out",
                    unit="candidate", file=sys.stderr,
                    disable=None if self.verbose == 1 else False, leave=True)

    @staticmethod
    def _report(search, caller: str) -> None:
        # through tqdm, so that a progress bar on the same stream (the command line's) is
        # cleared and drawn again below the lines instead of being written over
        from tqdm.auto import tqdm

        for k in sorted({c.kernel_index for c in search.candidates}):
            top = min((c for c in search.candidates if c.kernel_index == k),
                      key=lambda c: c.sort_key)
            tqdm.write(f"[{caller}] kernel {top.kernel_params}: best alpha={top.alpha:g}, "
                       f"intercept={top.fit_intercept}, leave-one-out score {top.score:.6g}",
                       file=sys.stderr)
        best = search.best
        tqdm.write(f"[{caller}] selected {best.kernel_params}, alpha={best.alpha:g}, "
                   f"intercept={best.fit_intercept}", file=sys.stderr)


class OutOfBagSearch(BaseEstimator):
    """The settings of the out-of-bag search of forest settings (:class:`ecrm.ForestECRMCV`).

    Every setting of ``param_grid`` is a forest on all the training points; the one with the
    best out-of-bag criterion is kept as it is (no refit: the criterion is honest for it, and
    compares with :class:`LeaveOneOutSearch`'s: :func:`ecrm.selection.select_honestly`).

    Settings that differ only in ``min_samples_split`` share one forest, grown with the
    smallest value and pruned for the others (:func:`ecrm.weights.forest._fit.prune`: pruned
    trees are distributed as trees grown with that value).

    Parameters
    ----------
    param_grid : dict or list of dicts, default=None
        The trees' settings (:class:`~sklearn.model_selection.ParameterGrid` format) over
        ``flavour``, ``max_features``, ``min_samples_leaf``, ``min_samples_split`` and
        ``max_depth``, each as :class:`~ecrm.weights.forest.estimator.ForestECRM`'s, its
        default where the grid names none. ``None``: ``{"flavour": ["random", "extra"],
        "max_features": [0.5, 1.0]}``.
    scoring : "loss", "micro_auprc", "macro_auprc", "lrap" or callable, default="loss"
        The criterion: the out-of-bag task loss, or a ranking metric of the out-of-bag label
        scores (as :class:`LeaveOneOutSearch`'s).
    search_estimators : int >= 1 or None, default=None
        Trees each setting is first judged on; the best one's forest then grows on to
        ``n_estimators`` and its group's ``min_samples_split`` values are judged again
        (``None``, or at least ``n_estimators``: every setting grows them all).
    split_search : {"grid", "descent"}, default="grid"
        Which ``min_samples_split`` values of a group are judged: all, or a descent along the
        sorted values from the middle one (after ``search_estimators``: from the one chosen
        on fewer trees) to the better neighbour while it beats the current value, a local
        optimum (the grid's choice when the criterion is unimodal), typically after three to
        five judgements; values not judged are NaN in ``cv_results_``.
    """

    _parameter_constraints = table(
        "scoring", "search_estimators", "split_search",
        param_grid=Checked("settings of the forest's parameters (the plan: the list of them)",
                           bad=({"alpha": [1.0]}, {"n_estimators": [0]}), function=lambda g:
                           _imported("ecrm.weights.forest._search.forest_grid")(g)))
    #: The plan's scoring metric (``None``: the task loss).
    _parameter_rules = (Rule("metric", check_scoring, ("scoring",)),)

    def __init__(self, *, param_grid=None, scoring="loss", search_estimators=None,
                 split_search="grid"):
        self.param_grid = param_grid
        self.scoring = scoring
        self.search_estimators = search_estimators
        self.split_search = split_search

    plan = LeaveOneOutSearch.plan


def check_search(search, kind: type = LeaveOneOutSearch):
    """``search`` checked: ``None`` or a ``kind`` (:class:`LeaveOneOutSearch` or
    :class:`OutOfBagSearch`) whose settings pass their constraints (an error names
    ``search`` and the setting)."""
    return None if search is None else _checked(_instance(search, kind))


def _instance(search, kind: type):
    if not isinstance(search, kind):
        raise TypeError(f"search must be None or {'an' if kind is OutOfBagSearch else 'a'} "
                        f"{kind.__name__}; got {type(search).__name__}")
    return search


def _checked(search):
    try:
        search.plan()
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"search: {exc}") from None
    return search


#: The shortcuts an estimator takes beside its ``search``, and the search's default of each.
SHORTCUTS = {"alphas": None, "scoring": "loss"}


def effective_search(alphas, scoring, search, kind: type = LeaveOneOutSearch):
    """The search an estimator runs: its ``search`` (default ``kind()``, a
    :class:`LeaveOneOutSearch` or an :class:`OutOfBagSearch`) with the shortcuts given (not
    ``None``) set on a copy. A shortcut given beside a search that sets the same setting is
    refused: which one was meant is not clear."""
    given = {name: value for name, value in (("alphas", alphas), ("scoring", scoring))
             if value is not None}
    if search is None:
        return _checked(kind(**given))
    own = _checked(_instance(search, kind)).get_params(deep=False)
    both = [name for name in given if not _is_default(own[name], name)]
    if both:
        raise ValueError(f"{both[0]} is given both to the estimator and to its search "
                         f"({both[0]}={own[both[0]]!r}): give it once")
    return _checked(kind(**{**own, **given}))


def _is_default(value, name: str) -> bool:
    default = SHORTCUTS[name]
    return value is default or (isinstance(value, str) and value == default)
