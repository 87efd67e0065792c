"""The experiments behind the ``ecrm`` command: the demo and the paper's reproductions.

Each sub-command module (:mod:`~ecrm.experiments.demo`, :mod:`~ecrm.experiments.hmc`,
:mod:`~ecrm.experiments.flow`, ...) defines ``add_parser(subparsers)``; the argparse ``type=``
functions they share with the user commands live in :mod:`ecrm.commands._options`.
"""
