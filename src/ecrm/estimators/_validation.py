"""Parameter and input checks shared by every module: one message per kind of mistake.

Each check returns the cleaned value or raises ``ValueError`` (``TypeError`` for a wrong
type) naming the parameter, what was expected and what was found.
"""

from __future__ import annotations

import numbers
from typing import Literal, overload

import numpy as np

__all__ = ["check_bool", "check_feature_scales", "check_float_array", "check_int", "check_real",
           "check_same_rows", "honest_scale_check"]


def check_real(value, name: str, *, low: float = 0.0, high: float = np.inf,
               low_open: bool = True, high_open: bool = False) -> float:
    """``value`` as a float in the interval from ``low`` to ``high`` (open or closed ends).

    >>> check_real(0.5, "alpha")
    0.5
    >>> check_real(-1, "alpha")
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a real number in (0, inf); got -1
    """
    lo, hi = "(" if low_open else "[", ")" if high_open or np.isinf(high) else "]"
    interval = f"{lo}{low:g}, {high:g}{hi}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in {interval}; got {value!r}")
    v = float(value)
    ok = np.isfinite(v) and (v > low if low_open else v >= low) and (
        v < high if high_open else v <= high)
    if not ok:
        raise ValueError(f"{name} must be a real number in {interval}; got {value!r}")
    return v


@overload
def check_int(value, name: str, *, low: int = ..., high: int | None = ...,
              allow_none: Literal[False] = ...) -> int: ...


@overload
def check_int(value, name: str, *, low: int = ..., high: int | None = ...,
              allow_none: bool) -> int | None: ...


def check_int(value, name: str, *, low: int = 1, high: int | None = None,
              allow_none: bool = False) -> int | None:
    """``value`` as an int with ``low <= value <= high`` (``None`` passes if allowed).

    >>> check_int(3, "n_jobs")
    3
    >>> check_int(2.5, "degree")
    Traceback (most recent call last):
    ...
    ValueError: degree must be an integer >= 1; got 2.5
    """
    if value is None and allow_none:
        return None
    span = f">= {low}" if high is None else f"in [{low}, {high}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer {span}; got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        raise ValueError(f"{name} must be an integer {span}; got {value!r}")
    return v


def check_bool(value, name: str) -> bool:
    """``value`` as a bool; only ``True``/``False`` (and numpy bools) are accepted."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_same_rows(first, second, names: tuple[str, str] = ("X", "Y")) -> None:
    """Raise ``ValueError`` unless ``first`` and ``second`` have the same number of rows."""
    n1, n2 = first.shape[0], second.shape[0]
    if n1 != n2:
        raise ValueError(f"{names[0]} and {names[1]} must have the same number of rows; "
                         f"got {n1} and {n2}")


def check_feature_scales(X, owner: str, *, names=None, max_ratio: float = 1e3) -> float:
    """Warn if the non-constant features' standard deviations span more than ``max_ratio``.

    A kernel on such features sees only the widest (income in dollars beside ratios), and
    the model often predicts one constant output: a
    :class:`~ecrm.exceptions.FeatureScaleWarning` names the widest and narrowest columns.
    Constant columns (maximum equal to minimum) are left out.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (m, p), float
    owner : str
        Who checks (the estimator's name), to start the message.
    names : sequence of p str, optional
        The columns' names (else their indices) for the message.
    max_ratio : float, default=1e3

    Returns
    -------
    ratio : float
        The largest standard deviation over the smallest (1 if fewer than two features vary).

    Examples
    --------
    >>> import warnings
    >>> X = np.array([[0.1, 20000.0], [0.5, 90000.0], [0.3, 45000.0]])
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     ratio = check_feature_scales(X, "ECRM")
    >>> f"{ratio:.3g}", w[0].category.__name__
    ('1.77e+05', 'FeatureScaleWarning')
    """
    import warnings

    from ecrm.exceptions import FeatureScaleWarning

    std = feature_deviations(X)
    if np.count_nonzero(~np.isnan(std)) < 2:
        return 1.0
    wide, narrow = int(np.nanargmax(std)), int(np.nanargmin(std))
    ratio = float(std[wide] / std[narrow])
    if ratio > max_ratio:
        col = (lambda j: f"feature {j}") if names is None else (lambda j: repr(str(names[j])))
        warnings.warn(
            f"{owner}: the features' standard deviations differ by a factor of {ratio:.3g} "
            f"({col(wide)}: {std[wide]:.3g}, {col(narrow)}: {std[narrow]:.3g}); a kernel "
            "on them sees mostly the widest, and the model may predict nearly one output for "
            "every row. Standardise them: a Pipeline with sklearn.preprocessing.StandardScaler "
            "(ecrm fit --standardize yes, or --cv to choose by leave-one-out)",
            FeatureScaleWarning, stacklevel=4)
    return ratio


def check_float_array(value, name: str, shape: tuple, *, finite: bool = True) -> None:
    """``value`` is a float64 array of ``shape`` (finite unless told), as fit leaves it: a
    model file's array is refused otherwise, naming ``name``."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float64:
        found = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
        raise TypeError(f"{name} must be a float64 array; found {found}")
    if value.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; found {value.shape}")
    if finite and not np.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or infinite values")


#: Standardising changes a kernel's effective width when a varying feature's standard
#: deviation :math:`s_j` is off 1 by more than this factor: an RBF kernel weighs feature
#: :math:`j` by :math:`\gamma s_j^2`, which standardising replaces by :math:`\gamma`.
SCALE_FACTOR = 2.0


def feature_deviations(X) -> np.ndarray:
    """The standard deviation of each column of ``X`` (dense or sparse); NaN for a constant
    column (its maximum equal to its minimum)."""
    import scipy.sparse as sp

    if sp.issparse(X):
        X = sp.csc_array(X)
        mean = np.asarray(X.mean(axis=0)).ravel()
        std = np.sqrt(np.maximum(np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean ** 2, 0))
        varies = X.max(axis=0).toarray().ravel() != X.min(axis=0).toarray().ravel()
    else:
        X = np.asarray(X, dtype=float)
        std, varies = X.std(axis=0), X.max(axis=0) != X.min(axis=0)
    return np.where(varies & (std > 0), std, np.nan)


def standardising_changes(X, kernel: str) -> bool:
    """Whether standardising ``X`` changes what ``kernel`` sees: a varying feature's standard
    deviation is off 1 by more than :data:`SCALE_FACTOR` (never for a precomputed kernel)."""
    std = feature_deviations(X)
    if kernel == "precomputed" or np.isnan(std).all():
        return False
    return bool(np.nanmax(np.abs(np.log(std))) > np.log(SCALE_FACTOR))


def _standardised(X):
    """``X`` with each varying column divided by its deviation (dense: centred too)."""
    import scipy.sparse as sp

    std = feature_deviations(X)
    scale = np.where(np.isnan(std), 1.0, std)
    if sp.issparse(X):
        return sp.csr_array(sp.csc_array(X) @ sp.diags_array(1.0 / scale))
    X = np.asarray(X, dtype=float)
    return (X - X.mean(axis=0)) / scale


def _honest_search(model):
    """An unfitted search whose exact leave-one-out criterion is ``model``'s honest one:
    a copy of an :class:`~ecrm.ECRMCV`, or for a fixed ``alpha`` the one-candidate search
    of the same kernel, alpha and intercept."""
    from sklearn.base import clone

    from ecrm.selection import LeaveOneOutSearch
    from ecrm.weights.kernel.estimator import ECRMCV

    if isinstance(model, ECRMCV):
        search = clone(model.search_settings()).set_params(verbose=0, calibration=None)
        return clone(model).set_params(alphas=None, scoring=None, search=search)
    params = model.get_params(deep=False)
    search = LeaveOneOutSearch(fit_intercept=params.pop("fit_intercept"))
    alphas = [params.pop("alpha")]
    return ECRMCV(**params, alphas=alphas, search=search)


def _loo_losses(search) -> np.ndarray:
    """The per-row task losses of a fitted search's exact leave-one-out predictions."""
    Y = search.Y_fit_[search.loo_rows_]
    return np.asarray(search.loss(search.loo_predictions_, Y), dtype=float).reshape(-1)


def _baselines(model, Y) -> dict:
    """The constant predictions of the trivial baselines, by name: the most frequent
    training output; for label sets also the empty set and the per-label majority."""
    from ecrm.baselines.trivial import output_statistics
    from ecrm.tasks import task_of_space

    Y = np.asarray(Y, dtype=float)
    mean, mode = output_statistics(Y)
    out = {"most_frequent": mode}
    try:
        labels = task_of_space(model.output_space).name == "multilabel"
    except ValueError:
        labels = False
    if labels:
        majority = (mean > 0.5).astype(float)[None, :]
        close = getattr(model.output_space, "close", None)
        out = {"empty": np.zeros_like(mean), **out,
               "majority": (close(majority) if close is not None else majority)[0]}
    return out


#: A fixed-``alpha`` model's check runs on at most this many random training rows (two
#: eigendecompositions of their kernel), so that its cost stays bounded.
CHECK_ROWS = 2000


def honest_scale_check(model, X, Y, *, names=None,
                       how: str = "a Pipeline with sklearn.preprocessing.StandardScaler",
                       loss_name: str | None = None,
                       max_rows: int = CHECK_ROWS) -> dict | None:
    r"""Warn when a kernel model does no better than its trivial baselines and standardising
    the features would have given a better one.

    The honest criterion is the exact leave-one-out task loss: ``model``'s own when it is an
    :class:`~ecrm.ECRMCV` selected by the loss, else that of its fixed ``alpha`` (one more
    factorisation; on ``max_rows`` random training rows, the same for every call, when
    there are more). The model *beats* a baseline (a constant prediction: the empty set, the
    most frequent training output, the per-label majority) when the mean of the per-row
    differences :math:`d_i = \ell(\hat y_{-i}, y_i) - \ell(c, y_i)` is below
    :math:`-2\,\mathrm{se}(d)`, two standard errors. When it does not beat them all, and
    standardising changes the kernel's effective width (:func:`standardising_changes`), the
    same search (the same grid) is run once more on the standardised features; a
    :class:`~ecrm.exceptions.FeatureScaleWarning` says what each gives and ``how`` to ask
    for it, when the standardised criterion is the lower.

    Parameters
    ----------
    model : fitted ECRM or ECRMCV
        Fitted on ``X`` (its features as given to it).
    X : ndarray or sparse matrix of shape (m, p)
    Y : array-like of shape (m, d)
        The training outputs, in the output space.
    names : sequence of p str, optional
        The columns' names, for the message.
    how : str
        How to ask for standardised features, for the message.
    loss_name : str, optional
        The loss's name in the message (default: its class's, ``HammingLoss``: hamming).
    max_rows : int, default=CHECK_ROWS
        The rows a fixed-``alpha`` model is checked on, at most (a search's own criterion
        is on every row).

    Returns
    -------
    result : dict or None
        ``None`` when nothing was checked (another criterion than the loss, a precomputed
        kernel, the model beats every baseline, standardising changes nothing); else
        ``loss`` (the model's leave-one-out loss), ``baseline`` and ``baseline_loss`` (the
        best baseline's name and loss on the training outputs), ``standardised`` (the
        leave-one-out loss on the standardised features), ``rows`` (those checked, ``None``:
        all) and ``warned``.
    """
    import warnings

    from ecrm.baselines.trivial import _PHRASES
    from ecrm.exceptions import FeatureScaleWarning
    from ecrm.weights.kernel.estimator import ECRMCV

    kernel = model.kernel_params_["kernel"] if hasattr(model, "kernel_params_") else None
    if kernel in (None, "precomputed") or getattr(model, "scoring", "loss") != "loss":
        return None
    if not standardising_changes(X, kernel):
        return None
    rows = None
    if not isinstance(model, ECRMCV) and X.shape[0] > max_rows:
        rows = np.sort(np.random.default_rng(0).choice(X.shape[0], max_rows, replace=False))
        X, Y = X[rows], np.asarray(Y)[rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the searches' own warnings: said by the fit
        own = model if isinstance(model, ECRMCV) else _honest_search(model).fit(X, Y)
        losses = _loo_losses(own)
        Y_rows = own.Y_fit_[own.loo_rows_]
        base = {name: np.asarray(own.loss(np.broadcast_to(row, Y_rows.shape), Y_rows),
                                 dtype=float).reshape(-1)
                for name, row in _baselines(own, own.Y_fit_).items()}
        n = len(losses)
        beaten = [n > 1 and (d := losses - values).mean() < -2 * d.std(ddof=1) / np.sqrt(n)
                  for values in base.values()]
        if all(beaten):
            return None  # the scales did not stop it learning
        best = min(base, key=lambda b: base[b].mean())
        standardised = _honest_search(model).fit(_standardised(X), Y)
    result = {"loss": float(losses.mean()), "baseline": best,
              "baseline_loss": float(base[best].mean()),
              "standardised": float(_loo_losses(standardised).mean()), "rows": rows,
              "warned": False}
    if result["standardised"] >= result["loss"]:
        return result
    std = feature_deviations(X)
    wide, narrow = int(np.nanargmax(std)), int(np.nanargmin(std))
    col = (lambda j: f"feature {j}") if names is None else (lambda j: repr(str(names[j])))
    loss = loss_name or type(model.loss).__name__.removesuffix("Loss").lower()
    phrase = _PHRASES[best] if "empty" in base else "the most frequent training output"
    where = "" if rows is None else f" (on {len(rows)} random training rows)"
    warnings.warn(
        f"the model's exact leave-one-out {loss} loss{where} {result['loss']:.4f} does not "
        f"beat {result['baseline_loss']:.4f}, that of always predicting {phrase}, by two "
        f"standard errors; the features' standard deviations range from "
        f"{std[narrow]:.3g} ({col(narrow)}) to {std[wide]:.3g} ({col(wide)}), and the "
        f"{kernel} kernel sees mostly the widest. With the features standardised, the same "
        f"fit's leave-one-out {loss} loss is {result['standardised']:.4f}: standardise "
        f"them ({how})", FeatureScaleWarning, stacklevel=2)
    result["warned"] = True
    return result
