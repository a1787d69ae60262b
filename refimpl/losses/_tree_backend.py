"""Pair-free backend of the pairwise squared hinge loss (Lee & Lin 2014).

Same interface as ``_PairsBackend`` in :mod:`refimpl.losses.squared_hinge`,
but nothing is O(p): every call computes the support-vector statistics
``l^+-, gamma^+-`` (eqs. 14-17) with an order-statistic tree in
O(l log l + l log k) and assembles value, score gradient and Hessian
product from them (eqs. 17-19).

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

from __future__ import annotations

import numpy as np

from .._validation import QueryGroups
from ..exceptions import DataError
from ..kernels.fused import (
    hess_vec_one_pass,
    row_dots,
    scores_grad_one_pass,
    value_grad_one_pass,
)
from ..kernels.ostree import (
    center_per_query,
    hess_dz_selection_tree,
    sort_by_score,
    sort_by_score_from,
    value_dz_selection_tree,
)
from ..sv_stats import KERNELS, METHODS, query_levels

#: The one-pass path (:class:`_OnePassTree`) needs each query's rows of ``X``
#: adjacent.  When the input lists a query's documents apart, ``"auto"``
#: makes a query-grouped copy of ``X`` if it needs at most this many bytes
#: (the copy doubles the memory of ``X``), else keeps the two-pass path.
ONE_PASS_COPY_MAX_BYTES = 512 * 2**20


class _TreeBackend:
    """Support-vector statistics by order-statistic tree, O(l log k) per call.

    With ``A_w`` the rows ``e_i - e_j`` of the active pairs
    ``SV(w) = {(i, j) : y_i > y_j, delta - (z_i - z_j) > 0}`` (Lee & Lin
    2014, eqs. 14-15):

    * ``(A_w^T A_w u)_i = (l_i^+ + l_i^-) u_i - gamma_i^+(u) - gamma_i^-(u)``
      (eq. 17), ``(A_w^T e)_i = l_i^- - l_i^+`` and ``p_w = sum_i l_i^+``;
    * value ``sum_SV (delta - z_i + z_j)^2
      = z^T A_w^T A_w z - 2 delta z^T A_w^T e + delta^2 p_w`` (eq. 18);
    * ``dz = 2 (A_w^T A_w z - delta A_w^T e)`` (eq. 19);
    * ``hess_dz(t) = 2 A_w^T A_w t`` (eq. 15).

    With ``method="selection_tree"`` (the default) everything is computed
    by the fused kernels :func:`refimpl.kernels.ostree.value_dz_selection_tree`
    and :func:`refimpl.kernels.ostree.hess_dz_selection_tree`, which keep
    their sums in double-double arithmetic: the value, ``dz`` and the
    Hessian product are within a few ulps of the explicit-pairs result even
    when a query's scores form distant clusters (plain sums lose up to all
    digits there, e.g. at +-1e8).  The baselines (``"avl"``, ``"direct"``,
    ``"prsvm"``) centre ``z`` and ``t`` per query (``A_w`` annihilates
    per-query constants) and assemble in plain float64: accurate to
    ``eps (l |z_i| + sum |z_j|)`` with centred values, enough for the book's
    comparison of the data structures on ordinary scores.

    Parameters
    ----------
    pairs_unused : object
        Ignored (keeps the constructor signature of the pair backends).
    n_samples : int
    margin : float
        The ``delta`` of the hinge.
    y : ndarray of float64, shape (n_samples,)
        Validated labels.
    groups : QueryGroups
        From ``refimpl._validation.group_queries``.
    method : {"selection_tree", "avl", "direct", "prsvm"}
        Structure used by :func:`refimpl.sv_stats.sv_statistics`.

    Notes
    -----
    Cached state: :meth:`value_dz` stores the scores ``z``, their per-query
    sort ``perm`` and ``l^+-``; :meth:`hess_dz` reuses them (the active set
    of the last :meth:`value_dz`, as LIBLINEAR's ``Hv`` does).
    :meth:`value` leaves the cache untouched.

    The default ``method="selection_tree"`` takes the fused path: one
    kernel per call (value and gradient; Hessian product), no centring,
    double-double sums.  The other methods (``"avl"``, ``"direct"``,
    ``"prsvm"``) are kept as the baselines of the book's comparison (Lee &
    Lin sections 2.3-3.1) and take the general path: centre, run the
    method's sv-stats kernel (counts and sums), assemble eqs. 17-19 with
    NumPy.  Timings of ``"selection_tree"`` against the other methods
    therefore include the fusion (and the cost of the compensated sums),
    not only the data structure.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """

    name = "tree"

    def __init__(self, pairs_unused, n_samples, margin, y, groups,
                 method="selection_tree"):
        if method not in KERNELS:
            raise DataError(f"method must be one of {METHODS}, got {method!r}")
        n = int(n_samples)
        self.n = n
        self.method = method
        self.margin = float(margin)
        self._kernel = KERNELS[method]
        self.order = np.ascontiguousarray(groups.order, dtype=np.int64)
        self.indptr = np.ascontiguousarray(groups.indptr, dtype=np.int64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        self.level, self.nlev = query_levels(y, self.order, self.indptr)
        # cached by value_dz
        self.z = None
        self.perm = np.empty(n, dtype=np.int64)
        self.l_plus = np.zeros(n, dtype=np.int64)
        self.l_minus = np.zeros(n, dtype=np.int64)
        self.dz = np.empty(n)
        self.sweep = np.zeros((4, n), dtype=np.int64)
        # scratch
        self._perm2 = np.empty(n, dtype=np.int64)
        self._lp = np.empty(n, dtype=np.int64)
        self._lm = np.empty(n, dtype=np.int64)
        self._gp = np.empty(n)
        self._gm = np.empty(n)
        self._c = np.empty(n)
        self._sweep2 = np.zeros((4, n), dtype=np.int64)
        self._pending = None  # the z of the last value(), state in scratch
        self._pos = None  # position of each document in order (lazy)

    @classmethod
    def from_problem(cls, problem, margin, method="selection_tree"):
        """The backend on a :class:`~refimpl._validation.RankingProblem`.

        Its labels and query grouping are used as they are (validated once).
        """
        return cls(None, problem.n_samples, margin, problem.y, problem.groups,
                   method=method)

    def _centered(self, u):
        center_per_query(u, self.order, self.indptr, self._c)
        return self._c

    def _value_parts(self, z, perm, lp, lm):
        """Return (value, A_w^T A_w z, A_w^T e, p_w); fills lp, lm."""
        zc = self._centered(z)
        self._kernel(z, zc, self.level, self.nlev, perm, self.indptr,
                     self.margin, lp, lm, self._gp, self._gm)
        azz = (lp + lm) * zc - self._gp - self._gm
        ae = (lm - lp).astype(np.float64)
        p_w = int(lp.sum())
        d = self.margin
        value = float(zc @ azz - 2.0 * d * (zc @ ae) + d * d * p_w)
        return max(value, 0.0), azz, ae, p_w

    def _fused_value_dz(self, z, perm, lp, lm, dz, sweep):
        sort_by_score(z, self.order, self.indptr, perm)
        value = value_dz_selection_tree(z, self.level, self.nlev, perm,
                                        self.order, self.indptr, self.margin,
                                        lp, lm, dz, sweep)
        return max(float(value), 0.0)

    def value_dz(self, z):
        """Loss ``sum_SV (delta - z_i + z_j)^2`` and its gradient in ``z``.

        Eqs. 18-19; caches ``z``, the sort, ``l^+-`` and the sweep record
        for :meth:`hess_dz`.
        """
        z = np.ascontiguousarray(z, dtype=np.float64)
        if self.method == "selection_tree":
            value = self._fused_value_dz(z, self.perm, self.l_plus,
                                         self.l_minus, self.dz, self.sweep)
        else:
            sort_by_score(z, self.order, self.indptr, self.perm)
            value, azz, ae, _ = self._value_parts(z, self.perm, self.l_plus,
                                                  self.l_minus)
            np.multiply(azz - self.margin * ae, 2.0, out=self.dz)
        self.z = z.copy()
        self._pending = None
        return value, self.dz

    def value(self, z):
        """Loss value only (eq. 18); the cached state is not modified.

        With the selection tree the sort, counts and ``dz`` at ``z`` stay in
        scratch, ready for :meth:`adopt`.
        """
        z = np.ascontiguousarray(z, dtype=np.float64)
        if self.method == "selection_tree":
            # a trial near a state with distinct scores (not w = 0, where
            # every score is 0): re-sort from the state's order
            if self.z is None or not np.any(self.z != self.z[0]):
                value = self._fused_value_dz(z, self._perm2, self._lp,
                                             self._lm, self._c, self._sweep2)
            else:
                value = self._value_from_state_order(z)
            self._pending = z
            return value
        sort_by_score(z, self.order, self.indptr, self._perm2)
        return self._value_parts(z, self._perm2, self._lp, self._lm)[0]

    def _value_from_state_order(self, z):
        """The fused value kernel at ``z``, sorted starting from ``self.perm``.

        Same result as :meth:`_fused_value_dz` (the sort is the same
        permutation, :func:`~refimpl.kernels.ostree.sort_by_score_from`),
        about linear time when ``z`` is near the state's scores.
        """
        if self._pos is None:
            self._pos = np.empty(self.n, dtype=np.int64)
            self._pos[self.order] = np.arange(self.n)
            self._zsort = np.empty(int(np.diff(self.indptr).max(initial=0)))
        sort_by_score_from(z, self.order, self.indptr, self._pos, self.perm,
                           self._perm2, self._zsort)
        value = value_dz_selection_tree(z, self.level, self.nlev, self._perm2,
                                        self.order, self.indptr, self.margin,
                                        self._lp, self._lm, self._c,
                                        self._sweep2)
        return max(float(value), 0.0)

    @property
    def can_adopt(self) -> bool:
        """Whether :meth:`value` keeps its state for :meth:`adopt`."""
        return self.method == "selection_tree"

    def adopt(self, z):
        """Make the state of the last :meth:`value` (at ``z``) the cached state.

        Swaps the scratch buffers in: no sort, no tree.  ``z`` must be the
        array that :meth:`value` was given (selection tree only).
        """
        if not self.can_adopt or self._pending is not z:
            raise RuntimeError("adopt(z) needs the z of the last value(z)")
        self.perm, self._perm2 = self._perm2, self.perm
        self.l_plus, self._lp = self._lp, self.l_plus
        self.l_minus, self._lm = self._lm, self.l_minus
        self.dz, self._c = self._c, self.dz
        self.sweep, self._sweep2 = self._sweep2, self.sweep
        self._set_z(z)
        self._pending = None

    def _set_z(self, z):
        self.z = z.copy()

    def hess_dz(self, t):
        """``2 A_w^T A_w t`` with the active set of the last :meth:`value_dz`.

        ``out_i = 2[(l_i^+ + l_i^-) t_i - gamma_i^+(t) - gamma_i^-(t)]``
        (eq. 17); zero before any :meth:`value_dz`, like the pair backends.
        """
        t = np.ascontiguousarray(t, dtype=np.float64)
        if t.shape != (self.n,):
            raise DataError(f"t must have shape ({self.n},), got {t.shape}")
        if self.z is None:
            return np.zeros_like(t)
        if self.method == "selection_tree":
            out = np.empty(self.n)
            hess_dz_selection_tree(t, self.nlev, self.perm, self.order,
                                   self.indptr, self.sweep, out)
            return out
        # general path (baselines): centre, counts and sums, assemble
        tc = self._centered(t)
        self._kernel(self.z, tc, self.level, self.nlev, self.perm, self.indptr,
                     self.margin, self._lp, self._lm, self._gp, self._gm)
        return 2.0 * ((self.l_plus + self.l_minus) * tc - self._gp - self._gm)

    def n_active(self):
        """``p_w = |SV(w)| = sum_i l_i^+`` at the last :meth:`value_dz`."""
        return int(self.l_plus.sum())


class _OnePassTree(_TreeBackend):
    """The selection-tree backend with one pass over ``X`` per call.

    Instead of receiving the scores, it reads ``X`` itself:
    :meth:`value_grad` returns the loss and ``X^T dz`` and
    :meth:`hess_vec` ``X^T (2 A_w^T A_w) X s`` and ``X s``, each from one
    streaming pass over ``X`` (:mod:`refimpl.kernels.fused`), with the
    same selection-tree kernels and double-double sums as
    :class:`_TreeBackend` (whose score-space methods it keeps, e.g.
    :meth:`value` for a trial point's scores).

    Internally the documents are the rows of ``self.X``, each query's rows
    adjacent.  When the input already lists every query's documents
    together (:attr:`~refimpl._validation.QueryGroups.runs`), ``self.X``
    is the caller's ``X`` (no copy) and the internal order is the input
    order; otherwise ``self.X``
    is the query-grouped copy ``X[groups.order]`` (``copy_bytes`` of extra
    memory) and :meth:`to_rows` / :meth:`from_rows` translate score
    vectors.

    Parameters
    ----------
    X : ndarray of float64, shape (n, d), C-contiguous
    margin : float
    y : ndarray of float64, shape (n,)
    groups : QueryGroups

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """

    def __init__(self, X, margin, y, groups):
        n = X.shape[0]
        runs = groups.runs
        if runs is None:
            self.rows = np.ascontiguousarray(groups.order, dtype=np.int64)
            Xr = np.take(X, self.rows, axis=0)
            indptr = groups.indptr
            y = np.asarray(y)[self.rows]
            self.copy_bytes = int(Xr.nbytes)
        else:
            self.rows = None
            Xr = X
            indptr = runs
            self.copy_bytes = 0
        rows = QueryGroups(order=np.arange(n, dtype=np.int64),
                           indptr=np.asarray(indptr, dtype=np.int64),
                           qids=np.arange(len(indptr) - 1))
        super().__init__(None, n, margin, y, rows, method="selection_tree")
        self.X = np.ascontiguousarray(Xr, dtype=np.float64)
        d = self.X.shape[1]
        self._zbuf = np.empty(n)
        self._t = np.empty(n)
        self._u = np.empty(n)
        self.gradient = np.empty(d)

    def to_rows(self, v):
        """A score vector in input order, in the internal (row) order."""
        return v if self.rows is None else v[self.rows]

    def from_rows(self, v):
        """A score vector in the internal (row) order, in input order."""
        if self.rows is None:
            return v
        out = np.empty_like(v)
        out[self.rows] = v
        return out

    def scores(self, w):
        """``X w`` in input order, with the bits of the one-pass kernels."""
        out = np.empty(self.n)
        row_dots(self.X, w, out)
        return self.from_rows(out)

    def value_grad(self, w):
        """Loss and ``X^T dz`` at ``w`` in one pass; caches the state.

        Afterwards ``z`` (internal order), ``perm``, ``l_plus``, ``l_minus``
        and ``dz`` hold the state at ``w``, as after :meth:`value_dz`.

        At ``w = 0`` (a solver's usual start) every score is ``+0.0``
        (``X`` is finite, and :func:`~refimpl.kernels.fused.row_dots`
        starts its sums at ``+0.0``), so the state comes from the scores
        alone (the stable sort of equal scores is the input order, and a
        query of equal scores needs no sweep,
        :func:`~refimpl.kernels.ostree.value_dz_selection_tree`),
        and the pass over ``X`` is the one of
        :func:`~refimpl.kernels.fused.scores_grad_one_pass`, four rows at
        a time, not query by query: the same bits in about half the time.
        """
        if not np.any(w):
            self._zbuf[:] = 0.0
            self.perm[:] = self.order  # the stable sort of equal scores
            value = max(float(value_dz_selection_tree(
                self._zbuf, self.level, self.nlev, self.perm, self.order,
                self.indptr, self.margin, self.l_plus, self.l_minus, self.dz,
                self.sweep)), 0.0)
            scores_grad_one_pass(self.X, w, self.dz, self._zbuf,
                                 self.gradient)
            self.z = self._zbuf
            self._pending = None
            return value, self.gradient
        value = value_grad_one_pass(self.X, w, self.level, self.nlev,
                                    self.indptr, self.margin, self._zbuf,
                                    self.perm, self.l_plus, self.l_minus,
                                    self.dz, self.sweep, self.gradient)
        self.z = self._zbuf
        self._pending = None
        return max(float(value), 0.0), self.gradient

    def _set_z(self, z):
        self._zbuf[:] = z
        self.z = self._zbuf

    def scores_grad(self, w):
        """``(X w, X^T dz)`` in one pass (internal order), ``dz`` of the state."""
        z = np.empty(self.n)
        scores_grad_one_pass(self.X, w, self.dz, z, self.gradient)
        return z, self.gradient

    def hess_vec(self, s):
        """``(X^T 2 A_w^T A_w X s, X s)`` in one pass, ``X s`` internal order.

        Zero (and ``X s`` still computed) before any :meth:`value_grad`.
        """
        out = np.empty(self.X.shape[1])
        if self.z is None:
            row_dots(self.X, s, self._t)
            out[:] = 0.0
            return out, self._t
        hess_vec_one_pass(self.X, s, self.nlev, self.perm, self.indptr,
                          self.sweep, self._t, self._u, out)
        return out, self._t
