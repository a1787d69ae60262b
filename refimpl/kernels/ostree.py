"""Order-statistic trees for the support-vector statistics of RankSVM.

Lee & Lin (2014), section 2.2, write the loss, gradient and generalised
Hessian of the L2-loss RankSVM through four per-document quantities
(eqs. 14-17): with ``z = X w``, ``t = X v`` and

    SV(w)   = {(i, j) : same query, y_i > y_j, margin - (z_i - z_j) > 0},
    SV_i^+  = {j : (j, i) in SV(w)},   l_i^+ = |SV_i^+|,
              gamma_i^+ = sum_{j in SV_i^+} t_j,
    SV_i^-  = {j : (i, j) in SV(w)},   l_i^- = |SV_i^-|,
              gamma_i^- = sum_{j in SV_i^-} t_j.

Algorithm 2 obtains them without enumerating pairs: per query, sort by
``z``; sweep ``i`` upwards inserting every ``j`` with
``margin - (z_j - z_i) > 0`` into a structure keyed by relevance level that
keeps the count and the sum of ``t`` (eqs. 24-25, 28), and ask for the levels
above ``y_i`` (``Larger``, eq. 26); sweep downwards for the levels below
(``Smaller``).  Two structures are implemented:

* :func:`sv_stats_selection_tree` -- section 2.4: a complete binary tree in
  Knuth's implicit array (leaves ``2^ceil(log2 k) ... 2^ceil(log2 k) + k - 1``,
  parent of ``m`` is ``m // 2``), O(log k) per insertion and query;
* :func:`sv_stats_avl` -- section 2.3/2.5: an AVL order-statistic tree keyed
  by level, nodes in preallocated arrays, O(log k) per operation.

Both cost O(l_q log l_q) for the sort plus O(l_q log k_q) per query (eq. 29).
The helpers :func:`label_levels`, :func:`sort_by_score` and
:func:`center_per_query` prepare the inputs shared with
:mod:`refimpl.kernels.direct_count`.  :func:`value_dz_selection_tree` and
:func:`hess_dz_selection_tree` are the fused forms the loss uses: loss,
score gradient and counts in one pass, and Hessian-vector products, where
the sort and the counts ``l^+-`` of the last function evaluation are
reused and only the sums ``gamma^+-`` change.  Both keep their sums in
double-double arithmetic, so the per-document coefficients are within a few
ulps of the explicit-pairs result however widely a query's scores spread.
For queries of at most :data:`DIRECT_LEVELS` levels (LETOR's 2-5) they
replace the tree by a direct per-level sweep: one accumulator per level in
the lanes of a vector (:mod:`refimpl.kernels._ddlanes`), O(l_q) per query,
same membership tests and insertion order.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

import numpy as np
from numba import njit

from ._ddlanes import LANES, dd_prefix, dd_step, dd_step_counted
from ._simd import fma, prefetch, row_dot
from .pairs import LABEL_SCAN, distinct_labels

# --------------------------------------------------------------------------
# input preparation
# --------------------------------------------------------------------------


@njit(cache=True)
def label_levels(y, order, indptr, level, nlev):
    """Map labels to 0-based level ranks inside each query.

    Parameters
    ----------
    y : ndarray of float64, shape (n,)
        Graded relevance labels.
    order, indptr : ndarray of int64
        Query grouping (:class:`refimpl._validation.QueryGroups`).
    level : ndarray of int64, shape (n,)
        Output: ``level[i]`` = number of distinct labels of ``i``'s query
        that are smaller than ``y[i]``.
    nlev : ndarray of int64, shape (n_queries,)
        Output: number ``k_q`` of distinct labels of query ``q``.

    Queries of at most :data:`refimpl.kernels.pairs.LABEL_SCAN` distinct
    labels take them from :func:`refimpl.kernels.pairs.distinct_labels`
    (a linear scan, no allocation); the others are sorted.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    vals = np.empty(LABEL_SCAN)
    counts = np.empty(LABEL_SCAN, dtype=np.int64)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = distinct_labels(y, order, lo, hi, vals, counts)
        if k >= 0:
            for a in range(lo, hi):
                i = order[a]
                v = y[i]
                r = 0
                for m in range(k):  # v is among vals[:k]
                    r += vals[m] < v
                level[i] = r
            nlev[q] = k
            continue
        idx = order[lo:hi]
        s = np.argsort(y[idx], kind="mergesort")
        r = -1
        prev = 0.0
        for a in range(hi - lo):
            i = idx[s[a]]
            if a == 0 or y[i] != prev:
                r += 1
                prev = y[i]
            level[i] = r
        nlev[q] = r + 1


#: Queries with at most this many documents are sorted by insertion sort in
#: a preallocated buffer (no allocation per query; LETOR queries are small);
#: longer ones by ``np.argsort(kind="mergesort")``.
SMALL_QUERY = 32


@njit(cache=True)
def _lt(a, b):
    """``a < b`` with NaN last: numba's comparison for sorting floats."""
    return a < b or (np.isnan(b) and not np.isnan(a))


@njit(cache=True)
def sort_by_score(z, order, indptr, perm):
    """Sort the documents of every query by increasing score (stable).

    ``perm[indptr[q]:indptr[q + 1]]`` receives the original indices of query
    ``q``'s documents in increasing ``z`` order (step 2 of Algorithm 2);
    equal scores keep their order in ``order``.

    Queries of at most :data:`SMALL_QUERY` documents are insertion-sorted
    into ``perm`` with their scores in a preallocated buffer; longer ones
    are kept as they are if their scores are already in order (e.g. all
    equal, at ``w = 0``), else sorted by buckets of the score range
    (:func:`_bucket_sort_query`, O(l_q) for spread scores) or, when that
    declines, by ``np.argsort(kind="mergesort")`` of a gathered copy.  All
    are stable with the same comparison (NaN last, as numba's float sort),
    and a stable sort's permutation is unique, so the result does not
    depend on the path.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    zb, kb, ib, cnt = _sort_scratch(indptr)
    for q in range(len(indptr) - 1):
        _sort_query(z, order, indptr[q], indptr[q + 1], perm, zb, kb, ib, cnt)


@njit(inline="always")
def _sort_scratch(indptr):
    """Scratch of :func:`_sort_query` for the longest query of ``indptr``."""
    lmax = 0
    for q in range(len(indptr) - 1):
        lmax = max(lmax, indptr[q + 1] - indptr[q])
    return (np.empty(lmax), np.empty(lmax), np.empty(lmax, dtype=np.int64),
            np.empty(lmax + 1, dtype=np.int64))


@njit(inline="always")
def _sort_query(z, order, lo, hi, perm, zb, kb, ib, cnt):
    """Sort one query's documents ``order[lo:hi]`` by score into ``perm[lo:hi]``.

    The body of :func:`sort_by_score` for one query, shared with
    :func:`sort_by_score_from` and the one-pass kernels of
    :mod:`refimpl.kernels.fused`.  Scratch of at least ``hi - lo`` entries:
    ``zb``, ``kb`` (float64), ``ib`` (int64); ``cnt`` (int64) of one more.
    Up to :data:`SMALL_QUERY` documents, insertion sort; longer queries
    already in order (e.g. all equal) are kept as they are, the others go
    to :func:`_bucket_sort_query`, and to ``np.argsort(kind="mergesort")``
    when it declines.  Every path is a stable sort with the comparison of
    :func:`_lt`, whose permutation is unique: the result does not depend
    on the path.
    """
    n = hi - lo
    if n > SMALL_QUERY:
        ordered = True
        for a in range(n):
            zb[a] = z[order[lo + a]]
            if a > 0 and _lt(zb[a], zb[a - 1]):
                ordered = False
        if ordered:  # e.g. all equal, at w = 0: the stable sort is order
            for a in range(n):
                perm[lo + a] = order[lo + a]
            return
        if _bucket_sort_query(order, lo, n, perm, zb, kb, ib, cnt):
            return
        s = np.argsort(zb[:n], kind="mergesort")
        for a in range(n):
            perm[lo + a] = order[lo + s[a]]
        return
    for a in range(n):
        j = order[lo + a]
        _insert_sorted(z[j], j, a, zb, perm, lo)


@njit(inline="always")
def _insert_sorted(v, j, a, keys, perm, lo):
    """Insert score ``v`` of document ``j`` into the sorted ``keys[:a]``, ``perm[lo:lo + a]``.

    One step of an insertion sort; shifting only past strictly larger keys
    (:func:`_lt`) keeps equal ones in arrival order, so it is stable.
    Returns the number of entries moved.
    """
    b = a - 1
    while b >= 0 and _lt(v, keys[b]):
        keys[b + 1] = keys[b]
        perm[lo + b + 1] = perm[lo + b]
        b -= 1
    keys[b + 1] = v
    perm[lo + b + 1] = j
    return a - 1 - b


@njit(inline="always")
def _bucket_sort_query(order, lo, n, perm, zb, kb, ib, cnt):
    """Stable sort of the scores ``zb[:n]`` of ``order[lo:lo + n]`` by buckets.

    With finite scores spanning ``[m, M]`` (``M - m`` finite), document
    ``a`` goes to bucket ``floor((zb[a] - m) s)``, ``s = n / (M - m)``:
    correctly rounded subtraction and multiplication by a positive number
    never invert two scores, so the buckets are in score order, and equal
    scores share one.  A counting sort by bucket (stable) into ``kb``,
    ``ib``, then an insertion sort of the whole, whose inversions all lie
    inside buckets: O(l_q) for scores spread as a solver's are (5.2 ms
    against 12.8 ms for a mergesort per query on the 301,916 x 136
    problem, queries of about 120 documents: ``benchmarks/bench_hessvec.py``
    part 2).  Returns ``False`` (and the caller sorts otherwise)
    for a non-finite score or range, or when the insertion sort would
    move more than :data:`BUCKET_MOVES` times per document (scores
    bunched in few buckets), which bounds its cost.
    """
    zmin = zb[0]
    zmax = zb[0]
    for a in range(n):
        v = zb[a]
        if not np.isfinite(v):
            return False
        zmin = min(zmin, v)
        zmax = max(zmax, v)
    width = zmax - zmin
    scale = n / width
    if not (np.isfinite(width) and np.isfinite(scale) and width > 0.0):
        return False  # (every (zb - zmin) * scale is then in [0, n (1 + u)])
    cnt[: n + 1] = 0
    for a in range(n):
        cnt[min(int((zb[a] - zmin) * scale), n - 1) + 1] += 1
    for b in range(n):
        cnt[b + 1] += cnt[b]
    for a in range(n):
        b = min(int((zb[a] - zmin) * scale), n - 1)
        c = cnt[b]
        cnt[b] = c + 1
        kb[c] = zb[a]
        ib[c] = order[lo + a]
    budget = BUCKET_MOVES * n
    for a in range(n):
        budget -= _insert_sorted(kb[a], ib[a], a, kb, perm, lo)
        if budget < 0:
            return False
    return True


#: :func:`_bucket_sort_query` gives up past this many insertion moves per
#: document (then the mergesort runs): a query whose scores fill a few of
#: its buckets would otherwise cost O(l_q^2).
BUCKET_MOVES = 8


#: From this many documents on, a query whose insertion sort from the
#: previous order meets more than :data:`RADIX_MOVES` moves per document is
#: sorted by :func:`_radix_query` (a stable LSD radix sort, O(l_q)), not
#: from scratch by the comparison sort.
RADIX_MIN = 1024

#: Insertion-sort moves per document before a query of at least
#: :data:`RADIX_MIN` documents gives up on the previous order.
RADIX_MOVES = 8

_RADIX_BITS = 11
_RADIX_PASSES = 6          # 6 x 11 >= 64 bits
_RADIX_BUCKETS = 1 << _RADIX_BITS


@njit(cache=True)
def _radix_query(z, order, lo, hi, perm, fkeys, keys2, idx1, idx2, count):
    """Sort ``order[lo:hi]`` by score into ``perm[lo:hi]``: stable LSD radix sort.

    Keys: the bits of ``z + 0.0`` (``-0.0`` becomes ``0.0``) as unsigned
    integers in the order of :func:`_lt` (negative scores' bits inverted,
    the sign bit of the others set, NaN last).  The documents start in
    ``order`` and every pass is stable, so equal keys keep their order
    there: the permutation of :func:`_sort_query`.  Digits of
    :data:`_RADIX_BITS` bits; a digit equal for every document (the sign
    and exponent bits of scores in one binade, say) costs no pass.
    Scratch: ``fkeys`` (float64), ``keys2`` (uint64), ``idx1``, ``idx2``
    of at least ``hi - lo`` entries, ``count`` of
    ``_RADIX_PASSES * _RADIX_BUCKETS``.
    """
    n = hi - lo
    mask = np.uint64(_RADIX_BUCKETS - 1)
    top = np.uint64(0x8000000000000000)
    for a in range(n):
        fkeys[a] = z[order[lo + a]] + 0.0
        idx1[a] = order[lo + a]
    keys = fkeys[:n].view(np.uint64)
    count[:] = 0
    for a in range(n):
        if np.isnan(fkeys[a]):
            k = np.uint64(0xFFFFFFFFFFFFFFFF)
        else:
            k = keys[a]
            k = ~k if k & top else k | top
        keys[a] = k
        for p in range(_RADIX_PASSES):
            d = (k >> np.uint64(p * _RADIX_BITS)) & mask
            count[p * _RADIX_BUCKETS + d] += 1
    src_k = keys
    dst_k = keys2[:n]
    src_i = idx1[:n]
    dst_i = idx2[:n]
    for p in range(_RADIX_PASSES):
        base = p * _RADIX_BUCKETS
        skip = False
        for d in range(_RADIX_BUCKETS):
            c = count[base + d]
            if c != 0:
                skip = c == n
                break
        if skip:
            continue
        total = 0
        for d in range(_RADIX_BUCKETS):
            c = count[base + d]
            count[base + d] = total
            total += c
        shift = np.uint64(p * _RADIX_BITS)
        for a in range(n):
            k = src_k[a]
            d = base + np.int64((k >> shift) & mask)
            b = count[d]
            count[d] = b + 1
            dst_k[b] = k
            dst_i[b] = src_i[a]
        src_k, dst_k = dst_k, src_k
        src_i, dst_i = dst_i, src_i
    for a in range(n):
        perm[lo + a] = src_i[a]


@njit(cache=True)
def sort_by_score_from(z, order, indptr, pos, prev, perm, zb):
    """:func:`sort_by_score`, starting from a previous order of each query.

    ``prev[indptr[q]:indptr[q + 1]]`` is any order of query ``q``'s
    documents (a solver's last sort, by nearby scores); insertion sort from
    it costs O(l_q + inversions), so a small step of ``z`` is re-sorted in
    about linear time.  The key is ``(z_i, pos[i])`` with ``pos[i]`` the
    position of ``i`` in ``order`` (NaN last, as :func:`_lt`), a strict
    total order, so the result is exactly :func:`sort_by_score`'s (the
    stable sort's unique permutation) whatever ``prev`` was.  A query whose
    insertion sort would move more than ``4 l_q (log2 l_q + 1) + 64``
    times is sorted from scratch instead (:func:`_sort_query`), which
    bounds the cost at a few times the plain sort's; from
    :data:`RADIX_MIN` documents on, more than :data:`RADIX_MOVES` moves
    per document send it to the radix sort (:func:`_radix_query`, the same
    permutation in O(l_q)).  ``zb``: scratch of the longest query's length.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    lmax = 0
    for q in range(len(indptr) - 1):
        lmax = max(lmax, indptr[q + 1] - indptr[q])
    nr = lmax if lmax >= RADIX_MIN else 0
    fkeys = np.empty(nr)
    keys2 = np.empty(nr, dtype=np.uint64)
    idx1 = np.empty(nr, dtype=np.int64)
    idx2 = np.empty(nr, dtype=np.int64)
    count = np.empty(_RADIX_PASSES * _RADIX_BUCKETS if nr else 0,
                     dtype=np.int64)
    _, kb, ib, cnt = _sort_scratch(indptr)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        n = hi - lo
        radix = n >= RADIX_MIN
        if radix:
            budget = RADIX_MOVES * n
        else:
            budget = 64
            m = n
            while m > 0:
                budget += 4 * n
                m //= 2
        moves = 0
        for a in range(n):
            j = prev[lo + a]
            v = z[j]
            pj = pos[j]
            b = a - 1
            while b >= 0:
                i = perm[lo + b]
                if not (_lt(v, zb[b]) or (not _lt(zb[b], v) and pj < pos[i])):
                    break
                zb[b + 1] = zb[b]
                perm[lo + b + 1] = i
                b -= 1
                moves += 1
            zb[b + 1] = v
            perm[lo + b + 1] = j
            if moves > budget:
                break
        if moves > budget:
            if radix:
                _radix_query(z, order, lo, hi, perm, fkeys, keys2, idx1, idx2,
                             count)
            else:
                _sort_query(z, order, lo, hi, perm, zb, kb, ib, cnt)


@njit(cache=True)
def center_per_query(t, order, indptr, out):
    """``out = t`` minus its mean over each query.

    ``A_w`` (Lee & Lin 2014, section 2.2) has rows ``e_i - e_j`` inside one
    query, so ``A_w t`` is unchanged by a per-query shift; centring first
    reduces the cancellation in ``(l_i^+ + l_i^-) t_i - gamma_i^+ - gamma_i^-``.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        if hi == lo:
            continue
        s = 0.0
        for a in range(lo, hi):
            s += t[order[a]]
        mean = s / (hi - lo)
        for a in range(lo, hi):
            out[order[a]] = t[order[a]] - mean


@njit(inline="always")
def _pow2_at_least(k):
    """The smallest power of two ``>= k``: a selection tree's first leaf."""
    p = 1
    while p < k:
        p *= 2
    return p


@njit(inline="always")
def _largest_query(nlev, indptr):
    """``(kmax, lmax)``: the most levels and the most documents of a query."""
    kmax = 1
    lmax = 0
    for q in range(len(indptr) - 1):
        kmax = max(kmax, nlev[q])
        lmax = max(lmax, indptr[q + 1] - indptr[q])
    return kmax, lmax


@njit(inline="always")
def _prefetch_ahead(a, pf, pf_end, step):
    """Prefetch four cache lines of ``a`` from ``a[pf]`` (clamped to ``pf_end - 1``).

    Returns the cursor advanced by ``step`` elements.  The one-pass value
    kernel (:func:`refimpl.kernels.fused.value_grad_one_pass`) spreads the
    next query's rows of ``X`` over the sort and tree sweeps of the current
    one, so that memory and arithmetic overlap; no result depends on it.  Branch-free on purpose: a loop or a
    test here, inside the sweeps, slows the tree down (2x measured); with
    ``step = 0`` it costs nothing.
    """
    if step == 0:
        return pf
    last = max(pf_end - 1, 0)
    prefetch(a, min(pf, last))
    prefetch(a, min(pf + 8, last))
    prefetch(a, min(pf + 16, last))
    prefetch(a, min(pf + 24, last))
    return min(pf + step, max(pf_end, pf))


@njit(inline="always")
def _rows_axpy(X, lo, hi, u, out, pfa, pf, pf_end):
    """``out += sum_{r = lo}^{hi - 1} u[r] X[r]``, row after row.

    Each ``out[j]`` receives the terms ``u[r] X[r, j]`` in row order, four
    rows per sweep over ``out`` (the same sums as one row at a time, with a
    quarter of the loads and stores of ``out``); rows with ``u[r] == 0``
    add zeros.  Four cache lines of the prefetch cursor ``pfa[pf:pf_end]``
    per four rows; returns the cursor.
    """
    d = X.shape[1]
    r = lo
    while r + 4 <= hi:
        if pf < pf_end:
            pf = _prefetch_ahead(pfa, pf, pf_end, 32)
        c0 = u[r]
        c1 = u[r + 1]
        c2 = u[r + 2]
        c3 = u[r + 3]
        if c0 != 0.0 or c1 != 0.0 or c2 != 0.0 or c3 != 0.0:
            for j in range(d):
                o = out[j]
                o += X[r, j] * c0
                o += X[r + 1, j] * c1
                o += X[r + 2, j] * c2
                o += X[r + 3, j] * c3
                out[j] = o
        r += 4
    for rr in range(r, hi):
        c = u[rr]
        if c == 0.0:
            continue
        for j in range(d):
            out[j] += X[rr, j] * c
    return pf


@njit(cache=True)
def _zero_query(perm, lo, hi, l_plus, l_minus, g_plus, g_minus):
    for a in range(lo, hi):
        i = perm[a]
        l_plus[i] = 0
        l_minus[i] = 0
        g_plus[i] = 0.0
        g_minus[i] = 0.0


# --------------------------------------------------------------------------
# selection tree (section 2.4)
# --------------------------------------------------------------------------


@njit(cache=True)
def sv_stats_selection_tree(
    z, t, level, nlev, perm, indptr, margin, l_plus, l_minus, g_plus, g_minus
):
    """Support-vector counts and sums with a selection tree (section 2.4).

    The ``k_q`` levels of a query are the leaves ``P .. P + k_q - 1`` of a
    complete binary tree in an implicit array, ``P = 2^ceil(log2 k_q)``;
    node ``m`` has parent ``m // 2`` and stores the count and the sum of
    ``t`` over its leaves.  Insertion walks leaf -> root adding to every
    node; ``Larger`` walks leaf -> root adding each right sibling met from a
    left child, ``Smaller`` each left sibling met from a right child.
    O(l_q log l_q + l_q log k_q) per query.

    Parameters
    ----------
    z, t : ndarray of float64, shape (n,)
        Scores ``X w`` (decide SV(w), eq. 14) and ``X v`` (summed in
        ``gamma^+-``, eq. 17).
    level : ndarray of int64, shape (n,)
        Level rank of each label inside its query (:func:`label_levels`).
    nlev : ndarray of int64, shape (n_queries,)
        ``k_q`` per query.
    perm : ndarray of int64, shape (n,)
        Each query's documents by increasing ``z`` (:func:`sort_by_score`).
    indptr : ndarray of int64, shape (n_queries + 1,)
        Query boundaries in ``perm``.
    margin : float
        The ``delta`` of the hinge (1 in the paper).
    l_plus, l_minus : ndarray of int64, shape (n,)
        Output ``l_i^+``, ``l_i^-`` at the original indices.
    g_plus, g_minus : ndarray of float64, shape (n,)
        Output ``gamma_i^+``, ``gamma_i^-`` at the original indices.

    Notes
    -----
    Membership tests are ``margin - (z[j] - z[i]) > 0.0`` (``+`` sweep) and
    ``margin - (z[i] - z[j]) > 0.0`` (``-`` sweep), the expression of the
    explicit-pairs kernel; it is monotone in each score under rounding, so
    the swept sets equal the brute-force ones exactly, ties included.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    kmax = 1
    for q in range(len(indptr) - 1):
        kmax = max(kmax, nlev[q])
    pmax = 1
    while pmax < kmax:
        pmax *= 2
    cnt = np.zeros(2 * pmax, dtype=np.int64)
    tsum = np.zeros(2 * pmax, dtype=np.float64)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = nlev[q]
        if k <= 1:
            _zero_query(perm, lo, hi, l_plus, l_minus, g_plus, g_minus)
            continue
        p = 1
        while p < k:
            p *= 2
        # ---- l^+, gamma^+ : increasing z, Larger = right siblings --------
        cnt[: 2 * p] = 0
        tsum[: 2 * p] = 0.0
        b = lo
        for a in range(lo, hi):
            i = perm[a]
            while b < hi and margin - (z[perm[b]] - z[i]) > 0.0:
                j = perm[b]
                m = p + level[j]
                tj = t[j]
                while m >= 1:
                    cnt[m] += 1
                    tsum[m] += tj
                    m //= 2
                b += 1
            c = 0
            s = 0.0
            m = p + level[i]
            while m > 1:
                if m % 2 == 0:  # left child: everything in the sibling is larger
                    c += cnt[m + 1]
                    s += tsum[m + 1]
                m //= 2
            l_plus[i] = c
            g_plus[i] = s
        # ---- l^-, gamma^- : decreasing z, Smaller = left siblings --------
        cnt[: 2 * p] = 0
        tsum[: 2 * p] = 0.0
        b = hi - 1
        for a in range(hi - 1, lo - 1, -1):
            i = perm[a]
            while b >= lo and margin - (z[i] - z[perm[b]]) > 0.0:
                j = perm[b]
                m = p + level[j]
                tj = t[j]
                while m >= 1:
                    cnt[m] += 1
                    tsum[m] += tj
                    m //= 2
                b -= 1
            c = 0
            s = 0.0
            m = p + level[i]
            while m > 1:
                if m % 2 == 1:  # right child: everything in the sibling is smaller
                    c += cnt[m - 1]
                    s += tsum[m - 1]
                m //= 2
            l_minus[i] = c
            g_minus[i] = s


# --------------------------------------------------------------------------
# compensated (double-double) arithmetic for the fused kernels
# --------------------------------------------------------------------------
#
# A per-document coefficient such as sum_j (t_i - t_j) = l t_i - sum_j t_j is
# a small difference of large sums when a query's values form distant
# clusters (+-1e8 with spreads of order 1): in plain float64 the error is
# eps * (l |t_i| + sum |t_j|), not eps * sum |t_i - t_j|.  The fused kernels
# therefore keep every tree sum as an unevaluated pair ``hi + lo`` (the
# rounding errors of the ``hi`` additions, captured exactly by TwoSum, are
# accumulated in ``lo``) and assemble in the same arithmetic, which pushes
# the cancellation error down to eps^2 * (l |t_i| + sum |t_j|).  Every
# operation is an IEEE-754 binary64 addition or multiplication (numba
# contracts nothing into an FMA without ``fastmath``), so the results are
# the same on every machine.


@njit(cache=True)
def _two_sum(a, b):
    """``s + e = a + b`` exactly, ``s = fl(a + b)`` (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@njit(cache=True)
def _two_prod(a, b):
    """``p + e = a * b`` exactly, ``p = fl(a * b)``: ``e = fma(a, b, -p)``.

    Exact unless ``e`` underflows; a non-finite product gives ``e = 0``.
    (Dekker's split product, used before, gives the same ``e``, the error
    being unique, with about 17 operations instead of one where
    ``|a|, |b| < 2^996``.)
    """
    p = a * b
    if not np.isfinite(p):
        return p, 0.0
    return p, fma(a, b, -p)


@njit(cache=True)
def _dd_add(ah, al, bh, bl):
    """Double-double ``(ah + al) + (bh + bl)``, renormalised."""
    s, e = _two_sum(ah, bh)
    e += al + bl
    h = s + e
    return h, e - (h - s)


@njit(cache=True)
def _dd_mul(ah, al, bh, bl):
    """Double-double ``(ah + al) * (bh + bl)``, renormalised."""
    p, e = _two_prod(ah, bh)
    e += ah * bl + al * bh
    h = p + e
    return h, e - (h - p)


@njit(cache=True)
def _dd_scale(c, ah, al):
    """Double-double ``c * (ah + al)`` for an integer count ``c``."""
    p, e = _two_prod(c, ah)
    e += c * al
    h = p + e
    return h, e - (h - p)


@njit(inline="always")
def _count_prod(c, x):
    """``p + e = c * x`` exactly, ``p = fl(c * x)`` (``c`` a count as a float).

    :func:`_two_prod` without its branch (the loops that call it
    vectorise): the same bits.  A non-finite product gives ``e = 0``.
    """
    p = c * x
    e = fma(c, x, -p)
    return p, (e if np.isfinite(p) else 0.0)


@njit(inline="always")
def _dd_scale_count(c, ah, al):
    """:func:`_dd_scale` for a count ``c``, bit for bit (by :func:`_count_prod`)."""
    p, e = _count_prod(c, ah)
    e += c * al
    h = p + e
    return h, e - (h - p)


@njit(inline="always")
def _dd_insert(th, tl, m, x):
    """Add ``x`` to node ``m`` and its ancestors below the root, double-double.

    The root (node 1) is skipped: its sum is never read, since the sibling
    walks stop below it.
    """
    while m > 1:
        s, e = _two_sum(th[m], x)
        th[m] = s
        tl[m] += e
        m >>= 1


@njit(inline="always")
def _dd_siblings(th, tl, m, right):
    """Sum of the right (``right``) or left siblings on the path from ``m`` up.

    Branch-free: the sibling not on the wanted side is slot 0, always 0.
    """
    g = 0.0
    ge = 0.0
    while m > 1:
        if right:  # m even: sibling m + 1; m odd: slot 0
            sib = (m + 1) * (1 - (m & 1))
        else:  # m odd: sibling m - 1; m even: slot 0
            sib = (m - 1) * (m & 1)
        s, e = _two_sum(g, th[sib])
        g = s
        ge += e + tl[sib]
        m >>= 1
    return g, ge


@njit(cache=True)
def hess_dz_selection_tree(
    t, nlev, perm, order, indptr, sweep, out
):
    """Hessian product in score space, ``out = 2 A_w^T A_w t``, in one pass.

    The fused form of :func:`sv_stats_selection_tree` and the assembly of
    eq. 17 for a Hessian-vector product, where the active set (the order
    ``perm`` of the scores and the counts ``l^+-``) is fixed by the last
    function evaluation and only the sums ``gamma^+-(t)`` are new.  The
    scores themselves are not needed: the function evaluation recorded,
    for each document in score order, how far each sweep of Algorithm 2
    had inserted when it reached it, its level and ``l^+ + l^-``
    (:func:`record_sweeps`), and the windows are the whole membership
    test.  Per query: ``t`` is gathered in score order into a contiguous
    buffer (the record is in that order already); the two sweeps keep
    sums only (no counts), in one of two structures chosen by the number
    of levels ``k_q``:

    * ``k_q <= DIRECT_LEVELS`` (8; LETOR has 2-5): the direct per-level
      sweep.  Eight double-double accumulators, the ``m``-th the sum of the
      active ``t_j`` with level above ``m`` (upward sweep) or below ``m``
      (downward sweep), advanced together by one vector step per insertion
      (:func:`refimpl.kernels._ddlanes.dd_step`); ``gamma_i^+-`` is then the
      single accumulator ``m = level_i``.  O(l_q) per query, as direct
      counting (Lee & Lin 2014, section 2.1), but with the levels in the
      lanes of one vector instead of a loop.  Since the windows are known,
      the sweep is split in two branch-free loops: every state of the
      accumulators in turn (:func:`refimpl.kernels._ddlanes.dd_prefix`,
      the state kept in registers), then each document reads lane
      ``level_i`` of the state its window ends at; no data-dependent
      branch, and the same bits as the running sweep.
    * more levels: the selection tree of sums, queried branch-free (a
      node's sibling, or the always-zero slot 0 of the implicit array when
      the sibling is not on the wanted side).  O(l_q log k_q).

    Both add each active ``t_j`` to a double-double sum in the same (sweep)
    order; the tree then combines up to ``log2 k_q`` node sums, the direct
    sweep reads one, so for ``k_q <= 2`` the two are bit for bit the same.
    Then

        out_i = 2 [(l_i^+ + l_i^-) t_i - gamma_i^+ - gamma_i^-]
              = 2 sum_{j in SV_i^+ u SV_i^-} (t_i - t_j)

    is written in place, the product ``(l_i^+ + l_i^-) t_i`` exact
    (:func:`_count_prod`).  The only scratch is the tree of ``2 p``
    double-double sums, the direct sweep's states (``l_q + 1`` rows of
    sixteen values, for queries of up to :data:`PREFIX_DOCS` documents;
    longer ones keep one running state, same bits), and eight buffers of
    the longest query's length, allocated once per call.

    Parameters
    ----------
    t : ndarray of float64, shape (n,)
        ``X v``.
    nlev, perm, indptr
        As in :func:`sv_stats_selection_tree`; ``perm`` must be the sort of
        the scores ``z = X w`` of the last function evaluation
        (:func:`sort_by_score`).
    order : ndarray of int64, shape (n,)
        Query grouping (``order[indptr[q]:indptr[q + 1]]``: query ``q``).
    sweep : ndarray of int64, shape (4, n)
        The record of the sweeps at ``z`` (:func:`record_sweeps`, or the
        output of :func:`value_dz_selection_tree`): windows, levels and
        ``l^+ + l^-`` in score order.  It decides ``SV(w)``.
    out : ndarray of float64, shape (n,)
        Output ``2 A_w^T A_w t``; 0 for documents of one-level queries.

    Notes
    -----
    Accuracy: the sums ``gamma^+-`` are kept in double-double (TwoSum into
    every tree node or accumulator) and the assembly is done in the same
    arithmetic, so
    with ``u = 2^-53``

        |out_i - 2 sum_j (t_i - t_j)| <= u |out_i| + O(l_q u^2)
                                          (l_i |t_i| + sum_j |t_j|),

    a few ulps of the explicit-pairs result whatever the spread of ``t``
    and ``z`` in the query (two clusters at +-1e8 included).  Plain float64
    sums would leave ``u (l_i |t_i| + sum_j |t_j|)``, which is why ``t``
    is no longer centred per query: a rounded centring changes each
    ``t_i - t_j`` by up to ``u (|t_i| + |t_j|)`` (``tests/test_ostree.py``
    checks the bound against ``math.fsum`` of the pair terms).

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    kmax, lmax = _largest_query(nlev, indptr)
    if _prefix_only(kmax, lmax):
        _hess_prefix_loop(None, None, t, nlev, perm, order, indptr, sweep,
                          out, None, lmax)
    else:
        _hess_dz_general(t, nlev, perm, order, indptr, sweep, out, kmax, lmax)


@njit(cache=True)
def _hess_dz_general(t, nlev, perm, order, indptr, sweep, out, kmax, lmax):
    """:func:`hess_dz_selection_tree`, each query by the path it takes."""
    sc = _hess_scratch(kmax, lmax)
    up, down, lev, cnt = _sweep_rows(sweep)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        if nlev[q] <= 1:
            for a in range(lo, hi):
                out[order[a]] = 0.0
            continue
        _hess_query(t, perm, lo, hi - lo, nlev[q], up, down, lev, cnt, out,
                    sc)


#: Rows of the sweep record (:func:`record_sweeps`).
SW_UP, SW_DOWN, SW_LEVEL, SW_COUNT = 0, 1, 2, 3


@njit(cache=True)
def record_sweeps(z, perm, level, nlev, indptr, margin, l_plus, l_minus,
                  sweep):
    """The sweep record of Algorithm 2 at ``z``, in score order.

    For the document ``i = perm[lo + a]`` at sorted position ``a`` of query
    ``q`` (``lo = indptr[q]``, scores increasing), column ``lo + a`` of
    ``sweep`` holds

    * ``SW_UP``: the number of the query's documents ``b`` (in score order,
      from the lowest) with ``margin - (z_b - z_a) > 0``: the upward sweep
      has inserted positions ``0 .. sweep[SW_UP, lo + a] - 1`` when it
      reaches ``a``;
    * ``SW_DOWN``: the first position the downward sweep has inserted, the
      ``b`` from the highest with ``margin - (z_a - z_b) > 0``;
    * ``SW_LEVEL``: ``level[i]``;
    * ``SW_COUNT``: ``l_plus[i] + l_minus[i]``.

    The windows are the membership tests of every sweep in this module, so
    the record fixes ``SV(w)``: :func:`value_dz_selection_tree` writes it
    as it sweeps, and :func:`hess_dz_selection_tree` reads it instead of
    the scores, the levels and the counts (in score order: contiguous).
    Not written for queries of one level (no pairs).  This function
    computes it on its own, for states obtained otherwise (e.g. counts
    from :func:`sv_stats_selection_tree`).

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    for q in range(len(indptr) - 1):
        if nlev[q] <= 1:
            continue
        lo = indptr[q]
        n = indptr[q + 1] - lo
        b = 0
        for a in range(n):
            i = perm[lo + a]
            zi = z[i]
            while b < n and margin - (z[perm[lo + b]] - zi) > 0.0:
                b += 1
            sweep[SW_UP, lo + a] = b
            sweep[SW_LEVEL, lo + a] = level[i]
            sweep[SW_COUNT, lo + a] = l_plus[i] + l_minus[i]
        b = n - 1
        for a in range(n - 1, -1, -1):
            zi = z[perm[lo + a]]
            while b >= 0 and margin - (zi - z[perm[lo + b]]) > 0.0:
                b -= 1
            sweep[SW_DOWN, lo + a] = b + 1


#: Queries with at most this many relevance levels take the direct
#: per-level sweep of :func:`hess_dz_selection_tree` (one lane of an
#: eight-wide double-double vector per level); more levels, the selection
#: tree.  Measured on the 301,916 x 136 problem (5 levels), kernels alone:
#: 0.64-0.72x the tree's time for the Hessian, 0.75x for value and gradient.
#: The value kernel (:func:`_value_dz_query`) uses the same threshold.
DIRECT_LEVELS = LANES

#: Queries of at most this many documents take the direct sweep of
#: :func:`hess_dz_selection_tree` in its prefix form (every state of the
#: accumulators kept: ``16 (l_q + 1)`` values of scratch); longer ones keep
#: one running state, with the same bits.
PREFIX_DOCS = 4096


@njit(inline="always")
def _hess_scratch(kmax, lmax):
    """Scratch of :func:`_hess_query` for queries of up to ``kmax`` levels
    and ``lmax`` documents.

    A tuple ``(P, tb, gh, gl, mh, ml, acc, th, tl)``: the prefix form's
    states (rows of ``2 LANES``), the per-document buffers in score order,
    the running direct sweep's ``LANES`` double-double accumulators (high
    parts, then errors) and the selection tree's node sums (slot 0 stays
    0: the "no sibling" slot).
    """
    rows = min(lmax, PREFIX_DOCS) + 1
    p = _pow2_at_least(kmax)
    return (np.empty(rows * 2 * LANES), np.empty(lmax), np.empty(lmax),
            np.empty(lmax), np.empty(lmax), np.empty(lmax),
            np.zeros(2 * LANES), np.zeros(2 * p), np.zeros(2 * p))


@njit(inline="always")
def _prefix_only(kmax, lmax):
    """Whether every query takes the prefix form of the direct sweep.

    The kernels then run a loop with that form alone, compiled on its own:
    with the other two paths inlined beside it, the same loop took 1.6x the
    time on MQ2008 (0.12 against 0.074 ms per product), though it never
    took them, and in the same function as the general loop 3 % more on the
    301,916 x 136 problem.
    """
    return kmax <= DIRECT_LEVELS and lmax <= PREFIX_DOCS


@njit(cache=True)
def _hess_prefix_loop(X, s, t, nlev, perm, order, indptr, sweep, u, out,
                      lmax):
    """The Hessian product of every query by the prefix form of the sweep.

    With ``X`` and ``s`` ``None`` (:func:`hess_dz_selection_tree`): ``u = 2
    A_w^T A_w t`` from the given ``t``.  With them (the one-pass kernel
    :func:`refimpl.kernels.fused.hess_vec_one_pass`, documents = rows of
    ``X``): per query first ``t_q = X_q s``, then ``u_q``, then ``out +=
    X_q^T u_q``.  numba compiles the two uses apart (``X is None`` is known
    from the argument's type).  The per-query body is written out in the
    loop on purpose: as an inlined function of fifteen array arguments it
    took 1.5x the time on MQ2008 (0.08 against 0.053 ms), the cost of
    passing the arrays once per query.  Every query must qualify
    (:func:`_prefix_only`); the results are those of :func:`_hess_query`.
    """
    width = 2 * LANES
    P = np.empty((min(lmax, PREFIX_DOCS) + 1) * width)
    tb = np.empty(lmax)
    gh = np.empty(lmax)
    gl = np.empty(lmax)
    mh = np.empty(lmax)
    ml = np.empty(lmax)
    up, down, lev, cnt = _sweep_rows(sweep)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        n = hi - lo
        if X is not None:
            for r in range(lo, hi):
                t[r] = row_dot(X, r, s)
        if nlev[q] <= 1:  # no pairs: A_w has no row in this query
            for a in range(lo, hi):
                u[order[a]] = 0.0
            continue
        for a in range(n):
            tb[a] = t[perm[lo + a]]
        lb = lev[lo:hi]
        dd_prefix(P, tb, lb, n, True)
        for a in range(n):
            o = up[lo + a] * width + lb[a]
            gh[a] = P[o]
            gl[a] = P[o + LANES]
        dd_prefix(P, tb, lb, n, False)
        for a in range(n):
            o = down[lo + a] * width + lb[a]
            mh[a] = P[o]
            ml[a] = P[o + LANES]
        for a in range(n):
            ph, pl = _count_prod(float(cnt[lo + a]), tb[a])
            gh[a] = _hess_assemble(ph, pl, gh[a], gl[a], mh[a], ml[a])
        for a in range(n):
            u[perm[lo + a]] = gh[a]
        if X is not None:
            _rows_axpy(X, lo, hi, u, out, t, 0, 0)


@njit(inline="always")
def _sweep_rows(sweep):
    """The four rows of a sweep record (:func:`record_sweeps`), as vectors."""
    return sweep[SW_UP], sweep[SW_DOWN], sweep[SW_LEVEL], sweep[SW_COUNT]


@njit(inline="always")
def _hess_query(t, perm, lo, n, k, up, down, lev, cnt, out, sc):
    """:func:`hess_dz_selection_tree` on one query of ``k >= 2`` levels.

    The query's documents are ``perm[lo:lo + n]`` (sorted by score), their
    record ``up, down, lev, cnt`` (the rows of :func:`record_sweeps`) at
    ``lo:lo + n``; writes ``out`` at those indices.  Scratch: ``sc``
    (:func:`_hess_scratch` of at least ``k`` levels and ``n`` documents).
    The direct per-level sweep for ``k <= DIRECT_LEVELS`` (its prefix form
    up to :data:`PREFIX_DOCS` documents), the selection tree above.  Shared
    with the one-pass kernel :func:`refimpl.kernels.fused.hess_vec_one_pass`;
    where every query takes the prefix form, both run
    :func:`_hess_prefix_loop` instead (:func:`_prefix_only`).
    """
    P, tb, gh, gl, mh, ml, acc, th, tl = sc
    for a in range(n):
        tb[a] = t[perm[lo + a]]
    lb = lev[lo:lo + n]
    cb = cnt[lo:lo + n]
    ub = up[lo:lo + n]
    db = down[lo:lo + n]
    if k <= DIRECT_LEVELS and n <= PREFIX_DOCS:
        _hess_prefix_direct(tb, lb, n, ub, db, P, gh, gl, mh, ml)
    elif k <= DIRECT_LEVELS:
        _hess_sweeps_direct(tb, lb, n, ub, db, acc, gh, gl, mh, ml)
    else:
        _hess_sweeps_tree(tb, lb, n, k, ub, db, th, tl, gh, gl, mh, ml)
    # (l^+ + l^-) t_i - gamma^+ - gamma^- in double-double, in score order
    # (contiguous: the loop vectorises), then scattered
    for a in range(n):
        ph, pl = _count_prod(float(cb[a]), tb[a])
        gh[a] = _hess_assemble(ph, pl, gh[a], gl[a], mh[a], ml[a])
    for a in range(n):
        out[perm[lo + a]] = gh[a]


@njit(inline="always")
def _hess_assemble(ph, pl, g1, g1e, g2, g2e):
    """``2 [(ph + pl) - (g1 + g1e) - (g2 + g2e)]``, double-double inside."""
    s, e = _two_sum(ph, -g1)
    e += pl - g1e
    s2, e2 = _two_sum(s, -g2)
    e2 += e - g2e
    return 2.0 * (s2 + e2)


@njit(inline="always")
def _hess_prefix_direct(tb, lb, n, up, down, P, gh, gl, mh, ml):
    """``gamma^+-`` of one query by the direct sweep in prefix form.

    :func:`_hess_sweeps_direct` without its data-dependent loop: row ``b``
    of ``P`` is the state of the upward sweep after inserting positions
    ``0 .. b - 1`` (:func:`refimpl.kernels._ddlanes.dd_prefix`), and
    document ``a`` reads lane ``level_a`` of row ``up[a]``; then the
    downward sweep's states, row ``b`` after inserting ``n - 1 .. b``, read
    at ``down[a]``.  The same states, hence the same bits.
    """
    width = 2 * LANES
    dd_prefix(P, tb, lb, n, True)
    for a in range(n):
        o = up[a] * width + lb[a]
        gh[a] = P[o]
        gl[a] = P[o + LANES]
    dd_prefix(P, tb, lb, n, False)
    for a in range(n):
        o = down[a] * width + lb[a]
        mh[a] = P[o]
        ml[a] = P[o + LANES]


@njit(inline="always")
def _hess_sweeps_direct(tb, lb, n, up, down, acc, gh, gl, mh, ml):
    """``gamma^+-`` of one query by the direct per-level sweep.

    Lane ``m`` of ``acc`` (``LANES`` high parts, then their errors) holds
    the double-double sum of ``t_j`` over the documents inserted so far
    with level above ``m`` (upward sweep) or below ``m`` (downward sweep);
    one vector step per insertion
    (:func:`refimpl.kernels._ddlanes.dd_step`), and document ``a`` reads
    lane ``level_a``.  The windows ``up``, ``down`` (:func:`record_sweeps`)
    and the insertion order are the tree's.
    """
    acc[:] = 0.0
    b = 0
    for a in range(n):
        while b < up[a]:
            dd_step(acc, tb[b], lb[b], True)
            b += 1
        gh[a] = acc[lb[a]]
        gl[a] = acc[LANES + lb[a]]
    acc[:] = 0.0
    b = n - 1
    for a in range(n - 1, -1, -1):
        while b >= down[a]:
            dd_step(acc, tb[b], lb[b], False)
            b -= 1
        mh[a] = acc[lb[a]]
        ml[a] = acc[LANES + lb[a]]


@njit(inline="always")
def _hess_sweeps_tree(tb, lb, n, k, up, down, th, tl, gh, gl, mh, ml):
    """``gamma^+-`` of one query by the selection tree (any ``k``)."""
    p = _pow2_at_least(k)
    # ---- gamma^+ : increasing z, right siblings met from a left child --
    th[1 : 2 * p] = 0.0
    tl[1 : 2 * p] = 0.0
    b = 0
    for a in range(n):
        while b < up[a]:
            _dd_insert(th, tl, p + lb[b], tb[b])
            b += 1
        g, ge = _dd_siblings(th, tl, p + lb[a], True)
        gh[a] = g
        gl[a] = ge
    # ---- gamma^- : decreasing z, left siblings met from a right child --
    th[1 : 2 * p] = 0.0
    tl[1 : 2 * p] = 0.0
    b = n - 1
    for a in range(n - 1, -1, -1):
        while b >= down[a]:
            _dd_insert(th, tl, p + lb[b], tb[b])
            b -= 1
        g, ge = _dd_siblings(th, tl, p + lb[a], False)
        mh[a] = g
        ml[a] = ge


@njit(cache=True)
def value_dz_selection_tree(
    z, level, nlev, perm, order, indptr, margin, l_plus, l_minus, dz, sweep
):
    """Loss, score gradient and counts at ``z`` in one pass (eqs. 17-19).

    With ``r_ij = margin - (z_i - z_j)`` for ``y_i > y_j`` in one query and
    the support vectors ``SV(w) = {r_ij > 0}`` (eq. 14), returns the loss
    ``sum_SV r_ij^2`` and fills

        l_i^+ = |SV_i^+|,  l_i^- = |SV_i^-|,
        dz_i  = 2 [sum_{j in SV_i^+} r_ji - sum_{j in SV_i^-} r_ij]
              = 2 [(l_i^+ + l_i^-) z_i - gamma_i^+(z) - gamma_i^-(z)
                   - margin (l_i^- - l_i^+)]                      (eq. 19).

    The sweeps are those of :func:`sv_stats_selection_tree` (same
    membership tests, hence the same counts); the tree nodes hold the
    count and double-double sums of ``z_j`` and ``z_j^2`` (of ``z_j - sh``
    when that shift by the query's median score is exact for every
    document, which removes a common offset; else ``sh = 0``).  Queries of
    at most ``DIRECT_LEVELS`` levels keep them instead per level, in the
    lanes of :func:`refimpl.kernels._ddlanes.dd_step_counted` (the sums
    over the levels above, resp. below, each lane's level: one lane read
    per document, as the direct sweep of :func:`hess_dz_selection_tree`;
    bit for bit the tree's for ``k_q <= 2``).  Each ``i`` of
    the upward sweep gets, from the ``c = l_i^+`` active ``j`` above its
    level and ``a = margin + z_i`` (exact as a double-double),

        rho_i^+ = c a - sum z_j         = sum_j r_ji       (all terms > 0),
        V_i     = c a^2 - 2 a sum z_j + sum z_j^2 = sum_j r_ji^2,

    and the downward sweep ``rho_i^- = sum_{j in SV_i^-} r_ij`` likewise;
    the loss is ``sum_i V_i`` (each pair is counted once, at its lower
    label) and ``dz_i = 2 (rho_i^+ - rho_i^-)``.  A query whose scores are
    all equal (every query at ``w = 0``) takes :func:`_value_dz_tied`: no
    sweep, the same bits.

    Parameters
    ----------
    z : ndarray of float64, shape (n,)
        Scores ``X w``.
    level, nlev, perm, order, indptr, margin
        As in :func:`hess_dz_selection_tree`; ``perm`` the sort of ``z``.
    l_plus, l_minus : ndarray of int64, shape (n,)
        Output counts (0 in one-level queries).
    dz : ndarray of float64, shape (n,)
        Output score gradient.
    sweep : ndarray of int64, shape (4, n)
        Output: the sweep record (:func:`record_sweeps`), for
        :func:`hess_dz_selection_tree` at the same ``z``.

    Returns
    -------
    float
        The loss ``sum_SV r_ij^2``.

    Notes
    -----
    Accuracy, with ``u = 2^-53``: ``rho^+-`` are sums of positive terms
    obtained to within ``u rho + O(l_q u^2) (l |a| + sum |z_j|)``, so
    ``dz_i`` is within a few ulps of ``2 sum |r|`` of the explicit-pairs
    value; ``V_i`` is within ``u V_i + O(l_q u^2) (l a^2 + sum z_j^2)``.
    With plain float64 sums (and a rounded per-query centring) the errors
    were ``u (l |a| + sum |z_j|)`` and ``u (l a^2 + sum z_j^2)``: relative
    errors of order 1 when a query's scores form clusters at +-1e8.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    kmax, lmax = _largest_query(nlev, indptr)
    pmax = _pow2_at_least(kmax)
    cnt = np.zeros(2 * pmax, dtype=np.int64)  # slot 0 stays 0
    s1h = np.zeros(2 * pmax)
    s1l = np.zeros(2 * pmax)
    s2h = np.zeros(2 * pmax)
    s2l = np.zeros(2 * pmax)
    acc = np.zeros(5 * LANES)
    zb = np.empty(lmax)
    zs = np.empty(lmax)
    lb = np.empty(lmax, dtype=np.int64)
    rh = np.empty(lmax)
    rl = np.empty(lmax)
    vh = 0.0
    vl = 0.0
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        n = hi - lo
        k = nlev[q]
        if k <= 1:
            for a in range(lo, hi):
                i = order[a]
                l_plus[i] = 0
                l_minus[i] = 0
                dz[i] = 0.0
            continue
        if _tied(z, perm, lo, hi):
            vh, vl = _value_dz_tied(level, perm, lo, n, k, margin, l_plus,
                                    l_minus, dz, sweep, vh, vl, cnt, s1h, s1l,
                                    s2h)
            continue
        vh, vl, _ = _value_dz_query(z, level, perm, lo, n, k, margin, l_plus,
                                    l_minus, dz, sweep, vh, vl, cnt, s1h, s1l,
                                    s2h, s2l, acc, zb, zs, lb, rh, rl, zb, 0,
                                    0, 0)
    return vh + vl


@njit(inline="always")
def _tied(z, perm, lo, hi):
    """Whether a query's scores, sorted in ``perm[lo:hi]``, are all equal and finite.

    Then :func:`_value_dz_tied` applies (NaN sorts last, so a NaN makes
    the ends differ).
    """
    first = z[perm[lo]]
    return first == z[perm[hi - 1]] and np.isfinite(first)


@njit(inline="always")
def _value_dz_query(z, level, perm, lo, n, k, margin, l_plus, l_minus, dz,
                    sweep, vh, vl, cnt, s1h, s1l, s2h, s2l, acc, zb, zs, lb,
                    rh, rl, pfa, pf, pf_end, pf_step):
    """:func:`value_dz_selection_tree` on one query of ``k >= 2`` levels.

    The query's documents are ``perm[lo:lo + n]`` (sorted by ``z``); writes
    ``l_plus``, ``l_minus`` and ``dz`` at those indices, the sweep record
    ``sweep[:, lo:lo + n]`` (:func:`record_sweeps`), and returns the
    double-double loss ``vh + vl`` with this query's terms added, and the
    prefetch cursor.  Scratch: the tree ``cnt, s1h, s1l, s2h, s2l`` (at
    least ``2 p`` nodes, slot 0 zero), the direct sweep's ``acc`` (``5
    LANES``: counts, double-double sums and sums of squares per level,
    :func:`refimpl.kernels._ddlanes.dd_step_counted`; used when ``k <=
    DIRECT_LEVELS``, as in :func:`_hess_query`) and ``zb, zs, lb, rh, rl``
    (at least ``n`` entries).  Shared with the one-pass kernel
    :func:`refimpl.kernels.fused.value_grad_one_pass`, which passes the
    prefetch cursor ``pfa[pf:pf_end]`` (:func:`_prefetch_ahead`, advanced
    by ``pf_step`` elements per document and sweep); ``pf_step = 0``
    switches it off.
    """
    for a in range(n):
        j = perm[lo + a]
        zb[a] = z[j]
        lb[a] = level[j]
        sweep[SW_LEVEL, lo + a] = level[j]
    # Sums are taken of z - sh, sh the query's median score, when every
    # such difference is exact (TwoSum error 0, e.g. all scores within a
    # factor 2 of sh): a common offset then costs nothing, in accuracy or
    # in range (z^2 overflows near 1e154).  Otherwise sh = 0.  Membership
    # is always decided on the raw scores zb.
    sh = zb[n // 2]
    for a in range(n):
        d, e = _two_sum(zb[a], -sh)
        if e != 0.0 or not np.isfinite(d):
            sh = 0.0
            break
    for a in range(n):
        zs[a] = zb[a] - sh
    p = 1
    while p < k:
        p *= 2
    direct = k <= DIRECT_LEVELS  # lanes per level; else the tree
    # ---- l^+, rho^+, V : increasing z, right siblings ----------------
    acc[:] = 0.0
    cnt[1 : 2 * p] = 0
    s1h[1 : 2 * p] = 0.0
    s1l[1 : 2 * p] = 0.0
    s2h[1 : 2 * p] = 0.0
    s2l[1 : 2 * p] = 0.0
    b = 0
    for a in range(n):
        pf = _prefetch_ahead(pfa, pf, pf_end, pf_step)
        zi = zb[a]
        while b < n and margin - (zb[b] - zi) > 0.0:
            m = p + lb[b]
            zj = zs[b]
            qh, ql = _two_prod(zj, zj)
            if direct:
                dd_step_counted(acc, zj, qh, ql, lb[b], True, True)
                m = 1
            while m > 1:  # the root is never read
                cnt[m] += 1
                s, e = _two_sum(s1h[m], zj)
                s1h[m] = s
                s1l[m] += e
                s, e = _two_sum(s2h[m], qh)
                s2h[m] = s
                s2l[m] += e + ql
                m >>= 1
            b += 1
        sweep[SW_UP, lo + a] = b
        c = 0
        g1 = 0.0
        g1e = 0.0
        g2 = 0.0
        g2e = 0.0
        m = p + lb[a]
        if direct:  # one lane: the levels above lb[a]
            c = int(acc[lb[a]])
            g1 = acc[LANES + lb[a]]
            g1e = acc[2 * LANES + lb[a]]
            g2 = acc[3 * LANES + lb[a]]
            g2e = acc[4 * LANES + lb[a]]
            m = 1
        while m > 1:
            sib = (m + 1) * (1 - (m & 1))
            c += cnt[sib]
            s, e = _two_sum(g1, s1h[sib])
            g1 = s
            g1e += e + s1l[sib]
            s, e = _two_sum(g2, s2h[sib])
            g2 = s
            g2e += e + s2l[sib]
            m >>= 1
        i = perm[lo + a]
        l_plus[i] = c
        if c == 0:
            rh[a] = 0.0
            rl[a] = 0.0
            continue
        rh[a], rl[a], xh, xl = _up_terms(c, zs[a], margin, g1, g1e, g2, g2e)
        vh, vl = _dd_add(vh, vl, xh, xl)
    # ---- l^-, rho^- : decreasing z, left siblings ---------------------
    acc[: 3 * LANES] = 0.0
    cnt[1 : 2 * p] = 0
    s1h[1 : 2 * p] = 0.0
    s1l[1 : 2 * p] = 0.0
    b = n - 1
    for a in range(n - 1, -1, -1):
        pf = _prefetch_ahead(pfa, pf, pf_end, pf_step)
        zi = zb[a]
        while b >= 0 and margin - (zi - zb[b]) > 0.0:
            m = p + lb[b]
            zj = zs[b]
            if direct:
                dd_step_counted(acc, zj, 0.0, 0.0, lb[b], False, False)
                m = 1
            while m > 1:  # the root is never read
                cnt[m] += 1
                s, e = _two_sum(s1h[m], zj)
                s1h[m] = s
                s1l[m] += e
                m >>= 1
            b -= 1
        sweep[SW_DOWN, lo + a] = b + 1
        c = 0
        g1 = 0.0
        g1e = 0.0
        m = p + lb[a]
        if direct:  # one lane: the levels below lb[a]
            c = int(acc[lb[a]])
            g1 = acc[LANES + lb[a]]
            g1e = acc[2 * LANES + lb[a]]
            m = 1
        while m > 1:
            sib = (m - 1) * (m & 1)
            c += cnt[sib]
            s, e = _two_sum(g1, s1h[sib])
            g1 = s
            g1e += e + s1l[sib]
            m >>= 1
        i = perm[lo + a]
        l_minus[i] = c
        sweep[SW_COUNT, lo + a] = l_plus[i] + c
        dz[i] = _down_dz(c, zs[a], margin, g1, g1e, rh[a], rl[a])
    return vh, vl, pf


@njit(inline="always")
def _up_terms(c, zsa, margin, g1, g1e, g2, g2e):
    """The upward sweep's terms of one document with ``c = l_i^+ > 0``.

    With ``a = margin + z_i`` and the sums ``S1 = g1 + g1e``, ``S2 = g2 +
    g2e`` of ``z_j``, ``z_j^2`` over its ``c`` active ``j`` above: returns
    ``rho^+ = c a - S1`` and its loss term ``V = a (c a - 2 S1) + S2``,
    both double-double.  Shared by :func:`_value_dz_query` and
    :func:`_value_dz_tied`, so both give the same bits.
    """
    ah, al = _two_sum(margin, zsa)
    ph, pl = _dd_scale_count(float(c), ah, al)  # c a
    g1, g1e = _dd_add(g1, g1e, 0.0, 0.0)
    rh, rl = _dd_add(ph, pl, -g1, -g1e)  # rho^+ = c a - S1
    # V = a (c a - 2 S1) + S2
    bh, bl = _dd_add(ph, pl, -2.0 * g1, -2.0 * g1e)
    xh, xl = _dd_mul(ah, al, bh, bl)
    xh, xl = _dd_add(xh, xl, g2, g2e)
    return rh, rl, xh, xl


@njit(inline="always")
def _down_dz(c, zsa, margin, g1, g1e, rh, rl):
    """``dz_i = 2 (rho^+ - rho^-)`` of one document, ``c = l_i^-``.

    ``rho^- = c (margin - z_i) + S1``, ``S1 = g1 + g1e`` the sum of its
    ``c`` active ``z_j`` below; ``rho^+ = rh + rl``.  Shared as
    :func:`_up_terms`.
    """
    dh, dl = _two_sum(margin, -zsa)
    ph, pl = _dd_scale_count(float(c), dh, dl)
    ph, pl = _dd_add(ph, pl, g1, g1e)
    ph, pl = _dd_add(rh, rl, -ph, -pl)
    return 2.0 * (ph + pl)


@njit(inline="always")
def _value_dz_tied(level, perm, lo, n, k, margin, l_plus, l_minus, dz, sweep,
                   vh, vl, cnt, xh, xl, dzl):
    """:func:`_value_dz_query` on a query whose scores are all equal and finite.

    With every ``z_i`` equal, ``margin - (z_j - z_i) = margin > 0`` makes
    every pair of the query active: each sweep inserts the whole query
    before its first document, so ``l_i^+`` and ``l_i^-`` are the numbers
    of documents of a higher and of a lower level, the sums of the shifted
    scores (``z_j - sh`` with ``sh`` one of the scores: all zero) are
    ``+0.0`` as the lanes and the tree hold them, and ``margin + (z_i -
    sh)`` is ``margin`` exactly.  So every document of one level has the
    same terms (:func:`_up_terms`, :func:`_down_dz`, computed once per
    level with the sweeps' arguments); the loss adds them document by
    document in score order, as the sweep does: the same bits in
    O(l_q + k_q), with no sort needed before (the stable sort of equal
    scores is the query's order).  This is every query at ``w = 0``, a
    solver's usual start.  Scratch: ``cnt`` (``k + 1`` integers; ``cnt[0]``
    stays 0) and ``xh, xl, dzl`` (``k + 1`` values; slot 0 untouched, as
    the tree's "no sibling" slot must stay 0).
    """
    cnt[: k + 1] = 0
    for a in range(n):
        cnt[level[perm[lo + a]] + 1] += 1
    for m in range(k):  # cnt[m]: documents of a level below m
        cnt[m + 1] += cnt[m]
    for m in range(k):
        cp = n - cnt[m + 1]  # documents of a higher level
        rh = 0.0
        rl = 0.0
        xh[m + 1] = 0.0
        xl[m + 1] = 0.0
        if cp > 0:
            rh, rl, xh[m + 1], xl[m + 1] = _up_terms(cp, 0.0, margin, 0.0,
                                                     0.0, 0.0, 0.0)
        dzl[m + 1] = _down_dz(cnt[m], 0.0, margin, 0.0, 0.0, rh, rl)
    for a in range(n):
        i = perm[lo + a]
        m = level[i]
        cp = n - cnt[m + 1]
        l_plus[i] = cp
        l_minus[i] = cnt[m]
        dz[i] = dzl[m + 1]
        sweep[SW_UP, lo + a] = n
        sweep[SW_DOWN, lo + a] = 0
        sweep[SW_LEVEL, lo + a] = m
        sweep[SW_COUNT, lo + a] = cp + cnt[m]
        if cp > 0:
            vh, vl = _dd_add(vh, vl, xh[m + 1], xl[m + 1])
    return vh, vl


# --------------------------------------------------------------------------
# AVL order-statistic tree (sections 2.3 and 2.5)
# --------------------------------------------------------------------------
#
# Node x of the tree is row x of two preallocated arrays: ``inode[x]`` holds
# the integer fields and ``fnode[x]`` the sums.  (One row per node keeps a
# node in one cache line and lets the helpers take two arrays instead of
# eight, which matters: every array argument of a non-inlined numba call
# costs a reference-count update.)

KEY = 0  # relevance level (the key of eq. 24)
LEFT = 1  # left child, -1 if none
RIGHT = 2  # right child, -1 if none
HEIGHT = 3  # AVL height, a leaf has 1
CNT = 4  # count_at_key: instances with this level in the tree
SUBCNT = 5  # subtree_count: size(y) of eq. 25
SUM = 0  # sum_at_key: sum of t over the instances with this level
SUBSUM = 1  # subtree_sum: xv(y) of eq. 28


@njit(cache=True)
def _avl_pull(x, inode, fnode):
    """Recompute height and subtree aggregates of node ``x`` (eqs. 25, 28)."""
    hl = 0
    hr = 0
    c = inode[x, CNT]
    s = fnode[x, SUM]
    lc = inode[x, LEFT]
    rc = inode[x, RIGHT]
    if lc != -1:
        hl = inode[lc, HEIGHT]
        c += inode[lc, SUBCNT]
        s += fnode[lc, SUBSUM]
    if rc != -1:
        hr = inode[rc, HEIGHT]
        c += inode[rc, SUBCNT]
        s += fnode[rc, SUBSUM]
    inode[x, HEIGHT] = 1 + max(hl, hr)
    inode[x, SUBCNT] = c
    fnode[x, SUBSUM] = s


@njit(cache=True)
def _avl_height(x, inode):
    return 0 if x == -1 else inode[x, HEIGHT]


@njit(cache=True)
def _avl_rotate(x, inode, fnode, up):
    """Rotate the subtree at ``x``; ``up = LEFT`` lifts its left child (a
    right rotation), ``up = RIGHT`` its right child.  Returns the new root."""
    down = RIGHT if up == LEFT else LEFT
    y = inode[x, up]
    inode[x, up] = inode[y, down]
    inode[y, down] = x
    _avl_pull(x, inode, fnode)
    _avl_pull(y, inode, fnode)
    return y


@njit(cache=True)
def _avl_rebalance(x, inode, fnode):
    """Pull ``x``'s aggregates, rotate if unbalanced; return the subtree root."""
    _avl_pull(x, inode, fnode)
    bal = _avl_height(inode[x, LEFT], inode) - _avl_height(inode[x, RIGHT], inode)
    if bal > 1:  # left-heavy: LL or LR case
        lc = inode[x, LEFT]
        if _avl_height(inode[lc, LEFT], inode) < _avl_height(inode[lc, RIGHT], inode):
            inode[x, LEFT] = _avl_rotate(lc, inode, fnode, RIGHT)
        return _avl_rotate(x, inode, fnode, LEFT)
    if bal < -1:  # right-heavy: RR or RL case
        rc = inode[x, RIGHT]
        if _avl_height(inode[rc, RIGHT], inode) < _avl_height(inode[rc, LEFT], inode):
            inode[x, RIGHT] = _avl_rotate(rc, inode, fnode, LEFT)
        return _avl_rotate(x, inode, fnode, RIGHT)
    return x


@njit(cache=True)
def _avl_insert(kv, tv, root, n_nodes, inode, fnode, path):
    """Insert one instance with level ``kv`` and value ``tv``.

    An existing key only adds ``(1, tv)`` to its node and to the subtree
    aggregates on the root path; a new key becomes node ``n_nodes`` and the
    path is retraced bottom-up with AVL rotations.  Returns the new
    ``(root, n_nodes)``.
    """
    depth = 0
    x = root
    while x != -1:
        path[depth] = x
        depth += 1
        kx = inode[x, KEY]
        if kv < kx:
            x = inode[x, LEFT]
        elif kv > kx:
            x = inode[x, RIGHT]
        else:
            inode[x, CNT] += 1
            fnode[x, SUM] += tv
            for d in range(depth):
                inode[path[d], SUBCNT] += 1
                fnode[path[d], SUBSUM] += tv
            return root, n_nodes
    new = n_nodes
    inode[new, KEY] = kv
    inode[new, LEFT] = -1
    inode[new, RIGHT] = -1
    inode[new, HEIGHT] = 1
    inode[new, CNT] = 1
    inode[new, SUBCNT] = 1
    fnode[new, SUM] = tv
    fnode[new, SUBSUM] = tv
    if depth == 0:
        return new, n_nodes + 1
    parent = path[depth - 1]
    if kv < inode[parent, KEY]:
        inode[parent, LEFT] = new
    else:
        inode[parent, RIGHT] = new
    # Retrace.  While the subtree height grows, pull and rebalance; after a
    # rotation (which restores the height of before the insertion) or once
    # a height is unchanged, the ancestors only gain (1, tv) in aggregate.
    grow = True
    for d in range(depth - 1, -1, -1):
        x = path[d]
        if not grow:
            inode[x, SUBCNT] += 1
            fnode[x, SUBSUM] += tv
            continue
        old_height = inode[x, HEIGHT]
        sub = _avl_rebalance(x, inode, fnode)
        if sub != x:
            grow = False
            if d == 0:
                root = sub
            else:
                par = path[d - 1]
                if inode[par, LEFT] == x:
                    inode[par, LEFT] = sub
                else:
                    inode[par, RIGHT] = sub
        else:
            grow = inode[x, HEIGHT] != old_height
    return root, n_nodes + 1


@njit(cache=True)
def _avl_larger(root, yv, inode, fnode):
    """``Larger(root, y_i)`` of eq. 26, extended to the sums of eq. 28."""
    c = 0
    s = 0.0
    x = root
    while x != -1:
        kx = inode[x, KEY]
        rc = inode[x, RIGHT]
        if kx > yv:
            c += inode[x, CNT]
            s += fnode[x, SUM]
            if rc != -1:
                c += inode[rc, SUBCNT]
                s += fnode[rc, SUBSUM]
            x = inode[x, LEFT]
        elif kx < yv:
            x = rc
        else:
            if rc != -1:
                c += inode[rc, SUBCNT]
                s += fnode[rc, SUBSUM]
            break
    return c, s


@njit(cache=True)
def _avl_smaller(root, yv, inode, fnode):
    """``Smaller(root, y_i)``: the mirror image of eq. 26."""
    c = 0
    s = 0.0
    x = root
    while x != -1:
        kx = inode[x, KEY]
        lc = inode[x, LEFT]
        if kx < yv:
            c += inode[x, CNT]
            s += fnode[x, SUM]
            if lc != -1:
                c += inode[lc, SUBCNT]
                s += fnode[lc, SUBSUM]
            x = inode[x, RIGHT]
        elif kx > yv:
            x = lc
        else:
            if lc != -1:
                c += inode[lc, SUBCNT]
                s += fnode[lc, SUBSUM]
            break
    return c, s


@njit(cache=True)
def sv_stats_avl(
    z, t, level, nlev, perm, indptr, margin, l_plus, l_minus, g_plus, g_minus
):
    """Support-vector counts and sums with an AVL order-statistic tree.

    Algorithm 2 of Lee & Lin (2014) with the tree of section 2.3 balanced as
    an AVL tree (section 2.5): one node per relevance level present, keyed by
    the level.  Node ``x`` is row ``x`` of two preallocated arrays holding
    ``key, left, right, height, count_at_key, subtree_count`` (int64) and
    ``sum_at_key, subtree_sum`` (float64), the aggregates of eqs. 24-25 and
    28.  Inserting an existing key updates the aggregates on its root path;
    a new key adds a node and rebalances by rotations.  ``Larger`` and
    ``Smaller`` (eq. 26) walk down from the root.
    O(l_q log l_q + l_q log k_q) per query.

    Parameters
    ----------
    z, t, level, nlev, perm, indptr, margin
        As in :func:`sv_stats_selection_tree`.
    l_plus, l_minus : ndarray of int64, shape (n,)
        Output ``l_i^+``, ``l_i^-`` at the original indices.
    g_plus, g_minus : ndarray of float64, shape (n,)
        Output ``gamma_i^+``, ``gamma_i^-`` at the original indices.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    kmax = _largest_query(nlev, indptr)[0]
    inode = np.empty((kmax, 6), dtype=np.int64)
    fnode = np.empty((kmax, 2), dtype=np.float64)
    path = np.empty(kmax + 1, dtype=np.int64)  # AVL depth <= 1.44 log2(k) + 1
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        if nlev[q] <= 1:
            _zero_query(perm, lo, hi, l_plus, l_minus, g_plus, g_minus)
            continue
        # ---- l^+, gamma^+ : increasing z -------------------------------
        root = -1
        n_nodes = 0
        b = lo
        for a in range(lo, hi):
            i = perm[a]
            while b < hi and margin - (z[perm[b]] - z[i]) > 0.0:
                j = perm[b]
                root, n_nodes = _avl_insert(
                    level[j], t[j], root, n_nodes, inode, fnode, path
                )
                b += 1
            c, s = _avl_larger(root, level[i], inode, fnode)
            l_plus[i] = c
            g_plus[i] = s
        # ---- l^-, gamma^- : decreasing z -------------------------------
        root = -1
        n_nodes = 0
        b = hi - 1
        for a in range(hi - 1, lo - 1, -1):
            i = perm[a]
            while b >= lo and margin - (z[i] - z[perm[b]]) > 0.0:
                j = perm[b]
                root, n_nodes = _avl_insert(
                    level[j], t[j], root, n_nodes, inode, fnode, path
                )
                b -= 1
            c, s = _avl_smaller(root, level[i], inode, fnode)
            l_minus[i] = c
            g_minus[i] = s
