"""The classes a model file may construct, and how each is described and rebuilt.

:mod:`ecrm.io` writes and reads model files; this module is its allow-list: every object in a
file names a class of :data:`REGISTRY`, and nothing else is ever constructed. Each entry says
which parameters describe the object, whether it has fitted state, and how that state is
checked and set back (the estimators' declared fitted attributes, the fit objects of the
solvers, the preprocessing steps of :mod:`ecrm._steps`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline

from ecrm import _steps, estimator, forest, joint, mixture, ssvm
from ecrm._archive import ModelFileError
from ecrm._solvers.base import RiskFit
from ecrm._solvers.centers import KMeansPlusPlusCenters, LeverageCenters, UniformCenters
from ecrm._solvers.dual import KernelFit
from ecrm._solvers.features import LinearFeatures, NystromFeatures
from ecrm._solvers.forest import ForestFit, Trees
from ecrm._solvers.primal import FeatureFit
from ecrm._state import (
    check_fit_kwargs,
    check_fitted_state,
    check_isotonic_kwargs,
    check_linear_features_kwargs,
    check_nystrom_kwargs,
    check_platt_kwargs,
)
from ecrm.calibration import IsotonicCalibration, PlattCalibration
from ecrm.losses import (
    AbsoluteLoss,
    FootruleLoss,
    HammingLoss,
    HierarchicalLoss,
    KendallLoss,
    SquaredLoss,
    SquaredRankLoss,
    ZeroOneLoss,
)
from ecrm.losses.base import LinearLoss
from ecrm.spaces import (
    CandidateSpace,
    FlowPolytope,
    Hierarchy,
    MultilabelSpace,
    PermutationSpace,
)


@dataclasses.dataclass(frozen=True)
class _Entry:
    """How a registered class is written (``describe``: the keyword arguments that build it)
    and, for a fitted one (an estimator, a preprocessing step, a pipeline), its declared
    state: ``fitted`` names it, ``state`` reads it, ``rebuild`` checks it and sets it on an
    instance built from the parameters."""

    cls: type
    describe: Callable[[Any], dict]
    fitted: tuple[str, ...] = ()
    state: Callable[[Any], dict] | None = None
    rebuild: Callable[[Any, dict], None] | None = None
    #: Checks the decoded keyword arguments before the class is built (its constructor may
    #: cast them: a file's strings must not become numbers).
    check: Callable[[dict], None] | None = None


def _absolute_loss(loss) -> dict:
    if not isinstance(loss.method, str):  # a user's risk minimiser is code: not in a file
        raise ModelFileError("cannot save a model whose AbsoluteLoss method is a function "
                             f"({getattr(loss.method, '__name__', type(loss.method).__name__)}):"
                             " a model file holds no code (use one of the named methods)")
    return {"method": loss.method, "time_limit": loss.time_limit}


def _registry() -> dict[str, _Entry]:
    def hierarchy(h) -> dict:
        labels = list(h.labels)
        return {"edges": [(labels[p], labels[c]) for p, c in np.asarray(h.edges).tolist()],
                "labels": labels}

    def no_args(_) -> dict:
        return {}

    def named(space) -> dict:  # an unnamed space is written as before names existed
        return {} if space.labels is None else {"labels": list(space.labels)}

    entries = [
        _Entry(Hierarchy, hierarchy),
        _Entry(MultilabelSpace, lambda s: {"n_labels": s.n_labels}),
        _Entry(CandidateSpace, lambda s: {"candidates": np.asarray(s.candidates),
                                          **named(s)}),
        _Entry(PermutationSpace, lambda s: {"n_items": s.n_items, **named(s)}),
        _Entry(FlowPolytope, lambda s: {"arcs": list(s.arcs), "supply": np.asarray(s.supply),
                                        "capacity": np.asarray(s.capacity),
                                        "nodes": list(s.nodes)}),
        _Entry(HammingLoss, no_args),
        _Entry(FootruleLoss, no_args),
        _Entry(SquaredRankLoss, no_args),
        _Entry(KendallLoss, no_args),
        _Entry(HierarchicalLoss, lambda loss: {"hierarchy": loss.hierarchy}),
        _Entry(ZeroOneLoss, lambda loss: {"space": loss.space}),
        _Entry(AbsoluteLoss, _absolute_loss),
        _Entry(SquaredLoss, no_args),
        _Entry(KernelFit, KernelFit.to_state),
        _Entry(FeatureFit, FeatureFit.to_state),
        _Entry(ForestFit, ForestFit.to_state),
        _Entry(Trees, lambda t: {"left": t.left, "right": t.right, "feature": t.feature,
                                 "threshold": t.threshold, "roots": t.roots}),
        _Entry(IsotonicCalibration, lambda c: {"breakpoints": c.breakpoints_,
                                               "values": c.values_, "indptr": c.indptr_}),
        _Entry(PlattCalibration, lambda c: {"a": c.a_, "b": c.b_}),
        _Entry(LinearFeatures, lambda f: {"n_features": f.n_features_out}),
        _Entry(UniformCenters, no_args),
        _Entry(KMeansPlusPlusCenters, no_args),
        _Entry(LeverageCenters, no_args),
        _Entry(NystromFeatures, lambda f: {"centres": f.centres, "kernel_params": f.kernel_params,
                                           "projection": f.projection}),
    ]
    entries += [_Entry(cls, _estimator_params, cls._fitted_attributes, _estimator_state,
                       _rebuild_estimator)
                for cls in (estimator.ECRM, estimator.ECRMCV, joint.JointKernelECRM,
                            ssvm.StructuredSVM, forest.ForestECRM, forest.ForestECRMCV,
                            mixture.MixedRiskECRM)]
    entries += [_Entry(cls, lambda s: s.get_params(deep=False), names, state, rebuild)
                for cls, (names, state, rebuild) in _steps.STEPS.items()]
    entries.append(_Entry(Pipeline, _pipeline_params, (), lambda _: {}, _check_pipeline))
    # the keyword arguments a constructor would cast, checked first (kept apart from the
    # entries above so that adding a class there stays a one-line change)
    checks = {KernelFit: check_fit_kwargs, FeatureFit: check_fit_kwargs,
              LinearFeatures: check_linear_features_kwargs, NystromFeatures: check_nystrom_kwargs,
              IsotonicCalibration: check_isotonic_kwargs, PlattCalibration: check_platt_kwargs}
    entries = [dataclasses.replace(e, check=checks[e.cls]) if e.cls in checks else e
               for e in entries]
    return {e.cls.__name__: e for e in entries}


def _estimator_params(model) -> dict:
    params = model.get_params(deep=False)
    for key in _TRANSIENT_PARAMS:
        if key in params:
            params[key] = None
    if callable(params.get("kernel")):
        raise ModelFileError("cannot save a model with a callable kernel: a model file holds no "
                             "code (use a named kernel or kernel='precomputed')")
    return params


#: What a file of a linear loss's feature fit (primal or Nystrom) leaves out: prediction
#: needs only the features and the coefficients, so its size does not grow with m.
_NOT_IN_FEATURE_FILES = ("X_fit_", "Y_fit_", "loo_predictions_", "loo_scores_")


def _estimator_state(model) -> dict:
    state = vars(model)  # the declared state only, never all of vars(model)
    out = {key: state[key] for key in type(model)._fitted_attributes if key in state}
    if isinstance(out.get("_fit"), FeatureFit) and isinstance(model.loss, LinearLoss):
        out.update((key, None) for key in _NOT_IN_FEATURE_FILES if key in out)
    return out


def _rebuild_estimator(model, fitted: dict) -> None:
    """Set an estimator's fitted state and check it is one its ``fit`` could have made."""
    for key, value in fitted.items():
        setattr(model, key, value)
    if isinstance(fitted.get("_fit"), RiskFit):  # the fit's training rows are X_fit_
        fitted["_fit"].X_train = fitted.get("X_fit_")
    own_check = getattr(model, "_check_fitted_state", None)  # the SSVM's own state
    if own_check is None:
        check_fitted_state(model)
    else:
        own_check()
    model._derive()


def _pipeline_params(pipe) -> dict:
    try:
        _check_pipeline(pipe, {})
    except ValueError as exc:
        raise ModelFileError(f"cannot save the Pipeline: {exc}") from None
    params = pipe.get_params(deep=False)
    params["memory"] = None
    if params.get("transform_input") is not None:
        raise ModelFileError("cannot save a Pipeline with transform_input (metadata routing)")
    return params


def _check_pipeline(pipe, fitted: dict) -> None:
    """A pipeline holds registered preprocessing steps, then a fitted ECRM estimator, each
    step's output as wide as the next step's input."""
    steps = pipe.steps
    if not (isinstance(steps, list) and steps and all(
            isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], str) for s in steps)):
        raise ValueError("steps must be a non-empty list of (name, step) pairs")
    names = [name for name, _ in steps]
    for i, name in enumerate(names):  # scikit-learn's rules: set_params needs them
        if "__" in name or name in names[:i] or name in pipe.get_params(deep=False):
            raise ValueError(f"step name {name!r} must be unique, without '__' and not a "
                             "parameter of the Pipeline")
    if not isinstance(pipe.verbose, bool):
        raise ValueError(f"verbose must be a bool; found {type(pipe.verbose).__name__}")
    *transforms, (_, last) = steps
    if type(last).__name__ not in _ESTIMATORS:
        raise ValueError(f"the last step must be one of {list(_ESTIMATORS)}; found "
                         f"{type(last).__name__}")
    width = None
    for name, step in transforms:
        if type(step) not in _steps.STEPS:
            raise ValueError(f"step {name!r} must be one of "
                             f"{[c.__name__ for c in _steps.STEPS]}; found {type(step).__name__}")
        if width is not None and step.n_features_in_ != width:
            raise ValueError(f"step {name!r} takes {step.n_features_in_} columns; the step "
                             f"before it gives {width}")
        width = _steps.output_width(step)
    if width is not None and last.n_features_in_ != width:
        raise ValueError(f"the estimator takes {last.n_features_in_} columns; the step before "
                         f"it gives {width}")


#: The estimators a model file holds (alone or as a pipeline's last step).
_ESTIMATORS = ("ECRM", "ECRMCV", "JointKernelECRM", "StructuredSVM", "ForestECRM",
               "ForestECRMCV", "MixedRiskECRM")


class _LazyRegistry(dict):
    """The registry, built on first use (it imports the estimators, which import this module's
    package lazily)."""

    def _fill(self) -> None:
        if not dict.__len__(self):
            self.update(_registry())

    def __getitem__(self, key):
        self._fill()
        return dict.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        self._fill()
        return dict.__contains__(self, key)

    def keys(self):
        self._fill()
        return dict.keys(self)


#: Class name -> how to describe and rebuild it. Only these classes are ever constructed.
REGISTRY: dict[str, _Entry] = _LazyRegistry()

#: Parameters that are not part of a fitted model: written as ``None``.
_TRANSIENT_PARAMS = ("memory", "random_state")
