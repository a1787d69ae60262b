"""scikit-learn's own estimator checks, and model selection that scores per query.

Every public estimator of :mod:`refimpl.estimators` passes all of
``sklearn.utils.estimator_checks`` (no check is marked expected-to-fail: the
checks call ``fit(X, y)`` without ``qid``, which the estimators read as one
query).  ``GridSearchCV`` with ``GroupKFold`` over queries, with metadata
routing on, gives the per-query cross-validation scores computed by hand;
with routing off, ``score`` refuses to treat a fold as a single query.
"""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_validate
from sklearn.utils.estimator_checks import parametrize_with_checks

import refimpl.estimators as E
from refimpl.data import make_synthetic_letor
from refimpl.exceptions import DataError, EmptyModelWarning, ParameterError
from refimpl.experiments import METHODS
from refimpl.metrics import mean_ndcg

#: Small, fast settings; a public estimator not listed is checked at its
#: defaults (the list of estimators is E.all_estimators(), not kept here).
FAST = {
    "FenchelRank": {"max_iter": 200},
    "SparseRankSVM": {"max_iter": 500},
    "FSMRank": {"max_iter": 200},
    "GASRanker": {"n_features_to_select": 1},
    "FSMSVM": {"n_features_to_select": 1},
    "LifeRank": {"n_components": 1, "max_iter": 50},
    "LambdaMART": {"n_estimators": 5, "min_child_samples": 1},
    "LifeRankPipeline": {"n_components": 1, "max_iter": 50},
}
#: Every public estimator, and variants worth checking on their own.
ESTIMATORS = [cls(**FAST.get(name, {})) for name, cls in E.all_estimators()] + [
    E.SparseRankSVM(penalty="log", max_outer=3, max_iter=500),
]


def test_every_public_estimator_is_checked():
    found = {name for name, _ in E.all_estimators()}
    exported = {name for name in E.__all__
                if isinstance(getattr(E, name), type) and hasattr(getattr(E, name), "fit")}
    assert exported <= found, "an exported estimator all_estimators() misses"
    assert {type(est).__name__ for est in ESTIMATORS} == found
    assert set(FAST) <= found, "settings for an estimator that does not exist"


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        # small random problems: early stops and empty models are expected
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", EmptyModelWarning)
        warnings.filterwarnings("ignore", message=".*positive semidefinite")
        check(estimator)


def test_tags():
    for est in ESTIMATORS:
        tags = est.__sklearn_tags__()
        assert tags.input_tags.sparse, type(est).__name__
        assert tags.target_tags.required, type(est).__name__


# --------------------------------------------------------------------------
# Model selection over queries
# --------------------------------------------------------------------------

def grid_of(estimator):
    """The smoke grid (``reduced_grid``) of the first registered method built by
    ``estimator``'s class: derived from the registry, so that a newly registered
    method needs no entry here; an estimator no method uses is searched at its
    settings alone (``{}``: one candidate, still scored per query)."""
    for method in METHODS.values():
        if method.factory is type(estimator):
            reduced = method.reduced_grid
            if reduced is None:  # the registry's default: each grid's first value
                reduced = {name: list(values)[:1] for name, values in method.grid.items()}
            return {name: list(values) for name, values in reduced.items()}
    return {}


@pytest.fixture(scope="module")
def letor():
    d = make_synthetic_letor(n_queries=24, docs_per_query=(5, 12), n_noise=4, seed=3)
    return d.X, d.y, d.qid


@pytest.fixture
def routing():
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=False)


def by_hand(estimator, params, X, y, qid, cv):
    """Mean over folds of the per-query mean NDCG of the validation fold."""
    scores = []
    for train, test in cv.split(X, y, qid):
        m = clone(estimator).set_params(**params).fit(X[train], y[train], qid[train])
        scores.append(mean_ndcg(y[test], m.predict(X[test]), qid[test]))
    return float(np.mean(scores))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::refimpl.exceptions.EmptyModelWarning")
@pytest.mark.filterwarnings("ignore:.*positive semidefinite")
def test_grid_search_over_queries_scores_per_query(estimator, letor, routing):
    X, y, qid = letor
    cv = GroupKFold(3)
    grid = grid_of(estimator)
    search = GridSearchCV(estimator, grid, cv=cv, error_score="raise")
    search.fit(X, y, groups=qid, qid=qid)
    settings = search.cv_results_["params"]
    expected = [by_hand(estimator, p, X, y, qid, cv) for p in settings]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected,
                               rtol=0, atol=1e-12)
    # ... which is not what scoring each fold as one query gives
    one_query = []
    for p in settings:
        folds = []
        for train, test in cv.split(X, y, qid):
            m = clone(estimator).set_params(**p).fit(X[train], y[train], qid[train])
            folds.append(mean_ndcg(y[test], m.predict(X[test])))
        one_query.append(np.mean(folds))
    assert not np.allclose(expected, one_query, rtol=0, atol=1e-6)


def test_cross_validate_routes_qid(letor, routing):
    X, y, qid = letor
    cv = GroupKFold(3)
    res = cross_validate(E.RankSVM(C=0.1), X, y, cv=cv, params={"groups": qid, "qid": qid})
    assert res["test_score"].mean() == pytest.approx(
        by_hand(E.RankSVM(C=0.1), {}, X, y, qid, cv), abs=1e-12)


def test_without_routing_score_refuses_to_treat_a_fold_as_one_query(letor):
    X, y, qid = letor
    search = GridSearchCV(E.RankSVM(), {"C": [0.1]}, cv=GroupKFold(3),
                          error_score="raise")
    with pytest.raises(DataError, match=r"RankSVM.score got no qid, but the model "
                                        r"was fitted on 16 queries"):
        search.fit(X, y, groups=qid, qid=qid)


def test_score_without_qid_after_a_one_query_fit_is_one_query(letor):
    X, y, _ = letor
    m = E.RankSVM().fit(X, y)
    assert m.n_queries_in_ == 1
    assert m.score(X, y) == pytest.approx(mean_ndcg(y, m.predict(X)), abs=0)


def test_pipeline_routes_qid_to_the_ranker(letor, routing):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, qid = letor
    pipe = make_pipeline(StandardScaler(), E.RankSVM(C=0.1)).fit(X, y, qid=qid)
    alone = E.RankSVM(C=0.1).fit(StandardScaler().fit_transform(X), y, qid)
    np.testing.assert_array_equal(pipe[-1].coef_, alone.coef_)
    assert pipe.score(X, y, qid=qid) == mean_ndcg(y, pipe.predict(X), qid)
    with pytest.raises(ParameterError, match="takes no sample_weight"):
        alone.score(X, y, qid=qid, sample_weight=np.ones(len(y)))

    cv = GroupKFold(3)
    search = GridSearchCV(make_pipeline(StandardScaler(), E.RankSVM()),
                          {"ranksvm__C": [0.1, 1.0]}, cv=cv, error_score="raise")
    search.fit(X, y, groups=qid, qid=qid)
    for C, got in zip([0.1, 1.0], search.cv_results_["mean_test_score"], strict=True):
        folds = []
        for train, test in cv.split(X, y, qid):
            scaler = StandardScaler().fit(X[train])
            m = E.RankSVM(C=C).fit(scaler.transform(X[train]), y[train], qid[train])
            folds.append(mean_ndcg(y[test], m.predict(scaler.transform(X[test])), qid[test]))
        assert got == pytest.approx(np.mean(folds), abs=1e-12)


def test_estimators_import_no_floor_above_them():
    """refimpl/estimators/ imports data, pairs, metrics, losses, solvers ... never experiments."""
    import ast
    from pathlib import Path

    package = Path(E.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                parent = {0: "", 1: "refimpl.estimators", 2: "refimpl"}[node.level]
                target = ".".join(filter(None, [parent, node.module]))
                names = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith(("refimpl.experiments", "experiments"))
                           for n in names), f"{path.name} imports {names}"
