"""Kernels of the feature normalisations of :mod:`refimpl.data`.

Both read ``X`` row by row (C order) and write a new matrix, with O(d)
scratch memory: no temporary of the size of ``X``, which matters at the
MSLR shape (a 301,916 x 136 split is 330 MB).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def query_minmax(X, order, indptr, out):
    """LETOR's QueryLevelNorm: ``out[i, j] = (x_ij - lo) / (hi - lo)``.

    ``lo``, ``hi``: the minimum and maximum of feature ``j`` over the
    documents ``order[indptr[q]:indptr[q + 1]]`` of the query of row ``i``;
    ``out[i, j] = 0`` where ``hi == lo``.  A span ``hi - lo`` that overflows
    (values beyond 1e308 of both signs) is computed on halves, which is
    exact for normal numbers, so the result stays in ``[0, 1]``.
    """
    d = X.shape[1]
    lo = np.empty(d)
    hi = np.empty(d)
    for q in range(len(indptr) - 1):
        a, b = indptr[q], indptr[q + 1]
        first = order[a]
        for j in range(d):
            lo[j] = X[first, j]
            hi[j] = X[first, j]
        for t in range(a + 1, b):
            i = order[t]
            for j in range(d):
                v = X[i, j]
                if v < lo[j]:
                    lo[j] = v
                elif v > hi[j]:
                    hi[j] = v
        for t in range(a, b):
            i = order[t]
            for j in range(d):
                span = hi[j] - lo[j]
                if span == 0.0:
                    out[i, j] = 0.0
                elif span <= 1.7976931348623157e308:
                    out[i, j] = (X[i, j] - lo[j]) / span
                else:  # overflowed to inf
                    out[i, j] = (0.5 * X[i, j] - 0.5 * lo[j]) / (
                        0.5 * hi[j] - 0.5 * lo[j])


@njit(cache=True)
def column_moments(X, inv_scale, lo, hi, mean, m2):
    """Per column: minimum, maximum, mean and sum of squared deviations.

    The mean and the squared deviations are of ``X[:, j] * inv_scale[j]``
    (a power of two, so the scaling is exact for normal numbers and the
    squares cannot overflow), in two passes (mean first, then the
    deviations from it: no cancellation of a one-pass formula).
    """
    n, d = X.shape
    for j in range(d):
        lo[j] = X[0, j]
        hi[j] = X[0, j]
        mean[j] = 0.0
        m2[j] = 0.0
    for i in range(n):
        for j in range(d):
            v = X[i, j]
            if v < lo[j]:
                lo[j] = v
            elif v > hi[j]:
                hi[j] = v
            mean[j] += v * inv_scale[j]
    for j in range(d):
        mean[j] /= n
    for i in range(n):
        for j in range(d):
            r = X[i, j] * inv_scale[j] - mean[j]
            m2[j] += r * r


@njit(cache=True)
def column_absmax(X, out):
    """``out[j] = max_i |X[i, j]|``."""
    n, d = X.shape
    for j in range(d):
        out[j] = 0.0
    for i in range(n):
        for j in range(d):
            v = abs(X[i, j])
            if v > out[j]:
                out[j] = v


@njit(cache=True)
def standardize(X, mean, scale, inv_scale, mean_s, sd_s, out):
    """``out[i, j] = (X[i, j] - mean[j]) / scale[j]``.

    Where that overflows (or ``scale[j]`` underflowed to 0), the same
    z-score in the scaled units of :func:`column_moments`,
    ``(X[i, j] * inv_scale[j] - mean_s[j]) / sd_s[j]``.  Returns the index
    of the first result that is still not finite (row-major), or -1.
    """
    n, d = X.shape
    bad = -1
    for i in range(n):
        for j in range(d):
            z = (X[i, j] - mean[j]) / scale[j]
            if not np.isfinite(z):
                z = (X[i, j] * inv_scale[j] - mean_s[j]) / sd_s[j]
                if bad < 0 and not np.isfinite(z):
                    bad = i * d + j
            out[i, j] = z
    return bad
