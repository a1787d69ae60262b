"""The runner's cache is keyed by what determines a result, and checked when read.

Issue 14: a cache keyed by (data set, fold, method, parameters, version) served
old results after the data files were rewritten, trusted hand-edited entries,
died on malformed ones without naming the file, and crashed after the fit when
an entry's path was a directory.  Also here: grid values and synthetic names
checked up front, and the worker processes ending with the runner on SIGTERM
and SIGINT.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from refimpl import _io, data
from refimpl.__main__ import main
from refimpl.exceptions import DataError
from refimpl.experiments import (METHODS, ExperimentConfig, folds, run, task_cache,
                                 validate_config)

REPO = Path(__file__).resolve().parents[1]


def write_fake(root, seed, labels_seed=None):
    """FAKE/Fold1/{train,vali,test}.txt from seeded synthetic data.

    ``labels_seed`` permutes the labels within each split: other data, same
    file sizes (labels are one digit each).
    """
    syn = data.make_synthetic_letor(n_queries=30, docs_per_query=(5, 12),
                                    n_informative=3, n_redundant=2, n_noise=5,
                                    seed=seed)
    fold_dir = root / "FAKE" / "Fold1"
    fold_dir.mkdir(parents=True, exist_ok=True)
    part = (syn.qid - 1) % 5
    for name, parts in (("train", (0, 1, 2)), ("vali", (3,)), ("test", (4,))):
        m = np.isin(part, parts)
        y = syn.y[m]
        if labels_seed is not None:
            y = np.random.default_rng(labels_seed).permutation(y)
        data.write_letor(fold_dir / f"{name}.txt", syn.X[m], y, syn.qid[m])
    return fold_dir


def cfg(root, out, **kw):
    base = {"dataset": "FAKE", "methods": ("ranksvm",), "folds": (1,),
            "reduced": True, "letor_home": str(root),
            "out": None if out is None else str(out), "backend": "sequential"}
    return ExperimentConfig(**{**base, **kw})


def metrics_of(result):
    return sorted((r["params"], r["test_MAP"], r["test_NDCG@10"], r["val_MeanNDCG"])
                  for r in result.tasks)


def entries(out):
    return sorted((Path(out) / "FAKE" / "cache").rglob("*-*.json"))


def cache_warnings(caught):
    return [str(w.message) for w in caught
            if issubclass(w.category, RuntimeWarning) and "cache entry" in str(w.message)]


@pytest.fixture
def fake(tmp_path):
    root = tmp_path / "letor"
    write_fake(root, seed=1)
    return root


# -- (a) the data determine the key ----------------------------------------


def test_changed_data_are_fitted_again_without_refit(fake, tmp_path):
    out = tmp_path / "out"
    first = run(cfg(fake, out))
    assert first.n_fitted == 2 and first.n_cached == 0
    again = run(cfg(fake, out))
    assert again.n_fitted == 0 and again.n_cached == 2
    write_fake(fake, seed=2)                  # other data under the same names
    changed = run(cfg(fake, out))
    assert changed.n_fitted == 2 and changed.n_cached == 0
    fresh = run(cfg(fake, None))              # no cache at all, new data
    assert metrics_of(changed) == metrics_of(fresh)
    assert metrics_of(changed) != metrics_of(first)
    # the tables' key column names the task, whatever its data
    assert [r["key"] for r in changed.tasks] == [r["key"] for r in first.tasks]
    info = json.loads((out / "FAKE" / "run.json").read_text())
    assert info["data_fingerprints"]["1"]["sha256"] != \
        first.info["data_fingerprints"]["1"]["sha256"]
    assert info["code_sha256"] == task_cache.code_hash()


def test_changed_data_on_the_command_line(fake, tmp_path, capsys):
    argv = ["run", "--dataset", "FAKE", "--letor-home", str(fake), "--methods",
            "ranksvm", "--reduced", "--folds", "1", "--out", str(tmp_path / "O")]
    assert main(argv) == 0
    assert main(argv) == 0
    assert "0 fitted, 2 from cache" in capsys.readouterr().out
    write_fake(fake, seed=2)
    assert main(argv) == 0
    assert "2 fitted, 0 from cache" in capsys.readouterr().out


def test_same_size_same_mtime_rewrite_changes_the_fingerprint(fake):
    """A rewrite that keeps size and mtime is still another fingerprint."""
    past = time.time_ns() - 100 * 10**9       # old enough to trust the memo
    files = sorted((fake / "FAKE" / "Fold1").glob("*.txt"))
    for f in files:
        os.utime(f, ns=(past, past))
    memo = {}
    before = task_cache.fingerprint("FAKE", 1, str(fake), memo)
    assert all(not task_cache.racy_entry(e) for e in memo.values())
    sizes = [f.stat().st_size for f in files]
    write_fake(fake, seed=1, labels_seed=3)   # same sizes, other labels
    for f in files:
        os.utime(f, ns=(past, past))
    assert [f.stat().st_size for f in files] == sizes
    assert [f.stat().st_mtime_ns for f in files] == [past] * 3
    after = task_cache.fingerprint("FAKE", 1, str(fake), memo)
    assert after["digest"] != before["digest"]


def test_fingerprint_memo_spares_rehashing(fake, tmp_path, monkeypatch):
    past = time.time_ns() - 100 * 10**9
    for f in (fake / "FAKE" / "Fold1").glob("*.txt"):
        os.utime(f, ns=(past, past))
    hashed = []
    real = _io.file_hash
    monkeypatch.setattr(_io, "file_hash", lambda p, *a: hashed.append(p) or real(p, *a))
    monkeypatch.setattr(task_cache, "FILE_MEMO", {})
    out = tmp_path / "out"
    run(cfg(fake, out))
    assert len(hashed) == 3                   # train, vali, test
    memo_file = out / "FAKE" / "cache" / "fingerprints.json"
    assert memo_file.is_file()
    monkeypatch.setattr(task_cache, "FILE_MEMO", {})   # a new process: the file only
    second = run(cfg(fake, out))
    assert len(hashed) == 3 and second.n_cached == 2
    # a damaged memo is reported and the files hashed again, with the same result
    stored = json.loads(memo_file.read_text())
    first_path = next(iter(stored["files"]))
    stored["files"][first_path]["sha256"] = "0" * 64
    memo_file.write_text(json.dumps(stored))
    monkeypatch.setattr(task_cache, "FILE_MEMO", {})
    with pytest.warns(RuntimeWarning, match="fingerprint memo .* not valid"):
        third = run(cfg(fake, out))
    assert len(hashed) == 6 and third.n_cached == 2


def test_a_task_refuses_files_changed_after_planning(fake):
    fp = task_cache.fingerprint("FAKE", 1, str(fake), {})
    stale = tuple((p, (sig[0] + 1, *sig[1:])) for p, sig in fp["files"])
    with pytest.raises(DataError, match="changed since the run started"):
        folds.load_checked("FAKE", 1, str(fake), fp["digest"], stale)


# -- (b), (c) entries are checked when read --------------------------------


def _edit_metric(entry):
    entry["row"]["test_MAP"] = 0.999


def test_hand_edited_entry_is_detected_and_refitted(fake, tmp_path):
    out = tmp_path / "out"
    first = run(cfg(fake, out))
    path = entries(out)[0]
    entry = json.loads(path.read_text())
    _edit_metric(entry)                       # valid JSON, schema-valid
    path.write_text(json.dumps(entry))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = run(cfg(fake, out))
    messages = cache_warnings(caught)
    assert len(messages) == 1 and str(path) in messages[0]
    assert "checksum" in messages[0]
    assert again.n_fitted == 1 and again.n_cached == 1
    assert metrics_of(again) == metrics_of(first)
    assert 0.999 not in [r["test_MAP"] for r in again.tasks]
    assert run(cfg(fake, out)).n_cached == 2          # rewritten valid


def _drop(name):
    def edit(entry):
        del entry[name]
    return edit


def _set_row(name, value):
    def edit(entry):
        entry["row"][name] = value
    return edit


def _with_checksum(edit):
    def both(entry):
        edit(entry)
        entry["checksum"] = task_cache.checksum(entry)
    return both


def _per_query_short(entry):
    entry["per_query"]["AP"] = entry["per_query"]["AP"][:-1]


def _row_as_list(entry):
    entry["row"] = list(entry["row"].items())


BAD_ENTRIES = {
    "missing row": (_with_checksum(_drop("row")), "'row' is missing"),
    "missing key": (_drop("key"), "'key' is missing"),
    "fold is a string": (_with_checksum(_set_row("fold", "1")), "'fold'"),
    "metric is a string": (_with_checksum(_set_row("test_MAP", "0.5")), "'test_MAP'"),
    "metric out of range": (_with_checksum(_set_row("test_MAP", 1.5)), "'test_MAP'"),
    "infinite time": (_with_checksum(_set_row("fit_time", float("inf"))), "'fit_time'"),
    "row is a list": (_with_checksum(_row_as_list), "'row' is a list"),
    "per-query lengths differ": (_with_checksum(_per_query_short), "'AP'"),
    "other task's entry": (_with_checksum(_set_row("params", '{"C": 7.0}')),
                           "'params'"),
    "another key": (_with_checksum(lambda e: e.__setitem__("key", "0" * 64)),
                    "key is not this task's"),
    "older schema": (_with_checksum(lambda e: e.__setitem__("schema", 1)),
                     "schema 1 is not the current"),
}


@pytest.mark.parametrize("case", sorted(BAD_ENTRIES))
def test_malformed_entry_is_reported_with_its_path_and_refitted(fake, tmp_path, case):
    edit, reason = BAD_ENTRIES[case]
    out = tmp_path / "out"
    first = run(cfg(fake, out))
    path = entries(out)[0]
    entry = json.loads(path.read_text())
    edit(entry)
    path.write_text(json.dumps(entry))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = run(cfg(fake, out))
    messages = cache_warnings(caught)
    assert len(messages) == 1, messages
    assert str(path) in messages[0] and reason in messages[0]
    assert again.n_fitted == 1 and again.n_cached == 1 and again.n_failed == 0
    assert metrics_of(again) == metrics_of(first)


@pytest.mark.parametrize("content", [
    "", "{", "[1, 2]", "null", "\x00\xff garbage", '{"schema": 2}',
])
def test_unreadable_or_non_object_entry_is_refitted(fake, tmp_path, content):
    out = tmp_path / "out"
    first = run(cfg(fake, out))
    path = entries(out)[0]
    path.write_bytes(content.encode("latin-1"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = run(cfg(fake, out))
    messages = cache_warnings(caught)
    assert len(messages) == 1 and str(path) in messages[0]
    assert again.n_fitted == 1 and metrics_of(again) == metrics_of(first)


# -- (d) writes: a directory in the way, no temporary file left -------------


def test_cache_path_that_is_a_directory(fake, tmp_path):
    out = tmp_path / "out"
    first = run(cfg(fake, out))
    path = entries(out)[0]
    path.unlink()
    path.mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = run(cfg(fake, out))
    messages = [str(w.message) for w in caught if str(path) in str(w.message)]
    assert any("is a directory" in m for m in messages)
    assert any("cannot write cache entry" in m for m in messages)
    assert again.n_fitted == 1 and again.n_failed == 0
    assert metrics_of(again) == metrics_of(first)
    assert (out / "FAKE" / "tasks.csv").is_file()
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_failed_write_leaves_no_temporary_file(fake, tmp_path, monkeypatch, error):
    out = tmp_path / "out"
    real_replace = os.replace

    def fail(src, dst):
        # only the runner's cache entries fail, not the loader's own cache
        if Path(dst).parent.parent == out / "FAKE" / "cache":
            raise error
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", fail)
    if isinstance(error, OSError):
        with pytest.warns(RuntimeWarning, match="cannot write"):
            result = run(cfg(fake, out))
        assert result.n_fitted == 2 and result.n_failed == 0
    else:
        with pytest.raises(KeyboardInterrupt):
            run(cfg(fake, out))
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]
    assert entries(out) == []


# -- (g) the code (and the libraries) determine the key --------------------


def test_code_hash_is_part_of_the_key(fake, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert run(cfg(fake, out)).n_fitted == 2
    assert run(cfg(fake, out)).n_cached == 2
    monkeypatch.setattr(task_cache, "code_hash", lambda: "f" * 64)
    changed = run(cfg(fake, out))
    assert changed.n_fitted == 2 and changed.n_cached == 0
    assert run(cfg(fake, out)).n_cached == 2
    monkeypatch.setattr(task_cache, "library_versions", lambda: {"numpy": "0.0"})
    assert run(cfg(fake, out)).n_fitted == 2


def test_code_hash_covers_the_package_source():
    h = task_cache.code_hash()
    assert len(h) == 64 and int(h, 16) >= 0
    assert h == task_cache.code_hash()


def test_code_hash_skips_what_computes_no_result():
    """Editing an exercise checker or the report keeps the cached fits."""
    package = Path(task_cache.__file__).resolve().parents[1]
    rels = task_cache.hashed_sources(package)
    assert "experiments/runner.py" in rels and "solvers/tron.py" in rels
    assert not [r for r in rels if r.startswith("exercises/")]
    assert "experiments/report.py" not in rels


@pytest.mark.parametrize("dataset", ["MQ2008", "OHSUMED"])
def test_committed_table_keys_are_unchanged(dataset):
    """The key column still identifies the tasks of each committed full run."""
    path = REPO / "results" / dataset / "tasks.csv"
    if not path.is_file():
        pytest.skip(f"no committed {dataset} tables")
    import csv

    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["method"] in METHODS]
    assert rows
    for r in rows:
        assert task_cache.task_key(dataset, int(r["fold"]), METHODS[r["method"]],
                                json.loads(r["params"])) == r["key"]


# -- (e) bad configuration values, up front --------------------------------


@pytest.mark.parametrize(("grid", "match"), [
    ("ranksvm:C=-1", r"parameter 'C': -1 is not accepted; accepted: a float in the range \(0\.0, inf\)"),
    ("ranksvm:C=0", r"parameter 'C': 0 is not accepted"),
    ("ranksvm:C=abc", r"parameter 'C': 'abc' is not accepted; accepted: a float"),
    ("ranksvm:C=nan", r"parameter 'C': nan is not accepted"),
    ("ranksvm:C=inf", r"parameter 'C': inf is not accepted"),
    ("ranksvm:C=-Infinity", r"parameter 'C': -inf is not accepted"),
    ("ranksvm:C=1e400", r"parameter 'C': inf is not accepted"),
    ("ranksvm:C=true", r"parameter 'C': True is not accepted"),
    ("ranksvm:C=[1]", r"parameter 'C': \[1\] is not accepted"),
    ("ranksvm:C=1,,2", r"empty value"),
    ("ranksvm:C=", r"empty value"),
    ("ranksvm:C=1,1", r"lists 1 twice for parameter 'C'"),
    ("ranksvm:tol=-1e-3", r"parameter 'tol'"),
    ("gas-e:n_features_to_select=10.5",
     r"'n_features_to_select': 10.5 is not accepted; accepted: an int in the range \[1, inf\)"),
    ("gas-e:n_features_to_select=0", r"an int in the range \[1, inf\)"),
    ("ranksvm-lp:p=1", r"parameter 'p': 1 is not accepted; accepted: a float in the range \(0\.0, 1\.0\)"),
    ("ranksvm-l1:penalty=l3", r"'l3' is not accepted; accepted: a str among \{.*'log'"),
    ("fenchelrank:max_iter=1.5", r"'max_iter'"),
])
def test_bad_grid_values_are_rejected_up_front(tmp_path, capsys, grid, match):
    method = grid.split(":")[0]
    argv = ["run", "--dataset", "synthetic:20", "--methods", method, "--folds", "1",
            "--grid", grid, "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err
    assert not any(tmp_path.iterdir())


def test_grid_parameter_given_twice(capsys):
    argv = ["run", "--dataset", "synthetic:20", "--methods", "ranksvm", "--folds", "1",
            "--grid", "ranksvm:C=1", "--grid", "ranksvm:C=2"]
    assert main(argv) == 2
    assert "gives ranksvm:C twice" in capsys.readouterr().err


@pytest.mark.parametrize("values", [[float("nan")], [float("inf")], [-1.0], ["1"]])
def test_validate_config_checks_values(values):
    with pytest.raises(DataError, match=r"parameter 'C'.*accepted: a float in the range \(0\.0, inf\)"):
        validate_config(ExperimentConfig(dataset="synthetic:20", methods=("ranksvm",),
                                         grids={"ranksvm": {"C": values}}))


@pytest.mark.parametrize("name", ["synthetic:abc", "synthetic:", "synthetic:10:x",
                                  "synthetic:10:1:2", "synthetic::3", "synthetic:1e3",
                                  "synthetic:10\n"])
def test_bad_synthetic_names_are_explained(name, capsys):
    with pytest.raises(DataError, match=r"synthetic\[:QUERIES\[:SEED\]\]"):
        validate_config(ExperimentConfig(dataset=name, methods=("ranksvm",)))
    assert main(["run", "--dataset", name, "--methods", "ranksvm"]) == 2
    err = capsys.readouterr().err
    assert "synthetic[:QUERIES[:SEED]]" in err and "not found" not in err


def test_good_synthetic_names_still_work():
    for name in ("synthetic", "synthetic:20", "synthetic:20:3"):
        validate_config(ExperimentConfig(dataset=name, methods=("ranksvm",)))


def test_every_registered_parameter_is_declared_and_accepted():
    for method in METHODS.values():
        assert set(method.grid) | set(method.fixed) <= set(method.constraints), method.name
        for param, values in method.grid.items():
            for v in [*values, *([method.fixed[param]] if param in method.fixed else [])]:
                assert method.refused(param, v) is None, (method.name, param, v)


def test_refused_values_are_what_fit_refuses():
    """The runner's check is the estimator's: scikit-learn's validation of
    its ``_parameter_constraints``."""
    ranksvm, gas = METHODS["ranksvm"], METHODS["gas-e"]
    for good in (1, 1e-300, np.float32(2)):
        assert ranksvm.refused("C", good) is None
    for bad in (0, -1.0, float("nan"), float("inf"), True, "1", None, [1]):
        assert ranksvm.refused("C", bad) == "a float in the range (0.0, inf)"
    assert gas.refused("n_features_to_select", np.int64(5)) is None
    for bad in (0, 2.0, False):
        assert gas.refused("n_features_to_select", bad) is not None


# -- (f) worker processes end with the runner --------------------------------


def _group_alive(pgid):
    """Processes of a process group that are still running (zombies excluded)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # fields after the command name, which is in parentheses
        fields = stat[stat.rindex(")") + 2:].split()
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            alive.append(int(entry.name))
    return alive


def _loky_workers(pid):
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == pid and b"LokyProcess" in cmd:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_signal_ends_the_worker_processes(tmp_path, sig):
    """SIGTERM and SIGINT: the runner stops its workers; SIGKILL (issue 34):
    each worker sees its parent gone and ends (it was alive 120 s later)."""
    # many slow tasks, so that the signal arrives while workers are busy
    args = ["run", "--dataset", "synthetic:1500", "--methods", "ranksvm-log",
            "--folds", "1-5", "--n-jobs", "2", "--out", str(tmp_path / "out"),
            "--quiet"]
    # SIGINT raises KeyboardInterrupt even where a shell started the tests as
    # a background job (SIGINT ignored, which children inherit)
    code = ("import runpy, signal, sys; "
            "signal.signal(signal.SIGINT, signal.default_int_handler); "
            f"sys.argv = ['refimpl'] + {args!r}; "
            "runpy.run_module('refimpl', run_name='__main__', alter_sys=True)")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1"}
    log_path = tmp_path / "log.txt"
    with open(log_path, "w") as log:
        # a new process group holds the runner and everything it starts
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT,
                                process_group=0)
    try:
        deadline = time.monotonic() + 180
        while len(_loky_workers(proc.pid)) < 2:
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "no workers started in 180 s"
            time.sleep(0.2)
        time.sleep(1.0)                      # tasks are running
        assert proc.poll() is None, "the run ended before the signal"
        proc.send_signal(sig)
        status = proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _group_alive(proc.pid) == [], "worker processes outlived the runner"
        if sig == signal.SIGKILL:
            # nothing ran in the runner; a write it was doing may leave a
            # .tmp file, which the next run removes (test_runner_hostile.py)
            assert status == -signal.SIGKILL
            return
        # SIGTERM: the default action's status; SIGINT: the shell's 128 + 2
        assert status == (143 if sig == signal.SIGTERM else 130), log_path.read_text()
        assert not [p for p in (tmp_path / "out").rglob("*") if ".tmp" in p.name]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        try:
            os.killpg(proc.pid, signal.SIGKILL)      # only the group this test made
        except ProcessLookupError:
            pass
