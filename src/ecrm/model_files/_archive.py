"""The container layer of model files: a zip archive read without trusting it.

This module only gets bytes, JSON and arrays out of (and into) the archive, so that a corrupted
or hostile file fails with one :class:`ModelFileError` naming the file and the member, before
anything large is allocated:

* the archive must open as a zip with unique, non-overlapping members, stored or deflated, not
  encrypted, and a bounded total uncompressed size;
* a member's size is checked against a cap (which the caller may lower: an array member is
  bounded by the size its metadata declares) from the zip directory before decompression, and
  again while streaming; a member far larger than its compressed size is refused (a zip bomb);
* the metadata JSON is UTF-8, bounded in size and in nesting depth (measured before parsing);
* a ``.npy`` member's header is checked (no object dtype, an element count within the bound
  and matching the bytes present) before the array is built in the order the header states.

The limits are module constants (patchable, e.g. in tests); :func:`write_archive` refuses to
write a file that :func:`read_member` would refuse to read.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np

from ecrm.model_files import _atomic

#: Largest uncompressed member (a ``.npy`` array with its header): 8 GiB. Far above any model
#: this library fits on one machine (a dual model keeps a few ``m x p`` arrays), far below what
#: a forged header could otherwise make a reader allocate.
MAX_MEMBER_BYTES = 8 * 2**30
#: Largest total uncompressed size of all members together: 32 GiB.
MAX_ARCHIVE_BYTES = 32 * 2**30
#: Largest metadata member (and its digest): 16 MiB. Each copy of a 10,000-label hierarchy takes
#: about 0.8 MiB and a model holds two or three: room for some 50,000 labels.
MAX_METADATA_BYTES = 16 * 2**20
#: Deepest nesting of JSON arrays and objects in the metadata: 100. What ``save`` writes
#: nests about 10 levels; the decoder recurses once per level.
MAX_JSON_DEPTH = 100
#: Largest ratio of a member's uncompressed to compressed size, for members over
#: :data:`COMPRESSION_RATIO_FLOOR`: 1000. Deflate cannot exceed about 1032:1, so this refuses
#: only near-constant members (gigabytes of zeros in a few megabytes), which
#: :func:`write_archive` stores uncompressed.
MAX_COMPRESSION_RATIO = 1000
#: Members up to this size (64 MiB) are exempt from the ratio bound (a large all-zero array in
#: an older file still loads; the cost of inflating it is bounded anyway).
COMPRESSION_RATIO_FLOOR = 64 * 2**20
#: The memory a load may allocate for the arrays a file declares, in bytes: 4 GiB, or the
#: ``ECRM_MEMORY_BUDGET`` environment variable. A file's declared sizes are checked against it
#: before anything is allocated; raise it (or patch this constant) to load a larger model.
def _budget_from_environment(default: int = 4 * 2**30) -> int:
    value = os.environ.get("ECRM_MEMORY_BUDGET", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else default


MEMORY_BUDGET = _budget_from_environment()
#: Largest ``.npy`` header read (NumPy writes a few hundred bytes; it parses at most 10,000).
MAX_NPY_HEADER_BYTES = 2**16

_CHUNK = 2**20
_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError,
           RuntimeError, struct.error)


class ModelFileError(ValueError):
    """A model file that cannot be written or read; the message names the file and the cause."""

    __module__ = "ecrm.model_files.io"  # documented where it is raised


def open_archive(path: str) -> zipfile.ZipFile:
    """Open the zip archive of the model file ``path`` (the caller closes it), checking its
    directory; :class:`ModelFileError` when ``path`` is not a file or not a complete zip
    archive, or its directory breaks a rule of the module docstring.
    """
    if not os.path.isfile(path):
        raise ModelFileError(f"{path}: no such model file")
    try:
        zf = zipfile.ZipFile(path)
    except _ERRORS as exc:
        raise ModelFileError(f"{path}: not an ecrm model file (not a complete zip archive: "
                             f"{exc}); a truncated download or a file of another kind") from None
    try:
        _check_directory(path, zf.infolist(), os.path.getsize(path))
    except BaseException:
        zf.close()
        raise
    return zf


def _check_directory(path: str, infos: list[zipfile.ZipInfo], file_size: int) -> None:
    seen: set[str] = set()
    total = 0
    end = 0
    # members in file order must not share compressed bytes: overlapping entries let a small
    # file declare many large members (a zip bomb no single member's ratio reveals)
    for info in sorted(infos, key=lambda i: i.header_offset):
        if info.header_offset < end:
            raise ModelFileError(f"{path}: member {info.filename!r} overlaps the member before "
                                 "it in the zip archive (a zip bomb?)")
        # at least the fixed 30-byte local header, the name and the compressed bytes
        end = info.header_offset + 30 + len(info.orig_filename.encode()) + info.compress_size
    for info in infos:
        if info.filename in seen:
            raise ModelFileError(f"{path}: duplicate member name {info.filename!r} in the zip "
                                 "archive (tampered file)")
        seen.add(info.filename)
        if info.flag_bits & 0x1:
            raise ModelFileError(f"{path}: member {info.filename!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ModelFileError(f"{path}: member {info.filename!r} uses compression method "
                                 f"{info.compress_type}; a model file stores or deflates")
        total += info.file_size
    if total > MAX_ARCHIVE_BYTES:
        raise ModelFileError(f"{path}: the members claim {total} bytes uncompressed in all, "
                             f"over the limit of {MAX_ARCHIVE_BYTES} (MAX_ARCHIVE_BYTES)")
    if total > COMPRESSION_RATIO_FLOOR and total > MAX_COMPRESSION_RATIO * max(file_size, 1):
        raise ModelFileError(f"{path}: the members claim {total} bytes uncompressed from a file "
                             f"of {file_size} bytes, a ratio over {MAX_COMPRESSION_RATIO} "
                             "(a zip bomb?)")


def read_member(path: str, zf: zipfile.ZipFile, member: str,
                limit: int | None = None) -> bytearray:
    """The bytes of ``member`` of ``zf`` (from :func:`open_archive`; ``path`` names the file
    in messages), decompressed within ``limit`` (:data:`MAX_MEMBER_BYTES` by default): a
    writable bytearray of exactly the declared size, so arrays can be built on it in place.

    :class:`ModelFileError` when the member is missing, declares more than ``limit`` bytes or a
    compression ratio over :data:`MAX_COMPRESSION_RATIO`, or is corrupted.
    """
    limit = MAX_MEMBER_BYTES if limit is None else limit
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise ModelFileError(f"{path}: missing member {member!r} (truncated or tampered "
                             "file)") from None
    size = info.file_size
    if size > limit:
        raise ModelFileError(f"{path}: member {member!r} declares {size} bytes uncompressed, "
                             f"over the limit of {limit} for this member")
    if (size > COMPRESSION_RATIO_FLOOR
            and size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1)):
        raise ModelFileError(f"{path}: member {member!r} declares {size} bytes from "
                             f"{info.compress_size} compressed, a ratio over "
                             f"{MAX_COMPRESSION_RATIO} (a zip bomb?)")
    # grown as bytes arrive, never allocated from the declared size: a member that lies
    # about its size costs only the bytes it really holds
    data = bytearray()
    try:
        with zf.open(info) as stream:
            while len(data) < size:
                chunk = stream.read(min(_CHUNK, size - len(data)))
                if not chunk:
                    break
                data += chunk
            extra = stream.read(1)  # zipfile stops at the declared size; be sure of it
    except _ERRORS as exc:
        raise ModelFileError(f"{path}: member {member!r} is corrupted ({_why(exc)})") from None
    if len(data) != size or extra:
        raise ModelFileError(f"{path}: member {member!r} holds "
                             f"{'more' if extra else len(data)} bytes but declares {size} "
                             "(corrupted or tampered file)")
    return data


def _why(exc: BaseException) -> str:
    if isinstance(exc, zlib.error):
        return f"broken deflate stream: {exc}"
    if isinstance(exc, EOFError):
        return f"the compressed data ends early: {exc}"
    if isinstance(exc, zipfile.BadZipFile):
        return f"bad zip data: {exc}"
    return f"{type(exc).__name__}: {exc}"


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in the JSON ``text``, found without
    recursion (string literals removed first). Invalid JSON gets some number; the parser
    reports it."""
    # A string literal, or an unterminated one (swallowing the rest, which keeps this linear).
    stripped = re.sub(r'"[^"\\]*(?:\\.[^"\\]*)*"|"[\s\S]*', "", text)
    brackets = np.frombuffer(re.sub(r"[^\[\]{}]+", "", stripped).encode("ascii"), np.uint8)
    depth = deepest = 0
    for start in range(0, len(brackets), _CHUNK):
        part = brackets[start:start + _CHUNK]
        running = depth + np.cumsum(np.where((part == ord("[")) | (part == ord("{")), 1, -1))
        deepest = max(deepest, int(running.max()))
        depth = int(running[-1])
    return deepest


def parse_json(path: str, member: str, data: bytes | bytearray) -> Any:
    """The value of the UTF-8 JSON ``data`` of ``member`` (both names for messages), its
    nesting bounded by :data:`MAX_JSON_DEPTH`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{path}: member {member!r} is not UTF-8 text (byte "
                             f"{exc.start}: {exc.reason})") from None
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ModelFileError(f"{path}: member {member!r} nests JSON {depth} levels deep, over "
                             f"the limit of {MAX_JSON_DEPTH}")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the depth bound comes first
        raise ModelFileError(f"{path}: member {member!r} nests JSON too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or an integer literal too long to convert
        raise ModelFileError(f"{path}: member {member!r} is not valid JSON ({exc})") from None


def read_npy(path: str, member: str, data: bytes | bytearray) -> np.ndarray:
    """The array of the ``.npy`` bytes ``data`` of ``member`` (a bytearray is used in place),
    writable and C- or Fortran-ordered as its header says, once the header is checked
    against the bytes.

    :class:`ModelFileError` when the header is unreadable, of an unknown version, of an object
    dtype (it would need pickle), or its shape is invalid, too large or not that of the data.
    """
    fmt = np.lib.format

    def fail(why: str) -> ModelFileError:
        return ModelFileError(f"{path}: member {member!r} is not a plain NumPy array: {why}")

    head = io.BytesIO(bytes(memoryview(data)[:MAX_NPY_HEADER_BYTES + 16]))
    try:
        version = fmt.read_magic(head)
        read = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
        if version in read:
            shape, fortran, dtype = read[version](head)
    except _ERRORS as exc:
        raise fail(f"unreadable header ({exc})") from None
    if version not in read:
        raise fail(f".npy format version {version} (a model file uses 1.0 or 2.0)")
    if dtype.hasobject:
        raise fail(f"dtype {dtype} holds Python objects (reading it would need pickle)")
    if dtype.itemsize == 0:
        raise fail(f"dtype {dtype} has no size")
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise fail(f"invalid shape {shape}")
    offset = head.tell()
    count = math.prod(shape)  # Python integers: no overflow for forged shapes
    if count * dtype.itemsize > MAX_MEMBER_BYTES:
        raise fail(f"the header claims shape {shape} of {dtype} ({count} elements, "
                   f"{count * dtype.itemsize} bytes), over the limit of {MAX_MEMBER_BYTES}")
    if count * dtype.itemsize != len(data) - offset:
        raise fail(f"the header claims shape {shape} of {dtype} ({count * dtype.itemsize} "
                   f"bytes) but the member holds {len(data) - offset} bytes of data")
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    array = flat.reshape(shape, order="F" if fortran else "C")
    if not (array.flags.writeable and array.flags.aligned):  # bytes, or an odd header length
        array = array.copy(order="K")
    return array


def npy_bytes(array: np.ndarray) -> bytes:
    """The ``.npy`` bytes of ``array`` (no Python objects), in its own memory order."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=False)
    return buf.getvalue()


def _deflates_too_well(data: bytes) -> bool:
    if len(data) <= COMPRESSION_RATIO_FLOOR:
        return False
    # the compressor zipfile uses for ZIP_DEFLATED at its default level
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    size = len(compressor.compress(data)) + len(compressor.flush())
    return len(data) > MAX_COMPRESSION_RATIO * size


def write_archive(path: str | BinaryIO, members: Mapping[str, bytes]) -> None:
    """Write ``members`` (name -> bytes, in the order to write them) to a zip archive at
    ``path``, whole or not at all and flushed to disk, by the rule of
    :mod:`ecrm.model_files._atomic` (its ``OutputError`` for a directory, a socket or a block
    device); or to ``path``, a binary file object, in one write of the archive built in
    memory (the same bytes: a zip written where it cannot seek back, a pipe, would differ).
    Members are deflated, except those that would compress beyond
    :data:`MAX_COMPRESSION_RATIO` (stored, so the reader accepts them); timestamps are fixed,
    so the same model gives the same bytes. :class:`ModelFileError`, with nothing written,
    when a member or the total is larger than the reader accepts.
    """
    where = path if isinstance(path, str) else "a file object"
    for name, data in members.items():
        limit = (MAX_METADATA_BYTES if name.endswith((".json", ".sha256"))
                 else MAX_MEMBER_BYTES)
        if len(data) > limit:
            raise ModelFileError(f"cannot save {where}: member {name!r} would be {len(data)} "
                                 f"bytes, over the limit of {limit} a model file is read with")
    total = sum(len(data) for data in members.values())
    if total > MAX_ARCHIVE_BYTES:
        raise ModelFileError(f"cannot save {where}: {total} bytes in all, over the limit of "
                             f"{MAX_ARCHIVE_BYTES} a model file is read with")
    if not isinstance(path, str):
        buffer = io.BytesIO()
        _zip(buffer, members)
        with buffer.getbuffer() as view:
            path.write(view)  # a buffered file object writes it all
        return
    with _atomic.atomic_path(path, sync=True) as tmp, open(tmp, "wb") as raw:
        _zip(raw, members)


def _zip(raw: BinaryIO, members: Mapping[str, bytes]) -> None:
    """The zip archive of ``members`` written to the seekable binary file ``raw``."""
    with zipfile.ZipFile(raw, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = (zipfile.ZIP_STORED if _deflates_too_well(data)
                                  else zipfile.ZIP_DEFLATED)
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
