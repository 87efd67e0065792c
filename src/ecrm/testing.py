"""Brute-force checkers shared by the test suite and available to users.

* :func:`check_oracle` -- an output space's oracle (any of its methods), or a loss's, attains
  the minimum of the linear objective over the space's enumeration
  (:meth:`ecrm.spaces.base.OutputSpace.enumerate`);
* :func:`check_linear_form` -- a loss's linear form equals its definition, on given pairs or on
  every pair of a small space's elements.

A new output space is covered by implementing ``enumerate``; a new loss by giving its
definition (``__call__``) and its linear form (``phi``, ``psi``, ``const``).
"""

from __future__ import annotations

import numpy as np

from ecrm.spaces.base import OutputSpace

__all__ = ["check_linear_form", "check_oracle"]


def check_linear_form(loss, Y_pred, Y_ref=None, *, max_pairs: int = 250_000, rtol=1e-10,
                      atol=1e-12, random_state=0) -> None:
    """Assert ``loss(y, y') == <phi(y), psi(y')> + const(y')`` for every pair of rows.

    Parameters
    ----------
    loss : ecrm.losses.LinearLoss
    Y_pred : array-like of shape (n, d), or an output space
        Predictions; with an output space (and no ``Y_ref``) every pair of the space's
        elements is checked, or a random sample of ``max_pairs`` pairs when there are more.
    Y_ref : array-like of shape (m, d), optional
        References (required unless ``Y_pred`` is a space).

    Raises
    ------
    AssertionError
        Naming the first pair where the definition and the linear form disagree.
    """
    if isinstance(Y_pred, OutputSpace):
        if Y_ref is not None:
            raise TypeError("check_linear_form(loss, space) takes no Y_ref")
        Y = Y_pred.enumerate()
        n = len(Y)
        if n * n <= max_pairs:
            Y_pred, Y_ref = Y, Y
        else:
            rng = np.random.default_rng(random_state)
            k = max(1, int(np.sqrt(max_pairs)))
            Y_pred, Y_ref = Y[rng.choice(n, k, replace=False)], Y[rng.choice(n, k, replace=False)]
    elif Y_ref is None:
        raise TypeError("give Y_ref, or an output space as the second argument")
    Y_pred = np.asarray(Y_pred, dtype=float)
    Y_ref = np.asarray(Y_ref, dtype=float)
    n, m = len(Y_pred), len(Y_ref)
    direct = loss(np.repeat(Y_pred, m, axis=0), np.tile(Y_ref, (n, 1))).reshape(n, m)
    linear = loss.phi(Y_pred) @ loss.psi(Y_ref).T + loss.const(Y_ref)[None, :]
    bad = ~np.isclose(direct, linear, rtol=rtol, atol=atol)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise AssertionError(
            f"{loss!r}: linear form {linear[i, j]!r} != definition {direct[i, j]!r} for "
            f"y = {Y_pred[i].tolist()}, y' = {Y_ref[j].tolist()}"
        )


def check_oracle(space: OutputSpace, C, *, loss=None, oracle=None, rtol=1e-9,
                 atol=1e-12) -> np.ndarray:
    """Assert an oracle attains the minimum of the linear objective over the enumeration.

    Parameters
    ----------
    space : OutputSpace
        A space small enough to enumerate.
    C : array-like of shape (n, e)
        Cost rows.
    loss : ecrm.losses.LinearLoss, optional
        With a loss the objective is ``<loss.phi(y), c>`` and the default oracle is
        ``space.minimize(C, loss.cost_form)``; without, ``<y, c>`` and ``space.argmin(C)``.
    oracle : callable, optional
        ``oracle(C) -> Y`` to check instead of the default (e.g. one ``method`` of
        :meth:`ecrm.Hierarchy.argmin`).
    rtol, atol : float
        The oracle's value must equal the minimum within ``atol + rtol * sum|c|``, a
        tolerance relative to the scale of the costs.

    Returns
    -------
    Y : ndarray of shape (n, d)
        The oracle's answers; every row lies in the space.

    Raises
    ------
    AssertionError
        Naming the first cost row whose answer is outside the space or not a minimiser.
    """
    C = np.atleast_2d(np.asarray(C, dtype=float))
    embed = (lambda Y: np.asarray(Y, dtype=float)) if loss is None else loss.phi
    if oracle is None:
        oracle = space.argmin if loss is None else (lambda C: space.minimize(C, loss.cost_form))
    Y_hat = np.asarray(oracle(C), dtype=float)
    inside = space.contains(Y_hat)
    if not inside.all():
        i = int(np.flatnonzero(~inside)[0])
        raise AssertionError(f"{space!r}: oracle answer {Y_hat[i].tolist()} for cost row {i} "
                             "is not in the space")
    got = np.einsum("ij,ij->i", embed(Y_hat), C)
    best = (embed(space.enumerate()) @ C.T).min(axis=0)
    bad = np.abs(got - best) > atol + rtol * np.abs(C).sum(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AssertionError(f"{space!r}: oracle value {got[i]!r} != brute-force minimum "
                             f"{best[i]!r} for cost row {i}: {C[i].tolist()}")
    return Y_hat
