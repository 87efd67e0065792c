"""The table of weight families: one line per family, read by ``ecrm fit --family``,
``ecrm info`` and the model files.

A line (:class:`Family`) names the family's estimator classes (given as classes, or as
``"module:Class"`` paths imported on first use, so that reading the table loads nothing
heavy), the fit objects its models hold, the ``ecrm fit`` options it reads (the command
refuses an option the chosen family does not read, naming the families that do) and how
``ecrm info`` describes a fitted model. :func:`register_family` adds a line,
:func:`unregister_family` removes one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["FAMILIES", "Family", "describe", "family_of", "register_family",
           "unregister_family"]


def _path(ref: type | str) -> tuple[str, str]:
    """``(module, class name)`` of a class or of a ``"module:Class"`` path."""
    if isinstance(ref, str):
        module, _, name = ref.partition(":")
        return module, name
    return ref.__module__, ref.__name__


def _resolve(ref: type | str) -> type:
    if isinstance(ref, type):
        return ref
    module, name = _path(ref)
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Family:
    """One weight family of the table.

    Attributes
    ----------
    name : str
        What ``ecrm fit --family`` and ``ecrm info`` call it.
    estimator : type or str
        Its estimator class (a :class:`ecrm.weights.RiskEstimator`), or ``"module:Class"``.
    cv : type, str or None
        Its search (what ``ecrm fit --cv`` fits), if it has a separate one.
    also : tuple of type or str
        Other estimator classes ``ecrm info`` describes as this family (not built by
        ``ecrm fit``).
    fits : tuple of type or str
        The fit classes (:class:`ecrm.weights.RiskFit`) its models hold, written to model
        files by their ``to_state`` and rebuilt by their constructor.
    options : tuple of str
        The ``ecrm fit`` options it reads (e.g. ``"--trees"``); the command refuses the
        others' options. A registered family's option sets the estimator parameter of the
        same name (``--trees``: ``trees``) when it has one.
    describe : callable or None
        ``describe(model) -> dict``: what ``ecrm info`` says of a fitted model's weights
        (``{"weights": name}`` and the model's parameters when not given).
    cli : bool
        Whether ``ecrm fit --family`` offers it.
    """

    name: str
    estimator: type | str
    cv: type | str | None = None
    also: tuple[type | str, ...] = ()
    fits: tuple[type | str, ...] = ()
    options: tuple[str, ...] = ()
    describe: Callable[[Any], dict] | None = None
    cli: bool = True

    @property
    def estimators(self) -> tuple[type | str, ...]:
        """Every estimator class of the family (as given: classes or paths)."""
        return (self.estimator, *(() if self.cv is None else (self.cv,)), *self.also)

    def estimator_class(self, *, cv: bool = False) -> type:
        """The class ``ecrm fit`` builds: the search with ``cv`` (if any), else the
        estimator (imported now)."""
        return _resolve(self.cv if cv and self.cv is not None else self.estimator)

    def paths(self, what: str = "estimators") -> list[tuple[str, str]]:
        """``(module, class name)`` of the family's ``estimators`` or ``fits``."""
        return [_path(ref) for ref in getattr(self, what)]


# -- how ecrm info describes the built-in families ----------------------------------------
def _kernel(model) -> dict:
    """A kernel's settings, regularisation, intercept and solver."""
    if hasattr(model, "duality_gap_"):  # a structured SVM: C and how its training ended
        regularisation = {"C": float(model.C), "n_iter": int(model.n_iter_),
                          "duality_gap": float(model.duality_gap_),
                          "objective": float(model.primal_objective_)}
    else:
        regularisation = {"alpha": float(getattr(model, "alpha_",
                                                 getattr(model, "alpha", float("nan"))))}
    from ecrm.weights.kernel._solvers.solver import DualSolver, NystromSolver, PrimalSolver

    features = getattr(getattr(model, "_fit", None), "features", None)
    centres = getattr(features, "centres", None)
    solver = ({"solver": DualSolver.name} if features is None
              else {"solver": PrimalSolver.name} if centres is None
              else {"solver": NystromSolver.name, "n_components": int(centres.shape[0])})
    return {"weights": "kernel", "kernel": dict(model.kernel_params_), **regularisation,
            "fit_intercept": bool(model.fit_intercept_ if hasattr(model, "fit_intercept_")
                                  else model.fit_intercept),
            **solver}


def _selection(model, how: str, candidates: list) -> dict:
    """How a search chose: its scoring (``how`` it judged), best score and candidates."""
    scoring = model.search_settings().scoring if hasattr(model, "search_settings") else \
        model.scoring
    scoring = scoring if isinstance(scoring, str) else "callable"
    return {"scoring": f"{how} {scoring}", "best_score": float(model.best_score_),
            "n_candidates": len(candidates)}


def _forest(model) -> dict:
    """A forest's settings (the chosen ones of a search) and its out-of-bag criterion."""
    from ecrm.weights.forest.estimator import ForestECRM  # its defaults: a grid's others

    params = {**ForestECRM(None, None).get_params(deep=False), **model.get_params(deep=False),
              **getattr(model, "best_params_", {})}
    out = {"weights": "forest", **{k: params[k] for k in (
        "flavour", "n_estimators", "max_features", "min_samples_leaf", "min_samples_split",
        "max_depth", "max_samples")}, "oob_loss": float(model.oob_loss_)}
    if hasattr(model, "best_score_"):
        out["selection"] = _selection(model, "out-of-bag", model.cv_results_["params"])
    return out


def _neighbours(model) -> dict:
    """The number of neighbours (the chosen one of a search) and the metric."""
    out = {"weights": "neighbours",
           "n_neighbors": int(getattr(model, "n_neighbors_", model.n_neighbors)),
           "metric": model.metric}
    if hasattr(model, "best_score_"):
        out["loo_loss"] = float(model.loo_loss_)
        out["selection"] = _selection(model, "leave-one-out", model.cv_results_["params"])
    return out


def _mixed(model) -> dict:
    """The kernel's share and each member's description."""
    return {"weights": "mixed", "mixture": float(model.mixture_),
            "members": {"kernel": describe(model.kernel_estimator_),
                        "forest": describe(model.forest_estimator_)},
            "selection": _selection(model, "mixed honest", model.cv_results_["mixture"])}


def _stacked(model) -> dict:
    """Each member's weight in the stack and description, and whether the stack was kept."""
    return {"weights": "stack", "stack_used": bool(model.stack_used_),
            "stacked": [{"weight": float(b), **describe(e)}
                        for b, e in zip(model.weights_, model.estimators_, strict=True)],
            "label_shares": model.label_weights_ is not None,
            "selection": _selection(model, "stacked honest", model.cv_results_["weights"])}


#: The options of ``ecrm fit`` that only kernel ridge reads.
_KERNEL_OPTIONS = ("--kernel", "--gamma", "--alpha", "--alphas", "--gammas", "--kernels",
                   "--extend-grid", "--solver", "--n-components", "--center-selection",
                   "--memory-budget", "--loo-samples")

_TABLE: dict[str, Family] = {f.name: f for f in (
    Family("kernel", "ecrm.weights.kernel.estimator:ECRM", "ecrm.weights.kernel.estimator:ECRMCV",
           also=("ecrm.estimators.joint:JointKernelECRM", "ecrm.estimators.ssvm:StructuredSVM"),
           options=(*_KERNEL_OPTIONS, "--calibration", "--scheduler"), describe=_kernel),
    Family("forest", "ecrm.weights.forest.estimator:ForestECRM",
           "ecrm.weights.forest.estimator:ForestECRMCV",
           fits=("ecrm.weights.forest._fit:ForestFit",), options=("--trees", "--scheduler"),
           describe=_forest),
    Family("neighbours", "ecrm.weights.neighbours.estimator:NeighboursECRM",
           "ecrm.weights.neighbours.estimator:NeighboursECRMCV",
           fits=("ecrm.weights.neighbours._fit:NeighboursFit",),
           options=("--neighbours", "--neighbours-grid", "--metric", "--scheduler"),
           describe=_neighbours),
    Family("mixed", "ecrm.weights.mixture:MixedRiskECRM",
           options=(*_KERNEL_OPTIONS, "--trees", "--scheduler"), describe=_mixed),
    Family("stack", "ecrm.weights.stack:StackedRiskECRM", describe=_stacked),
)}

#: The weight families by name (a read-only view: :func:`register_family` changes it).
FAMILIES: Mapping[str, Family] = MappingProxyType(_TABLE)


def register_family(name: str, estimator: type, *, cv: type | None = None,
                    also: Iterable[type] = (), fits: Iterable[type] = (),
                    options: Iterable[str] = (), describe: Callable[[Any], dict] | None = None,
                    cli: bool = True) -> Family:
    """Add a weight family to the table (see :class:`Family` for the arguments).

    Its estimators and fit classes join the model files' classes; with ``cli``, ``ecrm fit
    --family name`` fits it (``--cv``: ``cv`` when given) and ``ecrm info`` describes it.

    Returns
    -------
    family : Family

    Raises
    ------
    ValueError
        ``name`` is taken (or ``"auto"``, the command line's choice between families), or a
        class of the same name from another module is in the model files already.

    Examples
    --------
    >>> from ecrm.weights import register_family, unregister_family
    >>> from ecrm import ECRMCV
    >>> class SmoothECRMCV(ECRMCV):
    ...     pass
    >>> register_family("smooth", SmoothECRMCV, options=("--alphas",)).name
    'smooth'
    >>> unregister_family("smooth")
    """
    from ecrm.estimators._template import StructuredEstimator
    from ecrm.model_files import _registry

    if not (isinstance(name, str) and name.isidentifier() and name != "auto"):
        raise ValueError(f"a family's name must be a word other than 'auto'; got {name!r}")
    if name in _TABLE:
        raise ValueError(f"a family named {name!r} is registered: unregister it first or "
                         "choose another name")
    family = Family(name, estimator, cv, tuple(also), tuple(fits), tuple(options), describe,
                    cli)
    for ref in family.estimators:
        if not (isinstance(ref, type) and issubclass(ref, StructuredEstimator)):
            raise TypeError(f"{ref!r} is not an estimator class on ecrm's template (e.g. a "
                            "subclass of ecrm.weights.RiskEstimator)")
    for flag in family.options:
        if not (isinstance(flag, str) and flag.startswith("--")):
            raise ValueError(f"options are ecrm fit's options, e.g. '--trees'; got {flag!r}")
    _registry.check_new_classes([*family.estimators, *family.fits])
    _TABLE[name] = family
    _registry.forget(family)
    return family


def unregister_family(name: str) -> None:
    """Remove the family ``name`` from the table (and its classes from the model files)."""
    from ecrm.model_files import _registry

    if name not in _TABLE:
        raise KeyError(f"no family named {name!r}; the families are {sorted(_TABLE)}")
    _registry.forget(_TABLE.pop(name))


def family_of(model) -> Family | None:
    """The family of a fitted estimator (of its class or the nearest base in the table), or
    ``None``. Nothing is imported: classes are matched by module and name."""
    for cls in type(model).__mro__:
        path = (cls.__module__, cls.__name__)
        for family in _TABLE.values():
            if path in family.paths():
                return family
    return None


def describe(model) -> dict:
    """What ``ecrm info`` says of a fitted model's weights: its family's description, or
    ``{"weights": name}`` and the model's plain parameters for a family that gives none
    (``"weights": "unknown"`` outside the table)."""
    family = family_of(model)
    if family is not None and family.describe is not None:
        return family.describe(model)
    plain = {k: v for k, v in model.get_params(deep=False).items()
             if isinstance(v, (str, int, float, bool)) or v is None}
    return {"weights": "unknown" if family is None else family.name, "params": plain}
