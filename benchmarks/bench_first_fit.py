"""The first minute of a student: cold and warm first fits, per estimator.

A new environment (Binder, Colab, a fresh virtualenv) compiles the numba
kernels on an estimator's first fit and writes them to numba's on-disk
cache; later processes load them.  For each estimator of
:data:`refimpl.warm.WARM_FITS`, at its defaults, on the 50-query synthetic
set (``make_synthetic_letor(n_queries=50, seed=0)``, the warm-up's data),
this measures in fresh subprocesses:

- **cold**: the first fit with an empty numba cache (``NUMBA_CACHE_DIR``
  a new temporary folder): compilation included;
- **warm**: the first fit of a new process whose cache the cold run filled
  (best of ``--repeat`` processes): loading the kernels included;
- **second**: the next fit in the same process (best of the warm runs):
  the fit itself.

Cold and warm are given in wall and in CPU seconds of the process: on a
loaded machine the wall time grows with the load, the CPU time much less.

Also per process: the import of ``refimpl.estimators`` and the seconds
each kernel took to compile (numba's ``numba:compile`` events, the
outermost compile of each ``refimpl`` kernel counted once).  Writes
``bench_first_fit.json`` beside this file (``--json`` elsewhere) with the
machine, its load and the library versions; the numbers move with the
machine's load, the cold ones most (compilation is single-threaded).
Run with ``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1``; about 2 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def child(name):
    """One process: import, first fit, second fit; a JSON line on stdout."""
    import warnings

    t0 = time.perf_counter()
    from numba.core import event
    from sklearn.exceptions import ConvergenceWarning

    from refimpl import estimators
    from refimpl.data import make_synthetic_letor
    from refimpl.warm import WARM_DATA
    t_import = time.perf_counter() - t0
    syn = make_synthetic_letor(**WARM_DATA)
    cls = getattr(estimators, name)
    rec = event.RecordingListener()
    event.register("numba:compile", rec)
    times, cpu = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(2):
            t0, c0 = time.perf_counter(), time.process_time()
            cls().fit(syn.X, syn.y, syn.qid)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    event.unregister("numba:compile", rec)
    compiled, open_ = {}, []      # compiles nest: a stack of their starts
    for ts, ev in rec.buffer:
        fn = ev.data["dispatcher"].py_func
        if not fn.__module__.startswith("refimpl."):
            continue
        if ev.is_start:
            open_.append(ts)
            continue
        t_start = open_.pop()
        name_k = f"{fn.__module__}.{fn.__qualname__}".removeprefix(
            "refimpl.kernels.")
        compiled.setdefault(name_k, []).append(
            {"seconds": ts - t_start, "outermost": not open_})
    print(json.dumps({"import": t_import, "first": times[0],
                      "second": times[1], "first_cpu": cpu[0],
                      "compiled": compiled}))


def run_child(name, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join(
                   [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()),
                          "--child", name], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{name}: child failed\n{out.stderr}")
    return json.loads(out.stdout.splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3,
                        help="warm processes per estimator (best of)")
    parser.add_argument("--estimators", default=None,
                        help="comma-separated (default: refimpl.warm.WARM_FITS)")
    parser.add_argument("--json", type=Path, default=HERE / "bench_first_fit.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)      # before any import of refimpl here
        return
    from refimpl.warm import WARM_DATA, WARM_FITS

    sys.path.insert(0, str(HERE))
    from _timing import machine  # here: a child imports nothing before its clock

    names = args.estimators.split(",") if args.estimators else list(WARM_FITS)
    info = machine()
    print(f"{info['cpu']}, {info['cores']} cores, load "
          f"{info['load_average'][0]:.2f}; numba {info['versions']['numba']}")
    print(f"{'estimator':14s} {'import':>7s} {'cold':>7s} {'(CPU)':>7s} "
          f"{'warm':>7s} {'(CPU)':>7s} {'second':>7s} {'kernels':>7s}  "
          "slowest kernel to compile")
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            cold = run_child(name, cache)
            warms = [run_child(name, cache) for _ in range(args.repeat)]
        outer = {k: sum(c["seconds"] for c in v if c["outermost"])
                 for k, v in cold["compiled"].items()}
        slow = max(outer, key=outer.get) if outer else "-"
        row = {"estimator": name, "import_cold": cold["import"],
               "cold": cold["first"], "cold_cpu": cold["first_cpu"],
               "warm": min(w["first"] for w in warms),
               "warm_cpu": min(w["first_cpu"] for w in warms),
               "second": min(w["second"] for w in warms),
               "import_warm": min(w["import"] for w in warms),
               "compiled_cold": cold["compiled"],
               "compiled_warm": [sorted(w["compiled"]) for w in warms]}
        rows.append(row)
        print(f"{name:14s} {row['import_warm']:7.2f} {row['cold']:7.2f} "
              f"{row['cold_cpu']:7.2f} {row['warm']:7.3f} {row['warm_cpu']:7.3f} "
              f"{row['second']:7.3f} "
              f"{len(cold['compiled']):7d}  {slow} "
              f"({outer.get(slow, 0.0):.1f} s)", flush=True)
    total = {k: sum(r[k] for r in rows)
             for k in ("cold", "cold_cpu", "warm", "warm_cpu", "second")}
    print(f"{'all':14s} {'':7s} {total['cold']:7.2f} {total['cold_cpu']:7.2f} "
          f"{total['warm']:7.3f} {total['warm_cpu']:7.3f} {total['second']:7.3f}")
    args.json.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d"), "data": WARM_DATA,
        "repeat": args.repeat, "machine": info, "rows": rows,
        "total": total}, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
