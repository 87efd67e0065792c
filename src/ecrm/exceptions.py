"""The warnings this package issues about a model that may not be what its user thinks.

As :mod:`sklearn.exceptions` does, each is a :class:`UserWarning` subclass, so that a user can
turn one kind into an error or silence it (``warnings.simplefilter("error",
TrivialModelWarning)``) without touching the others. Importable without NumPy.

>>> from ecrm.exceptions import GridEdgeWarning
>>> issubclass(GridEdgeWarning, UserWarning)
True
"""

from __future__ import annotations

__all__ = ["FeatureScaleWarning", "GridEdgeWarning", "TrivialModelWarning"]


class TrivialModelWarning(UserWarning):
    """The model is no better than a trivial predictor on the evaluated data.

    Issued by :func:`ecrm.baselines.check_against_baselines` (and ``ecrm evaluate``) when a
    model's task loss is no lower than that of a constant prediction fitted on the training
    outputs (the empty set, the most frequent label set, the per-label majority), or when it
    predicts the empty set for a large share of rows that are not empty.
    """


class FeatureScaleWarning(UserWarning):
    """The features' scales differ by orders of magnitude and nothing standardises them.

    Issued at fit by :class:`ecrm.ECRM`, :class:`ecrm.ECRMCV` and
    :class:`ecrm.JointKernelECRM` (and ``ecrm fit``): a kernel on such features sees only the
    widest ones, and the model often predicts one constant output. Standardise the features
    (a :class:`~sklearn.pipeline.Pipeline` with a
    :class:`~sklearn.preprocessing.StandardScaler`; ``ecrm fit --standardize yes``). After a
    step that learns one scale per feature
    (:class:`ecrm.weights.kernel.length_scales.LeaveOneOutLengthScales`) the spread is intended:
    ignore the warning there (``warnings.catch_warnings``).
    """


class GridEdgeWarning(UserWarning):
    """The selected value of a searched parameter lies at an end of the values searched.

    With a fixed grid (``LeaveOneOutSearch(extend_grid=False)``) it fires when the choice is
    an end of its grid: the best value may lie beyond it, so widen the grid on that side. With the
    grid extended by the search it fires only when a stated bound stopped the extension
    (the numerical limits of alpha, or ``max_added_gammas``), once per fit, naming it.
    """
