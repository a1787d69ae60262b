"""The runner and its command line against hostile names, files and kills.

Issue 34: ``--dataset ..`` wrote outside ``--out`` (``.`` into it); a FIFO at
a cache entry, the fingerprint memo or ``run.json`` hung the run for good;
an unwritable ``--out`` was found only after every fit, each cache write
warning that the result was "in this run's tables" before the run died
without a table; ``load_results`` read ``run.json`` with a bare
``json.load``; an unreachable dask scheduler was a raw ``OSError``;
``--folds 1-100000000`` built a list of 10**8 folds; loky workers outlived a
SIGKILLed runner for minutes (tested with SIGTERM and SIGINT in
test_runner_cache.py); a write killed mid-way left its ``.tmp`` file for
good.  A command that can hang runs in a subprocess with a timeout: a
hang is a failure, not a stuck test session.
"""

import os
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from refimpl import _io, data
from refimpl.__main__ import main
from refimpl.exceptions import DataError
from refimpl.experiments import ExperimentConfig, load_results, run, validate_config
from refimpl.experiments.config import parse_folds
from test_runner import counting  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
       "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
# generous: the first import compiles numba code; a hang is what it catches
TIMEOUT_S = 240


def write_letor_set(folder, seed=3):
    """``folder/S1..S5.txt``: a small seeded LETOR 4.0 data set."""
    syn = data.make_synthetic_letor(n_queries=25, docs_per_query=(4, 9),
                                    n_informative=3, n_redundant=1, n_noise=2,
                                    seed=seed)
    folder.mkdir(parents=True, exist_ok=True)
    part = (syn.qid - 1) % 5
    for p in range(5):
        m = part == p
        data.write_letor(folder / f"S{p + 1}.txt", syn.X[m], syn.y[m], syn.qid[m])
    return folder


@pytest.fixture
def letor(tmp_path):
    root = tmp_path / "letor"
    write_letor_set(root / "TINY")
    return root


def cli(*args, timeout=TIMEOUT_S):
    """``python -m refimpl ...`` in a subprocess; a hang fails the test."""
    try:
        return subprocess.run([sys.executable, "-m", "refimpl", *args], cwd=REPO,
                              env=ENV, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"python -m refimpl {' '.join(args)} hung for {timeout} s")


def written(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# -- finding 3: a data-set name cannot climb out of --out -------------------


@pytest.mark.parametrize("name", ["..", ".", "../TINY", "TINY/..", "a/b", "/abs",
                                  ".hidden", "a..b", "TINY\n", "-x", "~"])
def test_dataset_names_that_climb_are_refused(letor, name):
    config = ExperimentConfig(dataset=name, methods=("linreg",), folds=(1,),
                              letor_home=str(letor), out="out")
    with pytest.raises(DataError, match=r"^dataset .* is not a data set name"):
        validate_config(config)
    with pytest.raises(DataError, match=r"^dataset .* is not a data set name"):
        run(config)


@pytest.mark.parametrize(("name", "home"), [("..", "D/L"), (".", "D")])
def test_cli_dataset_dot_dot_writes_nothing(tmp_path, capsys, counting, name, home):
    # the data set's files where the name leads from the LETOR root: what
    # the run read and wrote beside --out before
    write_letor_set(tmp_path / "D")
    (tmp_path / home).mkdir(parents=True, exist_ok=True)
    out = tmp_path / "out" / "inner"
    status = main(["run", "--letor-home", str(tmp_path / home), "--dataset", name,
                   "--methods", "counting", "--folds", "1", "--out", str(out),
                   "--quiet"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"error: dataset {name!r} is not a data set name")
    assert counting.fits == 0
    assert not (tmp_path / "out").exists()


def test_names_that_do_not_climb_still_run(letor, tmp_path):
    for name in ("TINY", "MQ2008", "MSLR-WEB10K", "OHSUMED_v2.1"):
        if not (letor / name).exists():
            write_letor_set(letor / name)
        result = run(ExperimentConfig(dataset=name, methods=("linreg",),
                                      folds=(1,), letor_home=str(letor),
                                      out=str(tmp_path / "out"),
                                      backend="sequential"))
        assert result.out_dir == tmp_path / "out" / name
        assert (tmp_path / "out" / name / "tasks.csv").is_file()


# -- finding 4: a FIFO where a file belongs is reported, never a hang -------


def _first_run(letor, out):
    return run(ExperimentConfig(dataset="TINY", methods=("linreg",), folds=(1,),
                                letor_home=str(letor), out=str(out),
                                backend="sequential"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("where", ["entry", "cache/fingerprints.json", "run.json",
                                   "tasks.csv"])
def test_fifo_in_the_results_is_replaced_not_waited_on(letor, tmp_path, where):
    out = tmp_path / "out"
    first = _first_run(letor, out)
    base = out / "TINY"
    fifo = (next((base / "cache" / "linreg").glob("1-*.json")) if where == "entry"
            else base / where)
    fifo.unlink()
    os.mkfifo(fifo)
    done = cli("run", "--letor-home", str(letor), "--dataset", "TINY",
               "--methods", "linreg", "--folds", "1", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    # a warning names the file and what it is, where the file is read
    if where != "tasks.csv":
        assert f"{fifo} is a FIFO" in done.stderr
    assert fifo.is_file()                                   # replaced
    tables = load_results(base)
    assert [r["test_MAP"] for r in tables["tasks"]] == pytest.approx(
        [r["test_MAP"] for r in first.tasks], rel=1e-9)
    assert tables["run"]["n_fitted"] == (1 if where == "entry" else 0)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("where", ["run.json", "tasks.csv"])
def test_load_results_refuses_a_fifo(letor, tmp_path, where):
    out = tmp_path / "out"
    _first_run(letor, out)
    (out / "TINY" / where).unlink()
    os.mkfifo(out / "TINY" / where)
    code = ("import sys\n"
            "from refimpl.experiments import load_results\n"
            "from refimpl.exceptions import DataError\n"
            "try:\n"
            f"    load_results({str(out / 'TINY')!r})\n"
            "except DataError as err:\n"
            "    print('DataError:', err)\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=ENV,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"load_results hung on a FIFO at {where}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("DataError:")
    assert f"{out / 'TINY' / where} is a FIFO" in done.stdout


# -- finding 6: an unwritable --out is an error before the first fit --------


def _unwritable(tmp_path, kind):
    if kind == "a regular file":
        (tmp_path / "file").write_text("x")
        return str(tmp_path / "file")
    if kind == "the cache is a file":
        (tmp_path / "out" / "TINY").mkdir(parents=True)
        (tmp_path / "out" / "TINY" / "cache").write_text("x")
        return str(tmp_path / "out")
    if kind == "a method's cache is a file":
        (tmp_path / "out" / "TINY" / "cache").mkdir(parents=True)
        (tmp_path / "out" / "TINY" / "cache" / "counting").write_text("x")
        return str(tmp_path / "out")
    return kind


@pytest.mark.parametrize("kind", ["/dev/null", "a regular file", "/proc/x",
                                  "the cache is a file",
                                  "a method's cache is a file"])
def test_unwritable_out_fails_before_any_fit(letor, tmp_path, capsys, counting,
                                             kind):
    if kind.startswith(("/dev", "/proc")) and not Path(kind).parent.is_dir():
        pytest.skip(f"no {Path(kind).parent} here")
    out = _unwritable(tmp_path, kind)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = main(["run", "--letor-home", str(letor), "--dataset", "TINY",
                       "--methods", "counting", "--folds", "1", "--out", out,
                       "--quiet"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert counting.fits == 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: out (--out) {out!r}: "
                                                   "cannot write into ")
    assert not [w for w in caught if "cache" in str(w.message)]
    assert not list(tmp_path.rglob("*.tmp"))


def test_empty_out_is_refused(letor, tmp_path, capsys, counting, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(["run", "--letor-home", str(letor), "--dataset", "TINY",
                   "--methods", "counting", "--folds", "1", "--out", "", "--quiet"])
    assert status == 2
    assert "error: out (--out) must be a folder" in capsys.readouterr().err
    assert counting.fits == 0 and not (tmp_path / "TINY").exists()
    with pytest.raises(DataError, match="out"):
        validate_config(ExperimentConfig(dataset="TINY", methods=("counting",),
                                         folds=(1,), letor_home=str(letor), out=""))


def test_failed_cache_write_says_what_is_true(letor, tmp_path, monkeypatch):
    """A cache write that fails mid-run (after the folders checked out) says
    the result is not cached, and the tables are still written."""
    out = tmp_path / "out"
    real_replace = os.replace

    def fail(src, dst):
        if Path(dst).parent == out / "TINY" / "cache" / "linreg":
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", fail)
    with pytest.warns(RuntimeWarning, match="kept for this run but not cached"):
        result = _first_run(letor, out)
    assert result.n_fitted == 1
    assert load_results(out / "TINY")["tasks"][0]["key"] == result.tasks[0]["key"]


# -- finding 9: run.json read against a schema; an unreachable scheduler ----


@pytest.mark.parametrize(("content", "match"), [
    ("[1, 2]", "is a list, not an object"),
    ("{", "is not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "is not valid JSON"),
    ('{"config": {}}', "field 'dataset' is missing"),
    ("\xff", "is not valid JSON"),
])
def test_load_results_refuses_a_malformed_run_json(letor, tmp_path, content, match):
    out = tmp_path / "out"
    _first_run(letor, out)
    path = out / "TINY" / "run.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(DataError, match=match) as info:
        load_results(out / "TINY")
    assert str(path) in str(info.value)


def test_load_results_without_run_json(tmp_path):
    with pytest.raises(DataError, match="holds no run.json"):
        load_results(tmp_path)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:{port}", "nonsense://x"])
def test_unreachable_scheduler_is_named(letor, capsys, counting, address):
    pytest.importorskip("distributed")
    import dask

    address = address.format(port=_free_port())
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        status = main(["run", "--letor-home", str(letor), "--dataset", "TINY",
                       "--methods", "counting", "--folds", "1", "--backend",
                       "dask", "--scheduler", address, "--quiet"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"error: --scheduler {address!r}: cannot connect")
    assert counting.fits == 0


# -- finding 10: folds bounded before expanding; workers; leftovers ---------


# (1-100000000 only under a memory limit, below: code that expands it first
# takes gigabytes)
@pytest.mark.parametrize("text", ["1-6", "0-3", "6", "1,7", "2-" + "9" * 5000,
                                  "0" * 3 + "6"])
def test_fold_numbers_are_bounded_before_a_range_is_expanded(text):
    with pytest.raises(DataError, match=r"folds must be integers 1\.\.5"):
        parse_folds(text)


def test_folds_still_parse():
    assert parse_folds("1-5") == (1, 2, 3, 4, 5)
    assert parse_folds("3,1,3") == (3, 1)
    assert parse_folds("05") == (5,)


def test_huge_fold_ranges_take_no_memory():
    """On the code before issue 34 both built a list of 10**8 folds (6 GB for
    the text); here, under a 512 MiB address-space allowance, an error."""
    pytest.importorskip("resource")
    code = textwrap.dedent("""\
        import resource
        from refimpl.experiments import ExperimentConfig, validate_config
        from refimpl.experiments.config import parse_folds
        from refimpl.exceptions import DataError

        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (size + 2**29, resource.RLIM_INFINITY))
        for call in (lambda: parse_folds("1-100000000"),
                     lambda: validate_config(ExperimentConfig(
                         dataset="synthetic", methods=("linreg",),
                         folds=range(1, 10**8)))):
            try:
                call()
            except DataError as err:
                print("DataError", err)
            except MemoryError:
                print("MemoryError")
    """)
    if not Path("/proc/self/statm").is_file():
        pytest.skip("needs /proc")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(ln.startswith("DataError folds must be")
                                   for ln in lines), done.stdout


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporary_files_are_removed(letor, tmp_path):
    out = tmp_path / "out"
    _first_run(letor, out)
    base = out / "TINY"
    entry = next((base / "cache" / "linreg").glob("1-*.json"))
    dead, alive = _dead_pid(), os.getpid()
    stale = [entry.parent / f".{entry.name}.{dead}-0123456789ab.tmp",
             base / f".run.json.{dead}-0123456789ab.tmp",
             base / "cache" / f".fingerprints.json.{dead}-0123456789ab.tmp",
             base / f".tasks.csv.{alive}-00000000000a.tmp"]     # alive but old
    kept = [entry.parent / f".{entry.name}.{alive}-0123456789ab.tmp",  # in flight
            base / "notes.tmp", base / f".x.{dead}-0123.tmp"]  # not ours
    for path in stale + kept:
        path.write_text("partial")
    # a dead writer's file is left alone for refimpl._io.TMP_GRACE seconds
    # (its writer may live in another PID namespace)
    past_grace = time.time() - 2 * _io.TMP_GRACE
    for path in stale[:-1] + kept[1:]:
        os.utime(path, (past_grace, past_grace))
    hours_ago = time.time() - 2 * 3600
    os.utime(stale[-1], (hours_ago, hours_ago))
    again = _first_run(letor, out)
    assert again.n_cached == 1
    assert [p for p in stale if p.exists()] == []
    assert all(p.exists() for p in kept)


def test_tables_are_written_through_temporary_files(letor, tmp_path):
    """Tables and run.json are replaced whole (no half-written table): a
    re-run leaves no temporary file, and the tables read back."""
    out = tmp_path / "out"
    first = _first_run(letor, out)
    again = _first_run(letor, out)
    assert again.n_cached == 1
    assert {p.name for p in (out / "TINY").glob("*.csv")} == {
        "tasks.csv", "selected.csv", "summary.csv", "per_query.csv"}
    # the csv module's line ends, as before the tables went through _io
    assert (out / "TINY" / "tasks.csv").read_bytes().count(b"\r\n") == 2
    tables = load_results(out / "TINY")
    assert [r["key"] for r in tables["tasks"]] == [first.tasks[0]["key"]]
    assert tables["tasks"][0]["cached"] is True
    assert tables["run"]["n_cached"] == 1
    assert not list(out.rglob("*.tmp"))


def test_worker_initializer_ends_a_worker_without_its_parent():
    from refimpl._compat.loky import backend_params

    params = backend_params(interval=0.1)
    assert params["initializer"] is exec            # standard library only
    source = params["initargs"][0]
    code = textwrap.dedent("""\
        import os, sys, time
        exec(sys.argv[1], {"PARENT": int(sys.argv[2]), "INTERVAL": 0.1})
        time.sleep(1.0)
        print("alive")
    """)
    with_parent = subprocess.run([sys.executable, "-c", code, source,
                                  str(os.getpid())], capture_output=True, text=True,
                                 timeout=60)
    assert (with_parent.returncode, with_parent.stdout) == (0, "alive\n")
    orphan = subprocess.run([sys.executable, "-c", code, source, "0"],
                            capture_output=True, text=True, timeout=60)
    assert (orphan.returncode, orphan.stdout) == (1, "")
