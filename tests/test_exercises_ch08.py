"""The exercise checkers of Chapter 8 accept the reference, name planted bugs."""

import numpy as np
import pytest
from scipy import stats

from refimpl.exercises import check_paired_t_test, check_sparsity_ratio
from refimpl.metrics import sparsity_ratio


# ------------------------------------------------------------ paired t-test

def t_test(a, b, *, ddof=1, dof=-1, sides=2, dist="t"):
    d = a - b
    n = len(d)
    t = d.mean() / (d.std(ddof=ddof) / np.sqrt(n))
    tail = (stats.t.sf(abs(t), n + dof) if dist == "t"
            else stats.norm.sf(abs(t)))
    return t, tail * sides


def test_paired_t_test_accepts_reference():
    assert check_paired_t_test(stats.ttest_rel).passed
    assert check_paired_t_test(t_test).passed


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
])
def test_paired_t_test_bugs(fn, word):
    res = check_paired_t_test(fn)
    assert not res.passed and word in res.message, res.message


# ------------------------------------------------------------ sparsity ratio

def ratio(coef, X, *, all_features=False, removed=False, numerator=False,
          positive=False):
    used = np.ones(len(coef), bool) if all_features else np.any(X != 0, 0)
    kept = (coef > 0) if positive else (coef != 0)
    num = np.count_nonzero(kept if numerator else kept[used])
    r = num / used.sum()
    return 1 - r if removed else r


def test_sparsity_ratio_accepts_reference():
    assert check_sparsity_ratio(
        lambda c, X: sparsity_ratio(c, X, ignore_unused=True)).passed
    assert check_sparsity_ratio(ratio).passed


@pytest.mark.parametrize("kw, word", [
    (dict(all_features=True), "all the features"),
    (dict(removed=True), "removed"),
    (dict(numerator=True), "numerator"),
    (dict(positive=True), "negative"),
])
def test_sparsity_ratio_bugs(kw, word):
    res = check_sparsity_ratio(lambda c, X: ratio(c, X, **kw))
    assert not res.passed and word in res.message, res.message
