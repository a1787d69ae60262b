"""FenchelRank's tree path where every pair is active: no sort, per-level sums.

Where ``margin - (z_i - z_j) > 0`` for every pair of every query (always,
on the l1 ball of eq. 4, when ``r max |x_i - x_j|_inf < 1``) the squared
hinge is a quadratic, and the tree's ``score_space`` evaluates it from per-level
sums (``refimpl.kernels.fenchel.all_active_*``) instead of the sorted sweep
of the order-statistic tree, and carries ``h = X^T (c * z)`` along the steps
instead of a pass over ``X``.  These tests hold the kernels to brute force
(``math.fsum`` over explicit pairs) on random and adversarial inputs (ties,
one-document and one-level queries, scores clustered at 1e8, non-finite
scores), and the solver to the explicit-pairs path (same greedy choices,
iterates to 1e-12), also across the border of the regime.  No timing here
(``benchmarks/bench_fenchelrank.py --only f``).
"""

import importlib
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refimpl._validation import group_queries
from refimpl.kernels import fenchel as _k
from refimpl.kernels.ostree import (
    hess_dz_selection_tree,
    sort_by_score,
    value_dz_selection_tree,
)
from refimpl.losses import PairwiseSquaredHinge
from refimpl.sv_stats import query_levels

from fenchel_runs import assert_same_run, letor_fold1_train, run

fr = importlib.import_module("refimpl.solvers.fenchelrank")

VARIANTS = ["paper", "pairwise", "away", "face_newton"]


def layout(y, qid):
    g = group_queries(qid)
    order = np.ascontiguousarray(g.order, dtype=np.int64)
    indptr = np.ascontiguousarray(g.indptr, dtype=np.int64)
    level, nlev = query_levels(np.asarray(y, dtype=np.float64), order, indptr)
    return level, nlev, order, indptr


def brute(z, t, y, qid, margin):
    """All-active flag, loss, dz, 2 A^T A t and 2 ||A t||^2 by fsum over pairs."""
    n = len(z)
    active = True
    terms, dz_terms, h_terms = [], [[] for _ in range(n)], [[] for _ in range(n)]
    curv = []
    for i in range(n):
        for j in range(n):
            if qid[i] != qid[j] or not y[i] > y[j]:
                continue
            r = margin - (z[i] - z[j])
            if not r > 0.0:
                active = False
            terms.append(r * r if r > 0 else 0.0)
            if r > 0:
                dz_terms[i].append(-2.0 * r)
                dz_terms[j].append(2.0 * r)
                h_terms[i].append(2.0 * (t[i] - t[j]))
                h_terms[j].append(2.0 * (t[j] - t[i]))
                curv.append((t[i] - t[j]) ** 2)
    dz = np.array([math.fsum(v) for v in dz_terms])
    bound = np.array([math.fsum(abs(x) for x in v) for v in dz_terms])
    hv = np.array([math.fsum(v) for v in h_terms])
    hbound = np.array([math.fsum(abs(x) for x in v) for v in h_terms])
    return (active, math.fsum(terms), dz, bound, hv, hbound,
            2.0 * math.fsum(curv))


@st.composite
def instances(draw):
    n_q = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 12), min_size=n_q, max_size=n_q))
    n = sum(sizes)
    qid = np.repeat(np.arange(n_q), sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    levels = draw(st.integers(1, 5))   # 1: all labels equal
    y = rng.integers(0, levels, size=n).astype(np.float64)
    kind = draw(st.sampled_from(["random", "ties", "cluster", "spread"]))
    if kind == "random":
        z = rng.uniform(-0.45, 0.45, size=n)
    elif kind == "ties":         # equal scores, on a coarse grid
        z = rng.integers(-2, 3, size=n) * 0.2
    elif kind == "cluster":      # a large common offset: exact shift
        z = 1e8 + rng.integers(-8, 9, size=n) * 0.0625
    else:                         # some pairs beyond the margin
        z = rng.uniform(-2.0, 2.0, size=n)
    t = rng.standard_normal(n) * draw(st.sampled_from([1e-3, 1.0, 1e4]))
    if draw(st.booleans()):
        t += 1e6                 # a common offset in the direction too
    margin = draw(st.sampled_from([0.25, 1.0, 4.0]))
    return z, t, y, qid, margin


def assert_close(a, b, tol):
    """``|a - b| <= tol`` entrywise (``tol`` an array of bounds)."""
    bad = np.flatnonzero(~(np.abs(a - b) <= tol))
    assert bad.size == 0, (bad, a[bad], b[bad], np.broadcast_to(tol, a.shape)[bad])


PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(instances())
def test_all_active_kernels_against_brute_force(inst):
    z, t, y, qid, margin = inst
    n = len(z)
    level, nlev, order, indptr = layout(y, qid)
    active, value, dz_ref, bound, hv_ref, hbound, curv_ref = brute(
        z, t, y, qid, margin)
    assert _k.all_pairs_active(z, level, nlev, order, indptr, margin) == active
    dz = np.full(n, np.nan)
    kappa = np.full(int(nlev.sum()), np.nan)
    v = _k.all_active_value_dz(z, level, nlev, order, indptr, margin, dz,
                               kappa)
    if not active:
        assert v == -1.0
        return
    eps = 2.0**-52
    assert v == pytest.approx(value, rel=8 * eps, abs=1e-300)
    assert_close(dz, dz_ref, 1e-15 * bound + 1e-300)
    # dz_i = 2 (c_i z_i + kappa[rows_i]), c_i the documents of other levels
    coef = np.empty(n)
    rows = np.empty(n, dtype=np.int64)
    assert _k.level_weights(level, nlev, order, indptr, coef, rows) == len(kappa)
    for i in range(n):
        others = np.sum((qid == qid[i]) & (y != y[i]))
        assert coef[i] == (others if len(set(y[qid == qid[i]])) > 1 else 0)
    scale = 2.0 * (np.abs(coef * z) + np.abs(kappa[rows]))
    assert_close(2.0 * (coef * z + kappa[rows]), dz, 4 * eps * scale + 1e-300)
    hv = np.full(n, np.nan)
    _k.all_active_hess_dz(t, level, nlev, order, indptr, hv)
    assert_close(hv, hv_ref, 1e-15 * hbound + 1e-300)
    c = _k.all_active_curvature(t, level, nlev, order, indptr)
    assert c == pytest.approx(curv_ref, rel=1e-13, abs=1e-300)
    # the tree kernels at the same scores: the same numbers to a few ulps
    perm = np.empty(n, dtype=np.int64)
    sort_by_score(z, order, indptr, perm)
    lp = np.empty(n, dtype=np.int64)
    lm = np.empty(n, dtype=np.int64)
    dz_tree = np.empty(n)
    sweep = np.zeros((4, n), dtype=np.int64)
    v_tree = value_dz_selection_tree(z, level, nlev, perm, order, indptr,
                                     margin, lp, lm, dz_tree, sweep)
    assert v == pytest.approx(max(v_tree, 0.0), rel=8 * eps, abs=1e-300)
    assert_close(dz, dz_tree, 1e-15 * bound + 1e-300)
    hv_tree = np.empty(n)
    hess_dz_selection_tree(t, nlev, perm, order, indptr, sweep, hv_tree)
    assert_close(hv, hv_tree, 1e-15 * hbound + 1e-300)


def test_non_finite_scores_are_not_all_active():
    y = np.array([1.0, 0.0, 0.0])
    qid = np.zeros(3, dtype=np.int64)
    level, nlev, order, indptr = layout(y, qid)
    for bad in (np.nan, np.inf, -np.inf):
        z = np.array([0.0, bad, 0.1])
        assert not _k.all_pairs_active(z, level, nlev, order, indptr, 1.0)
        assert _k.all_active_value_dz(z, level, nlev, order, indptr, 1.0,
                                      np.empty(3), np.empty(2)) == -1.0
    # a one-level query's scores do not matter (it has no pair)
    y1 = np.zeros(3)
    level, nlev, order, indptr = layout(y1, qid)
    z = np.array([np.nan, 0.0, 1.0])
    assert _k.all_pairs_active(z, level, nlev, order, indptr, 1.0)
    dz = np.full(3, np.nan)
    assert _k.all_active_value_dz(z, level, nlev, order, indptr, 1.0, dz,
                                  np.empty(1)) == 0.0
    np.testing.assert_array_equal(dz, 0.0)


def test_the_margin_test_is_strict():
    # r = margin - (z_i - z_j) = 0 is not active (the tree kernels' test)
    y = np.array([1.0, 0.0])
    qid = np.zeros(2, dtype=np.int64)
    level, nlev, order, indptr = layout(y, qid)
    assert not _k.all_pairs_active(np.array([1.0, 0.0]), level, nlev, order,
                                   indptr, 1.0)
    assert _k.all_pairs_active(np.array([0.5, 0.0]), level, nlev, order,
                               indptr, 1.0)


# ---------------------------------------------------------------------------
# The solver against the explicit-pairs path
# ---------------------------------------------------------------------------


def loss_of(X, y, qid, r, backend):
    return PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True,
                                backend=backend)


def lean(n_queries, per_query, d, seed):
    """Features in [0, 1], five levels from a noisy linear score."""
    rng = np.random.default_rng(seed)
    X = rng.random((n_queries * per_query, d))
    w = np.zeros(d)
    w[:4] = [1.5, -1.0, 0.7, 2.0]
    s = X @ w
    s += s.std() * rng.standard_normal(len(s))
    y = np.searchsorted(np.quantile(s, [0.5, 0.75, 0.9, 0.97]), s)
    return X, y.astype(np.float64), np.repeat(np.arange(n_queries), per_query)


@pytest.fixture
def regime_counts(monkeypatch):
    counts = {"all_active": 0, "tree": 0}
    kernel = _k.all_active_value_dz

    def counted(*args):
        v = kernel(*args)
        counts["all_active" if v >= 0 else "tree"] += 1
        return v

    monkeypatch.setattr(fr._k, "all_active_value_dz", counted)
    return counts


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed, r, n_q, per, regime", [
    (0, 1.0, 4, 40, "all"),     # r max|x_i - x_j| < 1: every pair active
    (1, 1.0, 1, 300, "all"),    # one long query
    (2, 1.3, 3, 60, "both"),    # in the regime first, then out of it
])
def test_all_active_path_matches_explicit_pairs(variant, seed, r, n_q, per,
                                                regime, regime_counts):
    X, y, qid = lean(n_q, per, 8, seed)
    pairs = run(loss_of(X, y, qid, r, "pairs"), r, tol=1e-6, max_iter=300,
                line_search="pairs", variant=variant)
    tree = run(loss_of(X, y, qid, r, "tree"), r, tol=1e-6, max_iter=300,
               variant=variant)
    assert_same_run(tree, pairs)
    assert regime_counts["all_active"] >= 2
    if regime == "all":
        assert regime_counts["tree"] == 0
    else:
        assert regime_counts["tree"] >= 2


@pytest.mark.parametrize(("dataset", "variant"),
                         [("MQ2008", "paper"), ("MQ2008", "face_newton"),
                          ("OHSUMED", "paper")])
def test_real_fold1_all_active_matches_explicit_pairs(dataset, variant,
                                                      regime_counts):
    # both data sets' features are in [0, 1] per query (QueryLevelNorm): at
    # r = 0.9 every pair stays active (|z_i - z_j| <= ||w||_1 <= 1 < 1/r)
    data = letor_fold1_train(dataset)
    if data is None:
        pytest.skip(f"{dataset} Fold1 not available (LETOR_HOME)")
    X, y, qid = data
    n = 1000 if variant == "paper" else 300
    r = 0.9
    explicit = loss_of(X, y, qid, r, "pairs")
    pairs = run(explicit, r, tol=1e-3, max_iter=n, line_search="pairs",
                variant=variant)
    tree = run(loss_of(X, y, qid, r, "tree"), r, tol=1e-3, max_iter=n,
               variant=variant)
    # the explicit path sums one term per pair, the all-active path uses
    # closed forms: a recursive sum of p terms of size <= 1/p (the loss is
    # normalised) errs by up to about p u, which on OHSUMED's Fold1 (seven
    # times MQ2008's pairs) exceeds 1e-12
    assert_same_run(tree, pairs,
                    atol=max(1e-12, explicit.n_pairs * np.finfo(float).eps))
    assert regime_counts["all_active"] >= 2 and regime_counts["tree"] == 0
