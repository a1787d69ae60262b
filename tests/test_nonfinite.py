"""Nothing non-finite is ever reported as converged (issue 14, item 2).

Features scaled by 1e100 ... 1e300 overflow the pairwise losses, their
gradient norms or their Hessian products.  Before the fix TRON returned
``w = 0`` as converged after 0 iterations at 1e160 (a finite gradient whose
norm overflowed: ``inf <= tol * inf``), FenchelRank stalled silently for
``max_iter`` steps of length 0, the truncated gradient and FSMRank failed
with a ``ValueError`` about their own step size, LifeRank returned a model
whose ``predict`` gave NaN, and BDMM declared convergence at its start.
Now every solver raises :class:`refimpl.solvers.NonFiniteError` naming the
quantity, the likely cause (the features' magnitude) and the remedy.
"""

import math

import numpy as np
import pytest

from refimpl import estimators as E
from refimpl.estimators import LifeRank
from refimpl.features import pearson_importance, pearson_similarity
from refimpl.losses import PairwiseSquaredHinge, ScaledSmooth
from refimpl.losses.regularized import L2Regularized
from refimpl.nonconvex import make_concave_penalty
from refimpl.penalties import L1
from refimpl.solvers import (
    NonFiniteError,
    apg,
    bdmm,
    fenchelrank,
    projected_subgradient,
    reweighted_l1,
    tron,
    truncated_gradient,
)
from refimpl.solvers._finite import check_finite, safe_norm

#: The error must name the cause and the remedy, not only the symptom.
CAUSE = r"(?s)magnitude up to .*rescale X"


def data(seed=0, n_queries=10, per_query=12, d=6):
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.normal(size=(n, d))
    qid = np.repeat(np.arange(n_queries), per_query)
    y = rng.integers(0, 3, n).astype(np.float64)
    return X, y, qid


# --------------------------------------------------------------------------
# the helpers
# --------------------------------------------------------------------------


def test_safe_norm_does_not_overflow_on_finite_entries():
    v = np.full(4, 1e160)
    assert math.isinf(float(np.sqrt(v @ v)))  # the naive squared sum overflows
    assert safe_norm(v) == pytest.approx(2e160, rel=1e-15)
    assert safe_norm(np.full(3, 1e-170)) == pytest.approx(math.sqrt(3) * 1e-170,
                                                          rel=1e-15)
    assert safe_norm(np.zeros(5)) == 0.0
    assert safe_norm(np.array([])) == 0.0
    assert math.isnan(safe_norm(np.array([1.0, np.nan])))
    assert safe_norm(np.array([1.0, -np.inf])) == math.inf
    assert safe_norm(np.full(4, 1e308)) == math.inf  # the norm itself overflows
    x = np.random.default_rng(0).normal(size=50)
    assert safe_norm(x) == np.linalg.norm(x)  # the ordinary range is unchanged


def test_nonfinite_error_is_a_floating_point_error_and_names_cause():
    X, y, qid = data()
    loss = PairwiseSquaredHinge(X * 1e160, y, qid)
    with pytest.raises(FloatingPointError, match=CAUSE) as info:
        check_finite(math.inf, "TRON", "the gradient norm", loss)
    assert isinstance(info.value, NonFiniteError)
    assert "1.0e+160" in str(info.value) or "e+160" in str(info.value)
    with pytest.raises(NonFiniteError, match="2 of 3 entries"):
        check_finite(np.array([1.0, np.nan, np.inf]), "APG", "the gradient")


# --------------------------------------------------------------------------
# TRON (RankSVM, GASRanker's and FSMSVM's second stage)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e100, 1e160, 1e200, 1e300])
def test_ranksvm_on_overflowing_features_raises(scale):
    """Issue 14.2: at 1e160 RankSVM returned coef_ = 0, converged_ = True,
    n_iter_ = 0; at 1e100 a bare FloatingPointError."""
    X, y, qid = data()
    with pytest.raises(NonFiniteError, match=CAUSE):
        E.RankSVM().fit(X * scale, y, qid)


def test_tron_never_converges_on_an_overflowing_gradient_norm():
    X, y, qid = data()
    obj = L2Regularized(PairwiseSquaredHinge(X * 1e160, y, qid), 1.0)
    g0 = obj.grad(np.zeros(X.shape[1]))
    assert np.all(np.isfinite(g0)) and math.isinf(float(np.linalg.norm(g0)) ** 2)
    with pytest.raises(NonFiniteError, match=CAUSE):
        tron(obj)


def test_tron_large_but_representable_features_still_fit():
    """The checks refuse only what float64 cannot represent: at 1e40 (the
    Hessian ~ 1e80) RankSVM iterates and converges with finite weights."""
    X, y, qid = data()
    m = E.RankSVM().fit(X * 1e40, y, qid)
    assert m.converged_ and m.n_iter_ > 0
    assert np.all(np.isfinite(m.coef_)) and np.any(m.coef_ != 0)
    assert np.all(np.isfinite(m.predict(X * 1e40)))


# --------------------------------------------------------------------------
# APG (SparseRankSVM, FSMRank), reweighted l1
# --------------------------------------------------------------------------


def test_sparse_ranksvm_on_overflowing_features_raises():
    """Before: 'f at a trial point is not finite' (no cause)."""
    X, y, qid = data()
    with pytest.raises(NonFiniteError, match=CAUSE):
        E.SparseRankSVM().fit(X * 1e160, y, qid)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("scale", [1e160, 1e300])
def test_fsmrank_on_huge_features_fits_the_scaled_columns(scale):
    """Before: 'L0 must be finite and > 0, got inf' (a parameter it was
    never given); then, with FSMRank's columns scaled to [-1, 1], the
    Pearson Gram still overflowed and read every importance as 0.  The
    importances and similarities are scale-free, and the fit is finite."""
    X, y, qid = data()
    np.testing.assert_allclose(pearson_importance(X * scale, y),
                               pearson_importance(X, y), rtol=1e-12)
    np.testing.assert_allclose(pearson_similarity(X * scale),
                               pearson_similarity(X), rtol=1e-12)
    m = E.FSMRank().fit(X * scale, y, qid)
    assert np.all(np.isfinite(m.coef_)) and np.any(m.coef_ != 0)
    assert np.all(np.isfinite(m.predict(X * scale)))


def test_apg_solver_names_the_cause():
    X, y, qid = data()
    smooth = ScaledSmooth(PairwiseSquaredHinge(X * 1e160, y, qid), 1.0)
    with pytest.raises(NonFiniteError, match=CAUSE):
        apg(smooth, L1(1.0))


def test_reweighted_l1_names_the_cause():
    X, y, qid = data()
    smooth = ScaledSmooth(PairwiseSquaredHinge(X * 1e160, y, qid), 1.0)
    with pytest.raises(NonFiniteError, match=CAUSE):
        reweighted_l1(smooth, make_concave_penalty("log", C=1.0))


# --------------------------------------------------------------------------
# FenchelRank and the subgradient baselines
# --------------------------------------------------------------------------


@pytest.mark.parametrize("line_search", ["pairs", "newton"])
def test_fenchelrank_on_overflowing_features_raises(line_search):
    """Before: 1000 steps of length 0 (the line-search curvature overflowed
    inside the kernel), then w = 0 with only a ConvergenceWarning."""
    X, y, qid = data()
    with pytest.raises(NonFiniteError, match=CAUSE):
        E.FenchelRank(line_search=line_search, backend="pairs").fit(
            X * 1e160, y, qid)


def test_fenchelrank_solver_raises_instead_of_stalling():
    X, y, qid = data()
    r = 4.0
    loss = PairwiseSquaredHinge(X * 1e160, y, qid, margin=1.0 / r,
                                normalize=True, backend="pairs")
    with pytest.raises(NonFiniteError, match=CAUSE):
        fenchelrank(loss, r, max_iter=50)


def test_l1_projection_keeps_a_radius_below_the_ulp():
    """|v| ~ 1e160: the sort-based projection found no rho (IndexError)."""
    from refimpl.solvers.subgradient import project_l1_ball

    w = project_l1_ball(np.array([3e160, -1e160, 2.0]), 1.0)
    np.testing.assert_array_equal(w, [1.0, 0.0, 0.0])
    v = np.random.default_rng(1).normal(size=20)
    w = project_l1_ball(v, 1.0)
    assert abs(np.abs(w).sum() - 1.0) <= 1e-14


def test_projected_subgradient_names_the_cause():
    """Before: an IndexError inside the l1-ball projection."""
    X, y, qid = data()
    loss = PairwiseSquaredHinge(X * 1e160, y, qid, margin=0.25, normalize=True)
    with pytest.raises(NonFiniteError, match=CAUSE):
        projected_subgradient(loss, 4.0, max_iter=20)


def test_truncated_gradient_names_the_cause():
    """Before: 'lr must be positive and finite, got 0.0' (the power
    iteration's curvature overflowed to inf, so lr = 1 / inf)."""
    X, y, qid = data()
    loss = PairwiseSquaredHinge(X * 1e160, y, qid, normalize=True)
    with pytest.raises(NonFiniteError, match=CAUSE):
        truncated_gradient(loss, 1.0, max_iter=20)


# --------------------------------------------------------------------------
# BDMM and LifeRank
# --------------------------------------------------------------------------


class Linear:
    """``f(x) = a^T x`` with no constraint: unbounded below, gradient ``a``."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float64)

    def fun(self, x):
        return float(self.a @ x)

    def grad(self, x):
        return self.a.copy()

    def constraint(self, x):
        return np.zeros(0)

    def constraint_vjp(self, x, u):
        return np.zeros(len(self.a))


def test_bdmm_does_not_converge_on_an_overflowing_gradient_norm():
    """Before: ||grad|| = inf at x0 (finite entries), so the relative test
    inf <= tol * inf held and BDMM returned x0 as converged, n_iter = 0."""
    prob = Linear(np.full(4, 1e160))
    with pytest.raises(NonFiniteError, match="iteration 1"):
        bdmm(prob, np.zeros(4), lr=0.1, max_iter=10)
    res = bdmm(prob, np.zeros(4), lr=0.1, max_iter=10, warn=False,
               on_nonfinite="stop")
    assert not res.converged and res.message.startswith("diverged")


def test_bdmm_rejects_a_non_finite_start():
    with pytest.raises(NonFiniteError, match="starting point"):
        bdmm(Linear([1.0, np.inf]), np.zeros(2), lr=0.1)


# Before LifeRank fitted on X / max|X|: at 1e200 BDMM warned 'diverged' and
# predict returned NaN; the Stiefel variant returned converged_ = True after 0
# iterations.  Now huge features are the fit on X, rescaled.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("constraint", ["bdmm", "stiefel", "none"])
@pytest.mark.parametrize("scale", [1e100, 1e200])
def test_liferank_on_huge_features_is_the_fit_on_x(constraint, scale):
    """LifeRank fits on X / max|X| (chapter 6, eq. lr-scale)."""
    X, y, qid = data()
    a = LifeRank(n_components=3, constraint=constraint).fit(X, y, qid)
    b = LifeRank(n_components=3, constraint=constraint).fit(X * scale, y, qid)
    np.testing.assert_allclose(b.components_, a.components_, rtol=1e-7,
                               atol=1e-9)
    np.testing.assert_allclose(b.predict(X * scale), a.predict(X), rtol=1e-7,
                               atol=1e-9)


# --------------------------------------------------------------------------
# predict never returns NaN silently
# --------------------------------------------------------------------------


def test_predict_raises_on_overflowing_scores():
    X, y, qid = data()
    m = E.RankSVM().fit(X, y, qid)
    assert np.all(np.isfinite(m.predict(X)))
    m.coef_ = np.full_like(m.coef_, 1e308)  # finite, but X @ coef_ overflows
    with pytest.raises(NonFiniteError, match=r"RankSVM\.predict: .* scores"):
        m.predict(np.abs(X) + 1.0)
    m.coef_ = np.full_like(m.coef_, np.nan)
    with pytest.raises(NonFiniteError, match="weights are not finite"):
        m.predict(X)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_liferank_predict_raises_on_overflowing_scores():
    X, y, qid = data()
    m = LifeRank(n_components=3, max_iter=50).fit(X, y, qid)
    assert np.all(np.isfinite(m.predict(X)))
    m.coef_ = np.full_like(m.coef_, 1e308)
    with pytest.raises(NonFiniteError, match=r"LifeRank\.predict"):
        m.predict(X * 1e10)
