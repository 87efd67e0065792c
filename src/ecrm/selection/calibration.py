r"""Monotone calibration of label scores, fitted on their exact leave-one-out values.

A pooled ranking metric (micro AU(PRC)) compares scores across labels, so it rewards scores
that mean the same on every label. :class:`IsotonicCalibration` maps each label's score
:math:`s` through a non-decreasing function :math:`g_j` fitted by isotonic regression of the
label on its score,

.. math:: g_j = \arg\min_{g\ \uparrow} \sum_i \bigl(y_{ij} - g(s_{-i,j})\bigr)^2 ,

where :math:`s_{-i,j}` is the exact leave-one-out score of training point :math:`i` (the model
fitted without it): no training label is scored by a model that saw it, so the calibration
learns how the scores of *unseen* points relate to their labels. Each :math:`g_j` is
piecewise linear between its breakpoints and constant beyond them (scikit-learn's
``IsotonicRegression(out_of_bounds="clip")``, whose fit is repeated step by step for
speed and tested equal). :class:`PlattCalibration` fits a logistic
map per label instead; :func:`choose_calibration` picks none, isotonic or Platt by the
metric of cross-fitted calibrated leave-one-out scores (training data only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn._isotonic import _make_unique
from sklearn.isotonic import isotonic_regression

from ecrm.estimators._parameters import check_parameter

__all__ = ["CALIBRATIONS", "CalibrationChoice", "IsotonicCalibration", "PlattCalibration",
           "choose_calibration", "cross_fitted", "fold_gains", "standard_error"]


def _fit_arrays(S, Y) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels to fit a calibration on, checked: 2-D, one shape, finite scores."""
    S, Y = np.asarray(S, dtype=float), np.asarray(Y, dtype=float)
    if S.ndim != 2 or S.shape != Y.shape:
        raise ValueError(f"S and Y must be 2-D of the same shape; got {S.shape} and {Y.shape}")
    if not np.isfinite(S).all():
        raise ValueError("S contains NaN or infinite scores")
    return S, Y


def _transform_array(S, d: int) -> np.ndarray:
    S = np.asarray(S, dtype=float)
    if S.ndim != 2 or S.shape[1] != d:
        raise ValueError(f"S must have shape (n, {d}); got {S.shape}")
    return S


def _isotonic_thresholds(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``X_thresholds_`` and ``y_thresholds_`` of ``IsotonicRegression(y_min=0, y_max=1)``
    fitted on ``(s, y)``, by the same steps without its per-call checks (about twice as
    fast per label): sort by (s, y), merge equal scores (scikit-learn's
    ``_make_unique``: equal to within float resolution, weighted mean label), pool adjacent
    violators, drop the points that interpolation does not need."""
    order = np.lexsort((y, s))
    x, mean, weight = _make_unique(s[order], y[order], np.ones(len(s)))
    fitted = isotonic_regression(mean, sample_weight=weight, y_min=0.0, y_max=1.0)
    keep = np.ones(len(fitted), dtype=bool)
    keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return x[keep], fitted[keep]


class IsotonicCalibration:
    """One non-decreasing map per label, from its score to its empirical frequency.

    Parameters
    ----------
    breakpoints, values, indptr : ndarray, optional
        The fitted arrays below, to restore a calibration without refitting (a model file
        does); all three or none.

    Attributes
    ----------
    breakpoints_ : ndarray
        The breakpoints of every label's map, concatenated (label ``j``'s are
        ``breakpoints_[indptr_[j]:indptr_[j + 1]]``, increasing).
    values_ : ndarray
        The map's values at the breakpoints, in [0, 1], non-decreasing per label.
    indptr_ : ndarray of shape (d + 1,)

    Examples
    --------
    >>> S = np.array([[0.1], [0.4], [0.35], [0.8]])
    >>> Y = np.array([[0], [1], [0], [1]])
    >>> cal = IsotonicCalibration().fit(S, Y)
    >>> cal.transform(np.array([[0.0], [0.6], [1.0]])).ravel().tolist()
    [0.0, 1.0, 1.0]
    """

    def __init__(self, breakpoints=None, values=None, indptr=None):
        given = [a is not None for a in (breakpoints, values, indptr)]
        if any(given):
            if not all(given):
                raise ValueError("breakpoints, values and indptr go together: give all three "
                                 "or none")
            self.breakpoints_ = np.asarray(breakpoints, dtype=float)
            self.values_ = np.asarray(values, dtype=float)
            self.indptr_ = np.asarray(indptr, dtype=np.intp)
            n = len(self.breakpoints_)
            if (self.indptr_.ndim != 1 or len(self.indptr_) < 1 or self.indptr_[0] != 0
                    or np.any(np.diff(self.indptr_) < 1) or self.indptr_[-1] != n
                    or len(self.values_) != n):
                raise ValueError("indptr must start at 0, increase and end at the common "
                                 "length of breakpoints and values")

    def fit(self, S, Y) -> IsotonicCalibration:
        """Fit one isotonic map per column of ``S`` (the training points' leave-one-out
        scores, (m, d)) to the column of ``Y`` (their 0/1 labels, (m, d)); returns ``self``.
        """
        S, Y = _fit_arrays(S, Y)
        breakpoints, values = zip(*(_isotonic_thresholds(S[:, j], Y[:, j])
                                    for j in range(S.shape[1])), strict=True)
        self.indptr_ = np.concatenate([[0], np.cumsum([len(b) for b in breakpoints])])
        self.breakpoints_ = np.concatenate(breakpoints)
        self.values_ = np.concatenate(values)
        return self

    @property
    def n_labels(self) -> int:
        return len(self.indptr_) - 1

    def transform(self, S) -> np.ndarray:
        """The calibrated scores: column ``j`` of ``S`` through label ``j``'s map.

        Parameters
        ----------
        S : array-like of shape (n, d)

        Returns
        -------
        P : ndarray of shape (n, d), in [0, 1]
        """
        S = _transform_array(S, self.n_labels)
        P = np.empty_like(S)
        for j in range(self.n_labels):
            a, b = self.indptr_[j], self.indptr_[j + 1]
            P[:, j] = np.interp(S[:, j], self.breakpoints_[a:b], self.values_[a:b])
        return P


class PlattCalibration:
    r"""One logistic map per label, :math:`g_j(s) = \sigma(a_j s + b_j)` (Platt, 1999).

    Fitted by Newton's method on all labels at once, on Platt's smoothed targets
    :math:`t_+ = (n_+ + 1)/(n_+ + 2)` and :math:`t_- = 1/(n_- + 2)`, which keep :math:`(a_j,
    b_j)` finite even for a label with no positive (or no negative) training point, plus a
    tiny ridge :math:`10^{-8}(a_j^2 + b_j^2)`:

    .. math:: (a_j, b_j) = \arg\min_{a, b} -\sum_i \bigl[t_{ij} \log \sigma(a s_{-i,j} + b)
              + (1 - t_{ij}) \log(1 - \sigma(a s_{-i,j} + b))\bigr] + 10^{-8}(a^2 + b^2).

    Smooth and strictly monotone (unless :math:`a_j = 0`), where the isotonic map is a
    step function: it extrapolates above the largest training score instead of saturating.

    Parameters
    ----------
    a, b : ndarray of shape (d,), optional
        The fitted slopes and offsets, to restore a calibration without refitting.

    Examples
    --------
    >>> S = np.array([[0.1], [0.4], [0.35], [0.8]])
    >>> Y = np.array([[0], [1], [0], [1]])
    >>> cal = PlattCalibration().fit(S, Y)
    >>> bool(cal.a_[0] > 0), cal.transform(np.array([[0.0], [1.0]])).round(2).ravel().tolist()
    (True, [0.21, 0.88])
    """

    def __init__(self, a=None, b=None):
        if (a is None) != (b is None):
            raise ValueError("a and b go together: give both or neither")
        if a is not None:
            self.a_, self.b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            if self.a_.ndim != 1 or self.a_.shape != self.b_.shape:
                raise ValueError(f"a and b must be 1-D of one length; got {self.a_.shape} "
                                 f"and {self.b_.shape}")

    def fit(self, S, Y, *, max_iter: int = 100) -> PlattCalibration:
        """Fit one logistic map per column of ``S`` to the column of ``Y``, as
        :meth:`IsotonicCalibration.fit`, by at most ``max_iter`` Newton steps (each halves its
        step until the objective decreases); returns ``self``."""
        S, Y = _fit_arrays(S, Y)
        n_pos = Y.sum(axis=0)
        n_neg = len(Y) - n_pos
        T = np.where(Y > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
        ridge = 1e-8
        a = np.zeros(S.shape[1])
        b = np.log((n_pos + 1) / (n_neg + 1))

        def objective(a, b):
            Z = S * a + b
            # -[t log sigma(z) + (1 - t) log(1 - sigma(z))] = log(1 + e^z) - t z
            return (np.logaddexp(0.0, Z) - T * Z).sum(axis=0) + ridge * (a * a + b * b)

        f = objective(a, b)
        for _ in range(max_iter):
            P = 0.5 * (1 + np.tanh(0.5 * (S * a + b)))  # sigma, without overflow
            R, W = P - T, P * (1 - P)
            ga, gb = (R * S).sum(axis=0) + 2 * ridge * a, R.sum(axis=0) + 2 * ridge * b
            haa = (W * S * S).sum(axis=0) + 2 * ridge
            hab = (W * S).sum(axis=0)
            hbb = W.sum(axis=0) + 2 * ridge
            det = haa * hbb - hab * hab
            da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
            step = np.ones_like(a)
            for _ in range(30):  # halve the step where the objective did not decrease
                trial = objective(a - step * da, b - step * db)
                worse = trial > f + 1e-12 * np.abs(f)
                if not worse.any():
                    break
                step[worse] *= 0.5
            a, b = a - step * da, b - step * db
            f_new = objective(a, b)
            done = np.all(np.abs(f - f_new) <= 1e-10 * np.maximum(1.0, np.abs(f_new)))
            f = f_new
            if done:
                break
        self.a_, self.b_ = a, b
        return self

    @property
    def n_labels(self) -> int:
        return len(self.a_)

    def transform(self, S) -> np.ndarray:
        r"""The calibrated scores :math:`\sigma(a_j s_j + b_j)`.

        Parameters
        ----------
        S : array-like of shape (n, d)

        Returns
        -------
        P : ndarray of shape (n, d), in (0, 1)
        """
        S = _transform_array(S, self.n_labels)
        return 0.5 * (1 + np.tanh(0.5 * (S * self.a_ + self.b_)))


#: The calibrations by name (``None``: the scores as they are; ``"auto"`` chooses: the
#: names of ``ecrm.estimators._parameters.CONSTRAINTS["calibration"]``).
CALIBRATIONS: dict[str, type] = {"isotonic": IsotonicCalibration, "platt": PlattCalibration}


def cross_fitted(name: str, S, Y, folds, consistent: Callable) -> np.ndarray:
    """The scores ``S`` calibrated by ``name`` *cross-fitted*: the rows of each fold (``folds``:
    a fold number per row) through the map fitted on the other folds' scores and labels, then
    ``consistent``. No row goes through a map that saw its own label, so the result is as
    honest as ``S`` (a map fitted on all the rows would flatter them: isotonic regression
    nearly interpolates each label's scores)."""
    C = np.empty_like(S, dtype=float)
    for k in np.unique(folds):
        train, held = folds != k, folds == k
        C[held] = CALIBRATIONS[name]().fit(S[train], Y[train]).transform(S[held])
    return consistent(C)


@dataclass(frozen=True)
class CalibrationChoice:
    """The result of :func:`choose_calibration`.

    Attributes
    ----------
    name : str or None
        The chosen calibration (``None``: none).
    calibration : IsotonicCalibration, PlattCalibration or None
        Fitted on all the leave-one-out scores.
    scores : dict
        The cross-fitted metric of every option tried (``"none"``, ``"isotonic"``,
        ``"platt"``) and, when a calibration scored best, ``"standard_error"`` of its gain;
        empty when a single option was given.
    """

    name: str | None
    calibration: IsotonicCalibration | PlattCalibration | None
    scores: dict = field(default_factory=dict)


def fold_gains(metric: Callable, Y, new, old, folds) -> np.ndarray:
    """``metric(Y, new) - metric(Y, old)`` on the rows of each fold (``folds``: a fold number
    per row), in the order of the sorted fold numbers."""
    return np.array([metric(Y[folds == k], new[folds == k]) - metric(Y[folds == k], old[folds == k])
                     for k in np.unique(folds)])


def standard_error(gains) -> float:
    """One standard error of the mean of per-fold gains: their spread over the root of their
    number (the threshold of the one-standard-error rule)."""
    gains = np.asarray(gains, dtype=float)
    return float(np.std(gains, ddof=1) / np.sqrt(len(gains)))


def choose_calibration(method, S, Y, *, metric: Callable, consistent: Callable,
                       n_folds: int = 5, random_state=None) -> CalibrationChoice:
    r"""Fit the calibration ``method`` on leave-one-out scores, or (``"auto"``) choose it.

    ``"auto"`` compares, on the training points only, the metric of three versions of their
    leave-one-out scores ``S``: as they are, and calibrated by isotonic regression or by
    Platt's logistic map *cross-fitted*: the points are split into ``n_folds`` random folds
    and each fold's scores go through a map fitted on the other folds' (then ``consistent``,
    the output space's consistency step, as at prediction). No score is calibrated by a map
    that saw its own label, so the comparison is honest. The best option (ties: none, then
    Platt, then isotonic) is refitted on all the points if it beats the scores as they are by
    more than one standard error of its gain (the spread of the per-fold gains over
    :math:`\sqrt{n_{folds}}`); otherwise the scores stay as they are: a calibration whose gain
    is within its own noise is not worth its variance.

    Parameters
    ----------
    method : None, "isotonic", "platt" or "auto"
    S : ndarray of shape (m, d)
        Exact leave-one-out scores of the training points (already consistent).
    Y : ndarray of shape (m, d)
        Their labels.
    metric : callable
        ``metric(Y, scores) -> float``, greater is better.
    consistent : callable
        ``consistent(scores) -> scores``, applied after a calibration.
    n_folds : int, default=5
    random_state : int, RandomState instance or None
        Draws the folds.

    Returns
    -------
    CalibrationChoice

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> S = rng.random((200, 3)); Y = rng.random((200, 3)) < S * [0.2, 0.5, 0.9]
    >>> choice = choose_calibration("auto", S, Y, metric=lambda Y, S: float(
    ...     np.mean(S[Y]) - np.mean(S[~Y])), consistent=lambda S: S, random_state=0)
    >>> {"none", "isotonic", "platt"} <= set(choice.scores), choice.name
    (True, 'isotonic')
    """
    from sklearn.utils import check_random_state

    if check_parameter("calibration", method) is None:
        return CalibrationChoice(None, None)
    if method in CALIBRATIONS:
        return CalibrationChoice(method, CALIBRATIONS[method]().fit(S, Y))
    m = len(S)
    folds = check_random_state(random_state).permutation(m) % max(2, min(n_folds, m))
    scores = {"none": float(metric(Y, S))}
    gains = {}  # per fold: the calibrated metric minus the uncalibrated one
    for name in ("platt", "isotonic"):
        C = cross_fitted(name, S, Y, folds, consistent)
        scores[name] = float(metric(Y, C))
        gains[name] = fold_gains(metric, Y, C, S, folds)
    best = max(scores, key=scores.__getitem__)  # the first of equals: none, platt, isotonic
    if best == "none":
        return CalibrationChoice(None, None, scores)
    # one standard error: a calibration must beat the scores as they are by more than the
    # noise of its fold-to-fold gains, or the choice is within its own noise
    spread = standard_error(gains[best])
    scores["standard_error"] = spread
    if scores[best] - scores["none"] <= spread:
        return CalibrationChoice(None, None, scores)
    return CalibrationChoice(best, CALIBRATIONS[best]().fit(S, Y), scores)
