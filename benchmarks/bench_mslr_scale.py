"""Every registered method at MSLR-WEB10K scale, through ``python -m refimpl run``.

Generates (once; cached under ``/tmp/refimpl-mslr-shaped/``) a data set with
the shape and file layout of MSLR-WEB10K (``benchmarks/_mslr_shaped.py``:
10,000 queries, ~120 documents each, 136 features, 5 levels with MSLR's
skew, ``MSLR-WEB10K/Fold1/{train,vali,test}.txt`` split 3:1:1), then runs,
for each method, in its own process::

    python -m refimpl run --dataset MSLR-WEB10K --letor-home ROOT \\
        --methods M --folds 1 --grid M:P=V ... --out OUT/M --quiet

with one fixed setting per method (:data:`SETTINGS`: for the sparse methods
one keeping about 10-30 % of the features, each run to its own stopping
rule; for FenchelRank and LifeRank iteration caps that keep each fit within
minutes on this machine where the registry's budgets would not; the table
marks them).  After the table, each method's fit time as a ratio to
RankSVM's in the same run.

``--full`` runs instead every method's full registry grid on Fold 1
through ``python -m refimpl run --backend dask --n-jobs 2`` (a LocalCluster
of two single-threaded workers), one runner per method, and prints the
number of fits, how many met their stopping rule, their summed and largest
fit time, the wall time, the peak memory (the largest process of the run)
and the selected setting.  A fit that did not meet its stopping rule is
one of three things, counted apart (:func:`fit_outcome`): ``n_at_cap``, a
method whose registry keeps a paper's iteration cap (:data:`PAPER_CAP`:
FenchelRank's T = 1000) stopped there without the
certificate; ``n_na``, a method with no stopping rule
(:data:`NO_STOPPING_RULE`: least squares, LambdaMART's fixed rounds); and
``n_unconverged``, everything else.  The JSON keeps each fit's outcome,
iterations, warnings and the scale guard's estimate, and the table flags a
method whose measured peak is above the largest estimate.  A fresh output
directory per run, so nothing comes from the runner's cache.

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
    python benchmarks/bench_mslr_scale.py --full --queries 1000

``--json PATH`` also writes the results there.  Recorded runs (each
JSON has its date): ``benchmarks/bench_mslr_scale.json`` (RankSVM and the
sparse methods at SETTINGS, 10,000 queries), ``bench_mslr_scale_full.json``
(``--full``, every method, 300 queries), ``bench_mslr_scale_full_q10000.json``
(``--full``, every method, 10,000 queries, both SVMrank methods on
QueryLevelNorm features, before HingeRankSVM scaled its columns; its
``cpu_seconds`` were read from the same run's ``tasks.csv``, the field being added to the script
during the run) and ``bench_mslr_scale_full_q1000.json`` (``--full
--queries 1000`` with the stopping states counted apart, every method: two
runs of the same command merged, the first stopped after linear
regression, LambdaMART and FenchelRank, the second given the other 12 by
``--methods``, ``ranksvm-hinge`` from a third given it alone, on raw
features once HingeRankSVM scaled its columns (:data:`NORMALIZE`), and the
three LifeRank methods from a fourth once LifeRank scaled each feature; on
a 2-core machine shared with other jobs, so its times are not comparable
with the others').
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
from _timing import machine

REPO = Path(__file__).resolve().parents[1]

#: method -> (grid arguments, note).  The first value is one of the paper's
#: grid; further ones cap iterations below the registry's budget.
SETTINGS = {
    "ranksvm": (["C=1.0"], "Lee & Lin's C = 1; registry tol 1e-4"),
    "fenchelrank": (["r=8.0", "max_iter=100"], "cap: max_iter 100 (registry 1000)"),
    # the sparse methods at a setting keeping about 10-30 % of the 136
    # features, each to its own stopping rule (no cap below the registry's)
    "fsmrank": (["lambda1=0.1", "lambda2=0.01"],
                "registry tol 1e-4, T = 400; no cap"),
    "gas-e": (["n_features_to_select=20"], "t = 20 of 136; no cap"),
    "fsmsvm": (["n_features_to_select=20"],
               "t = 20; FSMRank stage tol 1e-6, no cap"),
    # C below the registry's grid (1e-4..10, MQ2008's): the loss is a sum
    # over ~36 M pairs of raw-scale features, where C = 1e-4 keeps ~85 %
    "ranksvm-l1": (["C=2e-08"], "C below the grid (sum over pairs); no cap"),
    "ranksvm-log": (["C=1e-07"], "C below the grid; no cap"),
    "ranksvm-mcp": (["C=2e-08"], "C below the grid; no cap"),
    "ranksvm-lp": (["C=1e-07"], "C below the grid; no cap"),
    # the registry's step and budget: lr 0.3 on X diag(max_i |x_ij|)^-1
    # (scale-free; below the damping's cap 0.5, chapter 6), up to 10,000
    # iterations, stopping at the certificate
    "liferank-ranksvm": (["n_components=10"], "registry step and budget"),
    "liferank-linreg": (["n_components=10"], "registry step and budget"),
    "linreg": ([], ""),
    "lambdamart": (["n_estimators=100", "num_leaves=31", "learning_rate=0.1"], ""),
}


#: Methods not run, with the reason (printed in the table).
SKIP: dict[str, str] = {}

#: ``--full``: methods run on normalised features (``--normalize``), with the
#: reason; none now.  SVMrank's 1-slack cutting planes need O(C R^2 / eps)
#: planes (chapter 7, eq. 7.14 and thm-cutting-plane), R the planes' norm,
#: which grows with the features' scale (about 1e5 on MSLR's raw features).
#: HingeRankSVM therefore divides each feature by its largest magnitude
#: inside the fit and maps the coefficients back (``feature_scaling=
#: "max_abs"``, the default; chapter 7, prop-hinge-scale): the scores do not
#: depend on the columns' scales, and on LETOR's QueryLevelNorm features
#: (every column's maximum 0 or 1) the fit is the plain one.  LifeRank
#: scales its input by the same rule and its extracted features are
#: scale-free (chapter 6, lr-prop-scale), so its SVMrank stage poses
#: Joachims' problem on them as given.  Both SVMrank methods run on raw
#: features like every other method.
NORMALIZE: dict[str, tuple[str, str]] = {}


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


def run_full(method, root, out, timeout, workers):
    """The registry's full grid of ``method`` on Fold 1, on a dask LocalCluster.

    ``python -m refimpl run --backend dask --n-jobs WORKERS`` (one
    single-threaded worker process per core); returns (task rows, selected
    row or None, peak RSS bytes, wall s, exit status, stderr).  The peak is
    ``os.wait4``'s ``ru_maxrss`` of the runner: the largest resident set of
    one process of its tree (the runner, a nanny or a worker), not a sum.
    """
    cmd = [sys.executable, "-m", "refimpl", "run", "--dataset", "MSLR-WEB10K",
           "--letor-home", str(root), "--methods", method, "--folds", "1",
           "--backend", "dask", "--n-jobs", str(workers), "--out", str(out),
           "--quiet"]
    normalize = NORMALIZE.get(method, (None, ""))[0]
    if normalize:
        cmd += ["--normalize", normalize]
    Path(out).mkdir(parents=True, exist_ok=True)
    err_path = Path(out) / f"{method}.stderr"
    t0 = time.perf_counter()
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > t0 + timeout:
                proc.terminate()           # the runner ends its cluster on SIGTERM
                grace = time.perf_counter() + 60
                while True:
                    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        break
                    if time.perf_counter() > grace:
                        proc.kill()
                        pid, status, usage = os.wait4(proc.pid, 0)
                        break
                    time.sleep(0.5)
                break
            time.sleep(0.5)
    wall = time.perf_counter() - t0
    base = Path(out) / ("MSLR-WEB10K" + (f"-normalize-{normalize}" if normalize else ""))
    tasks, selected = [], None
    if (base / "tasks.csv").exists():
        with open(base / "tasks.csv") as f:
            tasks = [r for r in csv.DictReader(f) if r["method"] == method]
    if (base / "selected.csv").exists():
        with open(base / "selected.csv") as f:
            rows = [r for r in csv.DictReader(f) if r["method"] == method]
        selected = rows[0] if rows else None
    if not tasks:
        # stopped before the tables: the fits it finished are in its cache
        for entry in sorted((base / "cache" / method).glob("*.json")):
            try:
                row = json.loads(entry.read_text())["row"]
            except (OSError, ValueError, KeyError):
                continue
            tasks.append({k: str(v) for k, v in row.items()})
    return tasks, selected, usage.ru_maxrss * 1024, wall, status, err_path.read_text()


def grid_size(method):
    """Number of fits of ``method``'s registry grid (one fold)."""
    from refimpl.experiments.registry import expand_grid, get_method

    return len(expand_grid(get_method(method).grid))


#: Methods whose fit has no stopping rule to certify: their runner rows
#: record ``converged`` as "" (no ``converged_``), counted as ``n_na``.
NO_STOPPING_RULE = {
    "linreg": "closed-form least squares: exact by construction",
    "lambdamart": "a fixed number of boosting rounds: no convergence test",
}

#: Methods whose registry keeps a paper's iteration cap because the paper's
#: table depends on it -> (the capped solver's ConvergenceWarning prefix,
#: the cap).  A fit that ends at the cap without its certificate, and whose
#: only convergence warnings are that solver's, is counted as ``n_at_cap``
#: (neither converged nor failed); a warning of any other stage (the
#: RankSVM after LifeRank) makes it "unconverged".
#: The methods whose iteration cap is their paper's (the registry pins it):
#: FenchelRank's T.  LifeRank's budget of 10,000 BDMM steps is the
#: registry's choice, not Pandey et al.'s (who stop "at convergence or the
#: maximum number of iterations", giving neither), so an uncertified
#: LifeRank fit is unconverged.
PAPER_CAP = {
    "fenchelrank": ("FenchelRank did not converge",
                    "Lai et al. (2013a): T = 1000, Algorithm 1, gap 1e-3"),
}


def fit_outcome(method, task):
    """One successful task's stopping state: "converged", "cap", "n/a" or "unconverged".

    "cap" only for :data:`PAPER_CAP` methods whose fit ran the cap's
    ``max_iter`` iterations without its certificate; any other uncertified
    fit is "unconverged", never hidden.
    """
    conv = task["converged"]
    if conv == "True":
        return "converged"
    if conv == "":
        return "n/a" if method in NO_STOPPING_RULE else "unconverged"
    from refimpl.experiments.registry import get_method

    if method not in PAPER_CAP:
        return "unconverged"
    cap = {**dict(get_method(method).fixed), **json.loads(task["params"])}.get("max_iter")
    others = [w for w in task.get("warnings", "").split(" | ")
              if w.startswith("ConvergenceWarning")
              and not w.split(": ", 1)[1].startswith(PAPER_CAP[method][0])]
    if cap is not None and int(task["n_iter"]) >= int(cap) and not others:
        return "cap"
    return "unconverged"


def main_full(args, root, methods, out, on_result=None):
    """``--full``: every method's registry grid through the dask runner."""
    header = (f"{'method':22s} {'fits':>5s} {'ok':>3s} {'conv':>4s} "
              f"{'fit s sum':>9s} {'fit s max':>9s} {'wall s':>7s} {'peak GB':>7s} "
              f"{'selected setting':40s} {'nnz':>4s} {'NDCG@10':>7s}")
    print(f"--full: each method's registry grid, python -m refimpl run --backend dask "
          f"--n-jobs {args.workers} (LocalCluster of {args.workers} single-threaded "
          f"workers); fit s: summed over the grid's fits (CPU of one core each)")
    print(header)
    print("-" * len(header))
    results = []
    for method in methods:
        # one output folder for all methods: a method's tables are read
        # right after its run, and the first-stage cache under it is shared,
        # so the three LifeRank methods fit LifeRank once per setting, as
        # one runner run of all methods does
        tasks, sel, peak, wall, status, stderr = run_full(
            method, root, out, args.timeout, args.workers)
        ok = [t for t in tasks if t["status"] == "ok"]
        fits = [float(t["fit_time"]) for t in ok]
        cpu = [float(t["cpu_time"]) for t in ok if t.get("cpu_time")]
        outcomes = [fit_outcome(method, t) for t in ok]
        conv = outcomes.count("converged")
        # an estimator without a stopping rule (linreg, lambdamart) has none
        conv_col = f"{'-':>4s}" if method in NO_STOPPING_RULE else f"{conv:4d}"
        est = [float(t["est_peak_mb"]) * 2**20 for t in tasks if t.get("est_peak_mb")]
        if sel is not None:
            params = json.loads(sel["params"])
            setting = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in params.items()) or "(none)"
            nnz, ndcg = sel.get("nnz", "-"), _f(sel, "test_NDCG@10", "7.4f")
        else:
            code = os.waitstatus_to_exitcode(status)
            tail = stderr.strip().splitlines()[-1:] or [
                f"stopped at the timeout ({args.timeout:.0f} s)" if code < 0
                or wall >= args.timeout else f"exit status {code}"]
            setting, nnz, ndcg = f"none: {tail[0][:60]}", "-", "-"
        n_grid = grid_size(method)
        fits_col = f"{len(tasks)}/{n_grid}"
        print(f"{method:22s} {fits_col:>5s} {len(ok):3d} {conv_col} "
              f"{sum(fits):9.1f} {max(fits, default=float('nan')):9.1f} {wall:7.0f} "
              f"{peak / 2**30:7.2f} {setting:40s} {nnz:>4s} {ndcg:>7s}", flush=True)
        bad = [t for t in tasks if t["status"] != "ok"]
        for t in bad[:3]:
            print(f"  {t['status']}: {t['params']}: {t['error'][:150]}")
        if method in NO_STOPPING_RULE:
            print(f"  converged n/a: {NO_STOPPING_RULE[method]}")
        if outcomes.count("cap"):
            print(f"  {outcomes.count('cap')} of {len(ok)} stopped at the paper's cap "
                  f"without the certificate: {PAPER_CAP[method][1]}")
        if outcomes.count("unconverged"):
            print(f"  {outcomes.count('unconverged')} of {len(ok)} NOT converged")
        if est and max(est) < peak:
            print(f"  the scale guard's estimate {max(est) / 2**30:.2f} GB is below "
                  f"the measured peak {peak / 2**30:.2f} GB")
        results.append({"method": method, "n_grid": n_grid,
                        "n_fits": len(tasks), "n_ok": len(ok),
                        "n_converged": conv, "n_at_cap": outcomes.count("cap"),
                        "n_na": outcomes.count("n/a"),
                        "n_unconverged": outcomes.count("unconverged"),
                        "est_peak_bytes_max": max(est, default=None),
                        "tasks": [{"params": t["params"], "status": t["status"],
                                   "outcome": o, "converged": t["converged"],
                                   "n_iter": t["n_iter"],
                                   "fit_seconds": float(t["fit_time"]),
                                   "est_peak_bytes": float(t["est_peak_mb"]) * 2**20
                                   if t.get("est_peak_mb") else None,
                                   "warnings": t.get("warnings", "")[:300]}
                                  for t, o in zip(ok, outcomes)],
                        "fit_seconds": fits,
                        "fit_seconds_sum": sum(fits), "cpu_seconds": cpu,
                        "cpu_seconds_sum": sum(cpu), "wall": wall,
                        "peak_bytes": peak, "selected": sel,
                        "normalize": NORMALIZE.get(method, (None,))[0],
                        "errors": [(t["params"], t["error"]) for t in bad]})
        if method in NORMALIZE:
            print(f"  --normalize {NORMALIZE[method][0]}: {NORMALIZE[method][1]}")
        if on_result is not None:
            on_result(results)
    return results


def load_only(root):
    """Load the fold as a task does, in its own process: (seconds, peak RSS bytes)."""
    code = ("import time; from refimpl.experiments.folds import load_fold; "
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
    ap.add_argument("--full", action="store_true",
                    help="every method's full registry grid on a dask "
                         "LocalCluster (see main_full) instead of SETTINGS")
    ap.add_argument("--workers", type=int, default=2,
                    help="dask workers of --full (default 2)")
    ap.add_argument("--json", default=None,
                    help="also write the results to this JSON file")
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
    if args.full:
        def write(results):
            # after every method, so a run stopped part-way keeps what it did
            meta = {"queries": args.queries, "seed": args.seed, "real": args.real,
                    "mode": "full", "workers": args.workers, "machine": machine(),
                    "date": time.strftime("%Y-%m-%d", time.gmtime()),
                    "results": results}
            for path in [out / "bench_mslr_scale_full.json", args.json]:
                if path:
                    with open(path, "w") as f:
                        json.dump(meta, f, indent=1, default=str)

        main_full(args, root, methods, out, on_result=write)
        print(f"(results in {out})")
        return
    seconds, peak = load_only(root)
    print(f"loading Fold1 alone (a process that only loads it): {seconds:.1f} s, "
          f"peak RSS {peak / 2**30:.2f} GB; a method's peak below is at least this")
    header = (f"{'method':17s} {'setting':46s} {'backend':23s} {'load s':>7s} "
              f"{'fit s':>8s} {'peak GB':>8s} {'est GB':>7s} {'n_iter':>7s} "
              f"{'conv':>5s} {'nnz':>4s} {'NDCG@10':>8s}  note")
    print(header)
    print("-" * len(header))
    results = []
    for method in methods:
        grid, note = SETTINGS.get(method, ([], "no fixed setting: registry grid"))
        if method in SKIP and not args.no_skip:
            print(f"{method:17s} {','.join(grid) or '(none)':46s} {'-':23s} "
                  f"{'-':>7s} {'-':>8s} {'-':>8s} {'-':>7s} {'-':>7s} {'-':>5s} "
                  f"{'-':>4s} {'-':>8s}  {SKIP[method]}", flush=True)
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
                    f"{peak / 2**30:8.2f} {'-':>7s} {'-':>7s} {'-':>5s} {'-':>4s} "
                    f"{'-':>8s}  "
                    f"no result after {wall:.0f} s: {tail[0][:200]}")
        elif row["status"] != "ok":
            line = (f"{method:17s} {setting:46s} {row.get('backend') or '-':23s} "
                    f"{_f(row, 'load_time', '7.1f')} {'-':>8s} {peak / 2**30:8.2f} "
                    f"{'-':>7s} "
                    f"{'-':>7s} {'-':>5s} {'-':>4s} {'-':>8s}  "
                    f"{row['status']}: {row['error']}")
        else:
            est = float(row["est_peak_mb"]) / 1024
            line = (f"{method:17s} {setting:46s} {row['backend']:23s} "
                    f"{_f(row, 'load_time', '7.1f')} {_f(row, 'fit_time', '8.1f')} "
                    f"{peak / 2**30:8.2f} {est:7.2f} {row['n_iter']:>7s} "
                    f"{str(row['converged'])[:5]:>5s} {row.get('nnz') or '-':>4s} "
                    f"{_f(row, 'test_NDCG@10', '8.4f')}  {note}")
        print(line, flush=True)
        results.append({"method": method, "setting": setting, "peak_bytes": peak,
                        "wall": wall, "row": row})
    ref = next((r["row"] for r in results
                if r["method"] == "ranksvm" and r["row"] and r["row"]["status"] == "ok"),
               None)
    if ref:
        # wall time moves with the machine's load while one fit runs; the
        # fitting thread's CPU time (the runner's cpu_time) much less
        print(f"fit time / RankSVM's in this run (wall {float(ref['fit_time']):.1f} s, "
              f"CPU {float(ref['cpu_time']):.1f} s):")
        for r in results:
            if r["row"] and r["row"]["status"] == "ok" and r["method"] != "ranksvm":
                r["ratio_to_ranksvm"] = float(r["row"]["fit_time"]) / float(ref["fit_time"])
                r["cpu_ratio_to_ranksvm"] = (float(r["row"]["cpu_time"])
                                             / float(ref["cpu_time"]))
                print(f"  {r['method']:17s} wall {r['ratio_to_ranksvm']:6.2f}x  "
                      f"CPU {r['cpu_ratio_to_ranksvm']:6.2f}x  "
                      f"nnz {r['row'].get('nnz')}/{r['row'].get('n_features')}")
    meta = {"queries": args.queries, "seed": args.seed, "real": args.real,
            "mode": "settings", "load_seconds": seconds, "load_peak_bytes": peak,
            "machine": machine(), "results": results}
    for path in [out / "bench_mslr_scale.json", args.json]:
        if path:
            with open(path, "w") as f:
                json.dump(meta, f, indent=1, default=str)
    print(f"(peak GB: maximum resident set of the runner process, data included; "
          f"est GB: the scale guard's estimate; results in {out})")


if __name__ == "__main__":
    main()
