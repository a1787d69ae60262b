"""Chapter 10's checkers accept a correct answer and name planted mistakes."""

import hashlib
import json
import math

import numpy as np
import pytest

from refimpl.exercises import check_cache_key, check_select_by_validation
from test_exercises_ch01 import assert_diagnosed

# -- check_select_by_validation ----------------------------------------------


def select_naive(values):
    """The runner's rule, written out: largest value, first on ties, NaN
    below every number, failed fits (None) never."""
    best, best_v = None, None
    for i, v in enumerate(values):
        if v is None:
            continue
        v = -math.inf if math.isnan(v) else v
        if best is None or v > best_v:
            best, best_v = i, v
    return best


def select_argmax(values):
    """np.argmax over the finished fits: NaN wins."""
    ok = [i for i, v in enumerate(values) if v is not None]
    if not ok:
        return None
    return ok[int(np.argmax([values[i] for i in ok]))]


def select_last_tie(values):
    best, best_v = None, None
    for i, v in enumerate(values):
        if v is None:
            continue
        v = -math.inf if math.isnan(v) else v
        if best is None or v >= best_v:
            best, best_v = i, v
    return best


def select_min(values):
    ok = [(-math.inf if math.isnan(v) else -v, i)
          for i, v in enumerate(values) if v is not None]
    return max(ok, key=lambda t: (t[0], -t[1]))[1] if ok else None


def select_one_based(values):
    i = select_naive(values)
    return None if i is None else i + 1


def select_keeps_failed(values):
    vals = [0.0 if v is None else v for v in values]   # failed as a value
    return select_naive(vals) if vals else None


def select_sorted(values):
    """Sort the finished fits by (value, -index), NaN as -inf: the last wins."""
    ok = [(-math.inf if math.isnan(v) else v, -i)
          for i, v in enumerate(values) if v is not None]
    return -max(ok)[1] if ok else None


def select_numpy(values):
    """NaN -> -inf, failed -> NaN removed by index; np.argmax takes the
    first of equal maxima."""
    idx = [i for i, v in enumerate(values) if v is not None]
    if not idx:
        return None
    vals = np.array([values[i] for i in idx], float)
    return idx[int(np.argmax(np.where(np.isnan(vals), -np.inf, vals)))]


@pytest.mark.parametrize("fn", [select_naive, select_sorted, select_numpy])
def test_select_accepts_the_rule(fn):
    result = check_select_by_validation(fn)
    assert result.passed, result.message
    assert "agrees with refimpl" in result.message


def test_select_nan_wins():
    assert_diagnosed(check_select_by_validation(select_argmax),
                     "NaN treated as the best value")


def test_select_last_tie():
    assert_diagnosed(check_select_by_validation(select_last_tie),
                     "ties broken by a later setting")


def test_select_smallest():
    assert_diagnosed(check_select_by_validation(select_min),
                     "smallest validation value")


def test_select_off_by_one():
    assert_diagnosed(check_select_by_validation(select_one_based),
                     "off by one")


def test_select_failed_fit_kept():
    assert_diagnosed(check_select_by_validation(select_keeps_failed),
                     "failed fit")


def select_nanargmax(values):
    """A plausible student answer: np.nanargmax, None when all are NaN."""
    vals = np.array([np.nan if v is None else v for v in values], float)
    if vals.size == 0 or np.all(np.isnan(vals)):
        return None
    return int(np.nanargmax(vals))


def test_select_all_nan_is_not_a_failure():
    assert_diagnosed(check_select_by_validation(select_nanargmax),
                     "NaN is not a failure")


def test_select_returns_value_or_raises():
    vals = check_select_by_validation(
        lambda v: max((x for x in v if x is not None and x == x),
                      default=None))
    assert not vals.passed and "not its validation value" in vals.message

    def boom(values):
        raise IndexError("list index out of range")

    raised = check_select_by_validation(boom)
    assert not raised.passed and "raised IndexError" in raised.message


# -- check_cache_key ------------------------------------------------------------


def key_json(task):
    blob = json.dumps(task, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def key_no_data(task):
    return key_json({k: v for k, v in task.items() if k != "data"})


def key_no_fixed(task):
    return key_json({k: v for k, v in task.items() if k != "fixed"})


def key_unsorted(task):
    return hashlib.sha256(json.dumps(task).encode()).hexdigest()


def key_concat(task):
    parts = [str(task[k]) if not isinstance(task[k], dict) else
             json.dumps(task[k], sort_keys=True) for k in sorted(task)]
    return hashlib.sha256("".join(parts).encode()).hexdigest()


def key_concat_listed(task):
    text = f"{task['dataset']}{task['fold']}{task['method']}" + json.dumps(
        [task[k] for k in ("params", "fixed", "data", "code", "libraries")],
        sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def key_builtin_hash(task):
    return hash(json.dumps(task, sort_keys=True))


def key_length_prefixed(task):
    """Each field hashed with its name and length: no JSON at all."""
    h = hashlib.blake2b(digest_size=20)
    for name in sorted(task):
        v = task[name]
        text = repr(sorted(v.items())) if isinstance(v, dict) else repr(v)
        h.update(f"{name}:{len(text)}:{text};".encode())
    return h.hexdigest()


def key_of_digests(task):
    """A digest of the per-field digests, in sorted field order."""
    parts = [hashlib.sha256(json.dumps([k, task[k]], sort_keys=True)
                            .encode()).hexdigest() for k in sorted(task)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


@pytest.mark.parametrize("fn", [key_json, key_length_prefixed,
                                key_of_digests])
def test_cache_key_accepts_a_digest_of_sorted_json(fn):
    result = check_cache_key(fn)
    assert result.passed, result.message


def test_cache_key_ignores_data():
    assert_diagnosed(check_cache_key(key_no_data), "ignores the data's digest")


def test_cache_key_ignores_fixed_settings():
    assert_diagnosed(check_cache_key(key_no_fixed), "fixed settings")


def test_cache_key_depends_on_order():
    assert_diagnosed(check_cache_key(key_unsorted), "order of the entries")


@pytest.mark.parametrize("fn", [key_concat, key_concat_listed])
def test_cache_key_runs_fields_together(fn):
    assert_diagnosed(check_cache_key(fn), "without a separator")


def key_no_code(task):
    return key_json({k: v for k, v in task.items() if k != "code"})


def key_random(task):
    import uuid
    return key_json(task) + uuid.uuid4().hex


@pytest.mark.parametrize("fn, word", [(key_no_code, "the code hash"),
                                      (key_random, "two calls")])
def test_cache_key_more_bugs(fn, word):
    assert_diagnosed(check_cache_key(fn), word)


def test_cache_key_python_hash():
    assert_diagnosed(check_cache_key(key_builtin_hash), "hash()")


@pytest.mark.parametrize("checker", [check_select_by_validation,
                                     check_cache_key])
def test_checkers_are_exported(checker):
    import refimpl.exercises as ex
    assert checker.__name__ in ex.__all__


# -- every checker: a failure carries its case as data ----------------------


def _all_checkers():
    import refimpl.exercises as ex
    return [getattr(ex, name) for name in ex.__all__
            if name.startswith("check_")]


@pytest.mark.parametrize("checker", _all_checkers(),
                         ids=lambda c: c.__name__)
def test_every_failure_shows_its_case(checker):
    def raises(*args, **kwargs):
        raise ArithmeticError("planted")
    res = checker(raises)
    assert not res.passed
    assert "ArithmeticError" in res.message, res.message
    assert "Smallest failing case: inputs" in res.message, res.message
    assert "(as data: result.case)" in res.message
    assert res.case.inputs, res.case
    assert res.case.expected is not None, res.case
    assert isinstance(res.case.got, ArithmeticError)
    assert res.n_cases == 1    # the first case already fails
