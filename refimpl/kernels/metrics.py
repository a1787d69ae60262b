"""numba kernels behind :mod:`refimpl.metrics`.

Every kernel works on documents that :mod:`refimpl.metrics` has already
validated, grouped by query and put in the order the kernel needs, with the
query boundaries in ``indptr`` (int64, ``n_queries + 1`` entries, no empty
query).  Gains, discounts, relevance flags and label ranks are computed in
NumPy beforehand, so the kernels only accumulate.  Results go into
preallocated ``out`` arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def ndcg_kernel(gain_ranked, gain_ideal, discount, indptr, ks,
                truncate_short, no_relevant, out, out_mean):
    """NDCG@k for every query and every k, and the mean of NDCG@1..l_q.

    ``gain_ranked`` holds each query's gains in ranked order and
    ``gain_ideal`` the same gains sorted decreasingly; ``discount[i]`` is the
    discount of (0-based) position ``i``.  For ``k > l_q`` the result is
    NDCG@l_q if ``truncate_short`` else 0.  Where the ideal DCG is 0 the
    value is ``no_relevant``.  Writes ``out[q, j]`` = NDCG@ks[j] of query q
    and ``out_mean[q]`` = mean of NDCG@1..l_q.
    """
    n_queries = indptr.shape[0] - 1
    max_len = 0
    for q in range(n_queries):
        max_len = max(max_len, indptr[q + 1] - indptr[q])
    prefix = np.empty(max_len)
    for q in range(n_queries):
        start = indptr[q]
        length = indptr[q + 1] - start
        dcg = 0.0
        idcg = 0.0
        total = 0.0
        for i in range(length):
            dcg += gain_ranked[start + i] * discount[i]
            idcg += gain_ideal[start + i] * discount[i]
            value = dcg / idcg if idcg > 0.0 else no_relevant
            prefix[i] = value
            total += value
        out_mean[q] = total / length
        for j in range(ks.shape[0]):
            k = ks[j]
            if k <= length:
                out[q, j] = prefix[k - 1]
            elif truncate_short:
                out[q, j] = prefix[length - 1]
            else:
                out[q, j] = 0.0


@njit(cache=True)
def precision_ap_kernel(relevant, indptr, ks, pad_short, out_p, out_ap):
    """P@k for every query and k, and average precision of every query.

    ``relevant`` holds each query's binary relevance in ranked order.  For
    ``k > l_q`` the missing positions count as irrelevant (numRel/k) if
    ``pad_short`` else P@k is 0.  AP is 0 for a query without relevant
    documents.
    """
    n_queries = indptr.shape[0] - 1
    max_len = 0
    for q in range(n_queries):
        max_len = max(max_len, indptr[q + 1] - indptr[q])
    n_rel_at = np.empty(max_len, dtype=np.int64)
    for q in range(n_queries):
        start = indptr[q]
        length = indptr[q + 1] - start
        n_rel = 0
        ap = 0.0
        for i in range(length):
            if relevant[start + i]:
                n_rel += 1
                ap += n_rel / (i + 1.0)
            n_rel_at[i] = n_rel
        out_ap[q] = ap / n_rel if n_rel > 0 else 0.0
        for j in range(ks.shape[0]):
            k = ks[j]
            if k <= length:
                out_p[q, j] = n_rel_at[k - 1] / k
            elif pad_short:
                out_p[q, j] = n_rel / k
            else:
                out_p[q, j] = 0.0


@njit(cache=True)
def _fenwick_add(tree, pos, size):
    """Add 1 at 1-based position ``pos`` of a Fenwick tree of ``size``."""
    while pos <= size:
        tree[pos] += 1
        pos += pos & (-pos)


@njit(cache=True)
def _fenwick_prefix(tree, pos):
    """Sum of the 1-based positions ``1..pos`` of a Fenwick tree."""
    total = 0
    while pos > 0:
        total += tree[pos]
        pos -= pos & (-pos)
    return total


@njit(cache=True)
def pairwise_count_kernel(label_rank, scores, indptr, out):
    """Count correctly ordered pairs and all pairs with different labels.

    Within each query the documents are sorted by increasing score and
    ``label_rank`` is the dense rank (0, 1, ...) of each label inside its
    query.  Blocks of equal score are first queried, then inserted, so a
    document only counts earlier documents of strictly lower score; the
    Fenwick tree over label ranks returns how many of those have a strictly
    lower label.  Writes ``out[0]`` = number of pairs (i, j) of one query
    with ``y_i > y_j`` and ``s_i > s_j``, ``out[1]`` = number with
    ``y_i > y_j`` and, if ``out`` has a third entry, ``out[2]`` = number
    with ``y_i > y_j`` and ``s_i = s_j`` (tied scores).  O(l_q log l_q) per
    query.
    """
    n_queries = indptr.shape[0] - 1
    max_len = 0
    for q in range(n_queries):
        max_len = max(max_len, indptr[q + 1] - indptr[q])
    tree = np.zeros(max_len + 1, dtype=np.int64)
    count = np.zeros(max_len, dtype=np.int64)
    n_correct = 0
    n_pairs = 0
    n_tied = 0
    block = np.zeros(max_len, dtype=np.int64)
    for q in range(n_queries):
        start = indptr[q]
        end = indptr[q + 1]
        length = end - start
        tree[: length + 1] = 0
        count[:length] = 0
        i = start
        while i < end:
            j = i
            while j < end and scores[j] == scores[i]:
                j += 1
            for t in range(i, j):
                n_correct += _fenwick_prefix(tree, label_rank[t])
            for t in range(i, j):
                _fenwick_add(tree, label_rank[t] + 1, length)
                count[label_rank[t]] += 1
            if j - i > 1:
                # tied pairs with different labels inside this block
                m = j - i
                same = 0
                for t in range(i, j):
                    same += block[label_rank[t]]
                    block[label_rank[t]] += 1
                n_tied += m * (m - 1) // 2 - same
                for t in range(i, j):
                    block[label_rank[t]] = 0
            i = j
        n_pairs += length * (length - 1) // 2
        for r in range(length):
            n_pairs -= count[r] * (count[r] - 1) // 2
    out[0] = n_correct
    out[1] = n_pairs
    if out.shape[0] > 2:
        out[2] = n_tied
