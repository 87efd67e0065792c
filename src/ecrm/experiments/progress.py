"""A minimal progress line on standard error (no dependency)."""

from __future__ import annotations

import sys
import time


class Progress:
    """``[k/total] message (elapsed)`` lines on stderr, one per step; silent if disabled."""

    def __init__(self, total: int, *, enabled: bool = True, stream=None):
        self.total, self.done, self.enabled = total, 0, enabled
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()

    def step(self, message: str) -> None:
        self.done += 1
        if self.enabled:
            elapsed = time.perf_counter() - self.start
            bar = "#" * int(20 * self.done / max(self.total, 1))
            print(f"[{bar:<20}] {self.done}/{self.total} {elapsed:6.0f}s  {message}",
                  file=self.stream, flush=True)
