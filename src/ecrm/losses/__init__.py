"""Task losses; each is callable on ``(Y_pred, Y_true)`` and linear ones expose their form."""

from ecrm.losses.base import LinearLoss, Loss
from ecrm.losses.multilabel import HammingLoss, HierarchicalLoss

__all__ = ["HammingLoss", "HierarchicalLoss", "LinearLoss", "Loss"]
