"""LifeRank: the pairwise logistic kernels, eq. 5-7 against finite differences,
the w-step and the whole problem against cvxpy, BDMM / MDMM / Stiefel
behaviour, feature-quality measures and the scikit-learn transformer API."""

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest
from cvx_reference import solve
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from refimpl import LifeRank
from refimpl.data import make_synthetic_letor
from refimpl.exceptions import DataError, DivergenceError, NonFiniteError, ParameterError
from refimpl.features import (
    feature_importance,
    feature_ndcg,
    feature_redundancy,
    rank_similarity,
)
from refimpl.kernels import logistic as K
from refimpl.losses import LifeRankObjective, PairwiseLogistic
from refimpl.solvers import (
    fit_weights,
    liferank_solve,
    orthonormality_error,
    stiefel_gradient,
    stiefel_retraction,
)
from refimpl.pairs import pair_difference_matrix, preference_pairs
from refimpl.solvers.bdmm import bdmm


def small(seed, n_queries=5, n_noise=3, docs=(4, 9)):
    d = make_synthetic_letor(n_queries=n_queries, docs_per_query=docs,
                             n_informative=3, n_redundant=2, n_noise=n_noise,
                             seed=seed)
    return d.X, d.y, d.qid


def brute_force(s, y, qid):
    """Sum over P of log(1 + exp(-(s_i - s_j))) and its score gradient, O(m^2)."""
    m = len(s)
    total, ds = 0.0, np.zeros(m)
    for i in range(m):
        for j in range(m):
            if qid[i] == qid[j] and y[i] > y[j]:
                mij = s[i] - s[j]
                total += np.logaddexp(0.0, -mij)
                g = 1.0 / (1.0 + np.exp(mij)) if mij < 700 else 0.0
                ds[i] -= g
                ds[j] += g
    return total, ds


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------


@st.composite
def ranking_scores(draw):
    m = draw(st.integers(2, 25))
    n_q = draw(st.integers(1, 4))
    qid = np.array(draw(st.lists(st.integers(0, n_q - 1), min_size=m, max_size=m)))
    y = np.array(draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)))
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0, 900.0]))
    seed = draw(st.integers(0, 2**31 - 1))
    s = np.random.default_rng(seed).normal(size=m) * scale
    return s, y, qid


@settings(max_examples=60, deadline=None)
@given(ranking_scores())
def test_kernels_match_brute_force(case):
    s, y, qid = case
    pairs = preference_pairs(y, qid, require_pairs=False)
    from refimpl._validation import group_queries
    g = group_queries(qid, len(s))
    ref_value, ref_ds = brute_force(s, y, qid)
    a = np.empty(len(s))
    outs = {}
    for name, fn, args in (
        ("fast", K.value_ds, (s, g.order, g.indptr, pairs.i, pairs.j, a)),
        ("fast.py_func", K.value_ds.py_func,
         (s, g.order, g.indptr, pairs.i, pairs.j, a)),
        ("direct", K.value_ds_direct, (s, pairs.i, pairs.j)),
        ("direct.py_func", K.value_ds_direct.py_func, (s, pairs.i, pairs.j)),
    ):
        ds = np.empty(len(s))
        value = fn(*args, ds)
        outs[name] = (value, ds)
        assert math.isfinite(value)
        np.testing.assert_allclose(value, ref_value, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(ds, ref_ds, rtol=1e-12, atol=1e-15)
    # compiled kernel and its Python source agree to the last bits that matter
    np.testing.assert_allclose(outs["fast"][1], outs["fast.py_func"][1],
                               rtol=1e-12, atol=0)


def test_kernel_extreme_margins_stay_finite():
    # scores 2000 apart: a_j underflows, the direct branch takes over
    s = np.array([1000.0, -1000.0, 0.0, 999.0])
    y = np.array([0, 1, 2, 1])
    qid = np.zeros(4, dtype=int)
    loss = PairwiseLogistic(np.eye(4), y, qid, normalize=False)
    value = loss.fun(s)
    ref, ref_ds = brute_force(s, y, qid)
    assert value == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(loss.grad(s), ref_ds, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scale", [1e-9, 1.0, 30.0, 300.0])
def test_fast_kernel_product_accumulation_on_many_pairs(scale):
    # thousands of pairs per query: every branch of the log-of-a-product
    # accumulation (small excess u, u folded past FOLD, r > PROD_MAX) is taken
    rng = np.random.default_rng(int(scale * 7) % 1000)
    y = rng.integers(0, 4, size=400)
    qid = np.repeat([1, 2], 200)
    s = rng.normal(size=400) * scale
    pairs = preference_pairs(y, qid)
    from refimpl._validation import group_queries
    g = group_queries(qid, 400)
    ds_fast, ds_direct = np.empty(400), np.empty(400)
    fast = K.value_ds(s, g.order, g.indptr, pairs.i, pairs.j, np.empty(400), ds_fast)
    direct = K.value_ds_direct(s, pairs.i, pairs.j, ds_direct)
    assert fast == pytest.approx(direct, rel=1e-12)
    np.testing.assert_allclose(ds_fast, ds_direct, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("gap", [14.28, 25.0, 35.0])
@pytest.mark.parametrize("n_pairs", [1, 7, 300])
def test_fast_kernel_keeps_relative_accuracy_on_small_losses(gap, n_pairs):
    # every pair ranked right by a wide margin: the loss is tiny (down to
    # 1e-15 per pair) and must still be exact to a few ulps *relatively*;
    # accumulating the product 1 + r itself rounded r to 1e-16 absolute (a
    # hypothesis run found 7e-11 relative error at gap 14.28, one pair).
    rng = np.random.default_rng(n_pairs)
    m = n_pairs + 1
    s = np.concatenate([[gap], rng.uniform(-1.0, 0.0, size=n_pairs)])
    y = np.concatenate([[1], np.zeros(n_pairs, dtype=int)])
    qid = np.zeros(m, dtype=int)
    pairs = preference_pairs(y, qid)
    from refimpl._validation import group_queries
    g = group_queries(qid, m)
    ds = np.empty(m)
    fast = K.value_ds(s, g.order, g.indptr, pairs.i, pairs.j, np.empty(m), ds)
    exact = math.fsum(math.log1p(math.exp(-(s[0] - s[k]))) for k in range(1, m))
    assert fast == pytest.approx(exact, rel=4 * n_pairs * 2.0 ** -52)


@pytest.mark.parametrize("backend", ["numba", "direct", "numpy"])
def test_loss_backends_match_explicit_pair_matrix(backend):
    rng = np.random.default_rng(3)
    for seed in range(5):
        X, y, qid = small(seed)
        Kmat = pair_difference_matrix(X, y, qid)
        v = rng.normal(size=X.shape[1]) * 3
        loss = PairwiseLogistic(X, y, qid, backend=backend)
        margins = Kmat @ v
        ref = np.logaddexp(0.0, -margins).mean()
        ref_grad = -(Kmat.T @ (1.0 / (1.0 + np.exp(margins)))) / len(Kmat)
        assert loss.fun(v) == pytest.approx(ref, rel=1e-12)
        np.testing.assert_allclose(loss.grad(v), ref_grad, rtol=1e-10, atol=1e-14)


def test_loss_sum_and_unordered_input():
    X, y, qid = small(1)
    perm = np.random.default_rng(0).permutation(len(y))
    v = np.random.default_rng(1).normal(size=X.shape[1])
    a = PairwiseLogistic(X, y, qid, normalize=False)
    b = PairwiseLogistic(X[perm], y[perm], qid[perm], normalize=False)
    assert a.fun(v) == pytest.approx(b.fun(v), rel=1e-12)
    np.testing.assert_allclose(a.grad(v), b.grad(v), rtol=1e-10, atol=1e-12)
    assert a.fun(v) == pytest.approx(a.n_pairs * PairwiseLogistic(X, y, qid).fun(v))


# --------------------------------------------------------------------------
# Eq. 5-7
# --------------------------------------------------------------------------


def objective(seed=0, k=3, lam=0.1):
    X, y, qid = small(seed)
    return LifeRankObjective(PairwiseLogistic(X, y, qid), k, lam)


def central_difference(fun, x, h=1e-6):
    g = np.empty_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("seed", range(3))
def test_gradients_match_finite_differences(seed):
    obj = objective(seed)
    rng = np.random.default_rng(seed)
    x = obj.pack(rng.normal(size=(obj.n, obj.k)), rng.normal(size=obj.k))
    fd = central_difference(obj.fun, x)
    obj.fun(x)
    np.testing.assert_allclose(obj.grad(x), fd, rtol=1e-6, atol=1e-8)
    # the Lagrangian of eq. 6 (multipliers A) against eq. 7's constraint part
    A = rng.normal(size=(obj.k, obj.k))
    T, w = obj.unpack(x)
    fd_L = central_difference(lambda z: obj.lagrangian(*obj.unpack(z), A), x)
    analytic = obj.grad(x) + obj.constraint_vjp(x, A.ravel())
    np.testing.assert_allclose(analytic, fd_L, rtol=1e-6, atol=1e-8)
    # dL/dalpha_ij is the constraint itself: t_i^T t_j, 1 - t_i^T t_i
    C = T.T @ T
    c = obj.constraint(x).reshape(obj.k, obj.k)
    np.testing.assert_allclose(c - np.diag(np.diag(c)), C - np.diag(np.diag(C)))
    np.testing.assert_allclose(np.diag(c), 1 - np.diag(C))
    assert np.linalg.norm(c) == pytest.approx(orthonormality_error(T), rel=1e-12)


def test_paper_column_formula_of_eq7():
    obj = objective(4, k=4)
    rng = np.random.default_rng(4)
    T, A = rng.normal(size=(obj.n, obj.k)), rng.normal(size=(obj.k, obj.k))
    got = obj.multiplier_matrix_grad(T, A)
    for l in range(obj.k):
        col = sum((A[l, i] + A[i, l]) * T[:, i] for i in range(obj.k) if i != l)
        col = col - 2 * A[l, l] * T[:, l]
        np.testing.assert_allclose(got[:, l], col, rtol=1e-12, atol=1e-14)


def test_objective_depends_on_T_w_only_when_orthonormal():
    obj = objective(2, k=3, lam=0.3)
    rng = np.random.default_rng(2)
    T = stiefel_retraction(rng.normal(size=(obj.n, obj.k)))
    w = rng.normal(size=obj.k)
    v = T @ w
    expected = obj.loss.fun(v) + 0.15 * v @ v
    assert obj.fun(obj.pack(T, w)) == pytest.approx(expected, rel=1e-12)
    # another orthonormal T' with the same T' w' = v gives the same value
    Q = stiefel_retraction(rng.normal(size=(obj.k, obj.k)))
    assert obj.fun(obj.pack(T @ Q, Q.T @ w)) == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------
# cvxpy
# --------------------------------------------------------------------------


def test_w_step_matches_cvxpy_with_intercept_zero():
    X, y, qid = small(7, n_queries=6)
    lam = 0.05
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), 3, lam)
    T = stiefel_retraction(np.random.default_rng(7).normal(size=(obj.n, 3)))
    res = fit_weights(obj, T, np.ones(3), lr=1.0, tol=1e-11)
    assert res.converged
    w = res.w
    # eq. 5 as printed: ordered pairs (both orientations, y = +-1) and b
    Kmat = pair_difference_matrix(X, y, qid) @ T
    p = len(Kmat)
    wv, b = cp.Variable(3), cp.Variable()
    margins = cp.hstack([Kmat @ wv + b, -(-Kmat @ wv + b)])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-margins)) / (2 * p)
                                  + lam / 2 * cp.sum_squares(wv)))
    value = solve(prob)
    # The intercept is zero at the optimum because the objective is even in b.
    # Near 0 the objective is flat in b (quadratic), so Clarabel pins b down
    # only to about the square root of its objective accuracy (1.6e-6 under
    # one OpenBLAS kernel, less under others): we judge b by what it buys.
    # Letting b free must not lower the objective below ours at b = 0.
    F, _, _ = obj.value_and_grads(T, w)
    assert value >= F - 1e-9 * max(1, abs(F))
    assert abs(F - value) <= 1e-6 * max(1, abs(value))
    # lam-strong convexity in w: ||w_cvx - w*||^2 <= 2 (F(w_cvx, b_cvx) - F*) / lam,
    # with F* within 1e-9 of ours (tol = 1e-11 on the gradient)
    radius = np.sqrt(2 * (value - F + 1e-9) / lam)
    assert np.linalg.norm(w - wv.value) <= radius


def test_stiefel_solution_matches_cvxpy_in_v():
    X, y, qid = small(8, n_queries=6)
    lam = 0.05
    loss = PairwiseLogistic(X, y, qid)
    obj = LifeRankObjective(loss, 2, lam)
    rng = np.random.default_rng(8)
    res = liferank_solve(obj, rng.normal(size=(obj.n, 2)), np.ones(2),
                         constraint="stiefel", lr=0.5, max_iter=20000, tol=1e-9)
    assert res.converged
    Kmat = pair_difference_matrix(X, y, qid)
    v = cp.Variable(obj.n)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-Kmat @ v)) / len(Kmat)
                                  + lam / 2 * cp.sum_squares(v)))
    value = solve(prob)
    F = res.history["f"][-1]
    assert abs(F - value) <= 1e-6 * max(1, abs(value))
    np.testing.assert_allclose(res.T @ res.w, v.value,
                               atol=1e-4 * np.abs(v.value).max())


# --------------------------------------------------------------------------
# Solvers
# --------------------------------------------------------------------------


class Circle:
    """min a^T t subject to 1 - t^T t = 0 (one column of T, paper's sign)."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=float)

    def fun(self, x):
        return float(self.a @ x)

    def grad(self, x):
        return self.a.copy()

    def constraint(self, x):
        return np.array([1.0 - x @ x])

    def constraint_vjp(self, x, u):
        return -2.0 * u[0] * x


def test_bdmm_toy_converges_to_the_constrained_minimum():
    a = np.array([1.0, 0.5])
    res = bdmm(Circle(a), [0.3, 1.2], lr=0.05, max_iter=5000, tol=1e-10,
               constraint_tol=1e-10)
    assert res.converged
    np.testing.assert_allclose(res.w, -a / np.linalg.norm(a), atol=1e-8)
    # a = 2 alpha t at the optimum: alpha* = -||a|| / 2
    assert res.multipliers[0] == pytest.approx(-np.linalg.norm(a) / 2, abs=1e-8)


def test_bdmm_undamped_mode_oscillates_and_explicit_euler_grows():
    # a = 0: nothing but the constraint; t' = 2 alpha t, alpha' = 1 - |t|^2
    # conserves E = alpha^2 + |t|^2 / 2 - log|t|: from |t| = 0.6, alpha = 0
    # the radius swings between 0.6 and 1.465 (violation 0.64 and 1.146)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        alt = bdmm(Circle([0.0, 0.0]), [0.6, 0.0], lr=0.02, max_iter=3000)
        sim = bdmm(Circle([0.0, 0.0]), [0.6, 0.0], lr=0.02, max_iter=1500,
                   update="simultaneous")
        damped = bdmm(Circle([0.0, 0.0]), [0.6, 0.0], lr=0.02, max_iter=3000,
                      damping=2.0, tol=0, constraint_tol=1e-12)
    v_alt = np.asarray(alt.history["violation"])
    v_sim = np.asarray(sim.history["violation"])
    r_far = 1.4652   # root of r^2/2 - log r = 0.18 - log 0.6 above 1
    # alternating (symplectic Euler): still reaching both turning points
    # after 3000 steps, never beyond them by more than O(eta)
    assert v_alt[-600:].max() > 0.95 * (r_far ** 2 - 1)
    assert v_alt[-600:].min() < 0.05
    assert v_alt.max() < 1.05 * (r_far ** 2 - 1)
    # simultaneous (explicit Euler): the swing grows
    assert np.all(np.isfinite(v_sim))
    assert v_sim[-300:].max() > 1.5 * (r_far ** 2 - 1)
    # Platt & Barr's damping removes the oscillation
    assert damped.history["violation"][-1] < 1e-10


def test_gradient_descent_on_the_lagrangian_diverges():
    # descending in the multiplier too: |t| and alpha run off, L -> -infinity
    prob = Circle([1.0, 0.5])
    x, alpha, lr = np.array([0.3, 1.2]), 0.0, 0.05
    for n_iter in range(1, 1001):
        gx = prob.grad(x) + prob.constraint_vjp(x, [alpha])
        galpha = prob.constraint(x)[0]
        x, alpha = x - lr * gx, alpha - lr * galpha
        L = prob.fun(x) + alpha * prob.constraint(x)[0]
        if L < -1e6:
            break
    assert L < -1e6 and n_iter < 1000
    # BDMM from the same start: the sign of the multiplier step is the fix
    res = bdmm(prob, [0.3, 1.2], lr=lr, max_iter=1000, tol=1e-8,
               constraint_tol=1e-8)
    assert res.converged


def test_liferank_bdmm_violation_decreases_with_damping():
    X, y, qid = small(9, n_queries=8)
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), 3, 0.01)
    T0 = np.random.default_rng(9).normal(size=(obj.n, 3)) / np.sqrt(obj.n)
    res = liferank_solve(obj, T0, np.ones(3), constraint="bdmm", lr=0.1,
                         damping=1.0, max_iter=3000, tol=1e-5,
                         constraint_tol=1e-6)
    viol = np.asarray(res.history["violation"])
    assert viol[0] > 0.3
    assert viol[-1] < 1e-6 and res.converged
    assert np.all(viol[200:] < 0.1 * viol[0])
    # stationarity: nabla_T L = 0 gives the multipliers M = lam w w^T
    A = res.multipliers
    M = A + A.T
    M[np.diag_indices(3)] = -2 * np.diag(A)
    np.testing.assert_allclose(M, 0.01 * np.outer(res.w, res.w), atol=1e-4)


@pytest.mark.parametrize("retraction", ["polar", "qr"])
def test_stiefel_keeps_orthonormality(retraction):
    X, y, qid = small(10)
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), 4, 0.01)
    T0 = np.random.default_rng(10).normal(size=(obj.n, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = liferank_solve(obj, T0, np.ones(4), constraint="stiefel", lr=0.2,
                             retraction=retraction, max_iter=300, tol=0)
    assert max(res.history["violation"]) < 1e-10
    assert res.history["f"][-1] < res.history["f"][0]


def test_retractions_and_riemannian_gradient():
    rng = np.random.default_rng(11)
    T = rng.normal(size=(7, 3))
    P, Q = stiefel_retraction(T, "polar"), stiefel_retraction(T, "qr")
    for M in (P, Q):
        np.testing.assert_allclose(M.T @ M, np.eye(3), atol=1e-13)
    # polar = the nearest orthonormal matrix: closer than QR's
    assert np.linalg.norm(T - P) <= np.linalg.norm(T - Q) + 1e-12
    np.testing.assert_allclose(Q.T @ T, np.triu(Q.T @ T), atol=1e-12)  # T = Q R
    G = rng.normal(size=(7, 3))
    xi = stiefel_gradient(P, G)
    np.testing.assert_allclose(P.T @ xi + xi.T @ P, 0, atol=1e-12)
    # a retraction agrees with T + t xi to first order
    for method in ("polar", "qr"):
        moved = P + 1e-4 * xi
        err = np.linalg.norm(stiefel_retraction(moved, method) - moved)
        assert err < 1e-6


def test_unconstrained_variant_drifts_in_scale():
    X, y, qid = small(12, n_queries=8)
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), 3, 0.1)
    T0 = stiefel_retraction(np.random.default_rng(12).normal(size=(obj.n, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = liferank_solve(obj, T0, np.ones(3), constraint="none", lr=0.1,
                             max_iter=2000)
    # (c T, w / c) has the same loss and a smaller l2 term: T grows, w shrinks
    assert np.linalg.norm(res.T) > 1.2 * np.linalg.norm(T0)
    assert res.history["violation"][-1] > 0.3
    v = res.T @ res.w
    assert np.linalg.norm(res.w) < np.linalg.norm(v)


def test_bdmm_bad_input():
    prob = Circle([1.0, 0.0])
    with pytest.raises(DataError, match="lr"):
        bdmm(prob, [1.0, 0.0], lr=0)
    with pytest.raises(DataError, match="damping"):
        bdmm(prob, [1.0, 0.0], lr=0.1, damping=-1)
    with pytest.raises(DataError, match="update"):
        bdmm(prob, [1.0, 0.0], lr=0.1, update="jacobi")
    with pytest.raises(DataError, match="multipliers0"):
        bdmm(prob, [1.0, 0.0], [0.0, 0.0], lr=0.1)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        bdmm(prob, [1.0, 0.0], lr=0.1, max_iter=3)


# --------------------------------------------------------------------------
# Feature quality
# --------------------------------------------------------------------------


def test_rank_similarity_matches_scipy_and_counts():
    X, _, qid = small(13, n_queries=4, n_noise=1)
    X = np.round(X, 1)                          # ties, as in LETOR
    sim_b = rank_similarity(X, qid, tau="b")
    sim_g = rank_similarity(X, qid, tau="eq10")
    n = X.shape[1]
    for j in range(n):
        for l in range(j + 1, n):
            taus, gammas = [], []
            for q in np.unique(qid):
                a, b = X[qid == q, j], X[qid == q, l]
                if np.ptp(a) > 0 and np.ptp(b) > 0:
                    taus.append(abs(stats.kendalltau(a, b).statistic))
                nc = nd = 0
                for u in range(len(a)):
                    for v in range(u + 1, len(a)):
                        prod = np.sign(a[u] - a[v]) * np.sign(b[u] - b[v])
                        nc += prod > 0
                        nd += prod < 0
                if nc + nd:
                    gammas.append(abs(nc - nd) / (nc + nd))
            assert sim_b[j, l] == pytest.approx(np.mean(taus) if taus else 0, abs=1e-12)
            assert sim_g[j, l] == pytest.approx(np.mean(gammas) if gammas else 0,
                                                abs=1e-12)
    assert feature_redundancy(X, qid) == pytest.approx(
        sim_b[np.triu_indices(n, 1)].mean())
    # per-query absolute values: a feature and its negation on alternate queries
    x = np.arange(8.0)
    Z = np.column_stack([x, np.r_[x[:4], -x[4:]]])
    q = np.repeat([1, 2], 4)
    assert rank_similarity(Z, q)[0, 1] == pytest.approx(1.0)


def test_feature_importance_is_gas_ndcg_at_5():
    X, y, qid = small(14)
    np.testing.assert_array_equal(feature_importance(X, y, qid),
                                  feature_ndcg(X, y, qid, k=5)[0])
    with pytest.raises(DataError, match="tau"):
        rank_similarity(X, qid, tau="a")


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------


def test_estimator_api_and_determinism():
    X, y, qid = small(15, n_queries=8)
    m = LifeRank(n_components=3, max_iter=400, random_state=1)
    assert clone(m).get_params() == m.get_params()
    with pytest.raises(NotFittedError):
        m.transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        Z = m.fit_transform(X, y, qid)
        m2 = clone(m).fit(X, y, qid)
        m3 = clone(m).set_params(random_state=2).fit(X, y, qid)
    assert Z.shape == (len(y), 3) and m.components_.shape == (X.shape[1], 3)
    np.testing.assert_allclose(Z, X @ (m.components_ / m.feature_scale_[:, None]))
    np.testing.assert_allclose(m.predict(X), Z @ m.coef_)
    np.testing.assert_array_equal(m.components_, m2.components_)
    np.testing.assert_array_equal(m.coef_, m2.coef_)
    assert not np.allclose(m.components_, m3.components_)
    assert m.orthonormality_error_ < 1e-3
    assert set(m.history_) >= {"f", "loss", "lagrangian", "violation", "time"}
    with pytest.raises(DataError, match="features"):
        m.transform(X[:, :-1])


def test_estimator_converges_and_seeds_agree_on_T_w():
    X, y, qid = small(16, n_queries=6)
    fits = [LifeRank(n_components=2, lam=0.05, lr=0.5, constraint="stiefel",
                     max_iter=20000, tol=1e-8, random_state=s).fit(X, y, qid)
            for s in (0, 1)]
    assert all(f.converged_ for f in fits)
    v0, v1 = (f.components_ @ f.coef_ for f in fits)
    np.testing.assert_allclose(v0, v1, atol=1e-5 * np.abs(v0).max())
    # ... but not on T: the loss sees only the direction of T w
    assert np.linalg.norm(fits[0].components_ - fits[1].components_) > 0.1


@pytest.mark.parametrize("params, match", [
    (dict(n_components=99), "n_components"),
    (dict(n_components=0), "n_components"),
    (dict(lam=-1.0), "lam"),
    (dict(lr=0.0), "lr"),
    (dict(constraint="penalty"), "constraint"),
    (dict(retraction="cayley"), "retraction"),
    (dict(init="zeros"), "init"),
    (dict(max_iter=0), "max_iter"),
    (dict(damping=-0.1), "damping"),
    (dict(feature_scaling="standard"), "feature_scaling"),
])
def test_estimator_bad_parameters(params, match):
    X, y, qid = small(17)
    with pytest.raises(ParameterError, match=match):
        LifeRank(**params).fit(X, y, qid)


def test_estimator_bad_data():
    X, y, qid = small(18)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(DataError, match="NaN"):
        LifeRank(n_components=2).fit(Xn, y, qid)
    with pytest.raises(DataError, match="entries"):
        LifeRank(n_components=2).fit(X, y[:-1], qid)
    with pytest.raises(DataError, match="no preference pairs"):
        LifeRank(n_components=2).fit(X, np.zeros_like(y), qid)


def test_estimator_warns_when_not_converged():
    X, y, qid = small(19)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        LifeRank(n_components=2, max_iter=2).fit(X, y, qid)


# --------------------------------------------------------------------------
# The step rule: scale invariance and the divergence guard (issue 27)
# --------------------------------------------------------------------------


def _column_scales(n, base, seed=0):
    """Per-feature factors ``base**k``, ``k`` in -6..6, one per column."""
    return base ** np.random.default_rng(seed).integers(-6, 7, size=n).astype(float)


def _fit_both(kw, X, c, y, qid, cls=LifeRank):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(**kw).fit(X, y, qid), cls(**kw).fit(X * c, y, qid)


@pytest.mark.parametrize("constraint", ["bdmm", "stiefel", "none"])
def test_fit_is_invariant_to_the_scale_of_each_feature(constraint):
    """Fitting on X diag(c) runs the iterates of X (prop. lr-prop-scale):
    with powers of 2 the scaled features are the same doubles, so T, w,
    the whole history, the extracted features and the scores are equal
    bit for bit; only feature_scale_ takes the factors."""
    X, y, qid = small(3, n_queries=8)
    c = _column_scales(X.shape[1], 2.0)
    kw = dict(n_components=3, lam=0.05, max_iter=300, constraint=constraint)
    a, b = _fit_both(kw, X, c, y, qid)
    np.testing.assert_array_equal(b.feature_scale_, c * a.feature_scale_)
    np.testing.assert_array_equal(b.components_, a.components_)
    np.testing.assert_array_equal(b.coef_, a.coef_)
    for key in set(a.history_) - {"time"}:
        np.testing.assert_array_equal(b.history_[key], a.history_[key])
    assert b.n_iter_ == a.n_iter_ and b.converged_ == a.converged_
    np.testing.assert_array_equal(b.transform(X * c), a.transform(X))
    np.testing.assert_array_equal(b.predict(X * c), a.predict(X))
    # other factors change the scaled features by one rounding per entry
    c10 = _column_scales(X.shape[1], 10.0, seed=1)
    a, b = _fit_both(kw, X, c10, y, qid)
    np.testing.assert_allclose(b.components_, a.components_, rtol=1e-7,
                               atol=1e-9)
    np.testing.assert_allclose(b.predict(X * c10), a.predict(X), rtol=1e-7,
                               atol=1e-9)


def test_without_scaling_the_fit_sees_the_raw_scales():
    """feature_scaling=None fits X as given: another T on X diag(c), and
    feature_scale_ is all ones."""
    X, y, qid = small(3, n_queries=8)
    c = _column_scales(X.shape[1], 2.0)
    kw = dict(n_components=3, lam=0.05, max_iter=100, lr=1e-4,
              feature_scaling=None)
    a, b = _fit_both(kw, X, c, y, qid)
    np.testing.assert_array_equal(a.feature_scale_, np.ones(X.shape[1]))
    assert not np.allclose(b.components_, a.components_)
    np.testing.assert_allclose(a.transform(X), X @ a.components_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("ranker", ["ranksvm", "linreg"])
def test_pipeline_is_invariant_to_the_scale_of_each_feature(ranker):
    """The second stage receives LifeRank's scale-free features: on X
    diag(c), c powers of 2, it sees the same doubles, so its weights and
    the pipeline's scores are those on X; coef_ takes the factors."""
    from refimpl.estimators import LifeRankPipeline

    X, y, qid = small(8, n_queries=8)
    c = _column_scales(X.shape[1], 2.0, seed=2)
    kw = dict(n_components=3, lam=0.05, max_iter=50, ranker=ranker)
    a, b = _fit_both(kw, X, c, y, qid, cls=LifeRankPipeline)
    np.testing.assert_array_equal(b.ranker_.coef_, a.ranker_.coef_)
    np.testing.assert_array_equal(b.predict(X * c), a.predict(X))
    np.testing.assert_array_equal(b.coef_ * c, a.coef_)


def test_the_scale_is_one_on_unit_range_features():
    """LETOR's [0, 1] features (every column's maximum 1): s = 1, so the fit
    is the un-scaled one, bit for bit."""
    X, y, qid = small(4)
    X = X - X.min(axis=0)
    X = X / X.max(axis=0)
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), 2, 0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = LifeRank(n_components=2, lam=0.05, max_iter=50).fit(X, y, qid)
        plain = LifeRank(n_components=2, lam=0.05, max_iter=50,
                         feature_scaling=None).fit(X, y, qid)
        res = liferank_solve(obj, m._initial_T(X.shape[1], 2), np.ones(2),
                             lr=m.lr, damping=m.damping, max_iter=50, tol=1e-4)
    np.testing.assert_array_equal(m.feature_scale_, np.ones(X.shape[1]))
    for fit in (m, plain):
        np.testing.assert_array_equal(fit.components_, res.T)
        np.testing.assert_array_equal(fit.coef_, res.w)
        np.testing.assert_array_equal(fit.transform(X), X @ res.T)


@pytest.mark.parametrize("constraint", ["bdmm", "stiefel", "none"])
def test_a_too_large_step_stops_with_an_error_naming_it(constraint):
    """No silent divergence: the planted lr = 1000 makes F grow; the fit
    stops with an error that names the step and the remedy."""
    X, y, qid = small(5)
    with pytest.raises(DivergenceError, match=r"lr=1000\b.*lower lr"):
        LifeRank(n_components=3, lr=1000.0, constraint=constraint,
                 max_iter=500).fit(X, y, qid)


def test_bdmm_guard_stops_a_growing_run_and_names_the_step():
    X, y, qid = small(6)
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), 2, 0.01)
    T0 = np.random.default_rng(0).normal(size=(obj.n, 2)) / math.sqrt(obj.n)
    x0 = obj.pack(T0, np.ones(2))
    with pytest.raises(DivergenceError, match=r"grew .*lr=50"):
        bdmm(obj, x0, lr=50.0, damping=1.0, max_iter=500, max_growth=10)
    res = bdmm(obj, x0, lr=50.0, damping=1.0, max_iter=500, max_growth=10,
               on_nonfinite="stop", warn=False)
    assert res.message.startswith("diverged") and "guard" in res.message
    assert np.all(np.isfinite(res.w))          # stopped before overflow
    assert res.history["f"][-1] > res.history["f"][0] + 10 * max(
        1.0, abs(res.history["f"][0]))


def test_bdmm_guard_never_changes_a_convergent_run():
    kw = dict(lr=0.05, max_iter=3000, tol=1e-10, constraint_tol=1e-10,
              damping=1.0)
    a = bdmm(Circle([1.0, 0.5]), [0.3, 1.2], **kw)
    b = bdmm(Circle([1.0, 0.5]), [0.3, 1.2], max_growth=10, **kw)
    assert a.converged and b.converged and a.n_iter == b.n_iter
    np.testing.assert_array_equal(a.w, b.w)
    with pytest.raises(DataError, match="max_growth"):
        bdmm(Circle([1.0, 0.5]), [0.3, 1.2], max_growth=-1.0, **kw)


def test_non_finite_iterates_stop_without_the_guard():
    """With the guard off, the run still stops (non-finite), never returns NaN."""
    X, y, qid = small(7)
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), 2, 0.01)
    T0 = np.random.default_rng(1).normal(size=(obj.n, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = liferank_solve(obj, T0, np.ones(2), lr=1e6, max_growth=None,
                             max_iter=5000)
    assert not res.converged and "non-finite" in res.message
    with pytest.raises(NonFiniteError, match="not finite"):
        bdmm(obj, obj.pack(T0, np.ones(2)), lr=1e6, max_iter=5000)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pipeline_memory_fits_each_first_stage_once(tmp_path, monkeypatch):
    """``LifeRankPipeline(memory=...)``: a second fit with the same LifeRank
    parameters and data loads the first stage (bit for bit what a fresh fit
    gives), whatever ``C`` or ``ranker``; another ``n_components`` or other
    data fit it again."""
    from refimpl.estimators import LifeRankPipeline
    from refimpl.estimators import baselines

    calls = []
    original = LifeRank._fit

    def counted(self, problem):
        calls.append(self.n_components)
        return original(self, problem)

    monkeypatch.setattr(LifeRank, "_fit", counted)
    X, y, qid = small(7)
    kw = {"n_components": 2, "lam": 0.05, "max_iter": 30}
    plain = LifeRankPipeline(**kw, C=0.5).fit(X, y, qid)
    assert calls == [2]
    memo = str(tmp_path / "stages")
    for C, ranker in ((0.5, "ranksvm"), (2.0, "ranksvm"), (1.0, "ranksvm-hinge"),
                      (1.0, "linreg")):
        m = LifeRankPipeline(**kw, C=C, ranker=ranker, memory=memo).fit(X, y, qid)
        np.testing.assert_array_equal(m.liferank_.components_,
                                      plain.liferank_.components_)
    assert calls == [2, 2]                    # one fit for the four
    np.testing.assert_array_equal(
        LifeRankPipeline(**kw, C=0.5, memory=memo).fit(X, y, qid).coef_, plain.coef_)
    LifeRankPipeline(**{**kw, "n_components": 3}, memory=memo).fit(X, y, qid)
    X2 = X.copy()
    X2[0, 0] += 0.25
    LifeRankPipeline(**kw, memory=memo).fit(X2, y, qid)
    assert calls == [2, 2, 3, 2]
    assert baselines.LifeRankPipeline.FIRST_STAGE_PARAMS == (
        "n_components", "lam", "lr", "max_iter", "random_state")
    with pytest.raises(ParameterError, match="memory"):
        LifeRankPipeline(memory=3).fit(X, y, qid)
    # the first stage's warnings come with every fit, loaded or not
    for _ in range(2):
        with pytest.warns(ConvergenceWarning, match="max_iter=30"):
            LifeRankPipeline(**kw, memory=memo).fit(X, y, qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pipeline_converged_needs_both_stages(monkeypatch):
    """``LifeRankPipeline.converged_`` is LifeRank's and the ranker's: a first
    stage stopped at ``max_iter``, or a RankSVM stage that did not converge,
    never reads as a converged pipeline."""
    from refimpl.estimators import LifeRankPipeline, RankSVM
    from refimpl.estimators import baselines

    X, y, qid = small(16, n_queries=6)
    kw = {"n_components": 2, "lam": 0.05, "lr": 0.1}
    done = LifeRankPipeline(**kw, max_iter=20000).fit(X, y, qid)
    assert done.liferank_.converged_ and done.ranker_.converged_ and done.converged_
    capped = LifeRankPipeline(**kw, max_iter=5).fit(X, y, qid)
    assert capped.liferank_.n_iter_ == 5 and not capped.liferank_.converged_
    assert capped.ranker_.converged_ and not capped.converged_
    # least squares has no stopping rule: LifeRank's alone decides
    assert LifeRankPipeline(**kw, ranker="linreg", max_iter=20000).fit(
        X, y, qid).converged_

    class Unconverged(RankSVM):
        def _fit(self, problem, **kwargs):
            super()._fit(problem, **kwargs)
            self.converged_ = False
            return self

    monkeypatch.setattr(baselines, "RankSVM", Unconverged)
    second = LifeRankPipeline(**kw, max_iter=20000).fit(X, y, qid)
    assert second.liferank_.converged_ and not second.ranker_.converged_
    assert not second.converged_
