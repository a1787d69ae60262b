"""The one rule for every path the package opens (refimpl._io.open_regular):
a regular file only, refused at once (never a hang) when it is a FIFO, a
device, a socket or a directory."""

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from refimpl import _io
from refimpl import _jsonfile as js
from refimpl.exceptions import DataError


def test_regular_file_is_read(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("héllo\n", encoding="utf-8")
    with _io.open_regular(p) as f:
        assert f.read() == "héllo\n".encode()
    with _io.open_regular(p, "r") as f:
        assert f.read() == "héllo\n"
    # the descriptor is blocking again (O_NONBLOCK only guards the open)
    with _io.open_regular(p) as f:
        assert os.get_blocking(f.fileno())


def test_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "cache.json"
    os.mkfifo(fifo)
    with pytest.raises(_io.NotRegularFileError, match="is a FIFO"):
        _io.open_regular(fifo)
    with pytest.raises(js.MalformedFileError, match="FIFO"):
        js.read_json(fifo)
    with pytest.raises(DataError, match="FIFO"):
        _io.file_hash(fifo)


def test_directory_device_socket_are_refused(tmp_path):
    with pytest.raises(_io.NotRegularFileError, match="is a directory"):
        _io.open_regular(tmp_path)
    with pytest.raises(_io.NotRegularFileError, match="character device"):
        _io.open_regular("/dev/null")
    sock_path = tmp_path / "s"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock_path))
        # a socket cannot be opened at all (ENXIO): an OSError, never a hang
        with pytest.raises(OSError):
            _io.open_regular(sock_path)
    finally:
        s.close()


def test_symlink_refused_only_when_asked(tmp_path):
    target = tmp_path / "t"
    target.write_bytes(b"x")
    link = tmp_path / "l"
    link.symlink_to(target)
    with _io.open_regular(link) as f:
        assert f.read() == b"x"
    with pytest.raises(_io.NotRegularFileError, match="symbolic link"):
        _io.open_regular(link, follow_symlinks=False)


def test_open_directory(tmp_path):
    fd = _io.open_directory(tmp_path)
    os.close(fd)
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(_io.NotRegularFileError, match="not a directory"):
        _io.open_directory(fifo)
    with pytest.raises(FileNotFoundError):
        _io.open_directory(tmp_path / "missing")


def test_only_reading_modes():
    with pytest.raises(ValueError, match="reads only"):
        _io.open_regular("x", "wb")


# --------------------------------------------------------------------------
# Issue 34: hashing, whole-file reads, leftovers of killed writers
# --------------------------------------------------------------------------


@contextlib.contextmanager
def no_hang(seconds=30):
    """TimeoutError instead of blocking forever (in ``open`` of a FIFO)."""

    def alarm(signum, frame):
        raise TimeoutError(f"blocked for {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_file_digest_refuses_a_fifo_even_when_remembered(tmp_path):
    fifo = tmp_path / "S1.txt"
    os.mkfifo(fifo)
    memo = {}
    with no_hang(), pytest.raises(_io.NotRegularFileError, match="is a FIFO"):
        _io.file_digest(fifo, memo)
    assert memo == {}
    # a memo entry with the FIFO's own signature does not stand for it
    sig = _io.stat_signature(fifo)
    memo[str(fifo)] = {"stat": list(sig), "sha256": "0" * 64, "hashed_ns": 0}
    with no_hang(), pytest.raises(_io.NotRegularFileError, match="is a FIFO"):
        _io.file_digest(fifo, memo)
    with pytest.raises(_io.NotRegularFileError, match="character device"):
        _io.file_digest("/dev/zero", {})
    regular = tmp_path / "S2.txt"
    regular.write_bytes(b"abc")
    digest, sig = _io.file_digest(regular, memo)
    assert digest == hashlib.sha256(b"abc").hexdigest()
    assert sig == _io.stat_signature(regular)


def test_read_regular_returns_one_version_of_the_file(tmp_path, monkeypatch):
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 1000)
    data, st = _io.read_regular(p)
    assert bytes(data) == b"x" * 1000 and st.st_size == 1000
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert _io.read_regular(empty)[0] == bytearray()
    with no_hang(), pytest.raises(_io.NotRegularFileError):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        _io.read_regular(fifo)
    # the file shrinks, grows or is rewritten while it is read
    real_read = _io.read_exactly
    for change, detail in [
        (lambda: os.truncate(p, 10), "it ended after 10 of the 1,000 bytes"),
        (lambda: p.open("ab").write(b"y"), "it grew past its 1,000 bytes"),
        (lambda: p.open("r+b").write(b"z"), "it was modified"),
    ]:
        p.write_bytes(b"x" * 1000)

        def read(f, out, path, change=change):
            change()
            real_read(f, out, path)

        monkeypatch.setattr(_io, "read_exactly", read)
        with pytest.raises(_io.FileChangedError, match=detail) as info:
            _io.read_regular(p)
        assert isinstance(info.value, DataError)
        assert str(p) in str(info.value)


def test_read_exactly_reports_a_short_file(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"abc")
    out = bytearray(5)
    with open(p, "rb") as f, pytest.raises(_io.FileChangedError, match="after 3 of"):
        _io.read_exactly(f, out, p)


def _tmp_name(target: str, pid: int) -> str:
    return f".{target}.{pid}-{uuid.uuid4().hex[:12]}.tmp"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no process has it (until the PID wraps)


def test_remove_stale_tmp(tmp_path):
    now = time.time()
    dead = _dead_pid()

    def make(name, age, kind="file"):
        p = tmp_path / name
        if kind == "file":
            p.write_bytes(b"partial")
        elif kind == "dir":
            p.mkdir()
        else:
            p.symlink_to(tmp_path / "keep.json")
        if kind != "link":
            os.utime(p, (now - age, now - age))
        return p

    (tmp_path / "keep.json").write_text("{}")
    removed = {
        make(_tmp_name("a.npy", dead), _io.TMP_GRACE + 10),
        make(_tmp_name("b.json", os.getpid()), _io.TMP_MAX_AGE + 10),
        make(_tmp_name("c d.npy", dead), _io.TMP_MAX_AGE + 10),
    }
    kept = {
        make(_tmp_name("e.npy", dead), 1.0),  # within the grace
        make(_tmp_name("f.npy", os.getpid()), _io.TMP_GRACE + 10),  # alive
        make(".g.npy.123-notahexname!.tmp", _io.TMP_MAX_AGE + 10),
        make("h.tmp", _io.TMP_MAX_AGE + 10),
        make(_tmp_name("i.npy", dead), _io.TMP_MAX_AGE + 10, kind="dir"),
        make(_tmp_name("j.npy", dead), _io.TMP_MAX_AGE + 10, kind="link"),
        tmp_path / "keep.json",
    }
    assert set(_io.remove_stale_tmp(tmp_path)) == removed
    assert {p for p in tmp_path.iterdir()} == kept
    assert _io.remove_stale_tmp(tmp_path / "missing") == []
    assert _io.remove_stale_tmp(tmp_path / "keep.json") == []


def test_atomic_write_names_its_tmp_as_remove_stale_tmp_expects(tmp_path):
    seen = []

    def write(f):
        seen.extend(p.name for p in tmp_path.iterdir())
        f.write(b"x")

    _io.atomic_write(tmp_path / "e.npy", write)
    (name,) = seen
    assert _io._TMP_NAME.fullmatch(name) and f".{os.getpid()}-" in name
