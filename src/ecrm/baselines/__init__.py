"""Baselines ECRM is compared with."""

from ecrm.baselines.binary_relevance import BinaryRelevance

__all__ = ["BinaryRelevance"]
