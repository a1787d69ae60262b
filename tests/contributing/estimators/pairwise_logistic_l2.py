r"""Pairwise logistic ranking with an l2 penalty, by FISTA: a first-order method.

CONTRIBUTING.md's first worked example.  It minimises

.. math::

    F(w) = \tfrac12 \|w\|^2 + C\, \frac1p \sum_{(i,j) \in P}
           \log\bigl(1 + e^{-(x_i - x_j)^T w}\bigr),

a linear RankNet with a ridge penalty, by :func:`refimpl.solvers.apg`
(FISTA) on the smooth ``F`` with the :class:`refimpl.penalties.Zero` penalty:
:class:`refimpl.losses.PairwiseLogistic` offers no Hessian, and
:class:`refimpl.losses.L2Regularized` of it is a first-order objective.

Derived in: book/10_running_experiments.md#run-add-method
"""

from __future__ import annotations

from typing import ClassVar

from .._validation import check_fit_input
from ..losses import L2Regularized, PairwiseLogistic
from ..losses.logistic import logistic_pair_bytes
from ..penalties import Zero
from ..solvers import apg
from ._base import ITERATIONS, POSITIVE, LinearRanker, LossBackend, MemoryEstimate

__all__ = ["PairwiseLogisticL2"]


class PairwiseLogisticL2(LinearRanker):
    """Pairwise logistic loss + l2 penalty, solved by FISTA (first order).

    Parameters
    ----------
    C : float, default 1.0
        Weight of the mean pairwise logistic loss against ``||w||^2 / 2``.
    tol : float, default 1e-6
        FISTA's gradient-mapping tolerance.
    max_iter : int, default 1000
        FISTA's iteration budget (a ``ConvergenceWarning`` when reached).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_iter_ : int
    converged_ : bool
    n_features_in_ : int

    See Also
    --------
    PairwiseRidgeTron : the second-order example (squared loss, TRON).

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=20, seed=0)
    >>> model = PairwiseLogisticL2(C=10.0).fit(data.X, data.y, data.qid)
    >>> model.coef_.shape
    (30,)
    >>> model.score(data.X, data.y, data.qid) > 0.7
    True

    Derived in: book/10_running_experiments.md#run-add-method
    """

    _parameter_constraints: ClassVar[dict] = {
        "C": [POSITIVE], "tol": [POSITIVE], "max_iter": [ITERATIONS]}

    def __init__(self, C=1.0, tol=1e-6, max_iter=1000):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query,
                        grouped=True, n_levels=None):
        """The logistic loss's pairs and per-document arrays (with the pair
        enumeration's scratch, 8 bytes a pair), FISTA's iterates."""
        return MemoryEstimate(backend=LossBackend.LOGISTIC, terms={
            "pairs": logistic_pair_bytes(n_docs, n_pairs, 1) + 8 * n_pairs,
            "iterates": 8 * 8 * n_features})

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        self._validate_params()
        problem = check_fit_input(self, X, y, qid)
        objective = L2Regularized(PairwiseLogistic(problem), float(self.C))
        result = apg(objective, Zero(), tol=float(self.tol), stop="gradient_mapping",
                     max_iter=int(self.max_iter))
        self.coef_ = result.w
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        return self
