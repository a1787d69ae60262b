"""PRSVM+ (Chapelle & Keerthi 2010): support-vector statistics level by level.

Lee & Lin (2014), section 3.1, describe how PRSVM+ avoids the O(p) term of
PRSVM: the preference pairs of a query split into disjoint two-level sets,

    P = union over levels r of P_r,   P_r = {(i, j) in P : y_i > r, y_j = r},

(the identity displayed before their eq. 31), and on each two-level set the
four quantities of eqs. 14-17,

    l_i^+ = |SV_i^+|,  gamma_i^+ = sum_{j in SV_i^+} t_j,
    l_i^- = |SV_i^-|,  gamma_i^- = sum_{j in SV_i^-} t_j,

follow from one linear sweep over the documents sorted by score (the k = 2
algorithm, related to Joachims 2005).  A document ``i`` at level ``r``
receives its whole ``SV_i^+`` from ``P_r`` (every ``j`` preferred to ``i``
is above ``r``); a document above ``r`` receives from ``P_r`` the part of
``SV_i^-`` at level ``r``, and its ``l_i^-, gamma_i^-`` are summed over
``r < y_i``.

Level ``r`` costs O(|{i : y_i >= r}|), the size of its two-level set, so a
query costs O(l_q log l_q) for the sort plus O(sum_r |{i : y_i >= r}|) =
O(l_q k_q) (eqs. 31-32): unlike the order-statistic trees of
:mod:`refimpl.kernels.ostree` (O(l_q log k_q), eq. 29) it grows linearly with
the number of relevance levels, which is what Lee & Lin's Figure 6 shows.

The input conventions are those of :mod:`refimpl.kernels.ostree`, whose
helpers prepare them.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

import numpy as np
from numba import njit


@njit(cache=True)
def sv_stats_prsvm(
    z, t, level, nlev, perm, indptr, margin, l_plus, l_minus, g_plus, g_minus
):
    """Support-vector counts and sums by PRSVM+'s level decomposition.

    For every query and every level ``r = 0 .. k_q - 2``, the documents with
    level ``>= r`` (the two-level set "``r``" and "above ``r``") are kept in
    increasing-score order in contiguous buffers (copies of ``z``, ``t``,
    ``level``); two linear sweeps with two pointers and a running count and
    sum of ``t`` give

    * upwards, for each ``i`` at level ``r``: ``l_i^+, gamma_i^+`` over the
      documents above ``r`` with ``margin - (z_j - z_i) > 0``;
    * downwards, for each ``i`` above ``r``: the contribution of level ``r``
      to ``l_i^-, gamma_i^-``, the documents ``j`` at level ``r`` with
      ``margin - (z_i - z_j) > 0``.

    The level-``r`` documents are then removed from the buffer (an in-place
    compaction that keeps the order), so level ``r`` costs
    O(|{i : level_i >= r}|) and a query O(l_q k_q) (Lee & Lin 2014,
    eqs. 31-32).

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
    Membership tests are ``margin - (z[j] - z[i]) > 0.0`` (upward sweep) and
    ``margin - (z[i] - z[j]) > 0.0`` (downward sweep), the expression of the
    explicit-pairs kernel and of the other sv-stats kernels.  It is monotone
    in each score under rounding, so within the score-sorted two-level set
    the active partners form a prefix (upwards) or a suffix (downwards) and
    the counts equal the brute-force ones exactly, ties included.
    ``gamma_i^-`` is accumulated level by level, so its rounding differs
    from a pair loop's in the last bits only.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    lmax = 0
    for q in range(len(indptr) - 1):
        lmax = max(lmax, indptr[q + 1] - indptr[q])
    # the two-level set, contiguous in score order: score, t, level and the
    # position of the document in perm[lo:hi] (increasing, as the set is
    # only ever compacted); results are accumulated by position
    zb = np.empty(lmax, dtype=np.float64)
    tb = np.empty(lmax, dtype=np.float64)
    lb = np.empty(lmax, dtype=np.int64)
    pb = np.empty(lmax, dtype=np.int64)
    lp = np.empty(lmax, dtype=np.int64)
    lm = np.empty(lmax, dtype=np.int64)
    gp = np.empty(lmax, dtype=np.float64)
    gm = np.empty(lmax, dtype=np.float64)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = nlev[q]
        m = hi - lo
        for a in range(m):
            j = perm[lo + a]
            zb[a] = z[j]
            tb[a] = t[j]
            lb[a] = level[j]
            pb[a] = a
            lp[a] = 0
            lm[a] = 0
            gp[a] = 0.0
            gm[a] = 0.0
        # level r = 0 .. k - 2; zb[:m] etc. hold the documents of level >= r
        for r in range(k - 1):
            # ---- SV^+ of level r: increasing z, partners above r --------
            c = 0
            s = 0.0
            b = 0
            for a in range(m):
                if lb[a] != r:
                    continue
                zi = zb[a]
                while b < m and margin - (zb[b] - zi) > 0.0:
                    if lb[b] > r:
                        c += 1
                        s += tb[b]
                    b += 1
                lp[pb[a]] = c
                gp[pb[a]] = s
            # ---- SV^- above r, level-r part: decreasing z ----------------
            c = 0
            s = 0.0
            b = m - 1
            for a in range(m - 1, -1, -1):
                if lb[a] == r:
                    continue
                zi = zb[a]
                while b >= 0 and margin - (zi - zb[b]) > 0.0:
                    if lb[b] == r:
                        c += 1
                        s += tb[b]
                    b -= 1
                lm[pb[a]] += c
                gm[pb[a]] += s
            # ---- drop level r, keeping the score order -------------------
            w = 0
            for a in range(m):
                if lb[a] != r:
                    zb[w] = zb[a]
                    tb[w] = tb[a]
                    lb[w] = lb[a]
                    pb[w] = pb[a]
                    w += 1
            m = w
        for a in range(hi - lo):
            i = perm[lo + a]
            l_plus[i] = lp[a]
            l_minus[i] = lm[a]
            g_plus[i] = gp[a]
            g_minus[i] = gm[a]
