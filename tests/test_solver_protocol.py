"""Every solver against a small objective that holds no data (issue 37).

The solvers see an objective only through the loss protocol
(:mod:`refimpl.losses._protocol`): ``fun``, ``grad``, ``hess_vec`` and
``n_features``, plus the optional capabilities of
:data:`refimpl.losses.CAPABILITIES`.  The objective here is the quadratic

    f(w) = 1/2 w^T H w - b^T w,   H = diag(a) + u u^T,

known through three short tuples of numbers (no matrix, no ``X``, no
pairs), so each solver must reach the known optimum by its generic path;
a second version offers the capabilities (score reuse for TRON, a dense
Hessian for proximal Newton, a score space for FenchelRank) and must reach
the same optimum through them.  Each assertion is the solver's own
stopping rule turned into a distance to the optimum: with ``f``
``mu``-strongly convex (``mu = min(a)``, as ``u u^T`` is PSD), a point whose
minimum-norm subgradient has norm ``||v||`` lies within ``||v|| / mu`` of
the minimiser, and a Frank-Wolfe gap bounds ``G(w) - G^*``.  The solvers
of other problems (BDMM, LifeRank, the cutting planes of SVMrank) get a
data-free problem of their own protocol, with a closed-form or cvxpy optimum.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from cvx_reference import solve as cvx_solve
from sklearn.exceptions import ConvergenceWarning

from refimpl.losses import CAPABILITIES, LifeRankObjective, capability
from refimpl.nonconvex import make_concave_penalty
from refimpl.penalties import L1
from refimpl.solvers import (
    bdmm,
    apg,
    dc_stationarity,
    fenchelrank,
    fit_weights,
    liferank_solve,
    projected_subgradient,
    prox_newton,
    reweighted_l1,
    tron,
    truncated_gradient,
)
from refimpl.solvers.cutting_plane import cutting_plane_ranksvm
from refimpl.solvers.prox_newton import generalized_hessian, min_norm_subgradient

#: diag(a) + u u^T and b: the whole objective
A = (2.0, 1.0, 0.5)
U = (0.6, -0.3, 0.8)
B = (1.0, -2.0, 0.5)
MU = min(A)


class Quadratic:
    """``1/2 w^T (diag(a) + u u^T) w - b^T w`` from three tuples; fun, grad, hess_vec."""

    def __init__(self, a=A, u=U, b=B):
        self.a, self.u, self.b = tuple(a), tuple(u), tuple(b)
        self.n_features = len(self.a)
        self.n_fun = 0

    def _hv(self, s):
        s = np.asarray(s, dtype=np.float64)
        u = np.array(self.u)
        return np.array(self.a) * s + u * float(u @ s)

    def fun(self, w):
        self.n_fun += 1
        w = np.asarray(w, dtype=np.float64)
        return 0.5 * float(w @ self._hv(w)) - float(np.array(self.b) @ w)

    def grad(self, w):
        return self._hv(w) - np.array(self.b)

    def hess_vec(self, s):
        return self._hv(s)


class DenseHessian:
    """A ``dense_hessian`` capability: the matrix, built on request."""

    def __init__(self, q, c=1.0):
        self.q, self.c = q, c
        self.calls = 0

    def scaled(self, c):
        return DenseHessian(self.q, self.c * c)

    def at(self, w):
        self.calls += 1
        return self.c * (np.diag(self.q.a) + np.outer(self.q.u, self.q.u))


class WithCapabilities(Quadratic):
    """The same quadratic, offering every capability of the protocol.

    Its "scores" are ``X w = (w, u^T w)``: ``f`` is a function of them,
    ``1/2 (sum_i a_i z_i^2 + z_n^2) - b^T z[:n]``, which is all that score
    reuse and a score space need.
    """

    score_reuse = True

    def __init__(self, *args):
        super().__init__(*args)
        self.used = set()
        self._w = None

    # -- score reuse (TRON)
    def scores(self, w):
        w = np.asarray(w, dtype=np.float64)
        return np.append(w, float(np.array(self.u) @ w))

    def value_of_scores(self, z):
        n = self.n_features
        return (0.5 * float(np.array(self.a) @ z[:n] ** 2 + z[n] ** 2)
                - float(np.array(self.b) @ z[:n]))

    def fun(self, w):
        self._w = np.array(w, dtype=np.float64)
        return super().fun(w)

    def hess_vec_scores(self, s):
        self.used.add("score_reuse")
        return self.hess_vec(s), self.scores(s)

    def last_scores(self):
        return self.scores(self._w)

    def fun_from_scores(self, w, z):
        return self.value_of_scores(np.asarray(z))

    def accept_trial(self, w):
        return self.fun(w)

    # -- dense Hessian (proximal Newton)
    @property
    def dense_hessian(self):
        self.used.add("dense_hessian")
        return DenseHessian(self)

    # -- score space (FenchelRank)
    @property
    def score_space(self):
        self.used.add("score_space")
        return QuadraticScoreSpace(self)


class QuadraticScoreSpace:
    """A ``score_space`` that follows the steps, on the scores ``(w, u^T w)``."""

    follows_steps = True

    def __init__(self, q):
        self.q = q
        self.n_docs = q.n_features + 1
        self._z = None

    def _dz(self, z):
        n = self.q.n_features
        return np.append(np.array(self.q.a) * z[:n] - np.array(self.q.b), z[n])

    def _scales(self):
        return np.append(np.array(self.q.a), 1.0)

    def columns(self, idx):
        return np.array([self.scores(np.eye(self.q.n_features)[j]) for j in idx]).T

    def column(self, j):
        return self.columns([j])[:, 0]

    def scores(self, w):
        return self.q.scores(w)

    def fresh(self, w):
        z = self.scores(w)
        self._z = z
        return self.q.fun(w), self.q.grad(w), z

    def value_grad(self, z):
        self._z = z
        dz = self._dz(z)
        n = self.q.n_features
        return self.q.value_of_scores(z), dz[:n] + np.array(self.q.u) * dz[n]

    def hessian(self, idx):
        U = self.columns(idx)
        return U.T @ (self._scales()[:, None] * U)

    def line(self, z, u, image=None):
        space = self

        class Line:
            last = None

            def slope0(self, dpsi0):
                return dpsi0

            def slope(self, t):
                self.last = (t, z + t * u)
                space._z = self.last[1]
                return float(space._dz(self.last[1]) @ u)

            def curvature(self):
                return float(u @ (space._scales() * u))

            def end(self, t, slope):
                if self.last is None or self.last[0] != t:
                    slope(t)
                    return self.last[1], 1
                return self.last[1], 0

        return Line()


def hessian():
    return np.diag(A) + np.outer(U, U)


def unconstrained_optimum():
    return np.linalg.solve(hessian(), np.array(B))


def lasso_optimum(beta, iters=20_000):
    """Proximal gradient to the rounding level (linear rate: ``f`` is strongly convex)."""
    H, b = hessian(), np.array(B)
    step = 1.0 / np.linalg.eigvalsh(H).max()
    w = np.zeros(3)
    for _ in range(iters):
        v = w - step * (H @ w - b)
        w = np.sign(v) * np.maximum(np.abs(v) - step * beta, 0.0)
    assert np.linalg.norm(min_norm_subgradient(H @ w - b, w, beta)) < 1e-12
    return w


def project_l1(v):
    """Euclidean projection on the unit l1 ball (Duchi et al. 2008), NumPy only."""
    if np.abs(v).sum() <= 1.0:
        return v
    m = np.sort(np.abs(v))[::-1]
    css = np.cumsum(m)
    k = np.nonzero(m * np.arange(1, len(v) + 1) > css - 1.0)[0][-1]
    theta = (css[k] - 1.0) / (k + 1)
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0.0)


#: b of a quadratic whose minimiser lies inside the unit l1 ball (``B``'s:
#: ||H^{-1} B||_1 = 2.17, on its sphere)
B_INSIDE = (0.1, -0.2, 0.05)


def ball_optimum(r, b=B, iters=20_000):
    """``min_{||w||_1 <= 1} r^2 f(w)`` by projected gradient; its gap is ~0."""
    H, b = r * r * hessian(), r * r * np.array(b)
    step = 1.0 / np.linalg.eigvalsh(H).max()
    w = np.zeros(3)
    for _ in range(iters):
        w = project_l1(w - step * (H @ w - b))
    g = -(H @ w - b)
    assert np.abs(g).max() - g @ w < 1e-12
    return w, 0.5 * w @ H @ w - b @ w


def test_the_fake_holds_no_array():
    for obj in (Quadratic(), WithCapabilities()):
        assert not any(isinstance(v, np.ndarray) for v in vars(obj).values())


def test_capability_finds_what_is_offered_and_nothing_else():
    q, c = Quadratic(), WithCapabilities()
    for name in CAPABILITIES:
        assert capability(q, name) is None
    for name in ("score_reuse", "dense_hessian", "score_space"):
        assert capability(c, name) is not None
    assert capability(c, "pair_blocks") is None
    with pytest.raises(ValueError, match="unknown capability"):
        capability(c, "X")


@pytest.mark.parametrize("cls", [Quadratic, WithCapabilities])
def test_tron(cls):
    q = cls()
    tol = 1e-8
    res = tron(q, tol=tol)
    assert res.converged
    g0 = np.linalg.norm(np.array(B))          # ||grad f(0)||
    assert np.linalg.norm(res.w - unconstrained_optimum()) <= tol * g0 / MU
    if cls is WithCapabilities:
        assert "score_reuse" in q.used


@pytest.mark.parametrize("cls", [Quadratic, WithCapabilities])
@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.5])
def test_prox_newton(cls, alpha):
    q = cls()
    tol = 1e-9
    beta = np.full(3, alpha)
    res = prox_newton(q, L1(alpha), tol=tol)
    assert res.converged
    v0 = np.linalg.norm(min_norm_subgradient(-np.array(B), np.zeros(3), beta))
    assert np.linalg.norm(res.w - lasso_optimum(beta)) <= tol * v0 / MU + 1e-14
    if cls is WithCapabilities:
        assert "dense_hessian" in q.used


def test_generalized_hessian_with_and_without_the_capability():
    w = np.array([0.3, -0.2, 0.1])
    np.testing.assert_allclose(generalized_hessian(Quadratic(), w), hessian(),
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(generalized_hessian(WithCapabilities(), w),
                                  hessian())


@pytest.mark.parametrize("alpha", [0.3, 1.5])
def test_apg(alpha):
    tol = 1e-9
    res = apg(Quadratic(), L1(alpha), tol=tol, stop="gradient_mapping",
              max_iter=100_000)
    assert res.converged
    # G_L(z) = L (z - w) with w = prox(z - grad/L): w has a subgradient of
    # norm <= (1 + Lf/L) ||G_L||, so ||w - w*|| <= that / mu
    L, gmap = res.history["L"][-1], res.history["gmap"][-1]
    Lf = np.linalg.eigvalsh(hessian()).max()
    bound = (1.0 + Lf / L) * gmap / MU
    assert np.linalg.norm(res.w - lasso_optimum(np.full(3, alpha))) <= bound + 1e-14


@pytest.mark.parametrize("alpha", [0.3, 1.5])
def test_truncated_gradient(alpha):
    tol = 1e-8
    res = truncated_gradient(Quadratic(), 1.0, gravity=alpha, tol=tol,
                             max_iter=100_000)
    assert res.converged
    beta = np.full(3, alpha)
    v = min_norm_subgradient(hessian() @ res.w - np.array(B), res.w, beta)
    # rho = ||v||_inf <= tol rho(0): ||w - w*|| <= ||v||_2 / mu
    rho0 = np.abs(min_norm_subgradient(-np.array(B), np.zeros(3), beta)).max()
    assert np.abs(v).max() <= tol * rho0
    assert np.linalg.norm(res.w - lasso_optimum(beta)) <= np.sqrt(3) * tol * rho0 / MU


@pytest.mark.parametrize("cls", [Quadratic, WithCapabilities])
@pytest.mark.parametrize("variant", ["paper", "pairwise", "away", "face_newton"])
@pytest.mark.parametrize("r, b", [(0.5, B), (3.0, B), (2.0, B_INSIDE)])
def test_fenchelrank(cls, variant, r, b):
    q = cls(A, U, b)
    tol = 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = fenchelrank(q, r, tol=tol, max_iter=100_000, variant=variant)
    assert res.converged
    assert np.abs(res.w).sum() <= 1.0 + 1e-12
    w_star, G_star = ball_optimum(r, b)
    assert (np.abs(w_star).sum() < 1.0) == (b is B_INSIDE)
    G = r * r * q.fun(res.w)
    # eq. 17: the certified gap bounds G(w) - G*
    assert G_star - 1e-12 <= G <= G_star + tol + 1e-12
    if cls is WithCapabilities:
        assert "score_space" in q.used


@pytest.mark.parametrize("r", [0.5, 3.0])
def test_fenchelrank_theory_step(r):
    tol = 1e-3
    res = fenchelrank(Quadratic(), r, tol=tol, step="theory", max_iter=1_000_000)
    assert res.converged
    _, G_star = ball_optimum(r)
    assert r * r * Quadratic().fun(res.w) <= G_star + tol + 1e-12


def test_fenchelrank_closed_form_step_needs_the_pair_norm():
    with pytest.raises(ValueError, match="closed_form"):
        fenchelrank(Quadratic(), 1.0, step="closed_form")


@pytest.mark.parametrize("r", [0.5, 3.0])
def test_projected_subgradient(r):
    tol = 1e-3
    res = projected_subgradient(Quadratic(), r, tol=tol, max_iter=1_000_000)
    assert res.converged
    _, G_star = ball_optimum(r)
    assert r * r * Quadratic().fun(res.w) <= G_star + tol + 1e-12


def test_reweighted_l1():
    q = Quadratic()
    penalty = make_concave_penalty("log", C=1.0, eps=0.5)
    res = reweighted_l1(q, penalty, tol=1e-12, tol_outer=1e-12, max_outer=200,
                        max_iter=100_000)
    assert res.converged
    # a fixed point of Algorithm 2 is a stationary point of f + Omega
    assert dc_stationarity(q, penalty, res.w).max() <= 1e-9


class OnTheSimplexPlane:
    """``1/2 ||x - B||^2`` subject to ``sum(x) = 1``: bdmm's problem protocol."""

    n_features = 3

    def fun(self, x):
        return 0.5 * float(np.sum((np.asarray(x) - np.array(B)) ** 2))

    def grad(self, x):
        return np.asarray(x, dtype=np.float64) - np.array(B)

    def constraint(self, x):
        return np.array([float(np.sum(x)) - 1.0])

    def constraint_vjp(self, x, u):
        return np.full(3, float(u[0]))


def test_bdmm():
    tol, constraint_tol = 1e-10, 1e-10
    res = bdmm(OnTheSimplexPlane(), np.zeros(3), lr=0.2, tol=tol,
               constraint_tol=constraint_tol, max_iter=100_000)
    assert res.converged
    x_star = np.array(B) - (sum(B) - 1.0) / 3
    # f is 1-strongly convex with the identity Hessian: the distance is the
    # tangent part of grad_x L plus the normal part |c(x)| / ||1||
    g0 = np.linalg.norm(np.array(B))           # ||grad_x L(0, 0)||
    bound = tol * max(1.0, g0) + constraint_tol / np.sqrt(3)
    assert np.linalg.norm(res.w - x_star) <= bound


#: LifeRank on the data-free loss ell(v) = 1/2 ||v||^2 - B^T v: eq. 5 is
#: ell(T w) + lam/2 ||w||^2, least when B lies in the range of T, at
#: F* = -||B||^2 / (2 (1 + lam)), with w = T^T B / (1 + lam) for a fixed T
LAM = 0.5


def liferank_objective():
    return LifeRankObjective(Quadratic((1.0, 1.0, 1.0), (0.0, 0.0, 0.0), B), 2, LAM)


def test_fit_weights():
    T = np.eye(3)[:, :2]
    tol = 1e-10
    res = fit_weights(liferank_objective(), T, np.zeros(2), lr=0.5, tol=tol)
    assert res.converged
    g0 = np.linalg.norm(T.T @ np.array(B))      # ||grad_w F(T, 0)||
    w_star = T.T @ np.array(B) / (1.0 + LAM)
    assert np.linalg.norm(res.w - w_star) <= tol * max(1.0, g0) / (1.0 + LAM)


@pytest.mark.parametrize("constraint", ["stiefel", "bdmm"])
def test_liferank_solve(constraint):
    obj = liferank_objective()
    T0 = np.eye(3)[:, :2]
    constraint_tol = 1e-9
    res = liferank_solve(obj, T0, np.zeros(2), constraint=constraint, lr=0.2,
                         tol=1e-10, constraint_tol=constraint_tol,
                         max_iter=200_000)
    assert res.converged
    F_star = -0.5 * float(np.array(B) @ np.array(B)) / (1.0 + LAM)
    F = obj.value_and_grads(res.T, res.w)[0]
    violation = np.linalg.norm(res.T.T @ res.T - np.eye(2))
    assert violation <= constraint_tol
    # F is smooth on the Stiefel manifold and stationary there: F* to
    # rounding, up to what the constraint's slack allows off it
    assert abs(F - F_star) <= 1e-9 + 10 * violation * abs(F_star)


class TinyHinge:
    """The pairwise hinge on four constant documents: cutting_plane_ranksvm's protocol.

    ``risk(w) = sum_P max(0, 1 - (z_i - z_j))`` with ``z`` the scores of
    :data:`ROWS`, and the counts ``l^+, l^-`` of the violated pairs, as
    :class:`refimpl.losses.pairwise_hinge.PairwiseHinge` offers them.
    """

    #: documents (rows) and preference pairs (upper, lower): tuples, no array
    ROWS = ((1.0, 0.2), (0.3, 0.9), (-0.5, 0.4), (0.1, -0.8))
    PAIRS = ((0, 1), (0, 2), (1, 2), (1, 3), (3, 2))
    n_features = 2
    last_scores = None

    def scores(self, w):
        return np.array([float(np.dot(x, w)) for x in self.ROWS])

    def counts(self, z):
        lp, lm = np.zeros(len(self.ROWS), dtype=np.int64), np.zeros(len(self.ROWS),
                                                                     dtype=np.int64)
        for i, j in self.PAIRS:
            if 1.0 - (z[i] - z[j]) > 0.0:
                lm[i] += 1
                lp[j] += 1
        return lp, lm

    def value(self, z):
        return sum(max(0.0, 1.0 - (z[i] - z[j])) for i, j in self.PAIRS)

    def risk(self, w):
        z = self.scores(w)
        self.last_scores = z
        lp, lm = self.counts(z)
        c = (lm - lp).astype(np.float64)
        return self.value(z), c, int(lm.sum())

    def direction(self, c):
        return np.asarray(c, dtype=np.float64) @ np.array(self.ROWS)


@pytest.mark.parametrize("C", [0.1, 3.0])
def test_cutting_plane(C):
    hinge, n, tol = TinyHinge(), 2, 1e-8
    res = cutting_plane_ranksvm(hinge, C, n, tol=tol, max_iter=1000)
    assert res.converged

    def P(w):
        return 0.5 * float(w @ w) + C / n * hinge.value(hinge.scores(w))

    w = cp.Variable(2)
    K = np.array([np.subtract(hinge.ROWS[i], hinge.ROWS[j]) for i, j in hinge.PAIRS])
    P_star = cvx_solve(cp.Problem(cp.Minimize(
        0.5 * cp.sum_squares(w) + C / n * cp.sum(cp.pos(1 - K @ w)))))
    # the certificate: P(w_best) - D(alpha) <= tol P(w_best), D <= P*
    assert P_star - 1e-7 <= P(res.w) <= P_star + tol * P(res.w) + 1e-7
