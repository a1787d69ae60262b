"""Edges of the estimators (issue 14, items 5 and 7).

Bad input is refused at ``fit`` with an error naming the parameter (empty
``X``, no feature, ``y`` shorter than ``X``), a refit keeps nothing of the
previous fit, ``predict`` refuses a data frame whose columns were permuted,
the defaults give a model with non-zero weights on the book's data, and a
model with no non-zero weight is reported by ``EmptyModelWarning`` with the
threshold at which every weight vanishes (checked against a brute-force
gradient and by fitting on both sides of it).
"""

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from refimpl import metrics
from refimpl.data import (
    load_letor_fold,
    make_synthetic_letor,
    query_level_normalize,
    train_test_split_queries,
)
from refimpl.estimators import (
    all_estimators,
    FSMSVM,
    FenchelRank,
    FSMRank,
    GASRanker,
    RankSVM,
    SparseRankSVM,
    gas_e,
)
from refimpl.exceptions import DataError, EmptyModelWarning, ParameterError
from refimpl.estimators import LifeRank
from refimpl.estimators._base import COUNT, ITERATIONS
from refimpl.features import pearson_importance
from refimpl.nonconvex import LogPenalty
from refimpl.pairs import pair_difference_matrix
from refimpl.penalties import L1

#: Settings for these small problems; a public estimator not listed is
#: built with its defaults (the estimators come from all_estimators()).
SETTINGS = {
    "GASRanker": {"n_features_to_select": 3},
    "FSMSVM": {"n_features_to_select": 3},
    # lam = 0.05 converges within max_iter on these small problems
    "LifeRank": {"n_components": 3, "lam": 0.05, "lr": 0.5, "constraint": "stiefel"},
    "LifeRankPipeline": {"n_components": 3, "lam": 0.05},
    "LambdaMART": {"n_estimators": 5, "min_child_samples": 1},
}
#: Every public estimator, and variants worth testing on their own.
ESTIMATORS = {
    **{name: functools.partial(cls, **SETTINGS.get(name, {}))
       for name, cls in all_estimators()},
    "SparseRankSVM-log": lambda: SparseRankSVM(penalty="log"),
}
NAMES = list(ESTIMATORS)


def small(seed=0, n_queries=8):
    d = make_synthetic_letor(n_queries=n_queries, docs_per_query=(4, 9), n_noise=4,
                             n_levels=3, seed=seed)
    return d.X, d.y, d.qid


def quiet_fit(est, X, y, qid):
    """Fit, ignoring the PSD-projection UserWarning of FSMRank on small data."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*positive semidefinite")
        return est.fit(X, y, qid)


def empty_warnings(est, X, y, qid):
    """Fit ``est`` and return the EmptyModelWarning instances it emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, qid)
    return [w.message for w in caught if issubclass(w.category, EmptyModelWarning)]


# --------------------------------------------------------------------------
# Item 5: bad input is refused at the boundary with a clear error
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("rows", "cols", "found"), [
    (slice(0, 0), slice(None), r"0 sample\(s\) \(shape=\(0, 14\)\)"),
    (slice(None), slice(0, 0), r"0 feature\(s\) \(shape=\(45, 0\)\)"),
], ids=["no-samples", "no-features"])
def test_empty_X_is_refused_with_scikit_learns_message(name, rows, cols, found):
    X, y, qid = small()
    est = ESTIMATORS[name]()
    with pytest.raises(DataError, match=(
            rf"Found array with {found} while a minimum "
            rf"of 1 is required by {type(est).__name__}")):
        est.fit(X[rows, cols], y[rows], qid[rows])


@pytest.mark.parametrize("name", NAMES)
def test_short_y_or_qid_is_named_with_both_lengths(name):
    X, y, qid = small()
    with pytest.raises(DataError, match=r"^y has 44 entries but X has 45 rows$"):
        ESTIMATORS[name]().fit(X, y[:-1], qid)
    with pytest.raises(DataError, match=r"^qid has 44 entries but there are 45 "):
        ESTIMATORS[name]().fit(X, y, qid[:-1])


def test_gas_e_names_a_short_y():
    X, y, qid = small()
    with pytest.raises(DataError, match=r"^y has 44 entries but X has 45 rows$"):
        gas_e(X, y[:-1], qid, 3)


def test_query_level_normalize_refuses_empty_X():
    X, _, qid = small()
    with pytest.raises(DataError, match="no documents"):
        query_level_normalize(X[:0], qid[:0])


# --------------------------------------------------------------------------
# Item 5: a refit keeps nothing of the previous fit
# --------------------------------------------------------------------------


def test_penalty_does_not_survive_a_refit_from_log_to_l1():
    X, y, qid = small()
    m = SparseRankSVM(penalty="log").fit(X, y, qid)
    assert isinstance(m.penalty_, LogPenalty)
    m.set_params(penalty="l1").fit(X, y, qid)
    fresh = SparseRankSVM(penalty="l1").fit(X, y, qid)
    assert isinstance(m.penalty_, L1)
    assert set(vars(m)) == set(vars(fresh))
    assert len(m.inner_history_) == m.n_outer_ == 1
    np.testing.assert_array_equal(m.coef_, fresh.coef_)


@pytest.mark.parametrize("name", NAMES)
def test_refit_keeps_no_attribute_of_the_previous_fit(name):
    X, y, qid = small()
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    m = quiet_fit(ESTIMATORS[name](), df, y, qid)
    assert list(m.feature_names_in_) == list(df.columns)
    quiet_fit(m, X, y, qid)
    fresh = quiet_fit(ESTIMATORS[name](), X, y, qid)
    assert set(vars(m)) == set(vars(fresh))
    assert not hasattr(m, "feature_names_in_")
    # a refit that fails leaves an unfitted estimator, not the previous model
    with pytest.raises(DataError):
        m.fit(X, y[:-1], qid)
    assert not hasattr(m, "coef_")
    with pytest.raises(NotFittedError):
        m.predict(X)


# --------------------------------------------------------------------------
# Item 5: predict checks the columns by name
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_predict_refuses_a_data_frame_with_permuted_columns(name):
    X, y, qid = small()
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    m = quiet_fit(ESTIMATORS[name](), df, y, qid)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        np.testing.assert_array_equal(m.predict(df), m.predict(X))
    permuted = df[df.columns[::-1]]
    with pytest.raises(DataError, match="feature names should match"):
        m.predict(permuted)
    if hasattr(m, "transform"):
        with pytest.raises(DataError, match="feature names should match"):
            m.transform(permuted)
    with pytest.raises(DataError, match="seen at fit time, yet now missing:\n- f13"):
        m.predict(df[df.columns[:-1]])


# --------------------------------------------------------------------------
# Item 7: the defaults give a useful model
# --------------------------------------------------------------------------


def test_default_fsmrank_has_non_zero_weights_on_synthetic_data():
    d = make_synthetic_letor()
    tr, te = train_test_split_queries(d.X, d.y, d.qid, test_size=0.25, seed=0)
    for est in (FSMRank(), FSMSVM(n_features_to_select=5)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", EmptyModelWarning)
            m = quiet_fit(est, *tr)
        fsm = m.fsmrank_ if isinstance(m, FSMSVM) else m
        assert np.count_nonzero(fsm.coef_) >= 5
        # better than the constant ranker (all scores tied)
        assert (metrics.mean_ndcg(te.y, m.predict(te.X), te.qid)
                > metrics.mean_ndcg(te.y, np.zeros(len(te.y)), te.qid) + 0.3)


# above the constant ranker (all scores tied) by at least: OHSUMED's queries
# hold many relevant documents (45.6 of 152 on average), so tied scores
# already reach a mean NDCG of 0.45 on its Fold1 test set
@pytest.mark.parametrize(("dataset", "margin"), [("MQ2008", 0.1),
                                                 ("OHSUMED", 0.03)])
def test_default_fsmrank_has_non_zero_weights_on_real_data(dataset, margin,
                                                           letor_root):
    if not (letor_root / dataset).is_dir():
        pytest.skip(f"{dataset} not found under {letor_root}")
    fold = load_letor_fold(dataset, 1, root=letor_root)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyModelWarning)
        m = quiet_fit(FSMRank(), *fold.train)
    assert np.count_nonzero(m.coef_) >= 5
    te = fold.test
    assert (metrics.mean_ndcg(te.y, m.predict(te.X), te.qid)
            > metrics.mean_ndcg(te.y, np.zeros(len(te.y)), te.qid) + margin)


@pytest.mark.parametrize("name", NAMES)
def test_a_useful_fit_does_not_warn(name):
    X, y, qid = small()
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyModelWarning)
        m = quiet_fit(ESTIMATORS[name](), X, y, qid)
    # a linear model's weights, or the features a tree model splits on
    assert np.any(getattr(m, "coef_", getattr(m, "feature_importances_", None)))


# --------------------------------------------------------------------------
# Item 7: an empty model is reported, with the threshold
# --------------------------------------------------------------------------


def brute_gradient_at_zero(X, y, qid):
    """``grad_w sum_P max(0, 1 - w^T k)^2`` at 0: every pair active, ``-2 K^T 1``."""
    K = pair_difference_matrix(X, y, qid)
    return -2.0 * np.asarray(K.sum(axis=0)).ravel(), K.shape[0]


TIGHT = {"tol": 1e-10, "max_iter": 100_000}


@pytest.mark.parametrize("penalty", ["l1", "weighted_l1", "mcp", "scad"])
def test_sparse_ranksvm_threshold_in_C(penalty):
    X, y, qid = small(3)
    g, _ = brute_gradient_at_zero(X, y, qid)
    beta = np.linspace(0.5, 2.0, X.shape[1])
    kw = dict(penalty=penalty, **TIGHT)
    if penalty == "weighted_l1":
        kw["weights"] = beta
        expected = np.min(beta / np.abs(g))
    else:
        expected = 1.0 / np.abs(g).max()
    (w,) = empty_warnings(SparseRankSVM(C=1e-6, **kw), X, y, qid)
    assert w.parameter == "C" and w.value == 1e-6
    assert w.threshold == pytest.approx(expected, rel=1e-12)
    assert f"penalty={penalty!r}" in str(w) and "C=1e-06" in str(w)
    assert f"{w.threshold:.6g}" in str(w)
    # just below the threshold in C: every weight is zero (and it says so)
    below = SparseRankSVM(C=w.threshold * (1 - 1e-3), **kw)
    assert len(empty_warnings(below, X, y, qid)) == 1
    assert not np.any(below.coef_)
    # just above: a model, and no warning
    above = SparseRankSVM(C=w.threshold * (1 + 1e-3), **kw)
    assert empty_warnings(above, X, y, qid) == []
    assert np.count_nonzero(above.coef_) >= 1


def test_sparse_ranksvm_log_threshold_is_the_first_passs():
    X, y, qid = small(3)
    g, _ = brute_gradient_at_zero(X, y, qid)
    (w,) = empty_warnings(SparseRankSVM(C=1e-6, penalty="log", **TIGHT), X, y, qid)
    assert w.threshold == pytest.approx(1.0 / np.abs(g).max(), rel=1e-12)
    # the log penalty weights a zero coefficient by g'(0) = 1/eps = 10, so w = 0
    # stays a fixed point of the reweighting up to 10 times the threshold
    assert f"{10 * w.threshold:.6g}" in str(w)
    m = SparseRankSVM(C=w.threshold * (1 - 1e-3), penalty="log", **TIGHT)
    assert len(empty_warnings(m, X, y, qid)) == 1 and not np.any(m.coef_)
    m = SparseRankSVM(C=20 * w.threshold, penalty="log", **TIGHT)
    assert empty_warnings(m, X, y, qid) == [] and np.any(m.coef_)


@pytest.mark.parametrize("lambda1", [0.0, 1.0])
def test_fsmrank_threshold_in_lambda2(lambda1):
    X, y, qid = small(3)
    g, p = brute_gradient_at_zero(X, y, qid)
    expected = np.max(pearson_importance(X, y) * np.abs(g) / p)
    kw = {"lambda1": lambda1, "tol": 1e-12, "max_iter": 100_000}
    (w,) = empty_warnings(FSMRank(lambda2=1.0, **kw), X, y, qid)
    assert w.parameter == "lambda2" and w.value == 1.0
    assert w.threshold == pytest.approx(expected, rel=1e-12)
    assert "lambda2=1.0" in str(w) and f"{w.threshold:.6g}" in str(w)
    above = FSMRank(lambda2=w.threshold * (1 + 1e-3), **kw)
    assert len(empty_warnings(above, X, y, qid)) == 1
    assert not np.any(above.coef_)
    below = FSMRank(lambda2=w.threshold * (1 - 1e-3), **kw)
    assert empty_warnings(below, X, y, qid) == []
    assert np.count_nonzero(below.coef_) >= 1


def test_issue_fsmrank_lambda2_one_warns_instead_of_a_silent_constant_ranker():
    d = make_synthetic_letor()
    (w,) = empty_warnings(FSMRank(lambda2=1.0), d.X, d.y, d.qid)
    assert w.threshold < 1.0
    assert "choose lambda2 below it" in str(w)


def test_no_threshold_when_the_gradient_at_zero_vanishes():
    # two mirrored queries: the pair differences cancel, grad L(0) = 0, and
    # w = 0 is the solution whatever the regularisation
    X = np.array([[1.0, 0.5], [0.0, 0.5], [0.0, 0.5], [1.0, 0.5]])
    y = np.array([1, 0, 1, 0])
    qid = np.array([1, 1, 2, 2])
    (w,) = empty_warnings(FenchelRank(r=4.0), X, y, qid)
    assert w.parameter == "r" and w.threshold is None
    (w,) = empty_warnings(SparseRankSVM(C=100.0), X, y, qid)
    assert w.threshold == np.inf and "no C gives a non-zero weight" in str(w)
    (w,) = empty_warnings(FSMRank(lambda2=1e-6), X, y, qid)
    assert w.threshold == 0 and "no lambda2 gives a non-zero weight" in str(w)


def test_the_warning_points_at_the_callers_line():
    X, y, qid = small(3)
    for est in (SparseRankSVM(C=1e-6), SparseRankSVM(C=1e-6, penalty="mcp"),
                FSMRank(lambda2=10.0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, y, qid)
        (rec,) = [w for w in caught if issubclass(w.category, EmptyModelWarning)]
        assert rec.filename == __file__


# --------------------------------------------------------------------------
# Hyper-parameters: one declarative validation, a ParameterError (not DataError)
# --------------------------------------------------------------------------

def count_parameter(est):
    """A parameter of ``est`` declared an integer >= 1, to be given a bool."""
    return next(p for p, accepted in est._parameter_constraints.items()
                if COUNT in accepted)


@pytest.mark.parametrize("name", [n for n in NAMES if any(
    COUNT in accepted for accepted in ESTIMATORS[n]()._parameter_constraints.values())])
@pytest.mark.parametrize("value", [True, np.True_, 2.0, 0, "3"])
def test_integer_parameter_refuses_bools_floats_and_strings(name, value):
    X, y, qid = small()
    est = ESTIMATORS[name]()
    param = count_parameter(est)
    est.set_params(**{param: value})
    with pytest.raises(ParameterError,
                       match=rf"^The '{param}' parameter of \w+ must be an int in the "
                             r"range \[1, inf\)\. Got .* instead\.$") as info:
        est.fit(X, y, qid)
    assert not isinstance(info.value, DataError)


@pytest.mark.parametrize("name", [n for n in NAMES if any(
    ITERATIONS in accepted for accepted in ESTIMATORS[n]()._parameter_constraints.values())])
@pytest.mark.parametrize("value", [True, 2.0, 0, "3", 2**63])
def test_iteration_budget_refuses_bools_floats_and_beyond_int64(name, value):
    """max_iter (and max_outer) accept any int64 count: 2**63 is refused by
    the constraint, not by numpy or numba inside the solver."""
    X, y, qid = small()
    est = ESTIMATORS[name]()
    param = next(p for p, accepted in est._parameter_constraints.items()
                 if ITERATIONS in accepted)
    est.set_params(**{param: value})
    with pytest.raises(ParameterError,
                       match=rf"^The '{param}' parameter of \w+ must be an int in the "
                             r"range \[1, 9223372036854775807\]\. Got .* instead\.$"):
        est.fit(X, y, qid)


@pytest.mark.parametrize("name", NAMES)
def test_every_init_parameter_is_declared(name):
    est = ESTIMATORS[name]()
    assert set(est._parameter_constraints) == set(est.get_params(deep=False))


@pytest.mark.parametrize("value", [True, -1.0, 0.0, np.nan, np.inf, "1"])
def test_positive_real_refuses_bools_and_out_of_range(value):
    X, y, qid = small()
    with pytest.raises(ParameterError, match=r"^The 'C' parameter of RankSVM must be a "
                                             r"float in the range \(0\.0, inf\)\. Got "):
        RankSVM(C=value).fit(X, y, qid)


def test_parameter_bound_by_the_data_names_the_bound():
    X, y, qid = small()
    with pytest.raises(ParameterError, match=r"'n_components' parameter of LifeRank must be "
                                             rf"an int in the range \[1, {X.shape[1]}\]"):
        LifeRank(n_components=X.shape[1] + 1).fit(X, y, qid)
    with pytest.raises(ParameterError, match=rf"in the range \[1, {X.shape[1]}\]"):
        GASRanker(n_features_to_select=X.shape[1] + 1).fit(X, y, qid)


# --------------------------------------------------------------------------
# scikit-learn's names only: 0.1.0 keeps no alias of a former name
# --------------------------------------------------------------------------

FORMER = [
    (FenchelRank, "linesearch", "line_search"),
    (GASRanker, "n_features", "n_features_to_select"),
    (FSMSVM, "n_features", "n_features_to_select"),
    (LifeRank, "seed", "random_state"),
]


@pytest.mark.parametrize("cls, old, new", FORMER,
                         ids=[f"{c.__name__}-{o}" for c, o, _ in FORMER])
def test_former_parameter_names_are_not_accepted(cls, old, new):
    assert new in cls().get_params() and old not in cls().get_params()
    with pytest.raises(TypeError, match=old):
        cls(**{old: 1})
