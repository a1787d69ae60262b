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
<fold>-<key>.json``, with ``key`` a hash of everything that determines its
result: the task (data set, fold, method, parameters including fixed
settings), the feature normalisation of the run (``normalize``, when there
is one), the content of the data files it reads (a SHA-256 per file; for
a synthetic data set its generator's parameters), the source code of the
package (:func:`code_hash`) and the versions of the numerical libraries.  A
re-run loads it instead of fitting again (``cache=False`` or ``--refit`` to
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
when a run starts (those of a process that is gone, or older than an hour).
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

Derived in: book/10_running_experiments.md#run-cli
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import hashlib
import io
import json
import math
import os
import platform
import re
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__ as _REFIMPL_VERSION
from .. import _digest_memo, _io
from .. import _jsonfile as js
from .. import data as _data
from .. import metrics as _metrics
from .. import pairs as _pairs
from .._layout import fold_files
from .._validation import check_scores, ranking_problem
from ..exceptions import DataError, DatasetNotFoundError
from .registry import METHODS, SELECTION_METRICS, expand_grid, get_method
from .scale import ScaleError, check_scale

__all__ = [
    "BACKENDS",
    "ExperimentConfig",
    "RunResult",
    "code_hash",
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
#: Folds of a LETOR data set (and of the synthetic ones).
_N_FOLDS = 5
#: Layout of a cache entry; bumped when the stored fields change.
CACHE_SCHEMA = 2
#: Version of the task identity behind the tables' ``key`` column (kept, so
#: that a task keeps its ``key`` across runs and the tables stay comparable).
_TASK_KEY_VERSION = 1
_SYNTHETIC = re.compile(r"synthetic(?::([0-9]+))?(?::([0-9]+))?")
#: A LETOR data set's name: one folder under the LETOR root and under ``out``,
#: so it cannot climb (no separator, no leading dot, no ``..``).
_DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SYNTHETIC_SYNTAX = (
    "a synthetic data set is written synthetic[:QUERIES[:SEED]], QUERIES an "
    "integer >= 5 (default 200) and SEED an integer >= 0 (default 0), e.g. "
    "'synthetic:200:1'"
)


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


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
                f"folds must look like 1-5, 1,3 or 2 (folds 1 to {_N_FOLDS}); "
                f"got {text[:80]!r}"
            )
        ends = [g for g in m.groups() if g is not None]
        # compared as text first: int() of thousands of digits is an error
        if any(len(g.lstrip("0")) > 1 or not 1 <= int(g) <= _N_FOLDS for g in ends):
            raise DataError(
                f"folds must be integers 1..{_N_FOLDS} (a LETOR data set has "
                f"{_N_FOLDS} folds); {part[:40]!r} is not, in {text[:80]!r}"
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
                or not 1 <= f <= _N_FOLDS:
            break
        if f not in out:
            out.append(int(f))
    else:
        if items is not None and out:
            return tuple(out)
    shown = given if isinstance(given, (str, tuple, list)) else type(given).__name__
    raise DataError(f"folds must be a non-empty set of integers 1..{_N_FOLDS}; "
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


def _synthetic_spec(dataset):
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


def _fold_files(dataset, fold, root):
    """The files the loader reads for one fold, ``{split: [Path]}``, or ``None``.

    The same search as :func:`refimpl.data.load_letor_fold` (first complete
    layout), so that the fingerprint describes the files that are loaded.
    """
    return fold_files(Path(root) / dataset, fold)


def _check_dataset_name(dataset):
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
    spec = _synthetic_spec(dataset)
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
    if _check_dataset_name(dataset) is not None:
        return None
    root = _data.letor_home(letor_home)
    for fold in folds:
        if _fold_files(dataset, fold, root) is None:
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
    allowed = method.ranges.get(param)
    for value in values:
        if allowed is not None:
            ok = allowed.contains(value)
            accepted = allowed.describe()
        else:
            # No declared range: still never a NaN or an infinity.
            ok = not (isinstance(value, (float, np.floating))
                      and not math.isfinite(value))
            accepted = "a finite number"
        if not ok:
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
    _check_dataset_name(config.dataset)
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
            # a parameter the method declares a range for may be set too (an
            # iteration cap, say), beside its grid and fixed ones
            known = dict.fromkeys([*method.grid, *method.fixed, *method.ranges])
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


# --------------------------------------------------------------------------
# What determines a result: data fingerprints and the code
# --------------------------------------------------------------------------

#: Fingerprint memo of this process: absolute path -> {"stat", "sha256",
#: "hashed_ns"} (``refimpl._io.file_digest``); merged with the memo file
#: of a results directory.
_FILE_MEMO: dict = {}
_MEMO_NAME = "fingerprints.json"


def _racy(entry):
    """Whether a memo entry's file was modified too close to its hashing."""
    return _io.is_racy(entry["stat"][1], entry["hashed_ns"])


def _fingerprint(dataset, fold, root, memo):
    """What a fold's data are, as far as a fit is concerned.

    Returns
    -------
    dict
        ``digest``: SHA-256 over the content hashes of the files of each split
        (names and places do not matter), or over the generator's parameters
        of a synthetic data set; ``files``: ``[(path, stat signature), ...]``
        to check that the files did not change before a worker loads them;
        ``describe``: the same for ``run.json``.
    """
    spec = _synthetic_spec(dataset)
    if spec is not None:
        describe = {"generator": "synthetic", "n_queries": spec[0],
                    "seed": spec[1], "fold": int(fold)}
        files = []
        content = describe
    else:
        found = _fold_files(dataset, fold, root)
        if found is None:
            # The loader's own error lists what was looked for.
            _data.load_letor_fold(dataset, fold, root=root)
            raise DatasetNotFoundError(f"data set {dataset!r}, Fold{fold}: no files")
        describe, content, files = {}, {}, []
        for split, paths in found.items():
            describe[split], content[split] = [], []
            for p in paths:
                digest, sig = _io.file_digest(p, memo)
                files.append((os.path.abspath(p), sig))
                describe[split].append({"file": os.path.abspath(p),
                                        "sha256": digest, "size": sig[0]})
                content[split].append(digest)
    blob = json.dumps(content, sort_keys=True).encode()
    return {"digest": hashlib.sha256(blob).hexdigest(), "files": files,
            "describe": describe}


def _check_unchanged(files):
    for path, sig in files:
        try:
            now = _io.stat_signature(path)
        except OSError as err:
            raise DataError(f"{path} is gone since the run started ({err})") from None
        if now != tuple(sig):
            raise DataError(f"{path} changed since the run started (its size or "
                            "modification time differs from when it was "
                            "fingerprinted); run again")


#: Source files that present results but take no part in computing them.
_PRESENTATION = ("__main__.py", "experiments/report.py", "experiments/snapshots.py")
# the book's exercise checkers compute no task's result
_NOT_RESULTS = ("exercises/",)


def _hashed_sources(package):
    """The package's source files :func:`code_hash` covers, as sorted
    relative POSIX paths."""
    rels = (p.relative_to(package).as_posix() for p in sorted(package.rglob("*.py")))
    return [r for r in rels if r not in _PRESENTATION and not r.startswith(_NOT_RESULTS)]


@functools.lru_cache(maxsize=1)
def code_hash():
    """SHA-256 of the source code that computes a task's result.

    The hash covers every ``refimpl/**/*.py`` file (name and content, in
    sorted order) except the ones that only present results
    (``__main__.py``, ``experiments/report.py``,
    ``experiments/snapshots.py``) and the book's exercise checkers
    (``exercises/``).  Hashing the whole
    package rather than a hand-kept list of each method's modules cannot
    miss a dependency (a kernel, a shared validation helper, the runner's
    own evaluation): any edit of the package's code invalidates the cache,
    at the price of refitting after edits that did not matter.  The hash is
    computed once per process, from the files as they are on disk then.

    Derived in: book/10_running_experiments.md#run-cache

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for rel in _hashed_sources(package):
        content = (package / rel).read_bytes()
        digest.update(f"{rel}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _library_versions():
    """Versions of the libraries whose numerics a result depends on."""
    from importlib import metadata

    out = {"python": ".".join(platform.python_version_tuple()[:2])}
    for pkg in ("numpy", "scipy", "scikit-learn", "numba", "lightgbm"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


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
def _load_fold_version(dataset, fold, root, digest, normalize=None):
    """A fold, cached per process by its data's fingerprint ``digest`` and
    its normalisation (so a raw fold never stands for a normalised one)."""
    spec = _synthetic_spec(dataset)
    if spec is not None:
        return _data.normalize_fold(_synthetic_fold(spec[0], spec[1], fold),
                                    normalize)
    return _data.load_letor_fold(dataset, fold, root=root, normalize=normalize)


def load_fold(dataset, fold, root=None, normalize=None):
    """One fold of a LETOR or synthetic data set (cached per process).

    The cache is keyed by the content of the fold's files (a SHA-256 each,
    re-computed only when a file's size or modification time changes), so a
    file rewritten with other data is loaded again, and by ``normalize``.

    Derived in: book/10_running_experiments.md#run-cli

    Parameters
    ----------
    dataset : str
        As ``ExperimentConfig.dataset``.
    fold : int
    root : str, optional
        LETOR root (default ``LETOR_HOME``).
    normalize : {None, "query", "standard"}, optional
        As ``ExperimentConfig.normalize``.

    Returns
    -------
    refimpl.data.LetorFold
    """
    normalize = _data.check_normalize(normalize)
    if _check_dataset_name(dataset) is not None:
        root = None
    else:
        root = os.fspath(_data.letor_home(root))
    fp = _fingerprint(dataset, fold, root, _FILE_MEMO)
    return _load_checked(dataset, fold, root, fp["digest"], fp["files"],
                         normalize=normalize)


@dataclass(frozen=True)
class _FoldProblems:
    """A fold's three splits, each a validated, grouped ``RankingProblem``."""

    train: object
    vali: object
    test: object

    @property
    def nbytes(self):
        """Bytes of the three feature matrices (the scale guard's data term)."""
        return sum(_nbytes(p.X) for p in (self.train, self.vali, self.test))


def _nbytes(X):
    if hasattr(X, "indptr"):                 # scipy.sparse CSR: its three arrays
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.nbytes)


@functools.lru_cache(maxsize=8)
def _problems_version(dataset, fold, root, digest, normalize=None):
    """The fold of :func:`_load_fold_version`, each split validated and grouped.

    Once per process, version of the data and normalisation: every task of
    the fold fits and evaluates on these problems, so no task checks,
    groups or normalises its data again
    (:func:`refimpl._validation.ranking_problem`).
    """
    data = _load_fold_version(dataset, fold, root, digest, normalize)
    return _FoldProblems(*(ranking_problem(*getattr(data, split))
                           for split in ("train", "vali", "test")))


def _load_checked(dataset, fold, root, digest, files, load=_load_fold_version,
                  normalize=None):
    """The fold whose files have fingerprint ``digest``; an error if they changed.

    ``load``: :func:`_load_fold_version` (a ``LetorFold``) or
    :func:`_problems_version` (its validated problems), normalised by
    ``normalize``.
    """
    _check_unchanged(files)
    fold_data = load(dataset, fold, root, digest, normalize)
    try:
        _check_unchanged(files)
    except DataError:
        # what was read may be neither version: never serve it again
        _load_fold_version.cache_clear()
        _problems_version.cache_clear()
        raise
    return fold_data


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
    key: str                # the task's identity (the tables' key column)
    cache_key: str = ""     # what determines its result (the cache's key)
    data_digest: str = ""
    data_files: tuple = ()  # ((path, stat signature), ...) as fingerprinted
    normalize: str | None = None
    stage_cache: str | None = None  # the ``memory`` of a multi-stage estimator


def _with_normalize(fields, normalize):
    """``fields`` plus the normalisation, which a raw task leaves out (so
    that its keys are those of the runs made before the option existed)."""
    return fields if normalize is None else {**fields, "normalize": normalize}


def _task_key(dataset, fold, method, params, normalize=None):
    """The task's identity: data set, fold, method, parameters,
    normalisation, version."""
    blob = json.dumps(_with_normalize({
        "schema": _TASK_KEY_VERSION, "refimpl": _REFIMPL_VERSION,
        "dataset": dataset, "fold": int(fold), "method": method.name,
        "params": {**dict(method.fixed), **dict(params)},
    }, normalize), sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _cache_key(dataset, fold, method, params, data_digest, normalize=None):
    """Everything a task's result depends on: the task, its data and their
    normalisation, the code."""
    blob = json.dumps(_with_normalize({
        "schema": CACHE_SCHEMA, "dataset": dataset, "fold": int(fold),
        "method": method.name, "params": {**dict(method.fixed), **dict(params)},
        "data": data_digest, "code": code_hash(), "libraries": _library_versions(),
    }, normalize), sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def _warning_text(caught):
    seen = []
    for w in caught:
        text = f"{w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
        if text not in seen:
            seen.append(text)
    return " | ".join(seen)


def _evaluate(problem, scores):
    """Every measure of :func:`refimpl.metrics.evaluate` on a validated split,
    and the per-query NDCG@1/3/5/10 and AP.

    The split's labels and query grouping come from ``problem``: it is
    ranked once, and nothing is checked or grouped again (the same numbers
    as ``evaluate(y, scores, qid, ks=KS)``, ``ndcg_at_k(..., per_query=True)``
    and ``average_precision(..., per_query=True)``).

    Returns
    -------
    (dict, dict)
        ``{measure: float}`` and ``{"qid": [...], "NDCG@k": [...], "AP": [...]}``.
    """
    conv = _metrics.CONVENTIONS["letor4"]
    ks = np.asarray(KS, dtype=np.int64)
    groups = problem.groups
    y_g = problem.y[groups.order]
    s_g = check_scores(scores, problem.n_samples)[groups.order]
    qcode = np.repeat(np.arange(groups.n_queries, dtype=np.int64), groups.sizes)
    _metrics._check_graded(y_g)
    ranked = _metrics._rank_order(y_g, s_g, qcode, "input")
    nd, nd_mean = _metrics._ndcg_tables(y_g, qcode, groups.indptr, ranked, ks, conv)
    prec, ap = _metrics._precision_tables(y_g, groups.indptr, ranked, ks, conv)
    n_correct, n_pairs, _ = _metrics._pairwise_counts(y_g, s_g, qcode,
                                                      groups.indptr)
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

    On the fold's validated problems (:func:`_problems_version`): the
    training split is fitted as it is, each of the validation and test
    splits predicted and evaluated once.
    """
    method = task.method
    row = {"dataset": task.dataset, "fold": task.fold, "method": method.name,
           "grid_index": task.index, "params": json.dumps(task.params, sort_keys=True),
           "key": task.key, "linear": method.linear, "status": "ok", "error": ""}
    per_query = {}
    try:
        t_load = time.perf_counter()
        fold = _load_checked(task.dataset, task.fold, task.root, task.data_digest,
                             task.data_files, load=_problems_version,
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
            data_bytes=fold.nbytes,
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
            values, split_per_query = _evaluate(split, scores)
            for name, value in values.items():
                row[f"{prefix}_{name}"] = float(value)
        per_query = split_per_query          # the test split's
    # A failed fit is reported in its row, not fatal to the other tasks.
    except Exception as err:  # noqa: BLE001
        row["status"] = "refused" if isinstance(err, ScaleError) else "error"
        row["error"] = f"{type(err).__name__}: {err}"[:500]
    return {"row": row, "per_query": per_query}


# --------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------


def _cache_path(out_dir, task):
    return out_dir / "cache" / task.method.name / f"{task.fold}-{task.cache_key[:24]}.json"


def _checksum(entry):
    """SHA-256 of an entry's canonical JSON, its ``checksum`` field left out."""
    return _io.json_sha256({k: v for k, v in entry.items() if k != "checksum"})


_INT_FIELDS = ("fold", "grid_index", "n_train_docs", "n_train_queries",
               "n_train_pairs", "n_features", "n_features_nonzero", "n_iter")
_STR_FIELDS = ("dataset", "method", "params", "key", "status", "error", "warnings")
#: A stored row of a successful task (:mod:`refimpl._jsonfile` schema).
_ROW_SCHEMA = js.record({
    **{name: js.string() for name in _STR_FIELDS},
    **{name: js.integer() for name in _INT_FIELDS},
    "linear": js.boolean(),
    "converged": js.const("", True, False),
    "fit_time": js.real(0), "cpu_time": js.real(0),
    # NaN when a model has no notion of used features
    **{name: js.real(0, nan=True) for name in ("nnz", "sparsity", "sparsity_all")},
    # PairwiseAccuracy is NaN on a split without a pair
    **{f"{prefix}_{metric}": js.real(0, 1, nan=metric == "PairwiseAccuracy")
       for prefix in ("val", "test") for metric in SELECTION_METRICS},
})
_PER_QUERY_NAMES = ("qid", *(f"NDCG@{k}" for k in PER_QUERY_KS), "AP")


def _row_problem(row):
    """Why a stored row is not a well-formed successful task, or ``None``."""
    if not isinstance(row, dict):
        return f"'row' is a {type(row).__name__}, not an object"
    problem = _ROW_SCHEMA(row, "")
    return None if problem is None else f"row {problem}"


def _per_query_problem(per_query):
    if not isinstance(per_query, dict):
        return f"'per_query' is a {type(per_query).__name__}, not an object"
    if sorted(per_query) != sorted(_PER_QUERY_NAMES):
        return f"'per_query' must have exactly the fields {', '.join(_PER_QUERY_NAMES)}"
    qids = per_query["qid"]
    if js.list_of(js.integer())(qids, "") or not qids:
        return "'per_query' field 'qid' is not a non-empty list of integers"
    values = js.list_of(js.real(0, 1), length=len(qids))
    for name in _PER_QUERY_NAMES[1:]:
        if values(per_query[name], ""):
            return (f"'per_query' field {name!r} is not a list of {len(qids)} "
                    "numbers in [0, 1]")
    return None


def _entry_problem(entry, task):
    """Why ``entry`` cannot stand for ``task``'s result, or ``None``."""
    if not isinstance(entry, dict):
        return f"the entry is a JSON {type(entry).__name__}, not an object"
    for name in ("schema", "key", "task_key", "row", "per_query", "checksum"):
        if name not in entry:
            return f"field {name!r} is missing"
    if entry["schema"] != CACHE_SCHEMA:
        return f"schema {entry['schema']!r} is not the current {CACHE_SCHEMA}"
    if entry["key"] != task.cache_key:
        return "its key is not this task's (data, code or parameters differ)"
    if entry["task_key"] != task.key:
        return "its task key is not this task's"
    if entry["checksum"] != _checksum(entry):
        return "its checksum does not match its content (edited or damaged)"
    problem = _row_problem(entry["row"]) or _per_query_problem(entry["per_query"])
    if problem:
        return problem
    row = entry["row"]
    expected = {"dataset": task.dataset, "fold": task.fold,
                "method": task.method.name, "key": task.key, "status": "ok",
                "params": json.dumps(task.params, sort_keys=True)}
    for name, value in expected.items():
        if row[name] != value:
            return f"row field {name!r} is {row[name]!r}, expected {value!r}"
    return None


def _cache_load(path, task):
    """The valid cached result of ``task``, or ``None`` (reported if bad).

    A missing entry is the normal case.  Anything else that cannot be used
    (unreadable, not JSON, a field missing or of the wrong type, another
    task's entry, a checksum that does not match) is reported as a
    ``RuntimeWarning`` naming the file, and the task is fitted again.
    """
    try:
        entry = js.read_json(path, lambda e, where: _entry_problem(e, task))
    except FileNotFoundError:
        return None
    except js.MalformedFileError as err:
        problem = ("it is a directory, not a file" if os.path.isdir(path)
                   else err.problem)
    else:
        problem = None
    if problem is None:
        return entry
    warnings.warn(f"cache entry {path} is not used: {problem}; the task "
                  f"({task.method.name}, fold {task.fold}, {task.params}) is "
                  "fitted again", RuntimeWarning, stacklevel=2)
    return None


def _cache_store(path, task, result):
    """Store a successful result atomically; a failure is a warning, not fatal."""
    entry = {"schema": CACHE_SCHEMA, "key": task.cache_key, "task_key": task.key,
             "row": result["row"], "per_query": result["per_query"]}
    # what cannot be read back as valid is not written (e.g. a metric out of range)
    entry = json.loads(json.dumps(entry, default=repr))
    entry["checksum"] = _checksum(entry)
    problem = _entry_problem(entry, task)
    if problem is not None:
        warnings.warn(f"result of ({task.method.name}, fold {task.fold}, "
                      f"{task.params}) is not cached: {problem}",
                      RuntimeWarning, stacklevel=2)
        return False
    try:
        _io.atomic_write_json(path, entry)
    except OSError as err:
        warnings.warn(f"cannot write cache entry {path} ({type(err).__name__}: "
                      f"{err}); the task's result is kept for this run but "
                      "not cached", RuntimeWarning, stacklevel=2)
        return False
    return True


# --------------------------------------------------------------------------
# Output folders
# --------------------------------------------------------------------------

#: A temporary file of :func:`refimpl._io.atomic_write` (or of the probe
#: below): ``.<name>.<pid>-<12 hex digits>.tmp``.
_TMP_NAME = re.compile(r"\..+\.([0-9]+)-[0-9a-f]{12}\.tmp")
#: A temporary file this old is a leftover whatever its process id says
#: (the id may have been reused, or belong to another machine).
_TMP_STALE_S = 3600.0


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True         # someone else's process, or not a pid: keep it
    return True


def _remove_stale_tmp(folder):
    """Remove the temporary files killed writes left in ``folder``.

    A write that is killed (SIGKILL, power loss) between creating its
    temporary file and renaming it leaves the file behind; it is removed
    here when its process is gone or it is older than :data:`_TMP_STALE_S`,
    never while its writer may still rename it.  Returns how many were
    removed.  (Local to the runner's folders; to be unified with the
    package's other folders' clean-up in :mod:`refimpl._io`.)
    """
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    now = time.time()
    for name in names:
        m = _TMP_NAME.fullmatch(name)
        if m is None:
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if _pid_alive(int(m.group(1))) and now - st.st_mtime < _TMP_STALE_S:
                continue
            os.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


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


def _prepare_output(out_dir, plan, stage_cache):
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
        _remove_stale_tmp(folder)


def _write_tables(out_dir, tables, info):
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


# --------------------------------------------------------------------------
# Worker processes and signals
# --------------------------------------------------------------------------


class _Terminated(SystemExit):
    """SIGTERM during a run, raised in the main thread to unwind it."""


def _end_loky_workers():
    """Kill the worker processes of joblib's reusable loky executor.

    joblib aborts its running tasks when :func:`run` is interrupted, but may
    keep (or start) an idle executor whose workers outlive a terminated
    parent for minutes; its resource trackers end once no worker holds
    their pipe.  Only an executor that exists is shut down: asking for one
    would start it.
    """
    from .._compat.loky import end_reusable_executor

    end_reusable_executor()


@contextmanager
def _sigterm_unwinds():
    """During the block, SIGTERM raises ``SystemExit(143)`` in the main thread.

    Then ``finally`` clauses run and :func:`run` ends its workers before the
    process exits with the status the default action gives.  A SIGTERM
    handler installed by the application, or an ignored SIGTERM, is left
    alone, as is everything outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handler(signum, frame):
        # a second SIGTERM must not interrupt the clean-up of the first
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise _Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


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


_HISTORY_KEYS = ("started_utc", "wall_time_s", "n_tasks", "n_fitted", "n_cached",
                 "n_failed")


_RUN_SCHEMA = js.record({"dataset": js.string()}, optional={
    "history": js.list_of(js.record()),
    "config": js.record({"methods": js.anything(), "n_jobs": js.anything(),
                         "backend": js.anything()}),
})


def _history(path, info):
    """Earlier invocations that fitted something, plus this one if it did.

    A re-run served from the cache rewrites the tables but is not a new
    production run; the history says when and how the cached fits were made.
    """
    past = []
    try:
        old = js.read_json(path, _RUN_SCHEMA)
        if old["dataset"] == info["dataset"] and old.get("history"):
            past = old["history"]
        elif old["dataset"] == info["dataset"] and "config" in old:
            past = [{**{k: old.get(k) for k in _HISTORY_KEYS},
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
        past = [*past, {**{k: info[k] for k in _HISTORY_KEYS},
                        "methods": info["config"]["methods"],
                        "n_jobs": info["config"]["n_jobs"],
                        "backend": info["config"]["backend"]}]
    return past


def _fingerprints(plan, out_dir):
    """``{fold: fingerprint}`` of the run's data, through the fingerprint memo."""
    memo_path = out_dir / "cache" / _MEMO_NAME if out_dir is not None else None
    if memo_path is not None:
        for path, entry in _digest_memo.load_digest_memo(memo_path).items():
            known = _FILE_MEMO.get(path)
            if known is None or known["hashed_ns"] < entry["hashed_ns"]:
                _FILE_MEMO[path] = entry
    before = {k: dict(v) for k, v in _FILE_MEMO.items()}
    out = {fold: _fingerprint(plan.config.dataset, fold, plan.root, _FILE_MEMO)
           for fold in plan.config.folds}
    if memo_path is not None:
        used = sorted({p for fp in out.values() for p, _ in fp["files"]})
        # rewritten when a hash is new or has just become trustworthy
        # (no longer racy), not for every re-hash of a racy file
        changed = [p for p in used if p not in before
                   or (before[p]["stat"], before[p]["sha256"])
                   != (_FILE_MEMO[p]["stat"], _FILE_MEMO[p]["sha256"])
                   or (_racy(before[p]) and not _racy(_FILE_MEMO[p]))]
        if changed:
            _digest_memo.store_digest_memo(memo_path, {p: _FILE_MEMO[p] for p in used})
    return out


def _stage_first(tasks):
    """``tasks`` with, first, one task per shared first stage (stable).

    An estimator that declares ``FIRST_STAGE_PARAMS`` (``LifeRankPipeline``)
    fits its first stage once per distinct value of those parameters when
    it has a ``memory`` (:attr:`_Task.stage_cache`); run in parallel in grid
    order, the grid points sharing a stage would start together and each
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
                    _cache_store(_cache_path(out_dir, task), task, result)
                bar.set_postfix_str(f"{task.method.name} fold {task.fold}",
                                    refresh=False)
                bar.update(1)
    except BaseException:
        results_iter.close()
        if config.backend == "loky":
            _end_loky_workers()
        raise


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
        What :func:`validate_config` refuses; a folder of ``out`` that
        cannot be created or written (before any fit); tables that cannot be
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
        _prepare_output(out_dir, plan, stage_cache)
    with _sigterm_unwinds():
        fingerprints = _fingerprints(plan, out_dir)
        tasks = []
        for method in plan.methods:
            for fold in config.folds:
                fp = fingerprints[fold]
                for index, params in enumerate(plan.grids[method.name]):
                    tasks.append(_Task(
                        config.dataset, plan.root, fold, method, params, index,
                        key=_task_key(config.dataset, fold, method, params,
                                      config.normalize),
                        cache_key=_cache_key(config.dataset, fold, method, params,
                                             fp["digest"], config.normalize),
                        data_digest=fp["digest"],
                        data_files=tuple((p, tuple(sig)) for p, sig in fp["files"]),
                        normalize=config.normalize, stage_cache=stage_cache))
        results, todo = {}, []
        for task in tasks:
            stored = None
            if out_dir is not None and config.cache:
                stored = _cache_load(_cache_path(out_dir, task), task)
            if stored is not None:
                # where the task sits in this run's grid, which may be reordered
                stored["row"]["grid_index"] = task.index
                stored["row"]["cached"] = True
                results[task.key] = stored
            else:
                todo.append(task)
        n_cached = len(results)
        started = _dt.datetime.now(_dt.UTC)
        t0 = time.perf_counter()
        _run_todo(_stage_first(todo), config, plan, out_dir, results)
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
        "code_sha256": code_hash(),
        "data_fingerprints": {str(fold): {"sha256": fp["digest"],
                                          "files": fp["describe"]}
                              for fold, fp in fingerprints.items()},
    }
    if out_dir is not None:
        info["history"] = _history(out_dir / "run.json", info)
        _write_tables(out_dir, {"tasks": rows, "selected": selected,
                                "summary": summary, "per_query": per_query},
                      info)
    return RunResult(config=config, tasks=rows, selected=selected,
                     summary=summary, per_query=per_query, n_fitted=len(todo),
                     n_cached=n_cached, n_failed=n_failed, wall_time=wall,
                     out_dir=out_dir, info=info)
