"""Hierarchical multilabel output space (trees and DAGs) with exact linear oracles.

Modules: ``_space`` (the :class:`Hierarchy` class: structure, consistency, the oracles'
front end), ``_closure`` (the DAG closure: reductions and the certified min cut),
``_exact_flow`` (its exact integer fallback) and ``_products`` (the hierarchical loss's MILP).
"""

from ecrm.spaces.hierarchy._space import Hierarchy

__all__ = ["Hierarchy"]
