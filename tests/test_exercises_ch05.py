"""The checkers of Chapter 5's exercises accept refimpl and catch planted bugs."""

import numpy as np
import pytest

from refimpl.exercises import (check_reweighting_weights,
                               check_weighted_soft_threshold)
from refimpl.nonconvex import MCP, LogPenalty, LpPenalty
from refimpl.penalties import WeightedL1


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
    ("log", log_ok), ("lp", lp_ok), ("mcp", mcp_ok)])
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
])
def test_weights_catch_bugs(penalty, fn, words):
    res = check_reweighting_weights(fn, penalty=penalty)
    assert not res.passed
    for word in words:
        assert word in res.message, res.message


def test_weights_shape_and_unknown_penalty():
    res = check_reweighting_weights(lambda w, eps: 1.0, penalty="log")
    assert not res.passed and "shape" in res.message
    with pytest.raises(ValueError):
        check_reweighting_weights(log_ok, penalty="scad")


def test_soft_threshold_accepts_reference():
    assert check_weighted_soft_threshold(
        lambda v, b, t: WeightedL1(b).prox(v, t)).passed
    res = check_weighted_soft_threshold(
        lambda v, b, t: np.sign(v) * np.maximum(np.abs(v) - t * b, 0))
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
    res = check_weighted_soft_threshold(fn)
    assert not res.passed
    assert word in res.message, res.message


def test_soft_threshold_reports_exceptions():
    def broken(v, b, t):
        raise RuntimeError("boom")
    res = check_weighted_soft_threshold(broken)
    assert not res.passed and "RuntimeError" in res.message
