r"""The squared hinge's dense generalised Hessian: proximal Newton's ``dense_hessian``.

The capability :attr:`~refimpl.losses.PairwiseSquaredHinge.dense_hessian`
(see :mod:`refimpl.losses._protocol`) for
:func:`refimpl.solvers.prox_newton`, whose subproblem needs the whole
matrix ``c`` times ``2 s X^T Lap_A X`` (Lee & Lin 2014, eq. 11, ``c`` the
factor of the :class:`~refimpl.losses.ScaledSmooth` wrappers around the
loss), ``Lap_A = sum_{(i,j) active} (e_i - e_j)(e_i - e_j)^T`` the
Laplacian of the active pairs.  With explicit pairs it is one sparse
product or one Laplacian sweep and one ``n x n`` Gram product; on the tree
backend ``Lap_A X`` comes from the sorted scores per query.  Either beats
the generic path of ``d`` Hessian-vector products
(:func:`refimpl.solvers.hessian_matrix`).

Derived in: book/05_dc_reweighting.md#dc-reweighting
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels.cd_l1 import active_laplacian_matmul
from ..kernels.laplacian_tree import active_laplacian_rows

#: Rows of ``X`` per block in :class:`TreeHessian` (whole queries) and in
#: :class:`PairHessian` of a sparse ``X``: the block's ``Lap_A X`` (as
#: large as the block, dense) is multiplied into ``H`` and dropped, so the
#: extra memory stays O(block * d), not O(l d).
TREE_BLOCK_ROWS = 1 << 15


class _Scaled:
    """``c`` times the Hessian of ``loss``; :meth:`scaled` multiplies ``c``."""

    def __init__(self, loss, c=1.0):
        self.loss = loss
        self.c = c

    def scaled(self, c):
        """The same Hessian times ``c`` (for :class:`~refimpl.losses.ScaledSmooth`)."""
        return type(self)(self.loss, self.c * c)


class PairHessian(_Scaled):
    """``c`` times the generalised Hessian of the squared hinge on explicit pairs.

    :meth:`at` keeps the active set and matrix of its last call: the
    Hessian depends on ``w`` only through the active set, so when that
    set is unchanged the same matrix is returned -- near the solution of
    this piecewise-quadratic problem the active set settles and the
    Newton steps stop paying for it.
    """

    def __init__(self, loss, c=1.0):
        super().__init__(loss, c)
        self._previous = None

    def at(self, w):
        """The matrix at ``w`` (possibly the array of the last call: copy to change it)."""
        loss, c = self.loss, self.c
        pi, pj = loss.pair_indices()
        z = loss.scores(w)
        act = loss.margin - (z[pi] - z[pj]) > 0
        if self._previous is not None and np.array_equal(act, self._previous[0]):
            return self._previous[1]
        X = loss.X
        if sp.issparse(X):
            ai, aj = pi[act], pj[act]
            ones = np.ones(ai.size)
            m = X.shape[0]
            lap = sp.coo_matrix((np.concatenate([ones, ones, -ones, -ones]),
                                 (np.concatenate([ai, aj, ai, aj]),
                                  np.concatenate([ai, aj, aj, ai]))),
                                shape=(m, m)).tocsr()
            # Lap_A X fills in (each row sums its query's active partners),
            # so the sparse-times-sparse product spends its time on output
            # bookkeeping: one dense block of rows at a time into a
            # sparse-times-dense product is 3.6x faster at 1,500 x 700, 5 %
            # non-zeros, with O(block * d) extra memory
            H = np.zeros((X.shape[1], X.shape[1]))
            for lo in range(0, m, TREE_BLOCK_ROWS):
                hi = min(lo + TREE_BLOCK_ROWS, m)
                H += np.asarray(X[lo:hi].T @ (lap[lo:hi] @ X).toarray())
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
            LX = np.zeros_like(X)
            active_laplacian_matmul(z, pi, pj, float(loss.margin), X, LX)
            H = X.T @ LX
        H = (2.0 * c * loss.scale) * 0.5 * (H + H.T)
        self._previous = (act, H)
        return H


class TreeHessian(_Scaled):
    """``c`` times the generalised Hessian of the squared hinge without pair arrays.

    ``Lap_A X`` block by block of whole queries from the sorted scores
    (:func:`refimpl.kernels.laplacian_tree.active_laplacian_rows`, O(l log
    l + l k d)), each block multiplied into ``H`` by one BLAS product,
    where :func:`refimpl.solvers.hessian_matrix` takes ``d`` Hessian-vector
    products of the tree (3.3x the time at 73,154 x 136, side by side;
    ``benchmarks/bench_mslr_scale.py`` times the fits).  The active
    set is that of the explicit pairs at the same scores.  All pairs.
    """

    def at(self, w):
        """The matrix at ``w`` (a new array)."""
        loss, c = self.loss, self.c
        X = loss.X
        d = X.shape[1]
        z = np.ascontiguousarray(loss.scores(w), dtype=np.float64)
        y = np.ascontiguousarray(loss.y, dtype=np.float64)
        groups = loss.groups
        runs = groups.runs
        if runs is None:
            bounds, rows = np.asarray(groups.indptr, dtype=np.int64), groups.order
        else:
            bounds, rows = runs, None
        H = np.zeros((d, d))
        n_q = bounds.size - 1
        q = 0
        while q < n_q:
            r = q + 1
            while r < n_q and bounds[r + 1] - bounds[q] <= TREE_BLOCK_ROWS:
                r += 1
            lo, hi = int(bounds[q]), int(bounds[r])
            if rows is None:
                Xs = X[lo:hi]
                zb, yb = z[lo:hi], y[lo:hi]
            else:
                idx = rows[lo:hi]
                Xs = X[idx] if sp.issparse(X) else np.take(X, idx, axis=0)
                zb, yb = z[idx], y[idx]
            # a sparse X: the kernel reads a dense block, the product uses
            # the sparse one (nnz * d, not block * d^2)
            Xb = np.ascontiguousarray(Xs.toarray() if sp.issparse(Xs) else Xs,
                                      dtype=np.float64)
            out = np.zeros_like(Xb)
            active_laplacian_rows(Xb, np.ascontiguousarray(zb),
                                  np.ascontiguousarray(yb),
                                  bounds[q:r + 1] - lo, float(loss.margin), out)
            H += np.asarray(Xs.T @ out) if sp.issparse(Xs) else Xb.T @ out
            q = r
        return (2.0 * c * loss.scale) * 0.5 * (H + H.T)


def dense_hessian(loss):
    """The ``dense_hessian`` capability of a :class:`~refimpl.losses.PairwiseSquaredHinge`.

    :class:`PairHessian` with explicit pairs, :class:`TreeHessian` on the
    tree backend with all pairs, else ``None`` (the generic path of
    Hessian-vector products).
    """
    if loss.pair_indices() is not None:
        return PairHessian(loss)
    if loss.which == "all":
        return TreeHessian(loss)
    return None
