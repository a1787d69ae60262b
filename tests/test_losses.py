"""PairwiseSquaredHinge: numba backend vs NumPy reference vs explicit pairs."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from random_rankings import random_ranking as make_problem

from refimpl.exceptions import DataError
from refimpl.kernels import squared_hinge as ksh
from refimpl.losses import PairwiseSquaredHinge, SmoothObjective
from refimpl.pairs import pair_difference_matrix


def explicit(X, y, qid, w, margin=1.0):
    """The textbook formulas with the explicit pair matrix K."""
    K = pair_difference_matrix(X, y, qid)
    r = margin - K @ w
    act = r > 0
    value = np.sum(r[act] ** 2)
    grad = -2 * K[act].T @ r[act]
    H = 2 * K[act].T @ K[act]
    return value, grad, H


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.floats(0.1, 3.0), st.booleans())
def test_backends_match_explicit_formulas(seed, margin, normalize):
    rng, X, y, qid = make_problem(seed)
    w = rng.normal(size=X.shape[1]) * 0.3
    s = rng.normal(size=X.shape[1])
    value, grad, H = explicit(X, y, qid, w, margin)
    for backend in ("pairs", "numpy"):
        loss = PairwiseSquaredHinge(
            X, y, qid, margin=margin, normalize=normalize, backend=backend
        )
        c = 1 / loss.n_pairs if normalize else 1.0
        np.testing.assert_allclose(loss.fun(w), c * value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(loss.grad(w), c * grad, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            loss.hess_vec(s), c * H @ s, rtol=1e-10, atol=1e-12
        )


def test_gradient_is_finite_difference():
    rng, X, y, qid = make_problem(1, n=60, d=6)
    loss = PairwiseSquaredHinge(X, y, qid)
    w = rng.normal(size=6) * 0.2
    g = loss.grad(w)
    h = 1e-6
    fd = np.array([
        (loss.fun(w + h * e) - loss.fun(w - h * e)) / (2 * h) for e in np.eye(6)
    ])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_hess_vec_is_difference_of_gradients():
    # away from the kinks the generalised Hessian is the true Hessian
    rng, X, y, qid = make_problem(2, n=60, d=6)
    loss = PairwiseSquaredHinge(X, y, qid)
    w = rng.normal(size=6) * 0.2
    s = rng.normal(size=6)
    loss.fun(w)
    hs = loss.hess_vec(s)
    h = 1e-7
    fd = (loss.grad(w + h * s) - loss.grad(w - h * s)) / (2 * h)
    np.testing.assert_allclose(hs, fd, rtol=1e-5, atol=1e-6)


def test_kernels_equal_py_func():
    rng, X, y, qid = make_problem(3)
    loss = PairwiseSquaredHinge(X, y, qid)
    z = X @ rng.normal(size=X.shape[1])
    pi, pj = loss.pairs.i, loss.pairs.j
    outs = []
    for f in (ksh.value_dz, ksh.value_dz.py_func):
        dz = np.empty(len(z))
        ai = np.empty(len(pi), np.int32)
        aj = np.empty(len(pi), np.int32)
        (value, n_act) = f(z, pi, pj, 1.0, dz, ai, aj)
        outs.append((value, dz, ai[:n_act], aj[:n_act]))
    assert outs[0][0] == pytest.approx(outs[1][0], rel=1e-12)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)
    np.testing.assert_array_equal(outs[0][2], outs[1][2])
    np.testing.assert_array_equal(outs[0][3], outs[1][3])
    assert ksh.value_only(z, pi, pj, 1.0) == pytest.approx(outs[0][0], rel=1e-12)


def test_sparse_X_equals_dense():
    rng, X, y, qid = make_problem(4)
    X[np.abs(X) < 0.8] = 0.0
    w = rng.normal(size=X.shape[1])
    dense = PairwiseSquaredHinge(X, y, qid)
    sparse = PairwiseSquaredHinge(sp.csr_matrix(X), y, qid)
    assert sparse.fun(w) == pytest.approx(dense.fun(w), rel=1e-12)
    np.testing.assert_allclose(sparse.grad(w), dense.grad(w), rtol=1e-12)


def test_zero_weights_every_pair_active():
    _, X, y, qid = make_problem(5)
    loss = PairwiseSquaredHinge(X, y, qid, margin=0.5)
    assert loss.fun(np.zeros(X.shape[1])) == pytest.approx(0.25 * loss.n_pairs)
    assert loss.n_active_pairs() == loss.n_pairs


def test_protocol_and_state():
    _, X, y, qid = make_problem(6)
    loss = PairwiseSquaredHinge(X, y, qid)
    assert isinstance(loss, SmoothObjective)
    with pytest.raises(RuntimeError, match="fun"):
        loss.hess_vec(np.zeros(X.shape[1]))
    w = np.ones(X.shape[1])
    # grad at a new w recomputes instead of returning stale state
    loss.fun(np.zeros(X.shape[1]))
    np.testing.assert_allclose(
        loss.grad(w), PairwiseSquaredHinge(X, y, qid).grad(w), rtol=1e-12
    )


def test_bad_input():
    _, X, y, qid = make_problem(7)
    with pytest.raises(DataError, match="margin"):
        PairwiseSquaredHinge(X, y, qid, margin=-1)
    with pytest.raises(DataError, match="backend"):
        PairwiseSquaredHinge(X, y, qid, backend="gpu")
    with pytest.raises(DataError, match="rows"):
        PairwiseSquaredHinge(X, y[:-1], qid)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(DataError, match="NaN"):
        PairwiseSquaredHinge(Xn, y, qid)
    with pytest.raises(DataError, match="no preference pairs"):
        PairwiseSquaredHinge(X, np.zeros(len(y)), qid)
    loss = PairwiseSquaredHinge(X, y, qid)
    with pytest.raises(DataError, match="shape"):
        loss.fun(np.zeros(X.shape[1] + 1))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([1.0, 0.5, 2.0]),
       st.sampled_from(["int", "float"]))
def test_pairs_active_set_compaction(seed, margin, zmode):
    """value_dz's compacted active set and hess_dz over it.

    The active list is exactly the pairs with ``margin - (z_i - z_j) > 0``
    in input order (integer scores make residuals of exactly 0: inactive);
    hess_dz equals the masked O(p) formula.  Against NumPy's bincount the
    summation order differs: rtol 1e-12 with atol 1e-12 * max|out|; vs
    py_func rtol 1e-12 (STYLE).
    """
    rng, X, y, qid = make_problem(seed, n=50, levels=4)
    loss = PairwiseSquaredHinge(X, y, qid, margin=margin, backend="pairs")
    pi, pj = loss.pairs.i, loss.pairs.j
    n = len(y)
    if zmode == "int":
        z = rng.integers(-2, 3, n).astype(float)
    else:
        z = rng.normal(size=n)
    t = rng.normal(size=n)
    act = margin - (z[pi] - z[pj]) > 0.0
    res = []
    for vdz, hdz in ((ksh.value_dz, ksh.hess_dz),
                     (ksh.value_dz.py_func, ksh.hess_dz.py_func)):
        dz = np.empty(n)
        ai = np.full(len(pi), -1, np.int32)
        aj = np.full(len(pi), -1, np.int32)
        value, n_act = vdz(z, pi, pj, margin, dz, ai, aj)
        assert n_act == act.sum()
        np.testing.assert_array_equal(ai[:n_act], pi[act])
        np.testing.assert_array_equal(aj[:n_act], pj[act])
        out = np.full(n, np.nan)
        hdz(t, ai, aj, n_act, out)
        res.append((value, dz.copy(), out))
    ref = loss.with_backend("numpy")._impl
    v_ref, dz_ref = ref.value_dz(z)
    h_ref = ref.hess_dz(t)
    value, dz, out = res[0]
    assert value == pytest.approx(v_ref, rel=1e-12, abs=1e-300)
    for got, want in ((dz, dz_ref), (out, h_ref)):
        np.testing.assert_allclose(
            got, want, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(want).max())
        )
    assert res[1][0] == pytest.approx(value, rel=1e-12, abs=1e-300)
    np.testing.assert_allclose(res[1][1], dz, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(res[1][2], out, rtol=1e-12, atol=1e-300)
    # the backend: n_active from the compaction, hess_dz over it
    impl = loss._impl
    assert impl.n_active() == 0
    np.testing.assert_array_equal(impl.hess_dz(t), 0.0)  # before value_dz
    impl.value_dz(z)
    assert impl.n_active() == act.sum()
    np.testing.assert_array_equal(impl.hess_dz(t), out)


def test_auto_backend_hard_rules():
    # the cost model's crossover is tested in tests/test_backend_choice.py
    from refimpl.losses.squared_hinge import (
        AUTO_MAX_PAIR_BYTES,
        BYTES_PER_PAIR,
        choose_backend,
    )

    # memory cap wins even at few pairs per document (MSLR-sized data)
    big = AUTO_MAX_PAIR_BYTES // BYTES_PER_PAIR + 1
    assert choose_backend(big, 10**8) == "tree"
    assert choose_backend(10**9, 10, which="adjacent") == "pairs"
