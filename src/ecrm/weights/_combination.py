"""An estimator whose conditional risk is a convex combination of fitted members' risks
(:class:`ecrm.MixedRiskECRM`, :class:`ecrm.StackedRiskECRM`): the combined predictions, and
the check that the members were fitted for the same task on the same data."""

from __future__ import annotations

from typing import Any

import numpy as np

from ecrm.estimators._template import StructuredEstimator

__all__ = ["Combination", "check_members", "described"]


class Combination(StructuredEstimator):
    """Prediction from a convex combination of fitted members' risks: each method combines
    the members' own with their shares (a member of share 0 is not asked)."""

    def _parts(self) -> list[tuple[float, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError  # the fitted members with their shares

    def _keeper(self):  # pragma: no cover - abstract
        raise NotImplementedError  # a member that keeps the training rows

    @property
    def label_names_(self):
        """The name of each output column (a member's)."""
        return self._keeper().label_names_

    @property
    def output_mean_(self):
        """The mean training output (a member's)."""
        return self._keeper().output_mean_

    @property
    def output_mode_(self):
        """The most frequent training output (a member's)."""
        return self._keeper().output_mode_

    @property
    def Y_fit_(self):
        """The training outputs (kept by a member)."""
        return self._keeper().Y_fit_

    @property
    def X_fit_(self):
        """The training features (kept by a member)."""
        return self._keeper().X_fit_

    @property
    def honest_score_(self) -> float:
        """The honest criterion of the chosen combination (``best_score_``)."""
        return float(self.best_score_)

    def _combine(self, method: str, X) -> np.ndarray:
        out: np.ndarray | None = None
        for share, member in self._parts():
            if share > 0:
                values = getattr(member, method)(X)
                values = values.toarray() if hasattr(values, "toarray") else values
                out = share * values if out is None else out + share * values
        assert out is not None  # the shares sum to one
        return out

    def predict_costs(self, X) -> np.ndarray:
        """Costs of the combined risk (the members' costs combined), (n, e)."""
        return self._combine("predict_costs", X)

    def predict(self, X) -> np.ndarray:
        """Exact minimisers of the combined estimated conditional risk, (n, d) (or (n,) when
        fitted on a 1-D ``y``)."""
        from ecrm.weights.forest._dask import minimize_rows

        Y = minimize_rows(self.output_space, self.predict_costs(X), self.loss.cost_form)
        return Y[:, 0] if self._parts()[0][1]._y_ndim == 1 else Y

    def predict_scores(self, X) -> np.ndarray:
        """The members' label scores combined, (n, d) (each clipped to [0, 1] and consistent,
        so the combination is too)."""
        return self._combine("predict_scores", X)

    def decision_function(self, X) -> np.ndarray:
        """The label scores :meth:`predict_scores`, for scikit-learn's ranking scorers."""
        S = self.predict_scores(X)
        return S.ravel() if self._parts()[0][1]._y_ndim == 1 else S

    def conditional_weights(self, X) -> np.ndarray:
        """The members' risk weights combined, (n, m) (they sum to one when every member's
        do: a forest's always, a kernel's with an intercept)."""
        return self._combine("conditional_weights", X)

    def conditional_risk(self, X, Y) -> np.ndarray:
        r"""The members' estimated risks :math:`\hat R(y_k | x_k)` of each row pair combined,
        (n,)."""
        return sum(share * member.conditional_risk(X, Y) for share, member in self._parts()
                   if share > 0)


def check_members(model, members: dict, whose: str) -> None:
    """The members (by name) have ``model``'s loss and output space and were fitted on the
    same data (the same features and, where a member keeps them, the same outputs)."""
    rows = None
    for name, member in members.items():
        for part in ("loss", "output_space"):
            if described(getattr(member, part)) != described(getattr(model, part)):
                raise ValueError(f"{name}'s {part} is not {whose}'s")
        if member.n_features_in_ != model.n_features_in_:
            raise ValueError("the members were not fitted on the same data")
        if member.Y_fit_ is not None:  # None in the file of a linear loss's feature fit
            # NaN: an unobserved entry (an incomplete ranking)
            if rows is not None and not np.array_equal(rows, member.Y_fit_, equal_nan=True):
                raise ValueError("the members were not fitted on the same data")
            rows = member.Y_fit_


def described(obj):
    """A comparable description of a registered loss or space (its model-file arguments)."""
    from ecrm.model_files._registry import REGISTRY

    name = type(obj).__name__
    if name not in REGISTRY:
        return repr(obj)
    return name, sorted((k, described(v) if type(v).__name__ in REGISTRY
                         else np.asarray(v).tolist() if isinstance(v, np.ndarray) else v)
                        for k, v in REGISTRY[name].describe(obj).items())
