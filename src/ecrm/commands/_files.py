"""Safe output files for the ``ecrm`` commands.

* :func:`check_output` -- before any work: ``-o`` is not an input file (compared with
  :func:`os.path.samefile`, so symbolic and hard links are caught) and its directory accepts a
  new file (a probe file is created and removed);
* :func:`atomic_path` / :func:`atomic_text` -- the output is written to a temporary file in the
  same directory and renamed over the target only when complete (:func:`os.replace`); on any
  exception, ``KeyboardInterrupt`` or termination by SIGTERM (which :mod:`ecrm.cli` turns into
  an exception) the temporary file is removed and an existing output is left as it was;
* ``-`` as an output path is standard output.

Imports only the standard library, so that ``ecrm --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

__all__ = ["STDOUT", "OutputError", "atomic_path", "atomic_text", "check_output"]

#: The output path that means standard output.
STDOUT = "-"


class OutputError(ValueError):
    """An output path that cannot or must not be written; the message names it."""


def _target(path: str) -> str:
    """The file a write to ``path`` lands in: a symbolic link is followed."""
    return os.path.realpath(path)


def check_output(path: str, inputs: Iterable[str | None] = (), *, option: str = "-o") -> None:
    """Refuse an output path that is an input file or cannot be written, before any work.

    Parameters
    ----------
    path : str
        The output path (``-``: standard output, always accepted).
    inputs : iterable of str or None
        The files the command reads; ``path`` must not be any of them (also through a
        symbolic or hard link).
    option : str, default="-o"
        The option named in the message.

    Raises
    ------
    OutputError
    """
    if path == STDOUT:
        return
    target = _target(path)
    if os.path.isdir(target):
        raise OutputError(f"{option} {path!r} is a directory; expected a file path")
    if os.path.exists(target):
        for source in inputs:
            if source is not None and os.path.exists(source) and os.path.samefile(target,
                                                                                   source):
                raise OutputError(f"{option} {path!r} is the input file {source!r}; refusing "
                                  "to write over it (choose another output path)")
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise OutputError(f"{option} {path!r}: the directory {folder!r} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=".ecrm-probe-", dir=folder)
    except OSError as exc:
        raise OutputError(f"{option} {path!r}: cannot create a file in {folder!r} "
                          f"({exc.strerror or exc})") from None
    os.close(fd)
    os.remove(probe)


def _mode_for(target: str) -> int:
    """The permissions of a new output: those of the file it replaces, else 0o666 - umask."""
    with contextlib.suppress(OSError):
        return os.stat(target).st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """A temporary path next to ``path``, renamed to ``path`` when the block succeeds.

    On any exception (``KeyboardInterrupt`` and termination included) the temporary file is
    removed and ``path`` is left as it was.

    Parameters
    ----------
    path : str
        The output file (not ``-``).

    Yields
    ------
    tmp : str
        Write the complete output there.
    """
    target = _target(path)
    folder, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder or ".")
    os.close(fd)
    try:
        os.chmod(tmp, _mode_for(target))
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_text(path: str) -> Iterator[IO[str]]:
    """A text file to write ``path`` through (UTF-8, ``newline=""``); ``-`` is standard output.

    The file is complete at ``path`` only when the block succeeds (see :func:`atomic_path`).
    """
    if path == STDOUT:
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        yield fh
