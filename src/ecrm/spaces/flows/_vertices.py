r"""Vertices of a small bounded flow polytope by basis enumeration (``FlowPolytope.vertices``)."""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["basis_vertices"]


def basis_vertices(space, max_bases: int) -> np.ndarray:
    """All vertices of ``space`` (a bounded :class:`~ecrm.spaces.FlowPolytope`), (n_vertices, d).

    Every choice of ``rank(N)`` arcs with a non-singular incidence block (determinant +-1)
    and of the other arcs at 0 or at their capacity gives one candidate; the feasible ones
    are the basic feasible solutions, i.e. the vertices. Refuses more than ``max_bases``
    choices with a ``ValueError``.
    """
    if not space.is_bounded:
        raise ValueError("the flow polytope is unbounded (a directed cycle of "
                         "uncapacitated arcs), so its vertices do not describe it")
    d, r = space.n_arcs, len(space._rows)
    capped = np.isfinite(space.capacity)
    n_bases = math.comb(d, r) * 2 ** int(capped.sum())
    if n_bases > max_bases:
        raise ValueError(f"refusing to enumerate up to {n_bases} bases of a network with "
                         f"{d} arcs (max_bases={max_bases})")
    found = []
    for basis in itertools.combinations(range(d), r):
        B = space.A_eq[:, basis]
        if abs(np.linalg.det(B)) < 0.5:  # incidence bases have determinant +-1
            continue
        others = [k for k in range(d) if k not in basis]
        u = space._unit_capacity  # on the unit-scaled data: the tolerances are relative
        options = [(0.0, u[k]) if capped[k] else (0.0,) for k in others]
        for values in itertools.product(*options):
            y = np.zeros(d)
            y[others] = values
            y[list(basis)] = np.linalg.solve(
                B, space._unit_b_eq - space.A_eq[:, others] @ y[others])
            if np.all(y >= -1e-9) and np.all(y <= u + 1e-9):
                found.append(np.clip(y, 0.0, u))
    return space.clip(np.unique(np.round(np.array(found), 12), axis=0) * space.scale)
