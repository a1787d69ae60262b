r"""FenchelRank: a greedy primal-dual solver for l1-constrained ranking.

Lai, Pan, Liu, Lin & Yin (2013), "Sparse learning-to-rank via an efficient
primal-dual algorithm", IEEE Trans. Computers 62(6), sections 4-6.  The
problem (their eq. 4) is

.. math::

    \min_{\|w\|_1 \le 1} G(w), \qquad
    G(w) = \frac{r^2}{p} \sum_{(i, j) \in \mathcal P}
           \max\bigl(0, \tfrac1r - w^T (x_i - x_j)\bigr)^2 ,

the rescaling ``w = w' / r`` of the l1-ball problem (3) with radius ``r``.
With the loss object ``ell = PairwiseSquaredHinge(X, y, qid, margin=1/r,
normalize=True)`` (the mean over the pair set) this is ``G = r^2 ell``, so the
solver needs nothing but ``ell.fun``, ``ell.grad`` and ``ell.hess_vec``.
``G`` is the book's primal objective ``P`` on the unit ball (chapter 3,
eqs. (3.4)-(3.5)).

The paper's pair set lists every unordered pair of differently-labelled
documents with a sign ``y_kij`` (section 3), i.e. both ``(i, j)`` and
``(j, i)`` give the same row ``y_kij (x_i - x_j)``; each row then appears
twice and ``p`` doubles, so the per-pair mean -- and everything below -- is
the same as over the book's pair set ``{(i, j) : q_i = q_j, y_i > y_j}``.

Derived in: book/03_fenchelrank_duality.md#fenchelrank
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels import fenchel as _k
from ..losses import capability
from ._checks import check_budget, check_choice, check_fenchel_loss
from ._finite import check_finite
from ._result import SolverResult

#: Step-size rules of :func:`fenchelrank` (see its Notes).
STEPS = ("exact", "closed_form", "theory")

#: Line searches for ``step="exact"``.
LINESEARCHES = ("auto", "blocks", "pairs", "newton")

#: Variants of :func:`fenchelrank`: the paper's Algorithm 1 (Frank-Wolfe),
#: the pairwise and away-step Frank-Wolfe methods on the same l1 ball, and
#: pairwise steps with Newton steps on the face, all with the same stopping
#: rule (see its Notes).
VARIANTS = ("paper", "pairwise", "away", "face_newton")

#: Iterations between two recomputations of the scores ``X w`` that the
#: fast variants otherwise update in place (bounds the drift of rounding).
REFRESH_EVERY = 256

_HISTORY_KEYS = ("obj", "dual", "gap", "step", "j", "nnz", "ls_eval", "time")

#: FenchelRank's ``backend="auto"``: the work of one update, counted per
#: backend.  On the label blocks (``line_search="blocks"``, explicit pairs)
#: one streaming pass over the ``p`` pairs for the value and score gradient
#: and one for the exact step's breakpoints: ``O(p)``.  On the tree
#: (``refimpl.losses._score_space.TreeScoreSpace``) a sort of each query's scores and a tree sweep
#: for each of the Newton line search's 3-6 evaluations:
#: ``O(sum_q l_q log2 l_q)``.  Both make one pass over ``X`` for the
#: gradient, which cancels.  A pair costs a few nanoseconds of arithmetic, a
#: sorted document tens of scattered accesses; measured, one unit of
#: ``sum_q l_q log2 l_q`` costs what :data:`TREE_PAIRS_PER_SORT_UNIT` pairs
#: cost, so the crossover is at ``p / l = 9 log2 l_q``, between the shapes
#: measured side by side (1,000-update fits, r = 2 and 64): OHSUMED Fold 3,
#: 35 pairs a document, ``log2 l_q = 7.2``: blocks 3.2x faster; MQ2008
#: Fold 1, 5 and 4.3: blocks 4-7x; synthetic 50 and 100 documents a query,
#: 18 and 38 pairs a document: blocks 2-2.8x; 200 documents a query in 16
#: levels, 78 pairs a document, ``log2 l_q = 7.9``: the tree 1.0-1.9x;
#: 1,000 documents a query, 343 pairs a document: the tree 1.8-3.8x
#: (``benchmarks/bench_defaults.py`` times the defaults).  The loss's own rule
#: (:func:`refimpl.losses.squared_hinge.choose_backend`) weighs TRON's work
#: -- ten values and gradients and fifty Hessian products against one pair
#: set-up -- and picked the tree at OHSUMED's shape, 3-7x slower per
#: update; it is not FenchelRank's work, so FenchelRank does not ask it.
TREE_PAIRS_PER_SORT_UNIT = 9.0

#: From this many pairs always the tree: at 301,916 x 136 with 14.0 M pairs
#: the blocks path takes about 5x a value+gradient pass per update (``X``
#: beyond the cache, its columns strided), the tree path 2-3x
#: (``benchmarks/bench_fenchelrank.py --scale``), and the pair arrays take
#: hundreds of megabytes.
AUTO_TREE_MIN_PAIRS = 2**22


def _finish(converged, gap, tol, max_iter, who="FenchelRank", stacklevel=2):
    """The stopping message of every path, and the budget's warning.

    ``converged``: eq. 17 certified ``gap <= tol``; otherwise the budget
    ``max_iter`` is spent and a ``ConvergenceWarning`` names the solver
    ``who`` (``stacklevel`` counts from the caller, as in ``warnings.warn``).
    """
    if converged:
        return f"eq. 17 holds: gap = {gap:.3e} <= tol = {tol:.1e}"
    message = f"max_iter = {max_iter} reached: gap = {gap:.3e} > tol = {tol:.1e}"
    warnings.warn(f"{who} did not converge: {message}; increase max_iter or tol",
                  ConvergenceWarning, stacklevel=stacklevel + 1)
    return message


def _record(history, callback, w, n_iter, values):
    """Append one row of ``_HISTORY_KEYS`` and report it to ``callback``."""
    for key, value in zip(_HISTORY_KEYS, values):
        history[key].append(value)
    if callback is not None and n_iter > 0:
        callback(w.copy(), {"iter": n_iter,
                            **dict(zip(_HISTORY_KEYS[:5], values[:5]))})


def sort_work(query_sizes):
    """``sum_q l_q log2 l_q``: the tree's work per line-search evaluation."""
    l_q = np.asarray(query_sizes, dtype=np.float64)
    l_q = l_q[l_q > 1]
    return float(np.sum(l_q * np.log2(l_q)))


def auto_backend(n_pairs, n_samples, which="all", *, sort_units=None):
    """The loss backend FenchelRank's ``backend="auto"`` asks for.

    ``"tree"`` (all pairs only) from ``AUTO_TREE_MIN_PAIRS`` pairs on, or
    when the pairs outweigh the tree's sorts,
    ``n_pairs > TREE_PAIRS_PER_SORT_UNIT * sort_units`` with ``sort_units
    = sum_q l_q log2 l_q`` (:func:`sort_work`; see
    :data:`TREE_PAIRS_PER_SORT_UNIT` for the count of each backend's work
    per update); ``"pairs"`` (the label blocks) otherwise.  Without
    ``sort_units`` only the first test applies.  ``n_samples`` is accepted
    for the callers' convenience (unused).
    """
    del n_samples
    if which != "all":
        return "pairs"
    if int(n_pairs) >= AUTO_TREE_MIN_PAIRS:
        return "tree"
    if sort_units is not None and n_pairs > TREE_PAIRS_PER_SORT_UNIT * sort_units:
        return "tree"
    return "pairs"


def newton_linesearch(dphi, d2phi, dphi0, d2phi0, *, rtol=1e-12, xtol=1e-14,
                      max_eval=100):
    r"""Minimise a convex piecewise quadratic ``phi`` on [0, 1] by safeguarded Newton.

    ``phi`` is known only through ``dphi(tau) -> phi'(tau)`` and
    ``d2phi() -> phi''`` at the point of the last ``dphi`` call (the
    generalised second derivative: the slope of the piecewise-linear
    ``phi'`` on the piece containing that point) -- the ``fun``/``grad``
    then ``hess_vec`` contract of the losses, so ``d2phi`` is only called
    when a Newton step needs it.  A bracket ``[lo, hi]`` with
    ``phi'(lo) < 0`` is kept; a Newton point outside it is replaced by
    ``hi = 1`` while the sign of ``phi'(1)`` is unknown, and by the midpoint
    afterwards.  Inside the piece holding the root a Newton step is exact,
    so the method ends after finitely many steps.

    Stopping rule, at an evaluated point ``tau``:
    ``|phi'(tau)| <= rtol |phi'(0)|``, or Newton correction
    ``|phi'(tau)| / phi''(tau) <= xtol`` (then the corrected point is
    returned), or bracket width ``hi - lo <= xtol``; ``tau = 1`` is returned
    as soon as ``phi'(1) <= 0``.

    Parameters
    ----------
    dphi : callable
        ``dphi(tau) -> phi'(tau)``.
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
    tau : float
        A minimiser of ``phi`` on [0, 1] (0 when ``phi'(0) >= 0``).
    n_eval : int
        Number of calls of ``dphi``.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    if not dphi0 < 0:
        return 0.0, 0
    scale = -dphi0
    lo, hi, hi_known = 0.0, 1.0, False
    tau, d, h = 0.0, float(dphi0), float(d2phi0)
    n_eval = 0
    while n_eval < max_eval:
        cand = tau - d / h if h > 0 else math.inf
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
        tau, d, h = cand, dc, hc
    return 0.5 * (lo + hi), n_eval


def fenchelrank(loss, r, *, tol=1e-3, max_iter=1000, step="exact",
                line_search="auto", callback=None, variant="paper"):
    r"""Solve eq. 4 by FenchelRank (Lai et al. 2013, Algorithm 1).

    Starting from ``w_1 = 0``, each iteration forms the dual point of
    eq. 12 (the paper's ``d_t``, the book's ``alpha_t``) and the gradient,

    .. math::

        \alpha_t = \tfrac{2r^2}{p} \max(0, \tfrac1r - K w_t), \qquad
        K^T \alpha_t = -\nabla G(w_t) = -r^2 \nabla \ell(w_t),

    with ``ell`` the loss object (the mean squared hinge at margin ``1/r``),
    takes the greedy vertex ``s e_{j_t}``,
    ``j_t = argmax_j |(K^T alpha_t)_j|``, ``s = sign((K^T alpha_t)_{j_t})``
    (``sign(0) = +1``) and moves towards it with the step ``tau_t``:
    ``w_{t+1} = (1 - tau_t) w_t + tau_t s e_{j_t}`` (eq. 18), which keeps
    ``||w||_1 <= 1``.  FenchelRank is thus the Frank-Wolfe method on the l1
    ball, and its stopping criterion is the Frank-Wolfe gap.

    Stopping rule (eqs. 16-17): with the book's primal ``P(w) = G(w)`` on
    the ball and dual ``D(alpha)`` (the paper's eq. 11 names them the other
    way round: its dual is ``-G(w)``, its primal ``P(d) = -D(alpha)``),

    .. math::

        P(w_t) - D(\alpha_t) = \|K^T\alpha_t\|_\infty
                               - \langle K^T\alpha_t, w_t\rangle
                             \le \mathrm{tol},

    which bounds ``G(w_t) - G^*`` (Theorem 2).  Since ``G(0) = 1``, ``tol``
    is relative to the objective at the start.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank

    Parameters
    ----------
    loss : SmoothObjective
        ``ell`` of eq. 4: a :class:`~refimpl.losses.PairwiseSquaredHinge`
        built with ``margin=1/r`` and ``normalize=True``, any backend, or
        any convex :class:`~refimpl.losses.SmoothObjective` (then
        ``G = r^2 loss`` is minimised on the unit l1 ball).  The solver
        uses only ``fun``, ``grad``, ``hess_vec`` and, when the loss has
        them, the members of
        :class:`~refimpl.losses.PairwiseLineSearchObjective` (the
        ``"pairs"`` and ``"blocks"`` line searches and the closed-form step
        need them) and its ``score_space`` capability
        (``refimpl.losses.CAPABILITIES``; the fast variants and the tree
        backend carry the scores there); without them every step goes
        through ``fun``, ``grad`` and ``hess_vec``.
    r : float
        Radius of the l1 ball of eq. 3 (> 0).  The solution of eq. 3 is
        ``r * result.w``.
    tol : float, default=1e-3
        The ``epsilon`` of eq. 17.
    max_iter : int, default=1000
        The budget ``t_max`` of Algorithm 1: maximum number of updates.
    step : {"exact", "closed_form", "theory"}, default="exact"
        ``"exact"``: ``tau_t = argmin_{0 <= tau <= 1} G(w_t + tau b_t)``
        (eqs. 19-21, the paper's maximum of its dual ``-G``);
        ``"closed_form"``: the rule after eq. 21, corrected (see Notes); ``"theory"``: ``tau_t = min(1, gap_t / (8 r^2))``, the
        step of the proof of Theorem 1 with the certified gap in place of
        the unknown ``epsilon_t``.
    line_search : {"auto", "blocks", "pairs", "newton"}, default="auto"
        How ``step="exact"`` minimises eq. 20.  ``"pairs"``: the sorted
        breakpoints of eqs. 20-21 on explicit per-pair arrays,
        O(p log p) (needs ``loss.pair_indices()``); ``"blocks"``: the same
        iterates of Algorithm 1 without products with ``X`` in the update
        -- scores carried along the steps, the pairs enumerated per query
        from the loss's ``pair_blocks`` capability, the exact step in one pass that keeps
        only the breakpoints near the last step (see Notes; ``variant=
        "paper"``, dense ``X``, all pairs); ``"newton"``: safeguarded Newton
        on ``ell(w_t + tau b_t)``: with the selection-tree backend on the
        scores alone (see *Tree backend* in Notes), with any other loss
        through ``fun``/``grad``/``hess_vec`` only; ``"auto"``:
        ``"blocks"`` for the paper's variant with the exact step when the
        loss holds explicit pairs and has label blocks, else ``"pairs"``
        when it holds explicit pairs, else ``"newton"``.
    callback : callable, optional
        ``callback(w, info)`` after every update, ``w`` a copy of the new
        iterate, ``info`` a dict with ``iter`` and the history keys
        ``obj``, ``dual``, ``gap``, ``step``, ``j`` of that iterate.
    variant : {"paper", "pairwise", "away", "face_newton"}, default="paper"
        ``"paper"``: Algorithm 1 as printed (the Frank-Wolfe step towards
        ``s e_j``).  ``"pairwise"``: the pairwise Frank-Wolfe step, which
        moves weight from the worst vertex in use to ``s e_j``;
        ``"away"``: the away-step Frank-Wolfe method, which takes the better
        of the Frank-Wolfe step and a step away from that worst vertex
        (Lacoste-Julien & Jaggi 2015); ``"face_newton"``: the pairwise step
        when ``s e_j`` is not yet in use, otherwise a Newton step on the
        current face (the fastest).  These need ``step="exact"``; all four
        stop by the same certified gap, eq. 17.  See Notes.

    Returns
    -------
    SolverResult
        ``w`` in the unit l1 ball.  ``history`` has entry 0 for ``w_1 = 0``
        and entry ``k`` for the iterate after ``k`` updates, in the book's
        notation (chapter 3): ``"obj"`` (the primal objective
        ``P(w_t) = G(w_t)``, eqs. (3.4)-(3.5)), ``"dual"`` (the dual
        objective ``D(alpha_t)`` of eq. (3.5) at the dual point
        ``alpha_t`` of eq. (3.6), ``obj - gap``), ``"gap"`` (the duality
        gap ``P(w_t) - D(alpha_t) >= 0`` of eq. (3.7), the paper's eq. 16),
        ``"step"`` and ``"j"`` (the step ``tau_t`` of eq. (3.8) -- for the
        other variants the step length along their direction -- and the
        feature of the update that produced the iterate; ``nan`` and
        ``-1`` at entry 0), ``"nnz"`` (non-zero weights), ``"ls_eval"`` (line-search evaluations of that update) and
        ``"time"``.

    Raises
    ------
    ValueError
        Bad ``r``, ``tol``, ``max_iter``, ``step``, ``line_search`` or
        ``variant``, a loss not built for eq. 4, ``line_search="pairs"``
        without explicit pairs, or a fast variant with ``step`` other than
        ``"exact"``.
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
    ``G(w_t + tau b_t) = (r^2/p) phi(tau)``,
    ``phi(tau) = sum_i max(0, a_i - tau c_i)^2`` (eq. 20); ``phi`` is a convex
    piecewise quadratic with ``phi'(0) = -(p/r^2) gap_t < 0``.  The
    sorted-breakpoint search returns its smallest minimiser on [0, 1],
    Newton a minimiser (the same one, up to rounding, when it is unique).

    With ``line_search="newton"`` the last trial point is usually the new
    iterate itself; it is then taken as ``w_{t+1} = w_t + mu_t b_t`` (equal
    to eq. 18 up to rounding) and its value and gradient are reused, so the
    loss state stays that of ``fun`` at the current iterate.

    *Label blocks* (``line_search="blocks"``).  Laid out query by query,
    each query's documents by decreasing label, the pairs of a document
    ``i`` are a contiguous run of the layout (the rest of its query below
    its label, :func:`refimpl.pairs.label_blocks`), so a pass over ``P``
    needs no index arrays and runs in vector lanes
    (``refimpl.kernels._blocklanes``).  The scores ``z = X w`` follow
    eq. 18 as ``z + tau (s x_j - z)`` (recomputed every
    :data:`REFRESH_EVERY` updates, and before stopping, so that eq. 17 is
    tested at fresh scores); ``u = X b = s x_j - z`` needs one column of
    ``X``.  The exact step makes one pass that forms ``S_ac``, ``S_cc`` and
    keeps only the breakpoints below :data:`BLOCK_STEP_GROWTH` times the
    last step; when the root lies beyond them, or the crossed terms dwarf
    the running sums, the sorted-breakpoint search on explicit arrays
    decides (``refimpl.kernels.fenchel.block_iteration``).  The
    iterates are those of ``"pairs"`` up to rounding: on MQ2008 the same
    features in the same order in every fit of the runner's grid.

    *Closed-form step.*  The paper prints
    ``tau_t = max(min(0, <alpha_t, K b_t> / ||K b_t||^2), 1)``, which is
    always 1
    (``min(0, .) <= 0``); the intended clipping is ``min(max(0, .), 1)``.  The
    scaling is also off: the rule of Shalev-Shwartz & Singer maximises the
    lower bound (28) on the decrease of ``G`` (the paper's dual increase),
    ``tau <alpha_t, K b_t> - (r^2/p) tau^2 ||K b_t||^2``, whose maximiser is

    .. math::

        \tau_t = \min\Bigl(1, \max\Bigl(0,
                \frac{\langle \alpha_t, K b_t\rangle}{2 (r^2/p) \|K b_t\|^2}
                \Bigr)\Bigr),

    where :math:`\langle \alpha_t, K b_t\rangle = (K^T\alpha_t)^T b_t =
    \mathrm{gap}_t`.

    It never increases ``G``, and it equals the exact step when every pair
    with ``(K b_t)_i != 0`` stays active on ``[0, tau_t]`` (then (28) holds
    with equality).  ``||K b_t||^2`` is a sum over
    explicit pairs when the loss has them, otherwise ``b^T H_0 b / (2/p)``
    with ``H_0`` the Hessian at ``w = 0``, where every pair is active.

    *Theory step.*  Inequality (31) uses ``||K b_t||^2 <= 4 p``, true when
    the features lie in [0, 1] (then ``|K_ij| <= 1``); for other data the
    ``"theory"`` step can overshoot and increase ``G``.

    *Fast variants.*  The l1 ball is the convex hull of the ``2d`` signed
    vertices ``+-e_j``; the iterate is kept as a convex combination
    ``w = sum_v omega_v v + omega_0 0`` of the vertices in use (its *active
    set*) and the origin, which carries the slack ``1 - sum_v omega_v``.
    The away vertex ``v_t`` is the active one worst for the dual objective,
    ``argmin_{omega_v > 0} (K^T alpha_t)^T v`` (the origin scores 0).  The
    pairwise step moves weight ``tau`` in ``[0, omega_{v_t}]`` from ``v_t`` to the
    greedy vertex ``s e_j``: ``w + tau (s e_j - v_t)``, a direction with one
    or two non-zeros.  The away step takes ``w + tau (w - v_t)``,
    ``tau <= omega_v / (1 - omega_v)``, when ``(K^T alpha_t)^T (w - v_t)``
    exceeds the
    Frank-Wolfe gap, else the paper's step.  Both use the exact step on
    their segment, so ``G`` decreases monotonically, and a step that reaches
    the end of its segment drops ``v_t`` from the active set.  On a polytope
    away steps converge linearly for objectives of the form ``h(K w)``
    with ``h`` strongly convex (Lacoste-Julien & Jaggi 2015, Theorem 1;
    Beck & Shtern 2017); pairwise steps are only shown to make a fraction
    of good steps.  The squared hinge ``h`` of eq. 4 is not strongly convex,
    so no linear rate is claimed here: the fast variants are observed,
    not proved, to beat Algorithm 1, whose proved rate is O(1/t) (book,
    Theorem 3.2).

    ``"face_newton"`` takes the pairwise step only when the greedy vertex
    ``s e_j`` is not in the active set (it adds a feature).  Otherwise
    ``s e_j`` lies on the current face -- the support ``S`` of ``w`` with its
    signs, and ``||w||_1 = 1`` when the slack is 0 -- and the step is Newton's
    on that face: ``d_S = -H_SS^{-1} grad_S ell`` (``H`` the generalised
    Hessian, plus ``1e-12`` of its mean diagonal), projected on
    ``sigma^T d = 0`` when on the sphere and the unprojected ``d`` would
    leave it, cut by a ratio test at the first weight that reaches 0 or at
    the sphere (at most :data:`NEWTON_STEP_CAP` Newton lengths), and
    followed by the same exact line search; a weight that reaches 0 leaves
    the support.  Every step decreases ``G``; since ``G`` is piecewise
    quadratic, the Newton steps end a face's minimisation in a few steps once
    its active pairs settle.  ``H_SS`` costs ``|S|`` score-space Hessian
    products, so this variant suits the few dozen to hundreds of features of
    LETOR data.

    The stopping rule is eq. 17 computed exactly as in Algorithm 1:
    ``gap_t = ||K^T alpha_t||_inf - (K^T alpha_t)^T w_t`` bounds
    ``G(w_t) - G^*`` for *any*
    feasible ``w_t`` (Theorem 2 uses only ``||w_t||_1 <= 1``), so the
    variants certify the same thing.  With explicit pairs and the
    ``"pairs"`` line search they keep the scores ``z = X w`` and update them
    along the step (``X d`` is one or two columns of ``X`` for a pairwise
    step, ``X e_j - z`` or ``z - X v`` otherwise): O(l) per update, no
    ``X w`` product; ``z`` is recomputed every :data:`REFRESH_EVERY`
    updates, and a gap below ``tol`` is confirmed with ``loss.fun`` and
    ``loss.grad`` at ``w`` (fresh ``X w``) before the solver stops.  The
    gradient ``X^T dz`` is the one product per update.  Otherwise (a loss
    with neither pairs nor a tree state, ``line_search="newton"``) value,
    gradient and Newton line search go through the loss as in Algorithm 1.

    *Tree backend* (the loss's ``score_space`` capability without pairs; every
    variant, the paper's included, with the exact step and
    ``line_search="auto"`` or ``"newton"``).  The same scores carried along
    the steps, in the tree's row order; along a step the scores move as
    ``z + t u`` with ``u = X d`` (one or two columns of ``X``, or ``z``
    itself), so ``phi(t) = L(z + t u)`` is a convex piecewise quadratic
    whose slope ``dz(z + t u)^T u`` and curvature ``u^T H u`` cost one sweep
    of the order-statistic tree each (the sort started from the last
    order, O(l log l) at most), never a pass over ``X`` nor a pair array.
    :func:`newton_linesearch` needs about three of them; the tree's state
    then sits at the new iterate, so an update costs those sweeps plus one
    ``X^T dz`` (about 2-2.5 value+gradient passes at 301,916 x 136,
    ``benchmarks/bench_fenchelrank.py --scale``).  Where every pair is
    active (always when ``r max |x_i - x_j|_inf < 1``) the loss is a
    quadratic: sweeps and curvature then come from per-level sums, O(l)
    with no sort, and ``X^T dz`` from a vector carried along the steps, no
    pass over ``X`` (see ``refimpl.losses._score_space.TreeScoreSpace``).  The iterates are those
    of the explicit-pairs path to 1e-12 with the same greedy coordinates
    (``tests/test_fenchelrank_tree.py``, MQ2008 Fold 1 included).  For the
    fast variants a tie between vertices' values ``g^T v`` within
    :data:`TIE_RTOL` ``||g||_inf`` (an exact step along ``s e_j - v``
    leaves one) is broken by index, not by rounding, so the backends choose
    the same vertices.

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
    check_choice(line_search, "line_search", LINESEARCHES)
    check_choice(variant, "variant", VARIANTS)
    if variant != "paper" and step != "exact":
        raise ValueError(
            f"variant={variant!r} needs step='exact' (its steps are bounded by "
            f"the weight of the away vertex), got step={step!r}"
        )
    pairs = _pair_method(loss, "pair_indices")
    blocks = None
    paper_exact = step == "exact" and variant == "paper"
    if (line_search == "blocks" and paper_exact) or (
            line_search == "auto" and pairs is not None and paper_exact):
        blocks = capability(loss, "pair_blocks")
    if line_search == "blocks" and blocks is None:
        raise ValueError(
            "line_search='blocks' is Algorithm 1 with the exact step on a "
            "dense X and the full pair set: it needs step='exact', "
            "variant='paper' and a loss offering pair_blocks (got "
            f"step={step!r}, variant={variant!r}); use line_search='pairs' or "
            "'newton'"
        )
    if line_search == "auto":
        line_search = ("blocks" if blocks is not None
                      else "pairs" if pairs is not None else "newton")
    if line_search == "blocks":
        return _paper_blocks(loss, r, tol, max_iter, callback, blocks)
    if line_search == "pairs" and pairs is None:
        raise ValueError(
            "line_search='pairs' needs explicit pair arrays (loss.pair_indices()), "
            f"but the loss uses backend {getattr(loss, 'backend', '?')!r}: use "
            "line_search='newton' or 'auto'"
        )

    space = None
    if pairs is None and step == "exact" and line_search in ("auto", "newton"):
        # a score space without pairs carries its state along the steps
        space = capability(loss, "score_space")
    if variant != "paper" or space is not None:
        return _active_set_fw(loss, r, tol, max_iter, line_search, callback,
                              variant, pairs, space)

    start = time.perf_counter()
    r2 = r * r
    n = int(loss.n_features)
    if pairs is not None:
        margin = float(loss.margin)
        pi, pj = pairs
        a_buf = np.empty(len(pi))
        kb_buf = np.empty(len(pi))
        p = len(pi)
    kb_norm2 = None
    if step == "closed_form":
        if pairs is not None:
            def kb_norm2(b):
                return float(_k.sum_squares_diff(loss.scores(b), pi, pj))
        else:
            kb_norm2 = _pair_method(loss, "pair_norm2_operator")
            if kb_norm2 is None:
                raise ValueError(
                    "step='closed_form' needs ||K b||^2: a loss with "
                    "pair_indices() or pair_norm2_operator() (refimpl.losses."
                    "PairwiseLineSearchObjective); use step='exact'")
            p = int(loss.n_pairs)

    w = np.zeros(n)
    history = {key: [] for key in _HISTORY_KEYS}
    tau_last, j_last, n_ls = math.nan, -1, 0
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
        g = -r2 * gL                       # K^T alpha_t, eqs. (3.6), (3.7)
        j, s = _k.greedy_coordinate(g)
        gap = abs(g[j]) - float(g @ w)     # eq. (3.7), the paper's eq. 16
        # a NaN gap fails `gap <= tol` and would run to max_iter; an
        # infinite one can never certify anything
        check_finite(gap, "FenchelRank", "the duality gap (eq. 16)", loss)
        obj = r2 * Lw                                  # P(w_t), eq. (3.5)
        values = (obj, obj - gap, gap, tau_last, j_last,
                  int(np.count_nonzero(w)),
                  n_ls, time.perf_counter() - start)
        _record(history, callback, w, n_iter, values)
        if gap <= tol or n_iter >= max_iter:
            converged = gap <= tol
            message = _finish(converged, gap, tol, max_iter, stacklevel=2)
            break
        n_iter += 1
        b = -w
        b[j] += s                                      # b_t = s e_j - w_t
        n_ls = 0
        if step == "theory":
            tau = min(1.0, gap / (8.0 * r2))
        elif step == "closed_form":
            kb2 = check_finite(float(kb_norm2(b)), "FenchelRank",
                               "||K b||^2 of the closed-form step", loss)
            tau = 1.0 if kb2 <= 0 else min(1.0, max(0.0, gap * p / (2.0 * r2 * kb2)))
        elif line_search == "pairs":
            _k.pair_residuals(loss.scores(w), loss.scores(b), pi, pj, margin,
                              a_buf, kb_buf)
            # the kernel's curvature sum_P (K b)^2 overflows silently (to a
            # step of 0 and a run that stalls at max_iter): check it here
            check_finite(float(kb_buf @ kb_buf), "FenchelRank",
                         "the line-search curvature ||K b||^2", loss)
            tau = float(_k.linesearch_pairs(a_buf, kb_buf))
            n_ls = 1
        else:
            # psi(tau) = L(w + tau b) = phi(tau) / p; state of fun(w) is current
            trial = {}

            def dpsi(m, w=w, b=b, trial=trial):
                wt = w + m * b
                value = float(loss.fun(wt))
                grad = np.asarray(loss.grad(wt), dtype=np.float64)
                trial.update(m=m, w=wt, value=value, grad=grad)
                return check_finite(float(grad @ b), "FenchelRank",
                                    "the line-search slope psi'(tau)", loss)

            def d2psi(b=b):
                return check_finite(float(b @ loss.hess_vec(b)), "FenchelRank",
                                    "the line-search curvature psi''(tau)", loss)

            tau, n_ls = newton_linesearch(dpsi, d2psi, -gap / r2, d2psi())
            if trial and trial["m"] == tau:
                last = (trial["w"], trial["value"], trial["grad"])
        check_finite(tau, "FenchelRank", "the step tau", loss)
        if last is not None:
            w = last[0]                                # w_t + tau_t b_t
        else:
            w = (1.0 - tau) * w
            w[j] += tau * s                           # paper's eq. 18
        tau_last, j_last = tau, j

    return SolverResult(w=w, n_iter=n_iter, converged=converged,
                        history=history, message=message)


#: First bound on the step for the one-pass line search of the block path
#: (:func:`refimpl.kernels.fenchel.block_linesearch`), then this many
#: times the last step: Frank-Wolfe steps shrink slowly, so the next one
#: is nearly always below it.
BLOCK_STEP_GROWTH = 4.0


def _paper_blocks(loss, r, tol, max_iter, callback, blocks):
    """Algorithm 1 on the label-block layout (``line_search="blocks"``).

    The iterates of :func:`fenchelrank`'s ``"pairs"`` path, computed
    without its three products with ``X`` per update: the scores
    ``z = X w`` are carried along the steps (``z + tau (s x_j - z)``, the
    image of eq. 18, recomputed every :data:`REFRESH_EVERY` updates and
    before the solver stops, so the certificate of eq. 17 is taken at
    fresh scores), the pairs are enumerated per query from the label
    blocks, and the loop itself is compiled
    (:func:`refimpl.kernels.fenchel.block_run`; with a callback, one
    update per call).  ``blocks`` is the loss's ``pair_blocks`` capability
    (``refimpl.losses._score_space.PairBlocks``), which holds the data
    and makes the compiled passes over it; the loop's state is kept here.
    """
    start_time = time.perf_counter()
    r2 = r * r
    cols, n_all = blocks.cols, int(loss.n_features)
    n, l = len(cols), blocks.n_docs
    scale = blocks.scale
    w = np.zeros(n)
    z = np.zeros(l)
    u = np.zeros(l)
    dz = np.empty(l)
    graw = np.empty(n)
    g = np.empty(n)
    bp = np.empty(_k.BLOCK_BREAKPOINTS)
    found_a = np.empty(_k.BLOCK_BREAKPOINTS)
    found_c = np.empty(_k.BLOCK_BREAKPOINTS)
    # the history grows by doubling as the run records (never max_iter + 1
    # columns up front: max_iter = 10**9 is a legal "until eq. 17 holds")
    hist = np.empty((len(_k.RUN_HISTORY), min(max_iter + 1, HISTORY_START)))
    istate = np.zeros(7, dtype=np.int64)
    fstate = np.zeros(5)
    value, j, s, gap = blocks.evaluate(w, z, dz, graw, g, r2)
    istate[[_k.RUN_J, _k.RUN_J_LAST]] = (j, -1)
    fstate[[_k.RUN_VALUE, _k.RUN_GAP, _k.RUN_S, _k.RUN_TAU]] = (value, gap, s,
                                                               math.nan)
    _check_block_state(fstate, scale, g, loss)
    _k.block_record(hist, istate, fstate, w, scale, r2, start_time)
    while True:
        room = hist.shape[1] - istate[_k.RUN_RECORDS]  # one record per update
        if room == 0:
            hist = _grow_columns(hist)
            room = hist.shape[1] - istate[_k.RUN_RECORDS]
        blocks.run(w, z, u, dz, graw, g, r2, tol, max_iter, REFRESH_EVERY,
                   BLOCK_STEP_GROWTH, bp, found_a, found_c, istate, fstate,
                   hist, start_time, 1 if callback is not None else room)
        status = istate[_k.RUN_STATUS]
        if status == _k.RUN_BAD_STEP:
            # the curvature sum_P (K b)^2 overflows silently (to a step of
            # 0 and a run that stalls at max_iter): check it here
            check_finite(fstate[_k.RUN_S_CC], "FenchelRank",
                         "the line-search curvature ||K b||^2", loss)
            check_finite(fstate[_k.RUN_TAU], "FenchelRank", "the step tau", loss)
        if status == _k.RUN_BAD_STATE:
            _check_block_state(fstate, scale, g, loss)
        if callback is not None and istate[_k.RUN_ITER] > 0:
            k = istate[_k.RUN_RECORDS] - 1
            callback(_scatter(w, cols, n_all),
                     {"iter": int(istate[_k.RUN_ITER]),
                      **{key: hist[row, k] for row, key
                         in enumerate(_k.RUN_HISTORY[:4])},
                      "j": int(cols[int(hist[4, k])])})
        if status != _k.RUN_PAUSED:
            break
    n_iter = int(istate[_k.RUN_ITER])
    gap = float(fstate[_k.RUN_GAP])
    converged = status == _k.RUN_CONVERGED
    message = _finish(converged, gap, tol, max_iter, stacklevel=3)
    records = hist[:, :istate[_k.RUN_RECORDS]]
    history = {key: records[row].tolist()
               for row, key in enumerate(_k.RUN_HISTORY)}
    for key in ("j", "nnz", "ls_eval"):
        history[key] = [int(v) for v in history[key]]
    history["j"] = [int(cols[j]) if j >= 0 else -1 for j in history["j"]]
    return SolverResult(w=_scatter(w, cols, n_all), n_iter=n_iter,
                        converged=converged,
                        history=history, message=message,
                        details={"line_search": "blocks"})


#: Columns of the block path's first history array (doubled when full).
HISTORY_START = 1024


def _grow_columns(hist):
    """``hist`` with twice the columns (the recorded ones kept)."""
    out = np.empty((hist.shape[0], 2 * hist.shape[1]))
    out[:, :hist.shape[1]] = hist
    return out


def _scatter(w, cols, n):
    """``w`` on the columns ``cols`` as a vector of length ``n``."""
    out = np.zeros(n)
    out[cols] = w
    return out


def _check_block_state(fstate, scale, g, loss):
    """The finiteness checks of Algorithm 1's loop on a block-path state."""
    check_finite(scale * fstate[_k.RUN_VALUE], "FenchelRank", "the loss L(w)",
                 loss)
    check_finite(g, "FenchelRank", "the gradient of the loss", loss)
    check_finite(fstate[_k.RUN_GAP], "FenchelRank", "the duality gap (eq. 16)",
                 loss)


#: Longest Newton step (in units of the Newton direction) the face step's
#: exact line search considers when no bound of the face is reached first.
NEWTON_STEP_CAP = 4.0


def _face_newton(w, gL, H, slack):
    """Newton direction of ``L`` on the face of ``w`` and its longest step.

    The face: the support ``S`` of ``w`` with its signs ``sigma`` fixed and,
    when ``slack = 1 - ||w||_1`` is 0, ``sigma^T d = 0`` (the l1 sphere).
    Returns ``(d, t_max, hit)`` with ``d`` zero off ``S``; ``hit`` is the
    coordinate that reaches 0 at ``t_max``, ``-2`` when the l1 sphere is
    reached there, ``-1`` when neither (``t_max`` is then the cap).  Returns
    ``None`` when ``d`` is no descent direction (the face is a vertex, the
    gradient vanishes on it, or ``H`` is not numerically positive definite).
    """
    S = np.flatnonzero(w)
    sigma = np.sign(w[S])
    Hs = H + (1e-12 * max(float(np.trace(H)) / len(S), 1e-300)) * np.eye(len(S))
    try:
        cho = np.linalg.cholesky(Hs)
    except np.linalg.LinAlgError:
        return None

    def solve(v):
        return np.linalg.solve(cho.T, np.linalg.solve(cho, v))

    gS = gL[S]
    dS = -solve(gS)
    if slack <= 0.0 and sigma @ dS > 0.0:
        # stay on the sphere: the KKT point of min 1/2 d'Hd + g'd, sigma'd = 0
        Hsig = solve(sigma)
        dS = dS - (sigma @ dS) / (sigma @ Hsig) * Hsig
        dS = dS - (sigma @ dS) / len(S) * sigma    # its rounding residue
    if not float(gS @ dS) < 0.0:
        return None    # no descent on this face (a vertex, or rounding)
    t_max, hit = NEWTON_STEP_CAP, -1
    shrink = sigma * dS < 0.0
    if np.any(shrink):
        ratios = np.abs(w[S][shrink]) / np.abs(dS[shrink])
        m = int(np.argmin(ratios))
        if ratios[m] <= t_max:
            t_max, hit = float(ratios[m]), int(S[np.flatnonzero(shrink)[m]])
    grow = float(sigma @ dS)
    if slack > 0.0 and grow > 0.0 and slack / grow < t_max:
        t_max, hit = slack / grow, -2
    d = np.zeros_like(w)
    d[S] = dS
    return d, t_max, hit


#: Relative tolerance (of ``||g||_inf``) within which the fast variants
#: treat two vertices' values ``g^T v`` as tied (see :func:`_away_vertex`).
TIE_RTOL = 1e-10


def _greedy_with_ties(g, j, s, ap, am, tie):
    """The greedy vertex ``s e_j``, ties to a vertex in use, then the smallest index."""
    top = np.flatnonzero(np.abs(g) >= abs(g[j]) - tie)
    if len(top) <= 1:
        return j, s
    sign = np.where(g[top] >= 0.0, 1.0, -1.0)
    used = np.where(sign > 0, ap[top] > 0.0, am[top] > 0.0)
    pick = top[used][0] if np.any(used) else top[0]
    return int(pick), (1.0 if g[pick] >= 0.0 else -1.0)


def _away_vertex(g, ap, am, slack, tie):
    """``(k, sign, g^T v)`` of the away vertex (``k = -1``: the origin).

    The active vertex with the smallest ``g^T v``; among those within
    ``tie`` of it the origin, then the smallest index (``+e_k`` first).
    """
    cands = []
    if slack > 0.0:
        cands.append((0.0, -1, 0.0))
    for idx in np.flatnonzero(ap > 0.0):
        cands.append((float(g[idx]), int(idx), 1.0))
    for idx in np.flatnonzero(am > 0.0):
        cands.append((float(-g[idx]), int(idx), -1.0))
    if not cands:
        return -1, 0.0, math.inf
    low = min(c[0] for c in cands)
    val, k, sk = min((c for c in cands if c[0] <= low + tie),
                     key=lambda c: (c[1], -c[2]))
    return k, sk, val


def _pair_method(loss, name):
    """``loss.<name>()`` of :class:`~refimpl.losses.PairwiseLineSearchObjective`, or None.

    ``None`` also when the loss has no such method: a plain
    :class:`~refimpl.losses.SmoothObjective` takes the generic path.
    """
    method = getattr(loss, name, None)
    return None if method is None else method()


def _score_line_search(space, z, u, dpsi0, image=None, loss=None):
    """A minimiser ``t`` on [0, 1] of ``L(z + t u)`` on a score space that follows the steps.

    Safeguarded Newton (:func:`newton_linesearch`) on the space's
    :meth:`~refimpl.losses._score_space.TreeScoreSpace.line`, each slope
    and curvature checked.  The state must be at ``z``; returns ``(t,
    z_new, n_eval)`` with the state at ``z_new = z + t u``.  ``image``:
    see the space's ``line``; ``loss`` names the data in an error.
    """
    line = space.line(z, u, image)

    def dphi(t):
        return check_finite(line.slope(t), "FenchelRank",
                            "the line-search slope psi'(tau)", loss)

    def d2phi():
        return check_finite(line.curvature(), "FenchelRank",
                            "the line-search curvature psi''(tau)", loss)

    dpsi0 = line.slope0(dpsi0)
    t, n_eval = newton_linesearch(dphi, d2phi, dpsi0, d2phi())
    check_finite(t, "FenchelRank", "the step tau", loss)
    z_new, extra = line.end(t, dphi)
    return t, z_new, n_eval + extra


def _active_set_fw(loss, r, tol, max_iter, line_search, callback, variant,
                   pairs, space=None):
    """Pairwise / away-step Frank-Wolfe on the l1 ball (see :func:`fenchelrank`).

    Also Algorithm 1 itself (``variant="paper"``: every step the
    Frank-Wolfe step) when ``space`` is a score space that follows the
    steps (the loss's ``score_space`` capability without pairs, e.g. the
    selection tree): then the scores are carried in the space's order and
    the exact step is :func:`_score_line_search`.  With explicit pairs and
    ``line_search="pairs"`` the loss's ``score_space`` carries the scores
    and gives the sorted-breakpoint step; without a score space every step
    goes through ``fun``, ``grad`` and ``hess_vec``.
    """
    start = time.perf_counter()
    r2 = r * r
    n = int(loss.n_features)
    if line_search == "auto":
        line_search = "pairs" if pairs is not None else "newton"
    if space is None and line_search == "pairs":
        space = capability(loss, "score_space")
    # the space keeps its own state at the new point (no z + t u here)
    tree = space is not None and space.follows_steps
    # weights of the vertices +e_j (ap) and -e_j (am) and of the origin
    ap = np.zeros(n)
    am = np.zeros(n)
    slack = 1.0
    w = np.zeros(n)
    z = np.zeros(space.n_docs) if space is not None else None
    history = {key: [] for key in _HISTORY_KEYS}
    tau_last, j_last, n_ls = math.nan, -1, 0
    n_iter = 0
    since_refresh = 0
    converged = False
    fresh = False   # value and gradient came from loss.fun / loss.grad at w
    newton_failed = False
    kinds = []
    while True:
        if space is not None and not fresh:
            Lw, gL = space.value_grad(z)
        elif tree:
            Lw, gL, z = space.fresh(w)
        else:
            Lw = float(loss.fun(w))
            gL = np.asarray(loss.grad(w), dtype=np.float64)
        check_finite(Lw, "FenchelRank", "the loss L(w)", loss)
        check_finite(gL, "FenchelRank", "the gradient of the loss", loss)
        g = -r2 * gL                       # K^T alpha_t, eqs. (3.6), (3.7)
        j, s = _k.greedy_coordinate(g)
        gap = abs(g[j]) - float(g @ w)     # eq. (3.7), the paper's eq. 16
        check_finite(gap, "FenchelRank", "the duality gap (eq. 16)", loss)
        if space is not None and not fresh and (gap <= tol or n_iter >= max_iter):
            # confirm the stop with the loss itself at w (fresh X w), so that
            # the certificate is Algorithm 1's, free of the drift of z
            if not tree:
                z = space.scores(w)
            since_refresh = 0
            fresh = True
            continue
        obj = r2 * Lw                                  # P(w_t), eq. (3.5)
        values = (obj, obj - gap, gap, tau_last, j_last,
                  int(np.count_nonzero(w)),
                  n_ls, time.perf_counter() - start)
        _record(history, callback, w, n_iter, values)
        if gap <= tol or n_iter >= max_iter:
            converged = gap <= tol
            message = _finish(converged, gap, tol, max_iter,
                              f"FenchelRank ({variant})", stacklevel=3)
            break
        if fresh and space is not None and not tree:
            # the loss's evaluation at w replaces the score-space one
            Lw, gL = space.value_grad(z)
        fresh = False
        n_iter += 1

        # away vertex: the active one with the smallest g^T v (origin: 0),
        # ties (within TIE_RTOL ||g||_inf) to the origin, then the smallest
        # index; the greedy vertex's ties to one in use, then the smallest
        # index.  An exact step along s e_j - v leaves g^T (s e_j) = g^T v
        # up to rounding, so without the rule the next choice would be
        # decided by rounding (and differ between backends).
        tie = TIE_RTOL * abs(float(g[j]))
        j, s = _greedy_with_ties(g, j, s, ap, am, tie)
        k, sk, gv = _away_vertex(g, ap, am, slack, tie)
        alpha_v = slack if k < 0 else (ap[k] if sk > 0 else am[k])

        # the step: kind, direction d (unit segment: w + t d, t in [0, 1])
        on_face = (ap[j] > 0.0) if s > 0 else (am[j] > 0.0)
        kind = "pairwise"
        if variant == "paper":
            kind = "fw"
        elif variant == "away":
            away_gap = float(g @ w) - gv
            kind = "away" if away_gap > gap and alpha_v < 1.0 else "fw"
        elif k == j and sk == s:
            kind = "fw"              # only when the gap is ~0
        elif variant == "face_newton" and on_face and not newton_failed:
            kind = "newton"
        hit = -1
        if kind == "newton":
            S = np.flatnonzero(w)
            if space is not None:
                H = space.hessian(S)
            else:
                H = np.array([loss.hess_vec(np.eye(n)[i])[S] for i in S]).T
            face = _face_newton(w, gL, H, slack)
            if face is None or float(gL @ face[0]) >= 0.0:
                kind = "pairwise"
            else:
                d, t_max, hit = face
                d = t_max * d
                slope = -r2 * float(gL @ d)
        if kind == "pairwise":
            d = np.zeros(n)
            d[j] = alpha_v * s
            if k >= 0:
                d[k] -= alpha_v * sk
            slope = alpha_v * (abs(g[j]) - gv)
        elif kind == "fw":
            d = -w
            d[j] += s
            slope = abs(g[j]) - float(g @ w)
        elif kind == "away":
            m = alpha_v / (1.0 - alpha_v)
            d = m * w
            if k >= 0:
                d[k] -= m * sk
            slope = m * away_gap

        n_ls = 0
        if space is not None:
            # u = X d = alpha z + X[:, idx] beta (image, for the tree space)
            if kind == "pairwise":
                u = d[j] * space.column(j)
                image = (0.0, [j], [d[j]])
                if k >= 0 and k != j:
                    u = u + d[k] * space.column(k)
                    image = (0.0, [j, k], [d[j], d[k]])
            elif kind == "fw":
                u = s * space.column(j) - z
                image = (-1.0, [j], [s])
            elif kind == "away":
                u = m * z
                image = (m, [], [])
                if k >= 0:
                    u = u - (m * sk) * space.column(k)
                    image = (m, [k], [-m * sk])
            else:
                S = np.flatnonzero(d)
                u = np.asarray(space.columns(S) @ d[S], dtype=np.float64)
                image = (0.0, S, d[S])
            if tree:
                t, z_new, n_ls = _score_line_search(space, z, u, -slope / r2,
                                                    image, loss)
            else:
                a, c = space.exact_step(z, u)
                check_finite(float(c @ c), "FenchelRank",
                             "the line-search curvature ||K d||^2", loss)
                t = float(_k.linesearch_pairs(a, c))
                n_ls = 1
        else:
            def dpsi(m, w=w, b=d):
                wt = w + m * b
                loss.fun(wt)
                grad = np.asarray(loss.grad(wt), dtype=np.float64)
                return check_finite(float(grad @ b), "FenchelRank",
                                    "the line-search slope psi'(tau)", loss)

            def d2psi(b=d):
                return check_finite(float(b @ loss.hess_vec(b)), "FenchelRank",
                                    "the line-search curvature psi''(tau)", loss)

            # the loss state is that of fun(w) from the top of the loop
            t, n_ls = newton_linesearch(dpsi, d2psi, -slope / r2, d2psi())
        check_finite(t, "FenchelRank", "the step tau", loss)
        newton_failed = kind == "newton" and t <= 0.0
        kinds.append(kind)
        full = t >= 1.0

        # update the weights; a full step drops the away vertex exactly
        if kind == "pairwise":
            tau = t * alpha_v
            if s > 0:
                ap[j] += tau
            else:
                am[j] += tau
            if k < 0:
                slack = 0.0 if full else slack - tau
            elif sk > 0:
                ap[k] = 0.0 if full else ap[k] - tau
            else:
                am[k] = 0.0 if full else am[k] - tau
            if ap[j] > 0.0 and am[j] > 0.0:
                cancel = min(ap[j], am[j])  # +e_j and -e_j: keep one
                ap[j] -= cancel
                am[j] -= cancel
                slack += 2.0 * cancel
        elif kind == "fw":
            tau = t
            ap *= 1.0 - tau
            am *= 1.0 - tau
            slack *= 1.0 - tau
            if s > 0:
                ap[j] += tau
            else:
                am[j] += tau
        elif kind == "away":
            tau = t * m
            ap *= 1.0 + tau
            am *= 1.0 + tau
            slack *= 1.0 + tau
            if k < 0:
                slack = 0.0 if full else slack - tau
            elif sk > 0:
                ap[k] = 0.0 if full else ap[k] - tau
            else:
                am[k] = 0.0 if full else am[k] - tau
        else:
            tau = t
            wn = w + t * d
            if full and hit >= 0:
                wn[hit] = 0.0
            ap = np.maximum(wn, 0.0)
            am = np.maximum(-wn, 0.0)
            slack = 0.0 if (full and hit == -2) or slack <= 0.0 else \
                max(1.0 - float(np.sum(np.abs(wn))), 0.0)
        np.maximum(ap, 0.0, out=ap)
        np.maximum(am, 0.0, out=am)
        slack = max(slack, 0.0)
        w = ap - am
        if space is not None:
            since_refresh += 1
            if tree and since_refresh < REFRESH_EVERY:
                z = z_new    # the tree's state is there already
            elif since_refresh >= REFRESH_EVERY or kind == "newton":
                z = space.scores(w)
                since_refresh = 0
            else:
                z = z + t * u
        tau_last, j_last = tau, j

    return SolverResult(w=w, n_iter=n_iter, converged=converged,
                        history=history, message=message,
                        details={"variant": variant, "steps": kinds})
