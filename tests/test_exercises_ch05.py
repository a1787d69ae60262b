"""The checkers of Chapter 5's exercises accept refimpl and catch planted bugs."""

import numpy as np
import pytest

from refimpl.exercises import (check_reweighting_weights,
                               check_weighted_soft_threshold)
from refimpl.nonconvex import MCP, LogPenalty, LpPenalty
from refimpl.penalties import WeightedL1
from test_exercises_ch01 import assert_diagnosed


def log_ok(w, eps):
    return 1.0 / (eps + np.abs(w))


def lp_ok(w, p, eps):
    return p * (np.abs(w) + eps) ** (p - 1)


def mcp_ok(w, gamma, lam):
    return np.maximum(1 - np.abs(w) / (gamma * lam), 0)


@pytest.mark.parametrize("penalty, fn", [
    ("log", lambda w, eps: LogPenalty(eps).weights(w)),
    ("lp", lambda w, p, eps: LpPenalty(p, eps).weights(w)),
    ("mcp", lambda w, gamma, lam: MCP(gamma, lam).weights(w)),
    ("log", log_ok), ("lp", lp_ok), ("mcp", mcp_ok),
    # unusual but right: a loop with branches, the derivative by the
    # quotient of differences of log1p, np.clip for MCP
    ("mcp", lambda w, gamma, lam: np.array(
        [1 - abs(x) / (gamma * lam) if abs(x) < gamma * lam else 0.0
         for x in w])),
    ("mcp", lambda w, gamma, lam: np.clip(
        (gamma * lam - np.abs(w)) / (gamma * lam), 0, None)),
    ("lp", lambda w, p, eps: p * np.exp((p - 1) * np.log(np.abs(w) + eps))),
    ("log", lambda w, eps: np.reciprocal(np.hypot(w, 0) + eps))])
def test_weights_accept_reference(penalty, fn):
    res = check_reweighting_weights(fn, penalty=penalty)
    assert res.passed, res.message


@pytest.mark.parametrize("penalty, fn, words", [
    ("log", lambda w, eps: 1 / np.abs(w), ["epsilon"]),
    ("log", lambda w, eps: 1 / np.abs(w) + eps, ["infinite", "epsilon"]),
    ("log", lambda w, eps: 1 / (eps + w), ["|w|"]),
    ("log", lambda w, eps: np.log1p(np.abs(w) / eps), ["not", "derivative"]),
    ("log", lambda w, eps: 1 / (1 + np.abs(w) / eps), ["chain rule"]),
    ("log", lambda w, eps: 0.5 * (np.abs(w) + eps) ** -0.5, ["l_p"]),
    ("lp", lambda w, p, eps: p * np.abs(w) ** (p - 1), ["epsilon"]),
    ("lp", lambda w, p, eps: (np.abs(w) + eps) ** (p - 1), ["factor p"]),
    ("lp", lambda w, p, eps: 1 / (eps + np.abs(w)), ["log"]),
    ("lp", lambda w, p, eps: p * (w + eps) ** (p - 1), ["|w|"]),
    ("mcp", lambda w, gamma, lam: 1 - np.abs(w) / (gamma * lam),
     ["zero region"]),
    ("mcp", lambda w, gamma, lam: np.maximum(1 - np.abs(w) / lam, 0),
     ["knee"]),
    ("mcp", lambda w, gamma, lam: np.maximum(1 - w / (gamma * lam), 0),
     ["|w|"]),
    ("mcp", lambda w, gamma, lam: np.maximum(1 - np.abs(w) / gamma, 0),
     ["divide by gamma alone"]),
    ("mcp", lambda w, gamma, lam: np.where(
        np.abs(w) <= gamma * lam,
        np.abs(w) - w * w / (2 * gamma * lam), gamma * lam / 2),
     ["penalty g(|w|)"]),
    ("lp", lambda w, p, eps: p * (np.abs(w) + eps) ** p, ["exponent"]),
])
def test_weights_catch_bugs(penalty, fn, words):
    res = check_reweighting_weights(fn, penalty=penalty)
    for word in words:
        assert_diagnosed(res, word)


def test_weights_shape_and_unknown_penalty():
    res = check_reweighting_weights(lambda w, eps: 1.0, penalty="log")
    assert not res.passed and "shape" in res.message
    with pytest.raises(ValueError):
        check_reweighting_weights(log_ok, penalty="scad")


def wst_loop(v, b, t):
    out = np.zeros(len(v))
    for j in range(len(v)):
        if abs(v[j]) > t * b[j]:
            out[j] = v[j] - t * b[j] * (1 if v[j] > 0 else -1)
    return out


@pytest.mark.parametrize("fn", [
    lambda v, b, t: WeightedL1(b).prox(v, t),
    lambda v, b, t: np.sign(v) * np.maximum(np.abs(v) - t * b, 0),
    lambda v, b, t: v - np.clip(v, -t * b, t * b),       # Moreau
    wst_loop])
def test_soft_threshold_accepts(fn):
    res = check_weighted_soft_threshold(fn)
    assert res.passed, res.message


@pytest.mark.parametrize("fn, word", [
    (lambda v, b, t: np.sign(v) * np.maximum(np.abs(v) - b, 0), "step"),
    (lambda v, b, t: np.sign(v) * np.maximum(np.abs(v) - t, 0), "weights"),
    (lambda v, b, t: np.maximum(v - t * b, 0), "negative"),
    (lambda v, b, t: np.where(np.abs(v) > t * b, v, 0.0), "hard"),
    (lambda v, b, t: np.sign(v) * (np.abs(v) - t * b), "max(., 0)"),
    (lambda v, b, t: np.sign(v) * (np.abs(v) + t * b), "wrong way"),
    (lambda v, b, t: np.sign(v) * np.maximum(
        np.abs(v) - t / np.where(b > 0, b, np.inf), 0), "divide"),
    (lambda v, b, t: np.sign(v) * np.maximum(np.abs(v) - t * b / 2, 0),
     "half"),
])
def test_soft_threshold_catches_bugs(fn, word):
    assert_diagnosed(check_weighted_soft_threshold(fn), word)


def test_soft_threshold_reports_exceptions():
    def broken(v, b, t):
        raise RuntimeError("boom")
    res = check_weighted_soft_threshold(broken)
    assert not res.passed and "RuntimeError" in res.message
