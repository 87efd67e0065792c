"""The fitted state of a :class:`ecrm.weights.stack.StackedRiskECRM` checked against what its
``fit`` could have produced (what :func:`ecrm.load` runs on a model file's stack; the
members checked their own state when they were read)."""

from __future__ import annotations

import numpy as np

from ecrm.model_files._state import check_level_columns

__all__ = ["check_stack_state"]


def _simplex_rows(value, name: str, shape: tuple) -> np.ndarray:
    """A float64 array of ``shape`` whose rows lie on the simplex (finite, >= 0, sum 1)."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float64:
        found = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
        raise TypeError(f"{name} must be a float64 array; found {found}")
    if value.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (one weight per member); found "
                         f"{value.shape}")
    if not np.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    if (value < 0).any() or not np.allclose(value.sum(axis=-1), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"{name} must be non-negative weights summing to one")
    return value


def _floats(values, name: str, n: int | None = None) -> list:
    if not (isinstance(values, list) and (n is None or len(values) == n)
            and all(type(v) is float for v in values)):
        raise ValueError(f"{name} must be a list of {'' if n is None else n} floats")
    return values


def check_stack_state(model, plan) -> None:
    """Raise ``ValueError``/``TypeError`` unless ``model``'s fitted state is one its
    ``fit`` could have made with the parameters ``plan``."""
    from ecrm.weights._combination import check_members
    from ecrm.weights._stack_choice import check_pairs, reference_grid
    from ecrm.weights.stack import best_candidate, reference_pairs, simplex_grid

    check_level_columns(getattr(model, "level_columns_", None))
    members = model.estimators_
    given = plan["members"]
    if given is None:
        from ecrm.weights.forest.estimator import ForestECRMCV
        from ecrm.weights.kernel.estimator import ECRMCV

        types = [ECRMCV, ForestECRMCV]
    else:
        types = [type(member) for member in given]
    J = len(types)
    if not (isinstance(members, list) and len(members) == J
            and all(type(e) is t for e, t in zip(members, types, strict=True))):
        raise TypeError(f"estimators_ must be fitted {[t.__name__ for t in types]}, one per "
                        f"member")
    check_members(model, {f"estimators_[{i}]": e for i, e in enumerate(members)}, "the stack")
    weights = _simplex_rows(model.weights_, "weights_", (J,))
    if model.label_weights_ is not None:
        d = model.output_space.n_outputs
        _simplex_rows(model.label_weights_, "label_weights_", (d, J))
    if not isinstance(model.stack_used_, bool) or (not plan["nested"] and not model.stack_used_):
        raise ValueError("stack_used_ must be a bool (True without the nested check)")
    results = model.cv_results_
    if not (isinstance(results, dict) and set(results) == {"weights", "score", "mean_loss"}
            and isinstance(results["weights"], list)):
        raise ValueError("cv_results_ must hold weights, score and mean_loss")
    grid = results["weights"]
    for i, beta in enumerate(grid):
        _simplex_rows(np.asarray(_floats(beta, f"cv_results_['weights'][{i}]", J)),
                      f"cv_results_['weights'][{i}]", (J,))
    scores = _floats(results["score"], "cv_results_['score']", len(grid))
    _floats(results["mean_loss"], "cv_results_['mean_loss']", len(grid))
    lines = check_pairs(reference_pairs(plan["reference"], members), J, plan["resolution"])
    ref = reference_grid(lines, J).tolist() if lines is not None else []
    expected = simplex_grid(J, plan["resolution"]).tolist() + ref if J <= 3 else None
    if len(grid) < J + len(ref) or grid[:J] != np.eye(J).tolist() or (
            grid[len(grid) - len(ref):] != ref) or (expected is not None and grid != expected):
        raise ValueError("cv_results_['weights'] are not the candidates of the search")
    first = len(grid) - len(ref) if ref else 0  # the reference: its mixtures, or the vertices
    best = best_candidate(scores) if model.stack_used_ else \
        first + int(np.argmax(scores[first:first + (len(ref) or J)]))
    if weights.tolist() != grid[best] or model.best_score_ != scores[best]:
        raise ValueError("weights_ and best_score_ must be the chosen candidate's of "
                         "cv_results_ (the best, or the reference's best)")
    nested = model.nested_results_
    keys = {"gain", "std_error", "label_gain", "label_std_error"}
    if not (isinstance(nested, dict) and set(nested) == keys
            and all(type(v) is float for v in nested.values())):
        raise ValueError(f"nested_results_ must hold {sorted(keys)}, floats")
