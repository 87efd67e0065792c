"""Binary relevance: one classifier per label, made consistent bottom-up (the paper's BR-SVM)."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC, LinearSVC
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._parameters import RANDOM_STATE, Checked, Choice, Number, check_params
from ecrm.estimators._validation import check_real, check_same_rows

__all__ = ["BRSVM", "BinaryRelevance"]


class BinaryRelevance(BaseEstimator):
    """One binary classifier per label; a positive label switches on all its ancestors.

    Labels that are constant in the training data are predicted as that constant.

    Parameters
    ----------
    estimator : scikit-learn classifier
        Cloned and fitted once per label.
    hierarchy : ecrm.Hierarchy or None
        If given, predictions are closed under ancestors (bottom-up imputation) and scores
        are made consistent by the space's ``consistent_scores`` hook (capped by their
        parents' scores).

    Attributes
    ----------
    estimators_ : list
        Per label, the fitted clone of ``estimator``, or the label's value (a float) when
        it is constant in the training data.
    """

    def __init__(self, estimator, hierarchy=None):
        self.estimator = estimator
        self.hierarchy = hierarchy

    def fit(self, X, Y):
        """Fit one clone of ``estimator`` per column of ``Y`` (m, d; 0/1, array or sparse) on
        ``X`` (m, p); returns ``self``."""
        Y = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y, dtype=float)
        if Y.ndim != 2:
            raise ValueError(f"Y must be 2-D of shape (m, d); got shape {Y.shape}")
        check_same_rows(X, Y)
        self.estimators_ = [float(column[0]) if np.all(column == column[0])
                            else clone(self.estimator).fit(X, column) for column in Y.T]
        return self

    def _per_label(self, X, method: str, constant) -> np.ndarray:
        check_is_fitted(self, "estimators_")
        return np.column_stack([
            np.full(X.shape[0], constant(e)) if isinstance(e, float) else getattr(e, method)(X)
            for e in self.estimators_
        ]).astype(float)

    def predict(self, X) -> np.ndarray:
        """Per-label 0/1 predictions (n, d) for ``X`` (n, p), closed under the hierarchy's
        ancestors when one is given."""
        Y = self._per_label(X, "predict", lambda value: value)
        return self.hierarchy.close(Y) if self.hierarchy is not None else Y

    def decision_function(self, X) -> np.ndarray:
        """Per-label decision values (n, d) for ``X`` (n, p) (constant labels: +-1), capped
        by their parents'."""
        S = self._per_label(X, "decision_function", lambda value: 2.0 * value - 1.0)
        return self.hierarchy.consistent_scores(S) if self.hierarchy is not None else S


def _neg_mean_hamming(Y_true, Y_pred):
    return -float(np.mean(np.abs(np.asarray(Y_true) - np.asarray(Y_pred)).sum(axis=1)))


def _check_Cs(Cs):
    if not len(Cs):
        raise ValueError("Cs must hold at least one value of C")
    for C in Cs:
        check_real(C, "each of Cs")
    return Cs


def _check_gammas(gammas):
    for gamma in gammas if gammas is not None else ():
        check_real(gamma, "each of gammas")
    return gammas


class BRSVM(BaseEstimator):
    """The paper's BR-SVM: one SVM per label with C (and gamma) tuned by cross-validation.

    A linear kernel uses liblinear's ``LinearSVC`` (primal) when there are more samples than
    features and LibSVM's ``SVC(kernel="linear")`` otherwise (the faster of the two on the
    HMC files: liblinear's dual solver was 5-25 times slower on enron and did not converge);
    RBF uses ``SVC``. One C (and gamma) for all labels, chosen by ``cv``-fold cross-validation
    of the mean Hamming loss (BR-SVM is not adapted to a task loss) on at most
    ``tuning_samples`` random training points and the ``tuning_labels`` most frequent
    non-constant labels (without the bottom-up closure), then refitted on all labels and points.

    Parameters
    ----------
    hierarchy : ecrm.Hierarchy
    kernel : {"linear", "rbf"}, default="linear"
    Cs : sequence of float, default=(0.01, 0.1, 1.0, 10.0)
        Candidate values of the SVM's C (positive).
    gammas : sequence of float, optional
        Candidate RBF widths (positive; default: scikit-learn's ``"scale"``).
    cv : int, default=3
        Folds of the cross-validation (at least 2).
    tuning_samples : int or None, default=2000
        Training points of the tuning subsample (None: all).
    tuning_labels : int, default=200
        Labels the tuning scores.
    random_state : int, RandomState or None, default=0
        Seed of the tuning subsample.

    Attributes
    ----------
    best_params_ : dict
    model_ : BinaryRelevance
    """

    #: Each parameter's constraint (:func:`ecrm.estimators._parameters.check_params`, at fit).
    _parameter_constraints = {
        "hierarchy": Checked("an ecrm.Hierarchy or None"),
        "kernel": Choice(("linear", "rbf")),
        "Cs": Checked("a non-empty sequence of reals > 0", bad=((), (1.0, -1.0)),
                      function=_check_Cs),
        "gammas": Checked("None or a sequence of reals > 0", bad=((float("nan"),),),
                          function=_check_gammas),
        "cv": Number("int", {"low": 2}),
        "tuning_samples": Number("int", none=True),
        "tuning_labels": Number("int"),
        "random_state": RANDOM_STATE}
    _parameter_rules = ()

    def __init__(self, hierarchy, *, kernel="linear", Cs=(0.01, 0.1, 1.0, 10.0), gammas=None,
                 cv=3, tuning_samples=2000, tuning_labels=200, random_state=0):
        self.hierarchy = hierarchy
        self.kernel = kernel
        self.Cs = Cs
        self.gammas = gammas
        self.cv = cv
        self.tuning_samples = tuning_samples
        self.tuning_labels = tuning_labels
        self.random_state = random_state

    def _base(self, X):
        if self.kernel == "linear" and X.shape[0] > X.shape[1]:
            return LinearSVC(dual=False)
        return SVC(kernel=self.kernel)  # "linear" or "rbf": checked at fit

    def fit(self, X, Y):
        """Tune C (and gamma) by cross-validation on a subsample, then fit on all of ``X``
        (m, p) and ``Y`` (m, d; 0/1); returns ``self``."""
        check_params(self)
        Y = np.asarray(Y, dtype=float)
        check_same_rows(X, Y)
        grid = {"estimator__C": list(self.Cs)}
        if self.kernel == "rbf":
            grid["estimator__gamma"] = ["scale"] if self.gammas is None else list(self.gammas)
        model = BinaryRelevance(self._base(X), self.hierarchy)
        rows = np.arange(X.shape[0])
        if self.tuning_samples is not None and X.shape[0] > self.tuning_samples:
            rng = check_random_state(self.random_state)
            rows = np.sort(rng.choice(X.shape[0], self.tuning_samples, replace=False))
        freq = Y[rows].mean(axis=0)
        varying = np.flatnonzero((freq > 0) & (freq < 1))
        labels = varying[np.argsort(-freq[varying], kind="stable")][: self.tuning_labels]
        search = GridSearchCV(clone(model).set_params(hierarchy=None), grid,
                              scoring=make_scorer(_neg_mean_hamming), cv=self.cv,
                              refit=False)  # refitted below on every row and label
        with warnings.catch_warnings():  # liblinear's iteration cap on the largest C values
            warnings.simplefilter("ignore", ConvergenceWarning)
            search.fit(X[rows], Y[np.ix_(rows, labels)])
            self.model_ = clone(model).set_params(**search.best_params_).fit(X, Y)
        self.best_params_ = {k.removeprefix("estimator__"): v
                             for k, v in search.best_params_.items()}
        return self

    def predict(self, X):
        """Consistent label sets (n, d) of the refitted :class:`BinaryRelevance`."""
        check_is_fitted(self, "model_")
        return self.model_.predict(X)

    def decision_function(self, X):
        """Per-label decision values (n, d), capped by their parents'."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(X)
