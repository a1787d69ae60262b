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

import time

import numpy as np
from numba import njit, objmode

from ._blocklanes import LANES, hinge_lanes, step_lanes
from .fused import row_dots
from .ostree import (
    _count_prod,
    _dd_add,
    _dd_mul,
    _dd_scale_count,
    _rows_axpy,
    _two_prod,
    _two_sum,
)

# the lanes' specifications, compiled, finish a block after its multiple of
# 4 (and collect a block's few breakpoints below the bound)
_hinge_tail = njit(inline="always")(hinge_lanes)
_step_tail = njit(inline="always")(step_lanes)


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


# inlined: a call with the literal 0 (and, while numba still types the
# loops of linesearch_pairs, a literal heap size) would compile a separate
# specialisation each, three in all on a first fit
@njit(inline="always")
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


# --------------------------------------------------------------------------
# Algorithm 1 on label blocks: the pairs enumerated per query, not stored
# --------------------------------------------------------------------------
#
# The documents are laid out query by query, each query's by decreasing
# label (refimpl.pairs.label_blocks), so that the pairs (i, k) of P with a
# given i are the documents k = start[i] .. stop[i] - 1: the rest of the
# query below i's label.  A pass over P is then a pass over the ``heads``
# (the documents with a partner) with a contiguous inner loop, and needs
# neither index arrays nor gathers.  The inner loops run in four vector
# lanes (refimpl.kernels._blocklanes: lane l takes k - start = l mod 4, the
# lanes combined as (0 + 1) + (2 + 3)), in a fixed order, so the bits are
# the same on every machine.

#: Largest number of breakpoints :func:`block_linesearch` keeps from its one
#: pass; beyond it, the exact search on explicit arrays takes over.
BLOCK_BREAKPOINTS = 4096

#: Why :func:`block_linesearch` left the step undecided (its negative results).
STEP_BEYOND, STEP_OVERFLOW, STEP_CANCELLED = -1.0, -2.0, -3.0

#: Factor by which :func:`block_iteration` raises a bound the step exceeded
#: (twice; then the bound is 1).
TAU_GROWTH = 16.0

#: :func:`block_linesearch` leaves the step to the exact search when the
#: breakpoints it crossed carry more than this many times what is left in
#: its running sums (then at most ~4 bits of them are rounding).
CANCEL = 16.0


@njit(cache=True)
def block_value_dz(z, heads, start, stop, margin, dz):
    """Loss ``sum_P max(0, margin - (z_i - z_k))^2`` and ``dz = d loss / d z``.

    The pairs are the label blocks (``(i, k)`` for each ``i`` in ``heads``
    and ``k`` in ``start[i] .. stop[i] - 1``); writes ``dz`` (every entry).
    The residual is formed as in
    :func:`refimpl.kernels.squared_hinge.value_dz`; the block of each
    ``i`` runs in the four vector lanes of
    :func:`refimpl.kernels._blocklanes.hinge_lanes` (sums combined as
    ``(0 + 1) + (2 + 3)``).

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    dz[:] = 0.0
    acc = np.zeros(2 * LANES)
    for h in range(len(heads)):
        i = heads[h]
        lo = start[i]
        hi = stop[i]
        # the vector loop reads up to LANES - 1 scores past the block
        mid = hi if hi + LANES - 1 <= len(z) else hi - (hi - lo) % LANES
        acc[4] = 0.0
        acc[5] = 0.0
        acc[6] = 0.0
        acc[7] = 0.0
        hinge_lanes(z, lo, mid, z[i], margin, dz, acc)
        if mid < hi:  # (unguarded, the inlined tail slows the loop 2x)
            _hinge_tail(z, mid, hi, z[i], margin, dz, acc)
        dz[i] -= 2.0 * ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    return (acc[0] + acc[1]) + (acc[2] + acc[3])


@njit(cache=True)
def block_residuals(z, u, heads, start, stop, margin, a_out, kb_out):
    """:func:`pair_residuals` over the label blocks, pairs in block order.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    t = 0
    for h in range(len(heads)):
        i = heads[h]
        for k in range(start[i], stop[i]):
            a_out[t] = margin - (z[i] - z[k])
            kb_out[t] = u[i] - u[k]
            t += 1
    return t


@njit(cache=True)
def block_linesearch(z, u, heads, start, stop, margin, tau, bp, found_a, found_c):
    """Exact step of eq. 20 over the label blocks, usually in one pass.

    The minimiser on [0, 1] of ``phi(mu) = sum_P max(0, a_t - mu c_t)^2``
    with ``a_t = margin - (z_i - z_k)`` and ``c_t = u_i - u_k`` (``u = X
    b``), found as :func:`linesearch_pairs` finds it -- the sums ``S_ac``,
    ``S_cc`` of the active set just right of 0, then the breakpoints in
    increasing order until ``phi'`` reaches 0 -- but without a heap of all
    breakpoints: one pass forms the two sums and keeps only the
    breakpoints below ``tau`` (Frank-Wolfe steps shrink slowly, so the
    solver passes a few times the last step), at most ``len(bp)`` of them.
    They are sorted and swept.  If the root lies below ``tau`` it is found
    there, on the same piece and by the same formula ``S_ac / S_cc`` as the
    heap search (with running sums over the few crossed breakpoints); if
    not, if too many breakpoints lie below ``tau``, or if the crossed terms
    exceed :data:`CANCEL` times what is left in the sums (which the heap
    search recomputes from scratch, since the difference is then mostly
    rounding), the step is not decided here.

    ``bp``, ``found_a`` and ``found_c`` are buffers of one length (the
    breakpoints, their ``a_t`` and their ``c_t``; ``n_found`` counts them).
    A breakpoint is kept when
    ``a < tau' c`` (``c > 0``) or ``a > tau' c`` (``c < 0``) with ``tau'`` a
    little above ``tau``, so that every pair left out has ``a / c > tau``
    whatever the rounding of the test.

    Returns
    -------
    mu : float
        The smallest minimiser, or a negative code when it is not decided
        here: :data:`STEP_BEYOND` (-1, the root lies above ``tau``),
        :data:`STEP_OVERFLOW` (-2, more than ``len(bp)`` breakpoints below
        ``tau``) or :data:`STEP_CANCELLED` (-3, the crossed terms dwarf the
        running sums).  :func:`block_iteration` then raises ``tau``, takes
        buffers for every pair, or runs :func:`linesearch_pairs` on
        :func:`block_residuals`.
    s_cc : float
        ``sum c_t^2`` over the pairs active at 0+, for the caller's overflow
        check.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    bound = min(tau, 1.0) * (1.0 + 2.0**-40)
    acc = np.zeros(2 * LANES)
    n_found = np.zeros(1, dtype=np.int64)
    for h in range(len(heads)):
        i = heads[h]
        lo = start[i]
        hi = stop[i]
        mid = hi if hi + LANES - 1 <= len(z) else hi - (hi - lo) % LANES
        # (appends the few pairs whose breakpoint lies below tau)
        step_lanes(z, u, lo, mid, z[i], u[i], margin, bound, acc, n_found,
                   found_a, found_c)
        if mid < hi:  # (unguarded, the inlined tail slows the loop 2x)
            _step_tail(z, u, mid, hi, z[i], u[i], margin, bound, acc, n_found,
                       found_a, found_c)
    s_ac = (acc[0] + acc[1]) + (acc[2] + acc[3])
    s_cc = (acc[4] + acc[5]) + (acc[6] + acc[7])
    m = n_found[0]
    s_cc0 = s_cc
    if m > len(bp):
        return STEP_OVERFLOW, s_cc0
    for t in range(m):
        bp[t] = found_a[t] / found_c[t]
    # the kept breakpoints in a heap, popped in increasing order (usually
    # a few dozen of the m before the root)
    ev = np.arange(m)
    for first in range(m // 2 - 1, -1, -1):
        _sift_down(bp, ev, first, m)
    cap = min(tau, 1.0)
    lo = 0.0
    # magnitudes of the terms crossed out of (or into) the running sums
    x_ac = 0.0
    x_cc = 0.0
    while True:
        # the piece ends at the next kept breakpoint, or at cap: below tau
        # every breakpoint was kept
        nxt = bp[0] if m > 0 else np.inf
        hi = min(nxt, cap)
        decided = s_ac - lo * s_cc <= 0.0 or (s_cc > 0.0 and s_ac <= hi * s_cc)
        if decided and (x_cc > CANCEL * s_cc or x_ac > CANCEL * abs(s_ac)):
            # the crossed terms dwarf what is left: the running sums are
            # mostly rounding, so recompute exactly (the caller's fallback)
            return STEP_CANCELLED, s_cc0
        if s_ac - lo * s_cc <= 0.0:
            return lo, s_cc0
        if s_cc > 0.0 and s_ac <= hi * s_cc:
            return min(max(s_ac / s_cc, lo), hi), s_cc0
        if nxt >= cap:
            # phi' < 0 up to cap: the step is 1 if cap = 1, else undecided
            return (1.0 if tau >= 1.0 else STEP_BEYOND), s_cc0
        while m > 0 and bp[0] == hi:
            t = ev[0]
            c = found_c[t]
            x_ac += abs(found_a[t] * c)
            x_cc += c * c
            if c > 0.0:
                s_ac -= found_a[t] * c
                s_cc -= c * c
            else:
                s_ac += found_a[t] * c
                s_cc += c * c
            m -= 1
            bp[0] = bp[m]
            ev[0] = ev[m]
            _sift_down(bp, ev, 0, m)
        # (when the last active pair leaves, what is left is rounding: the
        # cancellation test above hands such a step to the exact search)
        lo = hi


@njit(cache=True)
def gather_columns(X, cols, out):
    """``out = X[:, cols]`` (C-contiguous), row after row.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    for r in range(X.shape[0]):
        for c in range(len(cols)):
            out[r, c] = X[r, cols[c]]


@njit(cache=True)
def block_value_grad(X, z, heads, start, stop, margin, dz, g):
    """:func:`block_value_dz`, then ``g = X^T dz`` (rows in block order).

    ``X`` holds the documents' rows in the block layout (C-contiguous); the
    product adds the rows in order, skipping those with ``dz = 0`` (no
    active pair), in the fixed order of
    :func:`refimpl.kernels.ostree._rows_axpy`.  Returns the loss.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    value = block_value_dz(z, heads, start, stop, margin, dz)
    g[:] = 0.0
    _rows_axpy(X, 0, X.shape[0], dz, g, dz, 0, 0)
    return value


@njit(cache=True)
def block_gap(graw, scale, r2, w, g):
    """``g = -r^2 scale graw`` (eq. 12), the greedy vertex and the gap (eq. 16).

    ``graw = X^T dz`` of :func:`block_value_grad`; writes ``g`` and returns
    ``(j, s, gap)`` with ``(j, s)`` of :func:`greedy_coordinate` and
    ``gap = |g_j| - g^T w`` (summed in index order).  A NaN or infinity in
    ``g`` makes the gap NaN (``g^T w`` meets it even where ``w`` is 0).

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    gw = 0.0
    for k in range(len(g)):
        g[k] = -r2 * (scale * graw[k])
        gw += g[k] * w[k]
    j, s = greedy_coordinate(g)
    return j, s, abs(g[j]) - gw


@njit(cache=True)
def block_iteration(X, xj, s, j, w, z, u, dz, graw, g, heads, start, stop,
                    margin, scale, r2, tau, bp, found_a, found_c, n_pairs):
    """One update of Algorithm 1 (eq. 18, exact step) and the gap after it.

    With ``z = X w`` (block layout), ``xj`` column ``j`` of ``X`` and the
    greedy vertex ``s e_j``: ``u = X b = s xj - z`` for ``b = s e_j - w``,
    the exact step ``mu`` by :func:`block_linesearch` (again with
    :data:`TAU_GROWTH` times the bound while the step lies beyond it, with
    buffers for every pair when too many breakpoints lie below it, and by
    :func:`linesearch_pairs` on :func:`block_residuals` when the running
    sums cancel), then ``w <- (1 - mu) w + mu s e_j``,
    ``z <- z + mu u`` (no product with ``X``), :func:`block_value_grad`
    and :func:`block_gap` at the new point.

    Returns
    -------
    mu : float
    n_pass : int
        Passes over the pairs the step took (one per
        :func:`block_linesearch`, two for the explicit search).
    s_cc : float
        ``sum c_t^2`` of the pairs active at 0+ (checked by the caller).
    value : float
        The unscaled loss at the new iterate (``nan`` when ``mu`` or
        ``s_cc`` is not finite; then nothing is updated).
    j, s, gap
        :func:`block_gap` at the new iterate.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    for i in range(len(z)):
        u[i] = s * xj[i] - z[i]
    mu, s_cc = block_linesearch(z, u, heads, start, stop, margin, tau, bp,
                                found_a, found_c)
    n_pass = 1
    while mu == STEP_BEYOND:
        # a longer step than the bound expected: a bound 16x as large,
        # twice, then every breakpoint of (0, 1)
        tau = min(TAU_GROWTH * tau, 1.0) if n_pass < 3 else 1.0
        mu, s_cc = block_linesearch(z, u, heads, start, stop, margin, tau,
                                    bp, found_a, found_c)
        n_pass += 1
    if mu == STEP_OVERFLOW:
        # room for every pair's breakpoint: it can only be decided now
        big = np.empty((3, n_pairs))
        mu, s_cc = block_linesearch(z, u, heads, start, stop, margin, tau,
                                    big[0], big[1], big[2])
        n_pass += 1
    if mu < 0.0:
        a = np.empty(n_pairs)
        c = np.empty(n_pairs)
        block_residuals(z, u, heads, start, stop, margin, a, c)
        mu = linesearch_pairs(a, c)
        n_pass += 2
    if not (np.isfinite(mu) and np.isfinite(s_cc)):
        return mu, n_pass, s_cc, np.nan, j, s, np.nan
    for i in range(len(z)):
        z[i] += mu * u[i]
    for k in range(len(w)):
        w[k] *= 1.0 - mu
    w[j] += mu * s
    value = block_value_grad(X, z, heads, start, stop, margin, dz, graw)
    jn, sn, gap = block_gap(graw, scale, r2, w, g)
    return mu, n_pass, s_cc, value, jn, sn, gap


#: What :func:`block_run` stopped on (``istate[RUN_STATUS]``).
RUN_CONVERGED, RUN_MAX_ITER, RUN_PAUSED, RUN_BAD_STEP, RUN_BAD_STATE = range(5)

#: Entries of :func:`block_run`'s integer state.
RUN_J, RUN_J_LAST, RUN_ITER, RUN_SINCE_REFRESH, RUN_LS, RUN_RECORDS, \
    RUN_STATUS = range(7)

#: Entries of its float state.
RUN_VALUE, RUN_GAP, RUN_S, RUN_TAU, RUN_S_CC = range(5)

#: Columns of its history: the keys of the solver's history, in order
#: (:func:`refimpl.solvers.fenchelrank` describes them).
RUN_HISTORY = ("obj", "dual", "gap", "step", "j", "nnz", "ls_eval", "time")


# cached like the kernels that call it: uncached, every process compiles it
@njit(cache=True)
def _clock():
    with objmode(t="float64"):
        t = time.perf_counter()
    return t


@njit(cache=True)
def block_evaluate(X, w, z, dz, graw, g, heads, start, stop, margin, scale,
                   r2):
    """Fresh scores ``z = X w``, then the loss and :func:`block_gap`.

    Returns ``(value, j, s, gap)``.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    row_dots(X, w, z)
    value = block_value_grad(X, z, heads, start, stop, margin, dz, graw)
    j, s, gap = block_gap(graw, scale, r2, w, g)
    return value, j, s, gap


@njit(cache=True)
def block_record(hist, istate, fstate, w, scale, r2, t0):
    """Append the current iterate to the history (the solver's keys)."""
    k = istate[RUN_RECORDS]
    obj = r2 * (scale * fstate[RUN_VALUE])          # P(w_t), eq. (3.5)
    hist[0, k] = obj
    hist[1, k] = obj - fstate[RUN_GAP]              # D(alpha_t) = P - gap
    hist[2, k] = fstate[RUN_GAP]
    hist[3, k] = fstate[RUN_TAU]
    hist[4, k] = istate[RUN_J_LAST]
    hist[5, k] = np.count_nonzero(w)
    hist[6, k] = istate[RUN_LS]
    hist[7, k] = _clock() - t0
    istate[RUN_RECORDS] = k + 1


@njit(cache=True)
def block_run(X, XF, w, z, u, dz, graw, g, heads, start, stop, margin, scale,
              r2, tol, max_iter, refresh_every, growth, bp, found_a, found_c, n_pairs,
              istate, fstate, hist, t0, max_updates):
    """Algorithm 1 on the label blocks, from a recorded iterate onwards.

    The loop of :func:`refimpl.solvers.fenchelrank` (``line_search=
    "blocks"``) compiled: stop when eq. 17 holds (``gap <= tol``) or
    after ``max_iter`` updates, else update by :func:`block_iteration`
    (scores recomputed first every ``refresh_every`` updates; the step
    bound ``tau`` is ``growth`` times the last step), confirm a stop at
    fresh scores (:func:`block_evaluate`), record the iterate
    (:func:`block_record`).  Returns after ``max_updates`` updates
    (``RUN_PAUSED``: the caller runs its callback and calls again), or on
    a non-finite step or curvature (``RUN_BAD_STEP``) or loss or gap
    (``RUN_BAD_STATE``), leaving the culprits in ``fstate`` for the
    caller's error.  The state lives in ``istate`` (``RUN_J`` ...) and
    ``fstate`` (``RUN_VALUE`` ...); ``XF`` gives the columns of ``X``
    (a Fortran copy, or ``X`` itself).

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    done = 0
    while True:
        if fstate[RUN_GAP] <= tol:
            istate[RUN_STATUS] = RUN_CONVERGED
            return
        if istate[RUN_ITER] >= max_iter:
            istate[RUN_STATUS] = RUN_MAX_ITER
            return
        if done >= max_updates:
            istate[RUN_STATUS] = RUN_PAUSED
            return
        done += 1
        istate[RUN_ITER] += 1
        if istate[RUN_SINCE_REFRESH] >= refresh_every:
            row_dots(X, w, z)
            istate[RUN_SINCE_REFRESH] = 0
        j = istate[RUN_J]
        mu_last = fstate[RUN_TAU]
        tau = growth * mu_last if mu_last > 0.0 else 1.0
        mu, n_ls, s_cc, value, jn, sn, gap = block_iteration(
            X, XF[:, j], fstate[RUN_S], j, w, z, u, dz, graw, g, heads, start,
            stop, margin, scale, r2, tau, bp, found_a, found_c, n_pairs)
        fstate[RUN_TAU] = mu
        fstate[RUN_S_CC] = s_cc
        if not (np.isfinite(mu) and np.isfinite(s_cc)):
            istate[RUN_STATUS] = RUN_BAD_STEP
            return
        istate[RUN_J_LAST] = j
        istate[RUN_LS] = n_ls
        istate[RUN_SINCE_REFRESH] += 1
        fresh = False
        while True:
            fstate[RUN_VALUE] = value
            fstate[RUN_GAP] = gap
            fstate[RUN_S] = sn
            istate[RUN_J] = jn
            # (a finite gap means a finite g: g^T w meets every entry)
            if not (np.isfinite(scale * value) and np.isfinite(gap)):
                istate[RUN_STATUS] = RUN_BAD_STATE
                return
            if fresh or not (gap <= tol or istate[RUN_ITER] >= max_iter):
                break
            # confirm the stop at fresh scores: the certificate is then
            # free of the rounding carried along the steps
            value, jn, sn, gap = block_evaluate(X, w, z, dz, graw, g, heads,
                                                start, stop, margin, scale, r2)
            istate[RUN_SINCE_REFRESH] = 0
            fresh = True
        block_record(hist, istate, fstate, w, scale, r2, t0)


# --------------------------------------------------------------------------
# Every pair active: the squared hinge is a quadratic, no sort needed
# --------------------------------------------------------------------------
#
# When every pair (i, j), y_i > y_j, of every query has r_ij = margin -
# (z_i - z_j) > 0, the counts are l_i^+ = the documents above i's level and
# l_i^- = those below, and the sums gamma^+- of eq. 17 are sums over whole
# levels: value, score gradient and Hessian product need one pass over the
# documents and per-level sums, O(l + k^2) per query, and no order of the
# scores.  On the l1 ball of eq. 4 this is the rule, not the exception, when
# r max |x_i - x_j|_inf < 1: then |z_i - z_j| <= ||w||_1 ||x_i - x_j||_inf
# < 1/r for every pair (features in [0, 1] and r <= 1).  The tree kernels
# (refimpl.kernels.ostree) decide membership by the same test, so where
# all_pairs_active holds they have the same active set, and the sums below
# are kept in the same double-double arithmetic (same results to a few
# ulps; tests/test_fenchelrank_tree.py).


@njit(cache=True)
def _max_levels(nlev, indptr):
    """The largest number of levels of a query (at least 1): buffer length."""
    kmax = 1
    for q in range(len(indptr) - 1):
        kmax = max(kmax, nlev[q])
    return kmax


@njit(cache=True)
def _level_sum_buffers(kmax):
    """Per-level count and double-double sums of ``u`` and ``u^2``
    (``cnt, s1h, s1l, s2h, s2l``), filled by :func:`_level_sums`."""
    return (np.zeros(kmax, dtype=np.int64), np.zeros(kmax), np.zeros(kmax),
            np.zeros(kmax), np.zeros(kmax))


@njit(cache=True)
def all_pairs_active(z, level, nlev, order, indptr, margin):
    """Whether ``margin - (z_i - z_j) > 0`` for every pair ``y_i > y_j`` of a query.

    ``level``, ``nlev``, ``order``, ``indptr``: the query levels of
    :func:`refimpl.kernels.ostree.label_levels` (higher level, higher
    label) and the query grouping.  The test is that of the tree kernels,
    in floating point; it is monotone in ``z_i`` and in ``z_j``, so it holds
    for every pair when it holds for the highest score of each level and
    the lowest score of the levels below it: one pass, O(l + k) per query.
    ``False`` as soon as a score of a query with two levels or more is not
    finite.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    kmax = _max_levels(nlev, indptr)
    lo_z = np.empty(kmax)
    hi_z = np.empty(kmax)
    for q in range(len(indptr) - 1):
        k = nlev[q]
        if k <= 1:
            continue
        lo_z[:k] = np.inf
        hi_z[:k] = -np.inf
        for a in range(indptr[q], indptr[q + 1]):
            i = order[a]
            v = z[i]
            if not np.isfinite(v):
                return False
            m = level[i]
            if v < lo_z[m]:
                lo_z[m] = v
            if v > hi_z[m]:
                hi_z[m] = v
        low = lo_z[0]
        for m in range(1, k):
            if not margin - (hi_z[m] - low) > 0.0:
                return False
            low = min(low, lo_z[m])
    return True


@njit(inline="always")
def _level_sums(z, sh, level, order, lo, hi, k, cnt, s1h, s1l, s2h, s2l,
                squares):
    """Per-level counts and double-double sums of ``z - sh`` (and squares)."""
    cnt[:k] = 0
    s1h[:k] = 0.0
    s1l[:k] = 0.0
    s2h[:k] = 0.0
    s2l[:k] = 0.0
    for a in range(lo, hi):
        i = order[a]
        m = level[i]
        x = z[i] - sh
        cnt[m] += 1
        s, e = _two_sum(s1h[m], x)
        s1h[m] = s
        s1l[m] += e
        if squares:
            qh, ql = _two_prod(x, x)
            s, e = _two_sum(s2h[m], qh)
            s2h[m] = s
            s2l[m] += e + ql


@njit(inline="always")
def _query_shift(z, order, lo, hi):
    """A score of the query whose difference with every score is exact, else 0.

    The tree kernels' device (there the median): a common offset of the
    scores then costs nothing in the sums.
    """
    sh = z[order[lo]]
    for a in range(lo, hi):
        d, e = _two_sum(z[order[a]], -sh)
        if e != 0.0 or not np.isfinite(d):
            return 0.0
    return sh


@njit(inline="always")
def _level_quadratic(k, cnt, s1h, s1l, s2h, s2l, margin, vh, vl):
    """Add ``sum_{b < a} sum_{i in b, j in a} (margin + x_i - x_j)^2`` to ``vh + vl``.

    Over the level pairs of one query from its per-level counts ``n_m`` and
    double-double sums ``S1_m``, ``S2_m`` of ``x`` and ``x^2``: with
    ``c^+``, ``S1^+``, ``S2^+`` the same over the levels above ``m`` and
    ``a_i = margin + x_i``, level ``m`` contributes
    ``c^+ sum a_i^2 - 2 S1^+ sum a_i + n_m S2^+``.
    """
    ch = 0
    ah = 0.0
    al = 0.0
    bh = 0.0
    bl = 0.0
    mh, ml = _two_prod(margin, margin)
    for m in range(k - 1, -1, -1):
        nm = float(cnt[m])
        if ch > 0:
            c = float(ch)
            sa_h, sa_l = _dd_scale_count(nm, margin, 0.0)
            sa_h, sa_l = _dd_add(sa_h, sa_l, s1h[m], s1l[m])
            sq_h, sq_l = _dd_scale_count(nm, mh, ml)
            th, tl = _dd_mul(2.0 * margin, 0.0, s1h[m], s1l[m])
            sq_h, sq_l = _dd_add(sq_h, sq_l, th, tl)
            sq_h, sq_l = _dd_add(sq_h, sq_l, s2h[m], s2l[m])
            xh, xl = _dd_scale_count(c, sq_h, sq_l)
            th, tl = _dd_mul(ah, al, sa_h, sa_l)
            xh, xl = _dd_add(xh, xl, -2.0 * th, -2.0 * tl)
            th, tl = _dd_scale_count(nm, bh, bl)
            xh, xl = _dd_add(xh, xl, th, tl)
            vh, vl = _dd_add(vh, vl, xh, xl)
        ch += cnt[m]
        ah, al = _dd_add(ah, al, s1h[m], s1l[m])
        bh, bl = _dd_add(bh, bl, s2h[m], s2l[m])
    return vh, vl


@njit(cache=True)
def all_active_value_dz(z, level, nlev, order, indptr, margin, dz, kappa):
    """Loss and score gradient where every pair is active, else ``-1``.

    Tests :func:`all_pairs_active` and, where it holds, gives the value and
    ``dz`` of :func:`refimpl.kernels.ostree.value_dz_selection_tree`
    (eqs. 17-19) from per-level sums: with ``x = z - sh`` (a per-query
    shift, exact), ``n_m``, ``S1_m = sum x``, ``S2_m = sum x^2`` over level
    ``m``, ``c^+`` the documents above level ``m`` and ``c^-`` below,

        loss = sum_m [c^+ sum a_i^2 - 2 S1^+ sum a_i + n_m S2^+]
               (a_i = margin + x_i, ``+``: over the levels above m),
        dz_i = 2 [(c^+ + c^-) z_i + kappa_m],
        kappa_m = margin (c^+ - c^-) - sum_{b != m} S1_b - (c^+ + c^-) sh,

    every sum in double-double, ``dz_i`` and ``kappa_m`` rounded once.
    Writes ``dz`` (0 in one-level queries) and ``kappa`` at
    ``lvl_ptr[q] + m`` (``lvl_ptr``: the running sum of ``nlev``; 0 for
    one-level queries) and returns the loss ``sum_P r_ij^2 >= 0``; returns
    ``-1.0`` (``dz``, ``kappa`` undefined) when some pair is not active or
    a score of a query with two levels or more is not finite.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    if not all_pairs_active(z, level, nlev, order, indptr, margin):
        return -1.0
    kmax = _max_levels(nlev, indptr)
    cnt, s1h, s1l, s2h, s2l = _level_sum_buffers(kmax)
    baseh = np.zeros(kmax)  # margin (c^+ - c^-) - sum_{b != m} S1_b
    basel = np.zeros(kmax)
    coef = np.zeros(kmax)   # c^+ + c^-
    vh = 0.0
    vl = 0.0
    row = 0
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = nlev[q]
        if k <= 1:
            for a in range(lo, hi):
                dz[order[a]] = 0.0
            for m in range(k):
                kappa[row + m] = 0.0
            row += k
            continue
        sh = _query_shift(z, order, lo, hi)
        _level_sums(z, sh, level, order, lo, hi, k, cnt, s1h, s1l, s2h, s2l,
                    True)
        vh, vl = _level_quadratic(k, cnt, s1h, s1l, s2h, s2l, margin, vh, vl)
        n = hi - lo
        below = 0
        for m in range(k):
            above = n - below - cnt[m]
            c = float(above + below)
            coef[m] = c
            ph, pl = _count_prod(float(above - below), margin)
            for b in range(k):
                if b != m:
                    ph, pl = _dd_add(ph, pl, -s1h[b], -s1l[b])
            baseh[m] = ph
            basel[m] = pl
            qh, ql = _count_prod(c, sh)
            ph, pl = _dd_add(ph, pl, -qh, -ql)
            kappa[row + m] = ph + pl
            below += cnt[m]
        row += k
        for a in range(lo, hi):
            i = order[a]
            m = level[i]
            # x_i = z_i - sh is exact: (c^+ + c^-) x_i + b_m, no c sh
            # cancellation
            ph, pl = _count_prod(coef[m], z[i] - sh)
            ph, pl = _dd_add(ph, pl, baseh[m], basel[m])
            dz[i] = 2.0 * (ph + pl)
    return max(vh + vl, 0.0)


@njit(cache=True)
def all_active_curvature(u, level, nlev, order, indptr):
    """``u^T (2 A^T A) u = 2 sum_P (u_i - u_j)^2`` where every pair is active.

    From per-level double-double sums of ``u - sh`` and its squares
    (:func:`all_active_value_dz`'s with margin 0), O(l + k^2) per query,
    no vector written: the curvature ``psi''`` of the exact line search.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    kmax = _max_levels(nlev, indptr)
    cnt, s1h, s1l, s2h, s2l = _level_sum_buffers(kmax)
    vh = 0.0
    vl = 0.0
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = nlev[q]
        if k <= 1:
            continue
        sh = _query_shift(u, order, lo, hi)
        _level_sums(u, sh, level, order, lo, hi, k, cnt, s1h, s1l, s2h, s2l,
                    True)
        vh, vl = _level_quadratic(k, cnt, s1h, s1l, s2h, s2l, 0.0, vh, vl)
    return 2.0 * max(vh + vl, 0.0)


@njit(cache=True)
def level_weights(level, nlev, order, indptr, coef, rows):
    """Per document ``coef_i = n_q - n_{q, m}`` and ``rows_i = lvl_ptr[q] + m``.

    ``m`` the level of ``i`` in its query ``q`` (``coef = 0`` in one-level
    queries): where every pair is active, ``dz_i = 2 (coef_i z_i +
    kappa[rows_i])`` (:func:`all_active_value_dz`).  Returns the number of
    (query, level) rows.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    kmax = _max_levels(nlev, indptr)
    cnt = np.zeros(kmax, dtype=np.int64)
    row = 0
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = nlev[q]
        cnt[:k] = 0
        for a in range(lo, hi):
            cnt[level[order[a]]] += 1
        for a in range(lo, hi):
            i = order[a]
            m = level[i]
            coef[i] = float(hi - lo - cnt[m]) if k > 1 else 0.0
            rows[i] = row + m
        row += k
    return row


@njit(cache=True)
def all_active_hess_dz(t, level, nlev, order, indptr, out):
    """``out = 2 A^T A t`` when every pair is active (:func:`all_pairs_active`).

    :func:`refimpl.kernels.ostree.hess_dz_selection_tree` with the active
    set of every pair: ``out_i = 2 [(n_q - n_m) t_i - sum_{b != m} T_b]``,
    ``T_b`` the double-double sum of ``t`` over level ``b`` of ``i``'s query
    and ``m`` the level of ``i``; 0 in one-level queries.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    kmax = _max_levels(nlev, indptr)
    cnt, s1h, s1l, s2h, s2l = _level_sum_buffers(kmax)
    oth = np.zeros(kmax)
    otl = np.zeros(kmax)
    coef = np.zeros(kmax)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        k = nlev[q]
        if k <= 1:
            for a in range(lo, hi):
                out[order[a]] = 0.0
            continue
        _level_sums(t, 0.0, level, order, lo, hi, k, cnt, s1h, s1l, s2h, s2l,
                    False)
        n = hi - lo
        for m in range(k):
            oh = 0.0
            ol = 0.0
            for b in range(k):
                if b != m:
                    oh, ol = _dd_add(oh, ol, s1h[b], s1l[b])
            oth[m] = oh
            otl[m] = ol
            coef[m] = float(n - cnt[m])
        for a in range(lo, hi):
            i = order[a]
            m = level[i]
            ph, pl = _count_prod(coef[m], t[i])
            ph, pl = _dd_add(ph, pl, -oth[m], -otl[m])
            out[i] = 2.0 * (ph + pl)
