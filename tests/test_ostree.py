"""Support-vector statistics by trees (Lee & Lin 2014, Algorithm 2) vs pairs."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from refimpl._validation import group_queries
from refimpl.exceptions import DataError
from refimpl.kernels import direct_count as kdc
from refimpl.kernels import ostree as kos
from refimpl.kernels import prsvm as kpr
from refimpl.kernels import squared_hinge as ksh
from refimpl.kernels._ddlanes import LANES, dd_prefix, dd_step, dd_step_counted
from refimpl.losses._tree_backend import _TreeBackend
from refimpl.losses.squared_hinge import _PairsBackend
from refimpl.pairs import preference_pairs
from refimpl.sv_stats import METHODS, query_levels, sv_statistics

PROPERTY = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------
# random instances
# --------------------------------------------------------------------------


@st.composite
def instances(draw, max_queries=6, max_docs=25):
    """Small ranking instances with tied scores and non-contiguous qids."""
    n_q = draw(st.integers(1, max_queries))
    qvals = draw(
        st.lists(st.integers(-50, 10**6), min_size=n_q, max_size=n_q, unique=True)
    )
    y, z, t, qid = [], [], [], []
    for qv in qvals:
        m = draw(st.integers(1, max_docs))
        mode = draw(st.sampled_from(["one", "two", "few", "many", "distinct"]))
        if mode == "one":
            y += [float(draw(st.integers(0, 4)))] * m
        elif mode == "two":
            y += draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=m, max_size=m))
        elif mode == "few":
            y += draw(st.lists(st.integers(0, 3), min_size=m, max_size=m))
        elif mode == "many":
            y += draw(st.lists(st.integers(0, 40), min_size=m, max_size=m))
        else:
            y += list(draw(st.permutations(range(m))))
        zmode = draw(st.sampled_from(["int", "half", "float"]))
        if zmode == "int":  # ties, and differences equal to the margin
            z += draw(st.lists(st.integers(-3, 3), min_size=m, max_size=m))
        elif zmode == "half":
            zi = draw(st.lists(st.integers(-6, 6), min_size=m, max_size=m))
            z += [v / 2 for v in zi]
        else:
            z += draw(
                st.lists(st.floats(-3.0, 3.0), min_size=m, max_size=m)
            )
        t += draw(st.lists(st.floats(-10.0, 10.0), min_size=m, max_size=m))
        qid += [qv] * m
    n = len(y)
    shuffle = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    margin = draw(
        st.one_of(st.sampled_from([1.0, 0.5]), st.floats(0.01, 3.0))
    )
    as_arr = lambda v: np.asarray(v, dtype=np.float64)[shuffle]
    return (
        as_arr(z), as_arr(t), as_arr(y),
        np.asarray(qid, dtype=np.int64)[shuffle], margin,
    )


def brute_force(z, t, y, qid, margin):
    """O(n^2) double loop over all pairs, same expression as the pair kernel."""
    n = len(z)
    l_plus = np.zeros(n, dtype=np.int64)
    l_minus = np.zeros(n, dtype=np.int64)
    g_plus = np.zeros(n)
    g_minus = np.zeros(n)
    # Python floats are IEEE doubles: the same rounding as the kernels
    z, t, y, qid = z.tolist(), t.tolist(), y.tolist(), qid.tolist()
    for i in range(n):
        for j in range(n):
            if qid[i] == qid[j] and y[i] > y[j] and margin - (z[i] - z[j]) > 0.0:
                l_minus[i] += 1  # j in SV_i^-
                g_minus[i] += t[j]
                l_plus[j] += 1  # i in SV_j^+
                g_plus[j] += t[i]
    return l_plus, l_minus, g_plus, g_minus


def assert_stats_equal(got, ref):
    lp, lm, gp, gm = got
    np.testing.assert_array_equal(lp, ref[0])
    np.testing.assert_array_equal(lm, ref[1])
    np.testing.assert_allclose(gp, ref[2], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gm, ref[3], rtol=1e-12, atol=1e-12)


def stats(z, t, y, qid, margin, method):
    g = group_queries(qid)
    return sv_statistics(z, t, y, g.order, g.indptr, margin, method)


# --------------------------------------------------------------------------
# property tests against explicit pairs
# --------------------------------------------------------------------------


@PROPERTY
@given(instances())
def test_all_methods_equal_brute_force(inst):
    z, t, y, qid, margin = inst
    ref = brute_force(z, t, y, qid, margin)
    assert ref[0].dtype == np.int64
    assert set(METHODS) == {"direct", "selection_tree", "avl", "prsvm"}
    for method in METHODS:
        got = stats(z, t, y, qid, margin, method)
        assert got[0].dtype == np.int64 and got[1].dtype == np.int64
        assert_stats_equal(got, ref)
    # p_w counted both ways (Lee & Lin 2014, after eq. 19)
    assert ref[0].sum() == ref[1].sum()


@PROPERTY
@given(instances())
def test_counts_equal_active_set_of_pair_kernel(inst):
    """l^+- are the per-document degrees of the explicit kernel's SV(w)."""
    z, t, y, qid, margin = inst
    pairs = preference_pairs(y, qid, require_pairs=False)
    act_i = np.empty(len(pairs), dtype=np.int32)
    act_j = np.empty(len(pairs), dtype=np.int32)
    dz = np.empty(len(z))
    _, n_act = ksh.value_dz(z, pairs.i, pairs.j, margin, dz, act_i, act_j)
    n = len(z)
    exp_minus = np.bincount(act_i[:n_act], minlength=n)
    exp_plus = np.bincount(act_j[:n_act], minlength=n)
    for method in METHODS:
        lp, lm, _, _ = stats(z, t, y, qid, margin, method)
        np.testing.assert_array_equal(lp, exp_plus)
        np.testing.assert_array_equal(lm, exp_minus)


@pytest.mark.parametrize("method", METHODS)
def test_single_document_and_single_level_queries(method):
    # query 7: one document; query 3: three documents, one label; query 5: pairs
    qid = np.array([7, 3, 5, 3, 5, 3, 5])
    y = np.array([2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 1.0])
    z = np.array([0.0, 5.0, 1.0, -5.0, 1.0, 0.0, 2.0])
    t = np.arange(1.0, 8.0)
    got = stats(z, t, y, qid, 1.0, method)
    ref = brute_force(z, t, y, qid, 1.0)
    assert_stats_equal(got, ref)
    for a in got:
        assert np.all(a[[0, 1, 3, 5]] == 0)
    assert ref[0].sum() > 0


def one_query_distinct_levels(n=3000):
    """``y, z, t, qid``: one query of ``n`` documents, every label distinct."""
    rng = np.random.default_rng(5)
    y = rng.permutation(n).astype(np.float64)
    z = np.round(rng.normal(size=n) * 3, 1)
    t = rng.normal(size=n)
    return y, z, t, np.zeros(n, dtype=np.int64)


@pytest.mark.parametrize("method", METHODS)
def test_many_levels_deep_tree(method):
    """One query, thousands of distinct levels: deep AVL / selection trees."""
    y, z, t, qid = one_query_distinct_levels()
    n = len(y)
    same = np.ones((n, n), dtype=bool)
    act = same & (y[:, None] > y[None, :]) & (1.0 - (z[:, None] - z[None, :]) > 0)
    ref = (act.sum(0), act.sum(1), act.T @ t, act @ t)
    got = stats(z, t, y, qid, 1.0, method)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[3], ref[3], rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------
# the example of Lee & Lin (2014), section 2.3
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_paper_section_2_3_example(method):
    """Section 2.3's situation, numbers worked out by hand.

    Provenance: the paper's Figures 1-3 (tree contents) are images absent
    from our text copy; the text only fixes, at i = 1 (smallest score), the
    set (22) = {1, ..., 6} (eq. 23) and y_1 = 4 (Figure 3 caption).  The
    labels, scores and t below are our choice with that property; document 7
    sits exactly at z_1 + 1 and is excluded by the strict inequality.  The
    expected values were derived by hand from eqs. 14-17 (t_j = j).
    """
    z = np.array([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0, 1.6])
    y = np.array([4.0, 1, 3, 5, 4, 2, 5, 1])
    t = np.arange(1.0, 9.0)
    assert set(np.flatnonzero(z < z[0] + 1) + 1) == {1, 2, 3, 4, 5, 6}  # eq. 23
    l_plus = [1, 6, 4, 0, 2, 5, 0, 6]
    g_plus = [4, 26, 17, 0, 11, 20, 0, 26]
    l_minus = [4, 0, 3, 6, 4, 2, 5, 0]
    g_minus = [19, 0, 16, 25, 19, 10, 24, 0]
    got = stats(z, t, y, np.zeros(8), 1.0, method)
    assert_stats_equal(got, (l_plus, l_minus, g_plus, g_minus))
    assert sum(l_plus) == sum(l_minus) == 24  # p_w


# --------------------------------------------------------------------------
# kernels vs their pure-Python versions
# --------------------------------------------------------------------------


def prepared(seed, n_queries=3, max_docs=30, levels=6):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(n_queries, n_queries * max_docs))
    qid = rng.integers(0, n_queries, n) * 10 + 3
    y = rng.integers(0, levels, n).astype(np.float64)
    z = rng.integers(-4, 5, n) / 2.0
    t = rng.normal(size=n)
    g = group_queries(qid)
    level, nlev = query_levels(y, g.order, g.indptr)
    perm = np.empty(n, dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    return z, t, y, g, level, nlev, perm


KERNELS = [
    kdc.sv_stats_direct, kos.sv_stats_selection_tree, kos.sv_stats_avl,
    kpr.sv_stats_prsvm,
]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.__name__)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_equals_py_func(kernel, seed):
    z, t, _, g, level, nlev, perm = prepared(seed)
    outs = []
    for f in (kernel, kernel.py_func):
        out = (
            np.empty(len(z), dtype=np.int64), np.empty(len(z), dtype=np.int64),
            np.empty(len(z)), np.empty(len(z)),
        )
        f(z, t, level, nlev, perm, g.indptr, 1.0, *out)
        outs.append(out)
    assert_stats_equal(outs[0], outs[1])


def test_prsvm_two_level_sets_partition_the_pairs():
    """PRSVM+'s identity before eq. 31: summing the stats of the two-level
    problems {y > r} vs {y = r} over r gives the stats of all pairs."""
    rng = np.random.default_rng(11)
    n = 200
    qid = rng.integers(0, 4, n)
    y = rng.integers(0, 7, n).astype(np.float64)
    z = rng.integers(-6, 7, n) / 4.0
    t = rng.normal(size=n)
    total = [np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n), np.zeros(n)]
    for r in np.unique(y)[:-1]:
        keep = y >= r
        sub = stats(z[keep], t[keep], (y[keep] > r).astype(float), qid[keep],
                    1.0, "selection_tree")
        for tot, part in zip(total, sub):
            tot[keep] += part
    assert_stats_equal(stats(z, t, y, qid, 1.0, "prsvm"), total)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_helpers_equal_py_func(seed):
    z, t, y, g, level, nlev, perm = prepared(seed)
    n, nq = len(z), len(g.indptr) - 1
    lv2, nl2 = np.empty(n, dtype=np.int64), np.empty(nq, dtype=np.int64)
    kos.label_levels.py_func(y, g.order, g.indptr, lv2, nl2)
    np.testing.assert_array_equal(level, lv2)
    np.testing.assert_array_equal(nlev, nl2)
    p2 = np.empty(n, dtype=np.int64)
    kos.sort_by_score.py_func(z, g.order, g.indptr, p2)
    np.testing.assert_array_equal(perm, p2)
    c1, c2 = np.empty(n), np.empty(n)
    kos.center_per_query(t, g.order, g.indptr, c1)
    kos.center_per_query.py_func(t, g.order, g.indptr, c2)
    np.testing.assert_allclose(c1, c2, rtol=1e-12, atol=1e-15)
    # levels are dense ranks of the labels inside each query
    for q in range(nq):
        idx = g.order[g.indptr[q]:g.indptr[q + 1]]
        _, inv = np.unique(y[idx], return_inverse=True)
        np.testing.assert_array_equal(level[idx], inv)
        assert nlev[q] == len(np.unique(y[idx]))
        assert np.all(np.diff(z[perm[g.indptr[q]:g.indptr[q + 1]]]) >= 0)


# --------------------------------------------------------------------------
# the fused Hessian kernel and the small-query sort
# --------------------------------------------------------------------------


def fused_inputs(z, y, qid, margin):
    """Grouping, levels, sort and (brute-force) counts for the fused kernel."""
    g = group_queries(qid)
    level, nlev = query_levels(y, g.order, g.indptr)
    perm = np.empty(len(z), dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    lp, lm, _, _ = brute_force(z, np.zeros(len(z)), y, qid, margin)
    return g, level, nlev, perm, lp, lm


def run_fused(f, z, t, level, nlev, perm, g, margin, lp, lm):
    """The Hessian kernel ``f`` with the sweep record of ``z``."""
    sweep = np.zeros((4, len(z)), dtype=np.int64)
    kos.record_sweeps(z, perm, level, nlev, g.indptr, margin, lp, lm, sweep)
    out = np.full(len(z), np.nan)
    f(t, nlev, perm, g.order, g.indptr, sweep, out)
    return out


def unfused_selection_tree(z, t, level, nlev, perm, g, margin):
    """The previous Hessian path: centre, sv-stats kernel, NumPy assembly."""
    n = len(z)
    tc = np.empty(n)
    kos.center_per_query(t, g.order, g.indptr, tc)
    lp, lm = np.empty(n, np.int64), np.empty(n, np.int64)
    gp, gm = np.empty(n), np.empty(n)
    kos.sv_stats_selection_tree(z, tc, level, nlev, perm, g.indptr, margin,
                                lp, lm, gp, gm)
    return 2.0 * ((lp + lm) * tc - gp - gm)


@PROPERTY
@given(instances())
def test_fused_hess_equals_brute_force(inst):
    """hess_dz_selection_tree vs the O(n^2) statistics and vs explicit pairs.

    Tolerances: against brute-force statistics of the same centred ``t``
    only the summation order of ``gamma`` differs (tree nodes vs a running
    sum), an error below (#terms) eps max|tc| per entry, so rtol 1e-12 with
    atol 1e-12 * scale, scale = max(1, max(l^+ + l^-) max|tc|).  Against
    the pair formula on the raw ``t`` the centring also changes the
    rounding: 1e-10 * scale, as the backend tests.
    """
    z, t, y, qid, margin = inst
    g, level, nlev, perm, lp, lm = fused_inputs(z, y, qid, margin)
    got = run_fused(kos.hess_dz_selection_tree, z, t, level, nlev, perm, g,
                    margin, lp, lm)
    assert np.all(np.isfinite(got))
    tc = np.empty(len(z))
    kos.center_per_query(t, g.order, g.indptr, tc)
    blp, blm, bgp, bgm = brute_force(z, tc, y, qid, margin)
    ref = 2.0 * ((blp + blm) * tc - bgp - bgm)
    scale = max(1.0, float(np.max((blp + blm) * np.abs(tc), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * scale)
    # independent: 2 sum over active pairs (e_i - e_j)(t_i - t_j), raw t
    pairs = preference_pairs(y, qid, require_pairs=False)
    act = margin - (z[pairs.i] - z[pairs.j]) > 0.0
    d = 2.0 * (t[pairs.i] - t[pairs.j])[act]
    n = len(z)
    ref2 = (np.bincount(pairs.i[act], d, n) - np.bincount(pairs.j[act], d, n))
    scale2 = max(1.0, float(np.max((blp + blm) * np.abs(t), initial=0.0)))
    np.testing.assert_allclose(got, ref2, rtol=1e-10, atol=1e-10 * scale2)


@PROPERTY
@given(instances())
def test_fused_hess_equals_unfused_and_py_func(inst):
    """The fused kernel vs its pure-Python version (rtol 1e-12, STYLE) and
    vs the unfused path (centre, sv-stats kernel, NumPy assembly) within
    that path's own plain-float64 error, 1e-12 * max((l^+ + l^-) |tc|)."""
    z, t, y, qid, margin = inst
    g, level, nlev, perm, lp, lm = fused_inputs(z, y, qid, margin)
    got = run_fused(kos.hess_dz_selection_tree, z, t, level, nlev, perm, g,
                    margin, lp, lm)
    py = run_fused(kos.hess_dz_selection_tree.py_func, z, t, level, nlev, perm,
                   g, margin, lp, lm)
    np.testing.assert_allclose(got, py, rtol=1e-12, atol=1e-300)
    unfused = unfused_selection_tree(z, t, level, nlev, perm, g, margin)
    scale = max(1.0, float(np.max((lp + lm) * np.abs(t), initial=0.0)))
    np.testing.assert_allclose(got, unfused, rtol=1e-12, atol=1e-12 * scale)


def test_fused_hess_single_document_and_single_level_queries():
    # query 7: one document; query 3: one label (zeros); query 5: pairs
    qid = np.array([7, 3, 5, 3, 5, 3, 5])
    y = np.array([2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 1.0])
    z = np.array([0.0, 5.0, 1.0, -5.0, 1.0, 0.0, 2.0])
    t = np.arange(1.0, 8.0)
    g, level, nlev, perm, lp, lm = fused_inputs(z, y, qid, 1.0)
    got = run_fused(kos.hess_dz_selection_tree, z, t, level, nlev, perm, g,
                    1.0, lp, lm)
    np.testing.assert_array_equal(got[[0, 1, 3, 5]], 0.0)
    # query 5 = docs 2, 4, 6 with y = 0, 2, 1 and z = 1, 1, 2: active pairs
    # (4, 2) [r = 1], (4, 6) [r = 2], (6, 2) [r = 0: not active]
    expected = np.zeros(7)
    for i, j in [(4, 2), (4, 6)]:
        expected[i] += 2 * (t[i] - t[j])
        expected[j] -= 2 * (t[i] - t[j])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_fused_hess_query_longer_than_the_prefix_scratch():
    """A query of more than PREFIX_DOCS documents and 5 levels takes the
    running direct sweep, a shorter one the prefix form: both within the
    unfused path's error of its result, and the short queries' results
    unchanged by the long one beside them."""
    rng = np.random.default_rng(3)
    n_long = kos.PREFIX_DOCS + 500
    qid = np.r_[np.zeros(n_long, np.int64), np.ones(300, np.int64)]
    y = rng.integers(0, 5, len(qid)).astype(np.float64)
    z = rng.normal(size=len(qid)) * 3.0
    t = rng.normal(size=len(qid))
    g = group_queries(qid)
    level, nlev = query_levels(y, g.order, g.indptr)
    perm = np.empty(len(z), dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    n = len(z)
    lp, lm, dz = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    sweep = np.zeros((4, n), np.int64)
    kos.value_dz_selection_tree(z, level, nlev, perm, g.order, g.indptr, 1.0,
                                lp, lm, dz, sweep)
    got = run_fused(kos.hess_dz_selection_tree, z, t, level, nlev, perm, g,
                    1.0, lp, lm)
    ref = unfused_selection_tree(z, t, level, nlev, perm, g, 1.0)
    scale = float(np.max((lp + lm) * np.abs(t)))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * scale)
    short = qid == 1
    g1 = group_queries(qid[short])
    lev1, nl1 = query_levels(y[short], g1.order, g1.indptr)
    p1 = np.empty(short.sum(), dtype=np.int64)
    kos.sort_by_score(z[short], g1.order, g1.indptr, p1)
    alone = run_fused(kos.hess_dz_selection_tree, z[short], t[short], lev1,
                      nl1, p1, g1, 1.0, lp[short], lm[short])
    np.testing.assert_array_equal(got[short], alone)


def test_fused_hess_many_levels_deep_tree():
    """One query, 3,000 distinct levels: the branch-free sibling index
    reaches the last leaf (2p - 1) and slot 0."""
    y, z, t, qid = one_query_distinct_levels()
    n = len(y)
    g = group_queries(qid)
    level, nlev = query_levels(y, g.order, g.indptr)
    perm = np.empty(n, dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    act = (y[:, None] > y[None, :]) & (1.0 - (z[:, None] - z[None, :]) > 0)
    lp, lm = act.sum(0), act.sum(1)
    got = run_fused(kos.hess_dz_selection_tree, z, t, level, nlev, perm, g,
                    1.0, lp, lm)
    tc = t - t.mean()
    ref = 2.0 * ((lp + lm) * tc - act.T @ tc - act @ tc)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_allclose(
        got, unfused_selection_tree(z, t, level, nlev, perm, g, 1.0),
        rtol=1e-10, atol=1e-10 * np.abs(ref).max(),
    )


@PROPERTY
@given(instances(max_queries=4, max_docs=80), st.booleans())
def test_sort_by_score_stable_and_equal_to_py_func(inst, tie_heavy):
    """Insertion sort (<= SMALL_QUERY docs) and mergesort (longer queries)
    both give NumPy's stable argsort: equal scores keep ``order``'s order."""
    z, _, _, qid, _ = inst
    if tie_heavy:
        z = np.floor(z)
    g = group_queries(qid)
    perm = np.empty(len(z), dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    for q in range(len(g.indptr) - 1):
        idx = g.order[g.indptr[q]:g.indptr[q + 1]]
        expected = idx[np.argsort(z[idx], kind="stable")]
        np.testing.assert_array_equal(perm[g.indptr[q]:g.indptr[q + 1]], expected)
    p2 = np.empty(len(z), dtype=np.int64)
    kos.sort_by_score.py_func(z, g.order, g.indptr, p2)
    np.testing.assert_array_equal(perm, p2)


@pytest.mark.parametrize("m", [1, 2, kos.SMALL_QUERY, kos.SMALL_QUERY + 1, 100])
def test_sort_by_score_ties_and_nan_both_paths(m):
    """All-equal scores keep input order; NaN goes last, as numba's and
    NumPy's float sorts put it (inputs are validated finite, but the two
    sorting paths must not disagree even then)."""
    rng = np.random.default_rng(m)
    qid = np.zeros(m, dtype=np.int64)
    g = group_queries(qid)
    for z in (np.zeros(m), rng.integers(0, 3, m).astype(float),
              np.where(rng.random(m) < 0.2, np.nan, rng.integers(0, 3, m))):
        perm = np.empty(m, dtype=np.int64)
        kos.sort_by_score(z, g.order, g.indptr, perm)
        np.testing.assert_array_equal(perm, np.argsort(z, kind="stable"))


@njit
def _bucket_sorted(z):
    """_bucket_sort_query on one query of scores ``z``: (accepted, perm)."""
    n = len(z)
    order = np.arange(n)
    perm = np.full(n, -1)
    zb = z.copy()
    kb, ib = np.empty(n), np.empty(n, dtype=np.int64)
    cnt = np.empty(n + 1, dtype=np.int64)
    ok = kos._bucket_sort_query(order, 0, n, perm, zb, kb, ib, cnt)
    return ok, perm


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(kos.SMALL_QUERY + 1, 3000), st.integers(0, 2**31 - 1),
       st.sampled_from(["normal", "wide", "tiny", "ties", "signed zeros",
                        "bunched", "extremes", "non-finite", "subnormal"]))
def test_bucket_sort_is_the_stable_sort_or_declines(n, seed, kind):
    """The bucket sort of long queries: where it accepts, the stable
    argsort (ties in input order, -0.0 equal to 0.0); it declines on a
    non-finite score or range and on scores bunched in a few buckets
    (more than BUCKET_MOVES moves per document), and sort_by_score, which
    then takes the mergesort, is the stable argsort either way."""
    rng = np.random.default_rng(seed)
    z = {"normal": rng.normal(size=n),
         "wide": rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n),
         "tiny": rng.normal(size=n) * 1e-300,
         "ties": rng.integers(-3, 4, n).astype(float),
         "signed zeros": np.where(rng.random(n) < 0.5, -0.0, 0.0)
         + np.where(rng.random(n) < 0.1, 1.0, 0.0),
         "bunched": rng.standard_cauchy(n) ** 5,
         "extremes": np.r_[1.7e308, -1.7e308, rng.normal(size=n)][:n],
         "non-finite": np.r_[rng.normal(size=n - 1), np.inf],
         "subnormal": rng.integers(-40, 40, n) * 5e-324}[kind]
    ok, perm = _bucket_sorted(z)
    expected = np.argsort(z, kind="stable")
    if ok:
        np.testing.assert_array_equal(perm, expected)
    if kind in ("extremes", "non-finite"):
        assert not ok
    if kind in ("normal", "ties"):
        assert ok  # spread scores: O(l) moves
    g = group_queries(np.zeros(n, dtype=np.int64))
    got = np.empty(n, dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, got)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("m", [kos.SMALL_QUERY + 1, 120, 700])
@pytest.mark.parametrize("case", ["increasing", "steps", "signed zeros",
                                  "last out of place", "first out of place",
                                  "decreasing"])
def test_sort_by_score_inputs_already_in_order(m, case):
    """A query longer than SMALL_QUERY whose scores are already in order
    (ties included, -0.0 beside 0.0) is taken as it is; one out of place
    sends it to the mergesort: both give the stable argsort."""
    rng = np.random.default_rng(m)
    z = {"increasing": np.sort(rng.normal(size=m)),
         "steps": np.repeat(np.arange(m // 3 + 1.0), 3)[:m],
         "signed zeros": np.where(rng.random(m) < 0.5, -0.0, 0.0),
         "last out of place": np.r_[np.arange(m - 1.0), -1.0],
         "first out of place": np.r_[float(m), np.arange(m - 1.0)],
         "decreasing": -np.arange(float(m))}[case]
    qid = np.repeat([4, 9], [m, 5])
    z = np.r_[z, [3.0, 1.0, 2.0, 1.0, 0.0]]
    g = group_queries(qid)
    perm = np.empty(len(z), dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    expected = np.r_[np.argsort(z[:m], kind="stable"),
                     m + np.argsort(z[m:], kind="stable")]
    np.testing.assert_array_equal(perm, expected)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, kos.RADIX_MIN + 600), min_size=1, max_size=3),
       st.integers(0, 2**31 - 1),
       st.sampled_from(["random", "ties", "signed zeros", "non-finite",
                        "one binade", "clustered"]),
       st.sampled_from(["random", "near", "reversed"]))
def test_sort_from_radix_path_is_the_stable_sort(sizes, seed, kind, start):
    """Queries of RADIX_MIN documents or more that the insertion sort from
    the previous order gives up on go to the LSD radix sort: the same
    permutation as sort_by_score (ties in ``order``'s order, -0.0 equal to
    0.0, NaN last), compiled and as Python."""
    rng = np.random.default_rng(seed)
    sizes = [max(s, kos.RADIX_MIN) if i == 0 else s
             for i, s in enumerate(sizes)]
    n = sum(sizes)
    qid = np.repeat(np.arange(len(sizes)), sizes)[rng.permutation(n)]
    z = rng.standard_normal(n)
    if kind == "ties":
        z = rng.integers(-3, 4, n).astype(float)
    elif kind == "signed zeros":
        z = rng.choice([-0.0, 0.0, 1.0, -1.0], size=n)
    elif kind == "non-finite":
        z[rng.random(n) < 0.05] = np.nan
        z[rng.random(n) < 0.05] = np.inf
        z[rng.random(n) < 0.05] = -np.inf
    elif kind == "one binade":   # sign and exponent bits equal: passes skipped
        z = 1.0 + rng.random(n)
    elif kind == "clustered":
        z = 1e8 + 1e-6 * rng.standard_normal(n)
    g = group_queries(qid)
    ref = np.empty(n, np.int64)
    kos.sort_by_score(z, g.order, g.indptr, ref)
    prev = g.order.copy()
    for q in range(len(g.indptr) - 1):
        sl = slice(g.indptr[q], g.indptr[q + 1])
        if start == "random":
            prev[sl] = rng.permutation(prev[sl])
        elif start == "reversed":
            prev[sl] = ref[sl][::-1]
        else:   # the sort of scores one Frank-Wolfe step away
            zz = 0.9 * np.nan_to_num(z) + 0.1 * rng.random(n)
            prev[sl] = prev[sl][np.argsort(zz[prev[sl]], kind="stable")]
    pos = np.empty(n, np.int64)
    pos[g.order] = np.arange(n)
    zb = np.empty(int(np.diff(g.indptr).max()))
    for f in (kos.sort_by_score_from, kos.sort_by_score_from.py_func):
        perm = np.full(n, -1, np.int64)
        f(z, g.order, g.indptr, pos, prev, perm, zb)
        np.testing.assert_array_equal(perm, ref)


# --------------------------------------------------------------------------
# the loss backend vs explicit pairs
# --------------------------------------------------------------------------


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(instances(), st.integers(0, 2**31 - 1))
def test_tree_backend_equals_pairs_backend(inst, seed):
    z, t, y, qid, margin = inst
    rng = np.random.default_rng(seed)
    n = len(z)
    z = z + rng.choice([0.0, 100.0])  # a common offset must not hurt
    z2 = z + rng.normal(size=n)
    groups = group_queries(qid)
    pairs = preference_pairs(y, qid, require_pairs=False)
    ref = _PairsBackend(pairs, n, margin)
    v_ref, dz_ref = ref.value_dz(z)
    dz_ref = dz_ref.copy()
    scale = max(1.0, abs(v_ref))
    for method in METHODS:
        b = _TreeBackend(None, n, margin, y, groups, method=method)
        np.testing.assert_array_equal(b.hess_dz(t), 0.0)  # before any value_dz
        v, dz = b.value_dz(z)
        np.testing.assert_allclose(v, v_ref, rtol=1e-10, atol=1e-10 * scale)
        np.testing.assert_allclose(dz, dz_ref, rtol=1e-10, atol=1e-10 * scale)
        assert b.n_active() == ref.n_active()
        # value() at another point must not disturb the cached active set
        np.testing.assert_allclose(
            b.value(z2), ref.value(z2), rtol=1e-10, atol=1e-10 * scale
        )
        assert b.n_active() == ref.n_active()
        h_ref = ref.hess_dz(t)
        np.testing.assert_allclose(
            b.hess_dz(t), h_ref, rtol=1e-10,
            atol=1e-10 * max(1.0, np.abs(h_ref).max(initial=0.0)),
        )


def test_tree_backend_finite_difference():
    """dz is the gradient of value (away from the kinks)."""
    rng = np.random.default_rng(3)
    n = 60
    qid = rng.integers(0, 3, n)
    y = rng.integers(0, 4, n).astype(float)
    z = rng.normal(size=n)
    b = _TreeBackend(None, n, 1.0, y, group_queries(qid))
    dz = b.value_dz(z)[1].copy()
    h = 1e-6
    fd = np.array([
        (b.value(z + h * e) - b.value(z - h * e)) / (2 * h) for e in np.eye(n)
    ])
    np.testing.assert_allclose(dz, fd, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------
# validation happens in Python
# --------------------------------------------------------------------------


def test_invalid_inputs_raise_before_numba():
    z = np.zeros(3)
    g = group_queries(np.array([1, 1, 2]))
    with pytest.raises(DataError, match="method"):
        sv_statistics(z, z, z, g.order, g.indptr, method="rbtree")
    with pytest.raises(DataError, match="t must have shape"):
        sv_statistics(z, np.zeros(2), z, g.order, g.indptr)
    with pytest.raises(DataError, match="NaN"):
        sv_statistics(np.array([0.0, np.nan, 1.0]), z, z, g.order, g.indptr)
    with pytest.raises(DataError, match="permutation"):
        sv_statistics(z, z, z, np.array([0, 0, 1]), g.indptr)
    with pytest.raises(DataError, match="indptr"):
        sv_statistics(z, z, z, g.order, np.array([0, 2]))
    with pytest.raises(DataError, match="margin"):
        sv_statistics(z, z, z, g.order, g.indptr, margin=np.inf)
    with pytest.raises(DataError, match="method"):
        _TreeBackend(None, 3, 1.0, z, g, method="rbtree")
    with pytest.raises(DataError, match="t must have shape"):
        _TreeBackend(None, 3, 1.0, z, g).hess_dz(np.zeros(2))


def test_avl_insert_stays_balanced():
    """Ascending insertions (worst case for an unbalanced BST) keep AVL height."""
    k = 1000
    inode = np.empty((k, 6), dtype=np.int64)
    fnode = np.empty((k, 2))
    path = np.empty(k + 1, dtype=np.int64)
    root, n_nodes = -1, 0
    for r in list(range(k)) + [3, 3, 999]:  # then three repeated keys
        root, n_nodes = kos._avl_insert(r, float(r), root, n_nodes, inode, fnode, path)
    assert n_nodes == k
    assert inode[root, kos.HEIGHT] <= 1.4405 * np.log2(k + 2) - 0.3277  # AVL bound
    assert inode[root, kos.SUBCNT] == k + 3
    assert fnode[root, kos.SUBSUM] == sum(range(k)) + 3 + 3 + 999

    def check(x):
        """In-order keys, AVL balance and aggregates of the subtree at x."""
        if x == -1:
            return [], 0, 0, 0.0
        kl, hl, cl, sl = check(inode[x, kos.LEFT])
        kr, hr, cr, sr = check(inode[x, kos.RIGHT])
        assert abs(hl - hr) <= 1
        assert inode[x, kos.HEIGHT] == 1 + max(hl, hr)
        assert inode[x, kos.SUBCNT] == cl + cr + inode[x, kos.CNT]
        assert fnode[x, kos.SUBSUM] == sl + sr + fnode[x, kos.SUM]
        keys = kl + [int(inode[x, kos.KEY])] + kr
        return keys, inode[x, kos.HEIGHT], inode[x, kos.SUBCNT], fnode[x, kos.SUBSUM]

    assert check(root)[0] == list(range(k))
    c, s = kos._avl_larger(root, 500, inode, fnode)
    assert c == 499 + 1 and s == sum(range(501, k)) + 999
    c, s = kos._avl_smaller(root, 4, inode, fnode)
    assert c == 4 + 2 and s == 0 + 1 + 2 + 3 + 3 + 3


# --------------------------------------------------------------------------
# accuracy on wide and clustered score ranges (issue 14, item 4)
# --------------------------------------------------------------------------
#
# The reference is the explicit-pairs computation in Python floats (IEEE
# binary64, the kernels' arithmetic), each pair term rounded once or twice
# and the terms summed exactly by math.fsum.  With u = 2^-53 the asserted
# bound for every per-document coefficient c_i (and the loss) is
#
#     |tree_i - ref_i| <= 8 u M_i + 32 (l_q + 16) u^2 W_i,
#
# where M_i is the sum of the magnitudes of the pair terms (|t_i - t_j| for
# the Hessian product; margin + |z_i - z_j| + |r| for the gradient, the
# size of what the rounded term can be off by; their squares for the loss)
# and W_i the sum of the magnitudes of the operands the tree adds
# (|t_i| + |t_j|; margin + |z_i| + |z_j|; its square).  The first term
# covers the rounding of the reference's own terms, of fsum's result and of
# the kernel's final rounding; the second the double-double accumulation
# (each addition to a low-order part loses at most u times a partial sum of
# at most W_i, over at most l_q + log2(k_q) + a few additions).  Both are
# statements about binary64 round-to-nearest operations only, so they hold
# on every machine.  Plain float64 sums (the code before the fix) err by
# about u W_i, which exceeds the bound whenever W_i / M_i > 1e8 or so: the
# cluster cases below.

U = 2.0**-53


def pair_reference(z, t, y, qid, margin):
    """Loss, dz, Hessian product and the M, W magnitudes by explicit pairs."""
    n = len(z)
    z, t, y, qid = z.tolist(), t.tolist(), y.tolist(), qid.tolist()
    vt, vm, vw = [], [], []
    gt = [[] for _ in range(n)]
    ht = [[] for _ in range(n)]
    gm, gw, hm, hw = (np.zeros(n) for _ in range(4))
    l_plus, l_minus = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for i in range(n):
        for j in range(n):
            if not (qid[i] == qid[j] and y[i] > y[j]):
                continue
            r = margin - (z[i] - z[j])
            if not r > 0.0:
                continue
            l_minus[i] += 1
            l_plus[j] += 1
            mag = margin + abs(z[i] - z[j]) + r
            wid = margin + abs(z[i]) + abs(z[j])
            vt.append(r * r)
            vm.append(mag * mag)
            vw.append(wid * wid)
            gt[i].append(-2.0 * r)
            gt[j].append(2.0 * r)
            d = 2.0 * (t[i] - t[j])
            ht[i].append(d)
            ht[j].append(-d)
            for k in (i, j):
                gm[k] += 2.0 * mag
                gw[k] += 2.0 * wid
                hm[k] += abs(d)
                hw[k] += 2.0 * (abs(t[i]) + abs(t[j]))
    value = math.fsum(vt)
    dz = np.array([math.fsum(a) for a in gt])
    hv = np.array([math.fsum(a) for a in ht])
    return {"value": value, "dz": dz, "hv": hv, "l_plus": l_plus,
            "l_minus": l_minus, "vm": math.fsum(vm), "vw": math.fsum(vw),
            "gm": gm, "gw": gw, "hm": hm, "hw": hw}


def accuracy_bound(m, w, lq):
    return 8.0 * U * m + 32.0 * (lq + 16) * U * U * w


def assert_within(got, ref, m, w, lq, what):
    got, ref = np.atleast_1d(got), np.atleast_1d(ref)
    bound = accuracy_bound(np.atleast_1d(m), np.atleast_1d(w), lq)
    err = np.abs(got - ref)
    bad = np.flatnonzero(~(err <= bound))
    assert bad.size == 0, (
        f"{what}: |tree - pairs| exceeds the bound at {bad[:5]}: "
        f"err {err[bad[:5]]}, bound {bound[bad[:5]]}, ref {ref[bad[:5]]}"
    )


def check_tree_accuracy(z, t, y, qid, margin):
    ref = pair_reference(z, t, y, qid, margin)
    lq = int(np.max(np.unique(qid, return_counts=True)[1]))
    b = _TreeBackend(None, len(z), margin, y, group_queries(qid))
    value, dz = b.value_dz(z)
    np.testing.assert_array_equal(b.l_plus, ref["l_plus"])
    np.testing.assert_array_equal(b.l_minus, ref["l_minus"])
    assert_within(value, ref["value"], ref["vm"], ref["vw"], lq, "loss")
    assert_within(dz, ref["dz"], ref["gm"], ref["gw"], lq, "gradient dz")
    assert_within(b.value(z), ref["value"], ref["vm"], ref["vw"], lq,
                  "value()")
    assert_within(b.hess_dz(t), ref["hv"], ref["hm"], ref["hw"], lq,
                  "Hessian product")
    return ref


@st.composite
def clustered_instances(draw, max_queries=3, max_docs=14):
    """Queries whose scores (and t) sit in one to three clusters at
    +-10^k, k up to 12, with ties inside clusters, one-document queries and
    all-equal labels."""
    n_q = draw(st.integers(1, max_queries))
    z, t, y, qid = [], [], [], []
    for q in range(n_q):
        m = draw(st.integers(1, max_docs))
        lab = draw(st.sampled_from(["equal", "two", "few"]))
        if lab == "equal":
            y += [2.0] * m
        else:
            top = 1 if lab == "two" else 4
            y += [float(v) for v in draw(
                st.lists(st.integers(0, top), min_size=m, max_size=m))]
        n_c = draw(st.integers(1, 3))
        zc = [draw(st.sampled_from([-1.0, 1.0])) * 10.0 ** draw(st.integers(0, 12))
              for _ in range(n_c)]
        tc = [draw(st.sampled_from([-1.0, 1.0])) * 10.0 ** draw(st.integers(0, 12))
              for _ in range(n_c)]
        ties = draw(st.booleans())
        for _ in range(m):
            c = draw(st.integers(0, n_c - 1))
            if ties:
                off = draw(st.integers(-4, 4)) / 2.0
            else:
                off = draw(st.floats(-3.0, 3.0))
            z.append(zc[c] + off)
            t.append(tc[c] + draw(st.floats(-3.0, 3.0)))
        qid += [q] * m
    margin = draw(st.sampled_from([1.0, 0.5, 2.0]))
    as_arr = lambda v: np.asarray(v, dtype=np.float64)
    return as_arr(z), as_arr(t), as_arr(y), np.asarray(qid, np.int64), margin


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(clustered_instances())
def test_tree_exact_on_clustered_scores(inst):
    """Loss, gradient and Hessian coefficients of the default (fused,
    selection-tree) backend within a few ulps of math.fsum over explicit
    pairs, for clusters at up to +-1e12 (bound: see the section comment)."""
    check_tree_accuracy(*inst)


@PROPERTY
@given(instances())
def test_tree_exact_on_ordinary_scores(inst):
    """The same bound on the ordinary random instances."""
    check_tree_accuracy(*inst)


@pytest.mark.parametrize("scale", [1e4, 1e6, 1e8])
def test_issue14_two_distant_clusters_regression(scale):
    """Issue 14, item 4: scores in two clusters at +-scale.  Before the
    double-double sums the Hessian product was off by a relative 1.4e-7,
    9.3e-3 and 0.45 (scale 1e4, 1e6, 1e8) and the gradient by up to 0.32;
    now every coefficient is within 16 ulps of the largest |fsum reference|."""
    rng = np.random.default_rng(14)
    n = 60
    qid = np.repeat([0, 1], n // 2)
    y = rng.integers(0, 3, n).astype(np.float64)
    side = rng.choice([-1.0, 1.0], n)
    z = side * scale + rng.normal(size=n)
    t = side * scale + rng.normal(size=n)
    ref = check_tree_accuracy(z, t, y, qid, 1.0)
    b = _TreeBackend(None, n, 1.0, y, group_queries(qid))
    value, dz = b.value_dz(z)
    hv = b.hess_dz(t)
    for got, want in ((dz, ref["dz"]), (hv, ref["hv"])):
        assert np.max(np.abs(got - want)) <= 16 * U * np.max(np.abs(want))
    assert abs(value - ref["value"]) <= 16 * U * ref["value"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_value_dz_equals_py_func(seed):
    z, _, _, g, level, nlev, perm = prepared(seed)
    n = len(z)
    outs = []
    for f in (kos.value_dz_selection_tree, kos.value_dz_selection_tree.py_func):
        lp, lm, dz = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
        sweep = np.zeros((4, n), np.int64)
        v = f(z, level, nlev, perm, g.order, g.indptr, 1.0, lp, lm, dz, sweep)
        outs.append((v, lp, lm, dz, sweep))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12)
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])
    np.testing.assert_allclose(outs[0][3], outs[1][3], rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(outs[0][4], outs[1][4])


def test_compensated_helpers_are_exact():
    """TwoSum and the FMA product recover the rounding error exactly, also
    at magnitudes where Dekker's split product (used before) overflowed."""
    from fractions import Fraction

    rng = np.random.default_rng(7)
    scale = 10.0 ** rng.integers(-140, 140, (400, 2))
    scale[:20] = 2.0 ** 1000                      # |a|, |b| >= 2^996
    for a, b in rng.normal(size=(400, 2)) * scale:
        s, e = kos._two_sum(a, b)
        assert Fraction(s) + Fraction(e) == Fraction(a) + Fraction(b)
        p, e = kos._two_prod(a, b)
        if not np.isfinite(p):
            assert e == 0.0
            continue
        assert Fraction(p) + Fraction(e) == Fraction(a) * Fraction(b)
        c = float(rng.integers(0, 2**40))          # a count
        p, e = kos._count_prod(c, a)
        assert Fraction(p) + Fraction(e) == Fraction(c) * Fraction(a)


@pytest.mark.parametrize("offset", [1e12, 1e155])
def test_tree_exact_under_a_large_common_offset(offset):
    """One cluster far from 0 (every score within a factor 2 of the query's
    median): the value kernel shifts by the median exactly, so the loss keeps
    full relative accuracy (16 ulps, no u^2 term) and does not overflow in
    its sums of squares even at 1e155 (z^2 > 1e308)."""
    rng = np.random.default_rng(3)
    n = 50
    qid = np.repeat([0, 1], n // 2)
    y = rng.integers(0, 3, n).astype(np.float64)
    step = np.spacing(offset)  # scores on the grid around the offset
    unit = float(max(step, 1.0))
    z = offset + unit * rng.integers(-3, 4, n)
    t = offset + unit * rng.normal(size=n)
    ref = check_tree_accuracy(z, t, y, qid, unit)
    b = _TreeBackend(None, n, unit, y, group_queries(qid))
    value, dz = b.value_dz(z)
    assert np.isfinite(value) and ref["value"] > 0
    assert abs(value - ref["value"]) <= 16 * U * ref["value"]
    assert np.max(np.abs(dz - ref["dz"])) <= 16 * U * np.max(np.abs(ref["dz"]))


# --------------------------------------------------------------------------
# the direct per-level sweep of the Hessian kernel (k <= DIRECT_LEVELS)
# --------------------------------------------------------------------------


@njit
def _dd_step_compiled(acc, x, lev, above):
    if above:
        dd_step(acc, x, lev, True)
    else:
        dd_step(acc, x, lev, False)


@pytest.mark.parametrize("seed", range(4))
def test_dd_step_is_its_specification(seed):
    """The LLVM vector step gives the bits of the pure-Python specification
    (per-lane TwoSum, 0.0 added to the lanes not selected), levels out of
    the lane range included, and keeps every lane's double-double sum exact."""
    from fractions import Fraction

    rng = np.random.default_rng(seed)
    for above in (True, False):
        acc = np.zeros(16)
        spec = np.zeros(16)
        exact = [Fraction(0)] * LANES
        for _ in range(300):
            x = float(rng.normal() * 10.0 ** rng.integers(-12, 13))
            if rng.random() < 0.1:
                x = float(rng.choice([0.0, -0.0]))
            lev = int(rng.integers(-2, LANES + 3))
            _dd_step_compiled(acc, x, lev, above)
            dd_step(spec, x, lev, above)
            for m in range(LANES):
                if (lev > m) if above else (lev < m):
                    exact[m] += Fraction(x)
            np.testing.assert_array_equal(acc.view(np.int64), spec.view(np.int64))
        for m in range(LANES):
            # hi + lo is the exact sum up to the rounding of the lo additions
            err = abs(Fraction(acc[m]) + Fraction(acc[LANES + m]) - exact[m])
            assert err <= 300 * U * U * 1e13


@njit
def _dd_prefix_compiled(P, x, lev, n, above):
    if above:
        dd_prefix(P, x, lev, n, True)
    else:
        dd_prefix(P, x, lev, n, False)


@pytest.mark.parametrize("seed", range(4))
def test_dd_prefix_is_its_specification(seed):
    """Every state of the register-held prefix loop has the bits of the
    pure-Python specification (dd_step's states in turn), in both
    directions, for n = 0, 1 and longer runs; int32 and int64 levels;
    entries of P beyond row n untouched."""
    rng = np.random.default_rng(seed)
    for n in (0, 1, 2, 7, 300):
        x = rng.normal(size=n) * 10.0 ** rng.integers(-12, 13, n)
        x[rng.random(n) < 0.1] = -0.0
        for dtype in (np.int64, np.int32):
            lev = rng.integers(-2, LANES + 3, n).astype(dtype)
            for above in (True, False):
                got = np.full((n + 2) * 2 * LANES, 7.0)
                spec = got.copy()
                _dd_prefix_compiled(got, x, lev, n, above)
                dd_prefix(spec, x, lev, n, above)
                np.testing.assert_array_equal(got.view(np.int64),
                                              spec.view(np.int64))
                np.testing.assert_array_equal(got[(n + 1) * 2 * LANES:], 7.0)
                # the last state is the running dd_step's
                acc = np.zeros(2 * LANES)
                for b in (range(n) if above else range(n - 1, -1, -1)):
                    _dd_step_compiled(acc, float(x[b]), int(lev[b]), above)
                row = n if above else 0
                np.testing.assert_array_equal(
                    got[row * 2 * LANES:(row + 1) * 2 * LANES].view(np.int64),
                    acc.view(np.int64))


@PROPERTY
@given(instances())
def test_sweep_record_equals_brute_force_and_value_kernel(inst):
    """The sweep record: the windows are counts of the membership tests over
    the query (brute force), then the levels and l^+ + l^- in score order;
    the value kernel records the same."""
    z, _, y, qid, margin = inst
    g, level, nlev, perm, lp, lm = fused_inputs(z, y, qid, margin)
    n = len(z)
    sweep = np.full((4, n), -1, dtype=np.int64)
    kos.record_sweeps(z, perm, level, nlev, g.indptr, margin, lp, lm, sweep)
    zl = z.tolist()
    for q in range(len(g.indptr) - 1):
        lo, hi = g.indptr[q], g.indptr[q + 1]
        if nlev[q] <= 1:
            assert np.all(sweep[:, lo:hi] == -1)
            continue
        docs = perm[lo:hi].tolist()
        for a, i in enumerate(docs):
            assert sweep[kos.SW_UP, lo + a] == sum(
                margin - (zl[j] - zl[i]) > 0.0 for j in docs)
            assert sweep[kos.SW_DOWN, lo + a] == (hi - lo) - sum(
                margin - (zl[i] - zl[j]) > 0.0 for j in docs)
            assert sweep[kos.SW_LEVEL, lo + a] == level[i]
            assert sweep[kos.SW_COUNT, lo + a] == lp[i] + lm[i]
    got = np.full((4, n), -1, dtype=np.int64)
    kos.value_dz_selection_tree(z, level, nlev, perm, g.order, g.indptr,
                                margin, np.empty(n, np.int64),
                                np.empty(n, np.int64), np.empty(n), got)
    np.testing.assert_array_equal(got, sweep)


@njit
def _counted_compiled(acc, x, xx, xxl, lev, above, squares):
    if above and squares:
        dd_step_counted(acc, x, xx, xxl, lev, True, True)
    elif above:
        dd_step_counted(acc, x, xx, xxl, lev, True, False)
    elif squares:
        dd_step_counted(acc, x, xx, xxl, lev, False, True)
    else:
        dd_step_counted(acc, x, xx, xxl, lev, False, False)


@pytest.mark.parametrize("seed", range(2))
def test_dd_step_counted_is_its_specification(seed):
    """Counts, sums and sums of squares of the value kernel's direct sweep:
    the vector step's bits are the specification's, the counts exact, and
    every lane's double-double sums within the accumulation bound of the
    exact sums (squares as Dekker's exact hi + lo pairs)."""
    from fractions import Fraction

    rng = np.random.default_rng(seed)
    for above in (True, False):
        for squares in (True, False):
            acc = np.zeros(5 * LANES)
            spec = np.zeros(5 * LANES)
            cnt = [0] * LANES
            s1 = [Fraction(0)] * LANES
            s2 = [Fraction(0)] * LANES
            for _ in range(200):
                x = float(rng.normal() * 10.0 ** rng.integers(-8, 9))
                xx, xxl = kos._two_prod(x, x)
                lev = int(rng.integers(-2, LANES + 3))
                _counted_compiled(acc, x, xx, xxl, lev, above, squares)
                dd_step_counted(spec, x, xx, xxl, lev, above, squares)
                np.testing.assert_array_equal(acc.view(np.int64),
                                              spec.view(np.int64))
                for m in range(LANES):
                    if (lev > m) if above else (lev < m):
                        cnt[m] += 1
                        s1[m] += Fraction(x)
                        s2[m] += Fraction(x) * Fraction(x)
            for m in range(LANES):
                assert acc[m] == cnt[m]
                got1 = Fraction(acc[LANES + m]) + Fraction(acc[2 * LANES + m])
                assert abs(got1 - s1[m]) <= 200 * U * U * 1e9
                got2 = Fraction(acc[3 * LANES + m]) + Fraction(acc[4 * LANES + m])
                if squares:
                    assert abs(got2 - s2[m]) <= 400 * U * U * 1e18
                else:
                    assert got2 == 0


def test_count_prod_is_two_prod():
    """Dekker's product split on one side only, for integer counts up to
    2^26: exact, and the bits of _two_prod (whose error term is unique)."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    cs = np.concatenate([[0, 1, 2, 3, 2**26 - 1, 2**26],
                         rng.integers(0, 2**26 + 1, 400)]).astype(np.float64)
    xs = rng.normal(size=cs.size) * 10.0 ** rng.integers(-300, 290, cs.size)
    xs[:6] = [1.0, -0.0, np.pi, -1e280, 2.0**-1070, 3.0]
    for c, x in zip(cs, xs):
        p, e = kos._count_prod(c, x)
        assert Fraction(p) + Fraction(e) == Fraction(c) * Fraction(x)
        assert (p, e) == kos._two_prod(c, x)
    p, e = kos._count_prod(3.0, 1e308)  # overflow: e = 0, as _two_prod
    assert p == np.inf and e == 0.0


@njit
def _both_sweeps(zb, tb, lb, n, k, margin):
    """gamma^+- of one sorted query by the direct sweep in its prefix form
    and running (if k <= LANES, else NaN) and by the tree, with the windows
    of the sweeps' membership tests."""
    up = np.empty(n, dtype=np.int64)
    down = np.empty(n, dtype=np.int64)
    for a in range(n):
        up[a] = 0
        down[a] = n
        for b in range(n):
            if margin - (zb[b] - zb[a]) > 0.0:
                up[a] = b + 1
        for b in range(n - 1, -1, -1):
            if margin - (zb[a] - zb[b]) > 0.0:
                down[a] = b
    acc = np.zeros(2 * LANES)
    P = np.empty((n + 1) * 2 * LANES)
    p = 1
    while p < k:
        p *= 2
    th = np.zeros(2 * p)
    tl = np.zeros(2 * p)
    res = np.full((3, 4, n), np.nan)
    if k <= LANES:
        kos._hess_prefix_direct(tb, lb, n, up, down, P, res[0, 0], res[0, 1],
                                res[0, 2], res[0, 3])
        kos._hess_sweeps_direct(tb, lb, n, up, down, acc, res[2, 0],
                                res[2, 1], res[2, 2], res[2, 3])
    kos._hess_sweeps_tree(tb, lb, n, k, up, down, th, tl, res[1, 0],
                          res[1, 1], res[1, 2], res[1, 3])
    return res


@st.composite
def threshold_instances(draw, max_queries=3, max_docs=16):
    """Queries with exactly k levels, k on both sides of DIRECT_LEVELS (and
    1, 2), scores and t either small integers (ties, differences equal to the
    margin) or clusters at +-10^e, e up to 12; one-document queries."""
    n_q = draw(st.integers(1, max_queries))
    z, t, y, qid = [], [], [], []
    d = kos.DIRECT_LEVELS
    for q in range(n_q):
        k = draw(st.sampled_from([1, 2, 3, d - 1, d, d + 1, d + 2, 2 * d + 1]))
        m = draw(st.sampled_from([1, k, k + 1, max_docs])) if k > 1 else \
            draw(st.integers(1, max_docs))
        m = max(m, 1)
        labels = list(range(k)) + draw(
            st.lists(st.integers(0, k - 1), min_size=max(m - k, 0),
                     max_size=max(m - k, 0)))
        labels = draw(st.permutations(labels))[:m]
        y += [3.0 * v - 7.0 for v in labels]  # levels are ranks, not labels
        if draw(st.booleans()):
            z += [float(v) for v in draw(
                st.lists(st.integers(-3, 3), min_size=m, max_size=m))]
            t += [float(v) for v in draw(
                st.lists(st.integers(-5, 5), min_size=m, max_size=m))]
        else:
            n_c = draw(st.integers(1, 3))
            zc = [draw(st.sampled_from([-1.0, 1.0])) * 10.0 ** draw(st.integers(0, 12))
                  for _ in range(n_c)]
            tc = [draw(st.sampled_from([-1.0, 1.0])) * 10.0 ** draw(st.integers(0, 12))
                  for _ in range(n_c)]
            for _ in range(m):
                c = draw(st.integers(0, n_c - 1))
                z.append(zc[c] + draw(st.integers(-4, 4)) / 2.0)
                t.append(tc[c] + draw(st.floats(-3.0, 3.0)))
        qid += [q] * m
    margin = draw(st.sampled_from([1.0, 0.5, 2.0]))
    as_arr = lambda v: np.asarray(v, dtype=np.float64)
    return as_arr(z), as_arr(t), as_arr(y), np.asarray(qid, np.int64), margin


@PROPERTY
@given(threshold_instances())
def test_direct_sweep_and_tree_equal_brute_force(inst):
    """Per query, gamma^+- of the direct per-level sweep and of the
    selection tree (the direct sweep where k <= LANES; its prefix form and
    its running form bit for bit equal), both against math.fsum of the brute-force sets, within
    the section's bound (8 u |gamma| + 32 (l_q + 16) u^2 sum |t_j|); bit for
    bit equal for k <= 2, where the tree reads one leaf; and the kernel's
    Hessian product within the bound of explicit pairs, whichever path its
    k takes."""
    z, t, y, qid, margin = inst
    g = group_queries(qid)
    level, nlev = query_levels(y, g.order, g.indptr)
    perm = np.empty(len(z), dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    for q in range(len(g.indptr) - 1):
        idx = perm[g.indptr[q]:g.indptr[q + 1]]
        n, k = len(idx), int(nlev[q])
        zb, tb, lb = z[idx], t[idx], level[idx]
        res = _both_sweeps(zb, tb, lb, n, k, margin)
        zl, tl_, ll = zb.tolist(), tb.tolist(), lb.tolist()
        for a in range(n):
            up = [tl_[b] for b in range(n)
                  if ll[b] > ll[a] and margin - (zl[b] - zl[a]) > 0.0]
            dn = [tl_[b] for b in range(n)
                  if ll[b] < ll[a] and margin - (zl[a] - zl[b]) > 0.0]
            for terms, col in ((up, 0), (dn, 2)):
                ref = math.fsum(terms)
                w = math.fsum(abs(v) for v in terms)
                bound = 8 * U * abs(ref) + 32 * (n + 16) * U * U * w
                for path in ((0, 1) if k <= LANES else (1,)):
                    got = res[path, col, a] + res[path, col + 1, a]
                    assert abs(got - ref) <= bound, (path, col, a, got, ref)
        if k <= LANES:  # the prefix form and the running sweep: same states
            np.testing.assert_array_equal(res[0], res[2])
        if k <= 2:
            np.testing.assert_array_equal(res[0], res[1])
    check_tree_accuracy(z, t, y, qid, margin)


# --------------------------------------------------------------------------
# queries of equal scores (every one at w = 0): no sweep, the same bits
# --------------------------------------------------------------------------


@njit
def _tied_and_swept(z, level, perm, lo, n, k, margin):
    """One query through _value_dz_tied and through the sweeps of
    _value_dz_query (forced), with the outputs of each."""
    size = len(z)
    p = 1
    while p < k:
        p *= 2
    outs = []
    for path in range(2):
        lp = np.full(size, -1, dtype=np.int64)
        lm = np.full(size, -1, dtype=np.int64)
        dz = np.full(size, np.nan)
        sweep = np.full((4, size), -1, dtype=np.int64)
        cnt = np.zeros(2 * p + 2, dtype=np.int64)
        s1h = np.zeros(2 * p + 2)
        s1l = np.zeros(2 * p + 2)
        s2h = np.zeros(2 * p + 2)
        s2l = np.zeros(2 * p + 2)
        acc = np.zeros(5 * LANES)
        zb, zs, rh, rl = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        lb = np.empty(n, dtype=np.int64)
        if path == 0:
            vh, vl = kos._value_dz_tied(level, perm, lo, n, k, margin, lp, lm,
                                        dz, sweep, 0.25, -1e-20, cnt, s1h, s1l,
                                        s2h)
        else:
            vh, vl, _ = kos._value_dz_query(
                z, level, perm, lo, n, k, margin, lp, lm, dz, sweep, 0.25,
                -1e-20, cnt, s1h, s1l, s2h, s2l, acc, zb, zs, lb, rh, rl, zb,
                0, 0, 0)
        # the tree's "no sibling" slot (0) must stay 0 for the next query
        slot0 = np.array([float(cnt[0]), s1h[0], s1l[0], s2h[0]])
        outs.append((np.array([vh, vl]), lp, lm, dz, sweep, slot0))
    return outs


@PROPERTY
@given(st.integers(1, 150), st.integers(2, 2 * kos.DIRECT_LEVELS + 3),
       st.sampled_from([0.0, -0.0, 1.0, -3.75, 1e-310, -1e200, 2.0**60]),
       st.sampled_from([1.0, 0.5, 1.0 / 3.0, 1e-9, 7.25, 3e5]),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_tied_query_equals_the_sweeps_bit_for_bit(n, k, value, margin,
                                                  mixed_zeros, seed):
    """A query whose scores are all equal: _value_dz_tied gives the loss,
    counts, dz and sweep record of the sweeps (direct lanes for k <=
    DIRECT_LEVELS, the tree above) bit for bit, also with -0.0 and 0.0
    mixed, subnormal or huge scores, and margins whose products round."""
    rng = np.random.default_rng(seed)
    k = min(k, n) if n >= 2 else 2
    labels = np.concatenate([np.arange(k), rng.integers(0, k, max(n - k, 0))])
    y = rng.permutation(labels)[:max(n, 2)].astype(float)
    n = len(y)
    z = np.full(n, value)
    if mixed_zeros and value == 0.0:
        z[rng.random(n) < 0.5] = -0.0
    g = group_queries(np.zeros(n, dtype=np.int64))
    level, nlev = query_levels(y, g.order, g.indptr)
    perm = np.empty(n, dtype=np.int64)
    kos.sort_by_score(z, g.order, g.indptr, perm)
    np.testing.assert_array_equal(perm, np.arange(n))  # stable: input order
    tied, swept = _tied_and_swept(z, level, perm, 0, n, int(nlev[0]), margin)
    for a, b in zip(tied[:5], swept[:5]):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    assert not np.any(tied[5]) and not np.any(swept[5])


def test_value_kernel_takes_the_tied_path_per_query():
    """value_dz_selection_tree on queries with equal scores beside queries
    with distinct ones: the same bits as each query alone (the tied path
    leaves the scratch the next query's sweep reads as it found it)."""
    rng = np.random.default_rng(3)
    sizes = [40, 7, 60, 1, 33]
    qid = np.repeat(np.arange(5), sizes)
    y = rng.integers(0, 9, len(qid)).astype(float)
    z = rng.normal(size=len(qid))
    z[qid == 0] = 2.5
    z[qid == 2] = 0.0
    out = {}
    for name, qs in (("all", range(5)), *((q, [q]) for q in range(5))):
        keep = np.isin(qid, list(qs))
        g = group_queries(qid[keep])
        level, nlev = query_levels(y[keep], g.order, g.indptr)
        perm = np.empty(keep.sum(), dtype=np.int64)
        kos.sort_by_score(z[keep], g.order, g.indptr, perm)
        m = keep.sum()
        lp, lm, dz = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m)
        sweep = np.zeros((4, m), np.int64)
        v = kos.value_dz_selection_tree(z[keep], level, nlev, perm, g.order,
                                        g.indptr, 0.7, lp, lm, dz, sweep)
        out[name] = (v, lp, lm, dz, sweep)
    for q in range(5):
        rows = slice(sum(sizes[:q]), sum(sizes[:q + 1]))
        for a, b in zip(out["all"][1:4], out[q][1:4]):
            np.testing.assert_array_equal(a[rows], b)
    assert out["all"][0] == pytest.approx(sum(out[q][0] for q in range(5)),
                                          rel=1e-15)
