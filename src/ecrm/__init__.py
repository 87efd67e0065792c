"""ecrm: structured prediction by estimated conditional risk minimisation.

Goh & Jaillet, "Structured Prediction by Conditional Risk Minimization", ICML 2016.
"""

from ecrm import losses
from ecrm.estimator import ECRM, ECRMCV
from ecrm.spaces import Hierarchy, MultilabelSpace, OutputSpace

__version__ = "0.1.0"

__all__ = ["ECRM", "ECRMCV", "Hierarchy", "MultilabelSpace", "OutputSpace", "losses",
           "__version__"]
