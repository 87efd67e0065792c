r"""ECRM and ECRMCV: scikit-learn estimators that compose risk weights, loss and oracle.

Both rest on :mod:`ecrm.weights._risk`. :class:`ECRM` fits through the basis of the chosen
solver (:func:`ecrm.weights.kernel._solvers.prepare.prepare`); :class:`ECRMCV` runs the exact
leave-one-out search of :mod:`ecrm.selection._loo` over the solver's leave-one-out bases, then
refits the selected candidate. A failed fit leaves the estimator as it was.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from sklearn.utils import check_random_state

from ecrm.estimators._parameters import (
    KERNEL_PARAMS,
    RANDOM_STATE,
    SOLVER_SETTINGS,
    Checked,
    Flag,
    Rule,
    table,
)
from ecrm.model_files._state import check_kernel_state, check_ridge_state, check_search_state
from ecrm.selection._criteria import SCORERS, ScoreMetric, TaskLoss
from ecrm.selection._grid import alpha_grid, kernel_settings
from ecrm.selection._search import LeaveOneOutSearch, check_search, effective_search
from ecrm.selection.calibration import choose_calibration
from ecrm.weights._risk import RiskEstimator
from ecrm.weights.kernel._ridge import check_ridge
from ecrm.weights.kernel._solvers.prepare import prepare
from ecrm.weights.kernel._solvers.rows import RiskTargets

__all__ = ["ECRM", "ECRMCV"]


class ECRM(RiskEstimator):
    r"""Structured prediction by estimated conditional risk minimisation.

    Kernel ridge regression of the loss to every training output gives the estimated
    conditional risk (Goh & Jaillet, 2016, Proposition 2.1)

    .. math:: \hat R(y|x) = \sum_{i=1}^m w_i(x)\, \ell(y, y_i), \qquad
              w(x) = (K + m\lambda I)^{-1} v(x),\quad v(x)_i = k(x, x_i),

    and the prediction is :math:`\arg\min_{y \in \mathcal Y} \hat R(y|x)`. For a loss linear in
    an embedding (:class:`ecrm.losses.LinearLoss`) fitting precomputes
    :math:`A = (K + m\lambda I)^{-1}\psi(Y)` once; prediction is one kernel block times
    :math:`A` followed by the output space's exact oracle.

    Parameters
    ----------
    loss : ecrm.losses.Loss
        The task loss, e.g. :class:`~ecrm.losses.HammingLoss`.
    output_space : ecrm.spaces.base.OutputSpace
        The output space with its exact oracle, e.g. :class:`ecrm.Hierarchy`.
    kernel : {"rbf", "linear", "poly", "laplacian", "sigmoid", "cosine", "precomputed"} or \
callable, default="rbf"
        Kernel, evaluated by :func:`sklearn.metrics.pairwise.pairwise_kernels`.
    gamma : float in [0, inf), default=None
        Kernel coefficient for rbf, laplacian, poly, sigmoid; ``None`` means
        ``1 / n_features``.
    degree : int >= 1, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1
        Constant of the polynomial and sigmoid kernels.
    alpha : float in (0, inf), default=1e-3
        The paper's :math:`\lambda`. The solve adds ``m * alpha`` to the diagonal of the
        Gram matrix (scikit-learn's ``KernelRidge`` adds ``alpha`` itself); ``m * alpha``
        must be finite and at least the round-off of that diagonal
        (:func:`ecrm.weights.kernel._ridge.check_ridge`).
    fit_intercept : bool, default=True
        Model an unpenalised intercept in every risk regression (the risk weights then sum to
        one); see :mod:`ecrm.weights.kernel._ridge` for the derivation.
    solver : {"auto", "dual", "primal", "nystrom"} or Solver, default="auto"
        How the risk regressions are solved (:mod:`ecrm.weights.kernel._solvers`), all with the
        same objective and ``alpha``. ``"dual"``: exact, on the m x m Gram matrix. ``"primal"``:
        exact for ``kernel="linear"`` (dense or sparse inputs) on the p x p matrix
        :math:`X^\top X`, accumulated over row blocks; predictions are
        ``X @ coef_ + intercept_``. ``"nystrom"``: M centres among the training points and the
        features :math:`K(x, C) K_{MM}^{+1/2}`, then the primal path (an approximation of the
        kernel, exact when every point is a centre). ``"auto"``: the dual while its m x m
        matrices fit ``memory_budget``, else the primal for a linear kernel, else a
        ``ValueError`` naming ``solver="nystrom"`` (never a silent approximation). A
        :class:`ecrm.Solver` object carries its own settings:
        ``ecrm.NystromSolver(n_components=50, center_selection="kmeans++")`` (the number of
        centres and how they are drawn), :class:`ecrm.DualSolver`, :class:`ecrm.PrimalSolver`,
        or one of your own added by :func:`ecrm.register_solver`.
    memory_budget : float in (0, inf), default=None
        GiB the dual's m x m matrices may take (``None``: 8); also checked, before any
        allocation, for the primal's matrices. Row blocks follow scikit-learn's
        ``working_memory``.
    random_state : int, RandomState instance or None, default=None
        Draws the Nystrom centres.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (m, e)
        :math:`A` with the intercept folded in: costs are ``K(X, X_fit_) @ dual_coef_ +
        intercept_`` (the dual solver).
    coef_ : ndarray of shape (k, e)
        The primal solvers' coefficients: costs are ``f(X) @ coef_ + intercept_``, with
        ``f`` the identity (``"primal"``) or the Nystrom features.
    intercept_ : ndarray of shape (e,)
    X_fit_, Y_fit_ : training inputs and outputs.
    label_names_ : ndarray of object, shape (d,)
        The name of each output column (``output_space.output_names``: a hierarchy's labels,
        a flow polytope's arcs, else ``0 .. d-1``); ``output_space.to_labels`` (hierarchies)
        turns predictions into names.
    output_mean_, output_mode_ : ndarray of shape (d,)
        The mean training output (for label sets, each label's frequency) and the most
        frequent one (:func:`ecrm.baselines.output_statistics`): what the trivial baselines
        of ``ecrm evaluate`` predict (:func:`ecrm.baselines.trivial_baselines`). Kept in
        model files that leave out ``Y_fit_``; absent after a fit on Dask arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import ECRM, Hierarchy
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]])
    >>> Y = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]])
    >>> ECRM(HammingLoss(), h, kernel="rbf", gamma=10.0).fit(X, Y).predict([[0.05], [1.05]])
    array([[1., 1., 0.],
           [1., 0., 1.]])
    """

    #: Each parameter's constraint (:func:`ecrm.estimators._parameters.table`).
    _parameter_constraints = table(
        "kernel", "gamma", "degree", "coef0", "alpha", "solver", "memory_budget",
        fit_intercept=Flag(), random_state=RANDOM_STATE)
    _parameter_rules = (KERNEL_PARAMS, SOLVER_SETTINGS)

    def __init__(self, loss, output_space, *, kernel="rbf", gamma=None, degree=3, coef0=1,
                 alpha=1e-3, fit_intercept=True, solver="auto", memory_budget=None,
                 random_state=None):
        self.loss = loss
        self.output_space = output_space
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.memory_budget = memory_budget
        self.random_state = random_state

    def fit(self, X, Y):
        """Fit the risk regressions.

        Parameters
        ----------
        X : array-like, sparse matrix or Dask array of shape (m, p)
            Training inputs (the training Gram matrix, (m, m), if ``kernel="precomputed"``).
        Y : array-like or Dask array of shape (m, d)
            Training outputs, in the output space.
            Dask arrays (chunked by rows, ``Y`` with the row chunks of ``X`` or in memory)
            fit as a map-reduce on the active Dask scheduler; they need
            ``solver="nystrom"`` or ``"primal"`` (:mod:`ecrm.weights.kernel._solvers._dask`).

        Returns
        -------
        self : ECRM
        """
        plan = self._check_params()
        params, alpha = plan["kernel_params"], plan["alpha"]
        X, Y, seen = self._check_training_data(X, Y, params["kernel"])
        m = X.shape[0]
        check_ridge(alpha, m)
        choice = self._solver_choice(X, params["kernel"], cv=False)
        basis = prepare(choice, X, Y, params, RiskTargets(self.loss), space=self.output_space,
                        alpha=alpha, random_state=check_random_state(self.random_state),
                        backend=seen.backend)
        ridge = check_ridge(alpha, m, basis.diagonal_max)
        self._store(X, Y, params, basis.fit(ridge, plan["fit_intercept"]), alpha, seen)
        return self


class ECRMCV(RiskEstimator):
    r"""ECRM with ``alpha``, the intercept and the kernel chosen by exact leave-one-out.

    For every candidate :math:`\lambda` the exact leave-one-out costs are

    .. math:: c_{-i}(x_i) = \frac{(H\Psi)_i - H_{ii}\,\psi(y_i)}{1 - H_{ii}},

    with :math:`H` the hat matrix of the risk regressions (:mod:`ecrm.weights.kernel._ridge`):
    the costs being linear in the targets, they are exactly those of the fit without point
    :math:`i` (same ridge term :math:`m\lambda`). The criterion is the leave-one-out *task
    loss* :math:`\frac1m\sum_i \ell(\hat y_{-i}, y_i)` of the oracle's
    :math:`\hat y_{-i} = \arg\min_y \langle \phi(y), c_{-i}(x_i)\rangle`, for every
    :math:`\lambda` from one eigendecomposition per kernel (thin, from the SVD of ``X``, for a
    linear kernel with fewer features than samples), which also refits the selected model.

    With ``scoring`` a ranking metric, the criterion is that metric of the exact leave-one-out
    *label scores* (the same formula on the label columns, then the output space's consistency
    step); no oracle runs. A calibration (``"isotonic"``, ``"platt"``, or ``"auto"`` choosing by
    cross-fitting) maps each label's score through a regression of the label on its exact
    leave-one-out scores (:mod:`ecrm.selection.calibration`).

    Parameters
    ----------
    loss, output_space, kernel, gamma, degree, coef0 : see :class:`ECRM`.
    alphas : array-like of float, default=None
        Shortcut for ``search.alphas``: the candidate values of the paper's :math:`\lambda`,
        each as ``alpha`` in :class:`ECRM` (``None``: the search's, by default
        ``np.logspace(-6, 2, 17)``).
    scoring : "loss", "micro_auprc", "macro_auprc", "lrap" or callable, default=None
        Shortcut for ``search.scoring`` (``None``: the search's, by default ``"loss"``): the
        leave-one-out task loss, or a ranking metric of the leave-one-out label scores
        (:data:`ecrm.selection._criteria.SCORERS`; a callable is ``f(Y_true, scores) ->
        float``, greater is better). scikit-learn's ``"average_precision"`` is
        ``"macro_auprc"``. Metrics of the scores need ``solver="dual"``. A shortcut given
        beside a ``search`` that sets the same setting is refused.
    search : ecrm.selection.LeaveOneOutSearch, default=None
        The search's settings (``None``: ``LeaveOneOutSearch()``): alphas, intercept choice,
        kernel grid (over ``kernel``, ``gamma``, ``degree``, ``coef0``; the others come from
        the parameters above), scoring, calibration, grid extension, subsampling, cache and
        progress bar, each described there. With ``"primal"``/``"nystrom"`` solvers the exact
        leave-one-out loss is that of the low-rank model (same centres, same ridge), every
        alpha from one eigendecomposition of :math:`F^\top F`
        (:class:`ecrm.weights.kernel._solvers.primal.PrimalLeaveOneOut`).
    solver, memory_budget : see :class:`ECRM`.
    random_state : int, RandomState instance or None, default=None
        Draws the subsets of ``loo_samples`` and ``kernel_subsample`` and the Nystrom
        centres.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import ECRMCV, Hierarchy
    >>> from ecrm.losses import HierarchicalLoss
    >>> from ecrm.selection import LeaveOneOutSearch
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(60, 2))
    >>> a1 = X[:, 0] + 0.5 * rng.normal(size=60) > 0
    >>> a2 = X[:, 0] + 0.5 * rng.normal(size=60) <= 0
    >>> search = LeaveOneOutSearch(kernel_grid={"gamma": [0.01, 0.1, 1.0, 10.0]})
    >>> model = ECRMCV(HierarchicalLoss(h), h, alphas=np.logspace(-5, 1, 7), search=search)
    >>> model.fit(X, np.column_stack([np.ones(60), a1, a2])).kernel_params_["gamma"]
    0.1
    >>> model.predict_labels([[-1.0, 0.0], [1.0, 0.0]])
    [['a', 'a2'], ['a', 'a1']]

    Attributes
    ----------
    alpha_ : float
    fit_intercept_ : bool
    kernel_params_ : dict
        The selected kernel settings.
    best_score_ : float
        The best criterion: minus the mean leave-one-out task loss, or the metric.
    cv_results_ : dict
        The layout every search shares (:func:`ecrm.selection.search_results`): ``params``
        (a list of dicts), ``mean_score`` (the leave-one-out criterion) and ``rank`` (1 =
        best), then the arrays ``alpha``, ``fit_intercept``, ``mean_loss`` (the mean
        leave-one-out task loss; NaN where not computed) and ``added`` (tried by the search's
        ``extend_grid``, not given in the grid), one entry per candidate.
    loo_scores_ : ndarray of shape (len(loo_rows_), d) or None
        The selected model's leave-one-out label scores, when ``scoring`` is a metric.
    score_calibration_ : IsotonicCalibration, PlattCalibration or None
        The calibration of :meth:`predict_scores`.
    calibration_ : str or None
        Its name (the choice of ``calibration="auto"``).
    calibration_results_ : dict or None
        With ``"auto"``: the cross-fitted metric of ``"none"``, ``"isotonic"`` and ``"platt"``.
    kernel_search_results_ : dict or None
        The stage-1 table when ``kernel_subsample`` chose the kernel.
    loo_rows_ : ndarray of int
        The training points the leave-one-out loss was averaged over.
    loo_predictions_ : ndarray of shape (len(loo_rows_), d)
        Their leave-one-out predictions under the selected model.
    """

    _parameter_constraints = table(
        "kernel", "gamma", "degree", "coef0", "scoring", "solver", "memory_budget",
        alphas=Checked("a non-empty list of alphas", bad=([], [0.0], [1e-3, -1.0]),
                       function=lambda alphas: None if alphas is None else alpha_grid(alphas)),
        search=Checked("a LeaveOneOutSearch", bad=("x", LeaveOneOutSearch(alphas=[]),
                                                   LeaveOneOutSearch(loo_samples=0)),
                       function=check_search),
        random_state=RANDOM_STATE)
    #: The plan's entries of several parameters: the search run (its settings with the
    #: shortcuts), its checked settings, and the kernel settings it searches.
    _parameter_rules = (
        KERNEL_PARAMS,
        Rule("loo", effective_search, ("alphas", "scoring", "search"), as_given=True),
        Rule("search_plan", LeaveOneOutSearch.plan, ("loo",)),
        Rule("settings", lambda own, search: kernel_settings(own, search["kernel_grid"]),
             ("kernel_params", "search_plan")),
        SOLVER_SETTINGS)
    _linear_loss = True

    def __init__(self, loss, output_space, *, alphas=None, kernel="rbf", gamma=None, degree=3,
                 coef0=1, scoring=None, search=None, solver="auto", memory_budget=None,
                 random_state=None):
        self.loss = loss
        self.output_space = output_space
        self.alphas = alphas
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.scoring = scoring
        self.search = search
        self.solver = solver
        self.memory_budget = memory_budget
        self.random_state = random_state

    def _check_own_state(self, plan: Mapping, training) -> None:
        """The search's choice among the plan's candidates, and its fit."""
        check_kernel_state(self, training)
        search = plan["search_plan"]
        check_search_state(self, training.m, training.d, plan["settings"], search["alphas"],
                           sorted(set(search["intercepts"])), search["extend_grid"])
        check_ridge_state(self._fit, training.m, self.alpha_, self.fit_intercept_)

    def search_settings(self) -> LeaveOneOutSearch:
        """The search :meth:`fit` runs: ``search`` (or ``LeaveOneOutSearch()``) with the
        shortcuts ``alphas`` and ``scoring`` set, on a copy (checked)."""
        return effective_search(self.alphas, self.scoring, self.search)

    def fit(self, X, Y):
        """Select the regularisation and kernel by exact leave-one-out task loss, then refit.

        Parameters
        ----------
        X, Y : the training inputs and outputs, as in :meth:`ECRM.fit`.

        Returns
        -------
        self : ECRMCV
        """
        self._fit_search(X, Y)
        return self

    def fit_honest(self, X, Y, *, scores: bool = False):
        """:meth:`fit`, then the selected candidate's exact leave-one-out costs (or label
        scores, as :meth:`predict_scores` makes them without a calibration) of the points
        its criterion averaged over (``loo_rows_``): an
        :class:`ecrm.weights.HonestOutputs`."""
        from ecrm.selection._criteria import LooCosts
        from ecrm.weights._risk import HonestOutputs

        if not scores:
            self._require_linear()
        search = self._fit_search(X, Y)
        if scores:
            outputs = search.scores
            if outputs is None:
                metric = ScoreMetric(SCORERS["micro_auprc"], self.output_space)
                outputs = search.basis.loo_values(metric, [search.trial], search.rows)[0].scores
        else:
            outputs = search.basis.loo_predictions(LooCosts(), search.trial, search.rows)
        return HonestOutputs(search.rows, np.asarray(outputs, dtype=float))

    def _fit_search(self, X, Y):
        """:meth:`fit`, returning the selected candidate's search (its leave-one-out basis
        answers further questions, e.g. :func:`ecrm.weights.mixture.kernel_loo_outputs`)."""
        plan = self._check_params()
        loo, own = plan["loo"], plan["kernel_params"]
        metric = plan["search_plan"]["metric"]
        rng = check_random_state(self.random_state)
        X, Y, seen = self._check_training_data(X, Y, own["kernel"])
        task = TaskLoss(self.loss, self.output_space)
        search, stage1 = loo.run(X, Y, RiskTargets(self.loss), space=self.output_space,
                                 kernel_params=own, solver=self._solver_choice(
                                     X, own["kernel"], cv=True),
                                 criterion=task, random_state=rng, backend=seen.backend,
                                 oracle=task, caller="ECRMCV")
        calibration = plan["search_plan"]["calibration"]
        choice = None if calibration is None else self._calibrate(search, Y, metric, rng,
                                                                  calibration)
        self._store(X, Y, search.best.kernel_params, search.basis.refit(search.trial),
                    search.best.alpha, seen, **self._search_state(search, stage1, choice))
        return search

    def _calibrate(self, search, Y, metric, rng, calibration):
        """The score calibration chosen on the exact leave-one-out scores of every point."""
        metric = metric or SCORERS["micro_auprc"]
        S, m = search.scores, Y.shape[0]
        if S is None or len(search.rows) != m:  # a subsample's scores: those of all points
            S = search.basis.loo_values(ScoreMetric(metric, self.output_space), [search.trial],
                                        np.arange(m))[0].scores
        return choose_calibration(calibration, S, Y, metric=metric,
                                  consistent=self.output_space.consistent_scores,
                                  random_state=rng)

    _fitted_attributes = RiskEstimator._fitted_attributes + (
        "alpha_", "fit_intercept_", "best_score_", "cv_results_", "kernel_search_results_",
        "loo_rows_", "loo_predictions_", "loo_scores_", "score_calibration_", "calibration_",
        "calibration_results_")

    @staticmethod
    def _search_state(search, stage1, choice) -> dict:
        """The fitted attributes of the selection."""
        best = search.best
        return {"alpha_": best.alpha, "fit_intercept_": best.fit_intercept,
                "best_score_": best.score, "cv_results_": search.table(),
                "kernel_search_results_": None if stage1 is None else stage1.table(),
                "loo_rows_": search.rows, "loo_predictions_": search.predictions,
                "loo_scores_": search.scores,
                "score_calibration_": None if choice is None else choice.calibration,
                "calibration_": None if choice is None else choice.name,
                "calibration_results_": None if choice is None else choice.scores}

    def _calibration(self):
        return self.score_calibration_
