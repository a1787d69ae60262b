r"""The basic differential multiplier method (Platt & Barr 1988) in discrete time.

For ``min_x f(x)`` subject to ``c(x) = 0`` (``c : R^N -> R^M``) with the
Lagrangian ``L(x, lambda) = f(x) + lambda^T c(x)``, a stationary point of
``L`` is a *saddle point*: a minimum in ``x`` but not in ``lambda`` (``L`` is
linear in ``lambda``).  Gradient descent on both diverges along ``lambda``.
BDMM descends in ``x`` and **ascends** in ``lambda``,

.. math::

    x_{t+1} = x_t - \eta\, \nabla_x L_\mu(x_t, \lambda_t), \qquad
    \lambda_{t+1} = \lambda_t + \eta_\lambda\, c(x_{t+1}),

(LifeRank's eq. 8 with ``eta_lambda = eta``), where ``L_mu = L + (mu/2)
||c||^2``.  ``mu = 0`` is BDMM; ``mu > 0`` is Platt & Barr's *modified*
method (MDMM), whose penalty damps the oscillation of ``x`` around the
constraint surface.  ``update="alternating"`` uses the new ``x`` in the
multiplier step (as written above); ``"simultaneous"`` uses ``c(x_t)``, the
explicit Euler discretisation of the BDMM differential equation, which
amplifies the oscillation of an undamped mode by ``sqrt(1 + eta eta_lambda
omega^2)`` per step.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..exceptions import DataError
from ..exceptions import DivergenceError
from ._finite import NonFiniteError, check_finite, nonfinite_message, safe_norm
from ._result import SolverResult

#: When the multiplier step reads the constraint (see the module docstring).
UPDATES = ("alternating", "simultaneous")
#: What a run that overflows part-way does (see :func:`bdmm`).
ON_NONFINITE = ("raise", "stop")


@dataclass
class BDMMResult(SolverResult):
    """A :class:`refimpl.solvers.SolverResult` that also carries the multipliers.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    multipliers : ndarray of shape (M,)
        ``lambda`` at the returned iterate.
    """

    multipliers: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _check_rate(value, name, allow_zero=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive"
        raise DataError(f"{name} must be finite and {need}, got {value!r}")
    return v


def _growth(f, cnorm, f_cap, c_cap, history):
    """Why the divergence guard of :func:`bdmm` trips, or ``""``."""
    if f > f_cap:
        return (f"the objective grew from {history['f'][0]:.4g} to {f:.4g}, "
                f"above the guard {f_cap:.4g}")
    if cnorm > c_cap:
        return (f"||c|| grew from {history['violation'][0]:.4g} to "
                f"{cnorm:.4g}, above the guard {c_cap:.4g}")
    return ""


def bdmm(problem, x0, multipliers0=None, *, lr, lr_multiplier=None, damping=0.0,
         update="alternating", max_iter=1000, tol=1e-6, constraint_tol=1e-6,
         monitor=None, warn=True, on_nonfinite="raise", max_growth=None):
    r"""Basic (or modified) differential multiplier method, discretised.

    Parameters
    ----------
    problem : object
        With ``fun(x) -> float`` (``f``), ``grad(x)`` (``grad f``, valid right
        after ``fun`` at the same ``x``), ``constraint(x)`` (``c(x)``, shape
        ``(M,)``) and ``constraint_vjp(x, u)`` (``J_c(x)^T u``, shape
        ``(N,)``).
    x0 : array-like of shape (N,)
    multipliers0 : array-like of shape (M,), optional
        Starting multipliers; zeros by default.
    lr : float
        Primal step ``eta > 0``.
    lr_multiplier : float, optional
        Multiplier step ``eta_lambda > 0``; ``lr`` by default (one learning
        rate, as LifeRank's eq. 8).
    damping : float, default 0.0
        ``mu >= 0`` of the modified method; 0 is BDMM.
    update : {"alternating", "simultaneous"}
        Whether the multiplier step uses ``c(x_{t+1})`` or ``c(x_t)``.
    max_iter : int, default 1000
    tol : float, default 1e-6
        Relative stationarity tolerance (see Returns).
    constraint_tol : float, default 1e-6
        Absolute feasibility tolerance on ``||c(x)||``.
    monitor : callable, optional
        ``monitor(x) -> dict`` of extra scalars recorded after every
        evaluation (called right after ``fun(x)``, so it may read the
        problem's cached state).
    warn : bool, default True
        Emit a ``ConvergenceWarning`` when ``max_iter`` is reached.
    on_nonfinite : {"raise", "stop"}, default "raise"
        What happens when an iterate, ``f``, ``c`` or ``grad_x L_mu``
        becomes NaN or infinite part-way (a step ``lr`` too large for the
        curvature, or features too large): ``"raise"`` a
        :class:`~refimpl.solvers.NonFiniteError`; ``"stop"`` returns the run
        so far with ``converged=False`` and a message starting with
        "diverged" (for experiments that study divergence; the last ``w``
        is then not usable).  A non-finite value at the starting point
        always raises: no iteration was made, and the relative stopping test
        would compare ``inf`` with ``tol * inf``.
    max_growth : float, optional
        The divergence guard (off by default).  With ``g = max_growth``, a
        run whose objective reaches ``f_t > f_0 + g max(1, |f_0|)``, or
        whose violation reaches ``||c_t|| > ||c_0|| + g max(1, ||c_0||)``,
        has diverged: a step too large for the curvature makes both grow
        geometrically, long before they overflow, while a convergent run
        stays near its start.  Such a run is stopped like a non-finite
        one (``on_nonfinite``): ``"raise"`` a
        :class:`~refimpl.exceptions.DivergenceError` whose message names
        ``lr``, ``"stop"`` returns it with that message.

    Returns
    -------
    BDMMResult
        ``w`` is the last ``x``, ``multipliers`` the last ``lambda``;
        ``converged`` means
        ``||grad_x L_mu(x_t, lambda_t)|| <= tol * max(1,
        ||grad_x L_mu(x_0, lambda_0)||)`` and ``||c(x_t)|| <= constraint_tol``.
        ``history`` holds, per iterate, ``f``, ``lagrangian`` (``L_mu``),
        ``violation`` (``||c||``), ``grad_norm`` (``||grad_x L_mu||``),
        ``multiplier_norm``, ``time`` and the monitor's keys.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    lr = _check_rate(lr, "lr")
    lr_lam = lr if lr_multiplier is None else _check_rate(lr_multiplier,
                                                          "lr_multiplier")
    mu = _check_rate(damping, "damping", allow_zero=True)
    if update not in UPDATES:
        raise DataError(f"update must be one of {UPDATES}, got {update!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) \
            or max_iter < 0:
        raise DataError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    tol = _check_rate(tol, "tol", allow_zero=True)
    constraint_tol = _check_rate(constraint_tol, "constraint_tol", allow_zero=True)
    if on_nonfinite not in ON_NONFINITE:
        raise DataError(
            f"on_nonfinite must be one of {ON_NONFINITE}, got {on_nonfinite!r}")
    if max_growth is not None:
        max_growth = _check_rate(max_growth, "max_growth")

    x = np.array(x0, dtype=np.float64, copy=True).ravel()
    check_finite(x, "bdmm", "x0", problem)
    t0 = time.perf_counter()
    where0 = "at the starting point"
    with np.errstate(over="ignore", invalid="ignore"):
        f = float(problem.fun(x))
        g = np.asarray(problem.grad(x), dtype=np.float64)
        c = np.asarray(problem.constraint(x), dtype=np.float64).ravel()
    check_finite(f, "bdmm", "the objective f", problem, where0)
    check_finite(g, "bdmm", "the gradient of f", problem, where0)
    check_finite(c, "bdmm", "the constraint c(x)", problem, where0)
    lam = (np.zeros(c.size) if multipliers0 is None
           else np.array(multipliers0, dtype=np.float64, copy=True).ravel())
    if lam.shape != c.shape:
        raise DataError(
            f"multipliers0 must have shape {c.shape} (one per constraint), "
            f"got {lam.shape}"
        )
    history = {key: [] for key in ("f", "lagrangian", "violation", "grad_norm",
                                   "multiplier_norm", "time")}

    def lagrangian_grad():
        if c.size == 0:
            return g
        return g + np.asarray(problem.constraint_vjp(x, lam + mu * c))

    def record(gL, extra):
        # the norms of a diverging run overflow; it is reported by `message`
        with np.errstate(over="ignore", invalid="ignore"):
            _record(gL, extra)

    def _record(gL, extra):
        history["f"].append(f)
        history["lagrangian"].append(f + float(lam @ c) + 0.5 * mu * float(c @ c))
        history["violation"].append(safe_norm(c))
        history["grad_norm"].append(safe_norm(gL))
        history["multiplier_norm"].append(safe_norm(lam))
        history["time"].append(time.perf_counter() - t0)
        for key, value in extra.items():
            history.setdefault(key, []).append(value)

    with np.errstate(over="ignore", invalid="ignore"):
        gL = lagrangian_grad()
    check_finite(gL, "bdmm", "the Lagrangian gradient", problem, where0)
    record(gL, monitor(x) if monitor else {})
    # ||.|| without overflow of the squares: a finite gradient whose norm
    # overflowed would make the relative test inf <= tol * inf hold at x0
    scale = max(1.0, check_finite(safe_norm(gL), "bdmm",
                                  "the Lagrangian gradient norm", problem,
                                  where0))

    def done(gL):
        gnorm, cnorm = safe_norm(gL), safe_norm(c)
        return (math.isfinite(gnorm) and math.isfinite(cnorm)
                and gnorm <= tol * scale and cnorm <= constraint_tol)

    # the divergence guard's thresholds, fixed at the start
    f_cap = c_cap = math.inf
    if max_growth is not None:
        f_cap = f + max_growth * max(1.0, abs(f))
        c0 = safe_norm(c)
        c_cap = c0 + max_growth * max(1.0, c0)

    n_iter = 0
    converged = done(gL)
    message = "stopping rule met at the starting point" if converged else ""
    while not converged and n_iter < max_iter:
        # a diverging run overflows before it is detected below; it is
        # reported through the message, not through floating-point warnings
        with np.errstate(over="ignore", invalid="ignore"):
            x = x - lr * gL
            f = float(problem.fun(x))
            extra = monitor(x) if monitor else {}
            g = np.asarray(problem.grad(x), dtype=np.float64)
            c_new = np.asarray(problem.constraint(x), dtype=np.float64).ravel()
            # ascent in the multipliers: the sign that makes the saddle attracting
            lam = lam + lr_lam * (c_new if update == "alternating" else c)
            c = c_new
            n_iter += 1
            finite = (math.isfinite(f) and np.all(np.isfinite(x))
                      and np.all(np.isfinite(c)))
            if finite:
                gL = lagrangian_grad()
                finite = bool(np.all(np.isfinite(gL)))
            if not finite:
                message = f"diverged at iteration {n_iter} (non-finite iterate)"
                if on_nonfinite == "raise":
                    raise NonFiniteError(nonfinite_message(
                        "bdmm", "the iterate, f, c(x) or grad_x L", None,
                        problem, f"at iteration {n_iter} (the run diverged: "
                        "lower lr or lr_multiplier, or add damping)"))
                record(np.full_like(x, np.nan), extra)
                break
            grown = _growth(f, safe_norm(c), f_cap, c_cap, history)
            if grown:
                message = (f"diverged at iteration {n_iter} ({grown}): the "
                           f"step lr={lr:g} is too large for this problem; "
                           f"lower lr (e.g. lr={lr / 10:g})")
                if on_nonfinite == "raise":
                    raise DivergenceError(f"bdmm: {message}")
                record(gL, extra)
                break
            record(gL, extra)
        converged = done(gL)
    if converged and not message:
        message = f"converged in {n_iter} iterations"
    elif not converged and not message:
        message = (
            f"max_iter={max_iter} reached: ||grad_x L|| = "
            f"{history['grad_norm'][-1]:.3e}"
            f" (tol {tol:g} x {scale:.3e}), ||c|| = {history['violation'][-1]:.3e}"
            f" (constraint_tol {constraint_tol:g})"
        )
    if not converged and warn:
        warnings.warn(f"bdmm: {message}", ConvergenceWarning, stacklevel=2)
    return BDMMResult(w=x, n_iter=n_iter, converged=bool(converged),
                      history=history, message=message, multipliers=lam)
