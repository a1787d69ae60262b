"""Exercise checkers of Chapter 1 (data, pairs, metrics).

Each checker compares the student's function with ``refimpl`` (the pair
enumeration of :mod:`refimpl.pairs`, the NDCG of :mod:`refimpl.metrics`,
the loss :class:`refimpl.losses.PairwiseSquaredHinge`, the query-level
normalisation :func:`refimpl.data.query_level_normalize`) and names the
typical mistake when they differ.

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

import numpy as np

from ..data import query_level_normalize
from ..losses import PairwiseSquaredHinge
from ..metrics import CONVENTIONS, EvalConvention, ndcg_at_k
from ..pairs import pair_counts, preference_pairs
from ._harness import CheckResult, run_checker

__all__ = ["check_pair_count", "check_pairs", "check_ndcg",
           "check_squared_hinge", "check_query_level_normalize"]


def _strategies():
    from hypothesis import strategies as st
    return st


# --------------------------------------------------------------------------
# the number of pairs of one query from its label counts
# --------------------------------------------------------------------------


def _pair_count_ref(n_c):
    n_c = np.asarray(n_c, dtype=np.int64)
    y = np.repeat(np.arange(len(n_c)), n_c)
    return int(pair_counts(y).sum()) if len(y) else 0


def check_pair_count(fn) -> CheckResult:
    """Check ``fn(n_c) -> p_q``: the number of preference pairs of a query.

    ``n_c[c]`` is the number of documents at label ``c`` (a list of
    non-negative ints); the answer is ``|{(i, j) : y_i > y_j}|``
    (eq. eq-pairs of chapter 1).  Reference: :func:`refimpl.pairs.pair_counts`.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    def diagnose(n_c):
        ref = _pair_count_ref(n_c)
        got = fn(list(n_c))
        try:
            got_f = float(got)
        except (TypeError, ValueError):
            return f"your function returned {got!r}, not a number"
        if got_f == ref:
            return None
        l_q = int(sum(n_c))
        same = int(sum(c * c for c in n_c))
        where = f"for the label counts {list(n_c)}"
        if got_f == 2 * ref:
            return (f"missing factor 1/2: you count every pair twice, in "
                    f"both orders ({got_f:g} instead of {ref}) {where}")
        if got_f == l_q * (l_q - 1) / 2 and ref != got_f:
            return (f"ties counted as pairs: you return l_q (l_q - 1) / 2 "
                    f"= {got_f:g}, the number of all pairs of documents, "
                    f"but only the {ref} pairs with different labels are "
                    f"preference pairs, {where}")
        if got_f == ref + same / 2 or got_f == ref + (same - l_q) / 2:
            return (f"ties counted as pairs: you add the pairs with equal "
                    f"labels ({got_f:g} instead of {ref}) {where}")
        if got_f == (l_q * l_q - same) or got_f == l_q * l_q - same + l_q:
            return (f"missing factor 1/2: {got_f:g} counts ordered pairs "
                    f"(i, j) and (j, i) both, {ref} expected, {where}")
        if abs(got_f - ref) <= max(l_q, 1):
            return (f"off by a little: {got_f:g} instead of {ref} {where} "
                    "(a sum that starts or stops one level early?)")
        return f"{got_f:g} pairs instead of {ref} {where}"

    st = _strategies()
    adversarial = [(3,), (0, 0), (1, 1), (2, 3), (1, 0, 1), (4, 0, 0, 2),
                   (1, 2, 3, 4), (0, 5, 0)]
    strategy = st.lists(st.integers(0, 12), min_size=1, max_size=6).map(tuple)
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=100, what="your pair count")


# --------------------------------------------------------------------------
# enumerating the preference pairs
# --------------------------------------------------------------------------


def _as_pairs(out):
    """The student's answer as a list of (i, j) int tuples."""
    if hasattr(out, "i") and hasattr(out, "j"):
        return list(zip(np.asarray(out.i).tolist(), np.asarray(out.j).tolist()))
    arr = np.asarray(list(out) if not isinstance(out, np.ndarray) else out)
    if arr.size == 0:
        return []
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"expected a list of (i, j) pairs, got an array of "
                         f"shape {arr.shape}")
    if not np.all(arr == np.round(arr)):
        raise ValueError("the pair indices are not integers")
    return [(int(a), int(b)) for a, b in arr]


def _pairs_message(got, y, qid):
    ref = preference_pairs(y, qid, require_pairs=False)
    want = set(zip(ref.i.tolist(), ref.j.tolist()))
    n = len(y)
    case = f"for y = {list(map(int, y))}, qid = {list(map(int, qid))}"
    if any(not (0 <= i < n and 0 <= j < n) for i, j in got):
        shifted = {(i - 1, j - 1) for i, j in got}
        if shifted == want and len(got) == len(want):
            return f"off by one: your indices are 1-based {case}"
        return f"an index is outside 0..{n - 1} {case}"
    if len(set(got)) != len(got):
        dup = next(p for p in got if got.count(p) > 1)
        return f"the pair {dup} is listed twice {case}"
    have = set(got)
    if have == want:
        return None
    if have == {(j, i) for i, j in want}:
        return ("reversed orientation: you list (i, j) with y_i < y_j; "
                f"the preferred document comes first {case}")
    extra, missing = have - want, want - have
    across = [(i, j) for i, j in extra if qid[i] != qid[j]]
    if across:
        return (f"pairs across queries: {across[0]} joins queries "
                f"{qid[across[0][0]]} and {qid[across[0][1]]}, which are "
                f"never compared {case}")
    ties = [(i, j) for i, j in extra if y[i] == y[j]]
    if ties:
        return (f"ties counted as pairs: {ties[0]} has equal labels "
                f"{y[ties[0][0]]} {case}")
    wrong = [(i, j) for i, j in extra if y[i] < y[j]]
    if wrong:
        return (f"wrong orientation for {wrong[0]} (y_i < y_j): the "
                f"preferred document comes first {case}")
    if missing:
        edge = {0, n - 1}
        if all(i in edge or j in edge for i, j in missing):
            end = "last" if any(n - 1 in p for p in missing) else "first"
            return (f"off by one: the pairs with the {end} document "
                    f"are missing, e.g. {sorted(missing)[0]} (a loop that "
                    f"stops one early?) {case}")
        return (f"{len(missing)} pairs missing, e.g. {sorted(missing)[0]} "
                f"(queries need not be contiguous or sorted) {case}")
    return f"your pairs differ from refimpl's {case}"  # pragma: no cover


def check_pairs(fn) -> CheckResult:
    """Check ``fn(y, qid)``: the preference pairs (eq. eq-pairs of chapter 1).

    ``fn`` returns the pairs as a list of ``(i, j)`` (an ``(p, 2)`` array
    or an object with index arrays ``.i`` and ``.j`` also do), in any
    order, each pair once, with ``y[i] > y[j]`` and ``qid[i] == qid[j]``.
    Reference: :func:`refimpl.pairs.preference_pairs`.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    def diagnose(case):
        y, qid = (np.asarray(a, dtype=np.int64) for a in case)
        got = _as_pairs(fn(y.copy(), qid.copy()))
        return _pairs_message(got, y, qid)

    st = _strategies()
    adversarial = [
        ([1, 0], [1, 1]),                       # one pair
        ([2, 0, 1, 0], [7, 7, 7, 7]),           # the last document matters
        ([0, 1, 1, 0, 2], [1, 1, 1, 1, 1]),     # ties
        ([1, 0, 1, 0], [1, 1, 2, 2]),           # two queries
        ([1, 1, 0, 0, 2], [3, 1, 3, 1, 1]),     # queries not contiguous
        ([0, 0, 0], [1, 1, 1]),                 # no pair at all
    ]
    strategy = st.integers(1, 14).flatmap(lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
        st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=120, what="your pair enumeration")


# --------------------------------------------------------------------------
# NDCG@k of one query
# --------------------------------------------------------------------------


def _ndcg_variant(labels, scores, k, conv, *, gain=None, offset=0,
                  normalise=True, ideal_from_ranking=False, descending=True,
                  short=None, no_rel=None):
    """NDCG@k of one query with one rule changed (for the diagnosis)."""
    gain = conv.gain if gain is None else gain
    short = conv.short_query_ndcg if short is None else short
    no_rel = conv.no_relevant_ndcg if no_rel is None else no_rel
    labels = np.asarray(labels, dtype=float)
    n = len(labels)
    if short == "zero" and n < k:
        return 0.0
    g = 2.0 ** labels - 1 if gain == "exp2" else labels.copy()
    order = np.argsort(-scores if descending else scores, kind="stable")
    i = np.arange(1, n + 1) + offset
    disc = (1 / np.log2(np.maximum(2, i)) if conv.discount == "log2_max2"
            else 1 / np.log2(i + 1))
    dcg = np.sum((g[order] * disc)[:k])
    ranked = g[order][:k] if ideal_from_ranking else g
    ideal = np.sum((np.sort(ranked)[::-1] * disc[:len(ranked)])[:k])
    if not normalise:
        return dcg
    return dcg / ideal if ideal > 0 else no_rel


def check_ndcg(fn, convention="letor4") -> CheckResult:
    """Check ``fn(labels, scores, k)``: NDCG@k of ONE query (eq-ndcg).

    ``convention`` (``"letor4"``, the default, ``"letor3"``, ``"trec"`` or
    an :class:`~refimpl.metrics.EvalConvention`) fixes the gain, the
    discount, the value of a query shorter than ``k`` and of a query with
    no relevant document.  Scores are distinct, so ties play no role.
    Reference: :func:`refimpl.metrics.ndcg_at_k`.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    conv = (convention if isinstance(convention, EvalConvention)
            else CONVENTIONS[convention])
    other_gain = "linear" if conv.gain == "exp2" else "exp2"
    gain_text = {"exp2": "2^y - 1", "linear": "y"}
    variants = [
        (dict(gain=other_gain), f"wrong gain: you use {gain_text[other_gain]}"
         f", the {conv.name} convention uses {gain_text[conv.gain]}"),
        (dict(normalise=False), "missing ideal normalisation: you return "
         "DCG@k, not DCG@k divided by the DCG@k of the ideal order"),
        (dict(ideal_from_ranking=True), "wrong ideal DCG: sort ALL the "
         "labels of the query, not only those of your top k"),
        (dict(descending=False), "you rank by increasing score; higher "
         "scores come first"),
        (dict(offset=1), "discount off by one: position i (1-based) gets "
         "the discount of position i + 1 (0-based positions?)"),
        (dict(offset=-1), "discount off by one: position i (1-based) gets "
         "the discount of position i - 1"),
        (dict(short="truncate" if conv.short_query_ndcg == "zero"
              else "zero"), "wrong short-query rule: under the "
         f"{conv.name} convention a query with fewer than k documents gets "
         + ("NDCG@k = 0" if conv.short_query_ndcg == "zero"
            else "the NDCG of the documents it has")),
    ]

    def diagnose(case):
        labels, scores, k = case
        labels = np.asarray(labels, dtype=np.int64)
        scores = np.asarray(scores, dtype=float)
        ref = float(ndcg_at_k(labels, scores, k=k, convention=conv))
        got = fn(labels.copy(), scores.copy(), k)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return f"your function returned {got!r}, not a number"
        if np.isclose(got, ref, rtol=1e-9, atol=1e-12):
            return None
        where = (f"for labels {labels.tolist()}, scores "
                 f"{np.round(scores, 2).tolist()}, k = {k}")
        if labels.max() == 0:
            return (f"a query with no relevant document has ideal DCG 0 and "
                    f"gets NDCG {conv.no_relevant_ndcg:g} by convention; you "
                    f"return {got} {where}")
        with np.errstate(all="ignore"):
            for kw, text in variants:
                try:
                    v = _ndcg_variant(labels, scores, k, conv, **kw)
                except (ValueError, ZeroDivisionError):
                    continue
                if np.isclose(got, v, rtol=1e-9, atol=1e-12):
                    return f"{text} {where}"
            for kk in (k - 1, k + 1):
                if kk >= 1 and np.isclose(got, float(ndcg_at_k(
                        labels, scores, k=kk, convention=conv)), rtol=1e-9):
                    return f"cut-off off by one: you compute NDCG@{kk} {where}"
        return f"NDCG {got:.6f} differs from refimpl's {ref:.6f} {where}"

    st = _strategies()

    def case(n):
        return st.tuples(
            st.lists(st.integers(0, 2), min_size=n, max_size=n),
            st.permutations(list(range(n))).map(
                lambda p: (np.asarray(p) * 0.37 + 0.05).tolist()),
            st.integers(1, 12))

    adversarial = [
        ([2, 0, 1, 0, 1], [0.3, 0.9, 0.8, 0.1, 0.2], 3),
        ([0, 1, 0, 2, 1, 0], [0.6, 0.5, 0.4, 0.3, 0.2, 0.1], 5),
        ([1, 0, 0, 1, 2, 0, 1], [0.1, 0.7, 0.3, 0.9, 0.2, 0.5, 0.4], 4),
        ([0, 0, 0, 0], [0.4, 0.3, 0.2, 0.1], 3),
        ([1, 0, 2], [0.2, 0.3, 0.1], 5),
    ]
    return run_checker(diagnose, adversarial=adversarial,
                       strategy=st.integers(1, 10).flatmap(case),
                       max_examples=120, what="your NDCG@k")


# --------------------------------------------------------------------------
# the pairwise squared hinge loss and its gradient
# --------------------------------------------------------------------------


def _hinge_variants(X, y, qid, w):
    """(value, gradient) of the loss (eq-loss) and of typical mistakes."""
    P = preference_pairs(y, qid, require_pairs=False)
    K = X[P.i] - X[P.j]
    r = 1.0 - K @ w
    A = r > 0
    ok = (np.sum(r[A] ** 2), -2 * K[A].T @ r[A])
    return ok, {
        "half": (ok[0], ok[1] / 2),
        "sign": (ok[0], -ok[1]),
        "not squared": (np.sum(r[A]), -K[A].T @ np.ones(A.sum())),
        "no max": (np.sum(r ** 2), -2 * K.T @ r),
        "no max grad": (ok[0], -2 * K.T @ r),
        "both orders": (2 * ok[0], 2 * ok[1]),
        "mean": (ok[0] / max(len(P), 1), ok[1] / max(len(P), 1)),
    }


_HINGE_TEXT = {
    "half": "missing factor 2 in the gradient: yours is half of -2 K_A^T r_A",
    "sign": "wrong sign: your gradient is the negative of the correct one",
    "not squared": "hinge not squared: you sum max(0, 1 - w^T(x_i - x_j)) "
                   "instead of its square",
    "no max": "max(0, .) forgotten: you sum (1 - w^T(x_i - x_j))^2 over "
              "all pairs, also those already ranked with margin",
    "no max grad": "max(0, .) forgotten in the gradient: it sums over all "
                   "pairs, not only the active ones (r_t > 0)",
    "mean": "you divide by the number of pairs p: the loss of eq. (1.3) "
            "is the sum over the pairs, not their mean (the 1/p of "
            "FenchelRank's normalised loss comes later)",
    "both orders": "every pair counted twice (both orders (i, j) and (j, i) "
                   "of a preference?)",
}


def check_squared_hinge(fn) -> CheckResult:
    """Check ``fn(X, y, qid, w) -> (L, g)``: the loss eq-loss, gradient.

    ``L`` is ``sum over P of max(0, 1 - w^T (x_i - x_j))^2`` and ``g`` its
    gradient (eq. eq-grad-hess of chapter 1).  Reference:
    :class:`refimpl.losses.PairwiseSquaredHinge` (``fun``, ``grad``).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    def diagnose(case):
        X, y, qid, w = case
        loss = PairwiseSquaredHinge(X, y, qid, backend="numpy")
        ref = (loss.fun(w), loss.grad(w))
        out = fn(X.copy(), y.copy(), qid.copy(), w.copy())
        try:
            val, g = out
            val, g = float(val), np.asarray(g, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            return "your function must return (value, gradient)"
        if g.shape != w.shape:
            return (f"your gradient has shape {g.shape}, w has shape "
                    f"{w.shape} (one entry per feature)")
        scale = max(1.0, abs(ref[0]))
        ok_v = np.isclose(val, ref[0], rtol=1e-9, atol=1e-12 * scale)
        gscale = max(1.0, np.max(np.abs(ref[1])))
        ok_g = np.allclose(g, ref[1], rtol=1e-8, atol=1e-10 * gscale)
        if ok_v and ok_g:
            return None
        where = f"at a w with {int(np.sum(w != 0))} non-zero weights"
        _, variants = _hinge_variants(X, y, qid, w)
        for name, (v, gv) in variants.items():
            if (np.isclose(val, v, rtol=1e-9, atol=1e-12 * scale)
                    and np.allclose(g, gv, rtol=1e-8, atol=1e-10 * gscale)):
                return f"{_HINGE_TEXT[name]} ({where})"
        if not ok_v:
            return (f"the loss value {val:.6g} differs from refimpl's "
                    f"{ref[0]:.6g} ({where})")
        return (f"the value is right but the gradient differs from refimpl's "
                f"by up to {np.max(np.abs(g - ref[1])):.3g} ({where})")

    def make(seed, scale):
        r = np.random.default_rng(seed)
        n, d = int(r.integers(4, 16)), int(r.integers(1, 6))
        X = r.random((n, d))
        y = r.integers(0, 3, n)
        y[:2] = [1, 0]
        qid = np.sort(r.integers(0, 3, n))
        qid[:2] = qid[0]
        return X, y, qid, r.normal(size=d) * scale

    st = _strategies()
    adversarial = [make(0, 3.0), make(1, 0.0), make(2, 10.0), make(3, 1.0)]
    strategy = st.tuples(st.integers(0, 10**6),
                         st.sampled_from([0.5, 2.0, 5.0])).map(
        lambda t: make(*t))
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=60, what="your loss function")


# --------------------------------------------------------------------------
# LETOR's query-level normalisation
# --------------------------------------------------------------------------


def _per_query(X, qid, reduce):
    """``reduce`` (min or max over rows) of each row's query, row by row."""
    out = np.empty_like(X)
    for q in np.unique(qid):
        m = qid == q
        out[m] = reduce(X[m], axis=0)
    return out


def _query_norm_message(got, X, qid):
    """Why ``got`` is not the query-level normalisation of ``X``, or None."""
    ref = query_level_normalize(X, qid)
    tol = 4 * np.finfo(float).eps
    if got.shape != ref.shape:
        return (f"your result has shape {got.shape}, X has shape {X.shape} "
                "(one value per document and feature)")
    if np.allclose(got, ref, rtol=0, atol=tol):
        return None
    lo, hi = _per_query(X, qid, np.min), _per_query(X, qid, np.max)
    const = hi == lo
    where = f"on X with {X.shape[0]} rows and query ids {qid.tolist()}"
    bad = ~np.isfinite(got)
    if bad.any():
        if np.all(const[bad]):
            return ("division by zero: a feature constant within a query "
                    "(or any feature of a one-document query) has max = min "
                    f"and must give 0, your function returns {got[bad][0]} "
                    f"{where}")
        return f"your result has non-finite values ({got[bad][0]}) {where}"
    if np.allclose(got[~const], ref[~const], rtol=0, atol=tol):
        bad = got[const][np.abs(got[const]) > tol]
        return (f"a feature constant within its query must give 0 (LETOR's "
                f"convention), your function gives {bad[0]:g} {where}")
    glo, ghi = X.min(axis=0), X.max(axis=0)
    with np.errstate(all="ignore"):
        whole = np.where(ghi > glo, (X - glo) / (ghi - glo), 0.0)
        by_max = np.where(hi != 0, X / hi, 0.0)
    if np.allclose(got, whole, rtol=0, atol=tol):
        return ("not per query: you take the minimum and maximum of each "
                "feature over the whole data set; LETOR's QueryLevelNorm "
                f"takes them over the documents of each query {where}")
    if np.allclose(got[~const], by_max[~const], rtol=0, atol=tol):
        return ("you divide by the query's maximum but do not subtract its "
                f"minimum: (x - min) / (max - min) is wanted {where}")
    sorted_q = np.sort(qid, kind="stable")
    if not np.array_equal(sorted_q, qid):
        order = np.argsort(qid, kind="stable")
        if np.allclose(got[order], ref[order], rtol=0, atol=tol) or np.allclose(
                got, query_level_normalize(X, _runs(qid)), rtol=0, atol=tol):
            return ("queries are not contiguous here: the documents of a query "
                    "may be spread over the rows (group them by query id, not "
                    f"by runs of equal ids) {where}")
    i, j = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape)
    return (f"differs from refimpl at row {i}, feature {j}: {got[i, j]:.6g} "
            f"instead of {ref[i, j]:.6g} {where}")


def _runs(qid):
    """A new id for every run of equal consecutive ids."""
    return np.cumsum(np.r_[True, qid[1:] != qid[:-1]])


def check_query_level_normalize(fn) -> CheckResult:
    """Check ``fn(X, qid) -> X'``: LETOR's QueryLevelNorm (chapter 1).

    ``X'[i, j] = (X[i, j] - min_q) / (max_q - min_q)`` with the minimum and
    maximum of feature ``j`` over the documents of the query of row ``i``,
    and 0 where they are equal (a constant feature, a one-document query);
    the rows of a query need not be contiguous, and ``X`` must not be
    changed.  Reference: :func:`refimpl.data.query_level_normalize`.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    def diagnose(case):
        X, qid = (np.array(a, dtype=float) for a in case)
        qid = qid.astype(np.int64)
        X_in = X.copy()
        got = fn(X_in, qid.copy())
        if not np.array_equal(X_in, X):
            return ("your function changed its input X in place; return a "
                    "new array and leave X as it was")
        try:
            got = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return f"your function returned {type(got).__name__}, not an array"
        return _query_norm_message(got, X, qid)

    st = _strategies()
    adversarial = [
        ([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0]], [1, 1, 1]),   # a constant column
        ([[4.0], [0.0], [2.0], [10.0]], [1, 1, 2, 2]),         # two queries
        ([[4.0], [7.0]], [1, 2]),                              # one-document queries
        ([[-3.0, 1.0], [5.0, 2.0], [1.0, 0.0], [9.0, 4.0]], [2, 1, 2, 1]),
        ([[1.0, 2.0], [3.0, 6.0], [5.0, 4.0]], [3, 3, 3]),
    ]
    values = st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: round(v, 3))
    strategy = st.tuples(st.integers(1, 10), st.integers(1, 4)).flatmap(
        lambda nd: st.tuples(
            st.lists(st.lists(values, min_size=nd[1], max_size=nd[1]),
                     min_size=nd[0], max_size=nd[0]),
            st.lists(st.integers(0, 3), min_size=nd[0], max_size=nd[0])))
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=100, what="your query-level normalisation")
