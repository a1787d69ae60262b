"""Regularisation paths of the sparse RankSVMs: test MAP against sparsity.

The runner (``python -m refimpl run``) fits the registry's ``ranksvm-l1``,
``ranksvm-log``, ``ranksvm-mcp`` and ``ranksvm-lp`` on six values of ``C``
and keeps the one with the best validation MAP (Laporte et al. 2014,
Section V-C).  This module fits the same estimators, with the registry's
fixed settings, on a whole path of ``C`` (the registry's grid and a finer
one, :data:`PATH_CS`) and records at every point the validation and test
MAP and NDCG@10 and the sparsity under every definition the paper might
mean (:func:`sparsity_measures`).  The case study on non-convex penalties
plots the committed tables ``results/MQ2008/penalty_paths.csv`` and
``results/OHSUMED/penalty_paths.csv`` and uses them to locate the paper's
reported sparsity on our paths.

Command line (the committed tables; ``--out`` defaults to
``results/<dataset>/penalty_paths.csv``)::

    python -m refimpl.experiments.penalty_paths --dataset MQ2008 --n-jobs 2
    python -m refimpl.experiments.penalty_paths --dataset OHSUMED --n-jobs 2

Derived in: book/case_nonconvex.md#dc-paths
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import warnings
from pathlib import Path

import numpy as np

from .. import metrics as _metrics
from ..estimators.sparse import ranksvm_l1_path
from ..exceptions import ParameterError
from .registry import get_method

__all__ = ["COLUMNS", "PATH_CS", "PENALTY_METHODS", "REGISTRY_CS", "load_paths",
           "penalty_path", "run_paths", "select_by_validation",
           "sparsity_measures", "write_paths"]

#: Penalty name -> registry method (its fixed settings are used unchanged).
PENALTY_METHODS = {"l1": "ranksvm-l1", "log": "ranksvm-log",
                   "mcp": "ranksvm-mcp", "lp": "ranksvm-lp"}
#: The registry's grid of ``C`` (the runner's selection runs on it).
REGISTRY_CS = tuple(get_method("ranksvm-l1").grid["C"])


def _path_cs():
    """8 values per decade on [1e-5, 1e2], 16 per decade on [1e-4, 1e-1]
    (where the number of features grows from 1 to 30), and the registry's
    values exactly."""
    ks = {k / 8 for k in range(-40, 17)} | {k / 16 for k in range(-64, -15)}
    # whole decades written exactly (1e-4, not 10.0 ** -4.0's last bits)
    cs = {float(f"1e{round(e)}") if e == round(e) else float(10.0 ** e) for e in ks}
    return tuple(sorted(cs | set(REGISTRY_CS)))


#: The path: every ``C`` fitted, in increasing order.
PATH_CS = _path_cs()
#: Relative threshold of ``nnz_rel``: weights above this fraction of max |w|.
REL = 1e-2
#: Columns of the table, in order.
COLUMNS = ("penalty", "method", "fold", "C", "registry", "val_MAP",
           "val_NDCG@10", "test_MAP", "test_NDCG@10", "nnz", "nnz_rel",
           "n_features", "n_train_nonzero", "n_train_varying", "sparsity",
           "sparsity_all", "sparsity_varying", "sparsity_rel", "removed",
           "n_iter", "n_outer", "converged")


def sparsity_measures(coef, X, qid, rel=REL):
    """The sparsity of ``coef`` under each definition the paper might use.

    Laporte et al. (2014, Section V-B) define the sparsity ratio as the
    fraction of the data set's features that remain in the model, not
    counting "features that are zero for all the queries".  Which features
    are excluded, and what "remaining" means, admits several readings:

    * ``sparsity``: nonzero weights among the features not identically zero
      on the training split, over their number (the runner's ``sparsity``);
    * ``sparsity_all``: nonzero weights over all ``n_features`` (the
      runner's ``sparsity_all``);
    * ``sparsity_varying``: among the features that vary inside at least
      one training query (a feature constant within every query has zero
      pair differences, so no pairwise loss can use it);
    * ``sparsity_rel``: weights with ``|w_j| > rel * max|w|`` among the
      features of ``sparsity`` (negligible weights not counted, as a
      thresholding implementation would);
    * ``removed``: ``1 - sparsity``, the fraction of features set to zero
      (the paper's Fig. 2 plots this one).

    Derived in: book/case_nonconvex.md#dc-paths

    Parameters
    ----------
    coef : array of shape (n_features,)
    X : array or sparse matrix of shape (n_samples, n_features)
        The training features.
    qid : array of shape (n_samples,)
    rel : float, default 1e-2
        In [0, 1).

    Returns
    -------
    dict
        The measures above and the counts ``nnz``, ``nnz_rel``,
        ``n_features``, ``n_train_nonzero``, ``n_train_varying``.
    """
    coef = np.asarray(coef, dtype=np.float64)
    if coef.ndim != 1 or not np.all(np.isfinite(coef)):
        raise ParameterError("coef must be a finite 1-d array")
    if not (0.0 <= float(rel) < 1.0):
        raise ParameterError(f"rel must be in [0, 1), got {rel!r}")
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
    qid = np.asarray(qid).ravel()
    if X.ndim != 2 or X.shape[1] != coef.size or qid.size != X.shape[0]:
        raise ParameterError(
            f"X must have shape (len(qid), coef.size) = ({qid.size}, {coef.size}), "
            f"got {X.shape}")
    nonzero = np.any(X != 0, axis=0)
    order = np.argsort(qid, kind="stable")
    Xs, qs = X[order], qid[order]
    starts = np.flatnonzero(np.r_[True, qs[1:] != qs[:-1]])
    hi = np.maximum.reduceat(Xs, starts, axis=0)
    lo = np.minimum.reduceat(Xs, starts, axis=0)
    varying = np.any(hi > lo, axis=0)
    used = coef != 0
    big = np.abs(coef) > rel * np.abs(coef).max() if used.any() else used

    def frac(mask, among):
        return float(mask[among].sum() / among.sum()) if among.any() else math.nan

    sparsity = frac(used, nonzero)
    return {"nnz": int(used.sum()), "nnz_rel": int(big.sum()),
            "n_features": int(coef.size), "n_train_nonzero": int(nonzero.sum()),
            "n_train_varying": int(varying.sum()), "sparsity": sparsity,
            "sparsity_all": float(used.mean()) if coef.size else math.nan,
            "sparsity_varying": frac(used, varying),
            "sparsity_rel": frac(big, nonzero), "removed": 1.0 - sparsity}


def _check_cs(Cs):
    Cs = np.asarray(Cs, dtype=np.float64).ravel()
    if Cs.size == 0 or not np.all(np.isfinite(Cs) & (Cs > 0)):
        raise ParameterError(f"Cs must be a non-empty sequence of finite numbers > 0, "
                             f"got {Cs!r}")
    if np.unique(Cs).size != Cs.size:
        raise ParameterError("Cs must not repeat a value")
    return Cs


def _l1_fits(method, train, Cs, warm_start):
    """RankSVM-l1 along ``Cs`` by :func:`ranksvm_l1_path` with the registry's
    settings: each solve stops at the cold start's certified tolerance."""
    fixed = dict(method.fixed)
    if fixed.pop("penalty") != "l1" or set(fixed) - {"tol", "max_iter", "solver"}:
        raise ParameterError(f"{method.name}: fixed settings {method.fixed} are not "
                             "those ranksvm_l1_path takes")
    coefs, results = ranksvm_l1_path(*train, Cs=Cs, warm_start=warm_start, **fixed)
    return [(w, r.n_iter, 1, bool(r.converged)) for w, r in zip(coefs, results)]


def _cold_fits(method, train, Cs):
    """The registry's estimator at each ``C``, from its own start (for the
    non-convex penalties: its l1 pass at that ``C``), exactly as the runner
    fits it."""
    out = []
    for C in Cs:
        est = method.build({"C": float(C)}).fit(*train)
        out.append((est.coef_, int(est.n_iter_), int(getattr(est, "n_outer_", 1)),
                    bool(est.converged_)))
    return out


def penalty_path(penalty, train, vali, test, Cs=PATH_CS, *, warm_start=True,
                 fold=0, rel=REL, return_coefs=False):
    """Fit one penalty along ``Cs``; metrics and sparsity at every point.

    ``"l1"`` (convex) is solved along the path from the smallest ``C`` up,
    each solve warm-started at the previous solution when ``warm_start``
    and stopped where a cold start would be (see
    :func:`~refimpl.estimators.sparse.ranksvm_l1_path`): the same minimiser
    within the stopping tolerance.  The non-convex penalties are always
    fitted cold: Algorithm 2 from another start may end at another
    stationary point, so a warm start would change the answer, not only
    the work.

    Derived in: book/case_nonconvex.md#dc-paths

    Parameters
    ----------
    penalty : {"l1", "log", "mcp", "lp"}
        Fitted with the registry's method :data:`PENALTY_METHODS` and its
        fixed settings.
    train, vali, test : tuple of (X, y, qid)
    Cs : sequence of float, default :data:`PATH_CS`
        Finite, > 0, no repeats; any order.
    warm_start : bool, default True
    fold : int, default 0
        Stored in the rows.
    rel : float, default 1e-2
        See :func:`sparsity_measures`.
    return_coefs : bool, default False
        Also return the weights.

    Returns
    -------
    rows : list of dict
        One row per ``C``, in the order of ``Cs``, with :data:`COLUMNS`.
    coefs : ndarray of shape (len(Cs), n_features)
        Only with ``return_coefs``.
    """
    if penalty not in PENALTY_METHODS:
        raise ParameterError(f"penalty must be one of {tuple(PENALTY_METHODS)}, "
                             f"got {penalty!r}")
    Cs = _check_cs(Cs)
    if not (0.0 <= float(rel) < 1.0):
        raise ParameterError(f"rel must be in [0, 1), got {rel!r}")
    method = get_method(PENALTY_METHODS[penalty])
    with warnings.catch_warnings():
        # an empty model below the first C that selects anything is a point
        # of the path, not a failure; non-convergence is in the row
        warnings.simplefilter("ignore")
        fits = (_l1_fits(method, train, Cs, bool(warm_start)) if penalty == "l1"
                else _cold_fits(method, train, Cs))
    rows = []
    for C, (w, n_iter, n_outer, conv) in zip(Cs, fits):
        row = {"penalty": penalty, "method": method.name, "fold": int(fold),
               "C": float(C), "registry": bool(float(C) in REGISTRY_CS)}
        for prefix, (X, y, qid) in (("val", vali), ("test", test)):
            m = _metrics.evaluate(y, np.asarray(X @ w, dtype=np.float64), qid,
                                  ks=(10,))
            row[f"{prefix}_MAP"] = float(m["MAP"])
            row[f"{prefix}_NDCG@10"] = float(m["NDCG@10"])
        row.update(sparsity_measures(w, train[0], train[2], rel=rel))
        row.update(n_iter=int(n_iter), n_outer=int(n_outer), converged=conv)
        rows.append({k: row[k] for k in COLUMNS})
    if return_coefs:
        return rows, np.array([f[0] for f in fits], dtype=np.float64)
    return rows


def _fold_paths(dataset, fold, penalties, Cs, warm_start, root):
    from .folds import load_fold
    f = load_fold(dataset, fold, root=root)
    return [row for p in penalties
            for row in penalty_path(p, f.train, f.vali, f.test, Cs,
                                    warm_start=warm_start, fold=fold)]


def run_paths(dataset="MQ2008", folds=(1, 2, 3, 4, 5), penalties=tuple(PENALTY_METHODS),
              Cs=PATH_CS, *, warm_start=True, n_jobs=1, root=None):
    """:func:`penalty_path` of every penalty on every fold of ``dataset``.

    Derived in: book/case_nonconvex.md#dc-paths

    Parameters
    ----------
    dataset : str, default "MQ2008"
    folds : sequence of int
    penalties : sequence of str
    Cs : sequence of float, default :data:`PATH_CS`
    warm_start : bool, default True
    n_jobs : int, default 1
        joblib processes, one fold each.
    root : path-like, optional
        LETOR root (default ``LETOR_HOME``).

    Returns
    -------
    list of dict
        Sorted by penalty (in :data:`PENALTY_METHODS` order), fold and ``C``.
    """
    from joblib import Parallel, delayed
    bad = [p for p in penalties if p not in PENALTY_METHODS]
    if bad or not penalties:
        raise ParameterError(f"penalties must be a non-empty subset of "
                             f"{tuple(PENALTY_METHODS)}, got {penalties!r}")
    if int(n_jobs) < 1:
        raise ParameterError(f"n_jobs must be >= 1, got {n_jobs!r}")
    Cs = tuple(float(c) for c in _check_cs(Cs))
    parts = Parallel(n_jobs=int(n_jobs))(
        delayed(_fold_paths)(dataset, int(k), tuple(penalties), Cs, warm_start, root)
        for k in folds)
    rank = {p: i for i, p in enumerate(PENALTY_METHODS)}
    return sorted((r for part in parts for r in part),
                  key=lambda r: (rank[r["penalty"]], r["fold"], r["C"]))


def write_paths(rows, path):
    """Write :func:`run_paths`' rows as CSV (floats in full precision).

    Derived in: book/case_nonconvex.md#dc-paths
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for row in rows:
            w.writerow({k: repr(v) if isinstance(v, float) else v
                        for k, v in row.items()})


def load_paths(path=None, *, dataset="MQ2008"):
    """The committed path table (default ``results/<dataset>/penalty_paths.csv``).

    Derived in: book/case_nonconvex.md#dc-paths

    Parameters
    ----------
    path : path-like, optional
        Overrides the default file.
    dataset : str, default "MQ2008"
        Names the default file's directory.

    Returns
    -------
    list of dict
        As :func:`run_paths` returned them.
    """
    from .report import read_csv
    from .snapshots import ROOT
    path = Path(path) if path is not None else ROOT / "results" / dataset / \
        "penalty_paths.csv"
    return read_csv(path)


def select_by_validation(rows, Cs=REGISTRY_CS, metric="MAP"):
    """The runner's selection restricted to ``Cs``: per (penalty, fold), the
    row with the best validation ``metric``, the first in increasing ``C``
    on ties.

    Derived in: book/case_nonconvex.md#dc-paths

    Returns
    -------
    dict
        ``{(penalty, fold): row}``.
    """
    keep = {float(c) for c in Cs}
    best = {}
    for r in sorted(rows, key=lambda r: r["C"]):
        if float(r["C"]) not in keep:
            continue
        key = (r["penalty"], int(r["fold"]))
        if key not in best or r[f"val_{metric}"] > best[key][f"val_{metric}"]:
            best[key] = r
    return best


def _main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="MQ2008")
    ap.add_argument("--out", default=None)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--cold", action="store_true", help="no warm starts for l1")
    args = ap.parse_args(argv)
    out = args.out or os.path.join("results", args.dataset, "penalty_paths.csv")
    rows = run_paths(args.dataset, warm_start=not args.cold, n_jobs=args.n_jobs)
    write_paths(rows, out)
    print(f"{len(rows)} rows -> {out}")


if __name__ == "__main__":
    _main()
