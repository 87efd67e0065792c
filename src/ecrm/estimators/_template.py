r"""The template every estimator of this package follows, whatever its weights.

An estimator (ECRM with kernel or forest weights, their searches, the multitask kernel, the
structured SVM, the mixture) is a scikit-learn estimator of a (loss, output space) pair
that answers four questions the same way:

* **its parameter plan**: :meth:`_check_params` checks the loss, the output space and every
  parameter before any work, by walking the class's table of constraints and its
  cross-parameter rules (:func:`ecrm.estimators._parameters.check_params`), and returns the cleaned
  values by name (a read-only :class:`ecrm.estimators._parameters.Plan`); ``fit`` and the model-file
  loader both run it, and no estimator checks a parameter by hand;
* **its training data**: :meth:`_check_training_data` reads the outputs (names, paths or
  0/1 rows) into the output space, checks ``X`` for the kernel, the rows and the feature
  scales, and returns what the inputs say about the model (:class:`Seen`) without setting
  anything;
* **its fitted state**: :meth:`_set_fitted` sets the declared fitted attributes
  (``_fitted_attributes``, the only names :mod:`ecrm.model_files.io` writes) together, once every
  check and solve has succeeded, removing those of an earlier fit;
* **the check of a fitted state**: :meth:`_check_fitted_state` (what :func:`ecrm.load` runs
  on a file's state) runs the plan, the checks of the training state every estimator shares
  (:func:`ecrm.model_files._state.check_training_state`), then the estimator's own
  :meth:`_check_own_state`.

A new weight family declares its table (``_parameter_constraints``, ``_parameter_rules``),
implements ``__init__``, ``fit`` (calling the plan and the two data methods) and
``_check_own_state``, and adds one line to the table of families
(:func:`ecrm.weights.register_family`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from ecrm.datasets.labels import _level_table, as_label_matrix, labels_of
from ecrm.estimators._parameters import Plan, check_params
from ecrm.estimators._validation import check_feature_scales, check_same_rows
from ecrm.losses.base import LinearLoss, Loss
from ecrm.spaces.base import OutputSpace
from ecrm.threads import within_rule
from ecrm.weights.kernel._kernels import check_kernel_input
from ecrm.weights.kernel._solvers._backend import Backend, _NumpyBackend, get_backend
from ecrm.weights.kernel._solvers.rows import validate_outputs

__all__ = ["Seen", "StructuredEstimator"]


class _FeatureNames(BaseEstimator):
    """Receives scikit-learn's feature-name checks at fit, so that a failed fit sets nothing."""


@dataclass(frozen=True)
class Seen:
    """What the training inputs say about the fitted model (set only when the fit succeeds)."""

    feature_names: np.ndarray | None
    y_ndim: int
    backend: Backend


#: Views of the fitted state, set by ``_derive`` (never stored in a model file).
DERIVED = ("dual_coef_", "coef_", "intercept_")


class StructuredEstimator(BaseEstimator):
    """The template (see the module docstring), with what every estimator shares: the
    scikit-learn tags of a (loss, output space, kernel) estimator, the check of its loss and
    output space, label names and ``score`` (minus the mean task loss)."""

    #: The fitted attributes: removed and set together by a successful fit, the only names
    #: a model file holds.
    _fitted_attributes: tuple[str, ...] = ()
    #: The declared fitted attributes a fit may leave unset (the input's column names, those
    #: ``ecrm fit`` adds, the outputs' statistics of in-memory outputs): a model file must
    #: hold every other one (:mod:`ecrm.model_files._registry` refuses a file without it).
    _optional_fitted_attributes: tuple[str, ...] = (
        "feature_names_in_", "feature_columns_", "level_columns_", "output_mean_",
        "output_mode_", "reading_options_")
    #: Each constructor parameter's constraint but the loss's and the output space's
    #: (:func:`ecrm.estimators._parameters.table`): what :meth:`_check_params` checks, one by one;
    #: ``tests/estimators/test_parameter_tables.py`` is generated from these tables.
    _parameter_constraints: dict = {}
    #: The constraints of several parameters at once and the plan entries derived from them
    #: (:class:`ecrm.estimators._parameters.Rule`), checked after the table, in order.
    _parameter_rules: tuple = ()
    #: Whether the loss must have a linear form (:class:`ecrm.losses.LinearLoss`).
    _linear_loss = False
    #: Whether ``fit`` takes Dask arrays (a map-reduce over their row chunks).
    _fits_dask = False

    def __init_subclass__(cls, **kwargs):
        """Small problems on one BLAS thread: each ``fit``, ``predict`` and
        ``predict_scores`` a class defines runs within :func:`ecrm.threads.within_rule`."""
        super().__init_subclass__(**kwargs)
        for name in ("fit", "predict", "predict_scores"):
            if name in vars(cls):
                setattr(cls, name, within_rule(vars(cls)[name]))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = getattr(self, "kernel", None) == "precomputed"
        tags.target_tags.required = True
        tags.target_tags.multi_output = True  # outputs are vectors of the output space
        tags.target_tags.single_output = getattr(self.output_space, "n_outputs", 0) == 1
        return tags

    # -- the parameter plan -------------------------------------------------------------
    def _check_params(self) -> Plan:
        """The loss, the output space and every parameter, checked before any work (``fit``
        and the model-file loader): the parameter plan of the class's table and rules."""
        self._check_components(linear=self._linear_loss)
        return check_params(self)

    def _check_components(self, *, linear: bool = False) -> None:
        if not isinstance(self.loss, Loss):
            raise TypeError(f"loss must be an ecrm.losses.Loss; got {type(self.loss).__name__}")
        if not isinstance(self.output_space, OutputSpace):
            raise TypeError(
                "output_space must be an ecrm output space (e.g. ecrm.Hierarchy); "
                f"got {type(self.output_space).__name__}"
            )
        if linear and not isinstance(self.loss, LinearLoss):
            raise TypeError(f"{type(self).__name__} needs a loss with a linear form (an "
                            f"ecrm.losses.LinearLoss); {type(self.loss).__name__} has none")
        self.loss.check_space(self.output_space)

    # -- the training data ----------------------------------------------------------------
    def _check_training_data(self, X, Y, kernel, *, compact: bool = False):
        """The checked training rows ``(X, Y, seen)``; nothing is set on ``self``.

        ``kernel`` is the one ``X`` is checked for (``None``: trees, which need no scaling);
        ``compact`` keeps 1-byte outputs as they are (the primal solvers' passes).
        """
        name = type(self).__name__
        if Y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None")
        Y = as_label_matrix(self.output_space, Y)  # names, paths or levels -> 0/1
        backend = get_backend(X, Y)  # chosen once per fit
        if not isinstance(backend, _NumpyBackend):  # Dask arrays
            if not self._fits_dask:
                raise TypeError(f"{name} fits in-memory arrays; compute the Dask arrays first")
            X, Y, y_ndim = backend.check_training_data(X, Y, self.loss, self.output_space,
                                                       name)  # checked per chunk
            return X, Y, Seen(None, y_ndim, backend)
        checked = check_kernel_input(X, kernel)
        probe = _FeatureNames()  # scikit-learn's own reading of the feature names
        validate_data(probe, X, reset=True, skip_check_array=True)
        X = checked
        y_ndim = np.ndim(Y)
        if y_ndim == 1 and self.output_space.n_outputs == 1:
            Y = np.reshape(Y, (-1, 1))  # one coordinate: a 1-D y has one row per sample
        Y = validate_outputs(self.output_space, Y, compact=compact)
        check_same_rows(X, Y)
        if X.shape[0] < 2:
            raise ValueError(f"{name} needs at least 2 training samples; got {X.shape[0]} "
                             f"(n_samples = {X.shape[0]})")
        names = getattr(probe, "feature_names_in_", None)
        if kernel not in (None, "precomputed"):
            check_feature_scales(X, name, names=names)
        return X, Y, Seen(names, y_ndim, backend)

    # -- the fitted state -----------------------------------------------------------------
    def _clear_fitted(self) -> None:
        for name in self._fitted_attributes + DERIVED:
            if name in vars(self):
                delattr(self, name)

    def _set_fitted(self, X, Y, seen: Seen, **state) -> None:
        """Set the fitted attributes, once every check and solve has succeeded: the
        training state every estimator shares (the rows, their feature and output names,
        the outputs' statistics where declared), then ``state``; every declared attribute
        of an earlier fit is removed first, so none survives a refit."""
        self._clear_fitted()
        shared = {"X_fit_": X, "Y_fit_": Y, "n_features_in_": X.shape[1],
                  "_y_ndim": seen.y_ndim, "feature_names_in_": seen.feature_names,
                  "label_names_": np.array(list(self.output_space.output_names) + [None],
                                           dtype=object)[:-1]}  # tuples stay items
        if isinstance(Y, np.ndarray) and Y.ndim == 2:  # the baselines' statistics (not Dask)
            from ecrm.baselines.trivial import output_statistics

            shared["output_mean_"], shared["output_mode_"] = output_statistics(Y)
        for name, value in shared.items():
            if name in self._fitted_attributes and value is not None:
                setattr(self, name, value)
        self._set_state(state)

    def _set_state(self, state: dict) -> None:
        """Set declared fitted attributes (then the derived views)."""
        for name, value in state.items():
            if name not in self._fitted_attributes:
                raise AttributeError(f"{name!r} is not a declared fitted attribute")
            setattr(self, name, value)
        self._derive()

    def _derive(self) -> None:
        """The views of the fitted state that a model file does not hold (none here)."""

    def _check_fitted_state(self) -> None:
        """Raise ``ValueError``/``TypeError`` unless the fitted state is one this model's
        ``fit`` could have produced (:func:`ecrm.load` runs it on a file's state)."""
        from ecrm.model_files._state import check_training_state

        plan = self._check_params()
        training = check_training_state(self) if "X_fit_" in self._fitted_attributes else None
        self._check_own_state(plan, training)

    def _check_own_state(self, plan: Plan, training) -> None:
        """The estimator's own fitted attributes against its ``plan`` and the checked
        training state (:class:`ecrm.model_files._state.TrainingState`)."""
        raise NotImplementedError

    # -- what every estimator answers -------------------------------------------------------
    def predict_labels(self, X, *, leaves_only: bool = False, per_level: bool = False,
                       path_sep="auto"):
        """The predicted label names of each row (a model of a label hierarchy).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
        leaves_only, per_level, path_sep
            As in :func:`ecrm.datasets.labels.predict_labels`: the most specific labels
            only, one list per depth level (``ecrm predict --per-level``'s layout), and the
            separator of the cells' last path steps (``"auto"``: the model's).

        Returns
        -------
        labels : list of n lists, or ndarray of shape (n, n_levels) with ``per_level``
        """
        if not hasattr(self.output_space, "to_labels"):
            raise TypeError(f"predict_labels needs a model of a label hierarchy; this one's "
                            f"outputs are a {type(self.output_space).__name__}")
        if per_level and not leaves_only:
            return _level_table(self, self.predict(X), path_sep)
        return labels_of(self.output_space, self.predict(X), leaves_only=leaves_only,
                         per_level=per_level)

    def score(self, X, y) -> float:
        """Minus the mean task loss of :meth:`predict` on ``(X, y)`` (greater is better).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p)
        y : array-like of shape (n, d), or (n,) for one output coordinate
            True outputs (named ``y`` as in scikit-learn's ``score``).

        Returns
        -------
        score : float
        """
        P = self.predict(X)
        y = as_label_matrix(self.output_space, y)
        if np.ndim(P) == 1:
            P, y = P[:, None], np.reshape(y, (-1, 1))
        return -float(np.mean(self.loss(P, y)))
