"""Files: content hashes, fingerprints of file versions, atomic writes.

The one home of what the parse cache (:mod:`refimpl.data`), the data-set
manager (:mod:`refimpl.datasets`), the experiment runner and its snapshots
(:mod:`refimpl.experiments`) do with files (the schema-checked JSON reader
sits above it, in :mod:`refimpl._jsonfile`, which opens files through
:func:`open_regular`):

* :func:`file_hash`: a file's SHA-256 (or another :mod:`hashlib` digest);
* :func:`json_sha256`: the SHA-256 of an object's canonical JSON (the
  checksums of stored entries);
* :func:`stat_signature`, :func:`is_racy` and :func:`file_digest`: a file's
  hash computed once per version of the file (its size, mtime, ctime and
  inode), trusted only if the file was not modified within :data:`RACY_NS`
  of being hashed (git's "racily clean" rule); :mod:`refimpl._digest_memo`
  keeps such hashes across runs in a checksummed JSON file;
* :func:`atomic_write` and :func:`atomic_write_json`: a temporary file in
  the target's directory, then :func:`os.replace`, so that a reader sees
  the old file or the new one, and no temporary file is left behind
  whatever happens; ``durable=True`` also flushes the content to disk
  (``fsync``) before the rename, for files the project promises to keep
  (committed snapshots), not for caches that can be recomputed;
* :func:`open_regular` and :func:`open_directory`: the one rule for every
  path the package opens: a regular file (or a directory) only, checked on
  the open descriptor, so that a FIFO, a device or a socket planted where a
  file belongs is an error at once, never a hang;
* :func:`read_regular` and :func:`read_exactly`: a whole file read into
  memory with ``read()`` (never a shared memory map, whose pages vanish
  when another process truncates the file, killing the reader with
  ``SIGBUS``), a file that changes meanwhile being a
  :class:`FileChangedError`;
* :func:`remove_stale_tmp`: the temporary files of :func:`atomic_write`
  that a killed process left in a folder, removed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import time
import uuid
import warnings
from pathlib import Path

from .exceptions import DataError

__all__ = [
    "RACY_NS",
    "atomic_write",
    "atomic_write_json",
    "check_regular",
    "file_digest",
    "FileChangedError",
    "file_hash",
    "is_racy",
    "json_sha256",
    "NotRegularFileError",
    "open_directory",
    "open_regular",
    "read_exactly",
    "read_regular",
    "remove_stale_tmp",
    "stat_signature",
]

#: A hash remembered for a file is trusted only if the file's mtime is this
#: much older than the moment it was hashed: a file rewritten within the
#: filesystem's timestamp granularity of being hashed could otherwise keep
#: its size and mtime with a new content.
RACY_NS = 2_000_000_000
_CHUNK = 1 << 20
# read() size of read_exactly: large enough that the system call costs
# nothing, small enough for any platform's read() limit.
_READ_CHUNK = 1 << 26


class NotRegularFileError(DataError, OSError):
    """A path the package opens is a FIFO, device, socket or directory.

    Both a :class:`~refimpl.exceptions.DataError` (bad input, named) and an
    :class:`OSError` (what ``open`` raises for a path it cannot use), so
    that callers handling either see it.
    """


class FileChangedError(DataError):
    """A file changed (was truncated, extended or rewritten) while it was read."""

    def __init__(self, path, detail: str = ""):
        detail = f" ({detail})" if detail else ""
        super().__init__(f"{path} changed while it was read{detail}; run again "
                         "once whatever writes it has finished")
        self.path = os.fspath(path)


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a regular file")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path, st: os.stat_result) -> os.stat_result:
    """``st`` (the status of ``path``) if it is a regular file's.

    Raises
    ------
    NotRegularFileError
        Naming ``path`` and what it is (a FIFO, a directory, ...).
    """
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(
            f"{os.fspath(path)} is {_kind_of(st.st_mode)}; a regular file is "
            "expected here")
    return st


def open_regular(path, mode: str = "rb", *, follow_symlinks: bool = True,
                 encoding: str | None = None):
    """Open ``path`` for reading, refusing anything but a regular file.

    The file is opened with ``O_NONBLOCK`` (so that opening a FIFO with no
    writer returns at once instead of blocking forever) and its type is
    checked on the descriptor with :func:`os.fstat` (so that the path cannot
    be swapped between the check and the open); ``O_NONBLOCK`` is then
    cleared.  ``follow_symlinks=False`` also refuses a symbolic link
    (``O_NOFOLLOW``).  Only reading modes (``"rb"``, ``"r"``) are offered:
    writes go through :func:`atomic_write`, which creates its own file.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    NotRegularFileError
        ``path`` is a FIFO, device, socket or directory (or, with
        ``follow_symlinks=False``, a symbolic link); the message names it.
    OSError
        Any other failure to open (permissions, ...).
    """
    if mode not in ("rb", "r"):
        raise ValueError(f"open_regular reads only ('rb' or 'r'), not {mode!r}")
    path = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_symlinks and os.path.islink(path):
            raise NotRegularFileError(
                f"{path} is a symbolic link; a regular file is expected here"
            ) from None
        if isinstance(exc, IsADirectoryError):
            raise NotRegularFileError(
                f"{path} is a directory; a regular file is expected here") from None
        raise
    try:
        check_regular(path, os.fstat(fd))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    if mode == "r":
        return io.TextIOWrapper(f, encoding=encoding or "utf-8")
    return f


def open_directory(path) -> int:
    """A read-only descriptor of the directory ``path`` (for ``flock``).

    Opened with ``O_NONBLOCK | O_DIRECTORY``, so that a FIFO or device at
    ``path`` is refused at once (``NotRegularFileError``) instead of blocking.
    """
    path = os.fspath(path)
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_DIRECTORY", 0))
    try:
        fd = os.open(path, flags)
    except NotADirectoryError:
        raise NotRegularFileError(f"{path} is not a directory") from None
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise NotRegularFileError(f"{path} is {_kind_of(st.st_mode)}, not a directory")
    return fd


def _version(st: os.stat_result) -> tuple:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def read_exactly(f, out, path) -> None:
    """Fill the writable buffer ``out`` from the binary file ``f``.

    ``read()`` in chunks (``readinto``), never a memory map: a file
    truncated meanwhile gives a short read, reported here, where a mapped
    page would have vanished and killed the process with ``SIGBUS``.

    Raises
    ------
    FileChangedError
        The file ended before ``out`` was full (``path`` names it).
    """
    view = memoryview(out).cast("B")
    done, total = 0, view.nbytes
    while done < total:
        n = f.readinto(view[done:done + _READ_CHUNK])
        if not n:
            raise FileChangedError(
                path, f"it ended after {done:,} of the {total:,} bytes it had")
        done += n


def read_regular(path) -> tuple[bytearray, os.stat_result]:
    """The whole content of the regular file ``path``, and its version.

    Opened by :func:`open_regular` (a FIFO or device is refused at once),
    read with :func:`read_exactly` into one buffer of the size
    :func:`os.fstat` gives, then checked: nothing left to read, and size,
    mtime, ctime and inode as at the start.  The bytes returned are
    therefore one version of the file, the one the returned
    :class:`os.stat_result` describes, even when another process truncates
    or rewrites the file meanwhile.

    Raises
    ------
    FileNotFoundError, NotRegularFileError
        As :func:`open_regular`.
    FileChangedError
        The file was truncated, extended or modified while it was read.
    """
    with open_regular(path) as f:
        st = os.fstat(f.fileno())
        buf = bytearray(st.st_size)
        read_exactly(f, buf, path)
        if f.read(1):
            raise FileChangedError(path, f"it grew past its {st.st_size:,} bytes")
        if _version(os.fstat(f.fileno())) != _version(st):
            raise FileChangedError(path, "it was modified")
    return buf, st


# The temporary name atomic_write gives: ".<name>.<pid>-<12 hex>.tmp".
_TMP_NAME = re.compile(r"\..+\.([0-9]{1,10})-[0-9a-f]{12}\.tmp", re.DOTALL)
#: A temporary file of a live process is removed after this many seconds
#: (its PID may have been reused, or belong to another machine's process).
TMP_MAX_AGE = 3600.0
#: A temporary file whose process is gone is left alone for this many
#: seconds: a process of another PID namespace (a container sharing the
#: folder) may still be writing it.
TMP_GRACE = 60.0


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, run by another user
        return True
    except (OverflowError, OSError):
        return False
    return True


def remove_stale_tmp(folder, *, max_age: float = TMP_MAX_AGE,
                     grace: float = TMP_GRACE) -> list[Path]:
    """Remove the temporary files that killed writers left in ``folder``.

    :func:`atomic_write` removes its temporary file whatever happens to the
    writing process, except ``SIGKILL`` (or a power cut), which leave a
    ``.<name>.<pid>-<hex>.tmp`` file behind.  This removes those (regular
    files of exactly that name, nothing else) whose process is no longer
    alive and which were not modified for ``grace`` seconds, and any older
    than ``max_age`` seconds.  Call it before writing to a folder of
    caches; a folder that does not exist, or a file that cannot be removed,
    is skipped without an error (another process may be cleaning too).

    Returns
    -------
    list of Path
        The files removed.
    """
    folder = Path(folder)
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TMP_NAME.fullmatch(entry.name)
        if m is None:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        age = now - st.st_mtime
        if age > max_age or (age > grace and not _pid_alive(int(m[1]))):
            try:
                os.unlink(entry.path)
            except OSError:
                continue
            removed.append(folder / entry.name)
    return removed


def file_hash(path, algorithm: str = "sha256") -> str:
    """Hex digest of a file's content (``algorithm``: a :mod:`hashlib` name)."""
    digest = hashlib.new(algorithm)
    with open_regular(path) as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def json_sha256(obj) -> str:
    """SHA-256 of ``obj``'s canonical JSON (sorted keys, no spaces)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def stat_signature(path) -> tuple:
    """``(size, mtime_ns, ctime_ns, inode)``: what identifies a file's version."""
    return _signature(os.stat(path))


def _signature(st: os.stat_result) -> tuple:
    return (int(st.st_size), int(st.st_mtime_ns), int(st.st_ctime_ns), int(st.st_ino))


def is_racy(mtime_ns: int, hashed_ns: int) -> bool:
    """Whether a file modified at ``mtime_ns`` was hashed too close after it."""
    return mtime_ns >= hashed_ns - RACY_NS


def file_digest(path, memo: dict):
    """SHA-256 of a file's content, hashed once per version of the file.

    ``memo`` maps an absolute path to ``{"stat", "sha256", "hashed_ns"}``:
    the file's :func:`stat_signature` when it was hashed, the hash, and
    when; it is used while the signature is unchanged and the file was not
    modified within :data:`RACY_NS` of being hashed, and updated otherwise.

    Returns
    -------
    (str, tuple)
        The hex digest and the stat signature it belongs to.

    Raises
    ------
    NotRegularFileError
        ``path`` is a FIFO, device, socket or directory (checked before the
        memo is consulted, so a remembered hash never stands for one).
    FileChangedError
        The file changed while it was being read.
    """
    path = os.path.abspath(path)
    st = check_regular(path, os.stat(path))
    sig = _signature(st)
    known = memo.get(path)
    if (known is not None and tuple(known["stat"]) == sig
            and not is_racy(known["stat"][1], known["hashed_ns"])):
        return known["sha256"], sig
    started = time.time_ns()
    digest = file_hash(path)
    if stat_signature(path) != sig:
        raise FileChangedError(path)
    memo[path] = {"stat": list(sig), "sha256": digest, "hashed_ns": started}
    return digest, sig


def atomic_write(path, write, *, binary: bool = True, durable: bool = False) -> None:
    """Create or replace ``path`` with what ``write(f)`` writes to an open file.

    Through a temporary file in the same directory (created if missing),
    renamed onto ``path`` by :func:`os.replace`; the temporary file is
    removed whatever happens (an error, a signal).  The new file's mode is
    that of :func:`open` (``0o666`` less the umask).  ``durable``: ``fsync``
    the content before the rename and the directory after it, so that after
    a crash the file is the old one or the complete new one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # created as open() creates a file (mode 0o666 less the umask), unlike
    # tempfile.mkstemp's 0o600: the file replaced may be read by others
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb" if binary else "w",
                       **({} if binary else {"encoding": "utf-8"})) as f:
            write(f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable:
            _fsync_directory(path.parent)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _fsync_directory(folder: Path) -> None:
    """Flush a directory's entries (the rename) where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_json(path, obj, *, durable: bool = False, **dump_kw) -> None:
    """:func:`atomic_write` of ``json.dump(obj, **dump_kw)`` and a newline."""
    def write(f):
        json.dump(obj, f, **dump_kw)
        f.write("\n")

    atomic_write(path, write, binary=False, durable=durable)
