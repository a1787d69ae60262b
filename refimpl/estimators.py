"""scikit-learn-style estimators on top of the losses and solvers.

``fit(X, y, qid)`` takes LETOR-shaped data (``qid=None`` is one query),
``predict(X)`` returns scores to sort by, ``coef_`` holds the weights and
``history_`` the solver's iterate history, which the book plots.

Every ``fit`` first deletes the attributes of a previous fit, then checks
``(X, y, qid)`` as scikit-learn does (no empty ``X``, at least one feature,
``y`` and ``qid`` as long as ``X``; ``n_features_in_`` and, for a data frame,
``feature_names_in_`` are recorded and checked again by ``predict``).  A
linear model with no non-zero weight is reported by
:class:`~refimpl.exceptions.EmptyModelWarning`, with the value of the
regularisation parameter beyond which every weight vanishes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    check_fit_input,
    check_labels,
    check_nonnegative,
    check_positive,
    check_X,
    group_queries,
    reset_fitted,
    validate_X,
)
from .exceptions import DataError, EmptyModelWarning
from .fsmrank import (
    PSD_MODES,
    FSMRankSmooth,
    LiftedLoss,
    convexify_similarity,
    feature_ndcg,
    gas_select,
    kendall_similarity,
    lift_importance,
    lift_similarity,
    pearson_importance,
    pearson_similarity,
)
from .losses import L2Regularized, PairwiseSquaredHinge
from .losses.squared_hinge import BACKENDS
from .metrics import mean_ndcg
from .nonconvex import make_concave_penalty
from .pairs import PAIR_SETS
from .penalties import L1, NonNegWeightedL1, WeightedL1
from .solvers._finite import check_predictions
from .solvers.apg import LINE_SEARCHES, RESTARTS, ScaledSmooth, apg, lipschitz_constant
from .solvers.fenchelrank import LINESEARCHES, STEPS, fenchelrank
from .solvers.reweighted import reweighted_l1
from .solvers.tron import tron


class _LinearRanker(BaseEstimator):
    """Shared ``predict`` / ``score`` of the linear rankers.

    ``predict`` checks ``X`` as scikit-learn does (``refimpl._validation.validate_X``):
    the number of columns, and for a data frame fitted with string column
    names, the names and their order (``feature_names_in_``).
    """

    def predict(self, X):
        """Ranking scores ``X @ coef_`` (sort each query by decreasing score)."""
        check_is_fitted(self, "coef_")
        X = validate_X(self, X, reset=False)
        return check_predictions(np.asarray(X @ self.coef_).ravel(),
                                 type(self).__name__, X, self.coef_)

    def score(self, X, y, qid=None):
        """Mean NDCG (LETOR 4.0 convention) of the predicted ranking."""
        return mean_ndcg(y, self.predict(X), qid)


def _grad_at_zero(loss):
    """``grad L(0)`` of a smooth loss (``fun`` first: the losses cache their state)."""
    z = np.zeros(loss.n_features)
    loss.fun(z)
    return np.asarray(loss.grad(z), dtype=np.float64)


def _l1_null_C(g, beta=None):
    """The largest ``C`` for which ``w = 0`` minimises ``sum_j beta_j |w_j| + C L(w)``.

    ``0`` is optimal iff ``0`` is in ``C grad L(0) + [-beta, beta]``, i.e.
    ``C |g_j| <= beta_j`` for every ``j``: ``C <= min_j beta_j / |g_j|`` (over
    ``g_j != 0``; ``inf`` when ``g = 0``).  The analogue of scikit-learn's
    ``alpha_max = ||X^T y||_inf / n`` for a loss weight instead of a penalty
    weight.
    """
    g = np.abs(np.asarray(g, dtype=np.float64))
    beta = np.ones_like(g) if beta is None else np.asarray(beta, dtype=np.float64)
    nz = g > 0
    if not np.any(nz):
        return math.inf
    return float(np.min(beta[nz] / g[nz]))


def _warn_empty(estimator, message, *, parameter=None, value=None, threshold=None,
                stacklevel=3):
    """Emit :class:`~refimpl.exceptions.EmptyModelWarning` when ``coef_`` is all zero.

    ``stacklevel`` 3 points at the caller of a ``fit`` that calls this directly.
    """
    if np.any(estimator.coef_):
        return
    warnings.warn(
        EmptyModelWarning(
            f"{type(estimator).__name__} has no non-zero weight (a constant "
            f"ranker, n_iter_ = {estimator.n_iter_}): {message}",
            parameter=parameter, value=value, threshold=threshold),
        stacklevel=stacklevel)


class RankSVM(_LinearRanker):
    """L2-regularised, L2-loss linear RankSVM trained by TRON (Lee & Lin 2014).

    Minimises eq. 3 of Lee & Lin (2014),

    .. math::

        f(w) = \\tfrac12 w^T w
            + C \\sum_{(i, j) \\in P} \\max(0, 1 - w^T (x_i - x_j))^2,

    with no division by the number of pairs, so the paper's selected values
    of ``C`` carry over.  The solver is the trust-region Newton method of
    section 4.1 with ``w^0 = 0`` and the stopping rule
    ``||grad f(w)|| <= tol * ||grad f(0)||`` (eq. 38).

    Parameters
    ----------
    C : float, default 1.0
        Loss weight (> 0).
    loss : {"l2"}, default "l2"
        The squared hinge; the L1 hinge is not differentiable and TRON
        needs a gradient, as the paper explains.
    tol : float, default 1e-3
        ``epsilon_s`` of eq. 38.
    max_iter : int, default 1000
        Maximum number of Newton (outer) iterations.
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"
        How the loss is evaluated; see
        :class:`refimpl.losses.PairwiseSquaredHinge`.
    tree_method : {"selection_tree", "avl", "direct", "prsvm"}
        Structure of the tree backend.
    pairs : {"all", "adjacent"}, default "all"
        ``"adjacent"`` trains on pairs of adjacent relevance levels only
        (section 5).
    verbose : bool, default False
        Print one line per TRON iteration.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_iter_ : int
        Newton iterations.
    history_ : dict of ndarray
        Per iteration: objective ``f``, gradient norm ``gnorm``, cumulative
        CG iterations ``cg_iter``, trust-region radius ``delta``, ``time``.
    converged_ : bool
    backend_ : str
        The backend actually used (``"auto"`` resolved).

    Derived in: book/02_ranksvm_ostree.md#ranksvm-ostree
    """

    def __init__(self, C=1.0, loss="l2", tol=1e-3, max_iter=1000,
                 backend="auto", tree_method="selection_tree", pairs="all",
                 verbose=False):
        self.C = C
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter
        self.backend = backend
        self.tree_method = tree_method
        self.pairs = pairs
        self.verbose = verbose

    def _validate_params(self):
        check_positive(self.C, "C")
        check_positive(self.tol, "tol")
        if self.loss != "l2":
            raise DataError(
                f"loss must be 'l2' (the squared hinge TRON needs), got {self.loss!r}"
            )
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise DataError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if self.backend not in BACKENDS:
            raise DataError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.pairs not in PAIR_SETS:
            raise DataError(f"pairs must be one of {PAIR_SETS}, got {self.pairs!r}")

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero, which for ``C > 0`` happens only when the loss
        gradient at ``w = 0`` vanishes.
        """
        reset_fitted(self)
        self._validate_params()
        X, y = check_fit_input(self, X, y, qid)
        loss = PairwiseSquaredHinge(X, y, qid, backend=self.backend,
                                    tree_method=self.tree_method,
                                    which=self.pairs)
        objective = L2Regularized(loss, self.C)
        result = tron(objective, tol=self.tol, max_iter=self.max_iter,
                      verbose=self.verbose)
        if not np.all(np.isfinite(result.w)):
            raise FloatingPointError("RankSVM produced non-finite coefficients")
        self.coef_ = result.w
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.backend_ = loss.backend
        self.objective_ = result.history["f"][-1]
        if not np.any(self.coef_):
            g0 = float(self.history_["gnorm"][0])
            _warn_empty(
                self,
                "no value of C empties an l2-regularised RankSVM: w = 0 is its "
                "minimiser only when the gradient at w = 0 vanishes (the pairs' "
                f"differences cancel); here ||grad f(0)|| = {g0:.6g}"
                + ("" if g0 == 0 else
                   f", so the solver stopped at w = 0 before a minimiser "
                   f"(converged_ = {self.converged_}): check the feature scale"),
                parameter="C", value=float(self.C))
        return self


class FenchelRank(_LinearRanker):
    """Sparse ranking in an l1 ball, trained by FenchelRank (Lai et al. 2013).

    Solves eq. 3 of Lai et al. (2013),

    .. math::

        \\min_{\\|w'\\|_1 \\le r} \\frac1p \\sum_{(i, j) \\in P}
            \\max(0, 1 - w'^T (x_i - x_j))^2 ,

    through its rescaling ``w = w'/r`` (eq. 4) by Algorithm 1: greedy
    coordinate choice from ``g_t = K^T d_t`` (eq. 12), the update of eq. 18
    with the step of eqs. 19-21, and the stopping rule (eq. 17) that the
    duality gap ``P(d_t) - D(w_t) = ||g_t||_inf - g_t^T w_t`` is at most
    ``tol``.  ``coef_ = r w`` is on the scale of eq. 3, so
    ``||coef_||_1 <= r``.  See :func:`refimpl.solvers.fenchelrank`.

    Parameters
    ----------
    r : float, default 1.0
        Radius of the l1 ball (> 0); smaller is sparser.
    tol : float, default 1e-3
        Gap tolerance ``epsilon`` of eq. 17 (> 0); relative, since
        ``G(0) = 1``.
    max_iter : int, default 1000
        Maximum number of updates ``T``; each adds at most one feature.
    step : {"exact", "closed_form", "theory"}, default "exact"
        Step-size rule (eqs. 19-21, the corrected rule after eq. 21, or the
        step of the proof of Theorem 1).
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"
        How the loss is evaluated; see
        :class:`refimpl.losses.PairwiseSquaredHinge`.
    linesearch : {"auto", "pairs", "newton"}, default "auto"
        Line search of ``step="exact"``; ``"pairs"`` needs explicit pairs
        (not the tree backend).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        ``r w``, the solution of eq. 3.
    n_iter_ : int
        Updates performed.
    history_ : dict of ndarray
        Per iterate: dual objective ``D``, primal ``P``, ``gap``, step
        ``mu``, feature ``j``, ``nnz``, ``ls_eval``, ``time``.
    converged_ : bool
        Whether eq. 17 holds at the returned iterate.
    dual_gap_ : float
        Final gap ``P(d_T) - D(w_T)``, an upper bound on ``G(w_T) - G^*``.
    objective_ : float
        ``G(w_T)``, i.e. the mean squared hinge of eq. 3 at ``coef_``.
    backend_ : str
        The backend actually used.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """

    def __init__(self, r=1.0, tol=1e-3, max_iter=1000, step="exact",
                 backend="auto", linesearch="auto"):
        self.r = r
        self.tol = tol
        self.max_iter = max_iter
        self.step = step
        self.backend = backend
        self.linesearch = linesearch

    def _validate_params(self):
        check_positive(self.r, "r")
        check_positive(self.tol, "tol")
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise DataError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if self.step not in STEPS:
            raise DataError(f"step must be one of {STEPS}, got {self.step!r}")
        if self.backend not in BACKENDS:
            raise DataError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.linesearch not in LINESEARCHES:
            raise DataError(
                f"linesearch must be one of {LINESEARCHES}, got {self.linesearch!r}"
            )

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero: with ``r > 0`` only when the duality gap at
        ``w = 0``, ``||grad G(0)||_inf``, is already at most ``tol`` (no
        radius empties the l1-ball model).
        """
        reset_fitted(self)
        self._validate_params()
        X, y = check_fit_input(self, X, y, qid)
        r = float(self.r)
        loss = PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True,
                                    backend=self.backend)
        if self.linesearch == "pairs" and loss.pairs is None:
            raise DataError(
                "linesearch='pairs' needs explicit pairs, but backend "
                f"{loss.backend!r} has none: use linesearch='newton' or 'auto'"
            )
        result = fenchelrank(loss, r, tol=self.tol, max_iter=self.max_iter,
                             step=self.step, linesearch=self.linesearch)
        coef = r * result.w
        if not np.all(np.isfinite(coef)):
            raise FloatingPointError("FenchelRank produced non-finite coefficients")
        self.coef_ = coef
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.dual_gap_ = float(result.history["gap"][-1])
        self.objective_ = -float(result.history["D"][-1])
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


__all__ = [
    "FSMSVM",
    "FSMRank",
    "FenchelRank",
    "GASRanker",
    "RankSVM",
    "SparseRankSVM",
    "gas_e",
]


# --------------------------------------------------------------------------
# Sparse rankers trained by accelerated proximal gradient (chapter 4)
# --------------------------------------------------------------------------


def _check_max_iter(max_iter, name="max_iter"):
    if not isinstance(max_iter, (int, np.integer)) or isinstance(max_iter, bool) \
            or max_iter < 1:
        raise DataError(f"{name} must be a positive integer, got {max_iter!r}")


def _l1_penalty(estimator, n_features):
    """``||w||_1`` (Laporte et al. 2014, eq. 7)."""
    return L1(1.0)


def _weighted_l1_penalty(estimator, n_features):
    """``sum_j beta_j |w_j|`` (Laporte et al. 2014, eq. 12) with ``beta = weights``."""
    if estimator.weights is None:
        raise DataError(
            "penalty='weighted_l1' needs weights (an array of n_features "
            "non-negative numbers), got weights=None"
        )
    try:
        penalty = WeightedL1(estimator.weights)
    except DataError as err:
        raise DataError(f"bad weights for penalty='weighted_l1': {err}") from None
    if penalty.n_features != n_features:
        raise DataError(
            f"weights must have length n_features = {n_features}, got "
            f"{penalty.n_features}"
        )
    return penalty


#: ``penalty=`` name -> factory ``(estimator, n_features) -> penalty object``
#: for the convex penalties of :class:`SparseRankSVM` (one FISTA solve).
SPARSE_PENALTIES = {"l1": _l1_penalty, "weighted_l1": _weighted_l1_penalty}
#: The non-convex penalties of :class:`SparseRankSVM`, solved by reweighted l1.
NONCONVEX_PENALTIES = ("log", "mcp", "lp", "scad")


class SparseRankSVM(_LinearRanker):
    """Sparse L2-loss linear RankSVM: RankSVM-l1 by FISTA, non-convex penalties by reweighted l1.

    Minimises eq. 7 of Laporte, Flamary, Canu, Déjean & Mothe (2014),

    .. math::

        F(w) = \\|w\\|_1
            + C \\sum_{(i, j) \\in P} \\max(0, 1 - w^T (x_i - x_j))^2,

    (a sum over pairs, not a mean, so ``C`` is the paper's) or, with
    ``penalty="weighted_l1"``, eq. 12's weighted lasso
    ``sum_j beta_j |w_j| + C sum_P max(0, 1 - w^T(x_i - x_j))^2`` with
    ``beta = weights``.  Solved by :func:`refimpl.solvers.apg` (their
    Algorithm 1, with a line search instead of the fixed ``1/L``), prox =
    soft-thresholding (eqs. 11-12), from ``w = 0``, until the gradient
    mapping has dropped to ``tol`` times its value at 0:
    ``||G_L(z_k)|| <= tol ||G_L(0)||``.

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
    max_outer : int, default 30
        Maximum number of reweighting passes (non-convex penalties).
    tol_outer : float, default 1e-4
        Relative change of ``w`` between passes that stops Algorithm 2.
    warm_start : bool, default True
        Warm-start each pass at the previous solution.
    tol : float, default 1e-6
        Relative gradient-mapping tolerance (> 0) of every FISTA solve.
    max_iter : int, default 10000
        Maximum number of FISTA iterations per solve.
    line_search : {"backtracking", "nemirovski", "fixed"}
        Step-size rule of :func:`refimpl.solvers.apg`.
    accelerated : bool, default True
        False runs ISTA (forward-backward splitting, eq. 10).
    restart : {False, "function", "gradient"}
        O'Donoghue-Candès adaptive restart.
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"
        How the loss is evaluated; see
        :class:`refimpl.losses.PairwiseSquaredHinge`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_iter_ : int
        FISTA iterations (summed over passes for non-convex penalties).
    n_outer_ : int
        Reweighting passes (1 for the convex penalties).
    history_ : dict of ndarray
        Convex penalties: per FISTA iteration, objective ``F``, ``L``,
        gradient-mapping norm ``gmap``, cumulative ``n_fun``, ``restart``,
        ``time``.  Non-convex penalties: per outer iteration (entry 0 = the
        start), the non-convex objective ``F``, ``majorizer``, ``support``,
        ``n_inner``, ``change``, ``n_fun``, ``time``.
    inner_history_ : list of dict of ndarray
        The FISTA history of every pass (one entry for the convex penalties).
    penalty_ : object
        The penalty solved: :class:`refimpl.penalties.L1` or
        :class:`refimpl.penalties.WeightedL1` for the convex penalties, the
        concave penalty of :mod:`refimpl.nonconvex` otherwise.
    converged_ : bool
    objective_ : float
        ``F(coef_)`` (eq. 7, eq. 12, or ``C J_1 + sum_j g(|w_j|)``).
    lipschitz_ : float
        The final ``L`` of the line search (or the fixed constant).
    backend_ : str

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    Derived in: book/05_dc_reweighting.md#dc-reweighting
    """

    def __init__(self, C=1.0, penalty="l1", weights=None, eps=None, gamma=2.0,
                 p=0.5, a=3.7, lam=None, max_outer=30, tol_outer=1e-4, warm_start=True,
                 tol=1e-6, max_iter=10000, line_search="backtracking",
                 accelerated=True, restart=False, backend="auto"):
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

    def _validate_params(self):
        check_positive(self.C, "C")
        check_positive(self.tol, "tol")
        _check_max_iter(self.max_iter)
        accepted = tuple(SPARSE_PENALTIES) + NONCONVEX_PENALTIES
        if not isinstance(self.penalty, str) or self.penalty not in accepted:
            raise DataError(
                f"penalty must be one of {accepted}, got {self.penalty!r}"
            )
        if self.line_search not in LINE_SEARCHES:
            raise DataError(
                f"line_search must be one of {LINE_SEARCHES}, got {self.line_search!r}"
            )
        if self.restart not in RESTARTS:
            raise DataError(f"restart must be one of {RESTARTS}, got {self.restart!r}")
        for name in ("accelerated", "warm_start"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise DataError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.backend not in BACKENDS:
            raise DataError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.penalty in NONCONVEX_PENALTIES:
            _check_max_iter(self.max_outer, "max_outer")
            check_nonnegative(self.tol_outer, "tol_outer")
            return make_concave_penalty(self.penalty, C=self.C, eps=self.eps, p=self.p,
                                        gamma=self.gamma, a=self.a, lam=self.lam)
        return None

    def _problem(self, X, y, qid):
        """The smooth part ``C L(w)`` and the penalty object of eq. 7 / eq. 12."""
        loss = PairwiseSquaredHinge(X, y, qid, backend=self.backend)
        smooth = ScaledSmooth(loss, float(self.C))
        penalty = SPARSE_PENALTIES[self.penalty](self, loss.n_features)
        return loss, smooth, penalty

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero, naming the ``C`` at or below which that happens
        (its ``threshold``): ``min_j beta_j / |grad_j
        L(0)|`` (``1 / ||grad L(0)||_inf`` for ``"l1"``), for the non-convex
        penalties that of the first (l1) pass.
        """
        reset_fitted(self)
        concave = self._validate_params()
        X, y = check_fit_input(self, X, y, qid)
        if concave is not None:
            return self._fit_reweighted(X, y, qid, concave)
        loss, smooth, penalty = self._problem(X, y, qid)
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
                               else "1 / ||grad L(0)||_inf", stacklevel=4)
        return self

    def _warn_empty_C(self, threshold, formula, fixed=None, stacklevel=5):
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

    def _fit_reweighted(self, X, y, qid, concave):
        loss = PairwiseSquaredHinge(X, y, qid, backend=self.backend)
        smooth = ScaledSmooth(loss, float(self.C))
        if self.line_search == "fixed":
            # the reweighting passes share f, so one constant serves them all
            raise DataError("line_search='fixed' is not supported with non-convex "
                            "penalties; use 'backtracking' or 'nemirovski'")
        result = reweighted_l1(smooth, concave, max_outer=int(self.max_outer),
                               tol_outer=float(self.tol_outer),
                               warm_start=bool(self.warm_start), tol=float(self.tol),
                               max_iter=int(self.max_iter),
                               line_search=self.line_search,
                               accelerated=bool(self.accelerated),
                               restart=self.restart)
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


_IMPORTANCES = ("pearson", "uniform")
_SIMILARITIES = ("pearson", "identity")


class FSMRank(_LinearRanker):
    """FSMRank: similarity- and importance-penalised sparse ranking (Lai et al. 2013).

    Solves eq. 1 of Lai, Pan, Tang & Yu (2013),

    .. math::

        \\min_{\\hat w} \\frac{\\lambda_1}{2} \\hat w^T \\hat A \\hat w
            + \\lambda_2 \\sum_i \\frac{|\\hat w_i|}{\\hat s_i}
            + \\frac1p \\sum_{(i, j) \\in P} \\max(0, 1 - \\hat w^T (x_i - x_j))^2,

    through its non-negative 2d-dimensional form eq. 2 (``X2 = [X, -X]``,
    ``A2 = [[A, -A], [-A, A]]``, ``s2 = [s, s]``, see
    :mod:`refimpl.fsmrank` for why this ``A2``) by Algorithm 1: FISTA with
    the closed-form projection step (eq. 3), "Nemirovski's line search"
    started at ``L0 / 2**10`` with ``L0`` Theorem 1's bound, and the
    stopping rule ``|F(w_t) - F(w_{t-1})| <= tol |F(w_{t-1})|``.
    ``coef_ = w^+ - w^-``.

    If ``A`` is not positive semidefinite (``|PC|`` matrices often are
    not), eq. 1 is not convex; by default (``psd="project"``) ``A`` is
    replaced by its nearest PSD matrix, with a ``UserWarning``.

    Parameters
    ----------
    lambda1 : float, default 1.0
        Weight of the similarity term (>= 0).
    lambda2 : float, default 1e-3
        Weight of the importance-weighted l1 term (>= 0).  Every weight
        vanishes for ``lambda2 >= max_i s_i |grad_i f(0)|`` (0.15 on MQ2008
        Fold 1, 0.19 on the default synthetic data), whatever ``lambda1``;
        the default is the middle of the runner's grid (1e-4 to 1e-2).
    importance : {"pearson", "uniform"}, default "pearson"
        ``s_i = |PC(h_i, y)|`` (floored at
        ``refimpl.fsmrank.IMPORTANCE_FLOOR``), or ``s = 1`` (Table III's
        ``S^1``).
    similarity : {"pearson", "identity"}, default "pearson"
        ``A_ij = |PC(h_i, h_j)|``, or ``A = I`` (the ablation of Section
        IV-D3).
    psd : {"project", "ignore", "raise"}, default "project"
        What to do with a non-PSD ``A``; see
        :func:`refimpl.fsmrank.convexify_similarity`.
    tol : float, default 1e-6
        Relative change tolerance (the paper uses 1e-4).
    max_iter : int, default 10000
        ``T`` of Algorithm 1 (the paper's experiments use 400).
    L0 : float, optional
        Upper bound on the Lipschitz constant of ``grad psi``; default
        Theorem 1's ``(4d/p) sum_P ||x_i - x_j||_inf^2 + 2 d lambda1
        max|A|``.
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        ``w^+ - w^-``, a solution of eq. 1.
    coef2_ : ndarray of shape (2 n_features,)
        The solution ``w >= 0`` of eq. 2.
    importance_ : ndarray of shape (n_features,)
        ``s``.
    similarity_ : ndarray of shape (n_features, n_features)
        The ``A`` used in the objective (after any PSD projection).
    psd_projected_ : bool
        Whether ``A`` was replaced by its nearest PSD matrix.
    similarity_min_eig_ : float
        Smallest eigenvalue of ``A`` before any projection.
    lipschitz_bound_ : float
        ``L0`` used.
    n_iter_ : int
    history_ : dict of ndarray
        ``F`` (objective of eq. 2), ``L``, ``gmap``, ``n_fun``, ``restart``,
        ``time``.
    converged_ : bool
    objective_ : float
        Objective of eq. 2 at ``coef2_``; equals eq. 1 at ``coef_`` when
        ``min(w^+_i, w^-_i) = 0`` for all ``i`` (always at the optimum if
        ``lambda2 > 0``).
    backend_ : str

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """

    def __init__(self, lambda1=1.0, lambda2=1e-3, importance="pearson",
                 similarity="pearson", psd="project", tol=1e-6, max_iter=10000,
                 L0=None, backend="auto"):
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.importance = importance
        self.similarity = similarity
        self.psd = psd
        self.tol = tol
        self.max_iter = max_iter
        self.L0 = L0
        self.backend = backend

    def _validate_params(self):
        check_nonnegative(self.lambda1, "lambda1")
        check_nonnegative(self.lambda2, "lambda2")
        check_positive(self.tol, "tol")
        _check_max_iter(self.max_iter)
        if self.L0 is not None:
            check_positive(self.L0, "L0")
        if self.importance not in _IMPORTANCES:
            raise DataError(
                f"importance must be one of {_IMPORTANCES}, got {self.importance!r}"
            )
        if self.similarity not in _SIMILARITIES:
            raise DataError(
                f"similarity must be one of {_SIMILARITIES}, got {self.similarity!r}"
            )
        if self.psd not in PSD_MODES:
            raise DataError(f"psd must be one of {PSD_MODES}, got {self.psd!r}")
        if self.backend not in BACKENDS:
            raise DataError(f"backend must be one of {BACKENDS}, got {self.backend!r}")

    def _problem(self, X, y, qid):
        """``(loss, smooth psi, penalty r, s, A, projected, min_eig)`` of eq. 2."""
        loss = PairwiseSquaredHinge(X, y, qid, normalize=True, backend=self.backend)
        d = loss.n_features
        if self.importance == "pearson":
            s = pearson_importance(loss.X, loss.y)
        else:
            s = np.ones(d)
        A = pearson_similarity(loss.X) if self.similarity == "pearson" else np.eye(d)
        A, projected, min_eig = convexify_similarity(A, self.psd)
        smooth = FSMRankSmooth(LiftedLoss(loss), lift_similarity(A),
                               float(self.lambda1))
        penalty = NonNegWeightedL1(float(self.lambda2) / lift_importance(s))
        return loss, smooth, penalty, s, A, projected, min_eig

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero, naming the ``lambda2`` at or above which that
        happens (its ``threshold``).  By the optimality
        conditions of eq. 2 on the orthant, ``w = 0`` is optimal iff
        ``grad_i psi(0) + lambda2 / s_i >= 0`` for every ``i``; ``grad
        psi(0) = [g, -g]`` with ``g = grad f(0)`` (the similarity term has
        zero gradient at 0), hence iff ``lambda2 >= max_i s_i |g_i|``.
        """
        reset_fitted(self)
        self._validate_params()
        X, y = check_fit_input(self, X, y, qid)
        loss, smooth, penalty, s, A, projected, min_eig = self._problem(X, y, qid)
        L0 = float(self.L0) if self.L0 is not None else smooth.lipschitz_bound()
        if L0 <= 0:
            L0 = 1.0
        result = apg(smooth, penalty, L0=L0, line_search="nemirovski", eta=2.0,
                     tol=float(self.tol), stop="relative_change",
                     max_iter=int(self.max_iter))
        d = loss.n_features
        w2 = result.w
        coef = w2[:d] - w2[d:]
        if not np.all(np.isfinite(coef)):
            raise FloatingPointError("FSMRank produced non-finite coefficients")
        self.coef_ = coef
        self.coef2_ = w2
        self.importance_ = s
        self.similarity_ = A
        self.psd_projected_ = bool(projected)
        self.similarity_min_eig_ = float(min_eig)
        self.lipschitz_bound_ = float(L0)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.objective_ = float(result.history["F"][-1])
        self.backend_ = loss.backend
        if not np.any(coef):
            lam2 = float(self.lambda2)
            threshold = float(np.max(s * np.abs(_grad_at_zero(loss)), initial=0.0))
            if threshold == 0:
                detail = ("the gradient of the loss at w = 0 is zero, so no lambda2 "
                          "gives a non-zero weight")
            else:
                side = ("choose lambda2 below it" if lam2 >= threshold else
                        "lambda2 is below it, yet the fit ended at w = 0 "
                        f"(converged_ = {self.converged_})")
                detail = (f"every weight vanishes for lambda2 >= {threshold:.6g} (= "
                          f"max_i s_i |grad_i f(0)|, whatever lambda1); {side}")
            _warn_empty(self, f"lambda2={self.lambda2!r}: {detail}",
                        parameter="lambda2", value=lam2, threshold=threshold)
        return self


def _check_n_select(n_features, d):
    if not isinstance(n_features, (int, np.integer)) or isinstance(n_features, bool) \
            or not 1 <= n_features <= d:
        raise DataError(
            f"n_features must be an integer in [1, {d}] (the number of "
            f"features to select), got {n_features!r}"
        )
    return int(n_features)


def _gas(X, y, qid, n_features, c):
    """GAS selection plus its inputs: ``(selected, importance, similarity)``."""
    X = check_X(X)
    check_labels(y, X.shape[0])
    group_queries(qid, X.shape[0])
    t = _check_n_select(n_features, X.shape[1])
    check_nonnegative(c, "c")
    importance, _ = feature_ndcg(X, y, qid, k=10)
    similarity = kendall_similarity(X, qid)
    return gas_select(importance, similarity, t, float(c)), importance, similarity


def _columns(X, idx):
    X = check_X(X)
    return X[:, idx]


def gas_e(X, y, qid, n_features, *, c=0.01, ranker=None):
    """GAS feature selection (Geng, Liu, Qin & Li 2007), optionally followed by a ranker.

    Importance of a feature: NDCG@10 (LETOR 4.0 convention, averaged over
    queries) of ranking the documents by it, in its better direction;
    similarity of two features: ``|Kendall's tau|`` between their rankings,
    averaged over queries.  The greedy search (GAS, Geng et al. Section 3.3)
    picks the most important feature, lowers every other importance by
    ``2 c sim(j, picked)``, and repeats.  "GAS-E" in FSMRank's experiments
    (Lai et al. 2013, Section IV-D1) is GAS followed by RankSVM-Primal on the
    selected features: pass ``ranker=RankSVM(...)``.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    y : array-like of shape (n,)
    qid : array-like of shape (n,) or None
    n_features : int
        Number ``t`` of features to select, 1 <= t <= d.
    c : float, default 0.01
        Redundancy penalty of GAS (>= 0).
    ranker : estimator, optional
        If given, it is fitted in place on ``X[:, selected]``.

    Returns
    -------
    ndarray of int64, shape (n_features,)
        Selected feature indices, in the order picked.
    """
    selected, _, _ = _gas(X, y, qid, n_features, c)
    if ranker is not None:
        ranker.fit(_columns(X, selected), y, qid)
    return selected


def _fit_ranksvm_on(estimator, X, y, qid, selected):
    """Second stage of GAS-E and FSMSVM: RankSVM on the columns ``selected``."""
    svm = RankSVM(C=estimator.C).fit(X[:, selected], y, qid)
    coef = np.zeros(X.shape[1])
    coef[selected] = svm.coef_
    estimator.coef_ = coef
    estimator.selected_ = selected
    estimator.ranksvm_ = svm
    estimator.n_iter_ = svm.n_iter_
    estimator.converged_ = svm.converged_
    estimator.history_ = svm.history_
    return estimator


class GASRanker(_LinearRanker):
    """GAS-E: GAS feature selection, then RankSVM on the selected features.

    The two-stage baseline of Lai et al. (2013), Section IV-D1 (GAS of Geng
    et al. 2007, see :func:`gas_e`; second stage :class:`RankSVM`, the
    L2-loss RankSVM-Primal).

    Parameters
    ----------
    n_features : int
        Number ``t`` of features to select.
    c : float, default 0.01
        GAS redundancy penalty.
    C : float, default 1.0
        RankSVM loss weight.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        RankSVM weights on the selected features, 0 elsewhere.
    selected_ : ndarray of int64
        Selected features in the order GAS picked them.
    importance_ : ndarray
        NDCG@10 of each feature.
    similarity_ : ndarray
        ``|Kendall's tau|`` between features.
    ranksvm_ : RankSVM
        The fitted second stage.
    n_iter_, converged_, history_ :
        Those of the RankSVM.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """

    def __init__(self, n_features, c=0.01, C=1.0):
        self.n_features = n_features
        self.c = c
        self.C = C

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        reset_fitted(self)
        X, y = check_fit_input(self, X, y, qid)
        _check_n_select(self.n_features, X.shape[1])
        check_nonnegative(self.c, "c")
        check_positive(self.C, "C")
        selected, importance, similarity = _gas(X, y, qid, self.n_features, self.c)
        self.importance_ = importance
        self.similarity_ = similarity
        return _fit_ranksvm_on(self, X, y, qid, selected)


class FSMSVM(_LinearRanker):
    """FSMSVM: the top-t features of FSMRank, then RankSVM on them (Lai et al. 2013).

    The second baseline of Section IV-D1: fit :class:`FSMRank`, sort the
    features by ``|coef_|`` decreasingly (ties by index) and train
    :class:`RankSVM` on the first ``t``.

    Parameters
    ----------
    n_features : int
        Number ``t`` of features to keep.
    lambda1 : float, default 1.0
        FSMRank's similarity weight (eq. 1).
    lambda2 : float, default 1e-3
        FSMRank's l1 weight (eq. 1), default as :class:`FSMRank`'s.
    C : float, default 1.0
        RankSVM loss weight.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        RankSVM weights on the selected features, 0 elsewhere.
    selected_ : ndarray of int64
        The ``t`` features, by decreasing ``|FSMRank weight|``.
    fsmrank_ : FSMRank
    ranksvm_ : RankSVM
    n_iter_, converged_, history_ :
        Those of the RankSVM.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """

    def __init__(self, n_features, lambda1=1.0, lambda2=1e-3, C=1.0):
        self.n_features = n_features
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.C = C

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        reset_fitted(self)
        X, y = check_fit_input(self, X, y, qid)
        t = _check_n_select(self.n_features, X.shape[1])
        check_positive(self.C, "C")
        fsm = FSMRank(lambda1=self.lambda1, lambda2=self.lambda2).fit(X, y, qid)
        selected = np.argsort(-np.abs(fsm.coef_), kind="stable")[:t].astype(np.int64)
        self.fsmrank_ = fsm
        return _fit_ranksvm_on(self, X, y, qid, selected)
