"""Task losses; each is callable on ``(Y_pred, Y_true)`` and linear ones expose their form."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecrm._lazy import lazy_exports

#: Where each public name is defined, imported on first use (a hierarchical loss does not
#: load the flow minimisers of the continuous losses, nor the ranking losses).
_SOURCES = {
    "AdditiveLoss": "additive", "LinearLoss": "base", "Loss": "base",
    "ZeroOneLoss": "classification", "AbsoluteLoss": "continuous", "SquaredLoss": "continuous",
    "KendallLoss": "kendall", "kendall_tau": "kendall", "HammingLoss": "multilabel",
    "HierarchicalLoss": "multilabel", "FootruleLoss": "ranking",
    "SquaredRankLoss": "ranking", "spearman_rho": "ranking",
    "KendallTiesLoss": "bucket", "TauXLoss": "bucket", "tau_x": "bucket",
}

if TYPE_CHECKING:  # the eager imports, for type checkers and IDEs
    from ecrm.losses.additive import AdditiveLoss
    from ecrm.losses.base import LinearLoss, Loss
    from ecrm.losses.bucket import KendallTiesLoss, TauXLoss, tau_x
    from ecrm.losses.classification import ZeroOneLoss
    from ecrm.losses.continuous import AbsoluteLoss, SquaredLoss
    from ecrm.losses.kendall import KendallLoss, kendall_tau
    from ecrm.losses.multilabel import HammingLoss, HierarchicalLoss
    from ecrm.losses.ranking import FootruleLoss, SquaredRankLoss, spearman_rho

__all__ = ["AbsoluteLoss", "AdditiveLoss", "FootruleLoss", "HammingLoss", "HierarchicalLoss",
           "KendallLoss", "KendallTiesLoss", "LinearLoss", "Loss", "SquaredLoss",
           "SquaredRankLoss", "TauXLoss", "ZeroOneLoss", "kendall_tau", "spearman_rho",
           "tau_x"]

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES, __all__)
