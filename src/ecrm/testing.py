"""Brute-force checkers shared by the test suite and available to users."""

from __future__ import annotations

import itertools

import numpy as np


def consistent_labelings(hierarchy) -> np.ndarray:
    """Every label set consistent with a (small) hierarchy, as rows of a 0/1 array."""
    d = hierarchy.n_labels
    if d > 16:
        raise ValueError(f"refusing to enumerate 2^{d} label sets; use at most 16 labels")
    allsets = np.array(list(itertools.product([0.0, 1.0], repeat=d))).reshape(-1, d)
    return allsets[hierarchy.is_consistent(allsets)]


def check_linear_form(loss, Y_pred, Y_ref=None, *, rtol=1e-10, atol=1e-12) -> None:
    """Assert ``loss(y, y') == <phi(y), psi(y')> + const(y')`` for every pair of rows.

    ``check_linear_form(loss, space)`` (an output space, no ``Y_ref``) checks every pair of
    the space's elements by enumeration (:mod:`ecrm.testing_enumeration`). Raises
    ``AssertionError`` naming the first pair where the definition and the linear form disagree.
    """
    from ecrm.spaces.base import OutputSpace

    if isinstance(Y_pred, OutputSpace):
        if Y_ref is not None:
            raise TypeError("check_linear_form(loss, space) takes no Y_ref")
        from ecrm.testing_enumeration import check_linear_form_on_space

        check_linear_form_on_space(loss, Y_pred, rtol=rtol, atol=atol)
        return
    if Y_ref is None:
        raise TypeError("give Y_ref, or an output space as the second argument")
    Y_pred = np.asarray(Y_pred, dtype=float)
    Y_ref = np.asarray(Y_ref, dtype=float)
    n, m = len(Y_pred), len(Y_ref)
    direct = loss(np.repeat(Y_pred, m, axis=0), np.tile(Y_ref, (n, 1))).reshape(n, m)
    linear = loss.phi(Y_pred) @ loss.psi(Y_ref).T + loss.offset(Y_ref)[None, :]
    bad = ~np.isclose(direct, linear, rtol=rtol, atol=atol)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise AssertionError(
            f"{loss!r}: linear form {linear[i, j]!r} != definition {direct[i, j]!r} for "
            f"y = {Y_pred[i].tolist()}, y' = {Y_ref[j].tolist()}"
        )
