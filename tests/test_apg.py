"""Penalties (prox), the accelerated proximal gradient solver and SparseRankSVM."""

import math

import cvxpy as cp
import numpy as np
import pytest
from cvx_reference import solve
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize_scalar
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import Lasso

from refimpl.data import make_synthetic_letor
from refimpl.estimators import SparseRankSVM
from refimpl.exceptions import DataError, ParameterError
from refimpl.losses import PairwiseSquaredHinge
from refimpl.pairs import pair_difference_matrix
from refimpl.penalties import L1, NonNegWeightedL1, WeightedL1
from refimpl.losses import ScaledSmooth
from refimpl.solvers import apg, hessian_matrix, lipschitz_constant

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
nonneg = st.floats(0, 20, allow_nan=False, allow_infinity=False)


# --------------------------------------------------------------------------
# prox operators vs brute-force 1-D minimisation
# --------------------------------------------------------------------------


def brute_prox_1d(phi, v, lo, hi):
    """argmin_x (x - v)^2 / 2 + phi(x) on [lo, hi] by bounded Brent."""
    res = minimize_scalar(lambda x: 0.5 * (x - v) ** 2 + phi(x), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-12})
    return res.x


@settings(max_examples=40, deadline=None)
@given(v=arrays(np.float64, 5, elements=finite),
       c=arrays(np.float64, 5, elements=nonneg),
       step=st.floats(0, 5, allow_nan=False))
def test_prox_operators_match_brute_force(v, c, step):
    penalties = {
        "l1": (L1(c[0]), lambda j: (lambda x: step * c[0] * abs(x)), -1),
        "weighted": (WeightedL1(c), lambda j: (lambda x: step * c[j] * abs(x)), -1),
        "nonneg": (NonNegWeightedL1(c), lambda j: (lambda x: step * c[j] * x), 0),
    }
    for pen, phi, lo_sign in penalties.values():
        p = pen.prox(v, step)
        for j in range(len(v)):
            span = abs(v[j]) + step * c[j] + 1.0
            lo = -span if lo_sign < 0 else 0.0
            ref = brute_prox_1d(phi(j), v[j], lo, span)
            assert abs(p[j] - ref) <= 1e-6 * max(1.0, abs(ref))


def test_prox_special_cases():
    v = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_array_equal(L1(1.0).prox(v, 1.0), [-2.0, 0, 0, 0, 2.0])
    np.testing.assert_array_equal(NonNegWeightedL1(np.ones(5)).prox(v, 1.0),
                                  [0, 0, 0, 0, 2.0])
    np.testing.assert_array_equal(WeightedL1(np.zeros(5)).prox(v, 7.0), v)
    # step 0 is the projection onto the domain
    np.testing.assert_array_equal(NonNegWeightedL1(np.ones(5)).prox(v, 0.0),
                                  np.maximum(v, 0))
    assert NonNegWeightedL1(np.ones(5)).value(v) == math.inf
    assert NonNegWeightedL1([1, 2, 0, 0, 1]).value(np.maximum(v, 0)) == 3.0
    assert WeightedL1([1, 2, 0, 0, 1]).value(v) == 3 + 1 + 3
    assert L1(2.0).value(v) == 14.0


@pytest.mark.parametrize("make, match", [
    (lambda: L1(-1.0), "alpha"),
    (lambda: L1(np.nan), "alpha"),
    (lambda: WeightedL1([1.0, -1.0]), "weights"),
    (lambda: WeightedL1([1.0, np.inf]), "weights"),
    (lambda: WeightedL1([]), "weights"),
    (lambda: NonNegWeightedL1([[1.0]]), "weights"),
    (lambda: NonNegWeightedL1([np.nan]), "weights"),
    (lambda: L1().prox(np.ones(2), -1.0), "step"),
    (lambda: WeightedL1([1.0, 1.0]).prox(np.ones(3), 1.0), "shape"),
])
def test_penalty_validation(make, match):
    with pytest.raises(DataError, match=match):
        make()


# --------------------------------------------------------------------------
# APG on a lasso problem
# --------------------------------------------------------------------------


class LeastSquares:
    """f(w) = ||A w - b||^2 / (2 n), with a call counter."""

    def __init__(self, A, b):
        self.A, self.b = A, b
        self.n_features = A.shape[1]
        self.calls = 0

    def fun(self, w):
        self.calls += 1
        self._r = self.A @ w - self.b
        return 0.5 * float(self._r @ self._r) / len(self.b)

    def grad(self, w):
        return self.A.T @ (self.A @ w - self.b) / len(self.b)

    def hess_vec(self, s):
        return self.A.T @ (self.A @ s) / len(self.b)

    def lipschitz_bound(self):
        return float(np.linalg.eigvalsh(self.A.T @ self.A)[-1]) / len(self.b)


def lasso(seed, n=40, d=15, alpha=0.05):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))
    b = A[:, :3] @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=n)
    ls = LeastSquares(A, b)
    ref = Lasso(alpha=alpha, fit_intercept=False, tol=1e-14, max_iter=10**6).fit(A, b)
    w_star = ref.coef_

    def F(w):
        return 0.5 * float(np.sum((A @ w - b) ** 2)) / n + alpha * np.abs(w).sum()

    return ls, L1(alpha), w_star, F


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("line_search", ["backtracking", "nemirovski", "fixed", "adaptive"])
def test_lasso_matches_sklearn(seed, line_search):
    ls, pen, w_star, F = lasso(seed)
    r = apg(ls, pen, line_search=line_search, tol=1e-12, stop="gradient_mapping")
    assert r.converged
    assert abs(F(r.w) - F(w_star)) <= 1e-10 * F(w_star)
    np.testing.assert_allclose(r.w, w_star, atol=1e-6)
    assert r.history["F"][-1] == pytest.approx(F(r.w), rel=1e-12)


def test_lasso_matches_cvxpy():
    ls, pen, _, F = lasso(7)
    w = cp.Variable(ls.n_features)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(ls.A @ w - ls.b) / (2 * len(ls.b))
                                  + pen.alpha * cp.norm1(w)))
    value = solve(prob, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    r = apg(ls, pen, tol=1e-12, stop="gradient_mapping")
    assert abs(F(r.w) - value) <= 1e-6 * max(1.0, abs(value))
    np.testing.assert_allclose(r.w, w.value, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("line_search", ["backtracking", "nemirovski", "fixed"])
def test_fista_rate_bound(seed, line_search):
    """F(w_k) - F* <= 2 L ||w0 - w*||^2 / (k + 1)^2 (Beck & Teboulle, Thm 4.4)."""
    ls, pen, w_star, F = lasso(seed, alpha=0.02)
    w0 = np.random.default_rng(seed + 100).normal(size=ls.n_features)
    r = apg(ls, pen, w0, line_search=line_search, tol=1e-13,
            stop="gradient_mapping", max_iter=3000)
    F_star = min(F(w_star), F(r.w))
    L = r.history["L"][-1]
    k = np.arange(1, len(r.history["F"]))
    gap = np.asarray(r.history["F"][1:]) - F_star
    bound = 2 * L * float(np.sum((w0 - w_star) ** 2)) / (k + 1) ** 2
    assert np.all(gap <= bound + 1e-12 * F_star)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("w0_scale", [0.0, 1.0])
def test_adaptive_step_rate_bound(seed, w0_scale):
    """Scheinberg-Goldfarb-Bai: F(w_k) - F* <= 2 R^2 / (sum_i L_i^-1/2 + L_1^-1/2)^2.

    With the steps it actually took (L_i, some below the global constant),
    and L decreasing somewhere (else the test would be FISTA's).
    """
    ls, pen, w_star, F = lasso(seed, alpha=0.02)
    w0 = w0_scale * np.random.default_rng(seed + 100).normal(size=ls.n_features)
    r = apg(ls, pen, w0, line_search="adaptive", L0=ls.lipschitz_bound(),
            tol=1e-13, stop="gradient_mapping", max_iter=3000)
    assert r.converged
    F_star = min(F(w_star), F(r.w))
    L = np.asarray(r.history["L"][1:])
    assert np.any(np.diff(L) < 0) and L.min() < ls.lipschitz_bound()
    s = np.cumsum(L ** -0.5) + L[0] ** -0.5
    gap = np.asarray(r.history["F"][1:]) - F_star
    bound = 2 * float(np.sum((w0 - w_star) ** 2)) / s ** 2
    assert np.all(gap <= bound + 1e-12 * F_star)


@pytest.mark.parametrize("restart", [False, "function", "gradient"])
def test_adaptive_step_agrees_with_backtracking(restart):
    X, y, qid = small(21, n_queries=8)
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), 0.3)
    ref = apg(smooth, L1(1.0), tol=1e-11, stop="gradient_mapping", max_iter=100000)
    r = apg(smooth, L1(1.0), line_search="adaptive", restart=restart, tol=1e-11,
            stop="gradient_mapping", max_iter=100000)
    assert r.converged
    assert r.history["F"][-1] == pytest.approx(ref.history["F"][-1], rel=1e-9)
    assert r.n_iter <= ref.n_iter


@pytest.mark.parametrize("line_search", ["backtracking", "nemirovski", "fixed", "adaptive"])
def test_ista_is_monotone(line_search):
    ls, pen, w_star, F = lasso(3, alpha=0.01)
    r = apg(ls, pen, accelerated=False, line_search=line_search, tol=1e-10,
            stop="gradient_mapping", max_iter=20000)
    Fh = np.asarray(r.history["F"])
    assert np.all(np.diff(Fh) <= 1e-13 * abs(Fh[:-1]))
    assert r.converged and abs(Fh[-1] - F(w_star)) <= 1e-8 * F(w_star)


def test_ista_and_fixed_step_reuse_the_cached_value():
    """ISTA with a fixed L: one fun per iteration (z_{k+1} = w_k is reused)."""
    ls, pen, _, _ = lasso(0)
    r = apg(ls, pen, accelerated=False, line_search="fixed", tol=1e-8,
            stop="gradient_mapping")
    assert r.history["n_fun"] == list(range(1, r.n_iter + 2))
    assert ls.calls == r.n_iter + 1


@pytest.mark.parametrize("restart", ["function", "gradient"])
def test_restart_converges(restart):
    ls, pen, w_star, F = lasso(4, n=60, d=20, alpha=0.005)
    plain = apg(ls, pen, tol=1e-10, stop="gradient_mapping", max_iter=50000)
    r = apg(ls, pen, restart=restart, tol=1e-10, stop="gradient_mapping",
            max_iter=50000)
    assert r.converged and any(r.history["restart"])
    assert abs(F(r.w) - F(w_star)) <= 1e-9 * F(w_star)
    assert r.n_iter <= plain.n_iter


def test_stopping_rules_hold_at_exit():
    ls, pen, _, _ = lasso(5)
    r = apg(ls, pen, tol=1e-7, stop="gradient_mapping")
    g = r.history["gmap"]
    assert r.converged and g[-1] <= 1e-7 * g[1] and g[-2] > 1e-7 * g[1]
    assert "gradient mapping" in r.message
    r = apg(ls, pen, tol=1e-7, stop="relative_change")
    Fh = r.history["F"]
    assert r.converged and abs(Fh[-1] - Fh[-2]) <= 1e-7 * abs(Fh[-2])
    assert r.n_iter == len(Fh) - 1


def test_max_iter_warns_quoting_criterion_and_tol():
    ls, pen, _, _ = lasso(0)
    with pytest.warns(ConvergenceWarning, match=r"relative change.*tol = 1\.0e-12"):
        r = apg(ls, pen, tol=1e-12, max_iter=3)
    assert not r.converged and r.n_iter == 3
    with pytest.warns(ConvergenceWarning, match="gradient mapping"):
        apg(ls, pen, tol=1e-12, stop="gradient_mapping", max_iter=3)


@pytest.mark.parametrize("kwargs, match", [
    ({"line_search": "armijo"}, "line_search"),
    ({"restart": "always"}, "restart"),
    ({"stop": "gap"}, "stop"),
    ({"eta": 1.0}, "eta"),
    ({"tol": -1.0}, "tol"),
    ({"max_iter": -1}, "max_iter"),
    ({"L0": 0.0}, "L0"),
    ({"w0": np.ones(3)}, "w0"),
])
def test_apg_bad_options(kwargs, match):
    ls, pen, _, _ = lasso(0)
    with pytest.raises(ValueError, match=match):
        apg(ls, pen, **kwargs)


def test_apg_needs_a_feasible_start_and_a_constant_for_fixed():
    ls, _, _, _ = lasso(0)
    with pytest.raises(ValueError, match="domain"):
        apg(ls, NonNegWeightedL1(np.ones(ls.n_features)), -np.ones(ls.n_features))

    class NoBound(LeastSquares):
        lipschitz_bound = None

    nb = NoBound(ls.A, ls.b)
    with pytest.raises(ValueError, match="L0"):
        apg(nb, L1(0.1), line_search="fixed")


# --------------------------------------------------------------------------
# SparseRankSVM (Laporte et al. eq. 7 and eq. 12) vs cvxpy
# --------------------------------------------------------------------------


def small(seed, n_queries=5):
    d = make_synthetic_letor(n_queries=n_queries, docs_per_query=(5, 11),
                             n_informative=3, n_redundant=2, n_noise=5, seed=seed)
    return d.X, d.y, d.qid


def cvxpy_sparse_ranksvm(X, y, qid, C, beta):
    K = pair_difference_matrix(X, y, qid)
    w = cp.Variable(X.shape[1])
    obj = cp.sum(cp.multiply(beta, cp.abs(w))) + C * cp.sum_squares(cp.pos(1 - K @ w))
    prob = cp.Problem(cp.Minimize(obj))
    value = solve(prob)
    return w.value, value


def assert_same_support(X, y, qid, C, beta, coef, w_star):
    """Support agrees wherever the KKT conditions make it clear-cut."""
    loss = PairwiseSquaredHinge(X, y, qid, backend="numpy")
    loss.fun(coef)
    g = C * loss.grad(coef)
    clear_zero = np.abs(g) < beta - 1e-3          # strict subgradient inequality
    clear_nonzero = np.abs(w_star) > 1e-3
    ours = np.abs(coef) > 1e-6
    theirs = np.abs(w_star) > 1e-6
    assert not np.any(ours[clear_zero]) and not np.any(theirs[clear_zero])
    assert np.all(ours[clear_nonzero])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("C", [0.03, 0.3, 3.0])
def test_sparse_ranksvm_l1_matches_cvxpy(seed, C):
    X, y, qid = small(seed)
    beta = np.ones(X.shape[1])
    w_star, f_star = cvxpy_sparse_ranksvm(X, y, qid, C, beta)
    m = SparseRankSVM(C=C, tol=1e-10, max_iter=100000).fit(X, y, qid)
    assert m.converged_
    assert abs(m.objective_ - f_star) <= 1e-6 * max(1.0, abs(f_star))
    np.testing.assert_allclose(m.predict(X), X @ w_star,
                               atol=1e-4 * max(1.0, np.abs(X @ w_star).max()))
    assert_same_support(X, y, qid, C, beta, m.coef_, w_star)


@pytest.mark.parametrize("seed", range(3))
def test_sparse_ranksvm_weighted_l1_matches_cvxpy(seed):
    X, y, qid = small(seed + 10)
    beta = np.random.default_rng(seed).uniform(0.0, 3.0, X.shape[1])
    beta[0] = 0.0                                    # one unpenalised feature
    w_star, f_star = cvxpy_sparse_ranksvm(X, y, qid, 0.5, beta)
    m = SparseRankSVM(C=0.5, penalty="weighted_l1", weights=beta, tol=1e-10,
                      max_iter=100000).fit(X, y, qid)
    assert abs(m.objective_ - f_star) <= 1e-6 * max(1.0, abs(f_star))
    np.testing.assert_allclose(m.predict(X), X @ w_star,
                               atol=1e-4 * max(1.0, np.abs(X @ w_star).max()))
    assert_same_support(X, y, qid, 0.5, beta, m.coef_, w_star)


@pytest.mark.parametrize("kwargs", [
    {"line_search": "nemirovski"},
    {"line_search": "fixed"},
    {"line_search": "adaptive"},
    {"line_search": "adaptive", "restart": "gradient"},
    {"solver": "newton"},
    {"solver": "newton", "backend": "tree"},
    {"accelerated": False},
    {"restart": "function"},
    {"restart": "gradient"},
    {"backend": "tree"},
])
def test_sparse_ranksvm_variants_agree(kwargs):
    X, y, qid = small(21, n_queries=8)
    ref = SparseRankSVM(C=0.3, tol=1e-10, max_iter=100000).fit(X, y, qid)
    m = SparseRankSVM(C=0.3, tol=1e-10, max_iter=100000, **kwargs).fit(X, y, qid)
    assert m.objective_ == pytest.approx(ref.objective_, rel=1e-8)


def test_lipschitz_constant_is_2C_norm_K_squared():
    X, y, qid = small(2)
    K = pair_difference_matrix(X, y, qid)
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), 3.0)
    L = lipschitz_constant(smooth)
    assert L == pytest.approx(2 * 3.0 * np.linalg.norm(K, 2) ** 2, rel=1e-10)
    # Laporte et al.'s Proposition 1 (with the factor 2 of the gradient)
    # is the trace, an upper bound
    H = hessian_matrix(smooth)
    assert np.trace(H) == pytest.approx(2 * 3.0 * np.sum(K * K), rel=1e-10)
    assert L <= np.trace(H)


def test_sparse_ranksvm_sklearn_conventions():
    X, y, qid = small(0)
    m = SparseRankSVM(C=0.5)
    assert clone(m).get_params() == m.get_params()
    with pytest.raises(NotFittedError):
        m.predict(X)
    assert m.fit(X, y, qid) is m
    assert m.predict(X).shape == (len(y),)
    assert set(m.history_) >= {"F", "L", "time", "n_fun"}
    assert m.n_iter_ == len(m.history_["F"]) - 1
    assert 0 <= m.score(X, y, qid) <= 1
    with pytest.raises(DataError, match="features"):
        m.predict(X[:, :-1])


@pytest.mark.parametrize("params, match", [
    ({"C": -1.0}, "C"),
    ({"C": 0.0}, "C"),
    ({"tol": 0.0}, "tol"),
    ({"max_iter": 0}, "max_iter"),
    ({"max_iter": 2.5}, "max_iter"),
    ({"penalty": "elastic_net"}, "penalty"),
    ({"penalty": "weighted_l1"}, "weights"),
    ({"penalty": "weighted_l1", "weights": [1.0, 2.0]}, "weights"),
    ({"penalty": "weighted_l1", "weights": -np.ones(10)}, "weights"),
    ({"line_search": "armijo"}, "line_search"),
    ({"restart": "yes"}, "restart"),
    ({"accelerated": "no"}, "accelerated"),
    ({"backend": "gpu"}, "backend"),
])
def test_sparse_ranksvm_bad_parameters_named_at_fit(params, match):
    X, y, qid = small(2)
    with pytest.raises(ParameterError, match=match):
        SparseRankSVM(**params).fit(X, y, qid)


def test_sparse_ranksvm_max_iter_warns():
    X, y, qid = small(4)
    with pytest.warns(ConvergenceWarning, match="tol"):
        m = SparseRankSVM(C=10.0, tol=1e-12, max_iter=2).fit(X, y, qid)
    assert not m.converged_ and m.n_iter_ == 2
