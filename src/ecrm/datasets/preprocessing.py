"""Feature preprocessing for Clus HMC data: one-hot nominal, impute, standardise.

:func:`ecrm.datasets.load_hmc_arff` returns nominal attributes as float category codes
(NaN when missing) next to the numeric ones; :class:`HMCPreprocessor` turns such a matrix
into kernel-ready features, fitted on the training part only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._parameters import check_parameter, vocabulary

__all__ = ["HMCPreprocessor"]

_SCALE_CHOICES = vocabulary("scale")


class HMCPreprocessor(TransformerMixin, BaseEstimator):
    """One-hot encode nominal columns, impute missing values, standardise.

    Input columns are numeric values or nominal category codes ``0, 1, ..., k-1`` (NaN for
    missing), as returned by :func:`ecrm.datasets.load_hmc_arff`. The output keeps the
    input column order, each nominal column expanded in place into ``k`` indicator
    columns (one per declared category, whether or not it occurs in the training data):

    * numeric columns: NaN is replaced by the training mean, then the column is
      standardised with the training mean and standard deviation (a constant column is
      only centred);
    * nominal columns: one-hot; a missing value is replaced by the training frequencies of
      the categories (mean imputation of the indicator columns).

    Sparse input (scipy.sparse) gives CSR output and is never centred: columns are only
    divided by their standard deviation (as ``StandardScaler(with_mean=False)``) and
    missing numeric values, stored explicitly as NaN, are imputed with the mean.

    Parameters
    ----------
    categories : sequence of (None or sequence of str), optional
        One entry per input column: ``None`` for numeric, the category names of a nominal
        column (their number fixes the width of its one-hot block). Pass the ``categories``
        field of a loaded data set. Default: every column numeric.
    scale : {"numeric", "all", "none"}, default="numeric"
        Which output columns to standardise: the numeric ones (indicator columns stay 0/1),
        all of them, or none (missing values are still imputed).
    impute : bool, default=True
        Impute missing values as above; ``False`` refuses them in ``fit`` and ``transform``
        (``ecrm fit`` without ``--impute``: a missing value is an error at prediction too).

    Attributes
    ----------
    n_features_in_ : int
    mean_ : ndarray of shape (n_features_out,)
        Training mean of each output column (after one-hot, before imputation).
    scale_ : ndarray of shape (n_features_out,)
        Divisor of each output column (1 where not standardised or constant).
    n_features_out_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [np.nan, 1.0], [3.0, np.nan]])
    >>> pre = HMCPreprocessor(categories=[None, ("a", "b")]).fit(X)
    >>> pre.transform(X)
    array([[-1.22474487,  1.        ,  0.        ],
           [ 0.        ,  0.        ,  1.        ],
           [ 1.22474487,  0.5       ,  0.5       ]])
    >>> pre.get_feature_names_out(["x", "colour"]).tolist()
    ['x', 'colour=a', 'colour=b']
    """

    #: The learned state (a model file holds these; the column layout derives from
    #: ``categories``; ``feature_names_in_`` only when fitted on named columns).
    _fitted_attributes = ("mean_", "scale_", "n_features_in_", "n_features_out_",
                          "feature_names_in_")

    def __init__(self, categories: Sequence | None = None, *, scale: str = "numeric",
                 impute: bool = True):
        self.categories = categories
        self.scale = scale
        self.impute = impute

    def _layout(self, p: int):
        cats = [None] * p if self.categories is None else list(self.categories)
        if len(cats) != p:
            raise ValueError(f"categories has {len(cats)} entries but X has {p} columns; "
                             "expected one entry (None or the category names) per column")
        widths = np.array([1 if c is None else len(c) for c in cats], dtype=np.intp)
        if np.any(widths == 0):
            j = int(np.flatnonzero(widths == 0)[0])
            raise ValueError(f"nominal column {j} has no categories")
        starts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.intp)
        nominal = np.array([c is not None for c in cats], dtype=bool)
        return widths, starts, nominal

    def _check_X(self, X):
        X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.asarray(X, np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got shape {X.shape}")
        if not isinstance(self.impute, (bool, np.bool_)):
            raise TypeError(f"impute must be a bool; got {self.impute!r}")
        if not self.impute:
            nan = np.isnan(X.data if sp.issparse(X) else X)
            if nan.any():
                where = (f"column {int(X.indices[np.argmax(nan)])}" if sp.issparse(X) else
                         "row {}, column {}".format(*np.argwhere(nan)[0].tolist()))
                raise ValueError(f"X has a missing value (NaN) in {where}, and this "
                                 "HMCPreprocessor does not impute (impute=False)")
        return X

    def _codes(self, X, j: int, k: int) -> np.ndarray:
        """Category codes of nominal column j (dense float with NaN), checked to lie in 0..k-1."""
        col = X[:, [j]].toarray().ravel() if sp.issparse(X) else X[:, j]
        ok = np.isnan(col) | ((col >= 0) & (col < k) & (col == np.round(col)))
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"column {j} is nominal with {k} categories; expected codes "
                             f"0..{k - 1} or NaN, found {col[i]!r} in row {i}")
        return col

    def _onehot(self, codes: np.ndarray, k: int, freq: np.ndarray | None) -> np.ndarray:
        miss = np.isnan(codes)
        out = np.zeros((len(codes), k))
        rows = np.flatnonzero(~miss)
        out[rows, codes[rows].astype(np.intp)] = 1.0
        if freq is not None and miss.any():
            out[miss] = freq
        return out

    def fit(self, X, y=None):
        """Learn means, frequencies and scales from training features ``X`` (n, p)."""
        check_parameter("scale", self.scale)
        columns = getattr(X, "columns", None)  # a DataFrame's column names
        X = self._check_X(X)
        n, p = X.shape
        if n == 0:
            raise ValueError("cannot fit on X with 0 rows")
        widths, starts, nominal = self._layout(p)
        q = int(widths.sum())
        mean = np.zeros(q)
        scale = np.ones(q)
        num = np.flatnonzero(~nominal)
        is_sparse = sp.issparse(X)
        # numeric columns: NaN-aware mean and std of the mean-imputed column
        if len(num):
            Xn = X[:, num]
            if is_sparse:
                Xn = sp.csc_matrix(Xn)
                nan = np.isnan(Xn.data)
                data = np.where(nan, 0.0, Xn.data)
                cols = np.repeat(np.arange(len(num)), np.diff(Xn.indptr))
                n_nan = np.bincount(cols[nan], minlength=len(num))
                s1 = np.bincount(cols, weights=data, minlength=len(num))
                s2 = np.bincount(cols, weights=data**2, minlength=len(num))
            else:
                nan = np.isnan(Xn)
                n_nan = nan.sum(axis=0)
                data = np.where(nan, 0.0, Xn)
                s1, s2 = data.sum(axis=0), (data**2).sum(axis=0)
            n_obs = n - n_nan
            mu = np.divide(s1, n_obs, out=np.zeros(len(num)), where=n_obs > 0)
            var = np.maximum(s2 - 2 * mu * s1 + n_obs * mu**2, 0.0) / n
            mean[starts[num]] = mu
            if self.scale != "none":
                sd = np.sqrt(var)
                scale[starts[num]] = np.where(sd > 1e-12 * np.maximum(1.0, np.abs(mu)), sd, 1.0)
        # nominal columns: frequencies of the observed categories
        for j in np.flatnonzero(nominal):
            k = int(widths[j])
            codes = self._codes(X, j, k)
            obs = codes[~np.isnan(codes)].astype(np.intp)
            freq = np.bincount(obs, minlength=k) / max(len(obs), 1)
            sl = slice(starts[j], starts[j] + k)
            mean[sl] = freq
            if self.scale == "all":
                # std of the indicators after imputation (imputed rows sit at the mean)
                sd = np.sqrt(freq * (1 - freq) * len(obs) / n)
                scale[sl] = np.where(sd > 1e-12, sd, 1.0)
        self.mean_ = mean
        self.scale_ = scale
        self.n_features_in_ = p
        self.n_features_out_ = q
        if columns is not None and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(list(columns), dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return self

    def transform(self, X):
        """Encode, impute and scale ``X`` (n, p) -> (n, ``n_features_out_``); dense or CSR."""
        check_is_fitted(self, "mean_")
        X = self._check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} columns; expected {self.n_features_in_} as in "
                             "fit")
        widths, starts, nominal = self._layout(self.n_features_in_)
        num = np.flatnonzero(~nominal)
        onum = starts[num]
        center = self.scale != "none" and not sp.issparse(X)
        blocks = []  # (output column indices, block)
        if len(num):
            mu, sc = self.mean_[onum], self.scale_[onum]
            if sp.issparse(X):
                B = sp.csc_matrix(X[:, num], copy=True)
                cols = np.repeat(np.arange(len(num)), np.diff(B.indptr))
                nan = np.isnan(B.data)
                B.data[nan] = mu[cols[nan]]
                B.data /= sc[cols]
            else:
                B = np.array(X[:, num])
                nan = np.isnan(B)
                B[nan] = np.broadcast_to(mu, B.shape)[nan]
                if center:
                    B -= mu
                B /= sc
            blocks.append((onum, B))
        for j in np.flatnonzero(nominal):
            k = int(widths[j])
            sl = slice(starts[j], starts[j] + k)
            H = self._onehot(self._codes(X, j, k), k, self.mean_[sl])
            if self.scale == "all":
                if center:
                    H -= self.mean_[sl]
                H /= self.scale_[sl]
            blocks.append((np.arange(starts[j], starts[j] + k), H))
        order = np.argsort(np.concatenate([b[0] for b in blocks]), kind="stable")
        if sp.issparse(X):
            M = sp.hstack([sp.csr_matrix(b[1]) for b in blocks], format="csc")
            return sp.csr_matrix(M[:, order])
        M = np.hstack([b[1] for b in blocks])
        return M[:, order]

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Output column names: numeric names unchanged, ``"<name>=<category>"`` for one-hot."""
        check_is_fitted(self, "mean_")
        if input_features is None:
            input_features = getattr(self, "feature_names_in_", None)
        if input_features is None:
            input_features = [f"x{j}" for j in range(self.n_features_in_)]
        input_features = list(input_features)
        if len(input_features) != self.n_features_in_:
            raise ValueError(f"input_features has {len(input_features)} names; expected "
                             f"{self.n_features_in_}")
        cats = self.categories if self.categories is not None else [None] * self.n_features_in_
        names: list[str] = []
        for f, c in zip(input_features, cats, strict=True):
            if c is None:
                names.append(str(f))
            else:
                names.extend(f"{f}={v}" for v in c)
        return np.asarray(names, dtype=object)
