"""A first-order loss L2-regularised and solved by FISTA, and the zero penalty.

``L2Regularized`` offers ``hess_vec`` only when its loss does: wrapped around
``PairwiseLogistic`` (no Hessian) it is a first-order objective that
``apg`` with the ``Zero`` penalty minimises, and a second-order solver finds
the capability absent instead of a method that fails inside it.
"""

import numpy as np
import pytest
from random_rankings import random_ranking as make_problem
from scipy.optimize import minimize

from refimpl.exceptions import DataError
from refimpl.losses import L2Regularized, PairwiseLogistic, PairwiseSquaredHinge
from refimpl.penalties import Zero
from refimpl.solvers import apg, tron


def test_hess_vec_is_offered_only_when_the_loss_offers_it():
    _, X, y, qid = make_problem(0)
    first = L2Regularized(PairwiseLogistic(X, y, qid), 2.0)
    second = L2Regularized(PairwiseSquaredHinge(X, y, qid), 2.0)
    assert not hasattr(first, "hess_vec")
    assert hasattr(second, "hess_vec")
    w = np.linspace(-1, 1, X.shape[1])
    second.fun(w)
    s = np.ones(X.shape[1])
    np.testing.assert_allclose(second.hess_vec(s), s + 2.0 * second.loss.hess_vec(s),
                               rtol=1e-12, atol=0)


def test_first_order_objective_value_and_gradient():
    _, X, y, qid = make_problem(1)
    loss = PairwiseLogistic(X, y, qid)
    obj = L2Regularized(PairwiseLogistic(X, y, qid), 0.5)
    w = np.linspace(-0.3, 0.7, X.shape[1])
    assert obj.fun(w) == pytest.approx(0.5 * w @ w + 0.5 * loss.fun(w), rel=1e-14)
    np.testing.assert_allclose(obj.grad(w), w + 0.5 * loss.grad(w), rtol=1e-12, atol=1e-15)


def test_fista_with_the_zero_penalty_minimises_the_first_order_objective():
    _, X, y, qid = make_problem(2)
    C = 10.0
    obj = L2Regularized(PairwiseLogistic(X, y, qid), C)
    result = apg(obj, Zero(), tol=1e-10, stop="gradient_mapping", max_iter=20_000)
    # the optimality condition of a smooth, strongly convex objective
    obj.fun(result.w)
    assert np.linalg.norm(obj.grad(result.w)) < 1e-7
    # and the minimiser an independent solver finds (the problem is
    # 1-strongly convex, so close gradients mean close minimisers)
    ref = L2Regularized(PairwiseLogistic(X, y, qid), C)
    lbfgs = minimize(lambda w: (ref.fun(w), ref.grad(w)), np.zeros(X.shape[1]), jac=True,
                     method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0, "maxiter": 10_000})
    ref.fun(lbfgs.x)
    bound = np.linalg.norm(obj.grad(result.w)) + np.linalg.norm(ref.grad(lbfgs.x))
    assert np.linalg.norm(result.w - lbfgs.x) <= bound + 1e-12


def test_a_second_order_solver_finds_the_hessian_absent():
    _, X, y, qid = make_problem(3)
    obj = L2Regularized(PairwiseLogistic(X, y, qid), 1.0)
    with pytest.raises(AttributeError, match="hess_vec"):
        tron(obj)


def test_zero_penalty():
    g = Zero()
    v = np.array([-2.0, 0.0, 3.5])
    assert g.value(v) == 0.0
    out = g.prox(v, 0.7)
    np.testing.assert_array_equal(out, v)
    assert out is not v
    assert repr(g) == "Zero()"
    with pytest.raises(DataError, match="step must be finite and >= 0"):
        g.prox(v, -1.0)
    with pytest.raises(DataError, match=r"w must have shape \(n,\)"):
        g.value(np.ones((2, 2)))
