"""The fitted state of an estimator checked against what its ``fit`` would have produced.

An estimator's ``_check_fitted_state`` (:mod:`ecrm.estimators._template`), which
:func:`ecrm.load` runs, checks the parameters with ``fit``'s checks, then every fitted
attribute against the parameters, the output space and the other attributes. Here: the checks
every estimator shares (:func:`check_training_state`) and a structured SVM's summaries (a
kernel model's fit in :mod:`._kernel_state`, a search's in :mod:`._search_state`). Each failure
is a ``ValueError`` or ``TypeError`` naming the attribute, what was expected and found.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from ecrm.estimators._validation import check_float_array
from ecrm.losses.base import LinearLoss
from ecrm.model_files._kernel_state import (
    MAX_FEATURE_COEF,
    check_kernel_state,
    check_ridge_state,
)
from ecrm.model_files._search_state import check_search_state
from ecrm.model_files._values import _finite_floats, _int, _real
from ecrm.weights.kernel._solvers.primal import FeatureFit

# the kernel and search checks live in their own modules; the estimators import them here
__all__ = ["check_kernel_state", "check_level_columns", "check_reading_options",
           "check_ridge_state", "check_search_state", "check_ssvm_summaries",
           "check_training_state", "check_unique_names"]

_REQUIRED = ("X_fit_", "Y_fit_", "n_features_in_", "label_names_", "kernel_params_", "_y_ndim",
             "_fit", "dual_coef_", "support_", "primal_objective_", "dual_objective_",
             "duality_gap_", "gap_history_", "n_iter_", "intercept_scale_")


def check_unique_names(names, name: str) -> None:
    """Column names are distinct, as fit finds them (scikit-learn and the file readers refuse
    duplicates): a repeated one would make ``ecrm predict`` read one column twice."""
    if names is None:
        return
    seen: set = set()
    for v in names:
        if v in seen:
            raise ValueError(f"{name} holds the column name {str(v)[:80]!r} twice")
        seen.add(v)


def check_level_columns(names) -> None:
    """``level_columns_`` (the ``--level-columns`` of ``ecrm fit``): ``None`` or a list of
    distinct, non-empty column names."""
    if names is None:
        return
    if not (isinstance(names, list) and names and all(isinstance(v, str) and v.strip()
                                                      for v in names)):
        raise ValueError("level_columns_ must be a non-empty list of column names")
    check_unique_names(names, "level_columns_")


#: The reading options ``ecrm fit`` stores (``reading_options_``): how its file was read,
#: which ``ecrm predict`` and ``ecrm evaluate`` read theirs with unless told otherwise.
READING_OPTIONS = ("delimiter", "label_column", "label_sep", "path_sep")


def check_reading_options(options) -> None:
    """``reading_options_`` (set by ``ecrm fit``): ``None`` or a dict from some of
    :data:`READING_OPTIONS` to non-empty strings."""
    if options is None:
        return
    if not (isinstance(options, dict) and set(options) <= set(READING_OPTIONS) and all(
            isinstance(v, str) and v.strip(" ") for v in options.values())):
        raise ValueError(f"reading_options_ must map some of {', '.join(READING_OPTIONS)} to "
                         "non-empty strings")


def check_ssvm_summaries(model) -> None:
    """A StructuredSVM's objectives, gap and history as its fit computes them: the gap is
    the primal minus the dual objective, the history's last entry, after ``n_iter_``
    (at most ``max_iter``) epochs."""
    primal = _real(model.primal_objective_, "primal_objective_")
    dual = _real(model.dual_objective_, "dual_objective_")
    gap = _real(model.duality_gap_, "duality_gap_")
    if abs(gap - (primal - dual)) > 4 * np.finfo(float).eps * (abs(primal) + abs(dual)):
        raise ValueError(f"duality_gap_={gap!r} must be primal_objective_ - dual_objective_ "
                         f"= {primal - dual!r}")
    B = getattr(model, "dual_coef_", None)
    # B_i = C (phi(y_i) - mu_i), mu_i a mean embedding of outputs: of the order of C times
    # the outputs' spread; beyond 1e200 (C at most a float, outputs as fit validates them)
    # it would overflow the scores of ordinary inputs
    if isinstance(B, np.ndarray) and B.dtype.kind == "f" and B.size and \
            not float(np.abs(B).max()) <= MAX_FEATURE_COEF:
        raise ValueError(f"dual_coef_ holds a value of magnitude {float(np.abs(B).max()):.3g}, "
                         f"over {MAX_FEATURE_COEF:g}")
    n_iter = _int(model.n_iter_, "n_iter_", 1, model.max_iter)
    history = _finite_floats(model.gap_history_, "gap_history_", 1)
    if not 1 <= len(history) <= n_iter or history[-1] != gap:
        raise ValueError(f"gap_history_ must hold at most n_iter_={n_iter} gaps, the last "
                         f"duality_gap_; found {len(history)}")


class TrainingState(NamedTuple):
    """The checked training state: rows ``X`` (m, p) and outputs ``Y`` (m, d), with
    ``n_risk`` the risk targets of the loss (0 without a linear form)."""

    X: Any
    Y: Any
    m: int
    p: int
    d: int
    n_risk: int


def check_training_state(model) -> TrainingState:
    """The checks every estimator's state shares: the training rows and outputs, the
    output names (where declared), ``_y_ndim`` and the feature names."""
    required = [name for name in _REQUIRED if name in model._fitted_attributes]
    missing = [name for name in required if name not in vars(model)]
    if missing:
        raise ValueError(f"missing the fitted attributes {missing}")
    X, Y, space = model.X_fit_, model.Y_fit_, model.output_space
    p, d = _int(model.n_features_in_, "n_features_in_", 1, 2**62), space.n_outputs
    loss = model.loss
    if X is None and Y is None and isinstance(getattr(model, "_fit", None), FeatureFit) \
            and isinstance(loss, LinearLoss):  # stored without the training rows
        m = _int(model._fit.n_train, "_fit.n_train", 2)
        n_risk = loss.psi(np.zeros((1, d))).shape[1] + 1
    else:
        if not ((isinstance(X, np.ndarray) and X.dtype == np.float64) or sp.issparse(X)) \
                or X.ndim != 2:
            raise TypeError(f"X_fit_ must be a 2-D float64 array or sparse matrix; found "
                            f"{type(X).__name__} {getattr(X, 'dtype', '')}")
        # as fit's input checks leave them (a NaN loaded here would fail at predict, blaming
        # the caller's data)
        values = X.data if sp.issparse(X) else X
        if values.dtype != np.float64:
            raise TypeError(f"X_fit_ must hold float64 values; found {values.dtype}")
        if not np.isfinite(values).all():
            raise ValueError("X_fit_ holds NaN or infinite values (fit refuses them)")
        m = X.shape[0]
        if p != X.shape[1]:
            raise ValueError(f"n_features_in_={model.n_features_in_} but X_fit_ has "
                             f"{X.shape[1]} columns")
        if not isinstance(Y, np.ndarray) or Y.shape != (m, d) or Y.dtype.kind not in "biuf":
            raise ValueError(f"Y_fit_ must be a numeric array of shape {(m, d)} (the rows of "
                             f"X_fit_, the outputs of the space); found "
                             f"{getattr(Y, 'shape', type(Y).__name__)}")
        if Y.dtype != np.float64:  # fit validates the outputs into float64
            raise TypeError(f"Y_fit_ must be a float64 array; found {Y.dtype}")
        # NaN marks an unobserved entry where the space allows one (incomplete rankings):
        # validate refuses it anywhere else, so equal NaNs compare equal here
        try:
            valid = space.validate(Y)
        except ValueError as exc:
            raise ValueError(f"Y_fit_ holds outputs that are not in the output space: "
                             f"{exc}") from None
        if not np.array_equal(valid, Y, equal_nan=True):
            raise ValueError("Y_fit_ holds outputs that are not in the output space")
        n_risk = (np.shape(loss.psi(np.asarray(Y[:1], dtype=float)))[1] + 1
                  if isinstance(loss, LinearLoss) else 0)
    names = getattr(model, "label_names_", None)
    if "label_names_" in model._fitted_attributes and (
            not isinstance(names, np.ndarray) or names.shape != (d,)
            or list(names) != list(space.output_names)):
        raise ValueError(f"label_names_ must be the {d} output names of the output space; "
                         f"found {getattr(names, 'shape', type(names).__name__)}")
    if model._y_ndim not in (1, 2) or isinstance(model._y_ndim, bool) or \
            (model._y_ndim == 1 and d != 1):
        raise ValueError(f"_y_ndim must be 2, or 1 for one output; found {model._y_ndim!r}")
    for name in ("feature_names_in_", "feature_columns_"):  # p distinct names
        value = getattr(model, name, None)
        if value is not None and all(isinstance(v, str) for v in value):
            check_unique_names(value, name)
        if value is not None and (len(value) != p
                                  or not all(isinstance(v, str) for v in value)):
            raise ValueError(f"{name} must hold {p} column names")
    _check_output_statistics(model, space, d)
    check_level_columns(getattr(model, "level_columns_", None))
    check_reading_options(getattr(model, "reading_options_", None))
    return TrainingState(X, Y, m, p, d, n_risk)


def _check_output_statistics(model, space, d: int) -> None:
    """``output_mean_`` finite (observed means); ``output_mode_`` finite, or an output the
    space accepts with unobserved (NaN) entries (every training row incomplete)."""
    mean, mode = getattr(model, "output_mean_", None), getattr(model, "output_mode_", None)
    if mean is not None:
        check_float_array(mean, "output_mean_", (d,))
    if mode is not None:
        check_float_array(mode, "output_mode_", (d,), finite=False)
        if not np.isfinite(mode).all():
            try:
                same = np.array_equal(space.validate(mode[None, :])[0], mode, equal_nan=True)
            except ValueError:
                same = False
            if np.isinf(mode).any() or not same:
                raise ValueError("output_mode_ holds NaN or infinite values that are not the "
                                 "unobserved entries of an output of the space")
