"""Wall time of the experiment runner with 1 and 2 workers, and the speed-up.

Default: a reduced configuration (every registered method with its small
grid, folds 1-2) on MQ2008 when ``LETOR_HOME`` holds it, else on the
synthetic data set ``synthetic:400``.  ``--full``: every method with the
papers' grids on all five folds of MQ2008 (the configuration of the
chapter's tables; tens of minutes per run on 2 cores).

``--scaling``: one fold and one fixed setting per method (the setting the
protocol selected most often on MQ2008, read from
``results/MQ2008/selected.csv``; else the first of the reduced grid) on
``synthetic:Q`` for Q = 100 ... 3200 queries, one worker; the tables go to ``results/synthetic-<Q>/`` for the
chapter's plot of training time against data size (cached fits are kept,
so adding a method fits only that method).

No cache is used (``out=None``), so every task is fitted in both runs.
Both runs start from warm workers: a small warm-up run first loads the
numba kernels in this process and in the loky worker processes, which
joblib then re-uses.  Prints the wall times, the summed per-task CPU time
and the ratio wall(1 worker) / wall(2 workers).  The machine may be shared,
so the ratio, not the absolute time, is the result.
"""

import argparse
import json
import os
import time
from pathlib import Path

from refimpl.experiments import METHODS, ExperimentConfig, run


def _dataset(full):
    home = os.environ.get("LETOR_HOME")
    if home and os.path.isdir(os.path.join(home, "MQ2008")):
        return "MQ2008"
    if full:
        raise SystemExit("--full needs MQ2008 under LETOR_HOME")
    return "synthetic:400"


def timed(config):
    t0 = time.perf_counter()
    result = run(config)
    wall = time.perf_counter() - t0
    assert result.n_failed == 0, [r["error"] for r in result.tasks if r["error"]]
    cpu = sum(r["cpu_time"] for r in result.tasks)
    return wall, cpu, len(result.tasks)


SCALING_QUERIES = (100, 200, 400, 800, 1600, 3200)


def _typical_settings(results, methods):
    """Per method, the setting selected in most MQ2008 folds (first on ties)."""
    settings = {}
    path = results / "MQ2008" / "selected.csv"
    if path.is_file():
        from collections import Counter

        from refimpl.experiments import read_csv

        rows = read_csv(path)
        for m in methods:
            picks = [r["params"] for r in rows if r["method"] == m]
            if picks:
                settings[m] = {k: [v] for k, v in
                               json.loads(Counter(picks).most_common(1)[0][0]).items()}
    for m in methods:
        if m not in settings:
            settings[m] = {k: list(v)[:1]
                           for k, v in (METHODS[m].reduced_grid or {}).items()}
    return settings


def scaling(args):
    """Write results/synthetic-<Q>/ for the data-size plot of the chapter."""
    out = Path(__file__).resolve().parents[1] / "results"
    methods = tuple(METHODS) if args.methods == "all" else tuple(args.methods.split(","))
    grids = _typical_settings(out, methods)
    print("settings:", grids)
    run(ExperimentConfig(dataset="synthetic:100", methods=methods, folds=(1,),
                         grids=grids, backend="sequential", cache=False))  # warm-up
    for q in SCALING_QUERIES:
        result = run(ExperimentConfig(dataset=f"synthetic:{q}", methods=methods,
                                      folds=(1,), grids=grids, out=str(out),
                                      backend="sequential"))
        docs = result.tasks[0]["n_train_docs"]
        print(f"synthetic:{q} ({docs} training documents): " + ", ".join(
            f"{r['method']} {r['cpu_time']:.2f}s" for r in result.tasks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="all methods, papers' grids, folds 1-5 of MQ2008")
    parser.add_argument("--scaling", action="store_true",
                        help="time one setting per method on growing synthetic "
                             "data; tables to results/synthetic-<Q>/")
    parser.add_argument("--methods", default="all")
    parser.add_argument("--jobs", default="1,2",
                        help="worker counts to compare (default 1,2)")
    args = parser.parse_args()
    if args.scaling:
        scaling(args)
        return
    dataset = _dataset(args.full)
    methods = tuple(METHODS) if args.methods == "all" else tuple(args.methods.split(","))
    folds = (1, 2, 3, 4, 5) if args.full else (1, 2)
    jobs = [int(j) for j in args.jobs.split(",")]
    base = {"dataset": dataset, "methods": methods, "folds": folds,
            "reduced": not args.full, "backend": "loky", "cache": False}
    # warm-up: numba kernels here and in the worker processes
    for n in jobs:
        run(ExperimentConfig(**{**base, "folds": (1,), "reduced": True, "n_jobs": n}))
    print(f"data set {dataset}, folds {folds}, "
          f"{'papers grids' if args.full else 'reduced grids'}, "
          f"{len(methods)} methods")
    walls = {}
    for n in jobs:
        wall, cpu, n_tasks = timed(ExperimentConfig(**{**base, "n_jobs": n}))
        walls[n] = wall
        print(f"n_jobs={n}: {n_tasks} fits, wall {wall:8.1f} s, "
              f"summed fit CPU {cpu:8.1f} s")
    for n in jobs[1:]:
        print(f"speed-up n_jobs={n} vs n_jobs={jobs[0]}: "
              f"{walls[jobs[0]] / walls[n]:.2f}x")


if __name__ == "__main__":
    main()
