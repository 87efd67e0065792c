"""What a fitted model did, in numbers and pictures.

- :mod:`.metrics`: task losses as metric functions, and ranking metrics of label scores.
- :mod:`.bounds`: the surrogate loss and the generalisation bound of the paper's Section 4.
- :mod:`.plotting`: pictures of multi-label and hierarchical predictions (the ``plot`` extra).
- :mod:`.report`: a self-contained HTML page of an evaluation.
"""
