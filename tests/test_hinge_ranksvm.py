"""The L1-hinge RankSVM (SVMrank's problem) and its cutting-plane solver.

The O(l log l) pass (counts of violated pairs per document, the hinge sum
and the most violated constraint) is checked against the explicit pairs on
random and adversarial rankings (hypothesis: ties in scores and labels,
one-document queries, many levels); the solver against cvxpy (Clarabel) on
small instances, by its own duality-gap certificate recomputed here, and
for its errors.
"""

import cvxpy as cp
import numpy as np
import pytest
from cvx_reference import solve
from hypothesis import given, settings
from hypothesis import strategies as st
from random_rankings import random_ranking

from refimpl._validation import ranking_problem
from refimpl.estimators import HingeRankSVM
from refimpl.exceptions import ParameterError
from refimpl.kernels.simplex_qp import simplex_qp
from refimpl.losses.pairwise_hinge import (
    PairwiseHinge,
    hinge_counts,
    hinge_pairs_naive,
)
from refimpl.pairs import pair_difference_matrix
from refimpl.solvers import NonFiniteError
from refimpl.solvers.cutting_plane import cutting_plane_ranksvm

# ---------------------------------------------------------------------------
# The pass against the explicit pairs
# ---------------------------------------------------------------------------


@st.composite
def rankings(draw):
    """Scores on a coarse grid (ties, and pairs at exactly the margin)."""
    n = draw(st.integers(1, 30))
    n_q = draw(st.integers(1, 4))
    levels = draw(st.integers(1, 6))
    qid = np.array(draw(st.lists(st.integers(0, n_q - 1), min_size=n, max_size=n)))
    y = np.array(draw(st.lists(st.integers(0, levels - 1), min_size=n, max_size=n)),
                 dtype=float)
    half = draw(st.booleans())
    z = np.array(draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n)),
                 dtype=float) * (0.5 if half else 0.25)
    return z, y, qid


def check_pass(z, y, qid):
    total, lp, lm = hinge_pairs_naive(z, y, qid)
    got_lp, got_lm = hinge_counts(z, y, qid)
    np.testing.assert_array_equal(got_lp, lp)
    np.testing.assert_array_equal(got_lm, lm)
    X = z[:, None]                       # w = 1 gives the scores z
    loss = PairwiseHinge(ranking_problem(X, y, qid))
    value, c, n_violated = loss.risk(np.ones(1))
    assert n_violated == lm.sum()
    assert value == pytest.approx(total, rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(c, lm - lp)


@settings(max_examples=300, deadline=None)
@given(rankings())
def test_pass_equals_explicit_pairs(case):
    check_pass(*case)


@pytest.mark.parametrize("case", [
    # one document; one query of equal labels; all scores tied
    (np.zeros(1), np.zeros(1), np.zeros(1, dtype=int)),
    (np.arange(5.0), np.ones(5), np.zeros(5, dtype=int)),
    (np.zeros(6), np.array([0, 1, 2, 0, 1, 2.0]), np.zeros(6, dtype=int)),
    # pairs at exactly the margin (not violated) and just inside it
    (np.array([1.0, 0.0, 2.0, 1.0 + 1e-12]), np.array([1, 0, 1, 0.0]),
     np.array([0, 0, 1, 1])),
    # many levels, reversed scores; singleton queries mixed in
    (-np.arange(12.0), np.arange(12.0), np.r_[np.zeros(10, int), 1, 2]),
])
def test_pass_adversarial(case):
    check_pass(*case)


def test_n_pairs():
    _, X, y, qid = random_ranking(0, n=60, levels=4)
    assert PairwiseHinge(ranking_problem(X, y, qid)).n_pairs == len(
        pair_difference_matrix(X, y, qid))


# ---------------------------------------------------------------------------
# The working-set QP
# ---------------------------------------------------------------------------


def test_simplex_qp_matches_cvxpy():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(7, 3))
    G, b, C = A @ A.T, rng.normal(size=7), 2.5
    alpha = np.zeros(7)
    alpha[0] = C
    simplex_qp(G, b, alpha, np.empty(7), 7, 1e-13, 10**6)
    a = cp.Variable(7)
    ref = solve(cp.Problem(cp.Minimize(0.5 * cp.sum_squares(A.T @ a) - b @ a),
                           [a >= 0, cp.sum(a) == C]))
    ours = 0.5 * alpha @ G @ alpha - b @ alpha
    assert alpha.min() >= 0 and alpha.sum() == pytest.approx(C, rel=1e-12)
    assert ours <= ref + 1e-8 * abs(ref)


# ---------------------------------------------------------------------------
# The solver against cvxpy, and its certificate
# ---------------------------------------------------------------------------


def primal(w, X, y, qid, C):
    D = pair_difference_matrix(X, y, qid)
    n = len(np.unique(qid))
    return 0.5 * w @ w + C / n * np.maximum(0.0, 1.0 - D @ w).sum()


def cvx_optimum(X, y, qid, C):
    D = pair_difference_matrix(X, y, qid)
    D = D.toarray() if hasattr(D, "toarray") else D
    n = len(np.unique(qid))
    w = cp.Variable(X.shape[1])
    objective = 0.5 * cp.sum_squares(w) + C / n * cp.sum(cp.pos(1 - D @ w))
    return solve(cp.Problem(cp.Minimize(objective)))


@pytest.mark.parametrize("seed, C", [(0, 0.01), (1, 1.0), (2, 10.0), (3, 100.0)])
def test_matches_cvxpy(seed, C):
    _, X, y, qid = random_ranking(seed, n=50, d=5, n_queries=5, levels=3)
    model = HingeRankSVM(C=C, tol=1e-9, feature_scaling=None).fit(X, y, qid)
    ref = cvx_optimum(X, y, qid, C)
    ours = primal(model.coef_, X, y, qid, C)
    assert ours == pytest.approx(model.objective_, rel=1e-12)
    assert abs(ours - ref) <= 1e-6 * ref
    assert model.converged_


def test_queries_without_pairs_count_in_n():
    """SVMrank's n is every query: one without pairs still divides C."""
    _, X, y, qid = random_ranking(4, n=40, d=4, n_queries=3)
    X2 = np.vstack([X, np.ones((3, 4))])
    y2, qid2 = np.r_[y, 1, 1, 1], np.r_[qid, 99, 99, 99]
    # unscaled: the rows of ones would change the columns' scales
    model = HingeRankSVM(C=1.0, tol=1e-10, feature_scaling=None).fit(X2, y2, qid2)
    ref = HingeRankSVM(C=1.0 * 3 / 4, tol=1e-10, feature_scaling=None).fit(X, y, qid)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=1e-6)


def test_certificate_at_the_stop():
    _, X, y, qid = random_ranking(5, n=80, d=6, n_queries=6, levels=4)
    C, tol = 3.0, 1e-5
    problem = ranking_problem(X, y, qid)
    res = cutting_plane_ranksvm(PairwiseHinge(problem), C, problem.n_queries,
                                tol=tol)
    h = res.as_arrays()
    assert res.converged and h["gap"][-1] <= tol * h["f_best"][-1]
    # the dual value recomputed from alpha is a lower bound of cvxpy's optimum
    ref = cvx_optimum(X, y, qid, C)
    assert h["dual"][-1] <= ref * (1 + 1e-9)
    assert primal(res.w, X, y, qid, C) - h["dual"][-1] <= tol * h["f_best"][-1]
    # gaps never increase (best primal minus a dual bound of growing sets)
    assert np.all(np.diff(h["f_best"]) <= 0)


def test_sparse_equals_dense():
    import scipy.sparse as sp

    _, X, y, qid = random_ranking(6, n=50, d=5)
    X[X < 0.3] = 0.0
    a = HingeRankSVM(C=2.0, tol=1e-10).fit(X, y, qid)
    b = HingeRankSVM(C=2.0, tol=1e-10).fit(sp.csr_matrix(X), y, qid)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, value", [
    ("C", 0.0), ("C", -1.0), ("tol", 0.0), ("max_iter", 0), ("C", True)])
def test_parameter_errors_name_the_parameter(name, value):
    _, X, y, qid = random_ranking(0)
    with pytest.raises(ParameterError, match=f"'{name}' parameter of HingeRankSVM"):
        HingeRankSVM(**{name: value}).fit(X, y, qid)


@pytest.mark.parametrize("scale", [1e160, 1e300])
def test_overflowing_features_raise(scale):
    _, X, y, qid = random_ranking(0)
    with pytest.raises(NonFiniteError, match=r"(?s)magnitude up to .*rescale X"):
        HingeRankSVM(feature_scaling=None).fit(X * scale, y, qid)


@pytest.mark.parametrize("scale", [2.0**530, 2.0**990])
def test_huge_features_fit_when_scaled(scale):
    """The scores that overflow the unscaled fit are those of X once each
    column is divided by its magnitude (a power of 2: exactly)."""
    _, X, y, qid = random_ranking(0)
    ref = HingeRankSVM().fit(X, y, qid)
    model = HingeRankSVM().fit(X * scale, y, qid)
    assert model.converged_
    np.testing.assert_array_equal((X * scale) @ model.coef_, X @ ref.coef_)


def test_nonfinite_input_refused():
    _, X, y, qid = random_ranking(0)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HingeRankSVM().fit(X, y, qid)


def test_max_iter_warns():
    from sklearn.exceptions import ConvergenceWarning

    _, X, y, qid = random_ranking(1, n=60)
    with pytest.warns(ConvergenceWarning, match="max_iter = 2 reached"):
        model = HingeRankSVM(C=10.0, max_iter=2).fit(X, y, qid)
    assert not model.converged_


@pytest.mark.parametrize("line_search", [False, True, "auto"])
def test_line_search_variants_reach_the_optimum(line_search):
    _, X, y, qid = random_ranking(7, n=60, d=5, n_queries=4, levels=3)
    model = HingeRankSVM(C=30.0, tol=1e-9, line_search=line_search,
                         max_iter=3000, feature_scaling=None).fit(X, y, qid)
    ref = cvx_optimum(X, y, qid, 30.0)
    assert model.converged_
    assert abs(primal(model.coef_, X, y, qid, 30.0) - ref) <= 1e-6 * ref


def test_line_search_parameter_checked():
    _, X, y, qid = random_ranking(0)
    with pytest.raises(ParameterError, match="'line_search' parameter"):
        HingeRankSVM(line_search="yes").fit(X, y, qid)


# ---------------------------------------------------------------------------
# feature_scaling="max_abs": each column divided by its largest magnitude
# (book/07_ranksvm_ostree.md, prop-hinge-scale)
# ---------------------------------------------------------------------------


def raw_scale(seed, n_queries=30, top=5):
    """Synthetic LETOR data with columns on scales 1 .. 10^top (raw
    features, as MSLR's), and those scales."""
    from refimpl.data import make_synthetic_letor

    d = make_synthetic_letor(n_queries=n_queries, docs_per_query=(5, 20),
                             n_noise=10, seed=seed)
    scale = np.logspace(0, top, d.X.shape[1])
    np.random.default_rng(seed).shuffle(scale)
    return d.X * scale, d.y, d.qid


def test_scaled_fit_solves_the_weighted_problem():
    """In terms of the raw w, the fit minimises eq. (7.15):
    1/2 sum_j s_j^2 w_j^2 plus the hinges, s_j the columns' magnitudes."""
    _, X, y, qid = random_ranking(8, n=50, d=5, n_queries=5, levels=3)
    X = X * np.array([1e-3, 0.5, 1.0, 30.0, 1e4])
    C = 3.0
    model = HingeRankSVM(C=C, tol=1e-9).fit(X, y, qid)
    s = np.abs(X).max(axis=0)
    np.testing.assert_array_equal(model.feature_scale_, s)
    D = pair_difference_matrix(X, y, qid)
    n = len(np.unique(qid))
    w = cp.Variable(X.shape[1])
    ref = solve(cp.Problem(cp.Minimize(
        0.5 * cp.sum_squares(cp.multiply(s, w))
        + C / n * cp.sum(cp.pos(1 - D @ w)))))
    ours = (0.5 * np.sum((s * model.coef_) ** 2)
            + C / n * np.maximum(0.0, 1.0 - D @ model.coef_).sum())
    assert model.converged_
    assert ours == pytest.approx(model.objective_, rel=1e-9)
    assert abs(ours - ref) <= 1e-6 * ref


@pytest.mark.parametrize("seed", [0, 1])
def test_column_scales_cancel(seed):
    """On X diag(c) the scores are those on X: exactly, for c powers of 2
    (dividing by the column's magnitude undoes them without rounding)."""
    X, y, qid = raw_scale(seed)
    c = 2.0 ** np.random.default_rng(seed).integers(-40, 40, X.shape[1])
    a = HingeRankSVM(C=10.0).fit(X, y, qid)
    b = HingeRankSVM(C=10.0).fit(X * c, y, qid)
    np.testing.assert_array_equal(b.coef_ * c, a.coef_)
    np.testing.assert_array_equal((X * c) @ b.coef_, X @ a.coef_)
    np.testing.assert_array_equal(b.feature_scale_, a.feature_scale_ * c)
    assert a.objective_ == b.objective_ and a.converged_


def test_unit_columns_are_the_plain_fit():
    """Columns whose largest magnitude is 0 or 1 (LETOR's QueryLevelNorm):
    the scaled fit is the unscaled one, bit for bit."""
    X, y, qid = raw_scale(2)
    X = X / np.abs(X).max(axis=0)
    X[:, 3] = 0.0                                  # a column of zeros
    a = HingeRankSVM(C=1.0).fit(X, y, qid)
    b = HingeRankSVM(C=1.0, feature_scaling=None).fit(X, y, qid)
    np.testing.assert_array_equal(a.feature_scale_, np.ones(X.shape[1]))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_


def test_raw_scale_converges_at_a_large_C():
    """Columns on scales up to 1e5 at C = 100 (the registry grid's top):
    the planes grow with C R^2 of the scaled data, R <= 2 sqrt(d), and the
    fit stops on its certificate within the default budget."""
    X, y, qid = raw_scale(3, n_queries=40)
    model = HingeRankSVM(C=100.0).fit(X, y, qid)
    assert model.converged_
    assert model.dual_gap_ <= model.tol * model.objective_


def test_feature_scaling_parameter_checked():
    _, X, y, qid = random_ranking(0)
    with pytest.raises(ParameterError, match="'feature_scaling' parameter"):
        HingeRankSVM(feature_scaling="l2").fit(X, y, qid)


def test_memory_model_counts_the_scaled_copy():
    shape = dict(n_docs=1000, n_pairs=5000, n_features=40, max_query=50)
    scaled = HingeRankSVM().estimate_memory(**shape).terms
    plain = HingeRankSVM(feature_scaling=None).estimate_memory(**shape).terms
    assert scaled["column-scaled copy"] == 1000 * 40 * 8
    assert "column-scaled copy" not in plain
    assert scaled["pair-support copy"] == plain["pair-support copy"]
