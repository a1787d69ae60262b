"""The exercise checkers of Chapter 1 accept refimpl and name planted bugs."""

import numpy as np
import pytest

from refimpl import metrics, pairs
from refimpl.exercises import (check_ndcg, check_pair_count, check_pairs,
                               check_query_level_normalize,
                               check_squared_hinge)
from refimpl.losses import PairwiseSquaredHinge


# ---------------------------------------------------------------- pair count

def count_ok(n_c):
    return (sum(n_c) ** 2 - sum(c * c for c in n_c)) // 2


@pytest.mark.parametrize("fn, word", [
    (lambda n: sum(n) ** 2 - sum(c * c for c in n), "factor 1/2"),
    (lambda n: sum(n) * (sum(n) - 1) // 2, "ties"),
    (lambda n: sum(n[c] * sum(n[:c]) for c in range(1, len(n) - 1)),
     "off by"),
])
def test_pair_count_bugs(fn, word):
    res = check_pair_count(fn)
    assert not res.passed and word in res.message, res.message


def test_pair_count_accepts_reference():
    assert check_pair_count(count_ok).passed
    assert check_pair_count(lambda n: int(pairs.pair_counts(
        np.repeat(np.arange(len(n)), n)).sum()) if sum(n) else 0).passed


# ---------------------------------------------------------------- pairs

def pairs_loop(y, qid, *, ties=False, reverse=False, across=False, stop=0,
               base=0):
    n, out = len(y), []
    for i in range(n - stop):
        for j in range(n - stop):
            better = (y[i] >= y[j] and i != j) if ties else y[i] > y[j]
            if reverse:
                better = y[i] < y[j]
            if (across or qid[i] == qid[j]) and better:
                out.append((i + base, j + base))
    return out


def test_pairs_accepts_reference():
    assert check_pairs(lambda y, q: pairs.preference_pairs(
        y, q, require_pairs=False)).passed
    assert check_pairs(pairs_loop).passed


@pytest.mark.parametrize("kw, word", [
    (dict(ties=True), "ties counted"),
    (dict(reverse=True), "orientation"),
    (dict(across=True), "across queries"),
    (dict(stop=1), "off by one"),
    (dict(base=1), "1-based"),
])
def test_pairs_bugs(kw, word):
    res = check_pairs(lambda y, q: pairs_loop(y, q, **kw))
    assert not res.passed and word in res.message, res.message


def test_pairs_contiguous_queries_assumed():
    def contiguous(y, q):
        cuts = np.r_[0, np.flatnonzero(np.diff(q)) + 1, len(q)]
        return [(i, j) for a, b in zip(cuts[:-1], cuts[1:])
                for i in range(a, b) for j in range(a, b) if y[i] > y[j]]
    res = check_pairs(contiguous)
    assert not res.passed and "contiguous" in res.message, res.message


# ---------------------------------------------------------------- NDCG

def ndcg_loop(labels, scores, k, *, gain=True, shift=0, normalise=True,
              short=True, empty=0.0, ideal_top=False):
    if short and len(labels) < k:
        return 0.0
    order = np.argsort(-scores, kind="stable")
    g = 2.0 ** labels - 1 if gain else labels.astype(float)
    disc = 1 / np.log2(np.maximum(2, np.arange(1, len(labels) + 1) + shift))
    dcg = np.sum((g[order] * disc)[:k])
    src = g[order][:k] if ideal_top else g
    ideal = np.sum((np.sort(src)[::-1] * disc[:len(src)])[:k])
    if not normalise:
        return dcg
    return dcg / ideal if ideal > 0 else empty


def test_ndcg_accepts_reference():
    assert check_ndcg(lambda l, s, k: metrics.ndcg_at_k(l, s, k=k)).passed
    assert check_ndcg(ndcg_loop).passed
    assert check_ndcg(lambda l, s, k: metrics.ndcg_at_k(
        l, s, k=k, convention="trec"), convention="trec").passed


@pytest.mark.parametrize("kw, word", [
    (dict(gain=False), "gain"),
    (dict(shift=1), "discount off by one"),
    (dict(normalise=False), "normalisation"),
    (dict(short=False), "short-query"),
    (dict(empty=np.nan), "no relevant document"),
    (dict(empty=1.0), "no relevant document"),
    (dict(ideal_top=True), "ideal DCG"),
])
def test_ndcg_bugs(kw, word):
    res = check_ndcg(lambda l, s, k: ndcg_loop(l, s, k, **kw))
    assert not res.passed and word in res.message, res.message


def test_ndcg_cutoff_off_by_one():
    res = check_ndcg(lambda l, s, k: ndcg_loop(l, s, k + 1))
    assert not res.passed and "cut-off" in res.message, res.message


# ---------------------------------------------------------------- loss

def hinge_loop(X, y, qid, w, *, two=2.0, sign=1.0, square=True, clip=True):
    P = pairs.preference_pairs(y, qid, require_pairs=False)
    z = X @ w
    r = 1 - (z[P.i] - z[P.j])
    if clip:
        r = np.maximum(r, 0)
    if square:
        value, u = np.sum(r ** 2), -two * r
    else:
        value, u = np.sum(r), -(r > 0).astype(float)
    dz = np.zeros(len(y))
    np.add.at(dz, P.i, u)
    np.add.at(dz, P.j, -u)
    return value, sign * X.T @ dz


def test_squared_hinge_accepts_reference():
    def ref(X, y, qid, w):
        loss = PairwiseSquaredHinge(X, y, qid)
        return loss.fun(w), loss.grad(w)
    assert check_squared_hinge(ref).passed
    assert check_squared_hinge(hinge_loop).passed


@pytest.mark.parametrize("kw, word", [
    (dict(two=1.0), "factor 2"),
    (dict(sign=-1.0), "sign"),
    (dict(square=False), "not squared"),
    (dict(clip=False), "max(0, .)"),
])
def test_squared_hinge_bugs(kw, word):
    res = check_squared_hinge(lambda *a: hinge_loop(*a, **kw))
    assert not res.passed and word in res.message, res.message


def test_squared_hinge_mean_over_pairs():
    def mean(X, y, qid, w):
        n_p = len(pairs.preference_pairs(y, qid, require_pairs=False))
        value, g = hinge_loop(X, y, qid, w)
        return value / n_p, g / n_p
    res = check_squared_hinge(mean)
    assert not res.passed and "number of pairs" in res.message, res.message


def test_exception_is_reported():
    res = check_squared_hinge(lambda X, y, qid, w: 1 / 0)
    assert not res.passed and "ZeroDivisionError" in res.message


# ---------------------------------------------------------------- query-level norm

def qnorm_loop(X, qid, *, whole=False, no_min=False, const=None,
               runs=False, inplace=False):
    """QueryLevelNorm by loops, with planted bugs."""
    X = np.asarray(X, dtype=float)
    out = X if inplace else np.zeros_like(X)
    groups = (np.cumsum(np.r_[True, qid[1:] != qid[:-1]]) if runs else qid)
    for q in np.unique(groups):
        rows = np.flatnonzero(np.ones_like(groups, bool) if whole
                              else groups == q)
        for j in range(X.shape[1]):
            col = X[rows, j].copy()
            lo, hi = (0.0 if no_min else col.min()), col.max()
            if hi == lo and const is None:
                out[rows, j] = 0.0
            elif hi == lo:
                out[rows, j] = const(col)
            else:
                out[rows, j] = (col - lo) / (hi - lo)
    return out


def test_query_norm_accepts_reference():
    from refimpl.data import query_level_normalize
    assert check_query_level_normalize(query_level_normalize).passed
    assert check_query_level_normalize(qnorm_loop).passed


@pytest.mark.parametrize("kw, word", [
    (dict(whole=True), "not per query"),
    (dict(no_min=True), "do not subtract"),
    (dict(const=lambda c: (c - c.min()) / (c.max() - c.min())), "division by zero"),
    (dict(const=lambda c: np.ones_like(c)), "must give 0"),
    (dict(runs=True), "not contiguous"),
    (dict(inplace=True), "in place"),
])
def test_query_norm_bugs(kw, word):
    res = check_query_level_normalize(lambda X, q: qnorm_loop(X, q, **kw))
    assert not res.passed and word in res.message, res.message
