"""The fitted state of a search (ECRMCV) and its calibration checked against what its ``fit``
would have produced: the choice among the candidates, the leave-one-out tables and rows, the
calibration maps within what their own fits can reach."""

from __future__ import annotations

import numpy as np

from ecrm.model_files._values import _finite_floats, _real
from ecrm.selection.calibration import CALIBRATIONS
from ecrm.weights.kernel._kernels import check_kernel_params

__all__ = ["check_isotonic_kwargs", "check_platt_kwargs", "check_search_state"]


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
