"""One pass over ``X`` per Hessian-vector product and per value + gradient.

The pairwise squared hinge touches the data only through the scores: with
``z = X w`` the loss and its score gradient ``dz`` come from the
order-statistic tree (:mod:`refimpl.kernels.ostree`), the gradient is
``X^T dz`` (Lee & Lin 2014, eq. 10) and the Hessian-vector product
``X^T (H_z (X s))`` (eq. 11, with ``H_z = 2 A_w^T A_w`` of eq. 15).  Both
products with ``X`` stream the whole matrix from memory, which on a large
problem costs more than the tree itself.  But every pair lies inside one
query, so ``H_z`` and ``dz`` are block-diagonal by query: the rows ``X_q``
of query ``q`` give ``t_q = X_q s``, the tree gives ``u_q = (H_z t)_q``
from ``t_q`` alone, and ``X_q^T u_q`` can be added to the result while
``X_q`` is still in the cache.  One streaming read of ``X`` per product
instead of two:

    for each query q (rows lo .. hi - 1 of X, contiguous):
        t_q = X_q s                       (reads X_q from memory)
        u_q = 2 A_q^T A_q t_q             (the selection tree, O(l_q log k_q))
        out += X_q^T u_q                  (X_q from the cache)

and the same for value and gradient (``z_q = X_q w``, sort, the tree's
loss and ``dz_q``, ``grad += X_q^T dz_q``).  The tree code is the one of
:mod:`refimpl.kernels.ostree` (its per-query helpers), so the score-space
results are bit for bit those of :func:`~refimpl.kernels.ostree.hess_dz_selection_tree`
and :func:`~refimpl.kernels.ostree.value_dz_selection_tree` given the same
``z`` and ``t``, double-double sums included.

The rows of a query must be contiguous in ``X`` (``indptr`` gives each
query's rows; the documents are the rows, no ``order`` array):
:class:`refimpl.losses._tree_backend._OnePassTree` passes ``X`` itself when
every query's rows are adjacent in the input (LETOR files), else a
query-grouped copy.

Products with ``X`` are ordinary float64 sums in a fixed order: a row's dot
product in eight interleaved partial sums (combined pairwise), the
back-projection ``out += u_i x_i`` row after row.  Every operation is an
IEEE-754 multiplication or addition (no FMA contraction without
``fastmath``), so the results are the same on every machine and do not
depend on the BLAS library; they differ from BLAS's ``X @ s`` in the last
bits only (another summation order), like two BLAS kernels differ.

Derived in: book/09_making_it_fast.md#fast-one-pass
"""

import numpy as np
from numba import njit

from ._ddlanes import LANES
from ._simd import prefetch, row_dot
from .ostree import (
    _hess_prefix_loop,
    _hess_query,
    _hess_scratch,
    _largest_query,
    _pow2_at_least,
    _prefix_only,
    _rows_axpy,
    _sort_query,
    _sort_scratch,
    _sweep_rows,
    _tied,
    _value_dz_query,
    _value_dz_tied,
)


@njit(inline="always")
def _next_rows(X, indptr, q, n):
    """Prefetch cursor over the rows of query ``q + 1`` of ``X`` (flat).

    ``(pf, pf_end, step)``: the flat index range of those rows and the
    elements to advance per document and sweep of query ``q`` (four cache
    lines, :func:`refimpl.kernels.ostree._prefetch_ahead`), so that the
    next query's rows arrive while the tree and the back-projection work on
    this one; what is left is prefetched before moving on.  Empty (step 0)
    for the last query.
    """
    d = X.shape[1]
    if q + 2 >= len(indptr):
        return 0, 0, 0
    return indptr[q + 1] * d, indptr[q + 2] * d, 32


@njit(cache=True)
def row_dots(X, w, z):
    """``z = X w`` with the one-pass kernels' summation order.

    Each ``z[r]`` is :func:`refimpl.kernels._simd.row_dot` of row ``r``:
    the bits of the scores the one-pass kernels compute inside their pass,
    whichever array the row is read from.

    Derived in: book/09_making_it_fast.md#fast-one-pass
    """
    for r in range(X.shape[0]):
        z[r] = row_dot(X, r, w)


@njit(cache=True)
def scores_grad_one_pass(X, w, dz, z, grad):
    """``z = X w`` and ``grad = X^T dz`` in one pass over ``X``, row by row.

    What a solver needs after adopting a trial point's state (its sort,
    counts and ``dz``, computed from the trial scores): the gradient, and
    the exact scores of the new iterate for the next trial (so that
    rounding never accumulates from one step to the next).  Each row is
    read once, for its dot product and its share of the gradient.

    Derived in: book/09_making_it_fast.md#fast-one-pass
    """
    grad[:] = 0.0
    n = X.shape[0]
    r = 0
    while r < n:  # four rows at a time: dot products, then their share
        hi = min(r + 4, n)
        for rr in range(r, hi):
            z[rr] = row_dot(X, rr, w)
        _rows_axpy(X, r, hi, dz, grad, z, 0, 0)
        r = hi


@njit(cache=True)
def hess_vec_one_pass(X, s, nlev, perm, indptr, sweep, t, u, out):
    """``out = X^T (2 A_w^T A_w) X s`` in one pass over ``X``; also ``t = X s``.

    Per query ``q`` (rows ``indptr[q] .. indptr[q + 1] - 1`` of ``X``):
    ``t_q = X_q s``, then the Hessian statistics of the selection tree on
    that query (:func:`refimpl.kernels.ostree.hess_dz_selection_tree`:
    the direct per-level sweep up to eight levels, the selection tree
    above, double-double sums) give ``u_q = 2 A_q^T A_q t_q``, then
    ``out += X_q^T u_q`` while ``X_q`` is in the cache.  Unlike
    :func:`value_grad_one_pass`, no software prefetch of the next query's
    rows during the tree: the Hessian sweep is short (no sort, no
    data-dependent branch), and prefetching into it made the product
    slower (17.6-19.0 ms without against 19.2-20.3 ms with, measured in
    alternation on the 301,916 x 136 problem).

    Parameters
    ----------
    X : ndarray of float64, shape (n, d), C-contiguous
        Rows grouped by query.
    s : ndarray of float64, shape (d,)
        The direction.
    nlev, perm, sweep
        The state of the last :func:`value_grad_one_pass` (levels per
        query, the sort of the scores ``X w`` per query, the sweep record
        of :func:`refimpl.kernels.ostree.record_sweeps`), with the rows of
        ``X`` as the documents.
    indptr : ndarray of int64, shape (n_queries + 1,)
        Query ``q`` is rows ``indptr[q] .. indptr[q + 1] - 1``.
    t : ndarray of float64, shape (n,)
        Output ``X s`` (:func:`row_dots`' bits), for the solver to re-use.
    u : ndarray of float64, shape (n,)
        Output ``2 A_w^T A_w t``, the score-space product (0 in one-level
        queries).
    out : ndarray of float64, shape (d,)
        Output ``X^T u``.

    Derived in: book/09_making_it_fast.md#fast-one-pass
    """
    kmax, lmax = _largest_query(nlev, indptr)
    out[:] = 0.0
    if _prefix_only(kmax, lmax):
        _hess_prefix_loop(X, s, t, nlev, perm, perm, indptr, sweep, u, out,
                          lmax)
    else:
        _hess_vec_general(X, s, nlev, perm, indptr, sweep, t, u, out, kmax,
                          lmax)


@njit(cache=True)
def _hess_vec_general(X, s, nlev, perm, indptr, sweep, t, u, out, kmax, lmax):
    """:func:`hess_vec_one_pass`, each query by the path it takes."""
    sc = _hess_scratch(kmax, lmax)
    up, down, lev, cnt = _sweep_rows(sweep)
    for q in range(len(indptr) - 1):
        lo = indptr[q]
        hi = indptr[q + 1]
        for r in range(lo, hi):
            t[r] = row_dot(X, r, s)
        if nlev[q] <= 1:
            for r in range(lo, hi):
                u[r] = 0.0
        else:
            _hess_query(t, perm, lo, hi - lo, nlev[q], up, down, lev, cnt, u,
                        sc)
            _rows_axpy(X, lo, hi, u, out, t, 0, 0)


@njit(cache=True)
def value_grad_one_pass(X, w, level, nlev, indptr, margin, z, perm, l_plus,
                        l_minus, dz, sweep, grad):
    """Loss, score gradient and ``grad = X^T dz`` in one pass over ``X``.

    Per query ``q`` (rows ``indptr[q] .. indptr[q + 1] - 1``): ``z_q =
    X_q w``, the stable sort of the query by score
    (:func:`refimpl.kernels.ostree.sort_by_score`), the loss, counts and
    ``dz_q`` of the selection tree
    (:func:`refimpl.kernels.ostree.value_dz_selection_tree`: the direct
    per-level sweep up to eight levels, the tree above, double-double
    sums; a query of equal scores without a sweep), then ``grad +=
    X_q^T dz_q`` while ``X_q`` is in the cache.  (At ``w = 0``,
    :class:`refimpl.losses._tree_backend._OnePassTree` needs neither the
    scores nor this kernel: see its ``value_grad``.)

    Parameters
    ----------
    X : ndarray of float64, shape (n, d), C-contiguous
        Rows grouped by query.
    w : ndarray of float64, shape (d,)
    level, nlev
        Level ranks of the labels per query and ``k_q``
        (:func:`refimpl.kernels.ostree.label_levels` with the rows as
        documents).
    indptr : ndarray of int64, shape (n_queries + 1,)
    margin : float
    z : ndarray of float64, shape (n,)
        Output scores ``X w`` (:func:`row_dots`' bits).
    perm : ndarray of int64, shape (n,)
        Output: each query's rows by increasing score.
    l_plus, l_minus : ndarray of int64, shape (n,)
        Output counts (0 in one-level queries).
    dz : ndarray of float64, shape (n,)
        Output score gradient.
    sweep : ndarray of int64, shape (4, n)
        Output: the sweep record
        (:func:`refimpl.kernels.ostree.record_sweeps`), for
        :func:`hess_vec_one_pass`.
    grad : ndarray of float64, shape (d,)
        Output ``X^T dz``.

    Returns
    -------
    float
        The loss ``sum_SV r_ij^2``, as
        :func:`~refimpl.kernels.ostree.value_dz_selection_tree` sums it.

    Derived in: book/09_making_it_fast.md#fast-one-pass
    """
    kmax, lmax = _largest_query(nlev, indptr)
    pmax = _pow2_at_least(kmax)
    cnt = np.zeros(2 * pmax, dtype=np.int64)
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
    _, kb, ib, cnt_sort = _sort_scratch(indptr)
    rows = np.arange(X.shape[0])  # the documents are the rows
    xf = X.reshape(-1)
    nq = len(indptr) - 1
    vh = 0.0
    vl = 0.0
    grad[:] = 0.0
    for q in range(nq):
        lo = indptr[q]
        hi = indptr[q + 1]
        for r in range(lo, hi):
            z[r] = row_dot(X, r, w)
        pf, pf_end, step = _next_rows(X, indptr, q, hi - lo)
        _sort_query(z, rows, lo, hi, perm, zb, kb, ib, cnt_sort)
        k = nlev[q]
        if k <= 1:
            for r in range(lo, hi):
                l_plus[r] = 0
                l_minus[r] = 0
                dz[r] = 0.0
        elif _tied(z, perm, lo, hi):  # e.g. at w = 0: no sweep
            vh, vl = _value_dz_tied(level, perm, lo, hi - lo, k, margin,
                                    l_plus, l_minus, dz, sweep, vh, vl, cnt,
                                    s1h, s1l, s2h)
            pf = _rows_axpy(X, lo, hi, dz, grad, xf, pf, pf_end)
        else:
            vh, vl, pf = _value_dz_query(z, level, perm, lo, hi - lo, k,
                                         margin, l_plus, l_minus, dz, sweep,
                                         vh, vl, cnt, s1h, s1l, s2h, s2l, acc,
                                         zb, zs, lb, rh, rl, xf, pf, pf_end,
                                         step)
            pf = _rows_axpy(X, lo, hi, dz, grad, xf, pf, pf_end)
        while pf < pf_end:
            prefetch(xf, pf)
            pf += 8
    return vh + vl
