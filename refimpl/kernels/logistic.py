"""Explicit-pairs kernels of the pairwise logistic loss (RankNet's, LifeRank's).

They work on document scores ``s = X v`` only: one pass over the pair index
arrays costs O(p) and returns ``d loss / d s``, one number per document, so
the caller finishes the gradient with one BLAS product ``X^T ds`` and the
``p x n`` pair-difference matrix is never formed.

The loss of a pair ``(i, j)`` with margin ``m = s_i - s_j`` is
``log(1 + e^{-m})`` and ``-d/dm`` of it is ``sigma(-m) = 1 / (1 + e^{m})``.

:func:`value_ds` needs one exponential per *document* instead of one per
pair: with ``a_i = exp(s_i - c_q)``, ``c_q`` the largest score of the query
(so ``0 < a_i <= 1``, no overflow), ``e^{-m} = a_j / a_i``, hence
``sigma(-m) = a_j / (a_i + a_j)`` and the loss is ``log1p(a_j / a_i)``.
When ``a_i`` or ``a_j`` underflows (a score more than ~575 below its
query's best) the pair falls back to the direct form
:func:`value_ds_direct` uses for every pair, which never exponentiates a
positive number.

The loss value needs ``sum_t log1p(r_t)``, one logarithm per pair, which
would cost more than everything else in the loop.  It is accumulated
instead as the logarithm of a product, kept as its excess over one:
``u <- u + r + u r`` is ``(1 + u)(1 + r) - 1``, and ``log1p(u)`` is added to
the total only when ``u`` passes ``FOLD`` (one logarithm per ~44 units of
loss) and once at the end; ``r > PROD_MAX`` calls ``log1p`` directly.
Keeping ``u`` rather than the product ``1 + u`` matters when the loss is
small: ``1 + r`` would round ``r`` to an absolute ``1.1e-16``, a relative
error of ``1e-10`` on a loss of ``1e-6``, whereas each update of ``u`` has
a few ulps of *relative* error, so the value keeps relative accuracy at
every scale (the same as summing ``log1p`` terms).
"""

import math

import numpy as np
from numba import njit

#: Below this, ``a_i = exp(s_i - c_q)`` is treated as underflowed.
TINY = 1e-250

#: Factors ``1 + r`` above this are logged one by one.
PROD_MAX = 2.0 ** 64

#: The excess ``u`` of the running product over one is logged and reset
#: when it passes this (``u r <= 2**128``: far from overflow).
FOLD = 2.0 ** 64


@njit(cache=True)
def _direct(m):
    """``(log(1 + e^{-m}), sigma(-m))`` without overflow for any ``m``."""
    e = math.exp(-abs(m))
    value = max(-m, 0.0) + math.log1p(e)
    g = (e if m > 0.0 else 1.0) / (1.0 + e)
    return value, g


@njit(cache=True)
def value_ds(s, order, indptr, pi, pj, a, ds):
    """Loss value and its gradient with respect to the scores.

    Returns ``sum_t log(1 + exp(-(s[pi[t]] - s[pj[t]])))`` and writes
    ``ds = d loss / d s`` (overwritten).  ``order``/``indptr`` group the
    documents by query (:class:`refimpl._validation.QueryGroups`) and every
    pair must lie inside one query; ``a`` is a work array of length
    ``len(s)``.  Pairs sharing ``i`` are accumulated in a register when
    consecutive, as :func:`refimpl.pairs.preference_pairs` lists them.
    """
    for q in range(len(indptr) - 1):
        lo, hi = indptr[q], indptr[q + 1]
        c = -np.inf
        for t in range(lo, hi):
            c = max(c, s[order[t]])
        for t in range(lo, hi):
            i = order[t]
            a[i] = math.exp(s[i] - c)
    ds[:] = 0.0
    total = 0.0
    u = 0.0             # prod(1 + r) - 1, see the module docstring
    cur = -1
    acc = 0.0
    ai = 0.0
    for t in range(len(pi)):
        i = pi[t]
        if i != cur:
            if cur >= 0:
                ds[cur] += acc
            cur = i
            acc = 0.0
            ai = a[i]
        j = pj[t]
        aj = a[j]
        if ai > TINY and aj > TINY:
            r = aj / ai                      # e^{-(s_i - s_j)}
            if r <= PROD_MAX:
                u += r + u * r
                if u > FOLD:
                    total += math.log1p(u)
                    u = 0.0
            else:
                total += math.log1p(r)
            g = aj / (ai + aj)
        else:
            value, g = _direct(s[i] - s[j])
            total += value
        acc -= g
        ds[j] += g
    if cur >= 0:
        ds[cur] += acc
    return total + math.log1p(u)


@njit(cache=True)
def value_ds_direct(s, pi, pj, ds):
    """As :func:`value_ds` with one exponential and one ``log1p`` per pair.

    The straightforward kernel: no query grouping needed, pairs in any
    order; about twice as slow (transcendental functions dominate).
    """
    ds[:] = 0.0
    total = 0.0
    cur = -1
    acc = 0.0
    si = 0.0
    for t in range(len(pi)):
        i = pi[t]
        if i != cur:
            if cur >= 0:
                ds[cur] += acc
            cur = i
            acc = 0.0
            si = s[i]
        j = pj[t]
        value, g = _direct(si - s[j])
        total += value
        acc -= g
        ds[j] += g
    if cur >= 0:
        ds[cur] += acc
    return total
