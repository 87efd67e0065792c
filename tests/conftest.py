"""Shared test configuration.

Hypothesis runs derandomised under CI (``CI`` set, as ``.ci/run`` is run) or with
``HYPOTHESIS_PROFILE=ci``: the same examples on every machine, so a red run can be replayed.
Locally it explores new examples each run (``HYPOTHESIS_PROFILE=dev``, the default there).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
