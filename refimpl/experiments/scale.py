"""Up-front scale guard: can this method fit data of this size here?

Before a task fits, the runner calls :func:`check_scale` with the sizes of
the fold (documents, preference pairs, features, the longest query).  It
returns a :class:`ScaleEstimate`: which loss backend the method will use
and an estimate of the task's peak resident memory.  It raises
:class:`ScaleError`, naming the method, the estimate, the available memory
and the reason, when

* a method on the pairwise squared hinge (its estimator's memory model
  says so: ``MemoryEstimate.hinge_backend``)
  would build explicit pair arrays where the tree backend applies and the
  arrays are larger than
  ``refimpl.losses.squared_hinge.AUTO_MAX_PAIR_BYTES`` (``backend=
  "pairs"`` or ``"numpy"`` forced at that size): Lee & Lin's tree computes
  the same loss in O(l) memory, so the pairs are never needed;
* the estimate exceeds :data:`MEMORY_FRACTION` of the memory available now
  (``MemAvailable`` of ``/proc/meminfo``, else ``psutil``), so that the
  task fails with that message instead of being killed mid-fit.

The guard keeps no list of methods: it builds the task's estimator from
the registry (:func:`refimpl.experiments.registry.get_method`) and asks
its memory model, ``estimator.estimate_memory(n_docs=..., n_pairs=...,
n_features=..., max_query=..., grouped=...)`` (a
:class:`refimpl.estimators.MemoryEstimate`), then adds the process, the
data and the runner's own arrays.  The estimates are upper bounds built
from what each method allocates, term by term, with constants measured on
generated MSLR-WEB10K-shaped data (``benchmarks/bench_mslr_scale.py``
prints estimate and measured peak side by side).  LifeRank's pairwise
logistic loss has no tree backend: it keeps its explicit pairs, 16 bytes
each, and its memory model counts them.  An estimator without
``estimate_memory`` (a method registered from outside the package) is
counted as two copies of the training matrix.

Derived in: book/10_running_experiments.md#run-scale-guard
"""

from __future__ import annotations

from dataclasses import dataclass

from ..estimators import LossBackend, MemoryEstimate
from ..exceptions import DataError
from ..losses.squared_hinge import AUTO_MAX_PAIR_BYTES, BYTES_PER_PAIR, count_levels
from .registry import get_method

__all__ = [
    "MEMORY_FRACTION",
    "BASE_BYTES",
    "ScaleError",
    "ScaleEstimate",
    "available_memory",
    "check_load",
    "check_scale",
    "check_task",
    "estimate_peak",
    "memory_model",
]

#: Refuse a task whose estimated peak exceeds this fraction of the memory
#: available when it starts (the rest is head-room for the estimate's error
#: and for other processes).
MEMORY_FRACTION = 0.8
#: Resident size of a runner process before the data: interpreter, NumPy,
#: SciPy, scikit-learn, numba and its compiled kernels (measured ~0.35 GB).
BASE_BYTES = 600 * 2**20
class ScaleError(DataError):
    """A task would not fit in memory, or would build pairs the tree avoids."""


@dataclass(frozen=True)
class ScaleEstimate:
    """What :func:`check_scale` found for one task.

    Attributes
    ----------
    method : str
    backend : refimpl.estimators.LossBackend
        The loss backend the method resolves to (the squared hinge's
        ``"tree"``, ``"pairs"``, ``"numpy"``, ``"pairs (logistic)"`` for
        LifeRank's loss, ...), or ``"-"`` for methods without a pairwise loss.
    peak_bytes : int
        Estimated peak resident memory of the task's process.
    available_bytes : int
        Memory available when the check ran.
    terms : dict
        The estimate's parts, in bytes.
    """

    method: str
    backend: str
    peak_bytes: int
    available_bytes: int
    terms: dict

    def describe(self):
        """``"est. 2.31 GB (data 1.63, pairs 0.00, ...)"``."""
        parts = ", ".join(f"{k} {v / 2**30:.2f}" for k, v in self.terms.items() if v)
        return f"est. {self.peak_bytes / 2**30:.2f} GB ({parts})"


def available_memory():
    """Bytes of memory available to a new allocation now.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux), else
    ``psutil.virtual_memory().available``; ``None`` when neither is known.
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def memory_model(name, params, *, n_docs, n_pairs, n_features, max_query,
                 grouped=True, n_levels=None):
    """The memory model of method ``name`` with settings ``params``.

    The registered method's estimator, built with ``params`` (its fixed
    settings included), answers through its ``estimate_memory``; an
    estimator without one counts two copies of the training matrix.

    Derived in: book/10_running_experiments.md#run-scale-guard

    Returns
    -------
    refimpl.estimators.MemoryEstimate
    """
    estimator = get_method(name).build(params)
    ask = getattr(estimator, "estimate_memory", None)
    if ask is None:
        return MemoryEstimate(terms={"method": 2 * n_docs * n_features * 8})
    return ask(n_docs=n_docs, n_pairs=n_pairs, n_features=n_features,
               max_query=max_query, grouped=grouped, n_levels=n_levels)


def estimate_peak(name, params, *, n_docs, n_pairs, n_features, max_query,
                  data_bytes, grouped=True, n_levels=None):
    """Estimated peak memory of one task, by term, and its loss backend.

    Parameters
    ----------
    name : str
        Registry name of the method.
    params : dict
        Its settings (the method's fixed ones are added).
    n_docs, n_pairs, n_features : int
        Of the training split (``n_pairs``: preference pairs, all levels).
    max_query : int
        Documents in the longest training query.
    data_bytes : int
        Bytes of the loaded fold (train, validation and test matrices).
    grouped : bool, optional
        Whether each training query's documents are adjacent rows
        (``QueryGroups.runs``; LETOR files).  If
        not, the one-pass tree backend works on a query-grouped copy of the
        training matrix, counted here when it makes one (dense ``X`` from
        ``ONE_PASS_MIN_BYTES`` to ``ONE_PASS_COPY_MAX_BYTES``).
    n_levels : int, optional
        Distinct relevance labels of the training split: ``backend="auto"``
        resolves on them as in the fit.  ``None``: explicit pairs are
        counted wherever ``"auto"`` may build them (an upper bound).

    Returns
    -------
    backend : refimpl.estimators.LossBackend
    terms : dict of str to int
        ``base``, ``data`` and the method's own terms (bytes).
    """
    model = memory_model(name, params, n_docs=n_docs, n_pairs=n_pairs,
                         n_features=n_features, max_query=max_query,
                         grouped=grouped, n_levels=n_levels)
    terms = {"base": BASE_BYTES, "data": int(data_bytes),
             # the runner's ``X != 0`` mask, and the scores of a split
             "runner": n_docs * n_features + 3 * n_docs * 8,
             **model.terms}
    return model.backend, terms


def check_scale(name, params, *, n_docs, n_pairs, n_features, max_query,
                data_bytes, available=None, grouped=True, n_levels=None):
    """Refuse a task that cannot run at this size, before it allocates.

    Derived in: book/10_running_experiments.md#run-scale-guard

    Parameters
    ----------
    name, params, n_docs, n_pairs, n_features, max_query, data_bytes, grouped, n_levels :
        As :func:`estimate_peak`.
    available : int, optional
        Bytes available (default: :func:`available_memory`).

    Returns
    -------
    ScaleEstimate

    Raises
    ------
    ScaleError
        Explicit squared-hinge pairs larger than ``AUTO_MAX_PAIR_BYTES``
        were forced, or the estimate exceeds ``MEMORY_FRACTION`` of the
        available memory; the message names the method, the estimate, the
        available memory and the reason.
    """
    model = memory_model(name, params, n_docs=n_docs, n_pairs=n_pairs,
                         n_features=n_features, max_query=max_query,
                         grouped=grouped, n_levels=n_levels)
    backend, terms = estimate_peak(
        name, params, n_docs=n_docs, n_pairs=n_pairs, n_features=n_features,
        max_query=max_query, data_bytes=data_bytes, grouped=grouped,
        n_levels=n_levels)
    if available is None:
        available = available_memory()
    est = ScaleEstimate(method=name, backend=backend,
                        peak_bytes=int(sum(terms.values())),
                        available_bytes=-1 if available is None else int(available),
                        terms=terms)
    avail_text = ("unknown" if available is None
                  else f"{available / 2**30:.2f} GB available")
    pair_bytes = n_pairs * BYTES_PER_PAIR
    explicit = (LossBackend.PAIRS, LossBackend.NUMPY)
    if model.hinge_backend in explicit and pair_bytes > AUTO_MAX_PAIR_BYTES:
        raise ScaleError(
            f"method {name!r} refused at this size: backend={model.hinge_backend.value!r} would "
            f"build explicit arrays of {n_pairs:,} preference pairs "
            f"({pair_bytes / 2**30:.2f} GB at {BYTES_PER_PAIR} bytes a pair, "
            f"above AUTO_MAX_PAIR_BYTES = {AUTO_MAX_PAIR_BYTES / 2**30:.2f} GB) "
            "where the tree backend computes the same loss in O(documents) "
            f"memory; use backend='auto' or 'tree' ({est.describe()}; "
            f"{avail_text})"
        )
    if available is not None and est.peak_bytes > MEMORY_FRACTION * available:
        raise ScaleError(
            f"method {name!r} refused at this size: {est.describe()} for "
            f"{n_docs:,} documents, {n_pairs:,} pairs, {n_features} features, "
            f"more than {MEMORY_FRACTION:.0%} of the {avail_text}; the task "
            "would run out of memory"
        )
    return est


def check_load(dataset, fold, root=None, *, normalize=None, available=None):
    """Refuse to load a fold whose load would not fit, before it loads.

    The loader's peak (:func:`refimpl.data.estimate_fold_load`: the fold's
    text and ``X`` at the moment of its largest parse or join, from one
    streamed pass over the files) plus :data:`BASE_BYTES` of the process is
    held against :data:`MEMORY_FRACTION` of the memory available, as a
    fit's estimate is in :func:`check_scale`.  The runner calls it once per
    fold with tasks to fit, in the main process, before any worker loads.

    Derived in: book/10_running_experiments.md#run-scale-guard

    Parameters
    ----------
    dataset : str
        A LETOR data set name (the runner skips synthetic ones).
    fold : int
    root : str, optional
        LETOR root (default ``LETOR_HOME``).
    normalize : {None, "query", "standard"}, optional
    available : int, optional
        Bytes available (default: :func:`available_memory`).

    Returns
    -------
    refimpl.data.LoadEstimate

    Raises
    ------
    ScaleError
        The estimate exceeds ``MEMORY_FRACTION`` of the available memory;
        the message names the file parsed at the peak, the estimate and the
        limit.
    """
    from ..data import estimate_fold_load

    est = estimate_fold_load(dataset, fold, root, normalize=normalize)
    if available is None:
        available = available_memory()
    peak = est.peak_bytes + BASE_BYTES
    if available is not None and peak > MEMORY_FRACTION * available:
        raise ScaleError(
            f"loading {dataset!r} Fold{fold} refused at this size: est. "
            f"{peak / 2**30:.2f} GB (loader {est.peak_bytes / 2**30:.2f} at "
            f"its peak, parsing {est.path}; base {BASE_BYTES / 2**30:.2f}; "
            f"the fold's data {est.data_bytes / 2**30:.2f}, its text "
            f"{est.text_bytes / 2**30:.2f}), more than {MEMORY_FRACTION:.0%} "
            f"of the {available / 2**30:.2f} GB available; the load would run "
            "out of memory"
        )
    return est


def _nbytes(X):
    nbytes = getattr(X, "nbytes", None)
    if nbytes is None:                       # scipy.sparse: data + indices
        nbytes = sum(getattr(X, a).nbytes for a in ("data", "indices", "indptr")
                     if hasattr(X, a))
    return int(nbytes)


def check_task(name, params, fold, n_pairs, available=None):
    """:func:`check_scale` for a loaded fold (``refimpl.data.LetorFold``).

    The runner's hook: sizes are read from the training split, the data
    bytes from all three splits.

    Derived in: book/10_running_experiments.md#run-scale-guard
    """
    from .._validation import group_queries

    X, y, qid = fold.train
    groups = group_queries(qid, len(y))
    return check_scale(
        name, params, n_docs=len(y), n_pairs=int(n_pairs),
        n_features=int(X.shape[1]), max_query=int(groups.sizes.max()),
        data_bytes=sum(_nbytes(s[0]) for s in (fold.train, fold.vali, fold.test)),
        available=available, n_levels=count_levels(y),
        # a sparse X takes the two-pass path: no copy
        grouped=hasattr(X, "indptr") or groups.runs is not None)
