"""Exercise checker of Chapter 8's section on multiple comparisons.

``check_holm`` compares the student's Holm step-down procedure with the
reference below: sort the p-values increasingly, reject ``H_(i)`` while
``p_(i) <= alpha / (N - i + 1)`` (1-based rank ``i``), stop at the first
p-value above its threshold, and report the rejections in the order of the
input.  Each adversarial case lets exactly one of the usual mistakes show,
so the message names a mistake only when the case proves it.

Derived in: book/08_side_by_side.md#multiple-comparisons
"""

from __future__ import annotations

import numpy as np

from ._harness import CheckResult, record, run_checker

__all__ = ["check_holm"]

# how far from a threshold a p-value counts as *on* it: there the student's
# p * (N - i + 1) <= alpha and the reference's p <= alpha / (N - i + 1) may
# round differently, and both answers are right
_REL_EDGE = 1e-12


def _step_down(p_sorted, thresholds, *, stop=True):
    """Rejections of the sorted hypotheses: step-down (or every test alone)."""
    ok = p_sorted <= thresholds
    if stop:
        ok = np.logical_and.accumulate(ok)
    return ok


def _step_up(p_sorted, thresholds):
    """Reject the i smallest, i the largest rank whose p passes (step-up)."""
    passed = np.flatnonzero(p_sorted <= thresholds)
    ok = np.zeros(p_sorted.size, dtype=bool)
    if passed.size:
        ok[:passed[-1] + 1] = True
    return ok


def _unsort(ok_sorted, order):
    out = np.empty_like(ok_sorted)
    out[order] = ok_sorted
    return out


def _holm(p, alpha, slack=0.0):
    """Holm's rejections, in the input's order (the reference)."""
    p = np.asarray(p, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    thr = alpha / (m - np.arange(m)) * (1 + slack)
    return _unsort(_step_down(p[order], thr), order)


def _variants(p, alpha):
    """(rejections, message) of the mistakes students make, for one case."""
    m = p.size
    order = np.argsort(p, kind="stable")
    desc = order[::-1]
    rank = np.arange(1, m + 1)
    ps = p[order]
    holm_sorted = _step_down(ps, alpha / (m - rank + 1))
    with np.errstate(divide="ignore"):
        minus_one = alpha / (m - rank)                  # alpha / 0 = inf
    return [
        (p <= alpha / m, "Bonferroni instead of Holm: you compare every "
         "p-value with alpha/N; Holm's threshold grows, alpha/(N - i + 1) "
         "for the i-th smallest"),
        (_unsort(_step_down(ps, alpha / (m - rank + 1), stop=False), order),
         "no stop: you reject a hypothesis whose p-value is larger than "
         "that of one you kept; Holm stops at the first p_(i) above "
         "alpha/(N - i + 1) (with adjusted p-values: take the running "
         "maximum of (N - i + 1) p_(i))"),
        (_unsort(_step_up(ps, alpha / (m - rank + 1)), order),
         "step-up instead of step-down: you reject every hypothesis up to "
         "the largest i with p_(i) <= alpha/(N - i + 1) (Hochberg's "
         "procedure); Holm stops at the first i that fails"),
        (_unsort(_step_up(ps, rank * alpha / m), order),
         "Benjamini-Hochberg instead of Holm: thresholds i alpha/N, step-up, "
         "control the false discovery rate, not the family-wise error"),
        (_unsort(_step_down(p[desc], alpha / (m - rank + 1)), desc),
         "sorted in decreasing order: Holm starts from the smallest "
         "p-value, with the strictest threshold alpha/N"),
        (holm_sorted.copy(), "the answer is in the order of the sorted "
         "p-values; return it in the order of the input"),
        (_unsort(_step_down(ps, minus_one), order), "off by one: your "
         "threshold for the i-th smallest p-value is alpha/(N - i), not "
         "alpha/(N - i + 1) (the smallest is compared with alpha/N)"),
        (_unsort(_step_down(ps, alpha / (m - rank + 2)), order), "off by "
         "one: your threshold for the i-th smallest p-value is "
         "alpha/(N - i + 2), not alpha/(N - i + 1) (the largest is compared "
         "with alpha itself)"),
    ]


def _as_mask(got, m):
    """The student's answer as a boolean array of length m, or a message."""
    try:
        arr = np.asarray(got)
    except Exception:                    # noqa: BLE001 -- any odd object
        arr = None
    if arr is None or arr.ndim != 1 or arr.size != m:
        shape = ("nothing" if got is None else repr(got) if arr is None
                 else f"the single value {got!r}" if arr.ndim == 0
                 else f"an array of shape {arr.shape}")
        return None, (f"return one True/False per p-value (an array of "
                      f"length N = {m}, in the input's order); you returned "
                      f"{shape}")
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            return None, ("return True/False per p-value, not the p-values "
                          "themselves (adjusted p-values? compare them "
                          "with alpha)")
        arr = arr.astype(bool)
    return arr, None


def _fmt(x):
    return "[" + ", ".join(f"{v:.4g}" for v in x) + "]"


def _bools(x):
    return "[" + ", ".join("T" if v else "F" for v in x) + "]"


def check_holm(fn) -> CheckResult:
    """Check ``fn(p, alpha) -> reject``: Holm's step-down procedure.

    ``p`` is a 1-d array of the ``N`` p-values of a family of tests and
    ``alpha`` the family-wise error rate to control; ``reject[i]`` is True
    when hypothesis ``i`` is rejected.  Sort the p-values, reject the i-th
    smallest while ``p_(i) <= alpha / (N - i + 1)`` and stop at the first
    that fails (eq. eq-holm of Chapter 8).  A loop, a vectorised version
    and the adjusted-p-value form (``max_{j <= i} (N - j + 1) p_(j) <=
    alpha``) are all accepted.

    Derived in: book/08_side_by_side.md#multiple-comparisons
    """
    def diagnose(case):
        p_list, alpha = case
        p = np.asarray(p_list, dtype=float)
        m = p.size
        arg = p.copy()
        where = f"for p = {_fmt(p)}, alpha = {alpha:g}"
        ref = _holm(p, alpha)
        record(p=p.copy(), alpha=alpha, expected=ref)
        try:
            got = fn(arg, alpha)
        except ZeroDivisionError as exc:
            return (f"your function divided by zero ({exc}) {where}: with "
                    "a 1-based rank i the threshold is alpha/(N - i + 1), "
                    "which is alpha, not alpha/0, for the largest p-value")
        if not np.array_equal(arg, p):
            return (f"your function changed its input (it sorts p in "
                    f"place?) {where}: the caller's p became {_fmt(arg)}; "
                    "sort a copy, or use np.argsort")
        record(got=got)
        mask, msg = _as_mask(got, m)
        if msg is not None:
            return f"{msg} {where}"
        if (np.array_equal(mask, ref)
                or np.array_equal(mask, _holm(p, alpha, _REL_EDGE))
                or np.array_equal(mask, _holm(p, alpha, -_REL_EDGE))):
            return None
        said = (f"{where}: Holm rejects {_bools(ref)}, you reject "
                f"{_bools(mask)}")
        named = {text for v, text in _variants(p, alpha)
                 if np.array_equal(v, mask)}
        if len(named) == 1:
            return f"{named.pop()} ({said})"
        order = np.argsort(p, kind="stable")
        i = int(np.flatnonzero(mask[order] != ref[order])[0])
        why = (f"p <= alpha/{m - i} = {alpha / (m - i):.4g} and every "
               "smaller p-value was rejected" if ref[order][i] else
               f"p > alpha/{m - i} = {alpha / (m - i):.4g}, or a smaller "
               "p-value was already kept")
        verb = "rejects" if ref[order][i] else "keeps"
        return (f"{said}; Holm {verb} the p-value of rank {i + 1} in "
                f"increasing order, {p[order][i]:.4g}, because {why}")

    adversarial = [
        ([0.04], 0.05),                      # m = 1: the threshold is alpha
        ([0.3, 0.001], 0.05),                # input order != sorted order
        ([0.02, 0.03], 0.05),                # Holm rejects more than alpha/N
        ([0.03, 0.001], 0.05),               # starts from the smallest
        ([0.03, 0.5], 0.05),                 # no threshold above alpha
        ([0.03, 0.014, 0.5, 0.015], 0.05),   # step-up rejects more
        ([0.04, 0.03, 0.035], 0.05),         # stop at the first failure
        ([0.01, 0.2, 0.01, 0.04, 0.5], 0.1),  # ties
    ]
    from hypothesis import strategies as st
    p_value = st.one_of(st.floats(0, 1), st.sampled_from(
        [0.001, 0.01, 0.02, 0.03, 0.04, 0.06, 0.2, 0.5, 1.0]))
    strategy = st.tuples(st.lists(p_value, min_size=1, max_size=10),
                         st.sampled_from([0.05, 0.1, 0.01, 0.2]))
    return run_checker(diagnose, adversarial=adversarial, strategy=strategy,
                       max_examples=150, what="your Holm procedure",
                       names=("p", "alpha"))
