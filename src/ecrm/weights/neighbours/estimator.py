r"""ECRM with nearest-neighbour weights: the conditional risk estimated by the k nearest
training points.

:class:`NeighboursECRM` estimates the conditional risk with uniform weights on the :math:`k`
training points nearest to :math:`x` (:mod:`ecrm.weights.neighbours._fit`),

.. math:: \hat R(y|x) = \sum_{i=1}^m w_i(x)\, \ell(y, y_i)
          = \frac1k \sum_{i \in N_k(x)} \ell(y, y_i),

and predicts its exact minimiser over the output space. For a linear loss
:math:`\ell(y, y') = \langle \phi(y), \psi(y') \rangle + \mathrm{const}(y')` the costs are the
neighbours' mean embedding :math:`c(x) = \frac1k \sum_{i \in N_k(x)} \psi(y_i)`; the label
scores are the neighbours' mean output :math:`\frac1k \sum_{i \in N_k(x)} y_i`; another loss
hands the weights to its risk minimiser. The honest criterion is the exact leave-one-out one:
each training point weighted by its :math:`k` nearest *other* points, which is the fit on the
other :math:`m - 1` points when distances do not tie. :class:`NeighboursECRMCV` chooses
:math:`k` by it (:mod:`ecrm.weights.neighbours._search`).

Both fit on Dask arrays chunked by rows (:mod:`ecrm.weights.neighbours._dask`): the model
keeps its training rows, so they are gathered on the client, and the leave-one-out queries run
per row chunk on the workers; prediction on a Dask array is lazy, per row chunk.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._parameters import CONSTRAINTS, Checked, Number, Rule, table, vocabulary
from ecrm.losses.base import LinearLoss
from ecrm.selection._criteria import check_scoring
from ecrm.weights._risk import HonestOutputs, RiskEstimator
from ecrm.weights.kernel._solvers.rows import RiskTargets
from ecrm.weights.neighbours._dask import fits_dask
from ecrm.weights.neighbours._fit import NeighboursFit
from ecrm.weights.neighbours._search import (
    check_grid,
    check_results,
    honest_values,
    results,
    search_neighbours,
)

__all__ = ["METRICS", "SPARSE_METRICS", "NeighboursECRM", "NeighboursECRMCV"]

#: The distances the neighbours are found by (scikit-learn's names, none needing settings; the
#: vocabulary of the parameter table, which the command line reads without this module).
METRICS = vocabulary("metric")
#: Those scikit-learn computes on sparse inputs.
SPARSE_METRICS = ("euclidean", "manhattan", "cosine")


def _check_n_jobs(value):
    if value is None or (isinstance(value, numbers.Integral)
                         and not isinstance(value, (bool, np.bool_)) and value != 0):
        return None if value is None else int(value)
    raise ValueError(f"n_jobs must be None or a nonzero integer (joblib's n_jobs); got "
                     f"{value!r}")


_N_JOBS = Checked("None or a nonzero integer (joblib's n_jobs)", bad=("2", 0, 1.5, True),
                  function=_check_n_jobs)
_METRIC = CONSTRAINTS["metric"]


class NeighboursECRM(RiskEstimator):
    r"""Structured prediction by conditional risk minimisation with k-nearest-neighbour
    weights.

    Fitting keeps the training rows and builds scikit-learn's
    :class:`~sklearn.neighbors.NearestNeighbors` index on them; see the module docstring for
    the weights. Distances depend on the features' scales: standardise them first (e.g. a
    :class:`~sklearn.preprocessing.StandardScaler` in a pipeline).

    ``fit`` and ``fit_honest`` also take Dask arrays chunked by rows (a loss with a linear
    form): the rows are gathered, since the model keeps them, and the training points'
    leave-one-out neighbour queries run per row chunk on the workers
    (:mod:`ecrm.weights.neighbours._dask`). Prediction on a Dask array is lazy and per row
    chunk.

    Parameters
    ----------
    loss : ecrm.losses.Loss
    output_space : ecrm.spaces.base.OutputSpace
    n_neighbors : int >= 1, default=10
        :math:`k`. A ``k`` over the number ``m`` of training points is refused at fit
        (naming both); :meth:`fit_honest` needs ``k < m``.
    metric : {"euclidean", "manhattan", "chebyshev", "cosine", "sqeuclidean", "canberra", \
"braycurtis"}, default="euclidean"
        The distance (scikit-learn's metric of the same name); sparse inputs take
        ``"euclidean"``, ``"manhattan"`` or ``"cosine"``.
    n_jobs : int, default=None
        Parallel neighbour queries (scikit-learn's ``n_jobs``).

    Attributes
    ----------
    risk_targets_ : ndarray of shape (m, e)
        :math:`\psi(Y)` of the training outputs, which the weights average (a linear loss).
    X_fit_, Y_fit_, label_names_ : as :class:`ecrm.ECRM`.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import Hierarchy, NeighboursECRM
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.array([[0.0], [0.1], [0.2], [1.0], [1.1], [1.2]])
    >>> Y = np.array([[1, 1, 0]] * 3 + [[1, 0, 1]] * 3)
    >>> model = NeighboursECRM(HammingLoss(), h, n_neighbors=3).fit(X, Y)
    >>> model.predict([[0.05], [1.05]])
    array([[1., 1., 0.],
           [1., 0., 1.]])
    >>> model.predict_scores([[0.58]])  # neighbours 0.2, 1.0 and 0.1
    array([[1.        , 0.66666667, 0.33333333]])
    """

    _fitted_attributes = tuple(
        name for name in RiskEstimator._fitted_attributes if name != "kernel_params_")

    _parameter_constraints = table(n_neighbors=Number("int", {"low": 1}), metric=_METRIC,
                                   n_jobs=_N_JOBS)

    _input_kernel = None  # distances read the features as they are
    _fits_dask = True  # gathered; the leave-one-out queries per chunk (neighbours._dask)

    def __init__(self, loss, output_space, *, n_neighbors=10, metric="euclidean", n_jobs=None):
        self.loss = loss
        self.output_space = output_space
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.n_jobs = n_jobs

    @fits_dask
    def fit(self, X, Y):
        """Keep the training rows and their targets, and index the rows.

        Parameters
        ----------
        X : array-like, sparse matrix or Dask array of shape (m, p)
            A Dask array (chunked by rows, with a loss of linear form) is checked, then
            gathered: the model keeps its training rows in memory, as prediction searches
            them and a model file stores them.
        Y : array-like or Dask array of shape (m, d)
            Training outputs, in the output space (as :meth:`ecrm.ECRM.fit` takes them); a
            Dask ``Y`` has the row chunks of ``X``.

        Returns
        -------
        self : NeighboursECRM
        """
        plan = self._check_params()
        X, Y, seen = self._check_training_data(X, Y, None)
        k = plan["n_neighbors"]
        if k > X.shape[0]:
            raise ValueError(f"n_neighbors={k} exceeds the {X.shape[0]} training samples: "
                             f"give n_neighbors <= {X.shape[0]}")
        self._set_fitted(X, Y, seen, _fit=self._neighbours(X, Y, k, plan["metric"]))
        return self

    def _check_training_data(self, X, Y, kernel):
        X, Y, seen = super()._check_training_data(X, Y, kernel)
        if sp.issparse(X) and self.metric not in SPARSE_METRICS:
            raise ValueError(f"metric={self.metric!r} takes dense inputs; for a sparse X give "
                             f"metric {' or '.join(map(repr, SPARSE_METRICS))}")
        return X, Y, seen

    def _neighbours(self, X, Y, k: int, metric: str) -> NeighboursFit:
        """The fit of ``k`` neighbours: the targets of the training outputs, the index."""
        targets = RiskTargets(self.loss)(Y)
        n_risk = targets.shape[1] - Y.shape[1] if isinstance(self.loss, LinearLoss) else 0
        fit = NeighboursFit(k, metric, n_risk, X_train=X, coef=targets, n_jobs=self.n_jobs)
        fit.index()
        return fit

    @fits_dask
    def fit_honest(self, X, Y, *, scores: bool = False) -> HonestOutputs:
        """:meth:`fit`, then the exact leave-one-out costs or label scores of every training
        point (its ``k`` nearest other points' mean): an
        :class:`ecrm.weights.HonestOutputs`. On Dask arrays the training points' neighbour
        queries run per row chunk on the workers."""
        if not scores:
            self._require_linear()
        self.fit(X, Y)
        fit = self._neighbours_fit()
        values = honest_values(fit.loo_neighbours(), fit.coef, fit.n_risk, self.output_space,
                               scores)
        return HonestOutputs(np.arange(values.shape[0]), values)

    def _neighbours_fit(self) -> NeighboursFit:
        check_is_fitted(self, "X_fit_")
        fit = self._fit
        assert isinstance(fit, NeighboursFit)  # set only by fit or the checked loader
        return fit

    def _check_own_state(self, plan: Mapping, training) -> None:
        """The fit's own settings: ``k`` and the metric of the parameters, the loss's
        targets; the index is rebuilt from the training rows."""
        self._check_fit_state(training, plan["n_neighbors"], plan["metric"])

    def _check_fit_state(self, training, k: int, metric: str) -> None:
        X, Y, m, p, d, n_risk = training
        fit = self._fit
        if not isinstance(fit, NeighboursFit):
            raise TypeError(f"_fit must be a neighbours fit; found {type(fit).__name__}")
        if not (type(fit.n_neighbors) is int and fit.n_neighbors == k <= m):
            raise ValueError(f"_fit.n_neighbors must be {k}, at most m={m}; found "
                             f"{fit.n_neighbors!r}")
        if not (isinstance(fit.metric, str) and fit.metric == metric):
            raise ValueError(f"_fit.metric must be {metric!r}; found {fit.metric!r}")
        if not (type(fit.n_risk) is int and fit.n_risk == n_risk):
            raise ValueError(f"_fit has {fit.n_risk!r} risk targets; the loss needs {n_risk}")
        if sp.issparse(X) and metric not in SPARSE_METRICS:
            raise ValueError(f"metric={metric!r} takes dense inputs; X_fit_ is sparse")
        fit.X_train, fit.coef, fit.n_jobs, fit._index = X, RiskTargets(self.loss)(Y), \
            self.n_jobs, None


class NeighboursECRMCV(NeighboursECRM):
    r""":class:`NeighboursECRM` with :math:`k` chosen by the exact leave-one-out criterion.

    Every ``k`` of the grid below the number ``m`` of training points is judged on the
    training points' leave-one-out weights (their ``k`` nearest other points; one neighbour
    query of the largest ``k`` serves the grid): minus the mean task loss of the exact
    oracle on the leave-one-out costs, or a ranking metric of the leave-one-out label scores
    (:mod:`ecrm.selection._criteria`, as :class:`ecrm.ECRMCV` and :class:`ecrm.ForestECRMCV`
    judge theirs). The best ``k`` (the smaller on ties) is kept; nothing is refitted.

    Parameters
    ----------
    loss, output_space, metric, n_jobs :
        As :class:`NeighboursECRM`.
    n_neighbors : sequence of int >= 1, default=(1, 3, 5, 7, 10, 15, 20, 30, 50)
        The grid of ``k`` (sorted, repeats dropped; values ``>= m`` are left out at fit, and
        a grid with none below ``m`` is refused).
    scoring : "loss", "micro_auprc", "macro_auprc", "lrap" or callable, default="loss"
        The criterion, as :class:`ecrm.selection.LeaveOneOutSearch`'s.

    Attributes
    ----------
    n_neighbors_ : int
        The chosen ``k``.
    best_params_ : dict
        ``{"n_neighbors": n_neighbors_}``.
    best_score_ : float
        Its criterion (greater is better); :attr:`honest_score_`.
    loo_loss_ : float
        Its mean leave-one-out task loss.
    cv_results_ : dict of lists
        The layout every search shares (:func:`ecrm.selection.search_results`): ``params``,
        ``mean_score`` and ``rank`` of every ``k`` judged, then ``loo_loss``.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import Hierarchy, NeighboursECRMCV
    >>> from ecrm.losses import HammingLoss
    >>> h = Hierarchy([("a", "a1"), ("a", "a2")])
    >>> X = np.array([[0.0], [0.1], [0.2], [1.0], [1.1], [1.2]])
    >>> Y = np.array([[1, 1, 0]] * 3 + [[1, 0, 1]] * 3)
    >>> model = NeighboursECRMCV(HammingLoss(), h, n_neighbors=(1, 2, 5)).fit(X, Y)
    >>> model.n_neighbors_, model.cv_results_["loo_loss"]
    (1, [0.0, 0.0, 2.0])
    """

    _fitted_attributes = NeighboursECRM._fitted_attributes + (
        "n_neighbors_", "best_params_", "best_score_", "loo_loss_", "cv_results_")

    _parameter_constraints = table(
        "scoring", n_neighbors=Checked("a non-empty sequence of integers >= 1",
                                       bad=((), (0, 3), "x", 3, (2.5,)), function=check_grid),
        metric=_METRIC, n_jobs=_N_JOBS)
    #: The plan's scoring metric (``None``: the task loss).
    _parameter_rules = (Rule("metric_of_scores", check_scoring, ("scoring",)),)

    def __init__(self, loss, output_space, *, n_neighbors=(1, 3, 5, 7, 10, 15, 20, 30, 50),
                 metric="euclidean", scoring="loss", n_jobs=None):
        super().__init__(loss, output_space, n_neighbors=n_neighbors, metric=metric,
                         n_jobs=n_jobs)
        self.scoring = scoring

    @fits_dask
    def fit(self, X, Y):
        """Judge every ``k`` of the grid below ``m`` on the exact leave-one-out criterion
        and keep the best.

        Parameters
        ----------
        X, Y : as :meth:`NeighboursECRM.fit` (Dask arrays too: the training points'
            neighbour queries then run per row chunk on the workers).

        Returns
        -------
        self : NeighboursECRMCV
        """
        plan = self._check_params()
        X, Y, seen = self._check_training_data(X, Y, None)
        grid = self._grid(plan["n_neighbors"], X.shape[0])
        fit = self._neighbours(X, Y, grid[-1], plan["metric"])
        judged = search_neighbours(fit.index(), X, fit.coef, fit.n_risk, self.loss,
                                   self.output_space, Y, grid, plan["metric_of_scores"])
        table_ = results(grid, judged)
        best = table_["rank"].index(1)
        fit.n_neighbors = grid[best]  # the index answers any k up to the grid's largest
        self._set_fitted(X, Y, seen, _fit=fit, n_neighbors_=int(grid[best]),
                         best_params_={"n_neighbors": int(grid[best])},
                         best_score_=float(judged[best][0]), loo_loss_=float(judged[best][1]),
                         cv_results_=table_)
        return self

    @staticmethod
    def _grid(values: tuple[int, ...], m: int) -> tuple[int, ...]:
        grid = tuple(k for k in values if k < m)
        if not grid:
            raise ValueError(f"every n_neighbors of the grid {list(values)} is at least the "
                             f"{m} training samples: leave-one-out needs k < m")
        return grid

    def _check_own_state(self, plan: Mapping, training) -> None:
        grid = self._grid(plan["n_neighbors"], training.m)
        check_results(self, grid)
        self._check_fit_state(training, self.n_neighbors_, plan["metric"])
