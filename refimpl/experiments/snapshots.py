"""Real-data results that every reader sees, with or without the data.

A chapter's "Real data" section either shows numbers the experiment runner
produced (the papers' protocols: :func:`runner_results` reads the committed
tables ``results/<dataset>/``) or numbers of its own (data statistics,
eigenvalues, tables the runner does not make: :func:`snapshot` keeps them in
a committed JSON file ``results/book/<name>.json``).  In both cases:

* the data set is **absent**: the committed numbers are returned and a
  printed note says so, with where they come from;
* the data set is **present**: the numbers are computed live and compared
  with the committed ones within a stated tolerance; a disagreement raises
  :class:`SnapshotMismatchError` (a snapshot that does not exist yet, or any
  snapshot when ``REFIMPL_UPDATE_SNAPSHOTS=1``, is written instead).

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__
from .. import _io
from .. import _jsonfile as js
from .. import data as _data
from .. import metrics as _metrics
from ..exceptions import DataError, DatasetNotFoundError
from .registry import METHODS
from .report import load_results
from .folds import load_fold

__all__ = [
    "ROOT",
    "UPDATE_ENV",
    "Snapshot",
    "SnapshotMismatchError",
    "committed_snapshot",
    "compare_values",
    "data_available",
    "runner_results",
    "snapshot",
]

#: The repository (the parent of the package directory).
ROOT = Path(__file__).resolve().parents[2]
#: Set to ``1`` to rewrite every snapshot from live data.
UPDATE_ENV = "REFIMPL_UPDATE_SNAPSHOTS"
_WIDTH = 79


class SnapshotMismatchError(AssertionError):
    """Live results disagree with the committed ones beyond the tolerance.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """


def _show(path) -> str:
    """``path`` relative to the repository when inside it."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _say(text, out):
    out("\n".join(textwrap.wrap(text, _WIDTH, break_on_hyphens=False)))


def _absent_note(dataset, what) -> str:
    return (f"{dataset} is not available here (set LETOR_HOME, or fetch it "
            f"with refimpl.datasets.fetch_letor('{dataset}')): showing {what}.")


def data_available(dataset="MQ2008", root=None) -> bool:
    """Whether fold 1 of ``dataset`` can be loaded (``root`` or ``LETOR_HOME``).

    Only a data set that is not there counts as absent: a damaged file still
    raises its own error.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    try:
        _data.load_letor_fold(dataset, 1, root=root)
    except DatasetNotFoundError:
        return False
    return True


def _plain(value, where="value"):
    """JSON-ready copy: numpy scalars and arrays to Python, tuples to lists."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: snapshot keys must be strings, got {k!r}")
            out[k] = _plain(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{where}: cannot store {type(value).__name__} in a snapshot")


def _differences(live, stored, tol, where, out):
    """Append (place, message) for every disagreement beyond ``tol``."""
    if isinstance(stored, dict) or isinstance(live, dict):
        if not (isinstance(stored, dict) and isinstance(live, dict)):
            out.append((where, "one is a mapping, the other is not"))
        elif set(stored) != set(live):
            out.append((where, (f"keys differ: live {sorted(live)}, "
                                f"committed {sorted(stored)}")))
        else:
            for k in stored:
                _differences(live[k], stored[k], tol, f"{where}[{k!r}]", out)
    elif isinstance(stored, list) or isinstance(live, list):
        if not (isinstance(stored, list) and isinstance(live, list)) \
                or len(stored) != len(live):
            out.append((where, "lengths differ"))
        else:
            for i, (a, b) in enumerate(zip(live, stored)):
                _differences(a, b, tol, f"{where}[{i}]", out)
    elif isinstance(stored, float) or isinstance(live, float):
        if not isinstance(live, (int, float)) or not isinstance(stored, (int, float)) \
                or isinstance(live, bool) or isinstance(stored, bool):
            out.append((where, f"live {live!r}, committed {stored!r}"))
        elif math.isnan(stored) or math.isnan(live):
            if not (math.isnan(stored) and math.isnan(live)):
                out.append((where, f"live {live!r}, committed {stored!r}"))
        elif not abs(live - stored) <= tol:
            out.append((where, (f"live {live!r}, committed {stored!r}, "
                                f"|diff| {abs(live - stored):.2e} > {tol:g}")))
    elif live != stored:
        out.append((where, f"live {live!r}, committed {stored!r}"))


def compare_values(live, stored, tol):
    """Where ``live`` and ``stored`` disagree.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    live, stored : JSON-like
        Nested dicts and lists of numbers, strings, booleans and None.
    tol : float or dict
        Largest absolute difference allowed between two floats.  A dict maps
        top-level keys to their tolerance; a key mapped to ``None`` is not
        compared (its value depends on the machine), a key not in the dict
        is compared exactly.  Integers, strings and the structure are always
        compared exactly (NaN equals NaN).

    Returns
    -------
    list of (str, str)
        The place (e.g. ``"['eigs'][2]"``) and what differs, empty when they
        agree.
    """
    out = []
    if isinstance(tol, dict):
        if not (isinstance(live, dict) and isinstance(stored, dict)):
            raise TypeError("a per-key tolerance needs dict values")
        unknown = set(tol) - set(stored) - set(live)
        if unknown:
            raise KeyError(f"tolerance for keys that are not in the values: {sorted(unknown)}")
        if set(live) != set(stored):
            return [("", f"keys differ: live {sorted(live)}, committed {sorted(stored)}")]
        for k in stored:
            t = tol.get(k, 0.0)
            if t is not None:
                _differences(live[k], stored[k], float(t), f"[{k!r}]", out)
    else:
        _differences(live, stored, float(tol), "", out)
    return out


def _file_hashes(dataset, root) -> dict:
    base = _data.letor_home(root) / dataset
    out = {}
    for p in sorted(base.rglob("*")):
        rel = p.relative_to(base)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out[str(rel)] = _io.file_hash(p)
    return out


_SNAPSHOT_SCHEMA = js.record({
    "provenance": js.record({"computed_utc": js.string(), "refimpl": js.string(),
                             "dataset": js.string()}),
    "values": js.mapping(js.anything()),
})


def _read_snapshot(path: Path, dataset: str) -> dict:
    """A committed snapshot, checked against its schema.

    Raises :class:`~refimpl.exceptions.DataError` naming the file and the
    remedy when it is malformed.
    """
    try:
        return js.read_json(path, _SNAPSHOT_SCHEMA)
    except js.MalformedFileError as exc:
        raise DataError(
            f"snapshot {_show(path)} is damaged ({exc.problem}): restore the "
            f"committed copy (git checkout -- {_show(path)}), or recompute it "
            f"where {dataset} is available with {UPDATE_ENV}=1"
        ) from None


@dataclass
class Snapshot:
    """Values of one real-data computation and where they come from.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Attributes
    ----------
    name : str
    path : pathlib.Path
        The committed JSON file.
    values : dict
        The live values when the data set is present, else the committed
        ones (lists where the computation returned arrays or tuples).
    provenance : dict
        Of the committed file: ``computed_utc``, ``refimpl``, ``dataset``,
        ``data_files`` (sha256 of every file of the data set), ``tolerance``.
    live : bool
        Whether ``values`` were computed now.
    """

    name: str
    path: Path
    values: dict
    provenance: dict = field(default_factory=dict)
    live: bool = False

    def __getitem__(self, key):
        return self.values[key]


def snapshot(name, compute, *, dataset="MQ2008", tol=1e-9, directory=None,
             root=None, update=None, out=print) -> Snapshot:
    """Compute real-data values live, or show the committed ones.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    name : str
        File stem: the snapshot is ``<directory>/<name>.json``.
    compute : callable
        Called without arguments when ``dataset`` is present; returns a dict
        of numbers, strings, lists or arrays (keys are strings).
    dataset : str, default "MQ2008"
    tol : float or dict, default 1e-9
        See :func:`compare_values`; state it where the chapter relies on it.
    directory : path-like, optional
        Default ``results/book`` of the repository.
    root : path-like, optional
        LETOR root (default ``LETOR_HOME``).
    update : bool, optional
        Rewrite the snapshot from the live values; default: the environment
        variable ``REFIMPL_UPDATE_SNAPSHOTS`` is ``1``.
    out : callable, default print
        Receives the note (lines of at most 79 characters).

    Returns
    -------
    Snapshot

    Raises
    ------
    SnapshotMismatchError
        Live values differ from the committed ones beyond ``tol``.
    FileNotFoundError
        The data set is absent and no snapshot was committed; the message
        names the file.
    """
    directory = Path(directory) if directory is not None else ROOT / "results" / "book"
    path = directory / f"{name}.json"
    if update is None:
        update = os.environ.get(UPDATE_ENV, "") == "1"
    if not data_available(dataset, root):
        if not path.is_file():
            raise FileNotFoundError(
                f"{_show(path)}: no committed snapshot {name!r}, and {dataset} is "
                f"not available to compute it.  {_absent_note(dataset, 'nothing')}")
        stored = _read_snapshot(path, dataset)
        prov = stored["provenance"]
        _say(_absent_note(dataset, f"the committed results of {_show(path)}, "
                                   f"computed {prov['computed_utc'][:10]} by refimpl "
                                   f"{prov['refimpl']}"), out)
        return Snapshot(name, path, stored["values"], prov, live=False)
    values = _plain(compute())
    if not isinstance(values, dict):
        raise TypeError(f"snapshot {name!r}: compute() must return a dict")
    stored = None
    if not update and path.is_file():
        try:
            stored = _read_snapshot(path, dataset)
        except DataError as exc:
            # the live values can rebuild it; the warning says so
            warnings.warn(f"{exc}; it is rewritten from the live values",
                          RuntimeWarning, stacklevel=2)
    if stored is None:
        prov = {"name": name, "dataset": dataset,
                "computed_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "refimpl": __version__, "numpy": np.__version__,
                "python": platform.python_version(),
                "data_files": _file_hashes(dataset, root),
                "tolerance": tol}
        compare_values(values, values, tol)           # checks the tolerance keys
        # durable: a snapshot is committed with the book
        _io.atomic_write_json(path, {"provenance": prov, "values": values},
                              durable=True, indent=1, allow_nan=True)
        _say(f"{dataset}: computed live; wrote {_show(path)}.", out)
        return Snapshot(name, path, values, prov, live=True)
    prov = stored["provenance"]
    bad = compare_values(values, stored["values"], tol)
    if bad:
        lines = "\n".join(f"  {w}: {m}" for w, m in bad[:10])
        raise SnapshotMismatchError(
            f"{dataset} live results disagree with {_show(path)} (computed "
            f"{prov['computed_utc'][:10]} by refimpl {prov['refimpl']}) in "
            f"{len(bad)} place(s):\n{lines}\nIf the change is intended, "
            f"rerun with {UPDATE_ENV}=1 and commit the file.")
    _say(f"{dataset}: computed live; agrees with {_show(path)} (computed "
         f"{prov['computed_utc'][:10]} by refimpl {prov['refimpl']}) within "
         f"{_tol_text(tol, values)}.", out)
    return Snapshot(name, path, values, prov, live=True)


def committed_snapshot(name, *, directory=None, out=print) -> Snapshot:
    """The committed values of a snapshot, without computing anything.

    For results too long to recompute in a chapter (a full protocol over
    five folds): the chapter shows the committed file and says so; the
    computation is re-run on purpose with :func:`snapshot` and
    ``REFIMPL_UPDATE_SNAPSHOTS=1``, and its code is tested elsewhere.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    name : str
        File stem: ``<directory>/<name>.json``.
    directory : path-like, optional
        Default ``results/book`` of the repository.
    out : callable, default print
        Receives the note (lines of at most 79 characters).

    Returns
    -------
    Snapshot
        With ``live=False``.

    Raises
    ------
    FileNotFoundError
        No such snapshot was committed; the message names the file.
    """
    directory = Path(directory) if directory is not None else ROOT / "results" / "book"
    path = directory / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{_show(path)}: no committed snapshot {name!r}")
    stored = _read_snapshot(path, "its data set")
    prov = stored["provenance"]
    _say(f"Showing the committed results of {_show(path)}, computed "
         f"{prov['computed_utc'][:10]} on {prov['dataset']} by refimpl "
         f"{prov['refimpl']} (not re-run here).", out)
    return Snapshot(name, path, stored["values"], prov, live=False)


def _tol_text(tol, keys) -> str:
    if not isinstance(tol, dict):
        return f"{float(tol):g}"
    parts = [f"{k}: " + ("not compared" if t is None else f"{t:g}")
             for k, t in tol.items()]
    if set(keys) - set(tol):
        parts.append("the rest exactly")
    return "; ".join(parts)


def runner_results(dataset="MQ2008", *, check=(), fold=1, tol=5e-3,
                   metrics=("MAP", "NDCG@10", "MeanNDCG"), directory=None,
                   root=None, out=print) -> dict:
    """The committed runner tables of ``dataset``, checked live if possible.

    With the data set absent, prints a note and returns the committed
    tables.  With it present, refits the selected setting of ``fold`` of
    each method in ``check`` exactly as the runner does (the registry's
    estimator with the selected parameters and the fixed ones) and compares
    its test ``metrics`` with the committed row.  The default ``tol`` is
    there because the solvers stop early (TRON at
    ``||grad f(w)|| <= eps ||grad f(0)||``, FISTA at a gradient-mapping
    tolerance, FenchelRank after 1000 iterations): the stopping point
    moves inside the ball the rule allows with the summation order of the
    BLAS kernel, and test metrics, step functions of the scores, follow it
    (chapter 7 measures 8e-4 in mean NDCG between three OpenBLAS kernels;
    a change of summation order in the library's kernels does the same).

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    dataset : str, default "MQ2008"
    check : str or sequence of str
        Methods to refit; empty: no live check.
    fold : int, default 1
    tol : float, default 5e-3
        Largest absolute difference allowed in each test metric.
    metrics : sequence of str
        Test metrics compared (columns ``test_<metric>`` of selected.csv).
    directory : path-like, optional
        Default ``results/<dataset>`` of the repository.
    root : path-like, optional
        LETOR root (default ``LETOR_HOME``).
    out : callable, default print

    Returns
    -------
    dict
        As :func:`refimpl.experiments.report.load_results`.

    Raises
    ------
    SnapshotMismatchError
        A refitted setting's test metrics differ beyond ``tol``.
    """
    directory = Path(directory) if directory is not None else ROOT / "results" / dataset
    res = load_results(directory)
    when = res["run"]["history"][-1]["started_utc"][:10] if res["run"].get("history") \
        else res["run"].get("started_utc", "?")[:10]
    where = (f"the committed runner results of {_show(directory)}/, run {when} by "
             f"refimpl {res['run']['versions']['refimpl']}")
    if isinstance(check, str):
        check = (check,)
    if not data_available(dataset, root):
        _say(_absent_note(dataset, where), out)
        return res
    if not check:
        _say(f"{dataset} is available: showing {where} (not re-run here).", out)
        return res
    split = load_fold(dataset, fold, root=root)
    worst = 0.0
    for method in check:
        rows = [s for s in res["selected"] if s["method"] == method and s["fold"] == fold]
        if len(rows) != 1:
            raise KeyError(f"{_show(directory)}/selected.csv has {len(rows)} rows "
                           f"for method {method!r}, fold {fold}")
        row = rows[0]
        est = METHODS[method].build(json.loads(row["params"]))
        with warnings.catch_warnings():
            # fixed budgets and PSD projections warn; the tables record them
            warnings.simplefilter("ignore")
            est.fit(*split.train)
        live = _metrics.evaluate(split.test.y, est.predict(split.test.X),
                                 split.test.qid, ks=range(1, 11))
        for m in metrics:
            diff = abs(live[m] - row[f"test_{m}"])
            worst = max(worst, diff)
            if not diff <= tol:
                raise SnapshotMismatchError(
                    f"{method} Fold{fold} {row['params']}: live test {m} "
                    f"{live[m]:.6f}, committed {row[f'test_{m}']:.6f} in "
                    f"{_show(directory)}/selected.csv (|diff| {diff:.2e} > {tol:g})")
    _say(f"{dataset} is available: showing {where}; the selected Fold{fold} "
         f"setting of {', '.join(check)} refitted now agrees with it (test "
         f"{', '.join(metrics)}: largest |diff| {worst:.1e}, tolerance {tol:g}).", out)
    return res
