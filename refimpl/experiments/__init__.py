"""Experiments: every method of the book on the same folds, side by side.

``registry``  one ``Method`` entry per method: factory, the paper's
              grid and selection metric, linear or not
``runner``    configuration checks, parallel (joblib / dask) cross-validation,
              per-task cache, tidy CSV/JSON tables
``report``    reading the tables back, the papers' reported values, paired
              t-tests
``snapshots`` the chapters' real-data numbers with or without the data:
              committed runner tables and JSON snapshots, checked live

Command line: ``python -m refimpl run --help``.

Derived in: book/10_running_experiments.md#run-registry
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
from .report import (holm_adjusted, load_results, paired_ttest, paper_comparison,
                     paper_values, read_csv)
from .runner import (
    BACKENDS,
    ExperimentConfig,
    RunResult,
    load_fold,
    parse_folds,
    run,
    validate_config,
)
from .snapshots import (
    Snapshot,
    SnapshotMismatchError,
    committed_snapshot,
    compare_values,
    data_available,
    runner_results,
    snapshot,
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
    "Snapshot",
    "SnapshotMismatchError",
    "committed_snapshot",
    "compare_values",
    "data_available",
    "expand_grid",
    "get_method",
    "load_fold",
    "load_results",
    "holm_adjusted",
    "paired_ttest",
    "paper_comparison",
    "paper_values",
    "parse_folds",
    "read_csv",
    "register",
    "run",
    "runner_results",
    "snapshot",
    "validate_config",
]
