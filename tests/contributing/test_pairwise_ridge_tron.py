"""What only PairwiseRidgeTron can be tested for: its minimiser solves the
normal equations ``(I + (2C/p) D^T D) w = (2C/p) D^T 1``."""

import numpy as np

from refimpl.data import make_synthetic_letor
from refimpl.estimators.pairwise_ridge_tron import PairwiseRidgeTron
from refimpl.pairs import pair_difference_matrix


def test_coef_solves_the_normal_equations():
    data = make_synthetic_letor(n_queries=12, seed=2)
    C = 5.0
    model = PairwiseRidgeTron(C=C, tol=1e-6).fit(data.X, data.y, data.qid)
    assert model.converged_
    D = pair_difference_matrix(data.X, data.y, data.qid)
    D = D.toarray() if hasattr(D, "toarray") else D
    p, d = D.shape
    A = np.eye(d) + 2 * C / p * D.T @ D
    exact = np.linalg.solve(A, 2 * C / p * D.sum(axis=0))
    # F is 1-strongly convex: the distance to the minimiser is at most ||grad F||
    grad = A @ model.coef_ - 2 * C / p * D.sum(axis=0)
    assert np.linalg.norm(model.coef_ - exact) <= np.linalg.norm(grad) + 1e-12
    # TRON's certificate: ||grad F(w)|| <= tol ||grad F(0)||
    assert np.linalg.norm(grad) <= 1e-6 * np.linalg.norm(2 * C / p * D.sum(axis=0))


def test_a_second_order_solver_gets_the_hessian_it_needs():
    data = make_synthetic_letor(n_queries=6, seed=3)
    model = PairwiseRidgeTron().fit(data.X, data.y, data.qid)
    assert model.n_iter_ >= 1 and np.all(np.isfinite(model.coef_))
