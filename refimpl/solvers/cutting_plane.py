"""The 1-slack cutting-plane method of SVMrank (Joachims 2006).

Minimises the L1-hinge RankSVM objective with SVMrank's scaling of ``C``
(eq. (7.11) of the book),

.. math::

    P(w) = \\tfrac12 \\|w\\|^2 + \\frac{C}{n} \\sum_{(i, j) \\in P}
        \\max(0, 1 - w^T (x_i - x_j)),

``n`` the number of training queries, through its 1-slack form (eq. (7.12)):
``min 1/2 ||w||^2 + C xi`` subject to ``xi >= b_k - a_k^T w`` for the cutting
planes ``(a_k, b_k)`` found so far, plus ``xi >= 0``.  Each iteration

1. evaluates ``P`` at the current ``w`` and finds the most violated
   constraint (eq. (7.13)) ``a = X^T (l^- - l^+) / n``,
   ``b = sum_i l_i^- / n`` in O(l log l)
   (:class:`refimpl.losses.pairwise_hinge.PairwiseHinge`);
2. adds it to the working set and solves the dual of the working-set
   problem (eq. (7.14)), ``max b^T alpha - ||A^T alpha||^2 / 2`` over
   ``alpha >= 0, sum alpha = C`` (the plane ``(0, 0)`` stands for
   ``xi >= 0``), by an active-set method exact to rounding, with SMO
   (:func:`refimpl.kernels.simplex_qp.simplex_qp`) as the fallback;
3. sets ``w = A^T alpha``.

Every dual value ``D(alpha)`` is a lower bound on ``min P`` (the working
set relaxes the constraints), so ``P(w_best) - D(alpha)`` bounds the
suboptimality of the best iterate: the solver stops when it is at most
``tol * P(w_best)``.  SVMrank stops instead when the new plane is violated
by at most ``epsilon`` beyond the working set's slack (``ceps``, recorded in
the history); with the working-set problem solved exactly the two are tied
by ``gap = C ceps``.

Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels.simplex_qp import simplex_qp
from ._checks import check_budget
from ._finite import check_finite
from ._result import SolverResult

__all__ = ["cutting_plane_ranksvm"]

_HISTORY_KEYS = ("f", "f_best", "dual", "gap", "ceps", "n_violated",
                 "qp_steps", "time")

#: The working-set QP is solved until ``C viol`` is this fraction of the
#: absolute gap the outer loop must reach (so its error never decides the stop).
QP_FRACTION = 1e-3
#: Where OCAS takes the next plane, between the best point and the
#: working-set solution (Franc & Sonnenburg's mu).
OCAS_MU = 0.1
#: Relative width of the bracket at which the line search stops (it only
#: moves the best point; the certificate never depends on it).
LS_RTOL = 1e-3
#: ``line_search="auto"`` turns OCAS on after this many plain planes.
LS_AUTO_AFTER = 50
#: Bound on the relative rounding error of ``P(w)`` in units of ``eps``
#: times the size of its terms; a gap below it cannot be certified.
ROUNDING_FACTOR = 8.0
#: Planes without a lower ``P(w_best)`` or a higher ``D`` that end the run.
STALL_PLANES = 20
#: SMO steps allowed per working-set solve.
QP_MAX_STEPS = 200_000


def _check(value, what, loss):
    check_finite(value, "cutting_plane_ranksvm", what, loss)


def _grow(A, b, G, alpha):
    """The working-set arrays with twice the room (contents kept)."""
    m = len(b)
    A2 = np.zeros((2 * m, A.shape[1]))
    A2[:m] = A
    G2 = np.zeros((2 * m, 2 * m))
    G2[:m, :m] = G
    b2 = np.zeros(2 * m)
    b2[:m] = b
    alpha2 = np.zeros(2 * m)
    alpha2[:m] = alpha
    return A2, b2, G2, alpha2


def _kkt_solve(K, rhs):
    """``(sol, resid, scale)`` of ``K sol = rhs``: LU first, least squares if singular."""
    for attempt in ("lu", "lstsq"):
        if attempt == "lu":
            try:
                with np.errstate(all="ignore"):
                    sol = np.linalg.solve(K, rhs)
            except np.linalg.LinAlgError:
                continue
        else:
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        if not np.all(np.isfinite(sol)):
            continue
        resid = K @ sol - rhs
        scale = 1.0 + np.abs(rhs).max() + np.abs(K).max() * np.abs(sol).max()
        if attempt == "lstsq" or np.abs(resid).max() <= 1e-10 * scale:
            return sol, resid, scale
    sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
    resid = K @ sol - rhs
    return sol, resid, 1.0 + np.abs(rhs).max() + np.abs(K).max() * np.abs(sol).max()


def _active_set(G, b, alpha, m, qp_tol, max_steps):
    """Primal active-set method for eq. (7.14) from the feasible ``alpha``.

    The free set ``F`` starts as the support of ``alpha``.  Each step solves
    the equality-constrained problem on ``F`` (``G_FF a_F - b_F = nu 1``,
    ``1^T a_F = sum(alpha)``, one least-squares solve of the KKT system),
    moves towards its solution as far as ``alpha >= 0`` allows and frees
    or fixes one coordinate: a blocking one leaves ``F``; at the solution,
    the coordinate with the most negative ``g_k - nu`` enters.  When the
    KKT system is singular and inconsistent the problem is unbounded along a
    null direction of ``G_FF`` inside ``1^T v = 0``; the step follows it to
    the first bound.  Returns ``(steps, ok)``, ``ok`` when every
    ``g_k >= nu - qp_tol`` at the end (optimal to within ``C qp_tol``).
    """
    F = list(np.flatnonzero(alpha[:m] > 0))
    Gm, bm = G[:m, :m], b[:m]
    total = float(alpha[:m].sum())
    for step in range(max_steps):
        k = len(F)
        idx = np.array(F)
        K = np.zeros((k + 1, k + 1))
        K[:k, :k] = Gm[np.ix_(idx, idx)]
        K[:k, k] = -1.0
        K[k, :k] = 1.0
        rhs = np.append(bm[idx], total)
        sol, resid, scale = _kkt_solve(K, rhs)
        if np.abs(resid).max() <= 1e-10 * scale:
            p = sol[:k] - alpha[idx]
        else:  # unbounded along a null direction: go to the first bound
            v = np.linalg.svd(K)[2][-1][:k]
            v -= v.mean()
            gF = Gm[idx] @ alpha[:m] - bm[idx]
            p = -v if gF @ v > 0 else v
        neg = p < 0
        tau = 1.0
        block = -1
        if np.any(neg):
            ratios = alpha[idx][neg] / -p[neg]
            r = int(np.argmin(ratios))
            if ratios[r] < 1.0 or not np.all(np.abs(resid) <= 1e-10 * scale):
                tau = float(ratios[r])
                block = int(np.flatnonzero(neg)[r])
        alpha[idx] = alpha[idx] + tau * p
        if block >= 0:
            alpha[idx[block]] = 0.0
            F.pop(block)
            continue
        alpha[idx] = np.maximum(alpha[idx], 0.0)
        g = Gm @ alpha[:m] - bm
        nu = float(np.max(g[alpha[:m] > 0])) if np.any(alpha[:m] > 0) else 0.0
        viol = nu - g
        viol[idx] = -np.inf
        j = int(np.argmax(viol))
        if viol[j] <= qp_tol:
            return step + 1, bool(np.max(g[alpha[:m] > 0]) - np.min(g) <= qp_tol)
        F.append(j)
    return max_steps, False


def _solve_working_set(G, b, beta, m, qp_tol):
    """``beta = alpha / C`` optimal for eq. (7.14) to within ``C qp_tol``; returns steps.

    ``G`` is ``C`` times the planes' Gram matrix and ``beta`` lies on the
    unit simplex: the gradient ``G beta - b`` is that of eq. (7.14) in
    ``alpha``, but the unknowns are of order 1 whatever ``C``, so the KKT
    solves' rounding (relative to ``b``) cannot wipe out a ``sum alpha = C``
    of ``1e-17``.  The active-set method (:func:`_active_set`) from the
    previous solution, which is exact up to rounding; if it stalls
    (degenerate planes) or ends outside the tolerance, SMO
    (:func:`refimpl.kernels.simplex_qp.simplex_qp`) finishes from its point.
    """
    steps, ok = _active_set(G, b, beta, m, qp_tol, 10 * m + 50)
    if ok:
        return steps
    more, _ = simplex_qp(G, b, beta, np.empty(m), m, qp_tol, QP_MAX_STEPS)
    return steps + int(more)


def _line_search(loss, C_n, w, v, z, u, P_w):
    """``t >= 0`` minimising ``phi(t) = P(w + t v)`` (eq. (7.11)), and ``phi(t)``.

    ``z = X w`` and ``u = X v``.  ``phi`` is convex and piecewise quadratic;
    its right derivative ``phi'(t) = w^T v + t ||v||^2 - C_n (l^- - l^+)^T u``
    (counts at the scores ``z + t u``) is non-decreasing, so its sign change
    is bracketed by doubling and located by regula falsi (Illinois), each
    evaluation one sort and sweep of the scores, never a pass over ``X``.
    """
    wv, vv = float(w @ v), float(v @ v)

    def dphi(t):
        lp, lm = loss.counts(np.ascontiguousarray(z + t * u))
        return wv + t * vv - C_n * float((lm - lp) @ u)

    d0 = dphi(0.0)
    if not d0 < 0 or vv == 0.0:
        return 0.0
    lo, dlo, hi = 0.0, d0, 1.0
    dhi = dphi(hi)
    while dhi < 0 and hi < 1e6:
        lo, dlo, hi = hi, dhi, 2.0 * hi
        dhi = dphi(hi)
    if dhi < 0:
        return hi
    side = 0
    for _ in range(40):
        t = hi - dhi * (hi - lo) / (dhi - dlo) if dhi != dlo else 0.5 * (lo + hi)
        if not lo < t < hi:
            t = 0.5 * (lo + hi)
        dt = dphi(t)
        if dt < 0:
            lo, dlo = t, dt
            if side == -1:
                dhi *= 0.5
            side = -1
        else:
            hi, dhi = t, dt
            if side == 1:
                dlo *= 0.5
            side = 1
        if hi - lo <= LS_RTOL * hi or dt == 0.0:
            break
    return hi if dhi == 0.0 else lo


def cutting_plane_ranksvm(loss, C, n_queries, *, tol=1e-6, max_iter=1000,
                          line_search="auto", verbose=False):
    """Minimise eq. (7.11) by the 1-slack cutting-plane method.

    Parameters
    ----------
    loss : refimpl.losses.pairwise_hinge.PairwiseHinge
        The pairwise hinge of the training data.
    C : float
        SVMrank's ``-c`` (> 0); the loss is weighted by ``C / n_queries``.
    n_queries : int
        ``n`` of eq. (7.11): every training query, with or without pairs
        (SVMrank's number of rankings).
    tol : float, default 1e-6
        Stop when ``P(w_best) - D(alpha) <= tol * P(w_best)``.
    max_iter : int, default 1000
        Maximum number of cutting planes added.
    line_search : bool or "auto", default "auto"
        OCAS's variant of the loop (Franc & Sonnenburg 2009): the best point
        moves by a line search of ``P`` towards each working-set solution,
        and the next plane is taken at a point between the two (``OCAS_MU``).
        The same kind of planes, the same dual and the same certificate;
        far fewer planes when ``C`` is large, at about a dozen sorts and
        sweeps (no pass over ``X``) per plane.  ``"auto"``: plain cutting
        planes for the first ``LS_AUTO_AFTER`` planes, then OCAS.
    verbose : bool, default False
        One line per iteration.

    Returns
    -------
    SolverResult
        ``w`` the best iterate (smallest ``P``); ``history`` per iteration:
        ``f`` = ``P(w_t)``, ``f_best``, ``dual`` = ``D(alpha_t)`` (the
        working-set optimum before the new plane), ``gap`` =
        ``f_best - dual``, ``ceps`` (SVMrank's violation of the new plane
        beyond the working set's slack), ``n_violated`` pairs, cumulative
        SMO ``qp_steps``, ``time``.  ``details``: ``alpha``, ``n_planes``
        and the final ``gap``.

    Raises
    ------
    NonFiniteError
        If ``P``, a plane or the dual becomes NaN or infinite.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
    """
    start = time.perf_counter()
    max_iter, tol = check_budget(max_iter, tol)
    C = float(C)
    n = int(n_queries)
    if not (C > 0 and math.isfinite(C)):
        raise ValueError(f"C must be finite and > 0, got {C!r}")
    if n < 1:
        raise ValueError(f"n_queries must be >= 1, got {n!r}")
    if line_search not in (True, False, "auto"):
        raise ValueError(f"line_search must be True, False or 'auto', got "
                         f"{line_search!r}")
    d = int(loss.n_features)
    cap = min(max_iter + 2, 64)     # grown by doubling (_grow)
    A = np.zeros((cap, d))          # plane 0 is (0, 0): xi >= 0
    b = np.zeros(cap)
    G = np.zeros((cap, cap))        # C times the planes' Gram matrix
    beta = np.zeros(cap)            # alpha / C (see _solve_working_set)
    beta[0] = 1.0
    m = 1
    w = np.zeros(d)
    w_best, f_best, z_best = w, math.inf, None
    dual, qp_steps = 0.0, 0
    history = {key: [] for key in _HISTORY_KEYS}
    converged, message, n_iter = False, "", 0
    while True:
        risk, c, n_violated = loss.risk(w)
        ww = float(w @ w)
        f = 0.5 * ww + C * risk / n
        _check(f, "the objective P(w)", loss)
        # ties go to the newer iterate: for a tiny C (1e-17) P(C a_0)
        # rounds to P(0), and C a_0 is the optimum, 0 a constant ranker
        if f <= f_best:
            f_best, w_best = f, w
            z_best = loss.last_scores
        with np.errstate(over="ignore", invalid="ignore"):  # checked next
            a_new = loss.direction(c) / n
        _check(a_new, "the most violated plane", loss)
        b_new = n_violated / n
        # the working set's slack at w, and the new plane's excess over it
        xi = max(0.0, float(np.max(b[:m] - A[:m] @ w)))
        ceps = max(0.0, risk / n - xi)
        gap = f_best - dual
        _check(gap, "the duality gap", loss)
        for key, value in zip(_HISTORY_KEYS, (
                f, f_best, dual, gap, ceps, n_violated, qp_steps,
                time.perf_counter() - start)):
            history[key].append(value)
        if verbose:
            print(f"iter {n_iter:3d} P {f:.6e} D {dual:.6e} gap {gap:.3e} "
                  f"ceps {ceps:.3e} planes {m}")
        if gap <= tol * f_best:
            converged = True
            message = (f"gap {gap:.3e} <= tol * P = {tol * f_best:.3e} "
                       f"after {n_iter} planes")
            break
        # the rounding level of P: risk = n_violated - c^T z cancels terms
        # of size |c|^T |z|, so at C = 1e12 a gap of 1e-3 is rounding, and no
        # plane lowers it (the loop ran all max_iter planes, for hours)
        floor = ROUNDING_FACTOR * np.finfo(np.float64).eps * (
            0.5 * ww + C / n * (n_violated + float(np.abs(c) @ np.abs(loss.last_scores))))
        # a violated plane raises D strictly (exact QPs: D never falls) and a
        # better point lowers P(w_best): neither for STALL_PLANES planes is
        # rounding too (D then wanders by ulps around its best)
        stalled = (n_iter >= STALL_PLANES
                   and history["f_best"][-1 - STALL_PLANES] == f_best
                   and max(history["dual"][-STALL_PLANES:])
                   <= max(history["dual"][:-STALL_PLANES]))
        if gap <= floor or stalled:
            why = (f"is at the rounding level {floor:.3e} of P = {f_best:.3e}"
                   if gap <= floor else
                   f"and P = {f_best:.3e} have not moved in the last "
                   f"{STALL_PLANES}")
            message = (f"the gap {gap:.3e} {why} of {n_iter} planes: tol = "
                       f"{tol:g} is below what double precision certifies at "
                       f"C = {C:g}")
            warnings.warn(
                f"cutting_plane_ranksvm did not converge: {message}; raise tol "
                "or lower C", ConvergenceWarning, stacklevel=2)
            break
        if n_iter >= max_iter:
            message = (f"max_iter = {max_iter} reached: gap {gap:.3e} > tol * P "
                       f"= {tol * f_best:.3e}")
            warnings.warn(
                f"cutting_plane_ranksvm did not converge: {message}; increase "
                "max_iter or tol", ConvergenceWarning, stacklevel=2)
            break
        n_iter += 1
        if m == len(b):
            A, b, G, beta = _grow(A, b, G, beta)
        A[m] = a_new
        b[m] = b_new
        with np.errstate(over="ignore", invalid="ignore"):  # checked next
            row = C * (A[:m + 1] @ a_new)
        _check(row, "C times the inner products of the new plane", loss)
        G[m, :m + 1] = row
        G[:m + 1, m] = row
        m += 1
        qp_tol = QP_FRACTION * tol * f_best / C
        qp_steps += _solve_working_set(G, b, beta, m, qp_tol)
        w = C * (beta[:m] @ A[:m])
        dual = C * float(beta[:m] @ b[:m]) - 0.5 * float(w @ w)
        _check(dual, "the dual value D(alpha)", loss)
        if line_search is True or (line_search == "auto"
                                   and n_iter > LS_AUTO_AFTER):
            v = w - w_best
            u = loss.scores(v)
            _check(u, "the scores of the search direction", loss)
            t = _line_search(loss, C / n, w_best, v, z_best, u, f_best)
            if t > 0:
                w_new = w_best + t * v
                z_new = loss.scores(w_new)
                f_new = 0.5 * float(w_new @ w_new) + C / n * loss.value(z_new)
                if f_new < f_best:
                    f_best, w_best, z_best = f_new, w_new, z_new
            w = w_best + OCAS_MU * (w - w_best)
    return SolverResult(
        w=np.array(w_best), n_iter=n_iter, converged=converged,
        history=history, message=message,
        details={"alpha": C * beta[:m], "n_planes": m,
                 "gap": history["gap"][-1]})
