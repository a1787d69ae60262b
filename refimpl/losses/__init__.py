"""Smooth ranking losses: one object per loss, several computational backends."""

from ._protocol import SmoothObjective
from .squared_hinge import PairwiseSquaredHinge

__all__ = ["PairwiseSquaredHinge", "SmoothObjective"]
