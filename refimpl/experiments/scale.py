"""Up-front scale guard: can this method fit data of this size here?

Before a task fits, the runner calls :func:`check_scale` with the sizes of
the fold (documents, preference pairs, features, the longest query).  It
returns a :class:`ScaleEstimate`: which loss backend the method will use
and an estimate of the task's peak resident memory.  It raises
:class:`ScaleError`, naming the method, the estimate, the available memory
and the reason, when

* a method on the pairwise squared hinge (RankSVM, FenchelRank, FSMRank,
  the sparse RankSVMs, and the RankSVM stages of GAS-E, FSMSVM and the
  LifeRank pipelines) would build explicit pair arrays where the tree
  backend applies and the arrays are larger than
  ``refimpl.losses.squared_hinge.AUTO_MAX_PAIR_BYTES`` (``backend=
  "pairs"`` or ``"numpy"`` forced at that size): Lee & Lin's tree computes
  the same loss in O(l) memory, so the pairs are never needed;
* the estimate exceeds :data:`MEMORY_FRACTION` of the memory available now
  (``MemAvailable`` of ``/proc/meminfo``, else ``psutil``), so that the
  task fails with that message instead of being killed mid-fit.

The estimates are upper bounds built from what each method allocates,
term by term (see :func:`estimate_peak`), with constants measured on
generated MSLR-WEB10K-shaped data (``benchmarks/bench_mslr_scale.py``
prints estimate and measured peak side by side).  LifeRank's pairwise
logistic loss has no tree backend: it keeps its explicit pairs, 16 bytes
each, and the guard counts them.

Derived in: book/08_side_by_side.md#side-by-side
"""

from __future__ import annotations

from dataclasses import dataclass

from ..exceptions import DataError
from ..losses.squared_hinge import (
    AUTO_MAX_PAIR_BYTES,
    BYTES_PER_PAIR,
    ONE_PASS_COPY_MAX_BYTES,
    ONE_PASS_MIN_BYTES,
    choose_backend,
)

__all__ = [
    "MEMORY_FRACTION",
    "ScaleError",
    "ScaleEstimate",
    "available_memory",
    "check_scale",
    "check_task",
    "estimate_peak",
]

#: Refuse a task whose estimated peak exceeds this fraction of the memory
#: available when it starts (the rest is head-room for the estimate's error
#: and for other processes).
MEMORY_FRACTION = 0.8
#: Resident size of a runner process before the data: interpreter, NumPy,
#: SciPy, scikit-learn, numba and its compiled kernels (measured ~0.35 GB).
BASE_BYTES = 600 * 2**20
#: Per document, the O(l) arrays of the tree backend (order, levels, the sort,
#: l+-, gradients, scratch: about 16 int64/float64; the sweep record of the
#: state and of a trial point, 8 more) plus the score vectors of the solvers
#: (a few more).
TREE_BYTES_PER_DOC = 32 * 8
#: Document pairs ``(a, b)`` whose sign rows ``kendall_similarity`` builds at
#: once (its ``chunk``); the longest query bounds it too.
SIGN_CHUNK = 1 << 17
#: Methods on the pairwise squared hinge, and the RankSVM stages of the
#: two-stage methods (name -> (stages on the squared hinge, extra term)).
_SQUARED_HINGE = {
    "ranksvm", "fenchelrank", "fsmrank", "gas-e", "fsmsvm", "ranksvm-l1",
    "ranksvm-log", "ranksvm-mcp", "ranksvm-lp", "liferank-ranksvm",
}


class ScaleError(DataError):
    """A task would not fit in memory, or would build pairs the tree avoids."""


@dataclass(frozen=True)
class ScaleEstimate:
    """What :func:`check_scale` found for one task.

    Attributes
    ----------
    method : str
    backend : str
        The squared-hinge backend the method resolves to (``"tree"``,
        ``"pairs"``, ``"numpy"``), ``"pairs (logistic)"`` for LifeRank's
        loss, or ``"-"`` for methods without a pairwise loss.
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


def _hinge_backend(params, n_docs, n_pairs):
    backend = str(params.get("backend", "auto"))
    which = str(params.get("pairs", "all"))
    if backend == "auto":
        backend = choose_backend(n_pairs, n_docs, which)
    return backend


def estimate_peak(name, params, *, n_docs, n_pairs, n_features, max_query,
                  data_bytes, grouped=True):
    """Estimated peak memory of one task, by term, and its loss backend.

    Parameters
    ----------
    name : str
        Registry name of the method.
    params : dict
        Its settings, fixed ones included.
    n_docs, n_pairs, n_features : int
        Of the training split (``n_pairs``: preference pairs, all levels).
    max_query : int
        Documents in the longest training query.
    data_bytes : int
        Bytes of the loaded fold (train, validation and test matrices).
    grouped : bool, optional
        Whether each training query's documents are adjacent rows
        (``refimpl.losses._tree_backend.query_runs``; LETOR files).  If
        not, the one-pass tree backend works on a query-grouped copy of the
        training matrix, counted here when it makes one (dense ``X`` from
        ``ONE_PASS_MIN_BYTES`` to ``ONE_PASS_COPY_MAX_BYTES``).

    Returns
    -------
    backend : str
    terms : dict of str to int
        ``base``, ``data`` and the method's own terms (bytes).
    """
    X = n_docs * n_features * 8           # one copy of the training matrix
    terms = {"base": BASE_BYTES, "data": int(data_bytes),
             # the runner's ``X != 0`` mask, and the scores of a split
             "runner": n_docs * n_features + 3 * n_docs * 8}
    backend = "-"
    if name in _SQUARED_HINGE:
        backend = _hinge_backend(params, n_docs, n_pairs)
        if backend == "tree":
            terms["tree"] = n_docs * TREE_BYTES_PER_DOC
            if (not grouped and params.get("one_pass", "auto") == "auto"
                    and ONE_PASS_MIN_BYTES <= X <= ONE_PASS_COPY_MAX_BYTES):
                terms["grouped copy"] = X
        else:
            per_pair = BYTES_PER_PAIR + (40 if backend == "numpy" else 0)
            if name == "fenchelrank" and params.get("linesearch", "auto") in ("auto", "pairs"):
                per_pair += 16            # the exact line search's breakpoints
            terms["pairs"] = n_pairs * per_pair + n_docs * 8 * 8
    if name in ("fsmrank", "fsmsvm"):
        # pearson statistics: a centred copy of X; the lifted 2d problem is O(d)
        terms["method"] = X + 16 * n_features ** 2 * 8
    elif name == "gas-e":
        rows = min(SIGN_CHUNK, max_query * (max_query - 1) // 2)
        # two gathered row blocks, their difference, its sign; d x d Grams
        terms["method"] = 4 * rows * n_features * 8 + 8 * n_features ** 2 * 8
    elif name.startswith("liferank"):
        k = int(params.get("n_components", 10))
        # logistic loss: int64 (i, j) per pair, per-document work arrays,
        # X T and its gradient, the order of the pairs' queries
        terms["logistic pairs"] = 16 * n_pairs + 8 * n_docs * (4 + 2 * k)
        if backend == "-":
            backend = "pairs (logistic)"
        else:
            backend = f"pairs (logistic) + {backend}"
    elif name == "linreg":
        # scikit-learn centres a copy of X; lstsq copies it again (gelsd)
        terms["method"] = 2 * X
    elif name == "lambdamart":
        # X reordered by query, LightGBM's binned copy and its own buffers
        terms["method"] = X + n_docs * n_features * 4
    return backend, terms


def check_scale(name, params, *, n_docs, n_pairs, n_features, max_query,
                data_bytes, available=None, grouped=True):
    """Refuse a task that cannot run at this size, before it allocates.

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    name, params, n_docs, n_pairs, n_features, max_query, data_bytes, grouped :
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
    backend, terms = estimate_peak(
        name, params, n_docs=n_docs, n_pairs=n_pairs, n_features=n_features,
        max_query=max_query, data_bytes=data_bytes, grouped=grouped)
    if available is None:
        available = available_memory()
    est = ScaleEstimate(method=name, backend=backend,
                        peak_bytes=int(sum(terms.values())),
                        available_bytes=-1 if available is None else int(available),
                        terms=terms)
    avail_text = ("unknown" if available is None
                  else f"{available / 2**30:.2f} GB available")
    pair_bytes = n_pairs * BYTES_PER_PAIR
    if name in _SQUARED_HINGE and backend in ("pairs", "numpy") \
            and pair_bytes > AUTO_MAX_PAIR_BYTES:
        raise ScaleError(
            f"method {name!r} refused at this size: backend={backend!r} would "
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

    Derived in: book/08_side_by_side.md#side-by-side
    """
    from .._validation import group_queries
    from ..losses._tree_backend import query_runs

    X, y, qid = fold.train
    groups = group_queries(qid, len(y))
    return check_scale(
        name, params, n_docs=len(y), n_pairs=int(n_pairs),
        n_features=int(X.shape[1]), max_query=int(groups.sizes.max()),
        data_bytes=sum(_nbytes(s[0]) for s in (fold.train, fold.vali, fold.test)),
        available=available,
        # a sparse X takes the two-pass path: no copy
        grouped=hasattr(X, "indptr") or query_runs(groups) is not None)
