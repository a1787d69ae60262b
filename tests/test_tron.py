"""TRON and the L2-regularised RankSVM objective.

TRON is checked against ``np.linalg.solve`` on quadratics, against cvxpy
(CLARABEL) and scipy's trust-region Newton-CG on L2-loss RankSVM (Lee & Lin
2014, eq. 3), by an independently recomputed eq. 38 certificate, and for the
objective's caching contract (``hess_vec`` always sees the state of ``fun`` at
the current iterate).
"""

import cvxpy as cp
import numpy as np
import pytest
import scipy.optimize
from cvx_reference import solve
from hypothesis import given, settings
from hypothesis import strategies as st
from random_rankings import random_ranking
from sklearn.exceptions import ConvergenceWarning

from refimpl.exceptions import DataError
from refimpl.losses import PairwiseSquaredHinge, SmoothObjective
from refimpl.losses.regularized import L2Regularized
from refimpl.pairs import pair_difference_matrix
from refimpl.solvers import NonFiniteError, SolverResult, tron
from refimpl.solvers.tron import _to_boundary

# ---------------------------------------------------------------------------
# Test objectives
# ---------------------------------------------------------------------------


class Quadratic:
    """``f(x) = x^T A x / 2 - b^T x`` with ``A`` symmetric positive definite."""

    def __init__(self, A, b):
        self.A, self.b = A, b
        self.n_features = len(b)

    def fun(self, w):
        return 0.5 * w @ self.A @ w - self.b @ w

    def grad(self, w):
        return self.A @ w - self.b

    def hess_vec(self, s):
        return self.A @ s


def random_quadratic(seed, d=8, cond=100.0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    A = Q @ np.diag(np.geomspace(1.0, cond, d)) @ Q.T
    A = 0.5 * (A + A.T)
    return Quadratic(A, rng.normal(size=d))


class StateChecking:
    """Wraps an objective; asserts that ``hess_vec`` runs at the current iterate.

    TRON calls ``grad`` only at accepted iterates, so the last ``grad`` point
    is the current iterate; ``hess_vec`` must follow a ``fun`` at that point.
    """

    def __init__(self, inner):
        self.inner = inner
        self.n_features = inner.n_features
        self.last_fun_w = None
        self.last_grad_w = None
        self.n_hess = 0
        self.fun_points = []

    def fun(self, w):
        self.last_fun_w = np.array(w, copy=True)
        self.fun_points.append(self.last_fun_w)
        return self.inner.fun(w)

    def grad(self, w):
        assert np.array_equal(w, self.last_fun_w), "grad not right after fun at w"
        self.last_grad_w = np.array(w, copy=True)
        return self.inner.grad(w)

    def hess_vec(self, s):
        assert np.array_equal(self.last_fun_w, self.last_grad_w), (
            "hess_vec called while the cached state is not at the iterate"
        )
        self.n_hess += 1
        return self.inner.hess_vec(s)


def make_ranking(seed, **shape):
    """``(X, y, qid)`` of :func:`random_rankings.random_ranking`."""
    return random_ranking(seed, **shape)[1:]


def ranksvm(X, y, qid, C, margin=1.0):
    return L2Regularized(PairwiseSquaredHinge(X, y, qid, margin=margin), C)


def explicit_grad(K, w, C, margin):
    """``w - 2 C K^T max(0, margin - K w)``, from the pair matrix (eq. 10)."""
    r = np.maximum(margin - K @ w, 0.0)
    return w - 2 * C * K.T @ r


def cvxpy_ranksvm(K, C, margin):
    w = cp.Variable(K.shape[1])
    prob = cp.Problem(
        cp.Minimize(
            0.5 * cp.sum_squares(w) + C * cp.sum_squares(cp.pos(margin - K @ w))
        )
    )
    # CLARABEL's default 1e-8 gap tolerances leave |grad f(w)| ~ 1e-3 on some
    # seeds (e.g. make_ranking(17), C=1), i.e. a w off by ~1e-5 relative
    value = solve(prob)
    return w.value, value


CASES = [
    (seed, C, margin)
    for seed in range(4)
    for C in (1e-3, 1.0, 1e3)
    for margin in (1.0, 0.5)
]

# ---------------------------------------------------------------------------
# Quadratics
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_quadratic_reaches_eq38_and_solves_linear_system(seed):
    obj = random_quadratic(seed)
    x_star = np.linalg.solve(obj.A, obj.b)
    res = tron(obj, tol=1e-3)
    assert res.converged
    g0 = np.linalg.norm(obj.b)  # gradient at w0 = 0
    assert np.linalg.norm(obj.grad(res.w)) <= 1e-3 * g0
    # tol=1e-10 lies below the resolution of f: with the default eps_cg=0.1
    # (linear rate ~0.1 per step) TRON may first stop on |actred|, |prered|
    # <= 1e-12 |f| (converged=False, tron.cpp's rule); near-exact CG steps
    # jump past that floor.
    tight = tron(obj, tol=1e-10, eps_cg=1e-6)
    assert tight.converged or "1e-12 |f|" in tight.message
    assert np.linalg.norm(tight.w - x_star) < 1e-8
    loose_cg = tron(obj, tol=1e-10)
    assert loose_cg.converged or "1e-12 |f|" in loose_cg.message
    assert np.linalg.norm(loose_cg.w - x_star) < 1e-6


def test_quadratic_started_at_the_solution_takes_no_step():
    obj = random_quadratic(0, d=4, cond=1.0)
    x_star = obj.b / obj.A[0, 0]  # A = c I up to rounding
    obj.b = obj.A @ x_star
    res = tron(obj, w0=x_star, tol=1e-3)
    assert res.n_iter == 0 and res.converged
    assert all(len(v) == 1 for v in res.history.values())


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 10**6),
    st.floats(1e-3, 1e3),
    st.floats(0.0, 0.999),
)
def test_boundary_step_lands_on_the_sphere(seed, delta, frac):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=5)
    s *= frac * delta / np.linalg.norm(s)
    d = rng.normal(size=5) * 10.0 ** rng.uniform(-3, 3)
    tau = _to_boundary(s, d, delta)
    assert tau >= 0
    np.testing.assert_allclose(np.linalg.norm(s + tau * d), delta, rtol=1e-10)


# ---------------------------------------------------------------------------
# L2-loss RankSVM against cvxpy and scipy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed, C, margin", CASES)
def test_ranksvm_matches_cvxpy(seed, C, margin):
    X, y, qid = make_ranking(seed)
    K = pair_difference_matrix(X, y, qid)
    w_star, f_star = cvxpy_ranksvm(K, C, margin)
    obj = ranksvm(X, y, qid, C, margin)
    res = tron(obj, tol=1e-10)
    f = obj.fun(res.w)
    assert abs(f - f_star) <= 1e-6 * max(1.0, abs(f_star))
    np.testing.assert_allclose(res.w, w_star, rtol=0, atol=1e-5 * np.abs(w_star).max())


@pytest.mark.parametrize("seed, C, margin", CASES)
def test_ranksvm_matches_scipy_trust_ncg(seed, C, margin):
    X, y, qid = make_ranking(seed)
    obj = ranksvm(X, y, qid, C, margin)
    res = tron(obj, tol=1e-10)
    ref = ranksvm(X, y, qid, C, margin)  # a separate instance: its own state

    def hessp(w, p):
        ref.fun(w)
        return ref.hess_vec(p)

    d = X.shape[1]
    opt = scipy.optimize.minimize(
        ref.fun,
        np.zeros(d),
        jac=ref.grad,
        hessp=hessp,
        method="trust-ncg",
        options={"gtol": 1e-12 * max(1.0, np.linalg.norm(ref.grad(np.zeros(d))))},
    )
    scale = max(1.0, np.abs(opt.x).max())
    np.testing.assert_allclose(res.w, opt.x, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("seed, C, margin", CASES)
@pytest.mark.parametrize("tol", [1e-2, 1e-3, 1e-6])
def test_converged_exit_satisfies_eq38_recomputed(seed, C, margin, tol):
    X, y, qid = make_ranking(seed)
    K = pair_difference_matrix(X, y, qid)
    res = tron(ranksvm(X, y, qid, C, margin), tol=tol)
    assert res.converged
    g = explicit_grad(K, res.w, C, margin)
    g0 = explicit_grad(K, np.zeros(X.shape[1]), C, margin)
    assert np.linalg.norm(g) <= tol * np.linalg.norm(g0)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 10**6),
    st.sampled_from([1e-3, 1.0, 1e3]),
    st.floats(0.1, 3.0),
    st.sampled_from([1e-3, 1e-6, 1e-10]),
    st.sampled_from([0.1, 0.5, 1e-3]),
)
def test_history_is_consistent(seed, C, margin, tol, eps_cg):
    X, y, qid = make_ranking(seed, n=30, d=4)
    obj = ranksvm(X, y, qid, C, margin)
    res = tron(obj, tol=tol, eps_cg=eps_cg)
    h = res.as_arrays()
    assert set(h) >= {"f", "gnorm", "cg_iter", "n_fun", "delta", "time", "accepted"}
    assert all(len(v) == res.n_iter + 1 for v in h.values())
    # f is the objective at the iterate: equal on rejections, non-increasing
    assert np.all(np.diff(h["f"]) <= 0)
    assert np.all(np.diff(h["f"])[~h["accepted"][1:]] == 0)
    assert np.all(np.diff(h["cg_iter"]) >= 0)
    assert np.all(np.diff(h["n_fun"]) >= 1)
    assert np.all(np.diff(h["time"]) >= 0)
    assert np.all(h["delta"] > 0)
    assert h["f"][-1] == pytest.approx(obj.fun(res.w), rel=1e-14)
    if res.converged:
        assert h["gnorm"][-1] <= tol * h["gnorm"][0]
    else:
        assert "1e-12" in res.message


# ---------------------------------------------------------------------------
# State contract, warnings, errors, reporting
# ---------------------------------------------------------------------------


class Rosenbrock:
    """scipy's Rosenbrock function; ``hess_vec`` uses the point of the last ``fun``."""

    def __init__(self, n):
        self.n_features = n

    def fun(self, w):
        self._w = np.array(w, copy=True)
        return scipy.optimize.rosen(w)

    def grad(self, w):
        return scipy.optimize.rosen_der(w)

    def hess_vec(self, s):
        return scipy.optimize.rosen_hess_prod(self._w, s)


# Instances on which TRON rejects some trial steps (found by a scan of seeds).
REJECTING = {
    "rosenbrock-2": (lambda: Rosenbrock(2), np.array([-1.2, 1.0])),
    "rosenbrock-6": (lambda: Rosenbrock(6), np.tile([-1.2, 1.0], 3)),
    "ranksvm-C1": (lambda: ranksvm(*make_ranking(10), 1.0), np.full(5, -5.0)),
    "ranksvm-C1e3": (lambda: ranksvm(*make_ranking(10), 1e3), np.full(5, -5.0)),
}


@pytest.mark.parametrize("name", sorted(REJECTING))
def test_hess_vec_always_sees_the_current_iterate(name):
    make, w0 = REJECTING[name]
    obj = StateChecking(make())
    res = tron(obj, w0=w0, tol=1e-8)
    accepted = np.asarray(res.history["accepted"])
    assert not accepted.all(), "this instance is meant to exercise rejections"
    assert res.converged
    assert obj.n_hess == res.history["cg_iter"][-1]
    assert res.history["n_fun"][-1] == len(obj.fun_points)
    # one extra fun (at the iterate) after each rejected trial point
    assert len(obj.fun_points) == 1 + res.n_iter + np.sum(~accepted)
    g = obj.inner.grad(res.w)
    assert np.linalg.norm(g) <= 1e-8 * res.history["gnorm"][0]


def test_ranksvm_with_rejections_matches_cvxpy():
    X, y, qid = make_ranking(10)
    w_star, f_star = cvxpy_ranksvm(pair_difference_matrix(X, y, qid), 1.0, 1.0)
    obj = ranksvm(X, y, qid, 1.0)
    res = tron(obj, w0=np.full(5, -5.0), tol=1e-10)
    assert not all(res.history["accepted"])
    assert abs(obj.fun(res.w) - f_star) <= 1e-6 * max(1.0, abs(f_star))
    np.testing.assert_allclose(res.w, w_star, rtol=0, atol=1e-5 * np.abs(w_star).max())


def test_max_iter_warns_and_reports_not_converged():
    X, y, qid = make_ranking(0)
    with pytest.warns(ConvergenceWarning, match=r"\|g\|/\|g0\| = .* > tol"):
        res = tron(ranksvm(X, y, qid, 1.0), tol=1e-8, max_iter=1)
    assert not res.converged and res.n_iter == 1
    assert "max_iter" in res.message


class NaNAfterFirst(Quadratic):
    def __init__(self, A, b):
        super().__init__(A, b)
        self.calls = 0

    def fun(self, w):
        self.calls += 1
        return np.nan if self.calls > 1 else super().fun(w)


def test_non_finite_objective_raises_naming_it():
    q = random_quadratic(0, d=3)
    with pytest.raises(FloatingPointError, match="objective"):
        tron(NaNAfterFirst(q.A, q.b))


def test_overflowing_gradient_norm_is_an_error_not_convergence():
    """Issue 14.2: every entry of g0 finite, ||g0||^2 = inf.  TRON used to
    report eq. 38 holding at w0 (inf <= tol * inf), n_iter = 0."""
    q = random_quadratic(0, d=4)
    obj = Quadratic(q.A, np.full(4, 1e160))  # g0 = -b: norm 2e160, square inf
    with pytest.raises(NonFiniteError, match="not finite"):
        tron(obj)
    # the same problem scaled to the representable range is solved
    small = Quadratic(q.A, np.full(4, 1e100))
    res = tron(small, tol=1e-8)
    assert res.converged and res.n_iter > 0
    np.testing.assert_allclose(small.A @ res.w, small.b, rtol=1e-6)


def test_zero_gradient_at_w0_is_a_legitimate_zero_iteration_convergence():
    """Converged after 0 iterations only when ||g0|| is finite and eq. 38
    holds with finite numbers: here g0 = 0 exactly."""
    q = random_quadratic(2, d=3)
    res = tron(Quadratic(q.A, np.zeros(3)))
    assert res.converged and res.n_iter == 0
    np.testing.assert_array_equal(res.w, 0.0)


def test_verbose_and_callback(capsys):
    obj = random_quadratic(1, d=5)
    seen = []
    res = tron(obj, verbose=True, callback=lambda w, info: seen.append(info))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("init f")
    assert len(lines) == res.n_iter + 1 == len(seen) + 1
    assert lines[1].startswith("iter  1 act ") and " CG " in lines[1]
    assert seen[-1]["gnorm"] == res.history["gnorm"][-1]
    assert isinstance(res, SolverResult)


def test_bad_solver_parameters_raise():
    obj = random_quadratic(0, d=3)
    for kw in ({"tol": -1.0}, {"eps_cg": 0.0}, {"max_iter": -1}, {"max_cg": 0}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            tron(obj, **kw)
    with pytest.raises(ValueError, match="w0"):
        tron(obj, w0=np.zeros(4))


# ---------------------------------------------------------------------------
# L2Regularized
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("C", [0, -1.0, np.nan, np.inf, "a"])
def test_l2regularized_rejects_bad_C(C):
    X, y, qid = make_ranking(0)
    with pytest.raises(DataError, match="C"):
        L2Regularized(PairwiseSquaredHinge(X, y, qid), C)


@pytest.mark.parametrize("seed", range(3))
def test_l2regularized_derivatives(seed):
    X, y, qid = make_ranking(seed)
    C = 0.7
    obj = ranksvm(X, y, qid, C)
    assert isinstance(obj, SmoothObjective)
    rng = np.random.default_rng(seed)
    w, s = rng.normal(size=(2, X.shape[1])) * 0.3
    K = pair_difference_matrix(X, y, qid)
    r = np.maximum(1 - K @ w, 0)
    assert obj.fun(w) == pytest.approx(0.5 * w @ w + C * r @ r, rel=1e-12)
    np.testing.assert_allclose(obj.grad(w), explicit_grad(K, w, C, 1.0), rtol=1e-10)
    h = 1e-6
    fd = [(obj.fun(w + h * e) - obj.fun(w - h * e)) / (2 * h) for e in np.eye(len(w))]
    obj.fun(w)
    np.testing.assert_allclose(obj.grad(w), fd, rtol=1e-5, atol=1e-6)
    obj.fun(w)
    Hs = obj.hess_vec(s)
    act = r > 0
    np.testing.assert_allclose(Hs, s + 2 * C * K[act].T @ (K[act] @ s), rtol=1e-10)
    # grad at a point other than the last fun re-evaluates there
    w2 = w + 0.1
    np.testing.assert_allclose(obj.grad(w2), explicit_grad(K, w2, C, 1.0), rtol=1e-10)


# ---------------------------------------------------------------------------
# Score reuse: f(w + s) from X w + sum_i a_i X d_i
# ---------------------------------------------------------------------------


class NoReuse:
    """The same objective without the score-reuse methods (TRON's fallback)."""

    def __init__(self, inner):
        self.inner = inner
        self.n_features = inner.n_features

    def fun(self, w):
        return self.inner.fun(w)

    def grad(self, w):
        return self.inner.grad(w)

    def hess_vec(self, s):
        return self.inner.hess_vec(s)


class ReuseChecking(StateChecking):
    """Checks the score-reuse calls: Hessian products only at the iterate,
    trial scores equal to the scores of the trial point up to rounding, and
    the cached state never moved by a trial evaluation."""

    score_reuse = True

    def __init__(self, inner, loss):
        super().__init__(inner)
        self.loss = loss
        self.n_trial = 0
        self.n_accept = 0
        self.last_trial_w = None
        self.max_score_error = 0.0

    def hess_vec_scores(self, s):
        assert np.array_equal(self.last_fun_w, self.last_grad_w)
        self.n_hess += 1
        return self.inner.hess_vec_scores(s)

    def last_scores(self):
        return self.inner.last_scores()

    def accept_trial(self, w):
        assert np.array_equal(w, self.last_trial_w)
        self.n_accept += 1
        self.last_fun_w = np.array(w, copy=True)
        return self.inner.accept_trial(w)

    def fun_from_scores(self, w, z):
        self.last_trial_w = np.array(w, copy=True)
        self.n_trial += 1
        exact = self.loss.scores(w)
        scale = np.abs(self.loss.X).sum(axis=1) * np.abs(w).max() + 1.0
        self.max_score_error = max(self.max_score_error,
                                   float(np.max(np.abs(z - exact) / scale)))
        before = self.inner.last_scores()
        value = self.inner.fun_from_scores(w, z)
        np.testing.assert_array_equal(self.inner.last_scores(), before)
        return value


@pytest.mark.parametrize("one_pass", [True, False])
@pytest.mark.parametrize("name", ["ranksvm-C1", "ranksvm-C1e3"])
def test_score_reuse_keeps_the_state_contract(name, one_pass):
    """With rejections: no fun after the first (the state never leaves the
    iterate on a rejection and moves with accept_trial on an acceptance),
    trial scores within rounding of X (w + s), and the solution of the run
    without reuse."""
    C = 1.0 if name.endswith("C1") else 1e3
    X, y, qid = make_ranking(10)
    loss = PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass=one_pass)
    obj = ReuseChecking(L2Regularized(loss, C), loss)
    res = tron(obj, w0=np.full(5, -5.0), tol=1e-8)
    accepted = np.asarray(res.history["accepted"])
    assert not accepted.all() and res.converged
    assert obj.n_hess == res.history["cg_iter"][-1]
    assert len(obj.fun_points) == 1
    assert obj.n_accept == int(np.sum(accepted[1:]))
    assert obj.n_trial == res.n_iter
    assert res.history["n_fun"][-1] == len(obj.fun_points) + obj.n_trial
    assert obj.max_score_error <= 1e-13
    plain = tron(NoReuse(L2Regularized(loss.with_backend("pairs"), C)),
                 w0=np.full(5, -5.0), tol=1e-8)
    f_star = plain.history["f"][-1]
    assert res.history["f"][-1] == pytest.approx(f_star, rel=1e-10)
    np.testing.assert_allclose(res.w, plain.w, rtol=0,
                               atol=1e-6 * np.abs(plain.w).max())


@pytest.mark.parametrize(("seed", "C", "margin"), CASES)
def test_score_reuse_reaches_the_same_optimum(seed, C, margin):
    """Tree backend (one pass, score reuse) against the explicit-pairs
    objective without reuse, both to tol = 1e-10: same objective value."""
    X, y, qid = make_ranking(seed)
    one = L2Regularized(PairwiseSquaredHinge(X, y, qid, margin=margin,
                                             backend="tree", one_pass=True), C)
    assert one.score_reuse and one.loss.one_pass_
    ref = NoReuse(ranksvm(X, y, qid, C, margin))
    r1 = tron(one, tol=1e-10)
    r2 = tron(ref, tol=1e-10)
    for r in (r1, r2):  # eq. 38, or f resolved to its last digits
        assert r.converged or "1e-12" in r.message
    f1, f2 = ref.fun(r1.w), ref.fun(r2.w)
    assert abs(f1 - f2) <= 1e-10 * max(1.0, abs(f2))
    assert r1.history["f"][-1] == pytest.approx(one.fun(r1.w), rel=1e-13)
