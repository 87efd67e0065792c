"""The numba decorator of the compiled oracles: a disk cache wherever one can be written.

numba caches a compiled function beside its module (``__pycache__``), else in the user's
cache directory (``~/.cache/numba`` or ``NUMBA_CACHE_DIR``). Where it can write neither (a
system-wide install run by a service account, a read-only container) it refuses
``cache=True`` and the module would not import; :func:`jit` then falls back to a private
per-user directory ``ecrm-numba-<uid>`` in the temporary directory (mode 0o700, used only if
the user owns it and no one else can write it: numba's cache holds code it runs), else to no
disk cache (every process compiles the functions it calls, with the same results).
"""

from __future__ import annotations

import functools
import os
import stat
import tempfile

__all__ = ["jit"]


@functools.cache
def private_cache_dir() -> str | None:
    """A cache directory only this user can write, in the temporary directory; ``None`` if
    none can be made or the one there is not safe to use."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = os.path.join(tempfile.gettempdir(), f"ecrm-numba-{'user' if uid is None else uid}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            return None
        if uid is not None and (info.st_uid != uid or info.st_mode & 0o077):
            return None  # another user's, or writable by others: not ours to trust
        tempfile.TemporaryFile(dir=path).close()  # writable
    except OSError:
        return None
    return path


def _cached(options: dict, function, folder: str | None):
    """``njit(cache=True)`` of ``function`` in numba's own places (``folder=None``) or in
    ``folder``; ``None`` when numba finds no place it can write."""
    from numba import njit
    from numba.core import config

    saved = config.CACHE_DIR  # type: ignore[attr-defined]
    if folder is not None:  # read when the function's cache is set up, i.e. right now
        config.CACHE_DIR = folder  # type: ignore[attr-defined]
    try:
        return njit(cache=True, **options)(function)
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):  # pragma: no cover - not a missing cache location
            raise
        return None
    finally:
        config.CACHE_DIR = saved  # type: ignore[attr-defined]


def jit(**options):
    """``numba.njit(**options)`` with a disk cache: numba's own location, else a private
    per-user temporary directory, else none (the module docstring)."""
    from numba import njit

    def decorate(function):
        compiled = _cached(options, function, None)
        if compiled is None and (folder := private_cache_dir()) is not None:
            compiled = _cached(options, function, folder)
        return njit(**options)(function) if compiled is None else compiled

    return decorate
