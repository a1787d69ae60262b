r"""LifeRank: linear feature extraction for ranking (Pandey et al. 2018).

LifeRank looks for a transformation ``T`` (``n x k``, orthonormal columns)
and weights ``w`` (``k``) minimising a pairwise logistic loss of the scores
``X T w`` (their eq. 5).  This module implements, as the book derives them:

* :class:`refimpl.losses.PairwiseLogistic` -- the loss ``(1/p) sum_P log(1 + exp(-(x_i -
  x_j)^T v))`` over the preference pairs ``P`` and its gradient, through a
  numba kernel on document scores (``d loss / d s``, then ``X^T``), never
  building the ``p x n`` pair matrix;
* :class:`refimpl.losses.LifeRankObjective` -- eq. 5 without ``b``, its gradients (eq. 7),
  the orthonormality constraints in the paper's signs and the Lagrangian
  (eq. 6), as a problem for :func:`refimpl.solvers.bdmm` (eq. 8);
* the Stiefel-manifold alternative that keeps ``T^T T = I`` exactly
  (:func:`stiefel_retraction`, :func:`stiefel_gradient`);
* :func:`liferank_solve` -- the three variants ``"bdmm"`` (the paper),
  ``"stiefel"`` and ``"none"`` (LifeRank^NO of Table 5);
* the feature-quality measures of section 5.4.2 (:func:`feature_importance`,
  :func:`rank_similarity`, :func:`feature_redundancy`);
* the scikit-learn transformer :class:`~refimpl.estimators.LifeRank` (defined in
  :mod:`refimpl.estimators.liferank`, importable from here).

Choices where the paper is silent or inconsistent, argued in the chapter:
the loss is a *mean* over the preference pairs ``P = {(i, j): q_i = q_j,
y_i > y_j}`` (each unordered pair once, so eq. 5's sum over ordered pairs
with ``y_ij = +-1`` is ``2p`` times ours, and ``lambda_paper = 2 p
lambda``); ``b`` is dropped (with both orientations of every pair the
objective is even in ``b``, so ``b* = 0`` and its gradient vanishes at
``b = 0``; with one orientation it would be unbounded); the multipliers
start at 0 and ascend (eq. 8) after the primal step.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._validation import (
    check_nonnegative,
    check_positive,
    check_X,
)
from .exceptions import DataError
from .fsmrank import feature_ndcg
from .losses.liferank import LifeRankObjective  # noqa: F401  (re-export: objectives live in losses/)
from .losses.logistic import LOSS_BACKENDS, PairwiseLogistic  # noqa: F401  (re-export)
from .pairs import query_sign_grams
from .solvers._finite import (
    check_finite,
    safe_norm,
)
from .solvers.bdmm import UPDATES, BDMMResult, bdmm

__all__ = [
    "CONSTRAINTS",
    "INITS",
    "RETRACTIONS",
    "LifeRank",  # noqa: F822  (lazy re-export, see __getattr__)
    "LifeRankResult",
    "feature_importance",
    "feature_redundancy",
    "fit_weights",
    "liferank_solve",
    "orthonormality_error",
    "rank_similarity",
    "stiefel_gradient",
    "stiefel_retraction",
]

#: How ``T^T T = I`` is treated: the paper's multipliers, an exact
#: retraction onto the Stiefel manifold, or not at all (LifeRank^NO).
CONSTRAINTS = ("bdmm", "stiefel", "none")

#: Retractions onto the Stiefel manifold.
RETRACTIONS = ("polar", "qr")

#: Starting ``T``: i.i.d. ``N(0, 1/n)`` entries, those orthonormalised, or
#: i.i.d. ``U[0, 1/sqrt(n))`` entries (non-negative, as in matrix factorisation).
INITS = ("random", "orthonormal", "uniform")

#: Similarity of two rankings in :func:`rank_similarity`.
TAU_VARIANTS = ("b", "eq10")


# --------------------------------------------------------------------------
# Eq. 5-7: objective, constraints, Lagrangian
# --------------------------------------------------------------------------


def orthonormality_error(T) -> float:
    """``||T^T T - I||_F``, the constraint violation of eq. 4.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 2:
        raise DataError(f"T must be a matrix, got shape {T.shape}")
    return float(np.linalg.norm(T.T @ T - np.eye(T.shape[1])))


# --------------------------------------------------------------------------
# The Stiefel manifold
# --------------------------------------------------------------------------


def stiefel_retraction(T, method="polar") -> np.ndarray:
    r"""Map ``T`` (full column rank) to a matrix with orthonormal columns.

    ``"polar"``: ``U V^T`` from the thin SVD ``T = U S V^T``, the nearest
    orthonormal matrix in the Frobenius norm (``T (T^T T)^{-1/2}``).
    ``"qr"``: ``Q`` of the thin QR factorisation with the signs fixed so that
    ``diag(R) > 0`` (then ``Q`` is unique and continuous in ``T``).  Both are
    retractions: ``R(T + t xi) = T + t xi + O(t^2)`` for orthonormal ``T``
    and tangent ``xi``.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    T : array-like of shape (n, k), ``k <= n``
    method : {"polar", "qr"}

    Returns
    -------
    ndarray of shape (n, k)
        ``Q`` with ``Q^T Q = I`` to rounding.
    """
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 2 or T.shape[1] > T.shape[0]:
        raise DataError(f"T must be an n x k matrix with k <= n, got shape {T.shape}")
    if not np.all(np.isfinite(T)):
        raise DataError("T contains NaN or infinite values")
    if method == "polar":
        U, _, Vt = np.linalg.svd(T, full_matrices=False)
        return U @ Vt
    if method == "qr":
        Q, R = np.linalg.qr(T)
        sign = np.where(np.diag(R) < 0, -1.0, 1.0)
        return Q * sign
    raise DataError(f"method must be one of {RETRACTIONS}, got {method!r}")


def stiefel_gradient(T, G) -> np.ndarray:
    r"""Riemannian gradient on the Stiefel manifold: ``G - T sym(T^T G)``.

    The projection of the Euclidean gradient ``G`` onto the tangent space
    ``{xi : T^T xi + xi^T T = 0}`` at an orthonormal ``T`` (embedded
    metric); it vanishes exactly at the KKT points of ``min F(T)`` subject
    to ``T^T T = I``.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    T = np.asarray(T, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    S = T.T @ G
    return G - T @ (0.5 * (S + S.T))


# --------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------


@dataclass
class LifeRankResult(BDMMResult):
    """What :func:`liferank_solve` returns.

    A :class:`refimpl.solvers.SolverResult` plus the transformation ``T``.

    ``w`` holds LifeRank's weights (length ``k``), ``T`` the transformation,
    ``multipliers`` the ``k x k`` matrix ``A`` of eq. 6 (zeros unless
    ``constraint="bdmm"``).

    Derived in: book/06_liferank_bdmm.md#liferank
    """

    T: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


class _Unconstrained:
    """An objective seen without its constraints (LifeRank^NO)."""

    def __init__(self, objective):
        self.objective = objective

    def fun(self, x):
        return self.objective.fun(x)

    def grad(self, x):
        return self.objective.grad(x)

    def constraint(self, x):
        return np.zeros(0)

    def constraint_vjp(self, x, u):
        return np.zeros(self.objective.n_features)


def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise DataError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _stiefel_descent(objective, T0, w0, lr, retraction, max_iter, tol, warn):
    """Riemannian gradient descent in ``T`` (retraction), plain in ``w``."""
    t0 = time.perf_counter()
    T = stiefel_retraction(T0, retraction)
    w = np.array(w0, dtype=np.float64, copy=True)
    keys = ("f", "lagrangian", "violation", "grad_norm", "multiplier_norm",
            "time", "loss")
    history = {key: [] for key in keys}

    def state():
        F, gT, gw = objective.value_and_grads(T, w)
        rg = stiefel_gradient(T, gT)
        gnorm = math.sqrt(float(np.sum(rg * rg)) + float(gw @ gw))
        for key, value in zip(keys, (F, F, orthonormality_error(T), gnorm, 0.0,
                                     time.perf_counter() - t0,
                                     objective.last_loss)):
            history[key].append(value)
        return F, rg, gw, gnorm

    F, rg, gw, gnorm = state()
    # a finite gradient whose norm overflowed would make the relative test
    # below hold at the start (inf <= tol * inf): refuse non-finite values
    where = "at the starting point"
    check_finite(F, "liferank_solve (stiefel)", "the objective F", objective, where)
    gnorm = safe_norm(np.concatenate([np.ravel(rg), np.ravel(gw)]))
    check_finite(gnorm, "liferank_solve (stiefel)", "the gradient norm",
                 objective, where)
    scale = max(1.0, gnorm)
    n_iter = 0
    converged = gnorm <= tol * scale
    diverged = False
    while not converged and n_iter < max_iter:
        with np.errstate(over="ignore", invalid="ignore"):
            T_step, w = T - lr * rg, w - lr * gw
        if not (np.all(np.isfinite(T_step)) and np.all(np.isfinite(w))):
            diverged = True
            break
        T = stiefel_retraction(T_step, retraction)
        n_iter += 1
        with np.errstate(over="ignore", invalid="ignore"):
            F, rg, gw, gnorm = state()
        # an overflowing gradient norm is divergence too, not "not converged"
        if not (math.isfinite(F) and math.isfinite(gnorm)):
            diverged = True
            break
        converged = gnorm <= tol * scale
    if diverged:
        message = f"diverged at iteration {n_iter + 1} (non-finite iterate)"
    elif converged:
        message = f"converged in {n_iter} iterations"
    else:
        message = (f"max_iter={max_iter} reached: Riemannian gradient norm "
                   f"{gnorm:.3e} (tol {tol:g} x {scale:.3e})")
    if not converged and warn:
        warnings.warn(f"liferank_solve: {message}", ConvergenceWarning, stacklevel=3)
    return LifeRankResult(w=w, n_iter=n_iter, converged=bool(converged),
                          history=history, message=message,
                          multipliers=np.zeros((T.shape[1], T.shape[1])), T=T)


def liferank_solve(objective, T0, w0, *, constraint="bdmm", lr=0.1,
                   lr_multiplier=None, damping=0.0, update="alternating",
                   retraction="polar", max_iter=1000, tol=1e-6,
                   constraint_tol=1e-3, warn=True):
    r"""Minimise LifeRank's eq. 5 by one of three treatments of ``T^T T = I``.

    * ``"bdmm"`` -- the paper (eq. 8): gradient descent in ``(T, w)`` on the
      Lagrangian (eq. 6), gradient ascent in the multipliers ``A`` (started
      at 0), by :func:`refimpl.solvers.bdmm`; ``damping > 0`` adds
      Platt & Barr's penalty ``(mu/2) ||T^T T - I||_F^2``.  Stops when
      ``||nabla_{T,w} L|| <= tol max(1, ||nabla L_0||)`` and ``||T^T T -
      I||_F <= constraint_tol``.
    * ``"stiefel"`` -- ``T`` starts at the retraction of ``T0``; each step
      moves ``T`` along minus the Riemannian gradient
      (:func:`stiefel_gradient`) and retracts (:func:`stiefel_retraction`),
      ``w`` takes a plain gradient step.  ``T^T T = I`` to rounding at every
      iterate; stops when the Riemannian gradient norm is ``<= tol
      max(1, its initial value)``.
    * ``"none"`` -- LifeRank^NO (Table 5): gradient descent on eq. 5 alone.
      With ``lambda > 0`` it has no minimiser (``(c T, w / c)`` has the same
      loss and a smaller l2 term for ``c > 1``), so it drifts; it stops on the
      gradient rule of ``"bdmm"``.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    objective : LifeRankObjective
    T0 : array-like of shape (n, k)
    w0 : array-like of shape (k,)
    constraint : {"bdmm", "stiefel", "none"}
    lr : float
        Step ``eta`` for ``T`` and ``w``.
    lr_multiplier : float, optional
        Step for the multipliers (``lr`` by default, as eq. 8).
    damping : float, default 0.0
        MDMM penalty weight ``mu`` (``"bdmm"`` only).
    update : {"alternating", "simultaneous"}
        See :func:`refimpl.solvers.bdmm`.
    retraction : {"polar", "qr"}
        ``"stiefel"`` only.
    max_iter : int
    tol : float
        Relative stationarity tolerance.
    constraint_tol : float
        ``"bdmm"`` only: ``||T^T T - I||_F`` at which the constraint counts
        as met.
    warn : bool
        ``ConvergenceWarning`` when ``max_iter`` is reached.

    Returns
    -------
    LifeRankResult
        History keys (one entry per iterate, entry 0 the start): ``f``
        (eq. 5), ``loss`` (its pairwise part), ``lagrangian``, ``violation``
        (``||T^T T - I||_F``), ``grad_norm``, ``multiplier_norm``, ``time``.
    """
    if constraint not in CONSTRAINTS:
        raise DataError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}")
    if retraction not in RETRACTIONS:
        raise DataError(f"retraction must be one of {RETRACTIONS}, got {retraction!r}")
    if update not in UPDATES:
        raise DataError(f"update must be one of {UPDATES}, got {update!r}")
    lr = check_positive(lr, "lr")
    max_iter = _check_int(max_iter, "max_iter", 0)
    tol = check_nonnegative(tol, "tol")
    constraint_tol = check_nonnegative(constraint_tol, "constraint_tol")
    damping = check_nonnegative(damping, "damping")
    k = objective.k
    x0 = objective.pack(T0, w0)
    if not np.all(np.isfinite(x0)):
        raise DataError("T0 and w0 must be finite")
    if constraint == "stiefel":
        return _stiefel_descent(objective, objective.unpack(x0)[0], w0, lr,
                                retraction, max_iter, tol, warn)

    def monitor(x):
        return {"loss": objective.last_loss,
                "orth_error": orthonormality_error(objective.unpack(x)[0])}

    # with no constraints ||c|| = 0 and only the gradient rule is left
    problem = objective if constraint == "bdmm" else _Unconstrained(objective)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = bdmm(problem, x0, lr=lr, lr_multiplier=lr_multiplier,
                   damping=damping if constraint == "bdmm" else 0.0,
                   update=update, max_iter=max_iter, tol=tol,
                   constraint_tol=constraint_tol, monitor=monitor, warn=False,
                   on_nonfinite="stop")
    T, w = objective.unpack(res.w)
    history = res.history
    # for "none" the norm of the empty constraint vector is 0: report T's own
    history["violation"] = history.pop("orth_error")
    if not res.converged and warn:
        warnings.warn(f"liferank_solve ({constraint}): {res.message}",
                      ConvergenceWarning, stacklevel=2)
    A = (res.multipliers.reshape(k, k) if constraint == "bdmm"
         else np.zeros((k, k)))
    return LifeRankResult(w=w.copy(), n_iter=res.n_iter, converged=res.converged,
                          history=history, message=res.message, multipliers=A,
                          T=T.copy())



def fit_weights(objective, T, w0, *, lr, max_iter=10000, tol=1e-10):
    r"""The ``w``-block of eq. 8 alone, with ``T`` frozen, run to convergence.

    ``w <- w - eta (T^T nabla ell(T w) + lambda w)`` until ``||nabla_w F|| <=
    tol max(1, ||nabla_w F(w0)||)``.  For fixed ``T`` this minimises the
    l2-regularised pairwise logistic regression on the features ``X T``
    (strongly convex for ``lambda > 0``), which the book solves with cvxpy
    to check the step.

    Derived in: book/06_liferank_bdmm.md#liferank

    Returns
    -------
    w : ndarray of shape (k,)
    n_iter : int
    converged : bool
    """
    lr = check_positive(lr, "lr")
    max_iter = _check_int(max_iter, "max_iter", 0)
    tol = check_nonnegative(tol, "tol")
    T = np.asarray(T, dtype=np.float64)
    w = np.array(w0, dtype=np.float64, copy=True)
    objective.pack(T, w)                           # shape check
    _, _, gw = objective.value_and_grads(T, w)
    scale = max(1.0, float(np.linalg.norm(gw)))
    n_iter = 0
    while float(np.linalg.norm(gw)) > tol * scale and n_iter < max_iter:
        w = w - lr * gw
        _, _, gw = objective.value_and_grads(T, w)
        n_iter += 1
    return w, n_iter, bool(float(np.linalg.norm(gw)) <= tol * scale)


# --------------------------------------------------------------------------
# Feature quality (section 5.4.2)
# --------------------------------------------------------------------------


def feature_importance(X, y, qid=None, *, k=5):
    r"""Importance of each feature: NDCG@k of ranking by it, in its better direction.

    Section 5.4.2: ``max(eva(X, f_i), eva(X, -f_i))`` with ``eva`` the
    NDCG@5 (LETOR 4.0 convention, averaged over queries) of ranking every
    query's documents by feature ``f_i``; the strategy of GAS (Geng et al.
    2007), i.e. ``refimpl.fsmrank.feature_ndcg`` with ``k=5``.
    ``Imp(F)`` of the paper is the mean of the returned vector.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    X : array-like of shape (m, n)
    y : array-like of shape (m,)
    qid : array-like of shape (m,), optional
    k : int, default 5

    Returns
    -------
    ndarray of shape (n,)
    """
    return feature_ndcg(X, y, qid, k=k)[0]


def rank_similarity(X, qid=None, *, tau="b"):
    r"""``|tau|`` between the rankings two features induce, averaged over queries.

    For each query, with ``S`` the matrix of ``sign(x_aj - x_bj)`` over its
    document pairs ``a < b``, ``(S^T S)_{jl} = N_c - N_d`` of features ``j``
    and ``l``.  ``tau="eq10"`` divides by ``N_c + N_d = (|S|^T |S|)_{jl}``
    (eq. 10 as printed: pairs tied in either ranking are left out, which is
    Goodman and Kruskal's gamma); ``tau="b"`` by ``sqrt((S^T S)_{jj} (S^T
    S)_{ll})`` (Kendall's tau-b, as :func:`refimpl.metrics.kendall_tau`).
    The absolute value is taken *per query* (section 5.4.2: "positive and
    negative values should not neutralize") and averaged over the queries on
    which it is defined (non-zero denominator); unlike
    ``refimpl.fsmrank.kendall_similarity``, which takes the absolute value of
    the mean.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (m, n)
    qid : array-like of shape (m,), optional
    tau : {"b", "eq10"}, default "b"

    Returns
    -------
    ndarray of shape (n, n)
        Symmetric, in [0, 1]; 1 on the diagonal, 0 for a pair of features
        never both non-constant on a query.
    """
    if tau not in TAU_VARIANTS:
        raise DataError(f"tau must be one of {TAU_VARIANTS}, got {tau!r}")
    n = check_X(X).shape[1]
    total = np.zeros((n, n))
    count = np.zeros((n, n))
    for C, A in query_sign_grams(X, qid, with_abs=(tau == "eq10")):
        if tau == "b":
            nt = np.diag(C)
            den = np.sqrt(np.outer(nt, nt))
        else:
            den = A
        ok = den > 0
        total[ok] += np.abs(C[ok] / den[ok])
        count += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = np.where(count > 0, total / np.maximum(count, 1), 0.0)
    sim = np.minimum(0.5 * (sim + sim.T), 1.0)
    np.fill_diagonal(sim, 1.0)
    return sim


def feature_redundancy(X, qid=None, *, tau="b") -> float:
    r"""``Rdd(F)`` of section 5.4.2: the mean of :func:`rank_similarity` over pairs.

    ``2 / (k (k - 1)) sum_{i > j} sim_ij`` for the ``k`` columns of ``X``
    (0 for a single column).

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    sim = rank_similarity(X, qid, tau=tau)
    k = sim.shape[0]
    if k < 2:
        return 0.0
    return float(sim[np.triu_indices(k, 1)].mean())


# --------------------------------------------------------------------------
# The estimator lives in refimpl.estimators.liferank
# --------------------------------------------------------------------------


def __getattr__(name):
    # Lazy, because refimpl.estimators.liferank imports this module.
    if name == "LifeRank":
        from .estimators.liferank import LifeRank
        return LifeRank
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
