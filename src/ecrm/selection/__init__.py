r"""Model selection by honest criteria: the exact leave-one-out search, and choosing
between weight families.

:func:`loo_search` is the exact leave-one-out search of :class:`ecrm.ECRMCV`
(:class:`LeaveOneOutSearch`: the same solvers, grids, random draws and cached
eigendecompositions) for ridge regressions of any targets :math:`T` (m, c), judged by the mean
:math:`\frac1{|S|} \sum_{i \in S} \ell(t_i, \hat t_{-i}(x_i))` of any per-point loss of
their exact leave-one-out predictions over the training points :math:`S` (or ``loo_samples``
of them). ECRM's own risk regressions are the case :math:`T = [\psi(Y), \mathrm{const}(Y)]`
with the task loss of the oracle's outputs; a baseline that regresses something else (e.g.
label positions, ranked by Kendall's distance) is chosen by exactly the same search.

Every family's own search ends with a criterion that no training point influenced for
itself: :class:`ecrm.ECRMCV` the exact leave-one-out task loss (or a metric of the
leave-one-out label scores), :class:`ecrm.ForestECRMCV` the out-of-bag task loss (or the
same metric of the out-of-bag label scores; :class:`OutOfBagSearch`). Every family reports
it as ``honest_score_`` (greater is better; :class:`ecrm.weights.RiskEstimator`), so
:func:`select_honestly` fits each candidate once and keeps the best, nothing refitted and
nothing judged on a test set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_array, check_random_state

from ecrm.selection._loo import SearchOutcome
from ecrm.selection._search import (
    LeaveOneOutSearch,
    OutOfBagSearch,
    effective_search,
    search_results,
)
from ecrm.spaces.base import OutputSpace
from ecrm.weights._fit import Criterion, Outcome, RiskFit
from ecrm.weights.kernel._kernels import check_kernel_input, check_kernel_params
from ecrm.weights.kernel._solvers._backend import get_backend
from ecrm.weights.kernel._solvers.choice import check_solver, check_solver_params
from ecrm.weights.kernel._solvers.rows import RiskTargets

__all__ = ["HonestChoice", "LeaveOneOutChoice", "LeaveOneOutSearch", "OutOfBagSearch",
           "loo_search", "search_results", "select_honestly"]


# -- the exact leave-one-out search of ridge regressions ---------------------------------------
class _Targets(RiskTargets):
    """The regression targets are the given values themselves (no embedding of a loss); as
    the search's output space, only their float check (``validate``) is read."""

    def __init__(self):
        self.loss = None

    @staticmethod
    def validate(T) -> np.ndarray:
        return np.asarray(T, dtype=float)

    def risk(self, Y) -> np.ndarray:
        return self.validate(Y)

    __call__ = risk


class _MeanLoss(Criterion):
    """Minus the mean of ``loss(T_rows, P)`` (one value per point): a sum over the points, so
    every solver evaluates it (the primal ones block by block). Its :meth:`predict` hands back
    the leave-one-out predictions themselves."""

    decomposable = True

    def __init__(self, loss: Callable):
        self.loss = loss

    def block_total(self, P: np.ndarray, Y: np.ndarray, where: str) -> float:
        values = np.asarray(self.loss(Y, P), dtype=float)
        if values.shape != (len(Y),):
            raise ValueError(f"loss(T, P) must give one value per point, shape ({len(Y)},); "
                             f"got shape {values.shape}")
        return float(values.sum())

    def evaluate(self, P: np.ndarray, Y: np.ndarray, where: str) -> Outcome:
        return self.from_total(self.block_total(P, Y, where), len(Y))

    def predict(self, P: np.ndarray, where: str) -> np.ndarray:
        return np.array(P, dtype=float)


@dataclass(frozen=True)
class LeaveOneOutChoice:
    """The outcome of :func:`loo_search`.

    Attributes
    ----------
    kernel_params : dict
        The selected kernel settings (``kernel``, ``gamma``, ``degree``, ``coef0``).
    alpha : float
    fit_intercept : bool
    best_score : float
        Minus the selected candidate's mean leave-one-out loss (greater is better).
    cv_results : dict
        Every evaluated candidate, as :attr:`ecrm.ECRMCV.cv_results_`: ``params``,
        ``mean_score`` (minus the mean leave-one-out loss), ``rank`` (1 = best), ``alpha``,
        ``fit_intercept``, ``mean_loss`` and ``added``.
    kernel_search_results : dict or None
        The same table of the first stage, when ``kernel_subsample`` chose the kernel.
    loo_rows : ndarray of int
        The training points the criterion was averaged over.
    fit : RiskFit
        The selected candidate refitted on every training point (:meth:`predict`).
    """

    kernel_params: dict
    alpha: float
    fit_intercept: bool
    best_score: float
    cv_results: dict = field(repr=False)
    kernel_search_results: dict | None = field(repr=False)
    loo_rows: np.ndarray = field(repr=False)
    fit: RiskFit = field(repr=False)
    _search: SearchOutcome = field(repr=False)
    _criterion: Criterion = field(repr=False)
    _n_features: int = field(repr=False)

    @cached_property
    def loo_predictions(self) -> np.ndarray:
        """The selected candidate's exact leave-one-out predictions of the targets of
        :attr:`loo_rows`, shape (len(loo_rows), c) (computed on first use)."""
        search = self._search
        return search.basis.loo_predictions(self._criterion, search.trial, search.rows)

    def predict(self, X) -> np.ndarray:
        """The refitted regressions' predictions of the targets, shape (n, c).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
            (The kernel block against the training points, (n, m), for a precomputed kernel.)
        """
        kernel = self.kernel_params["kernel"]
        X = check_kernel_input(X, kernel, n_train=self.fit.n_columns if kernel ==
                               "precomputed" else None, n_features=self._n_features)
        return self.fit.block(X) @ self.fit.risk_coef + self.fit.risk_intercept


def loo_search(X, T, loss: Callable, *, alphas=None, kernel="rbf", gamma=None, degree=3,
               coef0=1, search=None, solver="auto", memory_budget=None,
               random_state=None) -> LeaveOneOutChoice:
    r"""Ridge regressions of the targets ``T``, the kernel, ``alpha`` and the intercept chosen
    by the exact leave-one-out mean of ``loss``.

    The search of :class:`ecrm.ECRMCV` (:class:`LeaveOneOutSearch`, which states the formula
    and the ties; the same solvers): with the same ``random_state`` the random draws follow
    :class:`ecrm.ECRMCV`'s, and a shared ``memory`` of the search caches the same
    eigendecompositions, so a baseline searched here shares them with ECRM's models.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (m, p)
        Training inputs (the training Gram matrix, (m, m), if ``kernel="precomputed"``).
    T : array-like of shape (m, c) or (m,)
        The regression targets (a vector is one column).
    loss : callable
        ``loss(T_rows, P) -> ndarray of shape (n,)``: the loss of each point's leave-one-out
        predictions ``P`` (n, c) against its targets ``T_rows`` (n, c); smaller is better.
        It may be called on blocks of rows (the primal solvers), so it must be a sum of
        per-point values.
    alphas, kernel, gamma, degree, coef0, search, solver, memory_budget, random_state
        As in :class:`ecrm.ECRMCV`; the ridge term is ``m * alpha``. The search's
        ``scoring`` stays ``"loss"`` (``loss`` is the criterion) and its ``calibration``
        ``None``.

    Returns
    -------
    choice : LeaveOneOutChoice

    Examples
    --------
    Kernel ridge of label positions, chosen by the leave-one-out number of misordered
    label pairs:

    >>> import numpy as np
    >>> X = np.linspace(0, 1, 30)[:, None]
    >>> T = np.column_stack([X[:, 0], 1 - X[:, 0]])
    >>> def misordered(T, P):
    ...     return (np.sign(P[:, 0] - P[:, 1]) != np.sign(T[:, 0] - T[:, 1])).astype(float)
    >>> choice = loo_search(X, T, misordered, alphas=[1e-3, 1e-1],
    ...                     search=LeaveOneOutSearch(fit_intercept=True))
    >>> choice.best_score  # no pair misordered: the tie goes to the stronger ridge
    -0.0
    >>> choice.alpha, choice.loo_predictions.shape, choice.predict([[0.9]]).shape
    (0.1, (30, 2), (1, 2))
    """
    own = check_kernel_params(kernel, gamma, degree, coef0)
    run = effective_search(alphas, None, search)
    plan = run.plan()
    if plan["metric"] is not None or plan["calibration"] is not None:
        raise ValueError("loo_search judges by its loss: leave the search's scoring 'loss' "
                         "and its calibration None")
    if not callable(loss):
        raise TypeError(f"loss must be a callable loss(T, P); got {type(loss).__name__}")
    check_solver(solver, memory_budget=memory_budget)
    X = check_kernel_input(X, own["kernel"])
    T = check_array(T, dtype=np.float64, ensure_2d=False, input_name="T")
    T = T.reshape(-1, 1) if T.ndim == 1 else T
    m = X.shape[0]
    if T.shape[0] != m:
        raise ValueError(f"X and T have different numbers of rows: {m} and {T.shape[0]}")
    choice = check_solver_params(solver, memory_budget, m=m, p=X.shape[1],
                                 kernel=own["kernel"], cv=True)
    targets = _Targets()
    criterion = _MeanLoss(loss)
    search, stage1 = run.run(X, T, targets, space=cast(OutputSpace, targets),
                             kernel_params=own, solver=choice, criterion=criterion,
                             random_state=check_random_state(random_state),
                             backend=get_backend(X))
    best = search.best
    fit = search.basis.refit(search.trial)
    fit.check_finite(best.kernel_params, best.alpha)
    return LeaveOneOutChoice(
        best.kernel_params, best.alpha, best.fit_intercept, best.score, search.table(),
        None if stage1 is None else stage1.table(), search.rows, fit, search, criterion,
        X.shape[1])


@dataclass
class HonestChoice:
    """The outcome of :func:`select_honestly`.

    Attributes
    ----------
    best_estimator : estimator
        The fitted candidate with the highest ``honest_score_`` (the earlier one on ties).
    best_index : int
    scores : list of float
        Every candidate's ``honest_score_``, in the order given.
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
        Unfitted :class:`ecrm.ECRMCV` / :class:`ecrm.ForestECRMCV` /
        :class:`ecrm.MixedRiskECRM` (any family with ``scoring`` and, once fitted,
        ``honest_score_``), all with the same ``scoring``; they are cloned, never fitted in
        place.
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
    # the scoring each honest criterion follows: a search's own, else ``scoring``
    scorings = {repr(c.search_settings().scoring if hasattr(c, "search_settings")
                     else getattr(c, "scoring", None)) for c in candidates}
    if len(scorings) != 1 or "None" in scorings:
        raise ValueError(f"the candidates must share one scoring (their honest_score_ then "
                         f"compare); got {sorted(scorings)}")
    fitted = [clone(c).fit(X, Y) for c in candidates]
    scores = [float(est.honest_score_) for est in fitted]
    best = max(range(len(scores)), key=lambda k: (scores[k], -k))
    return HonestChoice(fitted[best], best, scores, fitted)
