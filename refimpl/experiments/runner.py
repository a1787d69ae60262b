"""Cross-validated experiments over folds x methods x hyper-parameters.

:func:`run` takes an
:class:`~refimpl.experiments.config.ExperimentConfig`, checks all of it
before any fit starts (:func:`~refimpl.experiments.config.validate_config`),
then fits every ``(fold, method, parameter setting)`` task on the fold's
training split, evaluates it on
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
<fold>-<key>.json``, with ``key`` a hash of everything that determines its
result: the task (data set, fold, method, parameters including fixed
settings), the feature normalisation of the run (``normalize``, when there
is one), the content of the data files it reads (a SHA-256 per file; for
a synthetic data set its generator's parameters), the source code of the
package (:func:`~refimpl.experiments.task_cache.code_hash`) and the
versions of the numerical libraries.  A re-run loads it instead of fitting
again (``cache=False`` or ``--refit`` to
fit anyway); changed data or code is fitted again without ``--refit``.  A
stored entry is checked when it is read (its fields, their types and ranges,
that it belongs to the task, a checksum over its content): an entry that
fails is reported as a warning naming its file and the task is fitted again.
Entries are written atomically (a temporary file in the same directory, then
``os.replace``), and a failed write leaves no temporary file behind.  The
``key`` column of the tables identifies a task across runs (data set, fold,
method, parameters, normalisation, refimpl version), whatever its data or
code.

``normalize="query"`` or ``"standard"`` (:func:`refimpl.data.normalize_fold`)
normalises every fold's features once, when a worker loads the fold, before
its splits are validated; the three splits are then served normalised to
every task of the fold.  A normalised run writes to
``<out>/<dataset>-normalize-<how>/``, never over the tables or the cache of
the raw run, and its task and cache keys include the normalisation (a raw
run's keys are those of the runs before the option existed).

Before the first fit, every folder the run writes (``<out>/<dataset>/``,
its ``cache/``, each method's cache folder and the first-stage cache) is
created and a file is written into it and removed: an ``out`` that cannot
hold the results (a file, ``/dev/null``, a read-only place) is a
``DataError`` then, not after the fits.  The tables and ``run.json`` are
written like the cache entries (a temporary file, then ``os.replace``), and
the temporary files that killed writes left in these folders are removed
when a run starts (those of a process gone for a minute, or older than an
hour: ``refimpl._io.remove_stale_tmp``).
A FIFO, device or directory where the runner reads one of its files is
reported like any malformed file (a warning, and the file is rebuilt),
never waited on.

SIGINT and SIGTERM during a run end the worker processes before the runner
exits (SIGTERM exits with status 143, like the default action would); the
loky workers of a runner killed outright (SIGKILL) end within seconds, as
each watches its parent process
(``refimpl._compat.loky.backend_params``).

Tasks run through :class:`joblib.Parallel` (``backend="loky"`` processes
by default, ``"threading"``, ``"sequential"``, or ``"dask"`` on the
workers of an existing ``dask.distributed.Client``).  A task loads its
fold itself, so only the task description travels to a worker; on a
cluster the LETOR directory must be readable by every worker at the same
path.  A worker process loads a fold and validates and groups its three
splits (:class:`~refimpl._validation.RankingProblem`) once; every
task of the fold fits on the training problem (the estimator takes its
grouping) and predicts and evaluates each of the other two once.  File
hashes, the fingerprint memo and atomic writes come from
``refimpl._io``.

The run's parts live beside this module: :mod:`~refimpl.experiments.config`
(the configuration and its checks), :mod:`~refimpl.experiments.task_cache`
(fingerprints, task and cache keys, cache entries),
:mod:`~refimpl.experiments.folds` (loading a fold once per worker),
:mod:`~refimpl.experiments.tables` (selection, summary, the tables and
``run.json``) and :mod:`~refimpl.experiments.interrupts` (SIGINT/SIGTERM);
this module keeps the fitting path and :func:`run`.

Derived in: book/10_running_experiments.md#run-cli
"""


from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time
import warnings
import dataclasses
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__ as _REFIMPL_VERSION
from .. import metrics as _metrics
from .. import pairs as _pairs
from .._validation import check_scores
from ..exceptions import DataError
from .config import KS, PER_QUERY_KS, ExperimentConfig, synthetic_spec, validate_config
from .folds import load_checked, problems_version
from .interrupts import end_loky_workers, sigterm_unwinds
from ..losses.squared_hinge import count_levels
from .scale import ScaleError, check_load, check_scale
from .tables import history, prepare_output, select_best, summarize, write_tables
from .task_cache import (Task, cache_key, cache_load, cache_path, cache_store,
                         code_hash, run_fingerprints, task_key)

__all__ = [
    "RunResult",
    "evaluate_split",
    "run",
    "stage_first",
]


# --------------------------------------------------------------------------
# One task
# --------------------------------------------------------------------------

def _warning_text(caught):
    seen = []
    for w in caught:
        text = f"{w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
        if text not in seen:
            seen.append(text)
    return " | ".join(seen)


def evaluate_split(problem, scores):
    """Every measure of :func:`refimpl.metrics.evaluate` on a validated split,
    and the per-query NDCG@1/3/5/10 and AP.

    The split's labels and query grouping come from ``problem``: it is
    ranked once, and nothing is checked or grouped again
    (:func:`refimpl.metrics.query_tables`; the same numbers as
    ``evaluate(y, scores, qid, ks=KS)``, ``ndcg_at_k(..., per_query=True)``
    and ``average_precision(..., per_query=True)``).

    Returns
    -------
    (dict, dict)
        ``{measure: float}`` and ``{"qid": [...], "NDCG@k": [...], "AP": [...]}``.
    """
    groups = problem.groups
    y_g = problem.y[groups.order]
    s_g = check_scores(scores, problem.n_samples)[groups.order]
    t = _metrics.query_tables(y_g, s_g, groups.indptr, KS, convention="letor4")
    nd, nd_mean, prec, ap = t.ndcg, t.mean_ndcg, t.precision, t.ap
    n_correct, n_pairs = t.n_correct, t.n_pairs
    values = {f"NDCG@{k}": float(nd[:, j].mean()) for j, k in enumerate(KS)}
    values.update({f"P@{k}": float(prec[:, j].mean()) for j, k in enumerate(KS)})
    values.update(MAP=float(ap.mean()), MeanNDCG=float(nd_mean.mean()),
                  PairwiseAccuracy=n_correct / n_pairs if n_pairs else float("nan"))
    per_query = {"qid": [int(v) for v in groups.qids]}
    for k in PER_QUERY_KS:
        per_query[f"NDCG@{k}"] = nd[:, KS.index(k)].tolist()
    per_query["AP"] = ap.tolist()
    return values, per_query


def _fit(estimator, problem):
    """Fit on the validated problem, with its own labels and query ids.

    refimpl's estimators take a ``RankingProblem`` as ``X`` and use its
    grouping (:func:`refimpl._validation.check_fit_input`); an estimator
    registered from outside the package gets the arrays.
    """
    if type(estimator).__module__.startswith("refimpl."):
        return estimator.fit(problem, problem.y, problem.qid)
    return estimator.fit(problem.X, problem.y, problem.qid)


def _run_task(task):
    """Fit, evaluate and describe one (fold, method, params) task.

    On the fold's validated problems
    (:func:`~refimpl.experiments.folds.problems_version`): the training
    split is fitted as it is, each of the validation and test
    splits predicted and evaluated once.
    """
    method = task.method
    row = {"dataset": task.dataset, "fold": task.fold, "method": method.name,
           "grid_index": task.index, "params": json.dumps(task.params, sort_keys=True),
           "key": task.key, "linear": method.linear, "status": "ok", "error": ""}
    per_query = {}
    try:
        if task.refused:
            raise ScaleError(task.refused)
        t_load = time.perf_counter()
        fold = load_checked(task.dataset, task.fold, task.root, task.data_digest,
                             task.data_files, load=problems_version,
                             normalize=task.normalize)
        row["load_time"] = time.perf_counter() - t_load
        train = fold.train
        used_in_data = np.asarray((train.X != 0).sum(axis=0)).ravel() > 0
        row.update(n_train_docs=train.n_samples, n_train_queries=train.n_queries,
                   n_train_pairs=_pairs.n_pairs(train), n_features=train.n_features,
                   n_features_nonzero=int(used_in_data.sum()))
        # refuse up front what cannot run at this size (pairs the tree
        # avoids, more memory than there is) rather than die mid-fit
        guard = check_scale(
            method.name, {**dict(method.fixed), **dict(task.params)},
            n_docs=train.n_samples, n_pairs=row["n_train_pairs"],
            n_features=train.n_features, max_query=int(train.groups.sizes.max()),
            data_bytes=fold.nbytes, n_levels=count_levels(train.y),
            # a sparse X takes the two-pass path: no copy
            grouped=hasattr(train.X, "indptr") or train.groups.runs is not None)
        row.update(backend=guard.backend, est_peak_mb=guard.peak_bytes / 2**20)
        estimator = method.build(task.params)
        get_params = getattr(estimator, "get_params", None)  # any fit/predict object
        if (task.stage_cache is not None and get_params is not None
                and "memory" in get_params(deep=False)):
            # a first stage (LifeRank) shared by the grid points that agree
            # on its parameters is fitted once (scikit-learn's memory=)
            estimator.set_params(memory=task.stage_cache)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0, c0 = time.perf_counter(), time.thread_time()
            _fit(estimator, train)
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
        for prefix, split in (("val", fold.vali), ("test", fold.test)):
            scores = np.asarray(estimator.predict(split.X), dtype=np.float64)
            values, split_per_query = evaluate_split(split, scores)
            for name, value in values.items():
                row[f"{prefix}_{name}"] = float(value)
        per_query = split_per_query          # the test split's
    # A failed fit is reported in its row, not fatal to the other tasks.
    except Exception as err:  # noqa: BLE001
        row["status"] = "refused" if isinstance(err, ScaleError) else "error"
        row["error"] = f"{type(err).__name__}: {err}"[:500]
    return {"row": row, "per_query": per_query}


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

@dataclass
class RunResult:
    """What :func:`run` produced.

    Derived in: book/10_running_experiments.md#run-cli

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
    elif config.backend == "loky":
        from .._compat.loky import backend_params

        # workers that outlive a killed runner would run on for minutes
        ctx = parallel_config(backend="loky", **backend_params())
    else:
        ctx = parallel_config(backend=config.backend)
    with ctx:
        parallel = Parallel(n_jobs=config.n_jobs, batch_size=1,
                            return_as="generator_unordered")
        for key, result in parallel(delayed(tagged)(t) for t in tasks):
            yield by_key[key], result


def stage_first(tasks):
    """``tasks`` with, first, one task per shared first stage (stable).

    An estimator that declares ``FIRST_STAGE_PARAMS`` (``LifeRankPipeline``)
    fits its first stage once per distinct value of those parameters when
    it has a ``memory``
    (``Task.stage_cache``); run in
    parallel in grid order, the grid points sharing a stage would start together and each
    fit it.  So the first task of each (method, fold, stage) goes first,
    then the others, which find their stage in the cache.  The order of the
    tables is the grid's whatever the order of execution.
    """
    first, rest, seen = [], [], set()
    for task in tasks:
        names = getattr(task.method.factory, "FIRST_STAGE_PARAMS", None)
        if names is None or task.stage_cache is None:
            first.append(task)
            continue
        params = {**dict(task.method.fixed), **dict(task.params)}
        stage = (task.method.name, task.fold,
                 json.dumps({n: params.get(n) for n in names}, sort_keys=True,
                            default=repr))
        (rest if stage in seen else first).append(task)
        seen.add(stage)
    return first + rest


def _run_todo(todo, config, plan, out_dir, results):
    """Fit the tasks not cached; store each result as it arrives.

    On any exception (SIGINT's ``KeyboardInterrupt``, SIGTERM's
    ``SystemExit``) the joblib generator is closed, which aborts the
    running tasks, and the loky workers are killed before the exception
    goes on, so that no worker outlives the run.
    """
    from tqdm import tqdm

    results_iter = _execute(todo, config)
    try:
        with tqdm(total=len(todo), desc=plan.slug, unit="fit",
                  disable=not config.progress or not todo, file=sys.stderr) as bar:
            for task, result in results_iter:
                result["row"]["cached"] = False
                results[task.key] = result
                if out_dir is not None and result["row"]["status"] == "ok":
                    cache_store(cache_path(out_dir, task), task, result)
                bar.set_postfix_str(f"{task.method.name} fold {task.fold}",
                                    refresh=False)
                bar.update(1)
    except BaseException:
        results_iter.close()
        if config.backend == "loky":
            end_loky_workers()
        raise


def _refuse_unloadable(todo, config, plan):
    """``todo`` with the tasks of a fold whose load would not fit marked
    refused (:func:`~refimpl.experiments.scale.check_load`, once per fold,
    before any worker loads it)."""
    if synthetic_spec(config.dataset) is not None:
        return todo
    refused = {}
    for fold in sorted({t.fold for t in todo}):
        try:
            check_load(config.dataset, fold, plan.root, normalize=config.normalize)
        except ScaleError as err:
            refused[fold] = str(err)
        except DataError:
            # a file the loader cannot read: its own error, in each task's row
            pass
    return [dataclasses.replace(t, refused=refused[t.fold]) if t.fold in refused
            else t for t in todo]


def run(config):
    """Run an experiment: validate, fit (or load) every task, select, write.

    Derived in: book/10_running_experiments.md#run-cli

    Parameters
    ----------
    config : ExperimentConfig

    Returns
    -------
    RunResult

    Raises
    ------
    DataError
        What :func:`~refimpl.experiments.config.validate_config` refuses;
        a folder of ``out`` that cannot be created or written (before any
        fit); tables that cannot be
        written at the end (the cached fits are re-used by a re-run).
    """
    plan = validate_config(config)
    config = plan.config
    out_dir = Path(config.out) / plan.slug if config.out is not None else None
    # keyed by the code like the task cache: joblib's memory keys a
    # stage by its parameters and data only
    stage_cache = (str(out_dir / "cache" / "stages" / code_hash()[:16])
                   if out_dir is not None and config.cache else None)
    if out_dir is not None:
        prepare_output(out_dir, plan, stage_cache)
    with sigterm_unwinds():
        fingerprints = run_fingerprints(plan, out_dir)
        tasks = []
        for method in plan.methods:
            for fold in config.folds:
                fp = fingerprints[fold]
                for index, params in enumerate(plan.grids[method.name]):
                    tasks.append(Task(
                        config.dataset, plan.root, fold, method, params, index,
                        key=task_key(config.dataset, fold, method, params,
                                      config.normalize),
                        cache_key=cache_key(config.dataset, fold, method, params,
                                             fp["digest"], config.normalize),
                        data_digest=fp["digest"],
                        data_files=tuple((p, tuple(sig)) for p, sig in fp["files"]),
                        normalize=config.normalize, stage_cache=stage_cache))
        results, todo = {}, []
        for task in tasks:
            stored = None
            if out_dir is not None and config.cache:
                stored = cache_load(cache_path(out_dir, task), task)
            if stored is not None:
                # where the task sits in this run's grid, which may be reordered
                stored["row"]["grid_index"] = task.index
                stored["row"]["cached"] = True
                results[task.key] = stored
            else:
                todo.append(task)
        todo = _refuse_unloadable(todo, config, plan)
        n_cached = len(results)
        started = _dt.datetime.now(_dt.UTC)
        t0 = time.perf_counter()
        _run_todo(stage_first(todo), config, plan, out_dir, results)
        wall = time.perf_counter() - t0
    rows = [results[t.key]["row"] for t in tasks]
    selected, per_query = [], []
    for method in plan.methods:
        metric = plan.metrics[method.name]
        for fold in config.folds:
            cand = [r for r in rows if r["method"] == method.name and r["fold"] == fold]
            best = select_best(cand, metric)
            if best is None:
                continue
            selected.append({**best, "selection_metric": metric})
            pq = results[best["key"]]["per_query"]
            for i, q in enumerate(pq["qid"]):
                per_query.append({"dataset": config.dataset, "method": method.name,
                                  "fold": fold, "qid": q,
                                  **{k: pq[k][i] for k in pq if k != "qid"}})
    summary = summarize(selected, plan, rows)
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
        "code_sha256": code_hash(),
        "data_fingerprints": {str(fold): {"sha256": fp["digest"],
                                          "files": fp["describe"]}
                              for fold, fp in fingerprints.items()},
    }
    if out_dir is not None:
        info["history"] = history(out_dir / "run.json", info)
        write_tables(out_dir, {"tasks": rows, "selected": selected,
                                "summary": summary, "per_query": per_query},
                      info)
    return RunResult(config=config, tasks=rows, selected=selected,
                     summary=summary, per_query=per_query, n_fitted=len(todo),
                     n_cached=n_cached, n_failed=n_failed, wall_time=wall,
                     out_dir=out_dir, info=info)
