"""Experiments: every method of the book on the same folds, side by side.

- ``registry``: the ``Method`` declaration, ``register`` and ``METHODS``
- ``methods``: one ``Method`` entry per method of the papers: factory, the
  paper's grid and selection metric, linear or not, family and colour
- ``config``: what to run (``ExperimentConfig``) and its checks, before any fit
- ``task_cache``: data fingerprints, task and cache keys, the per-task cache
  entries
- ``folds``: a fold loaded, validated and grouped once per worker
- ``tables``: selection, summary, the tidy CSV tables and ``run.json``, written
  atomically
- ``interrupts``: SIGINT / SIGTERM end the worker processes first
- ``runner``: the fitting path and ``run``: parallel (joblib / dask) cross-
  validation
- ``report``: reading the tables back, the papers' reported values, paired
  t-tests
- ``snapshots``: the chapters' real-data numbers with or without the data:
  committed runner tables and JSON snapshots, checked live

Command line: ``python -m refimpl run --help``.

Derived in: book/10_running_experiments.md#run-registry
"""

from .registry import (
    METHODS,
    SELECTION_METRICS,
    Method,
    expand_grid,
    get_method,
    register,
)
from . import methods  # noqa: F401  (registers the papers' methods)
from .report import (holm_adjusted, load_results, paired_ttest, paper_comparison,
                     paper_values, per_query_se, read_csv)
from .config import BACKENDS, ExperimentConfig, parse_folds, validate_config
from .folds import load_fold
from .runner import RunResult, run
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
    "per_query_se",
    "read_csv",
    "register",
    "run",
    "runner_results",
    "snapshot",
    "validate_config",
]
