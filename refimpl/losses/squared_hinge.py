"""The pairwise squared hinge loss shared by every solver of the book.

.. math::

    L(w) = s \\sum_{(i, j) \\in P} \\max(0, \\delta - w^T (x_i - x_j))^2,

with margin ``delta`` (1 for RankSVM, ``1/r`` in FenchelRank) and scale
``s = 1`` or ``1/|P|`` (``normalize=True``, the per-pair average FSMRank and
Laporte et al. use).  The loss is the ``C``-weighted term of Lee & Lin (2014),
eq. 3; its gradient and generalised Hessian are their eqs. 10-11.

Everything is computed from the document scores ``z = X w``: the gradient is
``X^T dz`` and the Hessian-vector product ``X^T (H_z (X s))``, so the ``p x n``
pair-difference matrix is never built.  With the tree backend on a dense
``X`` both take one pass over ``X`` (``refimpl.kernels.fused``).

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive, ranking_problem
from ..exceptions import DataError
from ..kernels import squared_hinge as _k
from ..pairs import PAIR_SETS, label_blocks, pair_counts, preference_pairs
from . import _backend_cost as _cost
from ._base import CachedObjective
from ._hinge_hessian import dense_hessian as _dense_hessian
from ._score_space import pair_blocks as _pair_blocks
from ._score_space import score_space as _score_space
from ._tree_backend import (
    ONE_PASS_COPY_MAX_BYTES,
    _OnePassTree,
    _TreeBackend,
)

BACKENDS = ("auto", "pairs", "numpy", "tree")

#: ``backend="auto"`` picks the cheaper backend by the measured cost model
#: of :mod:`refimpl.losses._backend_cost` (explicit pairs: O(p) per value +
#: gradient, O(|SV(w)|) per Hessian product, two mat-vecs each and 24 bytes
#: per pair; the tree: O(l log l) and O(l log k), one pass over ``X`` when
#: ``one_pass`` applies), fitted by ``benchmarks/bench_backends.py``.  The
#: cost model sees the shape only: documents, features (of a sparse ``X``:
#: its non-zeros per row), pairs and relevance levels.

#: ``backend="auto"`` also uses the tree whenever the explicit pair arrays
#: (about 24 bytes per pair) would exceed this many bytes, so that data of
#: MSLR size (about 10^8 pairs) never allocates gigabytes of pair indices.
AUTO_MAX_PAIR_BYTES = 512 * 2**20
BYTES_PER_PAIR = 24


class _PairsBackend:
    """Explicit pair index arrays, numba loops over them.

    :meth:`value_dz` is O(p); it also compacts the active pairs SV(w) into
    the preallocated ``act_i``, ``act_j`` (int32 when the document indices
    fit, so 8 bytes per pair on top of the 16 of ``pi``, ``pj``), and
    :meth:`hess_dz` loops over those ``n_act`` pairs only, O(|SV(w)|), as
    LIBLINEAR's ``Hv`` loops over its index set ``I``.
    """

    name = "pairs"

    def __init__(self, pairs, n_samples, margin):
        self.pi, self.pj = pairs.i, pairs.j
        self.margin = margin
        self.dz = np.empty(n_samples)
        small = n_samples <= np.iinfo(np.int32).max
        idx = np.int32 if small else np.int64
        self.act_i = np.empty(len(self.pi), dtype=idx)
        self.act_j = np.empty(len(self.pi), dtype=idx)
        self.n_act = 0

    def value_dz(self, z):
        value, self.n_act = _k.value_dz(z, self.pi, self.pj, self.margin,
                                        self.dz, self.act_i, self.act_j)
        return value, self.dz

    def value(self, z):
        return _k.value_only(z, self.pi, self.pj, self.margin)

    def hess_dz(self, t):
        out = np.empty_like(t)
        _k.hess_dz(t, self.act_i, self.act_j, self.n_act, out)
        return out

    def n_active(self):
        return int(self.n_act)


class _NumpyBackend:
    """Plain vectorised NumPy: the reference the numba kernels are tested against."""

    name = "numpy"

    def __init__(self, pairs, n_samples, margin):
        self.pi, self.pj = pairs.i, pairs.j
        self.margin = margin
        self.n = n_samples
        self.active = np.zeros(len(self.pi), dtype=bool)

    def _residual(self, z):
        return self.margin - (z[self.pi] - z[self.pj])

    def value_dz(self, z):
        r = self._residual(z)
        self.active = r > 0
        r = np.where(self.active, r, 0.0)
        dz = np.bincount(self.pj, 2 * r, self.n) - np.bincount(self.pi, 2 * r, self.n)
        return float(r @ r), dz

    def value(self, z):
        r = np.maximum(self._residual(z), 0.0)
        return float(r @ r)

    def hess_dz(self, t):
        d = np.where(self.active, 2 * (t[self.pi] - t[self.pj]), 0.0)
        return np.bincount(self.pi, d, self.n) - np.bincount(self.pj, d, self.n)

    def n_active(self):
        return int(self.active.sum())


_BACKEND_CLASSES = {"pairs": _PairsBackend, "numpy": _NumpyBackend}


ONE_PASS = ("auto", True, False)

#: ``one_pass="auto"`` streams ``X`` once per product only from this size on:
#: a smaller ``X`` stays in the cache between the two BLAS mat-vecs, and
#: there one pass gains nothing (``benchmarks/bench_backends.py``,
#: 2026-11-25, modelled TRON fits with the tree: at 10,000 x 46 = 3.5 MiB
#: one pass 1.1x the two-pass time, at 40,000 x 25 = 7.6 MiB 0.97-1.04x,
#: at 40,000 x 46 = 14 MiB 0.84-0.88x, from 40,000 x 136 = 41 MiB
#: 0.43-0.75x; ``bench_hessvec.py`` part [2]: MQ2008 Fold1, 3.5 MB, 1.1x).
#: 4 MiB: past a core's 2 MiB of L2, where the two paths cost the same.
ONE_PASS_MIN_BYTES = 4 * 2**20

#: The shape :func:`choose_backend` assumes when it is not told the number
#: of features or levels (LETOR 4.0: 46 features, 3 levels).
DEFAULT_FEATURES = 46
DEFAULT_LEVELS = 3


def choose_backend(n_pairs: int, n_samples: int, which: str = "all", *,
                   n_features: float = DEFAULT_FEATURES,
                   n_levels: int = DEFAULT_LEVELS,
                   one_pass: bool | None = None,
                   hess_per_grad: float | None = None) -> str:
    """The backend ``"auto"`` resolves to (explicit pairs or the tree).

    Partial pairs need explicit pairs; above ``AUTO_MAX_PAIR_BYTES`` of pair
    arrays the tree is used.  Otherwise the backend whose modelled cost of
    a TRON fit is smaller (:func:`refimpl.losses._backend_cost.fit_cost`,
    constants measured by ``benchmarks/bench_backends.py``): explicit pairs
    against the tree with one pass over ``X`` (``one_pass=True``) or two
    BLAS mat-vecs (``False``; ``None``: one pass when a dense ``X`` of this
    shape has at least ``ONE_PASS_MIN_BYTES``, as ``one_pass="auto"``
    decides for a query-grouped ``X``).  ``n_features`` is the number of
    stored values per row (a sparse ``X``: ``X.nnz / n_samples``).  The
    choice is a deterministic function of the shape; more pairs per
    document (same ``n_samples``, ``n_features``, ``n_levels``) never
    turn a tree choice into explicit pairs
    (:func:`refimpl.losses._backend_cost.pairs_pay`).  ``hess_per_grad``:
    Hessian products per value + gradient of the solver (default TRON's
    ``TRON_CG_PER_NEWTON``; 0 for a first-order solver).
    """
    if which != "all":
        return "pairs"
    if n_pairs * BYTES_PER_PAIR > AUTO_MAX_PAIR_BYTES:
        return "tree"
    if one_pass is None:
        one_pass = n_samples * n_features * 8 >= ONE_PASS_MIN_BYTES
    tree = "tree1" if one_pass else "tree2"
    pay = _cost.pairs_pay(n_samples, n_features, n_pairs, n_levels, tree,
                          hess_per_grad=hess_per_grad)
    return "pairs" if pay else "tree"


def count_levels(y) -> int:
    """Number of distinct relevance labels (O(n) for small integer labels)."""
    y = np.asarray(y)
    if y.size == 0:
        return 0
    lo, hi = y.min(), y.max()
    if lo >= 0 and hi <= 4096:
        yi = y.astype(np.int64)
        if np.array_equal(yi, y):
            return int(np.count_nonzero(np.bincount(yi)))
    return int(len(np.unique(y)))


def one_pass_applies(one_pass, *, x_bytes, grouped, sparse=False,
                     tree_method="selection_tree"):
    """Whether the tree backend takes the one-pass path (see ``one_pass``).

    The one rule of :class:`PairwiseSquaredHinge` (its constructor, and
    ``"auto"``'s cost model through it) and of :func:`memory_terms`:
    ``x_bytes`` of a dense ``X``, ``grouped`` when each query's rows are
    adjacent.
    """
    if one_pass is False or tree_method != "selection_tree" or sparse:
        return False
    if one_pass is True:
        return True
    if x_bytes < ONE_PASS_MIN_BYTES:
        return False
    return bool(grouped) or x_bytes <= ONE_PASS_COPY_MAX_BYTES


def resolve_backend(backend, *, n_pairs, n_docs, n_features, n_levels,
                    which="all", tree_one_pass=False, hess_per_grad=None):
    """The backend a :class:`PairwiseSquaredHinge` of this shape uses.

    The one resolver of ``backend="auto"`` (:func:`choose_backend` on the
    shape, its levels counted by :func:`count_levels` on the labels) for the
    loss's constructor and for the memory model of every estimator on it
    (:func:`memory_terms`), so that the scale guard counts the arrays the
    fit builds.  ``n_levels=None`` (a shape whose labels are not known):
    explicit pairs wherever ``"auto"`` may pick them (below
    ``AUTO_MAX_PAIR_BYTES``), the larger of the two in memory.
    """
    if backend != "auto":
        return backend
    if n_levels is None:
        return ("tree" if which == "all" and n_pairs * BYTES_PER_PAIR > AUTO_MAX_PAIR_BYTES
                else "pairs")
    return choose_backend(n_pairs, n_docs, which, n_features=n_features,
                          n_levels=n_levels if which == "all" else 2,
                          one_pass=tree_one_pass, hess_per_grad=hess_per_grad)


#: Per document, the O(l) arrays of the tree backend (order, levels, the sort,
#: l+-, gradients, scratch: about 16 int64/float64; the sweep record of the
#: state and of a trial point, 8 more) plus the score vectors of the solvers
#: (a few more).
TREE_BYTES_PER_DOC = 32 * 8


def pair_index_bytes(n_docs):
    """Bytes a pair of :class:`_PairsBackend` keeps: ``pi``, ``pj`` (int64,
    :func:`refimpl.pairs.preference_pairs`) and the active set ``act_i``,
    ``act_j`` that ``kernels.squared_hinge.value_dz`` compacts (int32 when
    the document indices fit, as :class:`_PairsBackend` allocates them)."""
    return 16 + (8 if n_docs <= np.iinfo(np.int32).max else 16)


def memory_terms(*, n_docs, n_pairs, n_features, n_levels=None, grouped=True,
                 backend="auto", which="all", one_pass="auto",
                 extra_bytes_per_pair=0, hess_per_grad=None):
    """The loss's memory beyond the data, by term, and its resolved backend.

    The memory model of :class:`PairwiseSquaredHinge` that the scale guard
    (:mod:`refimpl.experiments.scale`) adds up, through the estimators'
    ``estimate_memory``: the tree backend keeps O(documents) arrays
    (:data:`TREE_BYTES_PER_DOC` each) and, for a dense ``X`` whose queries
    are not adjacent rows (``grouped=False``) of ``ONE_PASS_MIN_BYTES`` to
    ``ONE_PASS_COPY_MAX_BYTES``, a query-grouped copy of ``X``; explicit
    pairs cost :func:`pair_index_bytes` each (40 more with ``"numpy"``: its
    residual, mask and gathered scores; plus ``extra_bytes_per_pair`` a
    solver keeps per pair) and eight vectors of the documents.
    ``backend="auto"`` resolves as the loss's constructor does
    (:func:`resolve_backend`, with the labels' ``n_levels`` and the
    solver's ``hess_per_grad``).

    Returns
    -------
    backend : str
        ``"tree"``, ``"pairs"`` or ``"numpy"``.
    terms : dict of str to int
        Bytes: ``"tree"`` (and ``"grouped copy"``) or ``"pairs"``.
    """
    X = n_docs * n_features * 8
    backend = resolve_backend(
        backend, n_pairs=n_pairs, n_docs=n_docs, n_features=n_features,
        n_levels=n_levels, which=which, hess_per_grad=hess_per_grad,
        tree_one_pass=one_pass_applies(one_pass, x_bytes=X, grouped=grouped))
    if backend == "tree":
        terms = {"tree": n_docs * TREE_BYTES_PER_DOC}
        if (not grouped and one_pass == "auto"
                and ONE_PASS_MIN_BYTES <= X <= ONE_PASS_COPY_MAX_BYTES):
            terms["grouped copy"] = X
        return backend, terms
    per_pair = (pair_index_bytes(n_docs) + (40 if backend == "numpy" else 0)
                + extra_bytes_per_pair)
    return backend, {"pairs": n_pairs * per_pair + n_docs * 8 * 8}


class PairwiseSquaredHinge(CachedObjective):
    """Pairwise squared hinge loss with value, gradient and Hessian-vector product.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), or RankingProblem
        The features, or the whole validated problem
        (:class:`~refimpl._validation.RankingProblem`, ``y`` and ``qid`` then
        not given): an estimator's ``fit`` passes the one it built, so that
        nothing is checked or grouped twice.
    y : array-like of shape (n,)
        Graded relevance labels.
    qid : array-like of shape (n,), optional
        Query ids (need not be contiguous); ``None`` means one query.
    margin : float, default 1.0
        The ``delta`` in ``max(0, delta - w^T(x_i - x_j))``.
    normalize : bool, default False
        Divide by the number of pairs ``p`` (a per-pair average).
    backend : {"auto", "pairs", "numpy", "tree"}
        ``"pairs"``: numba loops over explicit pair index arrays (O(p) per
        call); ``"numpy"``: the vectorised reference; ``"tree"``: Lee & Lin's
        order-statistic-tree statistics (O(l log l) per function and
        O(l log k) per Hessian-vector product, no pair arrays at all);
        ``"auto"``: the one of explicit pairs and the tree whose measured
        cost model (:func:`choose_backend`) predicts the faster TRON fit at
        this shape (documents, features, pairs, levels, and whether the
        tree takes one pass over ``X``), and the tree whenever the pair
        arrays would exceed ``AUTO_MAX_PAIR_BYTES``.  Every backend computes
        the same function, so the choice changes the time, not the fit.
    tree_method : {"selection_tree", "avl", "direct", "prsvm"}
        The structure the tree backend uses (Lee & Lin sections 2.2-2.4, and
        the PRSVM+ decomposition of section 3.1 as a baseline).
    which : {"all", "adjacent"}
        ``"adjacent"`` keeps only pairs of adjacent relevance levels (Lee &
        Lin section 5, partial pairs); explicit-pair backends only.
    one_pass : {"auto", True, False}
        With the tree backend (``tree_method="selection_tree"``) and a dense
        ``X``: compute value and gradient, and each Hessian-vector product,
        in one pass over ``X`` (``refimpl.kernels.fused``: query by
        query, ``X_q w`` or ``X_q s``, the tree, ``X_q^T`` of the result
        while ``X_q`` is in the cache) instead of two BLAS mat-vecs around
        the tree.  ``"auto"`` uses it when ``X`` has at least
        ``ONE_PASS_MIN_BYTES`` (a smaller ``X`` stays in the cache, and two
        passes cost no more: ``benchmarks/bench_backends.py``) and, since the pass needs each query's rows
        adjacent, when the input lists every query's documents together (no
        copy) or a query-grouped copy of ``X`` needs at most
        ``ONE_PASS_COPY_MAX_BYTES``; ``True`` always uses it (copying if
        needed); ``False`` keeps the two-pass path.  Ignored by the other backends
        and on sparse ``X``.  The scores of the one-pass path are summed in
        a fixed order (``refimpl.kernels._simd.row_dot``), the same on
        every machine; they differ from BLAS's ``X @ w`` in the last bits,
        so the two paths agree to rounding, not bit for bit.
    hess_per_grad : float, optional
        Hessian-vector products per value + gradient of the solver that
        will use the loss, for ``backend="auto"``'s cost model
        (:func:`choose_backend`): default TRON's; 0 for a first-order
        solver (FISTA, FSMRank) or proximal Newton, which builds its
        Hessian matrix once per step instead of taking products.

    Attributes
    ----------
    one_pass_ : bool
        Whether the one-pass path is in use.
    one_pass_copy_bytes_ : int
        Bytes of the query-grouped copy of ``X`` it keeps (0: none).

    Notes
    -----
    Cached state, LIBLINEAR style: :meth:`fun` stores the scores ``X w`` and
    the active pairs ``SV(w) = {(i, j) : w^T(x_i - x_j) < delta}`` (Lee & Lin
    2014, eq. 14); :meth:`grad` at the same ``w`` reuses them and
    :meth:`hess_vec` uses the active set of the last :meth:`fun`.  On the
    one-pass path :meth:`fun` computes the gradient in its pass too (the
    extra work is arithmetic on rows already in the cache), so
    :meth:`grad` at the same ``w`` costs nothing.

    Score reuse (:attr:`score_reuse`, true with the selection tree;
    :func:`refimpl.solvers.tron`):
    :meth:`hess_vec_scores` also returns ``X s``, :meth:`last_scores` the
    scores of the current state, :meth:`fun_from_scores` the value at a
    point from its scores without touching ``X`` or the cached state, so
    a solver can evaluate ``w + sum_i a_i s_i`` from ``X w + sum_i a_i X
    s_i`` in O(l log l), and :meth:`accept_trial` moves the state there.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """

    def __init__(self, X, y=None, qid=None, *, margin=1.0, normalize=False,
                 backend="auto", tree_method="selection_tree", which="all",
                 one_pass="auto", hess_per_grad=None):
        self.problem = ranking_problem(X, y, qid)
        self.X, self.y, self.groups = self.problem.X, self.problem.y, self.problem.groups
        self.qid = self.problem.qid
        self.margin = check_positive(margin, "margin")
        if backend not in BACKENDS:
            raise DataError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if which not in PAIR_SETS:
            raise DataError(f"which must be one of {PAIR_SETS}, got {which!r}")
        if which != "all" and backend == "tree":
            raise DataError(
                "which='adjacent' (partial pairs) needs explicit pairs: use "
                "backend='pairs' or 'auto'"
            )
        if not (one_pass is True or one_pass is False or one_pass == "auto"):
            raise DataError(f"one_pass must be one of {ONE_PASS}, got {one_pass!r}")
        self.which = which
        self.tree_method = tree_method
        self.one_pass = one_pass
        n = self.X.shape[0]
        self.n_pairs = int(pair_counts(self.problem, which=which).sum())
        if self.n_pairs == 0:
            raise DataError(
                "no preference pairs: no query has two documents with different "
                "labels, so a pairwise ranking loss is identically zero"
            )
        if backend == "auto":
            d = (self.X.nnz / max(n, 1) if sp.issparse(self.X)
                 else self.X.shape[1])
            backend = resolve_backend(
                backend, n_pairs=self.n_pairs, n_docs=n, n_features=d,
                n_levels=count_levels(self.y), which=which,
                tree_one_pass=self._use_one_pass("tree", one_pass),
                hess_per_grad=hess_per_grad)
        self.backend = backend
        self.hess_per_grad = hess_per_grad
        self.scale = 1.0 / self.n_pairs if normalize else 1.0
        self.normalize = bool(normalize)
        self.one_pass_ = self._use_one_pass(backend, one_pass)
        if self.one_pass_:
            self.pairs = None
            self._impl = _OnePassTree(self.X, self.margin, self.y, self.groups)
        elif backend == "tree":
            self.pairs = None  # never materialised: O(l) memory
            self._impl = _TreeBackend.from_problem(self.problem, self.margin,
                                                   method=tree_method)
        else:
            self.pairs = preference_pairs(self.problem, which=which)
            self._impl = _BACKEND_CLASSES[backend](self.pairs, n, self.margin)
        self.one_pass_copy_bytes_ = (self._impl.copy_bytes if self.one_pass_
                                     else 0)
        self._w = None
        self._value = None
        self._dz = None
        self._z = None
        self._grad = None
        self._trial = None

    def _use_one_pass(self, backend, one_pass):
        """Whether the one-pass path applies (see ``one_pass``)."""
        sparse = sp.issparse(self.X)
        return backend == "tree" and one_pass_applies(
            one_pass, x_bytes=0 if sparse else self.X.nbytes,
            grouped=self.groups.runs is not None, sparse=sparse,
            tree_method=self.tree_method)

    def with_backend(self, backend, **kwargs):
        """The same loss on the same data with another backend.

        Lets a caller switch computation per call site (e.g. explicit pairs
        inside a line search on a tiny problem, the tree elsewhere).  The
        data are not checked or grouped again (the same
        :class:`~refimpl._validation.RankingProblem` is passed on).
        """
        params = {"margin": self.margin, "normalize": self.normalize,
                  "tree_method": self.tree_method, "which": self.which,
                  "one_pass": self.one_pass, "hess_per_grad": self.hess_per_grad}
        params.update(kwargs)
        return type(self)(self.problem, backend=backend, **params)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def score_reuse(self) -> bool:
        """Whether the score-reuse methods pay: the backend can adopt a
        trial's state (the selection tree), so an accepted trial point is
        never evaluated twice.  With explicit pairs a solver is better off
        evaluating the trial with :meth:`fun` (which sets the state)."""
        return bool(getattr(self._impl, "can_adopt", False))

    def pair_indices(self):
        """``(i, j)`` of the explicit pairs as contiguous int64 arrays, or ``None``.

        ``None`` with the tree backend, which never builds them.  Part of
        :class:`~refimpl.losses.PairwiseLineSearchObjective`.
        """
        if self.pairs is None:
            return None
        return (np.ascontiguousarray(self.pairs.i, dtype=np.int64),
                np.ascontiguousarray(self.pairs.j, dtype=np.int64))

    def label_blocks(self):
        """The data in the label-block layout, or ``None``.

        ``(X_blocks, start, stop, heads)``: the rows of ``X`` laid out by
        :func:`refimpl.pairs.label_blocks` (a C-contiguous float64 copy,
        without the queries that have no pair: they enter neither the loss
        nor its gradient), and the pairs of ``P`` as blocks of that layout.
        ``None`` for a sparse ``X`` or ``which="adjacent"``.  Lets FenchelRank's
        Algorithm 1 loop over the pairs without index arrays (its
        ``line_search="blocks"``).  Part of
        :class:`~refimpl.losses.PairwiseLineSearchObjective`.
        """
        if self.which != "all" or sp.issparse(self.X):
            return None
        rows, start, stop, heads = label_blocks(self.problem, pairs_only=True)
        return np.take(self.X, rows, axis=0), start, stop, heads

    def pair_norm2_operator(self):
        """A closure ``b -> ||K b||^2``, ``K`` the pair-difference matrix.

        A copy of the loss evaluated at ``w = 0`` has every pair active (all
        residuals equal the margin ``> 0``), so its Hessian is ``2 s K^T K``
        and ``||K b||^2 = b^T H b / (2 s)``; no pair arrays are needed.  Part
        of :class:`~refimpl.losses.PairwiseLineSearchObjective`.
        """
        full = self.with_backend(self.backend)
        full.fun(np.zeros(self.n_features))
        return lambda b: float(b @ full.hess_vec(b)) / (2.0 * full.scale)

    def scores(self, w) -> np.ndarray:
        """Document scores ``X w`` (on the one-pass path with its bits)."""
        w = self._check_w(w)
        if self.one_pass_:
            return self._impl.scores(w)
        return np.asarray(self.X @ w, dtype=np.float64).ravel()

    def fun(self, w) -> float:
        """Loss value at ``w``; caches the scores and the active pairs.

        On the one-pass path the gradient comes out of the same pass.
        """
        w = self._check_w(w)
        if self.one_pass_:
            value, grad = self._impl.value_grad(w)
            self._grad = self.scale * grad
            self._z = self._impl.z  # exact scores, internal order
        else:
            self._z = self.scores(w)
            value, self._dz = self._impl.value_dz(self._z)
            self._grad = None
        self._w = w.copy()
        self._value = self.scale * value
        return self._value

    def grad(self, w) -> np.ndarray:
        """Gradient ``-2 s sum_{SV} r_ij (x_i - x_j)`` (Lee & Lin eq. 10)."""
        w = self._at(w)
        if self._grad is None:
            if self.one_pass_:  # after accept_trial: X^T dz, exact scores
                self._z, grad = self._impl.scores_grad(w)
                self._grad = self.scale * grad
            else:
                self._grad = self.scale * np.asarray(self.X.T @ self._dz).ravel()
        return self._grad.copy()

    def hess_vec(self, s) -> np.ndarray:
        """Generalised Hessian times ``s``: ``2 s sum_{SV} (x_i-x_j)(x_i-x_j)^T s``.

        Uses the active set of the last :meth:`fun` (Lee & Lin 2014, eq. 11).
        """
        if self.one_pass_:  # X s stays in the backend: no copy
            return self.scale * self._impl.hess_vec(self._direction(s))[0]
        return self.hess_vec_scores(s)[0]

    def hess_vec_scores(self, s):
        """``(H s, X s)``: :meth:`hess_vec` and the scores of ``s``.

        ``X s`` is computed for the product anyway (inside the one pass on
        the one-pass path, with :meth:`scores`' bits); a solver combines
        these to get the scores of a trial point without a mat-vec.
        """
        s = self._direction(s)
        if self.one_pass_:
            out, t = self._impl.hess_vec(s)
            return self.scale * out, self._impl.from_rows(t).copy()
        t = self.scores(s)
        hv = np.asarray(self.X.T @ self._impl.hess_dz(t)).ravel()
        return self.scale * hv, t

    def last_scores(self) -> np.ndarray:
        """The scores ``X w`` of the last :meth:`fun` (a new array)."""
        if self._w is None:
            raise RuntimeError("call fun(w) before last_scores()")
        if self.one_pass_:
            if self._z is None:  # after accept_trial, before grad
                self.grad(self._w)
            return self._impl.from_rows(self._z).copy()
        if self._z is None:  # after accept_trial: the exact scores
            self._z = self.scores(self._w)
        return self._z.copy()

    def fun_from_scores(self, w, z) -> float:
        """The loss at ``w`` from its scores ``z = X w``; no pass over ``X``.

        O(l log l) (the sort and the tree); the cached state is untouched,
        and the trial's state is kept aside for :meth:`accept_trial`.  The
        loss depends on ``w`` only through ``z``; ``w`` identifies the trial.
        """
        z = np.ascontiguousarray(z, dtype=np.float64)
        if z.shape != (self.X.shape[0],):
            raise DataError(
                f"z must have shape ({self.X.shape[0]},), got {z.shape}")
        z = np.array(self._impl.to_rows(z) if self.one_pass_ else z)
        value = self.scale * self._impl.value(z)
        self._trial = (self._check_w(w).copy(), value, z)
        return value

    def accept_trial(self, w):
        """Move the cached state to ``w``, the point of the last :meth:`fun_from_scores`.

        On the one-pass path the trial's sort, counts and ``dz`` become the
        state (no sort, no tree, no pass over ``X``); the next :meth:`grad`
        takes one pass for ``X^T dz`` and the exact scores ``X w`` (which
        :meth:`last_scores` then returns).  The state is that of the trial
        scores, within one step's rounding of ``X w``.  Otherwise, or if
        ``w`` is not the last trial's point, this is :meth:`fun` at ``w``.
        Returns the loss value at ``w``.
        """
        w = self._check_w(w)
        trial = self._trial
        self._trial = None
        if not (self.score_reuse and trial is not None
                and np.array_equal(w, trial[0])):
            return self.fun(w)
        self._impl.adopt(trial[2])
        self._dz = self._impl.dz
        self._w = w.copy()
        self._value = trial[1]
        self._grad = None
        self._z = None
        return self._value

    @property
    def dense_hessian(self):
        """Proximal Newton's ``dense_hessian`` capability
        (``refimpl.losses._protocol``): the generalised Hessian matrix
        from the active pairs' Laplacian (explicit pairs, or the tree on a
        dense ``X``; ``refimpl.losses._hinge_hessian``), else None."""
        return _dense_hessian(self)

    @property
    def pair_blocks(self):
        """FenchelRank's ``pair_blocks`` capability
        (``refimpl.losses._protocol``): :meth:`label_blocks` with the
        compiled passes of Algorithm 1 over them
        (``refimpl.losses._score_space.PairBlocks``), or None."""
        return _pair_blocks(self)

    @property
    def score_space(self):
        """FenchelRank's ``score_space`` capability
        (``refimpl.losses._protocol``): the scores ``X w`` carried along
        the l1-ball steps, with explicit pairs or the selection tree
        (``refimpl.losses._score_space``; reading it copies ``X``
        column-major up to ``FORTRAN_COPY_BYTES``), else None."""
        return _score_space(self)

    def value_at(self, w) -> float:
        """Loss value only, leaving the cached state untouched."""
        return self.fun_from_scores(w, self.scores(w))

    def n_active_pairs(self) -> int:
        """Size of SV(w) at the last :meth:`fun`."""
        return self._impl.n_active()
