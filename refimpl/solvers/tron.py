"""A trust-region Newton method (TRON): Lipschitz gradient, generalised Hessian.

The method of Lin & Moré (1999) as used for linear SVMs by Lin, Weng & Keerthi
(2008) in LIBLINEAR (``tron.cpp``) and for linear RankSVM by Lee & Lin (2014),
Section 4.1: each outer iteration approximately minimises the quadratic model
``g_t(s) = grad^T s + s^T H s / 2`` (Lee & Lin eq. 7) inside the trust region
``||s|| <= Delta`` (eq. 35) by Steihaug's truncated conjugate gradient, accepts
the step if the actual reduction is a large enough fraction of the predicted one
(eq. 36) and resizes ``Delta`` (eq. 37).  No preconditioning.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._checks import check_budget, initial_point
from ._finite import check_finite, safe_norm
from ._result import SolverResult

# Lee & Lin (2014) eq. 37, names and values as in LIBLINEAR's tron.cpp.
eta0, eta1, eta2 = 1e-4, 0.25, 0.75
sigma1, sigma2, sigma3 = 0.25, 0.5, 4.0

#: Stop when both reductions fall below this fraction of |f| (tron.cpp).
SMALL_REDUCTION = 1e-12

_HISTORY_KEYS = ("f", "gnorm", "cg_iter", "n_fun", "delta", "accepted", "time")


def _check_finite(value, name, objective=None, where=""):
    """Raise :class:`~refimpl.solvers.NonFiniteError` naming cause and remedy."""
    check_finite(value, "TRON", name, objective, where)


def _to_boundary(s, d, delta):
    """The ``tau >= 0`` with ``||s + tau d|| = delta``, given ``||s|| <= delta``.

    Solves ``(d.d) tau^2 + 2 (s.d) tau + (s.s - delta^2) = 0`` for its
    non-negative root, choosing the formula that avoids cancellation.
    """
    sd = float(s @ d)
    dd = float(d @ d)
    ss = float(s @ s)
    gap = max(delta * delta - ss, 0.0)
    rad = math.sqrt(sd * sd + dd * gap)
    if sd >= 0:
        return gap / (sd + rad) if sd + rad > 0 else 0.0
    return (rad - sd) / dd


def _reuses_scores(objective):
    """Whether ``objective`` offers the score-reuse methods (see :func:`tron`)."""
    return bool(getattr(objective, "score_reuse", False))


def _steihaug_cg(objective, g, delta, eps_cg, max_cg, scores=False):
    """Truncated CG for ``min g^T s + s^T H s / 2`` s.t. ``||s|| <= delta``.

    Returns ``(s, r, n_cg, hit_boundary, ts)`` with ``r = -g - H s`` the
    final residual.  Stops when ``||r|| <= eps_cg ||g||``, when an iterate
    would leave the region, or on non-positive curvature ``d^T H d <= 0``; in
    the last two cases ``s`` is moved along the current direction to the
    boundary.  With ``scores``, the products come from
    ``objective.hess_vec_scores`` and ``ts = X s`` is accumulated from the
    directions' scores alongside ``s`` (O(l) per step); else ``ts`` is None.
    """
    s = np.zeros_like(g)
    ts = None
    r = -g
    d = r.copy()
    with np.errstate(over="ignore"):  # checked, and reported, just below
        rr = float(r @ r)
    _check_finite(rr, "the squared gradient norm ||g||^2 in CG", objective,
                  f"(||g|| = {safe_norm(r):.3e})")
    cg_tol = eps_cg * math.sqrt(rr)
    n_cg = 0
    while math.sqrt(rr) > cg_tol and n_cg < max_cg:
        n_cg += 1
        if scores:
            Hd, td = objective.hess_vec_scores(d)
            Hd = np.asarray(Hd, dtype=np.float64)
            if ts is None:
                ts = np.zeros_like(td)
        else:
            Hd = np.asarray(objective.hess_vec(d), dtype=np.float64)
        dHd = float(d @ Hd)
        _check_finite(dHd, "the curvature d^T H d of a CG direction", objective)
        if dHd > 0:
            alpha = rr / dHd
            s_next = s + alpha * d
            if float(s_next @ s_next) <= delta * delta:
                s = s_next
                if scores:
                    ts += alpha * td
                r = r - alpha * Hd
                rr_next = float(r @ r)
                _check_finite(rr_next, "the squared norm of a CG residual",
                              objective)
                d = r + (rr_next / rr) * d
                rr = rr_next
                continue
        # leaving the region, or non-positive curvature: go to the boundary
        tau = _to_boundary(s, d, delta)
        s = s + tau * d
        if scores:
            ts += tau * td
        r = r - tau * Hd
        return s, r, n_cg, True, ts
    return s, r, n_cg, False, ts


def tron(
    objective,
    w0=None,
    *,
    tol=1e-3,
    max_iter=1000,
    eps_cg=0.1,
    max_cg=None,
    callback=None,
    verbose=False,
):
    r"""Minimise a smooth objective by a trust-region Newton method.

    Stopping rule (Lee & Lin 2014, eq. 38, as LIBLINEAR's TRON):

    .. math::

        \|\nabla f(w_k)\|_2 \le \mathrm{tol} \cdot \|\nabla f(w_0)\|_2 .

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree

    Parameters
    ----------
    objective : SmoothObjective
        Exposes ``fun(w)``, ``grad(w)`` (valid right after ``fun`` at the same
        ``w``), ``hess_vec(s)`` (the (generalised) Hessian at the ``w`` of the
        last ``fun``) and ``n_features``.  TRON keeps that state consistent:
        ``hess_vec`` is only ever called when the last ``fun`` was at the
        current iterate (after a rejected trial point, ``fun`` is called again
        at the iterate; that call is counted in ``history["n_fun"]``).
        Optionally, score reuse (``objective.score_reuse`` true, e.g.
        :class:`~refimpl.losses.L2Regularized` of
        :class:`~refimpl.losses.PairwiseSquaredHinge`):
        ``hess_vec_scores(s) -> (H s, X s)``, ``last_scores()`` (``X w`` at
        the last ``fun``) and ``fun_from_scores(w, z)`` (the value at ``w``
        from ``z = X w``, cached state untouched) and ``accept_trial(w)``
        (the state moved to the last trial point); see Notes.
    w0 : array-like of shape (n_features,), optional
        Starting point; zeros by default (Lee & Lin: :math:`w^0 = 0`).
    tol : float, default=1e-3
        Relative gradient tolerance of eq. 38 (LIBLINEAR's ``eps``).
    max_iter : int, default=1000
        Maximum number of outer iterations, accepted or rejected.
    eps_cg : float, default=0.1
        CG stops when its residual satisfies
        :math:`\|r\| \le \mathrm{eps\_cg}\,\|\nabla f(w_k)\|`.
    max_cg : int, optional
        Cap on CG iterations per outer iteration; default ``n_features``
        (CG's finite termination in exact arithmetic).
    callback : callable, optional
        ``callback(w, info)`` after each outer iteration, with ``w`` a copy of
        the current iterate and ``info`` a dict with keys ``iter``, ``f``,
        ``gnorm``, ``actred``, ``prered``, ``delta``, ``snorm``, ``cg_iter``
        (of this iteration) and ``accepted``.
    verbose : bool, default=False
        Print one line per outer iteration, as LIBLINEAR does.

    Returns
    -------
    SolverResult
        ``history`` has one entry for ``w0`` and one per outer iteration,
        keys ``"f"`` (objective at the current iterate), ``"gnorm"``,
        ``"cg_iter"`` (cumulative CG iterations), ``"n_fun"`` (cumulative
        objective evaluations: ``fun`` calls, and with score reuse the
        trial values from scores), ``"delta"`` (trust-region radius after the update),
        ``"accepted"`` (whether that iteration's step was taken) and
        ``"time"``.

    Raises
    ------
    NonFiniteError
        (a ``FloatingPointError``) if the objective, the gradient, its norm,
        a curvature, the step or the predicted reduction is NaN or infinite:
        no stopping test is trusted then.  Norms are computed without
        overflow of their squares (``refimpl.solvers._finite.safe_norm``),
        so a finite ``||g0||`` is never mistaken for an infinite one.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``max_iter`` outer iterations end without eq. 38 holding.

    Notes
    -----
    One outer iteration (Lee & Lin eqs. 35-37, Lin et al. 2008, Algorithm 2):

    1. Steihaug CG gives ``s`` with ``||s|| <= Delta`` and residual
       ``r = -g - H s``; predicted reduction ``prered = -(g^T s + s^T H s/2)
       = -(g^T s - s^T r)/2``; actual reduction ``actred = f(w) - f(w + s)``.
    2. On the first iteration ``Delta = min(Delta, ||s||)``.  With
       ``alpha = sigma3`` if ``f(w+s) - f(w) - g^T s <= 0``, else
       ``max(sigma1, -g^T s / (2 (f(w+s) - f(w) - g^T s)))``:

       - ``actred <  eta0 prered``: ``Delta = min(max(alpha, sigma1) ||s||,
         sigma2 Delta)``;
       - ``actred <  eta1 prered``: ``Delta = max(sigma1 Delta,
         min(alpha ||s||, sigma2 Delta))``;
       - ``actred <  eta2 prered``: ``Delta = max(sigma1 Delta,
         min(alpha ||s||, sigma3 Delta))``;
       - otherwise: ``Delta = max(Delta, min(alpha ||s||, sigma3 Delta))``.
    3. Accept ``w + s`` iff ``actred > eta0 prered``.

    Besides eq. 38 and ``max_iter``, TRON stops, with ``converged`` telling
    whether eq. 38 holds, when ``|actred|`` and ``|prered|`` are both
    ``<= 1e-12 |f|`` (no further progress measurable in floating point;
    typical when ``tol`` is far below ``1e-6``), or when ``actred <= 0``
    and ``prered <= 0``.

    **Score reuse.**  For a loss of the scores ``z = X w`` the trial point
    needs no product with ``X``: CG's step is ``s = sum_i a_i d_i``, so
    ``X s = sum_i a_i X d_i``, and each ``X d_i`` is computed inside the
    Hessian product anyway.  When the objective offers it (above), TRON
    accumulates ``X s`` in CG and evaluates ``f(w + s)`` by
    ``fun_from_scores(w + s, X w + X s)``: O(l log l), no pass over ``X``,
    and the cached state stays at ``w``, so a rejected step needs no
    ``fun(w)`` to restore it.  An accepted step calls ``accept_trial``: the
    trial's sort, counts and score gradient become the state (no second
    evaluation), and ``grad`` at the new iterate takes one pass over ``X``
    for ``X^T dz`` and the exact scores ``X w`` on which the next trial
    builds.  So the trial scores differ from ``X (w + s)`` by the rounding
    of one step's sum, never by rounding accumulated over iterations; the
    state of an iterate (hence ``f``, its gradient and Hessian) is that of
    its trial scores, as LIBLINEAR keeps ``f`` of the trial point.

    Differences from ``tron.cpp``: ``max_iter`` counts every outer iteration,
    not only accepted ones; a rejected trial point is followed by ``fun`` at
    the iterate (LIBLINEAR's losses happen to set the Hessian state in
    ``grad``, ours in ``fun``); non-positive curvature in CG goes to the
    boundary (as in later LIBLINEAR versions); no preconditioner.
    """
    start = time.perf_counter()
    n = int(objective.n_features)
    w = initial_point(w0, n, "TRON", objective)
    max_iter, tol = check_budget(max_iter, tol)
    eps_cg = float(eps_cg)
    if not 0 < eps_cg < 1:
        raise ValueError(f"eps_cg must be in (0, 1), got {eps_cg!r}")
    max_cg = n if max_cg is None else int(max_cg)
    if max_cg < 1:
        raise ValueError(f"max_cg must be >= 1, got {max_cg!r}")

    reuse = _reuses_scores(objective)
    f = float(objective.fun(w))
    _check_finite(f, "the objective f(w0)", objective)
    zw = objective.last_scores() if reuse else None
    g = np.asarray(objective.grad(w), dtype=np.float64)
    _check_finite(g, "the gradient at w0", objective)
    # every entry finite is not enough: ||g0|| itself may overflow, and then
    # eq. 38 would "hold" at w0 (inf <= tol * inf)
    gnorm = gnorm0 = safe_norm(g)
    _check_finite(gnorm0, "the gradient norm ||g0|| at w0", objective,
                  "although every entry of the gradient is finite")
    delta = gnorm0
    n_fun, total_cg = 1, 0
    history = {key: [] for key in _HISTORY_KEYS}

    def record(accepted):
        for key, value in zip(
            _HISTORY_KEYS,
            (f, gnorm, total_cg, n_fun, delta, accepted, time.perf_counter() - start),
        ):
            history[key].append(value)

    record(True)
    if verbose:
        print(f"init f {f:5.3e} |g| {gnorm:5.3e}")

    converged = gnorm <= tol * gnorm0
    message = "eq. 38 holds at w0" if converged else ""
    n_iter, n_accepted = 0, 0
    while not converged and n_iter < max_iter:
        n_iter += 1
        s, r, n_cg, _, ts = _steihaug_cg(objective, g, delta, eps_cg, max_cg,
                                         scores=reuse)
        total_cg += n_cg
        _check_finite(s, "the trust-region step s", objective)
        w_new = w + s
        gs = float(g @ s)
        prered = -0.5 * (gs - float(s @ r))
        _check_finite(prered, "the predicted reduction", objective)
        if reuse:
            z_new = zw if ts is None else zw + ts
            _check_finite(z_new, "the trial point's scores X w + X s",
                          objective)
            f_new = float(objective.fun_from_scores(w_new, z_new))
        else:
            f_new = float(objective.fun(w_new))
        n_fun += 1
        _check_finite(f_new, "the objective at a trial point", objective)
        actred = f - f_new
        snorm = safe_norm(s)

        if n_accepted == 0:
            delta = min(delta, snorm)
        curv = f_new - f - gs
        alpha = sigma3 if curv <= 0 else max(sigma1, -0.5 * (gs / curv))
        if actred < eta0 * prered:
            delta = min(max(alpha, sigma1) * snorm, sigma2 * delta)
        elif actred < eta1 * prered:
            delta = max(sigma1 * delta, min(alpha * snorm, sigma2 * delta))
        elif actred < eta2 * prered:
            delta = max(sigma1 * delta, min(alpha * snorm, sigma3 * delta))
        else:
            delta = max(delta, min(alpha * snorm, sigma3 * delta))

        accepted = actred > eta0 * prered
        if accepted:
            n_accepted += 1
            w, f = w_new, f_new
            if reuse:  # the trial's state becomes the iterate's
                objective.accept_trial(w)
            g = np.asarray(objective.grad(w), dtype=np.float64)
            if reuse:  # exact scores, from the gradient's pass
                zw = objective.last_scores()
            _check_finite(g, "the gradient", objective)
            gnorm = safe_norm(g)
            _check_finite(gnorm, "the gradient norm", objective)
        elif not reuse:
            # restore the objective's cached state (Hessian) to the iterate
            objective.fun(w)
            n_fun += 1
        record(accepted)
        if verbose:
            print(
                f"iter {n_iter:2d} act {actred:5.3e} pre {prered:5.3e} "
                f"delta {delta:5.3e} f {f:5.3e} |g| {gnorm:5.3e} CG {n_cg:3d}"
            )
        if callback is not None:
            callback(
                w.copy(),
                {
                    "iter": n_iter,
                    "f": f,
                    "gnorm": gnorm,
                    "actred": actred,
                    "prered": prered,
                    "delta": delta,
                    "snorm": snorm,
                    "cg_iter": n_cg,
                    "accepted": accepted,
                },
            )

        converged = gnorm <= tol * gnorm0
        if converged:
            message = (
                f"eq. 38 holds: |g|/|g0| = {gnorm / gnorm0:.3e} <= tol = {tol:.1e}"
            )
            break
        if actred <= 0 and prered <= 0:
            message = (
                "stopped: actred <= 0 and prered <= 0, no reduction possible; "
                f"|g|/|g0| = {gnorm / gnorm0:.3e} > tol = {tol:.1e}"
            )
            break
        small = SMALL_REDUCTION * abs(f)
        if abs(actred) <= small and abs(prered) <= small:
            message = (
                "stopped: |actred| and |prered| <= 1e-12 |f| (floating-point "
                f"resolution of f reached); |g|/|g0| = {gnorm / gnorm0:.3e} "
                f"> tol = {tol:.1e}"
            )
            break
    else:
        if not converged:
            message = (
                f"max_iter = {max_iter} reached: |g|/|g0| = "
                f"{gnorm / gnorm0:.3e} > tol = {tol:.1e}"
            )
            warnings.warn(
                f"TRON did not converge: {message}; increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )

    return SolverResult(
        w=w,
        n_iter=n_iter,
        converged=bool(converged),
        history=history,
        message=message,
    )
