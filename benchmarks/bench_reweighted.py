"""Reweighted l1 (Laporte et al. 2014, Algorithm 2): warm vs cold starts, and vs cvxpy.

Every comparison is a ratio measured side by side in one run; seconds are
printed, never asserted.

Problem: ``F(w) = C sum_P max(0, 1 - w^T (x_i - x_j))^2 + sum_j g(|w_j|)``
for the penalties ``log`` (eps = 0.1), ``mcp`` (gamma = 2, lam = 1/C) and
``lp`` (p = 0.5, eps = 1e-3) of ``refimpl.nonconvex``, at C = 1e-2
(``--C``), solved by ``refimpl.solvers.reweighted_l1`` with the settings of
``SparseRankSVM(solver="fista")``: FISTA with backtracking for every
weighted-l1 subproblem (eq. 13), gradient-mapping tolerance 1e-6 relative to the first solve's
initial norm (one absolute target for every pass), outer tolerance
``||w^k - w^{k-1}||_inf <= 1e-4 ||w^k||_inf``, at most 300 passes (the estimator's safeguard).

Data: ``make_synthetic_letor(n_queries=30, docs_per_query=(5, 36),
n_informative=6, n_redundant=10, n_noise=30, seed=0)`` (MQ2008's feature
count and documents per query, 30 queries: 644 documents, 4,251 pairs,
``--n-queries``; small so that cvxpy on every subproblem fits the default
run) and, when ``LETOR_HOME`` has it, MQ2008 Fold1 train (9,630 documents,
52,325 pairs).  The default run takes about 1-2 minutes, most of it the
MQ2008 cold starts and the cvxpy solves.

(1) **Warm vs cold starts.**  ``warm_start=True`` starts each pass at the
    previous solution with the previous Lipschitz estimate (the paper's
    "warm-starting scheme", section IV-C); ``warm_start=False`` restarts
    every pass from 0 and re-estimates ``L``.  Same tolerances.  Printed:
    outer passes, total FISTA iterations, function evaluations, seconds
    (best of ``--rounds``, warm and cold interleaved), the final objective,
    support, and how far apart the two end points are (the problem is
    non-convex and the subproblems are solved to 1e-6, so the two paths
    may separate), with the ratios cold/warm.
(2) **vs cvxpy per subproblem.**  Every weighted-l1 subproblem of the warm
    run (its weights ``beta^k``) is solved by cvxpy with CLARABEL (default
    tolerances), one ``cp.Problem`` per penalty with ``beta`` a
    ``cp.Parameter`` (canonicalised once, at the first solve, which is
    counted): summed ``prob.solve`` wall time and ``solver_stats.solve_time``
    against the warm run's total time, and the largest relative gap between
    the subproblem objectives reached by FISTA and by CLARABEL.  On MQ2008
    this runs only when the projected cvxpy time (one measured solve of the
    shared first subproblem, ``beta = 1``, times the number of subproblems)
    is below ``--cvxpy-budget`` seconds (60); otherwise the projection is
    printed and labelled as such.

Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` (``make bench`` sets
them); ``--help`` lists the options, ``--skip`` drops parts.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _letor import mq2008_fold1_train, mq2008_shaped
from _timing import warm_up_fits
from sklearn.exceptions import ConvergenceWarning

from refimpl.estimators import SparseRankSVM
from refimpl.losses import PairwiseSquaredHinge
from refimpl.nonconvex import make_concave_penalty
from refimpl.pairs import n_pairs, pair_difference_matrix
from refimpl.losses import ScaledSmooth
from refimpl.solvers import reweighted_l1

PENALTIES = ("log", "mcp", "lp")


def run_scheme(smooth, penalty, warm, args):
    """``reweighted_l1`` with the estimator's settings, counting inner max_iter hits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = reweighted_l1(smooth, penalty, warm_start=warm, tol=args.tol,
                            tol_outer=args.tol_outer, max_outer=args.max_outer,
                            max_iter=args.max_iter)
    res.details["inner_max_iter_hits"] = sum(
        issubclass(w.category, ConvergenceWarning) for w in caught)
    return res


def time_warm_cold(smooth, penalty, args, rounds):
    """Warm and cold runs in alternation; returns name -> (times, last result)."""
    out = {"warm": ([], None), "cold": ([], None)}
    for _ in range(rounds):
        for name, warm in (("warm", True), ("cold", False)):
            t0 = time.perf_counter()
            res = run_scheme(smooth, penalty, warm, args)
            out[name] = (out[name][0] + [time.perf_counter() - t0], res)
    return out


class CvxpyWeightedL1:
    """``C sum_squares(pos(1 - K w)) + sum(beta * |w|)`` with ``beta`` a parameter."""

    def __init__(self, K, C):
        import cvxpy as cp

        self.cp = cp
        self.w = cp.Variable(K.shape[1])
        self.beta = cp.Parameter(K.shape[1], nonneg=True)
        obj = (C * cp.sum_squares(cp.pos(1 - K @ self.w))
               + cp.sum(cp.multiply(self.beta, cp.abs(self.w))))
        self.prob = cp.Problem(cp.Minimize(obj))

    def solve(self, beta):
        self.beta.value = np.asarray(beta, dtype=np.float64)
        t0 = time.perf_counter()
        self.prob.solve(solver=self.cp.CLARABEL)
        wall = time.perf_counter() - t0
        return {"F": float(self.prob.value), "wall": wall,
                "solve_time": float(self.prob.solver_stats.solve_time),
                "status": self.prob.status}


def row(name, res, seconds, F_ref=None):
    h = res.history
    n_inner = int(sum(h["n_inner"]))
    hits = res.details.get("inner_max_iter_hits", 0)
    note = f"  ({hits} inner solves hit max_iter)" if hits else ""
    print(f"      {name:6s} {res.n_iter:6d} {n_inner:8d} {h['n_fun'][-1]:8d} "
          f"{seconds:9.3f} {h['F'][-1]:16.9g} {h['support'][-1]:8d} "
          f"{'yes' if res.converged else 'NO':>9s}{note}")
    return n_inner


def part1(label, smooth, name, args, rounds, summary):
    penalty = make_concave_penalty(name, C=args.C)
    t = time_warm_cold(smooth, penalty, args, rounds)
    (tw, warm), (tc, cold) = t["warm"], t["cold"]
    print(f"\n    {name}: {penalty!r}")
    print(f"      {'start':6s} {'passes':>6s} {'FISTA it':>8s} {'f evals':>8s} "
          f"{'seconds':>9s} {'final F':>16s} {'support':>8s} {'converged':>9s}")
    n_w = row("warm", warm, min(tw))
    n_c = row("cold", cold, min(tc))
    dF = abs(warm.history["F"][-1] - cold.history["F"][-1]) / abs(warm.history["F"][-1])
    dw = float(np.max(np.abs(warm.w - cold.w)))
    print(f"      end points: |F_warm - F_cold| / F_warm = {dF:.1e}, "
          f"||w_warm - w_cold||_inf = {dw:.1e} (||w_warm||_inf = "
          f"{np.max(np.abs(warm.w)):.3g}); best of {rounds} interleaved")
    beta, on = warm.details["weights"][-1], warm.w != 0
    on_s = f"{beta[on].min():.3g} to {beta[on].max():.3g}" if on.any() else "-"
    off_s = f"{beta[~on].min():.3g}" if (~on).any() else "-"
    print(f"      weights of the last pass g'(|w_j|): on the support {on_s}, "
          f"off it {off_s}")
    r_t, r_i = min(tc) / min(tw), n_c / n_w
    print(f"      cold / warm: time {r_t:.2f}x, FISTA iterations {r_i:.2f}x, "
          f"f evals {cold.history['n_fun'][-1] / warm.history['n_fun'][-1]:.2f}x")
    summary[(label, name)] = {"cold/warm": r_t, "iters": r_i, "warm_s": min(tw),
                              "warm": warm}


def part2(label, K, name, args, summary, budget_note=None):
    """Solve every subproblem of the warm run with cvxpy; returns the seconds spent."""
    entry = summary[(label, name)]
    warm = entry["warm"]
    cvx = CvxpyWeightedL1(K, args.C)
    sols = [cvx.solve(beta) for beta in warm.details["weights"]]
    wall = sum(s["wall"] for s in sols)
    st = sum(s["solve_time"] for s in sols)
    gaps = [(inner["F"][-1] - s["F"]) / abs(s["F"])
            for inner, s in zip(warm.details["inner"], sols)]
    status = sorted({s["status"] for s in sols})
    print(f"    {name}: cvxpy CLARABEL on the {len(sols)} subproblems of the warm "
          f"run: prob.solve {wall:.2f} s wall (first, with canonicalisation, "
          f"{sols[0]['wall']:.2f} s; solver_stats.solve_time {st:.2f} s), status "
          f"{', '.join(status)}")
    print(f"      subproblem objectives (F_FISTA - F_cvxpy) / F_cvxpy in "
          f"[{min(gaps):+.1e}, {max(gaps):+.1e}]")
    r = wall / entry["warm_s"]
    print(f"      cvxpy / warm reweighting: {wall:.2f} s / {entry['warm_s']:.3f} s "
          f"= {r:,.0f}x (solve_time only: {st / entry['warm_s']:,.0f}x)")
    entry["cvxpy/warm"] = f"{r:,.0f}x"
    return wall


def part2_projected(label, K, args, summary):
    """MQ2008: time the shared first subproblem, run the rest if it fits the budget."""
    names = [n for n in PENALTIES if (label, n) in summary]
    n_sub = sum(summary[(label, n)]["warm"].n_iter for n in names)
    try:
        probe = CvxpyWeightedL1(K, args.C).solve(np.ones(K.shape[1]))
    except MemoryError as exc:
        print(f"    cvxpy skipped: out of memory ({exc})")
        return
    projected = probe["wall"] * n_sub
    print(f"    cvxpy probe: the shared first subproblem (beta = 1) takes "
          f"{probe['wall']:.2f} s (solve_time {probe['solve_time']:.2f} s); "
          f"{n_sub} subproblems over {len(names)} penalties -> about "
          f"{projected:.0f} s (budget {args.cvxpy_budget:g} s)")
    if projected > args.cvxpy_budget:
        print("    cvxpy on every subproblem skipped (over budget; --cvxpy-budget "
              "raises it); projected ratios, NOT measured:")
        for n in names:
            e = summary[(label, n)]
            r = probe["wall"] * e["warm"].n_iter / e["warm_s"]
            print(f"      {n}: {e['warm'].n_iter} x {probe['wall']:.2f} s / "
                  f"{e['warm_s']:.3f} s ~ {r:,.0f}x")
            e["cvxpy/warm"] = f"~{r:,.0f}x (projected)"
        return
    for n in names:
        part2(label, K, n, args, summary)


def warm_up():
    warm_up_fits(SparseRankSVM(C=0.1, penalty="log", tol=1e-4, solver="fista").fit,
                 cvxpy=True)


def datasets(args):
    if "synthetic" not in args.skip:
        syn = mq2008_shaped(args.n_queries)
        yield "synthetic", syn.X, syn.y, syn.qid, args.rounds
    if "mq2008" in args.skip:
        return
    fold = mq2008_fold1_train()
    if fold is not None:
        yield "MQ2008 Fold1", *fold, args.rounds_mq


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--C", type=float, default=1e-2, help="loss weight")
    ap.add_argument("--penalties", nargs="*", default=list(PENALTIES),
                    choices=list(PENALTIES))
    ap.add_argument("--n-queries", type=int, default=30,
                    help="queries of the synthetic instance")
    ap.add_argument("--tol", type=float, default=1e-6,
                    help="inner gradient-mapping tolerance (SparseRankSVM's)")
    ap.add_argument("--tol-outer", type=float, default=1e-4,
                    help="outer relative change tolerance (SparseRankSVM's)")
    ap.add_argument("--max-outer", type=int, default=300)
    ap.add_argument("--max-iter", type=int, default=10000,
                    help="FISTA iterations per subproblem")
    ap.add_argument("--rounds", type=int, default=3,
                    help="(1) timed warm/cold runs on the synthetic data (best of)")
    ap.add_argument("--rounds-mq", type=int, default=1,
                    help="(1) timed warm/cold runs on MQ2008 (best of)")
    ap.add_argument("--cvxpy-budget", type=float, default=60.0,
                    help="(2) run cvxpy on MQ2008 only if projected below this (s)")
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["1", "2", "synthetic", "mq2008"],
                    help="parts or data sets to skip ((2) needs (1))")
    args = ap.parse_args(argv)
    print(f"bench_reweighted: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; C = "
          f"{args.C:g}, inner tol {args.tol:g}, tol_outer {args.tol_outer:g}")
    warm_up()
    t_start = time.perf_counter()
    summary = {}
    labels = []
    for label, X, y, qid, rounds in datasets(args):
        labels.append(label)
        loss = PairwiseSquaredHinge(X, y, qid)
        smooth = ScaledSmooth(loss, args.C)
        print(f"\n[{label}] {X.shape[0]:,} documents x {X.shape[1]} features, "
              f"{len(np.unique(qid))} queries, {n_pairs(y, qid):,} pairs, "
              f"backend {loss.backend!r}")
        if "1" in args.skip:
            continue
        print(f"  (1) warm vs cold starts, C = {args.C:g}")
        for name in args.penalties:
            part1(label, smooth, name, args, rounds, summary)
        if "2" in args.skip:
            continue
        t0 = time.perf_counter()
        K = pair_difference_matrix(X, y, qid)
        print(f"\n  (2) every weighted-l1 subproblem with cvxpy (dense K "
              f"{K.shape[0]:,} x {K.shape[1]} built in {time.perf_counter() - t0:.2f} "
              "s, not counted)")
        if label == "synthetic":
            for name in args.penalties:
                part2(label, K, name, args, summary)
        else:
            part2_projected(label, K, args, summary)
    if summary:
        print(f"\nsummary (C = {args.C:g}), ratios measured side by side in this run:")
        print(f"    {'data set':14s} {'penalty':8s} {'cold/warm time':>15s} "
              f"{'cold/warm FISTA it':>19s} {'cvxpy/warm time':>24s}")
        for label in labels:
            for name in args.penalties:
                e = summary.get((label, name))
                if e is None:
                    continue
                print(f"    {label:14s} {name:8s} {e['cold/warm']:14.2f}x "
                      f"{e['iters']:18.2f}x {e.get('cvxpy/warm', 'not run'):>24s}")
    total = time.perf_counter() - t_start
    print(f"\ntotal benchmark time after warm-up: {total:.1f} s")


if __name__ == "__main__":
    main()
