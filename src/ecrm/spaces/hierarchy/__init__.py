"""Hierarchical multilabel output space (trees and DAGs) with exact linear oracles.

The :class:`Hierarchy` class (``_space``, ``_inputs``, ``_labelsets``), its oracles
(``_oracles``), the DAG closure (``_closure``, ``_certified_cut``, ``_exact_flow``,
``_compiled``) and the hierarchical loss's oracle (``_products``, ``_products_milp``,
``_branch``, ``_cut_branch``).
"""

from ecrm.spaces.hierarchy._space import Hierarchy

__all__ = ["Hierarchy"]
