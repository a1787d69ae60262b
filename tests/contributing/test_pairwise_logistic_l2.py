"""What only PairwiseLogisticL2 can be tested for: F's gradient vanishes at
coef_, and the minimiser is the one an independent solver finds."""

import numpy as np
from scipy.optimize import minimize

from refimpl.data import make_synthetic_letor
from refimpl.estimators.pairwise_logistic_l2 import PairwiseLogisticL2
from refimpl.pairs import pair_difference_matrix


def objective(D, C):
    """F(w) = ||w||^2 / 2 + C mean log(1 + exp(-D w)) and its gradient, by hand."""
    def f(w):
        m = D @ w
        value = 0.5 * w @ w + C * np.logaddexp(0.0, -m).mean()
        grad = w - C * D.T @ (1.0 / (1.0 + np.exp(m))) / len(D)
        return value, grad
    return f


def test_the_gradient_vanishes_at_coef_and_scipy_agrees():
    data = make_synthetic_letor(n_queries=12, seed=1)
    C = 5.0
    model = PairwiseLogisticL2(C=C, tol=1e-10, max_iter=20_000).fit(data.X, data.y, data.qid)
    assert model.converged_
    D = pair_difference_matrix(data.X, data.y, data.qid)
    f = objective(D, C)
    g = np.linalg.norm(f(model.coef_)[1])
    assert g < 1e-7
    ref = minimize(f, np.zeros(D.shape[1]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 0, "maxiter": 10_000}).x
    # F is 1-strongly convex: ||w - w'|| <= ||grad F(w)|| + ||grad F(w')||
    assert np.linalg.norm(model.coef_ - ref) <= g + np.linalg.norm(f(ref)[1]) + 1e-12
