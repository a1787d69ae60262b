"""Sparse Learning to Rank: the reference implementation of the book.

Modules
-------
data      LETOR loading, the synthetic default data, query-level normalisation
pairs     preference pairs and (for teaching) the pair-difference matrix
metrics   NDCG@k, mean NDCG, MAP, P@k, pairwise accuracy, Kendall's tau,
          sparsity, with the LETOR evaluation conventions
losses    the pairwise squared hinge loss (value, gradient, Hessian-vector)
"""

from . import data, losses, metrics, pairs
from .exceptions import DataError, DatasetNotFoundError, PairMatrixTooLargeError
from .losses import PairwiseSquaredHinge

__version__ = "0.1.0"

__all__ = [
    "DataError",
    "DatasetNotFoundError",
    "PairMatrixTooLargeError",
    "PairwiseSquaredHinge",
    "data",
    "losses",
    "metrics",
    "pairs",
]
