"""Preference pairs ``P = {(i, j) : q_i = q_j, y_i > y_j}``.

The pairwise losses of every chapter are sums over ``P``.  Its size grows like
the square of the number of documents per query, which is why
:mod:`refimpl.losses` never materialises the ``p x n`` pair-difference matrix
and why the order-statistic-tree chapter exists.  The explicit matrix
:func:`pair_difference_matrix` is offered for small teaching examples only.

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._validation import check_labels, check_X, group_queries
from .exceptions import DataError, PairMatrixTooLargeError
from .kernels.pairs import count_pairs_per_query, fill_pairs

#: Default memory cap for :func:`pair_difference_matrix`: 256 MiB.
DEFAULT_MAX_BYTES = 256 * 2**20


@dataclass(frozen=True)
class PreferencePairs:
    """Index arrays of the preference pairs of ``(y, qid)``.

    Attributes
    ----------
    i, j : ndarray of int64, shape (p,)
        ``y[i[t]] > y[j[t]]`` and both documents belong to the same query;
        indices refer to the caller's rows (input order).
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


def pair_counts(y, qid=None) -> np.ndarray:
    """Number of preference pairs of each query (increasing qid order).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    y = check_labels(y)
    groups = group_queries(qid, len(y))
    out = np.empty(groups.n_queries, dtype=np.int64)
    count_pairs_per_query(y, groups.order, groups.indptr, out)
    return out


def n_pairs(y, qid=None) -> int:
    """Total number of preference pairs ``p = |P|``."""
    return int(pair_counts(y, qid).sum())


def preference_pairs(y, qid=None, *, require_pairs: bool = True) -> PreferencePairs:
    """Enumerate ``P = {(i, j) : q_i = q_j, y_i > y_j}`` as index arrays.

    Parameters
    ----------
    y : array-like of shape (n,)
        Graded relevance labels.
    qid : array-like of shape (n,), optional
        Query ids; need not be contiguous or sorted.  ``None`` is one query.
    require_pairs : bool, default True
        Raise :class:`~refimpl.exceptions.DataError` when no query has two
        documents with different labels (a pairwise loss is then identically 0).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    y = check_labels(y)
    groups = group_queries(qid, len(y))
    per_query = np.empty(groups.n_queries, dtype=np.int64)
    count_pairs_per_query(y, groups.order, groups.indptr, per_query)
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
    fill_pairs(y, groups.order, groups.indptr, offsets, pi, pj)
    return PreferencePairs(i=pi, j=pj, per_query=per_query, qids=groups.qids)


def pair_difference_matrix(X, y, qid=None, *, max_bytes: int = DEFAULT_MAX_BYTES):
    """The explicit matrix ``K`` whose rows are ``x_i - x_j`` for ``(i, j)`` in P.

    For small teaching cases only: it has ``p`` rows, and ``p`` grows like the
    square of the documents per query.  A matrix that would need more than
    ``max_bytes`` raises :class:`~refimpl.exceptions.PairMatrixTooLargeError`
    naming the size instead of exhausting memory.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    X = check_X(X)
    y = check_labels(y, X.shape[0])
    p = n_pairs(y, qid)
    need = p * X.shape[1] * 8
    if need > max_bytes:
        raise PairMatrixTooLargeError(
            f"the pair-difference matrix would have {p:,} rows x {X.shape[1]} "
            f"columns = {need / 2**20:,.1f} MiB (limit {max_bytes / 2**20:,.1f} "
            "MiB); use refimpl.losses.PairwiseSquaredHinge, which never builds "
            "it, or raise max_bytes"
        )
    pairs = preference_pairs(y, qid)
    if sp.issparse(X):
        return (X[pairs.i] - X[pairs.j]).tocsr()
    return X[pairs.i] - X[pairs.j]
