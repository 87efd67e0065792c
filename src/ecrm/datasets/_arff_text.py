"""The text of an ARFF file: reading it (gunzipped, comments dropped, within the memory
budget), splitting a line into fields and reading a name, quotes undone; and
:class:`ArffError`, the error naming the file and line that every step of the ARFF reader
raises."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

__all__ = ["ArffError", "read_name", "read_text", "split_fields"]


class ArffError(ValueError):
    """A malformed ARFF file: the message names the file, the line and what was expected.

    Attributes
    ----------
    filename : str
        The file being read.
    lineno : int or None
        1-based line number of the offending line (None when no line applies).
    """

    def __init__(self, filename, lineno: int | None, message: str):
        self.filename, self.lineno, self.reason = str(filename), lineno, message
        where = self.filename if lineno is None else f"{self.filename}, line {lineno}"
        super().__init__(f"{where}: {message}")


_QUOTES = ("'", '"')


def _quoted(text: str, i: int, what: str = "") -> tuple[str, int]:
    """The quoted string opening at ``text[i]`` (backslash escapes undone) and the index
    just past its closing quote; ``ValueError`` if it is not closed."""
    quote, buf, i = text[i], [], i + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            buf.append(text[i + 1])
            i += 2
            continue
        if ch == quote:
            return "".join(buf), i + 1
        buf.append(ch)
        i += 1
    raise ValueError(f"unterminated quote {quote}{what}")


def split_fields(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside quotes; remove quotes (with backslash escapes) and strip."""
    if "'" not in text and '"' not in text:
        return [s.strip() for s in text.split(sep)]
    fields: list[str] = []
    buf: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in _QUOTES:
            value, i = _quoted(text, i)
            buf.append(value)
            continue
        if ch == sep:
            fields.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
        i += 1
    fields.append("".join(buf).strip())
    return fields


def read_name(text: str) -> tuple[str, str]:
    """Read a possibly quoted name at the start of ``text``; return (name, rest)."""
    text = text.lstrip()
    if text[:1] in _QUOTES:
        name, end = _quoted(text, 0, " in name")
        return name, text[end:].strip()
    m = re.match(r"[^\s{]+", text)
    if m is None:
        return "", text
    return m.group(0), text[m.end() :].strip()


#: Bytes read at a time from a line: a line longer than this (a comment of gigabytes) is
#: read, and skipped if a comment, in pieces of this size.
_LINE_CHUNK = 2**16


def read_text(path: Path) -> str:
    """The file's text, gunzipped if it starts with gzip's magic bytes, read as a stream.

    Comment lines (``%``) and blank lines are dropped while reading, each leaving only its
    newline (so that line numbers stay those of the file): a small compressed file of
    gigabytes of comments costs a byte a line. What is kept (the lines, plus a pointer each
    once split) must fit the memory budget (:data:`ecrm.model_files._archive.MEMORY_BUDGET`),
    checked as the stream is read, before it is decoded.
    """
    from ecrm.model_files._archive import MEMORY_BUDGET

    with open(path, "rb") as head_fh:
        compressed = head_fh.read(2) == b"\x1f\x8b"
    kept: list[bytes] = []
    cost = lineno = skipped = 0

    def over_budget():
        return ArffError(path, lineno, f"the file's text is over the memory budget of "
                         f"{MEMORY_BUDGET} bytes (ECRM_MEMORY_BUDGET)")

    try:
        with (gzip.open if compressed else open)(path, "rb") as fh:
            while True:
                piece = fh.readline(_LINE_CHUNK)
                if not piece:
                    break
                lineno += 1
                head = piece.lstrip()
                if not head or head.startswith(b"%"):  # a blank line or a comment: skipped
                    while not piece.endswith(b"\n"):
                        piece = fh.readline(_LINE_CHUNK)
                        if not piece:
                            break
                    skipped += 1 if piece else 0
                    cost += 9  # its newline, and its entry once the text is split
                    if cost > MEMORY_BUDGET:
                        raise over_budget()
                    continue
                if skipped:  # the newlines of a run of skipped lines, as one piece
                    kept.append(b"\n" * skipped)
                    skipped = 0
                while not piece.endswith(b"\n"):  # a long line: read on in pieces
                    more = fh.readline(_LINE_CHUNK)
                    if not more:
                        break
                    kept.append(piece)
                    cost += len(piece)
                    piece = more
                    if cost > MEMORY_BUDGET:
                        break
                kept.append(piece)
                cost += len(piece) + 8
                if cost > MEMORY_BUDGET:
                    raise over_budget()
    except (OSError, EOFError, zlib.error) as e:
        raise ArffError(path, None, f"corrupt gzip data: {e}") from e
    kept.append(b"\n" * skipped)
    raw = b"".join(kept)
    del kept
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")

