"""The run's tidy tables and ``run.json``, and the folders they go to.

Per (method, fold) the task with the best validation value of the
selection metric is kept (:func:`select_best`); :func:`summarize` gives
per method the mean and standard deviation over folds of the selected
models' test measures.  :func:`prepare_output` creates and proves
writable every folder a run writes before its first fit, and removes the
temporary files killed writes left there
(``refimpl._io.remove_stale_tmp``); :func:`write_tables` replaces each
table and ``run.json`` atomically.  :data:`RUN_SCHEMA` is the part of
``run.json`` read back (:func:`history`, :mod:`refimpl.experiments.report`).

Derived in: book/10_running_experiments.md#run-cli
"""

from __future__ import annotations

import csv
import functools
import io
import os
import warnings
from pathlib import Path

import numpy as np

from .. import _io
from .. import _jsonfile as js
from ..exceptions import DataError
from .config import KS

__all__ = [
    "HISTORY_KEYS",
    "history",
    "prepare_output",
    "select_best",
    "summarize",
    "write_tables",
]


# --------------------------------------------------------------------------
# Selection and summary
# --------------------------------------------------------------------------

def select_best(rows, metric):
    """The row of ``rows`` with the largest ``val_<metric>``, or ``None``.

    Failed tasks are skipped; a NaN counts as minus infinity; ties go to the
    first row (the grid's order).
    """
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


def summarize(selected, plan, task_rows):
    """The ``summary`` table: per method of ``plan``, the mean and standard
    deviation over folds of the ``selected`` rows, and the grid's totals
    from ``task_rows``."""
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


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------

def _check_writable(folder, parameter):
    """Create ``folder`` if needed and prove a file can be written in it.

    Raises
    ------
    DataError
        Naming ``parameter`` and the folder, with the system's reason
        (not a directory, read-only, no permission, no space).
    """
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(_io.open_directory(folder))
        tmp = folder / f".probe.{os.getpid()}-{os.urandom(6).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
    except OSError as err:
        reason = err.strerror or str(err)
        raise DataError(
            f"{parameter}: cannot write into {folder} ({reason}); give a "
            "folder that can be created and written, nothing was fitted"
        ) from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)


def prepare_output(out_dir, plan, stage_cache):
    """Every folder the run writes, created and checked before the first fit.

    The tables and ``run.json`` go to ``out_dir``, the fingerprint memo to
    ``out_dir/cache``, each method's entries to ``out_dir/cache/<method>``
    and a multi-stage estimator's first stages to ``stage_cache``: a run
    whose results could not be written fails here, not after its fits.
    Temporary files of killed writes in these folders are removed.
    """
    cache = out_dir / "cache"
    ours = [out_dir, cache, *(cache / m.name for m in plan.methods)]
    # joblib's memory manages its own files in the stage cache
    stages = [] if stage_cache is None else [Path(stage_cache)]
    for folder in ours + stages:
        _check_writable(folder, f"out (--out) {os.fspath(plan.config.out)!r}")
    for folder in ours:
        _io.remove_stale_tmp(folder)


def _write_csv(binary, rows):
    """``rows`` as UTF-8 CSV into the open binary file ``binary`` (nothing
    if there is no row)."""
    if not rows:
        return
    f = io.TextIOWrapper(binary, encoding="utf-8", newline="")
    columns = []
    for row in rows:
        for k in row:
            if k not in columns:
                columns.append(k)
    writer = csv.DictWriter(f, fieldnames=columns, restval="")
    writer.writeheader()
    for row in rows:
        # 10 significant digits: far below any difference discussed,
        # and half the size of repr()
        writer.writerow({k: (f"{v:.10g}" if isinstance(v, float) else v)
                         for k, v in row.items()})
    f.flush()
    f.detach()          # the caller closes ``binary``


def write_tables(out_dir, tables, info):
    """The four tables and ``run.json``, each replaced atomically."""
    try:
        for name, rows in tables.items():
            _io.atomic_write(out_dir / f"{name}.csv",
                             functools.partial(_write_csv, rows=rows))
        _io.atomic_write_json(out_dir / "run.json", info, indent=1, default=repr)
    except OSError as err:
        raise DataError(
            f"cannot write the tables into {out_dir} ({type(err).__name__}: "
            f"{err}); the fits stored in {out_dir / 'cache'} are re-used by "
            "a re-run"
        ) from None


#: The fields of ``run.json`` each entry of its ``history`` keeps.
HISTORY_KEYS = ("started_utc", "wall_time_s", "n_tasks", "n_fitted", "n_cached",
                 "n_failed")


#: The fields of ``run.json`` read back (:mod:`refimpl._jsonfile` schema).
RUN_SCHEMA = js.record({"dataset": js.string()}, optional={
    "history": js.list_of(js.record()),
    "config": js.record({"methods": js.anything(), "n_jobs": js.anything(),
                         "backend": js.anything()}),
})


def history(path, info):
    """Earlier invocations that fitted something, plus this one if it did.

    A re-run served from the cache rewrites the tables but is not a new
    production run; the history says when and how the cached fits were made.
    """
    past = []
    try:
        old = js.read_json(path, RUN_SCHEMA)
        if old["dataset"] == info["dataset"] and old.get("history"):
            past = old["history"]
        elif old["dataset"] == info["dataset"] and "config" in old:
            past = [{**{k: old.get(k) for k in HISTORY_KEYS},
                     "methods": old["config"]["methods"],
                     "n_jobs": old["config"]["n_jobs"],
                     "backend": old["config"]["backend"]}]
    except FileNotFoundError:
        past = []
    except js.MalformedFileError as err:
        warnings.warn(f"{path}: the history of earlier runs is not readable "
                      f"({err.problem}); it starts again with this run",
                      RuntimeWarning, stacklevel=3)
        past = []
    if info["n_fitted"]:
        past = [*past, {**{k: info[k] for k in HISTORY_KEYS},
                        "methods": info["config"]["methods"],
                        "n_jobs": info["config"]["n_jobs"],
                        "backend": info["config"]["backend"]}]
    return past
