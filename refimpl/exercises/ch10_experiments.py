"""Exercise checkers of Chapter 10 (running experiments).

``check_select_by_validation`` compares the student's selection rule with
the runner's own (:func:`refimpl.experiments.tables.select_best`, the rule
behind ``selected.csv``).  ``check_cache_key`` tests the properties a fit
cache's key must have (a digest has no single right value): deterministic,
blind to the order of the settings, changed by every ingredient a result
depends on, and free of collisions between fields.

Derived in: book/10_running_experiments.md#running-experiments
"""

from __future__ import annotations

import copy
import math

from ._harness import CheckResult, record, run_checker

__all__ = ["check_select_by_validation", "check_cache_key"]


# --------------------------------------------------------------------------
# selecting a grid point by its validation value
# --------------------------------------------------------------------------

_METRIC = "MAP"


def _select_ref(values):
    """The runner's choice among ``values`` (None = failed fit)."""
    from ..experiments.tables import select_best

    rows = [{"status": "failed" if v is None else "ok", "i": i,
             f"val_{_METRIC}": float("nan") if v is None else float(v)}
            for i, v in enumerate(values)]
    best = select_best(rows, _METRIC)
    return None if best is None else best["i"]


def _isnan(v):
    return v is not None and math.isnan(v)


def _show(v):
    return "None" if v is None else f"{v:g}"


def check_select_by_validation(select) -> CheckResult:
    """Check ``select(values) -> index``: the runner's selection rule.

    ``values`` holds one method's validation values on one fold, in grid
    order: a float (possibly NaN, a metric that is undefined) for a
    finished fit, ``None`` for a failed one.  The answer is the index of
    the setting the runner keeps: the largest value; ties go to the first
    in grid order; NaN ranks below every number (a setting whose value is
    NaN is kept only when every finished fit has NaN, the first of them);
    a failed fit is never kept; ``None`` when every fit failed.

    Derived in: book/10_running_experiments.md#run-registry
    """
    def diagnose(values):
        values = list(values)
        ref = _select_ref(values)
        record(values=values, expected=ref)
        got = select(list(values))
        record(got="None" if got is None else got)
        if ref is None:
            if got is None:
                return None
            return (f"every fit failed, so there is nothing to select: "
                    f"return None, not {got!r}")
        if got is None:
            if all(v is None or _isnan(v) for v in values):
                return (f"you returned None, but NaN is not a failure: "
                        f"when every finished fit has NaN the runner still "
                        f"keeps the first of them (index {ref})")
            return f"you returned None; the runner keeps index {ref}"
        if isinstance(got, float) and not float(got).is_integer():
            return (f"return the index of the setting, not its validation "
                    f"value ({got!r})")
        try:
            g = int(got)
        except (TypeError, ValueError):
            return f"your function returned {got!r}, not an index"
        if g == ref:
            return None
        if not 0 <= g < len(values):
            if g == ref + 1 == len(values) or g == ref + 1:
                return (f"off by one: you returned {g}, the runner keeps "
                        f"{ref}; grid indices start at 0")
            return f"index {g} is outside the grid of {len(values)}"
        v, r = values[g], values[ref]
        if v is None:
            return (f"you kept a failed fit (index {g}, value None); a "
                    f"failed fit is never selected")
        if _isnan(v):
            return (f"NaN treated as the best value: you kept index {g} "
                    f"whose value is NaN, but index {ref} has {_show(r)}; a "
                    f"NaN ranks below every number (np.argmax returns the "
                    f"first NaN)")
        if v == r:
            return (f"ties broken by a later setting: indices {ref} and {g} "
                    f"share the best value {_show(r)}, the runner keeps the "
                    f"first in grid order")
        finite = [x for x in values if x is not None and not _isnan(x)]
        if finite and v == min(finite) and v < r:
            return (f"you kept the smallest validation value ({_show(v)}); "
                    f"every selection metric is larger-is-better, the "
                    f"runner keeps {_show(r)} at index {ref}")
        if g == ref + 1:
            return (f"off by one: you returned {g}, the runner keeps "
                    f"{ref}; grid indices start at 0")
        return (f"you kept index {g} (value {_show(v)}), the runner keeps "
                f"index {ref} (value {_show(r)})")

    from hypothesis import strategies as st

    value = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
                      st.just(float("nan")), st.none(),
                      st.floats(0, 1, allow_nan=False))
    nan = float("nan")
    adversarial = [
        [0.5], [0.2, 0.7, 0.4], [0.5, 0.7, 0.7], [0.7, 0.7], [None, 0.0, nan],
        [nan, 0.2], [0.3, nan, 0.1], [None, 0.1, 0.3], [0.9, 0.1],
        [0.1, 0.2, 0.9], [None, None], [], [nan, nan], [None, nan, nan],
    ]
    return run_checker(diagnose, adversarial=adversarial,
                       strategy=st.lists(value, min_size=0, max_size=8),
                       max_examples=150, what="your selection rule",
                       names=("values",))


# --------------------------------------------------------------------------
# the key of the fit cache
# --------------------------------------------------------------------------

#: What a task's result depends on, as the key function receives it.
_INGREDIENTS = {
    "dataset": "the data set",
    "fold": "the fold",
    "method": "the method",
    "params": "the grid setting",
    "fixed": "the method's fixed settings",
    "data": "the data's digest (a changed file would be served the old "
            "result)",
    "code": "the code hash (an edited solver would be served the old "
            "result)",
    "libraries": "the library versions (a new NumPy or numba can change "
                 "the last digits)",
}


def _base_task():
    return {
        "dataset": "MQ2008", "fold": 1, "method": "fenchelrank",
        "params": {"r": 4.0, "variant": "paper"},
        "fixed": {"tol": 1e-3, "max_iter": 1000},
        "data": "3f" * 32, "code": "a1" * 32,
        "libraries": {"numpy": "2.4.6", "scipy": "1.17.1", "numba": "0.68.1"},
    }


def _other_digest(digest):
    """A digest that differs from ``digest`` in its first character."""
    return ("1" if digest[:1] != "1" else "2") + digest[1:]


def _variants(task):
    """(ingredient, a task differing from ``task`` only there)."""
    out = []
    for name, new in [("dataset", task["dataset"] + "x"),
                      ("fold", task["fold"] + 1),
                      ("method", task["method"] + "-2"),
                      ("data", _other_digest(task["data"])),
                      ("code", _other_digest(task["code"]))]:
        t = copy.deepcopy(task)
        t[name] = new
        out.append((name, t))
    for name in ("params", "fixed", "libraries"):
        if task[name]:
            t = copy.deepcopy(task)
            k = sorted(t[name])[0]
            v = t[name][k]
            t[name][k] = (v * 2 + 1 if isinstance(v, (int, float))
                          else str(v) + "-2")
            out.append((name, t))
    return out


def _run_together(task):
    """Pairs of tasks whose fields f1, f2 concatenate to the same text."""
    def grow(v, left):
        if isinstance(v, int):
            return int(("1" + str(v)) if left else (str(v) + "1"))
        return ("1" + v) if left else (v + "1")

    scalars = ("dataset", "fold", "method", "data", "code")
    for f1 in scalars:
        for f2 in scalars:
            if f1 != f2:
                a, b = copy.deepcopy(task), copy.deepcopy(task)
                a[f1] = grow(task[f1], left=False)
                b[f2] = grow(task[f2], left=True)
                yield a, b, f1, f2


def _reordered(task):
    t = copy.deepcopy(task)
    for name in ("params", "fixed", "libraries"):
        t[name] = dict(reversed(list(t[name].items())))
    return dict(reversed(list(t.items())))


def check_cache_key(key) -> CheckResult:
    """Check ``key(task) -> str``: a fit cache's key.

    ``task`` is a dict with ``dataset`` (str), ``fold`` (int), ``method``
    (str), ``params`` and ``fixed`` (dicts of settings), ``data`` and
    ``code`` (hex digests of the fold's files and of the package) and
    ``libraries`` (name -> version).  A correct key is a string (a
    ``hashlib`` hex digest) that is the same for equal tasks whatever the
    order of their dicts, differs when any ingredient differs, and cannot
    be forged by moving characters from one field to the next.  There is
    no single right digest: the checker tests these properties, as
    :func:`refimpl.experiments.task_cache.cache_key` relies on them.

    Derived in: book/10_running_experiments.md#run-cache
    """
    def diagnose(task):
        record(task=copy.deepcopy(task),
               expected="a str, the same for equal tasks, another for "
                        "tasks that differ")
        k = key(copy.deepcopy(task))
        record(got=k)
        if isinstance(k, int):
            # not the int itself: hash() is salted per process, and a
            # message must read the same on every run
            record(got="an int (its value changes from process to process)")
            return ("your key is an int (Python's hash()?): hash() of a "
                    "string changes from one process to the next, so a "
                    "later run would never find the entry; return a "
                    "hashlib hex digest")
        if not isinstance(k, str):
            return f"your key is a {type(k).__name__}, not a str"
        k2 = key(copy.deepcopy(task))
        if k2 != k:
            record(got=(k, k2))
            return ("your key differs between two calls on the same task "
                    "(random or time-dependent?)")
        k2 = key(_reordered(task))
        if k2 != k:
            record(got=(k, k2))
            return ("your key depends on the order of the entries of a "
                    "dict: the same settings listed in another order get "
                    "another key (sort the keys, e.g. json.dumps(..., "
                    "sort_keys=True))")
        for name, other in _variants(task):
            if key(other) == k:
                record(task=copy.deepcopy(task), task_2=other, got=(k, k))
                return (f"your key ignores {_INGREDIENTS[name]}: two tasks "
                        f"that differ only in {name!r} get the same key")
        # fields run together: move a "1" across the boundary of two fields
        for a, b, f1, f2 in _run_together(task):
            if key(a) == key(b):
                record(task=a, task_2=b, got=(key(a), key(b)))
                return ("your key runs fields together without a separator: "
                        f"{f1}={a[f1]!r} with {f2}={a[f2]!r} and {f1}="
                        f"{b[f1]!r} with {f2}={b[f2]!r} get the same key "
                        "(serialise a structure, e.g. JSON, before hashing)")
        return None

    from hypothesis import strategies as st

    text = st.text("abcdefgh:0123456789-", min_size=1, max_size=8)
    value = st.one_of(st.floats(1e-4, 1e3), st.integers(1, 1000),
                      st.sampled_from(["paper", "auto"]))

    def setting(names):       # grid and fixed settings never share a name
        return st.dictionaries(st.sampled_from(names), value, min_size=1,
                               max_size=3)
    hexd = st.text("0123456789abcdef", min_size=64, max_size=64)
    task = st.fixed_dictionaries({
        "dataset": text, "fold": st.integers(1, 5), "method": text,
        "params": setting(["C", "r", "lambda1", "variant"]),
        "fixed": setting(["tol", "max_iter", "backend"]),
        "data": hexd, "code": hexd,
        "libraries": st.dictionaries(st.sampled_from(["numpy", "numba"]),
                                     text, min_size=1, max_size=2)})
    return run_checker(diagnose, adversarial=[_base_task()], strategy=task,
                       max_examples=60, what="your cache key",
                       names=("task",))
