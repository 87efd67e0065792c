r"""Simulated network flows: the paper's flow-prediction experiment (Section 6.2, Figure 1).

The network is the paper's Figure 1 (:func:`ecrm.spaces.flows.paper_network`): nodes
``s, a, b, c, d, t``, arcs ``s->a, s->b, a->b, a->c, a->d, b->c, b->d, c->d, c->t, d->t``,
one unit of flow from ``s`` to ``t``. Inputs are uniform on :math:`[0, 1]^{20}`.

**Path-choice model** (the paper gives none; this one is ours). Arc :math:`a` has cost

.. math:: c_a(x) = \delta_a + \beta_a x_{j_a} - \gamma_a x_{10 + j_a}, \qquad j_a = a ,

so arc :math:`a` depends on features :math:`a` and :math:`10 + a` (all 20 features matter);
the intercepts :math:`\delta_a` are the parameter ``intercepts``.
Path :math:`p` costs :math:`C_p(x) = \sum_{a\in p} c_a(x)` and a traveller picks it with the
logit probability :math:`\pi_p(x) \propto \exp(-\theta C_p(x))`. ``n_travellers``
:math:`T` travellers choose independently, and the random weight of path :math:`p` is the
fraction of them who chose it, :math:`(\text{counts}) / T \sim \mathrm{Multinomial}(T,
\pi(x)) / T`. The flow on an arc is the sum of the weights of the paths that use it. The
default parameters (:data:`DEFAULT_PARAMETERS`) are fixed numbers, chosen so that at
:math:`x = 0.75\cdot\mathbf 1` the arc marginals :math:`\mathrm{Binomial}(T, q_a)/T` are
skewed: their means, medians and modes differ, so the absolute and square losses have
different Bayes predictions.

**Exact conditional distribution.** Given :math:`x` there are :math:`\binom{T+8}{8}`
outcomes (165 for :math:`T = 3`): :meth:`FlowModel.conditional_distribution` enumerates
them with their probabilities, so conditional risks :math:`R(y|x) = E[\ell(y, Y)|x]` are
finite sums and the Bayes risk :math:`\min_{y\in\mathcal Y} R(y|x)` is an LP (absolute loss,
all weights positive) or the variance (square loss: the conditional mean is feasible). Both
are exact up to the LP solver's tolerance (:math:`10^{-9}`); no Monte Carlo is involved.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ecrm.estimators._parameters import check_parameter
from ecrm.estimators._validation import check_int
from ecrm.spaces.flows import FlowPolytope, absolute_risk, minimize_absolute_risk, paper_network

__all__ = ["DEFAULT_PARAMETERS", "FlowModel", "simulate_flows", "st_paths"]


def _rng(random_state):
    """A numpy Generator or RandomState from None, an int, a Generator or a RandomState."""
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        return random_state
    return np.random.default_rng(random_state)

#: Parameters of the default path-choice model: per-arc intercepts, beta, gamma; theta; T.
DEFAULT_PARAMETERS: dict[str, Any] = {
    "intercepts": (0.6, 1.4, 0.3, 1.2, 0.5, 0.9, 1.5, 0.4, 0.7, 1.1),
    "beta": (2.0, 1.0, 1.5, 0.5, 2.5, 1.0, 0.5, 2.0, 1.5, 1.0),
    "gamma": (1.0, 0.5, 0.5, 1.5, 0.5, 1.0, 2.0, 0.5, 1.0, 0.5),
    "theta": 1.5,
    "n_travellers": 3,
}


def st_paths(space: FlowPolytope, source, sink) -> np.ndarray:
    """All simple ``source``-``sink`` path flows of a network, shape (n_paths, n_arcs)."""
    out: dict = {}
    for k, (t, h) in enumerate(space.arcs):
        out.setdefault(t, []).append((h, k))
    paths = []

    def walk(node, used, visited):
        if node == sink:
            y = np.zeros(space.n_arcs)
            y[used] = 1.0
            paths.append(y)
            return
        for head, k in out.get(node, []):
            if head not in visited:
                walk(head, used + [k], visited | {head})

    walk(source, [], {source})
    return np.array(paths)


@dataclass
class FlowModel:
    """The path-choice model of :mod:`ecrm.datasets.flows` on the paper's network.

    Attributes
    ----------
    space : FlowPolytope
        The network (one unit from ``s`` to ``t``).
    paths : ndarray of shape (9, 10)
        The s-t path flows (rows), in depth-first order.
    intercepts, beta, gamma : ndarray of shape (10,)
        Arc-cost parameters (the intercepts delta, beta, gamma); ``theta`` the logit scale;
        ``n_travellers`` the number T of travellers.
    """

    intercepts: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    theta: float = 1.5
    n_travellers: int = 3
    n_features: int = 20

    def __post_init__(self):
        self.space = paper_network()
        self.paths = st_paths(self.space, "s", "t")
        self.intercepts, self.beta, self.gamma = (
            np.asarray(v, dtype=float) for v in (self.intercepts, self.beta, self.gamma))
        # the model uses features 0-19
        self.n_features = check_int(self.n_features, "n_features", low=20)
        self.n_travellers = T = check_int(self.n_travellers, "n_travellers")
        counts = [c for c in itertools.product(range(T + 1), repeat=len(self.paths))
                  if sum(c) == T]
        self._counts = np.array(counts, dtype=float)
        self._log_multinomial = np.array([math.lgamma(T + 1) - sum(math.lgamma(k + 1)
                                                                   for k in c) for c in counts])

    @classmethod
    def default(cls) -> FlowModel:
        """The model with :data:`DEFAULT_PARAMETERS`."""
        return cls(**DEFAULT_PARAMETERS)

    def arc_costs(self, X) -> np.ndarray:
        """:math:`c_a(x)`, shape (n, 10)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        return self.intercepts + self.beta * X[:, :10] - self.gamma * X[:, 10:20]

    def path_probabilities(self, X) -> np.ndarray:
        """Logit choice probabilities :math:`\\pi_p(x)`, shape (n, n_paths)."""
        u = -self.theta * self.arc_costs(X) @ self.paths.T
        u -= u.max(axis=1, keepdims=True)
        p = np.exp(u)
        return p / p.sum(axis=1, keepdims=True)

    def mean(self, X) -> np.ndarray:
        """Conditional mean flow :math:`E[Y|x]`, shape (n, 10)."""
        return self.path_probabilities(X) @ self.paths

    def sample(self, X, random_state=None) -> np.ndarray:
        """Draw one flow per row of ``X``, shape (n, 10)."""
        rng = _rng(random_state)
        P = self.path_probabilities(X)
        counts = np.array([rng.multinomial(self.n_travellers, p) for p in P], dtype=float)
        return counts / self.n_travellers @ self.paths

    def conditional_distribution(self, x) -> tuple[np.ndarray, np.ndarray]:
        """Every outcome of :math:`Y | x` with its probability: ((K, 10), (K,)), exactly.

        Outcomes are listed per multinomial count vector, so equal flows may repeat.
        """
        p = self.path_probabilities(np.atleast_2d(x))[0]
        with np.errstate(divide="ignore"):
            logp = self._log_multinomial + self._counts @ np.log(p)
        prob = np.exp(logp)
        return self._counts / self.n_travellers @ self.paths, prob / prob.sum()

    def conditional_risk(self, x, Y, loss: str = "absolute") -> np.ndarray:
        """Exact :math:`R(y|x) = E[\\ell(y, Y)|x]` for each row ``y`` of ``Y``, shape (n,)."""
        outcomes, prob = self.conditional_distribution(x)
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        diff = Y[:, None, :] - outcomes[None, :, :]
        if check_parameter("flow_loss", loss, "loss") == "absolute":
            per = np.abs(diff).sum(axis=2)
        else:
            per = (diff ** 2).sum(axis=2)
        return per @ prob

    def bayes(self, x, loss: str = "absolute") -> tuple[float, np.ndarray]:
        """Bayes risk :math:`\\min_y R(y|x)` and a minimiser, exactly (LP tolerance 1e-9)."""
        outcomes, prob = self.conditional_distribution(x)
        if check_parameter("flow_loss", loss, "loss") == "absolute":
            res = minimize_absolute_risk(prob[None, :], outcomes, self.space, method="local")
            y = res.solution[0]
            return float(absolute_risk(prob[None], outcomes, y[None])[0]), y
        y = prob @ outcomes
        return float(self.conditional_risk(x, y[None], "square")[0]), y


def simulate_flows(n: int, *, random_state=None, model: FlowModel | None = None,
                   return_model: bool = False):
    r"""Sample ``n`` input-flow pairs of the paper's flow-prediction experiment.

    Parameters
    ----------
    n : int
        Number of samples.
    random_state : None, int, numpy Generator or RandomState, default=None
    model : FlowModel, default=None
        The path-choice model (default :meth:`FlowModel.default`).
    return_model : bool, default=False
        Also return the model (its exact conditional distribution gives Bayes risks).

    Returns
    -------
    X : ndarray of shape (n, 20)
        Inputs, uniform on :math:`[0, 1]^{20}`.
    Y : ndarray of shape (n, 10)
        Flows on the arcs of :func:`ecrm.spaces.flows.paper_network`.
    model : FlowModel
        Only if ``return_model``.

    Examples
    --------
    >>> X, Y = simulate_flows(5, random_state=0)
    >>> X.shape, Y.shape
    ((5, 20), (5, 10))
    >>> from ecrm.spaces.flows import paper_network
    >>> bool(paper_network().contains(Y).all())
    True
    """
    n = cast(int, check_int(n, "n", low=0))
    model = FlowModel.default() if model is None else model
    rng = _rng(random_state)
    X = rng.uniform(size=(n, model.n_features))
    Y = model.sample(X, rng)
    return (X, Y, model) if return_model else (X, Y)
