"""The exercise checkers of Chapter 1 accept unusual correct solutions and
name planted bugs; a failure shows its smallest case, also as data."""

import itertools

import numpy as np
import pytest

from refimpl import metrics, pairs
from refimpl.exercises import (FailingCase, check_ndcg, check_pair_count,
                               check_pairs, check_query_level_normalize,
                               check_squared_hinge)
from refimpl.exercises import ch01_data
from refimpl.losses import PairwiseSquaredHinge


def assert_diagnosed(res, word):
    assert not res.passed, res.message
    assert word in res.message, res.message
    assert "Smallest failing case" in res.message, res.message
    assert isinstance(res.case, FailingCase)
    assert res.case.inputs and res.case.got is not None


# ---------------------------------------------------------------- pair count

def count_levels(n_c):
    """Pairs of levels, the lower one first: a loop, not the formula."""
    return sum(n_c[a] * n_c[b] for a in range(len(n_c)) for b in range(a))


def count_brute(n_c):
    y = [c for c, n in enumerate(n_c) for _ in range(n)]
    return sum(a > b for a, b in itertools.product(y, y))


@pytest.mark.parametrize("fn", [
    count_levels, count_brute,
    lambda n: (sum(n) ** 2 - sum(c * c for c in n)) / 2,  # a float is fine
    lambda n: int(pairs.pair_counts(np.repeat(np.arange(len(n)), n)).sum())
    if sum(n) else 0,
])
def test_pair_count_accepts(fn):
    res = check_pair_count(fn)
    assert res.passed and res.case is None, res.message


@pytest.mark.parametrize("fn, word", [
    (lambda n: sum(n) ** 2 - sum(c * c for c in n), "factor 1/2"),
    (lambda n: sum(n) * (sum(n) - 1) // 2, "l_q (l_q - 1) / 2"),
    (lambda n: sum(n[c] * sum(n[:c]) for c in range(1, len(n) - 1)),
     "off by"),
    (lambda n: sum(n[c] * n[c - 1] for c in range(1, len(n))),
     "adjacent levels"),
    (lambda n: count_levels(n) + sum(c * (c + 1) // 2 for c in n),
     "pairs (i, i) counted"),
    (lambda n: str(count_levels(n)) + " pairs", "not a number"),
])
def test_pair_count_bugs(fn, word):
    assert_diagnosed(check_pair_count(fn), word)


def test_pair_count_case_as_data():
    res = check_pair_count(lambda n: sum(n) ** 2 - sum(c * c for c in n))
    assert res.case.inputs == {"n_c": [1, 1]}
    assert (res.case.expected, res.case.got) == (1, 2)
    assert "n_c = [1, 1]; expected 1; got 2" in res.message


# ---------------------------------------------------------------- pairs

def pairs_loop(y, qid, *, ties=False, reverse=False, across=False, stop=0,
               base=0, upper=False):
    n, out = len(y), []
    for i in range(n - stop):
        for j in range(i + 1 if upper else 0, n - stop):
            better = (y[i] >= y[j] and i != j) if ties else y[i] > y[j]
            if reverse:
                better = y[i] < y[j]
            if (across or qid[i] == qid[j]) and better:
                out.append((i + base, j + base))
    return out


def pairs_sorted(y, qid):
    """Sort by query and label, then pair each document with the lower
    labels of its query: no comparison matrix at all."""
    order = np.lexsort((-y, qid))
    out = []
    for a, i in enumerate(order):
        for j in order[a + 1:]:
            if qid[j] != qid[i]:
                break
            if y[i] > y[j]:
                out.append((int(i), int(j)))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("fn", [
    lambda y, q: pairs.preference_pairs(y, q, require_pairs=False),
    pairs_loop, pairs_sorted])
def test_pairs_accepts(fn):
    assert check_pairs(fn).passed


@pytest.mark.parametrize("kw, word", [
    (dict(ties=True), "ties counted"),
    (dict(reverse=True), "reversed orientation"),
    (dict(across=True), "across queries"),
    (dict(stop=1), "off by one"),
    (dict(base=1), "1-based"),
    (dict(upper=True), "pairs (i, j) with i > j are missing"),
])
def test_pairs_bugs(kw, word):
    assert_diagnosed(check_pairs(lambda y, q: pairs_loop(y, q, **kw)), word)


def test_pairs_contiguous_queries_assumed():
    def contiguous(y, q):
        cuts = np.r_[0, np.flatnonzero(np.diff(q)) + 1, len(q)]
        return [(i, j) for a, b in zip(cuts[:-1], cuts[1:])
                for i in range(a, b) for j in range(a, b) if y[i] > y[j]]
    assert_diagnosed(check_pairs(contiguous), "need not be contiguous")


# ---------------------------------------------------------------- NDCG

def ndcg_loop(labels, scores, k, *, gain=True, shift=0, normalise=True,
              short=True, empty=0.0, ideal_top=False, order=None):
    if short and len(labels) < k:
        return 0.0
    if order is None:
        order = np.argsort(-scores, kind="stable")
    else:
        order = order(labels, scores)
    g = 2.0 ** labels - 1 if gain else labels.astype(float)
    disc = 1 / np.log2(np.maximum(2, np.arange(1, len(labels) + 1) + shift))
    dcg = np.sum((g[order] * disc)[:k])
    src = g[order][:k] if ideal_top else g
    ideal = np.sum((np.sort(src)[::-1] * disc[:len(src)])[:k])
    if not normalise:
        return dcg
    return dcg / ideal if ideal > 0 else empty


def ndcg_pure_python(labels, scores, k):
    """No NumPy: sorted() is stable, and ln instead of log2 cancels."""
    import math
    if len(labels) < k:
        return 0.0
    ranked = [l for _, l in sorted(zip([-s for s in scores], labels),
                                   key=lambda t: t[0])]
    def dcg(ls):
        return sum((2 ** l - 1) / math.log(max(2, i + 1))
                   for i, l in enumerate(ls[:k]))
    ideal = dcg(sorted(labels, reverse=True))
    return dcg(ranked) / ideal if ideal > 0 else 0.0


def test_ndcg_accepts():
    assert check_ndcg(lambda l, s, k: metrics.ndcg_at_k(l, s, k=k)).passed
    assert check_ndcg(ndcg_loop).passed
    assert check_ndcg(ndcg_pure_python).passed
    assert check_ndcg(lambda l, s, k: metrics.ndcg_at_k(
        l, s, k=k, convention="trec"), convention="trec").passed


def test_ndcg_passing_message_unchanged():
    assert str(check_ndcg(ndcg_loop)) == (
        "PASSED: your NDCG@k agrees with refimpl on all 125 cases tried "
        "(adversarial and random).")


@pytest.mark.parametrize("kw, word", [
    (dict(gain=False), "wrong gain"),
    (dict(shift=1), "wrong discount"),
    (dict(shift=-1), "discount off by one"),
    (dict(normalise=False), "normalisation"),
    (dict(short=False), "short-query"),
    (dict(empty=np.nan), "no relevant document"),
    (dict(ideal_top=True), "ideal DCG"),
    (dict(order=lambda l, s: np.argsort(s, kind="stable")),
     "increasing score"),
    (dict(order=lambda l, s: np.lexsort((l, -s))), "pessimistic"),
    (dict(order=lambda l, s: np.lexsort((-l, -s))), "optimistic"),
    (dict(order=lambda l, s: np.argsort(s, kind="stable")[::-1]),
     "reverse input order"),
])
def test_ndcg_bugs(kw, word):
    assert_diagnosed(check_ndcg(lambda l, s, k: ndcg_loop(l, s, k, **kw)),
                     word)


def test_ndcg_ties_under_trec():
    def trec_pessimistic(labels, scores, k):
        order = np.lexsort((labels, -scores))
        disc = 1 / np.log2(np.arange(2, len(labels) + 2))
        ideal = np.sum((np.sort(labels)[::-1] * disc)[:k])
        dcg = np.sum((labels[order] * disc)[:k])
        return dcg / ideal if ideal > 0 else 0.0
    res = check_ndcg(trec_pessimistic, convention="trec")
    assert_diagnosed(res, "pessimistic")
    assert "trec convention breaks ties by input order" in res.message


def test_ndcg_cutoff_off_by_one():
    assert_diagnosed(check_ndcg(lambda l, s, k: ndcg_loop(l, s, k + 1)),
                     "cut-off")


# ---------------------------------------------------------------- loss

def hinge_loop(X, y, qid, w, *, two=2.0, sign=1.0, square=True, clip=True,
               buffered=False, j_sign=-1.0):
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
    if buffered:
        dz[P.i] += u
        dz[P.j] += j_sign * u
    else:
        np.add.at(dz, P.i, u)
        np.add.at(dz, P.j, j_sign * u)
    return value, sign * X.T @ dz


def hinge_pair_by_pair(X, y, qid, w):
    """A Python loop over the pairs, the gradient built row by row."""
    value, g = 0.0, np.zeros(X.shape[1])
    P = pairs.preference_pairs(y, qid, require_pairs=False)
    for i, j in zip(P.i, P.j):
        r = 1 - (X[i] - X[j]) @ w
        if r > 0:
            value += r * r
            g -= 2 * r * (X[i] - X[j])
    return value, g


def hinge_bincount(X, y, qid, w):
    P = pairs.preference_pairs(y, qid, require_pairs=False)
    r = np.maximum(0, 1 - X[P.i] @ w + X[P.j] @ w)
    n = len(y)
    u = (np.bincount(P.j, 2 * r, minlength=n)
         - np.bincount(P.i, 2 * r, minlength=n))
    return r @ r, u @ X


@pytest.mark.parametrize("fn", [hinge_loop, hinge_pair_by_pair,
                                hinge_bincount])
def test_squared_hinge_accepts(fn):
    assert check_squared_hinge(fn).passed


def test_squared_hinge_accepts_reference():
    def ref(X, y, qid, w):
        loss = PairwiseSquaredHinge(X, y, qid)
        return loss.fun(w), loss.grad(w)
    assert check_squared_hinge(ref).passed


@pytest.mark.parametrize("kw, word", [
    (dict(two=1.0), "factor 2"),
    (dict(sign=-1.0), "wrong sign: your gradient"),
    (dict(square=False), "not squared"),
    (dict(clip=False), "max(0, .) forgotten"),
    (dict(buffered=True), "np.add.at"),
    (dict(j_sign=1.0), "second document of a pair"),
])
def test_squared_hinge_bugs(kw, word):
    assert_diagnosed(check_squared_hinge(lambda *a: hinge_loop(*a, **kw)),
                     word)


def test_squared_hinge_first_case_separates_the_mistakes():
    X, y, qid, w = (np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5],
                              [0.0, 0.0]]), np.array([2, 1, 1, 0]),
                    np.array([1, 1, 1, 1]), np.array([1.2, 0.3]))
    ok, variants = ch01_data._hinge_variants(X, y, qid, w)
    answers = [ok] + list(variants.values())
    for a, b in itertools.combinations(answers, 2):
        assert not (np.isclose(a[0], b[0]) and np.allclose(a[1], b[1]))


def test_squared_hinge_mean_over_pairs():
    def mean(X, y, qid, w):
        n_p = len(pairs.preference_pairs(y, qid, require_pairs=False))
        value, g = hinge_loop(X, y, qid, w)
        return value / n_p, g / n_p
    assert_diagnosed(check_squared_hinge(mean), "number of pairs")


def test_exception_is_reported():
    res = check_squared_hinge(lambda X, y, qid, w: 1 / 0)
    assert_diagnosed(res, "ZeroDivisionError")
    assert isinstance(res.case.got, ZeroDivisionError)


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


def qnorm_sorted(X, qid):
    """Sort the rows by query, use reduceat on the runs, scatter back."""
    order = np.argsort(qid, kind="stable")
    Xs, qs = X[order], qid[order]
    starts = np.r_[0, np.flatnonzero(np.diff(qs)) + 1]
    lo = np.repeat(np.minimum.reduceat(Xs, starts), np.diff(
        np.r_[starts, len(qs)]), axis=0)
    hi = np.repeat(np.maximum.reduceat(Xs, starts), np.diff(
        np.r_[starts, len(qs)]), axis=0)
    out = np.empty_like(X, dtype=float)
    out[order] = np.divide(Xs - lo, hi - lo, out=np.zeros_like(Xs),
                           where=hi > lo)
    return out


def qnorm_axis(X, qid):
    out = np.zeros_like(X, dtype=float)
    for q in np.unique(qid):
        m = qid == q
        lo, hi = X[m].min(axis=1, keepdims=True), X[m].max(axis=1,
                                                          keepdims=True)
        out[m] = np.divide(X[m] - lo, hi - lo, out=np.zeros_like(X[m]),
                           where=hi > lo)
    return out


@pytest.mark.parametrize("fn", [qnorm_loop, qnorm_sorted])
def test_query_norm_accepts(fn):
    assert check_query_level_normalize(fn).passed


def test_query_norm_accepts_reference():
    from refimpl.data import query_level_normalize
    assert check_query_level_normalize(query_level_normalize).passed


@pytest.mark.parametrize("kw, word", [
    (dict(whole=True), "not per query"),
    (dict(no_min=True), "do not subtract"),
    (dict(const=lambda c: (c - c.min()) / (c.max() - c.min())),
     "division by zero"),
    (dict(const=lambda c: np.ones_like(c)), "must give 0"),
    (dict(runs=True), "not contiguous"),
    (dict(inplace=True), "in place"),
])
def test_query_norm_bugs(kw, word):
    res = check_query_level_normalize(lambda X, q: qnorm_loop(X, q, **kw))
    assert_diagnosed(res, word)


def test_query_norm_wrong_axis():
    assert_diagnosed(check_query_level_normalize(qnorm_axis), "wrong axis")
