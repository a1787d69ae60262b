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
ESTIMATORS = [
    (E.RankSVM(), 1),
    (E.RankSVM(backend="tree"), 1),
    (E.RankSVM(pairs="adjacent"), 1),
    (E.FenchelRank(max_iter=30), 1),
    (E.SparseRankSVM(max_iter=200), 1),
    (E.SparseRankSVM(penalty="log", max_outer=2, max_iter=200), 1),
    (E.FSMRank(max_iter=100), 1),
    (E.FSMSVM(n_features_to_select=2, max_iter=100), 1),
    (E.LifeRank(n_components=2, max_iter=20), 1),
    (E.LinearRegressionRanker(), 1),
    (E.LambdaMART(n_estimators=3, min_child_samples=1), 1),
    (E.LifeRankPipeline(n_components=2, max_iter=20), 2),
    # GAS's feature measures read the fit's problem (feature_ndcg and
    # kendall_similarity accept it), so they group nothing again
    (E.GASRanker(n_features_to_select=2), 1),
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
