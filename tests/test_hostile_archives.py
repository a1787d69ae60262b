"""Issue 24: nothing from an archive or a download lands outside its folder.

Regression tests for the holes a hostile mirror found (RAR links kept, the
RAR checker reading files named by absolute member names, no bound on
unpacking, duplicate members, stale partial downloads), then property tests
that generate hostile zip, tar and RAR archives (links to inside and outside,
absolute and ``..`` names, duplicates, case collisions, bombs) and check that
nothing outside a temporary root changes and that a refused archive leaves
neither a data set nor a partial directory.

The RAR archives are written here byte by byte (RAR 4.x, stored members, see
``test_datasets.make_rar``); unpacking them needs ``bsdtar``, which ``.ci/run``
installs in CI.
"""

import dataclasses
import hashlib
import io
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refimpl import datasets
from refimpl.data import load_letor_fold
from refimpl.datasets import REGISTRY, fetch_letor, prepare_letor
from refimpl.exceptions import DataError
from test_datasets import (  # noqa: F401  (fixtures)
    PARTS,
    fold_files,
    isolated_env,
    make_zip,
    mq_rar_content,
    server,
)

needs_bsdtar = pytest.mark.skipif(
    shutil.which("bsdtar") is None,
    reason="bsdtar (Debian package libarchive-tools) is not installed",
)


# --------------------------------------------------------------------------
# Archive writers that can say anything
# --------------------------------------------------------------------------

# An entry: (name, data, kind) with kind "file", "dir", "symlink" (data is
# the target), "hardlink" (data is the target), "fifo".


def _rar_block(htype, flags, body):
    tail = struct.pack("<BHH", htype, flags, 7 + len(body)) + body
    return struct.pack("<H", zlib.crc32(tail) & 0xFFFF) + tail


_RAR_MODE = {"file": 0o100644, "dir": 0o40755, "symlink": 0o120777,
             "hardlink": 0o100644, "fifo": 0o10644}


def rar(entries):
    """RAR 4.x of stored members, Unix host; any mode, any name."""
    out = [b"Rar!\x1a\x07\x00", _rar_block(0x73, 0, bytes(6))]
    for name, data, kind in entries:
        raw = name.encode()
        flags = 0x8000 | (0x00E0 if kind == "dir" else 0)
        body = struct.pack(
            "<IIBIIBBHI", len(data), len(data), 3, zlib.crc32(data),
            0x21, 20, 0x30, len(raw), _RAR_MODE[kind],
        ) + raw
        out += [_rar_block(0x74, flags, body), data]
    out.append(_rar_block(0x7B, 0x4000, b""))
    return b"".join(out)


def tar(entries, mode="w:gz"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data, kind in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
                         "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE}[kind]
            info.linkname = data.decode() if kind in ("symlink", "hardlink") else ""
            tf.addfile(info)
    return buf.getvalue()


def zip_(entries):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, kind in entries:
            if kind == "dir" and not name.endswith("/"):
                name += "/"
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = _RAR_MODE[kind] << 16
            with _quiet():
                zf.writestr(info, data)
    return buf.getvalue()


class _quiet:
    # zipfile warns "Duplicate name" for the duplicates built on purpose
    def __enter__(self):
        import warnings

        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


WRITERS = {"zip": (zip_, "x.zip"), "tar": (tar, "x.tar.gz"), "rar": (rar, "x.rar")}


def mq_entries(prefix="MQ2008/"):
    """The files of a good MQ2008 archive, as entries under ``prefix``."""
    return [(prefix + k[len("MQ2008/"):], v, "file")
            for k, v in mq_rar_content().items()]


def snapshot(root: Path) -> dict:
    """Every entry under ``root``: type, size, content hash, link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st_ = os.lstat(p)
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st_.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st_.st_mode):
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            else:
                out[rel] = ("other", stat.S_IFMT(st_.st_mode))
    return out


@pytest.fixture
def mq2008(monkeypatch):
    """The MQ2008 row without a download link, its partitions' sha256 known."""
    row = dataclasses.replace(
        REGISTRY["MQ2008"], urls=(),
        files=tuple((f"S{k}.txt", hashlib.sha256(v).hexdigest())
                    for k, v in PARTS.items()),
    )
    monkeypatch.setitem(REGISTRY, "MQ2008", row)
    return row


# --------------------------------------------------------------------------
# Issue 24, items 1-5: regression tests
# --------------------------------------------------------------------------


@needs_bsdtar
def test_1_rar_symlink_member_is_refused(mq2008, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "train.txt"
    secret.write_bytes(PARTS[1] + PARTS[2] + PARTS[3])
    before = snapshot(outside)
    entries = [e for e in mq_entries() if e[0] != "MQ2008/Fold1/train.txt"]
    entries.append(("MQ2008/Fold1/train.txt", str(secret).encode(), "symlink"))
    archive = tmp_path / "x.rar"
    archive.write_bytes(rar(entries))
    home = tmp_path / "home"
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", archive, data_home=home)
    assert "x.rar" in str(info.value) and "MQ2008/Fold1/train.txt" in str(info.value)
    assert "symbolic link" in str(info.value)
    assert not (home / "MQ2008").exists()
    assert sorted(os.listdir(home)) == []
    assert snapshot(outside) == before  # no .refimpl_cache beside it either


@needs_bsdtar
def test_1_rar_directory_symlink_member_is_refused(mq2008, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    archive = tmp_path / "x.rar"
    archive.write_bytes(rar(mq_entries() + [("MQ2008/lnk", str(elsewhere).encode(),
                                             "symlink")]))
    with pytest.raises(DataError, match=r"'MQ2008/lnk' is a symbolic link"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert not (tmp_path / "home" / "MQ2008").exists()


@needs_bsdtar
def test_2_absolute_rar_name_is_refused_without_reading_outside(mq2008, tmp_path):
    """The old checker stat'ed and CRC'ed ``dest / '/abs/path'``: the outside file."""
    outside = tmp_path / "outside.txt"
    data = b"a file the archive must not be able to probe\n"
    outside.write_bytes(data)
    archive = tmp_path / "x.rar"
    archive.write_bytes(rar(mq_entries() + [(str(outside), data, "file")]))
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert "absolute name" in str(info.value) and str(outside) in str(info.value)
    assert not (tmp_path / "home" / "MQ2008").exists()


def test_3_a_bomb_stops_at_the_bound_and_names_it(server, monkeypatch, tmp_path):
    """A zip whose member expands past the data set's bound is refused, fast."""
    files = fold_files()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        with zf.open("bomb.bin", "w", force_zip64=True) as f:
            block = bytes(1 << 20)
            for _ in range(64):
                f.write(block)
    archive = buf.getvalue()
    assert len(archive) < 1 << 20
    server.routes["/x.zip"] = archive
    row = dataclasses.replace(
        REGISTRY["MSLR-WEB10K"], urls=(server.url + "/x.zip",),
        archive_size=None, files=(),
        archive_hash="sha256:" + hashlib.sha256(archive).hexdigest(),
    )
    monkeypatch.setitem(REGISTRY, "MSLR-WEB10K", row)
    monkeypatch.setenv("REFIMPL_UNPACK_LIMIT", "8M")
    home = tmp_path / "home"
    with pytest.raises(DataError) as info:
        fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    message = str(info.value)
    assert "bomb.bin" in message and f"bound of {8 << 20} bytes" in message
    assert "unpack_limit=" in message and "REFIMPL_UNPACK_LIMIT" in message
    assert os.listdir(home) == []
    # the bound can be raised
    path = fetch_letor("MSLR-WEB10K", data_home=home, progress=False,
                       unpack_limit=128 << 20)
    assert (path / "bomb.bin").stat().st_size == 64 << 20


@pytest.mark.parametrize("fmt", ["zip", "tar"])
def test_4_duplicate_member_is_refused(fmt, mq2008, tmp_path):
    write, name = WRITERS[fmt]
    entries = mq_entries() + [("MQ2008/Fold2/test.txt", b"0 qid:1 1:1\n", "file")]
    archive = tmp_path / name
    archive.write_bytes(write(entries))
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert "MQ2008/Fold2/test.txt" in str(info.value)
    assert "appears twice" in str(info.value) and name in str(info.value)
    assert os.listdir(tmp_path / "home") == []


CHILD = textwrap.dedent("""
    import dataclasses, sys
    from refimpl import datasets
    row = dataclasses.replace(datasets.REGISTRY["MSLR-WEB10K"], urls=(sys.argv[1],),
                              archive_size=None, archive_hash=sys.argv[3], files=())
    datasets.REGISTRY["MSLR-WEB10K"] = row
    datasets.fetch_letor("MSLR-WEB10K", data_home=sys.argv[2], progress=False)
""")


def test_5_a_killed_download_is_cleaned_up_by_the_next_fetch(server, monkeypatch,
                                                             tmp_path):
    files = fold_files()
    archive = make_zip(files)
    stall = server.stall = []
    server.routes["/x.zip"] = archive
    home = tmp_path / "home"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, server.url + "/x.zip", str(home),
         "sha256:" + hashlib.sha256(archive).hexdigest()],
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    try:
        deadline = time.monotonic() + 60
        parts = []
        while time.monotonic() < deadline:
            parts = list(home.glob(".MSLR-WEB10K.part-*")) if home.exists() else []
            if parts and stall:
                break
            time.sleep(0.05)
        assert parts and stall, "the child never started its download"
        time.sleep(0.3)  # let it write what it received
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        server.release()
    assert [p.name for p in home.glob(".MSLR-WEB10K.part-*")] == [parts[0].name]
    row = dataclasses.replace(REGISTRY["MSLR-WEB10K"], urls=(server.url + "/x.zip",),
                              archive_size=None, files=(),
                              archive_hash="sha256:" + hashlib.sha256(archive).hexdigest())
    monkeypatch.setitem(REGISTRY, "MSLR-WEB10K", row)
    server.stall = None
    path = fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    assert sorted(os.listdir(home)) == ["MSLR-WEB10K"]
    assert load_letor_fold(path.name, 2, root=home).test.X.shape[0] == (
        files["Fold2/test.txt"].count(b"\n"))


def test_5_two_fetches_at_once_keep_each_others_work(server, tmp_path):
    """Each fetch's cleanup runs while the others download: none is removed."""
    files = fold_files()
    archive = make_zip(files)
    server.routes["/x.zip"] = archive
    stall = server.stall = []
    home = tmp_path / "home"
    children = [subprocess.Popen(
        [sys.executable, "-c", CHILD, server.url + "/x.zip", str(home),
         "sha256:" + hashlib.sha256(archive).hexdigest()],
        env={**os.environ, "PYTHONHASHSEED": "0"}, stderr=subprocess.PIPE)
        for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while len(stall) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(home.glob(".MSLR-WEB10K.part-*"))) == 2
    finally:
        server.release()
        errors = [c.communicate(timeout=60)[1] for c in children]
    assert [c.returncode for c in children] == [0, 0], errors
    assert os.listdir(home) == ["MSLR-WEB10K"]


def test_5_a_live_fetch_is_left_alone(tmp_path):
    """A locked work directory (a fetch in progress) survives the cleanup."""
    home = tmp_path / "home"
    with datasets._workdir(home, "MQ2008") as live:
        (live / "download").mkdir()
        with datasets._workdir(home, "MQ2008") as other:
            assert live.exists() and other != live
        assert live.exists()
    assert os.listdir(home) == []


def test_5_a_directory_orphaned_before_its_lock_is_removed_too(tmp_path):
    home = tmp_path / "home"
    orphan = home / ".MQ2008.init-abc123"
    orphan.mkdir(parents=True)
    (orphan / "x").write_bytes(b"partial")
    recent = home / ".MQ2008.init-def456"  # may be a fetch about to lock it
    recent.mkdir()
    old = time.time() - 3600
    os.utime(orphan, (old, old))
    with datasets._workdir(home, "MQ2008"):
        assert not orphan.exists() and recent.exists()


@needs_bsdtar
def test_a_rar_member_longer_than_its_data_is_caught(mq2008, tmp_path):
    """A header (with a valid header CRC) claiming more bytes than follow."""
    good = rar(mq_entries())
    data = PARTS[5]
    raw = b"MQ2008/extra.txt"
    body = struct.pack("<IIBIIBBHI", len(data), len(data) + 64, 3, zlib.crc32(data),
                       0x21, 20, 0x30, len(raw), 0o100644) + raw
    end = good.rindex(_rar_block(0x7B, 0x4000, b""))
    archive = tmp_path / "x.rar"
    archive.write_bytes(good[:end] + _rar_block(0x74, 0x8000, body) + data
                        + good[end:])
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    # bsdtar itself exits 0 here: the cut by the header sizes is what notices
    assert "x.rar" in str(info.value)
    assert "before the end of member 'MQ2008/extra.txt'" in str(info.value)
    assert os.listdir(tmp_path / "home") == []


# --------------------------------------------------------------------------
# Unit checks of the one unpacking path
# --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["zip", "tar", "rar"])
@pytest.mark.parametrize("bad, why", [
    (("MQ2008/../../evil.txt", b"x", "file"), "'..' component"),
    (("/tmp/evil-h24.txt", b"x", "file"), "absolute name"),
    (("MQ2008/Fold1/l", b"/etc/passwd", "symlink"), "symbolic link"),
    (("MQ2008/Fold1/l", b"MQ2008/S1.txt", "hardlink"), "hard link"),
    (("MQ2008/Fold1/f", b"", "fifo"), "FIFO"),
    (("MQ2008/fold1/TRAIN.txt", b"x", "file"), "when case is ignored"),
    (("MQ2008/S1.txt/x", b"x", "file"), "both as a file and as a directory"),
])
def test_every_format_refuses_the_same_members(fmt, bad, why, mq2008, tmp_path):
    if fmt == "rar" and shutil.which("bsdtar") is None:
        pytest.skip("bsdtar is not installed")
    if fmt in ("zip", "rar") and bad[2] == "hardlink":
        pytest.skip("no hard links in zip or RAR 4")
    write, name = WRITERS[fmt]
    archive = tmp_path / name
    archive.write_bytes(write(mq_entries() + [bad]))
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert why in str(info.value), str(info.value)
    assert repr(bad[0]) in str(info.value) and name in str(info.value)
    assert os.listdir(tmp_path / "home") == []
    assert not Path("/tmp/evil-h24.txt").exists()


@needs_bsdtar
def test_rar_directories_and_a_root_entry_are_fine(mq2008, tmp_path):
    entries = [("MQ2008", b"", "dir"), ("MQ2008/Fold1", b"", "dir")] + mq_entries()
    archive = tmp_path / "x.rar"
    archive.write_bytes(rar(entries))
    path = prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert (path / "S4.txt").read_bytes() == PARTS[4]
    for p in path.rglob("*"):
        assert stat.S_IMODE(p.stat().st_mode) in (0o644, 0o755)


def test_tar_root_entry_and_dot_slash_names(mq2008, tmp_path):
    entries = [("./", b"", "dir")] + mq_entries("./MQ2008/")
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(tar(entries))
    path = prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert (path / "Fold3" / "vali.txt").is_file()


def test_unpack_limit_from_the_environment(mq2008, monkeypatch, tmp_path):
    archive = tmp_path / "x.zip"
    archive.write_bytes(zip_(mq_entries()))
    monkeypatch.setenv("REFIMPL_UNPACK_LIMIT", "1K")
    with pytest.raises(DataError, match=r"above the bound of 1024 bytes "
                       r"\(REFIMPL_UNPACK_LIMIT=1K\)"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    monkeypatch.setenv("REFIMPL_UNPACK_LIMIT", "lots")
    with pytest.raises(DataError, match="is not a size"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    monkeypatch.setenv("REFIMPL_UNPACK_LIMIT", "1G")
    assert prepare_letor("MQ2008", archive, data_home=tmp_path / "home").is_dir()


@pytest.mark.parametrize("fmt", ["zip", "tar"])
def test_the_data_set_bound_applies(fmt, mq2008, monkeypatch, tmp_path):
    """A 2 GiB member declared in a small archive: refused before writing."""
    monkeypatch.setitem(REGISTRY, "MQ2008",
                        dataclasses.replace(mq2008, unpack_limit=1 << 20))
    archive = tmp_path / WRITERS[fmt][1]
    buf = io.BytesIO()
    if fmt == "zip":
        with zipfile.ZipFile(buf, "w") as zf:  # stored: sizes in plain sight
            zf.writestr("MQ2008/S1.txt", PARTS[1])
        data = buf.getvalue().replace(
            struct.pack("<I", len(PARTS[1])), struct.pack("<I", 2**31 - 1))
        archive.write_bytes(data)
    else:
        archive.write_bytes(tar(mq_entries() + [("MQ2008/big.bin", bytes(2 << 20),
                                                 "file")]))
    with pytest.raises(DataError, match=r"above the bound of 1048576 bytes \(the "
                       r"bound of MQ2008 in REGISTRY\)"):
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    assert os.listdir(tmp_path / "home") == []


def test_every_registry_row_has_a_bound():
    for row in REGISTRY.values():
        assert row.unpack_limit is not None and row.unpack_limit > 2**20


# --------------------------------------------------------------------------
# Property tests: hostile archives of all three formats
# --------------------------------------------------------------------------

_names = st.sampled_from([
    "MQ2008/x.txt", "MQ2008/Fold1/x.txt", "MQ2008/../x.txt", "../x.txt",
    "MQ2008/../../outside/planted.txt", "/ABS/planted.txt", "MQ2008//./y.txt",
    "MQ2008/S1.txt", "MQ2008/s1.TXT", "MQ2008/Fold1", "MQ2008\\..\\..\\z.txt",
    "MQ2008/Fold1/train.txt", "../../../outside/planted.txt", "../../../x.txt",
])
_targets = st.sampled_from([
    "../outside/secret.txt", "OUTSIDE/secret.txt", "MQ2008/S2.txt", "S2.txt",
    "/etc/hostname", "../../..",
])
_extra = st.one_of(
    st.tuples(_names, st.binary(max_size=16), st.just("file")),
    st.tuples(_names, st.just(b""), st.just("dir")),
    st.tuples(_names, _targets.map(str.encode),
              st.sampled_from(["symlink", "hardlink"])),
    st.tuples(_names, st.just(b""), st.just("fifo")),
)


def _hostile_case(fmt, extras, bomb, tmp_path):
    root = tmp_path / "root"
    shutil.rmtree(root, ignore_errors=True)
    (root / "outside").mkdir(parents=True)
    (root / "outside" / "secret.txt").write_bytes(PARTS[1] + PARTS[2] + PARTS[3])
    home = root / "home"
    home.mkdir()
    entries = mq_entries() + [
        (n.replace("/ABS", str(root / "outside")), d.replace(
            b"OUTSIDE", str(root / "outside").encode()), k)
        for n, d, k in extras
    ]
    if bomb:
        entries.append(("MQ2008/bomb.bin", bytes(1 << 20), "file"))
    write, name = WRITERS[fmt]
    archive = root / name
    archive.write_bytes(write(entries))
    return root, home, archive


def _prepare_hostile(root, home, archive):
    """prepare_letor's result (None if refused); nothing outside the data
    home changed either way."""
    before = snapshot(root)
    try:
        path = prepare_letor("MQ2008", archive, data_home=home, unpack_limit=1 << 19)
    except DataError:
        path = None
    after = snapshot(root)
    outside = {k: v for k, v in after.items() if not k.startswith("home")}
    assert outside == {k: v for k, v in before.items() if not k.startswith("home")}
    return path, after


def _run_hostile(fmt, extras, bomb, tmp_path):
    root, home, archive = _hostile_case(fmt, extras, bomb, tmp_path)
    path, after = _prepare_hostile(root, home, archive)
    if path is None:
        assert os.listdir(home) == []  # no data set, no partial directory
        return
    assert os.listdir(home) == ["MQ2008"]
    for rel, (kind, _) in after.items():
        if rel.startswith("home/"):  # only regular files and directories
            assert kind == "file" or (kind == "other" and (root / rel).is_dir())
    assert not bomb


_hostile = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@_hostile
@given(extras=st.lists(_extra, max_size=3), bomb=st.booleans())
def test_hostile_zip(extras, bomb, mq2008, tmp_path):
    _run_hostile("zip", extras, bomb, tmp_path)


@_hostile
@given(extras=st.lists(_extra, max_size=3), bomb=st.booleans())
def test_hostile_tar(extras, bomb, mq2008, tmp_path):
    _run_hostile("tar", extras, bomb, tmp_path)


@needs_bsdtar
@_hostile
@given(extras=st.lists(_extra, max_size=3), bomb=st.booleans())
def test_hostile_rar(extras, bomb, mq2008, tmp_path):
    _run_hostile("rar", extras, bomb, tmp_path)


# --------------------------------------------------------------------------
# Issue 34: header bombs, corrupt compressed streams, checksum-less members
# --------------------------------------------------------------------------


def _meta_header(typ: bytes, size: int) -> bytes:
    """A GNU long-name/long-link or pax header declaring ``size`` bytes."""
    h = bytearray(512)
    h[:13] = b"././@LongLink"
    h[100:108] = b"0000644\x00"
    h[124:136] = (b"\x80" + size.to_bytes(11, "big") if size >= 8**11
                  else b"%011o\x00" % size)
    h[156:157] = typ
    h[257:265] = b"ustar  \x00"
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\x00 " % sum(h)
    return bytes(h)


_COMPRESS = {
    "x.tar.gz": lambda b: zlib.compress(b, wbits=31),
    "x.tar.bz2": __import__("bz2").compress,
    "x.tar.xz": __import__("lzma").compress,
    "x.tar": lambda b: b,
}


@_hostile
@given(fmt=st.sampled_from(sorted(_COMPRESS)),
       extras=st.lists(_extra, max_size=2),
       bomb=st.one_of(st.none(), st.tuples(st.sampled_from([b"L", b"K", b"x", b"g"]),
                                           st.sampled_from([2**16 + 1, 2**29, 2**40]))),
       flip=st.one_of(st.none(), st.floats(0, 1, exclude_max=True)))
def test_hostile_tar_streams(fmt, extras, bomb, flip, mq2008, tmp_path):
    """Header bombs, corrupted streams and checksum-less (plain tar) members
    on top of the hostile entries: refused, or exactly the good files."""
    root, home, _ = _hostile_case("tar", extras, False, tmp_path)
    entries = mq_entries() + [
        (n.replace("/ABS", str(root / "outside")), d.replace(
            b"OUTSIDE", str(root / "outside").encode()), k) for n, d, k in extras]
    raw = bytearray(tar(entries, mode="w"))
    if bomb is not None:  # before the last member: its name or content
        at = raw.rindex(tar([entries[-1]], mode="w")[:100])
        raw[at:at] = _meta_header(*bomb) + bytes(512)
    data = bytearray(_COMPRESS[fmt](bytes(raw)))
    if flip is not None:
        data[int(flip * len(data))] ^= 0x10
    archive = root / fmt
    archive.write_bytes(bytes(data))
    path, _ = _prepare_hostile(root, home, archive)
    if path is None:
        assert os.listdir(home) == []
        return
    assert bomb is None and fmt != "x.tar"  # a bomb or no checksum: refused
    for name, content, _ in mq_entries():
        assert (home / name).read_bytes() == content
