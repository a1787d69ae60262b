r"""Feature-quality measures: how good one feature is, how alike two are.

The importance of a feature is how well it ranks alone: Pearson's
correlation with the labels (FSMRank, :func:`pearson_importance`) or the
NDCG of ranking by it (GAS and LifeRank, :func:`feature_ndcg`,
:func:`feature_importance`).  The similarity of two features is Pearson's
correlation of the columns (:func:`pearson_similarity`) or Kendall's tau of
the rankings they induce, per query (:func:`kendall_similarity`,
:func:`rank_similarity`, :func:`feature_redundancy`).  :func:`gas_select` is
Geng et al.'s greedy selection on an importance and a similarity.

Derived in: book/04_fsmrank_nesterov.md#fsmrank
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from ._validation import RankingProblem, check_labels, check_X
from .exceptions import DataError
from .metrics import ndcg_at_k, query_tables
from .pairs import _dense_grouped, query_sign_grams

__all__ = [
    "IMPORTANCE_FLOOR",
    "SIGN_CHUNK",
    "TAU_VARIANTS",
    "feature_importance",
    "feature_ndcg",
    "feature_redundancy",
    "gas_select",
    "kendall_similarity",
    "pearson_importance",
    "pearson_similarity",
    "rank_similarity",
]

#: Floor of the importance ``s_i``: eq. 1 divides by ``s_i``, and a feature
#: that is constant on the training set (or uncorrelated with the labels) has
#: ``|PC| = 0``.  With the floor its l1 weight is ``lambda_2 / 1e-6``, which
#: keeps it at exactly zero for any reasonable ``lambda_2`` while the
#: penalty stays finite.
IMPORTANCE_FLOOR = 1e-6


#: Similarity of two rankings in :func:`rank_similarity`.
TAU_VARIANTS = ("b", "eq10")


# --------------------------------------------------------------------------
# Pearson importance and similarity (FSMRank, Lai et al. 2013, Section III-B)
# --------------------------------------------------------------------------


def _scaled_columns_stats(X):
    """Column-scaled X, its centred Gram ``Xc^T Xc`` and the constant-column mask.

    Each column is divided by ``max(1, max |x_j|)``: Pearson correlations do
    not see a column's scale, and the Gram of raw columns overflows from
    magnitudes of about 1e154 (every correlation then read as 0); columns
    within [-1, 1], LETOR's, are left as they are, bit for bit.
    """
    n = X.shape[0]
    if sp.issparse(X):
        scale = np.maximum(1.0, abs(X).max(axis=0).toarray().ravel())
        Xs = sp.csr_matrix(X @ sp.diags(1.0 / scale))
        mean = np.asarray(Xs.mean(axis=0)).ravel()
        gram = np.asarray((Xs.T @ Xs).todense()) - n * np.outer(mean, mean)
        xmax = X.max(axis=0).toarray().ravel()
        xmin = X.min(axis=0).toarray().ravel()
        const = xmax == xmin
    else:
        scale = np.maximum(1.0, np.abs(X).max(axis=0, initial=0.0))
        Xs = X / scale if np.any(scale > 1.0) else X
        Xc = Xs - Xs.mean(axis=0)
        gram = Xc.T @ Xc
        const = np.ptp(X, axis=0) == 0
    return Xs, gram, const


def pearson_importance(X, y=None, *, eps=IMPORTANCE_FLOOR):
    r"""Feature importance ``s_i = max(|PC(h_i, y)|, eps)`` (Lai et al., Sec. III-B).

    ``PC`` is Pearson's correlation between the feature column ``h_i`` and
    the label column over all ``N`` training documents (queries pooled), as
    in the paper.  A constant column has an undefined correlation and gets
    importance 0 before the floor.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (N, d), or RankingProblem
        The features, or a validated
        :class:`~refimpl._validation.RankingProblem` (``y`` then not given),
        whose arrays are used unchecked.
    y : array-like of shape (N,)
        Relevance labels; must not be constant.
    eps : float, default IMPORTANCE_FLOOR
        Floor in (0, 1]: eq. 1 divides by ``s_i`` (``s_i in (0, 1]``).

    Returns
    -------
    ndarray of shape (d,), values in [eps, 1]

    Raises
    ------
    DataError
        Bad ``X``, ``y`` or ``eps``, or constant ``y``.
    """
    if isinstance(X, RankingProblem):
        if y is not None:
            raise DataError("a RankingProblem already holds y: pass it alone")
        X, y = X.X, X.y
    else:
        X = check_X(X)
        y = check_labels(y, X.shape[0])
    eps = float(eps)
    if not (0 < eps <= 1):
        raise DataError(f"eps must be in (0, 1], got {eps!r}")
    if np.ptp(y) == 0:
        raise DataError("y is constant: the Pearson importance |PC(h_i, y)| is undefined")
    yc = y - y.mean()
    Xs, gram, const = _scaled_columns_stats(X)
    cov = np.asarray(Xs.T @ yc).ravel()     # sum_k (x_ki - mean_i) (y_k - ybar)
    var = np.clip(np.diag(gram), 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        pc = np.abs(cov) / np.sqrt(var * float(yc @ yc))
    pc = np.where(const | ~np.isfinite(pc), 0.0, np.minimum(pc, 1.0))
    return np.maximum(pc, eps)


def pearson_similarity(X):
    r"""Feature similarity ``A_ij = |PC(h_i, h_j)|`` (Lai et al., Sec. III-B).

    Pearson correlations between feature columns over all training
    documents.  A constant column has similarity 0 to every other column and
    1 to itself, so the matrix keeps a unit diagonal.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (N, d), or RankingProblem
        The features, or a validated
        :class:`~refimpl._validation.RankingProblem` (its ``X``, unchecked).

    Returns
    -------
    ndarray of shape (d, d)
        Symmetric, entries in [0, 1], unit diagonal.  Not necessarily PSD.
    """
    X = X.X if isinstance(X, RankingProblem) else check_X(X)
    _, gram, const = _scaled_columns_stats(X)
    std = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        A = np.abs(gram) / np.outer(std, std)
    A[const, :] = 0.0
    A[:, const] = 0.0
    A = np.minimum(np.where(np.isfinite(A), A, 0.0), 1.0)
    A = 0.5 * (A + A.T)
    np.fill_diagonal(A, 1.0)
    return A


# --------------------------------------------------------------------------
# NDCG importance, Kendall similarity, GAS (Geng, Liu, Qin & Li 2007)
# --------------------------------------------------------------------------


def feature_ndcg(X, y=None, qid=None, *, k=10):
    """Importance of each feature for GAS: NDCG@k of ranking by the feature.

    Each feature ranks every query's documents by its value, in the better
    of the two directions (Geng et al. 2007: for some features a smaller
    value means more relevant); NDCG@k uses the LETOR 4.0 convention of
    :func:`refimpl.metrics.ndcg_at_k` and is averaged over queries.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), or RankingProblem
        With a :class:`~refimpl._validation.RankingProblem` (``y`` and
        ``qid`` then not given) the data is checked and grouped once, not
        twice per feature; the values are the same.
    y : array-like of shape (n,)
    qid : array-like of shape (n,), optional
    k : int, default 10

    Returns
    -------
    importance : ndarray of shape (d,)
        ``max(NDCG@k(x_j), NDCG@k(-x_j))``.
    sign : ndarray of shape (d,)
        ``+1`` when ranking by ``x_j`` is at least as good, else ``-1``.
    """
    if isinstance(X, RankingProblem):
        if y is not None or qid is not None:
            raise DataError("a RankingProblem already holds y and qid: pass it alone")
        ndcg = _grouped_ndcg(X, k)
        X = X.X
    else:
        X = check_X(X)

        def ndcg(col):
            return ndcg_at_k(y, col, qid, k)
    d = X.shape[1]
    imp = np.empty(d)
    sign = np.empty(d)
    for j in range(d):
        col = X[:, j].toarray().ravel() if sp.issparse(X) else X[:, j]
        up, down = ndcg(col), ndcg(-col)
        imp[j], sign[j] = (up, 1.0) if up >= down else (down, -1.0)
    return imp, sign


def _grouped_ndcg(problem, k):
    """``scores -> ndcg_at_k(y, scores, qid, k)`` on a validated problem.

    :func:`refimpl.metrics.query_tables` (LETOR 4.0 convention, ties in
    input order) on the documents grouped once for every call; the mean over
    queries is taken as :func:`refimpl.metrics.ndcg_at_k` takes it (of the
    one-column table), so the values are the same to the bit.
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, Integral) or k < 1:
        raise DataError(f"k must be a positive integer, got {k!r}")
    groups = problem.groups
    y_g = problem.y[groups.order]

    def ndcg(scores):
        s_g = np.asarray(scores, dtype=np.float64)[groups.order]
        tables = query_tables(y_g, s_g, groups.indptr, (int(k),))
        return float(tables.ndcg.mean(axis=0)[0])

    return ndcg


#: Document pairs whose sign rows :func:`kendall_similarity` builds at once
#: (its default ``chunk``; the longest query bounds them too).
SIGN_CHUNK = 1 << 17


def _dense_ranks(rows):
    """Per column, the dense rank of each value (0 for the smallest) as float32.

    ``sign(r_a - r_b) = sign(x_a - x_b)`` exactly for finite values (the
    difference of two distinct doubles is never 0), and ranks below
    ``2**24`` are exact in float32.
    """
    order = np.argsort(rows, axis=0, kind="stable")
    srt = np.take_along_axis(rows, order, axis=0)
    steps = np.empty(rows.shape, dtype=np.float32)
    steps[0] = 0.0
    steps[1:] = np.diff(srt, axis=0) != 0
    ranks = np.empty(rows.shape, dtype=np.float32)
    np.put_along_axis(ranks, order, np.cumsum(steps, axis=0, dtype=np.float32),
                      axis=0)
    return ranks


def _sign_grams(X, qid, chunk):
    """``S^T S`` per query, equal to :func:`refimpl.pairs.query_sign_grams`'s ``C``.

    The signs are taken on each query's dense ranks in float32 and
    multiplied in float32: every entry of ``S`` is -1, 0 or 1 and every sum
    of a chunk at most ``chunk < 2**24`` in magnitude, so each product is
    exact whatever the summation order, and half the memory traffic and
    the single-precision GEMM make it about twice as fast as in float64
    (the GEMM over document pairs is the cost of GAS at scale).
    """
    X, groups = _dense_grouped(X, qid)
    if not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise DataError(f"chunk must be a positive integer, got {chunk!r}")
    chunk = min(int(chunk), 1 << 23)
    pairs = {}
    for q in range(groups.n_queries):
        rows = X[groups.order[groups.indptr[q]:groups.indptr[q + 1]]]
        m = rows.shape[0]
        if m < 2:
            continue
        if m not in pairs:
            pairs[m] = np.triu_indices(m, 1)
        a, b = pairs[m]
        ranks = _dense_ranks(rows)
        C = np.zeros((rows.shape[1],) * 2)
        for s in range(0, len(a), chunk):
            S = np.sign(ranks[a[s:s + chunk]] - ranks[b[s:s + chunk]])
            C += (S.T @ S).astype(np.float64)
        yield C


def kendall_similarity(X, qid=None, *, chunk=SIGN_CHUNK):
    r"""``|tau|`` between the rankings of every two features, averaged over queries.

    Kendall's tau-b per query, computed for all feature pairs at once:
    with ``S`` the matrix of ``sign(x_aj - x_bj)`` over the document pairs
    ``a < b`` of a query, ``S^T S`` holds the concordant-minus-discordant
    counts and its diagonal the untied counts, so ``tau_b = (S^T S)_{jk} /
    sqrt((S^T S)_{jj} (S^T S)_{kk})``.  As in
    :func:`refimpl.metrics.kendall_tau`, a query takes part for a pair
    ``(j, k)`` only if neither feature is constant on it; the mean of
    ``tau`` over those queries is returned in absolute value (0 when no
    query qualifies).  This is Geng et al.'s similarity.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), or RankingProblem
        With a :class:`~refimpl._validation.RankingProblem` (``qid`` then
        not given), its features and grouping are used as they are.
    qid : array-like of shape (n,), optional
    chunk : int
        Document pairs processed at once (memory ``chunk * d`` floats).

    Returns
    -------
    ndarray of shape (d, d)
        Symmetric, in [0, 1].
    """
    d = (X.n_features if isinstance(X, RankingProblem) else check_X(X).shape[1])
    tau_sum = np.zeros((d, d))
    count = np.zeros((d, d))
    for C in _sign_grams(X, qid, chunk):
        nt = np.diag(C).copy()
        valid = nt > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = C / np.sqrt(np.outer(nt, nt))
        both = np.outer(valid, valid)
        tau_sum += np.where(both, tau, 0.0)
        count += both
    with np.errstate(divide="ignore", invalid="ignore"):
        sim = np.where(count > 0, tau_sum / count, 0.0)
    sim = np.abs(0.5 * (sim + sim.T))
    return np.minimum(sim, 1.0)


def gas_select(importance, similarity, n_features, c):
    r"""Geng et al.'s greedy search algorithm (GAS) for feature selection.

    Repeat ``n_features`` times: select the remaining feature ``k`` of
    largest (current) importance, then penalise every remaining ``j``,
    ``importance_j <- importance_j - 2 c similarity_{kj}``, and remove
    ``k`` (their Section 3.3 steps 2-4; ties go to the lower index).

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    importance : array-like of shape (d,)
    similarity : array-like of shape (d, d)
    n_features : int
        ``t``, 1 <= t <= d.
    c : float
        Trade-off ``>= 0`` between importance and redundancy.

    Returns
    -------
    ndarray of int64, shape (t,)
        Selected features in the order picked.
    """
    w = np.array(importance, dtype=np.float64, copy=True).ravel()
    S = np.asarray(similarity, dtype=np.float64)
    d = w.size
    if S.shape != (d, d):
        raise DataError(f"similarity must have shape ({d}, {d}), got {S.shape}")
    if not isinstance(n_features, (int, np.integer)) or not 1 <= n_features <= d:
        raise DataError(f"n_features must be an integer in [1, {d}], got {n_features!r}")
    c = float(c)
    if not (c >= 0 and math.isfinite(c)):
        raise DataError(f"c must be finite and >= 0, got {c!r}")
    remaining = np.ones(d, dtype=bool)
    selected = []
    for _ in range(int(n_features)):
        k = int(np.flatnonzero(remaining)[np.argmax(w[remaining])])
        selected.append(k)
        remaining[k] = False
        w[remaining] -= 2.0 * c * S[k, remaining]
    return np.asarray(selected, dtype=np.int64)


# --------------------------------------------------------------------------
# LifeRank's feature quality (Pandey et al. 2018, section 5.4.2)
# --------------------------------------------------------------------------


def feature_importance(X, y, qid=None, *, k=5):
    r"""Importance of each feature: NDCG@k of ranking by it, in its better direction.

    Section 5.4.2: ``max(eva(X, f_i), eva(X, -f_i))`` with ``eva`` the
    NDCG@5 (LETOR 4.0 convention, averaged over queries) of ranking every
    query's documents by feature ``f_i``; the strategy of GAS (Geng et al.
    2007), i.e. :func:`feature_ndcg` with ``k=5``.
    ``Imp(F)`` of the paper is the mean of the returned vector.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    X : array-like of shape (m, n)
    y : array-like of shape (m,)
    qid : array-like of shape (m,), optional
    k : int, default 5

    Returns
    -------
    ndarray of shape (n,)
    """
    return feature_ndcg(X, y, qid, k=k)[0]


def rank_similarity(X, qid=None, *, tau="b"):
    r"""``|tau|`` between the rankings two features induce, averaged over queries.

    For each query, with ``S`` the matrix of ``sign(x_aj - x_bj)`` over its
    document pairs ``a < b``, ``(S^T S)_{jl} = N_c - N_d`` of features ``j``
    and ``l``.  ``tau="eq10"`` divides by ``N_c + N_d = (|S|^T |S|)_{jl}``
    (eq. 10 as printed: pairs tied in either ranking are left out, which is
    Goodman and Kruskal's gamma); ``tau="b"`` by ``sqrt((S^T S)_{jj} (S^T
    S)_{ll})`` (Kendall's tau-b, as :func:`refimpl.metrics.kendall_tau`).
    The absolute value is taken *per query* (section 5.4.2: "positive and
    negative values should not neutralize") and averaged over the queries on
    which it is defined (non-zero denominator); unlike
    :func:`kendall_similarity`, which takes the absolute value of
    the mean.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (m, n)
    qid : array-like of shape (m,), optional
    tau : {"b", "eq10"}, default "b"

    Returns
    -------
    ndarray of shape (n, n)
        Symmetric, in [0, 1]; 1 on the diagonal, 0 for a pair of features
        never both non-constant on a query.
    """
    if tau not in TAU_VARIANTS:
        raise DataError(f"tau must be one of {TAU_VARIANTS}, got {tau!r}")
    n = check_X(X).shape[1]
    total = np.zeros((n, n))
    count = np.zeros((n, n))
    for C, A in query_sign_grams(X, qid, with_abs=(tau == "eq10")):
        if tau == "b":
            nt = np.diag(C)
            den = np.sqrt(np.outer(nt, nt))
        else:
            den = A
        ok = den > 0
        total[ok] += np.abs(C[ok] / den[ok])
        count += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = np.where(count > 0, total / np.maximum(count, 1), 0.0)
    sim = np.minimum(0.5 * (sim + sim.T), 1.0)
    np.fill_diagonal(sim, 1.0)
    return sim


def feature_redundancy(X, qid=None, *, tau="b") -> float:
    r"""``Rdd(F)`` of section 5.4.2: the mean of :func:`rank_similarity` over pairs.

    ``2 / (k (k - 1)) sum_{i > j} sim_ij`` for the ``k`` columns of ``X``
    (0 for a single column).

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    sim = rank_similarity(X, qid, tau=tau)
    k = sim.shape[0]
    if k < 2:
        return 0.0
    return float(sim[np.triu_indices(k, 1)].mean())
