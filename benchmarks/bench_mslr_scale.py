"""Every registered method at MSLR-WEB10K scale, through ``python -m refimpl run``.

Generates (once; cached under ``/tmp/refimpl-mslr-shaped/``) a data set with
the shape and file layout of MSLR-WEB10K (``benchmarks/_mslr_shaped.py``:
10,000 queries, ~120 documents each, 136 features, 5 levels with MSLR's
skew, ``MSLR-WEB10K/Fold1/{train,vali,test}.txt`` split 3:1:1), then runs,
for each method, in its own process::

    python -m refimpl run --dataset MSLR-WEB10K --letor-home ROOT \\
        --methods M --folds 1 --grid M:P=V ... --out OUT/M --quiet

with one fixed setting per method (:data:`SETTINGS`: a value of the paper's
grid, and iteration caps that keep each fit within minutes on this machine
where the registry's budgets would not; the table marks them).  A fresh
output directory per run, so nothing comes from the runner's cache.

Prints, per method: the setting, the loss backend (``tree`` wherever the
squared hinge's tree applies: no explicit pairs), the load time of the fold
(parse or binary cache, as the runner recorded it), the fit time, the peak
resident memory of the process (``os.wait4``'s ``ru_maxrss``), the scale
guard's estimate of it, iterations, convergence and test NDCG@10, or
``refused``/``error`` with the runner's message.

The same command runs on the real data: ``--letor-home`` the directory
holding ``MSLR-WEB10K/`` (``refimpl.datasets.fetch_letor("MSLR-WEB10K")``
returns ``<that directory>/MSLR-WEB10K``) and ``--real``.

Usage::

    python benchmarks/bench_mslr_scale.py                 # 10,000 queries
    python benchmarks/bench_mslr_scale.py --queries 1000  # a quick check
    python benchmarks/bench_mslr_scale.py --methods ranksvm,linreg
    python benchmarks/bench_mslr_scale.py --real --letor-home ~/.cache/refimpl
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mslr_shaped import ensure_mslr_shaped

REPO = Path(__file__).resolve().parents[1]

#: method -> (grid arguments, note).  The first value is one of the paper's
#: grid; further ones cap iterations below the registry's budget.
SETTINGS = {
    "ranksvm": (["C=1.0"], "Lee & Lin's timing setting, tol 1e-3"),
    "fenchelrank": (["r=8.0", "max_iter=100"], "cap: max_iter 100 (registry 1000)"),
    "fsmrank": (["lambda1=0.1", "lambda2=0.001", "max_iter=100"],
                "cap: max_iter 100 (registry 400)"),
    "gas-e": (["n_features=10"], ""),
    "fsmsvm": (["n_features=10", "max_iter=100"],
               "cap: FSMRank stage max_iter 100 (estimator 10000)"),
    "ranksvm-l1": (["C=0.0001", "max_iter=100"], "cap: max_iter 100 (registry 5000)"),
    "ranksvm-log": (["C=0.0001", "max_iter=100", "max_outer=2"],
                    "cap: 2 outer x 100 (registry 30 x 5000)"),
    "ranksvm-mcp": (["C=0.0001", "max_iter=100", "max_outer=2"],
                    "cap: 2 outer x 100 (registry 30 x 5000)"),
    "ranksvm-lp": (["C=0.0001", "max_iter=100", "max_outer=2"],
                   "cap: 2 outer x 100 (registry 30 x 5000)"),
    # the registry's lr = 0.1 diverges on raw MSLR-scale features (|x| up to
    # ~1e5): NonFiniteError at iteration 5 on the 1,000-query set
    "liferank-ranksvm": (["n_components=10", "max_iter=20", "lr=1e-06"],
                         "cap: max_iter 20 (registry 1000); lr 1e-6 (0.1 diverges)"),
    "liferank-linreg": (["n_components=10", "max_iter=20", "lr=1e-06"],
                        "cap: max_iter 20 (registry 1000); lr 1e-6 (0.1 diverges)"),
    "linreg": ([], ""),
    "lambdamart": (["n_estimators=100", "num_leaves=31", "learning_rate=0.1"], ""),
}


#: Methods not run, with the reason (printed in the table).
SKIP: dict[str, str] = {}


def registered_methods():
    out = subprocess.run([sys.executable, "-m", "refimpl", "methods"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.strip() and not line.startswith(" ")]


def run_one(method, root, out, timeout):
    """One runner invocation; returns (row dict or None, peak RSS bytes, wall s, stderr)."""
    grid, _ = SETTINGS.get(method, ([], ""))
    cmd = [sys.executable, "-m", "refimpl", "run", "--dataset", "MSLR-WEB10K",
           "--letor-home", str(root), "--methods", method, "--folds", "1",
           "--out", str(out), "--quiet"]
    for g in grid:
        cmd += ["--grid", f"{method}:{g}"]
    t0 = time.perf_counter()
    err_path = Path(out) / f"{method}.stderr"
    Path(out).mkdir(parents=True, exist_ok=True)
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
    wall = time.perf_counter() - t0
    peak = usage.ru_maxrss * 1024          # kilobytes on Linux
    tasks = Path(out) / "MSLR-WEB10K" / "tasks.csv"
    row = None
    if tasks.exists():
        with open(tasks) as f:
            rows = [r for r in csv.DictReader(f) if r["method"] == method]
        row = rows[0] if rows else None
    return row, peak, wall, status, err_path.read_text()


def load_only(root):
    """Load the fold as a task does, in its own process: (seconds, peak RSS bytes)."""
    code = ("import time; from refimpl.experiments.runner import load_fold; "
            f"t = time.perf_counter(); load_fold('MSLR-WEB10K', 1, {str(root)!r}); "
            "print(time.perf_counter() - t)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    usage = os.wait4(proc.pid, 0)[2]
    try:
        seconds = float(out.split()[-1])
    except (IndexError, ValueError):
        seconds = float("nan")
    return seconds, usage.ru_maxrss * 1024


def _f(row, key, fmt):
    try:
        return format(float(row[key]), fmt)
    except (KeyError, TypeError, ValueError):
        return "-"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="all")
    ap.add_argument("--real", action="store_true",
                    help="use the real MSLR-WEB10K under --letor-home")
    ap.add_argument("--letor-home", default=None)
    ap.add_argument("--out", default=None, help="default: a fresh temporary directory")
    ap.add_argument("--no-skip", action="store_true",
                    help="also run the methods of SKIP")
    ap.add_argument("--timeout", type=float, default=1800,
                    help="seconds per method before the process is killed")
    args = ap.parse_args(argv)

    if args.real:
        if not args.letor_home:
            raise SystemExit("--real needs --letor-home (the directory holding MSLR-WEB10K/)")
        root = Path(args.letor_home)
        print(f"data: real MSLR-WEB10K under {root}")
    else:
        t0 = time.perf_counter()
        root, info = ensure_mslr_shaped(args.queries, args.seed)
        gen = time.perf_counter() - t0
        sp = info["splits"]
        print(f"data: MSLR-WEB10K-shaped, {args.queries:,} queries, seed {args.seed}, "
              f"under {root}; train/vali/test documents "
              f"{sp['train']['documents']:,}/{sp['vali']['documents']:,}/"
              f"{sp['test']['documents']:,}, "
              f"{sum(s['bytes'] for s in sp.values()) / 2**30:.2f} GB of text; "
              + (f"generated in {gen:.0f} s" if info["write_seconds"] else "cached"))
    methods = registered_methods()
    if args.methods != "all":
        methods = [m.strip() for m in args.methods.split(",")]
    out = Path(args.out or tempfile.mkdtemp(prefix="mslr-scale-"))
    print(f"runner output: {out}; one process per method, python -m refimpl run "
          f"--folds 1; OMP/OPENBLAS/NUMBA threads = "
          f"{os.environ.get('OMP_NUM_THREADS')}/{os.environ.get('OPENBLAS_NUM_THREADS')}/"
          f"{os.environ.get('NUMBA_NUM_THREADS')}")
    seconds, peak = load_only(root)
    print(f"loading Fold1 alone (a process that only loads it): {seconds:.1f} s, "
          f"peak RSS {peak / 2**30:.2f} GB; a method's peak below is at least this")
    header = (f"{'method':17s} {'setting':46s} {'backend':23s} {'load s':>7s} "
              f"{'fit s':>8s} {'peak GB':>8s} {'est GB':>7s} {'n_iter':>7s} "
              f"{'conv':>5s} {'NDCG@10':>8s}  note")
    print(header)
    print("-" * len(header))
    results = []
    for method in methods:
        grid, note = SETTINGS.get(method, ([], "no fixed setting: registry grid"))
        if method in SKIP and not args.no_skip:
            print(f"{method:17s} {','.join(grid) or '(none)':46s} {'-':23s} "
                  f"{'-':>7s} {'-':>8s} {'-':>8s} {'-':>7s} {'-':>7s} {'-':>5s} "
                  f"{'-':>8s}  {SKIP[method]}", flush=True)
            continue
        row, peak, wall, status, stderr = run_one(
            method, root, out / method, args.timeout)
        setting = ",".join(grid) or "(none)"
        if row is None:
            code = os.waitstatus_to_exitcode(status)
            tail = stderr.strip().splitlines()[-1:] or [
                f"killed by signal {-code} (timeout {args.timeout:.0f} s)" if code < 0
                else f"exit status {code}"]
            line = (f"{method:17s} {setting:46s} {'-':23s} {'-':>7s} {'-':>8s} "
                    f"{peak / 2**30:8.2f} {'-':>7s} {'-':>7s} {'-':>5s} {'-':>8s}  "
                    f"no result after {wall:.0f} s: {tail[0][:200]}")
        elif row["status"] != "ok":
            line = (f"{method:17s} {setting:46s} {row.get('backend') or '-':23s} "
                    f"{_f(row, 'load_time', '7.1f')} {'-':>8s} {peak / 2**30:8.2f} "
                    f"{'-':>7s} "
                    f"{'-':>7s} {'-':>5s} {'-':>8s}  {row['status']}: {row['error']}")
        else:
            est = float(row["est_peak_mb"]) / 1024
            line = (f"{method:17s} {setting:46s} {row['backend']:23s} "
                    f"{_f(row, 'load_time', '7.1f')} {_f(row, 'fit_time', '8.1f')} "
                    f"{peak / 2**30:8.2f} {est:7.2f} {row['n_iter']:>7s} "
                    f"{str(row['converged'])[:5]:>5s} {_f(row, 'test_NDCG@10', '8.4f')}  {note}")
        print(line, flush=True)
        results.append({"method": method, "setting": setting, "peak_bytes": peak,
                        "wall": wall, "row": row})
    with open(out / "bench_mslr_scale.json", "w") as f:
        json.dump(results, f, indent=1, default=str)
    print(f"(peak GB: maximum resident set of the runner process, data included; "
          f"est GB: the scale guard's estimate; results in {out})")


if __name__ == "__main__":
    main()
