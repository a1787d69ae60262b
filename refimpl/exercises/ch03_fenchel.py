r"""Exercise checkers of Chapter 3 (FenchelRank, conjugates and the duality gap).

* :func:`check_exact_step` -- the exact line search along the Frank-Wolfe
  direction, ``argmin_{0 <= tau <= 1} phi(tau)``,
  ``phi(tau) = sum_i max(0, a_i - tau c_i)^2``, against
  :func:`refimpl.kernels.fenchel.linesearch_pairs`;
* :func:`check_lmo_l1_ball` -- the linear minimisation oracle of the l1
  ball, ``argmin_{||v||_1 <= radius} <grad, v>``, against the greedy
  coordinate of :func:`refimpl.kernels.fenchel.greedy_coordinate`;
* :func:`check_duality_gap` -- FenchelRank's gap ``P(w_t) - D(alpha_t)`` on an
  explicit pair-difference matrix ``K``, against the value and gradient of
  :class:`refimpl.losses.PairwiseSquaredHinge` (the solver's own formula).

Each names the typical mistake when the student's answer differs.

Derived in: book/03_fenchelrank_duality.md#fenchelrank
"""

from __future__ import annotations

import numpy as np

from ..kernels.fenchel import greedy_coordinate, linesearch_pairs
from ..losses import PairwiseSquaredHinge
from ._harness import (CheckResult, Suspects, only_match, record,
                       run_checker)

__all__ = ["check_exact_step", "check_lmo_l1_ball", "check_duality_gap"]


def _st():
    from hypothesis import strategies as st
    return st


def _close(x, y, rtol=1e-9):
    return abs(x - y) <= rtol * max(1.0, abs(y))


def _as_float(value, what):
    """The student's scalar answer as a float, or a message why not."""
    arr = np.asarray(value)
    if arr.size != 1:
        return None, (f"your function returns an array of shape {arr.shape}; "
                      f"{what} is one number")
    out = float(arr.reshape(()))
    if not np.isfinite(out):
        return None, f"your function returns {out} for {what}"
    return out, None


# --------------------------------------------------------------------------
# the exact step along the Frank-Wolfe direction
# --------------------------------------------------------------------------


def _phi(tau, a, c):
    return float(np.sum(np.maximum(0.0, a - tau * c) ** 2))


def _dphi(tau, a, c):
    return float(-2.0 * np.sum(c * np.maximum(0.0, a - tau * c)))


def _step_ref(a, c):
    return float(linesearch_pairs(np.ascontiguousarray(a, dtype=np.float64),
                                  np.ascontiguousarray(c, dtype=np.float64)))


def _walk(a, c, *, sort=True, entering=True, left=False):
    """The sign-change walk, optionally with one of the usual mistakes:
    breakpoints unsorted, pairs never entering, or the active set read at
    the left end ``lo`` of each interval instead of inside it."""
    nz = c != 0
    bps = a[nz] / c[nz]
    if not entering:   # pairs inactive at 0 never join the active set
        bps = bps[a[nz] > 0]
    bps = bps[(bps > 0) & (bps < 1)]
    knots = np.r_[np.unique(bps) if sort else bps, 1.0]
    lo = 0.0
    for hi in knots:
        on = a - (lo if left else 0.5 * (lo + hi)) * c > 0
        if not entering:
            on &= a > 0
        s_ac, s_cc = a[on] @ c[on], c[on] @ c[on]
        if s_ac <= lo * s_cc:
            return lo
        if s_ac <= hi * s_cc:
            return s_ac / s_cc
        lo = hi
    return 1.0


def _quadratic_step(a, c, on):
    s_ac, s_cc = a[on] @ c[on], c[on] @ c[on]
    return s_ac / s_cc if s_cc > 0 else 0.0


def _step_mistakes(a, c, ref):
    """(candidate step, message) for the usual mistakes, most specific first."""
    clip = lambda v: min(max(v, 0.0), 1.0)   # noqa: E731
    all_pairs = np.ones(len(a), dtype=bool)
    q_all = _quadratic_step(a, c, all_pairs)
    q_0 = _quadratic_step(a, c, a > 0)
    sign = (_step_ref(a, -c), "wrong sign: your step minimises "
            "sum max(0, a_i + tau c_i)^2, i.e. along -c; the residual of pair "
            "i at tau is a_i - tau c_i")
    closed = [
        (q_0, "you return the step for the unconstrained quadratic of the "
         "pairs active at tau = 0, unclipped: pairs leave or enter the active "
         "set at their breakpoints a_i / c_i, and tau must lie in [0, 1]"),
        (clip(q_0), "you return the step for the unconstrained quadratic of "
         "the pairs active at tau = 0 (the closed-form step): pairs leave or "
         "enter the active set at their breakpoints a_i / c_i, so walk them "
         "in increasing order until phi' changes sign")]
    quad = [
        (q_all, "you return the minimiser of the quadratic "
         "sum (a_i - tau c_i)^2 over all pairs, unclipped: max(0, .) drops "
         "the pairs with a_i - tau c_i <= 0, and tau must lie in [0, 1]"),
        (clip(q_all), "you return the minimiser of the quadratic "
         "sum (a_i - tau c_i)^2 over all pairs: max(0, .) drops the pairs "
         "with a_i - tau c_i <= 0 (walk the breakpoints a_i / c_i)")]
    # an unclipped step inside [0, 1] is the clipped one: name it so; and
    # where every pair is active at 0 the two quadratics coincide: say the
    # closed-form one (a later case with an inactive pair tells them apart)
    if 0 <= q_0 <= 1:
        closed = closed[1:]
    if 0 <= q_all <= 1:
        quad = quad[1:]
    quad = [(v, m) for v, m in quad
            if not any(_close(v, v0) for v0, _ in closed)]
    out = [sign] + closed + quad + [
        (_walk(a, c, sort=False), "breakpoints not sorted: your step is what "
         "a walk over the breakpoints a_i / c_i in their input order "
         "returns; the active set is fixed only between consecutive "
         "breakpoints in increasing order"),
        (_walk(a, c, entering=False), "your walk never lets a pair enter "
         "the active set: a pair with a_i <= 0 and c_i < 0 becomes active "
         "at tau = a_i / c_i (test a_i - tau c_i > 0 on each interval, not "
         "a_i > 0)"),
        (_walk(a, c, left=True), "your walk reads the active set at the "
         "left end lo of each interval: a pair that enters at lo (a_i - lo "
         "c_i = 0, c_i < 0) is active on the whole interval after it; test "
         "a_i - tau c_i > 0 at a point inside, e.g. the midpoint"),
    ]
    if ref > 0:
        # the root S_ac / S_cc of the piece that ends at the minimiser
        r = a - ref * c
        on = (r > 0) | ((r == 0) & (c > 0))
        root = _quadratic_step(a, c, on)
        why = ("missing factor 2: your step is {} the root of its piece "
               "(phi'(tau) = -2 sum_active c_i (a_i - tau c_i) vanishes at "
               "S_ac / S_cc)")
        out += [(root / 2, why.format("half")),
                (min(2 * root, 1.0), why.format("twice"))]
    return out


def _diagnose_step(fn, case, suspects):
    a, c = case
    ref = _step_ref(a, c)
    record(a=a.copy(), c=c.copy(), expected=ref)
    got = fn(a.copy(), c.copy())
    record(got=got)
    tau, msg = _as_float(got, "the step tau")
    if msg:
        return msg
    tol = 1e-10 * max(1.0, _phi(0.0, a, c))
    best = _phi(ref, a, c) + tol

    def right(v):
        return -1e-12 <= v <= 1 + 1e-12 and _phi(
            min(max(v, 0.0), 1.0), a, c) <= best
    cands = [(why, v) for v, why in _step_mistakes(a, c, ref)]
    if right(tau):
        suspects.clear(cands, right)
        return None
    named = suspects.name([(w, v) for w, v in cands if not right(v)],
                          lambda v: _close(tau, v))
    if named:
        return named
    if tau > 1:
        return ("your step is larger than 1: clip it to [0, 1] (beyond 1 "
                "the iterate leaves the l1 ball)")
    if tau < 0:
        return ("your step is negative: a sign error in phi'(tau) = "
                "-2 sum_active c_i (a_i - tau c_i), or a missing clip to "
                "[0, 1]")
    d = _dphi(tau, a, c)
    side = ("phi still decreases there, so the minimiser is larger"
            if d < 0 else "phi increases there, so the minimiser is smaller")
    return (f"phi'(tau) = {d:.3g} at your step: {side} (phi = "
            f"{_phi(ref, a, c):.6g} at the minimiser against your "
            f"{_phi(tau, a, c):.6g}); check the active set you use on each "
            "interval")


def _step_adversarial():
    A = np.array
    return [
        # first, a case on which every mistake of _step_mistakes gives its
        # own wrong step (pair 3 enters at 0, pairs 2 and 1 leave at 1/3
        # and 2/3): each shows alone here
        (A([-0.25, 0.5, 0.25, 0.0]), A([0.5, 0.75, 0.75, -1.0])),
        # pairs enter: a < 0, c < 0 (active from a / c on)
        (A([1.0, -0.2, -0.5]), A([2.0, -1.0, -1.0])),
        # a pair leaves at 0.25 before the root of the first piece
        (A([1.0, 0.25, 0.5]), A([1.0, 1.0, 0.5])),
        # the root lies beyond 1: clip
        (A([2.0, 3.0]), A([1.0, 1.0])),
        # breakpoints listed in decreasing order
        (A([0.9, 0.6, 0.3, 0.1, 1.0]), A([1.0, 1.0, 1.0, 1.0, 4.0])),
        # phi'(0) >= 0: tau = 0; and a flat phi (c = 0 or inactive pairs)
        (A([-1.0, 0.5]), A([1.0, -1.0])),
        (A([0.5, -1.0]), A([0.0, 2.0])),
        # ties of breakpoints, zeros in c
        (A([0.5, 0.5, 1.0, 0.2, 0.0]), A([1.0, 1.0, 2.0, 0.0, -1.0])),
    ]


def _step_cases():
    st = _st()
    grid = st.integers(-8, 8).map(lambda k: k / 4)
    real = st.floats(-3, 3, allow_nan=False, allow_subnormal=False)

    @st.composite
    def case(draw):
        n = draw(st.integers(1, 10))
        elem = draw(st.sampled_from([grid, real]))
        a = np.array(draw(st.lists(elem, min_size=n, max_size=n)))
        c = np.array(draw(st.lists(elem, min_size=n, max_size=n)))
        return a, c
    return case()


def check_exact_step(fn, *, max_examples=119) -> CheckResult:
    r"""Check ``fn(a, c) -> tau``, the exact step of FenchelRank (eq. (3.9)).

    ``tau`` must minimise ``phi(tau) = sum_i max(0, a_i - tau c_i)^2`` over
    ``[0, 1]``; any minimiser is accepted (``phi`` can be flat).  Recognised
    mistakes: a sign error (stepping along ``-c``), no clip to [0, 1], the
    unconstrained quadratic over all pairs or over the pairs active at 0
    (the closed-form step), breakpoints not sorted, pairs never entering the
    active set, a missing factor 2.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    suspects = Suspects()
    return run_checker(lambda case: _diagnose_step(fn, case, suspects),
                       adversarial=_step_adversarial(),
                       strategy=_step_cases(), max_examples=max_examples,
                       what="your exact step", names=("a", "c"))


# --------------------------------------------------------------------------
# the linear minimisation oracle of the l1 ball
# --------------------------------------------------------------------------


def _lmo_ref(grad, radius):
    j, s = greedy_coordinate(-np.ascontiguousarray(grad, dtype=np.float64))
    v = np.zeros(len(grad))
    v[j] = radius * s
    return v


def _diagnose_lmo(fn, case):
    grad, radius = case
    ref = _lmo_ref(grad, radius)
    record(grad=grad.copy(), radius=radius, expected=ref)
    out = fn(grad.copy(), radius)
    record(got=out)
    v = np.asarray(out, dtype=np.float64)
    if v.shape != grad.shape:
        if v.size == 1 and float(v) == int(float(v)):
            return ("your function returns a number: return the vertex v "
                    "(a vector of the length of grad), not its index j")
        return (f"your function returns shape {v.shape}; the vertex has the "
                f"shape of grad, {grad.shape}")
    if not np.all(np.isfinite(v)):
        return "your vertex has non-finite entries"
    gmax = float(np.max(np.abs(grad)))
    best = -radius * gmax
    tol = 1e-12 * max(1.0, radius * gmax)
    norm1 = float(np.abs(v).sum())
    feasible = norm1 <= radius * (1 + 1e-12)
    support = np.flatnonzero(v)
    if feasible and grad @ v <= best + tol:
        if gmax == 0 or len(support) == 1:
            return None
        return ("your point attains the minimum but is not a vertex: return "
                "one signed vertex +-radius e_j (Frank-Wolfe's sparsity comes "
                "from moving towards one vertex)")
    if np.allclose(v, -ref) or (len(support) == 1 and abs(grad[support[0]])
                                == gmax and np.sign(v[support[0]])
                                == np.sign(grad[support[0]])):
        return ("wrong sign: your vertex maximises <grad, v>; the LMO "
                "minimises it, v = -radius sign(grad_j) e_j")
    if len(support) == 1:
        k = int(support[0])
        if abs(grad[k]) < gmax and k in (int(np.argmax(grad)),
                                          int(np.argmin(grad))):
            return (f"you pick j = {k}, the largest signed entry of grad (or "
                    "of -grad); the LMO needs argmax_j |grad_j| = "
                    f"{int(np.argmax(np.abs(grad)))}")
        if abs(grad[k]) < gmax:
            return (f"you pick j = {k}, but |grad_j| is largest at j = "
                    f"{int(np.argmax(np.abs(grad)))}")
        if np.isclose(abs(v[k]), 1.0) and not np.isclose(radius, 1.0):
            return ("radius missing: |v_j| = 1, but the vertices of the ball "
                    f"of radius {radius:g} are +-{radius:g} e_j")
        return (f"|v_j| = {abs(v[k]):.6g}: the vertex of the ball of radius "
                f"{radius:g} has |v_j| = radius")
    if not feasible:
        return (f"||v||_1 = {norm1:.6g} > radius = {radius:g}: your point is "
                "outside the ball")
    if len(support) > 1:
        return (f"your point has {len(support)} non-zero entries and "
                f"<grad, v> = {grad @ v:.6g} above the minimum "
                f"-radius ||grad||_inf = {best:.6g}: the minimiser is one "
                "signed vertex +-radius e_j")
    return (f"<grad, v> = {grad @ v:.6g}, but the minimum over the ball is "
            f"-radius ||grad||_inf = {best:.6g}")


def _lmo_adversarial():
    A = np.array
    return [
        (A([1.0, -3.0, 2.0]), 2.5),   # the largest |grad_j| is negative
        (A([0.5, 4.0, -1.0]), 0.5),   # positive, radius below 1
        (A([-2.0]), 3.0),
        (A([0.0, 0.0]), 2.0),         # every point is a minimiser
        (A([-1.0, 2.0, -5.0, 3.0]), 1.0),
    ]


def _lmo_cases():
    st = _st()

    @st.composite
    def case(draw):
        n = draw(st.integers(1, 10))
        g = draw(st.lists(st.floats(-5, 5, allow_nan=False,
                                    allow_subnormal=False),
                          min_size=n, max_size=n))
        radius = draw(st.sampled_from([0.25, 0.5, 2.0, 4.0, 7.5]))
        return np.array(g), radius
    return case()


def check_lmo_l1_ball(fn, *, max_examples=100) -> CheckResult:
    r"""Check ``fn(grad, radius) -> v``, ``argmin_{||v||_1 <= radius} <grad, v>``.

    The answer must be a signed vertex ``+-radius e_j`` attaining the
    minimum ``-radius ||grad||_inf`` (any of them under ties; any point
    when ``grad = 0``).  Recognised mistakes: the wrong sign (the maximising
    vertex), ``argmax grad_j`` instead of ``argmax |grad_j|``, the radius
    missing, returning the index instead of the vertex.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    return run_checker(lambda case: _diagnose_lmo(fn, case),
                       adversarial=_lmo_adversarial(),
                       strategy=_lmo_cases(), max_examples=max_examples,
                       what="your linear minimisation oracle",
                       names=("grad", "radius"))


# --------------------------------------------------------------------------
# FenchelRank's duality gap
# --------------------------------------------------------------------------


def _gap_parts(K, w, r):
    """Reference gap from refimpl's loss: one query of two documents per pair.

    Document ``2k`` is row ``k`` of ``K`` with label 1, document ``2k + 1``
    is 0 with label 0, so the pair differences are the rows of ``K`` and
    ``G`` is ``r^2`` times the mean squared hinge at margin ``1/r``.
    """
    p, m = K.shape
    X = np.zeros((2 * p, m))
    X[0::2] = K
    y = np.tile([1.0, 0.0], p)
    qid = np.repeat(np.arange(p), 2)
    loss = PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True)
    G = r * r * float(loss.fun(w))
    g = -r * r * np.asarray(loss.grad(w), dtype=np.float64)   # K^T alpha
    return G, g


def _gap_mistakes(K, w, r):
    p = K.shape[0]
    z = K @ w
    res = np.maximum(0.0, 1.0 / r - z)
    d = 2 * r * r / p * res
    g = K.T @ d
    inf = float(np.max(np.abs(g)))
    f_d = p / (4 * r * r) * d @ d - d.sum() / r
    f_star = r * r / p * res @ res
    d_raw = 2 * r * r / p * (1.0 / r - z)
    g_raw = K.T @ d_raw
    d_m1 = 2 * r * r / p * np.maximum(0.0, 1.0 - z)
    g_m1 = K.T @ d_m1
    # P(w) - D(alpha) written out in full (eq. (3.5)) with unclipped residuals
    f_raw = p / (4 * r * r) * d_raw @ d_raw - d_raw.sum() / r
    inf_raw = float(np.max(np.abs(g_raw)))
    fstar_raw = r * r / p * (1.0 / r - z) @ (1.0 / r - z)
    clip = ("alpha_t must be non-negative: clip the residuals, "
            "alpha_t = (2 r^2/p) max(0, 1/r - K w_t), and use the clipped "
            "residuals in P(w_t) = (r^2/p) ||max(0, 1/r - K w_t)||^2 too")
    return [
        (f_raw + inf_raw + f_star, clip),
        (f_raw + inf_raw + fstar_raw, clip),
        (f_d + inf + fstar_raw, clip),
        (d @ d / (4 * r * r) - d.sum() / r + inf + f_star,
         "missing factor p in the quadratic term of f*(-alpha) = "
         "p/(4 r^2) ||alpha||^2 - ||alpha||_1 / r (eq. (3.5))"),
        (inf + g @ w, "wrong sign of <K^T alpha_t, w_t>: the gap is "
         "||K^T alpha_t||_inf - <K^T alpha_t, w_t>"),
        (float(np.max(g)) - g @ w, "you take max_j (K^T alpha_t)_j instead "
         "of max_j |(K^T alpha_t)_j|: the conjugate of the l1-ball indicator "
         "is the dual norm ||K^T alpha||_inf"),
        (inf + f_star, "missing the conjugate term f*(-alpha_t): "
         "P(w_t) - D(alpha_t) = f(K w_t) + f*(-alpha_t) + "
         "||K^T alpha_t||_inf"),
        (inf + f_d, "missing the term f(K w_t) = G(w_t): "
         "P(w_t) - D(alpha_t) = f(K w_t) + f*(-alpha_t) + "
         "||K^T alpha_t||_inf"),
        (inf, "missing the term -<K^T alpha_t, w_t> (= f(K w_t) + "
         "f*(-alpha_t) by Fenchel-Young at alpha_t)"),
        (inf + p / (4 * r * r) * d @ d + d.sum() / r + f_star,
         "wrong sign of the linear term of the conjugate: "
         "f*(-alpha) = p/(4 r^2) ||alpha||^2 - ||alpha||_1 / r"),
        (float(np.max(np.abs(g_raw))) - g_raw @ w, clip),
        (0.5 * (inf - g @ w), "missing factor 2: alpha_t = (2 r^2/p) "
         "max(0, 1/r - K w_t), the derivative of the squared hinge"),
        (2 * (inf - g @ w), "a factor 2 too many in alpha_t = (2 r^2/p) "
         "max(0, 1/r - K w_t)"),
        (p * (inf - g @ w), "missing 1/p: alpha_t = (2 r^2/p) "
         "max(0, 1/r - K w_t) (G averages over the p pairs)"),
        (float(np.max(np.abs(g_m1))) - g_m1 @ w, "margin 1 instead of 1/r: "
         "after w = w'/r the residuals are 1/r - K w"),
    ]


def _diagnose_gap(fn, case):
    K, w, r = case
    G, g = _gap_parts(K, w, r)
    ref = float(np.max(np.abs(g)) - g @ w)
    record(K=K.copy(), w=w.copy(), r=r, expected=ref)
    got = fn(K.copy(), w.copy(), r)
    record(got=got)
    gap, msg = _as_float(got, "the gap")
    if msg:
        return msg
    if _close(gap, ref):
        return None
    named = only_match([(why, cand) for cand, why in _gap_mistakes(K, w, r)
                        if not _close(cand, ref)],
                       lambda cand: _close(gap, cand))
    if named:
        return named
    if gap < 0:
        return ("your gap is negative; the duality gap is never negative "
                "(weak duality)")
    return "your gap differs from refimpl's"


def _gap_adversarial():
    K1 = np.array([[1.0, -0.5], [0.5, 0.5], [-1.0, 0.25]])
    K2 = np.array([[0.5, -1.0, 0.25], [1.0, 0.0, -0.5], [0.0, 0.75, 1.0],
                   [-0.25, 0.5, 0.5]])
    return [
        (K1, np.array([0.5, -0.25]), 2.0),
        (K2, np.array([0.0, -1.0, 0.0]), 4.0),     # a vertex; pairs inactive
        (K2, np.array([0.3, 0.2, -0.1]), 1.5),
        (K1, np.zeros(2), 3.0),
        (K2, np.array([-0.6, 0.1, 0.3]), 0.5),     # on the sphere
    ]


def _gap_cases():
    st = _st()

    @st.composite
    def case(draw):
        p = draw(st.integers(1, 8))
        m = draw(st.integers(1, 5))
        ks = draw(st.lists(st.integers(-4, 4), min_size=p * m,
                           max_size=p * m))
        K = np.array(ks, dtype=float).reshape(p, m) / 4
        v = np.array(draw(st.lists(st.floats(-1, 1, allow_nan=False,
                                             allow_subnormal=False),
                                   min_size=m, max_size=m)))
        scale = draw(st.sampled_from([0.0, 0.3, 1.0]))
        n1 = np.abs(v).sum()
        w = scale * v / n1 if n1 > 0 else np.zeros(m)
        r = draw(st.sampled_from([0.5, 1.0, 2.0, 4.0, 8.0]))
        return K, w, r
    return case()


def check_duality_gap(fn, *, max_examples=100) -> CheckResult:
    r"""Check ``fn(K, w, r) -> gap``, FenchelRank's duality gap (eq. (3.7)).

    ``K`` is the ``(p, d)`` pair-difference matrix, ``w`` a point of the
    unit l1 ball and ``r`` the radius; the gap is
    ``||K^T alpha||_inf - <K^T alpha, w>`` with
    ``alpha = (2 r^2/p) max(0, 1/r - K w)``, equal to ``P(w) - D(alpha)``.
    Recognised mistakes: the wrong sign of ``<K^T alpha, w>``, ``max`` instead
    of ``max |.|``, a missing conjugate term, unclipped residuals (also in
    ``P(w) - D(alpha)`` written out in full), a missing factor 2 or ``1/p``
    (or ``p`` in ``f*(-alpha)``), the margin 1 instead of ``1/r``.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    return run_checker(lambda case: _diagnose_gap(fn, case),
                       adversarial=_gap_adversarial(),
                       strategy=_gap_cases(), max_examples=max_examples,
                       what="your duality gap", names=("K", "w", "r"))
