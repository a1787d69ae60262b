"""Sparse Learning to Rank: the reference implementation of the book.

Modules
-------
data      LETOR loading, the synthetic default data, query-level normalisation
datasets  fetch_letor / prepare_letor: download, check and unpack LETOR, MSLR
pairs     preference pairs and (for teaching) the pair-difference matrix
metrics   NDCG@k, mean NDCG, MAP, P@k, pairwise accuracy, Kendall's tau,
          sparsity, with the LETOR evaluation conventions
features  feature-quality measures: Pearson and NDCG importance, Kendall
          similarity, redundancy, GAS selection
losses    every objective (pairwise squared hinge with explicit-pair and
          order-statistic-tree backends, logistic, FSMRank's, LifeRank's)
sv_stats  Lee & Lin's per-document support-vector statistics (trees, counting)
nonconvex concave sparsity penalties (log, MCP, lp, SCAD) for reweighted l1
solvers   TRON, FenchelRank, FISTA, reweighted l1, subgradient baselines,
          BDMM and LifeRank's solvers (Stiefel manifold)
estimators  the scikit-learn estimators: RankSVM, FenchelRank, SparseRankSVM,
          FSMRank, GAS-E, FSMSVM, LifeRank and the baselines
experiments  the registry of methods, the runner and its scale guard, reports
"""

import importlib.metadata as _metadata

try:  # the one place the version is written: pyproject.toml
    __version__ = _metadata.version("refimpl")
except _metadata.PackageNotFoundError:  # a source tree without `pip install -e .`
    __version__ = "0+unknown"

from . import (
    data,
    datasets,
    estimators,
    features,
    losses,
    metrics,
    nonconvex,
    pairs,
    penalties,
    solvers,
    sv_stats,
)
from .estimators import FenchelRank, FSMRank, LifeRank, RankSVM, SparseRankSVM
from .exceptions import (
    DataError,
    DatasetNotFoundError,
    DivergenceError,
    EmptyModelWarning,
    NonFiniteError,
    PairMatrixTooLargeError,
)
from .losses import L2Regularized, PairwiseSquaredHinge

__all__ = [
    "DataError",
    "DatasetNotFoundError",
    "DivergenceError",
    "EmptyModelWarning",
    "FSMRank",
    "FenchelRank",
    "L2Regularized",
    "LifeRank",
    "NonFiniteError",
    "PairMatrixTooLargeError",
    "PairwiseSquaredHinge",
    "RankSVM",
    "SparseRankSVM",
    "data",
    "datasets",
    "estimators",
    "features",
    "losses",
    "metrics",
    "nonconvex",
    "pairs",
    "penalties",
    "solvers",
    "sv_stats",
]
