"""check_holm accepts correct Holm procedures and names planted bugs."""

import numpy as np
import pytest

from refimpl.exercises import check_holm


# ------------------------------------------------------ correct solutions

def holm_loop(p, alpha):
    """The step-down as the book states it: a loop over the sorted p."""
    m = len(p)
    reject = [False] * m
    for i, j in enumerate(sorted(range(m), key=lambda j: p[j])):
        if p[j] > alpha / (m - i):
            break
        reject[j] = True
    return reject


def holm_vectorised(p, alpha):
    order = np.argsort(p)
    m = len(p)
    ok = np.cumprod(p[order] <= alpha / (m - np.arange(m))).astype(bool)
    out = np.zeros(m, dtype=bool)
    out[order] = ok
    return out


def holm_adjusted(p, alpha):
    """Adjusted p-values (running maximum, capped at 1) against alpha."""
    order = np.argsort(p)
    m = len(p)
    adj = np.minimum(1, np.maximum.accumulate(
        (m - np.arange(m)) * p[order]))
    out = np.empty(m, dtype=bool)
    out[order] = adj <= alpha
    return out


def holm_recursive(p, alpha):
    """Reject the smallest if p_min <= alpha/N, then recurse on the rest."""
    p = list(p)
    alive = list(range(len(p)))
    out = np.zeros(len(p), dtype=int)            # 0/1 ints are accepted
    while alive:
        j = min(alive, key=lambda k: p[k])
        if p[j] * len(alive) > alpha:
            break
        out[j] = 1
        alive.remove(j)
    return out


@pytest.mark.parametrize("fn", [holm_loop, holm_vectorised, holm_adjusted,
                                holm_recursive])
def test_holm_accepts_correct_solutions(fn):
    res = check_holm(fn)
    assert res.passed, res.message


# ------------------------------------------------------------ planted bugs

def bonferroni(p, alpha):
    return p <= alpha / len(p)


def no_stop(p, alpha):                   # continues after a non-rejection
    m = len(p)
    reject = np.zeros(m, dtype=bool)
    for i, j in enumerate(np.argsort(p)):
        if p[j] <= alpha / (m - i):
            reject[j] = True
    return reject


def adjusted_not_monotone(p, alpha):     # forgets the running maximum
    order = np.argsort(p)
    m = len(p)
    adj = np.minimum(1, (m - np.arange(m)) * p[order])
    out = np.empty(m, dtype=bool)
    out[order] = adj <= alpha
    return out


def descending(p, alpha):
    order = np.argsort(p)[::-1]
    m = len(p)
    out = np.zeros(m, dtype=bool)
    for i, j in enumerate(order):
        if p[j] > alpha / (m - i):
            break
        out[j] = True
    return out


def off_by_one_minus(p, alpha):          # alpha/(N - i) with 1-based i
    m = len(p)
    out = [False] * m
    for i, j in enumerate(np.argsort(p), start=1):
        if p[j] > alpha / (m - i):
            break
        out[j] = True
    return out


def off_by_one_minus_numpy(p, alpha):    # the same, vectorised: alpha/0 = inf
    m = len(p)
    order = np.argsort(p)
    with np.errstate(divide="ignore"):
        thr = alpha / (m - np.arange(1, m + 1))
    out = np.zeros(m, dtype=bool)
    out[order] = np.cumprod(p[order] <= thr).astype(bool)
    return out


def off_by_one_plus(p, alpha):           # alpha/(N - i + 1) with 0-based i
    m = len(p)
    order = np.argsort(p)
    out = np.zeros(m, dtype=bool)
    out[order] = np.cumprod(p[order] <= alpha / (m - np.arange(m) + 1)
                            ).astype(bool)
    return out


def sorted_order(p, alpha):              # the mask of the sorted p-values
    ps = np.sort(p)
    m = len(p)
    return np.cumprod(ps <= alpha / (m - np.arange(m))).astype(bool)


def sorts_in_place(p, alpha):
    order = np.argsort(p)
    p.sort()
    m = len(p)
    out = np.zeros(m, dtype=bool)
    out[order] = np.cumprod(p <= alpha / (m - np.arange(m))).astype(bool)
    return out


def hochberg(p, alpha):                  # step-up with Holm's thresholds
    m = len(p)
    order = np.argsort(p)
    passed = np.flatnonzero(p[order] <= alpha / (m - np.arange(m)))
    out = np.zeros(m, dtype=bool)
    if passed.size:
        out[order[:passed[-1] + 1]] = True
    return out


def benjamini_hochberg(p, alpha):        # controls the FDR, not the FWER
    m = len(p)
    order = np.argsort(p)
    passed = np.flatnonzero(p[order] <= np.arange(1, m + 1) * alpha / m)
    out = np.zeros(m, dtype=bool)
    if passed.size:
        out[order[:passed[-1] + 1]] = True
    return out


def returns_adjusted(p, alpha):
    order = np.argsort(p)
    m = len(p)
    adj = np.empty(m)
    adj[order] = np.minimum(1, np.maximum.accumulate(
        (m - np.arange(m)) * p[order]))
    return adj


@pytest.mark.parametrize("fn, words", [
    (bonferroni, ["Bonferroni", "p = [0.02, 0.03]"]),
    (no_stop, ["no stop", "running maximum",
               "p = [0.03, 0.014, 0.5, 0.015]"]),
    (adjusted_not_monotone, ["no stop", "running maximum"]),
    (descending, ["decreasing order", "p = [0.3, 0.001]"]),
    (off_by_one_minus, ["divided by zero", "alpha/(N - i + 1)"]),
    (off_by_one_minus_numpy, ["off by one", "alpha/(N - i)",
                              "p = [0.3, 0.001]"]),
    (off_by_one_plus, ["off by one", "alpha/(N - i + 2)", "p = [0.04]"]),
    (sorted_order, ["order of the input", "p = [0.3, 0.001]"]),
    (sorts_in_place, ["changed its input"]),
    (hochberg, ["step-up", "Hochberg", "p = [0.03, 0.014, 0.5, 0.015]"]),
    (benjamini_hochberg, ["Benjamini-Hochberg", "false discovery"]),
    (returns_adjusted, ["not the p-values", "adjusted"]),
    (lambda p, alpha: int(np.sum(p <= alpha / len(p))),
     ["length N = 1", "the single value 1"]),
])
def test_holm_names_planted_bugs(fn, words):
    res = check_holm(fn)
    assert not res.passed
    for w in words:
        assert w in res.message, res.message
    assert res.case is not None        # the failing case, as data


def test_holm_unnamed_bug_shows_the_case_without_a_diagnosis():
    """A mistake no variant explains gets the case and the first wrong
    rank, and no name."""
    def flips_the_last_of_five(p, alpha):
        out = holm_vectorised(p, alpha)
        if len(p) >= 5:
            out[-1] = not out[-1]
        return out

    res = check_holm(flips_the_last_of_five)
    assert not res.passed
    assert "Holm rejects" in res.message and "of rank 5" in res.message
    for name in ("Bonferroni", "Hochberg", "off by one", "no stop"):
        assert name not in res.message, res.message


def test_a_failure_carries_its_case_as_data():
    from refimpl.exercises import check_holm

    def bonferroni(p, alpha):
        import numpy as np
        p = np.asarray(p)
        return p <= alpha / p.size

    res = check_holm(bonferroni)
    assert not res.passed
    assert res.case is not None
    assert set(res.case.inputs) == {"p", "alpha"}
    assert res.case.expected is not None and res.case.got is not None
    assert "Smallest failing case" in res.message


def test_refimpl_holm_adjusted_passes_the_checker():
    from refimpl.exercises import check_holm
    from refimpl.experiments import holm_adjusted

    res = check_holm(lambda p, alpha: holm_adjusted(p) <= alpha)
    assert res.passed, res.message


def test_holm_adjusted_values_and_errors():
    import numpy as np
    import pytest

    from refimpl.exceptions import DataError
    from refimpl.experiments import holm_adjusted

    # sorted: 0.01 * 3, max(0.03, 0.02 * 2), max(0.04, 0.04 * 1) -> capped order
    np.testing.assert_allclose(holm_adjusted([0.04, 0.01, 0.02]),
                               [0.04, 0.03, 0.04])
    assert holm_adjusted([0.6, 0.7]).max() == 1.0
    with pytest.raises(DataError, match=r"p\[1\]"):
        holm_adjusted([0.1, 1.5])
    with pytest.raises(DataError, match=r"p\[0\]"):
        holm_adjusted([np.nan])
