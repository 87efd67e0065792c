"""Safe output files for the ``ecrm`` commands.

* :func:`check_output` -- before any work: ``-o`` is not an input file (compared with
  :func:`os.path.samefile`, so symbolic and hard links are caught) and its directory accepts a
  new file (a probe file is created and removed); :func:`check_output_directory` likewise for
  an output directory;
* :func:`atomic_path` / :func:`atomic_text` -- the output is written whole or not at all, by
  the rule of :mod:`ecrm.model_files._atomic` for what already is at the path (the rule of
  :func:`ecrm.save` too), also on ``KeyboardInterrupt`` or SIGTERM (which :mod:`ecrm.cli` turns
  into an exception); ``-`` is standard output, which, like an existing FIFO or character
  device, gets text as it is produced.

Imports only the standard library, so that ``ecrm --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

from ecrm.model_files._atomic import STREAMS, OutputError, atomic_path, check_kind

__all__ = ["STDOUT", "OutputError", "atomic_path", "atomic_text", "check_output",
           "check_output_directory", "is_stream", "is_terminal"]

#: The output path that means standard output.
STDOUT = "-"


def _special(path: str) -> int | None:
    """The file type (``stat.S_IFMT``) of an existing special file at ``path`` (links
    followed); ``None`` for a regular file, a directory or a new path."""
    try:
        kind = stat.S_IFMT(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None
    return None if kind in (stat.S_IFREG, stat.S_IFDIR) else kind


def is_stream(path: str) -> bool:
    """Whether an output to ``path`` goes to a stream, not a file that is replaced: ``-``
    (standard output) or an existing FIFO or character device (``/dev/stdout``)."""
    return path == STDOUT or _special(path) in STREAMS


def is_terminal(path: str) -> bool:
    """Whether an output to ``path`` lands on a terminal: ``-`` on one, or a path to one
    (``/dev/stdout`` in a terminal, ``/dev/tty``)."""
    if path == STDOUT:
        return sys.stdout is not None and sys.stdout.isatty()
    if _special(path) != stat.S_IFCHR:
        return False
    try:  # opened without becoming the controlling terminal and without waiting
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def check_output(path: str, inputs: Iterable[str | None] = (), *, option: str = "-o") -> None:
    """Refuse (:class:`OutputError`) an output path that is an input file or cannot be
    written, before any work.

    Parameters
    ----------
    path : str
        The output path (``-``: standard output, always accepted).
    inputs : iterable of str or None
        The files the command reads; ``path`` must not be any of them (also through a
        symbolic or hard link).
    option : str, default="-o"
        The option named in the message.
    """
    if path == STDOUT:
        if sys.stdout is None:  # started with standard output closed (``>&-``)
            raise OutputError(f"{option} -: standard output is closed; give a file path")
        return
    target = os.path.realpath(path)  # where the write lands: a symbolic link is followed
    kind = check_kind(path, option=option)
    if os.path.exists(target):
        for source in inputs:
            if source is not None and os.path.exists(source) and os.path.samefile(target,
                                                                                   source):
                raise OutputError(f"{option} {path!r} is the input file {source!r}; refusing "
                                  "to write over it (choose another output path)")
    if kind is not None:  # written directly: no new file is made beside it
        if not os.access(path, os.W_OK):
            raise OutputError(f"{option} {path!r} is {STREAMS[kind]} that is not writable")
        return
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


def check_output_directory(path: str, *, option: str) -> None:
    """Refuse (:class:`OutputError`, naming ``option``), before any work, an output directory
    that is a file or cannot be made or written (its parent must exist; the directory itself
    is made when the output is)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise OutputError(f"{option} {path!r} is a file; expected a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OutputError(f"{option} {path!r}: the directory {parent!r} does not exist")
    if not os.access(path if os.path.isdir(path) else parent, os.W_OK):
        raise OutputError(f"{option} {path!r}: not writable")


@contextlib.contextmanager
def atomic_text(path: str) -> Iterator[IO[str]]:
    """A text file to write ``path`` through (UTF-8, ``newline=""``); ``-`` is standard output.

    The file is complete at ``path`` only when the block succeeds (see :func:`atomic_path`).
    Standard output, a FIFO or a character device is written directly, as the text comes.
    """
    if path == STDOUT:
        yield sys.stdout
        sys.stdout.flush()
        return
    if is_stream(path):
        with open(path, "w", newline="", encoding="utf-8") as fh:
            yield fh
        return
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        yield fh
