"""Synthetic hierarchical multilabel data with a known label model (the demo's problem)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from ecrm.estimators._validation import check_int, check_real
from ecrm.spaces.hierarchy import Hierarchy

__all__ = ["make_hmc", "random_tree"]


def random_tree(n_labels: int, *, n_top: int = 3, max_children: int = 4, random_state=None):
    """A random tree hierarchy on labels ``"L0"`` to ``"L{n-1}"`` with ``n_top`` top-level labels.

    Every further label picks its parent uniformly among earlier labels that still have fewer
    than ``max_children`` children.

    Parameters
    ----------
    n_labels : int
        At least 1.
    n_top : int, default=3
        Top-level labels, in ``[1, n_labels]``.
    max_children : int, default=4
        At least 1.
    random_state : int, RandomState or None, default=None

    Returns
    -------
    hierarchy : Hierarchy
        A tree (every label has at most one parent).
    """
    check_int(n_labels, "n_labels")
    check_int(n_top, "n_top", high=n_labels)
    check_int(max_children, "max_children")
    rng = check_random_state(random_state)
    names = [f"L{j}" for j in range(n_labels)]
    n_children = np.zeros(n_labels, dtype=int)
    edges = []
    for j in range(n_top, n_labels):
        open_ = np.flatnonzero(n_children[:j] < max_children)
        parent = rng.choice(open_)
        n_children[parent] += 1
        edges.append((names[parent], names[j]))
    return Hierarchy(edges, labels=names)


def make_hmc(n_samples: int = 1000, *, n_features: int = 10, n_labels: int = 30,
             noise: float = 0.5, random_state=None):
    r"""Sample a hierarchical multilabel problem with a known, nonlinear label model.

    Inputs are standard normal in :math:`\mathbb R^p`. Label :math:`j` with parent :math:`p`
    (top-level labels: the always-on virtual root) is on iff its parent is on and

    .. math:: \sin(a_j^\top x) + 0.5\, b_j^\top x + \varepsilon_j > t_j,
              \qquad \varepsilon_j \sim \mathcal N(0, \mathrm{noise}^2),

    with random directions :math:`a_j, b_j` and thresholds :math:`t_j` that switch a label on
    for roughly half of the inputs whose parent is on. The labels are consistent with the
    hierarchy by construction.

    Parameters
    ----------
    n_samples : int, default=1000
    n_features : int, default=10
    n_labels : int, default=30
        Labels of the random tree (:func:`random_tree`, with three top-level labels or
        ``n_labels`` if fewer).
    noise : float, default=0.5
        Standard deviation of the label noise (0 or more).
    random_state : int, RandomState or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    Y : ndarray of shape (n_samples, n_labels), 0/1
    hierarchy : Hierarchy
    """
    check_int(n_samples, "n_samples")
    check_int(n_features, "n_features")
    check_int(n_labels, "n_labels")
    check_real(noise, "noise", low_open=False)
    rng = check_random_state(random_state)
    hierarchy = random_tree(n_labels, n_top=min(3, n_labels), random_state=rng)
    X = rng.normal(size=(n_samples, n_features))
    A = rng.normal(scale=1.0 / np.sqrt(n_features), size=(n_features, n_labels)) * 2.0
    B = rng.normal(scale=1.0 / np.sqrt(n_features), size=(n_features, n_labels))
    score = np.sin(X @ A) + 0.5 * X @ B + rng.normal(scale=noise, size=(n_samples, n_labels))
    thresholds = rng.uniform(-0.3, 0.5, size=n_labels)
    Y = np.zeros((n_samples, n_labels))
    for j in hierarchy.order:  # parents first
        parents = hierarchy.parents[j]
        parent_on = Y[:, parents[0]] if len(parents) else 1.0
        Y[:, j] = parent_on * (score[:, j] > thresholds[j])
    return X, Y, hierarchy
