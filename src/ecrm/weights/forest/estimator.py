r"""ECRM with forest weights: the conditional risk estimated by a random forest.

:class:`ForestECRM` estimates the conditional risk with the leaf co-membership weights of a
forest (:mod:`ecrm.weights.forest._fit`),

.. math:: \hat R(y|x) = \sum_{i=1}^m w_i(x)\, \ell(y, y_i), \qquad
          w_i(x) = \frac1T \sum_{t=1}^T \frac{b_{ti}\, \mathbb 1[\ell_t(x_i) = \ell_t(x)]}
          {\sum_j b_{tj}\, \mathbb 1[\ell_t(x_j) = \ell_t(x)]},

and predicts its exact minimiser over the output space. For a linear loss the trees are grown
on :math:`\psi(Y)`, so the costs :math:`c(x) = \sum_i w_i(x)\psi(y_i)` are the forest's
prediction; another loss hands the weights to its risk minimiser. The honest criterion is out
of bag (each training point predicted by the trees that never drew it, ``oob_loss_``), by
which :class:`ForestECRMCV` chooses the settings (:class:`ecrm.selection.OutOfBagSearch`,
:mod:`ecrm.weights.forest._search`, :mod:`ecrm.weights.forest._oob`).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._parameters import (
    RANDOM_STATE,
    Checked,
    Rule,
    check_parameter,
    table,
    vocabulary,
)
from ecrm.estimators._validation import check_int
from ecrm.losses.base import LinearLoss
from ecrm.selection._search import OutOfBagSearch, check_search, effective_search
from ecrm.weights._risk import RiskEstimator
from ecrm.weights.forest._dask import checked_training, fits_dask
from ecrm.weights.forest._fit import ForestFit, Grown, Trees, grow_forest
from ecrm.weights.forest._oob import forest_fit, judge, oob_scores
from ecrm.weights.forest._search import GRID_KEYS, check_results, results, search_forests
from ecrm.weights.kernel._solvers.rows import RiskTargets

__all__ = ["ForestECRM", "ForestECRMCV"]

FLAVOURS = vocabulary("flavour")


def _check_max_samples(value):
    if value is None or isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return None if value is None else check_int(value, "max_samples")
    return check_parameter("max_samples", value)


def n_draws(m: int, max_samples) -> int:
    """Bootstrap draws per tree: ``m``, ``max_samples`` (at most ``m``) or a share of ``m``."""
    if max_samples is None:
        return m
    if isinstance(max_samples, int):
        return min(m, max_samples)
    return max(1, round(m * max_samples))


def _check_max_features(value):
    if value is None or value in ("sqrt", "log2"):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"max_features must be a float in (0, 1], an int >= 1, 'sqrt', 'log2' "
                        f"or None; got {value!r}")
    if isinstance(value, numbers.Integral):
        return check_int(value, "max_features")  # a count of features
    return check_parameter("max_features", value)


class ForestECRM(RiskEstimator):
    r"""Structured prediction by conditional risk minimisation with forest weights.

    Fitting grows ``n_estimators`` trees of scikit-learn's
    :class:`~sklearn.ensemble.RandomForestRegressor` or
    :class:`~sklearn.ensemble.ExtraTreesRegressor` on :math:`\psi(Y)` (a loss without a linear
    form: on ``Y``); see the module docstring for the weights. Features need no scaling.

    Parameters
    ----------
    loss : ecrm.losses.Loss
    output_space : ecrm.spaces.base.OutputSpace
    flavour : {"random", "extra"}, default="random"
        Random forest (best split of a random subset of features) or extremely randomised
        trees (random thresholds), both on bootstrap samples.
    n_estimators : int >= 1, default=100
    max_features : float in (0, 1], int >= 1, "sqrt", "log2" or None, default=0.5
        Features tried at each split (scikit-learn's meaning).
    min_samples_leaf : int >= 1, default=1
    min_samples_split : int >= 2, default=2
        Nodes of fewer drawn points are not split (scikit-learn's meaning): coarser leaves.
        :class:`ForestECRMCV` grows one forest for every value of a grid and prunes it.
    max_depth : int >= 1, default=None
    max_samples : int >= 1, float in (0, 1] or None, default=None
        Bootstrap draws per tree: ``m`` (``None``), at most this many, or this share of
        ``m``. Smaller samples grow large forests faster and leave more trees out of bag.
    n_split_targets : int >= 1, default=64
        A wider embedding is projected to this many columns for choosing the splits (the
        leaves still average all of it), so wide embeddings grow as fast as narrow ones.
        ``None``: always the whole embedding.
    split_projection : {"random", "principal"}, default="random"
        That projection: Gaussian random, or the top principal components
        (:class:`~sklearn.decomposition.PCA`).
    n_jobs : int, default=None
        Trees grown in parallel (scikit-learn's ``n_jobs``); on a Dask cluster each tree is
        a task of its own and the workers set the parallelism.
    random_state : int, RandomState instance or None, default=None
        The bootstrap samples, the feature subsets and the projection.

    Attributes
    ----------
    oob_loss_ : float
        The mean task loss of the out-of-bag predictions: each training point predicted from
        the trees that did not draw it (the points every tree drew are left out).
    oob_predictions_ : ndarray of shape (m, d)
        Those predictions (rows of points with no out-of-bag tree are NaN).
    risk_targets_ : ndarray of shape (m, e)
        :math:`\psi(Y)` of the training outputs, which the weights average (a linear loss).
    X_fit_, Y_fit_, label_names_ : as :class:`ecrm.ECRM`.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import Hierarchy
    >>> from ecrm.weights.forest.estimator import ForestECRM
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.array([[0.0], [0.1], [0.2], [1.0], [1.1], [1.2]])
    >>> Y = np.array([[1, 1, 0]] * 3 + [[1, 0, 1]] * 3)
    >>> model = ForestECRM(HammingLoss(), h, n_estimators=20, random_state=0).fit(X, Y)
    >>> model.predict([[0.05], [1.05]])
    array([[1., 1., 0.],
           [1., 0., 1.]])
    """

    _fitted_attributes = tuple(
        name for name in RiskEstimator._fitted_attributes if name != "kernel_params_"
    ) + ("oob_loss_", "oob_predictions_")

    _parameter_constraints = table(
        "flavour", "n_estimators", "min_samples_leaf", "min_samples_split", "max_depth",
        "n_split_targets", "split_projection",
        max_features=Checked("a share in (0, 1], a count >= 1, 'sqrt', 'log2' or None",
                             bad=("x", 0.0, 1.5, 0, True), function=_check_max_features),
        max_samples=Checked("a share in (0, 1], a count >= 1 or None", bad=("x", 0.0, 1.5, 0),
                            function=_check_max_samples),
        n_jobs=Checked("joblib's n_jobs (scikit-learn checks it at fit)"),
        random_state=RANDOM_STATE)

    def __init__(self, loss, output_space, *, flavour="random", n_estimators=100,
                 max_features=0.5, min_samples_leaf=1, min_samples_split=2, max_depth=None,
                 max_samples=None, n_split_targets=64, split_projection="random", n_jobs=None,
                 random_state=None):
        self.loss = loss
        self.output_space = output_space
        self.flavour = flavour
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.min_samples_split = min_samples_split
        self.max_depth = max_depth
        self.max_samples = max_samples
        self.n_split_targets = n_split_targets
        self.split_projection = split_projection
        self.n_jobs = n_jobs
        self.random_state = random_state

    _input_kernel = None  # the trees read the features as they are
    _fits_dask = True  # the trees on the workers (ecrm.weights.forest._dask)

    def _check_training_data(self, X, Y, kernel):
        # a Dask fit's rows, already checked (ecrm.weights.forest._dask.fits_dask)
        return checked_training(X, Y) or super()._check_training_data(X, Y, kernel)

    @fits_dask
    def fit(self, X, Y):
        """Grow the forest on the loss's embedding and judge it out of bag.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (m, p)
        Y : array-like of shape (m, d)
            Training outputs, in the output space (as :meth:`ecrm.ECRM.fit` takes them).

        Returns
        -------
        self : ForestECRM
        """
        params = self._check_params()
        X, Y, seen = self._check_training_data(X, Y, None)
        rng = check_random_state(self.random_state)
        targets, n_risk, grow_on = self._split_targets(Y, params, rng)
        grown = self._grow(X, grow_on, params, params["n_estimators"], rng)
        fit = forest_fit(grown, X, targets, n_risk)
        loss, predictions = judge(fit, self.loss, self.output_space, Y)
        self._set_fitted(X, Y, seen, _fit=fit, oob_loss_=loss, oob_predictions_=predictions)
        return self

    def _split_targets(self, Y, params: Mapping, rng) -> tuple[np.ndarray, int, np.ndarray]:
        """The training outputs' risk targets, how many of their columns the risk uses, and
        the targets the trees split on (a projection of a wide embedding)."""
        targets = RiskTargets(self.loss)(Y)
        linear = isinstance(self.loss, LinearLoss)
        n_risk = targets.shape[1] - Y.shape[1] if linear else 0
        grow_on = targets[:, :n_risk - 1] if linear else targets
        q = params["n_split_targets"]
        if q is None or grow_on.shape[1] <= q:
            return targets, n_risk, grow_on
        if params["split_projection"] == "principal":
            from sklearn.decomposition import PCA

            pca = PCA(q, random_state=rng.randint(np.iinfo(np.int32).max))
            return targets, n_risk, pca.fit_transform(grow_on)
        return targets, n_risk, grow_on @ rng.standard_normal((grow_on.shape[1], q)) / np.sqrt(q)

    def _grow(self, X, grow_on, params: dict, n_estimators: int, rng) -> Grown:
        """``n_estimators`` trees of the setting ``params``, seeded from ``rng``."""
        return grow_forest(
            X, grow_on, flavour=params["flavour"], n_estimators=n_estimators,
            max_features=params["max_features"], min_samples_leaf=params["min_samples_leaf"],
            min_samples_split=params["min_samples_split"], max_depth=params["max_depth"],
            n_draws=n_draws(X.shape[0], params["max_samples"]), n_jobs=self.n_jobs,
            random_state=rng.randint(np.iinfo(np.int32).max))

    def oob_costs(self) -> np.ndarray:
        r"""Out-of-bag costs :math:`c(x_i)` of the training points (m, e), a linear loss
        (rows of points with no out-of-bag tree are NaN)."""
        self._require_linear()
        return self.weighted_sum(self._forest_fit().risk_coef[:, :-1])

    def weighted_sum(self, T, X=None, *, rows=None) -> np.ndarray:
        r"""The forest's weighted sum :math:`\sum_i w_i(x)\, t_i` of values of the training
        points: with :math:`T = \psi'(Y)` of another linear loss, that loss's costs under
        this forest's weights (one forest serves several losses).

        Parameters
        ----------
        T : array-like of shape (m, e)
            One row per training point, in the training order.
        X : array-like or sparse matrix of shape (n, p), optional
            The rows to weigh; ``None``: the training points, out of bag (the rows of points
            that every tree drew are NaN).
        rows : array-like of int, optional
            With ``X=None``, only these training points (indices), out of bag.

        Returns
        -------
        S : ndarray of shape (n, e), or (m, e) out of bag (``(len(rows), e)`` with ``rows``)
        """
        fit = self._forest_fit()
        T = np.asarray(T, dtype=float)
        m = fit.bag.shape[0]
        if T.ndim != 2 or T.shape[0] != m:
            raise ValueError(f"T must have one row per training point, shape ({m}, e); "
                             f"got shape {T.shape}")
        if X is None:
            if rows is not None:
                rows = np.asarray(rows)
                if rows.ndim != 1 or rows.dtype.kind not in "iu" or (
                        len(rows) and not 0 <= rows.min() <= rows.max() < m):
                    raise ValueError(f"rows must be indices of training points in [0, {m})")
                if not len(rows):
                    return np.empty((0, T.shape[1]))
            return fit.oob_mean(T, rows=rows)
        if rows is not None:
            raise ValueError("rows selects training points out of bag; it needs X=None")
        return self._apply(X, lambda B: np.asarray(B @ T), fit, T.shape[1], T.shape[1])

    def oob_scores(self) -> np.ndarray:
        """Out-of-bag label scores of the training points (m, d), as :meth:`predict_scores`
        computes them (rows of points with no out-of-bag tree are NaN)."""
        return oob_scores(self._forest_fit(), self.output_space)

    def fit_honest(self, X, Y, *, scores: bool = False):
        """:meth:`fit`, then the out-of-bag costs (:meth:`oob_costs`) or label scores
        (:meth:`oob_scores`) of every training point: an
        :class:`ecrm.weights.HonestOutputs`."""
        from ecrm.weights._risk import HonestOutputs

        if not scores:
            self._require_linear()
        self.fit(X, Y)
        values = self.oob_scores() if scores else self.oob_costs()
        return HonestOutputs(np.arange(values.shape[0]), values)

    @property
    def honest_score_(self) -> float:
        """Minus the out-of-bag task loss (``oob_loss_``)."""
        return -float(self.oob_loss_)

    def _forest_fit(self) -> ForestFit:
        check_is_fitted(self, "X_fit_")
        fit = self._fit
        assert isinstance(fit, ForestFit)  # set only by fit or the checked loader
        return fit

    def _check_own_state(self, plan: Mapping, training) -> None:
        """The forest (trees, bootstrap counts, leaves) and its out-of-bag summaries."""
        X, Y, m, p, d, n_risk = training
        fit = self._fit
        if not isinstance(fit, ForestFit) or not isinstance(fit.trees, Trees):
            raise TypeError(f"_fit must be a forest fit; found {type(fit).__name__}")
        if fit.n_risk != n_risk:
            raise ValueError(f"_fit has {fit.n_risk} risk targets; the loss needs {n_risk}")
        fit.trees.check(p)
        bag = fit.bag
        if not (isinstance(bag, np.ndarray) and bag.dtype == np.uint16
                and bag.shape == (m, fit.trees.n_trees)):
            raise ValueError(f"_fit.bag must be a uint16 array of shape "
                             f"{(m, fit.trees.n_trees)} (points x trees)")
        draws = n_draws(m, plan["max_samples"])
        if (bag.sum(axis=0, dtype=np.int64) != draws).any():
            raise ValueError(f"every tree's bootstrap sample must draw {draws} points")
        fit.X_train, fit.coef = X, RiskTargets(self.loss)(Y)
        fit.check_leaves()
        loss = self.oob_loss_
        if not (isinstance(loss, float) and (loss >= 0 or np.isnan(loss))):
            raise ValueError(f"oob_loss_ must be a non-negative float (NaN: no point out of "
                             f"bag); found {loss!r}")
        P = self.oob_predictions_
        if not (isinstance(P, np.ndarray) and P.shape == (m, d) and P.dtype == np.float64):
            raise ValueError(f"oob_predictions_ must be a float64 array of shape {(m, d)}")


class ForestECRMCV(ForestECRM):
    """:class:`ForestECRM` with the trees' settings chosen out of bag: the search
    :class:`ecrm.selection.OutOfBagSearch` describes.

    Parameters
    ----------
    search : ecrm.selection.OutOfBagSearch, default=None
        The search's settings (``None``: ``OutOfBagSearch()``), with the grid of the trees'
        other settings (``flavour``, ...; :class:`ForestECRM`'s defaults where it names none).
    scoring : "loss", a metric name or callable, default=None
        Shortcut for ``search.scoring`` (``None``: the search's), as :class:`ecrm.ECRMCV`'s.
    loss, output_space, n_estimators, max_samples, n_split_targets, split_projection, \
n_jobs, random_state :
        As :class:`ForestECRM`.

    Attributes
    ----------
    best_params_ : dict
    best_score_ : float
        The chosen setting's criterion (greater is better).
    cv_results_ : dict of lists
        The layout every search shares (:func:`ecrm.selection.search_results`): ``params``,
        ``mean_score`` (the out-of-bag criterion) and ``rank`` of every setting, in grid
        order, then ``oob_loss`` and ``n_estimators`` (the trees it was judged on; 0 and NaN
        criteria: not judged). The choice (rank 1) is the best of the settings judged on
        ``n_estimators`` trees.
    """

    _fitted_attributes = ForestECRM._fitted_attributes + ("best_params_", "best_score_",
                                                          "cv_results_")

    _parameter_constraints = {**table("scoring", search=Checked(
        "an OutOfBagSearch", bad=("x", OutOfBagSearch(search_estimators=0)),
        function=lambda search: check_search(search, OutOfBagSearch))), **{
            k: v for k, v in ForestECRM._parameter_constraints.items() if k not in GRID_KEYS}}
    #: The plan's checked settings of the search run (its own, with the shortcut).
    _parameter_rules = (Rule("search_plan", lambda scoring, search: effective_search(
        None, scoring, search, OutOfBagSearch).plan(), ("scoring", "search"), as_given=True),)

    def __init__(self, loss, output_space, *, search=None, scoring=None, n_estimators=100,
                 max_samples=None, n_split_targets=64, split_projection="random", n_jobs=None,
                 random_state=None):
        self.loss, self.output_space = loss, output_space
        self.search, self.scoring = search, scoring
        self.n_estimators, self.max_samples = n_estimators, max_samples
        self.n_split_targets, self.split_projection = n_split_targets, split_projection
        self.n_jobs, self.random_state = n_jobs, random_state

    def search_settings(self) -> OutOfBagSearch:
        """The search :meth:`fit` runs: ``search`` (or ``OutOfBagSearch()``) with the
        shortcut ``scoring`` set, on a copy (checked)."""
        return effective_search(None, self.scoring, self.search, OutOfBagSearch)

    @fits_dask
    def fit(self, X, Y) -> ForestECRMCV:
        """Grow one forest per setting (one per group of settings that differ only in
        ``min_samples_split``) and keep the one with the best out-of-bag criterion.

        Parameters
        ----------
        X, Y : as :meth:`ForestECRM.fit`.

        Returns
        -------
        self : ForestECRMCV
        """
        plan = self._check_params()
        X, Y, seen = self._check_training_data(X, Y, None)
        search, rng = plan["search_plan"], check_random_state(self.random_state)
        grid, base = search["param_grid"], {k: v for k, v in self.get_params(
            deep=False).items() if k not in ("search", "scoring")}
        settings = [ForestECRM(**{**base, **s})._check_params() for s in grid]
        score, chosen, fit, predictions, judged = search_forests(
            self, X, Y, settings, search, plan["n_estimators"], rng)
        self._set_fitted(X, Y, seen, _fit=fit, oob_loss_=judged[chosen][1],
                         oob_predictions_=predictions, best_params_=dict(grid[chosen]),
                         best_score_=float(score),
                         cv_results_=results(grid, judged, plan["n_estimators"]))
        return self

    @property
    def honest_score_(self) -> float:
        """The out-of-bag criterion of the chosen setting (``best_score_``)."""
        return float(self.best_score_)

    def _check_own_state(self, plan: Mapping, training) -> None:
        super()._check_own_state(plan, training)
        check_results(self, plan["search_plan"]["param_grid"], plan["n_estimators"])
