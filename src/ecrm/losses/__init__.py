"""Task losses; each is callable on ``(Y_pred, Y_true)`` and linear ones expose their form."""

from ecrm.losses.additive import AdditiveLoss
from ecrm.losses.base import LinearLoss, Loss
from ecrm.losses.classification import ZeroOneLoss
from ecrm.losses.continuous import AbsoluteLoss, SquaredLoss
from ecrm.losses.kendall import KendallLoss, kendall_tau
from ecrm.losses.multilabel import HammingLoss, HierarchicalLoss
from ecrm.losses.ranking import FootruleLoss, SquaredRankLoss, spearman_rho

__all__ = ["AbsoluteLoss", "AdditiveLoss", "FootruleLoss", "HammingLoss", "HierarchicalLoss",
           "KendallLoss", "LinearLoss", "Loss", "SquaredLoss", "SquaredRankLoss", "ZeroOneLoss",
           "kendall_tau", "spearman_rho"]
