"""The active-pair Laplacian times ``X`` without pair arrays (proximal Newton at scale).

The generalised Hessian of the pairwise squared hinge is ``2 s X^T Lap_A X``
(Lee & Lin 2014, eq. 11), ``Lap_A = sum_{(i,j) active} (e_i - e_j)(e_i -
e_j)^T`` over the active pairs ``margin - (z_i - z_j) > 0`` (``y_i > y_j``,
same query).  :func:`refimpl.kernels.cd_l1.active_laplacian_matmul` builds
``Lap_A X`` by a loop over explicit pairs, O(|A| d); here it is built per
query from sorted scores: within one relevance level the partners of a
document ``i`` in a lower level are the documents whose score exceeds a
threshold (a suffix of that level sorted by score), in a higher level a
prefix, so with per-level prefix sums of the rows of ``X`` each document
needs one binary search and one row difference per other level:

.. math::

    (\\mathrm{Lap}_A X)_i = \\deg_A(i)\\, x_i - \\sum_{j : \\{i, j\\} \\in A} x_j ,

O(l log l + l k d) per query of ``l`` documents and ``k`` levels, O(l d)
extra memory.  The binary search tests the pair's own predicate
``margin - (z_i - z_j) > 0`` (monotone in ``z_j`` in floating point), so
the active set is exactly the explicit-pairs one at the same scores.

Used by :func:`refimpl.solvers.prox_newton` when the loss runs on the tree
backend.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["active_laplacian_rows"]


@njit(cache=True)
def _query_laplacian(X, z, y, lo, hi, margin, out, perm, lev, seg, cum):
    """``out[lo:hi] = (Lap_A X)`` of the query on rows ``lo:hi``; returns ``|A|``."""
    l = hi - lo
    d = X.shape[1]
    zq = z[lo:hi]
    yq = y[lo:hi]
    order = np.argsort(zq, kind="mergesort")
    # distinct labels of the query, increasing: the levels
    labels = np.unique(yq)
    k = labels.size
    if k < 2:
        return 0
    for t in range(l):
        lev[t] = np.searchsorted(labels, yq[t])
    # stable counting sort of the score order by level: seg[b]..seg[b+1]
    for b in range(k + 1):
        seg[b] = 0
    for t in range(l):
        seg[lev[t] + 1] += 1
    for b in range(k):
        seg[b + 1] += seg[b]
    fill = seg[:k].copy()
    for t in range(l):
        r = order[t]
        b = lev[r]
        perm[fill[b]] = r
        fill[b] += 1
    # per-level prefix sums of the rows: cum[seg[b] + b + m] = sum of the
    # first m rows of level b (in score order)
    for b in range(k):
        base = seg[b] + b
        for c in range(d):
            cum[base, c] = 0.0
        for m in range(seg[b], seg[b + 1]):
            row = lo + perm[m]
            dst = m + b + 1
            for c in range(d):
                cum[dst, c] = cum[dst - 1, c] + X[row, c]
    n_active = 0
    for t in range(l):
        i = lo + t
        a = lev[t]
        zi = z[i]
        deg = 0
        for b in range(k):
            if b == a:
                continue
            s, e = seg[b], seg[b + 1]
            if b < a:
                # i above j: active iff margin - (z_i - z_j) > 0, false for
                # small z_j, true from the first m on (a suffix)
                left, right = s, e
                while left < right:
                    mid = (left + right) // 2
                    if margin - (zi - z[lo + perm[mid]]) > 0:
                        right = mid
                    else:
                        left = mid + 1
                first, last = left, e
            else:
                # j above i: active iff margin - (z_j - z_i) > 0, true for
                # small z_j (a prefix)
                left, right = s, e
                while left < right:
                    mid = (left + right) // 2
                    if margin - (z[lo + perm[mid]] - zi) > 0:
                        left = mid + 1
                    else:
                        right = mid
                first, last = s, left
            cnt = last - first
            if cnt == 0:
                continue
            deg += cnt
            if b < a:
                n_active += cnt
            hi_row = last + b
            lo_row = first + b
            for c in range(d):
                out[i, c] -= cum[hi_row, c] - cum[lo_row, c]
        if deg:
            for c in range(d):
                out[i, c] += deg * X[i, c]
    return n_active


@njit(cache=True)
def active_laplacian_rows(X, z, y, indptr, margin, out):
    """``out = Lap_A X`` for rows grouped by query (query ``q``: rows ``indptr[q]:indptr[q+1]``).

    ``X`` dense C-contiguous ``(l, d)``, ``z`` the scores, ``y`` the labels,
    ``out`` zeroed ``(l, d)``.  A pair ``(i, j)`` of one query with ``y_i >
    y_j`` is active iff ``margin - (z_i - z_j) > 0``.  Returns ``|A|``.
    """
    n_q = indptr.size - 1
    max_l = 0
    for q in range(n_q):
        if indptr[q + 1] - indptr[q] > max_l:
            max_l = indptr[q + 1] - indptr[q]
    d = X.shape[1]
    perm = np.empty(max_l, dtype=np.int64)
    lev = np.empty(max_l, dtype=np.int64)
    seg = np.empty(max_l + 2, dtype=np.int64)
    cum = np.empty((2 * max_l + 1, d))
    total = 0
    for q in range(n_q):
        if indptr[q + 1] - indptr[q] >= 2:
            total += _query_laplacian(X, z, y, indptr[q], indptr[q + 1], margin,
                                      out, perm, lev, seg, cum)
    return total
