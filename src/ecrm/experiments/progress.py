"""Progress bars for long experiment steps: :func:`ecrm.commands._options.progress_bar`."""

from __future__ import annotations

from ecrm.commands._options import progress_bar

__all__ = ["progress_bar"]
