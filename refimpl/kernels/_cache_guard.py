"""Numba's on-disk cache of the kernels, keyed by all their sources together.

numba decides whether a cached kernel is still valid from the modification
time and size of the file that defines it, and nothing else.  But kernels
here compile code from other files into themselves: the LLVM intrinsics of
:mod:`refimpl.kernels._simd` and :mod:`refimpl.kernels._ddlanes`, the
``inline="always"`` helpers of :mod:`refimpl.kernels.ostree` in
:mod:`refimpl.kernels.fused`, :func:`refimpl.kernels.pairs.distinct_labels`
in :mod:`refimpl.kernels.ostree`.  An edit to one of those would leave the
kernels that use it running the old code from the cache, with nothing to
show for it.  So the cache is keyed here by a digest of every kernel source:
when it differs from the digest stamped beside the cache, the cached kernels
of this folder are deleted (numba compiles them again) and the new digest is
stamped.  Nothing happens when the digest matches (a read of the sources per
process), where the cache folder cannot be written (an installed package:
its sources do not change either) or when ``NUMBA_CACHE_DIR`` moves the
cache elsewhere.
"""

import hashlib
import os
from pathlib import Path

#: File beside numba's cache files holding the digest they were built from.
STAMP = "kernel-sources.sha256"


def sources_digest(folder):
    """SHA-256 of the names and contents of the ``*.py`` files in ``folder``."""
    h = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):
        h.update(path.name.encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def invalidate_stale_cache(folder, cache_dir=None):
    """Delete numba's cached kernels of ``folder`` if any source changed.

    Parameters
    ----------
    folder : path
        The folder of the kernel modules.
    cache_dir : path, optional
        Where numba keeps their cache (default: ``folder/__pycache__``).

    Returns
    -------
    bool
        Whether cached kernels were deleted (or a first stamp written).
    """
    if cache_dir is None:
        if os.environ.get("NUMBA_CACHE_DIR"):
            return False
        cache_dir = Path(folder) / "__pycache__"
    cache_dir = Path(cache_dir)
    digest = sources_digest(folder)
    stamp = cache_dir / STAMP
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    try:
        cache_dir.mkdir(exist_ok=True)
        for pattern in ("*.nbi", "*.nbc"):
            for path in cache_dir.glob(pattern):
                path.unlink(missing_ok=True)
        stamp.write_text(digest)
    except OSError:  # not writable: an installed, unchanging package
        return False
    return True
