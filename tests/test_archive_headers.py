"""Issue 34, findings 1 and 10: tar is read without trusting its headers.

``tarfile`` read a GNU long-name (``L``, ``K``) or pax (``x``, ``g``)
header's declared size into memory before refimpl saw the member: a 0.5 MB
``.tar.gz`` took 1.25 GiB.  Tar archives are now parsed by refimpl itself,
every declared size bounded before a byte of it is read.  The memory tests
run ``prepare_letor`` in a child process and compare its peak resident set
with the one it had before the call (with an address-space limit, so that a
regression fails the test instead of the machine).

Finding 10: a member nested 1,200 levels deep failed with "maximum recursion
depth exceeded" and no member name; tar types ``V`` and ``D`` were reported
as "device or FIFO".
"""

import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
import zlib
from pathlib import Path

import pytest

from refimpl.datasets import UnpackLimitError, UnsafeArchiveError, prepare_letor
from refimpl.exceptions import DataError
from test_datasets import PARTS, isolated_env  # noqa: F401  (fixture)
from test_hostile_archives import mq2008, mq_entries, rar, tar  # noqa: F401

MiB = 2**20


def header(name: bytes, typ: bytes, size: int, *, base256=False) -> bytes:
    """One 512-byte tar header (GNU magic) with a correct checksum."""
    h = bytearray(512)
    h[:len(name)] = name
    h[100:108] = b"0000644\x00"
    h[108:116] = h[116:124] = b"0000000\x00"
    if base256:
        h[124:136] = b"\x80" + size.to_bytes(11, "big")
    else:
        h[124:136] = b"%011o\x00" % size
    h[136:148] = b"00000000000\x00"
    h[156:157] = typ
    h[257:265] = b"ustar  \x00"
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\x00 " % sum(h)
    return bytes(h)


def tar_body(entries) -> bytes:
    """The headers and contents of ``entries``, without the end marker."""
    buf = io.BytesIO()
    tf = tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT)
    for name, data, _ in entries:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    end = tf.offset
    tf.close()
    return buf.getvalue()[:end]


def pax_record(key: bytes, value: bytes) -> bytes:
    """``"%d %s=%s\n"``, the length counting its own digits."""
    rest = b" " + key + b"=" + value + b"\n"
    n = len(rest) + 1
    while len(b"%d" % n) + len(rest) != n:
        n += 1
    return b"%d" % n + rest


def gzip_of(blocks, zeros: int = 0) -> bytes:
    """gzip of ``blocks`` then ``zeros`` zero bytes, streamed (no big buffer)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [c.compress(b"".join(blocks))]
    chunk = bytes(MiB)
    for _ in range(zeros // MiB):
        out.append(c.compress(chunk))
    out.append(c.compress(bytes(zeros % MiB)))
    out.append(c.flush())
    return b"".join(out)


CHILD = textwrap.dedent("""
    import json, resource, sys
    from refimpl import datasets

    def rss():  # peak resident set of this process, bytes (Linux: KiB)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    # an address-space bound, so that a regression fails the test with a
    # MemoryError instead of exhausting the machine
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + 2 * 2**30, vm + 2 * 2**30))
    before = rss()
    try:
        datasets.prepare_letor(sys.argv[1], sys.argv[2], data_home=sys.argv[3],
                               unpack_limit=int(sys.argv[4]))
        error, message = None, ""
    except Exception as exc:
        error, message = type(exc).__name__, str(exc)
    print(json.dumps({"error": error, "message": message,
                      "growth": rss() - before}))
""")


def run_child(name, archive: Path, home: Path, limit: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(archive), str(home), str(limit)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def bomb_archives(tmp_path: Path) -> dict:
    """Archives of at most ~1 MB whose headers claim far more."""
    big = 512 * MiB
    cases = {
        # the repro: a long-name header of 512 MiB, then zeros
        "long-name.tar.gz": gzip_of([header(b"././@LongLink", b"L", big)], big),
        "pax.tar.gz": gzip_of([header(b"PaxHeaders/x", b"x", 256 * MiB)],
                              256 * MiB),
        "long-link.tar.bz2": None, "pax-global.tar.xz": None,
        "base256.tar": header(b"././@LongLink", b"L", 8 << 40, base256=True)
        + bytes(MiB // 2),
    }
    import bz2
    import lzma
    cases["long-link.tar.bz2"] = bz2.compress(
        header(b"././@LongLink", b"K", big) + bytes(MiB))
    cases["pax-global.tar.xz"] = lzma.compress(
        header(b"pax_global_header", b"g", big) + bytes(MiB))
    paths = {}
    for name, data in cases.items():
        assert len(data) < 1.1 * MiB, (name, len(data))
        p = tmp_path / name
        p.write_bytes(data)
        paths[name] = p
    return paths


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    return bomb_archives(tmp_path_factory.mktemp("bombs"))


@pytest.mark.parametrize("name, member, what", [
    ("long-name.tar.gz", "././@LongLink", "GNU long-name"),
    ("pax.tar.gz", "PaxHeaders/x", "pax"),
    ("long-link.tar.bz2", "././@LongLink", "GNU long-link"),
    ("pax-global.tar.xz", "pax_global_header", "pax global"),
    ("base256.tar", "././@LongLink", "GNU long-name"),
])
def test_1_a_header_bomb_is_refused_before_it_is_read(bombs, name, member, what,
                                                       tmp_path):
    limit = MiB
    result = run_child("OHSUMED", bombs[name], tmp_path / "home", limit)
    assert result["error"] == "UnsafeArchiveError", result
    message = result["message"]
    assert name in message and repr(member) in message and what in message
    assert "at most 65536 are read" in message
    # the bound: unpack_limit plus 64 MiB, whatever the archive says
    assert result["growth"] < limit + 64 * MiB, result["growth"] / MiB
    assert os.listdir(tmp_path / "home") == []


@pytest.mark.parametrize("fmt", ["zip", "tar.gz", "rar"])
def test_1_a_one_megabyte_bomb_of_any_format_stays_within_the_bound(fmt, tmp_path):
    """Members that expand (or claim to) far past the bound: refused at it."""
    if fmt == "rar" and not any(
            os.path.exists(os.path.join(d, "bsdtar"))
            for d in os.environ.get("PATH", "").split(os.pathsep)):
        pytest.skip("bsdtar is not installed")
    archive = tmp_path / f"x.{fmt}"
    if fmt == "zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            with zf.open("MQ2008/bomb.bin", "w", force_zip64=True) as f:
                for _ in range(512):
                    f.write(bytes(MiB))
        archive.write_bytes(buf.getvalue())
    elif fmt == "tar.gz":
        archive.write_bytes(gzip_of([header(b"MQ2008/bomb.bin", b"0", 512 * MiB)],
                                    512 * MiB))
    else:  # stored members cannot expand: a header that claims 4 GiB
        data = rar([("MQ2008/S1.txt", PARTS[1], "file")])
        archive.write_bytes(data.replace(
            len(PARTS[1]).to_bytes(4, "little") * 2,
            len(PARTS[1]).to_bytes(4, "little") + (2**32 - 1).to_bytes(4, "little")))
    assert archive.stat().st_size < 1.1 * MiB
    result = run_child("MQ2008", archive, tmp_path / "home", MiB)
    assert result["error"] in ("UnpackLimitError", "UnsafeArchiveError",
                               "ChecksumError", "DataError"), result
    assert archive.name in result["message"]
    assert result["growth"] < MiB + 64 * MiB, result["growth"] / MiB


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_long_names_below_the_cap_still_unpack(fmt, mq2008, tmp_path):
    prefix = "d" * 150 + "/é-" + "e" * 120 + "/MQ2008/"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=fmt) as tf:
        for name, data, _ in mq_entries(prefix):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(buf.getvalue())
    path = prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    for name, data, _ in mq_entries(""):
        assert (path / name).read_bytes() == data


def test_a_member_of_a_pax_size_is_bounded_like_any(mq2008, tmp_path):
    """A pax ``size`` record overrides the header's: the bound applies to it."""
    record = pax_record(b"size", b"%d" % 2**40)
    blocks = [header(b"PaxHeaders/big", b"x", len(record)),
              record + bytes(-len(record) % 512),
              header(b"MQ2008/big.bin", b"0", 0), bytes(1024)]
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(gzip_of(blocks))
    with pytest.raises(UnpackLimitError, match=r"'MQ2008/big\.bin'.*1099511627776"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")


def test_a_header_with_a_wrong_checksum_is_refused(mq2008, tmp_path):
    good = tar(mq_entries())
    raw = bytearray(zlib.decompress(good, 31))
    at = raw.index(b"MQ2008/S3.txt")
    raw[at + 8] = ord("4")  # S4 twice, unless the header checksum says no
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(gzip_of([bytes(raw)]))
    with pytest.raises(UnsafeArchiveError, match=r"'MQ2008/S4\.txt'.*wrong checksum"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert os.listdir(tmp_path / "home") == []


def test_data_after_the_end_of_archive_marker_is_refused(mq2008, tmp_path):
    raw = tar_body(mq_entries())
    raw += bytes(1024) + header(b"MQ2008/hidden.txt", b"0", 0) + bytes(1024)
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(gzip_of([raw]))
    with pytest.raises(UnsafeArchiveError, match="follows the tar end-of-archive"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")


# --------------------------------------------------------------------------
# Finding 10
# --------------------------------------------------------------------------


def test_10_a_member_nested_1200_levels_deep_is_refused_by_name(mq2008, tmp_path):
    deep = "MQ2008/" + "a/" * 1200 + "x.txt"
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(tar(mq_entries() + [(deep, b"x", "file")]))
    with pytest.raises(UnsafeArchiveError) as info:
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    message = str(info.value)
    assert "x.tar.gz" in message and repr(deep) in message
    assert "nested 1202 levels deep" in message
    assert os.listdir(tmp_path / "home") == []


@pytest.mark.parametrize("typ, what", [
    (b"V", "a GNU volume header"), (b"D", "a GNU dump directory"),
    (b"S", "a GNU sparse file"), (b"Q", "of unknown tar type b'Q'"),
])
def test_10_gnu_tar_types_are_named_for_what_they_are(typ, what, mq2008, tmp_path):
    raw = tar_body(mq_entries())
    raw += header(b"MQ2008/odd", typ, 0) + bytes(1024)
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(gzip_of([raw]))
    with pytest.raises(UnsafeArchiveError) as info:
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    message = str(info.value)
    assert f"'MQ2008/odd' is {what}" in message, message
    assert "device or FIFO" not in message


def test_a_directory_header_with_content_is_refused(mq2008, tmp_path):
    raw = tar_body(mq_entries())
    raw += header(b"MQ2008/dir/", b"5", 512) + bytes(512) + bytes(1024)
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(gzip_of([raw]))
    with pytest.raises(DataError, match="directory header that declares 512 bytes"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
