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
                             n_redundant=2, n_noise=3, seed=0)
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
        model = HingeRankSVM(C=C).fit(X, y, qid)
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
                                             r"must be a float in the range \[2\.2e-308"):
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
    for key in ("D", "gap", "mu", "j", "nnz"):
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
