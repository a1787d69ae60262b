"""Proximal Newton (newGLMNET) for RankSVM-l1 and the weighted lasso.

Against cvxpy on small problems (judged by the objective at cvxpy's point),
its numba kernels against brute force, and its stopping rule against
FISTA's gradient-mapping test.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from cvx_reference import solve
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from refimpl.data import make_synthetic_letor
from refimpl.estimators import SparseRankSVM
from refimpl.estimators.sparse import ranksvm_l1_path
from refimpl.kernels.cd_l1 import (
    active_laplacian_matmul,
    cd_quadratic_l1,
    model_violation,
)
from refimpl.kernels.laplacian_tree import active_laplacian_rows
from refimpl.losses import PairwiseSquaredHinge
from refimpl.nonconvex import make_concave_penalty
from refimpl.pairs import pair_difference_matrix
from refimpl.penalties import L1, NonNegWeightedL1, WeightedL1
from refimpl.losses import ScaledSmooth
from refimpl.solvers import apg, hessian_matrix, prox_newton
from refimpl.solvers.prox_newton import generalized_hessian, min_norm_subgradient
from refimpl.solvers.reweighted import dc_stationarity, reweighted_l1


def small(seed, n_queries=5):
    d = make_synthetic_letor(n_queries=n_queries, docs_per_query=(5, 11),
                             n_informative=3, n_redundant=2, n_noise=5, seed=seed)
    return d.X, d.y, d.qid


def cvxpy_l1(X, y, qid, C, beta):
    K = pair_difference_matrix(X, y, qid)
    w = cp.Variable(X.shape[1])
    obj = cp.sum(cp.multiply(beta, cp.abs(w))) + C * cp.sum_squares(cp.pos(1 - K @ w))
    value = solve(cp.Problem(cp.Minimize(obj)))
    return w.value, value


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("C", [0.03, 0.3, 3.0, 300.0])
def test_newton_matches_cvxpy(seed, C):
    X, y, qid = small(seed)
    beta = np.ones(X.shape[1])
    w_star, f_star = cvxpy_l1(X, y, qid, C, beta)
    m = SparseRankSVM(C=C, solver="newton", tol=1e-10).fit(X, y, qid)
    assert m.converged_
    assert m.objective_ <= f_star + 1e-8 * max(1.0, abs(f_star))
    assert m.objective_ >= f_star - 1e-6 * max(1.0, abs(f_star))
    np.testing.assert_allclose(m.predict(X), X @ w_star,
                               atol=1e-4 * max(1.0, np.abs(X @ w_star).max()))


@pytest.mark.parametrize("seed", range(3))
def test_newton_weighted_l1_matches_cvxpy(seed):
    X, y, qid = small(seed + 10)
    beta = np.random.default_rng(seed).uniform(0.0, 3.0, X.shape[1])
    beta[0] = 0.0                                    # one unpenalised feature
    _, f_star = cvxpy_l1(X, y, qid, 0.5, beta)
    m = SparseRankSVM(C=0.5, penalty="weighted_l1", weights=beta, tol=1e-10,
                      solver="newton").fit(X, y, qid)
    assert abs(m.objective_ - f_star) <= 1e-6 * max(1.0, abs(f_star))


@pytest.mark.parametrize("backend", ["pairs", "numpy", "tree"])
def test_generalized_hessian_equals_hess_vec_products(backend):
    X, y, qid = small(4)
    loss = PairwiseSquaredHinge(X, y, qid, backend=backend)
    smooth = ScaledSmooth(loss, 0.7)
    w = np.random.default_rng(0).normal(size=X.shape[1])
    H = generalized_hessian(smooth, w)
    np.testing.assert_allclose(H, hessian_matrix(smooth, w), rtol=1e-12,
                               atol=1e-12 * np.abs(H).max())
    assert np.array_equal(loss._w, w)                 # cache left at w


@settings(max_examples=60)
@given(st.integers(0, 2**31 - 1), st.integers(1, 12), st.integers(1, 8))
def test_active_laplacian_matmul_matches_brute_force(seed, n_docs, n_feat):
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(rng.normal(size=(n_docs, n_feat)))
    z = rng.choice([-1.0, 0.0, 1.0, 2.0], size=n_docs)   # ties: residual exactly 0
    n_pairs = int(rng.integers(0, 3 * n_docs + 1))
    pi = rng.integers(0, n_docs, n_pairs).astype(np.int64)
    pj = rng.integers(0, n_docs, n_pairs).astype(np.int64)
    out = np.zeros_like(X)
    count = active_laplacian_matmul(z, pi, pj, 1.0, X, out)
    ref = np.zeros_like(X)
    n_act = 0
    for i, j in zip(pi, pj):
        if 1.0 - (z[i] - z[j]) > 0:
            n_act += 1
            e = np.zeros(n_docs)
            e[i] += 1.0
            e[j] -= 1.0
            ref += np.outer(e, e) @ X
    assert count == n_act
    np.testing.assert_allclose(out, ref, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**31 - 1), st.lists(st.integers(1, 9), min_size=1, max_size=5),
       st.integers(1, 5), st.integers(1, 4), st.sampled_from([0.5, 1.0, 3.0]))
def test_active_laplacian_rows_matches_brute_force(seed, sizes, n_feat, n_levels,
                                                   margin):
    """The per-query sorted-score Laplacian against the explicit pair loop.

    Scores on a coarse grid (ties, residuals exactly 0 at margin 1), queries
    of one document, queries with one label (no pair)."""
    rng = np.random.default_rng(seed)
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(indptr[-1])
    X = np.ascontiguousarray(rng.normal(size=(n, n_feat)))
    y = rng.integers(0, n_levels, n).astype(np.float64)
    z = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0], size=n)
    pi, pj = [], []
    for q in range(len(sizes)):
        for i in range(indptr[q], indptr[q + 1]):
            for j in range(indptr[q], indptr[q + 1]):
                if y[i] > y[j]:
                    pi.append(i)
                    pj.append(j)
    pi, pj = np.array(pi, dtype=np.int64), np.array(pj, dtype=np.int64)
    ref = np.zeros_like(X)
    n_ref = active_laplacian_matmul(z, pi, pj, margin, X, ref)
    out = np.zeros_like(X)
    count = active_laplacian_rows(X, z, y, indptr, margin, out)
    assert count == n_ref
    np.testing.assert_allclose(out, ref, atol=1e-12 * max(1.0, np.abs(X).max()) * n)


@pytest.mark.parametrize("seed", range(3))
def test_newton_on_the_tree_takes_the_pairs_steps(seed):
    """Proximal Newton with the tree's Hessian (no pair arrays) against explicit
    pairs: the same Hessians up to rounding, so the same solution within tol."""
    X, y, qid = small(seed, n_queries=8)
    fits = [SparseRankSVM(C=0.3, solver="newton", tol=1e-10, backend=b).fit(X, y, qid)
            for b in ("pairs", "tree")]
    assert fits[1].backend_ == "tree" and fits[0].backend_ == "pairs"
    assert fits[0].converged_ and fits[1].converged_
    assert abs(fits[0].objective_ - fits[1].objective_) <= 1e-10 * abs(fits[0].objective_)
    np.testing.assert_allclose(fits[1].coef_, fits[0].coef_, rtol=1e-6,
                               atol=1e-8 * np.abs(fits[0].coef_).max())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.booleans())
def test_cd_kernel_solves_the_model(seed, n, singular):
    """The kernel's minimiser of g^T d + d^T H d/2 + sum beta|w+d| against cvxpy."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n if not singular else max(1, n - 2)))
    H = A @ A.T + 1e-3 * np.eye(n)
    g = rng.normal(size=n) * 3
    w = rng.choice([0.0, 1.0, -0.5], size=n)
    beta = rng.uniform(0.0, 2.0, n)
    d = np.zeros(n)
    cd_quadratic_l1(H, g, w, beta, 1e-11, 100000, d)
    assert model_violation(H, g, w, beta, d) <= 1e-9 * max(1.0, np.abs(g).max())
    dv = cp.Variable(n)
    obj = g @ dv + 0.5 * cp.quad_form(dv, cp.psd_wrap(H)) + beta @ cp.abs(w + dv)
    f_star = solve(cp.Problem(cp.Minimize(obj)))
    f_ours = g @ d + 0.5 * d @ H @ d + beta @ np.abs(w + d)
    assert f_ours <= f_star + 1e-7 * max(1.0, abs(f_star))


def gradient_mapping(smooth, beta, w, L):
    smooth.fun(w)
    g = smooth.grad(w)
    p = WeightedL1(beta).prox(w - g / L, 1.0 / L)
    return L * np.linalg.norm(w - p)


@pytest.mark.parametrize("C", [0.1, 10.0])
def test_stop_certifies_fistas_gradient_mapping_test(C):
    """||G_L(w)|| <= ||v(w)|| for every L, and G_L(0) = v(0)."""
    X, y, qid = small(5, n_queries=8)
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), C)
    beta = np.ones(X.shape[1])
    tol = 1e-4
    res = prox_newton(smooth, L1(1.0), tol=tol)
    ref = res.details["gmap_ref"]
    for L in (1e-3, 1.0, 1e3, 1e6):
        assert gradient_mapping(smooth, beta, np.zeros(X.shape[1]), L) == pytest.approx(ref)
        assert gradient_mapping(smooth, beta, res.w, L) <= tol * ref * (1 + 1e-12)
    smooth.fun(res.w)
    v = min_norm_subgradient(smooth.grad(res.w), res.w, beta)
    assert np.linalg.norm(v) <= tol * ref


def test_warm_start_equals_cold_start_within_tolerance():
    X, y, qid = small(6, n_queries=8)
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), 1.0)
    cold = prox_newton(smooth, L1(1.0), tol=1e-8)
    prev = prox_newton(ScaledSmooth(PairwiseSquaredHinge(X, y, qid), 0.5), L1(1.0), tol=1e-8)
    warm = prox_newton(smooth, L1(1.0), prev.w, tol=1e-8,
                       gmap_ref=cold.details["gmap_ref"])
    F = cold.history["F"][-1]
    assert warm.history["F"][-1] == pytest.approx(F, rel=1e-10)
    np.testing.assert_allclose(warm.w, cold.w, atol=1e-5)
    assert warm.n_iter <= cold.n_iter


def test_newton_monotone_and_agrees_with_fista():
    X, y, qid = small(7, n_queries=8)
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), 2.0)
    res = prox_newton(smooth, L1(1.0), tol=1e-10)
    F = np.asarray(res.history["F"])
    assert np.all(np.diff(F) <= 1e-12 * np.abs(F[:-1]))   # Armijo: monotone
    fista = apg(smooth, L1(1.0), tol=1e-10, stop="gradient_mapping", max_iter=100000)
    assert F[-1] == pytest.approx(fista.history["F"][-1], rel=1e-9)


@pytest.mark.parametrize("penalty", ["log", "mcp", "lp"])
def test_reweighted_with_newton_is_stationary_like_fista(penalty):
    X, y, qid = small(8, n_queries=8)
    C = 0.5
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), C)
    conc = make_concave_penalty(penalty, C=C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = reweighted_l1(smooth, conc, tol=1e-9, tol_outer=1e-8, max_iter=100000)
        b = reweighted_l1(smooth, conc, tol=1e-9, tol_outer=1e-8, solver="newton")
    scale = np.abs(smooth.grad(np.zeros(X.shape[1]))).max()
    assert dc_stationarity(smooth, conc, b.w).max() <= 1e-6 * scale
    assert b.history["F"][-1] == pytest.approx(a.history["F"][-1], rel=1e-6)


def test_bad_options():
    X, y, qid = small(0)
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), 1.0)
    with pytest.raises(ValueError, match="L1 and WeightedL1"):
        prox_newton(smooth, NonNegWeightedL1(np.ones(X.shape[1])))
    with pytest.raises(ValueError, match="max_inner"):
        prox_newton(smooth, L1(1.0), max_inner=0)
    with pytest.raises(ValueError, match="gmap_ref"):
        prox_newton(smooth, L1(1.0), gmap_ref=-1.0)
    with pytest.raises(ValueError, match="tol"):
        prox_newton(smooth, L1(1.0), tol=float("nan"))
    with pytest.raises(Exception, match="solver"):
        SparseRankSVM(solver="lbfgs").fit(X, y, qid)
    with pytest.warns(ConvergenceWarning, match="max_iter = 1 reached"):
        prox_newton(smooth, L1(1.0), tol=1e-12, max_iter=1)


@pytest.mark.filterwarnings("ignore::refimpl.exceptions.EmptyModelWarning")
@pytest.mark.parametrize("solver", ["newton", "fista"])
def test_path_warm_equals_cold_within_tolerance(solver):
    X, y, qid = small(9, n_queries=10)
    Cs = [3.0, 0.01, 0.3, 30.0, 1e-4]          # any order; 1e-4 gives w = 0
    tol = 1e-8
    warm, rw = ranksvm_l1_path(X, y, qid, Cs, solver=solver, tol=tol, max_iter=100000)
    cold, rc = ranksvm_l1_path(X, y, qid, Cs, solver=solver, tol=tol, max_iter=100000,
                               warm_start=False)
    assert all(r.converged for r in rw + rc)
    assert not np.any(warm[Cs.index(1e-4)])
    for i, C in enumerate(Cs):
        Fw, Fc = rw[i].history["F"][-1], rc[i].history["F"][-1]
        assert Fw == pytest.approx(Fc, rel=1e-7)
        np.testing.assert_allclose(warm[i], cold[i], atol=1e-3 * max(1.0, np.abs(cold[i]).max()))
        m = SparseRankSVM(C=C, solver=solver, tol=tol, max_iter=100000).fit(X, y, qid)
        assert Fc == pytest.approx(m.objective_, rel=1e-12)
    assert sum(r.n_iter for r in rw) < sum(r.n_iter for r in rc)
    with pytest.raises(Exception, match="Cs must be"):
        ranksvm_l1_path(X, y, qid, [1.0, -1.0])


def test_tolerance_below_rounding_stops_early_and_says_so():
    X, y, qid = small(11, n_queries=8)
    smooth = ScaledSmooth(PairwiseSquaredHinge(X, y, qid), 10.0)
    with pytest.warns(ConvergenceWarning, match="rounding level"):
        r = prox_newton(smooth, L1(1.0), tol=1e-300, max_iter=1000)
    assert not r.converged and r.n_iter < 100
    tight = prox_newton(smooth, L1(1.0), tol=1e-10)
    assert r.history["F"][-1] <= tight.history["F"][-1] * (1 + 1e-14)
