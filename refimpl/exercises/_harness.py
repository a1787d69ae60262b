"""What every exercise checker shares: find a failing case, say what is wrong.

A checker (``refimpl.exercises.check_*``) takes the student's function and
returns a :class:`CheckResult`.  It first runs a few hand-picked adversarial
cases (ties, empty queries, a zero vector, ...), then random cases drawn by
hypothesis with a fixed seed, so that a student sees the same verdict on
every run.  hypothesis shrinks a failing random case to a small one, which
is what the message shows.

A checker's *diagnosis* compares the student's answer with ``refimpl``'s on
one case and returns ``None`` when they agree, else one sentence naming the
mistake ("wrong sign", "missing factor 2", "off by one in a count", ...).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

__all__ = ["CheckResult", "run_checker", "describe_exception"]


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one checker on one student function.

    ``passed`` is True when every case agreed; ``message`` is one sentence
    for the student; ``case`` is the (shrunk) failing case, or None.
    """

    passed: bool
    message: str
    n_cases: int = 0
    case: Any = field(default=None, repr=False)

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = "PASSED" if self.passed else "NOT YET"
        return f"{mark}: {self.message}"

    def _repr_pretty_(self, p, cycle):  # IPython's display of the result
        p.text(str(self))

    def raise_if_failed(self) -> "CheckResult":
        """Raise ``AssertionError(message)`` unless the check passed."""
        if not self.passed:
            raise AssertionError(self.message)
        return self


def describe_exception(exc: BaseException) -> str:
    """One line naming an exception the student's function raised."""
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (line {last[0].lineno} of {last[0].name})" if last else ""
    return f"your function raised {type(exc).__name__}: {exc}{where}"


def _safe(diagnose: Callable[[Any], str | None], case: Any) -> str | None:
    try:
        with np.errstate(all="ignore"):
            return diagnose(case)
    except Exception as exc:  # the student's code may raise anything
        return describe_exception(exc)


def run_checker(diagnose: Callable[[Any], str | None], *,
                adversarial: Iterable[Any] = (),
                strategy=None, max_examples: int = 150,
                what: str = "your function") -> CheckResult:
    """Run ``diagnose`` on the adversarial cases, then on random ones.

    Parameters
    ----------
    diagnose : callable
        ``diagnose(case) -> None | str``: None when the student's answer on
        ``case`` agrees with ``refimpl``, else one sentence saying what is
        wrong.  Exceptions raised by the student's code are reported.
    adversarial : iterable
        Hand-picked cases, tried first and in order.
    strategy : hypothesis strategy, optional
        Random cases; drawn with a fixed seed (``derandomize=True``), and a
        failing one is shrunk before it is reported.
    max_examples : int
        How many random cases to try.
    what : str
        How the message names the function under test.
    """
    n = 0
    for case in adversarial:
        n += 1
        msg = _safe(diagnose, case)
        if msg is not None:
            return CheckResult(False, msg, n, case)
    if strategy is not None:
        from hypothesis import HealthCheck, find, settings
        from hypothesis.errors import NoSuchExample

        opts = settings(max_examples=max_examples, database=None,
                        derandomize=True, deadline=None,
                        suppress_health_check=list(HealthCheck))
        try:
            case = find(strategy, lambda c: _safe(diagnose, c) is not None,
                        settings=opts)
        except NoSuchExample:
            n += max_examples
        else:
            return CheckResult(False, _safe(diagnose, case) or
                               "a case failed once but not on a re-run "
                               "(does your function keep state?)", n, case)
    return CheckResult(True, f"{what} agrees with refimpl on all {n} cases "
                             "tried (adversarial and random).", n)
