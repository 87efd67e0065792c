"""Progress bars for long experiment steps: tqdm on standard error, silenced by ``--quiet``."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm

__all__ = ["progress_bar"]


def progress_bar(total: int, desc: str, *, enabled: bool = True, stream=None) -> tqdm:
    """A tqdm bar of ``total`` steps on ``stream`` (stderr by default); silent if disabled.

    Use as a context manager; ``bar.update()`` after each step and ``bar.set_postfix_str``
    for a note on the step just done.
    """
    return tqdm(total=total, desc=desc, disable=not enabled,
                file=sys.stderr if stream is None else stream, dynamic_ncols=True)
