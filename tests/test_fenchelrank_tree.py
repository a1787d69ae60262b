"""FenchelRank on the pair-free tree backend: scores carried, exact step on them.

With the selection-tree backend every variant (the paper's Algorithm 1
included) runs in the tree's ``score_space`` (``TreeScoreSpace``): ``z = X w`` carried
along the steps, the exact step by safeguarded Newton on
``t -> L(z + t u)`` with each evaluation a sweep of the tree over the
scores (no pass over ``X``, no pair arrays), and one ``X^T dz`` per update.
These tests hold it to today's explicit-pairs path: the same greedy
coordinates at every iteration, iterates equal to 1e-12, the same gap; and
its line search to the sorted-breakpoint search on explicit pair arrays
(``refimpl.kernels.fenchel.linesearch_pairs``), on random and adversarial
inputs.  No timing here (``benchmarks/bench_fenchelrank.py --only f``).
"""

import importlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refimpl.data import make_synthetic_letor
from refimpl.estimators import FenchelRank
from refimpl.exceptions import NonFiniteError
from refimpl.kernels import fenchel as _k
from refimpl.losses import PairwiseSquaredHinge

from fenchel_runs import assert_same_run, letor_fold1_train, run

fr = importlib.import_module("refimpl.solvers.fenchelrank")

VARIANTS = ["paper", "pairwise", "away", "face_newton"]


def loss_of(X, y, qid, r, backend, **kw):
    return PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True,
                                backend=backend, **kw)


def synthetic(seed, n_queries=12):
    d = make_synthetic_letor(n_queries=n_queries, docs_per_query=(6, 30),
                             n_informative=3, n_redundant=2, n_noise=5,
                             seed=seed)
    return d.X, d.y, d.qid


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed, r", [(0, 1.0), (1, 4.0), (2, 16.0)])
def test_tree_path_matches_explicit_pairs(variant, seed, r):
    X, y, qid = synthetic(seed)
    pairs = run(loss_of(X, y, qid, r, "pairs"), r, tol=1e-6, max_iter=300,
                line_search="pairs", variant=variant)
    tree_loss = loss_of(X, y, qid, r, "tree")
    assert tree_loss.score_space.follows_steps
    tree = run(tree_loss, r, tol=1e-6, max_iter=300, variant=variant)
    assert_same_run(tree, pairs)


@pytest.mark.parametrize("variant", ["paper", "face_newton"])
def test_one_pass_tree_and_unordered_queries(variant):
    # one_pass=True regroups the rows (queries listed apart): the scores
    # live in the tree's order, the iterates must not notice
    X, y, qid = synthetic(3)
    perm = np.random.default_rng(0).permutation(len(y))
    X, y, qid = X[perm], y[perm], qid[perm]
    r = 4.0
    pairs = run(loss_of(X, y, qid, r, "pairs"), r, tol=1e-6, max_iter=200,
                line_search="pairs", variant=variant)
    loss = loss_of(X, y, qid, r, "tree", one_pass=True)
    assert loss.one_pass_ and loss._impl.rows is not None
    assert_same_run(run(loss, r, tol=1e-6, max_iter=200, variant=variant),
                    pairs)


def test_the_tree_path_is_taken_and_reports_evaluations():
    X, y, qid = synthetic(4)
    res, _ = run(loss_of(X, y, qid, 2.0, "tree"), 2.0, tol=1e-6,
                 max_iter=100)
    assert res.details["variant"] == "paper"
    assert set(res.details["steps"]) == {"fw"}
    assert all(n >= 1 for n in res.history["ls_eval"][1:])
    # the other tree methods have no adoptable state: protocol path
    loss = loss_of(X, y, qid, 2.0, "tree", tree_method="avl")
    assert loss.score_space is None


# every variant and two radii on MQ2008; OHSUMED (146 documents a query,
# seven times MQ2008's pairs) once, to keep the added time small
@pytest.mark.parametrize(("dataset", "variant", "r"),
                         [("MQ2008", v, r) for v in VARIANTS
                          for r in (2.0, 32.0)] + [("OHSUMED", "paper", 2.0)])
def test_real_fold1_tree_path_matches_explicit_pairs(dataset, variant, r):
    data = letor_fold1_train(dataset)
    if data is None:
        pytest.skip(f"{dataset} Fold1 not available (LETOR_HOME)")
    X, y, qid = data
    n = 1000 if variant == "paper" else 300
    pairs = run(loss_of(X, y, qid, r, "pairs"), r, tol=1e-3, max_iter=n,
                line_search="pairs", variant=variant)
    tree = run(loss_of(X, y, qid, r, "tree"), r, tol=1e-3, max_iter=n,
               variant=variant)
    assert_same_run(tree, pairs, atol=1e-12)


# ---------------------------------------------------------------------------
# The line search on the scores against explicit pairs (brute force)
# ---------------------------------------------------------------------------


def explicit_pairs(y, qid):
    pi, pj = [], []
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        for a in idx:
            for b in idx:
                if y[a] > y[b]:
                    pi.append(a)
                    pj.append(b)
    return np.array(pi, dtype=np.int64), np.array(pj, dtype=np.int64)


def phi_brute(z, u, pi, pj, margin, t):
    res = np.maximum(0.0, margin - (z[pi] - z[pj]) - t * (u[pi] - u[pj]))
    return float(res @ res)


@st.composite
def line_problems(draw):
    n_q = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 14), min_size=n_q, max_size=n_q))
    n = sum(sizes)
    qid = np.repeat(np.arange(n_q), sizes)
    levels = draw(st.integers(1, 5))
    y = np.array(draw(st.lists(st.integers(0, levels - 1), min_size=n,
                               max_size=n)), dtype=np.float64)
    # at least one pair somewhere
    if not any(len(set(y[qid == q])) > 1 for q in range(n_q)):
        y[0] = 1.0 if y[0] == 0 else 0.0
        qid[:2] = 0
        if n == 1:
            y = np.array([1.0, 0.0])
            qid = np.array([0, 0])
            n = 2
        elif len(set(y[qid == 0])) < 2:
            y[1] = y[0] + 1.0
    scale = draw(st.sampled_from([1e-6, 1.0, 1e3, 1e6]))
    kind = draw(st.sampled_from(["random", "ties", "grid"]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if kind == "random":
        z = rng.normal(size=n) * scale
        u = rng.normal(size=n) * scale
    elif kind == "ties":    # equal scores and equal directions
        z = rng.integers(-1, 2, size=n) * scale
        u = rng.integers(-1, 2, size=n) * scale
    else:                   # breakpoints exactly on a grid of steps
        z = rng.integers(-4, 5, size=n) * 0.25 * scale
        u = rng.integers(-4, 5, size=n) * 0.25 * scale
    margin = draw(st.sampled_from([1e-3, 0.5, 1.0, 1e3])) * scale
    return z, u, y, qid, margin


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(line_problems())
def test_score_line_search_against_brute_force(problem):
    z, u, y, qid, margin = problem
    n = len(y)
    X = np.eye(n)    # X w = w: the scores are the weights
    loss = PairwiseSquaredHinge(X, y, qid, margin=margin, normalize=True,
                                backend="tree")
    space = loss.score_space
    to_rows = getattr(loss._impl, "to_rows", lambda v: v)
    zr, ur = np.array(to_rows(z)), np.array(to_rows(u))
    value, _ = space.value_grad(zr)
    pi, pj = explicit_pairs(y, qid)
    p = len(pi)
    assert value == pytest.approx(phi_brute(z, u, pi, pj, margin, 0.0) / p,
                                  rel=1e-12, abs=1e-300)
    a = np.empty(p)
    c = np.empty(p)
    _k.pair_residuals(z, u, pi, pj, margin, a, c)
    t_ref = float(_k.linesearch_pairs(a, c))
    # psi'(0) = -2/p sum_active a c
    dpsi0 = -2.0 / p * float(np.sum(np.maximum(a, 0.0) * c))
    t, z_new, n_eval = fr._score_line_search(space, zr, ur, dpsi0)
    assert 0.0 <= t <= 1.0
    np.testing.assert_allclose(z_new, zr + t * ur, rtol=0, atol=0)
    f = phi_brute(z, u, pi, pj, margin, t)
    f_ref = phi_brute(z, u, pi, pj, margin, t_ref)
    f0 = phi_brute(z, u, pi, pj, margin, 0.0)
    # minimal to rounding (the minimiser may be a whole interval)
    assert f <= f_ref + 1e-10 * f0 + 1e-300
    curv = float(np.sum(c[a - t_ref * c > 0] ** 2))
    if curv > 0 and f_ref < f0:
        # where phi is strictly convex near its minimiser: the same step
        assert t == pytest.approx(t_ref, rel=1e-9, abs=1e-12)
    # the tree's state is at the returned point: value and dz there
    v_new, _ = space.value_grad(z_new)
    assert v_new == pytest.approx(f / p, rel=1e-9, abs=1e-12 * f0 / p + 1e-300)


def test_single_query_all_equal_labels_but_one():
    # one query, every document but one on the same label: few pairs, many ties
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 5))
    y = np.zeros(60)
    y[7] = 1.0
    qid = np.zeros(60, dtype=np.int64)
    for variant in VARIANTS:
        pairs = run(loss_of(X, y, qid, 2.0, "pairs"), 2.0, tol=1e-8,
                    max_iter=200, line_search="pairs", variant=variant)
        tree = run(loss_of(X, y, qid, 2.0, "tree"), 2.0, tol=1e-8,
                   max_iter=200, variant=variant)
        assert_same_run(tree, pairs)


# ---------------------------------------------------------------------------
# Non-finite input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_overflowing_features_stop_with_a_clear_error(variant):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6))
    qid = np.repeat(np.arange(10), 12)
    y = rng.integers(0, 3, 120).astype(np.float64)
    with pytest.raises(NonFiniteError, match=r"(?s)magnitude up to .*rescale X"):
        FenchelRank(backend="tree", variant=variant).fit(X * 1e160, y, qid)


def test_nan_features_are_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[3, 1] = np.nan
    y = rng.integers(0, 3, 40).astype(np.float64)
    with pytest.raises(ValueError, match="(?i)nan|finite"):
        FenchelRank(backend="tree").fit(X, y, np.repeat(np.arange(4), 10))


# ---------------------------------------------------------------------------
# backend="auto"
# ---------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_auto_backend_takes_the_tree_from_millions_of_pairs(monkeypatch):
    X, y, qid = synthetic(5)
    small = FenchelRank(r=4.0, tol=1e-3).fit(X, y, qid)
    assert small.backend_ == "pairs"          # below the threshold: unchanged
    assert fr.auto_backend(2**22, 10**6) == "tree"
    assert fr.auto_backend(2**22 - 1, 10**6) == "pairs"  # the label blocks
    assert fr.auto_backend(2**22, 10**6, which="adjacent") == "pairs"
    monkeypatch.setattr(fr, "AUTO_TREE_MIN_PAIRS", 1)
    big = FenchelRank(r=4.0, tol=1e-3).fit(X, y, qid)
    assert big.backend_ == "tree"
    np.testing.assert_array_equal(big.history_["j"], small.history_["j"])
    np.testing.assert_allclose(big.coef_, small.coef_, rtol=0, atol=1e-11)
    # an explicit line_search="pairs" keeps explicit pairs
    kept = FenchelRank(r=4.0, tol=1e-4, line_search="pairs").fit(X, y, qid)
    assert kept.backend_ == "pairs"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_long_queries_take_the_label_blocks_where_the_loss_takes_the_tree():
    """OHSUMED's shape (about 146 documents a query, 3 levels, 45 features):
    TRON's rule (the loss's) picks the tree, FenchelRank's the label blocks,
    whose update costs O(p + l d) of streaming work against the tree's
    sorted sweeps per line-search evaluation; both reach the same iterates."""
    data = make_synthetic_letor(n_queries=12, docs_per_query=(140, 152),
                                n_levels=3, n_informative=6, n_redundant=9,
                                n_noise=30, seed=3)
    X, y, qid = data.X, data.y, data.qid
    assert PairwiseSquaredHinge(X, y, qid).backend == "tree"
    auto = FenchelRank(r=8.0, tol=1e-3, max_iter=300).fit(X, y, qid)
    assert auto.backend_ == "pairs"
    tree = FenchelRank(r=8.0, tol=1e-3, max_iter=300, backend="tree").fit(X, y, qid)
    np.testing.assert_array_equal(tree.history_["j"], auto.history_["j"])
    np.testing.assert_allclose(tree.coef_, auto.coef_, rtol=0, atol=1e-10)


def test_auto_backend_weighs_pairs_against_the_trees_sorts():
    """Per update: O(p) on the label blocks, O(sum_q l_q log2 l_q) on the tree."""
    def pick(sizes, pairs_per_doc):
        sizes = np.asarray(sizes)
        p = int(pairs_per_doc * sizes.sum())
        return fr.auto_backend(p, int(sizes.sum()), sort_units=fr.sort_work(sizes))
    assert pick([146] * 70, 35) == "pairs"        # OHSUMED Fold 3
    assert pick([20] * 470, 5) == "pairs"         # MQ2008
    assert pick([8] * 3000, 2) == "pairs"         # short queries
    assert pick([1000] * 5, 290) == "tree"        # long queries, many pairs
    # the crossover sits at p / l = TREE_PAIRS_PER_SORT_UNIT log2 l_q
    at = fr.TREE_PAIRS_PER_SORT_UNIT * np.log2(512)
    assert pick([512] * 4, 0.99 * at) == "pairs"
    assert pick([512] * 4, 1.01 * at) == "tree"
    assert fr.sort_work([1, 1, 4]) == 8.0         # single documents sort nothing


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ohsumed_defaults_take_the_label_blocks(letor_root):
    from refimpl.data import load_letor_fold
    if not (letor_root / "OHSUMED").is_dir():
        pytest.skip(f"OHSUMED not available at {letor_root}")
    X, y, qid = load_letor_fold("OHSUMED", 3, root=letor_root).train
    assert FenchelRank(r=8.0, max_iter=5, tol=1e-12).fit(
        X, y, qid).backend_ == "pairs"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mq2008_defaults_stay_on_explicit_pairs():
    data = letor_fold1_train("MQ2008")
    if data is None:
        pytest.skip("MQ2008 Fold1 not available (LETOR_HOME)")
    X, y, qid = data
    assert FenchelRank(r=8.0, max_iter=5, tol=1e-12).fit(
        X, y, qid).backend_ == "pairs"


@pytest.mark.parametrize("variant", ["paper", "away", "face_newton"])
def test_sparse_X_on_the_tree_path(variant):
    import scipy.sparse as sp

    X, y, qid = synthetic(6)
    X = np.where(X > 0.5, X, 0.0)
    r = 4.0
    pairs = run(loss_of(X, y, qid, r, "pairs"), r, tol=1e-6, max_iter=200,
                line_search="pairs", variant=variant)
    tree = run(loss_of(sp.csr_matrix(X), y, qid, r, "tree"), r, tol=1e-6,
               max_iter=200, variant=variant)
    assert_same_run(tree, pairs, until_gap=1e-3)
