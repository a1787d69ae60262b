"""What the file system can do to load_letor (issue 34, findings 4, 5, 8, 10).

A FIFO or a device where the data or its parse cache belongs, a file
truncated or rewritten while it is read, a value float32 cannot hold, links
whose targets share a name, the temporary files of a killed writer: each is
an error naming the file, or a warning and a rebuild, never a hang, a
signal, or a number changed without a word.
"""

import hashlib
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from refimpl import _io
from refimpl import data as rdata
from refimpl.data import load_letor, make_synthetic_letor, write_letor
from refimpl.exceptions import DataError
from test_open_regular import no_hang

ROOT = Path(__file__).resolve().parents[1]


def _dataset(path, seed=0):
    path.parent.mkdir(parents=True, exist_ok=True)
    d = make_synthetic_letor(4, docs_per_query=(2, 5), seed=seed)
    write_letor(path, d.X, d.y, d.qid, [f"doc {i}" for i in range(len(d.y))])
    return d


def _entry(path, dtype="float64"):
    real = Path(path).resolve()
    key = hashlib.sha256(str(real).encode()).hexdigest()[:16]
    return f"{key}-{real.name}.{dtype}"


def _no_parsing(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the text was parsed again")

    monkeypatch.setattr(rdata, "_parse", fail)


# --------------------------------------------------------------------------
# Finding 4: FIFOs and devices
# --------------------------------------------------------------------------


def test_a_fifo_or_device_as_the_data_file_is_a_data_error(tmp_path):
    fifo = tmp_path / "train.txt"
    os.mkfifo(fifo)
    with no_hang(120), pytest.raises(DataError, match=r"train\.txt is a FIFO"):
        load_letor(fifo)
    with no_hang(), pytest.raises(DataError, match="FIFO"):
        load_letor(fifo, cache=False)
    device = tmp_path / "dev.txt"
    device.symlink_to("/dev/zero")  # endless: read whole, it would never end
    with no_hang(), pytest.raises(DataError, match="character device"):
        load_letor(device)
    with pytest.raises(DataError, match="directory"):
        load_letor(tmp_path)


@pytest.mark.parametrize("part", ["X.npy", "y.npy", "qid.npy", "comments.npy", "json"])
def test_a_fifo_in_the_parse_cache_is_a_warning_and_a_rebuild(tmp_path, part):
    path = tmp_path / "d.txt"
    d = _dataset(path)
    load_letor(path)
    (target,) = (tmp_path / ".refimpl_cache").glob(f"*.float64.{part}")
    assert target.is_file()
    target.unlink()
    os.mkfifo(target)
    with no_hang(120), pytest.warns(RuntimeWarning,
                                    match="corrupt or inconsistent cache"):
        X, y, qid, comments = load_letor(path, return_comments=True)
    np.testing.assert_array_equal(X, d.X)
    assert comments[0] == "doc 0"
    assert target.is_file()  # the FIFO was replaced by the rebuilt entry
    with no_hang(), warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(load_letor(path)[0], d.X)


def test_cache_arrays_are_read_not_mapped(tmp_path):
    """A cache array truncated after the load cannot take the arrays with
    it (a memory map would, by SIGBUS when the pages are next touched)."""
    path = tmp_path / "d.txt"
    d = _dataset(path)
    load_letor(path)
    X = load_letor(path)[0]  # from the cache
    assert X.base is None or not isinstance(X.base, np.memmap)
    os.truncate(tmp_path / ".refimpl_cache" / f"{_entry(path)}.X.npy", 0)
    np.testing.assert_array_equal(X, d.X)  # still whole, in memory
    with pytest.warns(RuntimeWarning, match="corrupt or inconsistent cache"):
        np.testing.assert_array_equal(load_letor(path)[0], d.X)


# --------------------------------------------------------------------------
# Finding 5: a file truncated or rewritten while it is read
# --------------------------------------------------------------------------


def test_a_file_that_changes_during_the_read_is_an_error(tmp_path, monkeypatch):
    """Deterministic stand-ins for the race: the file shrinks, grows, or is
    rewritten in place while its bytes are copied."""
    path = tmp_path / "d.txt"
    _dataset(path)
    text = path.read_bytes()
    real_read = _io.read_exactly

    def during(change):
        def read(f, out, p):
            change()
            real_read(f, out, p)
        return read

    for change, detail in [
        (lambda: os.truncate(path, len(text) // 2), "it ended after"),
        (lambda: path.open("ab").write(b"0 qid:9 1:1\n"), "it grew past"),
        (lambda: path.open("r+b").write(text.replace(b"qid:1 ", b"qid:7 ", 1)),
         "it was modified"),
    ]:
        path.write_bytes(text)
        monkeypatch.setattr(_io, "read_exactly", during(change))
        for cache in (True, False):
            path.write_bytes(text)
            with pytest.raises(_io.FileChangedError, match=detail) as info:
                load_letor(path, cache=cache)
            assert str(path) in str(info.value)
            assert "changed while it was read" in str(info.value)
    monkeypatch.undo()
    # nothing of the torn reads was cached: the file as it is now loads
    path.write_bytes(text)
    assert load_letor(path)[2][0] == 1


_LOADER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from refimpl.data import load_letor
    from refimpl.exceptions import DataError
    path, small, stop = (Path(a) for a in sys.argv[1:4])
    load_letor(small, cache=False)  # compiled (or loaded from numba's cache)
    print("ready", flush=True)
    for i in range(int(sys.argv[4])):
        try:
            load_letor(path, cache=(i % 2 == 0))
            print("ok", flush=True)
        except DataError as exc:
            print("DataError", str(exc)[:200].replace("\\n", " "), flush=True)
        if stop.exists():
            break
""")


def test_truncating_the_file_during_loads_never_kills_the_loader(tmp_path):
    """Issue 34.5: truncating a file while load_letor reads it killed the
    process with SIGBUS (a shared memory map).  A loader process now loads a
    file again and again while this one truncates and restores it: each
    load succeeds or is a DataError, and the process exits normally."""
    d = make_synthetic_letor(40, docs_per_query=25, n_noise=36, seed=0)
    block = tmp_path / "block.txt"
    write_letor(block, d.X, d.y, d.qid)
    text = block.read_bytes() * 24  # ~20 MB: a parse long enough to race
    path = tmp_path / "big.txt"
    path.write_bytes(text)
    stop = tmp_path / "stop"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    loader = subprocess.Popen(
        [sys.executable, "-c", _LOADER, str(path), str(block), str(stop), "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd=tmp_path)
    try:
        assert loader.stdout.readline().strip() == "ready"
        for _ in range(150):  # bounded: truncate, restore in place
            if loader.poll() is not None:
                break
            os.truncate(path, len(text) // 3)
            time.sleep(0.01)
            with path.open("r+b") as f:
                f.write(text)
            time.sleep(0.05)
        stop.touch()
        out, err = loader.communicate(timeout=600)
    finally:
        if loader.poll() is None:
            loader.kill()
            loader.wait()
    assert loader.returncode == 0, (loader.returncode, err[-2000:])
    lines = out.splitlines()
    assert lines, err
    for line in lines:
        assert line == "ok" or line.startswith("DataError"), line


def test_write_letor_never_truncates_in_place(tmp_path):
    """A reader of the old file keeps reading the old file whole; no
    temporary file is left."""
    path = tmp_path / "d.txt"
    _dataset(path, seed=0)
    old = path.read_bytes()
    with path.open("rb") as reader:
        d2 = make_synthetic_letor(9, docs_per_query=3, seed=1)
        write_letor(path, d2.X, d2.y, d2.qid)
        assert reader.read() == old  # the old file, untouched
    np.testing.assert_array_equal(load_letor(path, cache=False)[0], d2.X)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.txt"]


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_compressed_writes_are_atomic_and_reproducible(tmp_path, suffix):
    path = tmp_path / f"d.txt{suffix}"
    d = _dataset(path)
    first = path.read_bytes()
    _dataset(path)
    assert path.read_bytes() == first  # the same data, the same bytes
    np.testing.assert_array_equal(load_letor(path)[0], d.X)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".refimpl_cache", path.name]


# --------------------------------------------------------------------------
# Finding 8: values beyond float32's range
# --------------------------------------------------------------------------

# The smallest float64 that rounds to inf in float32 (the midpoint between
# float32's largest value and 2**128 rounds to even, i.e. up), and the one
# just below it, which rounds to float32's largest value.
_F32_INF = 2.0**128 - 2.0**103
_F32_MAX_ROUNDED = float(np.nextafter(_F32_INF, 0.0))


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("value", ["1e39", "-1e39", repr(_F32_INF), "1e300"])
def test_a_value_beyond_float32_is_an_error_naming_line_and_value(
        tmp_path, cache, value):
    path = tmp_path / "d.txt"
    path.write_text(
        "# a comment line\n"
        "\n"
        "2 qid:1 1:0.5 2:1.5\n"
        f"0 qid:1 1:0.25 2:{value} # doc\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning either
        with pytest.raises(DataError) as info:
            load_letor(path, dtype=np.float32, cache=cache)
    message = str(info.value)
    assert message.startswith(f"{path}, line 4: feature 2 is {value}, beyond the "
                              "range of float32")
    assert "dtype=np.float64" in message
    # nothing cached for float32, and the float64 load keeps the value
    cache_dir = tmp_path / ".refimpl_cache"
    assert not list(cache_dir.glob("*.float32.*")) if cache_dir.exists() else True
    X = load_letor(path, cache=cache)[0]
    assert X[1, 1] == float(value)


def test_float32_boundary_and_non_finite_rule(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(f"1 qid:1 1:{_F32_MAX_ROUNDED!r} 2:-3.4028235e38 3:1e-50\n")
    X = load_letor(path, dtype=np.float32)[0]
    f32max = np.finfo(np.float32).max
    assert X.tolist() == [[f32max, -f32max, 0.0]]  # roundings, not overflow
    assert load_letor(path, dtype=np.float32)[0].tolist() == X.tolist()  # cached
    # a literal inf or nan stays an error in every dtype, as before
    path.write_text("1 qid:1 1:inf\n")
    for dtype in (np.float32, np.float64):
        with pytest.raises(DataError, match="line 1: feature 1 is inf"):
            load_letor(path, dtype=dtype)


# --------------------------------------------------------------------------
# Finding 10: links whose targets share a name; leftovers of killed writers
# --------------------------------------------------------------------------


def test_links_whose_targets_share_a_name_each_hit_their_entry(tmp_path, monkeypatch):
    """Issue 34.10: two links in one folder to a/train.txt and b/train.txt
    overwrote each other's entry, a "corrupt" warning on every load."""
    da = _dataset(tmp_path / "a" / "train.txt", seed=1)
    db = _dataset(tmp_path / "b" / "train.txt", seed=2)
    named = tmp_path / "named"
    named.mkdir()
    (named / "A.txt").symlink_to(tmp_path / "a" / "train.txt")
    (named / "B.txt").symlink_to(tmp_path / "b" / "train.txt")
    (named / "A2.txt").symlink_to(tmp_path / "a" / "train.txt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(load_letor(named / "A.txt")[0], da.X)
        np.testing.assert_array_equal(load_letor(named / "B.txt")[0], db.X)
        _no_parsing(monkeypatch)
        for _ in range(2):
            np.testing.assert_array_equal(load_letor(named / "A.txt")[0], da.X)
            np.testing.assert_array_equal(load_letor(named / "B.txt")[0], db.X)
            # another link to a cached file finds its entry
            np.testing.assert_array_equal(load_letor(named / "A2.txt")[0], da.X)
    entries = sorted((named / ".refimpl_cache").glob("*.json"))
    assert len(entries) == 2


_KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from refimpl import _io
    def write(f):
        f.write(b"half a cache entry")
        f.flush()
        print("writing", flush=True)
        time.sleep(600)
    _io.atomic_write(sys.argv[1], write)
""")


def test_the_tmp_file_of_a_killed_cache_write_is_removed(tmp_path):
    path = tmp_path / "d.txt"
    d = _dataset(path)
    cache_dir = tmp_path / ".refimpl_cache"
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(cache_dir / "x.npy")],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert writer.stdout.readline().strip() == "writing"
    finally:
        writer.kill()  # SIGKILL: atomic_write's cleanup cannot run
        writer.wait()
        writer.stdout.close()
    (left,) = list(cache_dir.glob(".x.npy.*.tmp"))
    # past the grace given to writers of another PID namespace
    past = time.time() - _io.TMP_GRACE - 5
    os.utime(left, (past, past))
    np.testing.assert_array_equal(load_letor(path)[0], d.X)  # writes the cache
    assert not left.exists()
    assert not list(cache_dir.glob("*.tmp"))
