"""Hierarchical multilabel output space (trees and DAGs) with exact linear oracles.

Modules: ``_space`` (the :class:`Hierarchy` class: its structure), ``_inputs`` (reading edges,
parent maps and graphs), ``_labelsets`` (consistency, closing, names, capped scores),
``_oracles`` (the oracles' front end and cached set-up, the tree DP), ``_closure`` (the DAG
closure: reductions, contraction and the certified min cut), ``_exact_flow`` (its exact
integer flow), ``_products`` (the hierarchical loss's oracle: sandwich, enumeration, MILP),
``_branch`` (its compiled branch and bound on bit sets) and ``_cut_branch`` (its compiled
branch and bound with closure bounds, for the larger parts).
"""

from ecrm.spaces.hierarchy._space import Hierarchy

__all__ = ["Hierarchy"]
