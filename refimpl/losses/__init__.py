"""Smooth ranking losses: one object per loss, several computational backends."""

from ._protocol import SmoothObjective
from .regularized import L2Regularized
from .squared_hinge import PairwiseSquaredHinge

__all__ = ["L2Regularized", "PairwiseSquaredHinge", "SmoothObjective"]
