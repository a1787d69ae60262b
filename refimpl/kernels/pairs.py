"""Kernels enumerating the preference pairs of grouped ranking data."""

import numpy as np
from numba import njit


@njit(cache=True)
def count_pairs_per_query(y, order, indptr, out):
    """out[q] = number of (i, j) in query q with y_i > y_j.  O(l_q^2) worst case.

    Counted from the sorted labels of each query: a document preferred over
    every document with a strictly smaller label.
    """
    n_queries = len(indptr) - 1
    for q in range(n_queries):
        lo, hi = indptr[q], indptr[q + 1]
        labels = np.sort(y[order[lo:hi]])
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
