"""Sparse RankSVMs by accelerated proximal gradient (Laporte et al. 2014).

RankSVM-l1 and the weighted lasso by one FISTA solve, the non-convex
penalties by reweighted l1.
"""

from __future__ import annotations

import dataclasses

import math
from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .._validation import (
    check_fit_input,
    ranking_problem,
    reset_fitted,
)
from ..exceptions import DataError, ParameterError
from ..losses import PairwiseSquaredHinge, ScaledSmooth
from ..losses.squared_hinge import BACKENDS
from ..nonconvex import make_concave_penalty
from ..penalties import L1, WeightedL1
from ..solvers._finite import safe_norm
from ..solvers.apg import LINE_SEARCHES, RESTARTS, apg, lipschitz_constant
from ..solvers.prox_newton import prox_newton
from ..solvers.reweighted import reweighted_l1
from ._base import (
    ITERATIONS,
    NONNEGATIVE,
    POSITIVE,
    WEIGHT_RANGE,
    LinearRanker,
    _Interval,
    _grad_at_zero,
    _l1_null_C,
    blame_extreme_parameters,
    options,
    prox_newton_memory,
    squared_hinge_memory,
    _warn_empty,
)

__all__ = ["NONCONVEX_PENALTIES", "SOLVERS", "SPARSE_PENALTIES", "SparseRankSVM",
           "choose_solver", "ranksvm_l1_path"]

#: ``solver=`` of :class:`SparseRankSVM`: FISTA (the paper's Algorithm 1),
#: proximal Newton (:func:`refimpl.solvers.prox_newton`, LIBLINEAR's
#: newGLMNET), which stops at the same certified tolerance, or ``"auto"``:
#: the one :func:`choose_solver` models as faster on the data's shape.
SOLVERS = ("auto", "fista", "newton")

#: Nanoseconds per unit of the terms of one proximal Newton step (``l d r``:
#: the Hessian ``X^T Lap_A X``, BLAS for a dense ``X``, sparse times dense
#: for a sparse one; ``p``; ``l``) and of one FISTA iteration (``l r``: its
#: mat-vecs and line-search values; ``p``; ``l``), ``l`` documents, ``d``
#: features, ``r`` stored values per row, ``p`` pairs: non-negative least
#: squares on relative error over 11 shapes: the five of
#: ``benchmarks/bench_defaults.py``'s grid, MQ2008 Fold 1 and five more
#: (d = 136-700, dense and 5 % sparse; OMP_NUM_THREADS=1, AMD EPYC, loaded
#: machine).  The model is within 0.56-1.26x of each measured time.  On
#: two of the five extra shapes the rule misses, both by FISTA's
#: iteration count, which the shape does not tell: 1,500 x 300 sparse
#: (FISTA 111 iterations, 1.5x faster than Newton; Newton chosen) and
#: 777 x 700 dense (FISTA 1,554 iterations, Newton 1.6x faster; FISTA
#: chosen).
NEWTON_STEP_NS = {"dense l*d*r": 1.144, "sparse l*d*r": 6.072, "p": 0.0,
                  "l": 2029.0}
FISTA_ITER_NS = {"dense l*r": 6.459, "sparse l*r": 46.88, "p": 7.063, "l": 355.2}
#: The work of a fit the rule weighs: proximal Newton took 5-8 steps on
#: every shape measured (at ``tol = 1e-6``), FISTA 156-2,610 iterations
#: (10,000, its cap, on OHSUMED Fold 3).  FISTA's count depends on the
#: conditioning, not the shape, so the rule takes a low one: FISTA is
#: chosen only where its iterations are so cheap against a Newton step
#: (a dense ``d x d`` Hessian of a wide, sparse ``X``) that even a fit of
#: few iterations could not lose.
NEWTON_STEPS = 6
FISTA_ITERS = 300


def choose_solver(n_docs, n_features, n_pairs, nnz_per_row=None):
    """The solver ``solver="auto"`` resolves to: ``"newton"`` or ``"fista"``.

    Proximal Newton's fit is modelled as ``NEWTON_STEPS`` steps of
    :data:`NEWTON_STEP_NS`, FISTA's as ``FISTA_ITERS`` iterations of
    :data:`FISTA_ITER_NS`; the smaller wins (ties: Newton).  ``nnz_per_row``:
    the stored values per row of a sparse ``X`` (``None``: a dense ``X``).
    Both solvers stop at the same certified tolerance (the gradient
    mapping of eqs. 11-12 against its value at 0), so the choice changes
    the time, not the answer.  A deterministic function of the shape.

    Derived in: book/09_making_it_fast.md#fast-defaults
    """
    l, d, p = float(n_docs), float(n_features), float(n_pairs)
    sparse = nnz_per_row is not None
    r = float(nnz_per_row) if sparse else d
    kind = "sparse" if sparse else "dense"
    newton = 1e-9 * NEWTON_STEPS * (NEWTON_STEP_NS[f"{kind} l*d*r"] * l * d * r
                                    + NEWTON_STEP_NS["p"] * p
                                    + NEWTON_STEP_NS["l"] * l)
    fista = 1e-9 * FISTA_ITERS * (FISTA_ITER_NS[f"{kind} l*r"] * l * r
                                  + FISTA_ITER_NS["p"] * p + FISTA_ITER_NS["l"] * l)
    return "newton" if newton <= fista else "fista"


def _l1_penalty(estimator, n_features):
    """``||w||_1`` (Laporte et al. 2014, eq. 7)."""
    return L1(1.0)


def _weighted_l1_penalty(estimator, n_features):
    """``sum_j beta_j |w_j|`` (Laporte et al. 2014, eq. 12) with ``beta = weights``."""
    if estimator.weights is None:
        raise ParameterError(
            "penalty='weighted_l1' needs weights (an array of n_features "
            "non-negative numbers), got weights=None"
        )
    try:
        penalty = WeightedL1(estimator.weights)
    except DataError as err:
        raise ParameterError(f"bad weights for penalty='weighted_l1': {err}") from None
    if penalty.n_features != n_features:
        raise ParameterError(
            f"weights must have length n_features = {n_features}, got "
            f"{penalty.n_features}"
        )
    return penalty


#: ``penalty=`` name -> factory ``(estimator, n_features) -> penalty object``
#: for the convex penalties of :class:`SparseRankSVM` (one FISTA solve).
SPARSE_PENALTIES = {"l1": _l1_penalty, "weighted_l1": _weighted_l1_penalty}
#: The non-convex penalties of :class:`SparseRankSVM`, solved by reweighted l1.
NONCONVEX_PENALTIES = ("log", "mcp", "lp", "scad")


class SparseRankSVM(LinearRanker):
    """Sparse L2-loss linear RankSVM (l1 by proximal Newton or FISTA; non-convex by reweighting).

    Minimises eq. 7 of Laporte, Flamary, Canu, Déjean & Mothe (2014),

    .. math::

        F(w) = \\|w\\|_1
            + C \\sum_{(i, j) \\in P} \\max(0, 1 - w^T (x_i - x_j))^2,

    (a sum over pairs, not a mean, so ``C`` is the paper's) or, with
    ``penalty="weighted_l1"``, eq. 12's weighted lasso
    ``sum_j beta_j |w_j| + C sum_P max(0, 1 - w^T(x_i - x_j))^2`` with
    ``beta = weights``.  Solved by proximal Newton with coordinate descent
    (:func:`refimpl.solvers.prox_newton`, ``solver="newton"``) or by
    :func:`refimpl.solvers.apg` (``solver="fista"``: their Algorithm 1,
    with a line search instead of the fixed ``1/L``, prox =
    soft-thresholding, eqs. 11-12), from ``w = 0``, until the minimum-norm
    subgradient (Newton) or the gradient mapping (FISTA) has dropped to
    ``tol`` times its value at 0: ``||G_L(z_k)|| <= tol ||G_L(0)||``.
    Both stop at the same certified tolerance.  The default
    ``solver="auto"`` takes the one :func:`choose_solver` models as
    faster on the data's shape: Newton on LETOR data (10-400 times faster
    than FISTA there, ``benchmarks/bench_defaults.py``), FISTA where a
    Newton step's ``d x d`` Hessian costs hundreds of FISTA iterations
    (a wide, sparse ``X``); the paper's FISTA is one argument away.

    With ``penalty`` one of ``"log"``, ``"mcp"``, ``"lp"``, ``"scad"`` the
    ``||w||_1`` term becomes ``sum_j g(|w_j|)`` (eq. 2 scaled by ``C``, see
    :mod:`refimpl.nonconvex`) and the problem is solved by
    :func:`refimpl.solvers.reweighted_l1` (Algorithm 2): a first RankSVM-l1
    solve, then weighted-l1 solves with ``beta_j = g'(|w_j|)`` (eq. 13,
    Table II), each warm-started at the previous solution, at most
    ``max_outer`` of them.

    Proposition 1 of the paper bounds the Lipschitz constant of the loss
    gradient by ``sum_P ||x_i - x_j||^2``; the factor 2 of the gradient is
    missing there (the correct Frobenius bound is ``2 C sum_P ||x_i -
    x_j||^2``).  ``line_search="fixed"`` uses the smallest valid constant,
    ``lambda_max`` of the Hessian at ``w = 0`` (every pair active),
    ``2 C ||K||_2^2``.

    Parameters
    ----------
    C : float, default 1.0
        Loss weight (> 0).
    penalty : {"l1", "weighted_l1", "log", "mcp", "lp", "scad"}, default "l1"
        The sparsity penalty.
    weights : array-like of shape (n_features,), optional
        ``beta_j >= 0`` of eq. 12; required for ``"weighted_l1"``.
    eps : float, optional
        Smoothing of ``"log"`` (default 0.1, the paper's) and ``"lp"``
        (default 1e-3, see :class:`refimpl.nonconvex.LpPenalty`).
    gamma : float, default 2.0
        MCP concavity (the paper's).
    p : float, default 0.5
        Exponent of ``"lp"``.
    a : float, default 3.7
        SCAD shape.
    lam : float, optional
        The level of MCP and SCAD, where their derivative starts to fall
        (MCP's knee is at ``gamma * lam``); default ``1 / C`` as in eq. 13
        and Table II.
    max_outer : int, default 300
        Maximum number of reweighting passes (non-convex penalties): a
        safeguard, not the paper's (Algorithm 2 runs "until convergence"),
        set far above the passes measured: every registry fit on MQ2008
        and OHSUMED stops by ``tol_outer`` within 29 passes, the wide
        sparse shape of ``benchmarks/bench_outer_passes.py`` within about
        130 (a slow MM plateau, not a loose inner solve).  A fit that
        reaches it before ``tol_outer`` holds has ``converged_ = False`` and
        warns (:class:`~sklearn.exceptions.ConvergenceWarning`).
    tol_outer : float, default 1e-4
        Relative change of ``w`` between passes that stops Algorithm 2.
    warm_start : bool, default True
        Warm-start each pass at the previous solution.
    tol : float, default 1e-6
        Relative tolerance (> 0) of every convex solve (see ``solver``).
    max_iter : int, default 10000
        Maximum number of iterations per convex solve (Newton steps or
        FISTA iterations).
    line_search : {"backtracking", "nemirovski", "fixed"}
        Step-size rule of :func:`refimpl.solvers.apg` (``solver="fista"``).
    accelerated : bool, default True
        False runs ISTA (forward-backward splitting, eq. 10;
        ``solver="fista"``).
    restart : {False, "function", "gradient"}
        O'Donoghue-Candès adaptive restart (``solver="fista"``).
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"
        How the loss is evaluated; see
        :class:`refimpl.losses.PairwiseSquaredHinge`.
    solver : {"auto", "newton", "fista"}, default "auto"
        The convex solver (of eq. 7 / eq. 12, and of every reweighting
        pass); ``"auto"``: the one :func:`choose_solver` picks from the
        shape of ``X`` and the number of pairs (``solver_``).  Proximal
        Newton with coordinate descent
        (:func:`refimpl.solvers.prox_newton`), whose stop -- the
        minimum-norm subgradient at most ``tol`` times its value at 0 --
        implies FISTA's gradient-mapping test with the same ``tol``, or
        FISTA (Algorithm 1 of the paper, the one book/05_dc_reweighting.md
        walks through).  ``line_search``, ``accelerated`` and ``restart``
        apply to FISTA only; with ``"newton"``, ``max_iter`` counts Newton
        steps and ``lipschitz_`` is nan.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_iter_ : int
        Newton steps or FISTA iterations (summed over passes for
        non-convex penalties).
    n_outer_ : int
        Reweighting passes (1 for the convex penalties).
    history_ : dict of ndarray
        Convex penalties: per iteration of the solver (FISTA's keys;
        Newton's are those of :func:`refimpl.solvers.prox_newton`), objective ``F``, ``L``,
        gradient-mapping norm ``gmap``, cumulative ``n_fun``, ``restart``,
        ``time``.  Non-convex penalties: per outer iteration (entry 0 = the
        start), the non-convex objective ``F``, ``majorizer``, ``support``,
        ``n_inner``, ``change``, ``n_fun``, ``time``.
    inner_history_ : list of dict of ndarray
        The solver's history of every pass (one entry for the convex
        penalties).
    penalty_ : object
        The penalty solved: :class:`refimpl.penalties.L1` or
        :class:`refimpl.penalties.WeightedL1` for the convex penalties, the
        concave penalty of :mod:`refimpl.nonconvex` otherwise.
    converged_ : bool
    objective_ : float
        ``F(coef_)`` (eq. 7, eq. 12, or ``C ell + sum_j g(|w_j|)``).
    lipschitz_ : float
        FISTA: the final ``L`` of the line search (or the fixed constant);
        nan with ``solver="newton"``.
    backend_ : str
    solver_ : str
        The solver used, ``"newton"`` or ``"fista"`` (``solver`` resolved).

    See Also
    --------
    refimpl.estimators.RankSVM : the l2-regularised RankSVM.
    refimpl.estimators.FenchelRank : the l1-ball constrained form.
    refimpl.estimators.sparse.ranksvm_l1_path : a path of ``C`` values.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import SparseRankSVM
    >>> model = SparseRankSVM(C=0.1).fit(X, y, qid)
    >>> model.coef_.shape
    (30,)
    >>> model.score(X, y, qid) > 0.8
    True

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    Derived in: book/05_dc_reweighting.md#dc-reweighting
    """

    _extreme_ranges: ClassVar[dict] = {"C": WEIGHT_RANGE}
    _parameter_constraints: ClassVar[dict] = {
        "C": [POSITIVE],
        "penalty": options(tuple(SPARSE_PENALTIES) + NONCONVEX_PENALTIES),
        "weights": ["array-like", None],
        # the penalties' domains (refimpl.nonconvex checks them again)
        "eps": [POSITIVE, None],
        "gamma": [POSITIVE],
        "p": [_Interval(Real, 0, 1, closed="neither")],
        "a": [_Interval(Real, 2, None, closed="neither")],
        "lam": [POSITIVE, None],
        "max_outer": [ITERATIONS],
        "tol_outer": [NONNEGATIVE],
        "warm_start": ["boolean"],
        "tol": [POSITIVE],
        "max_iter": [ITERATIONS],
        "line_search": options(LINE_SEARCHES),
        "accelerated": ["boolean"],
        "restart": options(RESTARTS),
        "backend": options(BACKENDS),
        "solver": options(SOLVERS),
    }

    def __init__(self, C=1.0, penalty="l1", weights=None, eps=None, gamma=2.0,
                 p=0.5, a=3.7, lam=None, max_outer=300, tol_outer=1e-4, warm_start=True,
                 tol=1e-6, max_iter=10000, line_search="backtracking",
                 accelerated=True, restart=False, backend="auto", solver="auto"):
        self.C = C
        self.penalty = penalty
        self.weights = weights
        self.eps = eps
        self.gamma = gamma
        self.p = p
        self.a = a
        self.lam = lam
        self.max_outer = max_outer
        self.tol_outer = tol_outer
        self.warm_start = warm_start
        self.tol = tol
        self.max_iter = max_iter
        self.line_search = line_search
        self.accelerated = accelerated
        self.restart = restart
        self.backend = backend
        self.solver = solver

    def _concave_penalty(self):
        """The non-convex penalty object, or None for the convex penalties.

        The shape parameters' ranges depend on the penalty, so
        :func:`refimpl.nonconvex.make_concave_penalty` checks them.
        """
        if self.penalty not in NONCONVEX_PENALTIES:
            return None
        try:
            return make_concave_penalty(self.penalty, C=self.C, eps=self.eps, p=self.p,
                                        gamma=self.gamma, a=self.a, lam=self.lam)
        except DataError as err:
            raise ParameterError(str(err)) from None

    def _resolve_solver(self, loss):
        """``solver``, with ``"auto"`` resolved by :func:`choose_solver`; sets ``solver_``."""
        solver = self.solver
        if solver == "auto":
            X = loss.X
            n = X.shape[0]
            solver = choose_solver(n, X.shape[1], loss.n_pairs,
                                   X.nnz / max(n, 1) if sp.issparse(X) else None)
        self.solver_ = solver
        return solver

    def _hinge_options(self):
        """How the fit builds its squared hinge, and its memory model counts it."""
        # FISTA asks for values and gradients, proximal Newton for one
        # Hessian matrix per step (no Hessian-vector products): auto's cost
        # model with hess_per_grad = 0
        return {"backend": self.backend, "hess_per_grad": 0}

    def _problem(self, problem):
        """The smooth part ``C L(w)`` and the penalty object of eq. 7 / eq. 12."""
        loss = PairwiseSquaredHinge(problem, **self._hinge_options())
        smooth = ScaledSmooth(loss, float(self.C))
        penalty = SPARSE_PENALTIES[self.penalty](self, loss.n_features)
        return loss, smooth, penalty

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: the squared hinge's.

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent).
        """
        model = squared_hinge_memory(
            n_docs=n_docs, n_pairs=n_pairs, n_features=n_features, grouped=grouped,
            n_levels=n_levels, **self._hinge_options())
        solver = self.solver
        if solver == "auto":
            # the shape does not tell whether X is sparse: "auto" resolves
            # as for a dense X, as the fit on it does
            solver = choose_solver(n_docs, n_features, n_pairs)
        if solver == "fista":
            # values and gradients only: the loss's arrays and O(d) iterates
            return model
        # proximal Newton's Hessian
        newton = prox_newton_memory(n_docs=n_docs, n_pairs=n_pairs,
                                    n_features=n_features, max_query=max_query,
                                    backend=model.hinge_backend)
        return dataclasses.replace(model, terms={**model.terms, **newton})

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero, naming the ``C`` at or below which that happens
        (its ``threshold``): ``min_j beta_j / |grad_j
        L(0)|`` (``1 / ||grad L(0)||_inf`` for ``"l1"``), for the non-convex
        penalties that of the first (l1) pass.
        """
        reset_fitted(self)
        self._validate_params()
        concave = self._concave_penalty()
        problem = check_fit_input(self, X, y, qid)
        with self._blaming(problem.X):
            return self._fit(problem, concave)

    def _fit(self, problem, concave):
        """:meth:`fit` on a validated :class:`~refimpl._validation.RankingProblem`."""
        if concave is not None:
            return self._fit_reweighted(problem, concave)
        loss, smooth, penalty = self._problem(problem)
        solver = self._resolve_solver(loss)
        if solver == "newton":
            result = prox_newton(smooth, penalty, tol=float(self.tol),
                                 max_iter=int(self.max_iter))
        else:
            L0 = None
            if self.line_search in ("fixed", "nemirovski"):
                L0 = lipschitz_constant(smooth)
                if L0 == 0:
                    L0 = 1.0
            result = apg(smooth, penalty, L0=L0, line_search=self.line_search,
                         restart=self.restart, accelerated=bool(self.accelerated),
                         tol=float(self.tol), stop="gradient_mapping",
                         max_iter=int(self.max_iter))
        if not np.all(np.isfinite(result.w)):
            raise FloatingPointError("SparseRankSVM produced non-finite coefficients")
        self.coef_ = result.w
        self.n_iter_ = result.n_iter
        self.n_outer_ = 1
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.inner_history_ = [self.history_]
        self.objective_ = float(result.history["F"][-1])
        self.lipschitz_ = float(result.history["L"][-1])
        self.penalty_ = penalty
        self.backend_ = loss.backend
        if not np.any(self.coef_):
            beta = getattr(penalty, "weights", None) if self.penalty != "l1" else None
            self._warn_empty_C(_l1_null_C(_grad_at_zero(loss), beta),
                               "min_j beta_j / |grad_j L(0)|" if beta is not None
                               else "1 / ||grad L(0)||_inf", stacklevel=5)
        return self

    def _warn_empty_C(self, threshold, formula, fixed=None, stacklevel=6):
        """Warn that ``coef_ = 0``, with the ``C`` at or below which it must be.

        ``fixed`` (non-convex penalties): the largest ``C`` for which
        ``w = 0`` is a fixed point of the reweighting, ``min_j g'(0) /
        |grad_j L(0)|``; between ``threshold`` and ``fixed`` the first pass
        finds a model and later passes may remove it.
        """
        C = float(self.C)
        if math.isinf(threshold):
            detail = ("the gradient of the loss at w = 0 is zero, so no C gives a "
                      "non-zero weight")
        else:
            detail = f"every weight vanishes for C <= {threshold:.6g} (= {formula})"
            if fixed is not None:
                detail += (" in the first (l1) pass, and w = 0 is a fixed point of "
                           f"the reweighting for C <= {fixed:.6g} (= min_j g'(0) / "
                           "|grad_j L(0)|)")
            if C <= threshold:
                detail += "; choose C above it"
            elif fixed is not None and C <= fixed:
                detail += (f"; the reweighting passes removed every feature: choose "
                           f"C above {fixed:.6g}")
            else:
                detail += (f"; C is above it, yet the fit ended at w = 0 (converged_"
                           f" = {self.converged_})")
        _warn_empty(self, f"penalty={self.penalty!r}, C={self.C!r}: {detail}",
                    parameter="C", value=C, threshold=threshold,
                    stacklevel=stacklevel)

    def _fit_reweighted(self, problem, concave):
        loss = PairwiseSquaredHinge(problem, **self._hinge_options())
        smooth = ScaledSmooth(loss, float(self.C))
        solver = self._resolve_solver(loss)
        if self.line_search == "fixed" and solver == "fista":
            # the reweighting passes share f, so one constant serves them all
            raise ParameterError("line_search='fixed' is not supported with non-convex "
                            "penalties; use 'backtracking' or 'nemirovski'")
        result = reweighted_l1(smooth, concave, max_outer=int(self.max_outer),
                               tol_outer=float(self.tol_outer),
                               warm_start=bool(self.warm_start), tol=float(self.tol),
                               max_iter=int(self.max_iter),
                               line_search=self.line_search,
                               accelerated=bool(self.accelerated),
                               restart=self.restart, solver=solver)
        if not np.all(np.isfinite(result.w)):
            raise FloatingPointError("SparseRankSVM produced non-finite coefficients")
        self.coef_ = result.w
        self.inner_history_ = result.details["inner"]
        self.n_iter_ = int(sum(h["F"].size - 1 for h in self.inner_history_))
        self.n_outer_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.objective_ = float(result.history["F"][-1])
        self.lipschitz_ = float(self.inner_history_[-1]["L"][-1])
        self.penalty_ = concave
        self.backend_ = loss.backend
        if not np.any(self.coef_):
            g = _grad_at_zero(loss)
            fixed = _l1_null_C(g, concave.weights(np.zeros(loss.n_features)))
            self._warn_empty_C(_l1_null_C(g), "1 / ||grad L(0)||_inf", fixed)
        return self


def ranksvm_l1_path(X, y, qid=None, Cs=(1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0), *,
                    solver="auto", tol=1e-6, max_iter=10000, backend="auto",
                    warm_start=True):
    """RankSVM-l1 (Laporte et al. 2014, eq. 7) along a grid of ``C``, warm-started.

    The data are checked and the pairs built once; the values of ``C`` are
    solved in increasing order (a decreasing relative weight of the
    penalty: from sparse models to dense ones), each from the previous
    solution.  Each solve stops where a cold start from 0 would -- the
    gradient mapping (FISTA) or minimum-norm subgradient (Newton) at most
    ``tol`` times its value at ``w = 0`` for that ``C`` (``gmap_ref``) --
    so a warm start changes the work, not the accuracy certified.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    X, y, qid
        As for :meth:`refimpl.estimators.SparseRankSVM.fit`.
    Cs : sequence of float
        The loss weights, each finite and > 0, any order.
    solver : {"auto", "newton", "fista"}, default "auto"
        :func:`refimpl.solvers.prox_newton` or :func:`refimpl.solvers.apg`
        (backtracking, ``stop="gradient_mapping"``); ``"auto"`` as
        :class:`~refimpl.estimators.SparseRankSVM` resolves it
        (:func:`choose_solver`).
    tol, max_iter, backend
        As for :class:`~refimpl.estimators.SparseRankSVM`.
    warm_start : bool, default True
        False starts every solve at 0 (for comparison).

    Returns
    -------
    coefs : ndarray of shape (len(Cs), n_features)
        In the order of ``Cs``.
    results : list of SolverResult
        In the order of ``Cs``.
    """
    if solver not in SOLVERS:
        raise ParameterError(f"solver must be one of {SOLVERS}, got {solver!r}")
    Cs = np.asarray(Cs, dtype=np.float64).ravel()
    if Cs.size == 0 or not np.all(np.isfinite(Cs) & (Cs > 0)):
        raise ParameterError(f"Cs must be a non-empty sequence of finite numbers > 0, "
                             f"got {Cs!r}")
    loss = PairwiseSquaredHinge(ranking_problem(X, y, qid), backend=backend)
    n = loss.n_features
    if solver == "auto":
        m = loss.X.shape[0]
        solver = choose_solver(m, n, loss.n_pairs,
                               loss.X.nnz / max(m, 1) if sp.issparse(loss.X) else None)
    loss.fun(np.zeros(n))
    g0 = np.asarray(loss.grad(np.zeros(n)), dtype=np.float64)
    coefs = np.zeros((Cs.size, n))
    results = [None] * Cs.size
    w = np.zeros(n)
    for i in np.argsort(Cs, kind="stable"):
        C = float(Cs[i])
        smooth = ScaledSmooth(loss, C)
        # the gradient mapping of a cold start, G_L(0) = soft(-C grad L(0), 1)
        # (safe_norm: at C = 1e300 the entries are finite, their squares not)
        with np.errstate(over="ignore"):          # checked next
            ref = safe_norm(np.maximum(np.abs(C * g0) - 1.0, 0.0))
        if not math.isfinite(ref):
            raise ParameterError(
                f"The 'Cs' parameter of ranksvm_l1_path must hold values in the "
                f"range [{WEIGHT_RANGE[0]:g}, {WEIGHT_RANGE[1]:g}]. Got {C!r}: C "
                "times the loss gradient at w = 0 overflows")
        start = w if warm_start else np.zeros(n)
        if ref == 0.0:
            start = np.zeros(n)
        kw = {"gmap_ref": ref} if ref > 0 else {}
        with blame_extreme_parameters("ranksvm_l1_path", loss.X,
                                      {"Cs": (C, *WEIGHT_RANGE)}):
            if solver == "newton":
                result = prox_newton(smooth, L1(1.0), start, tol=float(tol),
                                     max_iter=int(max_iter), **kw)
            else:
                result = apg(smooth, L1(1.0), start, tol=float(tol),
                             stop="gradient_mapping", max_iter=int(max_iter), **kw)
        w = result.w
        coefs[i] = w
        results[i] = result
    return coefs, results
