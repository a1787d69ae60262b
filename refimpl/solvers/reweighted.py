r"""Reweighted l1 (DC / majorisation-minimisation) for concave sparsity penalties.

Algorithm 2 of Laporte, Flamary, Canu, Déjean & Mothe (2014): minimise

.. math::

    F(w) = f(w) + \sum_j g(|w_j|), \qquad f = C \ell \ \text{(smooth, convex)},

with ``g`` concave and non-decreasing on ``[0, inf)``, by solving a sequence
of weighted-l1 problems (their eq. 13)

.. math::

    w^{k} = \arg\min_w f(w) + \sum_j \beta^{k}_j |w_j|, \qquad
    \beta^{k+1}_j = g'(|w^{k}_j|), \quad \beta^1 = 1,

each with :func:`refimpl.solvers.apg` (their Algorithm 1).  Because ``g``
lies below its tangents, ``f(w) + sum_j [g(|w^k_j|) + beta^{k+1}_j (|w_j| -
|w^k_j|)]`` majorises ``F`` and touches it at ``w^k``: any inner point that
does not increase the majoriser does not increase ``F`` (the MM property),
from the second pass on (the first pass, ``beta = 1``, is the l1 start of
line 2, not a majoriser of ``F``).

Derived in: book/05_dc_reweighting.md#dc-reweighting
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..exceptions import DataError
from ..penalties import WeightedL1
from ._finite import check_finite
from ._result import SolverResult
from .apg import apg
from .prox_newton import prox_newton

__all__ = ["dc_stationarity", "reweighted_l1"]

_HISTORY_KEYS = ("F", "majorizer", "support", "n_inner", "change", "n_fun", "time")


def dc_stationarity(smooth, penalty, w):
    r"""Coordinate-wise violation of the stationarity conditions of ``F = f + Omega``.

    For ``F(w) = f(w) + sum_j g(|w_j|)`` the one-sided directional
    derivatives at ``w`` are non-negative in every coordinate direction iff

    * ``w_j != 0``: ``df/dw_j + g'(|w_j|) sign(w_j) = 0``;
    * ``w_j = 0``: ``|df/dw_j| <= g'(0)``,

    which are the optimality conditions of the weighted-l1 problem with
    ``beta = g'(|w|)``: a fixed point of Algorithm 2 is stationary.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    smooth : object
        ``fun(w)``, ``grad(w)``.
    penalty : ConcavePenalty
        From :mod:`refimpl.nonconvex`.
    w : array-like of shape (n_features,)

    Returns
    -------
    ndarray of shape (n_features,)
        ``|df/dw_j + g'(|w_j|) sign(w_j)|`` on the support and
        ``max(|df/dw_j| - g'(0), 0)`` off it; all zero at a stationary point.
    """
    w = np.asarray(w, dtype=np.float64)
    smooth.fun(w)
    grad = np.asarray(smooth.grad(w), dtype=np.float64)
    beta = penalty.weights(w)
    nz = w != 0
    return np.where(nz, np.abs(grad + beta * np.sign(w)),
                    np.maximum(np.abs(grad) - beta, 0.0))


def reweighted_l1(smooth, penalty, w0=None, *, max_outer=300, tol_outer=1e-4,
                  warm_start=True, tol=1e-6, max_iter=10000,
                  line_search="backtracking", accelerated=True, restart=False,
                  first_weights=None, gmap_ref=None, callback=None, solver="fista"):
    r"""Minimise ``f(w) + sum_j g(|w_j|)`` by reweighted l1 (Laporte et al., Algorithm 2).

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    smooth : object
        The convex smooth part ``f`` (``fun``, ``grad``, ``n_features``),
        e.g. ``ScaledSmooth(PairwiseSquaredHinge(...), C)``.
    penalty : ConcavePenalty
        ``weights(w) = g'(|w|)``, ``value(w)``, ``majorizer(w, w_ref)``
        (:mod:`refimpl.nonconvex`).
    w0 : array-like of shape (n_features,), optional
        Start of the first inner solve (zeros by default).
    max_outer : int, default 300
        Maximum number of weighted-l1 solves (outer iterations, >= 1).  A
        safeguard, not the paper's (Algorithm 2 has no cap): a run that
        reaches it before ``tol_outer`` holds returns ``converged=False``
        and warns; its ``w`` is as far as the MM descent got (from the
        second pass on, a pass that does not increase the majoriser does
        not increase ``F``), not a certified fixed point.
    tol_outer : float, default 1e-4
        Stop when ``||w^k - w^{k-1}||_inf <= tol_outer * max(||w^k||_inf,
        1e-12)`` (the paper's "until convergence", made explicit).
    warm_start : bool, default True
        Start each inner solve at the previous solution, with the previous
        Lipschitz estimate (``f`` does not change, only the weights); False
        restarts from ``w0`` and re-estimates ``L``.
    tol, max_iter, line_search, accelerated, restart
        Passed to :func:`refimpl.solvers.apg` with
        ``stop="gradient_mapping"``; the tolerance is relative to the
        *first* solve's initial gradient mapping for every inner solve, so
        warm and cold starts stop at the same absolute accuracy.
    first_weights : array-like, optional
        ``beta^1`` (Algorithm 2 line 2 uses ones).  With ``w0`` a previous
        solution and ``first_weights = penalty.weights(w0)`` a run continues
        from there (e.g. several penalties sharing one l1 first pass).
    gmap_ref : float, optional
        The inner stopping target's reference norm (see ``tol``); default
        the first pass's initial gradient mapping.  Pass the cold-start
        value when continuing a run from a warm ``w0``.
    callback : callable, optional
        ``callback(k, w, info)`` after outer iteration ``k``.
    solver : {"fista", "newton"}, default "fista"
        The convex solver of each weighted-l1 pass: :func:`~refimpl.solvers.apg` (the
        paper's Algorithm 1) or :func:`refimpl.solvers.prox_newton`, whose
        stop (minimum-norm subgradient ``<= tol`` times the same
        reference) certifies the gradient-mapping test of :func:`~refimpl.solvers.apg`, so
        the outer stop and the stationarity it reaches
        (:func:`~refimpl.solvers.dc_stationarity`) mean the same; ``line_search``,
        ``accelerated`` and ``restart`` then do not apply.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``max_outer`` passes end without the stopping rule holding.

    Returns
    -------
    SolverResult
        ``w = w^K``, ``n_iter`` = number of outer iterations; ``history``
        (entry 0 = ``w0``): ``F`` (the non-convex objective),
        ``majorizer`` (its majoriser built at ``w^{k-1}`` evaluated at
        ``w^k``; nan for ``k <= 1``), ``support`` (non-zeros), ``n_inner``,
        ``change`` (``||w^k - w^{k-1}||_inf``), ``n_fun`` (cumulative calls
        of ``f``), ``time``.  ``details["inner"]``: the inner
        :class:`SolverResult` histories (as arrays), one per outer
        iteration; ``details["weights"]``: the ``beta^k`` used.
    """
    if solver not in ("fista", "newton"):
        raise DataError(f"solver must be one of ('fista', 'newton'), got {solver!r}")
    if int(max_outer) != max_outer or max_outer < 1:
        raise DataError(f"max_outer must be an integer >= 1, got {max_outer!r}")
    max_outer = int(max_outer)
    tol_outer = float(tol_outer)
    if not (tol_outer >= 0 and math.isfinite(tol_outer)):
        raise DataError(f"tol_outer must be finite and >= 0, got {tol_outer!r}")
    n = int(smooth.n_features)
    start_w = np.zeros(n) if w0 is None else np.array(w0, dtype=np.float64)
    if start_w.shape != (n,):
        raise DataError(f"w0 must have shape ({n},), got {start_w.shape}")
    beta = np.ones(n) if first_weights is None else np.array(first_weights, dtype=np.float64)
    if beta.shape != (n,):
        raise DataError(f"first_weights must have shape ({n},), got {beta.shape}")

    start = time.perf_counter()
    history = {key: [] for key in _HISTORY_KEYS}
    n_fun = 0

    def record(F, maj, w, n_inner, change):
        values = (F, maj, int(np.count_nonzero(w)), n_inner, change, n_fun,
                  time.perf_counter() - start)
        for key, value in zip(_HISTORY_KEYS, values):
            history[key].append(value)

    w = start_w.copy()
    check_finite(w, "reweighted_l1", "w0", smooth)
    check_finite(beta, "reweighted_l1", "first_weights", smooth)
    f_w = float(smooth.fun(w))
    n_fun += 1
    check_finite(f_w, "reweighted_l1", "f(w0)", smooth)
    record(f_w + penalty.value(w), math.nan, w, 0, math.nan)
    inner, weights_used = [], []
    L = None
    converged = False
    message = ""
    k = 0
    while k < max_outer:
        k += 1
        w_prev = w
        if solver == "newton":
            result = prox_newton(smooth, WeightedL1(beta),
                                 w_prev if warm_start else start_w, tol=tol,
                                 max_iter=max_iter, gmap_ref=gmap_ref)
            if gmap_ref is None and result.details["gmap_ref"] > 0:
                gmap_ref = float(result.details["gmap_ref"])
        else:
            result = apg(smooth, WeightedL1(beta), w_prev if warm_start else start_w,
                         L0=L if warm_start else None, line_search=line_search,
                         accelerated=accelerated, restart=restart, tol=tol,
                         stop="gradient_mapping", max_iter=max_iter,
                         gmap_ref=gmap_ref)
        if gmap_ref is None:
            gmaps = np.asarray(result.history["gmap"][1:])
            gmap_ref = float(gmaps[0]) if gmaps.size and gmaps[0] > 0 else None
        L = float(result.history["L"][-1]) if solver == "fista" else None
        n_fun += int(result.history["n_fun"][-1])
        w = result.w
        inner.append(result.as_arrays())
        weights_used.append(beta.copy())
        f_w = float(smooth.fun(w))
        n_fun += 1
        F = f_w + penalty.value(w)
        check_finite(F, "reweighted_l1", "the objective F = f + Omega", smooth,
                     f"after outer iteration {k}")
        # the majoriser built at w^{k-1}: only a bound on F from the 2nd pass on
        maj = (f_w + penalty.majorizer(w, w_prev)) if k >= 2 else math.nan
        change = float(np.max(np.abs(w - w_prev), initial=0.0))
        record(F, maj, w, result.n_iter, change)
        if callback is not None:
            callback(k, w.copy(), {"F": F, "support": int(np.count_nonzero(w)),
                                   "n_inner": result.n_iter})
        beta = penalty.weights(w)
        check_finite(beta, "reweighted_l1", "the weights g'(|w|)", smooth,
                     f"after outer iteration {k}")
        check_finite(change, "reweighted_l1", "the change ||w^k - w^k-1||_inf",
                     smooth)
        scale = max(float(np.max(np.abs(w), initial=0.0)), 1e-12)
        if k >= 2 and change <= tol_outer * scale:
            converged = True
            message = (f"||w^k - w^k-1||_inf = {change:.3e} <= tol_outer * ||w^k||_inf "
                       f"= {tol_outer * scale:.3e}")
            break
        if k == 1 and np.array_equal(beta, weights_used[0]):
            # e.g. the l1 penalty: the weights do not move, the first pass is final
            converged = True
            message = "the weights g'(|w|) equal the first pass's: nothing to reweight"
            break
    if not converged:
        message = (f"max_outer = {max_outer} outer iterations reached: "
                   f"||w^k - w^k-1||_inf = {change:.3e} > tol_outer * ||w^k||_inf "
                   f"= {tol_outer * scale:.3e}")
        warnings.warn(f"reweighted l1 did not converge: {message}; increase max_outer "
                      "or tol_outer", ConvergenceWarning, stacklevel=2)
    return SolverResult(w=w, n_iter=k, converged=converged, history=history,
                        message=message,
                        details={"inner": inner, "weights": weights_used})
