"""Issue 24, items 6-8: the package's own JSON files never crash a reader.

Every manifest and cache file is read against a schema
(:mod:`refimpl._jsonfile`); a malformed one is a warning naming the file and
a rebuild, or a ``DataError`` with a remedy where nothing can be rebuilt.
Regression tests for the two crashes found (a manifest that is not JSON, a
parse-cache metadata file holding a list), then hypothesis fuzzing of each
file kind: wrong types, missing and extra keys, huge numbers, truncation,
nesting deeper than the recursion limit.  Item 8 (RankSVM's warning states the
gradient norm it names) is at the end.
"""

import dataclasses
import hashlib
import json
import re
import shutil
import types
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refimpl import _digest_memo, _io
from refimpl import _jsonfile as js
from refimpl.data import load_letor, make_synthetic_letor, write_letor
from refimpl.datasets import MANIFEST, REGISTRY, fetch_letor, prepare_letor
from refimpl.estimators import RankSVM
from refimpl.exceptions import DataError, EmptyModelWarning
from refimpl.experiments import snapshots, tables, task_cache
from test_datasets import PARTS, isolated_env, make_zip, mq_rar_content  # noqa: F401

# --------------------------------------------------------------------------
# Fixtures: one file of each kind, valid
# --------------------------------------------------------------------------


@pytest.fixture
def fetched(monkeypatch, tmp_path):
    """A prepared MQ2008 (from a small zip) and its data home."""
    row = dataclasses.replace(
        REGISTRY["MQ2008"], urls=(),
        files=tuple((f"S{k}.txt", hashlib.sha256(v).hexdigest())
                    for k, v in PARTS.items()),
    )
    monkeypatch.setitem(REGISTRY, "MQ2008", row)
    archive = tmp_path / "MQ2008.zip"
    archive.write_bytes(make_zip(mq_rar_content()))
    home = tmp_path / "home"
    path = prepare_letor("MQ2008", archive, data_home=home)
    return home, path


@pytest.fixture
def cached(tmp_path):
    """A LETOR file with its parse cache, and the parsed arrays."""
    d = make_synthetic_letor(4, docs_per_query=(2, 5), seed=0)
    path = write_letor(tmp_path / "a.txt", d.X, d.y, d.qid)
    load_letor(path)
    return path, d


def meta_path(path):
    real = path.resolve()
    key = hashlib.sha256(str(real).encode()).hexdigest()[:16]
    return path.parent / ".refimpl_cache" / f"{key}-{real.name}.float64.json"


# --------------------------------------------------------------------------
# Items 6 and 7: regression tests
# --------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["{not json", "", '{"files": {"a": 1}}', "[1, 2]"])
def test_6_a_damaged_manifest_is_a_data_error_with_a_remedy(fetched, content):
    home, path = fetched
    (path / MANIFEST).write_text(content)
    with pytest.raises(DataError) as info:
        fetch_letor("MQ2008", data_home=home, download=False)
    message = str(info.value)
    assert MANIFEST in message and "damaged" in message
    assert f"delete {path} and fetch it again" in message


def test_7_cache_metadata_of_the_wrong_shape_is_rebuilt(cached):
    path, d = cached
    meta_path(path).write_text("[1, 2, 3]")
    with pytest.warns(RuntimeWarning) as record:
        X, y, qid = load_letor(path)
    np.testing.assert_array_equal(X, d.X)
    assert any(str(meta_path(path)) in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rebuilt: the next load is clean
        np.testing.assert_array_equal(load_letor(path)[0], d.X)
    assert isinstance(json.loads(meta_path(path).read_text()), dict)


def test_read_json_names_the_file_and_the_problem(tmp_path):
    p = tmp_path / "f.json"
    p.write_text('{"size": "12"}')
    schema = js.record({"size": js.integer(0)})
    with pytest.raises(js.MalformedFileError, match=r"f\.json: field 'size' is a "
                       r"string, not an integer"):
        js.read_json(p, schema)
    p.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(js.MalformedFileError, match="RecursionError"):
        js.read_json(p)
    p.write_text("1" * 5000)
    with pytest.raises(js.MalformedFileError, match="not valid JSON"):
        js.read_json(p)
    with pytest.raises(FileNotFoundError):
        js.read_json(tmp_path / "absent.json")


# --------------------------------------------------------------------------
# Fuzzing: a valid file, then one damage
# --------------------------------------------------------------------------

_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
    st.sampled_from([2**63, -1, 0, 10**20, 1e308, "0" * 64]),
)
_json = st.recursive(
    _leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(
        st.text(max_size=5), c, max_size=3), max_leaves=5)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    if not path:
        return value
    obj = json.loads(json.dumps(obj))
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    if value is _DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return obj


_DROP = object()


@st.composite
def damaged(draw, valid):
    """The text of ``valid`` after one damage drawn by hypothesis."""
    text = json.dumps(valid)
    op = draw(st.sampled_from(["set", "drop", "extra", "truncate", "replace",
                               "huge", "deep"]))
    paths = list(_paths(valid))
    if op == "truncate":
        return text[: draw(st.integers(0, 10**6)) % max(len(text), 1)]
    if op == "replace":
        return json.dumps(draw(_json))
    if op == "deep":
        return "[" * 50_000 + "]" * 50_000
    path = draw(st.sampled_from(paths))
    if op == "huge":
        marker = "__HUGE__"
        return json.dumps(_set(valid, path, marker)).replace(
            f'"{marker}"', "9" * 5000)
    if op == "drop":
        if not path:
            return "{}"
        return json.dumps(_set(valid, path, _DROP))
    if op == "extra":
        parents = [p for p in paths if isinstance(_get(valid, p), dict)]
        where = draw(st.sampled_from(parents))
        return json.dumps(_set(valid, where + (draw(st.text(max_size=5)),),
                               draw(_json)))
    return json.dumps(_set(valid, path, draw(_json)))


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


_PRISTINE = {}
_fuzz = settings(max_examples=40, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


@_fuzz
@given(data=st.data())
def test_fuzzed_manifest_is_accepted_or_a_data_error(fetched, data):
    home, path = fetched
    manifest = path / MANIFEST
    # the fixture lives across examples: keep the pristine manifest aside
    if str(manifest) not in _PRISTINE:
        _PRISTINE[str(manifest)] = json.loads(manifest.read_text())
    valid = _PRISTINE[str(manifest)]
    manifest.write_text(data.draw(damaged(valid)))
    try:
        assert fetch_letor("MQ2008", data_home=home, download=False) == path
    except DataError as exc:
        assert MANIFEST in str(exc) or str(path) in str(exc)


@_fuzz
@given(data=st.data())
def test_fuzzed_cache_metadata_is_used_or_rebuilt(cached, data):
    path, d = cached
    shutil.rmtree(meta_path(path).parent)
    load_letor(path)  # a fresh valid cache to damage, the same keys each time
    valid = json.loads(meta_path(path).read_text())
    meta_path(path).write_text(data.draw(damaged(valid)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, y, qid = load_letor(path)
    np.testing.assert_array_equal(X, d.X)
    np.testing.assert_array_equal(qid, d.qid)
    for w in caught:
        assert str(meta_path(path)) in str(w.message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(load_letor(path)[1], d.y)


_MEMO = {"format": 1, "files": {"/data/a.txt": {
    "stat": [10, 1, 2, 3], "sha256": "0" * 64, "hashed_ns": 5 * 10**9}}}
_MEMO["checksum"] = _io.json_sha256(_MEMO["files"])


@_fuzz
@given(data=st.data())
def test_fuzzed_fingerprint_memo_never_crashes(tmp_path, data):
    path = tmp_path / "fingerprints.json"
    path.write_text(data.draw(damaged(_MEMO)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        files = _digest_memo.load_digest_memo(path)
    assert isinstance(files, dict)
    assert files in ({}, _MEMO["files"])
    assert all(str(path) in str(w.message) for w in caught)


_TASK = types.SimpleNamespace(
    cache_key="k" * 64, key="t" * 16, dataset="FAKE", fold=1, params={"C": 1.0},
    method=types.SimpleNamespace(name="ranksvm"))
_ENTRY = {"schema": task_cache.CACHE_SCHEMA, "key": _TASK.cache_key,
          "task_key": _TASK.key, "row": {"dataset": "FAKE", "fold": 1},
          "per_query": {"qid": [1], "AP": [0.5]}, "checksum": "0" * 64}


@_fuzz
@given(data=st.data())
def test_fuzzed_runner_cache_entry_never_crashes(tmp_path, data):
    path = tmp_path / "1-abc.json"
    path.write_text(data.draw(damaged(_ENTRY)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert task_cache.cache_load(path, _TASK) is None
    assert len(caught) == 1 and str(path) in str(caught[0].message)


_RUN = {"dataset": "FAKE", "history": [{"started_utc": "x", "n_fitted": 1}],
        "config": {"methods": ["ranksvm"], "n_jobs": 1, "backend": "sequential"}}


@_fuzz
@given(data=st.data())
def test_fuzzed_run_json_never_crashes(tmp_path, data):
    path = tmp_path / "run.json"
    path.write_text(data.draw(damaged(_RUN)))
    info = {"dataset": "FAKE", "n_fitted": 0, "config": _RUN["config"],
            **{k: 0 for k in tables.HISTORY_KEYS}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        past = tables.history(path, info)
    assert isinstance(past, list)
    assert all(str(path) in str(w.message) for w in caught)


_SNAP = {"provenance": {"name": "s", "dataset": "MQ2008", "computed_utc": "2026",
                        "refimpl": "0.1", "tolerance": 1e-9},
         "values": {"a": 1.5, "b": [1, 2]}}


@_fuzz
@given(data=st.data())
def test_fuzzed_snapshot_is_shown_or_a_data_error(tmp_path, data):
    path = tmp_path / "s.json"
    path.write_text(data.draw(damaged(_SNAP)))
    try:
        snap = snapshots.committed_snapshot("s", directory=tmp_path, out=lambda s: None)
    except DataError as exc:
        assert "s.json" in str(exc) and "git checkout" in str(exc)
    else:
        assert isinstance(snap.values, dict)


def test_a_damaged_snapshot_is_rewritten_when_live(letor_root, tmp_path):
    (tmp_path / "s.json").write_text('{"provenance": []}')
    with pytest.warns(RuntimeWarning, match=r"s\.json is damaged .* rewritten"):
        snap = snapshots.snapshot("s", lambda: {"a": 1.0}, directory=tmp_path,
                                  root=letor_root, out=lambda s: None)
    assert snap.live and json.loads((tmp_path / "s.json").read_text())["values"] == {
        "a": 1.0}


# --------------------------------------------------------------------------
# Item 8: RankSVM's empty-model warning prints ||grad f(0)||
# --------------------------------------------------------------------------


def _grad_norm_at_zero(X, y, qid, C):
    """2 C ||sum over pairs (i above j, same query) of x_i - x_j||, by brute force."""
    total = np.zeros(X.shape[1])
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        for i in idx:
            for j in idx:
                if y[i] > y[j]:
                    total += X[i] - X[j]
    return 2 * C * np.linalg.norm(total)


@pytest.mark.parametrize("backend", ["pairs", "numpy", "tree"])
@pytest.mark.parametrize("C", [1.0, 0.25])
def test_8_the_warning_prints_the_gradient_norm_it_names(backend, C):
    d = make_synthetic_letor(8, docs_per_query=(4, 9), seed=0)
    X = d.X * 1e-10
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        RankSVM(C=C, backend=backend).fit(X, d.y, d.qid)
    (w,) = [w for w in caught if issubclass(w.category, EmptyModelWarning)]
    printed = float(re.search(r"\|\|grad f\(0\)\|\| = ([^,]+),", str(w.message))[1])
    assert printed == pytest.approx(_grad_norm_at_zero(X, d.y, d.qid, C), rel=1e-5)
