r"""Baselines for FenchelRank: projected subgradient and truncated gradient (TGRank).

Both run on the same loss object as :func:`refimpl.solvers.fenchelrank`:

* :func:`projected_subgradient` solves eq. 4 of Lai et al. (2013),
  ``min_{||w||_1 <= 1} G(w)``, by ``w <- Proj(w - eta_t grad G(w))`` with
  ``eta_t = step0 / sqrt(t)`` and the O(d log d) l1-ball projection of
  Duchi, Shalev-Shwartz, Singer & Chandra (2008) -- the O(1/eps^2) method
  the paper contrasts FenchelRank with (section 4).
* :func:`truncated_gradient` is TGRank (section 8.5.1): the truncated
  gradient of Langford, Li & Zhang (2009) on eq. 2,
  ``min ||w'||_1 + C (1/p) sum max(0, 1 - w'^T (x_i - x_j))^2``.

Derived in: book/03_fenchelrank_duality.md#fenchelrank
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._checks import check_budget, check_fenchel_loss
from ._finite import check_finite, safe_norm
from ._result import SolverResult


def project_l1_ball(v, radius=1.0):
    r"""Euclidean projection onto ``{w : ||w||_1 <= radius}``.

    The sort-based algorithm of Duchi et al. (2008), Figure 1, O(d log d):
    with ``u = sort(|v|)`` decreasing and ``rho`` the largest ``k`` such that
    ``u_k - (sum_{i <= k} u_i - radius) / k > 0``, the threshold is
    ``theta = (sum_{i <= rho} u_i - radius) / rho`` and the projection is
    ``sign(v) max(|v| - theta, 0)``; points inside the ball are returned
    unchanged.

    Parameters
    ----------
    v : array-like of shape (d,)
    radius : float, default=1.0
        Positive radius.

    Returns
    -------
    ndarray of shape (d,)

    Derived in: book/02_convex_toolkit.md#tk-l1-ball
    """
    v = np.asarray(v, dtype=np.float64)
    radius = float(radius)
    if not radius > 0:
        raise ValueError(f"radius must be positive, got {radius!r}")
    av = np.abs(v)
    if av.sum() <= radius:
        return v.copy()
    u = np.sort(av)[::-1]
    # Work relative to c = max|v|: with d = u - c (exact near the top) the
    # test u_k - (sum_{i<=k} u_i - radius) / k > 0 reads
    # d_k - (sum_{i<=k} d_i - radius) / k > 0 and |v| - theta reads
    # (|v| - c) - theta_c, so a radius below the ulp of |v| is not lost
    # (|v| ~ 1e160 used to give no rho at all, and an IndexError).
    c = u[0]
    d = u - c
    cs = np.cumsum(d)
    k = np.arange(1, len(u) + 1)
    ok = np.flatnonzero(d - (cs - radius) / k > 0)
    rho = int(ok[-1]) + 1 if ok.size else 1  # k = 1 always qualifies (d_1 = 0)
    theta_c = (cs[rho - 1] - radius) / rho  # theta - c
    return np.sign(v) * np.maximum((av - c) - theta_c, 0.0)


def projected_subgradient(loss, r, *, max_iter=1000, step0=1.0, tol=None,
                          callback=None):
    r"""Projected (sub)gradient method on eq. 4 of Lai et al. (2013).

    .. math::

        w_{t+1} = \Pi_{\|w\|_1 \le 1}\bigl(w_t - \eta_t \nabla G(w_t)\bigr),
        \qquad \eta_t = \mathrm{step0} / \sqrt{t}, \quad w_1 = 0 .

    ``G = r^2 L`` is differentiable, so its subgradient is the gradient; the
    diminishing step is the textbook subgradient schedule, which guarantees
    ``min_t G(w_t) - G^* = O(1/sqrt(T))`` without smoothness.

    Stopping rule: ``max_iter`` updates, or -- when ``tol`` is given -- the
    Frank-Wolfe gap of eq. 16 at the current iterate,
    ``||g||_inf - g^T w <= tol`` with ``g = -grad G(w)`` (the certificate
    FenchelRank uses, valid at any feasible ``w``).

    Derived in: book/03_fenchelrank_duality.md#fenchelrank

    Parameters
    ----------
    loss : SmoothObjective
        ``fun`` and ``grad`` are used; a loss with ``margin`` and
        ``normalize`` (a :class:`~refimpl.losses.PairwiseSquaredHinge`)
        must be built with ``margin=1/r`` and ``normalize=True``.
    r : float
        Radius of eq. 3; the model is ``r * result.w``.
    max_iter : int, default=1000
    step0 : float, default=1.0
        ``eta_t = step0 / sqrt(t)`` (> 0).
    tol : float, optional
        Gap tolerance; ``None`` runs exactly ``max_iter`` updates
        (``converged=False``, no warning: a fixed budget for comparisons).
    callback : callable, optional
        ``callback(w, info)`` after every update, ``info`` with ``iter``,
        ``obj``, ``gap``.

    Returns
    -------
    SolverResult
        ``w`` is the best iterate seen (subgradient methods are not
        monotone).  ``history`` per iterate, with the keys of
        :func:`refimpl.solvers.fenchelrank` (chapter 3's notation): ``"obj"``
        (the primal objective ``P(w_t) = G(w_t)``, eq. (3.5)),
        ``"best_obj"`` (running minimum), ``"dual"`` (the dual objective
        ``D(alpha_t)`` at the dual point of eq. (3.6), ``obj - gap``),
        ``"gap"`` (the duality gap, eq. (3.7)), ``"nnz"``, ``"time"``.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``tol`` is given and not reached within ``max_iter`` updates.
    """
    r = check_fenchel_loss(loss, r)
    max_iter, tol = check_budget(max_iter, tol)
    step0 = float(step0)
    if not (step0 > 0 and math.isfinite(step0)):
        raise ValueError(f"step0 must be positive and finite, got {step0!r}")
    start = time.perf_counter()
    r2 = r * r
    w = np.zeros(loss.n_features)
    best_w, best = w.copy(), math.inf
    keys = ("obj", "best_obj", "dual", "gap", "nnz", "time")
    history = {key: [] for key in keys}
    t = 0
    converged = False
    while True:
        G = r2 * float(loss.fun(w))
        grad = r2 * np.asarray(loss.grad(w), dtype=np.float64)
        check_finite(G, "projected_subgradient", "the objective", loss)
        check_finite(grad, "projected_subgradient", "the gradient", loss)
        gap = float(np.abs(grad).max() + grad @ w)
        check_finite(gap, "projected_subgradient", "the duality gap", loss)
        if G < best:
            best, best_w = G, w.copy()
        for key, value in zip(keys, (G, best, G - gap, gap,
                                     int(np.count_nonzero(w)),
                                     time.perf_counter() - start)):
            history[key].append(value)
        if callback is not None and t > 0:
            callback(w.copy(), {"iter": t, "obj": G, "gap": gap})
        if tol is not None and gap <= tol:
            converged = True
            message = f"gap = {gap:.3e} <= tol = {tol:.1e}"
            best_w = w.copy()
            break
        if t >= max_iter:
            message = f"max_iter = {max_iter} reached: gap = {gap:.3e}"
            if tol is not None:
                warnings.warn(
                    f"projected_subgradient did not converge: {message} > tol "
                    f"= {tol:.1e}", ConvergenceWarning, stacklevel=2)
            break
        t += 1
        w = project_l1_ball(w - (step0 / math.sqrt(t)) * grad)
        check_finite(w, "projected_subgradient", "the iterate", loss)
    return SolverResult(w=best_w, n_iter=t, converged=converged,
                        history=history, message=message)


def _lipschitz_estimate(loss, n_power=50, seed=0):
    """Largest eigenvalue of the Hessian at ``w = 0`` by power iteration.

    At ``w = 0`` every pair is active (all residuals equal the margin), so
    this Hessian ``2 K^T K / p`` dominates the generalised Hessian at any
    ``w``: its norm is the Lipschitz constant of ``grad L``.  Power iteration
    approaches it from below; a step ``1 / lambda`` with ``lambda`` within a
    factor 2 of the truth still decreases the objective monotonically.
    """
    loss.fun(np.zeros(loss.n_features))
    v = np.random.default_rng(seed).standard_normal(loss.n_features)
    lam = 0.0
    for _ in range(n_power):
        nv = safe_norm(v)
        if nv == 0:
            break
        v = v / nv
        hv = np.asarray(loss.hess_vec(v), dtype=np.float64)
        check_finite(hv, "truncated_gradient", "a Hessian product at w = 0 "
                     "(power iteration for the step size)", loss)
        lam = check_finite(float(v @ hv), "truncated_gradient",
                           "the curvature estimate v^T H v", loss)
        v = hv
    return lam


def _truncate(v, alpha, theta):
    """Langford et al.'s ``T1(v, alpha, theta)``, coordinate-wise."""
    shrunk = np.sign(v) * np.maximum(np.abs(v) - alpha, 0.0)
    return np.where(np.abs(v) <= theta, shrunk, v)


def truncated_gradient(loss, C, *, max_iter=1000, lr=None, gravity=1.0,
                       theta=math.inf, K=1, tol=None, callback=None):
    r"""TGRank: truncated gradient (Langford, Li & Zhang 2009) on eq. 2.

    Minimises

    .. math::

        F(w') = \mathrm{gravity} \, \|w'\|_1 + C \, L(w'),

        L(w') = \frac1p \sum_{(i, j) \in P} \max(0, 1 - w'^T (x_i - x_j))^2,

    which is eq. 2 of Lai et al. (2013) for ``gravity = 1``, by

    .. math::

        v = w_t - \eta \, C \nabla L(w_t),

        w_{t+1} = T_1(v, \eta \, \mathrm{gravity} \, K, \theta)
        \text{ every } K\text{-th step (else } w_{t+1} = v),

    with ``T_1(v, a, theta)_j = sign(v_j) max(|v_j| - a, 0)`` if
    ``|v_j| <= theta``, else ``v_j``.  This is the *full-gradient* version:
    Langford et al. and RSRank take one stochastic gradient per pair; with the
    exact gradient, ``theta = inf`` and ``K = 1`` it is the proximal
    gradient method (ISTA), whose objective decreases monotonically for
    ``eta <= 1 / (C lambda_max)``.

    Stopping rule: ``max_iter`` updates, or -- when ``tol`` is given --
    the l1 optimality residual ``rho(w) = max_j rho_j``,
    ``rho_j = |grad_j + gravity sign(w_j)|`` if ``w_j != 0`` else
    ``max(0, |grad_j| - gravity)`` (``grad = C grad L``),
    ``rho(w_t) <= tol * rho(0)``.

    The paper (section 8.5.1) links eq. 2 and eq. 3 by ``r = C ||w*||_1``;
    the radius for which eq. 3 has the same solution as eq. 2 is
    ``r = ||w*||_1`` (the solution's own l1 norm), which the tests check.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank

    Parameters
    ----------
    loss : SmoothObjective
        ``fun``, ``grad`` and ``hess_vec`` (for the default ``lr``) are
        used; a loss with ``margin`` and ``normalize`` (a
        :class:`~refimpl.losses.PairwiseSquaredHinge`) must be built with
        ``margin=1`` and ``normalize=True``.
    C : float
        Loss weight of eq. 2 (> 0).
    max_iter : int, default=1000
    lr : float, optional
        Step ``eta``; default ``1 / (C lambda_max(nabla^2 L(0)))`` by power
        iteration (the Lipschitz constant of ``C grad L``).
    gravity : float, default=1.0
        Weight of the l1 term (Langford et al.'s ``g``), >= 0.
    theta : float, default=inf
        Truncation threshold of ``T_1``.
    K : int, default=1
        Truncate every ``K`` steps, with gravity ``K * gravity``.
    tol : float, optional
        Relative residual tolerance; ``None`` runs exactly ``max_iter``
        updates (``converged=False``, no warning).
    callback : callable, optional
        ``callback(w, info)`` after every update, ``info`` with ``iter``,
        ``obj``, ``kkt``.

    Returns
    -------
    SolverResult
        ``w`` is the last iterate, on the scale of eq. 2 (no ``1/r``).
        ``history`` per iterate: ``"obj"`` (``F``), ``"best_obj"``,
        ``"kkt"`` (``rho``), ``"nnz"``, ``"time"``.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``tol`` is given and not reached within ``max_iter`` updates.
    """
    for attr in ("fun", "grad", "hess_vec", "n_features"):
        if not hasattr(loss, attr):
            raise ValueError("loss must be a smooth objective (refimpl.losses."
                             f"SmoothObjective; no {attr!r})")
    # a loss that declares its margin and averaging must be eq. 2's; any
    # other smooth objective is the L of F as given
    if (hasattr(loss, "normalize") and not loss.normalize) or \
            getattr(loss, "margin", 1.0) != 1.0:
        raise ValueError(
            "eq. 2 averages max(0, 1 - w'^T(x_i - x_j))^2 over pairs: build "
            "PairwiseSquaredHinge(..., margin=1.0, normalize=True)"
        )
    C = float(C)
    if not (C > 0 and math.isfinite(C)):
        raise ValueError(f"C must be positive and finite, got {C!r}")
    gravity = float(gravity)
    if not (gravity >= 0 and math.isfinite(gravity)):
        raise ValueError(f"gravity must be finite and >= 0, got {gravity!r}")
    theta = float(theta)
    if not theta >= 0:
        raise ValueError(f"theta must be >= 0, got {theta!r}")
    if int(K) != K or K < 1:
        raise ValueError(f"K must be a positive integer, got {K!r}")
    K = int(K)
    max_iter, tol = check_budget(max_iter, tol)
    start = time.perf_counter()
    if lr is None:
        lam = _lipschitz_estimate(loss)
        lr = 1.0 / (C * lam) if lam > 0 else 1.0
    lr = float(lr)
    if not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be positive and finite, got {lr!r}")

    def residual(w, grad):
        nz = w != 0
        rho = np.where(nz, np.abs(grad + gravity * np.sign(w)),
                       np.maximum(np.abs(grad) - gravity, 0.0))
        return float(rho.max()) if rho.size else 0.0

    w = np.zeros(loss.n_features)
    keys = ("obj", "best_obj", "kkt", "nnz", "time")
    history = {key: [] for key in keys}
    best = math.inf
    t = 0
    converged = False
    rho0 = None
    while True:
        F_loss = C * float(loss.fun(w))
        grad = C * np.asarray(loss.grad(w), dtype=np.float64)
        check_finite(F_loss, "truncated_gradient", "the objective", loss,
                     "(or lr is too large)")
        check_finite(grad, "truncated_gradient", "the gradient", loss,
                     "(or lr is too large)")
        F = gravity * float(np.abs(w).sum()) + F_loss
        best = min(best, F)
        rho = residual(w, grad)
        check_finite(F, "truncated_gradient", "the objective", loss)
        check_finite(rho, "truncated_gradient", "the optimality residual", loss)
        if rho0 is None:
            rho0 = rho
        for key, value in zip(keys, (F, best, rho, int(np.count_nonzero(w)),
                                     time.perf_counter() - start)):
            history[key].append(value)
        if callback is not None and t > 0:
            callback(w.copy(), {"iter": t, "obj": F, "kkt": rho})
        if tol is not None and rho <= tol * rho0:
            converged = True
            message = f"rho = {rho:.3e} <= tol * rho(0) = {tol * rho0:.3e}"
            break
        if t >= max_iter:
            message = f"max_iter = {max_iter} reached: rho = {rho:.3e}"
            if tol is not None:
                warnings.warn(
                    f"truncated_gradient did not converge: {message} > tol * "
                    f"rho(0) = {tol * rho0:.3e}", ConvergenceWarning, stacklevel=2)
            break
        t += 1
        v = w - lr * grad
        w = _truncate(v, lr * gravity * K, theta) if t % K == 0 else v
    return SolverResult(w=w, n_iter=t, converged=converged, history=history,
                        message=message)
