"""Cross-validated experiments over folds x methods x hyper-parameters.

:func:`run` takes an :class:`ExperimentConfig`, checks all of it before any
fit starts (:func:`validate_config`), then fits every ``(fold, method,
parameter setting)`` task on the fold's training split, evaluates it on
the validation and test splits, selects per fold and method the setting
with the best validation value of the paper's metric, and writes tidy
tables:

``<out>/<dataset>/tasks.csv``
    one row per task: parameters, validation and test metrics, sparsity,
    fit time, iterations, convergence, warnings;
``selected.csv``
    the selected task of every (method, fold);
``summary.csv``
    per method, mean and standard deviation over folds of the selected
    models' test metrics, sparsity and fit time;
``per_query.csv``
    per-query test NDCG@1/3/5/10 and AP of the selected models, for paired
    tests between methods;
``run.json``
    the configuration, the resolved grids, library versions and timings.

Every finished task is also stored as ``<out>/<dataset>/cache/<method>/
<fold>-<key>.json`` with ``key`` a hash of (dataset, fold, method,
parameters including fixed settings, refimpl version); a re-run loads it
instead of fitting again (``cache=False`` or ``--refit`` to fit anyway).

Tasks run through :class:`joblib.Parallel` (``backend="loky"`` processes
by default, ``"threading"``, ``"sequential"``, or ``"dask"`` on the
workers of an existing ``dask.distributed.Client``).  A task loads its
fold itself (once per worker process), so only the task description
travels to a worker; on a cluster the LETOR directory must be readable by
every worker at the same path.

Derived in: book/07_side_by_side.md#side-by-side
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import re
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__ as _REFIMPL_VERSION
from .. import data as _data
from .. import metrics as _metrics
from .._validation import group_queries
from ..exceptions import DataError, DatasetNotFoundError
from .registry import METHODS, SELECTION_METRICS, expand_grid, get_method
from .scale import ScaleError, check_task

__all__ = [
    "BACKENDS",
    "ExperimentConfig",
    "RunResult",
    "load_fold",
    "parse_folds",
    "run",
    "validate_config",
]

#: Parallel back-ends accepted by :func:`run`.
BACKENDS = ("loky", "threading", "sequential", "dask")
#: Cut-offs evaluated for every task.
KS = tuple(range(1, 11))
#: Per-query measures kept for the selected models (paired tests).
PER_QUERY_KS = (1, 3, 5, 10)
#: Bumped whenever a cached task would no longer match what a fit returns.
CACHE_SCHEMA = 1
_SYNTHETIC = re.compile(r"^synthetic(?::(\d+))?(?::(\d+))?$")


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ExperimentConfig:
    """What to run.

    Derived in: book/07_side_by_side.md#side-by-side

    Parameters
    ----------
    dataset : str
        A LETOR data set under the LETOR root (``"MQ2008"``), or
        ``"synthetic[:Q[:seed]]"``: :func:`refimpl.data.make_synthetic_letor`
        with ``Q`` queries (default 200) and MQ2008's shape (46 features, 3
        labels), cut into five query partitions like LETOR 4.0's S1..S5.
    methods : sequence of str
        Names in :data:`refimpl.experiments.registry.METHODS`.
    folds : sequence of int, default (1, 2, 3, 4, 5)
    out : str or path, optional
        Results root; the tables go to ``<out>/<dataset>/``.  Without it
        nothing is written and nothing is cached.
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

    Derived in: book/07_side_by_side.md#side-by-side
    """
    folds = []
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise DataError(
                f"folds must look like 1-5, 1,3 or 2 (folds 1 to 5); got {text!r}"
            )
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if lo > hi:
            raise DataError(f"fold range {part!r} is empty (start > end)")
        folds.extend(range(lo, hi + 1))
    return tuple(dict.fromkeys(folds))


def _slug(dataset):
    return re.sub(r"[^\w.-]+", "-", dataset).strip("-")


def _check_dataset(dataset, folds, letor_home):
    """Resolve the LETOR root and check every fold's files exist."""
    if _SYNTHETIC.match(dataset):
        q = _SYNTHETIC.match(dataset).group(1)
        if q is not None and int(q) < 5:
            raise DataError(
                f"{dataset!r}: a synthetic data set needs at least 5 queries "
                "(one per partition)"
            )
        return None
    if not isinstance(dataset, str) or not dataset:
        raise DataError(
            "dataset must be a LETOR data set name (e.g. 'MQ2008') or "
            f"'synthetic[:queries[:seed]]'; got {dataset!r}"
        )
    root = _data.letor_home(letor_home)
    base = root / dataset
    for fold in folds:
        complete = False
        for _, stems in _data._fold_layouts(base, fold):
            if all(_data._find(s)[0] is not None
                   for split in stems.values() for s in split):
                complete = True
                break
        if not complete:
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


def validate_config(config):
    """Check a configuration completely, before any fit.

    Derived in: book/07_side_by_side.md#side-by-side

    Returns
    -------
    _Plan
        The resolved methods, grids and metrics.

    Raises
    ------
    DataError
        Unknown method, parameter or metric, an empty grid, bad folds,
        ``n_jobs`` or back-end; the message lists what is accepted.
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
    folds = config.folds
    if isinstance(folds, str):
        folds = parse_folds(folds)
    folds = tuple(folds)
    if not folds or any(isinstance(f, bool) or not isinstance(f, (int, np.integer))
                        or not 1 <= f <= 5 for f in folds):
        raise DataError(f"folds must be a non-empty set of integers 1..5; got {config.folds!r}")
    if config.select_by is not None and config.select_by not in SELECTION_METRICS:
        raise DataError(
            f"unknown metric {config.select_by!r}; accepted: "
            f"{', '.join(SELECTION_METRICS)}"
        )
    if config.backend not in BACKENDS:
        raise DataError(
            f"unknown backend {config.backend!r}; accepted: {', '.join(BACKENDS)}"
        )
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
            if param not in method.grid and param not in method.fixed:
                accepted = ", ".join(list(method.grid) + list(method.fixed)) or "none"
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
            grid[param] = values
        methods.append(method)
        grids[name] = expand_grid(grid)
        metrics[name] = config.select_by or method.selection_metric
    root = _check_dataset(config.dataset, folds, config.letor_home)
    config = ExperimentConfig(**{**asdict(config), "methods": names, "folds": folds})
    return _Plan(config=config, root=root, slug=_slug(config.dataset),
                 methods=tuple(methods), grids=grids, metrics=metrics)


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


def _synthetic_fold(n_queries, seed, fold):
    syn = _data.make_synthetic_letor(
        n_queries=n_queries, docs_per_query=(5, 40), n_informative=5,
        n_redundant=10, n_noise=31, n_levels=3, seed=seed)
    part = (syn.qid - 1) * 5 // n_queries          # five contiguous partitions
    def split(parts):
        mask = np.isin(part, parts)
        return _data.RankingData(syn.X[mask], syn.y[mask], syn.qid[mask])
    p = [(fold - 1 + j) % 5 for j in range(5)]
    return _data.LetorFold(name=f"synthetic:{n_queries}:{seed}", fold=fold,
                           train=split(p[:3]), vali=split([p[3]]),
                           test=split([p[4]]))


@functools.lru_cache(maxsize=8)
def load_fold(dataset, fold, root=None):
    """One fold of a LETOR or synthetic data set (cached per process).

    Derived in: book/07_side_by_side.md#side-by-side

    Parameters
    ----------
    dataset : str
        As ``ExperimentConfig.dataset``.
    fold : int
    root : str, optional
        LETOR root (default ``LETOR_HOME``).

    Returns
    -------
    refimpl.data.LetorFold
    """
    m = _SYNTHETIC.match(dataset)
    if m:
        return _synthetic_fold(int(m.group(1) or 200), int(m.group(2) or 0), fold)
    return _data.load_letor_fold(dataset, fold, root=root)


def _n_pairs(y, qid):
    groups = group_queries(qid, len(y))
    total = 0
    ys = np.asarray(y)[groups.order]
    for a, b in zip(groups.indptr[:-1], groups.indptr[1:]):
        _, counts = np.unique(ys[a:b], return_counts=True)
        total += (counts.sum() ** 2 - (counts ** 2).sum()) // 2
    return int(total)


# --------------------------------------------------------------------------
# One task
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    dataset: str
    root: str | None
    fold: int
    method: object
    params: dict
    index: int              # position in the method's grid
    key: str


def _task_key(dataset, fold, method, params):
    blob = json.dumps({
        "schema": CACHE_SCHEMA, "refimpl": _REFIMPL_VERSION,
        "dataset": dataset, "fold": int(fold), "method": method.name,
        "params": {**dict(method.fixed), **dict(params)},
    }, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _warning_text(caught):
    seen = []
    for w in caught:
        text = f"{w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
        if text not in seen:
            seen.append(text)
    return " | ".join(seen)


def _run_task(task):
    """Fit, evaluate and describe one (fold, method, params) task."""
    method = task.method
    row = {"dataset": task.dataset, "fold": task.fold, "method": method.name,
           "grid_index": task.index, "params": json.dumps(task.params, sort_keys=True),
           "key": task.key, "linear": method.linear, "status": "ok", "error": ""}
    per_query = {}
    try:
        t_load = time.perf_counter()
        fold = load_fold(task.dataset, task.fold, task.root)
        row["load_time"] = time.perf_counter() - t_load
        Xtr, ytr, qtr = fold.train
        used_in_data = np.any(Xtr != 0, axis=0)
        row.update(n_train_docs=len(ytr),
                   n_train_queries=len(np.unique(qtr)),
                   n_train_pairs=_n_pairs(ytr, qtr),
                   n_features=int(Xtr.shape[1]),
                   n_features_nonzero=int(used_in_data.sum()))
        # refuse up front what cannot run at this size (pairs the tree
        # avoids, more memory than there is) rather than die mid-fit
        guard = check_task(method.name, {**dict(method.fixed), **dict(task.params)},
                           fold, row["n_train_pairs"])
        row.update(backend=guard.backend, est_peak_mb=guard.peak_bytes / 2**20)
        estimator = method.build(task.params)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0, c0 = time.perf_counter(), time.thread_time()
            estimator.fit(Xtr, ytr, qtr)
            row["fit_time"] = time.perf_counter() - t0
            row["cpu_time"] = time.thread_time() - c0
        row["warnings"] = _warning_text(caught)
        row["n_iter"] = int(getattr(estimator, "n_iter_", -1))
        conv = getattr(estimator, "converged_", None)
        row["converged"] = "" if conv is None else bool(conv)
        used = method.used_features(estimator)
        if used is not None:
            row["nnz"] = int(used.sum())
            row["sparsity"] = float(used[used_in_data].sum() / used_in_data.sum())
            row["sparsity_all"] = float(used.sum() / used.size)
        else:
            row["nnz"] = row["sparsity"] = row["sparsity_all"] = float("nan")
        for split in ("vali", "test"):
            X, y, q = getattr(fold, split)
            scores = np.asarray(estimator.predict(X), dtype=np.float64)
            values = _metrics.evaluate(y, scores, q, ks=KS)
            prefix = "val" if split == "vali" else "test"
            for name, value in values.items():
                row[f"{prefix}_{name}"] = float(value)
        X, y, q = fold.test
        scores = np.asarray(estimator.predict(X), dtype=np.float64)
        nd = _metrics.ndcg_at_k(y, scores, q, k=list(PER_QUERY_KS), per_query=True)
        per_query = {"qid": [int(v) for v in group_queries(q, len(y)).qids]}
        for j, k in enumerate(PER_QUERY_KS):
            per_query[f"NDCG@{k}"] = nd[:, j].tolist()
        per_query["AP"] = _metrics.average_precision(y, scores, q, per_query=True).tolist()
    # A failed fit is reported in its row, not fatal to the other tasks.
    except Exception as err:  # noqa: BLE001
        row["status"] = "refused" if isinstance(err, ScaleError) else "error"
        row["error"] = f"{type(err).__name__}: {err}"[:500]
    return {"row": row, "per_query": per_query}


# --------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------


def _cache_path(out_dir, task):
    return out_dir / "cache" / task.method.name / f"{task.fold}-{task.key}.json"


def _cache_load(path, task):
    try:
        with open(path) as f:
            stored = json.load(f)
    except (OSError, ValueError):
        return None
    if stored.get("key") != task.key or stored.get("row", {}).get("status") != "ok":
        return None
    return stored


def _cache_store(path, task, result):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump({"key": task.key, **result}, f)
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


@dataclass
class RunResult:
    """What :func:`run` produced.

    Derived in: book/07_side_by_side.md#side-by-side

    Attributes
    ----------
    config : ExperimentConfig
        The validated configuration.
    tasks, selected, summary, per_query : list of dict
        The rows of the four tables (see the module docstring).
    n_fitted, n_cached, n_failed : int
        Tasks fitted in this run, loaded from the cache, failed.
    wall_time : float
        Seconds from the first dispatched task to the last result.
    out_dir : Path or None
        Where the tables were written.
    """

    config: ExperimentConfig
    tasks: list
    selected: list
    summary: list
    per_query: list
    n_fitted: int
    n_cached: int
    n_failed: int
    wall_time: float
    out_dir: Path | None = None
    info: dict = field(default_factory=dict)


def _versions():
    from importlib import metadata

    out = {"python": platform.python_version(), "refimpl": _REFIMPL_VERSION}
    for pkg in ("numpy", "scipy", "scikit-learn", "numba", "joblib", "lightgbm",
                "dask", "distributed", "tqdm"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def _execute(tasks, config):
    """Yield task results as they finish."""
    if config.backend == "sequential" or (config.n_jobs == 1 and config.backend != "dask"):
        for task in tasks:
            yield task, _run_task(task)
        return
    from joblib import Parallel, delayed, parallel_config

    def tagged(task):
        return task.key, _run_task(task)

    by_key = {t.key: t for t in tasks}
    if config.backend == "dask":
        try:
            from distributed import get_client
            get_client()
        except (ImportError, ValueError) as err:
            raise DataError(
                "backend='dask' needs a running dask.distributed Client: create "
                "one first (Client('tcp://scheduler:8786') or "
                "Client(LocalCluster())), or use --scheduler / --dask-local on "
                f"the command line ({err})"
            ) from None
        ctx = parallel_config(backend="dask")
    else:
        ctx = parallel_config(backend=config.backend)
    with ctx:
        parallel = Parallel(n_jobs=config.n_jobs, batch_size=1,
                            return_as="generator_unordered")
        for key, result in parallel(delayed(tagged)(t) for t in tasks):
            yield by_key[key], result


def _select(rows, metric):
    best = None
    for row in rows:
        if row["status"] != "ok":
            continue
        v = row.get(f"val_{metric}", float("nan"))
        v = -np.inf if np.isnan(v) else v
        if best is None or v > best[0]:
            best = (v, row)
    return None if best is None else best[1]


_SUMMARY_METRICS = tuple([f"NDCG@{k}" for k in KS] + ["MAP", "MeanNDCG",
                                                       "PairwiseAccuracy"])


def _summarize(selected, plan, task_rows):
    out = []
    for method in plan.methods:
        rows = [r for r in selected if r["method"] == method.name]
        if not rows:
            continue
        s = {"dataset": plan.config.dataset, "method": method.name,
             "paper": method.paper, "linear": method.linear,
             "selection_metric": plan.metrics[method.name], "n_folds": len(rows)}
        cols = [f"test_{m}" for m in _SUMMARY_METRICS] + [
            "sparsity", "sparsity_all", "nnz", "fit_time", "cpu_time"]
        for col in cols:
            vals = np.array([r[col] for r in rows], dtype=float)
            s[f"{col}_mean"] = float(np.mean(vals))
            s[f"{col}_std"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else float("nan")
        grid_rows = [r for r in task_rows if r["method"] == method.name
                     and r["status"] == "ok"]
        s["grid_size"] = len(plan.grids[method.name])
        s["grid_fit_time"] = float(sum(r["fit_time"] for r in grid_rows))
        s["grid_cpu_time"] = float(sum(r["cpu_time"] for r in grid_rows))
        s["n_not_converged"] = sum(1 for r in grid_rows if r.get("converged") is False)
        out.append(s)
    return out


def _write_csv(path, rows):
    if not rows:
        path.write_text("")
        return
    columns = []
    for row in rows:
        for k in row:
            if k not in columns:
                columns.append(k)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        for row in rows:
            # 10 significant digits: far below any difference discussed,
            # and half the size of repr()
            writer.writerow({k: (f"{v:.10g}" if isinstance(v, float) else v)
                             for k, v in row.items()})


_HISTORY_KEYS = ("started_utc", "wall_time_s", "n_tasks", "n_fitted", "n_cached",
                 "n_failed")


def _history(path, info):
    """Earlier invocations that fitted something, plus this one if it did.

    A re-run served from the cache rewrites the tables but is not a new
    production run; the history says when and how the cached fits were made.
    """
    past = []
    try:
        with open(path) as f:
            old = json.load(f)
        if old.get("dataset") == info["dataset"]:
            past = old.get("history") or [
                {**{k: old.get(k) for k in _HISTORY_KEYS},
                 "methods": old["config"]["methods"],
                 "n_jobs": old["config"]["n_jobs"],
                 "backend": old["config"]["backend"]}]
    except (OSError, ValueError, KeyError):
        past = []
    if info["n_fitted"]:
        past = [*past, {**{k: info[k] for k in _HISTORY_KEYS},
                        "methods": info["config"]["methods"],
                        "n_jobs": info["config"]["n_jobs"],
                        "backend": info["config"]["backend"]}]
    return past


def run(config):
    """Run an experiment: validate, fit (or load) every task, select, write.

    Derived in: book/07_side_by_side.md#side-by-side

    Parameters
    ----------
    config : ExperimentConfig

    Returns
    -------
    RunResult
    """
    plan = validate_config(config)
    config = plan.config
    out_dir = Path(config.out) / plan.slug if config.out is not None else None
    tasks = []
    for method in plan.methods:
        for fold in config.folds:
            for index, params in enumerate(plan.grids[method.name]):
                key = _task_key(config.dataset, fold, method, params)
                tasks.append(_Task(config.dataset, plan.root, fold, method,
                                   params, index, key))
    results, todo = {}, []
    for task in tasks:
        stored = None
        if out_dir is not None and config.cache:
            stored = _cache_load(_cache_path(out_dir, task), task)
        if stored is not None:
            stored["row"]["cached"] = True
            results[task.key] = stored
        else:
            todo.append(task)
    n_cached = len(results)
    started = _dt.datetime.now(_dt.UTC)
    t0 = time.perf_counter()
    from tqdm import tqdm

    with tqdm(total=len(todo), desc=plan.slug, unit="fit",
              disable=not config.progress or not todo, file=sys.stderr) as bar:
        for task, result in _execute(todo, config):
            result["row"]["cached"] = False
            results[task.key] = result
            if out_dir is not None and result["row"]["status"] == "ok":
                _cache_store(_cache_path(out_dir, task), task, result)
            bar.set_postfix_str(f"{task.method.name} fold {task.fold}", refresh=False)
            bar.update(1)
    wall = time.perf_counter() - t0
    rows = [results[t.key]["row"] for t in tasks]
    selected, per_query = [], []
    for method in plan.methods:
        metric = plan.metrics[method.name]
        for fold in config.folds:
            cand = [r for r in rows if r["method"] == method.name and r["fold"] == fold]
            best = _select(cand, metric)
            if best is None:
                continue
            selected.append({**best, "selection_metric": metric})
            pq = results[best["key"]]["per_query"]
            for i, q in enumerate(pq["qid"]):
                per_query.append({"dataset": config.dataset, "method": method.name,
                                  "fold": fold, "qid": q,
                                  **{k: pq[k][i] for k in pq if k != "qid"}})
    summary = _summarize(selected, plan, rows)
    n_failed = sum(1 for r in rows if r["status"] != "ok")
    info = {
        "dataset": config.dataset, "letor_home": plan.root,
        "config": {**asdict(config), "methods": list(config.methods),
                   "folds": list(config.folds)},
        "grids": {m.name: plan.grids[m.name] for m in plan.methods},
        "fixed": {m.name: dict(m.fixed) for m in plan.methods},
        "selection_metrics": plan.metrics,
        "grid_sources": {m.name: m.grid_source for m in plan.methods},
        "versions": _versions(),
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
        "started_utc": started.isoformat(timespec="seconds"),
        "wall_time_s": wall, "n_tasks": len(tasks), "n_fitted": len(todo),
        "n_cached": n_cached, "n_failed": n_failed,
    }
    if out_dir is not None:
        info["history"] = _history(out_dir / "run.json", info)
        out_dir.mkdir(parents=True, exist_ok=True)
        _write_csv(out_dir / "tasks.csv", rows)
        _write_csv(out_dir / "selected.csv", selected)
        _write_csv(out_dir / "summary.csv", summary)
        _write_csv(out_dir / "per_query.csv", per_query)
        with open(out_dir / "run.json", "w") as f:
            json.dump(info, f, indent=1, default=repr)
            f.write("\n")
    return RunResult(config=config, tasks=rows, selected=selected,
                     summary=summary, per_query=per_query, n_fitted=len(todo),
                     n_cached=n_cached, n_failed=n_failed, wall_time=wall,
                     out_dir=out_dir, info=info)
