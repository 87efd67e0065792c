"""Baselines ECRM is compared with."""

from ecrm.baselines.binary_relevance import BRSVM, BinaryRelevance
from ecrm.baselines.flows import KNNFlowRegressor, KRRProjection

__all__ = ["BRSVM", "BinaryRelevance", "KNNFlowRegressor", "KRRProjection"]
