"""Legal but extreme hyper-parameters: a fit or a ParameterError, never a raw error.

Each case failed on 251ac0c with an exception raised deep inside a solver
(an ``IndexError`` of the working-set QP, a ``MemoryError`` of a history
preallocated for ``max_iter`` updates, LightGBM's own errors, ...) or with a
message blaming the scale of the features for a parameter's extreme value.
"""

import warnings

import numpy as np
import pytest

from refimpl._validation import ranking_problem
from refimpl.data import make_synthetic_letor
from refimpl.estimators import FenchelRank, HingeRankSVM
from refimpl.exceptions import EmptyModelWarning, ParameterError
from refimpl.losses.pairwise_hinge import PairwiseHinge

INT64_MAX = np.iinfo(np.int64).max


def tiny():
    d = make_synthetic_letor(n_queries=6, docs_per_query=(4, 8), n_informative=3,
                             n_redundant=2, n_noise=7, seed=0)
    return d.X, d.y, d.qid


# --------------------------------------------------------------------------
# HingeRankSVM: a tiny C
# --------------------------------------------------------------------------

@pytest.mark.parametrize("C", [1e-17, 1e-300])
def test_hinge_ranksvm_tiny_C_is_the_first_plane(C):
    """For a tiny C every pair stays violated at the optimum, so
    w* = C a_0 (a_0 the first cutting plane, eq. 7.13 at w = 0): the fit
    returns it, certified by the duality gap (it raised IndexError)."""
    X, y, qid = tiny()
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyModelWarning)
        model = HingeRankSVM(C=C, feature_scaling=None).fit(X, y, qid)
    loss = PairwiseHinge(ranking_problem(X, y, qid))
    _, c, n_violated = loss.risk(np.zeros(X.shape[1]))
    n = len(np.unique(qid))
    a0 = loss.direction(c) / n
    assert model.converged_
    np.testing.assert_allclose(model.coef_ / C, a0, rtol=1e-12)
    assert model.objective_ == pytest.approx(C * n_violated / n, rel=1e-12)
    assert model.dual_gap_ <= model.tol * model.objective_


def test_hinge_ranksvm_subnormal_C_is_refused_naming_C():
    X, y, qid = tiny()
    with pytest.raises(ParameterError, match=r"The 'C' parameter of HingeRankSVM "
                                             r"must be a float in the range \[\d\.\de-30\d, inf\)"):
        HingeRankSVM(C=5e-324).fit(X, y, qid)


# --------------------------------------------------------------------------
# Iteration budgets: no preallocation, the int64 range checked up front
# --------------------------------------------------------------------------

@pytest.mark.parametrize("max_iter", [10**9, INT64_MAX])
def test_fenchelrank_huge_max_iter_runs_to_convergence(max_iter):
    """It preallocated 8 x (max_iter + 1) doubles: MemoryError at 10**9."""
    X, y, qid = tiny()
    model = FenchelRank(max_iter=max_iter).fit(X, y, qid)
    ref = FenchelRank(max_iter=1000).fit(X, y, qid)
    assert model.converged_
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert len(model.history_["gap"]) == model.n_iter_ + 1


def test_fenchelrank_history_grows_past_its_first_array(monkeypatch):
    """The block path's history doubles when full: same records as one array."""
    import importlib

    fr = importlib.import_module("refimpl.solvers.fenchelrank")

    X, y, qid = tiny()
    kw = dict(r=30.0, tol=1e-12, max_iter=300, line_search="blocks")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = FenchelRank(**kw).fit(X, y, qid)
        monkeypatch.setattr(fr, "HISTORY_START", 4)
        model = FenchelRank(**kw).fit(X, y, qid)
    assert model.n_iter_ > 8               # grown at least twice
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    for key in ("obj", "dual", "gap", "step", "j", "nnz"):
        np.testing.assert_array_equal(model.history_[key], ref.history_[key])
    assert len(model.history_["gap"]) == model.n_iter_ + 1


@pytest.mark.parametrize("name", ["FenchelRank", "RankSVM", "HingeRankSVM",
                                  "SparseRankSVM", "FSMRank", "FSMSVM", "LifeRank",
                                  "LifeRankPipeline"])
@pytest.mark.parametrize("value", [INT64_MAX + 1, 10**30])
def test_max_iter_beyond_int64_refused_by_the_constraint(name, value):
    """2**63 raised numpy's ValueError (FenchelRank) or an OverflowError in numba."""
    from refimpl.estimators import all_estimators

    cls = dict(all_estimators())[name]
    X, y, qid = tiny()
    with pytest.raises(ParameterError,
                       match=rf"^The 'max_iter' parameter of {name} must be an int "
                             rf"in the range \[1, {INT64_MAX}\]\. Got {value} instead"):
        cls(max_iter=value).fit(X, y, qid)


# --------------------------------------------------------------------------
# An overflow on features of normal scale names the parameter
# --------------------------------------------------------------------------

def _fit_error(est, y=None):
    X, y0, qid = tiny()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ParameterError) as info:
            est.fit(X, y0 if y is None else y, qid)
    return str(info.value)


@pytest.mark.parametrize("make, name", [
    (lambda E: E.RankSVM(C=1e300), "C"),
    (lambda E: E.SparseRankSVM(C=1.7e308), "C"),
    (lambda E: E.HingeRankSVM(C=1.7e308), "C"),
    (lambda E: E.FSMRank(lambda1=1.7e308), "lambda1"),
    (lambda E: E.FSMRank(lambda2=1.7e308), "lambda2"),
    (lambda E: E.FSMRank(L0=1e-300), "L0"),
    (lambda E: E.FSMRank(L0=5e-324), "L0"),
    (lambda E: E.FenchelRank(r=5e-324), "r"),
    (lambda E: E.FenchelRank(r=1e-300), "r"),
    (lambda E: E.FenchelRank(r=1e300), "r"),
    (lambda E: E.LifeRank(lam=1e8), "lam"),
    (lambda E: E.LifeRank(lam=1.7e308), "lam"),
    (lambda E: E.LifeRank(damping=1e300), "damping"),
    (lambda E: E.LifeRankPipeline(lam=1e8), "lam"),
    (lambda E: E.LifeRankPipeline(C=1e300), "C"),
])
def test_extreme_weight_is_named_not_the_features(make, name):
    """These raised NonFiniteError / DivergenceError blaming the feature scale
    (|X| <= 1 here), a DataError about penalty weights, or ZeroDivisionError."""
    import refimpl.estimators as E

    message = _fit_error(make(E))
    assert message.startswith(f"The '{name}' parameter of ")
    assert "must be in the range" in message
    assert "Likely cause: the scale of the features" not in message


def test_liferank_huge_lr_blames_the_step():
    from refimpl.estimators import LifeRank
    from refimpl.exceptions import NonFiniteError

    X, y, qid = tiny()
    with pytest.raises(NonFiniteError, match=r"the cause is the step: lower lr") as info:
        LifeRank(lr=1e300).fit(X, y, qid)
    assert "scale of the features" not in str(info.value)


@pytest.mark.parametrize("penalty", ["l1", "log"])
def test_penalty_path_extreme_C_names_C(penalty):
    """l1 raised ValueError("gmap_ref must be finite") at 1e300 and 1e308."""
    from refimpl.experiments.penalty_paths import penalty_path

    X, y, qid = tiny()
    data = (X, y, qid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = penalty_path(penalty, data, data, data, Cs=[1e300])
        assert rows[0]["nnz"] > 0
        with pytest.raises(ParameterError, match=r"'Cs?' parameter .* range "
                                                 r"\[1e-15, 1e\+15\]"):
            penalty_path(penalty, data, data, data, Cs=[1e308])


# --------------------------------------------------------------------------
# LambdaMART: labels and LightGBM's bounds checked at the boundary
# --------------------------------------------------------------------------

@pytest.mark.parametrize("shift, scale, shown", [
    (-1.0, 1.0, "-1.0"), (0.5, 1.0, "0.5"), (0.0, 100.0, "100.0")])
def test_lambdamart_refuses_labels_lightgbm_cannot_gain(shift, scale, shown):
    pytest.importorskip("lightgbm")
    from refimpl.estimators import LambdaMART
    from refimpl.exceptions import DataError

    X, y, qid = tiny()
    y = np.where(y > 0, y * scale, shift) if shift < 0 else y * scale + shift
    with pytest.raises(DataError, match=rf"integers in \[0, 30\].*= {shown}"):
        LambdaMART(n_estimators=2).fit(X, y, qid)


def test_lambdamart_accepts_the_largest_label():
    pytest.importorskip("lightgbm")
    from refimpl.estimators import LambdaMART

    X, y, qid = tiny()
    model = LambdaMART(n_estimators=2).fit(X, y + 28, qid)   # labels 28 .. 30
    assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize("name, value, bound", [
    ("num_leaves", 10**9, r"\[2, 131072\]"),
    ("min_child_samples", 2**63 - 1, r"\[0, 2147483647\]"),
    ("n_estimators", 2**31, r"\[1, 2147483647\]"),
    ("random_state", 2**40, r"\[0, 2147483647\]")])
def test_lambdamart_parameters_within_lightgbm_bounds(name, value, bound):
    """num_leaves raised LightGBMError; min_child_samples = 2**63 - 1 too."""
    pytest.importorskip("lightgbm")
    from refimpl.estimators import LambdaMART

    X, y, qid = tiny()
    with pytest.raises(ParameterError, match=rf"'{name}' parameter of LambdaMART "
                                             rf"must be an int in the range {bound}"):
        LambdaMART(**{name: value}).fit(X, y, qid)


@pytest.mark.parametrize("C", [1e12, 1e17])
def test_hinge_ranksvm_huge_C_stops_at_the_rounding_level(C):
    """At C = 1e12 the gap stalls at the rounding of P (1e-3 of 1.5e3), at
    1e17 nothing moves: the loop ran all max_iter planes (the default 1000
    took hours, the working set growing); it now stops and says why."""
    from sklearn.exceptions import ConvergenceWarning

    X, y, qid = tiny()
    with pytest.warns(ConvergenceWarning, match="below what double precision "
                                                "certifies"):
        model = HingeRankSVM(C=C, max_iter=300).fit(X, y, qid)
    assert model.n_iter_ < 300 and not model.converged_
    assert np.all(np.isfinite(model.coef_))


def test_hinge_ranksvm_tol_below_rounding_stops():
    """tol = 1e-17 asks for a gap below the rounding of P: the dual wanders
    by ulps and the loop added all max_iter planes; it now stops and says why."""
    from sklearn.exceptions import ConvergenceWarning

    X, y, qid = tiny()
    # Joachims' problem on these columns, whose dual wanders by ulps (the
    # scaled one closes its gap to a rounding-level negative number here)
    with pytest.warns(ConvergenceWarning, match="below what double precision "
                                                "certifies"):
        model = HingeRankSVM(tol=1e-17, max_iter=300,
                             feature_scaling=None).fit(X, y, qid)
    assert model.n_iter_ < 300
    ref = HingeRankSVM(tol=1e-9, feature_scaling=None).fit(X, y, qid)
    assert model.objective_ <= ref.objective_ + 1e-9 * ref.objective_


def test_registry_range_compares_integers_exactly():
    """The runner's pre-check of an iteration budget: 2**63 is outside
    [1, 2**63 - 1], although float() rounds both to the same number."""
    from refimpl.experiments import get_method

    method = get_method("fenchelrank")
    assert method.refused("max_iter", 2**63 - 1) is None
    assert method.refused("max_iter", 1) is None
    assert "9223372036854775807" in method.refused("max_iter", 2**63)
    assert method.refused("max_iter", 0) is not None
