r"""LifeRank's solvers (Pandey et al. 2018): eq. 5 under ``T^T T = I`` three ways.

:func:`liferank_solve` runs the paper's BDMM (eq. 8, by
:func:`refimpl.solvers.bdmm`), Riemannian descent on the Stiefel manifold or
no constraint at all (LifeRank^NO); :func:`fit_weights` the ``w``-block of
eq. 8 alone with ``T`` frozen.  The objective is
:class:`refimpl.losses.LifeRankObjective`.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_nonnegative, check_positive
from ..exceptions import DataError
from ._checks import check_choice, check_int
from ._finite import check_finite, safe_norm
from ._result import SolverResult
from .bdmm import UPDATES, BDMMResult, bdmm
from .stiefel import (
    RETRACTIONS,
    orthonormality_error,
    stiefel_gradient,
    stiefel_retraction,
)

#: How ``T^T T = I`` is treated: the paper's multipliers, an exact
#: retraction onto the Stiefel manifold, or not at all (LifeRank^NO).
CONSTRAINTS = ("bdmm", "stiefel", "none")


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


def _stiefel_descent(objective, T0, w0, lr, retraction, max_iter, tol, warn,
                     max_growth=None):
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
    # the divergence guard of bdmm (T^T T = I holds, so only F can grow)
    f_cap = (math.inf if max_growth is None
             else F + max_growth * max(1.0, abs(F)))
    n_iter = 0
    converged = gnorm <= tol * scale
    diverged = False
    grown = ""
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
        if F > f_cap:
            grown = (f"the objective grew from {history['f'][0]:.4g} to "
                     f"{F:.4g}, above the guard {f_cap:.4g}")
            break
        converged = gnorm <= tol * scale
    if grown:
        message = (f"diverged at iteration {n_iter} ({grown}): the step "
                   f"lr={lr:g} is too large for this problem; lower lr "
                   f"(e.g. lr={lr / 10:g})")
    elif diverged:
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
                   constraint_tol=1e-3, warn=True, max_growth=10.0):
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
    max_growth : float or None, default 10.0
        The divergence guard of :func:`refimpl.solvers.bdmm`: a run whose
        objective ``F`` exceeds ``F_0 + max_growth max(1, |F_0|)`` (or, for
        ``"bdmm"``, whose ``||T^T T - I||_F`` grows likewise) stops with a
        message starting with "diverged" that names ``lr``; ``None`` turns
        it off.

    Returns
    -------
    LifeRankResult
        History keys (one entry per iterate, entry 0 the start): ``f``
        (eq. 5), ``loss`` (its pairwise part), ``lagrangian``, ``violation``
        (``||T^T T - I||_F``), ``grad_norm``, ``multiplier_norm``, ``time``.
    """
    check_choice(constraint, "constraint", CONSTRAINTS, DataError)
    check_choice(retraction, "retraction", RETRACTIONS, DataError)
    check_choice(update, "update", UPDATES, DataError)
    lr = check_positive(lr, "lr")
    max_iter = check_int(max_iter, "max_iter", 0)
    tol = check_nonnegative(tol, "tol")
    constraint_tol = check_nonnegative(constraint_tol, "constraint_tol")
    damping = check_nonnegative(damping, "damping")
    k = objective.k
    x0 = objective.pack(T0, w0)
    if not np.all(np.isfinite(x0)):
        raise DataError("T0 and w0 must be finite")
    if constraint == "stiefel":
        return _stiefel_descent(objective, objective.unpack(x0)[0], w0, lr,
                                retraction, max_iter, tol, warn, max_growth)

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
                   on_nonfinite="stop", max_growth=max_growth)
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
    SolverResult
        ``w`` of shape ``(k,)``; history keys ``f`` (eq. 5 at ``(T, w)``)
        and ``grad_norm`` (``||nabla_w F||``), entry 0 at ``w0``.
    """
    lr = check_positive(lr, "lr")
    max_iter = check_int(max_iter, "max_iter", 0)
    tol = check_nonnegative(tol, "tol")
    T = np.asarray(T, dtype=np.float64)
    w = np.array(w0, dtype=np.float64, copy=True)
    objective.pack(T, w)                           # shape check
    history = {"f": [], "grad_norm": []}
    F, _, gw = objective.value_and_grads(T, w)
    gnorm = float(np.linalg.norm(gw))
    scale = max(1.0, gnorm)
    n_iter = 0
    while True:
        history["f"].append(F)
        history["grad_norm"].append(gnorm)
        if not (gnorm > tol * scale and n_iter < max_iter):
            break
        w = w - lr * gw
        F, _, gw = objective.value_and_grads(T, w)
        gnorm = float(np.linalg.norm(gw))
        n_iter += 1
    converged = bool(gnorm <= tol * scale)
    message = (f"converged in {n_iter} iterations" if converged else
               f"max_iter={max_iter} reached: gradient norm {gnorm:.3e} "
               f"(tol {tol:g} x {scale:.3e})")
    return SolverResult(w=w, n_iter=n_iter, converged=converged,
                        history=history, message=message)
