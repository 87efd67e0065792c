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
``IsotonicRegression(out_of_bounds="clip")``).
"""

from __future__ import annotations

import numpy as np
from sklearn.isotonic import IsotonicRegression

__all__ = ["IsotonicCalibration"]


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
        """Fit one isotonic map per column of ``S`` (scores) to the column of ``Y`` (0/1).

        Parameters
        ----------
        S : array-like of shape (m, d)
            Leave-one-out scores of the training points.
        Y : array-like of shape (m, d)
            Their labels.

        Returns
        -------
        self
        """
        S, Y = np.asarray(S, dtype=float), np.asarray(Y, dtype=float)
        if S.ndim != 2 or S.shape != Y.shape:
            raise ValueError(f"S and Y must be 2-D of the same shape; got {S.shape} and "
                             f"{Y.shape}")
        if not np.isfinite(S).all():
            raise ValueError("S contains NaN or infinite scores")
        breakpoints, values = [], []
        for j in range(S.shape[1]):
            iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
            iso.fit(S[:, j], Y[:, j])
            breakpoints.append(iso.X_thresholds_)
            values.append(iso.y_thresholds_)
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
        S = np.asarray(S, dtype=float)
        if S.ndim != 2 or S.shape[1] != self.n_labels:
            raise ValueError(f"S must have shape (n, {self.n_labels}); got {S.shape}")
        P = np.empty_like(S)
        for j in range(self.n_labels):
            a, b = self.indptr_[j], self.indptr_[j + 1]
            P[:, j] = np.interp(S[:, j], self.breakpoints_[a:b], self.values_[a:b])
        return P
