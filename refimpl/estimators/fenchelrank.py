"""FenchelRank: sparse ranking in an l1 ball (Lai et al. 2013)."""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from .._validation import check_fit_input, reset_fitted
from ..exceptions import ParameterError
from ..losses import PairwiseSquaredHinge
from ..losses._score_space import FORTRAN_COPY_BYTES
from ..losses.squared_hinge import BACKENDS
from ..pairs import pair_counts
from ..solvers.fenchelrank import (
    LINESEARCHES,
    STEPS,
    VARIANTS,
    auto_backend,
    sort_work,
    fenchelrank,
)
from ._base import (
    ITERATIONS,
    POSITIVE,
    WEIGHT_RANGE,
    LinearRanker,
    options,
    squared_hinge_memory,
    _warn_empty,
)

__all__ = ["FenchelRank"]


class FenchelRank(LinearRanker):
    """Sparse ranking in an l1 ball, trained by FenchelRank (Lai et al. 2013).

    Solves eq. 3 of Lai et al. (2013),

    .. math::

        \\min_{\\|w'\\|_1 \\le r} \\frac1p \\sum_{(i, j) \\in \\mathcal P}
            \\max(0, 1 - w'^T (x_i - x_j))^2 ,

    through its rescaling ``w = w'/r`` (eq. 4) by Algorithm 1: greedy
    coordinate choice from ``K^T alpha_t`` (the dual point ``alpha_t`` of
    the book's eq. (3.6), the paper's ``d_t`` of its eq. 12), the update of
    eq. 18 with the step of eqs. 19-21, and the stopping rule (eq. 17) that
    the duality gap ``P(w_t) - D(alpha_t) = ||K^T alpha_t||_inf -
    (K^T alpha_t)^T w_t`` (the book's eq. (3.7)) is at most ``tol``.
    ``coef_ = r w`` is on the scale of eq. 3, so ``||coef_||_1 <= r``.  See :func:`refimpl.solvers.fenchelrank`.

    Parameters
    ----------
    r : float, default 1.0
        Radius of the l1 ball (> 0); smaller is sparser.
    tol : float, default 1e-3
        Gap tolerance ``epsilon`` of eq. 17 (> 0); relative, since
        ``G(0) = 1``.
    max_iter : int, default 1000
        Maximum number of updates (Algorithm 1's budget ``t_max``); each
        adds at most one feature.
    step : {"exact", "closed_form", "theory"}, default "exact"
        Step-size rule (eqs. 19-21, the corrected rule after eq. 21, or the
        step of the proof of Theorem 1).
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"
        How the loss is evaluated; see
        :class:`refimpl.losses.PairwiseSquaredHinge`.  ``"auto"``: the
        pair-free tree when the pairs outweigh its sorts or from
        ``refimpl.solvers.fenchelrank.AUTO_TREE_MIN_PAIRS`` pairs on (unless
        ``line_search="pairs"``), else explicit pairs (the label blocks of
        Algorithm 1); see ``refimpl.solvers.fenchelrank.auto_backend``.
    line_search : {"auto", "pairs", "newton"}, default "auto"
        Line search of ``step="exact"``; ``"pairs"`` needs explicit pairs
        (not the tree backend).
    variant : {"paper", "pairwise", "away", "face_newton"}, default "paper"
        ``"paper"``: Algorithm 1 (Frank-Wolfe steps towards the greedy
        vertex).  ``"pairwise"`` and ``"away"``: the pairwise and away-step
        Frank-Wolfe methods; ``"face_newton"``: pairwise steps that add
        features, Newton steps on the current face otherwise (the fastest).
        All stop by the same certified gap (eq. 17); the others need
        ``step="exact"``.  See :func:`refimpl.solvers.fenchelrank`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        ``r w``, the solution of eq. 3.
    n_iter_ : int
        Updates performed.
    history_ : dict of ndarray
        Per iterate, in chapter 3's notation: ``obj`` (the primal
        objective ``P(w_t) = G(w_t)``, eq. (3.5)), ``dual`` (the dual
        objective ``D(alpha_t)``, eqs. (3.5)-(3.6)), ``gap`` (the duality
        gap ``P(w_t) - D(alpha_t)``, eq. (3.7)), ``step`` (``tau_t``,
        eq. (3.8)), feature ``j``, ``nnz``, ``ls_eval``, ``time``; see
        :func:`refimpl.solvers.fenchelrank`.
    converged_ : bool
        Whether eq. 17 holds at the returned iterate.
    dual_gap_ : float
        Final duality gap ``P(w_t) - D(alpha_t)`` (eq. (3.7)), an upper
        bound on ``G(w_t) - G^*`` (Theorem 2 of the paper).
    objective_ : float
        ``G(w_t)`` at the returned iterate, i.e. the mean squared hinge of
        eq. 3 at ``coef_``.
    backend_ : str
        The backend actually used.

    See Also
    --------
    refimpl.estimators.RankSVM : the same loss with an l2 penalty (dense).
    refimpl.estimators.SparseRankSVM : the same loss with an l1 penalty.
    refimpl.solvers.fenchelrank : the primal-dual solver.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import FenchelRank
    >>> model = FenchelRank(r=4.0, variant="face_newton").fit(X, y, qid)
    >>> bool(abs(model.coef_).sum() <= 4.0 + 1e-9)      # inside the l1 ball
    True
    >>> model.score(X, y, qid) > 0.8
    True

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """

    _extreme_ranges: ClassVar[dict] = {"r": WEIGHT_RANGE}
    _parameter_constraints: ClassVar[dict] = {
        "r": [POSITIVE],
        "tol": [POSITIVE],
        "max_iter": [ITERATIONS],
        "step": options(STEPS),
        "backend": options(BACKENDS),
        "line_search": options(LINESEARCHES),
        "variant": options(VARIANTS),
    }

    def __init__(self, r=1.0, tol=1e-3, max_iter=1000, step="exact",
                 backend="auto", line_search="auto", variant="paper"):
        self.r = r
        self.tol = tol
        self.max_iter = max_iter
        self.step = step
        self.backend = backend
        self.line_search = line_search
        self.variant = variant

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: the squared hinge's, the
        exact line search's per-pair buffers and, on the label blocks, the
        copies of ``X`` Algorithm 1 reads.

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent, ``n_levels``:
        distinct labels).
        """
        backend = self.backend
        if backend == "auto" and self.line_search != "pairs":
            # FenchelRank's own rule, as fit resolves it; the longest query
            # bounds every l_q, so the sorts are over-counted, which can only
            # move the choice to explicit pairs, the larger in memory
            backend = auto_backend(n_pairs, n_docs, sort_units=n_docs * math.log2(
                max(int(max_query), 2)))
        model = squared_hinge_memory(
            n_docs=n_docs, n_pairs=n_pairs, n_features=n_features, grouped=grouped,
            n_levels=n_levels, backend=backend)
        X = n_docs * n_features * 8
        if model.hinge_backend == "tree":
            # the exact step in score space on the tree (losses._score_space
            # TreeScoreSpace): X in Fortran order up to FORTRAN_COPY_BYTES;
            # the level data N = R^T X (a row per query and level, at most
            # X) and R with its transpose (six words a document); the
            # product makes a C-ordered copy of the Fortran X while it runs
            # (scipy's csr_matvecs reads it raveled), and the cached columns
            # X^T (c x_j) grow later, one of the documents' length per
            # feature visited: the larger of the two is at most X; the two
            # (dz, kappa) buffers of the line search
            space = ((X if X <= FORTRAN_COPY_BYTES else 0) + X + X
                     + 6 * n_docs * 8 + 4 * n_docs * 8)
            return dataclasses.replace(
                model, terms={**model.terms, "tree score space": space})
        # the exact step over explicit pairs: pair_residuals' a and kb, and
        # linesearch_pairs' breakpoints bp and their order ev, 32 bytes a
        # pair; on the label blocks block_iteration falls back to 3 (its
        # "big") or to these 4 buffers per pair (kernels.fenchel)
        terms = {"line search": 0 if self.line_search == "newton" else 32 * n_pairs}
        if (self.line_search in ("auto", "blocks") and self.step == "exact"
                and self.variant == "paper"):
            # PairBlocks (losses._score_space): the label-block copy of X
            # (np.take), the copy of its non-zero columns (when a column is all 0; the
            # shape does not tell, so always counted), its Fortran-ordered
            # copy up to FORTRAN_COPY_BYTES; rows, start, stop, heads and
            # the z, u, dz of the documents
            terms["label blocks"] = (2 * X + (X if X <= FORTRAN_COPY_BYTES else 0)
                                     + 7 * n_docs * 8)
        return dataclasses.replace(model, terms={**model.terms, **terms})

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero: with ``r > 0`` only when the duality gap at
        ``w = 0``, ``||grad G(0)||_inf``, is already at most ``tol`` (no
        radius empties the l1-ball model).
        """
        reset_fitted(self)
        self._validate_params()
        if self.variant != "paper" and self.step != "exact":
            raise ParameterError(
                f"variant={self.variant!r} needs step='exact' (accepted with "
                f"step={self.step!r}: variant='paper'), got step={self.step!r}"
            )
        problem = check_fit_input(self, X, y, qid)
        r = float(self.r)
        if not (math.isfinite(r * r) and math.isfinite((1.0 / r) * (1.0 / r))):
            # eq. 4's margin 1/r and weight r^2 / p, squared, out of doubles
            root = math.sqrt(np.finfo(np.float64).max)
            low, high = WEIGHT_RANGE
            raise ParameterError(
                f"The 'r' parameter of FenchelRank must be in the range "
                f"({1.0 / root:.2g}, {root:.2g}), where eq. 4's squared margin "
                f"(1/r)^2 and weight r^2 are doubles (a sensible l1 radius is in "
                f"[{low:g}, {high:g}]). Got {self.r!r} instead.")
        backend = self.backend
        if backend == "auto" and self.line_search != "pairs":
            # the pair-free tree once there are millions of pairs
            backend = auto_backend(pair_counts(problem).sum(), problem.n_samples,
                                   sort_units=sort_work(problem.groups.sizes))
        loss = PairwiseSquaredHinge(problem, margin=1.0 / r, normalize=True,
                                    backend=backend)
        line_search = self.line_search
        if line_search == "pairs" and loss.pairs is None:
            raise ParameterError(
                "line_search='pairs' needs explicit pairs, but backend "
                f"{loss.backend!r} has none: use line_search='newton' or 'auto'"
            )
        with self._blaming(problem.X):
            result = fenchelrank(loss, r, tol=self.tol, max_iter=self.max_iter,
                                 step=self.step, line_search=line_search,
                                 variant=self.variant)
        coef = r * result.w
        if not np.all(np.isfinite(coef)):
            raise FloatingPointError("FenchelRank produced non-finite coefficients")
        self.coef_ = coef
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.dual_gap_ = float(result.history["gap"][-1])
        self.objective_ = float(result.history["obj"][-1])
        self.backend_ = loss.backend
        if not np.any(coef):
            gap0 = float(self.history_["gap"][0])
            _warn_empty(
                self,
                "no radius r > 0 empties the l1-ball model: w = 0 is returned "
                "only when the duality gap at w = 0, ||grad G(0)||_inf = "
                f"{gap0:.6g}, is already <= tol = {float(self.tol):g} (it is 0 "
                "when the pairs' differences cancel)"
                + ("; lower tol" if 0 < gap0 <= float(self.tol) else ""),
                parameter="r", value=r)
        return self
