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
It names a part of the student's code only when the case separates that
part from the others: the adversarial cases are ordered so that each
mistake shows alone first, and a part that can be tested in isolation is.
Before it compares, a diagnosis calls :func:`record` with what refimpl
expects and what the student's function returned; the failure message then
ends with the failing case (inputs, expected, got), and
:attr:`CheckResult.case` holds it as a :class:`FailingCase`.

Derived in: book/intro.md#exercise-checkers
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

__all__ = ["CheckResult", "FailingCase", "run_checker", "record",
           "only_match", "Suspects", "describe_exception"]


@dataclass(frozen=True)
class FailingCase:
    """The smallest case on which a checker saw the student's function fail.

    ``inputs`` maps the argument names to the values the student's function
    was given (for an argument that is itself a function, such as ``f``,
    the data that defines it); ``expected`` is refimpl's answer and ``got``
    the student's (the exception, if the function raised one).
    ``CheckResult.case`` holds one, so a failing case can be re-run, e.g.
    ``fn(**result.case.inputs)`` when the inputs are plain arrays.
    """

    inputs: dict
    expected: Any = None
    got: Any = None

    def __str__(self) -> str:
        args = ", ".join(f"{k} = {_show(v)}" for k, v in self.inputs.items())
        return (f"inputs {args}; expected {_show(self.expected)}; "
                f"got {_show(self.got)}")


def _show(v, limit: int = 160) -> str:
    """A short, exact-enough text of a value for a failure message."""
    if isinstance(v, BaseException):
        return f"{type(v).__name__}: {v}"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    if isinstance(v, (bool, int, np.integer, str)) or v is None:
        return repr(v.item() if isinstance(v, np.generic) else v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_show(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple) and not (v and isinstance(v[0], (int, np.integer))
                                     and all(isinstance(x, (int, np.integer))
                                             for x in v)):
        return "(" + ", ".join(_show(x) for x in v) + ")"
    try:
        arr = np.asarray(v)
    except Exception:  # pragma: no cover - an odd object
        arr = None
    if arr is not None and arr.dtype != object and arr.ndim >= 1:
        text = np.array2string(arr, separator=", ", threshold=40,
                               edgeitems=4, max_line_width=10**6,
                               formatter={"float_kind": "{:.4g}".format})
        text = re.sub(r"\s+", " ", text)
    else:
        text = repr(v)
    return text if len(text) <= limit else text[:limit - 5] + " ...]"


_RECORD: dict = {}


def record(*, expected: Any = None, got: Any = None, **inputs) -> None:
    """Note, for the failure message, what the case expects and what came.

    A diagnosis calls it once it knows refimpl's answer and the student's;
    ``inputs`` (name = value) replace the raw case in the message when the
    student's function takes arguments the raw case does not show.
    """
    if expected is not None:
        _RECORD["expected"] = expected
    if got is not None:
        _RECORD["got"] = got
    if inputs:
        _RECORD["inputs"] = inputs


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one checker on one student function.

    ``passed`` is True when every case agreed; ``message`` names the
    mistake and ends with the smallest failing case; ``case`` is that case
    as data (a :class:`FailingCase`: ``inputs``, ``expected``, ``got``), or
    None when the check passed.
    """

    passed: bool
    message: str
    n_cases: int = 0
    case: FailingCase | None = field(default=None, repr=False)

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
    _RECORD.clear()
    try:
        with np.errstate(all="ignore"):
            return diagnose(case)
    except Exception as exc:  # the student's code may raise anything
        _RECORD.setdefault("got", exc)
        return describe_exception(exc)


def _failure(diagnose, case, names, n, msg=None) -> "CheckResult":
    """The CheckResult of a failing case: the diagnosis, then the case."""
    if msg is None:
        msg = _safe(diagnose, case) or ("a case failed once but not on a "
                                        "re-run (does your function keep "
                                        "state?)")
    inputs = _RECORD.get("inputs")
    if inputs is None:
        if names and isinstance(case, tuple) and len(names) == len(case):
            inputs = dict(zip(names, case))
        elif names and len(names) == 1:
            inputs = {names[0]: case}
        else:
            inputs = {"case": case}
    failing = FailingCase(inputs, _RECORD.get("expected"), _RECORD.get("got"))
    text = msg.rstrip().rstrip(".")
    return CheckResult(False, f"{text}. Smallest failing case: {failing} "
                              "(as data: result.case).", n, failing)


def run_checker(diagnose: Callable[[Any], str | None], *,
                adversarial: Iterable[Any] = (),
                strategy=None, max_examples: int = 150,
                what: str = "your function",
                names: tuple[str, ...] = ()) -> CheckResult:
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
    names : tuple of str
        The names of the case's items (the student's arguments), for the
        failing case's ``inputs`` when the diagnosis did not record them.
    """
    n = 0
    for case in adversarial:
        n += 1
        msg = _safe(diagnose, case)
        if msg is not None:
            return _failure(diagnose, case, names, n, msg)
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
            return _failure(diagnose, case, names, n)
    return CheckResult(True, f"{what} agrees with refimpl on all {n} cases "
                             "tried (adversarial and random).", n)


def only_match(candidates: Iterable[tuple[str, Any]],
               agrees: Callable[[Any], bool]) -> str | None:
    """The one diagnosis whose planted answer agrees with the student's.

    ``candidates`` are ``(diagnosis, answer that mistake gives)`` pairs.
    A diagnosis is named only when it is the single candidate that agrees:
    when two mistakes give the same answer on this case, the case does not
    separate them and the caller falls back to a generic message.
    """
    hits = []
    for text, value in candidates:
        try:
            ok = agrees(value)
        except (TypeError, ValueError, FloatingPointError):
            ok = False
        if ok and text not in hits:
            hits.append(text)
    return hits[0] if len(hits) == 1 else None


class Suspects:
    """The typical mistakes a student's function may still be making.

    A case the function gets right clears every mistake that would have
    got it wrong (:meth:`clear`); on a failing case, :meth:`name` names a
    mistake only when it is the one uncleared mistake that gives the
    student's answer.  With the cases ordered so that each mistake shows
    alone first, a mistake that a later case cannot separate from another
    has been cleared by then.
    """

    def __init__(self):
        self.cleared: set[str] = set()

    def clear(self, candidates: Iterable[tuple[str, Any]],
              right: Callable[[Any], bool]) -> None:
        """Clear the mistakes whose answer on a passed case is wrong."""
        for text, value in candidates:
            try:
                ok = right(value)
            except (TypeError, ValueError, FloatingPointError):
                ok = False
            if not ok:
                self.cleared.add(text)

    def name(self, candidates: Iterable[tuple[str, Any]],
             agrees: Callable[[Any], bool]) -> str | None:
        """The one uncleared mistake that gives the student's answer."""
        return only_match(((t, v) for t, v in candidates
                           if t not in self.cleared), agrees)
