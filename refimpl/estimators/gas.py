"""GAS feature selection (Geng et al. 2007) and GAS-E, GAS then RankSVM."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .._validation import check_X, ranking_problem
from ..exceptions import ParameterError
from ..features import SIGN_CHUNK, feature_ndcg, gas_select, kendall_similarity
from ._base import (
    COUNT,
    NONNEGATIVE,
    POSITIVE,
    WEIGHT_RANGE,
    squared_hinge_memory,
)
from .ranksvm import _TwoStage

__all__ = ["GASRanker", "gas_e"]


def _check_n_select(n_features, d):
    if not isinstance(n_features, (int, np.integer)) or isinstance(n_features, bool) \
            or not 1 <= n_features <= d:
        raise ParameterError(
            f"n_features_to_select must be an integer in [1, {d}] (the number of "
            f"features to select), got {n_features!r}"
        )
    return int(n_features)


def _gas(problem, n_features, redundancy_penalty):
    """GAS selection plus its inputs: ``(selected, importance, similarity)``.

    ``problem``: the validated :class:`~refimpl._validation.RankingProblem`.
    """
    t = _check_n_select(n_features, problem.n_features)
    if not NONNEGATIVE.is_satisfied_by(redundancy_penalty):
        raise ParameterError(
            f"The 'redundancy_penalty' parameter of GAS must be {NONNEGATIVE}. "
            f"Got {redundancy_penalty!r} instead.")
    importance, _ = feature_ndcg(problem, k=10)
    similarity = kendall_similarity(problem)
    selected = gas_select(importance, similarity, t, float(redundancy_penalty))
    return selected, importance, similarity


def _columns(X, idx):
    X = check_X(X)
    return X[:, idx]


def gas_e(X, y, qid, n_features_to_select, *, redundancy_penalty=0.01, ranker=None):
    """GAS feature selection (Geng, Liu, Qin & Li 2007), optionally followed by a ranker.

    Importance of a feature: NDCG@10 (LETOR 4.0 convention, averaged over
    queries) of ranking the documents by it, in its better direction;
    similarity of two features: ``|Kendall's tau|`` between their rankings,
    averaged over queries.  The greedy search (GAS, Geng et al. Section 3.3)
    picks the most important feature, lowers every other importance by
    ``2 c sim(j, picked)`` (``c``: ``redundancy_penalty``), and repeats.
    "GAS-E" in FSMRank's experiments
    (Lai et al. 2013, Section IV-D1) is GAS followed by RankSVM-Primal on the
    selected features: pass ``ranker=RankSVM(...)``.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    y : array-like of shape (n,)
    qid : array-like of shape (n,) or None
    n_features_to_select : int
        Number ``t`` of features to select, 1 <= t <= d.
    redundancy_penalty : float, default 0.01
        Redundancy penalty of GAS (>= 0).
    ranker : estimator, optional
        If given, it is fitted in place on ``X[:, selected]``.

    Returns
    -------
    ndarray of int64, shape (n_features_to_select,)
        Selected feature indices, in the order picked.
    """
    selected, _, _ = _gas(ranking_problem(X, y, qid), n_features_to_select,
                         redundancy_penalty)
    if ranker is not None:
        ranker.fit(_columns(X, selected), y, qid)
    return selected


class GASRanker(_TwoStage):
    """GAS-E: GAS feature selection, then RankSVM on the selected features.

    The two-stage baseline of Lai et al. (2013), Section IV-D1 (GAS of Geng
    et al. 2007, see :func:`gas_e`; second stage :class:`RankSVM`, the
    L2-loss RankSVM-Primal).

    Parameters
    ----------
    n_features_to_select : int, default 10
        Number ``t`` of features to select.
    redundancy_penalty : float, default 0.01
        GAS's ``c``: each pick lowers the importance of every remaining
        feature by ``2 c`` times its similarity to the picked one.
    C : float, default 1.0
        RankSVM loss weight.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        RankSVM weights on the selected features, 0 elsewhere.
    selected_ : ndarray of int64
        Selected features in the order GAS picked them.
    importance_ : ndarray
        NDCG@10 of each feature.
    similarity_ : ndarray
        ``|Kendall's tau|`` between features.
    ranksvm_ : RankSVM
        The fitted second stage.
    n_iter_, converged_, history_ :
        Those of the RankSVM.

    See Also
    --------
    refimpl.estimators.gas_e : the selection alone, as a function.
    refimpl.estimators.FSMSVM : the same two stages with FSMRank's selection.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import GASRanker
    >>> model = GASRanker(n_features_to_select=5).fit(X, y, qid)
    >>> len(model.selected_), int((model.coef_ != 0).sum()) <= 5
    (5, True)

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """

    _extreme_ranges: ClassVar[dict] = {"C": WEIGHT_RANGE}
    _parameter_constraints: ClassVar[dict] = {
        "n_features_to_select": [COUNT],
        "redundancy_penalty": [NONNEGATIVE],
        "C": [POSITIVE],
    }

    def __init__(self, n_features_to_select=10, redundancy_penalty=0.01, C=1.0):
        self.n_features_to_select = n_features_to_select
        self.redundancy_penalty = redundancy_penalty
        self.C = C

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: the RankSVM stage's squared hinge, and
        Kendall's similarity: two gathered blocks of document pairs, their
        difference, its sign, and d x d Gram matrices.

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent).
        """
        rows = min(SIGN_CHUNK, max_query * (max_query - 1) // 2)
        method = 4 * rows * n_features * 8 + 8 * n_features ** 2 * 8
        return squared_hinge_memory(
            n_docs=n_docs, n_pairs=n_pairs, n_features=n_features, grouped=grouped,
            n_levels=n_levels, terms={"method": method})

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        problem, t = self._check_fit(X, y, qid)
        selected, importance, similarity = _gas(problem, t, self.redundancy_penalty)
        self.importance_ = importance
        self.similarity_ = similarity
        with self._blaming(problem.X):
            return self._fit_ranksvm_on(problem, selected)
