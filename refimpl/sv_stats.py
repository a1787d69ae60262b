"""Per-document support-vector statistics of the L2-loss RankSVM.

Lee & Lin (2014), eqs. 14-17: for scores ``z = X w``, a vector ``t = X v``,
labels ``y`` and margin ``delta``,

.. math::

    \\mathrm{SV}(w) = \\{(i, j) : q_i = q_j,\\ y_i > y_j,\\
        \\delta - (z_i - z_j) > 0\\},

    l_i^+ = |\\{j : (j, i) \\in \\mathrm{SV}\\}|, \\quad
    \\gamma_i^+ = \\sum_{j : (j, i) \\in \\mathrm{SV}} t_j,

    l_i^- = |\\{j : (i, j) \\in \\mathrm{SV}\\}|, \\quad
    \\gamma_i^- = \\sum_{j : (i, j) \\in \\mathrm{SV}} t_j.

They give the loss, gradient and Hessian-vector product in O(l) once known
(eqs. 17-19); :func:`sv_statistics` computes them in
O(l log l + l log k) (order-statistic trees, eq. 29) or O(l log l + l k)
(direct counting, eq. 20; PRSVM+'s decomposition by relevance level,
section 3.1, eqs. 31-32) without enumerating the pairs.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

from __future__ import annotations

import numpy as np

from .exceptions import DataError
from .kernels.direct_count import sv_stats_direct
from .kernels.ostree import (
    label_levels,
    sort_by_score,
    sv_stats_avl,
    sv_stats_selection_tree,
)
from .kernels.prsvm import sv_stats_prsvm

#: The available methods and their numba kernels (all share one signature).
KERNELS = {
    "direct": sv_stats_direct,
    "selection_tree": sv_stats_selection_tree,
    "avl": sv_stats_avl,
    "prsvm": sv_stats_prsvm,
}
METHODS = tuple(KERNELS)


def query_levels(y, order, indptr):
    """Level rank of every label inside its query and ``k_q`` per query.

    Returns
    -------
    level : ndarray of int64, shape (n,)
        ``level[i]`` = number of distinct labels of ``i``'s query below ``y[i]``.
    nlev : ndarray of int64, shape (n_queries,)
        Number of distinct labels of each query.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    level = np.empty(len(y), dtype=np.int64)
    nlev = np.empty(len(indptr) - 1, dtype=np.int64)
    label_levels(y, order, indptr, level, nlev)
    return level, nlev


def _vector(a, n, name):
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.shape != (n,):
        raise DataError(f"{name} must have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise DataError(f"{name} contains NaN or infinite values")
    return a


def _check_grouping(order, indptr, n):
    order = np.ascontiguousarray(order, dtype=np.int64)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise DataError(f"order must be a permutation of range({n})")
    if (
        indptr.ndim != 1
        or len(indptr) < 1
        or indptr[0] != 0
        or indptr[-1] != n
        or np.any(np.diff(indptr) < 0)
    ):
        raise DataError(
            f"indptr must be non-decreasing from 0 to {n}, got {indptr!r}"
        )
    return order, indptr


def sv_statistics(z, t, y, order, indptr, margin=1.0, method="selection_tree"):
    """``(l^+, l^-, gamma^+, gamma^-)`` of Lee & Lin (2014), eqs. 14-17.

    Parameters
    ----------
    z : array-like of shape (n,)
        Scores ``X w``; they decide which pairs are support vectors.
    t : array-like of shape (n,)
        The vector ``X v`` whose sums are ``gamma^+-``.
    y : array-like of shape (n,)
        Graded relevance labels (any real values; equal values = one level).
    order, indptr : array-like of int
        Query grouping from ``refimpl._validation.group_queries``:
        ``order[indptr[q]:indptr[q + 1]]`` are query ``q``'s documents.
    margin : float, default 1.0
        The ``delta`` of ``SV(w)``; pair ``(i, j)`` is active iff
        ``margin - (z[i] - z[j]) > 0.0`` (the explicit-pairs expression).
    method : {"selection_tree", "avl", "direct", "prsvm"}
        ``"selection_tree"``: section 2.4, implicit complete binary tree;
        ``"avl"``: section 2.3 with an AVL order-statistic tree;
        ``"direct"``: direct counting, O(l k) per query (eq. 20);
        ``"prsvm"``: PRSVM+ (Chapelle & Keerthi 2010; section 3.1), one
        linear two-pointer sweep per two-level set
        ``{(i, j) : y_i > r, y_j = r}``, O(l k) per query (eqs. 31-32).

    Returns
    -------
    l_plus, l_minus : ndarray of int64, shape (n,)
    gamma_plus, gamma_minus : ndarray of float64, shape (n,)
        Aligned with the original document indices.

    Notes
    -----
    Algorithm 2 of the paper, per query: sort by ``z``; sweep upwards
    inserting ``j`` with ``margin - (z_j - z_i) > 0`` and query the levels
    above ``y_i``; sweep downwards inserting ``j`` with
    ``margin - (z_i - z_j) > 0`` and query the levels below.  The counts
    equal those of an explicit pair loop exactly, ties in ``z`` included.
    ``"prsvm"`` instead sweeps, for each level ``r``, the documents with
    label ``>= r`` in score order (``refimpl.kernels.prsvm``); it uses
    the same two membership expressions, so its counts are identical.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    if method not in KERNELS:
        raise DataError(f"method must be one of {METHODS}, got {method!r}")
    try:
        margin = float(margin)
    except (TypeError, ValueError):
        raise DataError(f"margin must be a real number, got {margin!r}") from None
    if not np.isfinite(margin):
        raise DataError(f"margin must be finite, got {margin!r}")
    z = np.asarray(z)
    if z.ndim != 1:
        raise DataError(f"z must be one-dimensional, got shape {z.shape}")
    n = len(z)
    z = _vector(z, n, "z")
    t = _vector(t, n, "t")
    y = _vector(y, n, "y")
    order, indptr = _check_grouping(order, indptr, n)
    level, nlev = query_levels(y, order, indptr)
    perm = np.empty(n, dtype=np.int64)
    sort_by_score(z, order, indptr, perm)
    l_plus = np.empty(n, dtype=np.int64)
    l_minus = np.empty(n, dtype=np.int64)
    g_plus = np.empty(n)
    g_minus = np.empty(n)
    KERNELS[method](
        z, t, level, nlev, perm, indptr, margin, l_plus, l_minus, g_plus, g_minus
    )
    return l_plus, l_minus, g_plus, g_minus
