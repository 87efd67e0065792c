"""The experiments behind the ``ecrm`` command: the demo and the paper's reproductions.

Each sub-command module (:mod:`~ecrm.experiments.demo`, :mod:`~ecrm.experiments.hmc`,
:mod:`~ecrm.experiments.flow`, ...) defines ``add_parser(subparsers)``. The argparse ``type=``
functions they share live in :mod:`ecrm.commands._options` and are re-exported here.
"""

from __future__ import annotations

from ecrm.commands._options import (
    directory_option,
    names_option,
    number_option,
    output_file_option,
)

__all__ = ["directory_option", "names_option", "number_option", "output_file_option"]
