"""Output spaces, each with an exact linear minimisation oracle ``argmin(C)``."""

from ecrm.spaces.base import MultilabelSpace, OutputSpace
from ecrm.spaces.hierarchy import Hierarchy

__all__ = ["Hierarchy", "MultilabelSpace", "OutputSpace"]
