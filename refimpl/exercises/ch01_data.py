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
from ._harness import (CheckResult, Suspects, only_match, record,
                       run_checker)

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
        record(n_c=list(n_c), expected=ref)
        got = fn(list(n_c))
        record(got=got)
        try:
            got_f = float(got)
        except (TypeError, ValueError):
            return f"your function returned {got!r}, not a number"
        if got_f == ref:
            return None
        l_q = int(sum(n_c))
        adjacent = int(sum(a * b for a, b in zip(n_c[1:], n_c[:-1])))
        named = only_match([
            ("missing factor 1/2: you count every pair twice, in both "
             "orders (i, j) and (j, i)", 2 * ref),
            ("ties counted as pairs: you count all l_q (l_q - 1) / 2 pairs "
             "of documents, but only the pairs with different labels are "
             "preference pairs", l_q * (l_q - 1) / 2),
            ("ties and the pairs (i, i) counted: you count l_q (l_q + 1) / 2;"
             " only the pairs with different labels are preference pairs",
             l_q * (l_q + 1) / 2),
            ("only adjacent levels compared: you count n_c n_(c-1), but a "
             "document at level c is preferred to every lower level",
             adjacent),
        ], lambda v: got_f == v)
        if named:
            return named
        if abs(got_f - ref) <= max(l_q, 1):
            return ("off by a little (a sum over the levels that starts or "
                    "stops one level early?)")
        return "a wrong number of pairs"

    st = _strategies()
    # (2, 3) separates the factor 1/2 from the ties; (1, 0, 1) shows the
    # adjacent-levels sum alone; (1, 2, 3, 4) shows an early-stopping sum
    adversarial = [(3,), (0, 0), (1, 1), (2, 3), (1, 0, 1), (4, 0, 0, 2),
                   (1, 2, 3, 4), (0, 5, 0)]
    strategy = st.lists(st.integers(0, 12), min_size=1, max_size=6).map(tuple)
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=100, what="your pair count",
                       names=("n_c",))


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
    record(expected=sorted(want), got=sorted(got))
    n = len(y)
    if any(not (0 <= i < n and 0 <= j < n) for i, j in got):
        shifted = {(i - 1, j - 1) for i, j in got}
        if shifted == want and len(got) == len(want):
            return "off by one: your indices are 1-based"
        return f"an index is outside 0..{n - 1}"
    if len(set(got)) != len(got):
        dup = next(p for p in got if got.count(p) > 1)
        return f"the pair {dup} is listed twice"
    have = set(got)
    if have == want:
        return None
    if have == {(j, i) for i, j in want}:
        return ("reversed orientation: you list (i, j) with y_i < y_j; "
                "the preferred document comes first")
    extra, missing = have - want, want - have
    across = [(i, j) for i, j in extra if qid[i] != qid[j]]
    if across:
        return (f"pairs across queries: {across[0]} joins queries "
                f"{qid[across[0][0]]} and {qid[across[0][1]]}, which are "
                "never compared")
    ties = [(i, j) for i, j in extra if y[i] == y[j]]
    if ties:
        return (f"ties counted as pairs: {ties[0]} has equal labels "
                f"{y[ties[0][0]]}")
    wrong = [(i, j) for i, j in extra if y[i] < y[j]]
    if wrong:
        return (f"wrong orientation for {wrong[0]} (y_i < y_j): the "
                "preferred document comes first")
    if missing:
        first = sorted(missing)[0]
        if have and all(i > j for i, j in missing) and all(
                i < j for i, j in have):
            return (f"the pairs (i, j) with i > j are missing, e.g. {first}: "
                    "a loop over j > i only (the upper triangle) misses a "
                    "preferred document that comes after the other one")
        if have and all(i < j for i, j in missing) and all(
                i > j for i, j in have):
            return (f"the pairs (i, j) with i < j are missing, e.g. {first}: "
                    "a loop over j < i only (the lower triangle) misses a "
                    "preferred document that comes before the other one")
        runs = _runs(qid)
        if all(runs[i] != runs[j] for i, j in missing) and all(
                runs[i] == runs[j] for i, j in have):
            return (f"the pairs between separate runs of one query are "
                    f"missing, e.g. {first}: a query's rows need not be "
                    "contiguous (group them with qid == q, not by runs of "
                    "equal ids)")
        edge = {0, n - 1}
        if all(i in edge or j in edge for i, j in missing):
            end = "last" if any(n - 1 in p for p in missing) else "first"
            return (f"off by one: the pairs with the {end} document "
                    f"are missing, e.g. {first} (a loop that stops one "
                    "early?)")
        return f"{len(missing)} pairs missing, e.g. {first}"
    return "your pairs differ from refimpl's"  # pragma: no cover


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
        ref = preference_pairs(y, qid, require_pairs=False)
        record(y=y.copy(), qid=qid.copy(),
               expected=sorted(zip(ref.i.tolist(), ref.j.tolist())))
        out = fn(y.copy(), qid.copy())
        record(got=out)
        got = _as_pairs(out)
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
                       max_examples=120, what="your pair enumeration",
                       names=("y", "qid"))


# --------------------------------------------------------------------------
# NDCG@k of one query
# --------------------------------------------------------------------------


def _ndcg_variant(labels, scores, k, conv, *, gain=None, offset=0,
                  normalise=True, ideal_from_ranking=False, descending=True,
                  short=None, no_rel=None, ties="input", discount=None):
    """NDCG@k of one query with one rule changed (for the diagnosis)."""
    gain = conv.gain if gain is None else gain
    short = conv.short_query_ndcg if short is None else short
    no_rel = conv.no_relevant_ndcg if no_rel is None else no_rel
    discount = conv.discount if discount is None else discount
    labels = np.asarray(labels, dtype=float)
    n = len(labels)
    if short == "zero" and n < k:
        return 0.0
    g = 2.0 ** labels - 1 if gain == "exp2" else labels.copy()
    key = -scores if descending else scores
    if ties == "input":
        order = np.argsort(key, kind="stable")
    elif ties == "reverse":          # np.argsort(scores)[::-1]
        order = np.argsort(-key, kind="stable")[::-1]
    else:                            # less (more) relevant first
        tie = labels if ties == "pessimistic" else -labels
        order = np.lexsort((tie, key))
    i = np.arange(1, n + 1) + offset
    disc = (1 / np.log2(np.maximum(2, i)) if discount == "log2_max2"
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
    no relevant document.  The cases with distinct scores come first; then
    tied scores, which every convention breaks by the documents' input
    order (the LETOR scripts' line order; ``trec_eval``'s document names,
    which a one-query function sees as its input order), so a tie-breaker
    that is pessimistic, optimistic or reversed is named.  Reference:
    :func:`refimpl.metrics.ndcg_at_k` (``ties="input"``).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    conv = (convention if isinstance(convention, EvalConvention)
            else CONVENTIONS[convention])
    other_gain = "linear" if conv.gain == "exp2" else "exp2"
    gain_text = {"exp2": "2^y - 1", "linear": "y"}
    disc_text = {"log2_max2": "1/log2(max(2, i))",
                 "log2_plus1": "1/log2(i + 1)"}
    other_disc = ("log2_plus1" if conv.discount == "log2_max2"
                  else "log2_max2")
    tie_rule = (f"the {conv.name} convention breaks ties by input order "
                "(a stable sort by decreasing score, np.argsort(-scores, "
                "kind='stable'))")
    variants = [
        (dict(gain=other_gain), f"wrong gain: you use {gain_text[other_gain]}"
         f", the {conv.name} convention uses {gain_text[conv.gain]}"),
        (dict(discount=other_disc), "wrong discount: you use "
         f"{disc_text[other_disc]}, the {conv.name} convention uses "
         f"{disc_text[conv.discount]} (1-based position i)"
         + (" (or 1/log2(max(2, i)) at 0-based positions)"
            if conv.discount == "log2_max2" else "")),
        (dict(normalise=False), "missing ideal normalisation: you return "
         "DCG@k, not DCG@k divided by the DCG@k of the ideal order"),
        (dict(ideal_from_ranking=True), "wrong ideal DCG: sort ALL the "
         "labels of the query, not only those of your top k"),
        (dict(descending=False), "you rank by increasing score; higher "
         "scores come first"),
        (dict(offset=1), "discount off by one: position i (1-based) gets "
         "the discount of position i + 1 (0-based positions?)")
        if conv.discount == "log2_plus1" else None,
        (dict(offset=-1), "discount off by one: position i (1-based) gets "
         "the discount of position i - 1"),
        (dict(short="truncate" if conv.short_query_ndcg == "zero"
              else "zero"), "wrong short-query rule: under the "
         f"{conv.name} convention a query with fewer than k documents gets "
         + ("NDCG@k = 0" if conv.short_query_ndcg == "zero"
            else "the NDCG of the documents it has")),
        (dict(ties="pessimistic"), "wrong tie rule: you put the less "
         f"relevant of equally scored documents first (pessimistic); "
         f"{tie_rule}"),
        (dict(ties="optimistic"), "wrong tie rule: you put the more "
         f"relevant of equally scored documents first (optimistic); "
         f"{tie_rule}"),
        (dict(ties="reverse"), "wrong tie rule: equally scored documents "
         "come out in reverse input order (np.argsort(scores)[::-1] "
         f"reverses the ties too); {tie_rule}"),
    ]

    suspects = Suspects()

    def diagnose(case):
        labels, scores, k = case
        labels = np.asarray(labels, dtype=np.int64)
        scores = np.asarray(scores, dtype=float)
        ref = float(ndcg_at_k(labels, scores, k=k, convention=conv))
        record(labels=labels, scores=scores, k=k, expected=ref)
        got = fn(labels.copy(), scores.copy(), k)
        record(got=got)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return f"your function returned {got!r}, not a number"
        close = (lambda v: np.isclose(got, v, rtol=1e-9, atol=1e-12))
        with np.errstate(all="ignore"):
            cands = []
            for kw, text in filter(None, variants):
                try:
                    cands.append((text, _ndcg_variant(labels, scores, k,
                                                      conv, **kw)))
                except (ValueError, ZeroDivisionError):
                    continue
            for kk in (k - 1, k + 1):
                if kk >= 1:
                    cands.append(("cut-off off by one: you compute "
                                  f"NDCG@(k {'+' if kk > k else '-'} 1)",
                                  float(
                                      ndcg_at_k(labels, scores, k=kk,
                                                convention=conv))))
        if close(ref):
            suspects.clear(cands, close)
            return None
        if labels.max() == 0:
            return ("a query with no relevant document has ideal DCG 0 and "
                    f"gets NDCG {conv.no_relevant_ndcg:g} by convention")
        named = suspects.name(cands, close)
        if named:
            return named
        if len(np.unique(scores)) < len(scores):
            return ("wrong NDCG on tied scores (" + tie_rule + ")")
        return "your NDCG differs from refimpl's"

    st = _strategies()

    def case(n):
        distinct = st.permutations(list(range(n))).map(
            lambda p: (np.asarray(p) * 0.37 + 0.05).tolist())
        tied = st.lists(st.integers(0, 2), min_size=n, max_size=n).map(
            lambda v: (np.asarray(v) * 0.25 + 0.25).tolist())
        return st.tuples(
            st.lists(st.integers(0, 2), min_size=n, max_size=n),
            st.one_of(distinct, tied), st.integers(1, 12))

    # distinct scores first, so that each rule other than the tie rule
    # shows alone; then ties that the three wrong tie rules score apart
    adversarial = [
        ([2, 0, 1, 0, 1], [0.3, 0.9, 0.8, 0.1, 0.2], 3),
        ([0, 1, 0, 2, 1, 0], [0.6, 0.5, 0.4, 0.3, 0.2, 0.1], 5),
        ([1, 0, 0, 1, 2, 0, 1], [0.1, 0.7, 0.3, 0.9, 0.2, 0.5, 0.4], 4),
        ([0, 0, 0, 0], [0.4, 0.3, 0.2, 0.1], 3),
        ([1, 0, 2], [0.2, 0.3, 0.1], 5),
        ([0, 2, 1, 0], [0.5, 0.5, 0.5, 0.5], 2),
        ([1, 0, 2, 0, 1], [0.9, 0.5, 0.5, 0.5, 0.1], 3),
        ([2, 0, 0, 1], [0.3, 0.7, 0.3, 0.3], 3),
    ]
    return run_checker(diagnose, adversarial=adversarial,
                       strategy=st.integers(1, 10).flatmap(case),
                       max_examples=117, what="your NDCG@k",
                       names=("labels", "scores", "k"))


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
    rp = np.maximum(r, 0.0)
    buffered = np.zeros(len(y))      # u[P.i] += ...: repeats are dropped
    buffered[P.i] += -2 * rp
    buffered[P.j] += 2 * rp
    same_sign = np.zeros(len(y))
    np.add.at(same_sign, P.i, -2 * rp)
    np.add.at(same_sign, P.j, -2 * rp)
    return ok, {
        "half": (ok[0], ok[1] / 2),
        "sign": (ok[0], -ok[1]),
        "not squared": (np.sum(r[A]), -K[A].T @ np.ones(A.sum())),
        "no max": (np.sum(r ** 2), -2 * K.T @ r),
        "no max grad": (ok[0], -2 * K.T @ r),
        "both orders": (2 * ok[0], 2 * ok[1]),
        "mean": (ok[0] / max(len(P), 1), ok[1] / max(len(P), 1)),
        "buffered": (ok[0], X.T @ buffered),
        "same sign": (ok[0], X.T @ same_sign),
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
    "buffered": "buffered fancy-index accumulation: u[P.i] += ... adds "
                "only one pair's term to a document that is in several "
                "pairs (NumPy does not accumulate repeated indices); "
                "accumulate with np.add.at(u, P.i, ...)",
    "same sign": "wrong sign for the second document of a pair: z_j "
                 "enters r_t = 1 - (z_i - z_j) with a plus, so its term "
                 "in u = dL/dz is +2 max(0, r_t), the opposite of z_i's",
}


def check_squared_hinge(fn) -> CheckResult:
    """Check ``fn(X, y, qid, w) -> (L, g)``: the loss eq-loss, gradient.

    ``L`` is ``sum over P of max(0, 1 - w^T (x_i - x_j))^2`` and ``g`` its
    gradient (eq. eq-grad-hess of chapter 1).  The first case is a small
    one on which every mistake the checker names gives a different answer.
    Reference: :class:`refimpl.losses.PairwiseSquaredHinge` (``fun``,
    ``grad``).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """
    def diagnose(case):
        X, y, qid, w = case
        loss = PairwiseSquaredHinge(X, y, qid, backend="numpy")
        ref = (loss.fun(w), loss.grad(w))
        record(expected=ref)
        out = fn(X.copy(), y.copy(), qid.copy(), w.copy())
        record(got=out)
        try:
            val, g = out
            val, g = float(val), np.asarray(g, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            return "your function must return (value, gradient)"
        if g.shape != w.shape:
            return (f"your gradient has shape {g.shape}, w has shape "
                    f"{w.shape} (one entry per feature)")
        scale = max(1.0, abs(ref[0]))
        gscale = max(1.0, np.max(np.abs(ref[1])))

        def agrees(vg):
            return (np.isclose(val, vg[0], rtol=1e-9, atol=1e-12 * scale)
                    and np.allclose(g, vg[1], rtol=1e-8,
                                    atol=1e-10 * gscale))
        if agrees(ref):
            return None
        _, variants = _hinge_variants(X, y, qid, w)
        named = only_match(((_HINGE_TEXT[k], v) for k, v in variants.items()),
                           agrees)
        if named:
            return named
        if not np.isclose(val, ref[0], rtol=1e-9, atol=1e-12 * scale):
            return "the loss value differs from refimpl's"
        return (f"the value is right but the gradient differs from refimpl's "
                f"by up to {np.max(np.abs(g - ref[1])):.3g}")

    def make(seed, scale):
        r = np.random.default_rng(seed)
        n, d = int(r.integers(4, 16)), int(r.integers(1, 6))
        X = r.random((n, d))
        y = r.integers(0, 3, n)
        y[:2] = [1, 0]
        qid = np.sort(r.integers(0, 3, n))
        qid[:2] = qid[0]
        return X, y, qid, r.normal(size=d) * scale

    # four documents of one query, two features: document 0 is in three
    # pairs (a buffered += shows), one pair is inactive (a forgotten max
    # shows), residuals differ from 1 (an unsquared hinge is not half of
    # the gradient)
    small = (np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.0, 0.0]]),
             np.array([2, 1, 1, 0]), np.array([1, 1, 1, 1]),
             np.array([1.2, 0.3]))
    st = _strategies()
    adversarial = [small, make(0, 3.0), make(1, 0.0), make(2, 10.0)]
    strategy = st.tuples(st.integers(0, 10**6),
                         st.sampled_from([0.5, 2.0, 5.0])).map(
        lambda t: make(*t))
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=60, what="your loss function",
                       names=("X", "y", "qid", "w"))


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
    record(expected=ref, got=got)
    tol = 4 * np.finfo(float).eps
    if got.shape != ref.shape:
        return (f"your result has shape {got.shape}, X has shape {X.shape} "
                "(one value per document and feature)")
    if np.allclose(got, ref, rtol=0, atol=tol):
        return None
    lo, hi = _per_query(X, qid, np.min), _per_query(X, qid, np.max)
    const = hi == lo
    bad = ~np.isfinite(got)
    if bad.any():
        if np.all(const[bad]):
            return ("division by zero: a feature constant within a query "
                    "(or any feature of a one-document query) has max = min "
                    f"and must give 0, your function returns {got[bad][0]}")
        return f"your result has non-finite values ({got[bad][0]})"
    if np.allclose(got[~const], ref[~const], rtol=0, atol=tol):
        bad = got[const][np.abs(got[const]) > tol]
        return (f"a feature constant within its query must give 0 (LETOR's "
                f"convention), your function gives {bad[0]:g}")
    glo, ghi = X.min(axis=0), X.max(axis=0)
    with np.errstate(all="ignore"):
        whole = np.where(ghi > glo, (X - glo) / (ghi - glo), 0.0)
        by_max = np.where(hi != 0, X / hi, 0.0)
        rlo, rhi = X.min(axis=1, keepdims=True), X.max(axis=1, keepdims=True)
        by_row = np.where(rhi > rlo, (X - rlo) / (rhi - rlo), 0.0)
    if np.allclose(got, whole, rtol=0, atol=tol):
        return ("not per query: you take the minimum and maximum of each "
                "feature over the whole data set; LETOR's QueryLevelNorm "
                "takes them over the documents of each query")
    if np.allclose(got[~const], by_max[~const], rtol=0, atol=tol):
        return ("you divide by the query's maximum but do not subtract its "
                "minimum: (x - min) / (max - min) is wanted")
    if np.allclose(got, by_row, rtol=0, atol=tol):
        return ("wrong axis: you take the minimum and maximum of each row "
                "(a document's features, axis=1); they are taken per "
                "feature over the query's documents (axis=0)")
    sorted_q = np.sort(qid, kind="stable")
    if not np.array_equal(sorted_q, qid):
        order = np.argsort(qid, kind="stable")
        if np.allclose(got[order], ref[order], rtol=0, atol=tol) or np.allclose(
                got, query_level_normalize(X, _runs(qid)), rtol=0, atol=tol):
            return ("queries are not contiguous here: the documents of a query "
                    "may be spread over the rows (group them by query id, not "
                    "by runs of equal ids)")
    i, j = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape)
    return (f"differs from refimpl at row {i}, feature {j}: {got[i, j]:.6g} "
            f"instead of {ref[i, j]:.6g}")


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
        record(X=X.copy(), qid=qid.copy(),
               expected=query_level_normalize(X, qid))
        got = fn(X_in, qid.copy())
        record(got=got)
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
                       max_examples=100, what="your query-level normalisation",
                       names=("X", "qid"))
