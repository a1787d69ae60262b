"""The loader's memory model is never below the peak a load measures.

The runner refuses to load a fold whose estimated load exceeds the memory
available (``refimpl.experiments.scale.check_load``), so an estimate below
the real peak is the one error it must not make.  A child process loads
each shape after warming the parser, and measures the growth of its
resident set's high-water mark (Linux's ``VmHWM``, reset through
``/proc/self/clear_refs``, else ``ru_maxrss``) over what was resident
before the load; ``estimate_fold_load`` must be at least that, and at most
``MAX_RATIO`` times it.  Three shapes: MSLR-shaped files in the
``FoldK/train.txt`` layout normalised by query; gzip-compressed ``S1..S5``
partitions (a training split joined from three files); a file whose first
line is narrow and which has many blank lines (the parser widens ``X`` and
copies its rows).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from refimpl.data import estimate_fold_load
from refimpl.exceptions import DataError, DatasetNotFoundError

REPO = Path(__file__).resolve().parents[1]
MAX_RATIO = 3.0
N_QUERIES = 300

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(),
                                reason="reads /proc/self/status")

CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    from refimpl import data as D

    def status(key):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024

    tiny = sys.argv[4]
    D.load_letor(tiny, cache=False)
    D.load_letor(tiny, normalize="query", cache=False)
    rss0 = status("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        top = lambda: status("VmHWM")
    except OSError:
        top = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    normalize = None if sys.argv[3] == "none" else sys.argv[3]
    fold = D.load_letor_fold(sys.argv[2], 1, root=sys.argv[1], normalize=normalize)
    print(json.dumps({"growth": top() - rss0,
                      "rows": len(fold.train.y) + len(fold.vali.y) + len(fold.test.y)}))
""")


def _bench():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import _mslr_shaped
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return _mslr_shaped


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """``{shape: (root, name, normalize)}``, written once."""
    base = tmp_path_factory.mktemp("load-memory")
    ms = _bench()
    # in this test's own folder: the benchmarks' shared one may be rewritten
    # by another process while this one reads it
    root, _ = ms.ensure_mslr_shaped(N_QUERIES, base=base / "mslr")
    out = {"MSLR layout, query-normalised": (root, "MSLR-WEB10K", "query")}
    # S1..S5, gzip-compressed: the training split joins three files
    parts = base / "parts" / "S"
    parts.mkdir(parents=True)
    fold = Path(root) / "MSLR-WEB10K" / "Fold1"
    lines = b"".join((fold / f"{s}.txt").read_bytes() for s in ("train", "vali", "test"))
    lines = lines.splitlines(keepends=True)
    for k in range(5):
        (parts / f"S{k + 1}.txt.gz").write_bytes(
            gzip.compress(b"".join(lines[k::5]), compresslevel=1))
    out["S1..S5, gzip"] = (base / "parts", "S", None)
    # a narrow first line and blank lines: X widened, then its rows copied
    wide = base / "wide" / "W" / "Fold1"
    wide.mkdir(parents=True)
    for s in ("train", "vali", "test"):
        text = (fold / f"{s}.txt").read_bytes()
        if s == "train":
            text = b"0 qid:0 1:1 2:0.5\n" + b"\n" * (len(text) // 800) + text
        (wide / f"{s}.txt").write_bytes(text)
    out["narrow first line, blank lines"] = (base / "wide", "W", None)
    tiny = base / "tiny.txt"
    tiny.write_text("1 qid:1 1:0.5 2:1\n0 qid:1 1:0.25 2:3\n")
    return out, tiny


@pytest.mark.parametrize("shape", ["MSLR layout, query-normalised", "S1..S5, gzip",
                                   "narrow first line, blank lines"])
def test_load_estimate_at_least_measured_peak(shapes, shape):
    cases, tiny = shapes
    root, name, normalize = cases[shape]
    est = estimate_fold_load(name, 1, root, normalize=normalize)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), name, str(normalize).lower(),
         str(tiny)], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    where = (f"{shape}: estimated {est.peak_bytes / 2**20:.1f} MiB (data "
             f"{est.data_bytes / 2**20:.1f}, text {est.text_bytes / 2**20:.1f}), "
             f"measured {got['growth'] / 2**20:.1f} MiB growth, {got['rows']} rows")
    assert got["growth"] > est.data_bytes / 2, where      # it measured the load
    assert est.peak_bytes >= got["growth"], where
    assert est.peak_bytes <= MAX_RATIO * got["growth"], where


def test_estimate_reads_compressed_sizes_and_refuses_what_the_loader_refuses(tmp_path):
    """The text of a ``.gz`` file is counted as it decompresses (not from its
    4 GiB-modulo trailer); a corrupt one and a missing fold are the
    loader's errors."""
    base = tmp_path / "Z"
    base.mkdir()
    text = b"".join(b"%d qid:%d 1:0.5 2:1 3:%d\n" % (i % 3, i // 10, i)
                    for i in range(1000))
    for k in range(1, 6):
        (base / f"S{k}.txt.gz").write_bytes(gzip.compress(text))
    est = estimate_fold_load("Z", 1, tmp_path)
    assert est.text_bytes == 5 * len(text)
    assert est.data_bytes >= 5 * 1000 * 3 * 8
    (base / "S2.txt.gz").write_bytes(gzip.compress(text)[:-9])
    with pytest.raises(DataError, match=r"S2\.txt\.gz: cannot decompress"):
        estimate_fold_load("Z", 1, tmp_path)
    with pytest.raises(DatasetNotFoundError, match="not found"):
        estimate_fold_load("Nothing", 1, tmp_path)
    with pytest.raises(DataError, match="fold must be an integer from 1 to 5"):
        estimate_fold_load("Z", 6, tmp_path)


def test_runner_refuses_a_fold_before_loading_it(tmp_path, monkeypatch):
    """Below the load's estimate, every task of the fold is 'refused' naming
    the file, the estimate and the limit, and nothing is parsed."""
    from refimpl import data as _data
    from refimpl.experiments import ExperimentConfig, run, scale

    base = tmp_path / "T"
    base.mkdir()
    syn = _data.make_synthetic_letor(n_queries=20, n_noise=3, seed=0)
    for k in range(5):
        m = (syn.qid - 1) % 5 == k
        _data.write_letor(base / f"S{k + 1}.txt", syn.X[m], syn.y[m], syn.qid[m])
    loads = []
    real = _data.load_letor
    monkeypatch.setattr(_data, "load_letor", lambda *a, **k: loads.append(a) or real(*a, **k))
    monkeypatch.setattr(scale, "available_memory", lambda: 64 * 2**20)
    result = run(ExperimentConfig(dataset="T", letor_home=str(tmp_path),
                                  methods=("linreg",), folds=(1,),
                                  backend="sequential"))
    (row,) = result.tasks
    assert row["status"] == "refused", row
    assert row["error"].startswith("ScaleError: loading 'T' Fold1 refused")
    # the file parsed at the peak, one of the fold's
    assert any(f"parsing {base / f'S{k}.txt'};" in row["error"] for k in range(1, 6))
    assert "more than 80% of the 0.06 GB available" in row["error"]
    assert not loads and result.n_failed == 1

    monkeypatch.setattr(scale, "available_memory", lambda: 64 * 2**30)
    result = run(ExperimentConfig(dataset="T", letor_home=str(tmp_path),
                                  methods=("linreg",), folds=(1,),
                                  backend="sequential"))
    assert result.tasks[0]["status"] == "ok" and loads


def test_a_file_the_estimate_cannot_read_is_the_loaders_error_in_each_row(tmp_path):
    """The guard does not stand in for the loader: a corrupt file is the
    task's 'error' row with the loader's message, not a failed run."""
    from refimpl.experiments import ExperimentConfig, run

    base = tmp_path / "Z"
    base.mkdir()
    text = b"".join(b"%d qid:%d 1:0.5 2:1\n" % (i % 3, i // 10) for i in range(200))
    for k in range(1, 6):
        (base / f"S{k}.txt.gz").write_bytes(gzip.compress(text))
    (base / "S2.txt.gz").write_bytes(gzip.compress(text)[:-9])
    result = run(ExperimentConfig(dataset="Z", letor_home=str(tmp_path),
                                  methods=("linreg",), folds=(1,),
                                  backend="sequential"))
    (row,) = result.tasks
    assert row["status"] == "error" and "S2.txt.gz: cannot decompress" in row["error"]
