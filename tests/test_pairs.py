"""Preference pairs against a brute-force double loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.exceptions import DataError, PairMatrixTooLargeError
from refimpl.kernels import pairs as kpairs
from refimpl.pairs import (
    n_pairs,
    pair_counts,
    pair_difference_matrix,
    preference_pairs,
)


def brute_force_pairs(y, qid):
    """Every (i, j) with the same query and y_i > y_j, by two nested loops."""
    out = set()
    for i in range(len(y)):
        for j in range(len(y)):
            if qid[i] == qid[j] and y[i] > y[j]:
                out.add((i, j))
    return out


@st.composite
def ranking_labels(draw, max_docs=40):
    n = draw(st.integers(1, max_docs))
    n_levels = draw(st.integers(1, 5))
    y = draw(st.lists(st.integers(0, n_levels - 1), min_size=n, max_size=n))
    qid = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    return np.array(y), np.array(qid)


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
    order = np.argsort(qid, kind="stable").astype(np.int64)
    sq = qid[order]
    indptr = np.r_[np.flatnonzero(np.r_[True, sq[1:] != sq[:-1]]), len(y)]
    indptr = indptr.astype(np.int64)
    a = np.empty(len(indptr) - 1, np.int64)
    b = np.empty_like(a)
    kpairs.count_pairs_per_query(y, order, indptr, a)
    kpairs.count_pairs_per_query.py_func(y, order, indptr, b)
    np.testing.assert_array_equal(a, b)


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
