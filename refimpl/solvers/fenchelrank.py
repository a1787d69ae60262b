r"""FenchelRank: a greedy primal-dual solver for l1-constrained ranking.

Lai, Pan, Liu, Lin & Yin (2013), "Sparse learning-to-rank via an efficient
primal-dual algorithm", IEEE Trans. Computers 62(6), sections 4-6.  The
problem (their eq. 4) is

.. math::

    \min_{\|w\|_1 \le 1} G(w), \qquad
    G(w) = \frac{r^2}{p} \sum_{(i, j) \in P}
           \max\bigl(0, \tfrac1r - w^T (x_i - x_j)\bigr)^2 ,

the rescaling ``w = w' / r`` of the l1-ball problem (3) with radius ``r``.
With the loss object ``L = PairwiseSquaredHinge(X, y, qid, margin=1/r,
normalize=True)`` (the mean over ``P``) this is ``G = r^2 L``, so the solver
needs nothing but ``L.fun``, ``L.grad`` and ``L.hess_vec``.

The paper's pair set lists every unordered pair of differently-labelled
documents with a sign ``y_kij`` (section 3), i.e. both ``(i, j)`` and
``(j, i)`` give the same row ``y_kij (x_i - x_j)``; each row then appears
twice and ``p`` doubles, so the per-pair mean -- and everything below -- is
the same as over our ``P = {(i, j) : y_i > y_j}``.

Derived in: book/03_fenchelrank_duality.md#fenchelrank
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels import fenchel as _k
from ._checks import check_budget, check_choice, check_fenchel_loss
from ._finite import check_finite
from ._result import SolverResult

#: Step-size rules of :func:`fenchelrank` (see its Notes).
STEPS = ("exact", "closed_form", "theory")

#: Line searches for ``step="exact"``.
LINESEARCHES = ("auto", "pairs", "newton")

_HISTORY_KEYS = ("D", "P", "gap", "mu", "j", "nnz", "ls_eval", "time")


def newton_linesearch(dphi, d2phi, dphi0, d2phi0, *, rtol=1e-12, xtol=1e-14,
                      max_eval=100):
    r"""Minimise a convex piecewise quadratic ``phi`` on [0, 1] by safeguarded Newton.

    ``phi`` is known only through ``dphi(mu) -> phi'(mu)`` and
    ``d2phi() -> phi''`` at the point of the last ``dphi`` call (the
    generalised second derivative: the slope of the piecewise-linear
    ``phi'`` on the piece containing that point) -- the ``fun``/``grad``
    then ``hess_vec`` contract of the losses, so ``d2phi`` is only called
    when a Newton step needs it.  A bracket ``[lo, hi]`` with
    ``phi'(lo) < 0`` is kept; a Newton point outside it is replaced by
    ``hi = 1`` while the sign of ``phi'(1)`` is unknown, and by the midpoint
    afterwards.  Inside the piece holding the root a Newton step is exact,
    so the method ends after finitely many steps.

    Stopping rule, at an evaluated point ``mu``:
    ``|phi'(mu)| <= rtol |phi'(0)|``, or Newton correction
    ``|phi'(mu)| / phi''(mu) <= xtol`` (then the corrected point is
    returned), or bracket width ``hi - lo <= xtol``; ``mu = 1`` is returned
    as soon as ``phi'(1) <= 0``.

    Parameters
    ----------
    dphi : callable
        ``dphi(mu) -> phi'(mu)``.
    d2phi : callable
        ``d2phi() -> phi''`` at the last point passed to ``dphi``.
    dphi0, d2phi0 : float
        ``phi'(0)`` and ``phi''(0)`` (known to the caller for free).
    rtol, xtol : float
        Tolerances above.
    max_eval : int
        Cap on calls of ``dphi``.

    Returns
    -------
    mu : float
        A minimiser of ``phi`` on [0, 1] (0 when ``phi'(0) >= 0``).
    n_eval : int
        Number of calls of ``dphi``.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    if not dphi0 < 0:
        return 0.0, 0
    scale = -dphi0
    lo, hi, hi_known = 0.0, 1.0, False
    mu, d, h = 0.0, float(dphi0), float(d2phi0)
    n_eval = 0
    while n_eval < max_eval:
        cand = mu - d / h if h > 0 else math.inf
        if not lo < cand < hi:
            cand = 0.5 * (lo + hi) if hi_known else hi
        dc = float(dphi(cand))
        n_eval += 1
        if cand == 1.0 and dc <= 0:
            return 1.0, n_eval
        if dc < 0:
            lo = cand
        else:
            hi, hi_known = cand, True
        if abs(dc) <= rtol * scale:
            return cand, n_eval
        hc = float(d2phi())
        if hc > 0 and abs(dc) <= xtol * hc:
            return min(max(cand - dc / hc, lo), hi), n_eval
        if hi_known and hi - lo <= xtol:
            return 0.5 * (lo + hi), n_eval
        mu, d, h = cand, dc, hc
    return 0.5 * (lo + hi), n_eval


def fenchelrank(loss, r, *, tol=1e-3, max_iter=1000, step="exact",
                linesearch="auto", callback=None):
    r"""Solve eq. 4 by FenchelRank (Lai et al. 2013, Algorithm 1).

    Starting from ``w_1 = 0``, each iteration forms the dual point and the
    gradient of eq. 12,

    .. math::

        d_t = \tfrac{2r^2}{p} \max(0, \tfrac1r - K w_t), \qquad
        g_t = K^T d_t = -\nabla G(w_t) = -r^2 \nabla L(w_t),

    takes the greedy vertex ``s e_{j_t}``, ``j_t = argmax_j |g_t|_j``,
    ``s = sign(g_{t, j_t})`` (``sign(0) = +1``) and moves towards it:
    ``w_{t+1} = (1 - mu_t) w_t + mu_t s e_{j_t}`` (eq. 18), which keeps
    ``||w||_1 <= 1``.  FenchelRank is thus the Frank-Wolfe method on the l1
    ball, and its stopping criterion is the Frank-Wolfe gap.

    Stopping rule (eqs. 16-17): with ``D(w) = -G(w)`` and ``P`` of eq. 11,

    .. math::

        P(d_t) - D(w_t) = \|g_t\|_\infty + \langle d_t, -K w_t\rangle
                        = \|g_t\|_\infty - g_t^T w_t \le \mathrm{tol},

    which bounds ``G(w_t) - G^*`` (Theorem 2).  Since ``G(0) = 1``, ``tol``
    is relative to the objective at the start.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank

    Parameters
    ----------
    loss : PairwiseSquaredHinge
        Built with ``margin=1/r`` and ``normalize=True``, any backend; the
        solver uses only what :class:`refimpl.losses.PairwiseLineSearchObjective`
        names.
    r : float
        Radius of the l1 ball of eq. 3 (> 0).  The solution of eq. 3 is
        ``r * result.w``.
    tol : float, default=1e-3
        The ``epsilon`` of eq. 17.
    max_iter : int, default=1000
        The ``T`` of Algorithm 1: maximum number of updates.
    step : {"exact", "closed_form", "theory"}, default="exact"
        ``"exact"``: ``mu_t = argmax_{0 <= mu <= 1} D(w_t + mu b_t)``
        (eqs. 19-21); ``"closed_form"``: the rule after eq. 21, corrected
        (see Notes); ``"theory"``: ``mu_t = min(1, gap_t / (8 r^2))``, the
        step of the proof of Theorem 1 with the certified gap in place of
        the unknown ``epsilon_t``.
    linesearch : {"auto", "pairs", "newton"}, default="auto"
        How ``step="exact"`` minimises eq. 20.  ``"pairs"``: the sorted
        breakpoints of eqs. 20-21 on explicit per-pair arrays,
        O(p log p) (needs ``loss.pair_indices()``); ``"newton"``: safeguarded Newton
        on ``L(w_t + mu b_t)`` through ``fun``/``grad``/``hess_vec`` only,
        so it works with the pair-free tree backend; ``"auto"``: ``"pairs"``
        when the loss holds explicit pairs, else ``"newton"``.
    callback : callable, optional
        ``callback(w, info)`` after every update, ``w`` a copy of the new
        iterate, ``info`` a dict with ``iter``, ``D``, ``P``, ``gap``,
        ``mu``, ``j``.

    Returns
    -------
    SolverResult
        ``w`` in the unit l1 ball.  ``history`` has entry 0 for ``w_1 = 0``
        and entry ``k`` for the iterate after ``k`` updates: ``"D"``
        (``-G``), ``"P"`` (``D + gap``, eq. 11), ``"gap"`` (eq. 16),
        ``"mu"`` and ``"j"`` (step and feature of the update that produced
        the iterate; ``nan`` and ``-1`` at entry 0), ``"nnz"`` (non-zero
        weights), ``"ls_eval"`` (line-search evaluations of that update) and
        ``"time"``.

    Raises
    ------
    ValueError
        Bad ``r``, ``tol``, ``max_iter``, ``step`` or ``linesearch``, a loss
        not built for eq. 4, or ``linesearch="pairs"`` without explicit
        pairs.
    NonFiniteError
        (a ``FloatingPointError``) if the loss, its gradient, the duality
        gap, a line-search slope or curvature or the step becomes NaN or
        infinite, with the likely cause (the scale of the features) and the
        remedy.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        If ``max_iter`` updates end with ``gap > tol``.

    Notes
    -----
    *Exact step.*  With ``a = 1/r - K w_t`` and ``c = K b_t``,
    ``G(w_t + mu b_t) = (r^2/p) phi(mu)``,
    ``phi(mu) = sum_i max(0, a_i - mu c_i)^2`` (eq. 20); ``phi`` is a convex
    piecewise quadratic with ``phi'(0) = -(p/r^2) gap_t < 0``.  The
    sorted-breakpoint search returns its smallest minimiser on [0, 1],
    Newton a minimiser (the same one, up to rounding, when it is unique).

    With ``linesearch="newton"`` the last trial point is usually the new
    iterate itself; it is then taken as ``w_{t+1} = w_t + mu_t b_t`` (equal
    to eq. 18 up to rounding) and its value and gradient are reused, so the
    loss state stays that of ``fun`` at the current iterate.

    *Closed-form step.*  The paper prints
    ``mu_t = max(min(0, <d_t, K b_t> / ||K b_t||^2), 1)``, which is always 1
    (``min(0, .) <= 0``); the intended clipping is ``min(max(0, .), 1)``.  The
    scaling is also off: the rule of Shalev-Shwartz & Singer maximises the
    lower bound (28) on the dual increase,
    ``mu <d_t, K b_t> - (r^2/p) mu^2 ||K b_t||^2``, whose maximiser is

    .. math::

        \mu_t = \min\Bigl(1, \max\Bigl(0,
                \frac{\langle d_t, K b_t\rangle}{2 (r^2/p) \|K b_t\|^2}
                \Bigr)\Bigr),
        \qquad \langle d_t, K b_t\rangle = g_t^T b_t = \mathrm{gap}_t .

    It never decreases ``D``, and it equals the exact step when every pair
    with ``(K b_t)_i != 0`` stays active on ``[0, mu_t]`` (then (28) holds
    with equality).  ``||K b_t||^2`` is a sum over
    explicit pairs when the loss has them, otherwise ``b^T H_0 b / (2/p)``
    with ``H_0`` the Hessian at ``w = 0``, where every pair is active.

    *Theory step.*  Inequality (31) uses ``||K b_t||^2 <= 4 p``, true when
    the features lie in [0, 1] (then ``|K_ij| <= 1``); for other data the
    ``"theory"`` step can overshoot and decrease ``D``.

    Other slips of the paper: the first line of eq. 3 reads
    ``min_w (1/r) sum max(0, 1 - ...)^2`` where
    ``min_{||w'||_1 <= r} (1/p) sum max(0, 1 - ...)^2`` (its second line)
    is meant; section 5.3 defines ``f^*(theta) = (r^2/p) max(0, 1 +
    theta)^2`` where ``sum_i (r^2/p) max(0, 1/r + theta_i)^2`` is meant
    (Lemma 3 uses the latter); Algorithm 1, line 4, writes ``mu_t`` for the
    free variable ``mu`` inside its argmax; section 4 gives the subgradient
    method the same O(1/eps) rate as FenchelRank where O(1/eps^2) is meant;
    the step ``mu_t = eps_t / (8 r^2)`` of the proof of Theorem 1 is not
    computable (``eps_t`` involves ``G^*``), hence the gap in ``"theory"``.
    """
    r = check_fenchel_loss(loss, r)
    max_iter, tol = check_budget(max_iter, tol)
    check_choice(step, "step", STEPS)
    check_choice(linesearch, "linesearch", LINESEARCHES)
    pairs = loss.pair_indices()
    if linesearch == "auto":
        linesearch = "pairs" if pairs is not None else "newton"
    if linesearch == "pairs" and pairs is None:
        raise ValueError(
            "linesearch='pairs' needs explicit pair arrays (loss.pair_indices()), "
            f"but the loss uses backend {getattr(loss, 'backend', '?')!r}: use "
            "linesearch='newton' or 'auto'"
        )

    start = time.perf_counter()
    r2 = r * r
    n = int(loss.n_features)
    margin = float(loss.margin)
    if pairs is not None:
        pi, pj = pairs
        a_buf = np.empty(len(pi))
        kb_buf = np.empty(len(pi))
        p = len(pi)
    else:
        p = int(loss.n_pairs)
    kb_norm2 = None
    if step == "closed_form":
        if pairs is not None:
            def kb_norm2(b):
                return float(_k.sum_squares_diff(loss.scores(b), pi, pj))
        else:
            kb_norm2 = loss.pair_norm2_operator()

    w = np.zeros(n)
    history = {key: [] for key in _HISTORY_KEYS}
    mu_last, j_last, n_ls = math.nan, -1, 0
    n_iter = 0
    converged = False
    last = None   # (w, L(w), grad L(w)) of the last Newton trial point
    while True:
        if last is not None and last[0] is w:
            # the final trial point of the Newton search is w_{t+1} itself:
            # the loss state is already there, reuse its value and gradient
            _, Lw, gL = last
        else:
            Lw = float(loss.fun(w))
            gL = np.asarray(loss.grad(w), dtype=np.float64)
        last = None
        check_finite(Lw, "FenchelRank", "the loss L(w)", loss)
        check_finite(gL, "FenchelRank", "the gradient of the loss", loss)
        g = -r2 * gL                                   # g_t = K^T d_t
        j, s = _k.greedy_coordinate(g)
        gap = abs(g[j]) - float(g @ w)                 # eq. 16
        # a NaN gap fails `gap <= tol` and would run to max_iter; an
        # infinite one can never certify anything
        check_finite(gap, "FenchelRank", "the duality gap (eq. 16)", loss)
        D = -r2 * Lw
        values = (D, D + gap, gap, mu_last, j_last, int(np.count_nonzero(w)),
                  n_ls, time.perf_counter() - start)
        for key, value in zip(_HISTORY_KEYS, values):
            history[key].append(value)
        if callback is not None and n_iter > 0:
            callback(w.copy(), {"iter": n_iter, "D": D, "P": D + gap,
                                "gap": gap, "mu": mu_last, "j": j_last})
        if gap <= tol:
            converged = True
            message = f"eq. 17 holds: gap = {gap:.3e} <= tol = {tol:.1e}"
            break
        if n_iter >= max_iter:
            message = f"max_iter = {max_iter} reached: gap = {gap:.3e} > tol = {tol:.1e}"
            warnings.warn(
                f"FenchelRank did not converge: {message}; increase max_iter "
                "or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
            break
        n_iter += 1
        b = -w
        b[j] += s                                      # b_t = s e_j - w_t
        n_ls = 0
        if step == "theory":
            mu = min(1.0, gap / (8.0 * r2))
        elif step == "closed_form":
            kb2 = check_finite(float(kb_norm2(b)), "FenchelRank",
                               "||K b||^2 of the closed-form step", loss)
            mu = 1.0 if kb2 <= 0 else min(1.0, max(0.0, gap * p / (2.0 * r2 * kb2)))
        elif linesearch == "pairs":
            _k.pair_residuals(loss.scores(w), loss.scores(b), pi, pj, margin,
                              a_buf, kb_buf)
            # the kernel's curvature sum_P (K b)^2 overflows silently (to a
            # step of 0 and a run that stalls at max_iter): check it here
            check_finite(float(kb_buf @ kb_buf), "FenchelRank",
                         "the line-search curvature ||K b||^2", loss)
            mu = float(_k.linesearch_pairs(a_buf, kb_buf))
            n_ls = 1
        else:
            # psi(mu) = L(w + mu b) = phi(mu) / p; state of fun(w) is current
            trial = {}

            def dpsi(m, w=w, b=b, trial=trial):
                wt = w + m * b
                value = float(loss.fun(wt))
                grad = np.asarray(loss.grad(wt), dtype=np.float64)
                trial.update(m=m, w=wt, value=value, grad=grad)
                return check_finite(float(grad @ b), "FenchelRank",
                                    "the line-search slope psi'(mu)", loss)

            def d2psi(b=b):
                return check_finite(float(b @ loss.hess_vec(b)), "FenchelRank",
                                    "the line-search curvature psi''(mu)", loss)

            mu, n_ls = newton_linesearch(dpsi, d2psi, -gap / r2, d2psi())
            if trial and trial["m"] == mu:
                last = (trial["w"], trial["value"], trial["grad"])
        check_finite(mu, "FenchelRank", "the step mu", loss)
        if last is not None:
            w = last[0]                                # w_t + mu_t b_t
        else:
            w = (1.0 - mu) * w
            w[j] += mu * s                             # eq. 18
        mu_last, j_last = mu, j

    return SolverResult(w=w, n_iter=n_iter, converged=converged,
                        history=history, message=message)
