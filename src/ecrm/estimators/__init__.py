"""The template every estimator of this package follows, and the estimators outside the
weight families.

- :mod:`._template`: ``fit`` checks its parameters and training data once, sets its declared
  fitted state in one place, and ``predict`` starts with ``check_is_fitted``.
- :mod:`._parameters`: the one validator, which reads each class's ``_parameter_constraints``
  and ``_parameter_rules`` and returns a read-only plan; :mod:`._validation` holds the input
  checks and their messages.
- :mod:`.joint`: :class:`~ecrm.JointKernelECRM`, additive models with joint kernels.
- :mod:`.ssvm`: :class:`~ecrm.StructuredSVM`, the max-margin model on the same exact oracles.

The weight families (kernel ridge, forests, their mixtures and stacks) are in
:mod:`ecrm.weights`.
"""
