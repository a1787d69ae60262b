r"""Ranking evaluation measures: NDCG, P@k, MAP, mean NDCG, pairwise accuracy.

Every measure takes graded labels ``y``, ranking ``scores`` and query ids
``qid`` (``None`` = a single query).  A query's documents need not be listed
together; they are grouped stably by query id, and per-query results come in
increasing qid order.  Inside a query, documents are ranked by decreasing
score.

Ties in score.  ``ties="input"`` (default) breaks ties by the documents'
order in the caller's arrays (grouping is stable, so this is the input order
inside each query); this is what the LETOR scripts do with the order of
lines in the prediction file.  ``ties="pessimistic"`` puts the less relevant
of equally scored documents first (the worst case), ``ties="optimistic"``
the more relevant first (the best case).  A constant scorer therefore gets
the measure of the input order under ``"input"``, and a lower and an upper
bound under the other two.

Conventions.  "NDCG@10" or "P@10" is not one number: published tools differ
on the gain, the discount, queries shorter than the cutoff and queries
without relevant documents.  An :class:`EvalConvention` fixes these choices;
``convention=`` takes one of the presets of :data:`CONVENTIONS` by name, or
an instance.  Positions ``i`` are 1-based, ``l_q`` is the number of
documents of query ``q`` and ``y_(i)`` is the label of the document ranked
at position ``i``.

``"letor4"`` (default) -- the LETOR 4.0 evaluation script
``Eval-Score-4.0.pl`` (Jun Xu and Tie-Yan Liu):

* gain ``2**y - 1``; discount ``d(i) = 1 / log2(max(2, i))``, so positions
  1 and 2 both have discount 1;
  ``NDCG@k = sum_{i<=k} gain(y_(i)) d(i) / sum_{i<=k} gain(y*_(i)) d(i)``
  with ``y*`` the labels sorted decreasingly (the ideal ranking);
* ties in score are broken by input order (the script sorts by line number,
  then stable-sorts by prediction);
* NDCG@k of a query with fewer than ``k`` documents is 0: the script only
  computes NDCG at positions ``1..l_q``, and the undefined positions add 0 to
  the average over queries;
* NDCG of a query whose ideal DCG is 0 (every label 0) is 0, and the query
  stays in the average;
* a document is relevant for P@k and MAP when ``y >= 1``
  (``relevance_threshold=1``); the MSLR-WEB version of the script counts
  ``y >= 2`` as relevant, which is
  ``dataclasses.replace(CONVENTIONS["letor4"], relevance_threshold=2)``;
* P@k of a query with fewer than ``k`` documents counts the missing positions
  as irrelevant: (number of relevant documents) / k;
* AP = mean of the precisions at the ranks of the relevant documents; AP of a
  query without relevant documents is 0, and it stays in MAP;
* mean NDCG of a query (Lee and Lin 2014, section 4.4) = mean of
  NDCG@1..NDCG@l_q, then averaged over queries.

``"letor3"`` -- the LETOR 3.0 script ``Eval-Score-3.0.pl``: as ``"letor4"``,
except that P@k of a query with fewer than ``k`` documents is 0 (the script
leaves those positions undefined, which adds 0 to the average).

``"trec"`` -- ``trec_eval``'s ``ndcg_cut``, ``P`` and ``map`` measures, as
reported per query by ``pytrec_eval`` (checked against pytrec-eval-terrier
0.5.11 in ``tests/test_metrics.py``):

* gain ``y`` (linear; trec_eval's default gain is the relevance level);
  discount ``1 / log2(i + 1)``;
* NDCG@k with ``k > l_q`` uses the ``l_q`` ranked documents with no penalty,
  and the ideal DCG over all judged documents truncated at ``k``, so it
  equals NDCG@l_q;
* relevant means ``y >= 1``; P@k = (relevant documents in the top k) / k,
  missing positions count as irrelevant; AP = sum of the precisions at the
  ranks of the relevant documents / number of relevant documents;
* a query without any relevant document (all judged labels 0) is still
  reported by pytrec_eval, with ``ndcg_cut_k``, ``P_k`` and ``map`` all equal
  to 0.0; this preset therefore gives 0 and keeps the query in the mean.
  trec_eval ranks equal scores by document name, which no array-based API
  can reproduce; compare with trec_eval on tie-free scores.

Labels must be non-negative for the gain-based measures.  Pairwise accuracy
and Kendall's tau do not depend on the convention.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy import stats

from ._validation import (
    check_labels,
    check_nonnegative,
    check_scores,
    check_X,
    group_queries,
)
from .exceptions import DataError
from .kernels.metrics import (
    ndcg_kernel,
    pairwise_count_kernel,
    precision_ap_kernel,
)

__all__ = [
    "CONVENTIONS",
    "EvalConvention",
    "average_precision",
    "evaluate",
    "kendall_tau",
    "mean_average_precision",
    "mean_ndcg",
    "ndcg_at_k",
    "pairwise_accuracy",
    "precision_at_k",
    "QueryTables",
    "query_tables",
    "sparsity_ratio",
]

_GAINS = ("exp2", "linear")
_DISCOUNTS = ("log2_max2", "log2_plus1")
_SHORT_NDCG = ("zero", "truncate")
_SHORT_PRECISION = ("pad", "zero")
_TIES = ("input", "pessimistic", "optimistic")


@dataclass(frozen=True)
class EvalConvention:
    """How NDCG, P@k and AP treat gains, discounts and short queries.

    Attributes
    ----------
    gain : {"exp2", "linear"}
        ``2**y - 1`` or ``y``.
    discount : {"log2_max2", "log2_plus1"}
        ``1 / log2(max(2, i))`` or ``1 / log2(i + 1)`` at 1-based position i.
    short_query_ndcg : {"zero", "truncate"}
        NDCG@k of a query with fewer than k documents: 0, or NDCG@l_q.
    short_query_precision : {"pad", "zero"}
        P@k of a query with fewer than k documents: missing positions
        count as irrelevant (numRel / k), or P@k is 0.
    no_relevant_ndcg : float
        NDCG of a query whose ideal DCG is 0.
    relevance_threshold : float
        A document is relevant for P@k and AP when ``y >= threshold``.
    name : str
        Label used in messages.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """

    gain: str = "exp2"
    discount: str = "log2_max2"
    short_query_ndcg: str = "zero"
    short_query_precision: str = "pad"
    no_relevant_ndcg: float = 0.0
    relevance_threshold: float = 1.0
    name: str = "custom"

    def __post_init__(self):
        for field, value, allowed in (
            ("gain", self.gain, _GAINS),
            ("discount", self.discount, _DISCOUNTS),
            ("short_query_ndcg", self.short_query_ndcg, _SHORT_NDCG),
            ("short_query_precision", self.short_query_precision,
             _SHORT_PRECISION),
        ):
            if value not in allowed:
                raise DataError(
                    f"EvalConvention.{field} must be one of {allowed}, "
                    f"got {value!r}"
                )
        for field in ("no_relevant_ndcg", "relevance_threshold"):
            value = getattr(self, field)
            if not isinstance(value, numbers.Real) or not np.isfinite(value):
                raise DataError(
                    f"EvalConvention.{field} must be a finite number, "
                    f"got {value!r}"
                )


CONVENTIONS = {
    "letor4": EvalConvention(name="letor4"),
    "letor3": EvalConvention(short_query_precision="zero", name="letor3"),
    "trec": EvalConvention(
        gain="linear",
        discount="log2_plus1",
        short_query_ndcg="truncate",
        short_query_precision="pad",
        no_relevant_ndcg=0.0,
        relevance_threshold=1.0,
        name="trec",
    ),
}

# --------------------------------------------------------------------------
# validation and preparation (Python side; kernels see clean arrays only)
# --------------------------------------------------------------------------


def _get_convention(convention) -> EvalConvention:
    if isinstance(convention, EvalConvention):
        return convention
    if isinstance(convention, str) and convention in CONVENTIONS:
        return CONVENTIONS[convention]
    names = ", ".join(repr(n) for n in sorted(CONVENTIONS))
    raise DataError(
        f"unknown convention {convention!r}; accepted names are {names}, "
        "or pass an EvalConvention instance"
    )


def _check_ties(ties) -> str:
    if not isinstance(ties, str) or ties not in _TIES:
        raise DataError(f"ties must be one of {_TIES}, got {ties!r}")
    return ties


def _check_ks(k, name: str = "k"):
    """Return ``(ks, is_scalar)`` with ``ks`` a C-contiguous int64 array."""
    def bad():
        return DataError(
            f"{name} must be a positive integer or a non-empty sequence of "
            f"positive integers, got {k!r}"
        )

    if isinstance(k, (bool, np.bool_)):
        raise bad()
    if isinstance(k, numbers.Integral):
        ks, scalar = np.array([int(k)], dtype=np.int64), True
    else:
        try:
            arr = np.asarray(k)
        except (TypeError, ValueError):
            raise bad() from None
        if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
            raise bad()
        ks, scalar = np.ascontiguousarray(arr, dtype=np.int64), False
    if np.any(ks < 1):
        raise DataError(f"{name} must be >= 1, got {k!r}")
    return ks, scalar


def _prepare(y, scores, qid):
    """Validate and group; return grouped labels, scores, query codes."""
    y = check_labels(y)
    if len(y) == 0:
        raise DataError("y is empty: there are no documents to evaluate")
    s = check_scores(scores, len(y))
    groups = group_queries(qid, len(y))
    qcode = np.repeat(np.arange(groups.n_queries, dtype=np.int64),
                      groups.sizes)
    return y[groups.order], s[groups.order], qcode, groups


def _check_graded(y_g):
    if np.any(y_g < 0):
        raise DataError(
            "y contains negative labels; graded relevance labels must be "
            ">= 0 for NDCG, P@k and AP"
        )


def _rank_order(y_g, s_g, qcode, ties):
    """Permutation of the grouped documents into ranked order per query."""
    if ties == "input":
        tie_key = np.arange(len(y_g))
    elif ties == "pessimistic":
        tie_key = y_g
    else:
        tie_key = -y_g
    return np.lexsort((tie_key, -s_g, qcode))


class _Ranked(NamedTuple):
    """Checked arguments of a graded measure, documents grouped and ranked."""

    conv: EvalConvention
    ks: np.ndarray
    scalar: bool
    y: np.ndarray  # labels grouped by query
    s: np.ndarray  # scores grouped by query
    qcode: np.ndarray
    indptr: np.ndarray
    order: np.ndarray  # the grouped documents in ranked order per query


def _rank(y, scores, qid, convention, ties, k=1, k_name="k"):
    """The common start of NDCG, P@k and AP: check, group, rank.

    The checks run in this order (convention, ties, cutoffs, data), so a call
    with several bad arguments reports the same one whichever measure it is.
    """
    conv = _get_convention(convention)
    ties = _check_ties(ties)
    ks, scalar = _check_ks(k, name=k_name)
    y_g, s_g, qcode, groups = _prepare(y, scores, qid)
    _check_graded(y_g)
    order = _rank_order(y_g, s_g, qcode, ties)
    return _Ranked(conv, ks, scalar, y_g, s_g, qcode, groups.indptr, order)


def _gains(y, conv):
    if conv.gain == "exp2":
        with np.errstate(over="ignore"):
            g = np.exp2(y) - 1.0
    else:
        g = y.copy()
    if not np.all(np.isfinite(g)):
        raise DataError(
            "the gain 2**y - 1 overflows for labels this large; use a "
            "convention with gain='linear'"
        )
    return g


def _ndcg_tables(y_g, qcode, indptr, order, ks, conv):
    gain = _gains(y_g, conv)
    gain_ranked = gain[order]
    gain_ideal = gain[np.lexsort((-gain, qcode))]
    positions = np.arange(1, int(np.diff(indptr).max()) + 1, dtype=np.float64)
    if conv.discount == "log2_max2":
        discount = 1.0 / np.log2(np.maximum(2.0, positions))
    else:
        discount = 1.0 / np.log2(positions + 1.0)
    n_queries = len(indptr) - 1
    out = np.empty((n_queries, len(ks)))
    out_mean = np.empty(n_queries)
    ndcg_kernel(gain_ranked, gain_ideal, discount, indptr, ks,
                conv.short_query_ndcg == "truncate",
                float(conv.no_relevant_ndcg), out, out_mean)
    return out, out_mean


def _precision_tables(y_g, indptr, order, ks, conv):
    relevant = np.ascontiguousarray(y_g[order] >= conv.relevance_threshold)
    n_queries = len(indptr) - 1
    out_p = np.empty((n_queries, len(ks)))
    out_ap = np.empty(n_queries)
    precision_ap_kernel(relevant, indptr, ks,
                        conv.short_query_precision == "pad", out_p, out_ap)
    return out_p, out_ap


def _pairwise_inputs(y_g, s_g, qcode, indptr):
    """Per-query dense label ranks and scores, sorted by increasing score."""
    by_label = np.lexsort((y_g, qcode))
    ys, qs = y_g[by_label], qcode[by_label]
    new = np.r_[True, (qs[1:] != qs[:-1]) | (ys[1:] != ys[:-1])]
    dense = np.cumsum(new) - 1
    dense -= np.repeat(dense[indptr[:-1]], np.diff(indptr))
    label_rank = np.empty(len(y_g), dtype=np.int64)
    label_rank[by_label] = dense
    by_score = np.lexsort((s_g, qcode))
    return (np.ascontiguousarray(label_rank[by_score]),
            np.ascontiguousarray(s_g[by_score]))


def _pairwise_counts(y_g, s_g, qcode, indptr):
    label_rank, scores_sorted = _pairwise_inputs(y_g, s_g, qcode, indptr)
    out = np.zeros(3, dtype=np.int64)
    pairwise_count_kernel(label_rank, scores_sorted, indptr, out)
    return int(out[0]), int(out[1]), int(out[2])


def _reduce(table, scalar, per_query):
    if per_query:
        return table[:, 0].copy() if scalar else table
    means = table.mean(axis=0)
    return float(means[0]) if scalar else means


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


class QueryTables(NamedTuple):
    """Every measure of :func:`evaluate`, per query (:func:`query_tables`).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Attributes
    ----------
    ndcg, precision : ndarray of shape (n_queries, n_ks)
        NDCG@k and P@k of each query, one column per cutoff.
    mean_ndcg, ap : ndarray of shape (n_queries,)
        Mean NDCG and average precision of each query.
    n_correct, n_pairs : int
        Preference pairs ordered correctly, and all of them.
    """

    ndcg: np.ndarray
    mean_ndcg: np.ndarray
    precision: np.ndarray
    ap: np.ndarray
    n_correct: int
    n_pairs: int


def query_tables(y_grouped, scores_grouped, indptr, ks, *, convention="letor4",
                 ties="input"):
    """Every measure of :func:`evaluate`, per query, of documents already
    checked and grouped by query.

    For a caller that validated and grouped its data once
    (:class:`refimpl._validation.RankingProblem`) and evaluates many
    rankings of them: the documents are ranked once and nothing is checked
    or grouped again, so the numbers are those of :func:`evaluate`,
    ``ndcg_at_k(..., per_query=True)`` and
    ``average_precision(..., per_query=True)``.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    y_grouped : ndarray of shape (n_samples,)
        Checked labels, the documents of each query contiguous.
    scores_grouped : ndarray of shape (n_samples,)
        Checked float64 scores in the same order.
    indptr : ndarray of shape (n_queries + 1,)
        Query ``i`` holds documents ``indptr[i]:indptr[i + 1]``.
    ks : sequence of int
        Cutoffs for NDCG@k and P@k.
    convention, ties
        As in :func:`ndcg_at_k`.

    Returns
    -------
    QueryTables
    """
    conv = _get_convention(convention)
    ties = _check_ties(ties)
    ks, _ = _check_ks(ks, name="ks")
    indptr = np.asarray(indptr)
    qcode = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    _check_graded(y_grouped)
    order = _rank_order(y_grouped, scores_grouped, qcode, ties)
    nd, nd_mean = _ndcg_tables(y_grouped, qcode, indptr, order, ks, conv)
    prec, ap = _precision_tables(y_grouped, indptr, order, ks, conv)
    n_correct, n_pairs, _ = _pairwise_counts(y_grouped, scores_grouped, qcode,
                                             indptr)
    return QueryTables(nd, nd_mean, prec, ap, n_correct, n_pairs)


def ndcg_at_k(y, scores, qid=None, k=10, *, convention="letor4",
              ties="input", per_query=False):
    """Normalised discounted cumulative gain at cutoff ``k``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Graded relevance labels (>= 0).
    scores : array-like of shape (n,)
        Ranking scores; higher means ranked earlier.
    qid : array-like of shape (n,), optional
        Query ids; ``None`` means a single query.
    k : int or sequence of int, default 10
        Cutoff(s), each >= 1.
    convention : str or EvalConvention, default "letor4"
        Gain, discount and short-query rules; see the module docstring.
    ties : {"input", "pessimistic", "optimistic"}, default "input"
        Order of equally scored documents.
    per_query : bool, default False
        Return per-query values (queries in increasing qid order).

    Returns
    -------
    float or ndarray
        Mean NDCG@k over queries (a float for an int ``k``, shape
        ``(len(k),)`` for a sequence); with ``per_query=True``, shape
        ``(n_queries,)`` or ``(n_queries, len(k))``.

    References
    ----------
    K. Järvelin and J. Kekäläinen, "Cumulated gain-based evaluation of IR
    techniques", ACM Transactions on Information Systems 20(4):422-446, 2002.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    r = _rank(y, scores, qid, convention, ties, k)
    table, _ = _ndcg_tables(r.y, r.qcode, r.indptr, r.order, r.ks, r.conv)
    return _reduce(table, r.scalar, per_query)


def mean_ndcg(y, scores, qid=None, *, convention="letor4", ties="input",
              per_query=False):
    """Mean NDCG: per query the mean of NDCG@1..NDCG@l_q, then over queries.

    This is the measure recommended for LETOR 4.0 and MSLR and used by Lee and
    Lin (2014, section 4.4); ``l_q`` is the number of documents of query q.

    Parameters
    ----------
    y, scores, qid, convention, ties
        As in :func:`ndcg_at_k`.
    per_query : bool, default False
        Return the per-query values (increasing qid order).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    References
    ----------
    C.-P. Lee and C.-J. Lin, "Large-scale linear RankSVM", Neural Computation
    26(4):781-817, 2014, section 4.4.  K. Järvelin and J. Kekäläinen,
    "Cumulated gain-based evaluation of IR techniques", ACM TOIS
    20(4):422-446, 2002.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    r = _rank(y, scores, qid, convention, ties)
    _, per_q = _ndcg_tables(r.y, r.qcode, r.indptr, r.order, r.ks, r.conv)
    return per_q if per_query else float(per_q.mean())


def precision_at_k(y, scores, qid=None, k=10, *, convention="letor4",
                   ties="input", per_query=False):
    """Precision at cutoff ``k``: the fraction of relevant documents in the top k.

    A document is relevant when ``y >= convention.relevance_threshold``;
    queries shorter than ``k`` follow ``convention.short_query_precision``.

    Parameters
    ----------
    y, scores, qid, k, convention, ties, per_query
        As in :func:`ndcg_at_k`.

    Returns
    -------
    float or ndarray
        Shapes as in :func:`ndcg_at_k`.

    References
    ----------
    T. Qin, T.-Y. Liu, J. Xu and H. Li, "LETOR: A benchmark collection for
    research on learning to rank for information retrieval", Information
    Retrieval 13(4):346-374, 2010 (and its evaluation scripts).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    r = _rank(y, scores, qid, convention, ties, k)
    table, _ = _precision_tables(r.y, r.indptr, r.order, r.ks, r.conv)
    return _reduce(table, r.scalar, per_query)


def average_precision(y, scores, qid=None, *, convention="letor4",
                      ties="input", per_query=False):
    """Mean average precision (MAP) over queries, or per-query AP.

    AP of a query is the mean, over its relevant documents, of the precision
    at the rank of each; it is 0 for a query without relevant documents
    (which stays in the mean).  Relevant means
    ``y >= convention.relevance_threshold``.

    Parameters
    ----------
    y, scores, qid, convention, ties
        As in :func:`ndcg_at_k`.
    per_query : bool, default False
        Return the per-query AP (increasing qid order).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    References
    ----------
    T. Qin, T.-Y. Liu, J. Xu and H. Li, "LETOR: A benchmark collection for
    research on learning to rank for information retrieval", Information
    Retrieval 13(4):346-374, 2010.  L. Laporte et al., "Nonconvex
    regularizations for feature selection in ranking with sparse SVM", IEEE
    TNNLS 25(6):1118-1130, 2014.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    r = _rank(y, scores, qid, convention, ties)
    _, per_q = _precision_tables(r.y, r.indptr, r.order, r.ks, r.conv)
    return per_q if per_query else float(per_q.mean())


mean_average_precision = average_precision


PAIRWISE_TIES = ("incorrect", "correct", "half")


def pairwise_accuracy(y, scores, qid=None, *, ties="incorrect",
                      return_counts=False):
    """Fraction of preference pairs that the scores order correctly.

    With ``P = {(i, j): same query, y_i > y_j}``, the pairwise accuracy is
    ``|{(i, j) in P: s_i > s_j}| / |P|``, one global ratio over the pairs of
    all queries (not a mean over queries).  Computed in O(l log l) per query: documents are sorted by score and, block
    by block of equal scores, a Fenwick tree over label ranks counts the
    earlier (strictly lower-scored) documents with a strictly lower label.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels (any real values; only their order inside a query matters).
    scores : array-like of shape (n,)
        Ranking scores.
    qid : array-like of shape (n,), optional
        Query ids; ``None`` means a single query.
    ties : {"incorrect", "correct", "half"}, default "incorrect"
        How a pair with equal scores counts.  ``"incorrect"`` is the paper's
        definition (``s_i > s_j`` strictly); ``"correct"`` is what the
        evaluation code distributed with Lee & Lin's experiments computes
        (it counts only strictly discordant pairs as errors; LETOR data has
        duplicate documents, so this matters); ``"half"`` is the
        concordance-index / AUC convention.
    return_counts : bool, default False
        Return ``(n_correct, n_pairs)`` as Python ints instead of the ratio
        (``n_correct`` counts strictly concordant pairs plus, for
        ``ties="correct"``, the tied ones; for ``"half"`` it is a float).

    Returns
    -------
    float or tuple of int

    Raises
    ------
    DataError
        If no query has two documents with different labels (``|P| = 0``).

    References
    ----------
    C.-P. Lee and C.-J. Lin, "Large-scale linear RankSVM", Neural Computation
    26(4):781-817, 2014, section 4.4.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    if ties not in PAIRWISE_TIES:
        raise DataError(f"ties must be one of {PAIRWISE_TIES}, got {ties!r}")
    y_g, s_g, qcode, groups = _prepare(y, scores, qid)
    n_correct, n_pairs, n_tied = _pairwise_counts(y_g, s_g, qcode, groups.indptr)
    if ties == "correct":
        n_correct += n_tied
    elif ties == "half":
        n_correct += n_tied / 2
    if n_pairs == 0:
        raise DataError(
            "pairwise accuracy is undefined: no query has two documents with "
            "different labels"
        )
    if return_counts:
        return n_correct, n_pairs
    return n_correct / n_pairs


def kendall_tau(a, b, qid=None):
    """Mean over queries of Kendall's tau-b between two score vectors.

    Only queries with at least two documents on which neither ``a`` nor
    ``b`` is constant take part (tau-b is undefined otherwise), so the
    result is never NaN.

    Parameters
    ----------
    a, b : array-like of shape (n,)
        Two scorings of the same documents (e.g. two features, or labels and
        predictions).
    qid : array-like of shape (n,), optional
        Query ids; ``None`` means a single query.

    Returns
    -------
    float

    Raises
    ------
    DataError
        If no query qualifies.

    References
    ----------
    M. G. Kendall, "The treatment of ties in ranking problems", Biometrika
    33(3):239-251, 1945 (tau-b); computed with ``scipy.stats.kendalltau``.
    Used between features by Laporte et al., IEEE TNNLS 25(6), 2014.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    a = check_labels(a, name="a")
    b = check_scores(b, len(a), name="b")
    groups = group_queries(qid, len(a))
    taus = []
    for q in range(groups.n_queries):
        idx = groups.order[groups.indptr[q]:groups.indptr[q + 1]]
        if len(idx) < 2:
            continue
        aq, bq = a[idx], b[idx]
        if np.all(aq == aq[0]) or np.all(bq == bq[0]):
            continue
        taus.append(stats.kendalltau(aq, bq).statistic)
    if not taus:
        raise DataError(
            "Kendall's tau is undefined: no query has two or more documents "
            "on which both a and b are non-constant"
        )
    return float(np.mean(taus))


def sparsity_ratio(coef, X=None, *, tol=0.0, ignore_unused=False):
    """Fraction of features kept by a linear model: ``|coef_j| > tol``.

    Laporte et al. (2014) define the sparsity ratio as (number of remaining
    features in the learned model) / (number of features of the data set),
    leaving out features that are zero on every document; pass
    ``ignore_unused=True`` and the data ``X`` to do the same (those features
    are then dropped from numerator and denominator).  Lower is sparser.

    Parameters
    ----------
    coef : array-like of shape (d,)
        Model coefficients.
    X : array-like or sparse matrix of shape (n, d), optional
        Data, needed for ``ignore_unused``.
    tol : float, default 0.0
        A coefficient counts as nonzero when ``|coef_j| > tol``.
    ignore_unused : bool, default False
        Exclude the features that are zero on every row of ``X``.

    Returns
    -------
    float

    References
    ----------
    L. Laporte, R. Flamary, S. Canu, S. Déjean and J. Mothe, "Nonconvex
    regularizations for feature selection in ranking with sparse SVM", IEEE
    Transactions on Neural Networks and Learning Systems 25(6):1118-1130,
    2014, section V-B.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    coef = check_labels(coef, name="coef")
    if coef.size == 0:
        raise DataError("coef is empty")
    tol = check_nonnegative(tol, "tol")
    if X is not None:
        X = check_X(X)
        if X.shape[1] != coef.size:
            raise DataError(
                f"coef has {coef.size} entries but X has {X.shape[1]} columns"
            )
    used = np.ones(coef.size, dtype=bool)
    if ignore_unused:
        if X is None:
            raise DataError("ignore_unused=True needs the data X")
        if sp.issparse(X):
            X = X.copy()
            X.eliminate_zeros()
            used = np.asarray(X.getnnz(axis=0)) > 0
        else:
            used = np.any(X != 0, axis=0)
        if not used.any():
            raise DataError("every feature of X is zero on every row")
    kept = np.count_nonzero(np.abs(coef[used]) > tol)
    return kept / int(used.sum())


def evaluate(y, scores, qid=None, *, ks=(1, 3, 5, 10), convention="letor4",
             ties="input"):
    """All the measures of this module at once, as a dict of floats.

    Keys: ``"NDCG@k"`` and ``"P@k"`` for each k in ``ks``, ``"MAP"``,
    ``"MeanNDCG"`` and ``"PairwiseAccuracy"`` (NaN when no query has two
    documents with different labels).  The data are validated, grouped and
    ranked once.

    Parameters
    ----------
    y, scores, qid, convention, ties
        As in :func:`ndcg_at_k`.
    ks : int or sequence of int, default (1, 3, 5, 10)
        Cutoffs for NDCG@k and P@k.

    Returns
    -------
    dict of str to float

    References
    ----------
    K. Järvelin and J. Kekäläinen, ACM TOIS 20(4):422-446, 2002 (NDCG);
    C.-P. Lee and C.-J. Lin, Neural Computation 26(4):781-817, 2014, section
    4.4 (mean NDCG, pairwise accuracy).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    conv = _get_convention(convention)
    ties = _check_ties(ties)
    ks_arr, _ = _check_ks(ks, name="ks")
    y_g, s_g, _, groups = _prepare(y, scores, qid)
    t = query_tables(y_g, s_g, groups.indptr, ks_arr, convention=conv, ties=ties)
    result = {}
    for j, k in enumerate(ks_arr):
        result[f"NDCG@{k}"] = float(t.ndcg[:, j].mean())
    for j, k in enumerate(ks_arr):
        result[f"P@{k}"] = float(t.precision[:, j].mean())
    result["MAP"] = float(t.ap.mean())
    result["MeanNDCG"] = float(t.mean_ndcg.mean())
    result["PairwiseAccuracy"] = (
        t.n_correct / t.n_pairs if t.n_pairs else float("nan")
    )
    return result
