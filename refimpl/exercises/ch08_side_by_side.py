"""Exercise checkers of Chapter 8 (side by side).

``check_paired_t_test`` compares the student's paired t-test over queries
with :func:`scipy.stats.ttest_rel` (the test
:func:`refimpl.experiments.paired_ttest` runs on the committed per-query
results); ``check_sparsity_ratio`` compares a sparsity ratio with
:func:`refimpl.metrics.sparsity_ratio` (Laporte et al.'s definition).

Derived in: book/08_side_by_side.md#side-by-side
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..metrics import sparsity_ratio
from ._harness import CheckResult, only_match, record, run_checker

__all__ = ["check_paired_t_test", "check_sparsity_ratio"]


# --------------------------------------------------------------------------
# the paired t-test over queries
# --------------------------------------------------------------------------


def _t_and_p(out):
    if hasattr(out, "statistic") and hasattr(out, "pvalue"):
        return float(out.statistic), float(out.pvalue)
    t, p = out
    return float(t), float(p)


def _t_variants(a, b):
    """(t, p) of the mistakes a student typically makes."""
    d = a - b
    n = len(d)
    t_ok = d.mean() / (d.std(ddof=1) / np.sqrt(n))
    p_ok = 2 * stats.t.sf(abs(t_ok), n - 1)
    t_pop = d.mean() / (d.std(ddof=0) / np.sqrt(n))
    ind = stats.ttest_ind(a, b)
    welch = stats.ttest_ind(a, b, equal_var=False)
    one_sided = ("one-sided p-value: you return P(T > t) or half the "
                 "two-sided p; the test is two-sided, P(|T| > |t|)")
    return [
        ((ind.statistic, ind.pvalue), "unpaired test: you compare the two "
         "samples as independent (ttest_ind); pair them query by query and "
         "test the differences"),
        ((welch.statistic, welch.pvalue), "unpaired test: Welch's test "
         "treats the samples as independent; test the per-query "
         "differences instead"),
        ((t_ok, p_ok / 2), one_sided),
        ((t_ok, stats.t.sf(t_ok, n - 1)), one_sided),
        ((t_ok, 2 * stats.t.sf(abs(t_ok), n)), "wrong degrees of freedom: "
         "n instead of n - 1"),
        ((t_ok, 2 * stats.t.sf(abs(t_ok), n - 2)), "wrong degrees of "
         "freedom: n - 2 (of an unpaired test) instead of n - 1"),
        ((t_ok, 2 * stats.norm.sf(abs(t_ok))), "normal instead of Student's "
         "t distribution for the p-value (use n - 1 degrees of freedom)"),
        ((t_pop, 2 * stats.t.sf(abs(t_pop), n - 1)), "population instead of "
         "sample standard deviation: use ddof=1 (divide by n - 1)"),
        ((-t_ok, p_ok), "wrong sign of t: compute the mean of a - b, not "
         "b - a"),
        ((t_ok / np.sqrt(n), 2 * stats.t.sf(abs(t_ok / np.sqrt(n)), n - 1)),
         "the sqrt(n) is missing: t divides the mean difference by its "
         "standard error s_d / sqrt(n), not by s_d"),
    ]


def check_paired_t_test(fn) -> CheckResult:
    """Check ``fn(a, b) -> (t, p)``: the two-sided paired t-test.

    ``a[q]`` and ``b[q]`` are the values of two methods on query ``q``; the
    answer is the t statistic of the differences ``a - b`` and its
    two-sided p-value with ``n - 1`` degrees of freedom.  Reference:
    :func:`scipy.stats.ttest_rel`.

    Derived in: book/08_side_by_side.md#side-by-side
    """
    def diagnose(case):
        a, b = (np.asarray(v, dtype=float) for v in case)
        ref = stats.ttest_rel(a, b)
        record(a=a.copy(), b=b.copy(),
               expected=(float(ref.statistic), float(ref.pvalue)))
        out = fn(a.copy(), b.copy())
        record(got=out)
        try:
            t, p = _t_and_p(out)
        except (TypeError, ValueError):
            return ("your function must return the pair (t, p), the "
                    "statistic and the two-sided p-value")
        close = lambda x, y: np.isclose(x, y, rtol=1e-7, atol=1e-12)  # noqa: E731
        if close(t, ref.statistic) and close(p, ref.pvalue):
            return None
        named = only_match(((text, tp) for tp, text in _t_variants(a, b)),
                           lambda tp: close(t, tp[0]) and close(p, tp[1]))
        if named:
            return named
        if not close(t, ref.statistic):
            return "t differs from ttest_rel's"
        return "t is right but p differs from ttest_rel's"

    def make(seed, n, shift, noise):
        r = np.random.default_rng(seed)
        difficulty = r.random(n)                  # shared by both methods
        a = difficulty + noise * r.normal(size=n)
        b = difficulty + noise * r.normal(size=n) - shift
        return a, b

    from hypothesis import strategies as st
    adversarial = [make(0, 5, 0.05, 0.05), make(1, 3, 0.2, 0.1),
                   make(2, 30, 0.01, 0.05), make(3, 8, -0.1, 0.1)]
    strategy = st.tuples(st.integers(0, 10**6), st.integers(3, 40),
                         st.sampled_from([-0.1, 0.02, 0.1]),
                         st.sampled_from([0.02, 0.1])).map(lambda c: make(*c))
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=80, what="your paired t-test",
                       names=("a", "b"))


# --------------------------------------------------------------------------
# the sparsity ratio
# --------------------------------------------------------------------------


def check_sparsity_ratio(fn) -> CheckResult:
    """Check ``fn(coef, X) -> ratio``: Laporte et al.'s sparsity ratio.

    The number of non-zero weights over the number of features that are
    not zero on every row of ``X`` (those features are left out of both
    counts).  Reference: :func:`refimpl.metrics.sparsity_ratio` with
    ``ignore_unused=True``.

    Derived in: book/08_side_by_side.md#side-by-side
    """
    def diagnose(case):
        coef, X = case
        ref = sparsity_ratio(coef, X, ignore_unused=True)
        record(coef=coef.copy(), X=X.copy(), expected=ref)
        got = fn(coef.copy(), X.copy())
        record(got=got)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return f"your function returned {got!r}, not a number"
        if np.isclose(got, ref, rtol=1e-12):
            return None
        used = np.any(X != 0, axis=0)
        d, nu = len(coef), int(used.sum())
        where = (f"{d} features, {d - nu} of them zero on every row, "
                 f"{int(np.count_nonzero(coef))} non-zero weights")
        guesses = [
            (sparsity_ratio(coef), "you divide by all the features; "
             "Laporte et al.'s ratio leaves out those that are zero on "
             "every document"),
            (1 - ref, "you return the fraction of removed features, "
             "1 - sparsity ratio"),
            (np.count_nonzero(coef) / nu, "the numerator counts weights of "
             "features that are zero on every document; leave them out of "
             "both counts"),
            (np.count_nonzero(coef[used] > 0) / nu, "negative weights not "
             "counted: a feature is kept when |w_j| > 0"),
            (np.count_nonzero(coef[used]), "not a ratio: you return the "
             "number of kept features"),
            (np.count_nonzero(coef[used]) // nu, "integer division: // "
             "truncates the ratio; divide with /"),
            (nu / max(np.count_nonzero(coef[used]), 1), "the ratio is "
             "upside down: kept weights over used features, not the "
             "reverse"),
        ]
        named = only_match(((t, v) for v, t in guesses),
                           lambda v: np.isclose(got, v, rtol=1e-12))
        if named:
            return f"{named} ({where})"
        return f"your ratio differs from refimpl's ({where})"

    def make(seed, d, n_unused, density):
        r = np.random.default_rng(seed)
        X = r.random((6, d))
        unused = r.choice(d, size=min(n_unused, d - 1), replace=False)
        X[:, unused] = 0.0
        coef = r.normal(size=d) * (r.random(d) < density)
        coef[unused[:1]] = 0.5      # a weight on an unused feature
        coef[np.argmax(used_mask(X))] = -1.0
        return coef, X

    def used_mask(X):
        return np.any(X != 0, axis=0)

    from hypothesis import strategies as st
    adversarial = [make(0, 10, 2, 0.5), make(1, 46, 6, 0.3),
                   make(2, 5, 0, 0.6), make(3, 8, 3, 1.0)]
    strategy = st.tuples(st.integers(0, 10**6), st.integers(2, 30),
                         st.integers(0, 5),
                         st.sampled_from([0.2, 0.5, 0.9])).map(
        lambda c: make(*c))
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=80, what="your sparsity ratio",
                       names=("coef", "X"))
