"""The classes a model file may construct, and how each is described and rebuilt.

The allow-list of :mod:`ecrm.model_files.io`: every object in a file names a class of
:data:`REGISTRY`, and nothing else is ever constructed. Each entry says which parameters
describe the object, and how its fitted state, if any, is checked and set back. The estimators
and fit classes of the weight families are read from their table (:data:`ecrm.weights.FAMILIES`)
at every look-up.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from ecrm.losses.base import LinearLoss
from ecrm.model_files import _steps
from ecrm.model_files._archive import ModelFileError
from ecrm.model_files._kernel_state import (
    check_fit_kwargs,
    check_linear_features_kwargs,
    check_nystrom_kwargs,
)
from ecrm.model_files._search_state import check_isotonic_kwargs, check_platt_kwargs
from ecrm.weights._fit import RiskFit
from ecrm.weights.kernel._solvers.primal import FeatureFit
from ecrm.weights.kernel._solvers.rows import is_dask_array
from ecrm.weights.kernel._solvers.solver import SOLVER_CLASSES, Solver


@dataclasses.dataclass(frozen=True)
class _Entry:
    """How a registered class is written (``describe``: the keyword arguments that build it)
    and, for a fitted one, its declared state: ``fitted`` names it, ``state`` reads it,
    ``rebuild`` checks it and sets it on an instance built from the parameters."""

    cls: type
    describe: Callable[[Any], dict]
    fitted: tuple[str, ...] = ()
    state: Callable[[Any], dict] | None = None
    rebuild: Callable[[Any, dict], None] | None = None
    #: Checks the decoded keyword arguments before the class is built (its constructor may
    #: cast them: a file's strings must not become numbers).
    check: Callable[[dict], None] | None = None
    #: Maps the decoded keyword arguments of an older layout of the class's parameters to
    #: the current one (:data:`_OLD_LAYOUTS`).
    upgrade: Callable[[dict], dict] | None = None
    #: Maps ``(params, fitted)`` of an older layout of the fitted state to the current
    #: fitted state (:data:`_OLD_STATES`).
    upgrade_state: Callable[[dict, dict], dict] | None = None


def _absolute_loss(loss) -> dict:
    if not isinstance(loss.method, str):  # a user's risk minimiser is code: not in a file
        raise ModelFileError("cannot save a model whose AbsoluteLoss method is a function "
                             f"({getattr(loss.method, '__name__', type(loss.method).__name__)}):"
                             " a model file holds no code (use one of the named methods)")
    return {"method": loss.method, "time_limit": loss.time_limit}


def _hierarchy(h) -> dict:
    labels = list(h.labels)
    return {"edges": [(labels[p], labels[c]) for p, c in np.asarray(h.edges).tolist()],
            "labels": labels}


def _no_args(_) -> dict:
    return {}


def _named(space) -> dict:  # an unnamed space is written as before names existed
    return {} if space.labels is None else {"labels": list(space.labels)}


#: The classes without fitted state: name -> (module, the keyword arguments that build one).
_PLAIN: dict[str, tuple[str, Callable[[Any], dict]]] = {
    "Hierarchy": ("ecrm.spaces", _hierarchy),
    "MultilabelSpace": ("ecrm.spaces", lambda s: {"n_labels": s.n_labels}),
    "CandidateSpace": ("ecrm.spaces", lambda s: {"candidates": np.asarray(s.candidates),
                                                 **_named(s)}),
    "PermutationSpace": ("ecrm.spaces", lambda s: {"n_items": s.n_items, **_named(s)}),
    "BucketOrderSpace": ("ecrm.spaces", lambda s: {"n_labels": s.n_labels, **_named(s)}),
    "FlowPolytope": ("ecrm.spaces", lambda s: {"arcs": list(s.arcs),
                                               "supply": np.asarray(s.supply),
                                               "capacity": np.asarray(s.capacity),
                                               "nodes": list(s.nodes)}),
    "HammingLoss": ("ecrm.losses", _no_args),
    "FootruleLoss": ("ecrm.losses", _no_args),
    "SquaredRankLoss": ("ecrm.losses", _no_args),
    "KendallLoss": ("ecrm.losses", _no_args),
    "TauXLoss": ("ecrm.losses", lambda loss: {"n_labels": loss.n_labels}),
    "KendallTiesLoss": ("ecrm.losses", lambda loss: constructor_params(loss)),
    "HierarchicalLoss": ("ecrm.losses", lambda loss: {"hierarchy": loss.hierarchy}),
    "ZeroOneLoss": ("ecrm.losses", lambda loss: {"space": loss.space}),
    "AbsoluteLoss": ("ecrm.losses", _absolute_loss),
    "SquaredLoss": ("ecrm.losses", _no_args),
    "Trees": ("ecrm.weights.forest._fit", lambda t: {"left": t.left, "right": t.right,
                                                 "feature": t.feature,
                                                 "threshold": t.threshold, "roots": t.roots}),
    "IsotonicCalibration": ("ecrm.selection.calibration", lambda c: {"breakpoints": c.breakpoints_,
                                                           "values": c.values_,
                                                           "indptr": c.indptr_}),
    "PlattCalibration": ("ecrm.selection.calibration", lambda c: {"a": c.a_, "b": c.b_}),
    "LinearFeatures": ("ecrm.weights.kernel._solvers.features",
                       lambda f: {"n_features": f.n_features_out}),
    "UniformCenters": ("ecrm.weights.kernel._solvers.centers", _no_args),
    "KMeansPlusPlusCenters": ("ecrm.weights.kernel._solvers.centers", _no_args),
    "LeverageCenters": ("ecrm.weights.kernel._solvers.centers", _no_args),
    "NystromFeatures": ("ecrm.weights.kernel._solvers.features", lambda f: {
        "centres": f.centres, "kernel_params": f.kernel_params, "projection": f.projection}),
    "LeaveOneOutSearch": ("ecrm.selection._search", lambda s: {**s.get_params(deep=False),
                                                     "memory": None}),
    "OutOfBagSearch": ("ecrm.selection._search", lambda s: s.get_params(deep=False)),
}

def _search_check(kwargs: dict, kind: str = "LeaveOneOutSearch") -> None:
    from ecrm.selection import _search

    _search.check_search(getattr(_search, kind)(**kwargs), getattr(_search, kind))


#: The keyword arguments a constructor would cast, checked first (a file's strings must not
#: become numbers).
_CHECKS: dict[str, Callable[[dict], None]] = {
    "KernelFit": check_fit_kwargs, "FeatureFit": check_fit_kwargs,
    "LinearFeatures": check_linear_features_kwargs, "NystromFeatures": check_nystrom_kwargs,
    "IsotonicCalibration": check_isotonic_kwargs, "PlattCalibration": check_platt_kwargs,
    "LeaveOneOutSearch": _search_check,
    "OutOfBagSearch": lambda kwargs: _search_check(kwargs, "OutOfBagSearch")}


def _ecrm_layout(params: dict) -> dict:
    from ecrm.weights.kernel._old_layouts import ecrm_params_of_old_layout

    return ecrm_params_of_old_layout(params)


def _ecrmcv_layout(params: dict) -> dict:
    from ecrm.weights.kernel._old_layouts import ecrmcv_params_of_old_layout

    return ecrmcv_params_of_old_layout(params)


def _forest_layout(params: dict) -> dict:
    from ecrm.weights.forest._old_layouts import forest_params_of_old_layout

    return forest_params_of_old_layout(params)


def _mixture_layout(params: dict) -> dict:
    return {**params, **{key: layout(params[key]) for key, layout in (
        ("kernel_options", _ecrmcv_layout), ("forest_options", _forest_layout))
        if isinstance(params.get(key), dict)}}


#: Estimators whose parameters changed layout: the map from a file's older one.
_OLD_LAYOUTS: dict[str, Callable[[dict], dict]] = {
    "ECRM": _ecrm_layout, "ECRMCV": _ecrmcv_layout, "ForestECRMCV": _forest_layout,
    "MixedRiskECRM": _mixture_layout}
#: Estimators whose fitted state changed layout (``cv_results_``): the map from a file's
#: older one, by the module function that knows it.
_OLD_STATES: dict[str, str] = {
    "ECRMCV": "ecrm.weights.kernel._old_layouts:ecrmcv_state_of_old_layout",
    "ForestECRMCV": "ecrm.weights.forest._old_layouts:forest_state_of_old_layout",
    "MixedRiskECRM": "ecrm.weights.mixture:mixture_state_of_old_layout"}


def _old_state(name: str) -> Callable[[dict, dict], dict] | None:
    if name not in _OLD_STATES:
        return None
    module, _, function = _OLD_STATES[name].partition(":")
    return getattr(importlib.import_module(module), function)

def _family_classes(what: str) -> dict[str, type | str]:
    """The ``estimators`` or ``fits`` of every weight family, by class name (as the table
    gives them: classes, or ``"module:Class"`` paths)."""
    from ecrm.weights.families import FAMILIES

    return {_class_path(ref)[1]: ref for family in FAMILIES.values()
            for ref in getattr(family, what)}


def _class_path(ref) -> tuple[str, str]:
    if isinstance(ref, str):
        module, _, name = ref.partition(":")
        return module, name
    return ref.__module__, ref.__name__


#: Estimators registered by :func:`register` outside the table of families: name -> module.
_OWN_ESTIMATORS: dict[str, str] = {}


class _Estimators(Mapping):
    """The estimators a model file holds (alone or as a pipeline's last step): name ->
    module, the families' (read from their table at every look-up) and :func:`register`'s."""

    def _all(self) -> dict[str, str]:
        return {**{name: _class_path(ref)[0]
                   for name, ref in _family_classes("estimators").items()},
                **_OWN_ESTIMATORS}

    def __getitem__(self, name: str) -> str:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


_ESTIMATOR_MODULES: Mapping[str, str] = _Estimators()

#: The other classes a model file may name, and the module that defines each.
_MODULES: dict[str, str] = {**{name: module for name, (module, _) in _PLAIN.items()},
                            **{name: spec[0] for name, spec in _steps.STEPS.items()},
                            "Pipeline": "sklearn.pipeline"}


def _solver_classes() -> dict[str, type]:
    """The solvers of the table of solvers and the fit classes each one's models hold, by
    class name (read at every look-up: a registered solver joins the model files)."""
    out: dict[str, type] = {}
    for solver in SOLVER_CLASSES.values():
        out[solver.__name__] = solver
        out.update((fit.__name__, fit) for fit in solver.fit_types)
    return out


def _modules() -> dict[str, str]:
    """Every class a model file may name, and the module that defines it."""
    return {**_MODULES, **_ESTIMATOR_MODULES,
            **{name: _class_path(ref)[0] for name, ref in _family_classes("fits").items()},
            **{name: cls.__module__ for name, cls in _solver_classes().items()}}


def _class(name: str) -> Any:
    """The class a model file names (its module imported now)."""
    refs = {**_family_classes("estimators"), **_family_classes("fits")}
    ref = refs.get(name)
    if isinstance(ref, type):
        return ref
    return getattr(importlib.import_module(_modules()[name]), name)


def constructor_params(obj) -> dict:
    """The parameters of ``type(obj)``'s constructor, read from the attributes of the same
    names (scikit-learn's convention): how a registered task's output space is written
    (:func:`ecrm.tasks.register_task`)."""
    params = [p for p in inspect.signature(type(obj).__init__).parameters.values()
              if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    missing = [p.name for p in params if not hasattr(obj, p.name)]
    if missing:
        raise ModelFileError(f"cannot save a {type(obj).__name__}: it keeps no attribute "
                             f"{missing[0]!r} for its constructor's parameter of that name")
    return {p.name: getattr(obj, p.name) for p in params}


def _entry(name: str) -> _Entry:
    """The entry of the class called ``name`` (its module imported now)."""
    solvers = _solver_classes()
    if name in solvers:
        cls = solvers[name]
        if issubclass(cls, Solver):  # a solver given as the estimator's: fit's checks
            return _Entry(cls, lambda s: s.get_params(deep=False),
                          check=lambda kwargs: cls(**kwargs).check_params())
        return _Entry(cls, lambda f: f.to_state(), check=_CHECKS.get(name))
    cls = _class(name)
    if name in _ESTIMATOR_MODULES:
        return _Entry(cls, _estimator_params, cls._fitted_attributes, _estimator_state,
                      _rebuild_estimator, upgrade=_OLD_LAYOUTS.get(name),
                      upgrade_state=_old_state(name))
    if name in _family_classes("fits"):  # a family's fit object: its own state
        return _Entry(cls, lambda f: f.to_state(), check=_CHECKS.get(name))
    if name in _steps.STEPS:
        _, names, state, rebuild = _steps.STEPS[name]
        return _Entry(cls, lambda s: s.get_params(deep=False), names, state, rebuild)
    if name == "Pipeline":
        return _Entry(cls, _pipeline_params, (), lambda _: {}, _check_pipeline)
    return _Entry(cls, _PLAIN[name][1], check=_CHECKS.get(name))


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
    elif is_dask_array(out.get("X_fit_")):  # a Dask fit's rows, gathered for the file
        out["X_fit_"] = out["X_fit_"].compute()
    return out


def _rebuild_estimator(model, fitted: dict) -> None:
    """Set an estimator's fitted state and check it is one its ``fit`` could have made
    (none: an unfitted estimator, a parameter of another, e.g. a stack's members).

    Every declared fitted attribute (``_fitted_attributes``) but the optional ones
    (``_optional_fitted_attributes``) must be present: the template's rule, so a new family
    inherits it. An attribute a check reads that is still missing is a ``ValueError`` too,
    never an ``AttributeError`` at predict."""
    if not fitted:
        model._check_params()
        return
    cls = type(model)
    optional = getattr(cls, "_optional_fitted_attributes", ())
    missing = [k for k in cls._fitted_attributes if k not in fitted and k not in optional]
    if missing:
        raise ValueError(f"missing the fitted attributes {missing}")
    for key, value in fitted.items():
        setattr(model, key, value)
    if isinstance(fitted.get("_fit"), RiskFit):  # the fit's training rows are X_fit_
        fitted["_fit"].X_train = fitted.get("X_fit_")
    try:
        model._check_fitted_state()
        model._derive()
    except (AttributeError, KeyError, IndexError, ArithmeticError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from None


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
    if "n_features_in_" not in vars(last):
        raise ValueError("the last step is not a fitted estimator")
    if type(last).__name__ not in _ESTIMATOR_MODULES:
        raise ValueError(f"the last step must be one of {list(_ESTIMATOR_MODULES)}; found "
                         f"{type(last).__name__}")
    width = None
    for name, step in transforms:
        if not _steps.is_step(step):
            raise ValueError(f"step {name!r} must be one of {list(_steps.STEPS)}; found "
                             f"{type(step).__name__}")
        if width is not None and step.n_features_in_ != width:
            raise ValueError(f"step {name!r} takes {step.n_features_in_} columns; the step "
                             f"before it gives {width}")
        if width is not None:
            _steps.check_numeric_input(name, step)
        width = _steps.output_width(step)
    if width is not None and last.n_features_in_ != width:
        raise ValueError(f"the estimator takes {last.n_features_in_} columns; the step before "
                         f"it gives {width}")
    if transforms:
        _steps.check_rows_before(transforms[-1][1], getattr(last, "X_fit_", None))


class _Registry(Mapping):
    """Class name -> its entry, each built (its module imported) when first looked up: a
    model file loads the modules of the classes it names, not every estimator's."""

    def __init__(self) -> None:
        self._built: dict[str, _Entry] = {}

    def __getitem__(self, name: str) -> _Entry:
        if name in _solver_classes():  # not kept: the table of solvers may change
            return _entry(name)
        if name not in _modules():
            raise KeyError(name)
        if name not in self._built:
            self._built[name] = _entry(name)
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in _modules()

    def __iter__(self) -> Iterator[str]:
        return iter(_modules())

    def __len__(self) -> int:
        return len(_modules())


#: Class name -> how to describe and rebuild it. Only these classes are ever constructed.
_REGISTRY = _Registry()
REGISTRY: Mapping[str, _Entry] = _REGISTRY


def register(cls: type, describe: Callable[[Any], dict] | None = None, *,
             check: Callable[[dict], None] | None = None) -> None:
    """Let model files hold instances of ``cls`` (the one table line of a new class).

    Without ``describe``, ``cls`` is an estimator on the template
    (:mod:`ecrm.estimators._template`): its parameters and declared fitted attributes are written,
    and loading runs its ``_check_fitted_state``. With ``describe(obj) -> dict``, the keyword
    arguments that rebuild an object without fitted state (an output space, a loss, a fit object),
    which ``check`` sees first when its constructor would cast them.
    """
    from ecrm.estimators._template import StructuredEstimator

    name, module = cls.__name__, cls.__module__
    check_new_classes([cls])
    if describe is None:
        if not (isinstance(cls, type) and issubclass(cls, StructuredEstimator)):
            raise TypeError(f"{name} is not an estimator on ecrm's template; give describe "
                            f"for a class without fitted state")
        _OWN_ESTIMATORS[name] = module
    else:
        _PLAIN[name] = (module, describe)
        if check is not None:
            _CHECKS[name] = check
    _MODULES[name] = module
    _REGISTRY._built.pop(name, None)


def check_new_classes(classes) -> None:
    """Refuse classes (or ``"module:Class"`` paths) whose name a class of another module
    has in the model files already: a model file names classes."""
    known = _modules()
    for ref in classes:
        module, name = _class_path(ref)
        if known.get(name, module) != module:
            raise ValueError(f"a class named {name!r} from {known[name]} is registered; "
                             f"model files name classes, so {module}.{name} needs another name")


def forget(family) -> None:
    """Drop the cached entries of a family's classes (it was added or removed)."""
    for ref in (*family.estimators, *family.fits):
        _REGISTRY._built.pop(_class_path(ref)[1], None)


#: Parameters that are not part of a fitted model: written as ``None``.
_TRANSIENT_PARAMS = ("memory", "random_state")
