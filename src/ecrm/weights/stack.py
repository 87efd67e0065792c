r"""One conditional risk from any number of weight families: their risks stacked.

Each member :math:`j = 1, \dots, J` (a family estimator, e.g. :class:`ecrm.ECRMCV` or
:class:`ecrm.ForestECRMCV`) estimates the conditional risk with its weights
:math:`w^{(j)}(x)`. A convex combination

.. math:: \hat R_\beta(y|x) = \sum_j \beta_j \hat R_j(y|x), \qquad
          \beta \in \Delta_J = \{\beta \ge 0, \textstyle\sum_j \beta_j = 1\},

is again an estimate of the risk, with weights :math:`\sum_j \beta_j w^{(j)}(x)`, costs
:math:`\sum_j \beta_j c_j(x)` and label scores :math:`\sum_j \beta_j \hat p_j(x)`. The
members' honest outputs of their training points
(:meth:`ecrm.weights.RiskEstimator.fit_honest`) give the combined honest costs of every
:math:`\beta` with nothing refitted: :math:`\beta` is chosen by the mean task loss of the
exact oracle on them (or a metric of the combined label scores).

That criterion is piecewise constant in :math:`\beta`, so :math:`\beta` is searched on the
lattice :math:`\{\beta \in \Delta_J : k\beta \in \mathbb{Z}^J\}` of ``resolution`` :math:`k`:
exhaustively for :math:`J \le 3` (the exact argmin over the lattice, the first in
:func:`simplex_grid`'s order on ties), greedily beyond (forward selection with replacement:
:math:`k` steps, each adding :math:`1/k` to the member that judges best, keeping the best
iterate; every vertex, i.e. every member alone, is judged at the first step). The pure
members are always candidates.

Choosing :math:`\beta` on the outputs it is then judged on flatters the stack. The nested
check chooses :math:`\beta` and the best single member on the rest of each fold's rows (two
halves under the task loss, ten folds under a metric) and judges both on the fold; the stack
is kept only if its mean gain exceeds its standard error (per-row under the task loss, over
the folds and corrected for their overlap under a metric), else the best single member is
the model (``stack_used_``). With ``reference="kernel-forest"`` the stack must beat the
two-member mixtures instead: every :math:`a\,\hat R_i + (1 - a)\,\hat R_j`, :math:`a \in
\{0, 1/k, \dots, 1\}`, of a kernel member :math:`i` (:class:`ecrm.ECRMCV`) and a forest member
:math:`j` (:class:`ecrm.ForestECRM`), i.e. the candidates of :class:`ecrm.MixedRiskECRM`.
They join the searched candidates (greedy selection cannot miss them), each fold of the
nested check judges the stack against the best of them chosen on the same rows, and the
model falls back to their best on every row (``weights_``, ``stack_used_`` false).

For label scores chosen by a metric, each label :math:`l` may also get its own share
:math:`\beta^{(l)}`: the lattice point minimising the label's Brier score of the combined
honest scores, shrunk towards the global share,
:math:`\tilde\beta^{(l)} = (1 - s_l)\beta^{(l)} + s_l \beta` with
:math:`s_l = \tau / (\tau + n_l)` (:math:`n_l` the label's positive training points,
:math:`\tau` = ``label_shrinkage``; beyond three members the lattice is the vertices: each
label's best member), kept only if the nested check says they help (``label_weights_``).
They are opt-in (``label_shrinkage=None`` by default; see the parameter).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ecrm.estimators._parameters import (
    RANDOM_STATE,
    Checked,
    Choice,
    Flag,
    Number,
    Rule,
    table,
)
from ecrm.selection._criteria import check_scoring
from ecrm.weights._combination import Combination, described
from ecrm.weights._stack_choice import (
    best_candidate,
    choose_stack,
    combine_labels,
    per_label,
    simplex_grid,
)

__all__ = ["StackedRiskECRM", "best_candidate", "per_label", "simplex_grid"]


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


def reference_pairs(reference, members) -> list | None:
    """The pairs (kernel member, forest member) of ``reference="kernel-forest"`` among the
    fitted or unfitted ``members``, or ``None`` for ``"members"`` (each member alone)."""
    from ecrm.weights.forest.estimator import ForestECRM
    from ecrm.weights.kernel.estimator import ECRMCV

    if reference == "members":
        return None
    pairs = [(i, j) for i, a in enumerate(members) for j, b in enumerate(members)
             if isinstance(a, ECRMCV) and isinstance(b, ForestECRM)]
    if not pairs:
        raise ValueError("reference='kernel-forest' needs a kernel member (ECRMCV) and a "
                         "forest member (ForestECRM, ForestECRMCV)")
    return pairs


class StackedRiskECRM(Combination):
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
        Run the nested honest check (fall back to the reference's best unless the stack
        wins by more than its standard error).
    resolution : int, default=10
        :math:`k`: the lattice step :math:`1/k` of the search.
    label_shrinkage : float or None, default=None
        :math:`\tau` of the per-label shares (scoring by a metric only; e.g. 10.0);
        ``None``: one share for every label. The shares are opt-in: measured on held-out
        test files, shares that passed the nested check still scored below the one share,
        as the check sees only honest outputs, not how test outputs differ from them.
    reference : {"members", "kernel-forest"}, default="members"
        What the stack must beat: each member alone, or every mixture of a kernel member
        with a forest member on the lattice (see :mod:`ecrm.weights.stack`).
    random_state : int, RandomState or None
        Seeds the members and the folds of the nested check.

    Attributes
    ----------
    estimators_ : list of fitted estimators
    weights_ : ndarray of shape (J,)
        :math:`\beta` (the reference's best candidate when the stack is not kept).
    label_weights_ : ndarray of shape (d, J) or None
        Each label's share for :meth:`predict_scores`, or ``None``.
    stack_used_ : bool
        Whether the stack (rather than the reference's best candidate) is the model.
    best_score_ : float
        The honest criterion of ``weights_`` on all the honest rows (greater is better).
    cv_results_ : dict
        ``weights`` (each candidate, a list of J floats: the search's, then the
        reference's mixtures), ``score`` and ``mean_loss`` (NaN under a metric) on all the
        honest rows.
    nested_results_ : dict
        ``gain`` and ``std_error`` of the stack over the reference's best on the judged
        folds, ``label_gain`` and ``label_std_error`` of the per-label shares (NaN when
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
        reference=Choice(("members", "kernel-forest")),
        resolution=Number("int", {"low": 1, "high": 100}),
        label_shrinkage=Number("real", {"low_open": False}, none=True),
        random_state=RANDOM_STATE)
    _parameter_rules = (Rule("metric", check_scoring, ("scoring",)),)
    _linear_loss = True
    _fits_dask = True  # when the members do: their honest outputs come back in memory

    def __init__(self, loss, output_space, *, members=None, scoring="loss", nested=True,
                 resolution=10, label_shrinkage=None, reference="members", random_state=None):
        self.loss = loss
        self.output_space = output_space
        self.members = members
        self.scoring = scoring
        self.nested = nested
        self.resolution = resolution
        self.label_shrinkage = label_shrinkage
        self.reference = reference
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
                if described(getattr(member, part)) != described(getattr(self, part)):
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
        pairs = reference_pairs(plan["reference"], members)
        honest = [member.fit_honest(X, Y, scores=metric is not None) for member in members]
        by_point = np.full((len(members), checked_X.shape[0], honest[0].values.shape[1]), np.nan)
        for j, out in enumerate(honest):
            by_point[j, out.rows] = out.values
        rows = np.flatnonzero(~np.isnan(by_point).any(axis=(0, 2)))
        if len(rows) < 2:
            raise ValueError("fewer than two training points are out of sample in every member")
        choice = choose_stack(by_point[:, rows], np.asarray(checked_Y, dtype=float)[rows],
                              loss=self.loss, output_space=self.output_space, metric=metric,
                              resolution=self.resolution, nested=self.nested,
                              label_shrinkage=plan["label_shrinkage"], random_state=rng,
                              reference_pairs=pairs)
        self._set_fitted(
            checked_X, checked_Y, seen, estimators_=members, weights_=choice.weights,
            label_weights_=choice.label_weights, stack_used_=choice.stack_used,
            best_score_=choice.best_score,
            cv_results_={"weights": choice.grid.tolist(), "score": choice.scores.tolist(),
                         "mean_loss": choice.mean_losses.tolist()},
            nested_results_=choice.nested)
        return self

    def _parts(self) -> list:
        check_is_fitted(self, "weights_")
        return list(zip(self.weights_, self.estimators_, strict=True))

    def _keeper(self):
        """A member that keeps its training rows (a kernel's feature fit drops them from
        model files; a forest always keeps them)."""
        check_is_fitted(self, "weights_")
        return next((e for e in self.estimators_ if e.Y_fit_ is not None), self.estimators_[0])

    def predict_scores(self, X) -> np.ndarray:
        r"""The members' label scores combined, (n, d): by ``weights_``, or label by label
        by ``label_weights_`` (then made consistent by the output space)."""
        check_is_fitted(self, "weights_")
        if self.label_weights_ is None:
            return self._combine("predict_scores", X)
        S = np.stack([np.asarray(e.predict_scores(X), dtype=float) for e in self.estimators_])
        return combine_labels(S, self.label_weights_, self.output_space)

    def _check_own_state(self, plan, training) -> None:
        """The members against the stack's parameters and each other, and the choice."""
        from ecrm.weights._stack_state import check_stack_state

        check_stack_state(self, plan)
