"""Preference pairs ``P = {(i, j) : q_i = q_j, y_i > y_j}``.

The pairwise losses of every chapter are sums over ``P``.  Its size grows like
the square of the number of documents per query, which is why
:mod:`refimpl.losses` never materialises the ``p x n`` pair-difference matrix
and why the order-statistic-tree chapter exists.  The explicit matrix
:func:`pair_difference_matrix` is offered for small teaching examples only.

Every function takes ``which``: ``"all"`` is ``P`` itself, ``"adjacent"``
the partial pairs of Lee & Lin (2014), section 5 -- only the pairs whose
labels are adjacent among the distinct labels of their query, O(l) pairs
when every level holds O(1) documents (MQ2007/2008-list, Table 10).

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._validation import (
    RankingProblem,
    check_labels,
    check_X,
    group_queries,
    ranking_problem,
)
from .exceptions import DataError, PairMatrixTooLargeError
from .kernels.pairs import (
    count_adjacent_pairs_per_query,
    count_pairs_per_query,
    fill_adjacent_pairs,
    fill_pairs,
)

#: Default memory cap for :func:`pair_difference_matrix`: 256 MiB.
DEFAULT_MAX_BYTES = 256 * 2**20

#: Accepted values of the ``which`` keyword: all pairs, or partial pairs
#: between adjacent relevance levels (Lee & Lin 2014, section 5).
PAIR_SETS = ("all", "adjacent")

_COUNT = {"all": count_pairs_per_query, "adjacent": count_adjacent_pairs_per_query}
_FILL = {"all": fill_pairs, "adjacent": fill_adjacent_pairs}


def _check_which(which):
    if not isinstance(which, str) or which not in PAIR_SETS:
        raise DataError(f"which must be one of {PAIR_SETS}, got {which!r}")
    return which


def _grouping(qid, groups, n):
    """``groups`` if the caller built it already (validate once), else ``qid`` grouped."""
    if groups is None:
        return group_queries(qid, n)
    if len(groups.order) != n:
        raise DataError(
            f"groups describes {len(groups.order)} documents but y has {n}"
        )
    return groups


def _checked_counts(y, qid, groups, which):
    """``(which, y, groups, pairs per query)``, each checked or built once.

    ``y`` may be a :class:`~refimpl._validation.RankingProblem`: its labels
    and grouping are used as they are (validated once, when it was built).
    """
    which = _check_which(which)
    if isinstance(y, RankingProblem):
        if qid is not None or groups is not None:
            raise DataError("a RankingProblem already holds qid and its grouping: "
                            "pass it alone")
        y, groups = y.y, y.groups
    else:
        y = check_labels(y)
        groups = _grouping(qid, groups, len(y))
    counts = np.empty(groups.n_queries, dtype=np.int64)
    _COUNT[which](y, groups.order, groups.indptr, counts)
    return which, y, groups, counts


def _dense_grouped(X, qid):
    """``(dense X, its query grouping)`` from ``X`` and ``qid``, or from a
    :class:`~refimpl._validation.RankingProblem` alone (validated once,
    when it was built)."""
    if isinstance(X, RankingProblem):
        if qid is not None:
            raise DataError("a RankingProblem already holds qid and its grouping: "
                            "pass it alone")
        X, groups = X.X, X.groups
    else:
        X = check_X(X)
        groups = group_queries(qid, X.shape[0])
    if sp.issparse(X):
        X = X.toarray()
    return X, groups


@dataclass(frozen=True)
class PreferencePairs:
    """Index arrays of the preference pairs of ``(y, qid)``.

    Attributes
    ----------
    i, j : ndarray of int64, shape (p,)
        ``y[i[t]] > y[j[t]]`` and both documents belong to the same query
        (with ``which="adjacent"``, also no label of that query lies
        strictly between them); indices refer to the caller's rows (input
        order).
    per_query : ndarray of int64, shape (n_queries,)
        Number of pairs of each query, in increasing qid order.
    qids : ndarray
        The query ids that ``per_query`` refers to.
    """

    i: np.ndarray
    j: np.ndarray
    per_query: np.ndarray
    qids: np.ndarray

    def __len__(self) -> int:
        return len(self.i)


def pair_counts(y, qid=None, *, which: str = "all", groups=None) -> np.ndarray:
    """Number of preference pairs of each query (increasing qid order).

    Parameters
    ----------
    y : array-like of shape (n,), or RankingProblem
        Graded relevance labels, or a
        :class:`~refimpl._validation.RankingProblem` (then ``qid`` and
        ``groups`` are not given: its labels and grouping are used unchecked).
    qid : array-like of shape (n,), optional
        Query ids; ``None`` is one query.
    which : {"all", "adjacent"}, default "all"
        ``"all"``: ``|{(i, j) : q_i = q_j, y_i > y_j}|``, computed from the
        label runs as ``sum_r c_r (c_0 + ... + c_{r-1})``; ``"adjacent"``:
        the partial pairs of Lee & Lin (2014), section 5, ``sum_r c_r
        c_{r-1}``, where ``c_r`` is the number of documents at the ``r``-th
        smallest distinct label of the query.
    groups : QueryGroups, optional
        The grouping of ``qid`` already built (``check_ranking_data``): then
        ``qid`` is not grouped again.

    Returns
    -------
    ndarray of int64, shape (n_queries,)

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    return _checked_counts(y, qid, groups, which)[3]


def n_pairs(y, qid=None, *, which: str = "all") -> int:
    """Total number of preference pairs ``p = |P|`` (or of the partial pairs).

    ``y`` (labels or a :class:`~refimpl._validation.RankingProblem`) and
    ``which`` as in :func:`pair_counts`.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    return int(pair_counts(y, qid, which=which).sum())


def preference_pairs(
    y, qid=None, *, require_pairs: bool = True, which: str = "all", groups=None
) -> PreferencePairs:
    """Enumerate ``P = {(i, j) : q_i = q_j, y_i > y_j}`` as index arrays.

    Parameters
    ----------
    y : array-like of shape (n,), or RankingProblem
        Graded relevance labels, or a
        :class:`~refimpl._validation.RankingProblem` (as in :func:`pair_counts`).
    qid : array-like of shape (n,), optional
        Query ids; need not be contiguous or sorted.  ``None`` is one query.
    require_pairs : bool, default True
        Raise :class:`~refimpl.exceptions.DataError` when no query has two
        documents with different labels (a pairwise loss is then identically 0).
    which : {"all", "adjacent"}, default "all"
        ``"all"``: the whole of ``P``.  ``"adjacent"``: the partial pairs of
        Lee & Lin (2014), section 5, ``{(i, j) in P : no document of the
        query has a label strictly between y_j and y_i}``, i.e. ``y_i`` is
        the next level above ``y_j`` among the labels present in the query.
        For MQ2007/2008-list (labels ``1..l_q``) this is the paper's
        ``y_i = y_j + 1``; a LETOR query with levels {0, 2} pairs 2 with 0.
        When every level holds O(1) documents there are O(l) such pairs, and
        RankSVM becomes an ordinary L2-loss SVM on the rows ``x_i - x_j``
        (Table 10 compares it with all pairs).
    groups : QueryGroups, optional
        As in :func:`pair_counts`.

    Returns
    -------
    PreferencePairs
        Inside a query, pairs are listed by ``i`` in input order, then ``j``
        in input order (for both values of ``which``).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    which, y, groups, per_query = _checked_counts(y, qid, groups, which)
    total = int(per_query.sum())
    if total == 0 and require_pairs:
        raise DataError(
            "no preference pairs: no query has two documents with different "
            "labels, so a pairwise ranking loss is identically zero"
        )
    offsets = np.zeros(groups.n_queries + 1, dtype=np.int64)
    np.cumsum(per_query, out=offsets[1:])
    pi = np.empty(total, dtype=np.int64)
    pj = np.empty(total, dtype=np.int64)
    _FILL[which](y, groups.order, groups.indptr, offsets, pi, pj)
    return PreferencePairs(i=pi, j=pj, per_query=per_query, qids=groups.qids)


def label_blocks(y, qid=None, *, groups=None, pairs_only=False):
    """``P`` as contiguous blocks: each query's documents by decreasing label.

    Lays the documents out query by query (queries in the order of
    :func:`refimpl._validation.group_queries`), each query's by decreasing
    label (ties in input order).  Then the pairs ``(i, k)`` of ``P`` with a
    given ``i`` are exactly the documents after ``i``'s run of equal labels
    up to the end of its query: positions ``start[a] .. stop[a] - 1`` for
    ``i`` at position ``a``.  A kernel can loop over ``P`` without index
    arrays (``refimpl.kernels.fenchel.block_value_dz``).

    Parameters
    ----------
    y : array-like of shape (n,), or RankingProblem
        As in :func:`preference_pairs`.
    qid : array-like of shape (n,), optional
    groups : QueryGroups, optional
    pairs_only : bool, default False
        Leave out the queries without a pair (one label only): their
        documents are in no block.

    Returns
    -------
    rows : ndarray of int64, shape (n,) (fewer with ``pairs_only``)
        The caller's row of the document at each position.
    start, stop : ndarray of int64, shape (n,)
        The block of partners of each position (empty when
        ``start == stop``: the lowest label of its query).
    heads : ndarray of int64, shape (h,)
        The positions with a non-empty block, increasing.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    _, y, groups, _ = _checked_counts(y, qid, groups, "all")
    order = np.asarray(groups.order, dtype=np.int64)
    indptr = np.asarray(groups.indptr, dtype=np.int64)
    query = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    labels = y[order]
    perm = np.lexsort((-labels, query))          # stable: ties keep input order
    rows = order[perm]
    labels = labels[perm]
    n = len(rows)
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = labels[1:] != labels[:-1]
    new_run[indptr[:-1][indptr[:-1] < n]] = True  # a query starts a run
    run_starts = np.flatnonzero(new_run)
    run_ends = np.append(run_starts[1:], n)
    start = run_ends[np.cumsum(new_run) - 1].astype(np.int64)
    stop = np.repeat(indptr[1:], np.diff(indptr)).astype(np.int64)
    # the last run of a query ends at the query's end: an empty block
    heads = np.flatnonzero(start < stop).astype(np.int64)
    if pairs_only:
        # a query has a pair exactly when its first document heads a block
        first = indptr[:-1][np.diff(indptr) > 0]
        paired = np.zeros(len(indptr) - 1, dtype=bool)
        paired[np.diff(indptr) > 0] = start[first] < stop[first]
        keep = np.repeat(paired, np.diff(indptr))
        new = np.concatenate(([0], np.cumsum(keep))).astype(np.int64)
        rows, start, stop = rows[keep], new[start[keep]], new[stop[keep]]
        heads = new[heads]
    return rows, start, stop, heads


def pair_difference_matrix(
    X, y=None, qid=None, *, max_bytes: int = DEFAULT_MAX_BYTES, which: str = "all"
):
    """The explicit matrix ``K`` whose rows are ``x_i - x_j`` for ``(i, j)`` in P.

    For small teaching cases only: it has ``p`` rows, and ``p`` grows like the
    square of the documents per query.  A matrix that would need more than
    ``max_bytes`` raises :class:`~refimpl.exceptions.PairMatrixTooLargeError`
    naming the size instead of exhausting memory.  ``which="adjacent"``
    keeps the partial pairs of :func:`preference_pairs` only (Lee & Lin
    2014, section 5: the rows of the classification problem solved there).
    ``X`` may be a :class:`~refimpl._validation.RankingProblem` (``y`` and
    ``qid`` then not given), which is not checked again.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    which = _check_which(which)
    problem = ranking_problem(X, y, qid)
    X = problem.X
    p = int(pair_counts(problem, which=which).sum())
    need = p * X.shape[1] * 8
    if need > max_bytes:
        raise PairMatrixTooLargeError(
            f"the pair-difference matrix would have {p:,} rows x {X.shape[1]} "
            f"columns = {need / 2**20:,.1f} MiB (limit {max_bytes / 2**20:,.1f} "
            "MiB); use refimpl.losses.PairwiseSquaredHinge, which never builds "
            "it, or raise max_bytes"
        )
    pairs = preference_pairs(problem, which=which)
    if sp.issparse(X):
        return (X[pairs.i] - X[pairs.j]).tocsr()
    return X[pairs.i] - X[pairs.j]


def query_sign_grams(X, qid=None, *, chunk: int = 1 << 17, with_abs: bool = False):
    r"""Per query, the Gram matrices of the feature-difference signs.

    For each query of at least two documents, with ``S`` the matrix of
    ``sign(x_a - x_b)`` over its document pairs ``a < b`` (one column per
    feature), yields ``C = S^T S``: ``C_{jl}`` is the number of concordant
    minus discordant pairs of the rankings by features ``j`` and ``l``, and
    ``C_{jj}`` the number of pairs feature ``j`` does not tie.  With
    ``with_abs`` also ``|S|^T |S|``, the pairs tied in neither ranking.
    These are the ingredients of every Kendall-type feature similarity
    (:func:`refimpl.features.kendall_similarity`,
    :func:`refimpl.features.rank_similarity`), which differ only in how they
    normalise and average them.  ``S`` is built ``chunk`` pairs at a time,
    so memory stays ``O(chunk * d)`` however long a query is.

    ``X`` may be a :class:`~refimpl._validation.RankingProblem` (``qid`` then
    not given): its features and grouping are used as they are.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Yields
    ------
    C : ndarray of shape (d, d)
    A : ndarray of shape (d, d) or None
        ``|S|^T |S|`` when ``with_abs``, else None.
    """
    X, groups = _dense_grouped(X, qid)
    if not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise DataError(f"chunk must be a positive integer, got {chunk!r}")
    d = X.shape[1]
    for q in range(groups.n_queries):
        rows = X[groups.order[groups.indptr[q]:groups.indptr[q + 1]]]
        if rows.shape[0] < 2:
            continue
        a, b = np.triu_indices(rows.shape[0], 1)
        C = np.zeros((d, d))
        A = np.zeros((d, d)) if with_abs else None
        for s in range(0, len(a), chunk):
            S = np.sign(rows[a[s:s + chunk]] - rows[b[s:s + chunk]])
            C += S.T @ S
            if with_abs:
                T = np.abs(S)
                A += T.T @ T
        yield C, A
