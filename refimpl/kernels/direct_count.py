"""Direct counting of the support-vector statistics (Lee & Lin 2014, eq. 20).

For every document ``i`` the four quantities of Lee & Lin (2014), eqs. 14-17,

    l_i^+ = |SV_i^+|,  gamma_i^+ = sum_{j in SV_i^+} t_j,
    l_i^- = |SV_i^-|,  gamma_i^- = sum_{j in SV_i^-} t_j,

are obtained by the two sweeps of their Algorithm 2, but the "order-statistic
tree" is replaced by two plain arrays of length ``k`` (count and sum of ``t``
per relevance level).  An insertion is O(1) and a query over the levels above
(below) ``y_i`` is O(k), hence O(l_q k_q) per query: the direct counting
method that the paper's supplementary material analyses and Figure 4 shows
to be slow when ``k`` is large.

The input conventions are those of :mod:`refimpl.kernels.ostree`, whose
helpers prepare them.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

import numpy as np
from numba import njit


@njit(cache=True)
def sv_stats_direct(
    z, t, level, nlev, perm, indptr, margin, l_plus, l_minus, g_plus, g_minus
):
    """Support-vector counts and sums by direct counting, O(l_q k_q) per query.

    Parameters
    ----------
    z : ndarray of float64, shape (n,)
        Scores ``X w``; they decide the active set
        ``SV(w) = {(i, j) : y_i > y_j, margin - (z_i - z_j) > 0}`` (eq. 14).
    t : ndarray of float64, shape (n,)
        The vector ``X v`` whose partial sums are ``gamma^+-`` (eq. 17).
    level : ndarray of int64, shape (n,)
        Rank of ``y_i`` among the distinct labels of its query, 0-based
        (:func:`refimpl.kernels.ostree.label_levels`).
    nlev : ndarray of int64, shape (n_queries,)
        Number ``k_q`` of distinct labels of each query.
    perm : ndarray of int64, shape (n,)
        ``perm[indptr[q]:indptr[q + 1]]``: the documents of query ``q``
        sorted by increasing ``z`` (:func:`refimpl.kernels.ostree.sort_by_score`).
    indptr : ndarray of int64, shape (n_queries + 1,)
        Query boundaries in ``perm``.
    margin : float
        The ``delta`` of the hinge (1 in the paper).
    l_plus, l_minus : ndarray of int64, shape (n,)
        Output: ``l_i^+``, ``l_i^-`` at the original document indices.
    g_plus, g_minus : ndarray of float64, shape (n,)
        Output: ``gamma_i^+``, ``gamma_i^-`` at the original document indices.

    Notes
    -----
    A document ``j`` enters the ``+`` sweep for ``i`` iff
    ``margin - (z[j] - z[i]) > 0.0`` and the ``-`` sweep iff
    ``margin - (z[i] - z[j]) > 0.0``: the same floating-point expression as
    the explicit-pairs kernel, which is monotone in each score, so the
    sweeps reproduce the brute-force active set exactly, ties included.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    kmax = 1
    for q in range(len(indptr) - 1):
        kmax = max(kmax, nlev[q])
    cnt = np.zeros(kmax, dtype=np.int64)
    tsum = np.zeros(kmax, dtype=np.float64)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = nlev[q]
        if k <= 1:  # one relevance level: no preference pair at all
            for a in range(lo, hi):
                i = perm[a]
                l_plus[i] = 0
                l_minus[i] = 0
                g_plus[i] = 0.0
                g_minus[i] = 0.0
            continue
        # l^+, gamma^+: increasing z, insert j with margin - (z_j - z_i) > 0
        cnt[:k] = 0
        tsum[:k] = 0.0
        b = lo
        for a in range(lo, hi):
            i = perm[a]
            while b < hi and margin - (z[perm[b]] - z[i]) > 0.0:
                j = perm[b]
                cnt[level[j]] += 1
                tsum[level[j]] += t[j]
                b += 1
            c = 0
            s = 0.0
            for r in range(level[i] + 1, k):
                c += cnt[r]
                s += tsum[r]
            l_plus[i] = c
            g_plus[i] = s
        # l^-, gamma^-: decreasing z, insert j with margin - (z_i - z_j) > 0
        cnt[:k] = 0
        tsum[:k] = 0.0
        b = hi - 1
        for a in range(hi - 1, lo - 1, -1):
            i = perm[a]
            while b >= lo and margin - (z[i] - z[perm[b]]) > 0.0:
                j = perm[b]
                cnt[level[j]] += 1
                tsum[level[j]] += t[j]
                b -= 1
            c = 0
            s = 0.0
            for r in range(level[i]):
                c += cnt[r]
                s += tsum[r]
            l_minus[i] = c
            g_minus[i] = s
