"""Reading the runner's tables back and setting them beside the papers.

Derived in: book/08_side_by_side.md#side-by-side
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

from .. import _io
from .. import _jsonfile as js
from ..exceptions import DataError
from .tables import RUN_SCHEMA

__all__ = ["holm_adjusted", "load_results", "paired_ttest", "paper_comparison",
           "paper_values", "per_query_se", "read_csv"]

#: The values the five papers report, one row per value (its table, folds
#: and metric); the method chapters and chapter 8 read it.
PAPER_VALUES = Path(__file__).resolve().parents[2] / "results" / "paper_values.csv"


def _parse(value):
    if value == "":
        return None
    if value in ("True", "False"):
        return value == "True"
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def read_csv(path):
    """A CSV file as a list of dicts, numbers and booleans parsed.

    Empty cells become ``None``.

    Derived in: book/08_side_by_side.md#side-by-side

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    DataError
        ``path`` is not a regular file (a FIFO, a directory, ...), not UTF-8
        or not CSV; the message names it.
    """
    try:
        with io.TextIOWrapper(_io.open_regular(path), encoding="utf-8",
                              newline="") as f:
            return [{k: _parse(v) for k, v in row.items()}
                    for row in csv.DictReader(f)]
    except (UnicodeDecodeError, csv.Error) as err:
        raise DataError(f"{path}: not a CSV table ({type(err).__name__}: "
                        f"{str(err)[:200]})") from None


def load_results(path):
    """The tables one run wrote into ``<out>/<dataset>/``.

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    path : str or path-like
        The data-set directory (holding ``run.json``).

    Returns
    -------
    dict
        ``"tasks"``, ``"selected"``, ``"summary"``, ``"per_query"`` (lists
        of dicts) and ``"run"`` (the parsed ``run.json``).

    Raises
    ------
    DataError
        ``run.json`` or a table is missing, is not a regular file, or does
        not parse (``run.json`` must be an object naming its data set:
        ``refimpl._jsonfile.MalformedFileError``); the message names it.
    """
    path = Path(path)
    try:
        run_info = js.read_json(path / "run.json", RUN_SCHEMA)
    except FileNotFoundError:
        raise DataError(f"{path} holds no run.json: not a results directory "
                        "of run()") from None
    out = {}
    for name in ("tasks", "selected", "summary", "per_query"):
        try:
            out[name] = read_csv(path / f"{name}.csv")
        except FileNotFoundError:
            raise DataError(f"{path} holds run.json but no {name}.csv: the run "
                            "did not finish writing its tables") from None
    out["run"] = run_info
    return out


def holm_adjusted(p):
    """Holm's adjusted p-values of a family of tests (eq. eq-holm).

    The i-th smallest p-value becomes ``max_{j <= i} min(1, (N - j + 1)
    p_(j))``: rejecting every hypothesis whose adjusted p-value is at most
    alpha is Holm's step-down procedure, which keeps the family-wise error
    rate at most alpha whatever the dependence between the tests.  Ties
    are taken in input order (a stable sort), which gives the same
    adjusted values as any other order.

    Derived in: book/08_side_by_side.md#multiple-comparisons

    Parameters
    ----------
    p : array-like of float, 1-d
        The p-values, each in [0, 1].

    Returns
    -------
    ndarray
        The adjusted p-values, in the input's order.
    """
    p = np.asarray(p, dtype=float)
    if p.ndim != 1:
        raise DataError(f"p must be a 1-d array of p-values, not of shape {p.shape}")
    bad = ~((p >= 0) & (p <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"p[{i}] = {p[i]!r} is not a p-value in [0, 1]")
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(
        (p.size - np.arange(p.size)) * p[order]))
    return adjusted


def paired_ttest(per_query, method_a, method_b, metric="AP"):
    """Two-sided paired t-test between two methods over test queries.

    Each query is in the test split of exactly one fold, so pooling the
    folds gives one pair of values per query.

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    per_query : list of dict
        Rows of ``per_query.csv``.
    method_a, method_b : str
    metric : str, default "AP"
        ``"AP"`` or ``"NDCG@k"`` with k in 1, 3, 5, 10.

    Returns
    -------
    (float, float, float, int)
        Mean difference (a - b), t statistic, p-value and number of queries.
    """
    def values(method):
        rows = {(r["fold"], r["qid"]): r[metric] for r in per_query
                if r["method"] == method}
        if not rows:
            raise DataError(f"no per-query results for method {method!r}")
        return rows

    a, b = values(method_a), values(method_b)
    keys = sorted(set(a) & set(b))
    if len(keys) < 2:
        raise DataError(f"{method_a!r} and {method_b!r} share fewer than 2 queries")
    va = np.array([a[k] for k in keys], dtype=float)
    vb = np.array([b[k] for k in keys], dtype=float)
    diff = va - vb
    if np.all(diff == diff[0]):
        return float(diff[0]), float("nan"), float("nan") if diff[0] else 1.0, len(keys)
    res = stats.ttest_rel(va, vb)
    return float(diff.mean()), float(res.statistic), float(res.pvalue), len(keys)


def _ours(row, summary, selected, tasks):
    """Our value for one paper row, with its standard error over folds."""
    metric = row["metric"]
    own = ("sparsity", "sparsity_all", "fit_time", "cpu_time", "nnz")
    col = metric if metric in own else f"test_{metric}"
    folds = str(row.get("folds") or "1-5")
    wanted = {1} if folds == "1" else {1, 2, 3, 4, 5}
    params = row.get("params")
    if params:
        want = json.loads(params)
        pool = [t for t in tasks if t["method"] == row["method"]
                and t["status"] == "ok"
                and all(json.loads(t["params"]).get(k) == v for k, v in want.items())]
        # parameters the row leaves free (SVMrank's C after LifeRank at
        # k = 10) are selected per fold as the runner selects: the best
        # validation value of the method's metric, the first in grid order
        # on ties; a row fixing every parameter keeps its one task per fold
        key = "val_" + next(s["selection_metric"] for s in summary
                            if s["method"] == row["method"])
        best = {}
        for t in sorted(pool, key=lambda t: t["grid_index"]):
            v = -np.inf if np.isnan(t[key]) else t[key]   # as the runner
            if t["fold"] not in best or v > best[t["fold"]][0]:
                best[t["fold"]] = (v, t)
        pool = [t for _, t in best.values()]
    else:
        pool = [s for s in selected if s["method"] == row["method"]]
    pool = [r for r in pool if r["fold"] in wanted]
    vals = np.array([r[col] for r in pool if r.get(col) is not None], dtype=float)
    if vals.size == 0:
        return None, None, 0
    se = float(np.std(vals, ddof=1) / math.sqrt(vals.size)) if vals.size > 1 else None
    return float(vals.mean()), se, int(vals.size)


def paper_comparison(results, paper_values, dataset=None):
    """Our numbers beside the papers', one row per reported value.

    For a paper row with ``folds = "1"`` our fold-1 value is used; with a
    ``params`` entry (JSON), the mean over folds of the tasks with those
    parameters (e.g. LifeRank at k = 10) instead of the selected models,
    the parameters the entry leaves free selected per fold on validation
    as the runner selects (SVMrank's C after LifeRank at k = 10).

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    results : dict
        From :func:`load_results`.
    paper_values : list of dict
        Rows of ``results/paper_values.csv``.
    dataset : str, optional
        Default: the run's data set.

    Returns
    -------
    list of dict
        The paper row plus ``ours``, ``ours_se`` (standard error over
        folds), ``ours_se_q`` (standard error from the per-query values,
        :func:`per_query_se`; None for a row with ``params``, whose tasks
        keep no per-query values, and for the sparsity ratios), ``n_folds``
        and ``diff = ours - paper``; methods not in the run are left out.
    """
    dataset = dataset or results["run"]["dataset"]
    present = {s["method"] for s in results["summary"]}
    out = []
    for row in paper_values:
        if row["dataset"] != dataset or row["method"] not in present:
            continue
        ours, se, n = _ours(row, results["summary"], results["selected"],
                            results["tasks"])
        col = {"MAP": "AP"}.get(row["metric"], row["metric"])
        se_q = None
        if ours is not None and not row.get("params") and col in (
                results["per_query"][0] if results["per_query"] else {}):
            folds = (1,) if str(row.get("folds") or "1-5") == "1" else None
            se_q = per_query_se(results["per_query"], row["method"], col, folds)
        out.append({**row, "ours": ours, "ours_se": se, "ours_se_q": se_q,
                    "n_folds": n,
                    "diff": None if ours is None else ours - float(row["value"])})
    return out


def per_query_se(per_query, method, metric="AP", folds=None):
    """Standard error of a method's mean over folds, from its query values.

    The tables report the mean over folds of each fold's mean over its
    test queries; the queries of a fold are a sample, so with ``s_f`` the
    standard deviation of the ``n_f`` values of fold ``f`` and ``F`` folds
    the standard error is ``sqrt(sum_f s_f^2 / n_f) / F``.  Unlike the
    spread of five fold means, it does not count the folds' differences in
    difficulty, which every method shares.

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    per_query : list of dict
        Rows of ``per_query.csv``.
    method : str
    metric : str, default "AP"
        A column of ``per_query.csv``.
    folds : sequence of int, optional
        Default: every fold with values of ``method``.

    Returns
    -------
    float

    Raises
    ------
    DataError
        A fold has fewer than two values of ``method``.
    """
    if folds is None:
        folds = sorted({r["fold"] for r in per_query if r["method"] == method})
    if not folds:
        raise DataError(f"no per-query results for method {method!r}")
    var = 0.0
    for f in folds:
        vals = np.array([r[metric] for r in per_query
                         if r["method"] == method and r["fold"] == f],
                        dtype=float)
        if vals.size < 2:
            raise DataError(f"per-query results hold {vals.size} values of "
                            f"{method!r} on fold {f}; need 2 or more")
        var += vals.var(ddof=1) / vals.size
    return float(math.sqrt(var) / len(folds))


def paper_values(dataset, paper, methods=None, tables=None, path=None):
    """The values one paper reports for one data set, by method and metric.

    A method chapter sets these beside the runner's numbers of the same
    method (``summary.csv``); rows naming no registry method (a paper's
    baselines we do not run) are left out.

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    dataset : str
        ``"MQ2008"`` or ``"OHSUMED"`` (the ``dataset`` column).
    paper : str
        The citation key in the ``paper`` column, e.g. ``"lai2013fenchelrank"``.
    methods : sequence of str, optional
        Registry methods to keep (default: every one the paper reports).
    tables : sequence of str, optional
        Tables to keep, as the ``table`` column names them (``"Table 3"``);
        default: all.  A paper's tests of one method against several
        others (FenchelRank's Tables 3 and 9) share a method and metric.
    path : path-like, optional
        Default ``results/paper_values.csv`` of the repository.

    Returns
    -------
    dict
        ``{(method, metric): value}``; empty when the file holds no row of
        ``paper`` on ``dataset``.

    Raises
    ------
    DataError
        Two rows (two tables of the paper) give one method and metric
        different values; the message names both tables.
    """
    out, where = {}, {}
    for row in read_csv(PAPER_VALUES if path is None else path):
        if row["dataset"] != dataset or row["paper"] != paper or not row["method"]:
            continue
        if methods is not None and row["method"] not in methods:
            continue
        if tables is not None and row["table"] not in tables:
            continue
        key = (row["method"], row["metric"])
        value = float(row["value"])
        if key in out and out[key] != value:
            raise DataError(f"{path or PAPER_VALUES}: {paper} reports {key[1]} of "
                            f"{key[0]} on {dataset} as {out[key]} ({where[key]}) and "
                            f"{value} ({row['table']}); pick tables=")
        out[key], where[key] = value, row["table"]
    return out
