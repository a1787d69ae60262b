"""End-to-end RankSVM (TRON, default backend) against LIBLINEAR's ranksvm, side by side.

``refimpl.estimators.RankSVM(tol=1e-3)`` with its default ``backend="auto"``
(the backend of the measured cost model, ``benchmarks/bench_backends.py``;
the backend it picked is printed; with the tree: the selection tree,
one pass over ``X`` per Hessian product and per value + gradient, TRON with
score reuse, on the problem's pair support: without the queries that have
no pair and the features that are 0 on the others) is timed, after a JIT warm-up, alternately with the LIBLINEAR
ranksvm peer (Lee & Lin 2014's own code, ``train -s 8``), built in a
scratch directory from ``../shared/peers`` with the solve-timer patch
(``benchmarks/_peers.py``; skipped, saying so, when it cannot be built),
on the same file, with the same ``C`` and ``eps``.  Ours is the whole
``RankSVM.fit`` (validation, grouping, loss set-up and TRON); the peer's
is its ``SOLVE_SECONDS`` (query grouping, trees and TRON, no parsing).
Both minimise ``w'w / 2 + C sum_pairs max(0, 1 - w'(x_i - x_j))^2`` and
stop at ``||grad f(w)|| <= eps ||grad f(0)||``; the objective values
reached are compared (relative difference, computed with the same
objective code).  Each round times both; the ratio is printed per round
(best and range) and best against best.  A third column times the
previous path in the same rounds: two BLAS mat-vecs per product and
per value + gradient, no score reuse.

(a) MQ2008 Fold1 train, C = 2^7 (Lee & Lin's Table 3 choice for MQ2008),
    when ``LETOR_HOME`` is set; written for the peer with ``write_letor``
    (exact).  Goal: ours <= 0.5x the peer's solve.
(b) Synthetic 301,916 x 136, 2,500 queries, 5 levels
    (``benchmarks/_synthetic.py``), C = 1, eps = 1e-3, values rounded to 6
    decimals and written as text (``_peers.write_fixed_decimals``), read
    back by ``refimpl.data.load_letor`` so both solve the same numbers.
    **Goal: ours <= 0.35x the peer's solve.**  Also Newton and CG
    iterations, and where the fit time goes (fun / hess_vec / trial values,
    from an instrumented TRON run on the same objective).
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
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers import build_peer, read_model_w, run_train, write_fixed_decimals
from _synthetic import make_lean_letor
from _timing import warm_up_fits

from refimpl.data import load_letor, load_letor_fold, write_letor
from refimpl.estimators import RankSVM
from refimpl.losses import L2Regularized, PairwiseSquaredHinge
from refimpl.solvers.tron import tron

GOAL_MQ2008 = 0.5
GOAL_SYNTH = 0.35
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


def ranksvm(C, backend="auto"):
    return RankSVM(C=C, tol=1e-3, backend=backend)


def timed_fit(X, y, qid, C):
    t0 = time.perf_counter()
    model = ranksvm(C).fit(X, y, qid)
    return time.perf_counter() - t0, model


def iterations(model):
    h = model.history_
    return int(model.n_iter_), int(h["cg_iter"][-1]), int(h["n_fun"][-1])


def warm_up():
    warm_up_fits(ranksvm(1.0, "pairs").fit, ranksvm(1.0, "tree").fit)


class _Timed:
    """Wraps an objective and accumulates wall time per method.

    Forwards the score-reuse methods, so TRON takes the same path as in
    ``RankSVM.fit``.
    """

    NAMES = ("fun", "grad", "hess_vec", "hess_vec_scores", "fun_from_scores",
             "accept_trial", "last_scores")

    def __init__(self, objective):
        self.obj = objective
        self.n_features = objective.n_features
        self.score_reuse = bool(getattr(objective, "score_reuse", False))
        self.t = dict.fromkeys(self.NAMES, 0.0)
        self.n = dict.fromkeys(self.NAMES, 0)

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

    def hess_vec_scores(self, s):
        return self._call("hess_vec_scores", s)

    def fun_from_scores(self, w, z):
        return self._call("fun_from_scores", w, z)

    def accept_trial(self, w):
        return self._call("accept_trial", w)

    def last_scores(self):
        return self._call("last_scores")


class _NoReuse:
    """The objective without score reuse (TRON's fallback path)."""

    def __init__(self, objective):
        self.obj = objective
        self.n_features = objective.n_features

    def fun(self, w):
        return self.obj.fun(w)

    def grad(self, w):
        return self.obj.grad(w)

    def hess_vec(self, s):
        return self.obj.hess_vec(s)


def breakdown(X, y, qid, C, fit_time):
    """Where a fit's time goes: set-up, fun, grad, Hessian products, trials."""
    t0 = time.perf_counter()
    loss = PairwiseSquaredHinge(X, y, qid, backend="tree")
    setup = time.perf_counter() - t0
    obj = _Timed(L2Regularized(loss, C))
    t0 = time.perf_counter()
    tron(obj, tol=1e-3)
    total = time.perf_counter() - t0
    print(f"    where the time goes (instrumented run, TRON {total:.3f} s + set-up "
          f"{setup:.3f} s; one_pass_={loss.one_pass_}; the best fit above: "
          f"{fit_time:.3f} s):")
    print(f"      {'validation + loss set-up (levels, grouping)':<48} {setup:7.3f} s")
    labels = {"fun": "fun (one pass: value + gradient)",
              "grad": "grad (after fun: free; after accept: X^T dz, X w)",
              "accept_trial": "accept_trial (the trial's state adopted)",
              "hess_vec_scores": "hess_vec_scores (one pass: H s and X s)",
              "hess_vec": "hess_vec",
              "fun_from_scores": "fun_from_scores (trial value, no pass)",
              "last_scores": "last_scores"}
    for name in obj.NAMES:
        if obj.n[name]:
            print(f"      {labels[name] + ' x ' + str(obj.n[name]):<48} "
                  f"{obj.t[name]:7.3f} s {obj.t[name] / total:6.1%}")
    other = total - sum(obj.t.values())
    print(f"      {'TRON itself (CG vector updates, norms)':<48} {other:7.3f} s "
          f"{other / total:6.1%}")


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


def old_path_fit(X, y, qid, C):
    """The previous path: two BLAS mat-vecs per product, no score reuse."""
    t0 = time.perf_counter()
    loss = PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass=False)
    res = tron(_NoReuse(L2Regularized(loss, C)), tol=1e-3)
    return time.perf_counter() - t0, res


def side_by_side(name, X, y, qid, C, data_file, peer, scratch, rounds, goal):
    """Alternate our fit, the old path and the peer's solve; print ratios."""
    ours, old, theirs = [], [], []
    model = None
    w_peer = None
    for _ in range(rounds):
        t, model = timed_fit(X, y, qid, C)
        ours.append(t)
        old.append(old_path_fit(X, y, qid, C)[0])
        if peer is not None:
            run = run_train(peer, data_file, C, 1e-3, scratch / "model")
            theirs.append(run["solve"])
            w_peer = read_model_w(run["model"])
    n_iter, n_cg, n_fun = iterations(model)
    best, med = min(ours), statistics.median(ours)
    print(f"    ours (RankSVM(C={C:g}), backend='auto' -> {model.backend_!r}): "
          f"best {best:.3f} s, median {med:.3f} s over {rounds} "
          f"rounds; {n_iter} Newton iterations, {n_cg} CG iterations, {n_fun} "
          f"function evaluations, converged={model.converged_}")
    print(f"    previous path (two BLAS mat-vecs per product, no score reuse): "
          f"best {min(old):.3f} s; ours / previous = {best / min(old):.2f}x "
          f"(per round {min(a / b for a, b in zip(ours, old)):.2f}-"
          f"{max(a / b for a, b in zip(ours, old)):.2f}x)")
    if peer is None:
        print("    LIBLINEAR: skipped (see above)")
        return best
    r = [a / b for a, b in zip(ours, theirs)]
    print(f"    LIBLINEAR ranksvm solve (SOLVE_SECONDS): best {min(theirs):.3f} s, "
          f"median {statistics.median(theirs):.3f} s")
    print(f"    ratio ours / LIBLINEAR: {best / min(theirs):.2f}x best vs best, "
          f"per round {min(r):.2f}-{max(r):.2f}x   (goal <= {goal}x)")
    obj = L2Regularized(PairwiseSquaredHinge(X, y, qid, backend="tree"), C)
    f_ours, f_peer = obj.fun(model.coef_), obj.fun(w_peer)
    print(f"    objective reached: ours {f_ours:.12g}, LIBLINEAR {f_peer:.12g}, "
          f"relative difference {(f_ours - f_peer) / abs(f_peer):.2e}")
    g0 = np.linalg.norm(obj.grad(np.zeros(X.shape[1])))
    r = [np.linalg.norm(obj.grad(v)) / g0 for v in (model.coef_, w_peer)]
    print(f"    ||grad f(w)|| / ||grad f(0)||: ours {r[0]:.2e}, LIBLINEAR "
          f"{r[1]:.2e} (both stop at eps = 1e-3; different stopping points "
          "differ in f by up to that order)")
    return best


def part_a(args, peer, scratch):
    print("\n(a) MQ2008 Fold1 train, C = 2^7, eps = 1e-3, the default backend")
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
    data = scratch / "mq2008_fold1_train.txt"
    write_letor(data, X, y, qid)
    side_by_side("MQ2008", X, y, qid, 2.0**7, data, peer, scratch,
                 args.repeat_a, GOAL_MQ2008)


def part_b(args, peer, scratch):
    print("\n(b) synthetic 301,916 x 136, 2,500 queries, 5 levels, C = 1, "
          "eps = 1e-3, the default backend")
    X, y, qid, _ = make_lean_letor(301_916, 136, 2_500, 5, seed=0)
    data = scratch / "synthetic_301916.txt"
    t0 = time.perf_counter()
    size = write_fixed_decimals(data, X, y, qid, decimals=6)
    del X
    X, y, qid = load_letor(data, cache=False)
    print(f"    written with 6 decimals ({size / 1e6:.0f} MB) and read back "
          f"in {time.perf_counter() - t0:.1f} s")
    p = PairwiseSquaredHinge(X, y, qid, backend="tree").n_pairs
    print(f"    {X.shape[0]:,} x {X.shape[1]}, {p:,} pairs ({p / X.shape[0]:.1f} "
          f"per document), label shares "
          f"{np.round(np.bincount(y.astype(int)) / len(y), 3)}")
    best = side_by_side("synthetic", X, y, qid, 1.0, data, peer, scratch,
                        args.repeat_b, GOAL_SYNTH)
    breakdown(X, y, qid, 1.0, best)
    data.unlink()


def part_c(args):
    C = args.mslr_C
    shape = MSLR_SHAPE
    print(f"\n(c) MSLR-WEB30K-shaped synthetic data: {shape['n_docs']:,} x "
          f"{shape['n_features']}, {shape['n_queries']:,} queries, "
          f"{shape['n_levels']} levels; C = {C:g}"
          + (" (Lee & Lin Table 3, MSLR 30k, L2 loss)" if C == 8.0 else "")
          + ", tol = 1e-3, the default backend")
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
    ap.add_argument("--repeat-a", type=int, default=7, help="rounds timed in (a)")
    ap.add_argument("--repeat-b", type=int, default=3, help="rounds timed in (b)")
    ap.add_argument("--no-peer", action="store_true", help="skip LIBLINEAR")
    ap.add_argument("--skip", nargs="*", default=[], choices=["a", "b"],
                    help="parts to skip")
    args = ap.parse_args(argv)
    print(f"bench_tron: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    warm_up()
    scratch = Path(tempfile.mkdtemp(prefix="bench_tron_"))
    try:
        peer, why = (None, "--no-peer") if args.no_peer else build_peer(scratch)
        print(f"peer: {'LIBLINEAR ranksvm 2.11, ' + str(peer) if peer else 'skipped: ' + why}")
        if "a" not in args.skip:
            part_a(args, peer, scratch)
        if "b" not in args.skip:
            part_b(args, peer, scratch)
        if args.mslr:
            part_c(args)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
