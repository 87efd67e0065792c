"""Brute-force checks by enumerating a (small) output space.

* :func:`enumerate_outputs` lists every element of a space (dispatch on the space's type; a
  new space registers with ``enumerate_outputs.register``);
* :func:`check_linear_form_on_space` checks ``loss(y, y') == <phi(y), psi(y')> + const(y')``
  for every pair of elements;
* :func:`check_oracle` checks a loss's (or a space's) oracle against the minimum over the
  enumeration.
"""

from __future__ import annotations

import itertools
from functools import singledispatch

import numpy as np

from ecrm.spaces.base import MultilabelSpace, OutputSpace
from ecrm.spaces.candidates import CandidateSpace
from ecrm.spaces.hierarchy import Hierarchy
from ecrm.spaces.permutations import PermutationSpace
from ecrm.spaces.polytope import LinearConstraintSpace
from ecrm.testing import check_linear_form, consistent_labelings


@singledispatch
def enumerate_outputs(space: OutputSpace, max_outputs: int = 50_000) -> np.ndarray:
    """Every element of ``space`` as the rows of an array (n_elements, n_outputs)."""
    raise TypeError(f"no enumeration registered for {type(space).__name__}; register one with "
                    "ecrm.testing_enumeration.enumerate_outputs.register")


def _budget(count: int, max_outputs: int, what: str) -> None:
    if count > max_outputs:
        raise ValueError(f"refusing to enumerate {count} {what} (max_outputs={max_outputs})")


@enumerate_outputs.register
def _(space: CandidateSpace, max_outputs: int = 50_000) -> np.ndarray:
    return space.candidates.copy()


@enumerate_outputs.register
def _(space: MultilabelSpace, max_outputs: int = 50_000) -> np.ndarray:
    d = space.n_labels
    _budget(2**d, max_outputs, "label sets")
    return np.array(list(itertools.product([0.0, 1.0], repeat=d))).reshape(-1, d)


@enumerate_outputs.register
def _(space: Hierarchy, max_outputs: int = 50_000) -> np.ndarray:
    _budget(2**space.n_labels, max_outputs, "label sets")
    return consistent_labelings(space)


@enumerate_outputs.register
def _(space: PermutationSpace, max_outputs: int = 50_000) -> np.ndarray:
    import math

    _budget(math.factorial(space.n_labels), max_outputs, "permutations")
    ranks = np.array(list(itertools.permutations(range(space.n_labels))))
    return space.from_ranks(ranks)


@enumerate_outputs.register
def _(space: LinearConstraintSpace, max_outputs: int = 50_000) -> np.ndarray:
    return space.enumerate(max_outputs=max(max_outputs, 2**space.n_outputs)
                           if space.n_outputs <= 16 else max_outputs)


def check_linear_form_on_space(loss, space: OutputSpace, *, max_pairs: int = 250_000,
                               rtol=1e-10, atol=1e-12, random_state=0) -> None:
    """Assert the linear form of ``loss`` equals its definition on every pair of ``space``.

    Every pair ``(y, y')`` of elements is checked when there are at most ``max_pairs``;
    otherwise a random sample of ``max_pairs`` pairs. Raises ``AssertionError`` naming the
    first pair that disagrees.
    """
    Y = enumerate_outputs(space)
    n = len(Y)
    if n * n <= max_pairs:
        check_linear_form(loss, Y, Y, rtol=rtol, atol=atol)
        return
    rng = np.random.default_rng(random_state)
    k = max(1, int(np.sqrt(max_pairs)))
    check_linear_form(loss, Y[rng.choice(n, k, replace=False)],
                      Y[rng.choice(n, k, replace=False)], rtol=rtol, atol=atol)


def check_oracle(space: OutputSpace, C, *, loss=None, rtol=1e-9, atol=1e-9) -> np.ndarray:
    """Assert the oracle attains the minimum of the linear objective over the enumeration.

    With ``loss`` (a LinearLoss), the objective is ``<loss.phi(y), c>`` and the oracle is
    ``loss.argmin(C, space)``; without, ``<y, c>`` and ``space.argmin(C)``. Every returned
    row must lie in the space (``space.validate``) and its objective must equal the minimum
    over all elements (ties may be broken either way). Returns the oracle's answers.
    """
    C = np.atleast_2d(np.asarray(C, dtype=float))
    Y_all = enumerate_outputs(space)
    embed = (lambda Y: np.asarray(Y, dtype=float)) if loss is None else loss.phi
    Y_hat = space.argmin(C) if loss is None else loss.argmin(C, space)
    space.validate(Y_hat)
    got = np.einsum("ij,ij->i", embed(Y_hat), C)
    best = (embed(Y_all) @ C.T).min(axis=0)
    bad = ~np.isclose(got, best, rtol=rtol, atol=atol)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AssertionError(f"{space!r}: oracle value {got[i]!r} != brute-force minimum "
                             f"{best[i]!r} for cost row {i}: {C[i].tolist()}")
    return Y_hat
