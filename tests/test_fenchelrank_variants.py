"""FenchelRank's fast variants: pairwise, away-step and face-Newton Frank-Wolfe.

The variants solve the same eq. 4 as Algorithm 1 and stop by the same
certified gap (eq. 16-17), so they are checked the same way as the paper's
variant in ``test_fenchelrank.py``: against cvxpy (CLARABEL) by the objective
at its point, by the certificates recomputed from the explicit pair matrix
at every iterate (eq. 11, Theorem 2, monotone ``D``, feasibility), and by
agreement of the backends.  The instances include the seeds where the
paper's Frank-Wolfe steps need millions of updates to reach gap 1e-8 (the
optimum on a face, O(1/t)); every fast variant reaches it there.
"""

import importlib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from fenchel_runs import run
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_fenchelrank import (
    G_explicit,
    D_explicit,
    cvxpy_fenchel,
    fenchel_loss,
    instance,
)

from refimpl.estimators import FenchelRank
from refimpl.exceptions import EmptyModelWarning, NonFiniteError, ParameterError
from refimpl.pairs import pair_difference_matrix
from refimpl.solvers import fenchelrank

# the module (refimpl.solvers re-exports the function under the same name)
fr = importlib.import_module("refimpl.solvers.fenchelrank")

FAST = ["pairwise", "away", "face_newton"]

#: Seeds and radii: vertex or low-dimensional faces (r = 0.5, 1; seeds 1,
#: 2, 4 at r = 1 are the O(1/t) cases of Algorithm 1), faces of higher
#: dimension (r = 4) and interior optima (r = 16).
CASES = [(0, 0.5), (1, 0.5), (1, 1.0), (2, 1.0), (4, 1.0), (1, 4.0),
         (3, 4.0), (0, 16.0), (4, 16.0)]

CAUSE = r"(?s)magnitude up to .*rescale X"


@pytest.mark.parametrize("variant", FAST)
@pytest.mark.parametrize("seed, r", CASES)
def test_variants_match_cvxpy(variant, seed, r):
    X, y, qid = instance(seed)
    K = pair_difference_matrix(X, y, qid)
    w_star, G_star = cvxpy_fenchel(K, r)
    res = fenchelrank(fenchel_loss(X, y, qid, r), r, tol=1e-8,
                      max_iter=20_000, variant=variant)
    assert res.converged
    assert np.abs(res.w).sum() <= 1 + 1e-12
    G = G_explicit(K, r, res.w)
    assert abs(G - G_star) <= 1e-6 * max(1.0, abs(G_star))
    assert G - G_star <= res.history["gap"][-1] + 1e-12        # Theorem 2
    s, s_star = X @ (r * res.w), X @ (r * w_star)
    np.testing.assert_allclose(s, s_star, atol=1e-3 * np.ptp(s_star))


@pytest.mark.parametrize("variant", FAST)
@pytest.mark.parametrize("seed, r", [(1, 0.5), (2, 1.0), (4, 1.0), (0, 4.0),
                                     (3, 16.0)])
def test_variant_certificates(variant, seed, r):
    """At every iterate: feasible, D = -G, eq. 11 = D + gap >= G - G*, D up."""
    X, y, qid = instance(seed)
    K = pair_difference_matrix(X, y, qid)
    _, G_ub = cvxpy_fenchel(K, r)
    res, ws = run(fenchel_loss(X, y, qid, r), r, tol=1e-9, max_iter=300,
                  variant=variant)
    h = res.as_arrays()
    G = np.array([G_explicit(K, r, w) for w in ws])
    assert len(G) == len(h["obj"]) == res.n_iter + 1
    assert np.all(np.abs(ws).sum(axis=1) <= 1 + 1e-12)
    # the scores are updated in place between refreshes: G within rounding
    np.testing.assert_allclose(h["obj"], G, rtol=1e-10, atol=1e-13)
    D = np.array([D_explicit(K, r, w) for w in ws])
    np.testing.assert_allclose(D, h["dual"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(h["dual"], h["obj"] - h["gap"], rtol=0,
                               atol=1e-14)
    assert np.all(h["gap"] >= G - G_ub - 1e-12)
    assert np.all(np.diff(G) <= 1e-12)          # exact steps: G never rises
    assert len(res.details["steps"]) == res.n_iter
    assert set(res.details["steps"]) <= {"pairwise", "fw", "away", "newton"}


@pytest.mark.parametrize("variant", FAST)
def test_final_gap_is_algorithm_1s(variant):
    """The stop is certified by loss.fun / loss.grad at w, as in Algorithm 1."""
    X, y, qid = instance(3)
    r = 4.0
    loss = fenchel_loss(X, y, qid, r)
    res = fenchelrank(loss, r, tol=1e-6, max_iter=5000, variant=variant)
    assert res.converged
    L = loss.fun(res.w)
    g = -r * r * loss.grad(res.w)
    gap = np.abs(g).max() - g @ res.w
    assert res.history["gap"][-1] == pytest.approx(gap, rel=1e-12, abs=1e-15)
    assert res.history["obj"][-1] == pytest.approx(r * r * L, rel=1e-14)
    assert gap <= 1e-6


@pytest.mark.parametrize("variant", FAST)
@pytest.mark.parametrize("seed, r", [(1, 1.0), (3, 4.0), (0, 16.0)])
def test_backends_and_linesearches_agree(variant, seed, r):
    """Score-space steps (pairs) and loss-based Newton steps (tree)."""
    X, y, qid = instance(seed)
    K = pair_difference_matrix(X, y, qid)
    values = []
    for backend, ls in (("pairs", "pairs"), ("pairs", "newton"),
                        ("tree", "newton")):
        res = fenchelrank(fenchel_loss(X, y, qid, r, backend), r, tol=1e-10,
                          max_iter=20_000, line_search=ls, variant=variant)
        assert res.converged
        values.append(G_explicit(K, r, res.w))
    np.testing.assert_allclose(values, values[0], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("variant", FAST)
def test_sparse_features_give_the_same_optimum(variant):
    """Columns of a CSC copy instead of a Fortran one (rounding may differ)."""
    X, y, qid = instance(2)
    K = pair_difference_matrix(X, y, qid)
    r = 4.0
    dense = fenchelrank(fenchel_loss(X, y, qid, r), r, tol=1e-9,
                        max_iter=20_000, variant=variant)
    sparse = fenchelrank(fenchel_loss(sp.csr_matrix(X), y, qid, r), r,
                         tol=1e-9, max_iter=20_000, variant=variant)
    assert dense.converged and sparse.converged
    assert abs(G_explicit(K, r, dense.w) - G_explicit(K, r, sparse.w)) <= 2e-9


@pytest.mark.parametrize("variant", FAST)
def test_score_refresh_does_not_change_the_optimum(variant, monkeypatch):
    X, y, qid = instance(4)
    K = pair_difference_matrix(X, y, qid)
    r = 1.0
    base = fenchelrank(fenchel_loss(X, y, qid, r), r, tol=1e-9,
                       max_iter=20_000, variant=variant)
    monkeypatch.setattr(fr, "REFRESH_EVERY", 1)
    every = fenchelrank(fenchel_loss(X, y, qid, r), r, tol=1e-9,
                        max_iter=20_000, variant=variant)
    assert base.converged and every.converged
    assert abs(G_explicit(K, r, base.w) - G_explicit(K, r, every.w)) <= 2e-9


def test_fast_variants_need_far_fewer_updates_on_a_face():
    """Seed 1, r = 1: the optimum lies on a face; Algorithm 1 zig-zags."""
    X, y, qid = instance(1)
    r = 1.0
    loss = fenchel_loss(X, y, qid, r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        paper = fenchelrank(loss, r, tol=1e-6, max_iter=2000)
    assert not paper.converged
    for variant in FAST:
        res = fenchelrank(loss, r, tol=1e-6, max_iter=2000, variant=variant)
        assert res.converged, variant
        assert res.history["obj"][-1] <= paper.history["obj"][-1] + 1e-6


def test_variant_parameters_are_checked():
    X, y, qid = instance(0)
    loss = fenchel_loss(X, y, qid, 2.0)
    with pytest.raises(ValueError, match="variant must be one of"):
        fenchelrank(loss, 2.0, variant="fast")
    with pytest.raises(ValueError, match="needs step='exact'"):
        fenchelrank(loss, 2.0, variant="pairwise", step="theory")
    with pytest.raises(ParameterError, match="'variant' parameter"):
        FenchelRank(variant="fast").fit(X, y, qid)
    with pytest.raises(ParameterError, match="needs step='exact'"):
        FenchelRank(variant="away", step="closed_form").fit(X, y, qid)


@pytest.mark.parametrize("variant", FAST)
def test_estimator_variant(variant):
    X, y, qid = instance(3)
    r = 4.0
    paper = FenchelRank(r=r, tol=1e-8, max_iter=20_000).fit(X, y, qid)
    est = clone(FenchelRank(r=r, tol=1e-8, max_iter=20_000,
                            variant=variant)).fit(X, y, qid)
    assert est.converged_ and est.get_params()["variant"] == variant
    assert np.abs(est.coef_).sum() <= r * (1 + 1e-12)
    assert est.objective_ == pytest.approx(paper.objective_, abs=2e-8)
    assert est.dual_gap_ <= 1e-8
    assert len(est.history_["gap"]) == est.n_iter_ + 1


@parametrize_with_checks([FenchelRank(max_iter=200, variant=v) for v in FAST])
def test_sklearn_checks_pass_for_every_variant(estimator, check):
    with warnings.catch_warnings():
        # small random problems: early stops and empty models are expected
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", EmptyModelWarning)
        check(estimator)


@pytest.mark.parametrize("variant", FAST)
@pytest.mark.parametrize("line_search", ["pairs", "newton"])
def test_fast_variants_on_overflowing_features_raise(variant, line_search):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6))
    qid = np.repeat(np.arange(10), 12)
    y = rng.integers(0, 3, 120).astype(np.float64)
    with pytest.raises(NonFiniteError, match=CAUSE):
        FenchelRank(line_search=line_search, backend="pairs",
                    variant=variant).fit(X * 1e160, y, qid)


# ---------------------------------------------------------------------------
# The face-Newton step's ratio test
# ---------------------------------------------------------------------------


@st.composite
def faces(draw):
    n = draw(st.integers(1, 6))
    signs = draw(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=n,
                          max_size=n).filter(lambda s: any(s)))
    mags = draw(st.lists(st.floats(1e-6, 1.0), min_size=n, max_size=n))
    w = np.array(signs) * np.array(mags)
    on_sphere = draw(st.booleans())
    w = w / np.abs(w).sum() * (1.0 if on_sphere else draw(st.floats(0.01, 0.99)))
    m = int(np.count_nonzero(w))
    A = np.array(draw(st.lists(st.floats(-3, 3), min_size=m * (m + 1),
                               max_size=m * (m + 1)))).reshape(m + 1, m)
    gL = np.array(draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n)))
    return w, A.T @ A + 1e-3 * np.eye(m), gL, 0.0 if on_sphere else 1 - np.abs(w).sum()


@settings(deadline=None)
@given(faces())
def test_face_newton_step_stays_on_the_face(face):
    """The longest step keeps the signs of the support and ||w||_1 <= 1."""
    w, H, gL, slack = face
    out = fr._face_newton(w, gL, H, slack)
    S = np.flatnonzero(w)
    if out is None:
        # only where the face has no descent direction: a vertex of the
        # sphere, or a gradient that vanishes on the face (relatively, or
        # so small that g^T d underflows)
        gS = gL[S]
        if slack == 0.0:
            sig = np.sign(w[S])
            gS = gS - (sig @ gS) / len(S) * sig
        assert (slack == 0.0 and len(S) == 1) or np.abs(gS).max() <= max(
            1e-9 * np.abs(gL[S]).max(), 1e-100)
        return
    d, t_max, hit = out
    assert np.all(d[np.flatnonzero(w == 0)] == 0)
    assert 0 < t_max <= fr.NEWTON_STEP_CAP
    wt = w + t_max * d
    assert np.all(np.sign(w[S]) * wt[S] >= -1e-12)
    assert np.abs(wt).sum() <= 1 + 1e-12
    if slack == 0.0:
        assert np.sign(w[S]) @ d[S] <= 1e-9 * np.abs(d).sum()
    if hit >= 0:
        assert abs(wt[hit]) <= 1e-12 * max(1.0, abs(w[hit]))
    elif hit == -2:
        assert np.abs(wt).sum() == pytest.approx(1.0, abs=1e-12)
    assert gL @ d < 0.0                         # a descent direction


# ---------------------------------------------------------------------------
# The score-space machinery against brute force on explicit pairs
# ---------------------------------------------------------------------------


@st.composite
def score_problems(draw):
    """Problems with ties, one-document queries and wide score ranges."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(2, 30))
    d = draw(st.integers(1, 5))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    X = rng.integers(-2, 3, size=(n, d)).astype(np.float64) * scale
    if draw(st.booleans()):                     # continuous features too
        X += rng.normal(size=(n, d)) * scale
    qid = np.sort(rng.integers(0, draw(st.integers(1, n)), n))
    y = rng.integers(0, draw(st.integers(2, 4)), n).astype(np.float64)
    y[0], y[1], qid[1] = 1.0, 0.0, qid[0]       # at least one pair
    r = draw(st.sampled_from([0.5, 2.0, 64.0]))
    w = rng.normal(size=d)
    w *= draw(st.floats(0.0, 1.0)) / max(np.abs(w).sum(), 1e-300)
    v = rng.normal(size=d)
    return X, y, qid, r, w, v


@settings(deadline=None, max_examples=60)
@given(score_problems())
def test_score_space_matches_explicit_pairs(prob):
    """Value, gradient, Hessian block and exact step from the scores."""
    X, y, qid, r, w, v = prob
    loss = fenchel_loss(X, y, qid, r)
    K = pair_difference_matrix(X, y, qid)
    space = loss.score_space
    z = X @ w
    L, gL = space.value_grad(z)
    res = np.maximum(0.0, 1.0 / r - K @ w)
    p = K.shape[0]
    scale = max(1.0, float(np.abs(X).max()) ** 2)
    assert L == pytest.approx(res @ res / p, rel=1e-9, abs=1e-12 * scale)
    np.testing.assert_allclose(gL, -2.0 * (res @ K) / p, rtol=1e-9,
                               atol=1e-12 * scale)
    S = np.arange(X.shape[1])
    act = res > 0
    H = 2.0 * K[act].T @ K[act] / p
    np.testing.assert_allclose(space.hessian(S), H, rtol=1e-9,
                               atol=1e-12 * scale)
    # the exact step along d = v (any direction; t in [0, 1]) by brute force
    a, c = space.exact_step(z, X @ v)
    c = c.copy()
    t = float(fr._k.linesearch_pairs(a, c))
    np.testing.assert_allclose(c, K @ v, rtol=1e-9, atol=1e-12 * scale ** 0.5)
    ts = np.linspace(0.0, 1.0, 2001)
    phi = [np.sum(np.maximum(0.0, 1.0 / r - K @ (w + s * v)) ** 2) for s in ts]
    phi_t = np.sum(np.maximum(0.0, 1.0 / r - K @ (w + t * v)) ** 2)
    assert 0.0 <= t <= 1.0
    assert phi_t <= min(phi) * (1 + 1e-9) + 1e-12 * scale
