r"""One conditional risk from any number of weight families: their risks stacked.

Each member :math:`j = 1, \dots, J` (a family estimator, e.g. :class:`ecrm.ECRMCV` or
:class:`ecrm.ForestECRMCV`) estimates the conditional risk with its weights
:math:`w^{(j)}(x)`. A convex combination

.. math:: \hat R_\beta(y|x) = \sum_j \beta_j \hat R_j(y|x), \qquad
          \beta \in \Delta_J = \{\beta \ge 0, \textstyle\sum_j \beta_j = 1\},

is again an estimate of the risk, with weights :math:`\sum_j \beta_j w^{(j)}(x)`; for a
loss linear in an embedding its costs are :math:`c_\beta(x) = \sum_j \beta_j c_j(x)` and its
label scores :math:`\sum_j \beta_j \hat p_j(x)`. Each member gives honest outputs of its
training points (:meth:`ecrm.weights.RiskEstimator.fit_honest`: the kernel's exact
leave-one-out costs, the forest's out-of-bag costs), so the combined honest costs of every
:math:`\beta` are known with nothing refitted, and :math:`\beta` is chosen by the mean task
loss of the exact oracle on them (or a metric of the combined label scores).

That criterion is piecewise constant in :math:`\beta`, so :math:`\beta` is searched on the
lattice :math:`\{\beta \in \Delta_J : k\beta \in \mathbb{Z}^J\}` of ``resolution`` :math:`k`:
exhaustively for :math:`J \le 3` (the exact argmin over the lattice, the first in
:func:`simplex_grid`'s order on ties), greedily beyond (forward selection with replacement:
:math:`k` steps, each adding :math:`1/k` to the member that judges best, keeping the best
iterate; every vertex, i.e. every member alone, is judged at the first step). The pure
members are always candidates.

Choosing :math:`\beta` on the outputs it is then judged on flatters the stack. The nested
check splits the honest rows in two halves; on each it chooses :math:`\beta` and the best
single member, and judges both on the other half. The stack is kept only if its mean gain
over the single member on the judged rows exceeds its standard error (per row for the task
loss; per block of rows, ten blocks a half, for a metric); otherwise the best single member
is the model (``stack_used_`` says which).

For label scores chosen by a metric, each label :math:`l` may also get its own share
:math:`\beta^{(l)}`: the lattice point minimising the label's Brier score of the combined
honest scores, shrunk towards the global share,
:math:`\tilde\beta^{(l)} = (1 - s_l)\beta^{(l)} + s_l \beta` with
:math:`s_l = \tau / (\tau + n_l)` (:math:`n_l` the label's positive training points,
:math:`\tau` = ``label_shrinkage``; beyond three members the lattice is the vertices: each
label's best member), kept only if the nested check says they help (``label_weights_``).
"""

from __future__ import annotations

import itertools

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._parameters import RANDOM_STATE, Checked, Flag, Number, Rule, table
from ecrm.estimators._template import StructuredEstimator
from ecrm.selection._loo import check_scoring
from ecrm.weights.mixture import _described, honest_criterion

__all__ = ["StackedRiskECRM", "best_candidate", "simplex_grid"]

#: Blocks of rows per half whose metric values give the standard error under a metric.
_BLOCKS = 10


def simplex_grid(n_members: int, resolution: int) -> np.ndarray:
    r"""Every :math:`\beta \in \Delta_J` with :math:`k\beta` integer, (G, J), G =
    :math:`\binom{k + J - 1}{J - 1}`; the vertices (one member alone) come first, in member
    order, then the rest in lexicographic order of :math:`k\beta`, descending."""
    counts = [np.diff([0, *bars, resolution + n_members]) - 1
              for bars in itertools.combinations(range(1, resolution + n_members),
                                                 n_members - 1)]
    points = sorted({tuple(int(c) for c in v) for v in counts}, reverse=True)
    vertices = [p for p in points if max(p) == resolution]
    vertices.sort(key=lambda p: p.index(resolution))
    rest = [p for p in points if max(p) < resolution]
    return np.array(vertices + rest, dtype=float) / resolution


def best_candidate(scores) -> int:
    """The index of the candidate kept: the first of the best
    ``scores`` (the search's order: the members alone first)."""
    return int(np.argmax(scores))


def _check_members(members):
    """``None`` (the kernel search and the forest search) or a non-empty list of unfitted
    family estimators with honest outputs (``fit_honest``)."""
    from ecrm.weights._risk import RiskEstimator

    if members is None:
        return None
    if not isinstance(members, (list, tuple)) or not members:
        raise TypeError(f"members must be a non-empty list of family estimators; got "
                        f"{members!r}"[:200])
    for i, member in enumerate(members):
        if not isinstance(member, RiskEstimator) or \
                type(member).fit_honest is RiskEstimator.fit_honest:
            raise TypeError(f"members[{i}] must be a family estimator with honest outputs "
                            f"(e.g. ecrm.ECRMCV, ecrm.ForestECRMCV); got "
                            f"{type(member).__name__}")
    return list(members)


def _units(values, Y, *, loss, output_space, metric, blocks) -> np.ndarray:
    """The criterion per unit (greater is better): minus each row's task loss, or the
    metric of each block of rows."""
    if metric is None:
        return -loss(output_space.minimize(values, loss.cost_form), Y)
    with np.errstate(all="ignore"):
        out = np.array([float(metric(Y[b], values[b])) for b in blocks])
    return out[np.isfinite(out)]


class StackedRiskECRM(StructuredEstimator):
    r"""ECRM on a convex combination of several weight families' risk estimates.

    Fits each member once, takes its honest outputs and chooses the combination
    :math:`\beta` on the simplex by the criterion of the combined honest outputs, guarded by
    a nested honest check (see :mod:`ecrm.weights.stack`). Prediction is the exact oracle on
    the combined costs.

    Parameters
    ----------
    loss : LinearLoss
    output_space : OutputSpace
    members : list of estimators, optional
        Unfitted family estimators with honest outputs, each of this loss and output space
        (cloned at fit; a member without a seed is seeded from ``random_state``). ``None``:
        :class:`ecrm.ECRMCV` and :class:`ecrm.ForestECRMCV` with this ``scoring``.
    scoring : "loss", a metric name or callable, default="loss"
        What :math:`\beta` is chosen by: the task loss, or a ranking metric of the label
        scores (members then give honest label scores).
    nested : bool, default=True
        Run the nested honest check (fall back to the best single member unless the stack
        wins by more than its standard error).
    resolution : int, default=10
        :math:`k`: the lattice step :math:`1/k` of the search.
    label_shrinkage : float or None, default=10.0
        :math:`\tau` of the per-label shares (scoring by a metric only); ``None``: one
        share for every label.
    random_state : int, RandomState or None
        Seeds the members and the halves of the nested check.

    Attributes
    ----------
    estimators_ : list of fitted estimators
    weights_ : ndarray of shape (J,)
        :math:`\beta` (one-hot when the best single member is the model).
    label_weights_ : ndarray of shape (d, J) or None
        Each label's share for :meth:`predict_scores`, or ``None``.
    stack_used_ : bool
        Whether the combination (rather than the best single member) is the model.
    best_score_ : float
        The honest criterion of ``weights_`` on all the honest rows (greater is better).
    cv_results_ : dict
        ``weights`` (each candidate, a list of J floats), ``score`` and ``mean_loss`` (NaN
        under a metric) on all the honest rows.
    nested_results_ : dict
        ``gain`` and ``std_error`` of the stack over the best single member on the judged
        halves, ``label_gain`` and ``label_std_error`` of the per-label shares (NaN when
        not run).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from ecrm import ECRMCV, ForestECRMCV, Hierarchy, StackedRiskECRM
    >>> from ecrm.losses import HammingLoss
    >>> h, loss = Hierarchy([("a", "a1"), ("a", "a2")]), HammingLoss()
    >>> X = np.linspace(0, 1, 60)[:, None]
    >>> Y = np.where(X > 0.5, [1, 0, 1], [1, 1, 0])
    >>> members = [ECRMCV(loss, h, alphas=[1e-2, 0.1, 1]), ForestECRMCV(loss, h, n_estimators=20)]
    >>> model = StackedRiskECRM(loss, h, members=members, random_state=0).fit(X, Y)
    >>> float(model.weights_.sum()), model.predict([[0.9]]).tolist()
    (1.0, [[1.0, 0.0, 1.0]])
    """

    _parameter_constraints = table(
        "scoring",
        members=Checked("a non-empty list of family estimators with honest outputs",
                        bad=([], "x", [1]), function=_check_members),
        nested=Flag(),
        resolution=Number("int", {"low": 1, "high": 100}),
        label_shrinkage=Number("real", {"low_open": False}, none=True),
        random_state=RANDOM_STATE)
    _parameter_rules = (Rule("metric", check_scoring, ("scoring",)),)
    _linear_loss = True
    _fits_dask = True  # when the members do: their honest outputs come back in memory

    def __init__(self, loss, output_space, *, members=None, scoring="loss", nested=True,
                 resolution=10, label_shrinkage=10.0, random_state=None):
        self.loss = loss
        self.output_space = output_space
        self.members = members
        self.scoring = scoring
        self.nested = nested
        self.resolution = resolution
        self.label_shrinkage = label_shrinkage
        self.random_state = random_state

    _fitted_attributes = ("estimators_", "weights_", "label_weights_", "stack_used_",
                          "best_score_", "cv_results_", "nested_results_", "n_features_in_",
                          "feature_names_in_", "feature_columns_", "level_columns_")

    def _new_members(self, members, rng) -> list:
        if members is None:
            from ecrm.weights.forest.estimator import ForestECRMCV
            from ecrm.weights.kernel.estimator import ECRMCV

            members = [ECRMCV(self.loss, self.output_space, scoring=self.scoring),
                       ForestECRMCV(self.loss, self.output_space, scoring=self.scoring)]
        out = []
        for i, member in enumerate(members):
            for part in ("loss", "output_space"):
                if _described(getattr(member, part)) != _described(getattr(self, part)):
                    raise ValueError(f"members[{i}]'s {part} is not the stack's")
            member = clone(member)
            seed = int(rng.randint(np.iinfo(np.int32).max))
            if "random_state" in member.get_params(deep=False) and member.random_state is None:
                member.set_params(random_state=seed)
            out.append(member)
        return out

    def fit(self, X, Y):
        """Fit every member, then choose the combination by its honest criterion.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (m, p)
        Y : array-like of shape (m, d)

        Returns
        -------
        self : StackedRiskECRM
        """
        plan = self._check_params()
        metric = plan["metric"]
        checked_X, checked_Y, seen = self._check_training_data(X, Y, None)
        rng = check_random_state(self.random_state)
        members = self._new_members(plan["members"], rng)
        m = checked_X.shape[0]
        honest = [member.fit_honest(X, Y, scores=metric is not None) for member in members]
        by_point = np.full((len(members), m, honest[0].values.shape[1]), np.nan)
        for j, out in enumerate(honest):
            by_point[j, out.rows] = out.values
        rows = np.flatnonzero(~np.isnan(by_point).any(axis=(0, 2)))
        if len(rows) < 2:
            raise ValueError("fewer than two training points are out of sample in every member")
        Yh = np.asarray(checked_Y, dtype=float)[rows]
        outputs = by_point[:, rows]
        judge = {"loss": self.loss, "output_space": self.output_space, "metric": metric}
        grid, scores, losses = self._search(outputs, Yh, judge)
        best, single = best_candidate(scores), int(np.argmax(scores[:len(members)]))
        nested = {"gain": np.nan, "std_error": np.nan, "label_gain": np.nan,
                  "label_std_error": np.nan}
        used, halves, folds = True, None, []
        if self.nested and len(members) > 1:
            halves = np.array_split(rng.permutation(len(rows)), 2)
            folds = [self._fold(outputs, Yh, judge, sel, out)
                     for sel, out in (halves, halves[::-1])]
            gain, err = _gain([(stack, alone) for stack, alone, _, _ in folds])
            nested.update(gain=gain, std_error=err)
            used = bool(gain > err)
        weights = grid[best] if used else grid[single]
        label_weights = None
        if metric is not None and plan["label_shrinkage"] is not None and len(members) > 1:
            label_weights = self._label_shares(outputs, Yh, weights, plan, judge, halves,
                                               [f[2] if used else f[3] for f in folds], nested)
        self._set_fitted(
            checked_X, checked_Y, seen, estimators_=members, weights_=weights.copy(),
            label_weights_=label_weights, stack_used_=used,
            best_score_=float(scores[best if used else single]),
            cv_results_={"weights": grid.tolist(), "score": scores.tolist(),
                         "mean_loss": losses.tolist()},
            nested_results_={k: float(v) for k, v in nested.items()})
        return self

    # -- the choice ---------------------------------------------------------------------------
    def _search(self, outputs, Y, judge):
        """The candidates (G, J) judged: ``(grid, scores, mean losses)``; the first J are the
        vertices (every member alone)."""
        J = outputs.shape[0]

        def criterion(beta):
            return honest_criterion(np.tensordot(beta, outputs, axes=1), Y, **judge)

        if J <= 3:
            grid = simplex_grid(J, self.resolution)
            judged = [criterion(beta) for beta in grid]
        else:  # forward selection with replacement, from the vertices
            grid = list(np.eye(J))
            judged = [criterion(beta) for beta in grid]
            counts = np.zeros(J)
            for step in range(1, self.resolution + 1):
                trials = [(counts + np.eye(J)[j]) / step for j in range(J)]
                scored = ([judged[j] for j in range(J)] if step == 1
                          else [criterion(beta) for beta in trials])
                j = int(np.argmax([s for s, _ in scored]))
                counts[j] += 1
                if step > 1:
                    grid.append(trials[j])
                    judged.append(scored[j])
            grid = np.array(grid)
        scores, losses = (np.array(v, dtype=float) for v in zip(*judged, strict=True))
        return grid, scores, losses

    def _fold(self, outputs, Y, judge, sel, out):
        """Choose on ``sel``, judge on ``out``: the stack's units, the best single member's,
        the stack's share and the single member's (one-hot)."""
        grid, scores, _ = self._search(outputs[:, sel], Y[sel], judge)
        beta = grid[best_candidate(scores)]
        single = int(np.argmax(scores[:outputs.shape[0]]))
        units = _judge_units(judge, Y[out])
        return (units(np.tensordot(beta, outputs[:, out], axes=1)),
                units(outputs[single, out]), beta, np.eye(outputs.shape[0])[single])

    def _label_shares(self, S, Y, weights, plan, judge, halves, folds, nested):
        """Per-label shares (d, J) shrunk towards ``weights``, or ``None`` unless the nested
        check says they help (``folds``: the global shares chosen on each half, the stack's
        or the single member's as the nested check decided)."""
        tau = plan["label_shrinkage"]
        if halves is not None:
            pairs = []
            for (sel, out), beta in zip((halves, halves[::-1]), folds, strict=True):
                shares = _per_label(S[:, sel], Y[sel], beta, tau, self.resolution)
                units = _judge_units(judge, Y[out])
                pairs.append((units(_combine_labels(S[:, out], shares, self.output_space)),
                              units(np.tensordot(beta, S[:, out], axes=1))))
            gain, err = _gain(pairs)
            nested.update(label_gain=gain, label_std_error=err)
            if not gain > err:
                return None
        return _per_label(S, Y, weights, tau, self.resolution)

    # -- what the members know of the training data ---------------------------------------------
    def _keeper(self):
        """A member that keeps its training rows (a kernel's feature fit drops them from
        model files; a forest always keeps them)."""
        check_is_fitted(self, "weights_")
        return next((e for e in self.estimators_ if e.Y_fit_ is not None), self.estimators_[0])

    label_names_ = property(lambda self: self._keeper().label_names_)
    output_mean_ = property(lambda self: self._keeper().output_mean_)
    output_mode_ = property(lambda self: self._keeper().output_mode_)
    Y_fit_ = property(lambda self: self._keeper().Y_fit_)
    X_fit_ = property(lambda self: self._keeper().X_fit_)

    @property
    def honest_score_(self) -> float:
        """The honest criterion of the chosen combination (``best_score_``)."""
        return float(self.best_score_)

    # -- prediction -----------------------------------------------------------------------------
    def _combine(self, method: str, X, weights=None) -> np.ndarray:
        """``method`` of the members, combined (a member of weight 0 is not asked)."""
        check_is_fitted(self, "weights_")
        weights = self.weights_ if weights is None else weights
        out = None
        for beta, member in zip(weights, self.estimators_, strict=True):
            if beta > 0:
                values = getattr(member, method)(X)
                values = values.toarray() if hasattr(values, "toarray") else values
                out = beta * values if out is None else out + beta * values
        assert out is not None  # the weights sum to one
        return out

    def predict_costs(self, X) -> np.ndarray:
        r"""Costs :math:`c_\beta(x) = \sum_j \beta_j c_j(x)` of the stacked risk, (n, e)."""
        return self._combine("predict_costs", X)

    def predict(self, X) -> np.ndarray:
        """Exact minimisers of the stacked estimated conditional risk, (n, d) (or (n,) when
        fitted on a 1-D ``y``)."""
        from ecrm.weights.forest._dask import minimize_rows

        Y = minimize_rows(self.output_space, self.predict_costs(X), self.loss.cost_form)
        return Y[:, 0] if self.estimators_[0]._y_ndim == 1 else Y

    def predict_scores(self, X) -> np.ndarray:
        r"""The members' label scores combined, (n, d): by ``weights_``, or label by label
        by ``label_weights_`` (then made consistent by the output space)."""
        check_is_fitted(self, "weights_")
        if self.label_weights_ is None:
            return self._combine("predict_scores", X)
        S = np.stack([np.asarray(e.predict_scores(X), dtype=float) for e in self.estimators_])
        return _combine_labels(S, self.label_weights_, self.output_space)

    def decision_function(self, X) -> np.ndarray:
        """The label scores :meth:`predict_scores`, for scikit-learn's ranking scorers."""
        S = self.predict_scores(X)
        return S.ravel() if self.estimators_[0]._y_ndim == 1 else S

    def conditional_weights(self, X) -> np.ndarray:
        r"""Stacked risk weights :math:`\sum_j \beta_j w^{(j)}(x)`, (n, m)."""
        return self._combine("conditional_weights", X)

    def conditional_risk(self, X, Y) -> np.ndarray:
        r"""Stacked estimated risk :math:`\hat R_\beta(y_k | x_k)` of each row pair, (n,)."""
        check_is_fitted(self, "weights_")
        return sum(beta * member.conditional_risk(X, Y)
                   for beta, member in zip(self.weights_, self.estimators_, strict=True)
                   if beta > 0)

    def _check_own_state(self, plan, training) -> None:
        """The members against the stack's parameters and each other, and the choice."""
        from ecrm.weights._stack_state import check_stack_state

        check_stack_state(self, plan)


def _judge_units(judge, Y):
    blocks = np.array_split(np.arange(len(Y)), min(_BLOCKS, len(Y)))
    return lambda values: _units(values, Y, blocks=blocks, **judge)


def _gain(pairs) -> tuple[float, float]:
    """The mean gain of the first units over the second and its standard error."""
    diff = np.concatenate([np.asarray(a) - np.asarray(b) for a, b in pairs])
    if len(diff) < 2:
        return 0.0, np.nan
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))


def _per_label(S, Y, weights, tau, resolution) -> np.ndarray:
    r"""Each label's lattice share minimising its Brier score
    :math:`\sum_i (\sum_j \beta_j s_{ijl} - y_{il})^2`, shrunk towards ``weights``, (d, J)."""
    grid = simplex_grid(S.shape[0], resolution) if S.shape[0] <= 3 else np.eye(S.shape[0])
    Q = np.einsum("jil,kil->ljk", S, S)  # (d, J, J)
    r = np.einsum("jil,il->lj", S, Y)  # (d, J)
    brier = np.einsum("gj,ljk,gk->lg", grid, Q, grid) - 2 * r @ grid.T
    raw = grid[np.argmin(brier, axis=1)]
    s = (tau / (tau + Y.sum(axis=0)))[:, None] if tau > 0 else np.zeros((Y.shape[1], 1))
    return (1.0 - s) * raw + s * weights[None, :]


def _combine_labels(S, shares, space) -> np.ndarray:
    """Scores (J, n, d) combined label by label by ``shares`` (d, J), made consistent."""
    return space.consistent_scores(np.einsum("jil,lj->il", S, shares))
