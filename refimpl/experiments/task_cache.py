"""What determines a task's result, and the per-task cache keyed by it.

A task's ``key`` (:func:`task_key`, the tables' ``key`` column) names it
across runs: data set, fold, method, parameters, normalisation, refimpl
version.  Its :func:`cache_key` hashes everything its result depends on:
the task, the content of the data files (:func:`fingerprint`, a SHA-256 per
file through the fingerprint memo), the package's source
(:func:`code_hash`) and the numerical libraries' versions.  A finished task
is stored as ``<out>/<dataset>/cache/<method>/<fold>-<key>.json``
(:func:`cache_store`, atomically) and checked field by field and against
its checksum when it is read back (:func:`cache_load`): an entry that fails
is a warning naming its file, and the task is fitted again.

Derived in: book/10_running_experiments.md#run-cache
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import warnings
from dataclasses import dataclass
from pathlib import Path

from .. import __version__ as _REFIMPL_VERSION
from .. import _digest_memo, _io
from .. import _jsonfile as js
from .. import data as _data
from ..exceptions import DataError, DatasetNotFoundError
from .config import PER_QUERY_KS, dataset_files, synthetic_spec
from .registry import SELECTION_METRICS

__all__ = [
    "CACHE_SCHEMA",
    "FILE_MEMO",
    "MEMO_NAME",
    "Task",
    "cache_key",
    "cache_load",
    "cache_path",
    "cache_store",
    "check_unchanged",
    "checksum",
    "code_hash",
    "fingerprint",
    "hashed_sources",
    "library_versions",
    "racy_entry",
    "run_fingerprints",
    "task_key",
]

#: Layout of a cache entry; bumped when the stored fields change.
CACHE_SCHEMA = 2
#: Version of the task identity behind the tables' ``key`` column (kept, so
#: that a task keeps its ``key`` across runs and the tables stay comparable).
_TASK_KEY_VERSION = 1


# --------------------------------------------------------------------------
# Data fingerprints and the code
# --------------------------------------------------------------------------

#: Fingerprint memo of this process: absolute path -> {"stat", "sha256",
#: "hashed_ns"} (``refimpl._io.file_digest``); merged with the memo file
#: of a results directory.
FILE_MEMO: dict = {}
#: The memo's file in the ``cache/`` folder of a results directory.
MEMO_NAME = "fingerprints.json"


def racy_entry(entry):
    """Whether a memo entry's file was modified too close to its hashing."""
    return _io.is_racy(entry["stat"][1], entry["hashed_ns"])


def fingerprint(dataset, fold, root, memo):
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
    spec = synthetic_spec(dataset)
    if spec is not None:
        describe = {"generator": "synthetic", "n_queries": spec[0],
                    "seed": spec[1], "fold": int(fold)}
        files = []
        content = describe
    else:
        found = dataset_files(dataset, fold, root)
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


def check_unchanged(files):
    """Raise ``DataError`` if a file of ``[(path, stat signature), ...]`` is
    gone or changed since it was fingerprinted (:func:`fingerprint`)."""
    for path, sig in files:
        try:
            now = _io.stat_signature(path)
        except OSError as err:
            raise DataError(f"{path} is gone since the run started ({err})") from None
        if now != tuple(sig):
            raise DataError(f"{path} changed since the run started (its size or "
                            "modification time differs from when it was "
                            "fingerprinted); run again")


def run_fingerprints(plan, out_dir):
    """``{fold: fingerprint}`` of the run's data, through the fingerprint memo."""
    memo_path = out_dir / "cache" / MEMO_NAME if out_dir is not None else None
    if memo_path is not None:
        for path, entry in _digest_memo.load_digest_memo(memo_path).items():
            known = FILE_MEMO.get(path)
            if known is None or known["hashed_ns"] < entry["hashed_ns"]:
                FILE_MEMO[path] = entry
    before = {k: dict(v) for k, v in FILE_MEMO.items()}
    out = {fold: fingerprint(plan.config.dataset, fold, plan.root, FILE_MEMO)
           for fold in plan.config.folds}
    if memo_path is not None:
        used = sorted({p for fp in out.values() for p, _ in fp["files"]})
        # rewritten when a hash is new or has just become trustworthy
        # (no longer racy), not for every re-hash of a racy file
        changed = [p for p in used if p not in before
                   or (before[p]["stat"], before[p]["sha256"])
                   != (FILE_MEMO[p]["stat"], FILE_MEMO[p]["sha256"])
                   or (racy_entry(before[p]) and not racy_entry(FILE_MEMO[p]))]
        if changed:
            _digest_memo.store_digest_memo(memo_path, {p: FILE_MEMO[p] for p in used})
    return out


#: Source files that present results but take no part in computing them.
_PRESENTATION = ("__main__.py", "experiments/report.py", "experiments/snapshots.py")


# the book's exercise checkers compute no task's result
_NOT_RESULTS = ("exercises/",)


def hashed_sources(package):
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
    for rel in hashed_sources(package):
        content = (package / rel).read_bytes()
        digest.update(f"{rel}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def library_versions():
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
# Task and cache keys
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """One (fold, method, parameter setting) of a run, as a worker receives it."""

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
    refused: str = ""       # the scale guard's refusal of the fold's load


def _with_normalize(fields, normalize):
    """``fields`` plus the normalisation, which a raw task leaves out (so
    that its keys are those of the runs made before the option existed)."""
    return fields if normalize is None else {**fields, "normalize": normalize}


def task_key(dataset, fold, method, params, normalize=None):
    """The task's identity: data set, fold, method, parameters,
    normalisation, version."""
    blob = json.dumps(_with_normalize({
        "schema": _TASK_KEY_VERSION, "refimpl": _REFIMPL_VERSION,
        "dataset": dataset, "fold": int(fold), "method": method.name,
        "params": {**dict(method.fixed), **dict(params)},
    }, normalize), sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_key(dataset, fold, method, params, data_digest, normalize=None):
    """Everything a task's result depends on: the task, its data and their
    normalisation, the code."""
    blob = json.dumps(_with_normalize({
        "schema": CACHE_SCHEMA, "dataset": dataset, "fold": int(fold),
        "method": method.name, "params": {**dict(method.fixed), **dict(params)},
        "data": data_digest, "code": code_hash(), "libraries": library_versions(),
    }, normalize), sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


# --------------------------------------------------------------------------
# Cache entries
# --------------------------------------------------------------------------

def cache_path(out_dir, task):
    """Where ``task``'s entry is stored under the results folder ``out_dir``."""
    return out_dir / "cache" / task.method.name / f"{task.fold}-{task.cache_key[:24]}.json"


def checksum(entry):
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
    if entry["checksum"] != checksum(entry):
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


def cache_load(path, task):
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


def cache_store(path, task, result):
    """Store a successful result atomically; a failure is a warning, not fatal."""
    entry = {"schema": CACHE_SCHEMA, "key": task.cache_key, "task_key": task.key,
             "row": result["row"], "per_query": result["per_query"]}
    # what cannot be read back as valid is not written (e.g. a metric out of range)
    entry = json.loads(json.dumps(entry, default=repr))
    entry["checksum"] = checksum(entry)
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
