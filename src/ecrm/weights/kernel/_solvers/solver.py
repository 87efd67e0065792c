r"""What a solver is, declared once: :class:`Solver`, and the table of solvers.

A solver answers the ridge regressions of ECRM (:mod:`ecrm.weights.kernel._solvers`) and states
its **name** (``ECRM(solver=name)``), its peak **memory need** (:meth:`Solver.memory_need`), its
**checks** against the kernel, data shape and ``memory_budget`` (:meth:`Solver.check`), the
**basis** of one fit (:meth:`Solver.basis`), the **source** of the leave-one-out search
(:meth:`Solver.source`) and the **fit classes** its models hold, which model files may
construct (:attr:`Solver.fit_types`).

:data:`SOLVER_CLASSES`, the one table of solvers, is read by the ``solver`` constraint (the
names the estimators and the command line accept), the ``"auto"`` rule
(:mod:`ecrm.weights.kernel._solvers.choice`) and the model files. :func:`register_solver` adds
a line, :func:`unregister_solver` removes it; the built-in names are written here only.

A solver has scikit-learn's ``get_params``/``set_params``, so that
``ECRM(solver=NystromSolver(n_components=50, center_selection="kmeans++"))`` clones, searches
(``solver__n_components``) and saves like any parameter; a name stands for the solver with
its default settings.

>>> NystromSolver(n_components=50)
NystromSolver(n_components=50)
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from ecrm.estimators._parameters import check_parameter
from ecrm.weights._fit import Basis, RiskFit, Source
from ecrm.weights.kernel._solvers.budget import (
    BLOCK_FEATURE_COPIES,
    DUAL_COPIES,
    GIB,
    MemoryNeed,
    pass_bytes,
)
from ecrm.weights.kernel._solvers.centers import check_center_selection, select_centers
from ecrm.weights.kernel._solvers.dual import JointKernelBasis, KernelFit, gram_eigendecomposition
from ecrm.weights.kernel._solvers.features import FeatureMap, LinearFeatures, NystromFeatures
from ecrm.weights.kernel._solvers.prepare import DualBasis, DualSource, FeatureBasis, FeatureSource
from ecrm.weights.kernel._solvers.primal import FeatureFit

__all__ = ["SOLVERS", "SOLVER_CLASSES", "DualSolver", "FeatureSolver", "NystromSolver",
           "PrimalSolver", "Solver", "register_solver", "unregister_solver"]


class Solver(ABC):
    """A way of solving ECRM's ridge regressions (see the module docstring).

    Subclass it with a ``name``, :meth:`memory_need`, :meth:`basis` and :meth:`source`
    (and :meth:`refuses` for kernels it cannot take), then :func:`register_solver` it. The
    constructor's keyword arguments are its parameters, stored unchanged under their names.
    """

    #: The name ``ECRM(solver=...)`` accepts.
    name: ClassVar[str]
    #: Whether ``solver="auto"`` may choose it (an exact solver), in table order.
    auto: ClassVar[bool] = False
    #: Whether it holds the m x m Gram matrix of the training rows (refused on Dask arrays).
    holds_gram: ClassVar[bool] = True
    #: Whether it reads the training outputs in row blocks (they are then kept compact).
    streams_rows: ClassVar[bool] = False
    #: The fit classes its models hold (model files may construct them).
    fit_types: ClassVar[tuple[type[RiskFit], ...]] = ()

    # -- parameters, as scikit-learn's estimators have them -------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.kind in kinds]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's arguments (``deep`` is accepted for scikit-learn)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params) -> Solver:
        unknown = set(params) - set(self._param_names())
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameters {sorted(unknown)}; its "
                             f"parameters are {self._param_names()}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def check_params(self) -> None:
        """The solver's own parameters, checked before any work (fit and the model-file
        loader); a solver without parameters has none to check."""
        return None

    def __repr__(self) -> str:
        defaults = {p.name: p.default
                    for p in inspect.signature(type(self).__init__).parameters.values()}
        args = [f"{k}={v!r}" for k, v in self.get_params().items()
                if not (type(v) is type(defaults.get(k)) and v == defaults.get(k))]
        return f"{type(self).__name__}({', '.join(args)})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.get_params() == other.get_params()

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    # -- checks, before any work ----------------------------------------------------------
    def refuses(self, kernel) -> str | None:
        """Why the solver cannot take ``kernel`` (a message), or ``None``."""
        return None

    @abstractmethod
    def memory_need(self, *, m: int, p: int, kernel, cv: bool, n_targets: int = 1) -> MemoryNeed:
        """The bytes the solver takes at its peak on ``m`` x ``p`` inputs (``cv``: for the
        leave-one-out search of :class:`ecrm.ECRMCV`; ``n_targets``: regression columns)."""

    def over_budget(self, need: float, *, m: int, p: int, budget: float) -> str:
        """The message of matrices of ``need`` bytes over ``budget`` GiB."""
        return (f"solver={self.name!r} needs {need / GIB:.1f} GiB, over memory_budget="
                f"{budget:g} GiB")

    def check(self, *, m: int, p: int, kernel, cv: bool, budget: float) -> None:
        """The solver can take ``kernel`` on ``m`` x ``p`` inputs within ``budget`` GiB,
        else a ``ValueError`` saying what to use instead."""
        message = self.refuses(kernel)
        if message is not None:
            raise ValueError(message)
        need = self.memory_need(m=m, p=p, kernel=kernel, cv=cv).matrices
        if need > budget * GIB:
            raise ValueError(self.over_budget(need, m=m, p=p, budget=budget))

    # -- what it builds --------------------------------------------------------------------
    @abstractmethod
    def basis(self, X, Y, kernel_params: dict, targets, *, space, alpha: float, random_state,
              backend) -> Basis:
        """The basis of one fit on the checked training rows
        (:func:`ecrm.weights.kernel._solvers.prepare.prepare` for the parameters)."""

    @abstractmethod
    def source(self, X, Y, settings: Sequence[dict], targets, *, space,
               alphas: Sequence[float], random_state, backend, decompose: Callable,
               needs_scores: bool, refine: bool) -> Source:
        """The leave-one-out source of a search, after checking the solver can answer it
        (:func:`ecrm.weights.kernel._solvers.prepare.prepare_search` for the parameters)."""


class DualSolver(Solver):
    r"""The exact dual: the m x m Gram matrix, factorised once
    (:mod:`ecrm.weights.kernel._solvers.dual`).

    It holds ``DUAL_COPIES`` m x m arrays at its peak (for :class:`ecrm.ECRMCV` with a linear
    kernel and p < m, the thin SVD of ``X``: three m x p arrays).
    """

    name = "dual"
    auto = True
    fit_types = (KernelFit,)

    def memory_need(self, *, m, p, kernel, cv, n_targets=1) -> MemoryNeed:
        if cv and kernel == "linear" and p < m:  # thin SVD of X: m x p, never m x m
            return MemoryNeed(8.0 * m * p * 3)
        return MemoryNeed(8.0 * m * m * DUAL_COPIES[cv])

    def over_budget(self, need, *, m, p, budget) -> str:
        return (f"solver='dual' needs {need / GIB:.1f} GiB for m={m} training samples, over "
                f"memory_budget={budget:g} GiB; use solver='nystrom' (or 'primal' for a linear "
                f"kernel), or raise memory_budget")

    def basis(self, X, Y, kernel_params, targets, *, space, alpha, random_state, backend):
        return DualBasis(X, Y, kernel_params, targets)

    def joint_basis(self, X, kernel_params: dict, T: np.ndarray, const: np.ndarray,
                    task_kernel: np.ndarray) -> Basis:
        """The basis of the joint kernel :math:`k(x, x') B` of :class:`ecrm.JointKernelECRM`
        (:class:`ecrm.weights.kernel._solvers.dual.JointKernelBasis`)."""
        return JointKernelBasis(X, kernel_params, T, const, task_kernel)

    def source(self, X, Y, settings, targets, *, space, alphas, random_state, backend,
               decompose=gram_eigendecomposition, needs_scores=False, refine=False):
        return DualSource(X, Y, targets.risk(Y), settings, decompose,
                          targets.marginals(np.asarray(Y, dtype=float)))


class FeatureSolver(Solver):
    r"""A solver in the primal: the normal equations of an explicit feature map, summed over
    row blocks (:mod:`ecrm.weights.kernel._solvers.normal_equations`; Dask arrays as a map-reduce).

    It holds ``matrix_copies`` k x k matrices (k features) and the row blocks of its passes:
    the normal equations (``BLOCK_FEATURE_COPIES[False]`` k + 3c floats a row, c targets) or,
    for :class:`ecrm.ECRMCV`, the leave-one-out pass (``BLOCK_FEATURE_COPIES[True]``).
    """

    holds_gram = False
    streams_rows = True
    fit_types = (FeatureFit,)
    #: k x k matrices at the peak.
    matrix_copies: ClassVar[int]

    @abstractmethod
    def n_features(self, m: int, p: int) -> int:
        """k, the number of features on ``m`` x ``p`` inputs."""

    @abstractmethod
    def feature_map(self, X, kernel_params: dict, *, alpha: float, random_state=None,
                    centres=None) -> FeatureMap:
        """The feature map on the training inputs ``X`` (``centres``: the array backend's
        draw of Nystrom centres, :mod:`ecrm.weights.kernel._solvers._backend`)."""

    def refuses(self, kernel):
        if kernel == "precomputed":
            return (f"solver={self.name!r} needs the inputs, not kernel='precomputed'; use "
                    f"solver='dual'")
        return None

    def memory_need(self, *, m, p, kernel, cv, n_targets=1) -> MemoryNeed:
        k = self.n_features(m, p)
        width = BLOCK_FEATURE_COPIES[cv] * k + 3 * n_targets
        return MemoryNeed(8.0 * k * k * self.matrix_copies, pass_bytes(m, width))

    def check_settings(self, settings: Sequence[dict]) -> None:
        """Every kernel setting of a search is one the solver takes."""

    def basis(self, X, Y, kernel_params, targets, *, space, alpha, random_state, backend):
        features = self.feature_map(X, kernel_params, alpha=alpha, random_state=random_state,
                                    centres=backend.centres)
        return FeatureBasis(features, X, Y, space, targets, backend)

    def source(self, X, Y, settings, targets, *, space, alphas, random_state, backend,
               decompose=gram_eigendecomposition, needs_scores=False, refine=False):
        if needs_scores:
            raise ValueError(f"scoring and calibration need solver='dual' (the leave-one-out "
                             f"label scores of the {self.name} solver are not implemented)")
        if refine:
            raise ValueError(f"alpha_search='coarse-to-fine' needs solver='dual' (the "
                             f"{self.name} solver evaluates every alpha from one "
                             f"eigendecomposition)")
        self.check_settings(settings)
        n_risk = targets.risk(space.validate(np.asarray(Y[:1]))).shape[1]
        return FeatureSource(self, X, Y, settings, targets, n_risk, space=space,
                             alpha=float(np.median(alphas)), random_state=random_state,
                             backend=backend)


class PrimalSolver(FeatureSolver):
    r"""The exact primal of a linear kernel: :math:`X^\top X` (p x p), its centred copy and
    its factor, never m x m."""

    name = "primal"
    auto = True
    matrix_copies = 3

    def n_features(self, m, p):
        return p

    def refuses(self, kernel):
        if kernel != "linear" and kernel != "precomputed":
            return (f"solver='primal' needs kernel='linear' (explicit features); got "
                    f"kernel={kernel!r}: use solver='nystrom' for other kernels")
        return super().refuses(kernel)

    def over_budget(self, need, *, m, p, budget) -> str:
        return (f"solver='primal' needs a {p} x {p} matrix ({need / GIB:.1f} GiB with its "
                f"factors), over memory_budget={budget:g} GiB; use solver='nystrom' or 'dual'")

    def check_settings(self, settings):
        if any(s["kernel"] != "linear" for s in settings):
            raise ValueError("solver='primal' needs kernel='linear' in every kernel_grid "
                             "setting; use solver='nystrom' for other kernels")

    def feature_map(self, X, kernel_params, *, alpha, random_state=None, centres=None):
        return LinearFeatures(X.shape[1])


class NystromSolver(FeatureSolver):
    r"""Nystrom features on M centres among the training points (an approximation).

    It holds :math:`K_{MM}`, its eigenvectors, :math:`F^\top F` and its factor (4 M x M).

    Parameters
    ----------
    n_components : int >= 1 or None, default=None
        The centres M (``None``: ``min(m, 1000)``); at most the training samples m.
    center_selection : {"uniform", "kmeans++", "leverage"} or CenterSelector, default="uniform"
        How the centres are drawn (:func:`ecrm.weights.kernel._solvers.centers.select_centers`).
    """

    name = "nystrom"
    matrix_copies = 4

    def __init__(self, n_components=None, center_selection="uniform"):
        self.n_components = n_components
        self.center_selection = center_selection

    def check_params(self) -> None:
        check_parameter("n_components", self.n_components)
        check_center_selection(self.center_selection)

    def n_features(self, m, p):
        return min(m, 1000) if self.n_components is None else int(self.n_components)

    def check(self, *, m, p, kernel, cv, budget):
        M = check_parameter("n_components", self.n_components)
        if M is not None and M > m:
            raise ValueError(f"n_components={M} must be at most the number of training samples "
                             f"m={m}")
        super().check(m=m, p=p, kernel=kernel, cv=cv, budget=budget)

    def over_budget(self, need, *, m, p, budget) -> str:
        return (f"solver='nystrom' with n_components={self.n_features(m, p)} needs "
                f"{need / GIB:.1f} GiB, over memory_budget={budget:g} GiB")

    def feature_map(self, X, kernel_params, *, alpha, random_state=None, centres=None):
        M = self.n_features(X.shape[0], X.shape[1])
        selection = check_center_selection(self.center_selection)
        if centres is None:
            idx = select_centers(X, M, kernel_params, selection, alpha=alpha,
                                 random_state=random_state)
            return NystromFeatures(X[idx], kernel_params)
        return NystromFeatures(centres(X, M, kernel_params, selection, alpha=alpha,
                                       random_state=random_state), kernel_params)


#: Every solver by name (its class's ``name``), in the order ``solver="auto"`` tries the
#: exact ones: the one table of solvers.
SOLVER_CLASSES: dict[str, type[Solver]] = {
    cls.name: cls for cls in (DualSolver, PrimalSolver, NystromSolver)}
#: The table of solvers as users read it: name -> class, a live read-only view of
#: :data:`SOLVER_CLASSES` (change it with :func:`register_solver` / :func:`unregister_solver`).
SOLVERS = MappingProxyType(SOLVER_CLASSES)
#: The built-in solvers, which :func:`unregister_solver` keeps.
_BUILT_IN = frozenset(SOLVER_CLASSES)


def register_solver(cls: type[Solver]) -> type[Solver]:
    """Add ``cls`` to :data:`SOLVER_CLASSES` under its ``name`` (a decorator too).

    The estimators then accept the name and instances, the command line offers the name
    (``--solver``, in a parser built after the registration) and model files may construct
    its fit classes.

    Parameters
    ----------
    cls : type
        A :class:`Solver` subclass whose ``name`` is not taken (nor ``"auto"``).

    Returns
    -------
    cls : type
    """
    if not (isinstance(cls, type) and issubclass(cls, Solver)):
        raise TypeError(f"a solver must be a Solver subclass; got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"a solver class needs a name (a non-empty str); got {name!r}")
    if name in SOLVER_CLASSES or name == "auto":
        raise ValueError(f"a solver named {name!r} is already registered")
    SOLVER_CLASSES[name] = cls
    return cls


def unregister_solver(name: str) -> None:
    """Remove a solver added by :func:`register_solver` (the built-in ones stay)."""
    if name not in SOLVER_CLASSES or name in _BUILT_IN:
        raise ValueError(f"{name!r} is not a registered solver that can be removed")
    del SOLVER_CLASSES[name]
