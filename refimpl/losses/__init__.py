"""Every objective of the book: one object per loss, several computational backends.

All share ``refimpl.losses._base.CachedObjective`` (the shape check of
``w`` and the last-``fun`` cache) and offer the solvers the
:class:`SmoothObjective` protocol, and some of them optional capabilities
(:func:`capability`; the protocol is described in ``_protocol``).
"""

from ._protocol import (
    CAPABILITIES,
    PairwiseLineSearchObjective,
    SmoothObjective,
    capability,
)
from .liferank import LifeRankObjective
from .lifted import FSMRankSmooth, LiftedLoss
from .logistic import LOSS_BACKENDS, PairwiseLogistic
from .regularized import L2Regularized
from .scaled import ScaledSmooth
from .squared_hinge import PairwiseSquaredHinge

__all__ = [
    "CAPABILITIES",
    "LOSS_BACKENDS",
    "FSMRankSmooth",
    "L2Regularized",
    "LifeRankObjective",
    "LiftedLoss",
    "PairwiseLineSearchObjective",
    "PairwiseLogistic",
    "PairwiseSquaredHinge",
    "ScaledSmooth",
    "SmoothObjective",
    "capability",
]
