"""The one rule for every path the package opens (refimpl._io.open_regular):
a regular file only, refused at once (never a hang) when it is a FIFO, a
device, a socket or a directory."""

import os
import socket

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
