"""The preprocessing steps a model file can hold, and how each is rebuilt without pickle.

A step is stored as its parameters (``get_params(deep=False)``) and the public fitted
attributes scikit-learn documents, never the private ones (those change between versions).
Loading rebuilds the fitted step from them:

* :class:`~sklearn.preprocessing.StandardScaler`, :class:`~sklearn.preprocessing.MinMaxScaler`,
  :class:`~sklearn.decomposition.PCA`, :class:`~ecrm.datasets.HMCPreprocessor` and
  :class:`~ecrm.weights.kernel.length_scales.LeaveOneOutLengthScales` by setting the attributes
  once their types, shapes and values are checked against the parameters (and each other);
* :class:`~sklearn.impute.SimpleImputer` and :class:`~sklearn.preprocessing.OneHotEncoder` by
  fitting the step on a small prototype table whose fit gives exactly the stored state (so
  scikit-learn makes their private attributes); :func:`save` refuses a step whose state this
  would not reproduce (an imputer of strings, an encoder with infrequent categories).

Each rebuild raises ``ValueError`` or ``TypeError`` naming the attribute and what is wrong.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ecrm.datasets.preprocessing import HMCPreprocessor
from ecrm.estimators._parameters import check_parameter, check_params
from ecrm.model_files._state import check_unique_names
from ecrm.model_files._values import _int
from ecrm.weights.kernel.length_scales import LeaveOneOutLengthScales

if TYPE_CHECKING:  # imported with the step they rebuild (sklearn.impute loads ~140 modules)
    from sklearn.decomposition import PCA
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

__all__ = ["STEPS", "check_numeric_input", "check_rows_before", "is_step",
           "output_width"]


def _vector(value, name: str, n: int, *, nan: bool = False, positive: bool = False):
    if not isinstance(value, np.ndarray) or value.dtype != np.float64 or value.shape != (n,):
        found = (f"{value.dtype} {value.shape}" if isinstance(value, np.ndarray)
                 else type(value).__name__)
        raise ValueError(f"{name} must be a float64 array of shape ({n},); found {found}")
    finite = np.isfinite(value) | (np.isnan(value) if nan else False)
    if not finite.all() or (positive and not (value[~np.isnan(value)] > 0).all()):
        raise ValueError(f"{name} must hold {'positive ' if positive else ''}finite values")
    return value


def _width(value, name: str) -> int:
    """A number of columns: an integer >= 1 whose float64 vector fits the memory budget
    (:data:`ecrm.model_files._archive.MEMORY_BUDGET`), checked before a rebuild allocates by it."""
    from ecrm.model_files import _archive

    return _int(value, name, 1, max(_archive.MEMORY_BUDGET // 64, 1))


def _set(step, state: dict, names, p: int) -> None:
    """Set the checked attributes ``names`` (the last, ``feature_names_in_``, checked here)."""
    for name in names[:-1]:
        setattr(step, name, state.get(name))
    _names_in(step, state, p)


def _names_in(step, state: dict, p: int) -> None:
    names = state.get("feature_names_in_")
    if names is None:
        return
    if not (isinstance(names, np.ndarray) and names.shape == (p,)
            and all(isinstance(v, str) for v in names.tolist())):
        raise ValueError(f"feature_names_in_ must hold {p} column names")
    check_unique_names(names.tolist(), "feature_names_in_")
    step.feature_names_in_ = names


def _public(step, names) -> dict:
    return {k: getattr(step, k) for k in names if hasattr(step, k)}


def _only(state: dict, allowed) -> None:
    unknown = sorted(str(k) for k in state if k not in allowed)
    if unknown:
        raise ValueError(f"unknown fitted attributes {unknown} (expected {list(allowed)})")


# -- StandardScaler: the attributes its transform reads --------------------------------------
_SCALER = ("n_features_in_", "n_samples_seen_", "mean_", "var_", "scale_", "feature_names_in_")


def _rebuild_scaler(step: StandardScaler, state: dict) -> None:
    _only(state, _SCALER)
    step._validate_params()  # scikit-learn's checks of fit (copy=None would write in place)
    p = _width(state.get("n_features_in_"), "n_features_in_")
    for name, needed, positive in [("mean_", step.with_mean, False), ("var_", step.with_mean
                                   or step.with_std, False), ("scale_", step.with_std, True)]:
        value = state.get(name)
        if value is None and needed:
            raise ValueError(f"{name} is needed (with_mean={step.with_mean}, "
                             f"with_std={step.with_std})")
        if value is not None:
            _vector(value, name, p, positive=positive)
    var, scale, mean = state.get("var_"), state.get("scale_"), state.get("mean_")
    if var is not None and scale is not None:
        # fit's scale is the standard deviation, or 1 for a constant column (whose variance
        # is 0 up to the rounding of its mean)
        with np.errstate(all="ignore"):
            root = np.sqrt(var)
            level = np.maximum(1.0, np.abs(mean) if mean is not None else 1.0) ** 2
            ok = np.isclose(scale, root, rtol=1e-10, atol=0) | (
                (scale == 1.0) & (var >= 0) & (var <= 1e-8 * level))
        if not ok.all():
            raise ValueError("scale_ must be the square root of var_ (1 for a constant "
                             "column)")
    seen = state.get("n_samples_seen_")  # a count, or per column when values were missing
    counts = np.asarray(seen)
    if isinstance(seen, (bool, np.bool_)) or not isinstance(seen, (numbers.Real, np.ndarray)) \
            or counts.shape != (() if counts.ndim == 0 else (p,)) \
            or counts.dtype.kind not in "iuf" or not (counts >= 0).all():
        raise ValueError(f"n_samples_seen_ must be a count, or {p} counts")
    _check_scaler_reach(mean, var, scale, counts)
    _set(step, state, _SCALER, p)


def _check_scaler_reach(mean, var, scale, counts) -> None:
    r"""A :class:`~sklearn.preprocessing.StandardScaler`'s statistics within what its fit on
    finite float64 data reaches, with :math:`n` = ``n_samples_seen_`` (per column or in all).

    Fit sums the column and the squared deviations in float64: both sums are finite, so
    :math:`n\lvert\mu\rvert` and :math:`n\sigma^2` are at most the largest double. A column
    whose variance is within the rounding of its mean,
    :math:`\sigma^2 \le n\varepsilon\sigma^2 + (n\mu\varepsilon)^2`, is constant (scale 1);
    any other has :math:`\lvert\mu\rvert < \sigma / (n\varepsilon)`, checked with a factor 2:
    a mean of ``1e300`` with a scale of 1 is no column fit could have seen.
    """
    n = np.maximum(counts.astype(np.float64), 1.0)
    big, eps = np.finfo(np.float64).max, np.finfo(np.float64).eps
    with np.errstate(all="ignore"):
        for name, value in (("mean_", mean), ("var_", var)):
            if value is not None and not (np.abs(value) <= big / n).all():
                j = int(np.argmax(~(np.abs(value) <= big / n)))
                raise ValueError(f"{name}[{j}]={value[j]:.6g} is beyond what fit on "
                                 f"n_samples_seen_ finite rows reaches (n * |{name}| must be "
                                 "a finite float64 sum)")
        if mean is None or var is None or scale is None:
            return
        spread = scale != 1.0  # fit's non-constant columns (1 marks a constant one)
        reach = 2 * np.sqrt(var) / (n * eps)
        beyond = spread & ~(np.abs(mean) <= reach)
    if beyond.any():
        j = int(np.argmax(beyond))
        raise ValueError(f"mean_[{j}]={mean[j]:.6g} with scale_[{j}]={scale[j]:.6g} is no "
                         f"column fit could have seen: a column whose spread is within the "
                         f"rounding of its mean is constant (scale 1), so |mean_| < "
                         f"scale_ / (n eps) = {reach[j] / 2:.6g} otherwise")


def check_numeric_input(name: str, step) -> None:
    """A OneHotEncoder after another step sees that step's float64 output: its categories
    are numbers (strings would fail at transform, not at load)."""
    if type(step).__name__ != "OneHotEncoder":
        return
    for j, c in enumerate(step.categories_):
        if c.dtype.kind not in "iuf":
            raise ValueError(f"step {name!r}: categories_[{j}] holds {c.dtype} values, but "
                             "the step before it gives float64 numbers")


def check_rows_before(step, X) -> None:
    """The training rows a model keeps (``X_fit_``, ``X``), taken back through the
    StandardScaler before it, are finite: the rows its fit saw were."""
    if type(step).__name__ != "StandardScaler" or not isinstance(X, np.ndarray) \
            or X.ndim != 2 or X.shape[1] != step.n_features_in_:
        return
    scale = 1.0 if step.scale_ is None else step.scale_
    mean = 0.0 if step.mean_ is None else step.mean_
    with np.errstate(all="ignore"):
        finite = np.isfinite(X * scale + mean).all(axis=0)
    if not finite.all():
        j = int(np.argmax(~finite))
        raise ValueError(f"the training rows X_fit_ * scale_ + mean_ are not finite in column "
                         f"{j}: not the scaled rows of the finite data fit saw")


# -- MinMaxScaler: its transform reads scale_ and min_, made from the data's range ----------
_MINMAX = ("n_features_in_", "n_samples_seen_", "min_", "scale_", "data_min_", "data_max_",
           "data_range_", "feature_names_in_")


def _rebuild_minmax(step, state: dict) -> None:
    _only(state, _MINMAX)
    step._validate_params()
    low, high = step.feature_range
    if not (np.isfinite([low, high]).all() and low < high):
        raise ValueError(f"feature_range must be two finite numbers, the first smaller; got "
                         f"{step.feature_range!r}")
    p = _width(state.get("n_features_in_"), "n_features_in_")
    lo, hi, width = (_vector(state.get(k), k, p) for k in ("data_min_", "data_max_",
                                                            "data_range_"))
    if not np.array_equal(width, hi - lo):
        raise ValueError("data_range_ must be data_max_ - data_min_")
    constant = width < 10 * np.finfo(np.float64).eps  # fit's rule for a constant column
    scale = (high - low) / np.where(constant, 1.0, width)
    for name, expected in (("scale_", scale), ("min_", low - lo * scale)):
        if not np.allclose(_vector(state.get(name), name, p), expected, rtol=1e-12, atol=0):
            raise ValueError(f"{name} is not the one feature_range and the data's range give")
    _int(state.get("n_samples_seen_"), "n_samples_seen_", 1)
    _set(step, state, _MINMAX, p)


# -- HMCPreprocessor: ours -------------------------------------------------------------------
def _rebuild_hmc(step: HMCPreprocessor, state: dict) -> None:
    _only(state, HMCPreprocessor._fitted_attributes)
    check_parameter("scale", step.scale)
    if not isinstance(step.impute, bool):
        raise ValueError(f"impute must be true or false; found {step.impute!r}")
    p = _width(state.get("n_features_in_"), "n_features_in_")
    mean = state.get("mean_")
    if not isinstance(mean, np.ndarray) or mean.ndim != 1 or len(mean) < p:
        # every column gives at least one output column: the stored vector bounds p before
        # the layout is allocated by it
        raise ValueError(f"mean_ must be a vector of at least n_features_in_={p} values")
    widths, _, _ = step._layout(p)
    q = _width(state.get("n_features_out_"), "n_features_out_")
    if q != int(widths.sum()):
        raise ValueError(f"n_features_out_={q}, but the categories make {int(widths.sum())}")
    _vector(state.get("mean_"), "mean_", q)
    _vector(state.get("scale_"), "scale_", q, positive=True)
    _set(step, state, HMCPreprocessor._fitted_attributes, p)


# -- LeaveOneOutLengthScales: ours, the scales its transform reads --------------------------
def _rebuild_length_scales(step: LeaveOneOutLengthScales, state: dict) -> None:
    _only(state, LeaveOneOutLengthScales._fitted_attributes)
    check_parameter("width_kernel", step.kernel, "kernel")
    p = _width(state.get("n_features_in_"), "n_features_in_")
    # fit's own checks convert with float() and int(): the types are checked first
    check_parameter("alpha", step.alpha)
    check_parameter("gamma", step.gamma)
    check_parameter("max_iter", step.max_iter)
    check_parameter("kernel_subsample", step.subsample, name="subsample")
    check_params(step)  # the bounds, and gamma and alpha positive
    scales = _vector(state.get("scales_"), "scales_", p, positive=True)
    # fit's optimiser keeps log(scales) within log(gamma * bounds) and log(m * alpha) within
    # log(m * [1e-8, 1e2]); exp(log(.)) rounds by a few ulps
    gamma = 1.0 / p if step.gamma is None else float(step.gamma)
    low, high = step.bounds
    slack = 1e-12
    if not ((scales >= gamma * low * (1 - slack)) & (scales <= gamma * high * (1 + slack))).all():
        raise ValueError(f"scales_ must lie within gamma * bounds = [{gamma * low:.6g}, "
                         f"{gamma * high:.6g}], the optimiser's box")
    for name in ("alpha_", "loo_error_", "initial_loo_error_"):
        value = state.get(name)
        if not isinstance(value, float) or not (np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite non-negative float; found {value!r}")
    if not 1e-8 * (1 - slack) <= state["alpha_"] <= 1e2 * (1 + slack):
        raise ValueError(f"alpha_ must lie within [1e-8, 1e2], the optimiser's box; found "
                         f"{state['alpha_']!r}")
    _int(state.get("n_iter_"), "n_iter_", 0)
    _set(step, state, LeaveOneOutLengthScales._fitted_attributes, p)


# -- SimpleImputer: refitted on its statistics -----------------------------------------------
_IMPUTER = ("n_features_in_", "statistics_", "indicator_features", "feature_names_in_")


def _imputer_state(step: SimpleImputer) -> dict:
    if not (isinstance(step.missing_values, float) and np.isnan(step.missing_values)) or \
            not isinstance(step.strategy, str) or step.statistics_.dtype.kind != "f":
        raise ValueError("a model file holds a SimpleImputer of numbers with "
                         "missing_values=np.nan and a named strategy")
    state = _public(step, ("n_features_in_", "feature_names_in_"))
    state["statistics_"] = np.asarray(step.statistics_, dtype=np.float64)
    state["indicator_features"] = (None if step.indicator_ is None
                                   else np.asarray(step.indicator_.features_, dtype=np.intp))
    return state


def _rebuild_imputer(step: SimpleImputer, state: dict) -> None:
    _only(state, _IMPUTER)
    if not (isinstance(step.missing_values, float) and np.isnan(step.missing_values)):
        # what save writes (_imputer_state): another marker would impute other values
        raise ValueError(f"missing_values must be NaN; found {step.missing_values!r}")
    p = _width(state.get("n_features_in_"), "n_features_in_")
    stats = _vector(state.get("statistics_"), "statistics_", p, nan=True)
    features = state.get("indicator_features")
    if (features is None) == bool(step.add_indicator):
        raise ValueError("indicator_features must be given exactly when add_indicator=True")
    prototype = stats[None, :].copy()
    if features is not None:
        if not (isinstance(features, np.ndarray) and features.ndim == 1
                and features.dtype.kind in "iu" and np.all(np.diff(features) > 0)
                and (not len(features) or (features[0] >= 0 and features[-1] < p))):
            raise ValueError(f"indicator_features must be increasing column indices < {p}")
        second = prototype.copy()
        second[0, features] = np.nan  # the missing-only indicator sees these columns
        prototype = np.vstack([prototype, second])
    step.fit(prototype)
    if not np.array_equal(step.statistics_, stats, equal_nan=True) or (
            features is not None and not np.array_equal(step.indicator_.features_, features)):
        raise ValueError("the SimpleImputer's statistics cannot be rebuilt exactly")
    _names_in(step, state, p)


# -- OneHotEncoder: refitted on its categories -----------------------------------------------
_ENCODER = ("n_features_in_", "categories_", "feature_names_in_")


def _encoder_state(step: OneHotEncoder) -> dict:
    if step.min_frequency is not None or step.max_categories is not None:
        raise ValueError("a model file holds no OneHotEncoder with infrequent categories "
                         "(min_frequency or max_categories)")
    state = _public(step, _ENCODER)
    state["categories_"] = list(step.categories_)
    return state


def _same_categories(a, b) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y) and all(u == v or (u != u and v != v)
                                 for u, v in zip(np.asarray(x).tolist(),
                                                 np.asarray(y).tolist(), strict=True))
        for x, y in zip(a, b, strict=True))


def _check_categories(c: np.ndarray, j: int) -> None:
    """One column's categories as the encoder's fit finds them: float64 or int64 numbers, or
    strings (a string array, or objects that are all ``str``); never dates, bytes, float16,
    or a mix that would fail only at transform."""
    if c.dtype in (np.float64, np.int64) or c.dtype.kind == "U":
        return
    if c.dtype.kind == "O" and all(isinstance(v, str) for v in c.tolist()):
        return
    raise ValueError(f"categories_[{j}] must hold float64 or int64 numbers or strings; "
                     f"found {c.dtype}")


def _rebuild_encoder(step: OneHotEncoder, state: dict) -> None:
    _only(state, _ENCODER)
    p = _width(state.get("n_features_in_"), "n_features_in_")
    cats = state.get("categories_")
    if not (isinstance(cats, list) and len(cats) == p and all(
            isinstance(c, np.ndarray) and c.ndim == 1 and len(c) for c in cats)):
        raise ValueError(f"categories_ must be {p} non-empty 1-D arrays")
    for j, c in enumerate(cats):
        _check_categories(c, j)
    numeric = [c.dtype.kind in "iuf" for c in cats]
    if len(set(numeric)) > 1 and state.get("feature_names_in_") is None:
        # an array's columns share one dtype: numbers and strings mix only in a data frame's
        j = numeric.index(not numeric[0])
        raise ValueError(f"categories_[{j}] holds {'numbers' if numeric[j] else 'strings'} "
                         f"and categories_[0] {'numbers' if numeric[0] else 'strings'}: an "
                         "encoder fitted on an array (no feature_names_in_) has categories of "
                         "one kind, its input's")
    if step.min_frequency is not None or step.max_categories is not None:
        raise ValueError("min_frequency and max_categories must be None")
    n = max(len(c) for c in cats)
    prototype = np.empty((n, p), dtype=np.float64 if all(numeric) else object)
    for j, c in enumerate(cats):
        prototype[:, j] = np.resize(c.astype(prototype.dtype), n)  # each category appears
    given = step.categories
    step.set_params(categories=[c.astype(prototype.dtype) for c in cats]).fit(prototype)
    step.set_params(categories=given)
    if not _same_categories(step.categories_, cats):
        raise ValueError("the OneHotEncoder's categories cannot be rebuilt exactly")
    _names_in(step, state, p)


# -- PCA: a projection, its transform reads components_, mean_ and explained_variance_ -------
_PCA = ("n_features_in_", "n_samples_", "n_components_", "components_", "mean_",
        "explained_variance_", "explained_variance_ratio_", "singular_values_",
        "noise_variance_", "feature_names_in_")


def _pca_state(step: PCA) -> dict:
    state = _public(step, _PCA)
    for name in _PCA[3:8]:  # float64 whatever the data's dtype (a float32 fit's are float32)
        state[name] = np.asarray(state[name], dtype=np.float64)
    state["noise_variance_"] = float(state["noise_variance_"])
    return state


def _rebuild_pca(step: PCA, state: dict) -> None:
    r"""The fitted state of a :class:`~sklearn.decomposition.PCA` as its fit makes it.

    With :math:`V` = ``components_`` (:math:`k \times p`), :math:`s` = ``singular_values_``
    and :math:`n` = ``n_samples_``: the rows of :math:`V` are orthonormal
    (:math:`V V^\top = I_k`), :math:`k \le \min(n, p)`, the explained variances are
    :math:`s^2 / (n - 1)`, non-negative and non-increasing, and their ratios lie in
    :math:`[0, 1]` and sum to at most 1. ``transform`` is then
    :math:`(X - \mu) V^\top`, divided by the square roots of the variances with ``whiten``.
    """
    _only(state, _PCA)
    step._validate_params()
    p = _width(state.get("n_features_in_"), "n_features_in_")
    n = _int(state.get("n_samples_"), "n_samples_", 2)
    k = _int(state.get("n_components_"), "n_components_", 1)
    if k > min(n, p):
        raise ValueError(f"n_components_={k} exceeds min(n_samples_, n_features_in_)="
                         f"{min(n, p)}")
    wanted = step.n_components
    if isinstance(wanted, numbers.Integral) and not isinstance(wanted, bool) and wanted != k \
            or wanted is None and k != min(n, p):
        raise ValueError(f"n_components_={k}, but n_components={wanted!r} gives "
                         f"{wanted if wanted is not None else min(n, p)}")
    V = state.get("components_")
    if not (isinstance(V, np.ndarray) and V.dtype == np.float64 and V.shape == (k, p)
            and np.isfinite(V).all()):
        found = f"{V.dtype} {V.shape}" if isinstance(V, np.ndarray) else type(V).__name__
        raise ValueError(f"components_ must be a finite float64 array of shape ({k}, {p}); "
                         f"found {found}")
    if not np.allclose(V @ V.T, np.eye(k), rtol=0, atol=1e-8):
        raise ValueError("components_ must have orthonormal rows")
    _vector(state.get("mean_"), "mean_", p)
    variance = _vector(state.get("explained_variance_"), "explained_variance_", k)
    singular = _vector(state.get("singular_values_"), "singular_values_", k)
    ratio = _vector(state.get("explained_variance_ratio_"), "explained_variance_ratio_", k)
    if (variance < 0).any() or (np.diff(variance) > 1e-12 * variance[0]).any():
        raise ValueError("explained_variance_ must be non-negative and non-increasing")
    if not np.allclose(variance, singular**2 / (n - 1), rtol=1e-8, atol=0):
        raise ValueError("explained_variance_ must be singular_values_**2 / (n_samples_ - 1)")
    if (ratio < 0).any() or ratio.sum() > 1 + 1e-8:
        raise ValueError("explained_variance_ratio_ must be non-negative, summing to at "
                         "most 1")
    noise = state.get("noise_variance_")
    if not isinstance(noise, float) or not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise_variance_ must be a finite non-negative float; found "
                         f"{noise!r}")
    _set(step, state, _PCA, p)


Rebuild = Callable[[Any, dict], None]

#: Step class name -> (its module, its declared state, how to read it, how to rebuild it). By
#: name: a model file loads the module of the steps it holds only.
STEPS: dict[str, tuple[str, tuple[str, ...], Callable[[Any], dict], Rebuild]] = {
    "StandardScaler": ("sklearn.preprocessing", _SCALER, lambda s: _public(s, _SCALER),
                       _rebuild_scaler),
    "HMCPreprocessor": ("ecrm.datasets.preprocessing", HMCPreprocessor._fitted_attributes,
                        lambda s: _public(s, HMCPreprocessor._fitted_attributes), _rebuild_hmc),
    "LeaveOneOutLengthScales": (
        "ecrm.weights.kernel.length_scales", LeaveOneOutLengthScales._fitted_attributes,
        lambda s: _public(s, LeaveOneOutLengthScales._fitted_attributes),
        _rebuild_length_scales),
    "SimpleImputer": ("sklearn.impute", _IMPUTER, _imputer_state, _rebuild_imputer),
    "MinMaxScaler": ("sklearn.preprocessing", _MINMAX, lambda s: _public(s, _MINMAX),
                     _rebuild_minmax),
    "OneHotEncoder": ("sklearn.preprocessing", _ENCODER, _encoder_state, _rebuild_encoder),
    "PCA": ("sklearn.decomposition", _PCA, _pca_state, _rebuild_pca),
}


def is_step(obj) -> bool:
    """Whether ``obj`` is an instance of exactly a class of :data:`STEPS` (a class whose
    module is not imported yet has no instance: nothing is imported)."""
    name = type(obj).__name__
    return name in STEPS and type(obj) is getattr(sys.modules.get(STEPS[name][0]), name, None)


def output_width(step) -> int:
    """The number of columns ``step`` hands to the next one."""
    return len(step.get_feature_names_out())
