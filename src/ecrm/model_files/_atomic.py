"""Output files written whole or not at all, under one rule for what already is at the path.

Every file the library and the ``ecrm`` commands write (model files, ``--json`` results,
pictures, reports) goes through :func:`atomic_path`, so both follow the same rule for what
already exists at the output path:

* a new path or a **regular file** is written to a temporary file beside it and renamed over
  it only when complete (:func:`os.replace`): on any error (a full disk, a file-size limit)
  or interruption the temporary file is removed and the old file is left as it was;
* a **symbolic link** is followed: its target is written as above, and the link stays a link;
* a **FIFO** or a **character device** (``/dev/null``, ``/dev/stdout``, a named pipe) is
  written through and stays what it is: the output is made in a private temporary directory
  and its bytes are copied in when complete, so a failure writes nothing to it;
* a **directory**, a **socket** or a **block device** is refused (:class:`OutputError`);
  a special file is never replaced.

Imports only the standard library, so that ``ecrm --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator

__all__ = ["OutputError", "STREAMS", "atomic_path", "check_kind", "write_text"]


class OutputError(ValueError):
    """An output path that cannot or must not be written; the message names it."""


#: The special files written through (any other kind at an output path is refused).
STREAMS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device"}
_REFUSED = {stat.S_IFDIR: "a directory", stat.S_IFSOCK: "a socket",
            stat.S_IFBLK: "a block device"}


def check_kind(path: str | os.PathLike, *, option: str | None = None) -> int | None:
    """The kind of file a write to the output ``path`` lands in (a symbolic link followed):
    ``stat.S_IFIFO`` or ``stat.S_IFCHR`` for a stream written through, ``None`` for a regular
    file or a new path (replaced atomically); :class:`OutputError` for any other kind or a
    path that cannot be looked up (a loop of symbolic links). ``option`` names the path in
    messages (``"-o"``: ``-o 'x' is a socket``; default: ``cannot write 'x': it is a socket``).
    """
    name = (f"{option} {os.fspath(path)!r}" if option
            else f"cannot write {os.fspath(path)!r}: it")
    try:
        kind = stat.S_IFMT(os.stat(path).st_mode)
    except FileNotFoundError:  # a new file, or a dangling link whose target is made
        return None
    except OSError as exc:
        raise OutputError(f"{name} cannot be looked up: {exc.strerror or exc}") from None
    if kind == stat.S_IFREG:
        return None
    if kind in STREAMS:
        return kind
    raise OutputError(f"{name} is {_REFUSED.get(kind, 'a special file')}; "
                      "expected a regular file, a FIFO or a character device such as "
                      "/dev/stdout")


def _mode_for(target: str) -> int:
    """The permissions of a new output: those of the file it replaces, else 0o666 - umask."""
    with contextlib.suppress(OSError):
        return os.stat(target).st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _copy_into(path: str, source: str) -> None:
    """Copy the file ``source`` into the FIFO or character device ``path`` (opened without
    creating or replacing anything; refused if it is no longer a stream)."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    with open(fd, "wb") as dst:
        if stat.S_IFMT(os.fstat(fd).st_mode) not in STREAMS:
            raise OutputError(f"cannot write {path!r}: it is no longer a FIFO or a character "
                              "device")
        with open(source, "rb") as src:
            shutil.copyfileobj(src, dst)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, sync: bool = False,
                option: str | None = None) -> Iterator[str]:
    """A temporary path (a new, empty file) to write the whole output of ``path`` to, put in
    place when the block succeeds (the rule of the module docstring); :class:`OutputError`
    before the block runs if ``path`` must not be written (:func:`check_kind`, which
    ``option`` is passed to). With ``sync`` the file is flushed to disk before it is renamed
    (model files).
    """
    path = os.fspath(path)
    if check_kind(path, option=option) in STREAMS:
        with tempfile.TemporaryDirectory(prefix="ecrm-") as folder:
            tmp = os.path.join(folder, "output")
            with open(tmp, "xb"):
                pass
            yield tmp
            _copy_into(path, tmp)
        return
    target = os.path.realpath(path)  # a link stays a link: its target is replaced
    folder, name = os.path.split(target)
    # a new name (O_EXCL): never written through a name another writer or a planted link holds
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder or ".")
    os.close(fd)
    try:
        os.chmod(tmp, _mode_for(target))
        yield tmp
        if sync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def write_text(path: str | os.PathLike, text: str, **options) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all (:func:`atomic_path`)."""
    with atomic_path(path, **options) as tmp, open(tmp, "wb") as fh:
        fh.write(text.encode("utf-8"))
