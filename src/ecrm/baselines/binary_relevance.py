"""Binary relevance: one classifier per label, made consistent bottom-up."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted


class BinaryRelevance(BaseEstimator):
    """One binary classifier per label; a positive label switches on all its ancestors.

    This is the paper's BR-SVM baseline when ``estimator`` is an SVM (``LinearSVC`` for
    linear kernels, ``SVC`` for RBF). Labels that are constant in the training data are
    predicted as that constant.

    Parameters
    ----------
    estimator : scikit-learn classifier
        Cloned and fitted once per label.
    hierarchy : ecrm.Hierarchy or None
        If given, predictions are closed under ancestors (bottom-up imputation).
    """

    def __init__(self, estimator, hierarchy=None):
        self.estimator = estimator
        self.hierarchy = hierarchy

    def fit(self, X, Y):
        """Fit one clone of ``estimator`` per column of ``Y``."""
        Y = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y, dtype=float)
        if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y must have shape ({X.shape[0]}, d); got {Y.shape}")
        self.estimators_ = []
        for j in range(Y.shape[1]):
            column = Y[:, j]
            if np.all(column == column[0]):
                self.estimators_.append(float(column[0]))
            else:
                self.estimators_.append(clone(self.estimator).fit(X, column))
        return self

    def predict(self, X) -> np.ndarray:
        """Per-label predictions, closed under the hierarchy's ancestors when one is given."""
        check_is_fitted(self, "estimators_")
        n = X.shape[0]
        Y = np.column_stack([
            np.full(n, e) if isinstance(e, float) else e.predict(X) for e in self.estimators_
        ]).astype(float)
        return self.hierarchy.close(Y) if self.hierarchy is not None else Y
