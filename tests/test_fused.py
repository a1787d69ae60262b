"""One pass over X per Hessian product and per value + gradient.

The one-pass kernels (``refimpl.kernels.fused``) against brute force: the
explicit pairs summed exactly (``math.fsum``, the references and bounds of
``test_ostree``), with ``X`` built so that its scores are the adversarial
ones of that module (ties, clusters at up to +-1e12, one-document and
one-level queries, queries not contiguous in the input), and against the
two-pass path (BLAS mat-vecs around the tree kernels), bit for bit in score
space.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit
from random_rankings import random_ranking
from test_ostree import (
    U,
    accuracy_bound,
    clustered_instances,
    instances,
    pair_reference,
)

from refimpl._validation import group_queries
from refimpl.exceptions import DataError
from refimpl.kernels import _simd
from refimpl.kernels import fused as kf
from refimpl.kernels import ostree as kos
from refimpl.losses import PairwiseSquaredHinge
from refimpl.losses import _tree_backend as tb
from refimpl.losses import squared_hinge as sh

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------
# the row dot product
# --------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 7, 8, 9, 15, 16, 17, 46, 136, 137])
def test_row_dot_is_its_specification(d):
    """The LLVM vector kernel gives the bits of the Python specification,
    and is within the ordinary summation bound of the exact dot product."""
    rng = np.random.default_rng(d)
    X = rng.normal(size=(9, d)) * 10.0 ** rng.integers(-12, 13, (9, d))
    w = rng.normal(size=d) * 10.0 ** rng.integers(-6, 7, d)
    z = np.empty(9)
    kf.row_dots(X, w, z)
    spec = np.array([_simd.row_dot(X, r, w) for r in range(9)])
    np.testing.assert_array_equal(z, spec)
    for r in range(9):
        exact = math.fsum(float(a) * float(b) for a, b in zip(X[r], w))
        bound = (d + 2) * U * float(np.abs(X[r] * w).sum())
        assert abs(z[r] - exact) <= bound


@njit
def _fma_compiled(a, b, c):
    return _simd.fma(a, b, c)


@PROPERTY
@given(st.floats(allow_nan=False, allow_infinity=False),
       st.floats(allow_nan=False, allow_infinity=False),
       st.floats(allow_nan=False, allow_infinity=False))
def test_fma_is_its_specification(a, b, c):
    """``llvm.fma.f64`` rounds ``a b + c`` once: the exact rational value of
    the specification, rounded (overflow to infinity included)."""
    with np.errstate(over="ignore", invalid="ignore"):
        got = _fma_compiled(a, b, c)
        ref = _simd.fma(a, b, c)
    assert got == ref or (math.isnan(got) and math.isnan(ref)), (got, ref)


def test_row_dot_rejects_non_contiguous_input_at_compile_time():
    X = np.ones((4, 6))
    with pytest.raises(Exception, match="C-contiguous"):
        kf.row_dots(X[:, ::2], np.ones(3), np.empty(4))


# --------------------------------------------------------------------------
# kernels against brute force
# --------------------------------------------------------------------------


def embed(z, t, extra, rng):
    """``X`` whose column 0 is ``z`` and column 1 is ``t``, plus ``extra``
    random columns; ``w = e_0`` and ``s = e_1`` (plus, when ``extra``, small
    random weights on the extra columns, so the scores are general sums)."""
    n = len(z)
    X = np.column_stack([z, t, rng.normal(size=(n, extra))])
    w = np.zeros(2 + extra)
    s = np.zeros(2 + extra)
    w[0] = s[1] = 1.0
    if extra and rng.random() < 0.5:
        w[2:] = rng.normal(size=extra)
        s[2:] = rng.normal(size=extra)
    return np.ascontiguousarray(X), w, s


def spec_scores(X, w):
    return np.array([_simd.row_dot(X, r, w) for r in range(X.shape[0])])


def back_projection_bound(X, c_ref, c_bound):
    """Bound on ``|X^T c - X^T c_ref|`` per column: the coefficient errors
    ``c_bound`` times ``|x|``, plus the float64 summation of ``n`` terms."""
    n = X.shape[0]
    A = np.abs(X)
    return A.T @ c_bound + (n + 2) * U * (A.T @ (np.abs(c_ref) + c_bound))


def fsum_columns(X, c):
    return np.array([math.fsum(X[:, j] * c) for j in range(X.shape[1])])


def check_one_pass(z, t, y, qid, margin, extra, seed):
    rng = np.random.default_rng(seed)
    X, w, s = embed(z, t, extra, rng)
    z = spec_scores(X, w)
    t = spec_scores(X, s)
    ref = pair_reference(z, t, y, qid, margin)
    lq = int(np.max(np.unique(qid, return_counts=True)[1]))
    b = tb._OnePassTree(X, margin, y, group_queries(qid))
    value, grad = b.value_grad(w)
    np.testing.assert_array_equal(b.from_rows(b.z), z)
    np.testing.assert_array_equal(b.from_rows(b.l_plus), ref["l_plus"])
    np.testing.assert_array_equal(b.from_rows(b.l_minus), ref["l_minus"])
    assert abs(value - ref["value"]) <= accuracy_bound(ref["vm"], ref["vw"], lq)
    dz = b.from_rows(b.dz)
    dz_bound = accuracy_bound(ref["gm"], ref["gw"], lq)
    assert np.all(np.abs(dz - ref["dz"]) <= dz_bound)
    g_ref = fsum_columns(X, ref["dz"])
    assert np.all(np.abs(grad - g_ref) <= back_projection_bound(X, ref["dz"], dz_bound))
    hv, t_got = b.hess_vec(s)
    np.testing.assert_array_equal(b.from_rows(t_got), t)
    u = b.from_rows(b._u)
    u_bound = accuracy_bound(ref["hm"], ref["hw"], lq)
    assert np.all(np.abs(u - ref["hv"]) <= u_bound)
    h_ref = fsum_columns(X, ref["hv"])
    assert np.all(np.abs(hv - h_ref) <= back_projection_bound(X, ref["hv"], u_bound))
    return b, X, w, s


@PROPERTY
@given(instances(), st.integers(0, 3), st.integers(0, 2**31 - 1))
def test_one_pass_equals_brute_force(inst, extra, seed):
    """Ties, one-document and one-level queries, qids not contiguous (the
    query-grouped copy) and, half the time, general scores."""
    check_one_pass(*inst, extra, seed)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(clustered_instances(), st.integers(0, 2**31 - 1))
def test_one_pass_equals_brute_force_on_clustered_scores(inst, seed):
    """Scores and directions in clusters at up to +-1e12 (query-contiguous
    input: no copy): the double-double accuracy of the tree kernels."""
    b, *_ = check_one_pass(*inst, 0, seed)
    assert b.rows is None


@PROPERTY
@given(instances(), st.integers(0, 2**31 - 1))
def test_one_pass_equals_two_pass_bit_for_bit_in_score_space(inst, seed):
    """Given the same scores, the fused kernels' loss, counts, dz and Hessian
    coefficients are those of value_dz_selection_tree and
    hess_dz_selection_tree bit for bit (same per-query code)."""
    z, t, y, qid, margin = inst
    X, w, s = embed(z, t, 2, np.random.default_rng(seed))
    b = tb._OnePassTree(X, margin, y, group_queries(qid))
    value, _ = b.value_grad(w)
    state = (b.z.copy(), b.perm.copy(), b.l_plus.copy(), b.l_minus.copy(),
             b.dz.copy(), b.sweep.copy())
    _, t_rows = b.hess_vec(s)
    u = b._u.copy()
    two = tb._TreeBackend(None, len(z), margin, b.to_rows(y),
                          group_queries(np.repeat(np.arange(len(b.indptr) - 1),
                                                  np.diff(b.indptr))))
    v2, dz2 = two.value_dz(state[0])
    assert v2 == value
    np.testing.assert_array_equal(two.perm, state[1])
    np.testing.assert_array_equal(two.l_plus, state[2])
    np.testing.assert_array_equal(two.l_minus, state[3])
    np.testing.assert_array_equal(dz2, state[4])
    np.testing.assert_array_equal(two.sweep, state[5])
    np.testing.assert_array_equal(two.hess_dz(t_rows), u)



@PROPERTY
@given(instances(), st.integers(1, 40), st.booleans(),
       st.integers(0, 2**31 - 1))
def test_value_grad_at_zero_equals_the_one_pass_kernel(inst, d, negative,
                                                       seed):
    """At w = 0 the backend skips the sort and the sweeps (every score is
    +0.0, every query's scores equal) and streams X four rows at a time:
    value, gradient, scores, sort, counts, dz and sweep record are those of
    value_grad_one_pass at w = 0 bit for bit (with w = -0.0 too), and the
    next Hessian product is the same; input with queries apart (the
    query-grouped copy) included."""
    _, _, y, qid, margin = inst
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(len(y), d)) * 10.0 ** rng.integers(-3, 4, (len(y), d))
    w = np.full(d, -0.0 if negative else 0.0)
    b = tb._OnePassTree(X, margin, y, group_queries(qid))
    value, grad = b.value_grad(w)
    n = len(y)
    ref = {"z": np.empty(n), "perm": np.empty(n, np.int64),
           "l_plus": np.empty(n, np.int64), "l_minus": np.empty(n, np.int64),
           "dz": np.empty(n), "sweep": np.zeros((4, n), np.int64),
           "grad": np.empty(d)}
    v_ref = kf.value_grad_one_pass(
        b.X, w, b.level, b.nlev, b.indptr, margin, ref["z"], ref["perm"],
        ref["l_plus"], ref["l_minus"], ref["dz"], ref["sweep"], ref["grad"])
    assert value == max(v_ref, 0.0)
    got = {"z": b.z, "perm": b.perm, "l_plus": b.l_plus,
           "l_minus": b.l_minus, "dz": b.dz, "sweep": b.sweep, "grad": grad}
    for key, want in ref.items():
        np.testing.assert_array_equal(got[key].view(np.uint8),
                                      want.view(np.uint8), err_msg=key)
    s = rng.normal(size=d)
    hv, _ = b.hess_vec(s)
    out, t, u = np.empty(d), np.empty(n), np.empty(n)
    kf.hess_vec_one_pass(b.X, s, b.nlev, ref["perm"], b.indptr, ref["sweep"],
                         t, u, out)
    np.testing.assert_array_equal(hv, out)


def query_blocks(qid, order_of_queries):
    """Rows grouped by query, queries in the given order (contiguous input)."""
    return np.concatenate([np.flatnonzero(qid == q) for q in order_of_queries])


@pytest.mark.parametrize("seed", range(4))
def test_contiguous_unsorted_and_scattered_inputs_agree(seed):
    """The same documents listed query by query in qid order, query by query
    in another order (both used in place), and scattered (the grouped copy):
    per-document results identical, the loss and products to rounding."""
    rng, X, y, qid = random_ranking(seed, n=300, d=7, n_queries=9, levels=4)
    y = y.astype(np.float64)
    w, s = rng.normal(size=7), rng.normal(size=7)
    qs = np.unique(qid)
    layouts = {
        "sorted": query_blocks(qid, qs),
        "unsorted": query_blocks(qid, rng.permutation(qs)),
        "scattered": rng.permutation(len(qid)),
    }
    got = {}
    for name, idx in layouts.items():
        b = tb._OnePassTree(np.ascontiguousarray(X[idx]), 1.0, y[idx],
                            group_queries(qid[idx]))
        assert (b.rows is not None) == (name == "scattered")
        assert b.copy_bytes == (X.nbytes if name == "scattered" else 0)
        value, grad = b.value_grad(w)
        grad = grad.copy()
        hv, _ = b.hess_vec(s)
        back = np.empty_like(idx)
        back[idx] = np.arange(len(idx))
        got[name] = (value, grad, hv, b.from_rows(b.dz)[back],
                     b.from_rows(b._u)[back])
    ref = got["sorted"]
    for name, res in got.items():
        np.testing.assert_array_equal(res[3], ref[3])
        np.testing.assert_array_equal(res[4], ref[4])
        assert res[0] == pytest.approx(ref[0], rel=8 * U)
        for a, r in ((res[1], ref[1]), (res[2], ref[2])):
            np.testing.assert_allclose(a, r, rtol=1e-13,
                                       atol=1e-13 * np.abs(r).max())


def test_query_groups_runs():
    g = group_queries(np.array([5, 5, 2, 2, 2, 9]))
    np.testing.assert_array_equal(g.runs, [0, 2, 5, 6])
    assert group_queries(np.array([1, 2, 1])).runs is None
    np.testing.assert_array_equal(group_queries(np.array([3])).runs,
                                  [0, 1])


@pytest.mark.parametrize("seed", [0, 1])
def test_kernels_equal_their_py_func(seed):
    """Compiled kernels against their pure-Python versions (which call the
    Python specification of row_dot and no prefetch)."""
    rng, X, y, qid = random_ranking(seed, n=80, d=11, n_queries=5, levels=4)
    idx = np.argsort(qid, kind="stable")
    X, y, qid = np.ascontiguousarray(X[idx]), y[idx].astype(float), qid[idx]
    g = group_queries(qid)
    from refimpl.sv_stats import query_levels

    level, nlev = query_levels(y, g.order, g.indptr)
    n, d = X.shape
    w, s = rng.normal(size=d), rng.normal(size=d)
    outs = []
    for vg, hv in ((kf.value_grad_one_pass, kf.hess_vec_one_pass),
                   (kf.value_grad_one_pass.py_func, kf.hess_vec_one_pass.py_func)):
        z, dz, t, u = (np.empty(n) for _ in range(4))
        perm, lp, lm = (np.empty(n, np.int64) for _ in range(3))
        sweep = np.zeros((4, n), np.int64)
        grad, out = np.empty(d), np.empty(d)
        v = vg(X, w, level, nlev, g.indptr, 1.0, z, perm, lp, lm, dz, sweep,
               grad)
        hv(X, s, nlev, perm, g.indptr, sweep, t, u, out)
        outs.append((v, z, perm, lp, lm, dz, sweep, grad, t, u, out))
    assert outs[0][0] == outs[1][0]
    for a, b in zip(outs[0][1:], outs[1][1:]):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# the loss: which path, and the score-reuse methods
# --------------------------------------------------------------------------


def loss_data(seed, contiguous):
    rng, X, y, qid = random_ranking(seed, n=120, d=6, n_queries=6, levels=4)
    if contiguous:
        idx = np.argsort(qid, kind="stable")
        X, y, qid = X[idx], y[idx], qid[idx]
    return rng, X, y, qid


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_loss_one_pass_agrees_with_two_pass(seed, contiguous):
    rng, X, y, qid = loss_data(seed, contiguous)
    one = PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass=True)
    two = PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass=False)
    pairs = PairwiseSquaredHinge(X, y, qid, backend="pairs")
    assert one.one_pass_ and not two.one_pass_ and not pairs.one_pass_
    assert one.one_pass_copy_bytes_ == (0 if contiguous else X.nbytes)
    w, s = rng.normal(size=6), rng.normal(size=6)
    for L in (one, two, pairs):
        L.fun(w)
    for other in (two, pairs):
        assert one.fun(w) == pytest.approx(other.fun(w), rel=1e-12)
        for a, b in ((one.grad(w), other.grad(w)),
                     (one.hess_vec(s), other.hess_vec(s))):
            np.testing.assert_allclose(a, b, rtol=1e-11,
                                       atol=1e-11 * np.abs(b).max())
        assert one.value_at(s) == pytest.approx(other.value_at(s), rel=1e-12)
    # score reuse: the bits of scores(), and fun_from_scores == fun
    for L in (one, two, pairs):
        L.fun(w)
        np.testing.assert_array_equal(L.last_scores(), L.scores(w))
        hv, t = L.hess_vec_scores(s)
        np.testing.assert_array_equal(t, L.scores(s))
        np.testing.assert_array_equal(hv, L.hess_vec(s))
        assert L.fun_from_scores(w, L.scores(w)) == L.fun(w)
        # the state stays at w
        f_w = L.fun(w)
        L.fun_from_scores(s, L.scores(s))
        np.testing.assert_array_equal(L.last_scores(), L.scores(w))
        assert L.fun_from_scores(w, L.last_scores()) == f_w


def test_loss_one_pass_choice(monkeypatch):
    _, X, y, qid = loss_data(0, contiguous=False)
    # small X: stays in the cache, two passes
    assert not PairwiseSquaredHinge(X, y, qid, backend="tree").one_pass_
    monkeypatch.setattr(sh, "ONE_PASS_MIN_BYTES", 0)
    assert PairwiseSquaredHinge(X, y, qid, backend="tree").one_pass_
    assert not PairwiseSquaredHinge(X, y, qid, backend="tree",
                                    tree_method="avl").one_pass_
    assert not PairwiseSquaredHinge(sp.csr_matrix(X), y, qid,
                                    backend="tree").one_pass_
    monkeypatch.setattr(sh, "ONE_PASS_COPY_MAX_BYTES", X.nbytes - 1)
    assert not PairwiseSquaredHinge(X, y, qid, backend="tree").one_pass_
    forced = PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass=True)
    assert forced.one_pass_ and forced.one_pass_copy_bytes_ == X.nbytes
    _, Xc, yc, qc = loss_data(0, contiguous=True)
    L = PairwiseSquaredHinge(Xc, yc, qc, backend="tree")
    assert L.one_pass_ and L.one_pass_copy_bytes_ == 0 and L.score_reuse
    assert not L.with_backend("pairs").score_reuse
    assert L.with_backend("tree", one_pass=False).score_reuse
    assert not L.with_backend("tree", tree_method="avl").score_reuse
    assert not L.with_backend("tree", one_pass=False).one_pass_
    with pytest.raises(DataError, match="one_pass"):
        PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass="yes")
    with pytest.raises(DataError, match="z must have shape"):
        L.fun_from_scores(np.zeros(6), np.zeros(3))


def test_hess_vec_before_fun_and_grad_caching():
    _, X, y, qid = loss_data(1, contiguous=True)
    L = PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass=True)
    with pytest.raises(RuntimeError):
        L.hess_vec(np.ones(6))
    with pytest.raises(RuntimeError):
        L.last_scores()
    w = np.linspace(-1, 1, 6)
    g = L.grad(w)  # evaluates fun first
    g[:] = 0.0  # the caller's copy
    np.testing.assert_array_equal(L.grad(w), L.with_backend("tree").grad(w))
    assert kos.SMALL_QUERY > 0


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("backend", ["one pass", "tree", "pairs"])
def test_accept_trial_gives_the_state_of_fun(backend, contiguous):
    """accept_trial after fun_from_scores at the exact scores: the same
    state as fun at that point (one-pass: the trial's buffers adopted, the
    gradient and exact scores from one pass), bit for bit; at another point
    than the last trial it is fun itself."""
    rng, X, y, qid = loss_data(2, contiguous)
    one_pass = backend == "one pass"
    L = PairwiseSquaredHinge(X, y, qid, backend="pairs" if backend == "pairs"
                             else "tree", one_pass=one_pass)
    assert L.one_pass_ == one_pass
    ref = L.with_backend(L.backend)
    w, w2, s = (rng.normal(size=6) for _ in range(3))
    L.fun(w)
    f2 = L.fun_from_scores(w2, L.scores(w2))
    assert L.accept_trial(w2) == f2 == ref.fun(w2)
    np.testing.assert_array_equal(L.grad(w2), ref.grad(w2))
    np.testing.assert_array_equal(L.last_scores(), ref.last_scores())
    np.testing.assert_array_equal(L.hess_vec(s), ref.hess_vec(s))
    assert L.n_active_pairs() == ref.n_active_pairs()
    # no pending trial at w: accept_trial evaluates
    assert L.accept_trial(w) == ref.fun(w)
    np.testing.assert_array_equal(L.hess_vec(s), ref.hess_vec(s))


@PROPERTY
@given(instances(max_queries=4, max_docs=80), st.integers(0, 2**31 - 1),
       st.sampled_from(["random", "sorted", "reversed", "near"]))
def test_sort_from_a_previous_order_is_the_stable_sort(inst, seed, start):
    """sort_by_score_from gives sort_by_score's permutation bit for bit from
    any starting order (ties, NaN, the scratch fallback of reversed starts
    included)."""
    z, _, _, qid, _ = inst
    rng = np.random.default_rng(seed)
    if rng.random() < 0.2:
        z = np.where(rng.random(len(z)) < 0.1, np.nan, z)
    g = group_queries(qid)
    ref = np.empty(len(z), np.int64)
    kos.sort_by_score(z, g.order, g.indptr, ref)
    prev = g.order.copy()
    for q in range(len(g.indptr) - 1):
        sl = slice(g.indptr[q], g.indptr[q + 1])
        if start == "random":
            prev[sl] = rng.permutation(prev[sl])
        elif start == "sorted":
            prev[sl] = ref[sl]
        elif start == "reversed":
            prev[sl] = ref[sl][::-1]
        else:  # the sort of slightly different scores
            zz = z + 1e-3 * rng.normal(size=len(z))
            prev[sl] = prev[sl][np.argsort(zz[prev[sl]], kind="stable")]
    pos = np.empty(len(z), np.int64)
    pos[g.order] = np.arange(len(z))
    for f in (kos.sort_by_score_from, kos.sort_by_score_from.py_func):
        perm = np.full(len(z), -1, np.int64)
        zb = np.empty(max(1, int(np.diff(g.indptr).max())))
        f(z, g.order, g.indptr, pos, prev, perm, zb)
        np.testing.assert_array_equal(perm, ref)


@pytest.mark.parametrize("case", ["long query", "many levels", "prefix only"])
def test_one_pass_hessian_paths_equal_two_pass(case):
    """Each path of the one-pass Hessian product (the loop with the prefix
    form alone, and the loop that also takes the running sweep of a query
    longer than PREFIX_DOCS or the tree of one with more than
    DIRECT_LEVELS levels) gives the score-space product of the two-pass
    kernel bit for bit."""
    rng = np.random.default_rng(5)
    sizes = {"long query": [kos.PREFIX_DOCS + 300, 40, 7],
             "many levels": [60, 40, 7], "prefix only": [60, 40, 7]}[case]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    top = 30 if case == "many levels" else 5
    y = rng.integers(0, top, len(qid)).astype(np.float64)
    X = rng.normal(size=(len(qid), 5))
    w, s = rng.normal(size=5), rng.normal(size=5)
    b = tb._OnePassTree(X, 1.0, y, group_queries(qid))
    b.value_grad(w)
    _, t_rows = b.hess_vec(s)
    two = tb._TreeBackend(None, len(qid), 1.0, y, group_queries(qid))
    two.value_dz(b.z.copy())
    np.testing.assert_array_equal(two.hess_dz(t_rows), b._u)
    kmax = int(b.nlev.max())
    lmax = int(np.diff(b.indptr).max())
    assert kos._prefix_only(kmax, lmax) == (case == "prefix only")
