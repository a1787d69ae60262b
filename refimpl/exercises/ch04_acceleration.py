r"""Exercise checkers of Chapter 4 (Nesterov acceleration, FSMRank).

The three pieces a student writes when building FISTA by hand, each checked
against a trusted reference on adversarial and random cases:

* :func:`check_prox_grad_step` -- one proximal-gradient step for
  ``F(w) = C sum_p max(0, 1 - (K w)_p)^2 + lam ||w||_1`` (the book's eq.
  (4.4) with soft-thresholding, refimpl's :class:`~refimpl.penalties.L1`);
* :func:`check_fista_momentum` -- one momentum update ``(w_t, w_{t-1},
  theta_t) -> (z_{t+1}, theta_{t+1})`` (eq. (4.5));
* :func:`check_backtracking` -- the line search that multiplies ``L`` by
  ``eta`` until the majorisation test (eq. (4.7)) holds.

Each diagnosis recomputes the typical wrong answers (step ``L`` instead of
``1/L``, threshold ``lam`` instead of ``lam/L``, the gradient's sign, the
index of ``t`` in the momentum coefficient, a missing square root, ...) and
names the one the student's answer matches.

Derived in: book/04_fsmrank_nesterov.md#fsmrank
"""

from __future__ import annotations

import math

import numpy as np

from ..penalties import L1
from ._harness import (CheckResult, Suspects, only_match, record,
                       run_checker)

__all__ = ["check_backtracking", "check_fista_momentum", "check_prox_grad_step"]

_RTOL, _ATOL = 1e-9, 1e-12


def _close(a, b) -> bool:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=_RTOL, atol=_ATOL))


def _first_match(answer, variants):
    """The message of the one variant ``answer`` equals, or None (also when
    two variants give the same answer on this case)."""
    return only_match(((m, v) for v, m in variants),
                      lambda v: _close(answer, v))


def _soft(v, t):
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def _hinge_grad(K, C, w):
    """Gradient of ``C sum_p max(0, 1 - (K w)_p)^2``: ``-2C K^T max(0, 1 - Kw)``."""
    return -2.0 * C * (K.T @ np.maximum(0.0, 1.0 - K @ w))


def _hinge_fun(K, C, w):
    return C * float(np.sum(np.maximum(0.0, 1.0 - K @ w) ** 2))


def _random_problem(seed, p, d):
    rng = np.random.default_rng(seed)
    K = rng.normal(size=(p, d))
    z = rng.normal(scale=0.5, size=d)
    C = float(rng.choice([0.05, 0.5, 2.0]))
    lam = float(rng.choice([0.1, 0.7, 1.5]))
    L = float(rng.choice([0.3, 3.0, 25.0]))
    return K, z, C, lam, L


def _strategy(build):
    from hypothesis import strategies as st
    return st.builds(build, st.integers(0, 2**31 - 1), st.integers(2, 9),
                     st.integers(1, 6))


# -- one proximal-gradient step ------------------------------------------------

def prox_grad_step_reference(z, K, C, lam, L):
    """``prox_{g/L}(z - grad f(z)/L)`` with ``g = lam ||.||_1`` (refimpl's L1)."""
    g = _hinge_grad(K, C, z)
    return L1(lam).prox(z - g / L, 1.0 / L)


def _step_mistakes(z, K, C, lam, L):
    """(diagnosis, the step that mistake returns) for the usual mistakes."""
    g = _hinge_grad(K, C, z)
    v = z - g / L
    return [
        ("you step by L times the gradient: the step of the proximal-"
         "gradient method is 1/L, not L", _soft(z - L * g, lam / L)),
        ("you step by L times the gradient and threshold at lam*L: the step "
         "is 1/L, the threshold lam/L", _soft(z - L * g, lam * L)),
        ("you threshold at lam instead of lam/L: the prox of (1/L) lam "
         "||.||_1 soft-thresholds at lam/L", _soft(v, lam)),
        ("you threshold at lam*L instead of lam/L", _soft(v, lam * L)),
        ("wrong sign of the gradient: you step along +grad f; the gradient "
         "of max(0, 1 - Kw)^2 is -2 K^T max(0, 1 - Kw) (times C)",
         _soft(z + g / L, lam / L)),
        ("missing factor 2 in the gradient of the squared hinge: "
         "-2C K^T max(0, 1 - Kw)", _soft(z - g / (2 * L), lam / L)),
        ("missing factor C in the gradient: f is C times the squared hinge, "
         "so its gradient is -2C K^T max(0, 1 - Kw)",
         _soft(z - g / (C * L), lam / L)),
        ("your gradient drops the max(0, .): pairs with 1 - (Kz)_p < 0 "
         "contribute nothing to -2C K^T max(0, 1 - Kz)",
         _soft(z + 2 * C * (K.T @ (1.0 - K @ z)) / L, lam / L)),
        ("your gradient clips the wrong quantity: max(0, .) applies to the "
         "residuals 1 - (Kz)_p, before K^T; you clip K^T (1 - Kz)",
         _soft(z + 2 * C * np.maximum(0.0, K.T @ (1.0 - K @ z)) / L,
               lam / L)),
        ("you return the gradient step without the prox: soft-threshold it "
         "at lam/L", v),
        ("your soft-thresholding zeroes the negative entries (max(v - t, 0)"
         " or sign(v) max(v - t, 0)): use sign(v) max(|v| - t, 0)",
         np.maximum(v - lam / L, 0.0)),
    ]


def check_prox_grad_step(fn, max_examples=80) -> CheckResult:
    r"""Check ``fn(z, K, C, lam, L)``: one proximal-gradient step.

    ``fn`` must return ``prox_{g/L}(z - \nabla f(z)/L)`` for ``f(w) = C
    sum_p max(0, 1 - (K w)_p)^2`` (``K`` the pair-difference matrix, one row
    per pair) and ``g = lam ||w||_1``, i.e. soft-thresholding of the gradient
    step ``z - \nabla f(z)/L`` at ``lam/L``.

    Recognised mistakes: step ``L`` instead of ``1/L``; threshold ``lam``
    (or ``lam L``) instead of ``lam/L``; the gradient's sign; a missing
    factor 2 or C in the gradient; the gradient without ``max(0, .)`` or
    with it around ``K^T (1 - Kz)``; no thresholding; thresholding that
    treats negative entries wrongly.  The first case separates them all
    (every one gives a different step there).
    """
    suspects = Suspects()

    def diagnose(case):
        K, z, C, lam, L = case
        ref = prox_grad_step_reference(z, K, C, lam, L)
        record(z=z.copy(), K=K.copy(), C=C, lam=lam, L=L, expected=ref)
        ans = fn(z.copy(), K.copy(), C, lam, L)
        record(got=ans)
        if ans is None:
            return "your function returned None; return the new point w"
        if np.shape(ans) != ref.shape:
            return (f"wrong shape: you return shape {np.shape(ans)}, the step "
                    f"is a vector of shape {ref.shape}")
        cands = _step_mistakes(z, K, C, lam, L)
        if _close(ans, ref):
            suspects.clear(cands, lambda v: _close(v, ref))
            return None
        msg = suspects.name(cands, lambda v: _close(ans, v))
        if msg:
            return msg
        j = int(np.argmax(np.abs(np.asarray(ans, float) - ref)))
        return (f"differs from refimpl's step at coordinate {j}; compare "
                "your gradient with -2C K^T max(0, 1 - Kz) and your prox "
                "with soft-thresholding at lam/L")

    rng = np.random.default_rng(4)
    K0 = rng.normal(size=(6, 4))
    # first, a small case on which each mistake gives its own step (one
    # pair inactive, entries of both signs, one thresholded to 0, C != 2)
    K1 = np.array([[0.1, -0.1, 0.6], [0.1, -0.5, 0.4], [1.3, 0.9, -0.7],
                   [-1.3, -0.6, 0.0]])
    adversarial = [
        (K1, np.array([-1.2, -0.1, -0.6]), 0.7, 0.2, 4.0),
        (K0, np.zeros(4), 0.5, 0.7, 3.0),                  # every pair active
        (K0, np.array([-1.0, 0.5, -0.2, 2.0]), 0.05, 1.5, 0.3),  # L < 1
    ]
    return run_checker(diagnose, adversarial=adversarial,
                       strategy=_strategy(_random_problem),
                       max_examples=max_examples,
                       what="your proximal-gradient step",
                       names=("K", "z", "C", "lam", "L"))


# -- the momentum update -----------------------------------------------------------

def fista_momentum_reference(w, w_prev, t):
    r"""FISTA's momentum step, the trusted reference.

    ``theta_{t+1} = (1 + sqrt(1 + 4 theta_t^2))/2`` and
    ``z_{t+1} = w_t + (theta_t - 1)/theta_{t+1} (w_t - w_{t-1})``.
    """
    t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
    return w + (t - 1.0) / t_next * (w - w_prev), t_next


def check_fista_momentum(fn, max_examples=80) -> CheckResult:
    r"""Check ``fn(w, w_prev, t) -> (z_next, t_next)``: FISTA's momentum step.

    With ``w = w_t``, ``w_prev = w_{t-1}`` and ``t = theta_t`` it must return
    ``theta_{t+1} = (1 + sqrt(1 + 4 theta_t^2))/2`` and the next search point
    ``z_{t+1} = w_t + (theta_t - 1)/theta_{t+1} (w_t - w_{t-1})``.

    Recognised mistakes: the coefficient ``(theta_{t+1} - 1)/theta_{t+1}``
    or ``(theta_t - 1)/theta_t`` (index off by one); ``theta_{t+1}`` without
    the square root, without squaring ``theta_t``, or as ``theta_t + 1/2``;
    the momentum added to ``w_{t-1}`` instead of ``w_t``, or with the wrong
    sign.
    """
    def diagnose(case):
        w, w_prev, t = case
        z_ref, t_ref = fista_momentum_reference(w, w_prev, t)
        record(w=w.copy(), w_prev=w_prev.copy(), t=t,
               expected=(z_ref, t_ref))
        out = fn(w.copy(), w_prev.copy(), t)
        record(got=out)
        try:
            z, t_next = out
        except (TypeError, ValueError):
            return "return a pair (z_next, t_next)"
        if np.shape(z) != z_ref.shape:
            return f"z_next has shape {np.shape(z)}, expected {z_ref.shape}"
        t_next = float(t_next)
        if not math.isclose(t_next, t_ref, rel_tol=1e-12):
            msg = _first_match(t_next, [
                (0.5 * (1 + 1 + 4 * t * t), "theta_{t+1} lacks the square "
                 "root: it is (1 + sqrt(1 + 4 theta_t^2))/2"),
                (0.5 * (1 + math.sqrt(1 + 4 * t)), "theta_{t+1} uses theta_t "
                 "instead of theta_t^2 under the square root"),
                (0.5 * (1 + math.sqrt(1 + 2 * t * t)), "theta_{t+1}: the factor "
                 "under the square root is 4, not 2"),
                (t + 0.5, "theta_{t+1} = theta_t + 1/2 is only how fast "
                 "theta grows; the update is (1 + sqrt(1 + 4 theta_t^2))/2"),
                (0.5 * (1 + math.sqrt(1 + 4 * t * t)) - 1, "theta_{t+1} is "
                 "(1 + sqrt(1 + 4 theta_t^2))/2; you subtract 1"),
                (t, "you return theta_t unchanged as t_next: return "
                 "theta_{t+1} = (1 + sqrt(1 + 4 theta_t^2))/2"),
            ])
            return msg or ("t_next is not (1 + sqrt(1 + 4 theta_t^2))/2")
        if _close(z, z_ref):
            return None
        d = w - w_prev
        msg = _first_match(z, [
            (w + (t_ref - 1) / t_ref * d, "off by one in the momentum "
             "coefficient: it is (theta_t - 1)/theta_{t+1}, you use "
             "(theta_{t+1} - 1)/theta_{t+1}"),
            (w + (t - 1) / t * d, "off by one in the momentum coefficient: it "
             "is (theta_t - 1)/theta_{t+1}, you use (theta_t - 1)/theta_t"),
            (w + (t_ref - 1) / t * d, "the momentum "
             "coefficient is (theta_t - 1)/theta_{t+1}: you swapped the "
             "indices"),
            (w_prev + (t - 1) / t_ref * d, "momentum applied to the wrong "
             "point: z_{t+1} extrapolates from the new iterate w_t, not from "
             "w_{t-1}"),
            (w - (t - 1) / t_ref * d, "wrong sign of the momentum: z_{t+1} = "
             "w_t + beta (w_t - w_{t-1}), a step further along w_t - w_{t-1}"),
            (w, "z_{t+1} = w_t: no momentum at all (that is ISTA)"),
        ])
        return msg or ("z_next differs from w_t + (theta_t - 1)/theta_{t+1} "
                       "(w_t - w_{t-1})")

    def build(seed, d, k):
        rng = np.random.default_rng(seed)
        t = 1.0
        for _ in range(k + int(rng.integers(0, 30))):
            t = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        return rng.normal(size=d), rng.normal(size=d), t

    rng = np.random.default_rng(7)
    a, b = rng.normal(size=3), rng.normal(size=3)
    adversarial = [(a, b, 1.0), (a, b, 0.5 * (1 + math.sqrt(5))),
                   (a, b, 7.25), (b, a, 40.0)]
    from hypothesis import strategies as st
    return run_checker(diagnose, adversarial=adversarial,
                       strategy=st.builds(build, st.integers(0, 2**31 - 1),
                                          st.integers(1, 6),
                                          st.integers(0, 5)),
                       max_examples=max_examples,
                       what="your momentum update",
                       names=("w", "w_prev", "t"))


# -- the backtracking line search ------------------------------------------------

def _backtrack(f, grad, prox, z, L, eta, test="correct", grow="correct",
               max_trials=200):
    """Backtracking from ``L`` (reference, and the checker's wrong variants)."""
    fz, g = f(z), grad(z)
    for _ in range(max_trials):
        w = prox(z - g / L, 1.0 / L)
        d = w - z
        q = fz + g @ d + 0.5 * L * (d @ d)
        if test == "no_inner":
            q = fz + 0.5 * L * (d @ d)
        if test == "no_half":
            q = fz + g @ d + L * (d @ d)
        ok = f(w) >= q if test == "reversed" else f(w) <= q
        if ok:
            return w, L
        L = {"correct": L * eta, "plus": L + eta, "double": 2.0 * L,
             "square": L * eta * eta}[grow]
    return w, L


def backtracking_reference(f, grad, prox, z, L, eta):
    r"""Backtracking, the trusted reference: multiply ``L`` by ``eta`` until

    ``f(w) <= f(z) + <grad f(z), w - z> + L/2 ||w - z||^2``.

    ``w = prox(z - grad f(z)/L, 1/L)``; returns ``(w, L)`` at the first
    ``L`` (of ``L, eta L, eta^2 L, ...``) that passes the test.
    """
    return _backtrack(f, grad, prox, z, L, eta)


def check_backtracking(fn, max_examples=60) -> CheckResult:
    r"""Check ``fn(f, grad, prox, z, L, eta) -> (w, L_accepted)``.

    ``f(w)`` and ``grad(w)`` are the smooth part, ``prox(v, step)`` the
    proximal map of the penalty (``prox_{step g}(v)``).  Starting from ``L``,
    the line search must try ``w = prox(z - grad(z)/L, 1/L)``, accept it when

    ``f(w) <= f(z) + <grad(z), w - z> + (L/2) ||w - z||^2``

    and otherwise multiply ``L`` by ``eta`` and try again; return the accepted
    ``w`` and ``L``.

    Recognised mistakes: the test without the ``<grad(z), w - z>`` term or
    without the factor 1/2; the inequality reversed; ``L`` increased by
    ``eta`` (added), doubled whatever ``eta``, or multiplied by ``eta^2``;
    the returned ``w`` not the one accepted (from a different ``L``).
    """
    def diagnose(case):
        K, z, C, lam, L, eta = case

        def f(w):
            return _hinge_fun(K, C, w)

        def grad(w):
            return _hinge_grad(K, C, w)

        def prox(v, step):
            return L1(lam).prox(v, step)

        w_ref, L_ref = backtracking_reference(f, grad, prox, z, L, eta)
        record(f="C sum_p max(0, 1 - (K w)_p)^2", K=K.copy(), C=C,
               prox="soft-thresholding at lam * step", lam=lam,
               z=z.copy(), L=L, eta=eta, expected=(w_ref, L_ref))
        out = fn(f, grad, prox, z.copy(), L, eta)
        record(got=out)
        try:
            w, L_acc = out
            L_acc = float(L_acc)
        except (TypeError, ValueError):
            return "return a pair (w, L) : the accepted point and its L"
        if math.isclose(L_acc, L_ref, rel_tol=1e-12) and _close(w, w_ref):
            return None
        if math.isclose(L_acc, L_ref, rel_tol=1e-12):
            if _close(w, prox(z - grad(z) / (L_acc / eta), eta / L_acc)):
                return ("you return the w of the previous (rejected) L: "
                        "return the prox point of the accepted L")
            if _close(w, prox(z - grad(z) / L_acc, L_acc)):
                return ("you call prox(v, L): the prox step of the trial "
                        "point is 1/L, w = prox(z - grad(z)/L, 1/L)")
            return ("the accepted L is right but w is not prox(z - grad(z)"
                    "/L, 1/L) at that L")
        cands = []
        for kw, msg in (
                (dict(test="no_inner"), "your test misses the <grad f(z), "
                 "w - z> term of the quadratic upper bound"),
                (dict(test="reversed"), "wrong inequality direction: accept "
                 "when f(w) <= the quadratic upper bound, not >="),
                (dict(test="no_half"), "missing factor 1/2 in the test: the "
                 "quadratic upper bound has (L/2) ||w - z||^2, not "
                 "L ||w - z||^2"),
                (dict(grow="plus"), "L is not increased by the factor: "
                 "multiply L by eta (you add eta)"),
                (dict(grow="double"), "L is not increased by the factor eta: "
                 "you double it whatever eta is"),
                (dict(grow="square"), "L is not increased by the factor eta: "
                 "you multiply by eta^2")):
            cands.append((msg, _backtrack(f, grad, prox, z, L, eta, **kw)[1]))
        msg = only_match(cands, lambda v: math.isclose(L_acc, v,
                                                       rel_tol=1e-12))
        if msg:
            return msg
        if math.isclose(L_acc, L, rel_tol=1e-12):
            return ("you accept the first L, where the test fails")
        return "you accept an L that is not the first of L eta^j to pass"

    def build(seed, p, d):
        K, z, C, lam, _ = _random_problem(seed, p, d)
        L_f = 2 * C * float(np.linalg.eigvalsh(K.T @ K)[-1])
        eta = float(np.random.default_rng(seed).choice([1.5, 3.0, 5.0]))
        return K, z, C, lam, max(L_f, 1e-3) / 200.0, eta

    rng = np.random.default_rng(11)
    K0 = rng.normal(size=(8, 5))
    L_f = 2 * 0.5 * float(np.linalg.eigvalsh(K0.T @ K0)[-1])
    adversarial = [(K0, np.zeros(5), 0.5, 0.3, L_f / 300, 3.0),
                   (K0, rng.normal(size=5), 0.5, 0.05, L_f / 40, 1.5),
                   (K0, rng.normal(size=5), 0.5, 1.0, L_f / 1000, 2.0)]
    return run_checker(diagnose, adversarial=adversarial,
                       strategy=_strategy(build), max_examples=max_examples,
                       what="your backtracking line search")
