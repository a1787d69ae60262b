"""Every registry method's memory model is never below the peak it measures.

The scale guard refuses a task whose estimated peak exceeds the machine's
memory (``refimpl.experiments.scale``), so an estimate below the real peak
is the one error it must not make.  A child process fits each method (at
its reduced grid's setting) on a moderate synthetic shape whose features
are on raw scale (columns up to 1e3, so that FSMRank makes its
column-scaled copy) and measures what the fit allocates beyond what was
resident before it, two ways, both lower bounds on the fit's real
allocation: ``tracemalloc``'s peak (every NumPy array, and the arrays numba
kernels allocate, which the measured peaks show inside them) and the
growth of the resident set's high-water mark (Linux's ``VmHWM``, reset
before each fit through ``/proc/self/clear_refs``; pages the allocator
reuses are missed).  The main assertion is one-sided, so it holds on every
machine: ``sum(estimate.terms) >= max(the two)``.  The model must also be
informative, at most ``MAX_RATIO`` times the measured peak; that bound
rests on ``tracemalloc``'s count, which depends on what the fit allocates
(the library versions), not on the machine.
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
    from refimpl.losses.squared_hinge import count_levels
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
        d = make_synthetic_letor(n_queries=n_queries,
                                 docs_per_query=(int(sys.argv[4]), int(sys.argv[5])),
                                 n_noise=30, n_levels=int(sys.argv[3]), seed=seed)
        scale = np.logspace(0, 3, d.X.shape[1])     # raw-scale columns
        return np.ascontiguousarray(d.X * scale), d.y, d.qid

    small = data(8, 1)
    X, y, qid = data(int(sys.argv[2]), 0)
    _, counts = np.unique(qid, return_counts=True)
    n_pairs = count_pairs(y, qid)
    shape = dict(n_docs=X.shape[0], n_pairs=n_pairs, n_features=X.shape[1],
                 max_query=int(counts.max()), grouped=True,
                 n_levels=count_levels(y))
    out = {}
    for name in sys.argv[1].split(","):
        method = METHODS[name]
        params = {k: v[0] for k, v in (method.reduced_grid or {}).items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            method.build(params).fit(*small)          # compile first
            est = method.build(params)
            if "max_iter" in est.get_params() and name.startswith("liferank"):
                # LifeRank's arrays are the same at every BDMM step and its
                # model counts the history by the budget: 10,000 steps would
                # cost minutes under tracemalloc and check nothing more
                est.set_params(max_iter=300)
            model = est.estimate_memory(**shape)
            estimate = sum(model.terms.values())
            gc.collect()
            hwm = reset_hwm()
            rss0 = status("VmRSS")
            tracemalloc.start()
            est.fit(X, y, qid)
            traced = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            grown = status("VmHWM") - rss0 if hwm else 0
        out[name] = {"estimate": estimate, "traced": traced, "rss": grown,
                     "shape": shape, "terms": model.terms,
                     "backend": [model.hinge_backend,
                                 getattr(est, "backend_", None)]}
        del est
        gc.collect()
    print(json.dumps(out))
""")

#: The shapes, ``name: (queries, (shortest, longest query), levels,
#: methods)``: every method on 120 queries of 60-140 documents and 5 levels
#: (12,078 x 40 rows, 366,823 pairs); the methods whose squared hinge
#: resolves ``backend="auto"`` by a cost model on the levels the fit counts
#: (FenchelRank's, TRON's, the first-order and Newton solvers') also on 16
#: levels (many pairs per sort: explicit pairs) and on 30 long queries of 2
#: levels (400-600 documents: the tree), so that the memory model resolves
#: through the fit's own rule on both branches.
AUTO_METHODS = ("fenchelrank", "fsmrank", "ranksvm", "ranksvm-l1")
SHAPES = {
    "5 levels": (120, (60, 140), 5, None),
    "16 levels": (120, (60, 140), 16, AUTO_METHODS),
    "2 levels, long queries": (30, (400, 600), 2, AUTO_METHODS),
}

#: An upper bound, but not a vacuous one: at most this many times the
#: larger measurement where that is above MIN_MEASURED.  HingeRankSVM's
#: model (and LifeRank's with it as the second stage) is the worst case of
#: its cutting planes over ``max_iter`` iterations, which the shape cannot
#: predict; it is exempt.
MAX_RATIO = 3.0
MIN_MEASURED = 2 * 2**20
WORST_CASE = ("ranksvm-hinge", "liferank-ranksvm-hinge")


def _methods():
    from refimpl.experiments.registry import METHODS
    return sorted(METHODS)


def _measure(methods, n_queries, docs, levels, example_methods):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    if example_methods:
        env["EXAMPLE_METHODS_FROM"] = str(REPO / "tests")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, ",".join(methods), str(n_queries),
         str(levels), str(docs[0]), str(docs[1])],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def measured(request):
    # only the (method, shape) cases whose test was selected (``-k``) are
    # fitted; every case when none is (the backend test alone)
    selected = {(item.callspec.params["name"], item.callspec.params["shape"])
                for item in request.session.items
                if getattr(item, "originalname", None)
                == "test_estimate_at_least_measured_peak"}
    example = request.config.getoption("--example-methods")
    out = {}
    for shape, (n_queries, docs, levels, methods) in SHAPES.items():
        names = [n for n in (methods or _methods())
                 if not selected or (n, shape) in selected]
        if names:
            out[shape] = _measure(names, n_queries, docs, levels, example)
    return out


CASES = [(name, shape) for shape, (*_, methods) in SHAPES.items()
         for name in (methods or _methods())]


@pytest.mark.parametrize(("name", "shape"), CASES)
def test_estimate_at_least_measured_peak(measured, name, shape):
    row = measured[shape][name]
    peak = max(row["traced"], row["rss"])
    assert peak > 0, row                      # the measurement measured something
    where = (f"{name}, {shape}: estimated {row['estimate'] / 2**20:.1f} MiB "
             f"{ {k: round(v / 2**20, 2) for k, v in row['terms'].items()} }, "
             f"measured {row['traced'] / 2**20:.1f} MiB traced, "
             f"{row['rss'] / 2**20:.1f} MiB resident growth at {row['shape']} "
             f"(backend modelled, fitted: {row['backend']})")
    assert row["estimate"] >= peak, where
    if name not in WORST_CASE and peak >= MIN_MEASURED:
        assert row["estimate"] <= MAX_RATIO * peak, where


def test_the_model_resolves_auto_as_the_fit(measured):
    """Wherever the fit reports its squared hinge's backend, the memory model
    resolved ``"auto"`` to the same one, and the cases reach both the tree
    and explicit pairs (so that both branches of the resolver are covered)."""
    seen = set()
    for shape, rows in measured.items():
        for name, row in rows.items():
            modelled, fitted = row["backend"]
            if fitted is not None:
                assert modelled == fitted, (name, shape, row["shape"])
                seen.add(fitted)
    assert {"tree", "pairs"} <= seen, seen
