r"""Accelerated proximal gradient (FISTA / Nesterov) for ``min_w f(w) + g(w)``.

``f`` is smooth with an L-Lipschitz gradient and is seen only through
``fun(w)`` and ``grad(w)`` (the caching contract of the loss objects:
``grad`` is valid right after ``fun`` at the same ``w``); ``g`` is a
penalty object of :mod:`refimpl.penalties`, seen only through
``prox(v, step)`` and ``value(w)``.  One iteration at the search point
``z_k``, with the current estimate ``L`` of the Lipschitz constant,

.. math::

    w_k = \operatorname{prox}_{g/L}\bigl(z_k - \nabla f(z_k)/L\bigr),
    \qquad
    \alpha_{k+1} = \tfrac12\bigl(1 + \sqrt{1 + 4\alpha_k^2}\bigr),
    \qquad
    z_{k+1} = w_k + \frac{\alpha_k - 1}{\alpha_{k+1}} (w_k - w_{k-1}),

with ``z_1 = w_0``, ``alpha_1 = 1``: FISTA (Beck & Teboulle 2009; Laporte et
al. 2014, Algorithm 1), which is also Algorithm 1 of FSMRank (Lai et al.
2013), whose eq. 3 is the prox step.  ``accelerated=False`` keeps
``z_{k+1} = w_k`` (ISTA, the forward-backward iteration eq. 10 of Laporte et
al.).

Derived in: book/04_fsmrank_nesterov.md#fsmrank
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._checks import check_budget, check_choice, initial_point
from ._finite import NonFiniteError, check_finite, nonfinite_message, safe_norm
from ._result import SolverResult

#: Rules for the Lipschitz estimate ``L`` (see :func:`apg`, Notes).
LINE_SEARCHES = ("backtracking", "nemirovski", "fixed", "adaptive")

#: Adaptive restart schemes of O'Donoghue & Candès (2015).
RESTARTS = (False, "function", "gradient")

#: Stopping rules of :func:`apg`.
STOPS = ("relative_change", "gradient_mapping")

#: FSMRank, Algorithm 1: ``L = L0 / gamma**NEMIROVSKI_EXPONENT`` at the start.
NEMIROVSKI_EXPONENT = 10

#: The sufficient-decrease test tolerates rounding of this relative size in
#: ``f`` (near the optimum ``f(w) - f(z)`` is at the level of rounding and an
#: exact test would double ``L`` spuriously).
LS_RTOL = 1e-13

#: ``line_search="adaptive"`` tries a smaller ``L`` only after this many
#: iterations in a row whose first trial was accepted: each rejected trial
#: costs a gradient at a new extrapolated point.
ADAPTIVE_STREAK = 3

#: Give up when the line search has pushed ``L`` above this.
L_MAX = 1e300

_HISTORY_KEYS = ("F", "L", "gmap", "n_fun", "restart", "time")


def hessian_matrix(smooth, w=None) -> np.ndarray:
    """The dense (generalised) Hessian of ``smooth`` at ``w`` from ``n`` products.

    Calls ``smooth.fun(w)`` and then ``hess_vec(e_j)`` for every unit vector,
    so it costs ``n_features`` Hessian-vector products; meant for ``n`` up to
    a few thousand.

    Parameters
    ----------
    smooth : object
        With ``fun``, ``hess_vec`` and ``n_features``.
    w : array-like, optional
        Where to evaluate; zeros by default.

    Returns
    -------
    ndarray of shape (n, n)
        Symmetrised: ``(H + H^T)/2``.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """
    n = int(smooth.n_features)
    w = np.zeros(n) if w is None else np.asarray(w, dtype=np.float64)
    smooth.fun(w)
    H = np.empty((n, n))
    e = np.zeros(n)
    for j in range(n):
        e[j] = 1.0
        H[:, j] = smooth.hess_vec(e)
        e[j] = 0.0
    return 0.5 * (H + H.T)


def lipschitz_constant(smooth, w=None) -> float:
    r"""``lambda_max`` of the (generalised) Hessian of ``smooth`` at ``w``.

    For the pairwise squared hinge with margin ``delta > 0`` (and any sum of
    it with a convex quadratic), every pair is active at ``w = 0``, so the
    generalised Hessian there, ``2 s K^T K`` (+ the quadratic's), dominates
    the Hessian at every other point in the Loewner order: ``lambda_max`` at
    ``w = 0`` (the default) is the smallest global Lipschitz constant of the
    gradient.  For other objectives it is only a local value.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    smooth : object
        With ``fun``, ``hess_vec`` and ``n_features``.
    w : array-like, optional
        Zeros by default.

    Returns
    -------
    float
    """
    H = hessian_matrix(smooth, w)
    check_finite(H, "lipschitz_constant", "the Hessian at w", smooth)
    return check_finite(float(max(np.linalg.eigvalsh(H)[-1], 0.0)),
                        "lipschitz_constant", "lambda_max of the Hessian", smooth)


def _check_finite(value, what, objective=None, where=""):
    """Raise :class:`~refimpl.solvers.NonFiniteError` naming cause and remedy."""
    return check_finite(value, "APG", what, objective, where)


def _initial_L(smooth, w0, f0, g0):
    """A cheap local curvature estimate ``||grad f(w0 + h) - grad f(w0)|| / ||h||``.

    ``h`` is a short step along ``-grad f(w0)`` (length ``1e-3 max(1,
    ||w0||)``).  Returns ``(L, n_fun)``; ``L = 1`` when the gradient is zero
    or the curvature along ``h`` vanishes.
    """
    gnorm = safe_norm(g0)
    _check_finite(gnorm, "the gradient norm at w0", smooth,
                  "although every entry of the gradient is finite")
    if gnorm == 0:
        return 1.0, 0
    h = -(1e-3 * max(1.0, safe_norm(w0)) / gnorm) * g0
    smooth.fun(w0 + h)
    g1 = np.asarray(smooth.grad(w0 + h), dtype=np.float64)
    smooth.fun(w0)   # restore the cached state at w0
    _check_finite(g1, "the gradient near w0", smooth)
    L = float(safe_norm(g1 - g0) / safe_norm(h))
    if not (L > 0 and math.isfinite(L)):
        L = 1.0
    return L, 2


def apg(smooth, penalty, w0=None, *, L0=None, line_search="backtracking",
        eta=2.0, restart=False, accelerated=True, tol=1e-6,
        stop="relative_change", max_iter=10000, callback=None, gmap_ref=None):
    r"""Minimise ``F(w) = f(w) + g(w)`` by an accelerated proximal gradient method.

    FISTA (Beck & Teboulle 2009) with a choice of step-size rule; it is
    Algorithm 1 of Laporte et al. (2014) and, with
    ``line_search="nemirovski"`` and ``stop="relative_change"``, Algorithm 1
    of FSMRank (Lai et al. 2013).

    Stopping rules (checked after every iteration ``k >= 1``):

    * ``stop="relative_change"`` (FSMRank, Section III-C):

      .. math:: |F(w_k) - F(w_{k-1})| \le \mathrm{tol} \cdot |F(w_{k-1})| .

      Cheap, but it certifies nothing: a slow phase can trigger it early.
    * ``stop="gradient_mapping"``: with
      :math:`G_L(z) = L\,(z - \operatorname{prox}_{g/L}(z - \nabla f(z)/L))`,
      the composite analogue of the gradient (zero exactly at minimisers),

      .. math:: \|G_{L_k}(z_k)\|_2 \le \mathrm{tol} \cdot \|G_{L_1}(w_0)\|_2 ,

      where ``z_k`` is the search point of iteration ``k`` (so
      ``G_{L_k}(z_k) = L_k (z_k - w_k)`` comes for free) and
      ``z_1 = w_0``.  Relative, as TRON's ``||grad f|| <= eps ||grad f(0)||``.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    smooth : object
        ``fun(w) -> float`` and ``grad(w) -> ndarray`` (valid right after
        ``fun`` at the same ``w``), ``n_features``.  Optionally
        ``lipschitz_bound() -> float``, used when ``L0`` is not given for
        ``"fixed"`` and ``"nemirovski"``.
    penalty : object
        ``prox(v, step)`` and ``value(w)`` (``inf`` outside its domain), as
        in :mod:`refimpl.penalties`.
    w0 : array-like of shape (n_features,), optional
        Start, zeros by default; must have ``penalty.value(w0) < inf``.
    L0 : float, optional
        ``"fixed"``: the constant ``L`` (a Lipschitz constant of ``grad f``).
        ``"nemirovski"``: FSMRank's upper bound ``L0`` (its Theorem 1); the
        search starts at ``L0 / eta**10``.  ``"backtracking"``: the first
        trial ``L``.  Default: ``smooth.lipschitz_bound()`` for ``"fixed"``
        and ``"nemirovski"`` when available, else (and always for
        ``"backtracking"``) a local curvature estimate at ``w0`` from one
        extra gradient.
    line_search : {"backtracking", "nemirovski", "fixed", "adaptive"}
        See Notes.
    eta : float, default 2.0
        Growth factor ``> 1`` of ``L`` on a failed sufficient-decrease test
        (Beck & Teboulle's ``eta``, FSMRank's ``gamma = 2``).
    restart : {False, "function", "gradient"}
        Adaptive restart of O'Donoghue & Candès (2015): after iteration
        ``k``, reset the momentum (``alpha_{k+1} = 1``, ``z_{k+1} = w_k``)
        when ``F(w_k) > F(w_{k-1})`` (``"function"``) or when
        ``(z_k - w_k)^T (w_k - w_{k-1}) > 0`` (``"gradient"``, i.e. the step
        makes an obtuse angle with the negative gradient mapping).
    accelerated : bool, default True
        False gives ISTA (``z_{k+1} = w_k``), same code path.
    tol : float, default 1e-6
        Tolerance of the stopping rule, >= 0.
    stop : {"relative_change", "gradient_mapping"}
        Stopping rule above.
    max_iter : int, default 10000
        Maximum number of iterations (prox steps accepted).
    gmap_ref : float, optional
        Reference norm of the ``"gradient_mapping"`` test in place of
        ``||G_{L_1}(w_0)||``.  A warm-started subproblem (the reweighted-l1
        scheme) starts near its solution, where a test relative to its own
        start would ask for ever more accuracy; passing the first problem's
        cold-start norm keeps one absolute target.
    callback : callable, optional
        ``callback(w, info)`` after each iteration, ``w`` a copy of
        ``w_k``, ``info`` a dict with ``iter``, ``F``, ``L``, ``gmap``,
        ``restart``.

    Returns
    -------
    SolverResult
        ``w = w_k`` (the last prox point, always in ``dom g``).  ``history``
        has entry 0 for ``w0`` and entry ``k`` after iteration ``k``:
        ``"F"`` (objective ``F(w_k)``), ``"L"`` (the ``L`` accepted in
        iteration ``k``; at entry 0 the initial ``L``), ``"gmap"``
        (``||G_{L_k}(z_k)||``, nan at entry 0), ``"n_fun"`` (cumulative
        calls of ``smooth.fun``), ``"restart"`` (whether the momentum was
        reset after iteration ``k``) and ``"time"``.

    Raises
    ------
    ValueError
        Bad options, ``w0`` of the wrong shape or outside ``dom g``, no
        ``L0`` for ``"fixed"`` and no ``lipschitz_bound``.
    NonFiniteError
        (a ``FloatingPointError``) if the objective, the gradient, a norm,
        the step or ``L`` is NaN or infinite, or ``L`` passes ``1e300``;
        the message names the likely cause (the scale of the features) and
        the remedy.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``max_iter`` iterations end without the stopping rule holding.

    Notes
    -----
    *Step-size rules.*  All test the sufficient-decrease (majorisation)
    condition of Beck & Teboulle (their Lemma 2.3), which is FSMRank's
    line-search test,

    .. math::

        f(w_k) \le f(z_k) + \nabla f(z_k)^T (w_k - z_k)
                  + \tfrac{L}{2} \|w_k - z_k\|^2 ,

    (up to a rounding allowance of ``LS_RTOL * max(|f(z_k)|, |f(w_k)|)``)
    and, when it fails, set ``L <- eta L`` and recompute ``w_k``.  ``L`` is
    never decreased, so ``L_k <= eta L_f`` once it has started below the
    true constant ``L_f``, and ``F(w_k) - F^* <= 2 L_k ||w_0 - w^*||^2 /
    (k + 1)^2`` (Beck & Teboulle, Theorem 4.4, with ``L_k`` the value used
    at iteration ``k``).

    * ``"backtracking"``: Beck & Teboulle's backtracking from ``L0``.
    * ``"nemirovski"``: FSMRank, Algorithm 1 (Nesterov's method with
      "Nemirovski's line search", as the term is used by Liu, Chen & Ye 2009
      and their SLEP package): start from ``L = L0 / gamma**10`` with
      ``L0`` an *upper* bound (Theorem 1) and ``gamma = eta``, multiply by
      ``gamma`` on failure, keep ``L`` across iterations (non-decreasing).
      The paper's listing is exactly this; it does not start each
      iteration from ``L / gamma`` (that is the "adaptive" line search of
      Nesterov 2007 / SLEP's ``lFlag=1``, not implemented here).  Since
      ``L0`` bounds ``L_f``, at most 10 doublings beyond the start are
      ever needed, and Theorem 2's rate ``2 L0 ||w_0 - w^*||^2/(t+1)^2``
      holds with ``L0`` itself: the trial values ``L0 * gamma**(j - 10)``
      reach ``L0`` after ten failures, so the accepted ``L_k`` never
      exceeds ``L0`` (book, chapter 4).
    * ``"fixed"``: ``L = L0`` throughout, no test; ``L0`` must bound the
      Lipschitz constant of ``grad f``.
    * ``"adaptive"``: FISTA-BKTR of Scheinberg, Goldfarb & Bai (2014),
      backtracking that can also *decrease* ``L``: iteration ``k`` first
      tries ``L_{k-1} / eta`` (after ``ADAPTIVE_STREAK`` iterations in a
      row accepted at their first trial, else ``L_{k-1}``), and the
      momentum follows the trial ``L``,

      .. math::

          t_k = \tfrac12\bigl(1 + \sqrt{1 + 4 \theta_k t_{k-1}^2}\bigr),
          \quad \theta_k = L_k / L_{k-1},

          z_k = w_{k-1} + \tfrac{t_{k-1} - 1}{t_k} (w_{k-1} - w_{k-2}),

      so each rejected trial moves ``z_k`` and costs a gradient there.
      This keeps ``t_k^2 / L_k = t_k / L_k + t_{k-1}^2 / L_{k-1}``, whence
      ``F(w_k) - F^* <= ||w_0 - w^*||^2 / (2 t_k^2 / L_k) <= 2 ||w_0 -
      w^*||^2 / (sum_{i<=k} L_i^{-1/2} + L_1^{-1/2})^2``: the ``O(1/k^2)``
      rate with a mean of the local ``1/sqrt(L_i)`` in place of the
      largest ``L`` (the bound their analysis gives, by induction on the
      recursion; derived in the book), whatever the rule choosing the
      first trial.

    *Cost.*  One ``fun`` + ``grad`` at ``z_k`` and one ``fun`` per trial
    ``w_k``; when ``z_{k+1} = w_k`` (ISTA, a restart, ``k = 1``) the value
    at ``w_k`` is reused and only ``grad`` is called.
    """
    check_choice(line_search, "line_search", LINE_SEARCHES)
    check_choice(restart, "restart", RESTARTS)
    check_choice(stop, "stop", STOPS)
    eta = float(eta)
    if not (eta > 1 and math.isfinite(eta)):
        raise ValueError(f"eta must be finite and > 1, got {eta!r}")
    max_iter, tol = check_budget(max_iter, tol)
    if gmap_ref is not None:
        try:
            gmap_ref = float(gmap_ref)
        except (TypeError, ValueError):
            raise ValueError(f"gmap_ref must be a real number, got {gmap_ref!r}") from None
        if not (gmap_ref > 0 and math.isfinite(gmap_ref)):
            raise ValueError(f"gmap_ref must be finite and > 0, got {gmap_ref!r}")
    if L0 is not None:
        L0 = float(L0)
        if L0 == math.inf:
            # typically computed by the caller from the data (lipschitz_bound)
            _check_finite(L0, "the Lipschitz constant L0", smooth)
        if not (L0 > 0 and math.isfinite(L0)):
            raise ValueError(f"L0 must be finite and > 0, got {L0!r}")

    start = time.perf_counter()
    n = int(smooth.n_features)
    w = initial_point(w0, n, "APG", smooth)
    g_w0 = float(penalty.value(w))
    if not math.isfinite(g_w0):
        raise ValueError("w0 is outside the domain of the penalty (value inf)")

    f_w = float(smooth.fun(w))
    _check_finite(f_w, "f(w0)", smooth)
    n_fun = 1
    F = f_w + g_w0

    # initial L
    bound = getattr(smooth, "lipschitz_bound", None)
    if line_search == "fixed":
        if L0 is None:
            if bound is None:
                raise ValueError(
                    "line_search='fixed' needs L0 (a Lipschitz constant of "
                    "grad f) or a smooth object with lipschitz_bound()"
                )
            L0 = _check_finite(float(bound()), "the Lipschitz bound L0", smooth)
        L = L0
    elif line_search == "nemirovski":
        if L0 is None and bound is not None:
            L0 = _check_finite(float(bound()), "the Lipschitz bound L0", smooth)
        if L0 is None:
            g0 = np.asarray(smooth.grad(w), dtype=np.float64)
            L, extra = _initial_L(smooth, w, f_w, g0)
            n_fun += extra
        else:
            L = L0 / eta**NEMIROVSKI_EXPONENT
    else:
        if L0 is None:
            g0 = np.asarray(smooth.grad(w), dtype=np.float64)
            L, extra = _initial_L(smooth, w, f_w, g0)
            n_fun += extra
        else:
            L = L0

    history = {key: [] for key in _HISTORY_KEYS}

    def record(F, L, gmap, restarted):
        for key, value in zip(_HISTORY_KEYS, (F, L, gmap, n_fun, restarted,
                                               time.perf_counter() - start)):
            history[key].append(value)

    record(F, L, math.nan, False)

    z = w                     # search point z_1 = w_0
    z_is_w = True             # smooth's cached state is at z (== w)
    alpha = 1.0
    w_old = w                 # w_{k-2} of the adaptive rule's extrapolation
    fresh = True              # adaptive: this iteration has t_k = 1, z_k = w_{k-1}
    g_w = None                # grad f(w_{k-1}), once per iteration (adaptive)
    streak = ADAPTIVE_STREAK  # iterations since the last rejected trial
    gmap0 = gmap_ref
    converged = False
    message = ""
    n_iter = 0
    crit = math.nan
    while n_iter < max_iter:
        n_iter += 1
        if line_search == "adaptive":
            # Scheinberg, Goldfarb & Bai (2014), FISTA-BKTR: try L_{k-1}/eta
            # first; the momentum t_k depends on the trial L through theta.
            L_prev = L
            if n_iter > 1 and streak >= ADAPTIVE_STREAK:
                L = L_prev / eta
            first_trial = True
            while True:
                if fresh:       # t_k = 1, z_k = w_{k-1}: k = 1, after a restart, ISTA
                    alpha_new, beta = 1.0, 0.0
                else:
                    theta = L / L_prev
                    alpha_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * alpha * alpha))
                    beta = (alpha - 1.0) / alpha_new
                if beta == 0.0:
                    z, f_z = w, f_w
                    if g_w is None:
                        # beta = 0 iff t_{k-1} = 1, whatever the trial L: the
                        # first trial, with the cache still at w, gets here
                        g_w = np.asarray(smooth.grad(w), dtype=np.float64)
                        _check_finite(g_w, "the gradient at the search point", smooth)
                    g_z = g_w
                else:
                    z = w + beta * (w - w_old)
                    f_z = float(smooth.fun(z))
                    n_fun += 1
                    g_z = np.asarray(smooth.grad(z), dtype=np.float64)
                    _check_finite(f_z, "f at the search point", smooth)
                    _check_finite(g_z, "the gradient at the search point", smooth)
                w_new = np.asarray(penalty.prox(z - g_z / L, 1.0 / L), dtype=np.float64)
                d = w_new - z
                _check_finite(w_new, "the proximal step", smooth)
                dd = float(d @ d)
                f_new = float(smooth.fun(w_new))
                n_fun += 1
                _check_finite(f_new, "f at a trial point", smooth)
                if dd == 0.0:
                    break
                excess = f_new - f_z - float(g_z @ d) - 0.5 * L * dd
                allowance = LS_RTOL * max(abs(f_z), abs(f_new))
                # a smaller L only on evidence beyond rounding: near the optimum
                # the test is at rounding level for any L and would let L (and
                # the certificate L ||w - z||) drift down
                if excess <= (allowance if L >= L_prev else -allowance):
                    break
                L *= eta
                first_trial = False
                if L > L_MAX:
                    raise NonFiniteError(nonfinite_message(
                        "APG", "the step-size constant L", L, smooth,
                        f"(the line search pushed it above {L_MAX:.0e}; is grad f "
                        "Lipschitz?)"))
            streak = streak + 1 if first_trial else 0
            alpha = alpha_new
        else:
            if z_is_w:
                f_z = f_w
            else:
                f_z = float(smooth.fun(z))
                n_fun += 1
            g_z = np.asarray(smooth.grad(z), dtype=np.float64)
            _check_finite(f_z, "f at the search point", smooth)
            _check_finite(g_z, "the gradient at the search point", smooth)

            while True:
                w_new = np.asarray(penalty.prox(z - g_z / L, 1.0 / L), dtype=np.float64)
                d = w_new - z
                _check_finite(w_new, "the proximal step", smooth)
                dd = float(d @ d)
                f_new = float(smooth.fun(w_new))
                n_fun += 1
                _check_finite(f_new, "f at a trial point", smooth)
                if line_search == "fixed" or dd == 0.0:
                    break
                excess = f_new - f_z - float(g_z @ d) - 0.5 * L * dd
                if excess <= LS_RTOL * max(abs(f_z), abs(f_new)):
                    break
                L *= eta
                if L > L_MAX:
                    raise NonFiniteError(nonfinite_message(
                        "APG", "the step-size constant L", L, smooth,
                        f"(the line search pushed it above {L_MAX:.0e}; is grad f "
                        "Lipschitz?)"))

        F_new = f_new + float(penalty.value(w_new))
        _check_finite(F_new, "the objective F = f + g at the new iterate", smooth)
        # ||d|| without overflow of d.d, which may be inf for a finite step
        gmap = L * (math.sqrt(dd) if math.isfinite(dd) else safe_norm(d))
        _check_finite(gmap, "the gradient-mapping norm L ||w_new - z||", smooth)
        if gmap0 is None:
            gmap0 = gmap

        restarted = False
        if accelerated and restart == "function":
            restarted = F_new > F
        elif accelerated and restart == "gradient":
            restarted = float((z - w_new) @ (w_new - w)) > 0

        if stop == "relative_change":
            crit = abs(F_new - F) / abs(F) if F != 0 else (0.0 if F_new == F else math.inf)
            done = abs(F_new - F) <= tol * abs(F)
        else:
            crit = gmap / gmap0 if gmap0 > 0 else 0.0
            done = gmap <= tol * gmap0

        if line_search == "adaptive":
            # z_{k+1} is built in the next iteration, from its trial L
            fresh = not accelerated or restarted
            w_old = w
            alpha_next, z_next, g_w = alpha, w_new, None
        elif not accelerated or restarted:
            alpha_next = 1.0
            z_next = w_new
        else:
            alpha_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * alpha * alpha))
            beta = (alpha - 1.0) / alpha_next
            z_next = w_new if beta == 0.0 else w_new + beta * (w_new - w)
        w, f_w, F = w_new, f_new, F_new
        z, alpha = z_next, alpha_next
        z_is_w = z is w
        record(F, L, gmap, restarted)
        if callback is not None:
            callback(w.copy(), {"iter": n_iter, "F": F, "L": L, "gmap": gmap,
                                "restart": restarted})
        if done:
            converged = True
            if stop == "relative_change":
                message = (f"relative change |F_k - F_k-1| / |F_k-1| = {crit:.3e} "
                           f"<= tol = {tol:.1e}")
            else:
                message = (f"gradient mapping ||G(z_k)|| / ||G(w_0)|| = {crit:.3e} "
                           f"<= tol = {tol:.1e}")
            break

    if not converged:
        name = ("relative change |F_k - F_k-1| / |F_k-1|" if stop == "relative_change"
                else "gradient mapping ||G(z_k)|| / ||G(w_0)||")
        message = f"max_iter = {max_iter} reached: {name} = {crit:.3e} > tol = {tol:.1e}"
        if max_iter > 0:
            warnings.warn(
                f"APG did not converge: {message}; increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
    return SolverResult(w=w, n_iter=n_iter, converged=converged,
                        history=history, message=message)
