"""``SparseRankSVM(solver="auto")``: proximal Newton or FISTA from the data's shape.

Both solvers stop at the same certified tolerance, so the choice changes the
time, never the answer; the rule (:func:`refimpl.estimators.sparse.choose_solver`)
is a deterministic function of the shape, tested here on a shape where each
side wins, never by timing.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from refimpl.data import make_synthetic_letor
from refimpl.estimators import SparseRankSVM
from refimpl.estimators.sparse import SOLVERS, choose_solver
from refimpl.exceptions import ParameterError


def wide_sparse(n_queries=20, d=700, seed=0):
    """Wide, 5 % non-zero X: a Newton step's d x d Hessian costs many FISTA steps."""
    data = make_synthetic_letor(n_queries=n_queries, docs_per_query=(10, 40),
                                n_levels=3, n_informative=6, n_redundant=4,
                                n_noise=d - 10, seed=seed)
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(np.where(rng.random(data.X.shape) < 0.05, data.X, 0.0))
    return X, data.y, data.qid


def narrow_dense(seed=0):
    data = make_synthetic_letor(n_queries=30, docs_per_query=(20, 40), n_levels=3,
                                n_informative=6, n_redundant=4, n_noise=36, seed=seed)
    return data.X, data.y, data.qid


def test_the_rule_on_shapes_where_each_solver_wins():
    # LETOR's shapes (MQ2008 Fold 1, OHSUMED Fold 3): Newton, 10-400x faster
    assert choose_solver(9630, 46, 52325) == "newton"
    assert choose_solver(10494, 45, 367663) == "newton"
    # 1,500 x 700 at 35 non-zeros a row: FISTA (347 iterations) beat Newton
    assert choose_solver(1500, 700, 11279, nnz_per_row=34.9) == "fista"


@pytest.mark.parametrize("make, expected", [(narrow_dense, "newton"),
                                            (wide_sparse, "fista")])
def test_auto_resolves_by_the_shape_and_fits_as_the_explicit_solver(make, expected):
    X, y, qid = make()
    auto = SparseRankSVM(C=0.1).fit(X, y, qid)
    assert auto.solver_ == expected
    same = SparseRankSVM(C=0.1, solver=expected).fit(X, y, qid)
    assert same.solver_ == expected
    np.testing.assert_array_equal(auto.coef_, same.coef_)


@pytest.mark.parametrize("penalty", ["l1", "mcp"])
def test_both_solvers_reach_the_same_objective(penalty):
    X, y, qid = wide_sparse()
    fits = {s: SparseRankSVM(C=0.1, penalty=penalty, solver=s, tol=1e-6).fit(X, y, qid)
            for s in ("newton", "fista")}
    assert all(m.converged_ for m in fits.values())
    F = {s: m.objective_ for s, m in fits.items()}
    scale = max(F.values())  # 1e-10 apart measured; 1e-5: far below a change of model
    assert abs(F["newton"] - F["fista"]) <= 1e-5 * scale, F


def test_a_bad_solver_names_the_parameter_and_its_values():
    X, y, qid = narrow_dense()
    with pytest.raises(ParameterError) as err:
        SparseRankSVM(solver="lbfgs").fit(X, y, qid)
    message = str(err.value)
    assert "solver" in message and "lbfgs" in message
    for value in SOLVERS:
        assert value in message


def test_estimate_memory_counts_newtons_hessian_only_when_newton_is_chosen():
    shape = dict(n_docs=10494, n_pairs=367663, n_features=45, max_query=200)
    auto = SparseRankSVM().estimate_memory(**shape)
    newton = SparseRankSVM(solver="newton").estimate_memory(**shape)
    fista = SparseRankSVM(solver="fista").estimate_memory(**shape)
    assert auto.terms == newton.terms
    # the d x d Hessians (refimpl.estimators._base.prox_newton_memory)
    assert newton.terms["newton hessian"] >= 4 * 8 * 45 ** 2
    assert "newton hessian" not in fista.terms
    wide = dict(n_docs=777, n_pairs=5934, n_features=700, max_query=40)
    assert choose_solver(777, 700, 5934) == "fista"
    assert "newton hessian" not in SparseRankSVM().estimate_memory(**wide).terms
