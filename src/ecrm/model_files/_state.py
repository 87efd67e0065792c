"""The fitted state of an estimator checked against what its ``fit`` would have produced.

An estimator's ``_check_fitted_state`` (:mod:`ecrm.estimators._template`) is what :func:`ecrm.load`
runs on a model built from a file: the parameters through the estimator's own
``_check_params`` (the checks of ``fit``), then every fitted attribute's type, dtype and
shape against the parameters, the output space and the other attributes, with the checks
here: the training state every estimator shares (:func:`check_training_state`), a kernel
model's fit object, ridge and search. Each failure is a ``ValueError`` or ``TypeError``
naming the attribute, what was expected and what was found.
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from ecrm.estimators._validation import check_float_array
from ecrm.losses.base import LinearLoss
from ecrm.selection.calibration import CALIBRATIONS
from ecrm.weights._fit import RiskFit
from ecrm.weights.kernel._kernels import check_kernel_params, kernel_matrix
from ecrm.weights.kernel._solvers.primal import FeatureFit
from ecrm.weights.kernel._solvers.rows import RiskTargets

__all__ = ["check_kernel_state", "check_ridge_state", "check_search_state",
           "check_training_state"]

_REQUIRED = ("X_fit_", "Y_fit_", "n_features_in_", "label_names_", "kernel_params_", "_y_ndim",
             "_fit", "dual_coef_", "support_", "primal_objective_", "dual_objective_",
             "duality_gap_", "gap_history_", "n_iter_", "intercept_scale_")


def _finite_floats(value, name: str, ndim: int) -> np.ndarray:
    """``value`` as fit leaves it: a finite float64 array of ``ndim`` dimensions (checked
    before a constructor's ``np.asarray(..., dtype=float)`` could cast strings, bools,
    dates or float16 into other numbers)."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float64:
        found = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
        raise TypeError(f"{name} must be a float64 array; found {found}")
    if value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D; found shape {value.shape}")
    if not np.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return value


def check_isotonic_kwargs(kwargs: dict) -> None:
    """An :class:`~ecrm.selection.calibration.IsotonicCalibration` as its ``fit`` makes it:
    per label (``indptr``), increasing breakpoints and non-decreasing values in [0, 1]."""
    b = _finite_floats(kwargs.get("breakpoints"), "breakpoints", 1)
    v = _finite_floats(kwargs.get("values"), "values", 1)
    ptr = kwargs.get("indptr")
    if not isinstance(ptr, np.ndarray) or ptr.dtype.kind != "i" or ptr.ndim != 1:
        raise TypeError(f"indptr must be a 1-D integer array; found "
                        f"{getattr(ptr, 'dtype', type(ptr).__name__)}")
    if len(v) != len(b) or len(ptr) < 2 or ptr[0] != 0 or ptr[-1] != len(b) \
            or (np.diff(ptr) < 1).any():
        raise ValueError(f"indptr must increase from 0 to {len(b)}, the common length of "
                         f"breakpoints and values ({len(v)}), for at least one label")
    if ((v < 0) | (v > 1)).any():
        raise ValueError("values must lie in [0, 1]")
    within = np.ones(len(b) - 1, dtype=bool)  # consecutive entries of one label
    within[ptr[1:-1] - 1] = False
    if (np.diff(b)[within] <= 0).any():
        raise ValueError("breakpoints must increase within each label")
    if (np.diff(v)[within] < 0).any():
        raise ValueError("values must not decrease within each label")


def check_platt_kwargs(kwargs: dict) -> None:
    """A :class:`~ecrm.selection.calibration.PlattCalibration` as its ``fit`` makes it:
    finite slopes ``a`` and offsets ``b``, one of each per label."""
    a = _finite_floats(kwargs.get("a"), "a", 1)
    b = _finite_floats(kwargs.get("b"), "b", 1)
    if a.shape != b.shape or not len(a):
        raise ValueError(f"a and b must have one entry per label; found {len(a)} and {len(b)}")


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


def _check_rows(X) -> None:
    """The training rows as fit's input checks leave them: float64 values, all finite (a NaN
    loaded here would fail at predict, blaming the caller's data)."""
    values = X.data if sp.issparse(X) else X
    if values.dtype != np.float64:
        raise TypeError(f"X_fit_ must hold float64 values; found {values.dtype}")
    if not np.isfinite(values).all():
        raise ValueError("X_fit_ holds NaN or infinite values (fit refuses them)")


def _int(value, name: str, low: int, high: int = 2**62) -> int:
    # the upper bound keeps a forged 10**30 out of NumPy's int64 (an OverflowError later)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; found {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}; found {value}")
    if int(value) > high:
        raise ValueError(f"{name} must be at most {high}; found {str(value)[:40]}")
    return int(value)


def _positive_float(value, name: str) -> float:
    if type(value) is not float:  # what fit stores (JSON keeps a float a float)
        raise TypeError(f"{name} must be a float; found {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number; found {value!r}")
    return value


def check_fit_kwargs(kwargs: dict) -> None:
    """The scalars and ``u`` of a :class:`~ecrm.weights.kernel._solvers.dual.KernelFit` or
    :class:`~ecrm.weights.kernel._solvers.primal.FeatureFit`, checked before its constructor's
    ``int()`` and ``float()`` (an ``inf`` would raise ``OverflowError``, a string would be
    converted);
    :func:`check_fitted_state` then ties them to the estimator."""
    _int(kwargs.get("n_risk"), "n_risk", 0)
    _positive_float(kwargs.get("ridge"), "ridge")
    if not isinstance(kwargs.get("fit_intercept"), bool):
        raise TypeError(f"fit_intercept must be a bool; found "
                        f"{type(kwargs.get('fit_intercept')).__name__}")
    if "n_train" in kwargs:
        _int(kwargs["n_train"], "n_train", 2)
    if kwargs.get("u") is not None:
        _finite_floats(kwargs["u"], "u", 1)
    if kwargs.get("s") is not None:
        _positive_float(kwargs["s"], "s")  # 1'(K + ridge I)^-1 1 > 0


def check_linear_features_kwargs(kwargs: dict) -> None:
    _int(kwargs.get("n_features"), "n_features", 1)


def check_nystrom_kwargs(kwargs: dict) -> None:
    """Nystrom centres (training rows: a float64 array or sparse matrix) and projection as fit
    computes them, finite, checked before the constructor casts the projection."""
    centres = kwargs["centres"]  # the constructor's required argument
    _finite_floats(centres.data if sp.issparse(centres) else centres, "centres",
                   1 if sp.issparse(centres) else 2)  # a file's sparse matrix is CSR: 2-D
    projection = _finite_floats(kwargs.get("projection"), "projection", 2)
    if projection.shape[0] != centres.shape[0] or not projection.shape[1]:
        raise ValueError(f"projection must have shape ({centres.shape[0]}, r) with r >= 1 "
                         f"(one row per centre); found {projection.shape}")
    check_nystrom_orthonormal(centres, kwargs.get("kernel_params"), projection)


def check_nystrom_orthonormal(centres, kernel_params, projection: np.ndarray) -> None:
    r"""The projection :math:`P` (M x r) of Nystrom centres :math:`C` as fit computes it:
    :math:`P = U_r \Lambda_r^{-1/2}` from the eigenvectors of :math:`K = K(C, C)` whose
    eigenvalues it keeps, so that :math:`P^\top K P = I_r`.

    Rounding in the eigendecomposition leaves an error of about
    :math:`M \varepsilon \lVert K
Vert_2 / \lambda_{\min}` with
    :math:`1/\lambda_{\min} = \lVert P
Vert_2^2`; the check allows 64 times that (at most
    1/2): a fitted model meets it with a wide margin, a transposed, rescaled or foreign
    projection does not.
    """
    if not isinstance(kernel_params, dict):
        raise TypeError(f"kernel_params must be a dict; found {type(kernel_params).__name__}")
    params = check_kernel_params(**kernel_params)
    M, r = projection.shape
    if r > M:
        raise ValueError(f"projection has {r} columns, more than its {M} centres")
    with np.errstate(all="ignore"):
        try:
            K = kernel_matrix(centres, centres, **params)
        except ValueError:
            K = np.full((M, M), np.nan)
        if not np.isfinite(K).all():
            raise ValueError("centres: the kernel of the Nystrom centres is not finite (the "
                             "centres are not training rows fit could have kept)")
        gram = projection.T @ K @ projection
        size = float(np.linalg.norm(K, 2)) * float(np.linalg.norm(projection, 2)) ** 2
    tolerance = min(0.5, 64 * M * np.finfo(float).eps * size)
    error = float(np.abs(gram - np.eye(r)).max()) if np.isfinite(gram).all() else np.inf
    if not error <= tolerance:
        raise ValueError(f"projection: P^T K(C, C) P differs from the identity by {error:.3g} "
                         f"(at most {tolerance:.3g} for the projection fit computes)")


def _real(value, name: str, *, nan: bool = False) -> float:
    """A summary as fit stores it: a float (NumPy's or Python's), finite (or NaN if
    ``nan``), never a list, a string or a bool that ``ecrm info`` would choke on."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        raise TypeError(f"{name} must be a float; found {type(value).__name__}")
    if not (np.isfinite(value) or (nan and np.isnan(value))):
        raise ValueError(f"{name} must be finite; found {value!r}")
    return float(value)


#: The columns of a leave-one-out table (``cv_results_``), besides ``params``.
_TABLE = {"alpha": "f", "fit_intercept": "b", "mean_score": "f", "mean_loss": "f",
          "rank": "i"}


def _check_table(table, name: str) -> np.ndarray:
    """A table of candidates as the search writes it; returns its scores."""
    if not isinstance(table, dict) or not {"params", *_TABLE} <= set(table):
        raise ValueError(f"{name} must be a dict with {sorted(['params', *_TABLE])}; found "
                         f"{sorted(map(str, table)) if isinstance(table, dict) else table!r}"
                         [:300])
    params = table["params"]
    if not (isinstance(params, list) and params and all(isinstance(p, dict) for p in params)):
        raise ValueError(f"{name}['params'] must be a non-empty list of dicts")
    n = len(params)
    # other columns (a newer search adds some, e.g. 'added'): plain 1-D arrays, one per row
    extra = {key: "biuf" for key in table if key not in _TABLE and key != "params"}
    for key, kind in {**_TABLE, **extra}.items():
        value = table[key]
        if not (isinstance(value, np.ndarray) and value.dtype.kind in kind
                and value.shape == (n,)):
            raise ValueError(f"{name}[{key!r}] must be a 1-D array of kind {kind!r} with "
                             f"{n} entries; found {getattr(value, 'dtype', type(value))} "
                             f"{getattr(value, 'shape', '')}")
    for i, row in enumerate(params):  # each row's settings: its kernel, alpha and intercept
        kernel = {k: row.get(k) for k in ("kernel", "gamma", "degree", "coef0")}
        if set(row) != {*kernel, "alpha", "fit_intercept"} \
                or check_kernel_params(**kernel) != kernel \
                or row["alpha"] != table["alpha"][i] \
                or row["fit_intercept"] is not bool(table["fit_intercept"][i]):
            raise ValueError(f"{name}['params'][{i}] must be the kernel settings, alpha and "
                             f"fit_intercept of row {i}; found {str(row)[:200]}")
    if not np.array_equal(np.sort(table["rank"]), np.arange(1, n + 1)):
        raise ValueError(f"{name}['rank'] must rank the {n} candidates 1 to {n}")
    if not np.isfinite(table["alpha"]).all() or (table["alpha"] <= 0).any():
        raise ValueError(f"{name}['alpha'] must hold positive alphas")
    return table["mean_score"]


def _check_summaries(model) -> None:
    """ECRMCV's summaries: its tables, its best score one of the table's, the calibration's
    scores by name."""
    scores = _check_table(model.cv_results_, "cv_results_")
    best = _real(model.best_score_, "best_score_", nan=True)
    if not np.isin(best, scores) and not (np.isnan(best) and np.isnan(scores).any()):
        raise ValueError(f"best_score_={best!r} is not a score of cv_results_")
    if model.kernel_search_results_ is not None:
        _check_table(model.kernel_search_results_, "kernel_search_results_")
    results = model.calibration_results_
    if results is not None:
        if not isinstance(results, dict) or not all(isinstance(k, str) for k in results):
            raise ValueError("calibration_results_ must map option names to scores")
        for key, value in results.items():
            _real(value, f"calibration_results_[{key!r}]", nan=True)


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


def check_ridge_state(fit, m: int, alpha, fit_intercept) -> None:
    """``fit.ridge`` is the ``m * alpha`` of fit (one rounding: a few ulps allowed), its
    intercept the estimator's, and ``s`` the sum of ``u`` as the solve computed it."""
    ridge = m * float(alpha)
    if abs(fit.ridge - ridge) > 4 * np.finfo(float).eps * ridge:
        raise ValueError(f"_fit.ridge={fit.ridge!r} must be m * alpha = {m} * {alpha!r} = "
                         f"{ridge!r}")
    if fit.fit_intercept != fit_intercept:
        raise ValueError(f"_fit.fit_intercept={fit.fit_intercept} differs from the "
                         f"estimator's {fit_intercept}")
    u, s = getattr(fit, "u", None), getattr(fit, "s", None)
    if u is not None and s is not None:
        # a sum of m terms: off by at most about m * eps * sum|u| whatever the order
        total = float(u.sum())
        if abs(s - total) > 4 * len(u) * np.finfo(float).eps * float(np.abs(u).sum()):
            raise ValueError(f"_fit.s={s!r} must be the sum of _fit.u, {total!r}")


def _check_fit(model, fit, X, p: int, n_risk: int, d: int, kernel_params: dict) -> None:
    if not isinstance(fit, RiskFit):
        raise TypeError(f"_fit must be a solver's fit object; found {type(fit).__name__}")
    c = n_risk + (d if model._fits_marginals else 0)
    if fit.n_risk != n_risk:
        raise ValueError(f"_fit has {fit.n_risk} risk regressions; the loss needs {n_risk}")
    fit.check_state(X, p, kernel_params)  # its own arrays and settings
    check_float_array(fit.coef, "_fit.coef", (fit.n_columns, c))
    check_float_array(fit.intercept, "_fit.intercept", (c,))
    if not (np.isfinite(fit.ridge) and fit.ridge > 0):
        raise ValueError(f"_fit.ridge must be a positive number; found {fit.ridge!r}")
    if type(fit).__name__ == "KernelFit" and isinstance(model.Y_fit_, np.ndarray):
        check_dual_bound(fit, RiskTargets(model.loss)(model.Y_fit_)[:, :c])
    elif isinstance(fit, FeatureFit):
        check_feature_magnitude(fit)


#: The largest coefficient or intercept a feature fit (primal or Nystrom) may hold.
MAX_FEATURE_COEF = 1e200


def check_feature_magnitude(fit) -> None:
    r"""A feature fit's coefficients and intercept within :data:`MAX_FEATURE_COEF`.

    Its file holds no targets, so the bound of the dual (:func:`check_dual_bound`) cannot be
    computed; the primal solve :math:`w_k = (\Phi^\top\Phi + rI)^{-1}\Phi^\top(t_k - b_k
    \mathbf 1)` still gives :math:`\lVert w_k\rVert \le \max_i |t_{ik} - b_k| /
    (2\sqrt{\alpha})` with :math:`r = m\alpha`, at most :math:`10^{162}` times the targets'
    range for any positive float :math:`\alpha`: a value beyond ``1e200`` needs targets
    beyond :math:`10^{38}`, which no loss of the package has, and would overflow the costs of
    ordinary inputs.
    """
    for name, value in (("coef", fit.coef), ("intercept", fit.intercept)):
        if value.size and not float(np.abs(value).max()) <= MAX_FEATURE_COEF:
            raise ValueError(f"_fit.{name} holds a value of magnitude "
                             f"{float(np.abs(value).max()):.3g}, over {MAX_FEATURE_COEF:g} (no "
                             "solve of ordinary targets makes it)")


#: How far a stored norm may exceed the bound the algebra of fit gives (rounding in the solve
#: of an ill-conditioned system): a fitted model stays far below it.
BOUND_SAFETY = 2.0


def check_dual_bound(fit, T: np.ndarray) -> None:
    r"""The coefficients and intercept of a dual ridge fit against its targets ``T`` (m x c).

    Fit solves :math:`(K + rI) A = T - \mathbf 1 b^\top` with :math:`K` positive
    semi-definite and :math:`r` = ``ridge``, so every column obeys
    :math:`\lVert a_k\rVert_2 \le \lVert t_k - b_k \mathbf 1\rVert_2 / r` (the inverse of
    :math:`K + rI` has norm at most :math:`1/r`); without an intercept :math:`b = 0`
    (:math:`\lVert A\rVert \le \lVert\psi(Y)\rVert / (m\alpha)`), with one
    :math:`b = T^\top u / s`, :math:`u = (K + rI)^{-1}\mathbf 1`, :math:`s = \mathbf 1^\top u`.
    Checked with the safety factor :data:`BOUND_SAFETY`.
    """
    A, b, ridge = fit.coef, fit.intercept, fit.ridge
    if A.shape[0] != T.shape[0] or A.shape[1] != T.shape[1]:
        return  # another layout (checked by the fit's own checks)
    if fit.fit_intercept and fit.u is not None:
        with np.errstate(all="ignore"):
            expected = (fit.u @ T) / fit.s
            scale = (np.abs(fit.u) @ np.abs(T)) / abs(fit.s)
        if not (np.abs(b - expected) <= 1e-8 * scale + 1e-300).all():
            raise ValueError("_fit.intercept must be T^T u / s, the intercept the solve gives")
    elif not fit.fit_intercept and np.any(b != 0):
        raise ValueError("_fit.intercept must be 0 without an intercept")
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.sum(A * A, axis=0))
        bounds = np.sqrt(np.sum((T - b) ** 2, axis=0)) / ridge
        # a column whose bound is 0 (a constant target) holds the solve's rounding only
        slack = 1e-4 * float(np.linalg.norm(T)) / ridge
    if not (norms <= BOUND_SAFETY * bounds + slack).all():
        k = int(np.argmax(~(norms <= BOUND_SAFETY * bounds + slack)))
        raise ValueError(f"_fit.coef: column {k} has norm {norms[k]:.6g}, over the bound "
                         f"||t - b||/ridge = {bounds[k]:.6g} the ridge solve implies")


def _added(model) -> tuple[list, list]:
    """The kernel settings and alphas an extension of the grid (``extend_grid``) tried: the
    rows of ``cv_results_`` and ``kernel_search_results_`` marked ``added``."""
    settings, alphas = [], []
    for table in (model.cv_results_, model.kernel_search_results_):
        if isinstance(table, dict) and "params" in table and "added" in table:
            for params, added in zip(table["params"], table["added"], strict=False):
                if added and isinstance(params, dict):
                    alphas.append(params.get("alpha"))
                    settings.append({k: v for k, v in params.items()
                                     if k not in ("alpha", "fit_intercept")})
    return settings, alphas


def check_search_state(model, m: int, d: int, settings: list, alphas: list,
                       intercepts: list, extend: bool) -> None:
    """ECRMCV's choice, leave-one-out rows, predictions, calibration and summaries against
    its candidate kernel ``settings``, ``alphas`` and ``intercepts`` (and those an
    extension of the grid, ``extend``, added)."""
    if extend:
        more_settings, more_alphas = _added(model)
        settings, alphas = settings + more_settings, alphas + more_alphas
    if model.kernel_params_ not in settings:
        raise ValueError(f"kernel_params_ {model.kernel_params_} is not among the kernel "
                         f"settings {settings}")
    if model.alpha_ not in alphas or model.fit_intercept_ not in intercepts:
        raise ValueError(f"alpha_={model.alpha_!r}, fit_intercept_={model.fit_intercept_!r} "
                         f"is not a candidate of the parameters")
    rows = model.loo_rows_
    if not (isinstance(rows, np.ndarray) and rows.ndim == 1 and rows.dtype.kind in "iu"
            and len(rows) and rows.min() >= 0 and rows.max() < m
            and (np.diff(rows) > 0).all()):
        raise ValueError(f"loo_rows_ must be increasing row indices in [0, {m})")
    for name in ("loo_predictions_", "loo_scores_"):
        value = getattr(model, name)
        if value is not None and (not isinstance(value, np.ndarray)
                                  or value.shape != (len(rows), d)):
            raise ValueError(f"{name} must have shape {(len(rows), d)}; found "
                             f"{getattr(value, 'shape', type(value).__name__)}")
    if model.calibration_ not in (None, *CALIBRATIONS):
        named = ", ".join(map(repr, (None, *CALIBRATIONS)))
        raise ValueError(f"calibration_ must be one of {named}; found {model.calibration_!r}")
    if (model.calibration_ is None) != (model.score_calibration_ is None):
        raise ValueError("calibration_ and score_calibration_ must be set together")
    calibration = model.score_calibration_
    _check_summaries(model)
    labels = getattr(calibration, "n_labels", None)
    if calibration is not None and (
            type(calibration) is not CALIBRATIONS[model.calibration_] or labels != d):
        raise ValueError(f"score_calibration_ must be the {model.calibration_} calibration "
                         f"of {d} labels; found {type(calibration).__name__} of {labels}")
    a, b = getattr(calibration, "a_", None), getattr(calibration, "b_", None)
    if a is not None and b is not None:  # a Platt map
        check_platt_bound(a, b, m)


def check_platt_bound(a: np.ndarray, b: np.ndarray, n: int) -> None:
    r"""Platt maps fitted on at most ``n`` rows: Newton steps that never increase the
    objective from :math:`a = 0, b_0 = \log\frac{n_+ + 1}{n_- + 1}` keep the ridge term
    :math:`10^{-8}(a^2 + b^2)` below the start's value
    :math:`\le n(\log 2 + 2\log(n + 1)) + 10^{-8}\log^2(n + 1)`."""
    start = n * (np.log(2.0) + 2 * np.log(n + 1.0)) + 1e-8 * np.log(n + 1.0) ** 2
    with np.errstate(all="ignore"):
        size = a * a + b * b
    if not (size <= 2 * start / 1e-8).all():
        raise ValueError(f"score_calibration_: a Platt map's slope and offset exceed what "
                         f"its fit on {n} rows can reach (a^2 + b^2 <= {start / 1e-8:.3g})")


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
        _check_rows(X)
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
    for name in ("feature_names_in_", "feature_columns_"):  # distinct, if they are names
        value = getattr(model, name, None)
        if value is not None and all(isinstance(v, str) for v in value):
            check_unique_names(value, name)
    for name in ("feature_names_in_", "feature_columns_"):
        value = getattr(model, name, None)
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


def check_kernel_state(model, training: TrainingState) -> None:
    """A kernel model's ``kernel_params_`` (checked settings) and its fit object against the
    training state."""
    params = model.kernel_params_
    if not isinstance(params, dict) or set(params) != {"kernel", "gamma", "degree", "coef0"} \
            or check_kernel_params(**params) != params:
        raise ValueError(f"kernel_params_ must be checked kernel settings; found {params!r}")
    _check_fit(model, model._fit, training.X, training.p, training.n_risk, training.d, params)
