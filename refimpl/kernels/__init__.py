"""Private numba kernels.

Kernels take contiguous arrays and scalars only, never validate their input
(the public wrappers do that in Python first) and are compiled with
``cache=True`` so that a notebook or a CI run pays the compile time once;
that cache is dropped whenever any kernel source changes
(:mod:`refimpl.kernels._cache_guard`).
"""

from pathlib import Path as _Path

from ._cache_guard import invalidate_stale_cache as _invalidate_stale_cache

# before any kernel is loaded from numba's cache: see _cache_guard
_invalidate_stale_cache(_Path(__file__).parent)
