"""Preference pairs against a brute-force double loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.exceptions import DataError, PairMatrixTooLargeError
from refimpl.kernels import pairs as kpairs
from refimpl.pairs import (
    PAIR_SETS,
    n_pairs,
    pair_counts,
    pair_difference_matrix,
    preference_pairs,
    query_sign_grams,
)


def brute_force_pairs(y, qid):
    """Every (i, j) with the same query and y_i > y_j, by two nested loops."""
    out = set()
    for i in range(len(y)):
        for j in range(len(y)):
            if qid[i] == qid[j] and y[i] > y[j]:
                out.add((i, j))
    return out


def stable_grouping(qid):
    """``order`` and ``indptr`` of the documents grouped by qid, as the kernels take them."""
    order = np.argsort(qid, kind="stable").astype(np.int64)
    sq = qid[order]
    indptr = np.r_[np.flatnonzero(np.r_[True, sq[1:] != sq[:-1]]), len(qid)]
    return order, indptr.astype(np.int64)


def counts_equal_py_func(count_kernel, y, order, indptr):
    """The per-query counts of ``count_kernel``, checked against its pure-Python run."""
    a = np.empty(len(indptr) - 1, np.int64)
    b = np.empty_like(a)
    count_kernel(y, order, indptr, a)
    count_kernel.py_func(y, order, indptr, b)
    np.testing.assert_array_equal(a, b)
    return a


def brute_force_adjacent_pairs(y, qid):
    """(i, j) with the same query, y_i > y_j and no label of the query between.

    Lee & Lin (2014), section 5, with "adjacent" read among the labels that
    occur in the query, by three nested loops.
    """
    out = []
    for i in range(len(y)):
        for j in range(len(y)):
            if qid[i] != qid[j] or not y[i] > y[j]:
                continue
            between = any(
                qid[m] == qid[i] and y[j] < y[m] < y[i] for m in range(len(y))
            )
            if not between:
                out.append((i, j))
    return out


@st.composite
def ranking_labels(draw, max_docs=40):
    n = draw(st.integers(1, max_docs))
    n_levels = draw(st.integers(1, 5))
    y = draw(st.lists(st.integers(0, n_levels - 1), min_size=n, max_size=n))
    qid = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    return np.array(y), np.array(qid)


@st.composite
def graded_labels(draw, max_docs=40):
    """Float labels with gaps (e.g. {0, 2}), list-like 1..l_q, few or many levels."""
    n = draw(st.integers(1, max_docs))
    mode = draw(st.sampled_from(["few", "gaps", "many", "list"]))
    if mode == "few":
        y = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    elif mode == "gaps":
        y = draw(st.lists(st.sampled_from([0.0, 2.0, 2.5, 7.0]), min_size=n,
                          max_size=n))
    elif mode == "many":
        y = draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    else:  # MQ2008-list-like: a permutation of 1..n (qids mix it up)
        y = [v + 1 for v in draw(st.permutations(range(n)))]
    qid = draw(st.lists(st.integers(-3, 4), min_size=n, max_size=n))
    return np.array(y, dtype=float), np.array(qid)


@settings(max_examples=200, deadline=None)
@given(ranking_labels())
def test_pairs_equal_brute_force(data):
    y, qid = data
    expected = brute_force_pairs(y, qid)
    counts = pair_counts(y, qid)
    assert counts.sum() == len(expected) == n_pairs(y, qid)
    uq = np.unique(qid)
    for q, c in zip(uq, counts):
        assert c == sum(1 for (i, _) in expected if qid[i] == q)
    if not expected:
        with pytest.raises(DataError, match="no preference pairs"):
            preference_pairs(y, qid)
        return
    p = preference_pairs(y, qid)
    got = set(zip(p.i.tolist(), p.j.tolist()))
    assert got == expected
    assert len(p.i) == len(got)  # no duplicates
    np.testing.assert_array_equal(p.per_query, counts)


@settings(max_examples=50, deadline=None)
@given(ranking_labels(max_docs=20))
def test_kernels_equal_py_func(data):
    y, qid = data
    y = y.astype(np.float64)
    counts_equal_py_func(kpairs.count_pairs_per_query, y, *stable_grouping(qid))


def test_pair_count_closed_form():
    # a query of l documents with all labels distinct has l(l-1)/2 pairs
    y = np.arange(50)
    assert n_pairs(y) == 50 * 49 // 2
    # equal labels make no pairs
    assert n_pairs(np.ones(10)) == 0


def test_noncontiguous_queries_never_mix():
    y = np.array([1, 0, 1, 0])
    qid = np.array([7, 3, 3, 7])
    p = preference_pairs(y, qid)
    assert set(zip(p.i.tolist(), p.j.tolist())) == {(0, 3), (2, 1)}


def test_pair_difference_matrix_rows():
    rng = np.random.default_rng(0)
    X = rng.random((12, 3))
    y = rng.integers(0, 3, 12)
    qid = np.repeat([1, 2, 3], 4)
    K = pair_difference_matrix(X, y, qid)
    p = preference_pairs(y, qid)
    np.testing.assert_array_equal(K, X[p.i] - X[p.j])


def test_pair_difference_matrix_refuses_large():
    y = np.arange(2000)
    X = np.zeros((2000, 10))
    with pytest.raises(PairMatrixTooLargeError, match="MiB"):
        pair_difference_matrix(X, y, max_bytes=2**20)


def test_bad_input():
    with pytest.raises(DataError, match="NaN"):
        pair_counts(np.array([1.0, np.nan]))
    with pytest.raises(DataError, match="qid has 3 entries"):
        pair_counts(np.array([1, 0]), np.array([1, 1, 1]))
    with pytest.raises(DataError, match="one-dimensional"):
        pair_counts(np.ones((2, 2)))


# --------------------------------------------------------------------------
# partial pairs: adjacent relevance levels (Lee & Lin 2014, section 5)
# --------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(graded_labels())
def test_adjacent_pairs_equal_brute_force(data):
    y, qid = data
    expected = brute_force_adjacent_pairs(y, qid)
    counts = pair_counts(y, qid, which="adjacent")
    assert counts.sum() == len(expected) == n_pairs(y, qid, which="adjacent")
    for q, c in zip(np.unique(qid), counts):
        assert c == sum(1 for (i, _) in expected if qid[i] == q)
    if not expected:
        assert n_pairs(y, qid) == 0  # adjacent pairs exist iff pairs exist
        with pytest.raises(DataError, match="no preference pairs"):
            preference_pairs(y, qid, which="adjacent")
        return
    p = preference_pairs(y, qid, which="adjacent")
    np.testing.assert_array_equal(p.per_query, counts)
    # same pairs, and listed as the double loop lists them inside each query
    for q in np.unique(qid):
        got_q = [(i, j) for i, j in zip(p.i.tolist(), p.j.tolist()) if qid[i] == q]
        assert got_q == [(i, j) for (i, j) in expected if qid[i] == q]
    assert len(p.i) == len(set(zip(p.i.tolist(), p.j.tolist())))
    # a subset of all pairs, in the same relative order
    allp = preference_pairs(y, qid)
    pos = {pair: t for t, pair in enumerate(zip(allp.i.tolist(), allp.j.tolist()))}
    idx = [pos[pair] for pair in zip(p.i.tolist(), p.j.tolist())]
    assert idx == sorted(idx)


@settings(max_examples=100, deadline=None)
@given(graded_labels())
def test_which_all_unchanged(data):
    """which="all" (explicit or default) is the full set P of the double loop."""
    y, qid = data
    expected = brute_force_pairs(y, qid)
    default = pair_counts(y, qid)
    np.testing.assert_array_equal(pair_counts(y, qid, which="all"), default)
    assert n_pairs(y, qid, which="all") == len(expected) == default.sum()
    if expected:
        a = preference_pairs(y, qid)
        b = preference_pairs(y, qid, which="all")
        np.testing.assert_array_equal(a.i, b.i)
        np.testing.assert_array_equal(a.j, b.j)
        assert set(zip(b.i.tolist(), b.j.tolist())) == expected
        # the existing kernel, called directly, gives the same listing
        order, indptr = stable_grouping(qid)
        offsets = np.r_[0, np.cumsum(default)].astype(np.int64)
        pi = np.empty(offsets[-1], np.int64)
        pj = np.empty_like(pi)
        kpairs.fill_pairs(y, order, indptr, offsets, pi, pj)
        np.testing.assert_array_equal(b.i, pi)
        np.testing.assert_array_equal(b.j, pj)


@settings(max_examples=50, deadline=None)
@given(graded_labels(max_docs=20))
def test_adjacent_kernels_equal_py_func(data):
    y, qid = data
    order, indptr = stable_grouping(qid)
    a = counts_equal_py_func(kpairs.count_adjacent_pairs_per_query, y, order, indptr)
    offsets = np.r_[0, np.cumsum(a)].astype(np.int64)
    out = [np.empty(offsets[-1], np.int64) for _ in range(4)]
    kpairs.fill_adjacent_pairs(y, order, indptr, offsets, out[0], out[1])
    kpairs.fill_adjacent_pairs.py_func(y, order, indptr, offsets, out[2], out[3])
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[1], out[3])


def test_adjacent_examples():
    # MQ2008-list-like query: labels 1..l, y_i = y_j + 1 gives l - 1 pairs
    y = np.array([3, 1, 4, 2, 5])
    p = preference_pairs(y, which="adjacent")
    assert sorted(zip(y[p.i].tolist(), y[p.j].tolist())) == [
        (2, 1), (3, 2), (4, 3), (5, 4)
    ]
    assert n_pairs(y) == 10 and n_pairs(y, which="adjacent") == 4
    # LETOR levels {0, 2} in one query, {0, 1, 2} in another
    y = np.array([2.0, 0.0, 0.0, 2.0, 1.0, 0.0, 2.0])
    qid = np.array([1, 1, 1, 1, 2, 2, 2])
    p = preference_pairs(y, qid, which="adjacent")
    assert list(zip(p.i.tolist(), p.j.tolist())) == [
        (0, 1), (0, 2), (3, 1), (3, 2), (4, 5), (6, 4)
    ]
    np.testing.assert_array_equal(p.per_query, [4, 2])
    np.testing.assert_array_equal(pair_counts(y, qid), [4, 3])
    # two levels: adjacent pairs are all pairs
    y = np.array([1, 0, 0, 1, 1])
    assert n_pairs(y, which="adjacent") == n_pairs(y) == 6


def test_adjacent_pair_difference_matrix():
    rng = np.random.default_rng(1)
    X = rng.random((12, 3))
    y = rng.integers(0, 4, 12)
    qid = np.repeat([1, 2, 3], 4)
    K = pair_difference_matrix(X, y, qid, which="adjacent")
    p = preference_pairs(y, qid, which="adjacent")
    np.testing.assert_array_equal(K, X[p.i] - X[p.j])


@pytest.mark.parametrize("bad", ["neighbours", "ALL", None, 1])
def test_which_validated(bad):
    assert PAIR_SETS == ("all", "adjacent")
    y = np.array([1, 0, 2])
    msg = r"which must be one of \('all', 'adjacent'\)"
    with pytest.raises(DataError, match=msg):
        pair_counts(y, which=bad)
    with pytest.raises(DataError, match=msg):
        n_pairs(y, which=bad)
    with pytest.raises(DataError, match=msg):
        preference_pairs(y, which=bad)
    with pytest.raises(DataError, match=msg):
        pair_difference_matrix(np.eye(3), y, which=bad)


def brute_force_sign_grams(X, qid):
    """Per query (in sorted qid order), concordant-minus-discordant counts and
    pairs tied in neither feature, by a loop over document and feature pairs."""
    out = []
    for q in np.unique(qid):
        rows = X[qid == q]
        m, d = rows.shape
        if m < 2:
            continue
        C, A = np.zeros((d, d)), np.zeros((d, d))
        for a in range(m):
            for b in range(a + 1, m):
                for j in range(d):
                    for k in range(d):
                        sj = np.sign(rows[a, j] - rows[b, j])
                        sk = np.sign(rows[a, k] - rows[b, k])
                        C[j, k] += sj * sk
                        A[j, k] += abs(sj) * abs(sk)
        out.append((C, A))
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 4), st.integers(1, 4),
       st.integers(1, 7), st.integers(0, 2**31 - 1))
def test_query_sign_grams_match_brute_force(m, n_q, d, chunk, seed):
    rng = np.random.default_rng(seed)
    # few distinct values, so ties within a feature are common
    X = rng.integers(0, 3, size=(m, d)).astype(float)
    qid = rng.integers(0, n_q, size=m)
    got = list(query_sign_grams(X, qid, chunk=chunk, with_abs=True))
    ref = brute_force_sign_grams(X, qid)
    assert len(got) == len(ref)
    for (C, A), (C_ref, A_ref) in zip(got, ref):
        np.testing.assert_array_equal(C, C_ref)
        np.testing.assert_array_equal(A, A_ref)
    no_abs = list(query_sign_grams(X, qid))
    assert all(A is None for _, A in no_abs)
    for (C, _), (C_ref, _) in zip(no_abs, ref):
        np.testing.assert_array_equal(C, C_ref)


@pytest.mark.parametrize("chunk", [0, -3, 2.5, "10"])
def test_query_sign_grams_rejects_bad_chunk(chunk):
    with pytest.raises(DataError, match="chunk"):
        list(query_sign_grams(np.ones((4, 2)), np.zeros(4), chunk=chunk))


# --------------------------------------------------------------------------
# Validate once: a grouping built by the caller is used, not rebuilt
# --------------------------------------------------------------------------


@pytest.mark.parametrize("which", PAIR_SETS)
@pytest.mark.parametrize("seed", range(5))
def test_precomputed_groups_give_the_same_pairs(which, seed):
    from refimpl._validation import group_queries

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, size=40).astype(float)
    qid = rng.integers(0, 6, size=40)
    groups = group_queries(qid, len(y))
    np.testing.assert_array_equal(pair_counts(y, groups=groups, which=which),
                                  pair_counts(y, qid, which=which))
    a = preference_pairs(y, groups=groups, which=which)
    b = preference_pairs(y, qid, which=which)
    np.testing.assert_array_equal(a.i, b.i)
    np.testing.assert_array_equal(a.j, b.j)


def test_precomputed_groups_of_another_size_are_refused():
    from refimpl._validation import group_queries

    with pytest.raises(DataError, match="groups describes 3 documents but y has 4"):
        pair_counts(np.arange(4.0), groups=group_queries(np.zeros(3), 3))


@pytest.mark.parametrize("backend", ["pairs", "numpy", "tree"])
def test_loss_groups_qid_once(monkeypatch, backend):
    """PairwiseSquaredHinge validates and groups qid once, then passes it down."""
    import refimpl._validation as validation
    import refimpl.pairs as pairs_module
    from refimpl.losses import PairwiseSquaredHinge

    calls = []
    real = validation.group_queries

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(validation, "group_queries", counting)
    monkeypatch.setattr(pairs_module, "group_queries", counting)
    rng = np.random.default_rng(0)
    X = rng.random((30, 3))
    PairwiseSquaredHinge(X, rng.integers(0, 3, 30), rng.integers(0, 4, 30),
                         backend=backend)
    assert len(calls) == 1


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 60), st.booleans())
def test_label_scan_and_sort_paths_agree(seed, n_docs, signed_zero):
    """Queries with at most LABEL_SCAN distinct labels are scanned, the
    others sorted: pair counts equal the brute force and the levels equal
    the dense ranks of np.unique on both paths (-0.0 and 0.0 one label)."""
    from refimpl.kernels import ostree as kos
    from refimpl.sv_stats import query_levels

    rng = np.random.default_rng(seed)
    n_labels = int(rng.integers(1, 2 * kpairs.LABEL_SCAN + 2))
    y = rng.integers(0, n_labels, n_docs).astype(np.float64) - n_labels // 2
    if signed_zero:
        y[y == 0.0] = rng.choice([0.0, -0.0], int(np.sum(y == 0.0)))
    qid = rng.integers(0, 3, n_docs)
    counts = pair_counts(y, qid)
    for q, c in zip(np.unique(qid), counts):
        yq = y[qid == q]
        assert c == int(np.sum(yq[:, None] > yq[None, :]))
    order, indptr = stable_grouping(qid)
    level, nlev = query_levels(y, order, indptr)
    for q in range(len(indptr) - 1):
        idx = order[indptr[q]:indptr[q + 1]]
        uniq, inv = np.unique(y[idx], return_inverse=True)
        np.testing.assert_array_equal(level[idx], inv)
        assert nlev[q] == len(uniq)
    assert kos.LABEL_SCAN == kpairs.LABEL_SCAN


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([-2.5, -1.0, -0.0, 0.0, 1.0, 3.0, 1e300]),
                max_size=80) | st.lists(st.floats(-1e6, 1e6), max_size=80))
def test_sort_labels_sorts_like_np_sort(values):
    a = np.array(values, dtype=np.float64)
    kpairs.sort_labels(a)
    # heapsort is not stable: -0.0 and 0.0 may swap, so compare as values
    np.testing.assert_array_equal(a, np.sort(np.array(values, dtype=np.float64)))
    assert sorted(map(float, a)) == sorted(values)
