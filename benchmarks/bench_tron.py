"""End-to-end RankSVM (TRON + tree backend) fit times beside calibration figures.

``refimpl.estimators.RankSVM(tol=1e-3, backend="tree")`` (selection tree,
Lee & Lin 2014's Tree-TRON), timed after a JIT warm-up on a tiny problem
(numba caches the compiled kernels on disk).  Each fit time is printed
beside a calibration figure for a compiled C/C++ implementation and the
ratio ours / theirs; seconds are printed, never asserted.

(a) MQ2008 Fold1 train, C = 2^7 (Lee & Lin's Table 3 choice for MQ2008),
    when ``LETOR_HOME`` is set.  Calibration: the compiled LIBLINEAR
    ranksvm extension (``-s 8``) trains it in well under 0.1 s on this
    machine class; ratio printed against 0.1 s.
(b) Synthetic 301,916 x 136, 2,500 queries, 5 levels
    (``benchmarks/_synthetic.py``), C = 1, eps = 1e-3.  Calibration 0.75 s;
    **target: within 1.5x**.  Also Newton and CG iterations, and where the
    fit time goes (fun / grad / hess_vec, from an instrumented TRON run on
    the same objective).
(c) ``--mslr`` (off by default: about 3 GB of memory, a minute or more):
    synthetic data shaped like MSLR-WEB30K fold 1 (Lee & Lin's Table 2:
    2,270,296 documents, 136 features, 5 levels, 18,919 queries, about 120
    documents per query), generated in place by ``benchmarks/_synthetic.py``.
    C = 2^3 = 8, the value Lee & Lin's Table 3 selects for MSLR 30k with
    the L2 loss (by pairwise accuracy and by NDCG alike), i.e. the setting
    of their Table 5 (``--mslr-C`` overrides).  Prints the fit time beside
    their 1,601.6 s for Tree-TRON on the real MSLR 30k (Intel Xeon E5504,
    2.5 GHz), the cost of one value+grad and one hess_vec at that size (the
    transferable numbers: uniform i.i.d. features make a well-conditioned
    problem that needs far fewer CG iterations than the real data), and the
    peak memory: ``ru_maxrss`` after data generation and after the fit; the
    kernel's peak-RSS counter is reset through ``/proc/self/clear_refs``
    before each (when allowed), so the two are the peaks of generation and
    of the fit alone.  Memory budget: under 8 GB.

Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` (``make bench`` sets
them); ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _synthetic import make_lean_letor  # noqa: E402
from _timing import warm_up_fits  # noqa: E402

from refimpl.data import load_letor_fold  # noqa: E402
from refimpl.estimators import RankSVM  # noqa: E402
from refimpl.losses import L2Regularized, PairwiseSquaredHinge  # noqa: E402
from refimpl.solvers.tron import tron  # noqa: E402

LIBLINEAR_MQ2008_S = 0.1  # "well under 0.1 s" (compiled ranksvm extension, -s 8)
CALIBRATION_SYNTH_S = 0.75
TARGET_SYNTH_RATIO = 1.5
PAPER_MSLR_S = 1601.6  # Lee & Lin 2014, Table 5, Tree-TRON on MSLR 30k
MSLR_SHAPE = {"n_docs": 2_270_296, "n_features": 136, "n_queries": 18_919,
              "n_levels": 5}
MEMORY_BUDGET_GB = 8.0


def maxrss_gb():
    """Peak resident set size so far, in GB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def reset_peak_rss():
    """Reset the kernel's peak-RSS counter (Linux >= 4.0); False if refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def ranksvm(C):
    return RankSVM(C=C, tol=1e-3, backend="tree")


def timed_fit(X, y, qid, C):
    t0 = time.perf_counter()
    model = ranksvm(C).fit(X, y, qid)
    return time.perf_counter() - t0, model


def iterations(model):
    h = model.history_
    return int(model.n_iter_), int(h["cg_iter"][-1]), int(h["n_fun"][-1])


def warm_up():
    warm_up_fits(ranksvm(1.0).fit)


def report_fit(times, model, calib, calib_text, target=None):
    best, med = min(times), statistics.median(times)
    n_iter, n_cg, n_fun = iterations(model)
    print(f"    fit: best {best:.3f} s, median {med:.3f} s over {len(times)} runs; "
          f"{n_iter} Newton iterations, {n_cg} CG iterations, {n_fun} function "
          f"evaluations, converged={model.converged_}")
    goal = "" if target is None else f"   (target <= {target}x)"
    print(f"    calibration: {calib_text}")
    print(f"    ratio ours / {calib:g} s = {best / calib:.2f}x (best), "
          f"{med / calib:.2f}x (median){goal}")


class _Timed:
    """Wraps an objective and accumulates wall time per method."""

    def __init__(self, objective):
        self.obj = objective
        self.n_features = objective.n_features
        self.t = {"fun": 0.0, "grad": 0.0, "hess_vec": 0.0}
        self.n = {"fun": 0, "grad": 0, "hess_vec": 0}

    def _call(self, name, *a):
        t0 = time.perf_counter()
        out = getattr(self.obj, name)(*a)
        self.t[name] += time.perf_counter() - t0
        self.n[name] += 1
        return out

    def fun(self, w):
        return self._call("fun", w)

    def grad(self, w):
        return self._call("grad", w)

    def hess_vec(self, s):
        return self._call("hess_vec", s)


def breakdown(X, y, qid, C, fit_time):
    """Where a fit's time goes: set-up, fun, grad, hess_vec, TRON's own work."""
    t0 = time.perf_counter()
    loss = PairwiseSquaredHinge(X, y, qid, backend="tree")
    setup = time.perf_counter() - t0
    obj = _Timed(L2Regularized(loss, C))
    t0 = time.perf_counter()
    tron(obj, tol=1e-3)
    total = time.perf_counter() - t0
    v = np.ones(X.shape[1])
    u = np.ones(X.shape[0])
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        X @ v
        X.T @ u
    pair = (time.perf_counter() - t0) / reps
    n_mv = obj.n["fun"] + obj.n["grad"] + 2 * obj.n["hess_vec"]
    print(f"    where the time goes (instrumented run, TRON {total:.3f} s + set-up "
          f"{setup:.3f} s; the RankSVM.fit above: {fit_time:.3f} s):")
    print(f"      {'validation + loss set-up (levels, grouping)':<44} {setup:7.3f} s")
    for name in ("fun", "grad", "hess_vec"):
        print(f"      {name + ' x ' + str(obj.n[name]):<44} {obj.t[name]:7.3f} s "
              f"{obj.t[name] / total:6.1%}")
    other = total - sum(obj.t.values())
    print(f"      {'TRON itself (CG vector updates, norms)':<44} {other:7.3f} s "
          f"{other / total:6.1%}")
    print(f"      of which the {n_mv} dense mat-vecs (X w, X^T u; {pair / 2 * 1e3:.1f} ms "
          f"each) ~ {n_mv * pair / 2:.3f} s = {n_mv * pair / 2 / total:.0%} of TRON")


def op_costs(X, y, qid, C, w, reps=3):
    """Best-of-``reps`` seconds of value+grad, hess_vec and X v + X^T u at ``w``."""
    obj = L2Regularized(PairwiseSquaredHinge(X, y, qid, backend="tree"), C)
    s = np.random.default_rng(0).normal(size=X.shape[1])
    u = np.random.default_rng(1).normal(size=X.shape[0])
    best = {"vg": np.inf, "hv": np.inf, "mv": np.inf}
    for _ in range(reps):
        t0 = time.perf_counter()
        obj.value_grad(w)
        t1 = time.perf_counter()
        obj.hess_vec(s)
        t2 = time.perf_counter()
        X @ s
        X.T @ u
        t3 = time.perf_counter()
        best = {"vg": min(best["vg"], t1 - t0), "hv": min(best["hv"], t2 - t1),
                "mv": min(best["mv"], t3 - t2)}
    return best


def part_a(args):
    print("\n(a) MQ2008 Fold1 train, C = 2^7, tol = 1e-3, backend='tree'")
    if not os.environ.get("LETOR_HOME"):
        print("    skipped: LETOR_HOME is not set")
        return
    try:
        X, y, qid = load_letor_fold("MQ2008", 1).train
    except FileNotFoundError as exc:
        print(f"    skipped: {exc}")
        return
    print(f"    {X.shape[0]:,} documents x {X.shape[1]} features, "
          f"{len(np.unique(qid))} queries")
    times = []
    for _ in range(args.repeat_a):
        t, model = timed_fit(X, y, qid, 2.0**7)
        times.append(t)
    report_fit(times, model, LIBLINEAR_MQ2008_S,
               "compiled LIBLINEAR ranksvm extension (-s 8): well under 0.1 s "
               "on this machine class")


def part_b(args):
    print("\n(b) synthetic 301,916 x 136, 2,500 queries, 5 levels, C = 1, "
          "eps = 1e-3, backend='tree'")
    X, y, qid, _ = make_lean_letor(301_916, 136, 2_500, 5, seed=0)
    p = PairwiseSquaredHinge(X, y, qid, backend="tree").n_pairs
    print(f"    {X.shape[0]:,} x {X.shape[1]}, {p:,} pairs ({p / X.shape[0]:.1f} "
          f"per document), label shares {np.round(np.bincount(y) / len(y), 3)}")
    times = []
    for _ in range(args.repeat_b):
        t, model = timed_fit(X, y, qid, 1.0)
        times.append(t)
    report_fit(times, model, CALIBRATION_SYNTH_S,
               f"{CALIBRATION_SYNTH_S} s (issue's figure for this problem)",
               target=TARGET_SYNTH_RATIO)
    breakdown(X, y, qid, 1.0, min(times))


def part_c(args):
    C = args.mslr_C
    shape = MSLR_SHAPE
    print(f"\n(c) MSLR-WEB30K-shaped synthetic data: {shape['n_docs']:,} x "
          f"{shape['n_features']}, {shape['n_queries']:,} queries, "
          f"{shape['n_levels']} levels; C = {C:g}"
          + (" (Lee & Lin Table 3, MSLR 30k, L2 loss)" if C == 8.0 else "")
          + ", tol = 1e-3, backend='tree'")
    print(f"    ru_maxrss before data generation: {maxrss_gb():.2f} GB"
          " (includes the earlier parts)")
    reset = reset_peak_rss()
    t0 = time.perf_counter()
    X, y, qid, _ = make_lean_letor(shape["n_docs"], shape["n_features"],
                                   shape["n_queries"], shape["n_levels"], seed=0)
    gen = time.perf_counter() - t0
    gen_peak = maxrss_gb()
    print(f"    data generated in {gen:.1f} s; X = {X.nbytes / 1e9:.2f} GB; "
          f"ru_maxrss after generation: {gen_peak:.2f} GB"
          + (" (counter reset before generation)" if reset else ""))
    p = PairwiseSquaredHinge(X, y, qid, backend="tree").n_pairs
    print(f"    {p:,} preference pairs ({p / X.shape[0]:.1f} per document; "
          f"MSLR 30k fold 1: 101,312,036 = 44.6 per document)")
    reset = reset_peak_rss()
    t, model = timed_fit(X, y, qid, C)
    fit_peak = maxrss_gb()
    per_op = op_costs(X, y, qid, C, model.coef_)
    n_iter, n_cg, n_fun = iterations(model)
    print(f"    fit: {t:.1f} s; {n_iter} Newton iterations, {n_cg} CG iterations, "
          f"{n_fun} function evaluations, converged={model.converged_}")
    print(f"    Lee & Lin 2014, Table 5: Tree-TRON on real MSLR 30k, {PAPER_MSLR_S:,} s "
          f"(Xeon E5504 2.5 GHz); ratio ours / paper = {t / PAPER_MSLR_S:.3f}x "
          "(different data: iteration counts are not comparable one to one)")
    print(f"    cost per operation at this size (at the solution): value+grad "
          f"{per_op['vg']:.2f} s, hess_vec {per_op['hv']:.2f} s, two mat-vecs "
          f"X v + X^T u {per_op['mv']:.2f} s; so a fit needing N_f function and "
          f"N_cg CG\n    iterations costs about N_f x {per_op['vg']:.2f} + N_cg x "
          f"{per_op['hv']:.2f} s (this uniform-feature data is well conditioned; "
          "real MSLR features are\n    correlated and need far more CG iterations)")
    if reset:
        print(f"    ru_maxrss after fit = peak during the fit alone (counter reset "
              f"before fit): {fit_peak:.2f} GB (data included)")
    else:
        print(f"    ru_maxrss after fit (whole process): {fit_peak:.2f} GB")
    peak = max(gen_peak, fit_peak)
    print(f"    process peak {peak:.2f} GB: "
          f"{'within' if peak < MEMORY_BUDGET_GB else 'OVER'} the "
          f"{MEMORY_BUDGET_GB:g} GB budget")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--mslr", action="store_true",
                    help="also run (c), the MSLR-WEB30K-shaped fit (~3 GB, a minute or more)")
    ap.add_argument("--mslr-C", type=float, default=8.0,
                    help="C for (c); 2^3 is Lee & Lin's Table 3 choice for MSLR 30k")
    ap.add_argument("--repeat-a", type=int, default=7, help="fits timed in (a)")
    ap.add_argument("--repeat-b", type=int, default=3, help="fits timed in (b)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["a", "b"],
                    help="parts to skip")
    args = ap.parse_args(argv)
    print(f"bench_tron: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    warm_up()
    if "a" not in args.skip:
        part_a(args)
    if "b" not in args.skip:
        part_b(args)
    if args.mslr:
        part_c(args)


if __name__ == "__main__":
    main()
