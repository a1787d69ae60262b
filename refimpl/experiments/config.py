"""The experiment's configuration, checked completely before any fit.

:class:`ExperimentConfig` says what to run; :func:`validate_config` checks
all of it (methods, grids against each method's ranges, folds, data-set
name, back-end, ``n_jobs``, ``normalize``, ``out``) and resolves it into the
plan :func:`refimpl.experiments.runner.run` follows.  A data set is a LETOR
folder under the LETOR root, named so that it cannot climb out of it
(:func:`check_dataset_name`), or ``synthetic[:Q[:seed]]``
(:func:`synthetic_spec`).

Derived in: book/10_running_experiments.md#run-cli
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import data as _data
from .._layout import fold_files
from ..exceptions import DataError, DatasetNotFoundError
from .registry import METHODS, SELECTION_METRICS, expand_grid, get_method

__all__ = [
    "BACKENDS",
    "KS",
    "N_FOLDS",
    "PER_QUERY_KS",
    "ExperimentConfig",
    "check_dataset_name",
    "dataset_files",
    "parse_folds",
    "synthetic_spec",
    "validate_config",
]

#: Parallel back-ends accepted by :func:`~refimpl.experiments.runner.run`.
BACKENDS = ("loky", "threading", "sequential", "dask")
#: Cut-offs evaluated for every task.
KS = tuple(range(1, 11))
#: Per-query measures kept for the selected models (paired tests).
PER_QUERY_KS = (1, 3, 5, 10)
#: Folds of a LETOR data set (and of the synthetic ones).
N_FOLDS = 5
_SYNTHETIC = re.compile(r"synthetic(?::([0-9]+))?(?::([0-9]+))?")
#: A LETOR data set's name: one folder under the LETOR root and under ``out``,
#: so it cannot climb (no separator, no leading dot, no ``..``).
_DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SYNTHETIC_SYNTAX = (
    "a synthetic data set is written synthetic[:QUERIES[:SEED]], QUERIES an "
    "integer >= 5 (default 200) and SEED an integer >= 0 (default 0), e.g. "
    "'synthetic:200:1'"
)


@dataclass(frozen=True)
class ExperimentConfig:
    """What to run.

    Derived in: book/10_running_experiments.md#run-cli

    Parameters
    ----------
    dataset : str
        A LETOR data set under the LETOR root (``"MQ2008"``: letters,
        digits, ``.``, ``_`` and ``-``, starting with a letter or digit,
        without ``..``, since it names a folder under the root and under
        ``out``), or
        ``"synthetic[:Q[:seed]]"``: :func:`refimpl.data.make_synthetic_letor`
        with ``Q`` queries (default 200) and MQ2008's shape (46 features, 3
        labels), cut into five query partitions like LETOR 4.0's S1..S5.
    methods : sequence of str
        Names in :data:`refimpl.experiments.registry.METHODS`.
    folds : sequence of int, default (1, 2, 3, 4, 5)
    out : str or path, optional
        Results root (not empty); the tables go to ``<out>/<dataset>/``.
        Without it nothing is written and nothing is cached.
    letor_home : str or path, optional
        LETOR root; default the ``LETOR_HOME`` environment variable.
    grids : dict, optional
        ``{method: {param: [values]}}`` replacing entries of the grid.
    reduced : bool, default False
        Use each method's small ``reduced_grid`` (smoke runs).
    select_by : str, optional
        Validation metric for every method instead of each paper's.
    n_jobs : int, default 1
        Parallel workers (``-1``: all cores or all dask workers).
    backend : {"loky", "threading", "sequential", "dask"}
    cache : bool, default True
        Re-use cached tasks.
    progress : bool, default False
        A tqdm progress bar on stderr.
    normalize : {None, "query", "standard"}, default None
        Feature normalisation of every fold
        (:func:`refimpl.data.normalize_fold`): None, the features as in the
        files; ``"query"``, LETOR's QueryLevelNorm; ``"standard"``, z-scores
        with the training split's statistics.
    """

    dataset: str
    methods: tuple
    folds: tuple = (1, 2, 3, 4, 5)
    out: str | None = None
    letor_home: str | None = None
    grids: dict = field(default_factory=dict)
    reduced: bool = False
    select_by: str | None = None
    n_jobs: int = 1
    backend: str = "loky"
    cache: bool = True
    progress: bool = False
    normalize: str | None = None


@dataclass(frozen=True)
class _Plan:
    """A validated configuration, ready to run."""

    config: ExperimentConfig
    root: str | None
    slug: str
    methods: tuple          # Method objects
    grids: dict             # name -> list of param dicts
    metrics: dict           # name -> selection metric


def parse_folds(text):
    """``"1-5"``, ``"1,3"`` or ``"2"`` -> a tuple of fold numbers.

    Every number is checked to be a fold (1 to 5) before a range is
    expanded, so ``1-100000000`` is an error, not a list of 10**8 folds.

    Derived in: book/10_running_experiments.md#run-cli
    """
    text = str(text)
    folds = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise DataError(
                f"folds must look like 1-5, 1,3 or 2 (folds 1 to {N_FOLDS}); "
                f"got {text[:80]!r}"
            )
        ends = [g for g in m.groups() if g is not None]
        # compared as text first: int() of thousands of digits is an error
        if any(len(g.lstrip("0")) > 1 or not 1 <= int(g) <= N_FOLDS for g in ends):
            raise DataError(
                f"folds must be integers 1..{N_FOLDS} (a LETOR data set has "
                f"{N_FOLDS} folds); {part[:40]!r} is not, in {text[:80]!r}"
            )
        lo, hi = int(ends[0]), int(ends[-1])
        if lo > hi:
            raise DataError(f"fold range {part!r} is empty (start > end)")
        folds.extend(range(lo, hi + 1))
    return tuple(dict.fromkeys(folds))


def _check_folds(folds):
    """The distinct folds of ``folds`` (a string or an iterable), in order.

    Read one at a time and refused at the first value outside 1..5, so that
    ``range(1, 10**8)`` is an error at its sixth value, not a list first.
    """
    given = folds
    if isinstance(folds, str):
        folds = parse_folds(folds)
    out = []
    try:
        items = iter(folds)
    except TypeError:
        items = None
    for f in items if items is not None else ():
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)) \
                or not 1 <= f <= N_FOLDS:
            break
        if f not in out:
            out.append(int(f))
    else:
        if items is not None and out:
            return tuple(out)
    shown = given if isinstance(given, (str, tuple, list)) else type(given).__name__
    raise DataError(f"folds must be a non-empty set of integers 1..{N_FOLDS}; "
                    f"got {str(shown)[:80]}")


def _check_out(out):
    """``out`` is ``None`` (write nothing) or a non-empty path."""
    if out is None:
        return
    try:
        text = os.fspath(out)
    except TypeError:
        text = None
    if not isinstance(text, str) or not text or "\0" in text:
        raise DataError(
            f"out (--out) must be a folder for the results, or None to write "
            f"nothing; got {out!r}"
        )


def _slug(dataset, normalize=None):
    """The run's folder name: the data set's, and its normalisation if any."""
    slug = re.sub(r"[^\w.-]+", "-", dataset).strip("-")
    return slug if normalize is None else f"{slug}-normalize-{normalize}"


def synthetic_spec(dataset):
    """``(n_queries, seed)`` of a ``synthetic[:Q[:seed]]`` name, else ``None``.

    A name that starts like one but does not parse (``synthetic:abc``) is an
    error about the syntax, not a missing LETOR directory.
    """
    if dataset != "synthetic" and not dataset.startswith("synthetic:"):
        return None
    m = _SYNTHETIC.fullmatch(dataset)
    if m is None:
        raise DataError(f"dataset {dataset!r}: {_SYNTHETIC_SYNTAX}")
    n_queries = int(m.group(1) or 200)
    if n_queries < 5:
        raise DataError(
            f"{dataset!r}: a synthetic data set needs at least 5 queries "
            f"(one per partition); {_SYNTHETIC_SYNTAX}"
        )
    return n_queries, int(m.group(2) or 0)


def dataset_files(dataset, fold, root):
    """The files the loader reads for one fold, ``{split: [Path]}``, or ``None``.

    The same search as :func:`refimpl.data.load_letor_fold` (first complete
    layout), so that the fingerprint describes the files that are loaded.
    """
    return fold_files(Path(root) / dataset, fold)


def check_dataset_name(dataset):
    """``dataset`` is a synthetic spec or a LETOR name that cannot climb.

    The name is a folder under the LETOR root and under ``out``: ``..``
    would read and write beside them, ``.`` into ``out`` itself.  Returns
    the synthetic spec, or ``None`` for a LETOR name.
    """
    if not isinstance(dataset, str) or not dataset:
        raise DataError(
            "dataset must be a LETOR data set name (e.g. 'MQ2008') or "
            f"'synthetic[:queries[:seed]]'; got {dataset!r}"
        )
    spec = synthetic_spec(dataset)
    if spec is None and (_DATASET_NAME.fullmatch(dataset) is None
                         or ".." in dataset):
        raise DataError(
            f"dataset {dataset!r} is not a data set name: a LETOR data set is "
            "one folder under the LETOR root, named with letters, digits, "
            "'.', '_' and '-', starting with a letter or digit and without "
            "'..' (e.g. 'MQ2008'); or 'synthetic[:queries[:seed]]'"
        )
    return spec


def _check_dataset(dataset, folds, letor_home):
    """Resolve the LETOR root and check every fold's files exist."""
    if check_dataset_name(dataset) is not None:
        return None
    root = _data.letor_home(letor_home)
    for fold in folds:
        if dataset_files(dataset, fold, root) is None:
            available = sorted(p.name for p in root.iterdir()
                               if p.is_dir()) if root.is_dir() else []
            raise DatasetNotFoundError(
                f"data set {dataset!r}, Fold{fold}, not found under {root}: "
                "expected <root>/<name>/Fold<k>/{train,vali,test}.txt, "
                "the LETOR 3.0 names, or <root>/<name>/S1..S5.txt (optionally "
                f".gz).  Data sets found under {root}: "
                f"{', '.join(available) or 'none'}; or use 'synthetic[:Q]'."
            )
    return os.fspath(root)


def _check_values(method, param, values):
    """Every value of one grid parameter is accepted and listed once."""
    for value in values:
        accepted = method.refused(param, value)
        if accepted is not None:
            raise DataError(
                f"method {method.name!r}, parameter {param!r}: {value!r} is not "
                f"accepted; accepted: {accepted}"
            )
    for i, value in enumerate(values):
        if any(type(value) is type(v) and value == v for v in values[:i]):
            raise DataError(
                f"the grid of method {method.name!r} lists {value!r} twice for "
                f"parameter {param!r}"
            )


def validate_config(config):
    """Check a configuration completely, before any fit.

    Derived in: book/10_running_experiments.md#run-cli

    Returns
    -------
    _Plan
        The resolved methods, grids and metrics.

    Raises
    ------
    DataError
        Unknown method, parameter or metric, an empty grid, a grid value
        outside its parameter's range (the method's ``ranges``) or
        listed twice, bad folds (outside 1..5), ``n_jobs``, back-end,
        ``normalize``, an empty ``out``, a data-set name that could climb
        out of its folder or a bad synthetic one; the message lists what is
        accepted.
    DatasetNotFoundError
        The data set (or one of its folds) is missing.
    """
    if not isinstance(config, ExperimentConfig):
        raise DataError(f"run() takes an ExperimentConfig, got {type(config).__name__}")
    names = config.methods
    if isinstance(names, str):
        names = tuple(n.strip() for n in names.split(",") if n.strip())
    if not names:
        raise DataError(f"no methods given; accepted: {', '.join(METHODS)}")
    if "all" in names:
        names = tuple(METHODS)
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise DataError(
            f"unknown method{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; accepted: {', '.join(METHODS)} "
            "(or 'all')"
        )
    names = tuple(dict.fromkeys(names))
    folds = _check_folds(config.folds)
    check_dataset_name(config.dataset)
    _check_out(config.out)
    if config.select_by is not None and config.select_by not in SELECTION_METRICS:
        raise DataError(
            f"unknown metric {config.select_by!r}; accepted: "
            f"{', '.join(SELECTION_METRICS)}"
        )
    if config.backend not in BACKENDS:
        raise DataError(
            f"unknown backend {config.backend!r}; accepted: {', '.join(BACKENDS)}"
        )
    _data.check_normalize(config.normalize)
    n_jobs = config.n_jobs
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) \
            or not (n_jobs >= 1 or n_jobs == -1):
        raise DataError(f"n_jobs must be a positive integer or -1; got {n_jobs!r}")
    extra = set(config.grids) - set(names)
    if extra:
        raise DataError(
            f"grid given for method{'s' if len(extra) > 1 else ''} not in the "
            f"run: {', '.join(sorted(extra))}; methods of this run: {', '.join(names)}"
        )
    methods, grids, metrics = [], {}, {}
    for name in names:
        method = get_method(name)
        grid = dict(method.reduced_grid if config.reduced and
                    method.reduced_grid is not None else method.grid)
        if config.reduced and method.reduced_grid is None:
            grid = {k: list(v)[:1] for k, v in method.grid.items()}
        for param, values in (config.grids.get(name) or {}).items():
            # a parameter the estimator declares may be set too (an
            # iteration cap, say), beside its grid and fixed ones
            known = dict.fromkeys([*method.grid, *method.fixed, *method.constraints])
            if param not in known:
                accepted = ", ".join(known) or "none"
                raise DataError(
                    f"method {name!r} has no parameter {param!r}; accepted: {accepted}"
                )
            grid[param] = values
        for param, values in grid.items():
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
                raise DataError(
                    f"grid of {name!r}, parameter {param!r}, must be a list of "
                    f"values; got {values!r}"
                )
            values = list(values)
            if not values:
                raise DataError(
                    f"the grid of method {name!r} is empty for parameter "
                    f"{param!r}: give at least one value (paper grid: "
                    f"{list(method.grid.get(param, [method.fixed.get(param)]))})"
                )
            _check_values(method, param, values)
            grid[param] = values
        for param, value in method.fixed.items():
            if param not in grid:
                _check_values(method, param, [value])
        methods.append(method)
        grids[name] = expand_grid(grid)
        metrics[name] = config.select_by or method.selection_metric
    root = _check_dataset(config.dataset, folds, config.letor_home)
    config = ExperimentConfig(**{**asdict(config), "methods": names, "folds": folds})
    return _Plan(config=config, root=root,
                 slug=_slug(config.dataset, config.normalize),
                 methods=tuple(methods), grids=grids, metrics=metrics)
