"""The Chapter 9 checker accepts TwoSum and names planted mistakes."""

import pytest

from refimpl.exercises import check_two_sum
from test_exercises_ch01 import assert_diagnosed


def two_sum(a, b, bug=None):
    s = a + b
    if bug == "fast2sum":
        return s, b - (s - a)
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    if bug == "sign":
        e = -e
    if bug == "zero":
        e = 0.0
    if bug == "swap":
        return e, s
    if bug == "s_wrong":
        return a, e
    return s, e


def test_reference_accepted():
    assert check_two_sum(two_sum).passed


def test_fsum_accepted():
    import math

    def by_fsum(a, b):   # a + b - s is a double: fsum returns it exactly
        s = a + b
        return s, math.fsum([a, b, -s])
    res = check_two_sum(by_fsum)
    assert res.passed, res.message


def test_sorted_fast2sum_accepted():
    def fast(a, b):
        if abs(b) > abs(a):
            a, b = b, a
        s = a + b
        return s, b - (s - a)
    assert check_two_sum(fast).passed


@pytest.mark.parametrize("bug, word", [
    ("fast2sum", "Fast2Sum"),
    ("sign", "sign"),
    ("zero", "lost"),
    ("swap", "swapped"),
    ("s_wrong", "fl(a + b)"),
])
def test_planted_bugs(bug, word):
    assert_diagnosed(check_two_sum(lambda a, b: two_sum(a, b, bug)), word)
