"""The numeric parameters' constraints, declared once.

Every estimator's ``_check_params`` (run by ``fit`` and by the model-file loader,
:mod:`ecrm.io`) and every ``ecrm`` command-line option of the same parameter
(:func:`ecrm.commands._options.parameter_option`) check a value with :func:`check_parameter`,
so the library, its model files and its command line accept exactly the same values and say
the same thing about the others. Only the standard library is imported here, so that the
command-line parsers can read the table without loading NumPy.

>>> check_parameter("alpha", 1e-3)
0.001
>>> check_parameter("n_components", 0, "--n-components")
Traceback (most recent call last):
...
ValueError: --n-components must be an integer >= 1; got 0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["CONSTRAINTS", "Number", "check_parameter"]


@dataclass(frozen=True)
class Number:
    """A real (``kind="real"``) or integer (``"int"``) parameter, optionally ``None``.

    ``limits`` are the keyword arguments of :func:`ecrm._validation.check_real` (``low``,
    ``high``, ``low_open``, ``high_open``; default: the open interval (0, inf)) or
    :func:`ecrm._validation.check_int` (``low``, ``high``; default: >= 1).
    """

    kind: str
    limits: dict = field(default_factory=dict)
    none: bool = False

    def check(self, value, name: str):
        """``value`` cleaned (a float or an int, or ``None`` if allowed), else ``ValueError``."""
        from ecrm import _validation

        if value is None and self.none:
            return None
        return getattr(_validation, f"check_{self.kind}")(value, name, **self.limits)


#: Every numeric parameter by name; the same name means the same constraint on every
#: estimator (``alpha`` is the paper's lambda on ECRM, ECRMCV and JointKernelECRM alike).
CONSTRAINTS: dict[str, Number] = {
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
    # the forest's (ecrm.forest)
    "n_estimators": Number("int", {"low": 1}),
    "max_features": Number("real", {"high": 1.0, "high_open": False}),
    "min_samples_leaf": Number("int", {"low": 1}),
    "max_depth": Number("int", {"low": 1}, none=True),
    "max_samples": Number("real", {"high": 1.0, "high_open": False}),
    "n_split_targets": Number("int", {"low": 1}, none=True),
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
