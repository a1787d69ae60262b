"""Chapter 4's exercise checkers: the reference passes, planted bugs are named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from refimpl.exercises import (check_backtracking, check_fista_momentum,
                               check_prox_grad_step)
from refimpl.exercises.ch04_acceleration import (backtracking_reference,
                                                 fista_momentum_reference,
                                                 prox_grad_step_reference)
from test_exercises_ch01 import assert_diagnosed


def soft(v, t):
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def grad(z, K, C):
    return -2.0 * C * K.T @ np.maximum(0.0, 1.0 - K @ z)


# -- proximal-gradient step ---------------------------------------------------

def step_naive(z, K, C, lam, L):
    return soft(z - grad(z, K, C) / L, lam / L)


def step_loops(z, K, C, lam, L):
    """Pair by pair for the gradient, coordinate by coordinate for the prox."""
    g = np.zeros_like(z)
    for k in K:
        g -= 2 * C * max(0.0, 1 - k @ z) * k
    v, t = z - g / L, lam / L
    return np.array([x - t if x > t else x + t if x < -t else 0.0
                     for x in v])


def step_moreau(z, K, C, lam, L):
    """The prox as v minus the projection onto the box [-lam/L, lam/L]."""
    r = np.clip(1 - K @ z, 0, None)
    v = z + 2 * C / L * (r @ K)
    return v - np.clip(v, -lam / L, lam / L)


@pytest.mark.parametrize("fn", [prox_grad_step_reference, step_naive,
                                step_loops, step_moreau])
def test_prox_grad_step_accepts_reference(fn):
    res = check_prox_grad_step(fn)
    assert res.passed, res.message


@pytest.mark.parametrize("bug, words", [
    (lambda z, K, C, lam, L: soft(z - L * grad(z, K, C), lam / L), "1/L"),
    (lambda z, K, C, lam, L: soft(z - grad(z, K, C) / L, lam), "lam/L"),
    (lambda z, K, C, lam, L: soft(z + grad(z, K, C) / L, lam / L), "sign"),
    (lambda z, K, C, lam, L: soft(z - grad(z, K, C) / (2 * L), lam / L),
     "factor 2"),
    (lambda z, K, C, lam, L: z - grad(z, K, C) / L, "prox"),
    (lambda z, K, C, lam, L: np.maximum(z - grad(z, K, C) / L - lam / L, 0),
     "negative"),
    (lambda z, K, C, lam, L: soft(z - grad(z, K, 1.0) / L, lam / L),
     "factor C"),
    (lambda z, K, C, lam, L: soft(z + 2 * C * K.T @ (1 - K @ z) / L, lam / L),
     "drops the max(0, .)"),
    (lambda z, K, C, lam, L: soft(
        z + 2 * C * np.maximum(0, K.T @ (1 - K @ z)) / L, lam / L),
     "clips the wrong quantity"),
    (lambda z, K, C, lam, L: soft(z - grad(z, K, C) * L, lam * L),
     "threshold at lam*L"),
])
def test_prox_grad_step_names_bug(bug, words):
    assert_diagnosed(check_prox_grad_step(bug), words)


def test_prox_grad_clipping_after_k_t_is_not_blamed_on_the_prox():
    res = check_prox_grad_step(lambda z, K, C, lam, L: soft(
        z + 2 * C * np.maximum(0, K.T @ (1 - K @ z)) / L, lam / L))
    assert "soft-thresholding zeroes" not in res.message, res.message


# -- momentum --------------------------------------------------------------------

def momentum_naive(w, w_prev, t):
    t_next = (1 + np.sqrt(1 + 4 * t ** 2)) / 2
    return w + (t - 1) / t_next * (w - w_prev), t_next


def momentum_from_sequence(w, w_prev, t):
    """theta_{t+1} as the positive root of x^2 - x - theta_t^2 = 0 (np.roots)."""
    t_next = float(max(np.roots([1.0, -1.0, -t * t]).real))
    beta = (t - 1) / t_next
    return (1 + beta) * w - beta * w_prev, t_next


@pytest.mark.parametrize("fn", [fista_momentum_reference, momentum_naive,
                                momentum_from_sequence])
def test_fista_momentum_accepts_reference(fn):
    res = check_fista_momentum(fn)
    assert res.passed, res.message


def _tn(t):
    return (1 + math.sqrt(1 + 4 * t * t)) / 2


@pytest.mark.parametrize("bug, words", [
    (lambda w, wp, t: (w + (_tn(t) - 1) / _tn(t) * (w - wp), _tn(t)),
     "off by one"),
    (lambda w, wp, t: (w + (t - 1) / t * (w - wp), _tn(t)), "off by one"),
    (lambda w, wp, t: (w + (t - 1) / (1 + 2 * t * t) * (w - wp),
                       1 + 2 * t * t), "square root"),
    (lambda w, wp, t: (w + (t - 1) / (t + .5) * (w - wp), t + .5), "theta_t + 1/2"),
    (lambda w, wp, t: (wp + (t - 1) / _tn(t) * (w - wp), _tn(t)),
     "wrong point"),
    (lambda w, wp, t: (w - (t - 1) / _tn(t) * (w - wp), _tn(t)), "sign"),
    (lambda w, wp, t: (w, _tn(t)), "no momentum"),
    (lambda w, wp, t: (w + (t - 1) / _tn(t) * (w - wp), t), "unchanged"),
])
def test_fista_momentum_names_bug(bug, words):
    assert_diagnosed(check_fista_momentum(bug), words)


# -- backtracking ------------------------------------------------------------------

def backtracking_naive(f, grad, prox, z, L, eta):
    g = grad(z)
    while True:
        w = prox(z - g / L, 1 / L)
        if f(w) <= f(z) + g @ (w - z) + L / 2 * np.sum((w - z) ** 2):
            return w, L
        L = eta * L


def _bt(test="ok", grow="ok", previous=False):
    def fn(f, grad, prox, z, L, eta):
        g = grad(z)
        w_prev = z
        while True:
            w = prox(z - g / L, 1 / L)
            q = f(z) + (L if test == "no_half" else L / 2) * np.sum(
                (w - z) ** 2)
            q += 0 if test == "no_inner" else g @ (w - z)
            if (f(w) >= q) if test == "reversed" else (f(w) <= q):
                return (w_prev if previous else w), L
            w_prev = w
            L = {"ok": eta * L, "plus": L + eta, "double": 2 * L,
                 "square": eta * eta * L}[grow]
    return fn


def backtracking_recursive(f, grad, prox, z, L, eta):
    """Recursion instead of a loop; the bound tested as a difference."""
    g = grad(z)
    w = prox(z - g / L, 1 / L)
    d = w - z
    if f(w) - f(z) - g @ d - L / 2 * d @ d <= 0:
        return w, L
    return backtracking_recursive(f, grad, prox, z, L * eta, eta)


@pytest.mark.parametrize("fn", [backtracking_reference, backtracking_naive,
                                backtracking_recursive])
def test_backtracking_accepts_reference(fn):
    res = check_backtracking(fn)
    assert res.passed, res.message


@pytest.mark.parametrize("bug, words", [
    (_bt(test="no_inner"), "<grad f(z), w - z>"),
    (_bt(test="reversed"), "inequality direction"),
    (_bt(grow="plus"), "factor"),
    (_bt(grow="double"), "factor eta"),
    (_bt(previous=True), "previous"),
    (_bt(test="no_half"), "factor 1/2"),
    (_bt(grow="square"), "eta^2"),
])
def test_backtracking_names_bug(bug, words):
    assert_diagnosed(check_backtracking(bug), words)


def test_checkers_report_exceptions():
    def broken(*args):
        raise RuntimeError("boom")
    for check in (check_prox_grad_step, check_fista_momentum,
                  check_backtracking):
        res = check(broken)
        assert not res.passed and "RuntimeError" in res.message
