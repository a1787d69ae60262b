"""The kernels' numba cache is dropped when any kernel source changes."""

import os

from refimpl.kernels import _cache_guard as guard


def make_tree(tmp_path):
    src = tmp_path / "kernels"
    cache = src / "__pycache__"
    cache.mkdir(parents=True)
    (src / "a.py").write_text("x = 1\n")
    (src / "b.py").write_text("y = 2\n")
    return src, cache


def cached_files(cache):
    return sorted(p.name for p in cache.iterdir() if p.suffix in (".nbi", ".nbc"))


def test_stale_cache_is_dropped_when_any_source_changes(tmp_path):
    src, cache = make_tree(tmp_path)
    for name in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "b.g-3.py311.nbi"):
        (cache / name).write_bytes(b"compiled")
    (cache / "a.cpython-311.pyc").write_bytes(b"bytecode")
    # first run: no stamp yet, so nothing is trusted
    assert guard.invalidate_stale_cache(src)
    assert cached_files(cache) == []
    assert (cache / guard.STAMP).read_text() == guard.sources_digest(src)
    # numba fills the cache again; unchanged sources keep it
    (cache / "a.f-1.py311.nbi").write_bytes(b"compiled")
    assert not guard.invalidate_stale_cache(src)
    assert cached_files(cache) == ["a.f-1.py311.nbi"]
    # an edit to another file than the cached kernel's drops it too
    (src / "b.py").write_text("y = 3\n")
    assert guard.invalidate_stale_cache(src)
    assert cached_files(cache) == []
    assert (cache / "a.cpython-311.pyc").exists()      # not numba's
    # a new source file changes the digest as well
    (src / "c.py").write_text("")
    assert guard.sources_digest(src) != (cache / guard.STAMP).read_text()


def test_unwritable_cache_and_numba_cache_dir_are_left_alone(tmp_path,
                                                             monkeypatch):
    src, cache = make_tree(tmp_path)
    (cache / "a.f-1.py311.nbi").write_bytes(b"compiled")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert not guard.invalidate_stale_cache(src)
    assert cached_files(cache) == ["a.f-1.py311.nbi"]
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    if os.geteuid() != 0:  # root writes anyway
        cache.chmod(0o500)
        try:
            assert not guard.invalidate_stale_cache(src)
            assert cached_files(cache) == ["a.f-1.py311.nbi"]
        finally:
            cache.chmod(0o700)


def test_the_package_stamp_matches_its_sources():
    """Importing refimpl.kernels stamped (or found) the current digest."""
    from pathlib import Path

    import refimpl.kernels

    folder = Path(refimpl.kernels.__file__).parent
    stamp = folder / "__pycache__" / guard.STAMP
    if os.environ.get("NUMBA_CACHE_DIR") or not os.access(folder, os.W_OK):
        return
    assert stamp.read_text() == guard.sources_digest(folder)
