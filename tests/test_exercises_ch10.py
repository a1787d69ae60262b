"""Chapter 10's checkers accept a correct answer and name planted mistakes."""

import hashlib
import json
import math

import numpy as np
import pytest

from refimpl.exercises import check_cache_key, check_select_by_validation

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


def test_select_accepts_the_rule():
    result = check_select_by_validation(select_naive)
    assert result.passed, result.message
    assert "agrees with refimpl" in result.message


def test_select_nan_wins():
    result = check_select_by_validation(select_argmax)
    assert not result.passed
    assert "NaN treated as the best value" in result.message


def test_select_last_tie():
    result = check_select_by_validation(select_last_tie)
    assert not result.passed
    assert "ties broken by a later setting" in result.message


def test_select_smallest():
    result = check_select_by_validation(select_min)
    assert not result.passed
    assert "smallest validation value" in result.message


def test_select_off_by_one():
    result = check_select_by_validation(select_one_based)
    assert not result.passed
    assert "off by one" in result.message


def test_select_failed_fit_kept():
    result = check_select_by_validation(select_keeps_failed)
    assert not result.passed
    assert "failed fit" in result.message


def select_nanargmax(values):
    """A plausible student answer: np.nanargmax, None when all are NaN."""
    vals = np.array([np.nan if v is None else v for v in values], float)
    if vals.size == 0 or np.all(np.isnan(vals)):
        return None
    return int(np.nanargmax(vals))


def test_select_all_nan_is_not_a_failure():
    result = check_select_by_validation(select_nanargmax)
    assert not result.passed
    assert "NaN is not a failure" in result.message


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


def test_cache_key_accepts_a_digest_of_sorted_json():
    result = check_cache_key(key_json)
    assert result.passed, result.message


def test_cache_key_ignores_data():
    result = check_cache_key(key_no_data)
    assert not result.passed
    assert "ignores the data's digest" in result.message


def test_cache_key_ignores_fixed_settings():
    result = check_cache_key(key_no_fixed)
    assert not result.passed
    assert "fixed settings" in result.message


def test_cache_key_depends_on_order():
    result = check_cache_key(key_unsorted)
    assert not result.passed
    assert "order of the entries" in result.message


@pytest.mark.parametrize("fn", [key_concat, key_concat_listed])
def test_cache_key_runs_fields_together(fn):
    result = check_cache_key(fn)
    assert not result.passed
    assert "without a separator" in result.message


def test_cache_key_python_hash():
    result = check_cache_key(key_builtin_hash)
    assert not result.passed
    assert "hash()" in result.message


@pytest.mark.parametrize("checker", [check_select_by_validation,
                                     check_cache_key])
def test_checkers_are_exported(checker):
    import refimpl.exercises as ex
    assert checker.__name__ in ex.__all__
