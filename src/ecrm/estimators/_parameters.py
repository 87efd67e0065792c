"""The parameters' constraints, declared once: numbers, vocabularies and the rules that
tie several parameters together.

Each estimator declares a table (``_parameter_constraints``: a constraint per constructor
parameter) and its cross-parameter rules (``_parameter_rules``: :class:`Rule`);
:func:`check_params` walks them, the estimators' only parameter check (run by ``fit`` and the
model-file loader, :mod:`ecrm.model_files.io`), and returns the parameter plan (:class:`Plan`).
The command-line options of the same parameters (:func:`ecrm.commands._options.parameter_option`,
:func:`ecrm.commands._options.choices`) read their constraints here too, so the library, its
model files and its command line accept and refuse the same values in the same words. Only
the standard library is imported here, so that the parsers need not load NumPy (a registry,
such as the solvers', is imported when its names are first asked for).

>>> check_parameter("alpha", 1e-3)
0.001
>>> check_parameter("n_components", 0, "--n-components")
Traceback (most recent call last):
...
ValueError: --n-components must be an integer >= 1; got 0
>>> check_parameter("alpha_search", "golden")
Traceback (most recent call last):
...
ValueError: alpha_search must be 'grid' or 'coarse-to-fine'; got 'golden'
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

__all__ = ["CONSTRAINTS", "KERNEL_PARAMS", "RANDOM_STATE", "SOLVER_SETTINGS", "Checked", "Choice",
           "Flag", "Number", "Plan", "Rule", "check_parameter", "check_params", "table",
           "vocabulary"]


def _imported(path: str):
    """The object at the dotted ``path`` (``"package.module.name"``), imported on use."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Number:
    """A real (``kind="real"``) or integer (``"int"``) parameter, optionally ``None``.

    ``limits`` are the keyword arguments of :func:`ecrm.estimators._validation.check_real` (``low``,
    ``high``, ``low_open``, ``high_open``; default: the open interval (0, inf)) or
    :func:`ecrm.estimators._validation.check_int` (``low``, ``high``; default: >= 1).
    """

    kind: str
    limits: dict = field(default_factory=dict)
    none: bool = False

    def check(self, value, name: str):
        """``value`` cleaned (a float or an int, or ``None`` if allowed), else ``ValueError``."""
        from ecrm.estimators import _validation

        if value is None and self.none:
            return None
        return getattr(_validation, f"check_{self.kind}")(value, name, **self.limits)


@dataclass(frozen=True)
class Choice:
    """A parameter taking one of a fixed set of names, optionally also ``None``, an instance
    of a class or a callable.

    Attributes
    ----------
    names : tuple of str
        The fixed names, in the order messages and command-line help list them.
    none : bool, default=False
        ``None`` is accepted too.
    instance : str, optional
        The dotted path of a class whose instances are accepted too (imported only when a
        value is not one of the names, so that this module stays light).
    function : str, optional
        Callables are accepted too; how a message describes them (``"a callable"``).
    hidden : tuple of str, default=()
        Names the library accepts but the command line does not offer (:attr:`offered`).
    registry : str, optional
        The dotted path of a mapping whose keys are names too, after ``names``: a table
        that grows by registration (the solvers'), read each time the names are asked for
        and imported then, so that this module stays light.
    """

    names: tuple[str, ...]
    none: bool = False
    instance: str | None = None
    function: str | None = None
    hidden: tuple[str, ...] = ()
    registry: str | None = None

    def __post_init__(self):
        if not set(self.hidden) <= set(self.names):
            raise ValueError(f"hidden names {self.hidden} are not all names {self.names}")

    @property
    def values(self) -> tuple[str, ...]:
        """Every name: the fixed ones, then the registry's."""
        if self.registry is None:
            return self.names
        return (*self.names, *_imported(self.registry))

    @property
    def offered(self) -> tuple[str, ...]:
        """The names the command line offers: :attr:`values` less :attr:`hidden`."""
        return tuple(v for v in self.values if v not in self.hidden)

    def allowed(self) -> str:
        """The accepted values in words, e.g. ``"'grid' or 'coarse-to-fine'"``."""
        words = ["None"] if self.none else []
        words += [repr(v) for v in self.values]
        if self.instance is not None:
            words.append(f"a {self.instance.rpartition('.')[2]}")
        if self.function is not None:
            words.append(self.function)
        if len(words) <= 2:
            return " or ".join(words)
        return f"one of {', '.join(words[:-1])} or {words[-1]}"

    def check(self, value, name: str):
        """``value`` unchanged if accepted, else ``ValueError`` naming ``name`` and the
        accepted values."""
        if ((value is None and self.none) or (isinstance(value, str) and value in self.values)
                or (self.function is not None and callable(value))
                or (self.instance is not None and value is not None
                    and isinstance(value, _imported(self.instance)))):
            return value
        raise ValueError(f"{name} must be {self.allowed()}; got {value!r}")


@dataclass(frozen=True)
class Flag:
    """A ``True``/``False`` parameter (NumPy's booleans too), or also one of ``values``
    (``fit_intercept="auto"``)."""

    values: tuple[str, ...] = ()

    def check(self, value, name: str):
        if isinstance(value, str) and value in self.values:
            return value
        import numpy as np  # when a value is checked: the table itself stays light

        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        words = ["True", "False", *map(repr, self.values)]
        raise ValueError(f"{name} must be {', '.join(words[:-1])} or {words[-1]}; "
                         f"got {value!r}")


@dataclass(frozen=True)
class Checked:
    """A parameter of its own kind (a grid, a list of values, nested options, a random
    state): ``function(value)`` checks it and returns the cleaned value (without a function
    the value is taken as it is, for a check made at fit, e.g. scikit-learn's
    ``check_random_state``).

    Attributes
    ----------
    what : str
        What the parameter takes, in words.
    bad : tuple, default=()
        Values the estimator refuses (by ``function``, or by a :class:`Rule` reading the
        parameter), for the tests the class tables generate.
    function : callable, optional
        ``function(value) -> cleaned``, raising ``ValueError`` or ``TypeError`` naming the
        parameter.
    """

    what: str
    bad: tuple = ()
    function: Callable | None = None

    def check(self, value, name: str):
        """``value`` cleaned by :attr:`function` (``name`` is its own to say)."""
        return value if self.function is None else self.function(value)


@dataclass(frozen=True)
class Rule:
    """A constraint of several parameters at once, or a plan entry derived from them.

    :func:`check_params` runs ``function(*values)``, with ``values`` the checked values of
    the parameters (or earlier rules' entries) named in ``of``, in that order; its result is
    the plan's entry ``name``, or ``name`` is ``None`` for a check alone.

    Attributes
    ----------
    name : str or None
        The plan entry the rule gives.
    function : callable or str
        A small named function, raising ``ValueError``/``TypeError`` naming the parameters
        (or its dotted path, imported when the rule runs).
    of : tuple of str
        The parameters (or earlier entries) it reads.
    as_given : bool, default=False
        Read the parameters as the user gave them (after their checks) instead of cleaned
        (``kernel_params`` keeps the values unchanged).
    """

    name: str | None
    function: Callable | str
    of: tuple[str, ...]
    as_given: bool = False

    def __call__(self, *values):
        function = (_imported(self.function) if isinstance(self.function, str)
                    else self.function)
        return function(*values)


class Plan(Mapping):
    """An estimator's parameter plan: every checked parameter and every rule's entry, by
    name, read-only (``plan["alpha"]`` or ``plan.alpha``)."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping):
        object.__setattr__(self, "_entries", dict(entries))

    def __getitem__(self, name: str):
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __getattr__(self, name: str):
        try:
            return self._entries[name]
        except KeyError:
            raise AttributeError(f"the plan has no entry {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError("a parameter plan is read-only")

    def __repr__(self) -> str:
        return f"Plan({self._entries!r})"


def check_params(estimator) -> Plan:
    """The parameter plan of ``estimator``: each parameter checked against its class's table
    (``_parameter_constraints``, in table order), then the class's rules
    (``_parameter_rules``, in order).

    This is every estimator's parameter check, before any work (``fit``, and the model-file
    loader through the template's ``_check_params``); a bad value raises ``ValueError`` or
    ``TypeError`` naming the parameter, and nothing is set on ``estimator``.
    """
    cls = type(estimator)
    given = {name: getattr(estimator, name) for name in cls._parameter_constraints}
    entries = {name: constraint.check(given[name], name)
               for name, constraint in cls._parameter_constraints.items()}
    for rule in getattr(cls, "_parameter_rules", ()):
        source = {**entries, **given} if rule.as_given else entries
        result = rule(*(source[name] for name in rule.of))
        if rule.name is not None:
            entries[rule.name] = result
    return Plan(entries)


#: ``random_state``: a seed or a ``RandomState``, read by scikit-learn's check_random_state at fit.
RANDOM_STATE = Checked("a seed or a RandomState (check_random_state, at fit)")
#: The kernel settings of a kernel estimator as one entry, the values as given
#: (:func:`ecrm.weights.kernel._kernels.check_kernel_params`).
KERNEL_PARAMS = Rule("kernel_params", "ecrm.weights.kernel._kernels.check_kernel_params",
                     ("kernel", "gamma", "degree", "coef0"), as_given=True)
#: ``solver`` (a :class:`~ecrm.weights.kernel._solvers.solver.Solver` object's own settings
#: too) and ``memory_budget`` (:func:`ecrm.weights.kernel._solvers.choice.check_solver`).
SOLVER_SETTINGS = Rule(None, "ecrm.weights.kernel._solvers.choice.check_solver",
                       ("solver", "memory_budget"))


def table(*names: str, **own) -> dict:
    """An estimator's table of parameter constraints (its ``_parameter_constraints``): the
    declared constraint of each of ``names`` (:data:`CONSTRAINTS`), then its own
    (a :class:`Flag`, :class:`Checked`, ... by parameter name). Every parameter of the
    constructor but the loss and the output space has an entry."""
    return {**{name: CONSTRAINTS[name] for name in names}, **own}


#: Every constrained parameter by name; the same name means the same constraint on every
#: estimator (``alpha`` is the paper's lambda on ECRM, ECRMCV and JointKernelECRM alike).
CONSTRAINTS: dict[str, Number | Choice] = {
    "alpha": Number("real"),
    "gamma": Number("real", {"low_open": False}, none=True),
    "degree": Number("int", {"low": 1}),
    "coef0": Number("real", {"low": -math.inf}),
    "n_components": Number("int", {"low": 1}, none=True),
    "memory_budget": Number("real", none=True),
    "loo_samples": Number("int", {"low": 1}, none=True),
    "kernel_subsample": Number("int", {"low": 2}, none=True),
    "verbose": Number("int", {"low": 0}),
    "max_added_gammas": Number("int", {"low": 0}),
    "C": Number("real"),  # the structured SVM's
    "tol": Number("real", {"low_open": False}),
    "max_iter": Number("int", {"low": 1}),
    "gap_every": Number("int", {"low": 1}),
    # the forest's (ecrm.weights.forest.estimator)
    "n_estimators": Number("int", {"low": 1}),
    "max_features": Number("real", {"high": 1.0, "high_open": False}),
    "min_samples_leaf": Number("int", {"low": 1}),
    "min_samples_split": Number("int", {"low": 2}),
    "search_estimators": Number("int", {"low": 1}, none=True),
    "max_depth": Number("int", {"low": 1}, none=True),
    "max_samples": Number("real", {"high": 1.0, "high_open": False}),
    "n_split_targets": Number("int", {"low": 1}, none=True),
    # -- vocabularies: each declared here only; the library's constants of the same names
    # (ecrm.weights.kernel._solvers.budget.CENTER_SELECTIONS, ecrm.selection._criteria.SCORERS, ...)
    # and the command line's choices are read from these
    # (tests/estimators/test_constraint_tables.py checks it)
    # kernel names (ecrm.weights.kernel._kernels.KERNEL_PARAMS holds each one's hyper-parameters);
    # the command line reads features, not a Gram matrix, "polynomial" is "poly" again and the
    # sigmoid kernel is not positive semi-definite
    "kernel": Choice(("rbf", "linear", "laplacian", "poly", "cosine", "polynomial", "sigmoid",
                      "precomputed"), function="a callable",
                     hidden=("polynomial", "sigmoid", "precomputed")),
    # kernels whose gamma is a width (the searches extend it; LeaveOneOutLengthScales)
    "width_kernel": Choice(("rbf", "laplacian")),
    # "auto", then the names of the solvers' table,
    # ecrm.weights.kernel._solvers.solver.SOLVER_CLASSES (register_solver adds a line); a Solver
    # object carries its own settings
    "solver": Choice(("auto",), instance="ecrm.weights.kernel._solvers.solver.Solver",
                     registry="ecrm.weights.kernel._solvers.solver.SOLVER_CLASSES"),
    "center_selection": Choice(("uniform", "kmeans++", "leverage"),
                               instance="ecrm.weights.kernel._solvers.centers.CenterSelector"),
    # "loss": the task loss; the others name ecrm.selection._criteria.SCORERS
    "scoring": Choice(("loss", "micro_auprc", "macro_auprc", "lrap"), none=True,
                      function="a callable f(Y_true, scores)"),
    # ecrm.selection.calibration.CALIBRATIONS, and "auto" choosing among them and None
    "calibration": Choice(("isotonic", "platt", "auto"), none=True),
    "alpha_search": Choice(("grid", "coarse-to-fine")),
    "flavour": Choice(("random", "extra")),  # the forest's
    "split_projection": Choice(("random", "principal")),  # the forest's split targets
    "split_search": Choice(("grid", "descent")),  # ecrm.ForestECRMCV's min_samples_split
    # the neighbours' distances (ecrm.NeighboursECRM's metric, scikit-learn's names)
    "metric": Choice(("euclidean", "manhattan", "chebyshev", "cosine", "sqeuclidean", "canberra",
                      "braycurtis")),
    "format": Choice(("auto", "csv", "tsv", "arff", "svmlight")),  # data files'
    "scale": Choice(("numeric", "all", "none")),  # ecrm.datasets.preprocessing.HMCPreprocessor's
    # the simulated flows' losses (ecrm.datasets.flows.FlowModel, ecrm reproduce flow)
    "flow_loss": Choice(("absolute", "square")),
}


def check_parameter(parameter: str, value, name: str | None = None):
    """``value`` checked against the declared constraint of ``parameter``.

    Parameters
    ----------
    parameter : str
        A key of :data:`CONSTRAINTS`.
    value : object
        The value to check.
    name : str, optional
        How the error message names it (default ``parameter``; e.g. ``"alphas[3]"`` or the
        command-line option ``"--alpha"``).
    """
    return CONSTRAINTS[parameter].check(value, parameter if name is None else name)


def vocabulary(parameter: str) -> tuple[str, ...]:
    """The names a :class:`Choice` parameter takes (``CONSTRAINTS[parameter].values``, read
    when asked: a registry's names are the current ones).

    >>> vocabulary("alpha_search")
    ('grid', 'coarse-to-fine')
    """
    constraint = CONSTRAINTS[parameter]
    if not isinstance(constraint, Choice):
        raise TypeError(f"{parameter} is not a choice parameter")
    return constraint.values
