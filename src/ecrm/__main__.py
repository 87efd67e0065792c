"""``python -m ecrm``: the ``ecrm`` command."""

from ecrm.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
