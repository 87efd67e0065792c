"""Hostile model files: every corrupted or forged container gives one ModelFileError.

Each file is built from a small fitted model saved with :func:`ecrm.save`, then altered with
:mod:`zipfile` or at the byte level (the zip directory patched in place where a forged size is
needed, so nothing large is ever written).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import zipfile
import zlib

import numpy as np
import pytest

import ecrm.model_files.io
from _model_file_edits import META, _members, _resign, _sign, _write
from _shapes import TREE5 as TREE
from ecrm import ECRM, load, save
from ecrm.losses import HammingLoss
from ecrm.model_files import _archive

ModelFileError = ecrm.model_files.io.ModelFileError


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    Y = TREE.close(X @ rng.normal(size=(2, TREE.n_outputs)) > 0.2)
    path = tmp_path_factory.mktemp("good") / "good.ecrm"
    save(ECRM(HammingLoss(), TREE, gamma=0.5).fit(X, Y), path)
    return path



def _central_entry(data: bytes, member: str) -> int:
    """Offset of ``member``'s record in the zip's central directory."""
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + name_len] == member.encode():
            return at
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"{member} not in the central directory")


def _patch_central(path, member, *, file_size=None, crc=None, flags=None):
    data = bytearray(path.read_bytes())
    at = _central_entry(bytes(data), member)
    if file_size is not None:
        struct.pack_into("<I", data, at + 24, file_size)
    if crc is not None:
        struct.pack_into("<I", data, at + 16, crc)
    if flags is not None:
        struct.pack_into("<H", data, at + 8, flags)
    path.write_bytes(bytes(data))
    return path


def _data_offset(path, member) -> int:
    """Offset of ``member``'s compressed bytes in the file."""
    with zipfile.ZipFile(path) as zf:
        start = zf.getinfo(member).header_offset
    raw = path.read_bytes()
    name_len, extra_len = struct.unpack_from("<HH", raw, start + 26)
    return start + 30 + name_len + extra_len


def _refused(path, match):
    with pytest.raises(ModelFileError, match=match) as info:
        load(path)
    assert str(path) in str(info.value)  # every message names the file
    return str(info.value)


def _npy_header(shape, descr="<f8", fortran=False) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": fortran, "shape": shape})
    return buf.getvalue()


# -- the zip container -------------------------------------------------------------------------
def test_flipped_bits_in_a_deflate_stream_are_a_model_file_error(saved, tmp_path):
    # 0b111 opens a final block of the reserved type 3: zlib itself fails (zlib.error)
    path = tmp_path / "flipped.ecrm"
    path.write_bytes(saved.read_bytes())
    at = _data_offset(path, "arrays/a0.npy")
    data = bytearray(path.read_bytes())
    data[at] = 0b111
    path.write_bytes(bytes(data))
    _refused(path, r"member 'arrays/a0.npy' is corrupted \(broken deflate stream: .*invalid "
                   "block type")


def test_any_single_flipped_bit_loads_or_gives_a_model_file_error(saved, tmp_path):
    good = saved.read_bytes()
    path = tmp_path / "flip.ecrm"
    refused = 0
    for at in range(0, len(good), max(1, len(good) // 150)):
        data = bytearray(good)
        data[at] ^= 1 << (at % 8)
        path.write_bytes(bytes(data))
        try:
            load(path)
        except ModelFileError:
            refused += 1
    assert refused > 100  # the rest landed on fields nothing reads (timestamps, padding)


@pytest.mark.parametrize("keep", [0.0, 0.002, 0.5, 0.99, 0.9999], ids="keep={}".format)
def test_truncated_file_is_refused(saved, tmp_path, keep):
    data = saved.read_bytes()
    path = tmp_path / "cut.ecrm"
    path.write_bytes(data[:int(len(data) * keep)])
    _refused(path, "not a complete zip archive")


@pytest.mark.parametrize("content", [b"", b"x,labels\n1,a\n", os.urandom(4096),
                                     b"PK\x03\x04" + bytes(100)],
                         ids=["empty", "csv", "random", "zip-magic-only"])
def test_not_a_zip_is_refused(tmp_path, content):
    path = tmp_path / "other.ecrm"
    path.write_bytes(content)
    _refused(path, "not an ecrm model file")


@pytest.mark.parametrize("patch", ["signature", "name"])
def test_bad_local_member_header_is_refused(saved, tmp_path, patch):
    path = tmp_path / "header.ecrm"
    with zipfile.ZipFile(saved) as zf:
        start = zf.getinfo("arrays/a0.npy").header_offset
    data = bytearray(saved.read_bytes())
    if patch == "signature":
        data[start:start + 4] = b"PK\x09\x09"
    else:  # the local header's name no longer matches the directory's
        data[start + 30 + len("arrays/")] = ord("b")
    path.write_bytes(bytes(data))
    _refused(path, r"member 'arrays/a0.npy' is corrupted \(bad zip data: "
                   r"(Bad magic number|File name in directory)")


def test_member_declaring_fewer_bytes_than_it_holds_is_refused(saved, tmp_path):
    path = tmp_path / "short.ecrm"
    path.write_bytes(saved.read_bytes())
    _patch_central(path, "arrays/a0.npy", file_size=64)
    _refused(path, r"member 'arrays/a0.npy' is corrupted \(bad zip data: Bad CRC-32")


def test_member_lying_about_size_and_crc_is_still_refused(saved, tmp_path):
    # a forger who also fixes the CRC of the truncated bytes gets past zipfile: the .npy check
    # (or the digest) refuses the short member
    with zipfile.ZipFile(saved) as zf:
        blob = zf.read("arrays/a0.npy")
    path = tmp_path / "short.ecrm"
    path.write_bytes(saved.read_bytes())
    _patch_central(path, "arrays/a0.npy", file_size=200, crc=zlib.crc32(blob[:200]))
    _refused(path, "arrays/a0.npy|'a0'")


def test_member_declaring_more_bytes_than_it_holds_is_refused(saved, tmp_path):
    path = tmp_path / "long.ecrm"
    path.write_bytes(saved.read_bytes())
    with zipfile.ZipFile(path) as zf:
        size = zf.getinfo("arrays/a0.npy").file_size
    _patch_central(path, "arrays/a0.npy", file_size=size + 1000)
    _refused(path, "member 'arrays/a0.npy'")


def test_member_declaring_4_gib_costs_only_the_bytes_it_holds(saved, tmp_path, monkeypatch):
    import tracemalloc

    path = tmp_path / "liar.ecrm"
    path.write_bytes(saved.read_bytes())
    _patch_central(path, "arrays/a0.npy", file_size=2**32 - 1)
    monkeypatch.setattr(_archive, "MAX_COMPRESSION_RATIO", 10**12)  # past the ratio bounds
    tracemalloc.start()
    try:
        _refused(path, "member 'arrays/a0.npy'")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**25


def test_zip_bomb_is_refused_before_inflating(saved, tmp_path):
    # the intercept's member (an array whose shape no other field constrains before it is
    # read) becomes 65 MiB of zeros deflated to about 64 KiB, correctly signed
    size = _archive.COMPRESSION_RATIO_FLOOR + 2**20
    header, zeros = _npy_header((size // 8,)), bytes(2**20)
    digest = hashlib.sha256(header)
    for _ in range(size // 2**20):
        digest.update(zeros)
    members = _members(saved)
    meta = json.loads(members[META])
    name = meta["fitted"]["_fit"]["kwargs"]["intercept"]["name"]
    meta["arrays"][name].update(sha256=digest.hexdigest(), shape=[size // 8])
    members[META] = json.dumps(meta).encode()
    del members[f"arrays/{name}.npy"]
    path = _write(tmp_path / "bomb.ecrm", _sign(members))
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open(f"arrays/{name}.npy", "w") as out:  # streamed: no large buffer here
            out.write(header)
            for _ in range(size // 2**20):
                out.write(zeros)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(f"arrays/{name}.npy")
    assert info.file_size > _archive.MAX_COMPRESSION_RATIO * info.compress_size
    _refused(path, rf"member 'arrays/{name}.npy' declares \d+ bytes from \d+ compressed, a ratio "
                   r"over 1000 \(a zip bomb")


def test_zip_bomb_in_a_model_file_is_refused(saved, tmp_path, monkeypatch):
    monkeypatch.setattr(_archive, "COMPRESSION_RATIO_FLOOR", 2**16)
    members = _members(saved)
    meta = json.loads(members[META])  # the shape declared too: only the ratio refuses it
    name = meta["fitted"]["_fit"]["kwargs"]["intercept"]["name"]
    members[f"arrays/{name}.npy"] = _npy_header((2**20,)) + bytes(2**23)
    meta["arrays"][name]["shape"] = [2**20]
    members[META] = json.dumps(meta).encode()
    path = _write(tmp_path / "bomb.ecrm", _resign(members))
    _refused(path, f"member 'arrays/{name}.npy' declares .* a ratio over 1000 .a zip bomb")
    # the whole archive's ratio is bounded too (here about 640:1)
    monkeypatch.setattr(_archive, "MAX_COMPRESSION_RATIO", 500)
    _refused(path, r"the members claim \d+ bytes uncompressed from a file of \d+ bytes, a "
                   r"ratio over 500 \(a zip bomb")


def test_overlapping_members_are_refused(saved, tmp_path):
    # Fifield's non-recursive zip bomb: directory entries sharing one member's bytes
    path = tmp_path / "overlap.ecrm"
    path.write_bytes(saved.read_bytes())
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo("arrays/a0.npy").header_offset
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, _central_entry(bytes(data), "arrays/a1.npy") + 42, offset)
    path.write_bytes(bytes(data))
    _refused(path, "overlaps the member before it in the zip archive")


def test_metadata_claiming_2_gib_is_refused_without_reading_it(saved, tmp_path, monkeypatch):
    path = tmp_path / "huge-meta.ecrm"
    path.write_bytes(saved.read_bytes())
    _patch_central(path, META, file_size=2**31)
    opened = []
    real_open = zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):
        opened.append(getattr(name, "filename", name))
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    # 2 GiB from a 5 KB file: the archive's compression ratio refuses it first ...
    _refused(path, "the members claim .* a ratio over 1000")
    # ... and the metadata's own limit does, whatever the ratio
    monkeypatch.setattr(_archive, "MAX_COMPRESSION_RATIO", 10**9)
    _refused(path, f"member '{META}' declares 2147483648 bytes uncompressed, over the limit "
                   f"of {16 * 2**20}")
    assert META not in opened


def test_metadata_over_the_limit_is_refused(saved, monkeypatch):
    monkeypatch.setattr(_archive, "MAX_METADATA_BYTES", 256)
    _refused(saved, f"member '{META}' declares .* over the limit of 256")


@pytest.mark.parametrize("name, value, said", [
    ("MAX_METADATA_BYTES", 16 * 2**20, "16 MiB"),
    ("MAX_MEMBER_BYTES", 8 * 2**30, "8 GiB"),
    ("MAX_ARCHIVE_BYTES", 32 * 2**30, "32 GiB"),
    ("MAX_JSON_DEPTH", 100, "100"),
    ("MAX_COMPRESSION_RATIO", 1000, "1000"),
    ("COMPRESSION_RATIO_FLOOR", 64 * 2**20, "64 MiB"),
])
def test_limits_are_what_their_comments_say(name, value, said):
    # the tests above patch the limits; the real ones are these, documented by their #: comment
    assert getattr(_archive, name) == value
    lines = open(_archive.__file__, encoding="utf-8").read().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{name} = "))
    comment = []
    while lines[at - 1].startswith("#:"):
        at -= 1
        comment.insert(0, lines[at])
    assert said in " ".join(comment)


def test_archive_claiming_too_much_in_all_is_refused(saved, monkeypatch):
    monkeypatch.setattr(_archive, "MAX_ARCHIVE_BYTES", 1000)
    _refused(saved, "over the limit of 1000 .MAX_ARCHIVE_BYTES")


def test_duplicate_member_names_are_refused(saved, tmp_path):
    members = _members(saved)
    forged = list(members.items()) + [("arrays/a0.npy", members["arrays/a0.npy"][:-8]
                                       + np.float64(7).tobytes())]
    path = _write(tmp_path / "dup.ecrm", forged)
    _refused(path, "duplicate member name 'arrays/a0.npy'")


def test_duplicate_metadata_is_refused(saved, tmp_path):
    members = _members(saved)
    path = _write(tmp_path / "dup.ecrm", [(META, b"{}")] + list(members.items()))
    _refused(path, f"duplicate member name '{META}'")


def test_encrypted_member_is_refused(saved, tmp_path):
    path = tmp_path / "enc.ecrm"
    path.write_bytes(saved.read_bytes())
    _patch_central(path, "arrays/a0.npy", flags=0x1)
    _refused(path, "member 'arrays/a0.npy' is encrypted")


def test_other_compression_method_is_refused(saved, tmp_path):
    path = _write(tmp_path / "bz2.ecrm", _members(saved), compression=zipfile.ZIP_BZIP2)
    _refused(path, "compression method 12")


# -- the metadata ------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [101, 100_000], ids="depth={}".format)
def test_deeply_nested_metadata_is_refused(saved, tmp_path, depth):
    members = _members(saved)
    meta = json.loads(members[META])
    nested = "[" * depth + "]" * depth
    members[META] = json.dumps(meta)[:-1].encode() + b', "x": ' + nested.encode() + b"}"
    path = _write(tmp_path / "deep.ecrm", _sign(members))
    _refused(path, f"member '{META}' nests JSON {depth + 1} levels deep, over the limit of 100")


def test_bare_deep_json_is_refused(saved, tmp_path):
    members = _members(saved)
    members[META] = b"{" + b'"a":{' * 100_000 + b"}" * 100_001
    _refused(_write(tmp_path / "deep.ecrm", _sign(members)), "nests JSON 100001 levels deep")


def test_json_depth_ignores_brackets_in_strings():
    assert _archive.json_depth('["[[[[", {"}}": "{{"}]') == 2
    assert _archive.json_depth(r'["\"[[", [1, ["\\"]]]') == 3
    assert _archive.json_depth("[" * 3_000_000 + "]" * 3_000_000) == 3_000_000  # chunked
    assert _archive.json_depth('"unterminated [[[[') == 0  # the parser reports it
    assert _archive.json_depth("17") == 0


def test_non_utf8_metadata_is_refused(saved, tmp_path):
    members = _members(saved)
    members[META] = members[META].replace(b'"ecrm-model"', b'"ecrm-\xff\xfemodel"')
    _refused(_write(tmp_path / "latin.ecrm", _sign(members)), f"member '{META}' is not UTF-8")


@pytest.mark.parametrize("text", [b'{"format": ', b"1" * 5000, b"[1, 2,]"],
                         ids=["cut", "huge-integer", "trailing-comma"])
def test_invalid_json_metadata_is_refused(saved, tmp_path, text):
    members = _members(saved)
    members[META] = text
    _refused(_write(tmp_path / "bad.ecrm", _sign(members)), "is not valid JSON")


# -- the arrays --------------------------------------------------------------------------------
def test_npy_header_claiming_1e12_elements_is_refused(saved, tmp_path):
    members = _members(saved)
    members["arrays/a0.npy"] = _npy_header((10**12,)) + bytes(64)
    message = _refused(_write(tmp_path / "huge.ecrm", _resign(members)),
                       r"member 'arrays/a0.npy' is not a plain NumPy array: the header "
                       r"claims shape \(1000000000000,\)")
    assert "over the limit" in message


def test_npy_header_disagreeing_with_the_data_is_refused(saved, tmp_path):
    members = _members(saved)
    members["arrays/a0.npy"] = _npy_header((3, 4)) + bytes(8 * 11)
    _refused(_write(tmp_path / "short.ecrm", _resign(members)),
             r"claims shape \(3, 4\) of float64 \(96 bytes\) but the member holds 88 bytes")


@pytest.mark.parametrize("descr", ["|O", [("a", "<f8"), ("b", "|O")]], ids=["object", "record"])
def test_object_dtype_npy_is_refused(saved, tmp_path, descr):
    members = _members(saved)
    members["arrays/a0.npy"] = _npy_header((2,), descr=descr) + bytes(16)
    _refused(_write(tmp_path / "obj.ecrm", _resign(members)),
             "is not a plain NumPy array: dtype .* holds Python objects")


@pytest.mark.parametrize("blob", [b"\x93NUMPY", b"\x93NUMPY\x09\x00" + bytes(64),
                                  b"not npy at all", _npy_header((2,))[:-20]],
                         ids=["magic-only", "version-9", "no-magic", "cut-header"])
def test_unreadable_npy_header_is_refused(saved, tmp_path, blob):
    members = _members(saved)
    members["arrays/a0.npy"] = blob
    _refused(_write(tmp_path / "bad.ecrm", _resign(members)),
             "member 'arrays/a0.npy' is not a plain NumPy array")


@pytest.mark.parametrize("array", [
    np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    np.arange(24, dtype=np.int32).reshape(2, 3, 4).transpose(2, 1, 0),  # Fortran, 3-d
    np.arange(12.0).reshape(3, 4),
    np.array(2.5),
    np.zeros((0, 3)),
    np.arange(5, dtype=">i8"),
    np.array(["a", "bc"]),
], ids=["fortran", "fortran-3d", "c", "0d", "empty", "big-endian", "unicode"])
def test_arrays_keep_their_memory_order_through_the_npy_writer_and_reader(array):
    blob = _archive.npy_bytes(array)
    back = _archive.read_npy("mem", "arrays/x.npy", bytearray(blob))
    np.testing.assert_array_equal(back, array)
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.flags.f_contiguous == array.flags.f_contiguous
    assert back.flags.c_contiguous == array.flags.c_contiguous
    assert back.flags.writeable
    from_bytes = _archive.read_npy("mem", "arrays/x.npy", blob)  # read-only input: a copy
    assert from_bytes.flags.writeable and from_bytes.flags.f_contiguous == array.flags.f_contiguous


def test_fortran_array_survives_the_archive(tmp_path):
    a = np.asfortranarray(np.random.default_rng(1).normal(size=(5, 7)))
    path = str(tmp_path / "x.zip")
    _archive.write_archive(path, {"arrays/a.npy": _archive.npy_bytes(a)})
    with _archive.open_archive(path) as zf:
        back = _archive.read_npy(path, "arrays/a.npy",
                                 _archive.read_member(path, zf, "arrays/a.npy"))
    assert back.flags.f_contiguous and not back.flags.c_contiguous
    np.testing.assert_array_equal(back, a)


# -- writing -----------------------------------------------------------------------------------
def test_save_is_atomic_and_leaves_no_temporary_file(saved, tmp_path, monkeypatch):
    path = tmp_path / "m.ecrm"
    path.write_bytes(saved.read_bytes())
    model = load(saved)
    calls = []
    real = zipfile.ZipFile.writestr

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "writestr", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save(model, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["m.ecrm"]
    assert path.read_bytes() == saved.read_bytes()


def test_save_writes_the_same_bytes_with_ordinary_permissions(saved, tmp_path):
    model = load(saved)
    save(model, tmp_path / "a.ecrm")
    save(model, tmp_path / "b.ecrm")
    assert (tmp_path / "a.ecrm").read_bytes() == (tmp_path / "b.ecrm").read_bytes()
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.ecrm").stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_refuses_what_load_would_refuse(saved, tmp_path, monkeypatch):
    model = load(saved)
    monkeypatch.setattr(_archive, "MAX_METADATA_BYTES", 256)
    with pytest.raises(ModelFileError, match=f"member '{META}' would be .* over the limit"):
        save(model, tmp_path / "m.ecrm")
    assert os.listdir(tmp_path) == []


def test_highly_compressible_members_are_stored_so_they_load(tmp_path, monkeypatch):
    monkeypatch.setattr(_archive, "COMPRESSION_RATIO_FLOOR", 2**12)
    zeros = _archive.npy_bytes(np.zeros(2**20))  # deflates about 1027:1
    noise = _archive.npy_bytes(np.random.default_rng(0).integers(0, 4, 2**12))
    path = str(tmp_path / "z.zip")
    _archive.write_archive(path, {"arrays/z.npy": zeros, "arrays/n.npy": noise})
    with _archive.open_archive(path) as zf:
        assert zf.getinfo("arrays/z.npy").compress_type == zipfile.ZIP_STORED
        assert zf.getinfo("arrays/n.npy").compress_type == zipfile.ZIP_DEFLATED
        assert not _archive.read_npy(path, "z", _archive.read_member(path, zf,
                                                                     "arrays/z.npy")).any()


def test_model_file_error_is_still_ecrm_io_s():
    assert ecrm.model_files.io.ModelFileError is _archive.ModelFileError
    assert issubclass(ModelFileError, ValueError)
    assert ModelFileError.__module__ == "ecrm.model_files.io"
