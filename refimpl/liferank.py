r"""LifeRank: linear feature extraction for ranking (Pandey et al. 2018).

LifeRank looks for a transformation ``T`` (``n x k``, orthonormal columns)
and weights ``w`` (``k``) minimising a pairwise logistic loss of the scores
``X T w`` (their eq. 5).  This module is a map of where each piece lives (every
name stays importable from here):

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
* the feature-quality measures of section 5.4.2
  (:func:`refimpl.features.feature_importance`,
  :func:`refimpl.features.rank_similarity`,
  :func:`refimpl.features.feature_redundancy`);
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

from .features import (  # noqa: F401  (re-export: feature measures live in features)
    TAU_VARIANTS,
    feature_importance,
    feature_redundancy,
    rank_similarity,
)
from .losses.liferank import LifeRankObjective  # noqa: F401  (re-export: objectives live in losses/)
from .losses.logistic import LOSS_BACKENDS, PairwiseLogistic  # noqa: F401  (re-export)
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
    "INITS",  # noqa: F822  (lazy re-export, see __getattr__)
    "LifeRank",  # noqa: F822  (lazy re-export, see __getattr__)
]

# --------------------------------------------------------------------------
# The estimator lives in refimpl.estimators.liferank
# --------------------------------------------------------------------------


def __getattr__(name):
    # Lazy, because refimpl.estimators.liferank imports this module.
    if name in ("INITS", "LifeRank"):
        from .estimators import liferank
        return getattr(liferank, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
