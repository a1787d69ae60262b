"""Exercise checkers of Chapter 9 (making it fast).

``check_two_sum`` compares the student's TwoSum with the exact rounding
error of a floating-point addition, computed with rational arithmetic (the
specification of the double-double sums in ``refimpl.kernels._ddlanes``).

Derived in: book/09_making_it_fast.md#making-it-fast
"""

from __future__ import annotations

import math
from fractions import Fraction

from ._harness import CheckResult, record, run_checker

__all__ = ["check_two_sum"]


def _exact_error(a: float, b: float) -> float:
    """``a + b - fl(a + b)``, exactly (it is a double when no overflow)."""
    return float(Fraction(a) + Fraction(b) - Fraction(a + b))


def check_two_sum(fn) -> CheckResult:
    """Check ``fn(a, b) -> (s, e)``: ``s = fl(a + b)`` and ``s + e = a + b``.

    ``e`` must be the exact rounding error of the addition (Knuth's TwoSum),
    for every pair of finite doubles whose sum does not overflow, whatever
    their order of magnitude.  Reference: exact rational arithmetic.

    Derived in: book/09_making_it_fast.md#making-it-fast
    """
    def diagnose(case):
        a, b = case
        s_ref, e_ref = a + b, _exact_error(a, b)
        record(expected=(s_ref, e_ref))
        out = fn(a, b)
        record(got=out)
        try:
            s, e = (float(v) for v in out)
        except (TypeError, ValueError):
            return f"your function must return two numbers (s, e), got {out!r}"
        if s == s_ref and (e == e_ref or (math.isnan(e) and math.isnan(e_ref))):
            return None
        if s == e_ref and e == s_ref and s != e:
            return "s and e swapped: return (fl(a + b), error)"
        if s != s_ref:
            return f"s must be fl(a + b) = {s_ref!r}, you return {s!r}"
        if e == -e_ref:
            return (f"wrong sign of the error: e = a + b - s = {e_ref!r}, you "
                    f"return {e!r}")
        if abs(b) > abs(a) and e == b - (s_ref - a):
            return ("Fast2Sum used without ordering the arguments: "
                    "e = b - (s - a) is exact only when |a| >= |b|; swap "
                    "them or use TwoSum")
        if e == 0.0:
            return (f"your error term is 0 but a + b - fl(a + b) = "
                    f"{e_ref!r}: the error of the addition is lost")
        return (f"error term {e!r} instead of {e_ref!r} (s + e must equal "
                "a + b exactly)")

    adversarial = [
        (1.0, 2.0 ** -60), (2.0 ** -60, 1.0), (1e16, 1.2345),
        (1.2345, 1e16), (-1e16, 3.75), (0.1, 0.2), (3.0, -3.0),
        (1e300, 1e284), (-0.0, 0.0), (2.0 ** -1074, 1.0),
    ]
    from hypothesis import strategies as st

    fl = st.floats(allow_nan=False, allow_infinity=False,
                   min_value=-1e300, max_value=1e300)
    return run_checker(diagnose, adversarial=adversarial,
                       strategy=st.tuples(fl, fl), max_examples=150,
                       what="your TwoSum", names=("a", "b"))
