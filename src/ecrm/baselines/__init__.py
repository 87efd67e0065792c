"""Baselines ECRM is compared with."""

from ecrm.baselines.binary_relevance import BRSVM, BinaryRelevance
from ecrm.baselines.flows import KNNFlowRegressor, KRRProjection
from ecrm.baselines.trivial import check_against_baselines, output_statistics, trivial_baselines

__all__ = ["BRSVM", "BinaryRelevance", "KNNFlowRegressor", "KRRProjection",
           "check_against_baselines", "output_statistics", "trivial_baselines"]
