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
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from ..kernels.cd_l1 import active_laplacian_matmul, cd_quadratic_l1, model_violation
from ..kernels.laplacian_tree import active_laplacian_rows
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


def _unwrap(smooth):
    """``(c, loss)`` with ``smooth = c * loss``, loss a PairwiseSquaredHinge, or None."""
    from ..losses import PairwiseSquaredHinge, ScaledSmooth

    c = 1.0
    while isinstance(smooth, ScaledSmooth):
        c *= smooth.c
        smooth = smooth.smooth
    if isinstance(smooth, PairwiseSquaredHinge) and smooth.pair_indices() is not None:
        return c, smooth
    return None


#: Rows of ``X`` per block in :func:`_tree_hessian` (whole queries) and in
#: :func:`_pair_hessian` of a sparse ``X``: the block's ``Lap_A X`` (as
#: large as the block, dense) is multiplied into ``H`` and dropped, so the
#: extra memory stays O(block * d), not O(l d).
TREE_BLOCK_ROWS = 1 << 15


def _unwrap_tree(smooth):
    """``(c, loss)`` with ``smooth = c * loss``, loss a PairwiseSquaredHinge on the
    tree backend (no pair arrays) with all pairs, or None."""
    from ..losses import PairwiseSquaredHinge, ScaledSmooth

    c = 1.0
    while isinstance(smooth, ScaledSmooth):
        c *= smooth.c
        smooth = smooth.smooth
    if (isinstance(smooth, PairwiseSquaredHinge) and smooth.pair_indices() is None
            and smooth.which == "all"):
        return c, smooth
    return None


def _tree_hessian(parts, w):
    """The generalised Hessian ``2 c s X^T Lap_A X`` without pair arrays.

    ``Lap_A X`` block by block of whole queries from the sorted scores
    (``refimpl.kernels.laplacian_tree.active_laplacian_rows``, O(l log
    l + l k d)), each block multiplied into ``H`` by one BLAS product,
    where :func:`refimpl.solvers.hessian_matrix` takes ``d`` Hessian-vector
    products of the tree (3.3x the time at 73,154 x 136, side by side;
    ``benchmarks/bench_mslr_scale.py`` times the fits).  The active
    set is that of the explicit pairs at the same scores.
    """
    c, loss = parts
    X = loss.X
    d = X.shape[1]
    z = np.ascontiguousarray(loss.scores(w), dtype=np.float64)
    y = np.ascontiguousarray(loss.y, dtype=np.float64)
    groups = loss.groups
    runs = groups.runs
    if runs is None:
        bounds, rows = np.asarray(groups.indptr, dtype=np.int64), groups.order
    else:
        bounds, rows = runs, None
    H = np.zeros((d, d))
    n_q = bounds.size - 1
    q = 0
    while q < n_q:
        r = q + 1
        while r < n_q and bounds[r + 1] - bounds[q] <= TREE_BLOCK_ROWS:
            r += 1
        lo, hi = int(bounds[q]), int(bounds[r])
        if rows is None:
            Xs = X[lo:hi]
            zb, yb = z[lo:hi], y[lo:hi]
        else:
            idx = rows[lo:hi]
            Xs = X[idx] if sp.issparse(X) else np.take(X, idx, axis=0)
            zb, yb = z[idx], y[idx]
        # a sparse X: the kernel reads a dense block, the product uses the
        # sparse one (nnz * d, not block * d^2)
        Xb = np.ascontiguousarray(Xs.toarray() if sp.issparse(Xs) else Xs,
                                  dtype=np.float64)
        out = np.zeros_like(Xb)
        active_laplacian_rows(Xb, np.ascontiguousarray(zb), np.ascontiguousarray(yb),
                              bounds[q:r + 1] - lo, float(loss.margin), out)
        H += np.asarray(Xs.T @ out) if sp.issparse(Xs) else Xb.T @ out
        q = r
    return (2.0 * c * loss.scale) * 0.5 * (H + H.T)


def generalized_hessian(smooth, w):
    r"""The dense generalised Hessian of ``smooth`` at ``w``.

    For ``c`` times the pairwise squared hinge with explicit pairs it is
    ``2 c s X^T Lap_A X`` (Lee & Lin 2014, eq. 11), ``Lap_A = sum_{(i,j)
    active} (e_i - e_j)(e_i - e_j)^T`` the Laplacian of the active pairs,
    i.e. one sparse product and one ``n x n`` Gram product per call; on
    the tree backend (no pair arrays) ``Lap_A X`` comes from
    the sorted scores per query
    (``refimpl.kernels.laplacian_tree.active_laplacian_rows``); any
    other objective falls back to ``n`` Hessian-vector products
    (:func:`refimpl.solvers.hessian_matrix`).  Leaves the objective's cache
    at ``w``.

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
    parts = _unwrap(smooth)
    tree = _unwrap_tree(smooth) if parts is None else None
    if parts is not None:
        H = _pair_hessian(parts, w, None)[1]
    elif tree is not None:
        H = _tree_hessian(tree, w)
    else:
        H = hessian_matrix(smooth, w)
    smooth.fun(w)
    return H


def _pair_hessian(parts, w, previous):
    """``(active, H)`` of ``c`` times the explicit-pairs squared hinge at ``w``.

    ``active`` is the mask of active pairs; when it equals that of
    ``previous`` (an earlier ``(active, H)``) the Hessian is the same
    matrix (it depends on ``w`` only through the active set) and
    ``previous`` is returned: near the solution of this piecewise-quadratic
    problem the active set settles and the Newton steps stop paying for it.
    """
    c, loss = parts
    pi, pj = loss.pair_indices()
    z = loss.scores(w)
    act = loss.margin - (z[pi] - z[pj]) > 0
    if previous is not None and np.array_equal(act, previous[0]):
        return previous
    X = loss.X
    if sp.issparse(X):
        ai, aj = pi[act], pj[act]
        ones = np.ones(ai.size)
        m = X.shape[0]
        lap = sp.coo_matrix((np.concatenate([ones, ones, -ones, -ones]),
                             (np.concatenate([ai, aj, ai, aj]),
                              np.concatenate([ai, aj, aj, ai]))), shape=(m, m)).tocsr()
        # Lap_A X fills in (each row sums its query's active partners), so
        # the sparse-times-sparse product spends its time on output
        # bookkeeping: one dense block of rows at a time into a sparse-times-
        # dense product is 3.6x faster at 1,500 x 700, 5 % non-zeros, with
        # O(block * d) extra memory
        H = np.zeros((X.shape[1], X.shape[1]))
        for lo in range(0, m, TREE_BLOCK_ROWS):
            hi = min(lo + TREE_BLOCK_ROWS, m)
            H += np.asarray(X[lo:hi].T @ (lap[lo:hi] @ X).toarray())
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        LX = np.zeros_like(X)
        active_laplacian_matmul(z, pi, pj, float(loss.margin), X, LX)
        H = X.T @ LX
    H = (2.0 * c * loss.scale) * 0.5 * (H + H.T)
    return act, H


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
    parts = _unwrap(smooth)
    tree = _unwrap_tree(smooth) if parts is None else None
    hess_state = None
    stalls = 0
    converged = viol <= tol * ref
    message = ""
    k = 0
    while not converged and k < max_iter:
        k += 1
        if parts is not None:
            hess_state = _pair_hessian(parts, w, hess_state)
            H = hess_state[1].copy()
        elif tree is not None:
            H = _tree_hessian(tree, w)
        else:
            H = hessian_matrix(smooth, w)
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
