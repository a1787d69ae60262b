"""Chapter 3's exercise checkers accept refimpl and name planted mistakes."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from refimpl import data, pairs
from refimpl.exercises import (check_duality_gap, check_exact_step,
                               check_lmo_l1_ball)
from refimpl.exercises.ch03_fenchel import _gap_parts, _walk
from refimpl.kernels.fenchel import linesearch_pairs
from refimpl.losses import PairwiseSquaredHinge
from refimpl.solvers import fenchelrank
from test_exercises_ch01 import assert_diagnosed

# ---------------------------------------------------------------- exact step


def _ref_step(a, c):
    return float(linesearch_pairs(np.ascontiguousarray(a, float),
                                  np.ascontiguousarray(c, float)))


def _walk_bug(a, c, *, factor=1.0, top=1.0):
    """The sign-change walk with a planted factor or without the clip."""
    nz = c != 0
    bps = np.unique(a[nz] / c[nz])
    lo = 0.0
    for hi in np.r_[bps[(bps > 0) & (bps < top)], top]:
        on = a - 0.5 * (lo + hi) * c > 0 if np.isfinite(hi) else a - (lo + 1) * c > 0
        s_ac, s_cc = a[on] @ c[on], c[on] @ c[on]
        if s_ac <= lo * s_cc:
            return lo
        if s_ac <= hi * s_cc:
            return factor * s_ac / s_cc
        lo = hi
    return top


def test_exact_step_accepts_refimpl_and_the_walk():
    assert check_exact_step(_ref_step).passed
    res = check_exact_step(lambda a, c: _walk(a, c))
    assert res.passed, res.message


def step_by_candidates(a, c):
    """Every point where the minimiser can be (0, 1, the breakpoints and
    each piece's root S_ac / S_cc), then the one with the least phi."""
    nz = c != 0
    pts = [0.0, 1.0] + [float(b) for b in a[nz] / c[nz] if 0 < b < 1]
    for lo, hi in zip(sorted(pts)[:-1], sorted(pts)[1:]):
        on = a - 0.5 * (lo + hi) * c > 0
        if c[on] @ c[on] > 0:
            pts.append(min(max(a[on] @ c[on] / (c[on] @ c[on]), lo), hi))
    return min(pts, key=lambda m: (np.sum(np.maximum(0, a - m * c) ** 2), m))


def step_by_bisection(a, c):
    """phi' is non-decreasing: bisect its sign change to the last bit."""
    def dphi(m):
        return -2 * c @ np.maximum(0, a - m * c)
    if dphi(0.0) >= 0:
        return 0.0
    if dphi(1.0) <= 0:
        return 1.0
    lo, hi = 0.0, 1.0
    while lo < np.nextafter(hi, 0) and (lo + hi) / 2 not in (lo, hi):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if dphi(mid) < 0 else (lo, mid)
    return hi


@pytest.mark.parametrize("fn", [step_by_candidates, step_by_bisection])
def test_exact_step_accepts_other_algorithms(fn):
    res = check_exact_step(fn)
    assert res.passed, res.message


def test_exact_step_accepts_a_brute_force_minimiser():
    def brute(a, c):
        grid = np.linspace(0, 1, 20001)
        vals = [np.sum(np.maximum(0, a - m * c) ** 2) for m in grid]
        m0 = grid[int(np.argmin(vals))]
        return m0   # grid accuracy: rejected unless phi is nearly flat
    res = check_exact_step(brute, max_examples=20)
    # a grid answer is close but not exact: the message says where phi' is
    assert res.passed or "phi'" in res.message


@pytest.mark.parametrize("bug, words", [
    (lambda a, c: _walk(a, -c), ["wrong sign"]),
    (lambda a, c: _walk_bug(a, c, top=np.inf), ["[0, 1]"]),
    (lambda a, c: _walk(a, c, sort=False), ["not sorted"]),
    (lambda a, c: _walk(a, c, entering=False), ["never lets a pair enter"]),
    (lambda a, c: _walk(a, c, left=True), ["left end"]),
    (lambda a, c: _walk_bug(a, c, factor=0.5), ["factor 2"]),
    (lambda a, c: min(1.0, max(0.0, (a[a > 0] @ c[a > 0])
                               / max(c[a > 0] @ c[a > 0], 1e-300))),
     ["closed-form", "active at tau = 0"]),
    (lambda a, c: min(1.0, max(0.0, (a @ c) / max(c @ c, 1e-300))),
     ["quadratic", "all pairs"]),
])
def test_exact_step_names_planted_bugs(bug, words):
    res = check_exact_step(bug)
    for word in words:
        assert_diagnosed(res, word)


def test_exact_step_walks_are_not_called_closed_form():
    for kw in (dict(entering=False), dict(left=True)):
        res = check_exact_step(lambda a, c: _walk(a, c, **kw))
        assert "closed-form" not in res.message, res.message


def test_exact_step_reports_exceptions_and_shapes():
    res = check_exact_step(lambda a, c: np.array([0.5, 0.5]))
    assert not res.passed and "shape" in res.message

    def boom(a, c):
        raise ZeroDivisionError("x")
    res = check_exact_step(boom)
    assert not res.passed and "ZeroDivisionError" in res.message


# ----------------------------------------------------------------------- LMO


def _lmo(grad, radius):
    j = int(np.argmax(np.abs(grad)))
    v = np.zeros_like(grad)
    v[j] = -radius * (np.sign(grad[j]) or 1.0)
    return v


def lmo_loop(grad, radius):
    """Try both signed vertices of every coordinate; keep the best."""
    best, v_best = np.inf, None
    for j in range(len(grad)):
        for s in (-1.0, 1.0):
            v = np.zeros(len(grad))
            v[j] = s * radius
            if grad @ v < best:
                best, v_best = grad @ v, v
    return v_best


def lmo_argmin(grad, radius):
    """The minimising vertex via argmin over the stacked [grad, -grad]."""
    d = len(grad)
    k = int(np.argmin(np.r_[grad, -grad]))
    v = np.zeros(d)
    v[k % d] = radius if k < d else -radius
    return v


@pytest.mark.parametrize("fn", [_lmo, lmo_loop, lmo_argmin])
def test_lmo_accepts(fn):
    res = check_lmo_l1_ball(fn)
    assert res.passed, res.message


def _no_abs(grad, radius):
    j = int(np.argmax(grad))
    v = np.zeros_like(grad)
    v[j] = -radius * np.sign(grad[j])
    return v


def _no_radius(grad, radius):
    return _lmo(grad, 1.0)


@pytest.mark.parametrize("bug, word", [
    (lambda g, r: -_lmo(g, r), "wrong sign"),
    (_no_abs, "|grad_j|"),
    (_no_radius, "radius missing"),
    (lambda g, r: int(np.argmax(np.abs(g))), "index"),
    (lambda g, r: 2 * _lmo(g, r), "|v_j| = radius"),
    (lambda g, r: -r * np.sign(g) / len(g), "non-zero entries"),
])
def test_lmo_names_planted_bugs(bug, word):
    assert_diagnosed(check_lmo_l1_ball(bug), word)


def test_lmo_rejects_non_vertex_minimiser():
    def spread(grad, radius):   # the midpoint of two tied vertices
        if len(grad) >= 2 and abs(grad[0]) == abs(grad[1]) > 0:
            v = np.zeros_like(grad)
            v[:2] = -radius / 2 * np.sign(grad[:2])
            return v
        return _lmo(grad, radius)
    res = check_lmo_l1_ball(spread)
    assert not res.passed and "vertex" in res.message


# ----------------------------------------------------------------------- gap


def _gap(K, w, r):
    p = K.shape[0]
    d = 2 * r**2 / p * np.maximum(0, 1 / r - K @ w)
    g = K.T @ d
    return np.max(np.abs(g)) - g @ w


def test_gap_reference_is_the_solvers_gap():
    syn = data.make_synthetic_letor(n_queries=6, docs_per_query=(3, 6),
                                    n_informative=2, n_redundant=1,
                                    n_noise=2, seed=3)
    K = pairs.pair_difference_matrix(syn.X, syn.y, syn.qid)
    r = 2.0
    loss = PairwiseSquaredHinge(syn.X, syn.y, syn.qid, margin=1 / r,
                                normalize=True)
    with pytest.warns(ConvergenceWarning):   # five updates on purpose
        res = fenchelrank(loss, r, tol=0.0, max_iter=5, line_search="pairs")
    G, g = _gap_parts(K, res.w, r)
    gap = float(np.max(np.abs(g)) - g @ res.w)
    assert np.isclose(gap, res.history["gap"][-1], rtol=1e-10)
    assert np.isclose(G, res.history["obj"][-1], rtol=1e-10)
    assert np.isclose(_gap(K, res.w, r), gap, rtol=1e-10)


def test_gap_accepts_reference_and_primal_minus_dual():
    assert check_duality_gap(_gap).passed

    def p_minus_d(K, w, r):
        p = K.shape[0]
        res = np.maximum(0, 1 / r - K @ w)
        d = 2 * r**2 / p * res
        P = p / (4 * r**2) * d @ d - d.sum() / r + np.max(np.abs(K.T @ d))
        return P + r**2 / p * res @ res
    res = check_duality_gap(p_minus_d)
    assert res.passed, res.message

    def gap_pair_loop(K, w, r):
        p, m = K.shape
        g, f_star = np.zeros(m), 0.0
        for t in range(p):
            res_t = max(0.0, 1 / r - K[t] @ w)
            g += 2 * r**2 / p * res_t * K[t]
            f_star += r**2 / p * res_t ** 2
        return max(abs(g)) - g @ w
    res = check_duality_gap(gap_pair_loop)
    assert res.passed, res.message


def _bug_f_missing(K, w, r):
    p = K.shape[0]
    res = np.maximum(0, 1 / r - K @ w)
    d = 2 * r**2 / p * res
    return np.max(np.abs(K.T @ d)) + r**2 / p * res @ res


def _bug_noclip(K, w, r):
    p = K.shape[0]
    d = 2 * r**2 / p * (1 / r - K @ w)
    g = K.T @ d
    return np.max(np.abs(g)) - g @ w


def _bug_noabs(K, w, r):
    p = K.shape[0]
    d = 2 * r**2 / p * np.maximum(0, 1 / r - K @ w)
    g = K.T @ d
    return np.max(g) - g @ w


def _bug_full_noclip(K, w, r):
    # P(w) - D(alpha) in full, alpha from unclipped residuals (the exercise's form)
    p = K.shape[0]
    res = 1 / r - K @ w
    d = 2 * r**2 / p * res
    P = p / (4 * r**2) * d @ d - d.sum() / r + np.max(np.abs(K.T @ d))
    return P + r**2 / p * np.maximum(0, res) @ np.maximum(0, res)


def _bug_full_no_p(K, w, r):
    p = K.shape[0]
    res = np.maximum(0, 1 / r - K @ w)
    d = 2 * r**2 / p * res
    P = 1 / (4 * r**2) * d @ d - d.sum() / r + np.max(np.abs(K.T @ d))
    return P + r**2 / p * res @ res


@pytest.mark.parametrize("bug, word", [
    (_bug_full_noclip, "non-negative"),
    (_bug_full_no_p, "factor p"),
    (lambda K, w, r: _gap(K, w, r) + 2 * (K.T @ (
        2 * r**2 / K.shape[0] * np.maximum(0, 1 / r - K @ w))) @ w,
     "wrong sign"),
    (_bug_f_missing, "conjugate term"),
    (_bug_noclip, "non-negative"),
    (_bug_noabs, "max_j |(K^T alpha_t)_j|"),
    (lambda K, w, r: _gap(K, w, r) / 2, "factor 2"),
    (lambda K, w, r: _gap(K, w, r) * K.shape[0], "1/p"),
])
def test_gap_names_planted_bugs(bug, word):
    assert_diagnosed(check_duality_gap(bug), word)
