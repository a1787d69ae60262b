"""FSMRank: Pearson importance/similarity, PSD repair, the 2d lift, eq. 1-2 vs
cvxpy, the estimator, and the GAS / FSMSVM two-stage baselines."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from cvx_reference import solve
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from refimpl.data import make_synthetic_letor
from refimpl.estimators import FSMSVM, FSMRank, GASRanker, RankSVM, gas_e
from refimpl.exceptions import DataError, ParameterError
from refimpl.features import (
    IMPORTANCE_FLOOR,
    feature_ndcg,
    gas_select,
    kendall_similarity,
    pearson_importance,
    pearson_similarity,
)
from refimpl.losses import FSMRankSmooth, LiftedLoss, PairwiseSquaredHinge
from refimpl.losses.lifted import (
    convexify_similarity,
    lift_importance,
    lift_similarity,
    nearest_psd,
)
from refimpl.metrics import kendall_tau, ndcg_at_k
from refimpl.pairs import pair_difference_matrix
from refimpl.penalties import NonNegWeightedL1
from refimpl.solvers import apg, lipschitz_constant


def small(seed, n_queries=4, n_noise=4):
    d = make_synthetic_letor(n_queries=n_queries, docs_per_query=(6, 12),
                             n_informative=3, n_redundant=2, n_noise=n_noise,
                             seed=seed)
    return d.X, d.y, d.qid


# --------------------------------------------------------------------------
# A data set whose |Pearson| similarity matrix is not PSD
# --------------------------------------------------------------------------

#: x1, x2 centred, orthogonal, of equal norm: the features x1, x2, x1 + x2,
#: x1 - x2 have correlation matrix R = [[I, B], [B^T, I]] with
#: B = [[1, 1], [1, -1]] / sqrt(2), which is PSD (eigenvalues 0, 0, 2, 2),
#: but |R| = [[I, J/sqrt(2)], [J/sqrt(2), I]] (J the all-ones 2x2) has the
#: eigenvalue 1 - sqrt(2) < 0.
_X1 = np.array([1, -1, 1, -1, 1, -1, 1, -1], dtype=float)
_X2 = np.array([1, 1, -1, -1, 1, 1, -1, -1], dtype=float)
NON_PSD_X = np.column_stack([_X1, _X2, _X1 + _X2, _X1 - _X2]) / 4 + 0.5
NON_PSD_Y = np.array([2, 0, 1, 0, 1, 0, 2, 1])
NON_PSD_QID = np.array([1, 1, 1, 1, 2, 2, 2, 2])


def test_crafted_abs_correlation_is_not_psd():
    R = np.corrcoef(NON_PSD_X.T)
    assert np.linalg.eigvalsh(R)[0] > -1e-12                    # R is PSD
    A = pearson_similarity(NON_PSD_X)
    np.testing.assert_allclose(A, np.abs(R), atol=1e-14)
    assert np.linalg.eigvalsh(A)[0] == pytest.approx(1 - np.sqrt(2), abs=1e-12)


def test_nearest_psd_on_crafted_matrix():
    A = pearson_similarity(NON_PSD_X)
    A_psd, min_eig = nearest_psd(A)
    lam = np.linalg.eigvalsh(A)
    assert min_eig == pytest.approx(1 - np.sqrt(2), abs=1e-12)
    np.testing.assert_array_equal(A_psd, A_psd.T)
    assert np.linalg.eigvalsh(A_psd)[0] >= -1e-12
    dist = np.linalg.norm(A_psd - A)
    assert dist == pytest.approx(np.sqrt(np.sum(np.minimum(lam, 0) ** 2)), rel=1e-10)
    # the nearest PSD matrix in Frobenius norm, computed by an SDP
    Xv = cp.Variable((4, 4), symmetric=True)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(Xv - A)), [Xv >> 0])
    value = solve(prob)
    assert dist**2 <= value + 1e-8
    np.testing.assert_allclose(A_psd, Xv.value, atol=1e-5)
    # closer than other PSD repairs: shifting the spectrum, other clippings
    assert dist < np.linalg.norm(-min_eig * np.eye(4))
    lam_v, V = np.linalg.eigh(A)
    for floor in (1e-3, 1e-1):
        other = (V * np.maximum(lam_v, floor)) @ V.T
        assert dist < np.linalg.norm(other - A)


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, (5, 5), elements=st.floats(-1, 1)))
def test_nearest_psd_random(M):
    A = 0.5 * (M + M.T)
    A_psd, min_eig = nearest_psd(A)
    assert min_eig == pytest.approx(np.linalg.eigvalsh(A)[0], abs=1e-12)
    assert np.linalg.eigvalsh(A_psd)[0] >= -1e-10
    np.testing.assert_array_equal(A_psd, A_psd.T)
    if min_eig >= 0:
        np.testing.assert_allclose(A_psd, A, atol=1e-12)


def test_convexify_similarity_modes():
    A = pearson_similarity(NON_PSD_X)
    with pytest.warns(UserWarning, match="not positive semidefinite"):
        A_used, projected, min_eig = convexify_similarity(A, "project")
    assert projected and min_eig < 0 and np.linalg.eigvalsh(A_used)[0] >= -1e-12
    with pytest.raises(DataError, match="psd="):
        convexify_similarity(A, "raise")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        A_same, projected, _ = convexify_similarity(A, "ignore")
        assert not projected and np.array_equal(A_same, A)
        _, projected, min_eig = convexify_similarity(np.eye(3), "project")
        assert not projected and min_eig == 1.0
    with pytest.raises(DataError, match="psd"):
        convexify_similarity(A, "clip")
    with pytest.raises(DataError, match="symmetric"):
        nearest_psd(np.triu(np.ones((3, 3))))


def test_fsmrank_projects_a_non_psd_similarity():
    with pytest.warns(UserWarning, match="nearest PSD"):
        m = FSMRank(lambda1=1.0, lambda2=0.01).fit(NON_PSD_X, NON_PSD_Y, NON_PSD_QID)
    assert m.psd_projected_
    assert m.similarity_min_eig_ == pytest.approx(1 - np.sqrt(2), abs=1e-12)
    assert np.linalg.eigvalsh(m.similarity_)[0] >= -1e-12
    with pytest.raises(DataError, match="psd"):
        FSMRank(psd="raise").fit(NON_PSD_X, NON_PSD_Y, NON_PSD_QID)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        m = FSMRank(psd="ignore", lambda1=0.0).fit(NON_PSD_X, NON_PSD_Y, NON_PSD_QID)
    assert not m.psd_projected_ and m.similarity_min_eig_ < 0
    np.testing.assert_allclose(m.similarity_, pearson_similarity(NON_PSD_X))


# --------------------------------------------------------------------------
# Importance and similarity
# --------------------------------------------------------------------------


def test_pearson_measures_match_numpy():
    X, y, _ = small(0)
    C = np.corrcoef(np.column_stack([X, y]).T)
    np.testing.assert_allclose(pearson_importance(X, y), np.abs(C[:-1, -1]),
                               rtol=1e-12)
    np.testing.assert_allclose(pearson_similarity(X), np.abs(C[:-1, :-1]),
                               rtol=1e-12, atol=1e-14)
    Xs = sp.csr_matrix(X)
    np.testing.assert_allclose(pearson_importance(Xs, y), pearson_importance(X, y),
                               rtol=1e-10)
    np.testing.assert_allclose(pearson_similarity(Xs), pearson_similarity(X),
                               rtol=1e-9, atol=1e-12)


def test_constant_features():
    X, y, _ = small(1)
    X = X.copy()
    X[:, 2] = 0.1                       # constant, with a mean that rounds
    s = pearson_importance(X, y)
    assert s[2] == IMPORTANCE_FLOOR and np.all(s[[0, 1]] > IMPORTANCE_FLOOR)
    A = pearson_similarity(X)
    assert A[2, 2] == 1.0 and np.all(np.delete(A[2], 2) == 0.0)
    np.testing.assert_array_equal(A, A.T)
    with pytest.raises(DataError, match="constant"):
        pearson_importance(X, np.ones_like(y))
    with pytest.raises(DataError, match="eps"):
        pearson_importance(X, y, eps=0.0)


# --------------------------------------------------------------------------
# The 2d reformulation
# --------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, 8, elements=st.floats(0, 10)))
def test_lifted_quadratic_equals_eq1_quadratic(w2):
    A = pearson_similarity(small(2)[0][:, :4])
    w_hat = w2[:4] - w2[4:]
    A2 = lift_similarity(A)
    assert w2 @ A2 @ w2 == pytest.approx(w_hat @ A @ w_hat, rel=1e-9, abs=1e-9)
    # the literal |PC| of [X, -X] is [[A, A], [A, A]]: |w|^T A |w| on
    # complementary w, a different problem
    wc = np.concatenate([np.maximum(w_hat, 0), np.maximum(-w_hat, 0)])
    Aabs = lift_similarity(A, "abs")
    assert wc @ Aabs @ wc == pytest.approx(np.abs(w_hat) @ A @ np.abs(w_hat),
                                           rel=1e-9, abs=1e-9)
    X4 = small(2)[0][:, :4]
    np.testing.assert_allclose(pearson_similarity(np.hstack([X4, -X4])), Aabs,
                               atol=1e-12)


def test_lift_spectrum():
    A = pearson_similarity(small(3)[0])
    lam = np.linalg.eigvalsh(A)
    expect = np.sort(np.concatenate([np.zeros_like(lam), 2 * lam]))
    np.testing.assert_allclose(np.linalg.eigvalsh(lift_similarity(A)), expect,
                               atol=1e-12)
    np.testing.assert_array_equal(lift_importance([1.0, 2.0]), [1.0, 2.0, 1.0, 2.0])


def test_lifted_loss_matches_loss_on_doubled_features():
    X, y, qid = small(4)
    rng = np.random.default_rng(0)
    ref = PairwiseSquaredHinge(np.hstack([X, -X]), y, qid, normalize=True)
    lifted = LiftedLoss(PairwiseSquaredHinge(X, y, qid, normalize=True))
    assert lifted.n_features == ref.n_features == 2 * X.shape[1]
    for _ in range(3):
        w = rng.uniform(0, 1, 2 * X.shape[1])
        s = rng.normal(size=w.size)
        assert lifted.fun(w) == pytest.approx(ref.fun(w), rel=1e-12)
        np.testing.assert_allclose(lifted.grad(w), ref.grad(w), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(lifted.hess_vec(s), ref.hess_vec(s), rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(lifted.scores(w), ref.scores(w), rtol=1e-12)


def test_fsmrank_smooth_gradient_and_lipschitz_bound():
    X, y, qid = small(5)
    d = X.shape[1]
    A2 = lift_similarity(pearson_similarity(X))
    psi = FSMRankSmooth(LiftedLoss(PairwiseSquaredHinge(X, y, qid, normalize=True)),
                        A2, 0.7)
    w = np.random.default_rng(1).uniform(0, 0.5, 2 * d)
    psi.fun(w)
    g = psi.grad(w)
    h = 1e-6
    num = np.array([(psi.fun(w + h * e) - psi.fun(w - h * e)) / (2 * h)
                    for e in np.eye(2 * d)])
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-8)
    # Theorem 1: exact Lipschitz constant <= bound <= (4 + 2 lambda1) d
    L_exact = lipschitz_constant(psi)
    bound = psi.lipschitz_bound()
    assert L_exact <= bound <= (4 + 2 * 0.7) * d + 1e-12
    # the pair-free tree backend uses a looser (larger) per-query bound
    tree = FSMRankSmooth(LiftedLoss(PairwiseSquaredHinge(
        X, y, qid, normalize=True, backend="tree")), A2, 0.7)
    assert bound <= tree.lipschitz_bound() <= (4 + 2 * 0.7) * d + 1e-12
    with pytest.raises(DataError, match="lambda1"):
        FSMRankSmooth(psi.loss, A2, -1.0)
    with pytest.raises(DataError, match="A2"):
        FSMRankSmooth(psi.loss, A2[:-1, :-1], 1.0)


# --------------------------------------------------------------------------
# Eq. 2 and eq. 1 vs cvxpy
# --------------------------------------------------------------------------


def psd_factor(A):
    lam, V = np.linalg.eigh(A)
    return (V * np.sqrt(np.clip(lam, 0, None))).T        # R^T R = A


def cvxpy_eq2(K, A, s, lam1, lam2):
    d = K.shape[1]
    R = psd_factor(A)
    w = cp.Variable(2 * d)
    K2 = np.hstack([K, -K])
    R2 = np.hstack([R, -R])                            # R2^T R2 = [[A,-A],[-A,A]]
    obj = (lam1 / 2 * cp.sum_squares(R2 @ w) + lam2 * cp.sum(cp.multiply(
        1 / np.concatenate([s, s]), w)) + cp.sum_squares(cp.pos(1 - K2 @ w)) / len(K))
    prob = cp.Problem(cp.Minimize(obj), [w >= 0])
    value = solve(prob)
    return w.value, value


def cvxpy_eq1(K, A, s, lam1, lam2):
    R = psd_factor(A)
    w = cp.Variable(K.shape[1])
    obj = (lam1 / 2 * cp.sum_squares(R @ w) + lam2 * cp.sum(cp.multiply(1 / s, cp.abs(w)))
           + cp.sum_squares(cp.pos(1 - K @ w)) / len(K))
    prob = cp.Problem(cp.Minimize(obj))
    value = solve(prob)
    return w.value, value


def eq1_objective(K, A, s, lam1, lam2, w):
    r = np.maximum(0, 1 - K @ w)
    return lam1 / 2 * w @ A @ w + lam2 * np.sum(np.abs(w) / s) + r @ r / len(K)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("lam1, lam2", [(1.0, 0.01), (0.1, 0.1), (3.0, 0.003)])
def test_eq2_and_eq1_match_cvxpy(seed, lam1, lam2):
    X, y, qid = small(seed + 30)
    K = pair_difference_matrix(X, y, qid)
    s = pearson_importance(X, y)
    A, _, _ = convexify_similarity(pearson_similarity(X), "ignore")
    A, _ = nearest_psd(A)                          # make sure it is PSD
    d = X.shape[1]
    psi = FSMRankSmooth(LiftedLoss(PairwiseSquaredHinge(X, y, qid, normalize=True)),
                        lift_similarity(A), lam1)
    pen = NonNegWeightedL1(lam2 / lift_importance(s))
    res = apg(psi, pen, line_search="nemirovski", tol=1e-10,
              stop="gradient_mapping", max_iter=100000)
    assert res.converged
    F2 = res.history["F"][-1]
    _, F2_star = cvxpy_eq2(K, A, s, lam1, lam2)
    assert abs(F2 - F2_star) <= 1e-6 * max(1.0, abs(F2_star))
    # w_hat = w+ - w- solves eq. 1 (and F1(w_hat) <= F2(w))
    w_hat = res.w[:d] - res.w[d:]
    F1 = eq1_objective(K, A, s, lam1, lam2, w_hat)
    w1_star, F1_star = cvxpy_eq1(K, A, s, lam1, lam2)
    assert F1 <= F2 + 1e-12 * abs(F2)
    assert abs(F1 - F1_star) <= 1e-6 * max(1.0, abs(F1_star))
    np.testing.assert_allclose(K @ w_hat, K @ w1_star, atol=1e-3)
    # at the optimum w+ and w- are complementary (lambda2 > 0)
    assert np.all(np.minimum(res.w[:d], res.w[d:]) <= 1e-8)


@pytest.mark.parametrize("importance, similarity", [
    ("pearson", "pearson"), ("uniform", "pearson"), ("pearson", "identity"),
    ("uniform", "identity"),
])
def test_fsmrank_estimator_matches_cvxpy(importance, similarity):
    X, y, qid = small(40)
    lam1, lam2 = 0.5, 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = FSMRank(lambda1=lam1, lambda2=lam2, importance=importance,
                    similarity=similarity, tol=1e-13, max_iter=100000).fit(X, y, qid)
    K = pair_difference_matrix(X, y, qid)
    d = X.shape[1]
    if importance == "uniform":
        np.testing.assert_array_equal(m.importance_, np.ones(d))
    if similarity == "identity":
        np.testing.assert_array_equal(m.similarity_, np.eye(d))
        assert not m.psd_projected_ and m.similarity_min_eig_ == 1.0
    _, F1_star = cvxpy_eq1(K, m.similarity_, m.importance_, lam1, lam2)
    F1 = eq1_objective(K, m.similarity_, m.importance_, lam1, lam2, m.coef_)
    assert m.converged_
    assert abs(F1 - F1_star) <= 1e-6 * max(1.0, abs(F1_star))
    assert abs(m.objective_ - F1_star) <= 1e-6 * max(1.0, abs(F1_star))
    np.testing.assert_allclose(m.coef_, m.coef2_[:d] - m.coef2_[d:])


@pytest.mark.parametrize("seed", range(2))
def test_fsmrank_on_raw_scale_columns_matches_cvxpy(seed):
    """Columns beyond [-1, 1]: the fit runs in u with w = D u (an equivalent
    problem) and still solves eq. 1 on the data as given."""
    from refimpl.estimators.fsmrank import _column_scales

    X, y, qid = small(50 + seed)
    scales = np.random.default_rng(seed).choice([1.0, 0.5, 7.0, 60.0, 300.0],
                                                size=X.shape[1])
    X = X * scales
    assert _column_scales(X) is not None
    lam1, lam2 = 0.5, 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = FSMRank(lambda1=lam1, lambda2=lam2, tol=1e-13,
                    max_iter=200000).fit(X, y, qid)
    K = pair_difference_matrix(X, y, qid)
    _, F1_star = cvxpy_eq1(K, m.similarity_, m.importance_, lam1, lam2)
    F1 = eq1_objective(K, m.similarity_, m.importance_, lam1, lam2, m.coef_)
    assert m.converged_
    assert abs(F1 - F1_star) <= 1e-6 * max(1.0, abs(F1_star))
    assert abs(m.objective_ - F1) <= 1e-9 * max(1.0, abs(F1))


def test_fsmrank_paper_line_search_and_stopping_rule():
    X, y, qid = small(41)
    m = FSMRank(lambda1=1.0, lambda2=0.01, tol=1e-4).fit(X, y, qid)
    F = m.history_["F"]
    assert m.converged_ and abs(F[-1] - F[-2]) <= 1e-4 * abs(F[-2])
    # Nemirovski's scheme: L starts at L0 / 2**10 and never decreases
    L = m.history_["L"]
    assert L[0] == pytest.approx(m.lipschitz_bound_ / 2**10)
    assert np.all(np.diff(L) >= 0) and L[-1] <= 2 * m.lipschitz_bound_
    # F(0) = 1: the mean squared hinge at w = 0
    assert F[0] == 1.0


# --------------------------------------------------------------------------
# Estimator API
# --------------------------------------------------------------------------


def test_fsmrank_sklearn_conventions():
    X, y, qid = small(0)
    m = FSMRank(lambda1=0.5, lambda2=0.05)
    assert clone(m).get_params() == m.get_params()
    with pytest.raises(NotFittedError):
        m.predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert m.fit(X, y, qid) is m
    assert m.predict(X).shape == (len(y),)
    assert set(m.history_) >= {"F", "L", "time", "n_fun"}
    assert m.n_iter_ == len(m.history_["F"]) - 1
    assert m.coef_.shape == (X.shape[1],) and m.coef2_.shape == (2 * X.shape[1],)
    assert 0 <= m.score(X, y, qid) <= 1
    assert isinstance(m.psd_projected_, bool)
    with pytest.raises(DataError, match="features"):
        m.predict(X[:, :-1])


@pytest.mark.parametrize("params, match", [
    ({"lambda1": -1.0}, "lambda1"),
    ({"lambda2": np.nan}, "lambda2"),
    ({"importance": "gain"}, "importance"),
    ({"similarity": "kendall"}, "similarity"),
    ({"psd": "clip"}, "psd"),
    ({"tol": 0.0}, "tol"),
    ({"max_iter": 0}, "max_iter"),
    ({"L0": -1.0}, "L0"),
    ({"backend": "gpu"}, "backend"),
])
def test_fsmrank_bad_parameters_named_at_fit(params, match):
    X, y, qid = small(2)
    with pytest.raises(ParameterError, match=match):
        FSMRank(**params).fit(X, y, qid)


def test_fsmrank_max_iter_warns():
    X, y, qid = small(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.warns(ConvergenceWarning, match=r"relative change.*tol"):
            m = FSMRank(lambda2=0.001, tol=1e-12, max_iter=2).fit(X, y, qid)
    assert not m.converged_ and m.n_iter_ == 2


# --------------------------------------------------------------------------
# GAS and FSMSVM
# --------------------------------------------------------------------------


def test_kendall_similarity_matches_metrics():
    X, _, qid = small(6, n_noise=2)
    X = np.round(X, 1)                         # create ties
    X[qid == qid[0], 1] = 0.3                  # a feature constant on one query
    S = kendall_similarity(X, qid)
    for j in range(X.shape[1]):
        for k in range(j, X.shape[1]):
            assert S[j, k] == pytest.approx(abs(kendall_tau(X[:, j], X[:, k], qid)),
                                            rel=1e-12, abs=1e-14)
    np.testing.assert_array_equal(S, S.T)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.lists(st.integers(1, 14), min_size=1, max_size=4),
       st.integers(1, 5), st.integers(1, 40))
def test_sign_grams_equal_the_float64_pair_signs(seed, sizes, d, chunk):
    """The float32 rank-sign Grams of kendall_similarity are exactly
    query_sign_grams' (ties, -0.0 against 0.0, huge and tiny values, chunks)."""
    from refimpl.features import _sign_grams
    from refimpl.pairs import query_sign_grams

    rng = np.random.default_rng(seed)
    n = sum(sizes)
    X = rng.choice([0.0, -0.0, 1.0, 1.0 + 2**-52, -3.5, 1e300, -1e300, 5e-324, 7.0],
                   size=(n, d))
    noisy = rng.random((n, d)) < 0.3
    X[noisy] = rng.normal(size=int(noisy.sum()))
    qid = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(qid)
    new = list(_sign_grams(X, qid, chunk))
    old = [C for C, _ in query_sign_grams(X, qid, chunk=chunk)]
    assert len(new) == len(old)
    for a, b in zip(new, old):
        assert np.array_equal(a, b)


def test_feature_ndcg_picks_the_better_direction():
    X, y, qid = small(7)
    X = X.copy()
    X[:, 1] = -X[:, 0]
    imp, sign = feature_ndcg(X, y, qid)
    assert imp[0] == pytest.approx(imp[1]) and sign[0] == -sign[1]
    for j in range(X.shape[1]):
        assert imp[j] == pytest.approx(max(ndcg_at_k(y, X[:, j], qid, 10),
                                           ndcg_at_k(y, -X[:, j], qid, 10)))


def test_gas_select_by_hand():
    imp = np.array([0.9, 0.85, 0.5, 0.4])
    sim = np.array([[1, 0.9, 0.0, 0.1],
                    [0.9, 1, 0.1, 0.0],
                    [0.0, 0.1, 1, 0.2],
                    [0.1, 0.0, 0.2, 1]])
    # c = 0: pure importance order
    np.testing.assert_array_equal(gas_select(imp, sim, 3, 0.0), [0, 1, 2])
    # c = 0.5: feature 1 drops to 0.85 - 0.9 < 0.5, so 2 is next; then
    # 3: 0.4 - 0.1 - 0.2 = 0.1 vs 1: -0.05 - 0.1 = -0.15
    np.testing.assert_array_equal(gas_select(imp, sim, 3, 0.5), [0, 2, 3])
    with pytest.raises(DataError, match="n_features"):
        gas_select(imp, sim, 5, 0.1)


def test_gas_ranker_and_fsmsvm_select_exactly_t_features():
    X, y, qid = small(8)
    d = X.shape[1]
    for t in (1, 3, d):
        g = GASRanker(n_features_to_select=t, redundancy_penalty=0.01,
                      C=1.0).fit(X, y, qid)
        assert len(g.selected_) == len(set(g.selected_)) == t
        assert np.all(g.coef_[np.setdiff1d(np.arange(d), g.selected_)] == 0)
        np.testing.assert_array_equal(g.coef_[g.selected_], g.ranksvm_.coef_)
        assert g.predict(X).shape == (len(y),)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            f = FSMSVM(n_features_to_select=t, lambda1=0.5, lambda2=0.05, C=1.0).fit(X, y, qid)
        assert len(f.selected_) == len(set(f.selected_)) == t
        assert np.all(f.coef_[np.setdiff1d(np.arange(d), f.selected_)] == 0)
        top = np.argsort(-np.abs(f.fsmrank_.coef_), kind="stable")[:t]
        np.testing.assert_array_equal(f.selected_, top)
    ranker = RankSVM()
    sel = gas_e(X, y, qid, 3, redundancy_penalty=0.01, ranker=ranker)
    np.testing.assert_array_equal(sel, GASRanker(n_features_to_select=3).fit(X, y, qid).selected_)
    assert ranker.coef_.shape == (3,)


@pytest.mark.parametrize("cls", [GASRanker, FSMSVM])
@pytest.mark.parametrize("t", [0, 11, 2.0, None])
def test_two_stage_bad_n_features(cls, t):
    X, y, qid = small(9)
    with pytest.raises(ParameterError, match="n_features"):
        cls(n_features_to_select=t).fit(X, y, qid)


# --------------------------------------------------------------------------
# stop= : relative change (default), gradient mapping, the paper's fixed T
# --------------------------------------------------------------------------


def _stop_data():
    d = make_synthetic_letor(n_queries=8, docs_per_query=(5, 11), n_informative=3,
                             n_redundant=2, n_noise=5, seed=3)
    return d.X, d.y, d.qid


def test_fsmrank_stop_max_iter_runs_exactly_T():
    X, y, qid = _stop_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)   # no warning: T is the rule
        m = FSMRank(lambda1=0.1, lambda2=1e-3, stop="max_iter", max_iter=37).fit(X, y, qid)
    assert m.n_iter_ == 37 and m.converged_
    assert m.history_["F"].size == 38


def test_fsmrank_stop_gradient_mapping_holds_at_exit_and_default_unchanged():
    X, y, qid = _stop_data()
    tol = 1e-6
    m = FSMRank(lambda1=0.1, lambda2=1e-3, stop="gradient_mapping", tol=tol).fit(X, y, qid)
    gmap = m.history_["gmap"]
    assert m.converged_ and gmap[-1] <= tol * gmap[1]
    default = FSMRank(lambda1=0.1, lambda2=1e-3, tol=1e-4).fit(X, y, qid)
    explicit = FSMRank(lambda1=0.1, lambda2=1e-3, tol=1e-4,
                       stop="relative_change").fit(X, y, qid)
    np.testing.assert_array_equal(default.coef_, explicit.coef_)
    F = default.history_["F"]
    assert abs(F[-1] - F[-2]) <= 1e-4 * abs(F[-2])


def test_fsmrank_stop_rejects_unknown_rule():
    X, y, qid = _stop_data()
    with pytest.raises(ParameterError, match="'stop' parameter of FSMRank.*max_iter"):
        FSMRank(stop="T").fit(X, y, qid)
