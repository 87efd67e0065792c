"""Baselines ECRM is compared with."""

from ecrm.baselines.binary_relevance import BRSVM, BinaryRelevance

__all__ = ["BRSVM", "BinaryRelevance"]
