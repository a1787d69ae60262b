"""The solvers refuse what the estimators refuse, with the same exception.

``max_iter=True`` and ``max_iter=0`` are refused by every estimator's
constraints (``ParameterError``); the solvers called directly say the same.
"""

import numpy as np
import pytest

from refimpl.data import make_synthetic_letor
from refimpl.exceptions import ParameterError
from refimpl.losses import L2Regularized, PairwiseSquaredHinge, ScaledSmooth
from refimpl.penalties import L1
from refimpl.solvers import apg, fenchelrank, prox_newton, tron


@pytest.fixture(scope="module")
def loss():
    d = make_synthetic_letor(n_queries=4, docs_per_query=(4, 6), n_noise=2, seed=0)
    return PairwiseSquaredHinge(d.X, d.y, d.qid)


def solvers(loss):
    return {
        "tron": lambda **kw: tron(L2Regularized(loss, 1.0), **kw),
        "apg": lambda **kw: apg(ScaledSmooth(loss, 1.0), L1(1.0), **kw),
        "prox_newton": lambda **kw: prox_newton(ScaledSmooth(loss, 1.0), L1(1.0), **kw),
    }


@pytest.mark.parametrize("name", ["tron", "apg", "prox_newton"])
@pytest.mark.parametrize("kw, word", [
    (dict(max_iter=True), "max_iter"), (dict(max_iter=0), "max_iter"),
    (dict(max_iter=2.5), "max_iter"), (dict(max_iter=-1), "max_iter"),
    (dict(tol=-1.0), "tol"), (dict(tol=float("nan")), "tol"), (dict(tol=True), "tol"),
])
def test_solvers_refuse_bad_budgets_as_the_estimators_do(loss, name, kw, word):
    with pytest.raises(ParameterError, match=word):
        solvers(loss)[name](**kw)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fenchelrank_refuses_a_zero_budget():
    d = make_synthetic_letor(n_queries=4, docs_per_query=(4, 6), n_noise=2, seed=0)
    loss = PairwiseSquaredHinge(d.X, d.y, d.qid, margin=0.5, normalize=True)
    with pytest.raises(ParameterError, match="max_iter"):
        fenchelrank(loss, 2.0, max_iter=0)
    assert np.isfinite(fenchelrank(loss, 2.0, max_iter=1).history["gap"][-1])
