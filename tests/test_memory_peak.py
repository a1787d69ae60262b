"""Every registry method's memory model is never below the peak it measures.

The scale guard refuses a task whose estimated peak exceeds the machine's
memory (``refimpl.experiments.scale``), so an estimate below the real peak
is the one error it must not make.  A child process fits each method (at
its reduced grid's setting) on a moderate synthetic shape whose features
are on raw scale (columns up to 1e3, so that FSMRank makes its
column-scaled copy) and measures what the fit allocates beyond what was
resident before it, two ways, both lower bounds on the fit's real
allocation: ``tracemalloc``'s peak (every NumPy array, not numba's own
allocations) and the growth of the resident set's high-water mark (Linux's
``VmHWM``, reset before each fit through ``/proc/self/clear_refs``; pages
the allocator reuses are missed).  The assertion is one-sided, so it
holds on every machine: ``sum(estimate.terms) >= max(the two)``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import gc, json, os, sys, tracemalloc, warnings
    import numpy as np
    if os.environ.get("EXAMPLE_METHODS_FROM"):   # pytest --example-methods
        sys.path.insert(0, os.environ["EXAMPLE_METHODS_FROM"])
        from contributing import install
        install()
    from refimpl.data import make_synthetic_letor
    from refimpl.experiments.registry import METHODS
    from refimpl.pairs import n_pairs as count_pairs

    def status(key):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        raise KeyError(key)

    def reset_hwm():
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            return True
        except OSError:
            return False

    def data(n_queries, seed):
        d = make_synthetic_letor(n_queries=n_queries, docs_per_query=(60, 140),
                                 n_noise=30, n_levels=5, seed=seed)
        scale = np.logspace(0, 3, d.X.shape[1])     # raw-scale columns
        return np.ascontiguousarray(d.X * scale), d.y, d.qid

    small = data(8, 1)
    X, y, qid = data(int(sys.argv[2]), 0)
    _, counts = np.unique(qid, return_counts=True)
    n_pairs = count_pairs(y, qid)
    shape = dict(n_docs=X.shape[0], n_pairs=n_pairs, n_features=X.shape[1],
                 max_query=int(counts.max()), grouped=True)
    out = {}
    for name in sys.argv[1].split(","):
        method = METHODS[name]
        params = {k: v[0] for k, v in (method.reduced_grid or {}).items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            method.build(params).fit(*small)          # compile first
            est = method.build(params)
            estimate = sum(est.estimate_memory(**shape).terms.values())
            gc.collect()
            hwm = reset_hwm()
            rss0 = status("VmRSS")
            tracemalloc.start()
            est.fit(X, y, qid)
            traced = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            grown = status("VmHWM") - rss0 if hwm else 0
        out[name] = {"estimate": estimate, "traced": traced, "rss": grown,
                     "shape": shape}
        del est
        gc.collect()
    print(json.dumps(out))
""")

N_QUERIES = 120


def _methods():
    from refimpl.experiments.registry import METHODS
    return sorted(METHODS)


@pytest.fixture(scope="module")
def measured(request):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    if request.config.getoption("--example-methods"):
        env["EXAMPLE_METHODS_FROM"] = str(REPO / "tests")
    # only the methods whose test was selected (``-k``) are fitted
    selected = sorted({item.callspec.params["name"] for item in request.session.items
                       if getattr(item, "originalname", None)
                       == "test_estimate_at_least_measured_peak"})
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, ",".join(selected or _methods()), str(N_QUERIES)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: Memory models this test measured below the fit's allocation (issue 36,
#: open): estimate against the larger measurement, MiB, at N_QUERIES = 120
#: (12,078 x 40 rows, 366,823 pairs).  Not strict: the traced bytes of a
#: near case (liferank-ranksvm, linreg) may differ with library versions.
UNDER = {
    "fenchelrank": "2.9 < 10.2",
    "fsmrank": "10.5 < 72.9",
    "fsmsvm": "10.5 < 72.9",
    "liferank-linreg": "6.9 < 10.0",
    "liferank-ranksvm": "9.8 < 10.0",
    "lambdamart": "5.5 < 7.0 (resident growth, one run of two)",
    "linreg": "7.4 < 7.8",
    "ranksvm-l1": "2.9 < 14.8",
    "ranksvm-log": "2.9 < 14.9",
    "ranksvm-lp": "2.9 < 14.9",
    "ranksvm-mcp": "2.9 < 14.8",
}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(
        strict=False, reason=f"memory model below the measured peak: {UNDER[name]} MiB"))
    if name in UNDER else name
    for name in _methods()])
def test_estimate_at_least_measured_peak(measured, name):
    row = measured[name]
    peak = max(row["traced"], row["rss"])
    assert peak > 0, row                      # the measurement measured something
    assert row["estimate"] >= peak, (
        f"{name}: estimated {row['estimate'] / 2**20:.1f} MiB, measured "
        f"{row['traced'] / 2**20:.1f} MiB traced, {row['rss'] / 2**20:.1f} MiB "
        f"resident growth at {row['shape']}")
