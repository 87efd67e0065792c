"""Model files: a fitted estimator saved and loaded with no pickle.

- :mod:`.io`: :func:`~ecrm.save` and :func:`~ecrm.load`.
- :mod:`._archive`: the zip container, read without trusting it; :mod:`._atomic`: output
  files written whole or not at all.
- :mod:`._registry`: the classes a model file may construct; :mod:`._state`: every stored
  value checked against what ``fit`` could have produced; :mod:`._steps`: the preprocessing
  steps a file can hold.
"""
