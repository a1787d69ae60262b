"""The pairwise L1 hinge of SVMrank, evaluated in O(l log l) per query.

For scores ``z = X w`` and the preference pairs of each query
(``q_i = q_j``, ``y_i > y_j``), the loss of Joachims' SVMrank (the sum of
slacks of its n-slack problem, eq. (7.11) of the book) is

.. math::

    L(w) = \\sum_{(i, j) \\in P} \\max(0, 1 - (z_i - z_j)).

A pair is *violated* when ``1 - (z_i - z_j) > 0`` (SVMrank's
``find_most_violated_constraint_marginrescaling`` tests
``score[i] - score[j] < 1``; a pair at exactly 1 contributes 0 either way).
With ``l_i^-`` the number of violated pairs in which ``i`` is the preferred
document and ``l_i^+`` those in which it is the other one (the counts of
Lee & Lin 2014, eqs. 14-17, at margin 1),

.. math::

    L(w) = \\sum_i l_i^- - \\sum_i (l_i^- - l_i^+) z_i, \\qquad
    \\partial L(w) \\ni -X^T (l^- - l^+),

and ``(X^T (l^- - l^+), sum_i l_i^-) / n`` is the most violated constraint
of the 1-slack problem (eq. (7.13) of the book).  The counts come from the
order-statistic (selection) tree kernel of :mod:`refimpl.kernels.ostree`,
so one pass costs a sort of each query by score plus O(l log k) (k: levels
of a query), never the pairs.

Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels.ostree import (
    label_levels,
    sort_by_score,
    sort_by_score_from,
    sv_stats_selection_tree,
)

__all__ = ["PairwiseHinge", "hinge_counts", "hinge_pairs_naive"]


class PairwiseHinge:
    """The pairwise L1 hinge ``L(w)`` of a validated ranking problem.

    Parameters
    ----------
    problem : refimpl._validation.RankingProblem
        The data, validated once (``X`` finite; dense or CSR).

    Attributes
    ----------
    X : ndarray or scipy.sparse.csr_matrix, shape (n, d)
    n_pairs : int
        ``|P|``, the number of preference pairs.
    n_features : int

    Notes
    -----
    ``risk(w)`` returns ``(L(w), c, n_violated)`` with ``c = l^- - l^+``
    (integers), so that ``X^T c`` is the aggregated violated-pair direction
    and ``-X^T c`` a subgradient of ``L`` at ``w``.  The scratch arrays of
    the pass are allocated once.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
    """

    def __init__(self, problem):
        self.X = problem.X
        self.n_features = problem.n_features
        n = problem.n_samples
        self._order = np.ascontiguousarray(problem.order, dtype=np.int64)
        self._indptr = np.ascontiguousarray(problem.indptr, dtype=np.int64)
        self._level = np.empty(n, dtype=np.int64)
        self._nlev = np.empty(len(self._indptr) - 1, dtype=np.int64)
        label_levels(np.ascontiguousarray(problem.y, dtype=np.float64),
                     self._order, self._indptr, self._level, self._nlev)
        self._perm = np.empty(n, dtype=np.int64)
        self._prev = np.empty(n, dtype=np.int64)
        self._sorted = False            # _perm holds a previous sort
        self._pos = np.empty(n, dtype=np.int64)
        self._pos[self._order] = np.arange(n)
        self._zb = np.empty(int(np.diff(self._indptr).max(initial=0)))
        self._t = np.zeros(n)
        self._lp = np.empty(n, dtype=np.int64)
        self._lm = np.empty(n, dtype=np.int64)
        self._gp = np.empty(n)
        self._gm = np.empty(n)
        self.n_pairs = _count_pairs(self._level, self._indptr, self._order)

    def scores(self, w):
        """``z = X w`` as a contiguous float64 vector."""
        return np.ascontiguousarray(np.asarray(self.X @ w, dtype=np.float64).ravel())

    def counts(self, z):
        """``(l^+, l^-)`` at scores ``z`` (views of internal buffers).

        Each query is sorted starting from the previous call's order
        (:func:`~refimpl.kernels.ostree.sort_by_score_from`: the same
        permutation as a sort from scratch, in about linear time when the
        scores moved little, as along a line search).
        """
        if self._sorted:
            self._prev, self._perm = self._perm, self._prev
            sort_by_score_from(z, self._order, self._indptr, self._pos,
                               self._prev, self._perm, self._zb)
        else:
            sort_by_score(z, self._order, self._indptr, self._perm)
            self._sorted = True
        sv_stats_selection_tree(z, self._t, self._level, self._nlev, self._perm,
                                self._indptr, 1.0, self._lp, self._lm,
                                self._gp, self._gm)
        return self._lp, self._lm

    def value(self, z):
        """``L`` at the scores ``z`` (one sort and sweep)."""
        lp, lm = self.counts(z)
        n_violated = int(lm.sum())
        if not n_violated:
            return 0.0
        return max(float(n_violated - (lm - lp).astype(np.float64) @ z), 0.0)

    def risk(self, w):
        """``(L(w), c, n_violated)``: value, ``c = l^- - l^+``, violated pairs.

        The scores ``X w`` stay in :attr:`last_scores`.
        """
        z = self.scores(w)
        self.last_scores = z
        lp, lm = self.counts(z)
        c = (lm - lp).astype(np.float64)
        n_violated = int(lm.sum())
        value = float(n_violated - c @ z)
        # exact zero when no pair is violated (the cancellation above would
        # leave rounding noise of either sign)
        return (max(value, 0.0) if n_violated else 0.0), c, n_violated

    def direction(self, c):
        """``X^T c`` (float64, shape ``(d,)``)."""
        if sp.issparse(self.X):
            return np.asarray(self.X.T @ c, dtype=np.float64).ravel()
        return np.asarray(c @ self.X, dtype=np.float64)


def _count_pairs(level, indptr, order):
    """``|P|``: per query, sum over documents of those at a lower level."""
    total = 0
    for q in range(len(indptr) - 1):
        lev = level[order[indptr[q]:indptr[q + 1]]]
        if lev.size < 2:
            continue
        counts = np.bincount(lev)
        below = np.cumsum(counts) - counts
        total += int(counts @ below)
    return total


def hinge_counts(z, y, qid):
    """``(l^+, l^-)`` of scores ``z`` (O(l log l) per query; see the module).

    A convenience for the book and the tests: groups ``qid`` and runs the
    same kernels as :meth:`PairwiseHinge.counts`.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
    """
    from .._validation import group_queries

    z = np.ascontiguousarray(z, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    g = group_queries(qid if qid is not None else np.zeros(len(z), dtype=np.int64))
    order = np.ascontiguousarray(g.order, dtype=np.int64)
    indptr = np.ascontiguousarray(g.indptr, dtype=np.int64)
    n = len(z)
    level = np.empty(n, dtype=np.int64)
    nlev = np.empty(len(indptr) - 1, dtype=np.int64)
    label_levels(y, order, indptr, level, nlev)
    perm = np.empty(n, dtype=np.int64)
    sort_by_score(z, order, indptr, perm)
    lp = np.empty(n, dtype=np.int64)
    lm = np.empty(n, dtype=np.int64)
    sv_stats_selection_tree(z, np.zeros(n), level, nlev, perm, indptr, 1.0,
                            lp, lm, np.empty(n), np.empty(n))
    return lp, lm


def hinge_pairs_naive(z, y, qid):
    """Brute force over the explicit pairs: ``(L, l^+, l^-)``.

    The reference of the tests: every ordered pair ``(i, j)`` of a query with
    ``y_i > y_j`` adds ``max(0, 1 - (z_i - z_j))``, and when that term is
    positive, one to ``l_i^-`` and one to ``l_j^+``.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
    """
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    qid = np.zeros(len(z)) if qid is None else np.asarray(qid)
    n = len(z)
    lp = np.zeros(n, dtype=np.int64)
    lm = np.zeros(n, dtype=np.int64)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if qid[i] == qid[j] and y[i] > y[j]:
                r = 1.0 - (z[i] - z[j])
                if r > 0.0:
                    total += r
                    lm[i] += 1
                    lp[j] += 1
    return total, lp, lm
