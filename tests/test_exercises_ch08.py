"""The exercise checkers of Chapter 8 accept the reference, name planted bugs."""

import numpy as np
import pytest
from scipy import stats

from refimpl.exercises import check_paired_t_test, check_sparsity_ratio
from refimpl.metrics import sparsity_ratio
from test_exercises_ch01 import assert_diagnosed


# ------------------------------------------------------------ paired t-test

def t_test(a, b, *, ddof=1, dof=-1, sides=2, dist="t"):
    d = a - b
    n = len(d)
    t = d.mean() / (d.std(ddof=ddof) / np.sqrt(n))
    tail = (stats.t.sf(abs(t), n + dof) if dist == "t"
            else stats.norm.sf(abs(t)))
    return t, tail * sides


def t_test_one_sample(a, b):
    """The paired test is the one-sample test of the differences."""
    return stats.ttest_1samp(a - b, 0.0)


def t_test_by_loops(a, b):
    """Mean and variance by hand; the p-value from the regularised
    incomplete beta function, P(|T| > t) = I_{n/(n + t^2)}(n/2, 1/2)."""
    from scipy.special import betainc
    n = len(a)
    d = [x - y for x, y in zip(a, b)]
    m = sum(d) / n
    var = sum((x - m) ** 2 for x in d) / (n - 1)
    t = m / (var / n) ** 0.5
    dof = n - 1
    return t, betainc(dof / 2, 0.5, dof / (dof + t * t))


@pytest.mark.parametrize("fn", [stats.ttest_rel, t_test, t_test_one_sample,
                                t_test_by_loops])
def test_paired_t_test_accepts(fn):
    res = check_paired_t_test(fn)
    assert res.passed, res.message


@pytest.mark.parametrize("fn, word", [
    (stats.ttest_ind, "unpaired"),
    (lambda a, b: t_test(a, b, sides=1), "one-sided"),
    (lambda a, b: t_test(a, b, dof=0), "degrees of freedom"),
    (lambda a, b: t_test(a, b, ddof=0), "population"),
    (lambda a, b: t_test(a, b, dist="normal"), "normal"),
    (lambda a, b: t_test(b, a), "sign"),
    (lambda a, b: (t_test(a, b)[0] / np.sqrt(len(a)),
                   2 * stats.t.sf(abs(t_test(a, b)[0]) / np.sqrt(len(a)),
                                  len(a) - 1)), "sqrt(n)"),
    (lambda a, b: stats.ttest_rel(a, b).pvalue, "(t, p)"),
    (lambda a, b: t_test(a, b, dof=-2), "n - 2"),
    (lambda a, b: stats.ttest_ind(a, b, equal_var=False), "Welch"),
])
def test_paired_t_test_bugs(fn, word):
    assert_diagnosed(check_paired_t_test(fn), word)


# ------------------------------------------------------------ sparsity ratio

def ratio(coef, X, *, all_features=False, removed=False, numerator=False,
          positive=False, floor=False):
    used = np.ones(len(coef), bool) if all_features else np.any(X != 0, 0)
    kept = (coef > 0) if positive else (coef != 0)
    num = np.count_nonzero(kept if numerator else kept[used])
    r = num // used.sum() if floor else num / used.sum()
    return 1 - r if removed else r


def ratio_loop(coef, X):
    kept = used = 0
    for j in range(X.shape[1]):
        if any(X[i, j] != 0 for i in range(X.shape[0])):
            used += 1
            kept += coef[j] != 0
    return kept / used


@pytest.mark.parametrize("fn", [
    lambda c, X: sparsity_ratio(c, X, ignore_unused=True), ratio, ratio_loop,
    # the mean of a boolean over the used columns
    lambda c, X: np.mean(c[np.abs(X).sum(axis=0) > 0] != 0)])
def test_sparsity_ratio_accepts(fn):
    res = check_sparsity_ratio(fn)
    assert res.passed, res.message


@pytest.mark.parametrize("kw, word", [
    (dict(all_features=True), "all the features"),
    (dict(removed=True), "removed"),
    (dict(numerator=True), "numerator"),
    (dict(positive=True), "negative"),
    (dict(floor=True), "integer division"),
])
def test_sparsity_ratio_bugs(kw, word):
    assert_diagnosed(check_sparsity_ratio(lambda c, X: ratio(c, X, **kw)),
                     word)
