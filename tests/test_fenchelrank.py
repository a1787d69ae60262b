"""FenchelRank (Lai et al. 2013), its line searches and the TGRank baselines.

Checked against cvxpy (CLARABEL) on eq. 4, by independently recomputed
certificates (eq. 11 primal value, Theorem 2, the O(1/t) bound of Theorem 1),
by brute force for the line search of eqs. 20-21 and the l1-ball projection,
and for agreement between explicit pairs and the pair-free tree backend.

Instances.  FenchelRank is the Frank-Wolfe method without away steps: when
the solution lies on a face of the l1 ball and an early iterate picked a
feature outside the optimal support, that feature's weight decays only by
``(1 - mu_t)`` per step and the gap falls as O(1/t), so a gap of 1e-8 would
take millions of updates (e.g. ``CFG`` with r = 1, seeds 1, 2, 4).  The cvxpy
comparisons therefore use instances, listed in ``CVXPY_CASES``, found by a
scan of seeds 0-11 (r = 0.5, 1: solution at a vertex or a low-dimensional
face; r = 4, 16: weak signal, so the solution is inside the ball and the
iteration converges linearly) that reach gap <= 1e-8 in < 20,000 updates;
the O(1/t) regime is exercised by the certificate tests, which run a fixed
budget on the other seeds too.
"""

import cvxpy as cp
import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from cvx_reference import solve
from fenchel_runs import run
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from refimpl.data import make_synthetic_letor
from refimpl.estimators import FenchelRank
from refimpl.exceptions import ParameterError
from refimpl.kernels import fenchel as kf
from refimpl.losses import PairwiseSquaredHinge
from refimpl.pairs import pair_difference_matrix
from refimpl.solvers import (
    fenchelrank,
    projected_subgradient,
    truncated_gradient,
)
from refimpl.solvers.fenchelrank import newton_linesearch
from refimpl.solvers.subgradient import project_l1_ball

#: Weak-signal LETOR-like data: 5 queries of 8-12 documents, 7 features in [0, 1].
CFG = {"n_queries": 5, "docs_per_query": (8, 12), "n_informative": 3,
       "n_redundant": 0, "n_noise": 4, "label_noise": 4.0}

#: (seed, r) that converge to gap <= 1e-8 in < 20,000 updates (module docstring).
CVXPY_CASES = [(0, 0.5), (1, 0.5), (3, 0.5), (7, 0.5), (9, 0.5),
               (0, 1.0), (3, 1.0), (8, 1.0), (11, 1.0),
               (1, 4.0), (2, 4.0), (5, 4.0), (9, 4.0), (10, 4.0),
               (0, 16.0), (1, 16.0), (4, 16.0), (9, 16.0)]


def instance(seed, **kw):
    d = make_synthetic_letor(seed=seed, **{**CFG, **kw})
    return d.X, d.y, d.qid


def fenchel_loss(X, y, qid, r, backend="pairs"):
    return PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True,
                                backend=backend)


def G_explicit(K, r, w):
    """Eq. 4 from the explicit pair matrix."""
    res = np.maximum(0.0, 1.0 / r - K @ w)
    return r * r / K.shape[0] * float(res @ res)


def D_explicit(K, r, w):
    """The dual objective D(alpha) of book eq. (3.5) at the dual point alpha
    of eq. (3.6) (the paper's eq. 12), from the explicit pair matrix."""
    p = K.shape[0]
    a = 2.0 * r * r / p * np.maximum(0.0, 1.0 / r - K @ w)
    return -p / (4 * r * r) * float(a @ a) + a.sum() / r - np.abs(a @ K).max()


def cvxpy_fenchel(K, r):
    """Eq. 4 by CLARABEL; returns a feasible w* (projected) and G(w*)."""
    p = K.shape[0]
    w = cp.Variable(K.shape[1])
    prob = cp.Problem(
        cp.Minimize(r * r / p * cp.sum_squares(cp.pos(1.0 / r - K @ w))),
        [cp.norm1(w) <= 1.0])
    solve(prob, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    w_star = project_l1_ball(w.value)
    return w_star, G_explicit(K, r, w_star)


# ---------------------------------------------------------------------------
# Against cvxpy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed, r", CVXPY_CASES)
def test_matches_cvxpy(seed, r):
    X, y, qid = instance(seed)
    K = pair_difference_matrix(X, y, qid)
    w_star, G_star = cvxpy_fenchel(K, r)
    res = fenchelrank(fenchel_loss(X, y, qid, r), r, tol=1e-8, max_iter=20_000)
    assert res.converged
    w = res.w
    assert np.abs(w).sum() <= 1 + 1e-12
    G = G_explicit(K, r, w)
    assert abs(G - G_star) <= 1e-6 * max(1.0, abs(G_star))
    assert G - G_star <= res.history["gap"][-1] + 1e-12        # Theorem 2
    # predictions (scores of eq. 3, coef = r w): ||K(w - w*)|| on the active
    # pairs is bounded by the objective gap; 1e-3 of the score range is loose
    # but free of assumptions on uniqueness
    s, s_star = X @ (r * w), X @ (r * w_star)
    np.testing.assert_allclose(s, s_star, atol=1e-3 * np.ptp(s_star))
    # support, only where it is clear-cut: every weight of w* either clearly
    # non-zero or zero with strict complementarity |g*_j| < ||g*||_inf on an
    # active constraint.  Interior solutions (||w*||_1 < 1, g* = 0) have no
    # strictly complementary zeros, and a near-tie would make the comparison
    # depend on the solvers' tolerances, so those are deliberately skipped.
    res_star = np.maximum(0.0, 1.0 / r - K @ w_star)
    g_star = 2 * r * r / K.shape[0] * (res_star @ K)
    big = np.abs(w_star) > 1e-4
    zero = np.abs(w_star) < 1e-9
    on_boundary = np.abs(w_star).sum() > 1 - 1e-9
    strict = np.abs(g_star)[zero] < np.abs(g_star).max() - 1e-4
    if on_boundary and np.all(big | zero) and np.all(strict):
        np.testing.assert_array_equal(np.abs(w) > 1e-6, big)


def test_cvxpy_support_comparison_is_exercised():
    """At least this vertex-face instance has a clear-cut support."""
    X, y, qid = instance(1)
    K = pair_difference_matrix(X, y, qid)
    w_star, _ = cvxpy_fenchel(K, 0.5)
    res = fenchelrank(fenchel_loss(X, y, qid, 0.5), 0.5, tol=1e-8,
                      max_iter=20_000)
    assert np.abs(w_star).sum() > 1 - 1e-9
    np.testing.assert_array_equal(np.abs(res.w) > 1e-6, np.abs(w_star) > 1e-6)


# ---------------------------------------------------------------------------
# Certificates: eq. 11, Theorem 2, monotone D, Theorem 1
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["exact", "closed_form", "theory"])
@pytest.mark.parametrize("seed, r", [(1, 0.5), (2, 0.5), (1, 1.0), (2, 1.0),
                                     (4, 1.0), (0, 4.0), (3, 16.0)])
def test_certificates(seed, r, step):
    X, y, qid = instance(seed)
    K = pair_difference_matrix(X, y, qid)
    _, G_ub = cvxpy_fenchel(K, r)          # G(feasible w*) >= G*
    res, ws = run(fenchel_loss(X, y, qid, r), r, tol=1e-9, max_iter=300,
                  step=step)
    h = res.as_arrays()
    G = np.array([G_explicit(K, r, w) for w in ws])
    assert len(G) == len(h["obj"]) == res.n_iter + 1
    np.testing.assert_allclose(h["obj"], G, rtol=1e-12, atol=1e-14)
    assert np.all(np.abs(ws).sum(axis=1) <= 1 + 1e-12)
    # D(alpha_t) of eq. (3.5) evaluated directly equals obj - gap (eq. (3.7))
    D = np.array([D_explicit(K, r, w) for w in ws])
    np.testing.assert_allclose(D, h["dual"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(h["dual"], h["obj"] - h["gap"], rtol=0,
                               atol=1e-14)
    # Theorem 2: the gap bounds the suboptimality at every iterate
    assert np.all(h["gap"] >= G - G_ub - 1e-12)
    # G never increases (every rule maximises a lower bound of the decrease)
    assert np.all(np.diff(h["obj"]) <= 1e-12)
    # Theorem 1: eps_t <= 16 r^2 / (t + 1), t = k + 1 (features in [0, 1],
    # r^2 >= 0.125); G* >= G_ub - 1e-9 up to CLARABEL's accuracy
    assert X.min() >= 0 and X.max() <= 1
    k = np.arange(len(G))
    assert np.all(G - (G_ub - 1e-9) <= 16 * r * r / (k + 2))
    assert h["obj"][0] == 1.0 and np.isnan(h["step"][0]) and h["j"][0] == -1
    assert np.all((h["step"][1:] >= 0) & (h["step"][1:] <= 1))


@pytest.mark.parametrize("step, seed, r", [("closed_form", 1, 4.0),
                                           ("closed_form", 3, 1.0),
                                           ("theory", 1, 4.0),
                                           ("theory", 1, 16.0)])
def test_other_steps_converge_and_are_slower(step, seed, r):
    X, y, qid = instance(seed)
    loss = fenchel_loss(X, y, qid, r)
    exact = fenchelrank(loss, r, tol=1e-4, max_iter=20_000)
    other = fenchelrank(loss, r, tol=1e-4, max_iter=20_000, step=step)
    assert other.converged and exact.converged
    assert other.n_iter >= exact.n_iter
    assert np.all(np.diff(other.as_arrays()["obj"]) <= 1e-12)
    assert abs(other.history["obj"][-1] - exact.history["obj"][-1]) <= 2e-4


def test_gap_formula_equals_frank_wolfe_gap():
    """gap = ||g||_inf - g^T w = max_{||v||_1 <= 1} g^T (v - w), g = -grad G."""
    X, y, qid = instance(5)
    r = 2.0
    loss = fenchel_loss(X, y, qid, r)
    res, ws = run(loss, r, tol=0.0, max_iter=30)
    for w, gap in zip(ws, res.history["gap"]):
        loss.fun(w)
        g = -r * r * loss.grad(w)
        vertices = np.vstack([np.eye(len(w)), -np.eye(len(w))])
        assert gap == pytest.approx((vertices @ g).max() - g @ w, abs=1e-14)


# ---------------------------------------------------------------------------
# Line search (eqs. 20-21)
# ---------------------------------------------------------------------------


def phi(a, c, mu):
    return float(np.sum(np.maximum(0.0, a - mu * c) ** 2))


def newton_on_arrays(a, c):
    _, d0, h0 = kf.phi_derivatives(a, c, 0.0)
    last = [0.0]

    def dphi(m):
        last[0] = m
        return kf.phi_derivatives(a, c, m)[1]

    def d2phi():
        return kf.phi_derivatives(a, c, last[0])[2]

    return newton_linesearch(dphi, d2phi, d0, h0)[0]


def snap(values):
    x = np.array(values, dtype=np.float64)
    x[np.abs(x) < 1e-6] = 0.0
    return x


coef = st.one_of(st.floats(-2, 2, allow_nan=False, allow_subnormal=False),
                 st.integers(-8, 8).map(lambda k: k / 4))   # ties and zeros


@st.composite
def piecewise_quadratics(draw):
    p = draw(st.integers(1, 30))
    a = snap(draw(st.lists(coef, min_size=p, max_size=p)))
    c = snap(draw(st.lists(coef, min_size=p, max_size=p)))
    return a, c


@settings(max_examples=300, deadline=None)
@given(piecewise_quadratics())
def test_linesearch_pairs_is_the_minimiser(ac):
    a, c = ac
    mu = kf.linesearch_pairs(a, c)
    assert 0.0 <= mu <= 1.0
    scale = 1.0 + float(np.sum(np.maximum(a, 0) ** 2) + np.sum(c * c))
    grid = np.linspace(0.0, 1.0, 2001)[:, None]
    on_grid = np.sum(np.maximum(0.0, a - grid * c) ** 2, axis=1)
    assert phi(a, c, mu) <= on_grid.min() + 1e-12 * scale
    ref = scipy.optimize.minimize_scalar(lambda m: phi(a, c, m), bounds=(0, 1),
                                         method="bounded",
                                         options={"xatol": 1e-12})
    assert phi(a, c, mu) <= phi(a, c, ref.x) + 1e-12 * scale
    # first-order conditions
    _, d1, _ = kf.phi_derivatives(a, c, mu)
    tol = 1e-9 * scale
    if 0 < mu < 1:
        assert abs(d1) <= tol
    elif mu == 0:
        assert d1 >= -tol
    else:
        assert d1 <= tol
    # the smallest minimiser: phi strictly larger just before mu
    if mu > 0:
        assert kf.phi_derivatives(a, c, mu * (1 - 1e-6))[1] < 0


@settings(max_examples=300, deadline=None)
@given(piecewise_quadratics())
def test_newton_and_pairs_give_the_same_step(ac):
    a, c = ac
    mu_p = kf.linesearch_pairs(a, c)
    mu_n = newton_on_arrays(a, c)
    scale = 1.0 + float(np.sum(np.maximum(a, 0) ** 2) + np.sum(c * c))
    assert phi(a, c, mu_n) <= phi(a, c, mu_p) + 1e-12 * scale
    # mu itself where the minimiser is unique (phi strictly convex around it)
    eps = 1e-7
    left = kf.phi_derivatives(a, c, max(mu_p - eps, 0.0))[2]
    right = kf.phi_derivatives(a, c, min(mu_p + eps, 1.0))[2]
    d1 = kf.phi_derivatives(a, c, mu_p)[1]
    unique = (min(left, right) > 1e-3 * float(c @ c)
              or (mu_p == 0 and d1 > 1e-9) or (mu_p == 1 and d1 < -1e-9))
    if unique:
        assert abs(mu_n - mu_p) <= 1e-9


@pytest.mark.parametrize("a, c, expected", [
    ([-1.0, -0.5, 0.0], [1.0, 2.0, 3.0], 0.0),      # all inactive on [0, 1]
    ([1.0, -1.0], [0.0, 0.0], 0.0),                 # c = 0: phi constant
    ([1.0], [-1.0], 0.0),                           # phi'(0) > 0: mu* = 0
    ([5.0], [1.0], 1.0),                            # root beyond 1: mu* = 1
    ([1.0, 0.3], [2.0, 0.0], 0.5),                  # flat after the root
    ([1.0, -0.5], [1.0, -1.0], 0.75),               # a pair enters at 0.5
    ([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], 0.5),        # tied breakpoints
    ([0.0, 1.0], [-1.0, 1.0], 0.5),                 # a = 0, c < 0: active on (0, 1]
    ([0.5, 1.0], [1.0, 2.0], 0.5),                  # root at a breakpoint, flat after
    # found by hypothesis: after the last pair leaves, the running sums held
    # a rounding residue that made the sweep return 1 instead of a/c
    ([0.0, 0.75, 1.6788376498222351], [0.0, 1.0, 1.9375],
     1.6788376498222351 / 1.9375),
])
def test_linesearch_degenerate_cases(a, c, expected):
    a, c = np.array(a), np.array(c)
    mu = kf.linesearch_pairs(a, c)
    assert mu == pytest.approx(expected, abs=1e-15)
    assert kf.linesearch_pairs.py_func(a, c) == mu
    if expected in (0.5, 0.75, 1.0):
        assert newton_on_arrays(a, c) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed, r", [(1, 4.0), (0, 1.0), (6, 16.0)])
def test_backends_and_linesearches_give_the_same_iterates(seed, r):
    X, y, qid = instance(seed, n_queries=8)
    runs = {}
    for backend, ls in [("pairs", "pairs"), ("pairs", "newton"),
                        ("numpy", "pairs"), ("tree", "newton"),
                        ("tree", "auto")]:
        runs[backend, ls] = run(fenchel_loss(X, y, qid, r, backend), r,
                                tol=1e-7, max_iter=400, line_search=ls)[0]
    ref = runs["pairs", "pairs"].as_arrays()
    assert np.all(ref["ls_eval"][1:] == 1)
    for key, res in runs.items():
        h = res.as_arrays()
        assert len(h["step"]) == len(ref["step"]), key
        np.testing.assert_array_equal(h["j"], ref["j"])
        np.testing.assert_allclose(h["step"][1:], ref["step"][1:], rtol=0,
                                   atol=1e-9)
        np.testing.assert_allclose(h["obj"], ref["obj"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.w, runs["pairs", "pairs"].w, atol=1e-9)
    assert np.all(runs["tree", "auto"].as_arrays()["ls_eval"][1:] >= 1)


def test_closed_form_with_tree_matches_explicit_pairs():
    X, y, qid = instance(2, n_queries=8)
    r = 4.0
    a = run(fenchel_loss(X, y, qid, r, "pairs"), r, tol=1e-6, max_iter=300,
            step="closed_form")[0].as_arrays()
    b = run(fenchel_loss(X, y, qid, r, "tree"), r, tol=1e-6, max_iter=300,
            step="closed_form")[0].as_arrays()
    np.testing.assert_array_equal(a["j"], b["j"])
    np.testing.assert_allclose(a["step"][1:], b["step"][1:], rtol=1e-9,
                               atol=1e-12)
    # ||K b||^2 of the tree operator against the explicit matrix
    K = pair_difference_matrix(X, y, qid)
    norm2 = fenchel_loss(X, y, qid, r, "tree").pair_norm2_operator()
    bvec = np.random.default_rng(0).normal(size=X.shape[1])
    assert norm2(bvec) == pytest.approx(float(np.sum((K @ bvec) ** 2)), rel=1e-12)


def test_closed_form_equals_exact_step_when_no_pair_changes_state():
    """With every pair active along the segment, (28) is tight and both agree."""
    rng = np.random.default_rng(3)
    a = rng.uniform(1.0, 2.0, 50)
    c = rng.uniform(-0.5, 0.5, 50)
    mu = kf.linesearch_pairs(a, c)
    assert 0 < mu < 1 and np.all(a - mu * c > 0)
    assert mu == pytest.approx(float(a @ c) / float(c @ c), rel=1e-13)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 12))
def test_kernels_match_py_func_and_numpy(seed, n, p):
    rng = np.random.default_rng(seed)
    z, u = rng.normal(size=n), rng.normal(size=n)
    pi = rng.integers(0, n, p).astype(np.int64)
    pj = rng.integers(0, n, p).astype(np.int64)
    a1, k1, a2, k2 = (np.empty(p) for _ in range(4))
    kf.pair_residuals(z, u, pi, pj, 0.25, a1, k1)
    kf.pair_residuals.py_func(z, u, pi, pj, 0.25, a2, k2)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(k1, k2)
    np.testing.assert_allclose(a1, 0.25 - (z[pi] - z[pj]), rtol=1e-12)
    np.testing.assert_allclose(k1, u[pi] - u[pj], rtol=1e-12)
    assert kf.sum_squares_diff(u, pi, pj) == pytest.approx(
        kf.sum_squares_diff.py_func(u, pi, pj), rel=1e-12)
    assert kf.sum_squares_diff(u, pi, pj) == pytest.approx(
        float(np.sum((u[pi] - u[pj]) ** 2)), rel=1e-12)
    assert kf.linesearch_pairs(a1, k1) == kf.linesearch_pairs.py_func(a1, k1)
    for mu in (0.0, 0.3, 1.0):
        np.testing.assert_allclose(kf.phi_derivatives(a1, k1, mu),
                                   kf.phi_derivatives.py_func(a1, k1, mu),
                                   rtol=1e-12)
        f, d1, d2 = kf.phi_derivatives(a1, k1, mu)
        act = a1 - mu * k1 > 0
        assert f == pytest.approx(phi(a1, k1, mu), rel=1e-12, abs=1e-15)
        assert d1 == pytest.approx(-2 * np.sum((k1 * (a1 - mu * k1))[act]),
                                   rel=1e-12, abs=1e-15)
        assert d2 == pytest.approx(2 * np.sum(k1[act] ** 2), rel=1e-12, abs=1e-15)
    g = rng.normal(size=p)
    assert kf.greedy_coordinate(g) == kf.greedy_coordinate.py_func(g)
    j, s = kf.greedy_coordinate(g)
    assert j == int(np.argmax(np.abs(g))) and s == (1.0 if g[j] >= 0 else -1.0)


def test_greedy_coordinate_ties_and_sign_of_zero():
    assert kf.greedy_coordinate(np.array([1.0, -3.0, 3.0])) == (1, -1.0)
    assert kf.greedy_coordinate(np.array([0.0, 0.0])) == (0, 1.0)


# ---------------------------------------------------------------------------
# Solver API
# ---------------------------------------------------------------------------


def test_solver_checks_its_loss_and_parameters():
    X, y, qid = instance(0)
    loss = fenchel_loss(X, y, qid, 2.0)
    with pytest.raises(ValueError, match="margin must be 1/r"):
        fenchelrank(loss, 4.0)
    with pytest.raises(ValueError, match="normalize=True"):
        fenchelrank(PairwiseSquaredHinge(X, y, qid, margin=0.5), 2.0)
    with pytest.raises(ValueError, match="r must be"):
        fenchelrank(loss, -2.0)
    with pytest.raises(ValueError, match="step must be"):
        fenchelrank(loss, 2.0, step="armijo")
    with pytest.raises(ValueError, match="line_search must be"):
        fenchelrank(loss, 2.0, line_search="golden")
    with pytest.raises(ValueError, match="explicit pair arrays"):
        fenchelrank(fenchel_loss(X, y, qid, 2.0, "tree"), 2.0, line_search="pairs")
    with pytest.raises(ValueError, match="tol"):
        fenchelrank(loss, 2.0, tol=-1.0)


def test_solver_warns_quoting_gap_and_tol():
    X, y, qid = instance(4)
    loss = fenchel_loss(X, y, qid, 1.0)
    with pytest.warns(ConvergenceWarning, match=r"gap = .* > tol = 1\.0e-09"):
        res = fenchelrank(loss, 1.0, tol=1e-9, max_iter=5)
    assert not res.converged and res.n_iter == 5
    assert all(len(v) == 6 for v in res.history.values())


# ---------------------------------------------------------------------------
# Estimator
# ---------------------------------------------------------------------------


def test_estimator_matches_solver_and_conventions():
    X, y, qid = instance(1)
    r = 4.0
    m = FenchelRank(r=r, tol=1e-6, max_iter=5000)
    assert clone(m).get_params() == m.get_params()
    with pytest.raises(NotFittedError):
        m.predict(X)
    assert m.fit(X, y, qid) is m
    res = fenchelrank(fenchel_loss(X, y, qid, r, m.backend_), r, tol=1e-6,
                      max_iter=5000)
    np.testing.assert_array_equal(m.coef_, r * res.w)
    assert np.abs(m.coef_).sum() <= r * (1 + 1e-12)
    np.testing.assert_allclose(m.predict(X), X @ m.coef_, rtol=1e-12)
    assert m.converged_ and m.dual_gap_ <= 1e-6
    assert m.dual_gap_ == m.history_["gap"][-1] and m.n_iter_ == res.n_iter
    # objective_ is eq. 3's mean squared hinge at coef_ (margin 1)
    hinge = PairwiseSquaredHinge(X, y, qid, margin=1.0, normalize=True)
    assert m.objective_ == pytest.approx(hinge.fun(m.coef_), rel=1e-12)
    assert set(m.history_) >= {"obj", "dual", "gap", "step", "j", "nnz",
                               "time"}
    assert 0 <= m.score(X, y, qid) <= 1
    t = FenchelRank(r=r, tol=1e-6, max_iter=5000, backend="tree").fit(X, y, qid)
    assert t.backend_ == "tree"
    np.testing.assert_allclose(t.coef_, m.coef_, atol=1e-8)
    sparse = FenchelRank(r=r, tol=1e-6, max_iter=5000).fit(sp.csr_matrix(X), y, qid)
    np.testing.assert_allclose(sparse.coef_, m.coef_, atol=1e-10)


@pytest.mark.parametrize("params, match", [
    ({"r": 0.0}, "r"), ({"r": -1.0}, "r"), ({"r": "big"}, "r"),
    ({"tol": 0.0}, "tol"), ({"tol": -1e-3}, "tol"),
    ({"max_iter": 0}, "max_iter"), ({"max_iter": 2.5}, "max_iter"),
    ({"step": "armijo"}, "step"), ({"backend": "gpu"}, "backend"),
    ({"line_search": "golden"}, "line_search"),
    ({"line_search": "pairs", "backend": "tree"}, "line_search"),
])
def test_bad_parameters_named_at_fit(params, match):
    X, y, qid = instance(0)
    with pytest.raises(ParameterError, match=match):
        FenchelRank(**params).fit(X, y, qid)


def test_estimator_warns_on_max_iter():
    X, y, qid = instance(4)
    with pytest.warns(ConvergenceWarning, match="tol"):
        m = FenchelRank(r=1.0, tol=1e-10, max_iter=1).fit(X, y, qid)
    assert not m.converged_ and m.n_iter_ == 1 and m.dual_gap_ > 1e-10


def test_single_query_when_qid_is_none():
    X, y, _ = instance(2)
    m = FenchelRank(r=0.5).fit(X, y)
    assert np.all(np.isfinite(m.coef_))
    assert np.abs(m.coef_).sum() <= 0.5 * (1 + 1e-12)


# ---------------------------------------------------------------------------
# Baselines: l1-ball projection, projected subgradient, TGRank
# ---------------------------------------------------------------------------


def project_bisection(v, radius):
    """Brute force: the threshold theta solves sum max(|v| - theta, 0) = radius."""
    if np.abs(v).sum() <= radius:
        return v.copy()
    lo, hi = 0.0, np.abs(v).max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(np.abs(v) - mid, 0).sum() > radius:
            lo = mid
        else:
            hi = mid
    return np.sign(v) * np.maximum(np.abs(v) - 0.5 * (lo + hi), 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False, allow_subnormal=False),
                min_size=1, max_size=15),
       st.floats(0.05, 4.0))
def test_project_l1_ball_brute_force(v, radius):
    v = np.array(v)
    x = project_l1_ball(v, radius)
    assert np.abs(x).sum() <= radius * (1 + 1e-12)
    np.testing.assert_allclose(x, project_bisection(v, radius), atol=1e-12)
    if np.abs(v).sum() <= radius:
        np.testing.assert_array_equal(x, v)


@pytest.mark.parametrize("seed", range(5))
def test_project_l1_ball_cvxpy(seed):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=10) * 2
    radius = float(rng.uniform(0.2, 3))
    x = cp.Variable(10)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [cp.norm1(x) <= radius])
    solve(prob, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    np.testing.assert_allclose(project_l1_ball(v, radius), x.value, atol=1e-7)


def test_projected_subgradient_decreases_and_certifies():
    X, y, qid = instance(1)
    r = 1.0
    K = pair_difference_matrix(X, y, qid)
    _, G_ub = cvxpy_fenchel(K, r)
    res = projected_subgradient(fenchel_loss(X, y, qid, r), r, max_iter=300,
                                step0=0.5)
    h = res.as_arrays()
    assert not res.converged and len(h["obj"]) == 301
    assert np.all(np.diff(h["best_obj"]) <= 0)
    # G(0) = 1 and G* = 0.90 here: the best value closes 99 % of the distance
    assert h["best_obj"][-1] - G_ub <= 0.01 * (h["obj"][0] - G_ub)
    np.testing.assert_array_equal(h["dual"], h["obj"] - h["gap"])
    assert G_explicit(K, r, res.w) == pytest.approx(h["best_obj"][-1], rel=1e-12)
    assert np.abs(res.w).sum() <= 1 + 1e-12
    assert np.all(h["gap"] >= h["obj"] - G_ub - 1e-12)      # same certificate


def cvxpy_problem2(K, C):
    p = K.shape[0]
    w = cp.Variable(K.shape[1])
    prob = cp.Problem(cp.Minimize(cp.norm1(w)
                                  + C / p * cp.sum_squares(cp.pos(1 - K @ w))))
    value = solve(prob, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return w.value, value


@pytest.mark.parametrize("seed, C", [(0, 10.0), (1, 10.0), (3, 30.0), (2, 100.0)])
def test_truncated_gradient_solves_problem_2(seed, C):
    X, y, qid = instance(seed)
    K = pair_difference_matrix(X, y, qid)
    _, F_star = cvxpy_problem2(K, C)
    loss = PairwiseSquaredHinge(X, y, qid, margin=1.0, normalize=True)
    res = truncated_gradient(loss, C, max_iter=20_000, tol=1e-9)
    assert res.converged
    h = res.as_arrays()
    assert abs(h["obj"][-1] - F_star) <= 1e-6 * max(1.0, abs(F_star))
    # full-gradient truncation with lr = 1/L is ISTA: monotone
    assert np.all(np.diff(h["obj"]) <= 1e-12 * np.abs(h["obj"][:-1]))
    assert np.abs(res.w).sum() + C * loss.fun(res.w) == pytest.approx(
        h["obj"][-1], rel=1e-12)


def test_truncated_gradient_variants_decrease_overall():
    X, y, qid = instance(2)
    loss = PairwiseSquaredHinge(X, y, qid, margin=1.0, normalize=True)
    _, F_star = cvxpy_problem2(pair_difference_matrix(X, y, qid), 30.0)
    # theta < inf leaves weights above theta untruncated (Langford et al.),
    # so this variant only approaches the optimum of eq. 2
    res = truncated_gradient(loss, 30.0, max_iter=500, lr=0.02, theta=0.5, K=5)
    h = res.as_arrays()
    assert not res.converged and len(h["obj"]) == 501
    assert np.all(np.diff(h["best_obj"]) <= 0)
    assert h["best_obj"][-1] - F_star <= 0.1 * (h["obj"][0] - F_star)
    with pytest.raises(ValueError, match="margin=1.0"):
        truncated_gradient(fenchel_loss(X, y, qid, 2.0), 1.0)
    with pytest.warns(ConvergenceWarning, match="tol"):
        truncated_gradient(loss, 30.0, max_iter=2, tol=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_problem_2_and_3_are_equivalent_with_r_the_solution_norm(seed):
    """Eq. 2 with C and eq. 3 with r = ||w*_C||_1 share the solution w*.

    (Section 8.5.1 sets r = C ||w_TG||_1; it is the norm itself.)
    """
    X, y, qid = instance(seed)
    C = 10.0
    loss = PairwiseSquaredHinge(X, y, qid, margin=1.0, normalize=True)
    tg = truncated_gradient(loss, C, max_iter=20_000, tol=1e-10)
    r = float(np.abs(tg.w).sum())
    fr = FenchelRank(r=r, tol=1e-9, max_iter=20_000).fit(X, y, qid)
    assert fr.objective_ == pytest.approx(loss.fun(tg.w), abs=1e-7)
    np.testing.assert_allclose(fr.predict(X), X @ tg.w, atol=1e-3)
    # the paper's radius C ||w*||_1 gives another model
    other = FenchelRank(r=C * r, tol=1e-4, max_iter=20_000).fit(X, y, qid)
    assert np.abs(other.coef_ - tg.w).max() > 1e-2
