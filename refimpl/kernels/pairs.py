"""Kernels enumerating the preference pairs of grouped ranking data."""

import numpy as np
from numba import njit

#: Queries with at most this many distinct labels are counted by a linear
#: scan of their sorted distinct labels (no sort, no allocation per query;
#: LETOR has 2-5); queries with more are sorted.
LABEL_SCAN = 16


@njit(cache=True)
def sort_labels(a):
    """Sort ``a`` in place, increasing (heapsort, O(n log n), not stable).

    For the fallback of queries with more than :data:`LABEL_SCAN` distinct
    labels, where only the sorted values matter.  ``np.sort`` would do, but
    numba compiles its quicksort for seconds on every first fit, for a path
    LETOR data never takes.
    """
    n = len(a)
    for end in range(n, 0, -1):
        # build the max-heap on the first pass, then move its root to the end
        first = n // 2 - 1 if end == n else 0
        for root in range(first, -1, -1):
            i = root
            while True:
                child = 2 * i + 1
                if child >= end:
                    break
                if child + 1 < end and a[child] < a[child + 1]:
                    child += 1
                if not a[i] < a[child]:
                    break
                a[i], a[child] = a[child], a[i]
                i = child
        a[0], a[end - 1] = a[end - 1], a[0]


@njit(cache=True)
def distinct_labels(y, order, lo, hi, vals, counts):
    """The distinct labels of ``order[lo:hi]``, increasing, and their counts.

    Fills ``vals[:k]`` and ``counts[:k]`` (buffers of at least
    :data:`LABEL_SCAN` entries) and returns ``k``, or ``-1`` as soon as the
    query has more than :data:`LABEL_SCAN` distinct labels (the caller then
    sorts).  Labels are compared with ``<`` and ``==``, as a sort would
    (``-0.0 == 0.0``); they are finite (validated at the boundary).
    """
    k = 0
    for a in range(lo, hi):
        v = y[order[a]]
        pos = 0
        for m in range(k):  # no early exit: a branch the CPU can predict
            pos += vals[m] < v
        if pos < k and vals[pos] == v:
            counts[pos] += 1
            continue
        if k == LABEL_SCAN:
            return -1
        for m in range(k, pos, -1):
            vals[m] = vals[m - 1]
            counts[m] = counts[m - 1]
        vals[pos] = v
        counts[pos] = 1
        k += 1
    return k


@njit(cache=True)
def count_pairs_per_query(y, order, indptr, out):
    """out[q] = number of (i, j) in query q with y_i > y_j.

    Each document is preferred over every document with a strictly smaller
    label: with the counts ``c_1, ..., c_k`` of the query's distinct labels
    in increasing order, ``sum_m c_m (c_1 + ... + c_{m-1})``.  The counts
    come from :func:`distinct_labels` (O(l_q k_q)); a query with more than
    :data:`LABEL_SCAN` distinct labels is sorted instead (O(l_q log l_q)).
    """
    n_queries = len(indptr) - 1
    vals = np.empty(LABEL_SCAN)
    counts = np.empty(LABEL_SCAN, dtype=np.int64)
    for q in range(n_queries):
        lo, hi = indptr[q], indptr[q + 1]
        k = distinct_labels(y, order, lo, hi, vals, counts)
        if k >= 0:
            total = 0
            below = 0
            for m in range(k):
                total += counts[m] * below
                below += counts[m]
            out[q] = total
            continue
        labels = y[order[lo:hi]]
        sort_labels(labels)
        total = 0
        start = 0
        for t in range(1, hi - lo + 1):
            if t == hi - lo or labels[t] != labels[start]:
                # the run labels[start:t] is preferred to the `start` lower ones
                total += (t - start) * start
                start = t
        out[q] = total


@njit(cache=True)
def fill_pairs(y, order, indptr, offsets, out_i, out_j):
    """Write every preference pair, query by query, from offsets[q] on.

    Inside a query the pairs are listed in input order of i, then of j, which
    makes the enumeration deterministic and easy to check against a double loop.
    """
    n_queries = len(indptr) - 1
    for q in range(n_queries):
        lo, hi = indptr[q], indptr[q + 1]
        k = offsets[q]
        for a in range(lo, hi):
            i = order[a]
            for b in range(lo, hi):
                j = order[b]
                if y[i] > y[j]:
                    out_i[k] = i
                    out_j[k] = j
                    k += 1


# --------------------------------------------------------------------------
# partial pairs: adjacent relevance levels (Lee & Lin 2014, section 5)
# --------------------------------------------------------------------------


@njit(cache=True)
def count_adjacent_pairs_per_query(y, order, indptr, out):
    """out[q] = number of pairs of query q whose labels are adjacent levels.

    A pair ``(i, j)`` of query ``q`` is kept when ``y_i > y_j`` and no label
    of ``q`` lies strictly between them (Lee & Lin 2014, section 5: "two
    adjacent relevance levels").  With the distinct labels of the query
    sorted into runs of sizes ``c_0, c_1, ..., c_{k-1}``, the count is
    ``sum_r c_r c_{r-1}``: O(l_q log l_q), and at most O(l_q^2 / 4) pairs
    (O(l_q) when every level holds O(1) documents, as in MQ2008-list).
    """
    n_queries = len(indptr) - 1
    for q in range(n_queries):
        lo, hi = indptr[q], indptr[q + 1]
        labels = y[order[lo:hi]]
        sort_labels(labels)
        total = 0
        start = 0
        prev_run = 0  # size of the run of the next lower level, 0 at first
        for t in range(1, hi - lo + 1):
            if t == hi - lo or labels[t] != labels[start]:
                total += (t - start) * prev_run
                prev_run = t - start
                start = t
        out[q] = total


@njit(cache=True)
def fill_adjacent_pairs(y, order, indptr, offsets, out_i, out_j):
    """Write the adjacent-level pairs, query by query, from offsets[q] on.

    Same listing order as :func:`fill_pairs` restricted to the kept pairs:
    ``i`` in the order of ``order`` (input order), then ``j`` in the same
    order.  The documents of each query are stably sorted by label once,
    so ``j`` ranges over the run of the next lower level directly:
    O(l_q log l_q + p_q) per query instead of a double loop.
    """
    n_queries = len(indptr) - 1
    lmax = 0
    for q in range(n_queries):
        lmax = max(lmax, indptr[q + 1] - indptr[q])
    lev = np.empty(lmax, dtype=np.int64)  # level of the document at order[lo + a]
    run_start = np.empty(lmax + 1, dtype=np.int64)  # runs in the label sort
    for q in range(n_queries):
        lo, hi = indptr[q], indptr[q + 1]
        m = hi - lo
        if m == 0:
            continue
        idx = order[lo:hi]
        s = np.argsort(y[idx], kind="mergesort")  # stable: ties keep `order`
        r = -1
        for a in range(m):
            if a == 0 or y[idx[s[a]]] != y[idx[s[a - 1]]]:
                r += 1
                run_start[r] = a
            lev[s[a]] = r
        run_start[r + 1] = m
        k = offsets[q]
        for a in range(m):
            rl = lev[a]
            if rl == 0:
                continue
            i = idx[a]
            for b in range(run_start[rl - 1], run_start[rl]):
                out_i[k] = i
                out_j[k] = idx[s[b]]
                k += 1


@njit(cache=True)
def nonzero_columns(X, rows, seen):
    """Mark in ``seen`` the columns of ``X`` not 0 on some row of ``rows``.

    ``seen`` (bool, one per column) starts all False; returns how many
    columns are marked.  Stops at the first row by which every column is
    marked: on dense features a few rows, where ``np.any(X != 0, axis=0)``
    reads all of ``X`` and writes a mask as large.
    """
    d = X.shape[1]
    found = 0
    for r in rows:
        for j in range(d):
            if not seen[j] and X[r, j] != 0.0:
                seen[j] = True
                found += 1
        if found == d:
            break
    return found


@njit(cache=True)
def sum_pair_inf_norm_sq(X, pi, pj):
    """``sum_t max_k (X[pi[t], k] - X[pj[t], k])**2`` for a dense ``X``.

    Theorem 1's constant of FSMRank with explicit pairs, in one pass over
    the pairs and no ``p x d`` difference matrix (gathering it cost more
    than the whole first-order fit on mid-sized LETOR shapes).
    """
    total = 0.0
    for t in range(len(pi)):
        i = pi[t]
        j = pj[t]
        m = 0.0
        for k in range(X.shape[1]):
            v = abs(X[i, k] - X[j, k])
            if v > m:
                m = v
        total += m * m
    return total
