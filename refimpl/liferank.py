r"""LifeRank: linear feature extraction for ranking (Pandey et al. 2018).

LifeRank looks for a transformation ``T`` (``n x k``, orthonormal columns)
and weights ``w`` (``k``) minimising a pairwise logistic loss of the scores
``X T w`` (their eq. 5).  This module implements, as the book derives them:

* :class:`refimpl.losses.PairwiseLogistic` -- the loss ``(1/p) sum_P log(1 + exp(-(x_i -
  x_j)^T v))`` over the preference pairs ``P`` and its gradient, through a
  numba kernel on document scores (``d loss / d s``, then ``X^T``), never
  building the ``p x n`` pair matrix;
* :class:`refimpl.losses.LifeRankObjective` -- eq. 5 without ``b``, its gradients (eq. 7),
  the orthonormality constraints in the paper's signs and the Lagrangian
  (eq. 6), as a problem for :func:`refimpl.solvers.bdmm` (eq. 8);
* the Stiefel-manifold alternative that keeps ``T^T T = I`` exactly
  (:func:`refimpl.solvers.stiefel_retraction`,
  :func:`refimpl.solvers.stiefel_gradient`);
* :func:`refimpl.solvers.liferank_solve` -- the three variants ``"bdmm"`` (the paper),
  ``"stiefel"`` and ``"none"`` (LifeRank^NO of Table 5);
* the feature-quality measures of section 5.4.2 (:func:`feature_importance`,
  :func:`rank_similarity`, :func:`feature_redundancy`);
* the scikit-learn transformer :class:`~refimpl.estimators.LifeRank` (defined in
  :mod:`refimpl.estimators.liferank`, importable from here).

Choices where the paper is silent or inconsistent, argued in the chapter:
the loss is a *mean* over the preference pairs ``P = {(i, j): q_i = q_j,
y_i > y_j}`` (each unordered pair once, so eq. 5's sum over ordered pairs
with ``y_ij = +-1`` is ``2p`` times ours, and ``lambda_paper = 2 p
lambda``); ``b`` is dropped (with both orientations of every pair the
objective is even in ``b``, so ``b* = 0`` and its gradient vanishes at
``b = 0``; with one orientation it would be unbounded); the multipliers
start at 0 and ascend (eq. 8) after the primal step.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import numpy as np

from ._validation import check_X
from .exceptions import DataError
from .fsmrank import feature_ndcg
from .losses.liferank import LifeRankObjective  # noqa: F401  (re-export: objectives live in losses/)
from .losses.logistic import LOSS_BACKENDS, PairwiseLogistic  # noqa: F401  (re-export)
from .pairs import query_sign_grams
from .solvers.liferank import (  # noqa: F401  (re-export: solvers live in solvers/)
    CONSTRAINTS,
    LifeRankResult,
    fit_weights,
    liferank_solve,
)
from .solvers.stiefel import (  # noqa: F401  (re-export)
    RETRACTIONS,
    orthonormality_error,
    stiefel_gradient,
    stiefel_retraction,
)

__all__ = [
    "INITS",
    "LifeRank",  # noqa: F822  (lazy re-export, see __getattr__)
    "feature_importance",
    "feature_redundancy",
    "rank_similarity",
]

#: Starting ``T``: i.i.d. ``N(0, 1/n)`` entries, those orthonormalised, or
#: i.i.d. ``U[0, 1/sqrt(n))`` entries (non-negative, as in matrix factorisation).
INITS = ("random", "orthonormal", "uniform")

#: Similarity of two rankings in :func:`rank_similarity`.
TAU_VARIANTS = ("b", "eq10")


# --------------------------------------------------------------------------
# Feature quality (section 5.4.2)
# --------------------------------------------------------------------------


def feature_importance(X, y, qid=None, *, k=5):
    r"""Importance of each feature: NDCG@k of ranking by it, in its better direction.

    Section 5.4.2: ``max(eva(X, f_i), eva(X, -f_i))`` with ``eva`` the
    NDCG@5 (LETOR 4.0 convention, averaged over queries) of ranking every
    query's documents by feature ``f_i``; the strategy of GAS (Geng et al.
    2007), i.e. ``refimpl.fsmrank.feature_ndcg`` with ``k=5``.
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
    ``refimpl.fsmrank.kendall_similarity``, which takes the absolute value of
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


# --------------------------------------------------------------------------
# The estimator lives in refimpl.estimators.liferank
# --------------------------------------------------------------------------


def __getattr__(name):
    # Lazy, because refimpl.estimators.liferank imports this module.
    if name == "LifeRank":
        from .estimators.liferank import LifeRank
        return LifeRank
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
