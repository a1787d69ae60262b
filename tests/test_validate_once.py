"""Ranking data are validated and grouped once per fit (issue 15, "validate once").

Every estimator's ``fit`` builds one :class:`~refimpl._validation.RankingProblem`
at its boundary and passes it down; the losses, :mod:`refimpl.pairs`, the
tree backend, ``with_backend`` and the inner stages of the two-stage
estimators accept it and neither check the arrays again nor re-group
``qid``.  The counts are taken by wrapping ``group_queries``, ``check_X``
and ``check_labels`` wherever a ``refimpl`` module imported them.
"""

import importlib
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refimpl.estimators as E
from refimpl import _validation
from refimpl._validation import RankingProblem, check_ranking_data, ranking_problem
from refimpl.exceptions import DataError
from refimpl.losses import PairwiseLogistic, PairwiseSquaredHinge
from refimpl.pairs import n_pairs, pair_counts, pair_difference_matrix, preference_pairs

COUNTED = ("group_queries", "check_X", "check_labels")


@pytest.fixture
def calls(monkeypatch):
    """Counts of the calls of each function of ``COUNTED``, from any refimpl module."""
    # loaded, so that their bindings are wrapped too
    for name in ("refimpl.features", "refimpl.metrics"):
        importlib.import_module(name)

    counts = dict.fromkeys(COUNTED, 0)

    def counting(name, f):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return f(*args, **kwargs)
        return wrapper

    for name in COUNTED:
        original = getattr(_validation, name)
        wrapped = counting(name, original)
        for module in list(sys.modules.values()):
            if (getattr(module, "__name__", "").startswith("refimpl")
                    and getattr(module, name, None) is original):
                monkeypatch.setattr(module, name, wrapped)
    return counts


def data(seed=0, n=90, d=6, n_queries=6):
    """Queries listed out of order (the grouping is a real permutation)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    qid = rng.integers(0, n_queries, size=n)
    y = rng.integers(0, 3, size=n)
    return X, y, qid


#: Every public estimator, small settings, and the number of check_X calls of
#: one fit: LifeRankPipeline checks its second stage's features X T (new
#: data) once as well.
#: (GAS's feature measures read the fit's problem: feature_ndcg and
#: kendall_similarity accept it, so they group nothing again.)
FAST = {
    "FenchelRank": {"max_iter": 30},
    "SparseRankSVM": {"max_iter": 200},
    "FSMRank": {"max_iter": 100},
    "FSMSVM": {"n_features_to_select": 2, "max_iter": 100},
    "LifeRank": {"n_components": 2, "max_iter": 20},
    "LambdaMART": {"n_estimators": 3, "min_child_samples": 1},
    "LifeRankPipeline": {"n_components": 2, "max_iter": 20},
    "GASRanker": {"n_features_to_select": 2},
}
#: check_X calls beyond the one of fit (LifeRankPipeline's second stage).
EXTRA_CHECKS = {"LifeRankPipeline": 1}
ESTIMATORS = [(cls(**FAST.get(name, {})), 1 + EXTRA_CHECKS.get(name, 0))
              for name, cls in E.all_estimators()] + [
    (E.RankSVM(backend="tree"), 1),
    (E.RankSVM(pairs="adjacent"), 1),
    (E.SparseRankSVM(penalty="log", max_outer=2, max_iter=200), 1),
]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("estimator, n_check_X", ESTIMATORS,
                         ids=lambda v: type(v).__name__ if hasattr(v, "fit") else "")
def test_one_fit_validates_and_groups_once(calls, estimator, n_check_X, sparse):
    X, y, qid = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(sp.csr_matrix(X) if sparse else X, y, qid)
    assert calls == {"group_queries": 1, "check_X": n_check_X, "check_labels": 1}


def test_ranking_problem_holds_the_checked_data():
    X, y, qid = data(1)
    p = ranking_problem(X.astype(np.float32), y, list(qid))
    assert p.X.dtype == np.float64 and p.X.flags.c_contiguous
    assert p.y.dtype == np.float64 and np.array_equal(p.y, y)
    assert (p.n_samples, p.n_features) == X.shape
    assert p.n_queries == len(np.unique(qid))
    assert np.array_equal(p.qids, np.unique(qid))
    order = np.argsort(qid, kind="stable")
    assert np.array_equal(p.order, order) and p.indptr[-1] == len(y)
    # immutable, and the tuple form agrees
    with pytest.raises(AttributeError):
        p.y = y
    Xc, yc, groups = check_ranking_data(X.astype(np.float32), y, qid)
    assert np.array_equal(Xc, p.X) and np.array_equal(yc, p.y)
    assert np.array_equal(groups.order, p.order)


@pytest.mark.parametrize("y_bad, qid_bad, match", [
    (np.zeros(5), None, "y has 5 entries but X has 90 rows"),
    (None, np.zeros(5), "qid has 5 entries but there are 90 documents"),
])
def test_ranking_problem_errors_are_the_checks_errors(y_bad, qid_bad, match):
    X, y, qid = data(2)
    with pytest.raises(DataError, match=match):
        ranking_problem(X, y if y_bad is None else y_bad,
                        qid if qid_bad is None else qid_bad)


def test_a_problem_is_passed_alone():
    X, y, qid = data(3)
    p = ranking_problem(X, y, qid)
    assert ranking_problem(p) is p
    for call in (lambda: ranking_problem(p, y),
                 lambda: pair_counts(p, qid),
                 lambda: PairwiseSquaredHinge(p, y, qid)):
        with pytest.raises(DataError, match="pass it alone"):
            call()


def test_pairs_accept_a_problem_without_regrouping(calls):
    X, y, qid = data(4)
    p = ranking_problem(X, y, qid)
    calls.update(dict.fromkeys(COUNTED, 0))
    for which in ("all", "adjacent"):
        assert np.array_equal(pair_counts(p, which=which),
                              pair_counts(y, qid, which=which))
        assert n_pairs(p, which=which) == n_pairs(y, qid, which=which)
        a = preference_pairs(p, which=which)
        b = preference_pairs(y, qid, which=which)
        assert np.array_equal(a.i, b.i) and np.array_equal(a.j, b.j)
        assert np.array_equal(pair_difference_matrix(p, which=which),
                              pair_difference_matrix(X, y, qid, which=which))
    # the (y, qid) calls group: 4 each per value of which; the problem's none
    assert calls["group_queries"] == 2 * 4


@pytest.mark.parametrize("backend", ["pairs", "numpy", "tree"])
def test_losses_on_a_problem_equal_the_losses_on_arrays(calls, backend):
    X, y, qid = data(5)
    w = np.random.default_rng(0).normal(size=X.shape[1])
    p = ranking_problem(X, y, qid)
    calls.update(dict.fromkeys(COUNTED, 0))
    a = PairwiseSquaredHinge(p, backend=backend, normalize=True)
    other = a.with_backend("pairs" if backend == "tree" else "tree")
    log = PairwiseLogistic(p)
    assert calls == dict.fromkeys(COUNTED, 0)
    assert a.problem is p and other.problem is p and log.problem is p
    b = PairwiseSquaredHinge(X, y, qid, backend=backend, normalize=True)
    assert a.fun(w) == b.fun(w) and np.array_equal(a.grad(w), b.grad(w))
    assert np.array_equal(a.hess_vec(w), b.hess_vec(w))
    assert abs(other.fun(w) - a.fun(w)) <= 1e-12 * max(1.0, a.fun(w))
    c = PairwiseLogistic(X, y, qid)
    assert log.fun(w) == c.fun(w) and np.array_equal(log.grad(w), c.grad(w))


def test_with_columns_keeps_the_grouping():
    X, y, qid = data(6)
    for M in (X, sp.csr_matrix(X)):
        p = ranking_problem(M, y, qid)
        q = p.with_columns([4, 1])
        assert isinstance(q, RankingProblem) and q.groups is p.groups and q.y is p.y
        dense = q.X.toarray() if sp.issparse(q.X) else q.X
        assert np.array_equal(dense, X[:, [4, 1]])
        if sp.issparse(q.X):
            assert q.X.has_canonical_format
        else:
            assert q.X.flags.c_contiguous


def test_scaled_columns_divides_each_feature_by_its_magnitude():
    X, y, qid = data(7)
    X[:, 2] = 0.0                                # a column of zeros keeps s = 1
    X[:, 3] *= -1e5                              # a raw, negative, large one
    c = np.array([2.0 ** k for k in range(X.shape[1])])
    for M in (X, sp.csr_matrix(X)):
        p = ranking_problem(M, y, qid)
        q, s = p.scaled_columns()
        assert q.groups is p.groups and q.y is p.y
        assert s[2] == 1.0 and s[3] == np.abs(X[:, 3]).max()
        dense = q.X.toarray() if sp.issparse(q.X) else q.X
        assert np.array_equal(dense, X / s)
        assert np.abs(dense).max(axis=0)[[0, 1, 3]].tolist() == [1.0] * 3
        # a power-of-2 rescaling of the columns gives the same problem
        r, t = ranking_problem(M @ sp.diags(c) if sp.issparse(M) else M * c,
                               y, qid).scaled_columns()
        again = r.X.toarray() if sp.issparse(r.X) else r.X
        live = [0, 1, 3, 4, 5]
        assert np.array_equal(again, dense) and t[2] == 1.0
        assert np.array_equal(t[live], (s * c)[live])
    unit = X / np.where(np.abs(X).max(axis=0) > 0, np.abs(X).max(axis=0), 1.0)
    p = ranking_problem(unit, y, qid)
    assert p.scaled_columns()[0] is p            # LETOR's [0, 1] columns


@pytest.mark.parametrize("seed", range(4))
def test_feature_measures_on_a_problem_equal_them_on_arrays(calls, seed):
    """GAS's importance and similarity: same values, no grouping on a problem."""
    from refimpl.features import feature_ndcg, kendall_similarity

    X, y, qid = data(seed)
    X = np.round(X, 1)                       # ties, as in LETOR
    for M in (X, sp.csr_matrix(X)):
        p = ranking_problem(M, y, qid)
        calls.update(dict.fromkeys(COUNTED, 0))
        imp, sign = feature_ndcg(p, k=5)
        sim = kendall_similarity(p)
        assert calls == dict.fromkeys(COUNTED, 0)
        imp0, sign0 = feature_ndcg(M, y, qid, k=5)
        assert np.array_equal(imp, imp0) and np.array_equal(sign, sign0)
        assert np.array_equal(sim, kendall_similarity(M, qid))
    with pytest.raises(DataError, match="pass it alone"):
        feature_ndcg(p, y)


# --------------------------------------------------------------------------
# pair_support: the documents and features a pairwise loss sees
# --------------------------------------------------------------------------

@st.composite
def support_data(draw):
    """Queries with one label or several, interleaved (or qid None), some
    all-zero features, zeros only on the pair-free queries' rows, dense or CSR."""
    n_q = draw(st.integers(1, 6))
    y, qid = [], []
    for q in range(n_q):
        m = draw(st.integers(1, 7))
        if draw(st.booleans()):
            y += [float(draw(st.integers(0, 2)))] * m          # no pair
        else:
            y += [float(v) for v in draw(st.lists(st.integers(0, 3),
                                                  min_size=m, max_size=m))]
        qid += [q * 7 - 3] * m
    n = len(y)
    perm = np.array(draw(st.permutations(range(n))))
    y = np.array(y)[perm]
    qid = np.array(qid)[perm]
    if draw(st.integers(0, 5)) == 0:
        qid = None
    d = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d))
    zero = draw(st.lists(st.integers(0, d - 1), max_size=d))
    X[:, zero] = 0.0
    return X, y, qid, draw(st.booleans())


def _no_pair(y, qid):
    if qid is None:
        return len(np.unique(y)) < 2
    return all(len(np.unique(y[qid == q])) < 2 for q in np.unique(qid))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(support_data(), st.integers(0, 2**32 - 1))
def test_pair_support_drops_only_what_no_pair_sees(inst, seed):
    X, y, qid, sparse = inst
    p = ranking_problem(sp.csr_matrix(X) if sparse else X, y, qid)
    q, cols = p.pair_support(min_share=0.0)
    if _no_pair(y, qid):
        assert q is p and cols is None
        return
    keep = np.ones(len(y), dtype=bool)
    if qid is not None:
        for v in np.unique(qid):
            keep[qid == v] = len(np.unique(y[qid == v])) > 1
    kept_cols = (np.arange(X.shape[1]) if sparse else
                 np.flatnonzero(np.any(X[keep] != 0, axis=0)))
    if len(kept_cols) == 0:          # (a loss needs a column: all are kept)
        kept_cols = np.arange(X.shape[1])
    assert (cols is None) == (len(kept_cols) == X.shape[1])
    if cols is not None:
        np.testing.assert_array_equal(cols, kept_cols)
    if keep.all() and cols is None:
        assert q is p
        return
    dense = q.X.toarray() if sp.issparse(q.X) else q.X
    np.testing.assert_array_equal(dense, X[keep][:, kept_cols])
    np.testing.assert_array_equal(q.y, y[keep])
    # the grouping is the one group_queries gives the subset
    ref = _validation.group_queries(None if qid is None else qid[keep],
                                    int(keep.sum()))
    for field in ("order", "indptr", "qids"):
        np.testing.assert_array_equal(getattr(q.groups, field),
                                      getattr(ref, field))
    # the same loss, gradient (zero on the dropped features) and products
    w = np.random.default_rng(seed).normal(size=X.shape[1])
    s = np.random.default_rng(seed + 1).normal(size=X.shape[1])
    for backend in ("pairs", "tree"):
        full = PairwiseSquaredHinge(p, backend=backend)
        part = PairwiseSquaredHinge(q, backend=backend)
        v_full, v_part = full.fun(w), part.fun(w[kept_cols])
        assert abs(v_full - v_part) <= 1e-12 * (1.0 + abs(v_full))
        g = full.grad(w)
        np.testing.assert_allclose(g[kept_cols], part.grad(w[kept_cols]),
                                   rtol=1e-10, atol=1e-12 * (1 + abs(g).max()))
        assert not np.any(np.delete(g, kept_cols))
        h = full.hess_vec(s)
        np.testing.assert_allclose(h[kept_cols], part.hess_vec(s[kept_cols]),
                                   rtol=1e-10, atol=1e-12 * (1 + abs(h).max()))


@pytest.mark.parametrize("seed", range(6))
def test_ranksvm_on_the_pair_support_reaches_the_same_optimum(seed):
    """RankSVM solves on the support; its coefficients are those of the
    whole problem (tight tolerance), zero on the dropped features."""
    from refimpl.losses import L2Regularized
    from refimpl.solvers import tron

    X, y, qid = data(seed, n=120, d=7, n_queries=8)
    y[qid == 0] = 1                      # a query without a pair
    X[:, 2] = 0.0                        # a feature that is 0 everywhere
    X[qid == 0, 5] = 3.0                 # ... and one only on that query
    X[qid != 0, 5] = 0.0
    est = E.RankSVM(C=0.5, tol=1e-10, max_iter=200).fit(X, y, qid)
    whole = tron(L2Regularized(PairwiseSquaredHinge(X, y, qid), 0.5),
                 tol=1e-10, max_iter=200)
    np.testing.assert_allclose(est.coef_, whole.w, rtol=1e-7, atol=1e-9)
    assert est.coef_[2] == 0.0 and est.coef_[5] == 0.0
    assert abs(est.objective_ - whole.history["f"][-1]) <= \
        1e-12 * abs(whole.history["f"][-1])


def test_pair_support_leaves_a_problem_that_would_shrink_little():
    """Below ``min_share`` of dropped entries the problem is kept as it is
    (no copy of X); at or above it, restricted."""
    X, y, qid = data(3, n=100, d=10, n_queries=10)
    y[qid == 0] = 2.0                    # one pair-free query
    share = np.mean(qid == 0)
    p = ranking_problem(X, y, qid)
    assert p.pair_support(min_share=share + 1e-9) == (p, None)
    q, cols = p.pair_support(min_share=share - 1e-9)
    assert q.n_samples == int(np.sum(qid != 0)) and cols is None


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 17, 59])
def test_check_X_finds_every_non_finite_entry(bad, where, sparse):
    """A NaN or infinity anywhere is refused (the sum that proves finiteness
    cheaply never hides one); large finite entries whose sum overflows are
    accepted."""
    X = np.random.default_rng(where).normal(size=(12, 5))
    X.flat[where] = bad
    with pytest.raises(DataError, match="NaN or infinite"):
        _validation.check_X(sp.csr_matrix(X) if sparse else X)
    big = np.full((12, 5), np.finfo(np.float64).max)
    big[3, 2] = -big[3, 2]
    out = _validation.check_X(sp.csr_matrix(big) if sparse else big)
    dense = out.toarray() if sp.issparse(out) else out
    np.testing.assert_array_equal(dense, big)


# -- the runner: one validation and grouping per split ----------------------

def _runner_methods():
    """Every registered method."""
    from refimpl.experiments import METHODS

    return list(METHODS)


@pytest.mark.parametrize("method", _runner_methods())
def test_a_runner_task_groups_each_split_once(calls, method):
    """Two tasks of a fold: train, validation and test are grouped once each.

    The runner validates a fold's splits into ``RankingProblem``s once per
    process, fits on the training problem (the estimator uses its grouping)
    and predicts and evaluates each of the other two once.
    """
    from refimpl.experiments import ExperimentConfig, METHODS, folds, run

    folds.load_fold_version.cache_clear()
    folds.problems_version.cache_clear()
    grouped = []
    counted = _validation.group_queries

    def recording(qid, n=None):
        grouped.append(n if n is not None else len(qid))
        return counted(qid, n)

    for module in list(sys.modules.values()):
        if (getattr(module, "__name__", "").startswith("refimpl")
                and getattr(module, "group_queries", None) is counted):
            setattr(module, "group_queries", recording)
    try:
        # the first value of each grid parameter, and a second task when the
        # grid has a second value
        grid = {k: list(v)[:2] for k, v in (METHODS[method].reduced_grid
                                           or METHODS[method].grid).items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run(ExperimentConfig(
                dataset="synthetic:20", methods=(method,), folds=(1,),
                grids={method: grid} if grid else {}, backend="sequential",
                reduced=True))
    finally:
        for module in list(sys.modules.values()):
            if getattr(module, "group_queries", None) is recording:
                setattr(module, "group_queries", counted)
    assert result.n_failed == 0, [r["error"] for r in result.tasks]
    fold = folds.synthetic_fold(20, 0, 1)
    sizes = sorted(len(split[1]) for split in (fold.train, fold.vali, fold.test))
    assert sorted(grouped) == sizes
    assert calls["group_queries"] == 3


def test_a_fit_on_a_problem_groups_nothing_and_equals_the_fit_on_arrays(calls):
    X, y, qid = data(seed=3)
    problem = ranking_problem(X, y, qid)
    on_arrays = E.RankSVM(C=0.1).fit(X, y, qid)
    calls.update(dict.fromkeys(COUNTED, 0))
    on_problem = E.RankSVM(C=0.1).fit(problem, problem.y, problem.qid)
    assert calls["group_queries"] == 0 and calls["check_labels"] == 0
    np.testing.assert_array_equal(on_problem.coef_, on_arrays.coef_)
    assert on_problem.n_features_in_ == X.shape[1]
    assert on_problem.n_queries_in_ == on_arrays.n_queries_in_
    with pytest.raises(DataError, match="already holds y and qid"):
        E.RankSVM().fit(problem, y.copy(), qid)
