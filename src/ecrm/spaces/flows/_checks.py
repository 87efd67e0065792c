"""Input checks shared by the risk minimisers of the flow package."""

from __future__ import annotations

import numpy as np

from ecrm.spaces.flows.polytope import FlowPolytope

__all__ = ["check_bounded_below", "check_risk_inputs"]


def check_risk_inputs(W, Y_ref, space) -> tuple[np.ndarray, np.ndarray]:
    """``W`` (n, m) and ``Y_ref`` (m, d) as float arrays, checked against ``space``."""
    if not isinstance(space, FlowPolytope):
        raise TypeError(
            "the absolute and square losses have no linear form; their risk minimisers are "
            f"implemented over ecrm.spaces.flows.FlowPolytope, not {type(space).__name__}")
    W = np.atleast_2d(np.asarray(W, dtype=float))
    Y_ref = np.asarray(Y_ref, dtype=float)
    if Y_ref.ndim != 2 or Y_ref.shape[1] != space.n_arcs:
        raise ValueError(f"reference outputs must have shape (m, {space.n_arcs}) (one column "
                         f"per arc); got shape {Y_ref.shape}")
    if W.ndim != 2 or W.shape[1] != Y_ref.shape[0]:
        raise ValueError(f"weights must have shape (n, {Y_ref.shape[0]}), one column per "
                         f"reference output; got shape {W.shape}")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(Y_ref))):
        raise ValueError("weights and reference outputs must be finite")
    return W, Y_ref


def check_bounded_below(W: np.ndarray, space: FlowPolytope, strict: bool) -> None:
    """On an unbounded polytope, raise ``ValueError`` for a row whose weights sum to <= 0
    (``< 0`` unless ``strict``), relative to their l1 norm: its risk is unbounded below."""
    if space.is_bounded:
        return
    s = W.sum(axis=1)
    floor = 1e-12 * np.maximum(np.abs(W).sum(axis=1), 1e-300)
    bad = np.flatnonzero(s <= floor if strict else s < -floor)
    if bad.size:
        k = bad[0]
        raise ValueError(
            f"the estimated risk of row {k} is unbounded below: its weights sum to "
            f"{s[k]:g} {'<=' if strict else '<'} 0 and the flow polytope is unbounded (a "
            "directed cycle of uncapacitated arcs)")
