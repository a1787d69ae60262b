"""Issue 34, finding 2: no corrupted archive unpacks with different bytes.

A tar member has no checksum, and ``tarfile``'s stream reader never checked
the gzip trailer: one changed byte in a stored deflate block unpacked
silently, so did a wrong trailer and 3 of 30 random bit flips.  Compressed
streams are now read to their end and their checksums verified; a member
nothing checks (a plain tar, a RAR5 member without a CRC-32) is installed
only if its sha256 is pinned.  The property test flips random bits of small
valid archives of every format: each is refused or unpacks to the original
bytes.
"""

import bz2
import dataclasses
import gzip
import hashlib
import io
import lzma
import os
import shutil
import struct
import tarfile
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refimpl.datasets import REGISTRY, ChecksumError, prepare_letor
from refimpl.exceptions import DataError
from test_datasets import PARTS, isolated_env, mq_rar_content  # noqa: F401
from test_hostile_archives import mq2008, mq_entries, zip_  # noqa: F401

needs_bsdtar = pytest.mark.skipif(
    shutil.which("bsdtar") is None,
    reason="bsdtar (Debian package libarchive-tools) is not installed",
)

CONTENT = {name[len("MQ2008/"):]: data for name, data, _ in mq_entries()}


def raw_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data, _ in mq_entries():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


RAW = raw_tar()
COMPRESS = {
    "x.tar.gz": lambda b: gzip.compress(b, mtime=0),
    "x.tar.bz2": bz2.compress,
    "x.tar.xz": lzma.compress,
    "x.zip": lambda _: zip_(mq_entries()),
}


def prepare(archive_bytes: bytes, name: str, tmp_path, sub="a"):
    archive = tmp_path / sub / name
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.write_bytes(archive_bytes)
    return prepare_letor("MQ2008", archive, data_home=tmp_path / sub / "home")


def assert_identical(path):
    found = sorted(p.relative_to(path).as_posix() for p in path.rglob("*")
                   if p.is_file())
    assert found == sorted([*CONTENT, ".refimpl-letor.json"])
    for rel, data in CONTENT.items():
        assert (path / rel).read_bytes() == data, rel


@pytest.mark.parametrize("name", list(COMPRESS))
def test_valid_archives_of_every_format_unpack_identically(name, mq2008, tmp_path):
    assert_identical(prepare(COMPRESS[name](RAW), name, tmp_path))


def test_2_one_changed_byte_in_a_stored_deflate_block_is_refused(mq2008, tmp_path):
    """The issue's case: a label ``1`` became ``2``; gzip's CRC-32 says so."""
    data = bytearray(gzip.compress(RAW, compresslevel=0, mtime=0))
    at = data.index(CONTENT["Fold1/vali.txt"][:40]) + CONTENT["Fold1/vali.txt"].index(
        b"\n1 qid") + 1
    assert data[at:at + 1] == b"1"
    data[at] = ord("2")
    with pytest.raises(ChecksumError) as info:
        prepare(bytes(data), "x.tar.gz", tmp_path)
    message = str(info.value)
    assert "x.tar.gz" in message and "gzip stream is corrupt" in message
    assert "incorrect data check" in message
    assert os.listdir(tmp_path / "a" / "home") == []


@pytest.mark.parametrize("where, what", [(-8, "incorrect data check"),
                                         (-4, "incorrect length check")])
def test_2_a_wrong_gzip_trailer_is_refused(where, what, mq2008, tmp_path):
    data = bytearray(gzip.compress(RAW, mtime=0))
    data[where] ^= 0x01
    with pytest.raises(ChecksumError, match=what):
        prepare(bytes(data), "x.tar.gz", tmp_path)


@pytest.mark.parametrize("name", ["x.tar.gz", "x.tar.bz2", "x.tar.xz"])
def test_2_a_truncated_stream_is_refused(name, mq2008, tmp_path):
    data = COMPRESS[name](RAW)
    # cut inside the trailer: every member's bytes may have come through
    with pytest.raises(ChecksumError, match="truncated|corrupt"):
        prepare(data[:-3], name, tmp_path)


@pytest.mark.parametrize("name", ["x.tar.gz", "x.tar.bz2", "x.tar.xz"])
def test_2_trailing_bytes_after_the_stream_are_refused(name, mq2008, tmp_path):
    with pytest.raises(ChecksumError, match="not another compressed stream"):
        prepare(COMPRESS[name](RAW) + b"\x00junk", name, tmp_path)


@pytest.mark.parametrize("name", ["x.tar.gz", "x.tar.bz2", "x.tar.xz"])
def test_concatenated_streams_are_read_as_one(name, mq2008, tmp_path):
    """``cat a.gz b.gz`` is one stream to ``gzip -d``; each part is verified."""
    cut = len(RAW) // 3
    data = COMPRESS[name](RAW[:cut]) + COMPRESS[name](RAW[cut:])
    assert_identical(prepare(data, name, tmp_path))


def test_2_an_xz_stream_without_a_check_is_refused(mq2008, tmp_path):
    data = lzma.compress(RAW, check=lzma.CHECK_NONE)
    with pytest.raises(ChecksumError, match="no integrity check"):
        prepare(data, "x.tar.xz", tmp_path)
    assert_identical(prepare(lzma.compress(RAW, check=lzma.CHECK_CRC32),
                             "x.tar.xz", tmp_path, "b"))


def test_2_a_plain_tar_needs_a_pinned_hash_for_every_file(mq2008, monkeypatch,
                                                          tmp_path):
    """Tar has no checksum: a plain tar's files are installed only if pinned."""
    with pytest.raises(ChecksumError) as info:
        prepare(RAW, "x.tar", tmp_path)
    assert "Fold1/test.txt has no checksum in the tar archive" in str(info.value)
    assert os.listdir(tmp_path / "a" / "home") == []
    pinned = dataclasses.replace(mq2008, files=tuple(
        (rel, hashlib.sha256(data).hexdigest()) for rel, data in CONTENT.items()))
    monkeypatch.setitem(REGISTRY, "MQ2008", pinned)
    assert_identical(prepare(RAW, "x.tar", tmp_path, "b"))
    bad = bytearray(RAW)
    at = bad.index(CONTENT["Fold3/test.txt"], RAW.index(b"MQ2008/Fold3/test.txt"))
    bad[at] ^= 0x01  # a label changed
    with pytest.raises(ChecksumError, match="Fold3/test.txt has sha256"):
        prepare(bytes(bad), "x.tar", tmp_path, "c")


def test_2_a_pinned_archive_hash_covers_a_plain_tar(mq2008, monkeypatch, tmp_path):
    row = dataclasses.replace(mq2008, archive_hash="sha256:"
                              + hashlib.sha256(RAW).hexdigest())
    monkeypatch.setitem(REGISTRY, "MQ2008", row)
    assert_identical(prepare(RAW, "x.tar", tmp_path))


# --------------------------------------------------------------------------
# RAR5 members without a CRC-32
# --------------------------------------------------------------------------


def _vint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _rar5_block(htype: int, hflags: int, fields: bytes, data_size=None) -> bytes:
    body = _vint(htype) + _vint(hflags) + (
        _vint(data_size) if data_size is not None else b"") + fields
    head = _vint(len(body)) + body
    return struct.pack("<I", zlib.crc32(head)) + head


def rar5(files: dict, crc=lambda name: True) -> bytes:
    """A RAR 5.0 archive of stored members; a member's CRC-32 only where
    ``crc(name)`` (the format makes it optional)."""
    out = [b"Rar!\x1a\x07\x01\x00", _rar5_block(1, 0, _vint(0))]
    for name, data in files.items():
        raw = name.encode()
        fields = _vint(0x04 if crc(name) else 0) + _vint(len(data)) + _vint(0o644)
        if crc(name):
            fields += struct.pack("<I", zlib.crc32(data))
        fields += _vint(0) + _vint(1) + _vint(len(raw)) + raw  # store, Unix
        out += [_rar5_block(2, 0x02, fields, len(data)), data]
    out.append(_rar5_block(5, 0, _vint(0)))
    return b"".join(out)


@needs_bsdtar
def test_2_a_rar5_member_without_crc_needs_a_pinned_hash(mq2008, tmp_path):
    files = mq_rar_content()
    assert_identical(prepare(rar5(files), "x.rar", tmp_path))
    # S1.txt has a pinned sha256: it may go without a CRC-32 ...
    assert_identical(prepare(rar5(files, crc=lambda n: not n.endswith("S1.txt")),
                             "x.rar", tmp_path, "b"))
    # ... a fold file has none: refused
    with pytest.raises(ChecksumError) as info:
        prepare(rar5(files, crc=lambda n: not n.endswith("Fold2/vali.txt")),
                "x.rar", tmp_path, "c")
    assert "Fold2/vali.txt has no checksum in the rar archive" in str(info.value)
    assert os.listdir(tmp_path / "c" / "home") == []


@needs_bsdtar
def test_a_rar5_member_with_a_wrong_crc_is_refused(mq2008, tmp_path):
    data = bytearray(rar5(mq_rar_content()))
    at = data.index(CONTENT["Fold4/train.txt"])
    data[at + 2] ^= 0x01
    with pytest.raises(ChecksumError, match="CRC-32 of member MQ2008/Fold4/train.txt"):
        prepare(bytes(data), "x.rar", tmp_path)


# --------------------------------------------------------------------------
# Property: random bit flips are refused or change nothing
# --------------------------------------------------------------------------

VALID = {name: make(RAW) for name, make in COMPRESS.items()}
# stored deflate blocks: a flipped bit lands in a member's bytes as it is,
# and only the gzip trailer can tell
VALID["stored.tar.gz"] = gzip.compress(RAW, compresslevel=0, mtime=0)


def _flip(data: bytes, bits) -> bytes:
    out = bytearray(data)
    for b in bits:
        out[b // 8] ^= 1 << (b % 8)
    return bytes(out)


_flips = settings(max_examples=40, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("name", list(VALID))
@_flips
@given(data=st.data())
def test_2_bit_flips_are_refused_or_change_nothing(name, data, mq2008, tmp_path):
    archive = VALID[name]
    bits = data.draw(st.lists(st.integers(0, 8 * len(archive) - 1),
                              min_size=1, max_size=3, unique=True))
    sub = "flip"
    shutil.rmtree(tmp_path / sub, ignore_errors=True)
    try:
        path = prepare(_flip(archive, bits), name, tmp_path, sub)
    except DataError:
        assert os.listdir(tmp_path / sub / "home") == []
        return
    assert_identical(path)
