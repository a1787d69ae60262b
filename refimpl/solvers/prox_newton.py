r"""Proximal Newton with coordinate descent for ``min_w f(w) + sum_j beta_j |w_j|``.

The same convex problems as :func:`refimpl.solvers.apg` with the (weighted)
l1 penalty -- RankSVM-l1 (Laporte et al. 2014, eq. 7) and the weighted
lasso of the reweighting (their eq. 12) -- by the method LIBLINEAR uses for
l1-regularised L2-loss SVMs (newGLMNET: Yuan, Ho & Lin 2012; Tseng & Yun
2009).  At ``w_k``, with ``g = grad f(w_k)`` and ``H`` the generalised
Hessian of ``f`` at ``w_k`` (Lee & Lin 2014, eq. 11, plus ``nu I``), the
direction minimises the quadratic model of ``F``,

.. math::

    d_k = \arg\min_d\; g^T d + \tfrac12 d^T H d
          + \sum_j \beta_j |w_{k,j} + d_j| ,

by cyclic coordinate descent (each coordinate in closed form: a
soft-thresholded Newton step), and the step ``t`` is the first of
``1, 1/2, 1/4, ...`` with the Armijo decrease

.. math::

    F(w_k + t d_k) \le F(w_k) + \sigma t \Delta_k, \qquad
    \Delta_k = g^T d_k + \textstyle\sum_j \beta_j (|w_{k,j} + d_{k,j}|
               - |w_{k,j}|) < 0 .

The squared hinge is piecewise quadratic, so once the active pairs and the
signs settle one step solves the problem up to the inner tolerance.

*The objective.*  ``f`` is seen through ``fun``, ``grad`` and ``hess_vec``
only (``refimpl.losses._protocol``): ``H`` comes from the objective's
``dense_hessian`` capability when it offers one (the squared hinge builds
eq. 11 from the Laplacian of its active pairs), else from ``n``
Hessian-vector products, the generic path.

*Stopping rule.*  ``||v(w_k)||_2 <= tol ||v(w_0)||_2`` with ``v`` the
minimum-norm subgradient of ``F`` (zero exactly at minimisers),

.. math::

    v_j(w) = \begin{cases} g_j + \beta_j \operatorname{sign}(w_j) & w_j \ne 0 \\
             \operatorname{sign}(g_j) \max(|g_j| - \beta_j, 0) & w_j = 0 .
             \end{cases}

For every step ``1/L`` the gradient mapping of FISTA's stop satisfies
``||G_L(w)|| <= ||v(w)||`` (the prox is non-expansive), and at ``w_0 = 0``
both are the soft-thresholded gradient, so ``G_L(0) = v(0)`` for every
``L``: a point this solver accepts passes FISTA's ``"gradient_mapping"``
test with the same ``tol``, for any step.

Derived in: book/05_dc_reweighting.md#dc-reweighting
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels.cd_l1 import cd_quadratic_l1, model_violation
from ..losses import capability
from ..penalties import L1, WeightedL1
from ._checks import check_budget, initial_point
from ._finite import check_finite, safe_norm
from ._result import SolverResult
from .apg import LS_RTOL, hessian_matrix

__all__ = ["generalized_hessian", "min_norm_subgradient", "prox_newton"]

#: Armijo constant ``sigma`` (LIBLINEAR's newGLMNET uses 0.01).
SIGMA = 0.01
#: Ridge added to the generalised Hessian, relative to its largest diagonal
#: entry (it may be singular: few active pairs, constant features).
NU = 1e-12
#: Inner coordinate descent stops when the model's minimum-norm subgradient
#: is below this fraction of the outer one (an inexact Newton step whose
#: accuracy follows the outer violation).
INNER_RATIO = 0.1
#: Steps in a row without a decrease of F or a halving of ||v|| after
#: which the solver stops, unconverged (rounding level reached).
MAX_STALLS = 3
#: Halvings of the step before the line search gives up.
MAX_HALVINGS = 60

_HISTORY_KEYS = ("F", "L", "gmap", "n_fun", "restart", "time", "step", "n_inner")


def _check(value, what, objective=None, where=""):
    return check_finite(value, "prox_newton", what, objective, where)


def _penalty_weights(penalty, n):
    """``beta`` of an :class:`~refimpl.penalties.L1` or ``WeightedL1`` penalty."""
    if isinstance(penalty, WeightedL1):
        if penalty.n_features != n:
            raise ValueError(f"the penalty has {penalty.n_features} weights, the "
                             f"objective {n} features")
        return np.array(penalty.weights, dtype=np.float64)
    if isinstance(penalty, L1):
        return np.full(n, float(penalty.alpha))
    raise ValueError("prox_newton handles the penalties L1 and WeightedL1 only, "
                     f"got {type(penalty).__name__}")


def min_norm_subgradient(grad, w, beta):
    r"""The minimum-norm element of ``grad + partial(sum_j beta_j |w_j|)``.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    grad, w, beta : ndarray of shape (n,)
        ``grad f(w)``, the point and the l1 weights (``>= 0``).

    Returns
    -------
    ndarray of shape (n,)
        ``grad_j + beta_j sign(w_j)`` where ``w_j != 0``, else
        ``sign(grad_j) max(|grad_j| - beta_j, 0)``; zero iff ``w`` minimises
        ``f + sum_j beta_j |w_j|`` (``f`` convex).
    """
    off = np.sign(grad) * np.maximum(np.abs(grad) - beta, 0.0)
    return np.where(w != 0, grad + beta * np.sign(w), off)


def generalized_hessian(smooth, w):
    r"""The dense generalised Hessian of ``smooth`` at ``w``.

    From the objective's ``dense_hessian`` capability
    (``refimpl.losses.CAPABILITIES``) when it offers one -- for ``c``
    times the pairwise squared hinge ``2 c s X^T Lap_A X`` (Lee & Lin
    2014, eq. 11), built from the active pairs' Laplacian
    (``refimpl.losses._hinge_hessian``) -- else from ``n`` Hessian-vector
    products (:func:`refimpl.solvers.hessian_matrix`).  Leaves the
    objective's cache at ``w``.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    smooth : object
        ``fun``, ``hess_vec``, ``n_features``; e.g.
        ``ScaledSmooth(PairwiseSquaredHinge(...), C)``.
    w : ndarray of shape (n_features,)

    Returns
    -------
    ndarray of shape (n_features, n_features)
        Symmetric, positive semi-definite.
    """
    w = np.asarray(w, dtype=np.float64)
    dense = capability(smooth, "dense_hessian")
    H = hessian_matrix(smooth, w) if dense is None else dense.at(w)
    smooth.fun(w)
    return H


def _model_value(H, b, beta, u):
    """``u^T H u / 2 - b^T u + sum_j beta_j |u_j|`` (the model in ``u = w + d``)."""
    return 0.5 * float(u @ (H @ u)) - float(b @ u) + float(beta @ np.abs(u))


def _feature_sign(H, b, beta, u, tol, max_steps):
    """Feature-sign search (Lee, Battle, Raina & Ng 2007) on the model, from ``u``.

    Minimises ``q(u) = u^T H u / 2 - b^T u + sum_j beta_j |u_j|`` exactly:
    guess the support and the signs, solve the linear system on them, and
    move to the best of the new point and the sign changes on the way
    (``q`` decreases strictly at every step); the most violated zero
    coordinate joins the support.  Returns the point reached when its
    minimum-norm subgradient is ``<= tol``, else None (no decrease, a
    singular system, or ``max_steps`` steps).
    """
    u = u.copy()
    q = _model_value(H, b, beta, u)
    for _ in range(max_steps):
        G = H @ u - b
        if safe_norm(min_norm_subgradient(G, u, beta)) <= tol:
            return u
        sign = np.sign(u)
        zero_excess = np.where(u == 0, np.abs(G) - beta, -np.inf)
        j = int(np.argmax(zero_excess))
        if zero_excess[j] > 0:
            sign[j] = -np.sign(G[j])
        S = np.flatnonzero(sign)
        try:
            uS = np.linalg.solve(H[np.ix_(S, S)], b[S] - beta[S] * sign[S])
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(uS)):
            return None
        cur = u[S]
        step = uS - cur
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = -cur / step
        ts = np.concatenate([[1.0], cross[(cur != 0) & (cross > 0) & (cross < 1)]])
        best_q, best_u = q, None
        for t in ts:
            trial = u.copy()
            trial[S] = cur + t * step
            if t < 1.0:   # the coordinates crossing at t are exactly zero there
                trial[S[(cur != 0) & (cross == t)]] = 0.0
            qt = _model_value(H, b, beta, trial)
            if qt < best_q:
                best_q, best_u = qt, trial
        if best_u is None:
            return None
        u, q = best_u, best_q
    return None


def _cd_model(H, g, w, beta, tol, max_sweeps):
    """Minimise the model ``g^T d + d^T H d / 2 + sum_j beta_j |w_j + d_j|``.

    Returns ``(d, sweeps)``.  Coordinate descent
    (:func:`refimpl.kernels.cd_l1.cd_quadratic_l1`, LIBLINEAR's inner
    solver) for a few sweeps, then an exact finish by feature-sign search
    (:func:`_feature_sign`) from the point reached: coordinate descent
    alone approaches the minimiser only linearly on an ill-conditioned
    ``H`` (correlated features), the linear systems of the feature-sign
    steps do not care.  If that finish fails, coordinate descent goes on,
    in doubling chunks with a finish after each, until the model's
    minimum-norm subgradient is ``<= tol`` or ``max_sweeps`` sweeps.
    """
    n = g.size
    d = np.zeros(n)
    H = np.ascontiguousarray(H)
    g = np.ascontiguousarray(g)
    w = np.ascontiguousarray(w)
    beta = np.ascontiguousarray(beta)
    b = H @ w - g
    sweeps = 0
    budget = int(max_sweeps)
    chunk = 10
    while True:
        done = cd_quadratic_l1(H, g, w, beta, float(tol), min(chunk, budget - sweeps), d)
        sweeps += int(done)
        if model_violation(H, g, w, beta, d) <= tol or sweeps >= budget:
            return d, sweeps
        u = _feature_sign(H, b, beta, w + d, tol, 4 * n + 10)
        if u is not None:
            d_fs = u - w
            if model_violation(H, g, w, beta, d_fs) <= tol:
                return d_fs, sweeps
        chunk *= 2


def prox_newton(smooth, penalty, w0=None, *, tol=1e-6, max_iter=1000,
                max_inner=1000, gmap_ref=None, callback=None):
    r"""Minimise ``f(w) + sum_j beta_j |w_j|`` by proximal Newton (newGLMNET).

    See the module docstring for the method and the stopping rule, which
    certifies FISTA's ``stop="gradient_mapping"`` test at the same ``tol``.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    smooth : object
        Convex, ``fun``, ``grad`` (valid right after ``fun`` at the same
        ``w``), ``hess_vec`` and ``n_features``.
    penalty : L1 or WeightedL1
        From :mod:`refimpl.penalties`.
    w0 : array-like of shape (n_features,), optional
        Start, zeros by default.
    tol : float, default 1e-6
        Relative tolerance: stop when ``||v(w_k)|| <= tol ||v(w_0)||``
        (``>= 0``).
    max_iter : int, default 1000
        Maximum number of Newton steps.
    max_inner : int, default 1000
        Maximum coordinate-descent sweeps per Newton step.
    gmap_ref : float, optional
        The reference norm in place of ``||v(w_0)||`` (as in
        :func:`refimpl.solvers.apg`: a warm start keeps the cold start's
        absolute target).
    callback : callable, optional
        ``callback(w, info)`` after each step (``iter``, ``F``, ``gmap``).

    Returns
    -------
    SolverResult
        ``history`` with :func:`~refimpl.solvers.apg`'s keys (entry 0 = ``w0``): ``F``,
        ``gmap`` (``||v(w_k)||``, the quantity of the stop; an upper bound
        on FISTA's gradient mapping), ``n_fun``, ``time``; ``L`` is nan and
        ``restart`` False (neither applies); and ``step`` (the Armijo
        step ``t``) and ``n_inner`` (coordinate-descent sweeps).
        ``details["gmap_ref"]``: the reference norm used.

    Raises
    ------
    ValueError
        Bad options, a penalty other than ``L1`` / ``WeightedL1``.
    NonFiniteError
        A NaN or infinity in the objective, gradient, Hessian or direction.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``max_iter`` steps end without the stopping rule holding, or
        before it holds ``F`` stops decreasing (its rounding level: ``tol``
        below what the arithmetic can certify).
    """
    max_iter, tol = check_budget(max_iter, tol)
    if int(max_inner) != max_inner or max_inner < 1:
        raise ValueError(f"max_inner must be an integer >= 1, got {max_inner!r}")
    if gmap_ref is not None:
        gmap_ref = float(gmap_ref)
        if not (gmap_ref > 0 and math.isfinite(gmap_ref)):
            raise ValueError(f"gmap_ref must be finite and > 0, got {gmap_ref!r}")
    start = time.perf_counter()
    n = int(smooth.n_features)
    beta = _penalty_weights(penalty, n)
    w = initial_point(w0, n, "prox_newton", smooth)
    f = _check(float(smooth.fun(w)), "f(w0)", smooth)
    g = _check(np.asarray(smooth.grad(w), dtype=np.float64), "the gradient at w0", smooth)
    n_fun = 1
    F = f + float(beta @ np.abs(w))
    viol = safe_norm(min_norm_subgradient(g, w, beta))
    _check(viol, "the subgradient norm at w0", smooth)
    ref = viol if gmap_ref is None else gmap_ref
    history = {key: [] for key in _HISTORY_KEYS}

    def record(gmap, step, n_inner):
        values = (F, math.nan, gmap, n_fun, False, time.perf_counter() - start,
                  step, n_inner)
        for key, value in zip(_HISTORY_KEYS, values):
            history[key].append(value)

    record(math.nan, math.nan, 0)
    dense = capability(smooth, "dense_hessian")
    stalls = 0
    converged = viol <= tol * ref
    message = ""
    k = 0
    while not converged and k < max_iter:
        k += 1
        H = hessian_matrix(smooth, w) if dense is None else dense.at(w).copy()
        _check(H, "the generalised Hessian", smooth)
        diag = np.diag(H)
        nu = NU * max(float(diag.max(initial=0.0)), 1.0)
        H[np.diag_indices(n)] += nu
        d, sweeps = _cd_model(H, g, w, beta, INNER_RATIO * viol, int(max_inner))
        _check(d, "the Newton direction", smooth)
        delta = float(g @ d) + float(beta @ (np.abs(w + d) - np.abs(w)))
        t = 1.0
        for _ in range(MAX_HALVINGS):
            w_new = w + t * d
            f_new = _check(float(smooth.fun(w_new)), "f at a trial point", smooth)
            n_fun += 1
            F_new = f_new + float(beta @ np.abs(w_new))
            if F_new <= F + SIGMA * t * delta + LS_RTOL * max(abs(F), abs(F_new)):
                break
            t *= 0.5
        else:
            message = (f"the line search found no decrease after {MAX_HALVINGS} "
                       f"halvings at step {k} (rounding level): ||v|| / ref = "
                       f"{viol / ref if ref > 0 else 0.0:.3e} > tol = {tol:.1e}")
            k -= 1
            smooth.fun(w)
            break
        decreased = F_new < F
        viol_prev = viol
        w, f, F = w_new, f_new, F_new
        g = _check(np.asarray(smooth.grad(w), dtype=np.float64),
                   "the gradient at the new iterate", smooth)
        viol = _check(safe_norm(min_norm_subgradient(g, w, beta)),
                      "the subgradient norm", smooth)
        record(viol, t, sweeps)
        if callback is not None:
            callback(w.copy(), {"iter": k, "F": F, "gmap": viol})
        converged = viol <= tol * ref
        stalls = 0 if decreased or viol < 0.5 * viol_prev else stalls + 1
        if stalls >= MAX_STALLS and not converged:
            # F and ||v|| at their rounding level: more steps repeat these
            message = (f"no progress in {MAX_STALLS} steps up to step {k} (F and "
                       f"||v|| at their rounding level): ||v|| / "
                       f"ref = {viol / ref if ref > 0 else 0.0:.3e} > tol = {tol:.1e}")
            break
    crit = viol / ref if ref > 0 else 0.0
    if converged:
        message = (f"minimum-norm subgradient ||v(w_k)|| / ref = {crit:.3e} "
                   f"<= tol = {tol:.1e}")
    else:
        if not message:
            message = (f"max_iter = {max_iter} reached: ||v(w_k)|| / ref = "
                       f"{crit:.3e} > tol = {tol:.1e}")
        if max_iter > 0:
            warnings.warn(f"prox_newton did not converge: {message}",
                          ConvergenceWarning, stacklevel=2)
    return SolverResult(w=w, n_iter=k, converged=converged, history=history,
                        message=message, details={"gmap_ref": ref})
