"""Tests for refimpl.metrics and refimpl.kernels.metrics.

The LETOR conventions are checked against a plain-Python transcription of the
rules of the official scripts Eval-Score-3.0.pl / Eval-Score-4.0.pl (written
below from the rules, position by position, like the Perl code); the "trec"
convention against pytrec_eval (pytrec-eval-terrier), i.e. trec_eval itself.
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from refimpl import metrics
from refimpl.exceptions import DataError
from refimpl.kernels import metrics as kernels
from refimpl.metrics import (
    CONVENTIONS,
    EvalConvention,
    average_precision,
    evaluate,
    kendall_tau,
    mean_average_precision,
    mean_ndcg,
    ndcg_at_k,
    pairwise_accuracy,
    precision_at_k,
    sparsity_ratio,
)

pytrec_eval = pytest.importorskip("pytrec_eval")

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TOL = {"rtol": 1e-12, "atol": 1e-12}
KS = list(range(1, 13))


# --------------------------------------------------------------------------
# random ranking data
# --------------------------------------------------------------------------


@st.composite
def ranking_data(draw, max_label=2, distinct_scores=False, max_size=15):
    """Queries of 1..max_size documents, shuffled together.

    Labels in 0..max_label, some queries all-zero; scores on a coarse grid
    (many ties) unless ``distinct_scores``; qids arbitrary and non-contiguous.
    """
    n_queries = draw(st.integers(1, 5))
    qids = draw(st.lists(st.integers(-30, 30), min_size=n_queries,
                         max_size=n_queries, unique=True))
    y, s, q = [], [], []
    for qv in qids:
        size = draw(st.integers(1, max_size))
        if draw(st.integers(0, 4)) == 0:
            labels = [0] * size
        else:
            labels = draw(st.lists(st.integers(0, max_label), min_size=size,
                                   max_size=size))
        scores = draw(st.lists(st.integers(0, 4), min_size=size,
                               max_size=size))
        y += labels
        s += [v / 2.0 for v in scores]
        q += [qv] * size
    n = len(y)
    perm = draw(st.permutations(range(n)))
    if distinct_scores:
        s = [0.25 + 0.5 * v for v in draw(st.permutations(range(n)))]
    y = np.array(y, dtype=np.int64)[perm]
    s = np.array(s, dtype=np.float64)[perm]
    q = np.array(q, dtype=np.int64)[perm]
    return y, s, q


# --------------------------------------------------------------------------
# plain-Python transcription of the LETOR evaluation rules
# --------------------------------------------------------------------------


def ref_queries(y, s, qid):
    """Queries in increasing qid order, documents in input order."""
    docs = {}
    for i in range(len(y)):
        docs.setdefault(int(qid[i]), []).append(i)
    return [([float(y[i]) for i in docs[q]], [float(s[i]) for i in docs[q]])
            for q in sorted(docs)]


def ref_ranked(labels, scores, ties="input"):
    """Sort by 'line number', then stable sort by decreasing prediction."""
    idx = list(range(len(labels)))
    if ties == "input":
        idx.sort(key=lambda i: -scores[i])
    elif ties == "pessimistic":
        idx.sort(key=lambda i: (-scores[i], labels[i]))
    else:
        idx.sort(key=lambda i: (-scores[i], -labels[i]))
    return [labels[i] for i in idx]


def ref_dcg(rates, top_n):
    """DCG at positions 1..min(top_n, len): gain 2^r - 1, log2(max(2, i))."""
    dcg = []
    for pos in range(min(top_n, len(rates))):
        gain = 2.0 ** rates[pos] - 1.0
        if pos < 2:
            term = gain
        else:
            term = gain * math.log(2.0) / math.log(pos + 1.0)
        dcg.append((dcg[pos - 1] if pos > 0 else 0.0) + term)
    return dcg


def ref_ndcg(rates, top_n):
    dcg = ref_dcg(rates, top_n)
    idcg = ref_dcg(sorted(rates, reverse=True), top_n)
    return [dcg[i] / idcg[i] if idcg[i] != 0 else 0.0 for i in range(len(dcg))]


def ref_precision(rates, top_n, version):
    """P@1..: 4.0 pads missing positions, 3.0 leaves them undefined."""
    prec = []
    n_rel = 0
    limit = top_n if version == 4 else min(top_n, len(rates))
    for pos in range(limit):
        rate = rates[pos] if pos < len(rates) else 0
        if rate >= 1:
            n_rel += 1
        prec.append(n_rel / (pos + 1))
    return prec


def ref_ap(rates):
    n_rel = 0
    total = 0.0
    for pos in range(len(rates)):
        if rates[pos] >= 1:
            n_rel += 1
            total += n_rel / (pos + 1)
    return 0.0 if n_rel == 0 else total / n_rel


def letor_reference(y, s, qid, version, top_n=12, ties="input"):
    """Per-query NDCG@1..top_n, P@1..top_n, AP, MeanNDCG (undefined -> 0)."""
    out = {"ndcg": [], "p": [], "ap": [], "mean_ndcg": []}
    for labels, scores in ref_queries(y, s, qid):
        rates = ref_ranked(labels, scores, ties)
        nd = ref_ndcg(rates, top_n)
        pr = ref_precision(rates, top_n, version)
        out["ndcg"].append([nd[k - 1] if k <= len(nd) else 0.0
                            for k in range(1, top_n + 1)])
        out["p"].append([pr[k - 1] if k <= len(pr) else 0.0
                         for k in range(1, top_n + 1)])
        out["ap"].append(ref_ap(rates))
        full = ref_ndcg(rates, len(rates))
        out["mean_ndcg"].append(sum(full) / len(full))
    return {key: np.array(val) for key, val in out.items()}


def brute_pairs(y, s, qid):
    correct = pairs = 0
    for i in range(len(y)):
        for j in range(len(y)):
            if qid[i] == qid[j] and y[i] > y[j]:
                pairs += 1
                if s[i] > s[j]:
                    correct += 1
    return correct, pairs


# --------------------------------------------------------------------------
# LETOR conventions vs the transcription
# --------------------------------------------------------------------------


def assert_per_query_match_transcription(y, s, q, version):
    """Per-query NDCG@KS, P@KS, AP and mean NDCG equal ``letor_reference``'s."""
    conv = f"letor{version}"
    ref = letor_reference(y, s, q, version)
    np.testing.assert_allclose(
        ndcg_at_k(y, s, q, KS, convention=conv, per_query=True),
        ref["ndcg"], **TOL)
    np.testing.assert_allclose(
        precision_at_k(y, s, q, KS, convention=conv, per_query=True),
        ref["p"], **TOL)
    np.testing.assert_allclose(
        average_precision(y, s, q, convention=conv, per_query=True),
        ref["ap"], **TOL)
    np.testing.assert_allclose(
        mean_ndcg(y, s, q, convention=conv, per_query=True),
        ref["mean_ndcg"], **TOL)
    return conv, ref


@pytest.mark.parametrize("version", [4, 3])
@SETTINGS
@given(data=ranking_data())
def test_letor_matches_transcription(version, data):
    y, s, q = data
    conv, ref = assert_per_query_match_transcription(y, s, q, version)
    np.testing.assert_allclose(ndcg_at_k(y, s, q, KS, convention=conv),
                               ref["ndcg"].mean(axis=0), **TOL)
    assert math.isclose(mean_average_precision(y, s, q, convention=conv),
                        ref["ap"].mean(), rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(mean_ndcg(y, s, q, convention=conv),
                        ref["mean_ndcg"].mean(), rel_tol=1e-12,
                        abs_tol=1e-12)
    k = int(q.size % 12) + 1
    assert math.isclose(ndcg_at_k(y, s, q, k, convention=conv),
                        ref["ndcg"][:, k - 1].mean(), rel_tol=1e-12,
                        abs_tol=1e-12)


@pytest.mark.parametrize("ties", ["pessimistic", "optimistic"])
@SETTINGS
@given(data=ranking_data())
def test_tie_rules_match_transcription(ties, data):
    y, s, q = data
    ref = letor_reference(y, s, q, 4, ties=ties)
    np.testing.assert_allclose(
        ndcg_at_k(y, s, q, KS, ties=ties, per_query=True), ref["ndcg"], **TOL)
    np.testing.assert_allclose(
        precision_at_k(y, s, q, KS, ties=ties, per_query=True), ref["p"],
        **TOL)
    np.testing.assert_allclose(
        average_precision(y, s, q, ties=ties, per_query=True), ref["ap"],
        **TOL)


@SETTINGS
@given(data=ranking_data())
def test_tie_rules_bound_the_input_order(data):
    y, s, q = data
    for fun, kw in ((ndcg_at_k, {"k": KS}), (precision_at_k, {"k": KS}),
                    (average_precision, {}), (mean_ndcg, {})):
        lo = fun(y, s, q, ties="pessimistic", per_query=True, **kw)
        mid = fun(y, s, q, ties="input", per_query=True, **kw)
        hi = fun(y, s, q, ties="optimistic", per_query=True, **kw)
        assert np.all(lo <= mid + 1e-12) and np.all(mid <= hi + 1e-12)


# --------------------------------------------------------------------------
# "trec" convention vs pytrec_eval
# --------------------------------------------------------------------------


def pytrec_per_query(y, s, qid, measures):
    qrel, run = {}, {}
    for i in range(len(y)):
        key = f"q{qid[i]}"
        qrel.setdefault(key, {})[f"d{i}"] = int(y[i])
        run.setdefault(key, {})[f"d{i}"] = float(s[i])
    result = pytrec_eval.RelevanceEvaluator(qrel, set(measures)).evaluate(run)
    return [result[f"q{v}"] for v in sorted(set(qid.tolist()))]


@SETTINGS
@given(data=ranking_data(max_label=3, distinct_scores=True))
def test_trec_matches_pytrec_eval(data):
    y, s, q = data
    cuts = ",".join(map(str, KS))
    per_q = pytrec_per_query(y, s, q, [f"ndcg_cut.{cuts}", f"P.{cuts}",
                                      "map"])
    want_nd = np.array([[r[f"ndcg_cut_{k}"] for k in KS] for r in per_q])
    want_p = np.array([[r[f"P_{k}"] for k in KS] for r in per_q])
    want_ap = np.array([r["map"] for r in per_q])
    tol = {"rtol": 1e-9, "atol": 1e-12}
    np.testing.assert_allclose(
        ndcg_at_k(y, s, q, KS, convention="trec", per_query=True), want_nd,
        **tol)
    np.testing.assert_allclose(
        precision_at_k(y, s, q, KS, convention="trec", per_query=True),
        want_p, **tol)
    np.testing.assert_allclose(
        average_precision(y, s, q, convention="trec", per_query=True),
        want_ap, **tol)
    # the mean over queries averages pytrec_eval's per-query values,
    # including queries without any relevant document
    assert math.isclose(average_precision(y, s, q, convention="trec"),
                        want_ap.mean(), rel_tol=1e-9, abs_tol=1e-12)


def test_pytrec_eval_reports_no_relevant_queries_as_zero():
    """Fact behind the "trec" preset: all-zero queries count, as 0."""
    y = np.array([0, 0, 0, 2, 0, 1, 0])
    s = np.array([3.0, 2.0, 1.0, 1.0, 2.0, 3.0, 5.0])
    q = np.array([1, 1, 1, 2, 2, 2, 3])
    per_q = pytrec_per_query(y, s, q, ["ndcg_cut.1,5", "P.1,5", "map"])
    assert len(per_q) == 3
    for r in (per_q[0], per_q[2]):
        assert all(v == 0.0 for v in r.values())
    for conv in ("trec", "letor4", "letor3"):
        nd = ndcg_at_k(y, s, q, [1, 5], convention=conv, per_query=True)
        ap = average_precision(y, s, q, convention=conv, per_query=True)
        assert np.all(nd[[0, 2]] == 0.0) and np.all(ap[[0, 2]] == 0.0)
        assert average_precision(y, s, q, convention=conv) == ap[1] / 3


def test_no_relevant_value_is_configurable():
    conv = EvalConvention(no_relevant_ndcg=1.0, name="ones")
    y, s = np.array([0, 0, 1, 0]), np.array([1.0, 2.0, 1.0, 2.0])
    q = np.array([1, 1, 2, 2])
    np.testing.assert_allclose(
        ndcg_at_k(y, s, q, 1, convention=conv, per_query=True), [1.0, 0.0])


# --------------------------------------------------------------------------
# hand-computed values
# --------------------------------------------------------------------------


def test_hand_computed_letor4_and_trec():
    y, s = [2, 0, 1], [3.0, 2.0, 1.0]
    # letor4: gains 3, 0, 1; ideal 3, 1, 0; discounts 1, 1, 1/log2(3)
    d3 = 1.0 / math.log2(3.0)
    want = [3 / 3, (3 + 0) / (3 + 1), (3 + 0 + d3) / (3 + 1 + 0), 0.0]
    np.testing.assert_allclose(ndcg_at_k(y, s, k=[1, 2, 3, 4]), want, **TOL)
    assert math.isclose(mean_ndcg(y, s), sum(want[:3]) / 3, rel_tol=1e-12)
    np.testing.assert_allclose(precision_at_k(y, s, k=[1, 2, 3, 4]),
                               [1, 1 / 2, 2 / 3, 2 / 4], **TOL)
    np.testing.assert_allclose(
        precision_at_k(y, s, k=[3, 4], convention="letor3"), [2 / 3, 0.0])
    assert math.isclose(average_precision(y, s), (1 / 1 + 2 / 3) / 2)
    # trec: gains 2, 0, 1; ideal 2, 1, 0; discounts 1, 1/log2(3), 1/2
    trec3 = (2 + 0 + 1 / 2) / (2 + d3 + 0)
    np.testing.assert_allclose(
        ndcg_at_k(y, s, k=[1, 2, 3, 4], convention="trec"),
        [1.0, 2 / (2 + d3), trec3, trec3], **TOL)
    # k > l_q: zero under letor4, no penalty under trec
    assert ndcg_at_k(y, s, k=4) == 0.0
    assert ndcg_at_k(y, s, k=4, convention="trec") > 0.9


def test_ties_and_noncontiguous_queries_by_hand():
    # equal scores: input order decides under "input"
    assert ndcg_at_k([0, 1], [1.0, 1.0], k=1) == 0.0
    assert ndcg_at_k([1, 0], [1.0, 1.0], k=1) == 1.0
    assert ndcg_at_k([1, 0], [1.0, 1.0], k=1, ties="pessimistic") == 0.0
    assert ndcg_at_k([0, 1], [1.0, 1.0], k=1, ties="optimistic") == 1.0
    # qid 7 = docs 0, 2; qid 3 = docs 1, 3; results in increasing qid
    y, s, q = [1, 0, 0, 1], [0.0, 0.0, 1.0, 1.0], [7, 3, 7, 3]
    np.testing.assert_allclose(ndcg_at_k(y, s, q, 1, per_query=True),
                               [1.0, 0.0])
    np.testing.assert_allclose(average_precision(y, s, q, per_query=True),
                               [1.0, 0.5])
    assert ndcg_at_k(y, s, q, [1, 2], per_query=True).shape == (2, 2)


# --------------------------------------------------------------------------
# pairwise accuracy
# --------------------------------------------------------------------------


@st.composite
def pair_data(draw):
    n_queries = draw(st.integers(1, 6))
    y, s, q = [], [], []
    for qv in range(n_queries):
        size = draw(st.integers(1, 25))
        levels = draw(st.integers(1, 12))
        y += draw(st.lists(st.integers(0, levels - 1), min_size=size,
                           max_size=size))
        s += draw(st.lists(st.integers(-3, 3), min_size=size, max_size=size))
        q += [qv * 5 % 7] * size
    perm = draw(st.permutations(range(len(y))))
    return (np.array(y, dtype=float)[perm] * 0.5,
            np.array(s, dtype=float)[perm], np.array(q)[perm])


@settings(max_examples=300, deadline=None)
@given(data=pair_data())
def test_pairwise_accuracy_vs_brute_force(data):
    y, s, q = data
    correct, pairs = brute_pairs(y, s, q)
    if pairs == 0:
        with pytest.raises(DataError, match="no query has two documents"):
            pairwise_accuracy(y, s, q)
        return
    assert pairwise_accuracy(y, s, q, return_counts=True) == (correct, pairs)
    assert pairwise_accuracy(y, s, q) == correct / pairs


@settings(max_examples=100, deadline=None)
@given(data=pair_data())
def test_pairwise_kernel_equals_py_func(data):
    y, s, q = data
    y_g, s_g, qcode, groups = metrics._prepare(y, s, q)
    rank, s_sorted = metrics._pairwise_inputs(y_g, s_g, qcode, groups.indptr)
    out_jit = np.zeros(3, dtype=np.int64)
    out_py = np.zeros(3, dtype=np.int64)
    kernels.pairwise_count_kernel(rank, s_sorted, groups.indptr, out_jit)
    kernels.pairwise_count_kernel.py_func(rank, s_sorted, groups.indptr,
                                          out_py)
    np.testing.assert_array_equal(out_jit, out_py)
    assert tuple(out_jit[:2]) == brute_pairs(y, s, q)
    assert out_jit[2] == brute_tied(y, s, q)


def brute_tied(y, s, qid):
    return sum(
        1
        for i in range(len(y))
        for j in range(len(y))
        if qid[i] == qid[j] and y[i] > y[j] and s[i] == s[j]
    )


@settings(max_examples=100, deadline=None)
@given(data=pair_data())
def test_pairwise_accuracy_tie_conventions(data):
    y, s, q = data
    correct, pairs = brute_pairs(y, s, q)
    if pairs == 0:
        return
    tied = brute_tied(y, s, q)
    assert pairwise_accuracy(y, s, q, ties="correct") == pytest.approx(
        (correct + tied) / pairs, rel=1e-12)
    assert pairwise_accuracy(y, s, q, ties="half") == pytest.approx(
        (correct + tied / 2) / pairs, rel=1e-12)
    with pytest.raises(DataError, match="ties"):
        pairwise_accuracy(y, s, q, ties="maybe")


def test_pairwise_accuracy_by_hand_and_single_query():
    # pairs (y_i > y_j): (0,1) s 3>2 ok, (0,2) s 3>2 ok, (2,1) s 2=2 tie
    assert pairwise_accuracy([2, 0, 1], [3.0, 2.0, 2.0],
                             return_counts=True) == (2, 3)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 2000)
    s = np.round(rng.normal(size=2000), 1)
    diff_y = y[:, None] > y[None, :]
    want = (int(np.sum(diff_y & (s[:, None] > s[None, :]))),
            int(np.sum(diff_y)))
    assert pairwise_accuracy(y, s, return_counts=True) == want


# --------------------------------------------------------------------------
# NDCG / precision kernels vs their py_func
# --------------------------------------------------------------------------


@pytest.mark.parametrize("conv", sorted(CONVENTIONS))
@settings(max_examples=60, deadline=None)
@given(data=ranking_data())
def test_ndcg_and_precision_kernels_equal_py_func(conv, data):
    y, s, q = data
    jit = evaluate(y, s, q, ks=KS, convention=conv)
    with mock.patch.object(metrics, "ndcg_kernel",
                           kernels.ndcg_kernel.py_func), \
            mock.patch.object(metrics, "precision_ap_kernel",
                              kernels.precision_ap_kernel.py_func), \
            mock.patch.object(metrics, "pairwise_count_kernel",
                              kernels.pairwise_count_kernel.py_func):
        py = evaluate(y, s, q, ks=KS, convention=conv)
    assert jit.keys() == py.keys()
    for key in jit:
        np.testing.assert_allclose(jit[key], py[key], **TOL)


# --------------------------------------------------------------------------
# evaluate, kendall_tau, sparsity_ratio
# --------------------------------------------------------------------------


def test_evaluate_keys_and_values():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 60)
    s = rng.normal(size=60)
    q = rng.integers(0, 6, 60)
    res = evaluate(y, s, q)
    assert list(res) == ["NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "P@1",
                         "P@3", "P@5", "P@10", "MAP", "MeanNDCG",
                         "PairwiseAccuracy"]
    for k in (1, 3, 5, 10):
        assert res[f"NDCG@{k}"] == ndcg_at_k(y, s, q, k)
        assert res[f"P@{k}"] == precision_at_k(y, s, q, k)
    assert res["MAP"] == average_precision(y, s, q)
    assert res["MeanNDCG"] == mean_ndcg(y, s, q)
    assert res["PairwiseAccuracy"] == pairwise_accuracy(y, s, q)
    flat = evaluate([1, 1], [0.0, 1.0])
    assert math.isnan(flat["PairwiseAccuracy"]) and flat["NDCG@1"] == 1.0


def test_kendall_tau_vs_scipy():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 4, 30).astype(float)
    b = a + rng.integers(-2, 3, 30)
    assert math.isclose(kendall_tau(a, b), stats.kendalltau(a, b).statistic,
                        rel_tol=1e-12)
    # query 5 has one document, query 9 a constant a: both left out
    q = np.r_[np.zeros(10), np.ones(10), np.full(9, 9), 5].astype(int)
    a2 = a.copy()
    a2[20:29] = 1.0
    want = np.mean([stats.kendalltau(a2[i:i + 10], b[i:i + 10]).statistic
                    for i in (0, 10)])
    assert math.isclose(kendall_tau(a2, b, q), want, rel_tol=1e-12)
    with pytest.raises(DataError, match="Kendall's tau is undefined"):
        kendall_tau([1.0, 1.0, 2.0], [3.0, 4.0, 5.0], [0, 0, 1])


def test_sparsity_ratio():
    coef = np.array([0.0, 1e-3, -2.0, 0.0])
    assert sparsity_ratio(coef) == 2 / 4
    assert sparsity_ratio(coef, tol=1e-2) == 1 / 4
    X = np.array([[0.0, 1.0, 2.0, 0.0], [0.0, 0.0, 1.0, 3.0]])
    assert sparsity_ratio(coef, X) == 2 / 4
    assert sparsity_ratio(coef, X, ignore_unused=True) == 2 / 3
    Xs = sp.csr_matrix(X)
    Xs.data[Xs.indices == 3] = 0.0  # explicit zero: feature 3 unused too
    assert sparsity_ratio(coef, Xs, ignore_unused=True) == 2 / 2
    with pytest.raises(DataError, match="ignore_unused=True needs"):
        sparsity_ratio(coef, ignore_unused=True)
    with pytest.raises(DataError, match="coef has 4 entries but X has 3"):
        sparsity_ratio(coef, X[:, :3])
    with pytest.raises(DataError, match="tol must be finite"):
        sparsity_ratio(coef, tol=-1.0)
    with pytest.raises(DataError, match="every feature"):
        sparsity_ratio(coef, np.zeros((2, 4)), ignore_unused=True)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("args, kwargs, match", [
    (([[1, 0]], [1.0, 0.0]), {}, "y must be one-dimensional"),
    (([1, 0, 1], [1.0, 0.0]), {}, "scores has 2 entries"),
    (([1, 0], [1.0, 0.0], [1, 1, 2]), {}, "qid has 3 entries"),
    (([1, 0], [1.0, np.nan]), {}, "scores contains NaN"),
    (([1, np.nan], [1.0, 0.0]), {}, "y contains NaN"),
    (([], []), {}, "y is empty"),
    (([1, -1], [1.0, 0.0]), {}, "negative labels"),
    (([1, 0], [1.0, 0.0]), {"convention": "letor5"},
     ("unknown convention 'letor5'; accepted names are 'letor3', 'letor4', "
      "'trec'")),
    (([1, 0], [1.0, 0.0]), {"k": 0}, "k must be >= 1"),
    (([1, 0], [1.0, 0.0]), {"k": [3, -1]}, "k must be >= 1"),
    (([1, 0], [1.0, 0.0]), {"k": 2.5}, "k must be a positive integer"),
    (([1, 0], [1.0, 0.0]), {"k": True}, "k must be a positive integer"),
    (([1, 0], [1.0, 0.0]), {"k": []}, "k must be a positive integer"),
    (([1, 0], [1.0, 0.0]), {"ties": "random"}, "ties must be one of"),
])
def test_errors(args, kwargs, match):
    with pytest.raises(DataError, match=match):
        ndcg_at_k(*args, **kwargs)


def test_errors_other_functions():
    with pytest.raises(DataError, match="unknown convention"):
        average_precision([1, 0], [1.0, 0.0], convention=3)
    with pytest.raises(DataError, match="ks must be >= 1"):
        evaluate([1, 0], [1.0, 0.0], ks=(0, 1))
    with pytest.raises(DataError, match="scores contains NaN"):
        pairwise_accuracy([1, 0], [np.inf, 0.0])
    with pytest.raises(DataError, match="no query has two documents"):
        pairwise_accuracy([1, 0, 2], [1.0, 0.0, 3.0], [1, 2, 3])
    with pytest.raises(DataError, match="EvalConvention.gain"):
        EvalConvention(gain="cubic")
    with pytest.raises(DataError, match="relevance_threshold"):
        EvalConvention(relevance_threshold=float("nan"))
    with pytest.raises(DataError, match="overflows"):
        ndcg_at_k([2000, 0], [1.0, 0.0])


def test_real_mq2008_matches_transcription(letor_root):
    """MQ2008 S1 (157 queries, long queries, many tied feature values)."""
    from sklearn.datasets import load_svmlight_file

    X, y, q = load_svmlight_file(str(letor_root / "MQ2008" / "S1.txt.gz"),
                                 query_id=True)
    s = np.asarray(X[:, 7].todense()).ravel()  # one raw feature as scorer
    assert np.unique(s).size < s.size  # ties do occur
    for version in (4, 3):
        assert_per_query_match_transcription(y, s, q, version)
    want = [0, 0]
    for v in np.unique(q):
        yq, sq = y[q == v], s[q == v]
        above = yq[:, None] > yq[None, :]
        want[0] += int(np.sum(above & (sq[:, None] > sq[None, :])))
        want[1] += int(np.sum(above))
    assert pairwise_accuracy(y, s, q, return_counts=True) == tuple(want)
