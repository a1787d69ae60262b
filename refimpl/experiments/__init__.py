"""Experiments: every method of the book on the same folds, side by side.

``registry``  one ``Method`` entry per method: factory, the paper's
              grid and selection metric, linear or not
``runner``    configuration checks, parallel (joblib / dask) cross-validation,
              per-task cache, tidy CSV/JSON tables
``report``    reading the tables back, the papers' reported values, paired
              t-tests

Command line: ``python -m refimpl run --help``.

Derived in: book/07_side_by_side.md#side-by-side
"""

from .registry import (
    METHODS,
    SELECTION_METRICS,
    LambdaMART,
    LinearRegressionRanker,
    Method,
    expand_grid,
    get_method,
    register,
)
from .report import load_results, paired_ttest, paper_comparison, read_csv
from .runner import (
    BACKENDS,
    ExperimentConfig,
    RunResult,
    load_fold,
    parse_folds,
    run,
    validate_config,
)

__all__ = [
    "BACKENDS",
    "METHODS",
    "SELECTION_METRICS",
    "ExperimentConfig",
    "LambdaMART",
    "LinearRegressionRanker",
    "Method",
    "RunResult",
    "expand_grid",
    "get_method",
    "load_fold",
    "load_results",
    "paired_ttest",
    "paper_comparison",
    "parse_folds",
    "read_csv",
    "register",
    "run",
    "validate_config",
]
