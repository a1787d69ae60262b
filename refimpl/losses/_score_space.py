r"""FenchelRank's score spaces: the squared hinge's ``score_space`` capability.

The fast paths of :func:`refimpl.solvers.fenchelrank` (Lai et al. 2013,
eqs. 18-21; the book's pairwise, away-step and face-Newton variants, and
Algorithm 1 on the tree) carry the document scores ``z = X w`` along the
steps instead of multiplying by ``X``: a step ``w + t d`` moves them to
``z + t u`` with ``u = X d`` one or two columns of ``X`` (or ``z`` itself),
and value, gradient, Hessian blocks and the exact step come from ``z``.
What that needs of the loss -- its ``X``, pair arrays, tree state and
kernels -- lives here, behind the capability
(:data:`refimpl.losses.CAPABILITIES`); the solver sees only the methods of
:class:`PairScoreSpace` and :class:`TreeScoreSpace`.

Derived in: book/03_fenchelrank_duality.md#fenchelrank
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels import fenchel as _k
from ..kernels import squared_hinge as _sh

#: Largest dense ``X`` of which a score space keeps a Fortran-ordered copy
#: (contiguous columns for ``X d`` and the Hessian block).
FORTRAN_COPY_BYTES = 64 * 2**20


def _column_major(X):
    """``(sparse, X)`` with ``X`` read by columns: CSC, or a Fortran copy.

    Columns are contiguous in a Fortran copy; above
    :data:`FORTRAN_COPY_BYTES` they are read in place (strided), no copy.
    """
    if sp.issparse(X):
        return True, X.tocsc()
    X = np.asarray(X, dtype=np.float64)
    return False, np.asfortranarray(X) if X.nbytes <= FORTRAN_COPY_BYTES else X


class PairScoreSpace:
    """Scores ``z = X w`` kept along the steps, value and gradient from them.

    FenchelRank's ``score_space`` capability with explicit pairs
    (:data:`refimpl.losses.CAPABILITIES`): ``X d`` is assembled from
    columns of the loss's ``X`` (a Fortran-ordered copy up to :data:`FORTRAN_COPY_BYTES`, else
    read in place) or from ``z`` itself, the value and the score
    gradient come from :func:`refimpl.kernels.squared_hinge.value_dz` on
    ``z``, Hessian blocks from its ``hess_dz``, and the exact step from
    :func:`refimpl.kernels.fenchel.linesearch_pairs` on the residuals.
    """

    #: The exact step is :meth:`exact_step`'s sorted breakpoints; the
    #: solver keeps ``z`` along the step itself.
    follows_steps = False

    def __init__(self, loss):
        self._sh = _sh
        self.loss = loss
        self.sparse, self.X = _column_major(loss.X)
        self.pi, self.pj = loss.pair_indices()
        p = len(self.pi)
        self.n_docs = self.X.shape[0]
        self.scale = float(loss.scale)
        self.margin = float(loss.margin)
        self.dz = np.empty(self.n_docs)
        self.act_i = np.empty(p, dtype=np.int64)
        self.act_j = np.empty(p, dtype=np.int64)
        self.n_act = 0
        self.a = np.empty(p)
        self.c = np.empty(p)

    def columns(self, idx):
        """The columns ``idx`` of ``X`` as a dense ``(l, len(idx))`` array."""
        cols = self.X[:, idx]
        return cols.toarray() if self.sparse else cols

    def column(self, j):
        """Column ``j`` of ``X``: the image of ``e_j``."""
        return self.columns([j])[:, 0]

    def scores(self, w):
        """``X w`` (one pass over ``X``), for a refresh of the carried ``z``."""
        return np.ascontiguousarray(self.loss.scores(w), dtype=np.float64)

    def value_grad(self, z):
        """``(L, grad L)`` at the point of scores ``z``; its active set becomes the state."""
        value, self.n_act = self._sh.value_dz(z, self.pi, self.pj, self.margin,
                                              self.dz, self.act_i, self.act_j)
        grad = np.asarray(self.X.T @ self.dz, dtype=np.float64).ravel()
        return self.scale * value, self.scale * grad

    def hessian(self, idx):
        """Generalised Hessian block ``H_SS`` at the last :meth:`value_grad`."""
        U = np.asfortranarray(self.columns(idx), dtype=np.float64)
        HU = np.empty_like(U, order="F")
        for col in range(U.shape[1]):
            self._sh.hess_dz(U[:, col], self.act_i, self.act_j, self.n_act,
                             HU[:, col])
        return self.scale * (U.T @ HU)

    def exact_step(self, z, u):
        """``(a, c)`` with ``L(w + t d) = s sum_P max(0, a - t c)^2``, ``u = X d``.

        The residuals ``a = margin - (z_i - z_j)`` and ``c = u_i - u_j`` of
        eq. 20 (arrays of the space, overwritten by the next call), whose
        smallest minimiser on [0, 1] is
        :func:`refimpl.kernels.fenchel.linesearch_pairs`'s.
        """
        _k.pair_residuals(z, u, self.pi, self.pj, self.margin, self.a, self.c)
        return self.a, self.c


class TreeScoreSpace:
    """Scores ``z = X w`` kept along the steps, for the pair-free tree backend.

    FenchelRank's ``score_space`` capability on the selection tree: the
    same role as :class:`PairScoreSpace` without pair arrays: value and
    score gradient ``dz`` from the tree's sweep over the sorted scores
    (O(l log l), re-sorted from the last order), the gradient ``X^T dz``
    (the one pass over ``X`` of an update), Hessian blocks from the
    tree's ``hess_dz`` (O(l) each), and the exact step by safeguarded
    Newton on ``phi(t) = L(z + t u)`` (:meth:`line`, for
    :func:`refimpl.solvers.fenchelrank.newton_linesearch`), each
    evaluation a sweep over ``z + t u`` that never touches ``X``.  The
    tree's state follows the last evaluated point (``adopt``), so the
    step's last trial is the next iterate's state: no re-evaluation
    (:attr:`follows_steps`).

    *Every pair active.*  Where ``margin - (z_i - z_j) > 0`` for every pair
    (:func:`refimpl.kernels.fenchel.all_active_value_dz` tests it in one
    O(l) pass; on the l1 ball of eq. 4 it always holds when
    ``r max |x_i - x_j|_inf < 1``, e.g. features in [0, 1] and r <= 1) the
    loss is a quadratic there: value and ``dz`` come from per-level sums,
    with no sort and no tree (whose own state is left where it was; its
    next sweep re-sorts from its last order, which gives the same
    permutation), and so do the line search's curvature and Hessian
    products.  Then ``dz_i = 2 (c_i z_i + kappa_{q,m})`` with ``c_i`` the
    documents of other levels in ``i``'s query and ``kappa`` one number per
    query and level, so ``X^T dz = 2 (h + N^T kappa)``, ``h = X^T (c * z)``
    and ``N`` the per-(query, level) sums of the rows of ``X``.  Along a
    step ``u = alpha z + X_S beta`` (every variant's), ``h`` moves by
    ``t (alpha h + G_S beta)``, ``G_j = X^T (c * x_j)`` computed once per
    feature: the update then makes no pass over ``X`` (dense ``X``; ``h``
    is recomputed with ``z``, when the solver refreshes it).

    ``z`` lives in the order of the tree's rows (the caller's ``X`` on the
    two-pass path, the query-grouped one on the one-pass path).  ``X``
    is read through a Fortran-ordered copy up to
    :data:`FORTRAN_COPY_BYTES` (contiguous columns, and ``X^T v`` as
    ``d`` contiguous dot products).
    """

    #: The line search (:meth:`line`) leaves the state at the new point.
    follows_steps = True

    def __init__(self, loss):
        impl = loss._impl
        X = impl.X if loss.one_pass_ else loss.X
        self.loss = loss
        self.impl = impl
        self.sparse, self.X = _column_major(X)
        self.n_docs = X.shape[0]
        self.scale = float(loss.scale)
        self._to_rows = getattr(impl, "to_rows", lambda v: v)
        self._levels = (impl.level, impl.nlev, impl.order, impl.indptr)
        self._margin = float(impl.margin)
        n_rows = int(np.sum(impl.nlev))
        # two buffers each for the all-active state's dz and kappa: the
        # line search's previous point stays readable
        self._bufs = [(np.empty(self.n_docs), np.empty(n_rows)),
                      (np.empty(self.n_docs), np.empty(n_rows))]
        # (z, unscaled value, (dz, kappa) or None) of the last evaluated
        # point; None when the tree holds that state (impl.dz is its dz)
        self._state = None
        self._coef = None     # c_i, N (lazy: first all-active gradient)
        self._N = None
        self._gcols = {}      # j -> G_j
        self._h = None        # (z, X^T (c * z))

    def columns(self, idx):
        """The columns ``idx`` of ``X`` (tree order) as a dense array."""
        cols = self.X[:, idx]
        return cols.toarray() if self.sparse else cols

    def column(self, j):
        """Column ``j`` of ``X`` in the tree's order."""
        return np.ascontiguousarray(self.columns([j])[:, 0], dtype=np.float64)

    def scores(self, w):
        """``X w`` in the tree's order (one pass over ``X``)."""
        return np.array(self._to_rows(self.loss.scores(w)), dtype=np.float64)

    def fresh(self, w):
        """Value, gradient and scores at ``w`` from the loss itself (fresh ``X w``)."""
        Lw = float(self.loss.fun(w))
        gL = np.asarray(self.loss.grad(w), dtype=np.float64)
        z = np.array(self.impl.z, dtype=np.float64)
        self._state = (z, Lw / self.scale, None)
        return Lw, gL, z

    def _evaluate(self, z):
        """Make ``z`` the state; return the unscaled value."""
        level, nlev, order, indptr = self._levels
        if self._state is not None and self._state[2] is self._bufs[0]:
            self._bufs.reverse()
        dz, kappa = bufs = self._bufs[0]
        value = _k.all_active_value_dz(z, level, nlev, order, indptr,
                                       self._margin, dz, kappa)
        if value >= 0.0:
            self._state = (z, float(value), bufs)
        else:
            value = float(self.impl.value(z))
            self.impl.adopt(z)
            self._state = (z, value, None)
        return self._state[1]

    def _dz(self):
        bufs = self._state[2]
        return self.impl.dz if bufs is None else bufs[0]

    def _all_active(self):
        return self._state is not None and self._state[2] is not None

    def _hess_dz(self, u):
        """``2 A^T A u`` with the active set of the state."""
        if self._all_active():
            out = np.empty(self.n_docs)
            _k.all_active_hess_dz(u, *self._levels, out)
            return out
        return self.impl.hess_dz(u)

    def _curvature(self, u):
        """``u^T 2 A^T A u`` with the active set of the state."""
        if self._all_active():
            return _k.all_active_curvature(u, *self._levels)
        return float(u @ self.impl.hess_dz(u))

    def _level_data(self):
        if self._coef is None:
            level, nlev, order, indptr = self._levels
            coef = np.empty(self.n_docs)
            rows = np.empty(self.n_docs, dtype=np.int64)
            n_rows = _k.level_weights(level, nlev, order, indptr, coef, rows)
            R = sp.csr_matrix((np.ones(self.n_docs), rows,
                               np.arange(self.n_docs + 1)),
                              shape=(self.n_docs, n_rows))
            self._N = np.asarray(R.T @ self.X, dtype=np.float64)
            self._coef = coef
        return self._coef, self._N

    def _gcol(self, j):
        g = self._gcols.get(j)
        if g is None:
            coef, _ = self._level_data()
            g = np.asarray(self.X.T @ (coef * self.column(j)), dtype=np.float64)
            self._gcols[j] = g
        return g

    def value_grad(self, z):
        """``(L, grad L)`` at the point of scores ``z``, which becomes the state."""
        if self._state is None or self._state[0] is not z:
            self._evaluate(z)
        if self._all_active() and not self.sparse:
            coef, N = self._level_data()
            if self._h is None or self._h[0] is not z:
                self._h = (z, np.asarray(self.X.T @ (coef * z), dtype=np.float64))
            grad = 2.0 * (self._h[1] + N.T @ self._state[2][1])
        else:
            grad = np.asarray(self.X.T @ self._dz(), dtype=np.float64).ravel()
        return self.scale * self._state[1], self.scale * grad

    def hessian(self, idx):
        """Generalised Hessian block ``H_SS`` at the state."""
        U = np.asfortranarray(self.columns(idx), dtype=np.float64)
        HU = np.empty_like(U, order="F")
        for col in range(U.shape[1]):
            HU[:, col] = self._hess_dz(U[:, col])
        return self.scale * (U.T @ HU)

    def line(self, z, u, image=None):
        """``phi(t) = L(z + t u)`` for the solver's line search (a :class:`ScoreLine`).

        The state must be at ``z``.  ``image = (alpha, idx, beta)`` says
        ``u = alpha z + X[:, idx] @ beta``, so that ``h`` follows the step
        where every pair is active at both ends.
        """
        return ScoreLine(self, z, u, image)


class ScoreLine:
    """``phi(t) = L(z + t u)`` on :class:`TreeScoreSpace`, one sweep per slope.

    Each :meth:`slope` moves the space's state to ``z + t u``; :meth:`end`
    leaves it at the chosen step.  While ``h`` stands in for ``X^T dz``,
    ``psi'(0)`` is taken on the scores, ``dz^T u`` (when negative;
    :meth:`slope0`), not from the caller's (from the gap): the same number
    up to rounding, but in the arithmetic of the slopes Newton then meets,
    so that its first step, exact on a quadratic, passes the test
    ``|psi'| <= rtol |psi'(0)|``.
    """

    def __init__(self, space, z, u, image):
        self.space, self.z, self.u, self.image = space, z, u, image
        self.last = {}
        self.h = space._h if space._all_active() else None

    def slope0(self, dpsi0):
        """``psi'(0)``: ``dz^T u`` on the scores where ``h`` is carried, else ``dpsi0``."""
        if self.h is not None:
            zs = self.space.scale * float(self.space._dz() @ self.u)
            if zs < 0:
                return zs
        return dpsi0

    def slope(self, t):
        """``psi'(t)``; the state moves to ``z + t u``."""
        space = self.space
        zt = self.z + t * self.u
        value = space._evaluate(zt)
        self.last.update(t=t, z=zt, value=value)
        return space.scale * float(space._dz() @ self.u)

    def curvature(self):
        """``psi''`` at the state (the last :meth:`slope`, or ``z``)."""
        return self.space.scale * self.space._curvature(self.u)

    def end(self, t, slope):
        """``(z_new, n_eval)``: the state moved to ``z + t u``, by ``n_eval``
        more calls of ``slope`` (the solver's checked :meth:`slope`)."""
        space, z, last, h = self.space, self.z, self.last, self.h
        n_eval = 0
        if not last or last["t"] != t:
            if t == 0.0:
                if last:    # back to the state at z
                    space._evaluate(z)
                return z, n_eval
            slope(t)    # the corrected Newton point: one more sweep
            n_eval += 1
        z_new = last["z"]
        space._h = None
        if (self.image is not None and h is not None and h[0] is z
                and space._all_active() and not space.sparse):
            alpha, idx, beta = self.image
            step = alpha * h[1]
            for i, b in zip(idx, beta):
                step = step + b * space._gcol(int(i))
            space._h = (z_new, h[1] + t * step)
        return z_new, n_eval


def score_space(loss):
    """The ``score_space`` capability of a :class:`~refimpl.losses.PairwiseSquaredHinge`.

    :class:`PairScoreSpace` with explicit pairs, :class:`TreeScoreSpace`
    with the selection tree (whose state can adopt a trial's scores), else
    ``None`` (the other tree methods: FenchelRank's generic path).
    """
    if loss.pair_indices() is not None:
        return PairScoreSpace(loss)
    if loss.backend == "tree" and getattr(loss._impl, "can_adopt", False):
        return TreeScoreSpace(loss)
    return None


class PairBlocks:
    """The squared hinge's ``pair_blocks`` capability: Algorithm 1's passes on label blocks.

    FenchelRank's ``line_search="blocks"`` (book chapter 9, *FenchelRank on
    label blocks*): the rows of ``X`` in the label-block layout of
    :func:`refimpl.pairs.label_blocks` (each query's documents by
    decreasing label, so the pairs of a document are a contiguous run),
    the loss's margin, scale ``s`` and pair count, and the compiled passes
    over them (:func:`refimpl.kernels.fenchel.block_evaluate` and
    :func:`~refimpl.kernels.fenchel.block_run`).  The solver keeps the
    iterate and the run's state, on the :attr:`cols` kept here.

    A feature that is 0 in every row has ``g_j = 0`` at every iterate, so
    the greedy choice never takes it (when ``max |g| = 0``, eq. 17 already
    holds): it is left out of every pass over ``X`` (6 of MQ2008's 46).
    """

    def __init__(self, loss, blocks):
        X, self.start, self.stop, self.heads = blocks
        cols = np.flatnonzero(np.count_nonzero(X, axis=0))
        if len(cols) == 0:
            cols = np.zeros(1, dtype=np.int64)
        #: The features the passes use (indices into ``w``).
        self.cols = cols
        n, l = len(cols), X.shape[0]
        self.n_docs = l
        # contiguous columns for s x_j when the copy is affordable
        if n < loss.n_features:
            X, X_all = np.empty((l, n)), X
            _k.gather_columns(X_all, cols, X)
        self.X = X
        self.XF = np.asfortranarray(X) if X.nbytes <= FORTRAN_COPY_BYTES else X
        self.margin = float(loss.margin)
        self.scale = float(loss.scale)
        self.n_pairs = int(loss.n_pairs)

    def evaluate(self, w, z, dz, graw, g, r2):
        """Value, greedy coordinate, sign and gap at ``w`` (on :attr:`cols`);
        fills the scores ``z``, ``dz`` and the gradients (``block_evaluate``)."""
        return _k.block_evaluate(self.X, w, z, dz, graw, g, self.heads,
                                 self.start, self.stop, self.margin,
                                 self.scale, r2)

    def run(self, w, z, u, dz, graw, g, r2, tol, max_iter, refresh, growth,
            bp, found_a, found_c, istate, fstate, hist, start_time, max_records):
        """Updates of Algorithm 1 from the state given, in place (``block_run``)."""
        _k.block_run(self.X, self.XF, w, z, u, dz, graw, g, self.heads,
                     self.start, self.stop, self.margin, self.scale, r2, tol,
                     max_iter, refresh, growth, bp, found_a, found_c,
                     self.n_pairs, istate, fstate, hist, start_time,
                     max_records)


def pair_blocks(loss):
    """The ``pair_blocks`` capability of a squared hinge, or None (see ``label_blocks``)."""
    blocks = loss.label_blocks()
    return None if blocks is None else PairBlocks(loss, blocks)
