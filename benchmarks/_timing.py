"""Side-by-side timing helpers: ratios measured in one run, never absolute targets."""

import time

import numpy as np


def best_time(fn, repeat=7, number=None, min_time=0.05):
    """Best-of-`repeat` seconds per call, calibrating `number` so a run lasts >= min_time."""
    fn()  # warm-up (JIT compile, caches)
    if number is None:
        number = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - t0 >= min_time:
                break
            number *= 2
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return float(np.min(times))


def interleaved(fns, rounds=5, **kw):
    """Time several callables in alternation so machine noise hits them alike."""
    best = {name: np.inf for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], best_time(fn, repeat=3, **kw))
    return best


def warm_up_fits(*fits, cvxpy=False):
    """Run each ``fit(X, y, qid)`` once on a tiny synthetic set and print how long it took.

    The first call of a numba kernel compiles it or loads it from the cache,
    and the first cvxpy solve imports its solver; a benchmark calls this first
    so that none of that lands in its timings.  ``cvxpy=True`` adds a tiny
    l1-regularised squared-hinge solve with CLARABEL on the same data.
    """
    from refimpl.data import make_synthetic_letor

    if cvxpy:
        import cvxpy as cp

        from refimpl.pairs import pair_difference_matrix
    syn = make_synthetic_letor(n_queries=8, docs_per_query=(5, 12), seed=0)
    t0 = time.perf_counter()
    for fit in fits:
        fit(syn.X, syn.y, syn.qid)
    what = "warm-up fit" + ("s" if len(fits) > 1 else "")
    load = "JIT / numba cache load"
    if cvxpy:
        K = pair_difference_matrix(syn.X, syn.y, syn.qid)
        w = cp.Variable(K.shape[1])
        cp.Problem(cp.Minimize(cp.norm1(w) + cp.sum_squares(cp.pos(1 - K @ w)))).solve(
            solver=cp.CLARABEL)
        what += " and a tiny cvxpy solve"
        load += ", imports"
    print(f"{what} on {syn.X.shape[0]} documents ({load}): "
          f"{time.perf_counter() - t0:.2f} s")


def machine():
    """What the numbers of a run depend on, for its JSON's ``"machine"``.

    The CPU model (``/proc/cpuinfo``, else ``platform.processor()``), cores,
    load, thread settings, library versions, numba's target CPU, and each
    BLAS / OpenMP library threadpoolctl finds with its ``internal_api``
    (openblas, mkl, ...), ``version`` and ``architecture`` (the kernel it
    dispatched to, e.g. Haswell): two runs are comparable when these agree.
    Every benchmark writing JSON records this, one helper for all.
    """
    import os
    import platform
    from importlib import metadata
    from pathlib import Path

    import numba
    from threadpoolctl import threadpool_info

    cpu = platform.processor() or None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    keys = ("user_api", "internal_api", "version", "architecture", "num_threads")
    return {
        "cpu": cpu, "machine": platform.machine(), "cores": os.cpu_count(),
        "load_average": list(os.getloadavg()), "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {pkg: metadata.version(pkg) for pkg in
                     ("numpy", "scipy", "scikit-learn", "numba", "llvmlite")},
        "numba": numba.__version__,
        "numba_cpu_name": numba.config.CPU_NAME or "host",
        "threads": {k: os.environ.get(k) for k in
                    ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "NUMBA_NUM_THREADS")},
        "blas": [{k: p.get(k) for k in keys} for p in threadpool_info()],
    }
