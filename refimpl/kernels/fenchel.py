"""numba kernels of FenchelRank (Lai et al. 2013): line search and greedy step.

Notation of the paper, section 5.6: for the pairs ``(i, j)`` of ``P`` (one
row ``K_t = x_i - x_j`` each), ``a_t = 1/r - K_t w`` and ``c_t = K_t b``
where ``b = s e_j - w`` is the Frank-Wolfe direction.  Everything is computed
from document scores ``z = X w`` and ``u = X b``, never from ``K``.

As every kernel of :mod:`refimpl.kernels`, these take contiguous float64 /
int64 arrays, never validate (the solver does that in Python first) and are
compiled with ``cache=True``, no ``fastmath``.

Derived in: book/03_fenchelrank_duality.md#fenchelrank
"""

import numpy as np
from numba import njit


@njit(cache=True)
def pair_residuals(z, u, pi, pj, margin, a_out, kb_out):
    """Per-pair ``a_t = margin - (z_i - z_j)`` and ``(K b)_t = u_i - u_j``.

    With ``z = X w``, ``u = X b`` and ``margin = 1/r`` these are the
    ``a_t^{(i)}`` and ``K_i b_t`` of eq. 20.  Writes ``a_out`` and ``kb_out``
    (length ``p``).

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    for t in range(len(pi)):
        i = pi[t]
        j = pj[t]
        a_out[t] = margin - (z[i] - z[j])
        kb_out[t] = u[i] - u[j]


@njit(cache=True)
def sum_squares_diff(u, pi, pj):
    """``||K b||^2 = sum_t (u_i - u_j)^2`` over the pairs, ``u = X b``.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    total = 0.0
    for t in range(len(pi)):
        d = u[pi[t]] - u[pj[t]]
        total += d * d
    return total


@njit(cache=True)
def _active_sums(a, c, mu):
    """``(sum a_t c_t, sum c_t^2)`` over the pairs with ``a_t - mu c_t > 0``."""
    s_ac = 0.0
    s_cc = 0.0
    for t in range(len(a)):
        if c[t] != 0.0 and a[t] - mu * c[t] > 0.0:
            s_ac += a[t] * c[t]
            s_cc += c[t] * c[t]
    return s_ac, s_cc


@njit(cache=True)
def _sift_down(key, val, start, m):
    """Restore the min-heap property of ``key[:m]`` below ``start``."""
    i = start
    while True:
        left = 2 * i + 1
        if left >= m:
            return
        small = left
        right = left + 1
        if right < m and key[right] < key[left]:
            small = right
        if key[small] >= key[i]:
            return
        key[i], key[small] = key[small], key[i]
        val[i], val[small] = val[small], val[i]
        i = small


@njit(cache=True)
def linesearch_pairs(a, kb):
    """Exact minimiser of ``phi(mu) = sum_t max(0, a_t - mu c_t)^2`` on [0, 1].

    The sorted-breakpoint method of eqs. 20-21: ``phi`` is a convex
    piecewise quadratic whose pieces change at the breakpoints ``a_t / c_t``
    (``c = kb = K b``).  On a piece with fixed active set ``A``,
    ``phi'(mu) = -2 (S_ac - mu S_cc)`` with ``S_ac = sum_A a_t c_t`` and
    ``S_cc = sum_A c_t^2``, so its root is ``S_ac / S_cc``.  The sweep visits
    the breakpoints in ``(0, 1)`` in increasing order, updating the two sums
    (a pair with ``c_t > 0`` leaves ``A`` at ``a_t / c_t``, one with
    ``c_t < 0`` enters there), and stops on the first piece where ``phi'``
    reaches 0.  The two sums of that piece are then recomputed from scratch
    (one O(p) pass), so the running updates cannot accumulate rounding into
    the returned step.

    Instead of sorting all ``m`` breakpoints (the paper's O(p log p)), they
    are kept in a binary heap and popped in increasing order only until the
    root is found: O(p + k log m) for ``k`` breakpoints crossed, at most
    O(p log p).  (numba's sort is several times slower than NumPy's, and the
    root usually lies before most breakpoints.)

    Cases that never create a breakpoint in ``(0, 1)``: ``c_t = 0``
    (constant term ``max(0, a_t)^2``); ``c_t > 0, a_t <= 0`` (inactive on all
    of [0, 1]); ``c_t > 0, a_t >= c_t`` (active on all of [0, 1));
    ``c_t < 0, a_t >= 0`` (active on all of (0, 1]); ``c_t < 0,
    a_t <= c_t`` (inactive on [0, 1]).

    Parameters
    ----------
    a : ndarray of float64, shape (p,)
        ``a_t = 1/r - K_t w``.
    kb : ndarray of float64, shape (p,)
        ``c_t = K_t b``.

    Returns
    -------
    float
        The smallest minimiser ``mu`` of ``phi`` on [0, 1] (``phi`` can be
        flat at its minimum, e.g. when no active pair has ``c_t != 0``).

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    p = len(a)
    # active set on (0, eps): pairs with a_t - mu c_t > 0 for small mu > 0
    s_ac = 0.0
    s_cc = 0.0
    n_act = 0  # active pairs with c_t != 0 (the only ones in the sums)
    m = 0
    bp = np.empty(p)
    ev = np.empty(p, dtype=np.int64)
    for t in range(p):
        c = kb[t]
        at = a[t]
        if c > 0.0:
            if at > 0.0:
                s_ac += at * c
                s_cc += c * c
                n_act += 1
                tb = at / c
                if tb < 1.0:  # leaves A at tb
                    bp[m] = tb
                    ev[m] = t
                    m += 1
        elif c < 0.0:
            if at >= 0.0:
                s_ac += at * c
                s_cc += c * c
                n_act += 1
            else:
                tb = at / c
                if tb < 1.0:  # enters A at tb > 0
                    bp[m] = tb
                    ev[m] = t
                    m += 1
    for start in range(m // 2 - 1, -1, -1):
        _sift_down(bp, ev, start, m)
    lo = 0.0
    while True:
        hi = bp[0] if m > 0 else 1.0
        # phi'(lo) >= 0: lo is the smallest minimiser (phi' was < 0 before)
        if s_ac - lo * s_cc <= 0.0:
            return lo
        if s_cc > 0.0 and s_ac <= hi * s_cc:
            # root in (lo, hi]: recompute the sums on this piece exactly
            s_ac2, s_cc2 = _active_sums(a, kb, 0.5 * (lo + hi))
            mu = s_ac2 / s_cc2 if s_cc2 > 0.0 else lo
            return min(max(mu, lo), hi)
        if m == 0:
            return 1.0
        # cross every breakpoint equal to hi
        while m > 0 and bp[0] == hi:
            t = ev[0]
            c = kb[t]
            if c > 0.0:
                s_ac -= a[t] * c
                s_cc -= c * c
                n_act -= 1
            else:
                s_ac += a[t] * c
                s_cc += c * c
                n_act += 1
            m -= 1
            bp[0] = bp[m]
            ev[0] = ev[m]
            _sift_down(bp, ev, 0, m)
        if n_act == 0:
            # no rounding residue: phi is flat from here on
            s_ac = 0.0
            s_cc = 0.0
        lo = hi


@njit(cache=True)
def phi_derivatives(a, kb, mu):
    """``(phi(mu), phi'(mu), phi''(mu))`` of eq. 20 at one ``mu``.

    ``phi'' = 2 sum_{a_t - mu c_t > 0} c_t^2`` (the generalised second
    derivative, active set decided at ``mu``).  A direct O(p) evaluation used
    by the Newton line search on explicit arrays and by the tests.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    f = 0.0
    d1 = 0.0
    d2 = 0.0
    for t in range(len(a)):
        r = a[t] - mu * kb[t]
        if r > 0.0:
            f += r * r
            d1 -= 2.0 * kb[t] * r
            d2 += 2.0 * kb[t] * kb[t]
    return f, d1, d2


@njit(cache=True)
def greedy_coordinate(g):
    """Greedy feature of Algorithm 1, line 3: ``j = argmax_j |g_j|``.

    Returns ``(j, s)`` with ``s = sign(g_j)`` and ``sign(0) = +1`` (the
    paper's convention); the first index wins ties.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    best = -1.0
    jbest = 0
    for j in range(len(g)):
        v = abs(g[j])
        if v > best:
            best = v
            jbest = j
    s = 1.0 if g[jbest] >= 0.0 else -1.0
    return jbest, s
