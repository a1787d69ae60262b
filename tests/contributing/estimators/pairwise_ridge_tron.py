r"""Pairwise ridge regression by TRON: a second-order method.

CONTRIBUTING.md's second worked example.  It minimises

.. math::

    F(w) = \tfrac12 \|w\|^2 + C\, \frac1p \sum_{(i,j) \in P}
           \bigl(1 - (x_i - x_j)^T w\bigr)^2

(RankRLS's squared loss on the preference pairs) by
:func:`refimpl.solvers.tron`, which asks the loss for its Hessian-vector
product ``(2/p) D^T D s`` (``D`` the pair-difference matrix, one row per
pair: explicit pairs, small data only).

Derived in: book/10_running_experiments.md#run-add-method
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .._validation import check_fit_input
from ..losses import L2Regularized
from ..pairs import preference_pairs
from ..solvers import tron
from ._base import ITERATIONS, POSITIVE, LinearRanker, LossBackend, MemoryEstimate

__all__ = ["PairwiseRidgeTron"]


class _PairwiseSquaredLoss:
    """``L(w) = (1/p) ||1 - D w||^2`` with its gradient and Hessian-vector product."""

    def __init__(self, D):
        self.D = D
        self.n_features = D.shape[1]

    def fun(self, w):
        r = 1.0 - self.D @ w
        return float(r @ r) / self.D.shape[0]

    def grad(self, w):
        return -2.0 * (self.D.T @ (1.0 - self.D @ w)) / self.D.shape[0]

    def hess_vec(self, s):
        return 2.0 * (self.D.T @ (self.D @ s)) / self.D.shape[0]


class PairwiseRidgeTron(LinearRanker):
    """Pairwise squared loss + l2 penalty, solved by TRON (second order).

    Parameters
    ----------
    C : float, default 1.0
        Weight of the mean pairwise squared loss against ``||w||^2 / 2``.
    tol : float, default 1e-6
        TRON's relative gradient-norm tolerance.
    max_iter : int, default 100
        TRON's outer-iteration budget.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_iter_ : int
    converged_ : bool
    n_features_in_ : int

    See Also
    --------
    PairwiseLogisticL2 : the first-order example (logistic loss, FISTA).

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=20, seed=0)
    >>> model = PairwiseRidgeTron(C=10.0).fit(data.X, data.y, data.qid)
    >>> model.coef_.shape
    (30,)
    >>> model.score(data.X, data.y, data.qid) > 0.7
    True

    Derived in: book/10_running_experiments.md#run-add-method
    """

    _parameter_constraints: ClassVar[dict] = {
        "C": [POSITIVE], "tol": [POSITIVE], "max_iter": [ITERATIONS]}

    def __init__(self, C=1.0, tol=1e-6, max_iter=100):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query,
                        grouped=True, n_levels=None):
        """``X[i]``, ``X[j]`` and their difference ``D`` at once, the pair
        indices, ``D w``-sized vectors, TRON's iterates."""
        return MemoryEstimate(backend=LossBackend.PAIRS, terms={
            "pair matrix": 3 * 8 * n_pairs * n_features + 16 * n_pairs + 2 * 8 * n_pairs,
            "iterates": 8 * 8 * n_features})

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        self._validate_params()
        problem = check_fit_input(self, X, y, qid)
        pairs = preference_pairs(problem)
        D = problem.X[pairs.i] - problem.X[pairs.j]
        D = D.toarray() if sp.issparse(D) else np.asarray(D)
        result = tron(L2Regularized(_PairwiseSquaredLoss(D), float(self.C)),
                      tol=float(self.tol), max_iter=int(self.max_iter))
        self.coef_ = result.w
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        return self
