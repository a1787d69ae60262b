"""The checkers of Chapter 6's exercises accept refimpl and catch planted bugs."""

import numpy as np
import pytest

from refimpl.exercises import (check_bdmm_step, check_liferank_gradient,
                               check_orthonormality_residual)
from refimpl.solvers import orthonormality_error
from test_exercises_ch01 import assert_diagnosed


# -- ||T^T T - I||_F ----------------------------------------------------------

def residual_loops(T):
    n, k = T.shape
    total = 0.0
    for i in range(k):
        for j in range(k):
            dot = sum(T[r, i] * T[r, j] for r in range(n))
            total += (dot - (i == j)) ** 2
    return total ** 0.5


@pytest.mark.parametrize("fn", [
    orthonormality_error,
    lambda T: np.sqrt(((T.T @ T - np.eye(T.shape[1])) ** 2).sum()),
    # from the singular values: T^T T - I = V (S^2 - I) V^T
    lambda T: np.linalg.norm(np.linalg.svd(T, compute_uv=False) ** 2 - 1),
    residual_loops])
def test_residual_accepts(fn):
    res = check_orthonormality_residual(fn)
    assert res.passed, res.message


@pytest.mark.parametrize("fn, word", [
    (lambda T: np.linalg.norm(T @ T.T - np.eye(T.shape[0])), "T T^T"),
    (lambda T: np.linalg.norm(T.T @ T), "identity"),
    (lambda T: np.linalg.norm(T.T @ T - np.eye(T.shape[1]), 2), "spectral"),
    (lambda T: np.linalg.norm(T.T @ T - np.eye(T.shape[1])) ** 2, "squared"),
    (lambda T: np.abs(T.T @ T - np.eye(T.shape[1])).max(), "largest entry"),
    (lambda T: T.T @ T - np.eye(T.shape[1]), "one number"),
    (lambda T: np.linalg.norm(T.T @ T - np.eye(T.shape[1]), "nuc"),
     "nuclear"),
    (lambda T: np.abs(T.T @ T - np.eye(T.shape[1])).sum(), "sum of |entries|"),
    (lambda T: np.linalg.norm(T.T @ T) - np.sqrt(T.shape[1]),
     "subtract norms"),
])
def test_residual_catches_bugs(fn, word):
    assert_diagnosed(check_orthonormality_residual(fn), word)


# -- the gradient of F(T, w) -------------------------------------------------

def grad_ok(T, w, K, lam):
    G = K.T @ (-1 / (1 + np.exp(K @ (T @ w)))) / K.shape[0]
    return np.outer(G, w), T.T @ G + lam * w


def grad_pair_loop(T, w, K, lam):
    """Pair by pair, with the logistic derivative written via expit."""
    from scipy.special import expit
    p = K.shape[0]
    gT, gw = np.zeros_like(T), lam * w.copy()
    for k in K:
        s = -expit(-(k @ T @ w)) / p
        gT += s * np.outer(k, w)
        gw += s * (T.T @ k)
    return gT, gw


def grad_by_chain_rule(T, w, K, lam):
    """d/dT of l(K T w) as the einsum of the pair weights."""
    s = -0.5 * (1 - np.tanh(K @ T @ w / 2)) / K.shape[0]
    return np.einsum("p,pi,k->ik", s, K, w), np.einsum(
        "p,pi,ik->k", s, K, T) + lam * w


@pytest.mark.parametrize("fn", [grad_ok, grad_pair_loop, grad_by_chain_rule])
def test_gradient_accepts(fn):
    res = check_liferank_gradient(fn)
    assert res.passed, res.message


def _bug(kind):
    def fn(T, w, K, lam):
        m = K @ (T @ w)
        p = 1 if kind == "sum" else K.shape[0]
        coef = (-1 / (1 + np.exp(-m)) if kind == "sigma"
                else -1 / (1 + np.exp(m)))
        G = K.T @ coef / p
        if kind == "sign":
            G = -G
        gT, gw = np.outer(G, w), T.T @ G + lam * w
        if kind == "nolam":
            gw = T.T @ G
        if kind == "transpose":
            gT = gT.T
        if kind == "swap":
            return gw, gT
        return gT, gw
    return fn


@pytest.mark.parametrize("kind, word", [
    ("sum", "1/p"), ("sign", "sign"), ("nolam", "lam w"),
    ("sigma", "logistic derivative"), ("transpose", "transpose"),
    ("swap", "order")])
def test_gradient_catches_bugs(kind, word):
    assert_diagnosed(check_liferank_gradient(_bug(kind)), word)


# -- one damped multiplier step -----------------------------------------------

def _c(T, flipped=False):
    C = T.T @ T
    np.fill_diagonal(C, 1 - np.diag(C))
    return -C if flipped else C


def _M(U):
    M = U + U.T
    np.fill_diagonal(M, -2 * np.diag(U))
    return M


def step(T, w, A, grad_loss, lam, lr, mu, bug=None):
    flipped = bug == "flipped"
    G = grad_loss(T @ w)
    damp = 0.0 if bug == "nodamp" else mu
    gT = np.outer(G, w) + T @ _M(A + damp * _c(T, flipped))
    if bug == "symM":
        U = A + mu * _c(T)
        gT = np.outer(G, w) + T @ (U + U.T)
    if bug == "gram":
        U = A + mu * (T.T @ T - np.eye(len(w)))
        gT = np.outer(G, w) + T @ _M(U)
    w_new = w - lr * (T.T @ G + (0.0 if bug == "nolam" else lam) * w)
    if bug == "sequential":
        G2 = grad_loss(T @ w_new)
        gT = np.outer(G2, w_new) + T @ _M(A + mu * _c(T))
    T_new = T - lr * gT
    c = _c(T if bug == "old" else T_new, flipped)
    if bug == "gram":
        c = T_new.T @ T_new - np.eye(len(w))
    A_new = A - lr * c if bug == "descent" else A + lr * c
    return T_new, w_new, A_new


def step_by_lagrangian(T, w, A, grad_loss, lam, lr, mu):
    """The T-gradient of <A, c(T)> + (mu/2)||c(T)||^2 by the chain rule,
    entry by entry of c, instead of the matrix M."""
    k = T.shape[1]
    U = A + mu * _c(T)
    G = grad_loss(T @ w)
    gT = np.outer(G, w)
    for i in range(k):
        for j in range(k):
            if i == j:
                gT[:, i] += U[i, i] * (-2 * T[:, i])
            else:
                gT[:, i] += U[i, j] * T[:, j]
                gT[:, j] += U[i, j] * T[:, i]
    w_new = w - lr * (T.T @ G + lam * w)
    T_new = T - lr * gT
    return T_new, w_new, A + lr * _c(T_new)


@pytest.mark.parametrize("fn", [step, step_by_lagrangian])
def test_bdmm_step_accepts(fn):
    res = check_bdmm_step(fn)
    assert res.passed, res.message


@pytest.mark.parametrize("bug, word", [
    ("descent", "sign of the multiplier"), ("old", "old T"),
    ("nodamp", "damping term is missing"), ("sequential", "w first"),
    ("flipped", "diagonal constraints"), ("gram", "T^T T - I"),
    ("symM", "U + U^T everywhere"), ("nolam", "l2 term")])
def test_bdmm_step_catches_bugs(bug, word):
    assert_diagnosed(check_bdmm_step(lambda *a: step(*a, bug=bug)), word)


def test_bdmm_step_reports_wrong_output():
    res = check_bdmm_step(lambda *a: step(*a)[:2])
    assert not res.passed and "triple" in res.message
