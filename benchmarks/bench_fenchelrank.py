"""FenchelRank (numba) against NumPy and cvxpy, and the tree backend against pairs.

Every comparison is a ratio measured side by side in one run; seconds are
printed, never asserted.  r = 4 throughout (margin 1/r, as eq. 4 needs).

(a) **FenchelRank vs cvxpy and vs NumPy** on MQ2008-fold-sized data:
    ``make_synthetic_letor(n_queries=470, docs_per_query=(5, 36),
    n_informative=6, n_redundant=10, n_noise=30, seed=0)`` (about 10k
    documents, 46 features, 65k pairs) and, when ``LETOR_HOME`` is set,
    MQ2008 Fold1 train.  Protocol:

    1. ``FenchelRank(r=4, tol=1e-3)`` (the paper's epsilon), timed end to end
       (``fit``: validation, pair enumeration, solver) and the solver loop
       alone; its objective ``G_fr`` and iteration count ``n``.
    2. The book's NumPy step-by-step version (``fenchelrank_naive`` of
       ``book/03_fenchelrank_duality.md``, explicit ``K`` from
       ``refimpl.pairs.pair_difference_matrix``) for the same ``n``
       iterations; same objective to 1e-9 relative is checked.  The book's
       ``exact_step_naive`` scans every breakpoint interval with O(p) work
       each, O(p^2) per step (about a minute per iteration at this size), so
       the full ``n`` iterations use the same derivation with the interval
       found from sorted breakpoints (``exact_step_sorted_naive``, O(p log p),
       NumPy); the book's verbatim step is timed on the first
       ``--book-iters`` iterations only, checked to give the same steps.
    3. cvxpy (CLARABEL) on eq. 4, ``min (r^2/p) sum_squares(pos(1/r - K w))
       s.t. norm1(w) <= 1``, with default and with tightened (1e-12)
       tolerances: total ``prob.solve`` wall time (canonicalisation
       included; building ``K`` is not) and ``solver_stats.solve_time``.
    4. Because cvxpy is more accurate than gap 1e-3, also the FenchelRank fit
       that runs until ``G <= G*_cvxpy (1 + 1e-3)``.

    **Target: cvxpy time / FenchelRank time >= 50x** (printed for both
    FenchelRank stopping points), plus the NumPy / numba ratio.

(b) **Tree backend vs explicit pairs, per iteration, as documents per query
    grow.**  40,000 documents (``--docs``), 46 features, labels 0..2
    (``make_synthetic_letor``), 10, 30, 100, 300, 1000, 3000 documents per
    query; ms per FenchelRank iteration (``--iters`` iterations after
    ``--warmup``, ``tol=0``, from the solver's own per-iteration clock) for
    ``backend="pairs", line_search="pairs"`` and ``backend="tree",
    line_search="newton"``; explicit pairs are skipped above ``--max-pairs``
    (memory).  Prints p, p/l, both times, their ratio and the documents per
    query from which the tree wins (target: from a few hundred on), also as
    pairs per document p/l, the quantity ``backend="auto"`` thresholds.  Plus a
    TD2004-shaped point: 75 queries, 74,146 documents, 64 features, binary
    labels with the relevant fraction tuned to about 1M pairs.

(c) **Where an iteration's time goes**, per backend: an instrumented run
    splitting the time into the X v and X^T u products, the pair or tree
    kernels, the pair line search and the rest (Python, copies).

(d) **The paper's grid of r, both variants against cvxpy** (MQ2008 Fold1
    train when ``LETOR_HOME`` has it, else the synthetic stand-in): at every
    r of the registry's grid (``refimpl.experiments.registry``), the time to
    reach gap <= 1e-3 of ``variant="paper"`` (Algorithm 1, no iteration cap
    below ``--max-iter-grid``), of the fast ``variant="face_newton"`` (best
    of ``--repeat``) and of cvxpy/CLARABEL (one whole ``Problem.solve`` on the
    explicit pair matrix with default settings, as a user would write it;
    building the matrix is not timed, nothing is cached).  Checks that the
    objectives agree within what the gap certifies (``G* >= G - gap``, so
    ``G_cvxpy >= G_fast - gap_fast`` up to 1e-9), prints the ratios
    cvxpy / fast and paper / fast per r, their geometric mean and minimum.
    **Target: cvxpy / fast >= 100x (geometric mean), never below 20x.**
    The pure ``variant="pairwise"`` is timed too (its linear rate is slow
    where the optimum is inside the ball).  ``--quick``: r = 2 and 32 only,
    the paper and pairwise variants capped at 2,000 updates (a capped time
    is a lower bound, marked ``>``).

(e) **The runner's selection grid, Algorithm 1 before and after the block
    layout.**  On the train set of each MQ2008 fold (the synthetic stand-in
    without ``LETOR_HOME``), at every r of the registry's grid with its fixed
    settings (max_iter = 1000, epsilon = 1e-3): whole ``FenchelRank.fit`` calls with
    ``line_search="pairs"`` (the path of the committed results: ``X w``,
    ``X w`` and ``X b`` by BLAS and the heap search on explicit pair arrays
    per update) and ``"blocks"`` (the default since: scores carried along,
    pairs enumerated from label blocks, one compiled call per update), best
    of ``--repeat-e`` in alternation.  Checks that both give the same greedy
    sequence and iteration count, prints the coefficient difference and the
    ratio of the whole grid's times.  **Target: >= 10x with the same
    models.**

(f) **At scale: an iteration at the cost of a few passes** (``--scale``
    runs only this part; it is skipped otherwise unless ``--only f``).  On
    the synthetic 301,916 x 136 problem of ``benchmarks/bench_hessvec.py``
    and ``bench_tron.py`` (``make_lean_letor(301_916, 136, 2_500, 5,
    seed=0)``: 2,500 queries, 5 levels, 14.0 M pairs), ``r = 8``, the tree
    backend: one value+gradient pass of the loss (``loss.fun``, one pass
    over ``X``; best of 3, measured right before and after every timed run),
    and seconds per iteration of every variant (``tol = 0``,
    ``--scale-iters`` updates, from the solver's own clock), side by side,
    ``--scale-rounds`` rounds in alternation; the ratio per iteration / pass
    (**goal: <= 3 for every variant**).  For reference, Algorithm 1 on
    explicit pairs (``line_search="blocks"``; ``--scale-blocks``), and the
    backend the estimator's default picks there.  Then one query of 20,000
    documents (``make_lean_letor(20_000, 46, 1, 5, seed=0)``): whole
    ``FenchelRank().fit`` of every variant (defaults: r = 1, tol = 1e-3)
    against ``RankSVM(backend="tree").fit``, interleaved, best of
    ``--scale-rounds`` (**goal: converges, in < 10x RankSVM's time**).
    There ``r max |x_i - x_j|_inf <= 1`` (features in [0, 1]), so every
    pair stays active and the tree path evaluates the loss from per-level
    sums (no sort, no pass over ``X`` per update); the same query at
    ``r = --scale-query-r`` (4), where pairs leave the active set and every
    evaluation is a sorted sweep, is timed the same way (no goal; Algorithm
    1 capped at its default 1,000 updates).

Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` (``make bench`` sets
them); ``--help`` lists the options, ``--skip`` drops parts.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import time
import types
import warnings

import numpy as np
from _letor import mq2008_datasets, mq2008_fold1_train
from _timing import warm_up_fits
from sklearn.exceptions import ConvergenceWarning

from refimpl import pairs
from refimpl.data import load_letor_fold, make_synthetic_letor
from refimpl.estimators import FenchelRank
from refimpl.losses import PairwiseSquaredHinge
from refimpl.solvers.fenchelrank import fenchelrank

R = 4.0
TOL = 1e-3
TARGET_CVXPY_RATIO = 50.0
TD2004_SHAPE = {"n_queries": 75, "n_docs": 74_146, "n_features": 64}


# ---------------------------------------------------------------------------
# The NumPy step-by-step version, copied from book/03_fenchelrank_duality.md
# (explicit K; only K, r are passed in instead of being notebook globals).
# ---------------------------------------------------------------------------

def make_naive(K, r):
    """The chapter's ``P_naive``, ``dual_point``, ``exact_step_naive``, loop."""
    p, d = K.shape

    def P_naive(w):                              # P(w) = G(w), eq. (3.5)
        return r**2 / p * np.sum(np.maximum(0, 1 / r - K @ w) ** 2)

    def dual_point(w):                           # eq. (3.6)
        a = 2 * r**2 / p * np.maximum(0, 1 / r - K @ w)
        return a, K.T @ a

    def phi(mu, a, c):
        return np.sum(np.maximum(0, a - mu * c) ** 2)

    def exact_step_naive(a, c):
        bps = a[c != 0] / c[c != 0]
        L = np.unique(np.r_[0.0, 1.0, bps[(bps > 0) & (bps < 1)]])
        best_mu, best = 0.0, phi(0.0, a, c)
        for lo, hi in zip(L[:-1], L[1:]):
            mid = 0.5 * (lo + hi)
            on = a - mid * c > 0                 # active set on (lo, hi)
            den = c[on] @ c[on]
            mu = np.clip((a[on] @ c[on]) / den, lo, hi) if den > 0 else lo
            for cand in (mu, lo, hi):
                if phi(cand, a, c) < best:
                    best_mu, best = cand, phi(cand, a, c)
        return best_mu

    def exact_step_sorted_naive(a, c):
        # Same intervals L as exact_step_naive; phi' = -2 (S_ac - mu S_cc)
        # on interval k, the sums from cumulated enter/leave events; the
        # first interval where phi' reaches 0 holds the minimiser, and its
        # sums are recomputed from the mask exactly as in exact_step_naive.
        nz = c != 0
        an, cn = a[nz], c[nz]
        bps = an / cn
        L = np.unique(np.r_[0.0, 1.0, bps[(bps > 0) & (bps < 1)]])
        n_int = len(L) - 1
        pos = np.minimum(np.searchsorted(L, bps), n_int)
        up = cn > 0                              # active on intervals < pos
        ac, cc = an * cn, cn * cn
        d_ac = (np.bincount(np.where(up, 0, pos), ac, n_int + 1)
                - np.bincount(np.where(up, pos, n_int), ac, n_int + 1))
        d_cc = (np.bincount(np.where(up, 0, pos), cc, n_int + 1)
                - np.bincount(np.where(up, pos, n_int), cc, n_int + 1))
        s_ac, s_cc = np.cumsum(d_ac)[:n_int], np.cumsum(d_cc)[:n_int]
        done = np.flatnonzero(s_ac - L[1:] * s_cc <= 0)   # phi'(hi) >= 0
        if len(done) == 0:
            return 1.0
        k = done[0]
        lo, hi = L[k], L[k + 1]
        on = a - 0.5 * (lo + hi) * c > 0
        den = c[on] @ c[on]
        return np.clip((a[on] @ c[on]) / den, lo, hi) if den > 0 else lo

    def fenchelrank_naive(t_max, eps=0.0, step=exact_step_sorted_naive):
        w = np.zeros(d)
        hist = {"obj": [], "gap": [], "step": [], "j": []}
        for _ in range(t_max):
            _, g = dual_point(w)
            gap = np.max(np.abs(g)) - g @ w
            hist["obj"].append(P_naive(w)); hist["gap"].append(gap)
            if gap <= eps:
                break
            j = int(np.argmax(np.abs(g)))
            b = -w.copy()
            b[j] += 1.0 if g[j] >= 0 else -1.0
            tau = step(1 / r - K @ w, K @ b)
            w = w + tau * b
            hist["step"].append(tau); hist["j"].append(j)
        return w, hist

    return types.SimpleNamespace(
        P=P_naive, run=fenchelrank_naive, book_step=exact_step_naive,
        sorted_step=exact_step_sorted_naive)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def quiet(fn, *a, **kw):
    """Call ``fn`` with ConvergenceWarning silenced (runs stopped on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*a, **kw)


def best_of(fn, repeat):
    """Best wall time of ``repeat`` calls and the last return value."""
    best, out = best_of_interleaved({"fn": fn}, repeat)
    return best["fn"], out["fn"]


def best_of_interleaved(fns, repeat):
    """Best wall time of each callable, called in alternation (machine noise
    hits them alike), and each one's last return value."""
    best = dict.fromkeys(fns, math.inf)
    out = dict.fromkeys(fns)
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            out[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best, out


def fr_loss(X, y, qid, backend="pairs"):
    return PairwiseSquaredHinge(X, y, qid, margin=1.0 / R, normalize=True,
                                backend=backend)


def warm_up(cvxpy=False):
    warm_up_fits(*(FenchelRank(r=R, tol=1e-2, backend=backend, line_search=ls,
                               variant=variant).fit
                   for backend, ls in (("pairs", "pairs"), ("tree", "newton"))
                   for variant in ("paper", FAST_VARIANT)), cvxpy=cvxpy)


def datasets_a():
    return mq2008_datasets()


# ---------------------------------------------------------------------------
# (a) FenchelRank vs NumPy vs cvxpy
# ---------------------------------------------------------------------------

class _Reached(Exception):
    pass


def iterations_to_objective(loss, target, max_iter):
    """First iteration count whose objective G is <= target (or None)."""
    found = {}

    def stop(w, info):
        if info["obj"] <= target:
            found["k"] = info["iter"]
            raise _Reached

    try:
        quiet(fenchelrank, loss, R, tol=1e-12, max_iter=max_iter, callback=stop)
    except _Reached:
        return found["k"]
    return None


def solve_cvxpy(K, tight):
    import cvxpy as cp

    p, m = K.shape
    w = cp.Variable(m)
    prob = cp.Problem(
        cp.Minimize(R**2 / p * cp.sum_squares(cp.pos(1 / R - K @ w))),
        [cp.norm1(w) <= 1])
    kw = ({"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}
          if tight else {})
    t0 = time.perf_counter()
    prob.solve(solver=cp.CLARABEL, **kw)
    total = time.perf_counter() - t0
    if prob.status != "optimal":
        print(f"    cvxpy status {prob.status!r}")
    return {"total": total, "solve": prob.solver_stats.solve_time,
            "iters": prob.solver_stats.num_iters, "G": float(prob.value),
            "w": np.asarray(w.value)}


def part_a(args):
    print(f"\n(a) FenchelRank vs NumPy step-by-step vs cvxpy (CLARABEL); r = {R:g},"
          f" tol = {TOL:g}")
    for name, X, y, qid in datasets_a():
        one_dataset_a(name, X, y, qid, args)


def one_dataset_a(name, X, y, qid, args):
    loss = fr_loss(X, y, qid)
    p = loss.n_pairs
    print(f"\n  {name}: {X.shape[0]:,} documents, {X.shape[1]} features, "
          f"{len(np.unique(qid))} queries, {p:,} pairs")

    # 1. refimpl, end to end and solver loop
    est = FenchelRank(r=R, tol=TOL, max_iter=100_000)
    best, out = best_of_interleaved(
        {"fit": lambda: est.fit(X, y, qid),
         "loop": lambda: fenchelrank(loss, R, tol=TOL, max_iter=100_000)},
        args.repeat)
    t_fit, t_loop, model = best["fit"], best["loop"], out["fit"]
    T, G_fr = model.n_iter_, model.objective_
    print(f"    FenchelRank (numba, backend={model.backend_!r}): {T} iterations "
          f"to gap {model.dual_gap_:.2e} <= {TOL:g}, G_fr = {G_fr:.10f}")
    print(f"      fit {t_fit:.3f} s (best of {args.repeat}; validation + pairs"
          f" + solver); solver loop alone {t_loop:.3f} s = "
          f"{t_loop / T * 1e3:.3f} ms/iteration")

    # 2. NumPy step-by-step
    t0 = time.perf_counter()
    K = pairs.pair_difference_matrix(X, y, qid, max_bytes=2**31)
    t_K = time.perf_counter() - t0
    nv = make_naive(K, R)
    t0 = time.perf_counter()
    w_np, h_np = nv.run(T)
    t_np = time.perf_counter() - t0
    G_np = nv.P(w_np)
    rel = abs(G_np - G_fr) / abs(G_fr)
    same_w = np.allclose(R * w_np, model.coef_, rtol=1e-9, atol=1e-12)
    print(f"    NumPy step-by-step (explicit K {K.shape[0]:,} x {K.shape[1]}, "
          f"built in {t_K:.2f} s, not timed), sorted-breakpoint step, "
          f"{T} iterations: {t_np:.2f} s = {t_np / T * 1e3:.2f} ms/iteration")
    print(f"      G_numpy = {G_np:.10f}, |G_numpy - G_fr| / G_fr = {rel:.1e}: "
          f"same objective to 1e-9: {'yes' if rel <= 1e-9 else 'NO'}; "
          f"same w (rtol 1e-9): {same_w}")
    print(f"      ratio NumPy / numba (solver loops, same {T} iterations) = "
          f"{t_np / t_loop:.1f}x;  NumPy / numba fit = {t_np / t_fit:.1f}x")
    if args.book_iters > 0:
        k = min(args.book_iters, T)
        t0 = time.perf_counter()
        _, h_bk = nv.run(k, step=nv.book_step)
        t_bk = time.perf_counter() - t0
        steps_ok = np.allclose(h_bk["step"], h_np["step"][:k], rtol=1e-9,
                               atol=1e-15)
        t_k, _ = best_of(lambda: quiet(fenchelrank, loss, R, tol=0.0,
                                       max_iter=k), args.repeat)
        print(f"    book's verbatim exact_step_naive (interval scan, O(p^2)),"
              f" first {k} iteration(s): {t_bk:.1f} s = {t_bk / k:.1f} s/iteration;"
              f" same steps as the sorted version: {steps_ok}")
        print(f"      ratio book NumPy / numba over those {k} iteration(s) = "
              f"{t_bk / t_k:,.0f}x")
    del K

    # 3. cvxpy
    if args.no_cvxpy:
        return
    K = pairs.pair_difference_matrix(X, y, qid, max_bytes=2**31)
    cv = {}
    for tight in (False, True):
        label = "tightened 1e-12" if tight else "default tolerances"
        cv[tight] = c = solve_cvxpy(K, tight)
        print(f"    cvxpy CLARABEL, {label}: prob.solve {c['total']:.2f} s "
              f"(solver_stats.solve_time {c['solve']:.2f} s, canonicalisation "
              f"and rest {c['total'] - c['solve']:.2f} s, {c['iters']} IPM "
              f"iterations), G = {c['G']:.10f}")
    del K
    G_star = cv[True]["G"]
    print(f"      G_fr - G*_cvxpy = {G_fr - G_star:.2e} (gap bound {TOL:g}), "
          f"relative {(G_fr - G_star) / G_star:.2e}")

    # 4. FenchelRank to cvxpy's objective within 1e-3 relative
    target = G_star * (1 + 1e-3)
    k_star = iterations_to_objective(loss, target, args.max_iter_target)
    if k_star is None:
        print(f"    FenchelRank did not reach G <= G*(1 + 1e-3) within "
              f"{args.max_iter_target} iterations")
        t_star = math.nan
    else:
        est2 = FenchelRank(r=R, tol=1e-12, max_iter=k_star)
        t_star, m2 = best_of(lambda: quiet(est2.fit, X, y, qid),
                             args.repeat_target)
        print(f"    FenchelRank to G <= G*_cvxpy (1 + 1e-3) = {target:.10f}: "
              f"{k_star} iterations, fit {t_star:.2f} s (best of "
              f"{args.repeat_target}), G = {m2.objective_:.10f}")
    tc = cv[False]["total"]
    tct = cv[True]["total"]
    print(f"    >> FenchelRank fit to gap <= {TOL:g}: {t_fit:.3f} s;  ratio "
          f"cvxpy / FenchelRank = {tc / t_fit:.1f}x (default cvxpy), "
          f"{tct / t_fit:.1f}x (tight cvxpy)   (target >= "
          f"{TARGET_CVXPY_RATIO:g}x)")
    print(f"    >> FenchelRank fit to G*_cvxpy (1 + 1e-3): {t_star:.2f} s;  "
          f"ratio cvxpy / FenchelRank = {tc / t_star:.2f}x (default), "
          f"{tct / t_star:.2f}x (tight)")
    print(f"    >> NumPy / numba = {t_np / t_loop:.1f}x (solver loops)")


# ---------------------------------------------------------------------------
# (b) tree vs pairs per iteration
# ---------------------------------------------------------------------------

def ms_per_iteration(loss, line_search, warmup, iters):
    """ms per iteration over iterations warmup+1 .. warmup+iters, and mean ls evals."""
    res = quiet(fenchelrank, loss, R, tol=0.0, max_iter=warmup + iters,
                line_search=line_search)
    h = res.history
    n = res.n_iter - warmup
    dt = (h["time"][warmup + n] - h["time"][warmup]) / n
    return dt * 1e3, float(np.mean(h["ls_eval"][warmup + 1:]))


def compare_point(X, y, qid, args):
    """Both backends on one data set, interleaved; returns a dict of results."""
    n = X.shape[0]
    t0 = time.perf_counter()
    tree = fr_loss(X, y, qid, backend="tree")
    setup_tree = time.perf_counter() - t0
    p = tree.n_pairs
    out = {"p": p, "pl": p / n, "pairs": math.nan, "tree": math.nan,
           "setup_pairs": math.nan, "setup_tree": setup_tree, "ls": math.nan}
    explicit = None
    if p <= args.max_pairs:
        t0 = time.perf_counter()
        explicit = fr_loss(X, y, qid, backend="pairs")
        out["setup_pairs"] = time.perf_counter() - t0
    best = {"pairs": math.inf, "tree": math.inf}
    for _ in range(args.repeat_b):
        if explicit is not None:
            ms, _ = ms_per_iteration(explicit, "pairs", args.warmup, args.iters)
            best["pairs"] = min(best["pairs"], ms)
        ms, ls = ms_per_iteration(tree, "newton", args.warmup, args.iters)
        best["tree"] = min(best["tree"], ms)
        out["ls"] = ls
    out["pairs"] = best["pairs"] if explicit is not None else math.nan
    out["tree"] = best["tree"]
    return out


def crossover(xs, ratios):
    """x where pairs/tree first crosses 1 (log-log interpolation), or None."""
    for k in range(1, len(xs)):
        r0, r1 = ratios[k - 1], ratios[k]
        if not (math.isfinite(r0) and math.isfinite(r1)):
            continue
        if r0 < 1 <= r1:
            f = -math.log(r0) / (math.log(r1) - math.log(r0))
            return math.exp(math.log(xs[k - 1])
                            + f * (math.log(xs[k]) - math.log(xs[k - 1])))
    if ratios and math.isfinite(ratios[0]) and ratios[0] >= 1:
        return xs[0]
    return None


def print_row(label, o):
    pm = f"{o['pairs']:10.2f}" if math.isfinite(o["pairs"]) else "   skipped"
    ratio = o["pairs"] / o["tree"]
    rs = f"{ratio:8.2f}x" if math.isfinite(ratio) else "        -"
    print(f"    {label:>12} {o['p']:>13,} {o['pl']:9.1f} {pm} {o['tree']:10.2f} "
          f"{rs} {o['ls']:6.1f}   {o['setup_pairs']:6.2f} {o['setup_tree']:6.2f}")


HEADER = (f"    {'docs/query':>12} {'pairs p':>13} {'p/l':>9} {'pairs ms':>10} "
          f"{'tree ms':>10} {'pairs/tree':>9} {'ls/it':>6}   {'set-up s':>13}")


def make_td2004_like(seed=0, target_pairs=1_000_000):
    """75 queries x ~989 documents, 64 features in [0, 1], binary labels.

    Relevant = the top-k documents of a noisy linear latent score (with a
    per-query shift, so the relevant count varies by query), ``k`` chosen by
    bisection so that ``sum_q n_rel (l_q - n_rel)`` is closest to
    ``target_pairs``.
    """
    rng = np.random.default_rng(seed)
    s = TD2004_SHAPE
    nq, n, d = s["n_queries"], s["n_docs"], s["n_features"]
    sizes = np.full(nq, n // nq)
    sizes[: n - sizes.sum()] += 1
    qid = np.repeat(np.arange(1, nq + 1), sizes)
    X = rng.random((n, d))
    w = np.zeros(d)
    w[:8] = rng.uniform(0.5, 2.0, 8)
    latent = X @ w + 0.5 * rng.normal(size=n) + rng.normal(0, 0.3, nq)[qid - 1]
    order = np.argsort(-latent)

    def n_pairs_top(k):
        rel = np.zeros(n, dtype=bool)
        rel[order[:k]] = True
        c = np.bincount(qid - 1, rel, nq)
        return float(np.sum(c * (sizes - c))), rel

    lo, hi = 1, n // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if n_pairs_top(mid)[0] < target_pairs:
            lo = mid
        else:
            hi = mid
    k = min((lo, hi), key=lambda k: abs(n_pairs_top(k)[0] - target_pairs))
    y = n_pairs_top(k)[1].astype(np.int64)
    return X, y, qid


def part_b(args):
    print(f"\n(b) ms per FenchelRank iteration, tree backend (Newton line search) "
          f"vs explicit pairs (sorted-breakpoint line search); r = {R:g}")
    print(f"    {args.docs:,} documents, 46 features, labels 0..2 "
          "(make_synthetic_letor, 3 levels); "
          f"iterations {args.warmup + 1}..{args.warmup + args.iters} from w = 0, "
          f"best of {args.repeat_b}; pairs skipped above {args.max_pairs:,.0f} pairs")
    print(HEADER)
    dpqs, pls, ratios = [], [], []
    for dpq in args.dpq:
        syn = make_synthetic_letor(
            n_queries=max(1, args.docs // dpq), docs_per_query=dpq,
            n_informative=6, n_redundant=10, n_noise=30, n_levels=3, seed=0)
        o = compare_point(syn.X, syn.y, syn.qid, args)
        print_row(str(dpq), o)
        dpqs.append(dpq)
        pls.append(o["pl"])
        ratios.append(o["pairs"] / o["tree"])
    x = crossover(dpqs, ratios)
    if x is None:
        print("    the tree backend does not win at any measured size")
    else:
        print(f"    >> the tree backend wins from about {x:,.0f} documents per query, "
              f"i.e. p/l ~ {crossover(pls, ratios):.0f} pairs per document "
              f"(log-log interpolation of pairs/tree = 1)   (target: from a few "
              "hundred documents per query on)")
    X, y, qid = make_td2004_like(target_pairs=args.td_pairs)
    s = TD2004_SHAPE
    print(f"\n    TD2004-shaped: {s['n_queries']} queries x ~{s['n_docs'] // s['n_queries']}"
          f" documents = {s['n_docs']:,}, {s['n_features']} features, binary "
          f"labels, {y.mean():.2%} relevant (tuned to ~{args.td_pairs:,.0f} pairs)")
    print(HEADER)
    print_row("~989", compare_point(X, y, qid, args))


# ---------------------------------------------------------------------------
# (c) breakdown
# ---------------------------------------------------------------------------

class _TimedMatrix:
    """Stands in for ``loss.X``: times ``X @ v`` and ``X.T @ u``."""

    def __init__(self, X, acc, key):
        self._X, self._acc, self._key = X, acc, key
        self.shape = X.shape

    def __matmul__(self, v):
        t0 = time.perf_counter()
        out = self._X @ v
        self._acc[self._key][0] += time.perf_counter() - t0
        self._acc[self._key][1] += 1
        return out

    @property
    def T(self):
        return _TimedMatrix(self._X.T, self._acc, "X^T u")


def _timed(fn, acc, key):
    def wrapper(*a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        acc[key][0] += time.perf_counter() - t0
        acc[key][1] += 1
        return out
    return wrapper


def breakdown(X, y, qid, backend, line_search, n_iter):
    # the module, not the function refimpl.solvers re-exports under its name
    frm = importlib.import_module("refimpl.solvers.fenchelrank")

    loss = fr_loss(X, y, qid, backend=backend)
    keys = ("X v", "X^T u", "value_dz (pairs/tree kernel)",
            "hess_dz (pairs/tree kernel)", "pair_residuals", "linesearch_pairs")
    acc = {k: [0.0, 0] for k in keys}
    loss.X = _TimedMatrix(loss.X, acc, "X v")
    loss._impl.value_dz = _timed(loss._impl.value_dz, acc, keys[2])
    loss._impl.hess_dz = _timed(loss._impl.hess_dz, acc, keys[3])
    k_orig = frm._k
    frm._k = types.SimpleNamespace(
        pair_residuals=_timed(k_orig.pair_residuals, acc, keys[4]),
        linesearch_pairs=_timed(k_orig.linesearch_pairs, acc, keys[5]),
        greedy_coordinate=k_orig.greedy_coordinate,
        sum_squares_diff=k_orig.sum_squares_diff)
    try:
        t0 = time.perf_counter()
        res = quiet(fenchelrank, loss, R, tol=0.0, max_iter=n_iter,
                    line_search=line_search)
        total = time.perf_counter() - t0
    finally:
        frm._k = k_orig
    it = res.n_iter
    print(f"    backend={backend!r}, line_search={line_search!r}: {it} iterations, "
          f"{total / it * 1e3:.2f} ms/iteration, "
          f"{np.mean(res.history['ls_eval'][1:]):.1f} line-search evaluations/iteration")
    for k in keys:
        t, c = acc[k]
        if c:
            print(f"      {k:<30} {c / it:5.1f} calls/it {t / it * 1e3:8.3f} ms/it "
                  f"{t / total:6.1%}")
    rest = total - sum(t for t, _ in acc.values())
    print(f"      {'rest (Python, copies, checks)':<30} {'':15} {rest / it * 1e3:8.3f} "
          f"ms/it {rest / total:6.1%}")


def part_c(args):
    print(f"\n(c) where an iteration's time goes (instrumented runs, "
          f"{args.breakdown_iters} iterations from w = 0, r = {R:g})")
    syn = make_synthetic_letor(
        n_queries=470, docs_per_query=(5, 36), n_informative=6,
        n_redundant=10, n_noise=30, seed=0)
    print(f"\n  synthetic MQ2008-fold shape ({syn.X.shape[0]:,} x {syn.X.shape[1]})")
    for backend, ls in (("pairs", "pairs"), ("tree", "newton")):
        breakdown(syn.X, syn.y, syn.qid, backend, ls, args.breakdown_iters)
    dpq = args.breakdown_dpq
    syn = make_synthetic_letor(
        n_queries=args.docs // dpq, docs_per_query=dpq, n_informative=6,
        n_redundant=10, n_noise=30, n_levels=3, seed=0)
    print(f"\n  {syn.X.shape[0]:,} documents, {dpq} per query, 46 features")
    for backend, ls in (("pairs", "pairs"), ("tree", "newton")):
        breakdown(syn.X, syn.y, syn.qid, backend, ls, args.breakdown_iters)


# ---------------------------------------------------------------------------
# (d) the paper's grid of r: paper and fast variants vs cvxpy
# ---------------------------------------------------------------------------

TARGET_GRID_GEOMEAN = 100.0
TARGET_GRID_MIN = 20.0
#: Issue 16: the runner's FenchelRank grid, same selected models, this much faster.
TARGET_SELECTION_GRID = 10.0
FAST_VARIANT = "face_newton"


def solve_cvxpy_r(K, r):
    """Whole ``Problem.solve`` of eq. 4 at radius r (CLARABEL defaults)."""
    import cvxpy as cp

    p, m = K.shape
    w = cp.Variable(m)
    prob = cp.Problem(
        cp.Minimize(r**2 / p * cp.sum_squares(cp.pos(1 / r - K @ w))),
        [cp.norm1(w) <= 1])
    t0 = time.perf_counter()
    prob.solve(solver=cp.CLARABEL)
    total = time.perf_counter() - t0
    return total, np.asarray(w.value), prob.status


def part_d(args):
    from refimpl.experiments.registry import get_method
    from refimpl.solvers.subgradient import project_l1_ball

    grid = [float(r) for r in get_method("fenchelrank").grid["r"]]
    cap = args.max_iter_grid
    if args.quick:
        grid = [r for r in grid if r in (2.0, 32.0)]
        cap = min(cap, 2000)
    fold = mq2008_fold1_train()
    if fold is None:
        name, (X, y, qid) = "synthetic (MQ2008-fold shape)", next(
            iter(mq2008_datasets()))[1:]
    else:
        name, (X, y, qid) = "MQ2008 Fold1 train", fold
    K = pairs.pair_difference_matrix(X, y, qid, max_bytes=2**31)
    print(f"\n(d) the paper's grid of r on {name} ({X.shape[0]:,} documents, "
          f"{K.shape[0]:,} pairs): time to gap <= {TOL:g}; cvxpy = CLARABEL,"
          " whole Problem.solve (defaults)")
    print(f"  {'r':>5} | {'paper':>9} {'iters':>6} | {'pairwise':>9} "
          f"{'iters':>6} | {FAST_VARIANT:>11} "
          f"{'iters':>5} | {'cvxpy':>7} | {'cvx/fast':>8} {'paper/fast':>10}"
          f" | {'G_fast - G_cvx':>14} {'gap_fast':>8}  ok")
    ratios, ratios_paper, all_ok = [], [], True
    for r in grid:
        loss = fr_loss(X, y, qid) if r == R else PairwiseSquaredHinge(
            X, y, qid, margin=1.0 / r, normalize=True, backend="pairs")
        t_fast, res = best_of(
            lambda loss=loss, r=r: fenchelrank(loss, r, tol=TOL,
                                               max_iter=100_000,
                                               variant=FAST_VARIANT),
            args.repeat)
        t0 = time.perf_counter()
        paper = quiet(fenchelrank, loss, r, tol=TOL, max_iter=cap)
        t_paper = time.perf_counter() - t0
        t0 = time.perf_counter()
        pw = quiet(fenchelrank, loss, r, tol=TOL, max_iter=cap,
                   variant="pairwise")
        t_pw = time.perf_counter() - t0
        if args.no_cvxpy:
            t_cvx, G_cvx, status = math.nan, math.nan, "skipped"
        else:
            t_cvx, w_cvx, status = solve_cvxpy_r(K, r)
            G_cvx = r * r * loss.value_at(project_l1_ball(w_cvx))
        G_fast = res.history["obj"][-1]
        gap_fast = res.history["gap"][-1]
        # G* >= G_fast - gap_fast (Theorem 2), and G_cvx >= G*
        ok = res.converged and (math.isnan(G_cvx)
                                or G_cvx >= G_fast - gap_fast - 1e-9)
        all_ok &= ok
        mark = "" if paper.converged else ">"
        ratio = t_cvx / t_fast
        ratios.append(ratio)
        ratios_paper.append(t_paper / t_fast)
        pmark = "" if pw.converged else ">"
        print(f"  {r:5g} | {mark:>1}{t_paper:7.3f}s {paper.n_iter:6d} | "
              f"{pmark:>1}{t_pw:7.3f}s {pw.n_iter:6d} | "
              f"{t_fast:10.4f}s {res.n_iter:5d} | {t_cvx:6.2f}s | "
              f"{ratio:7.0f}x {mark:>1}{t_paper / t_fast:8.0f}x | "
              f"{G_fast - G_cvx:+14.2e} {gap_fast:8.1e}  "
              f"{'yes' if ok else 'NO'}"
              + ("" if status in ("optimal", "skipped") else f" ({status})"))
    if not args.no_cvxpy:
        gm = math.exp(np.mean(np.log(ratios)))
        print(f"  cvxpy / {FAST_VARIANT}: geometric mean {gm:.0f}x (target >= "
              f"{TARGET_GRID_GEOMEAN:.0f}x: {'met' if gm >= TARGET_GRID_GEOMEAN else 'MISSED'}),"
              f" minimum {min(ratios):.0f}x (target >= {TARGET_GRID_MIN:.0f}x: "
              f"{'met' if min(ratios) >= TARGET_GRID_MIN else 'MISSED'})")
    gp = math.exp(np.mean(np.log(ratios_paper)))
    print(f"  paper / {FAST_VARIANT}: geometric mean {gp:.0f}x, minimum "
          f"{min(ratios_paper):.0f}x; objectives within the certified gap: "
          f"{'all' if all_ok else 'NOT ALL'}")


def grid_folds():
    """``(name, X, y, qid)`` of each MQ2008 fold's train set, or the stand-in."""
    if fold_1 := mq2008_fold1_train():
        yield "MQ2008 Fold1 train", *fold_1
        for f in range(2, 6):
            yield f"MQ2008 Fold{f} train", *load_letor_fold("MQ2008", f).train
    else:
        yield "synthetic (MQ2008-fold shape)", *next(iter(mq2008_datasets()))[1:]


def part_e(args):
    from refimpl.experiments.registry import get_method

    method = get_method("fenchelrank")
    grid = [float(r) for r in method.grid["r"]]
    fixed = dict(method.fixed)
    print(f"\n(e) the runner's FenchelRank selection grid (r = {grid[0]:g} .. "
          f"{grid[-1]:g}, {fixed}), whole estimator fits, Algorithm 1 by "
          "line_search='pairs' (three products with X per update, explicit "
          "pair arrays) and 'blocks' (the default), in alternation")
    print(f"  {'fold':<22} {'r':>5} | {'pairs':>8} {'blocks':>8} {'ratio':>6} |"
          f" {'iters':>5}  same j  max|coef diff|")
    total = {"pairs": 0.0, "blocks": 0.0}
    all_same = True
    for name, X, y, qid in grid_folds():
        for r in grid:
            fits = {ls: (lambda ls=ls, r=r, X=X, y=y, qid=qid: quiet(
                FenchelRank(r=r, line_search=ls, **fixed).fit, X, y, qid))
                for ls in ("pairs", "blocks")}
            best, est = best_of_interleaved(fits, args.repeat_e)
            same = (np.array_equal(est["pairs"].history_["j"],
                                   est["blocks"].history_["j"])
                    and est["pairs"].n_iter_ == est["blocks"].n_iter_)
            diff = float(np.max(np.abs(est["pairs"].coef_ - est["blocks"].coef_)))
            all_same &= same
            for ls in total:
                total[ls] += best[ls]
            print(f"  {name:<22} {r:5g} | {best['pairs']:7.3f}s "
                  f"{best['blocks']:7.3f}s {best['pairs'] / best['blocks']:5.1f}x"
                  f" | {est['blocks'].n_iter_:5d}  {'yes' if same else 'NO':>6}"
                  f"  {diff:.1e}")
    ratio = total["pairs"] / total["blocks"]
    print(f"  whole grid: pairs {total['pairs']:.2f} s, blocks "
          f"{total['blocks']:.2f} s: {ratio:.1f}x faster (goal >= "
          f"{TARGET_SELECTION_GRID:.0f}x: "
          f"{'met' if ratio >= TARGET_SELECTION_GRID else 'MISSED'}); same "
          f"greedy sequence in every fit: {'yes' if all_same else 'NO'}")


# ---------------------------------------------------------------------------
# (f) At scale: seconds per iteration against one value+gradient pass
# ---------------------------------------------------------------------------

SCALE_VARIANTS = ("paper", "pairwise", "away", "face_newton")
TARGET_PASSES_PER_ITERATION = 3.0
TARGET_SINGLE_QUERY_RATIO = 10.0


def _scale_data():
    from _synthetic import make_lean_letor

    X, y, qid, _ = make_lean_letor(301_916, 136, 2_500, 5, seed=0)
    X1, y1, q1, _ = make_lean_letor(20_000, 46, 1, 5, seed=0)
    return (X, y, qid), (X1, y1, q1)


def _per_iteration(res):
    t = res.history["time"]
    return (t[-1] - t[0]) / max(res.n_iter, 1)


def part_f(args):
    r = args.scale_r
    print(f"\n(f) At scale: FenchelRank iterations against one value+gradient "
          f"pass (r = {r:g}, tree backend, {args.scale_iters} updates, "
          f"goal <= {TARGET_PASSES_PER_ITERATION:.0f} passes per iteration)")
    (X, y, qid), (X1, y1, q1) = _scale_data()
    loss = PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True,
                                backend="tree")
    print(f"  synthetic {X.shape[0]:,} x {X.shape[1]}, {len(np.unique(qid)):,} "
          f"queries, {loss.n_pairs / 1e6:.1f} M pairs; one pass: "
          f"{'one-pass kernel' if loss.one_pass_ else 'two BLAS mat-vecs'}")
    w = quiet(fenchelrank, loss, r, tol=0.0, max_iter=8).w  # a typical iterate
    for v in SCALE_VARIANTS:                                # compile, warm
        quiet(fenchelrank, loss, r, tol=0.0, max_iter=2, variant=v)

    def one_pass():
        return best_of(lambda: loss.fun(w), 3)[0]

    rows = {v: [] for v in SCALE_VARIANTS}
    for _ in range(args.scale_rounds):
        for v in SCALE_VARIANTS:
            before = one_pass()
            res = quiet(fenchelrank, loss, r, tol=0.0,
                        max_iter=args.scale_iters, variant=v)
            after = one_pass()
            ls = np.mean(res.history["ls_eval"][1:])
            rows[v].append((_per_iteration(res), 0.5 * (before + after), ls))
    print(f"  {'variant':<12} {'s/iter':>8} {'pass s':>8} {'ratio':>6} "
          f"{'evals':>6}  (per round)")
    worst = 0.0
    for v, rr in rows.items():
        for per, pas, ls in rr:
            print(f"  {v:<12} {per:8.3f} {pas:8.3f} {per / pas:6.2f} {ls:6.2f}")
        best = min(per / pas for per, pas, _ in rr)
        worst = max(worst, best)
    ok = worst <= TARGET_PASSES_PER_ITERATION
    print(f"  worst variant (best round): {worst:.2f} passes per iteration "
          f"(goal <= {TARGET_PASSES_PER_ITERATION:.0f}: "
          f"{'met' if ok else 'MISSED'})")
    print(f"  FenchelRank(r={r:g}) default backend at this shape: "
          f"{fenchel_auto_backend(loss.n_pairs, X.shape[0])}")
    if args.scale_blocks:
        del loss
        t0 = time.perf_counter()
        pl = PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True,
                                  backend="pairs")
        build = time.perf_counter() - t0
        wp = np.zeros(X.shape[1])
        wp[:] = w
        before = best_of(lambda: pl.fun(wp), 3)[0]
        res = quiet(fenchelrank, pl, r, tol=0.0, max_iter=args.scale_iters)
        print(f"  reference, explicit pairs ({res.details.get('line_search')}): "
              f"{_per_iteration(res):.3f} s/iter, its value+grad "
              f"{before:.3f} s, pair arrays {build:.1f} s to build")
        del pl

    print("\n  One query of 20,000 documents, 46 features, 5 levels "
          f"(goal: converged, < {TARGET_SINGLE_QUERY_RATIO:.0f}x RankSVM)")
    _single_query(X1, y1, q1, {}, args.scale_rounds, goal=True)
    if args.scale_query_r > 0:
        r1 = args.scale_query_r
        print(f"\n  The same query at r = {r1:g}: pairs leave the active set, "
              "every evaluation a sorted sweep of the tree (no goal; "
              "Algorithm 1 capped at its default max_iter)")
        _single_query(X1, y1, q1, {"r": r1}, args.scale_rounds, goal=False)


def _single_query(X1, y1, q1, params, rounds, goal):
    """Whole fits of every variant against RankSVM's, interleaved, best of."""
    from refimpl.estimators import RankSVM

    fits = {"ranksvm": lambda: RankSVM(backend="tree").fit(X1, y1, q1)}
    for v in SCALE_VARIANTS:
        fits[v] = (lambda v=v: quiet(FenchelRank(variant=v, **params).fit,
                                     X1, y1, q1))
    for f in fits.values():     # warm (compile)
        f()
    best, out = best_of_interleaved(fits, rounds)
    t_svm = best["ranksvm"]
    print(f"  RankSVM(backend='tree'): {t_svm:.3f} s")
    for v in SCALE_VARIANTS:
        m = out[v]
        ratio = best[v] / t_svm
        ok = m.converged_ and ratio < TARGET_SINGLE_QUERY_RATIO
        verdict = f" ({'met' if ok else 'MISSED'})" if goal else ""
        print(f"  FenchelRank({v}): {best[v]:.3f} s, {m.n_iter_} updates, "
              f"converged {m.converged_}, backend {m.backend_}: {ratio:.1f}x "
              f"RankSVM{verdict}")


def fenchel_auto_backend(n_pairs, n_samples):
    """The backend FenchelRank's solver module picks for ``"auto"``."""
    from refimpl.solvers import fenchelrank as _fr

    pick = getattr(importlib.import_module(_fr.__module__), "auto_backend",
                   None)
    if pick is None:
        return "(no FenchelRank-specific rule: the loss's own)"
    return pick(n_pairs, n_samples)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3,
                    help="(a): timed FenchelRank fits to gap <= tol (best of)")
    ap.add_argument("--repeat-target", type=int, default=1,
                    help="(a): timed fits to G*_cvxpy (1 + 1e-3) (best of)")
    ap.add_argument("--max-iter-target", type=int, default=200_000,
                    help="(a): iteration cap when running to cvxpy's objective")
    ap.add_argument("--book-iters", type=int, default=1,
                    help="(a): iterations of the book's O(p^2) exact_step_naive "
                    "(about a minute each at MQ2008 size; 0 skips)")
    ap.add_argument("--no-cvxpy", action="store_true", help="(a): skip cvxpy")
    ap.add_argument("--docs", type=int, default=40_000,
                    help="(b), (c): total documents of the sweep")
    ap.add_argument("--dpq", type=int, nargs="+",
                    default=[10, 30, 100, 300, 1000, 3000],
                    help="(b): documents per query")
    ap.add_argument("--iters", type=int, default=30,
                    help="(b): timed iterations per run")
    ap.add_argument("--warmup", type=int, default=5,
                    help="(b): iterations before the timed ones")
    ap.add_argument("--repeat-b", type=int, default=2,
                    help="(b): interleaved runs per backend (best of)")
    ap.add_argument("--max-pairs", type=float, default=60e6,
                    help="(b): skip explicit pairs above this many pairs")
    ap.add_argument("--td-pairs", type=float, default=1e6,
                    help="(b): pair count the TD2004-shaped labels are tuned to")
    ap.add_argument("--breakdown-iters", type=int, default=40,
                    help="(c): iterations of each instrumented run")
    ap.add_argument("--breakdown-dpq", type=int, default=1000,
                    help="(c): documents per query of the second breakdown")
    ap.add_argument("--max-iter-grid", type=int, default=200_000,
                    help="(d): iteration cap of the paper and pairwise variants")
    ap.add_argument("--quick", action="store_true",
                    help="(d): r = 2 and 32 only, paper variant capped at 2000")
    ap.add_argument("--repeat-e", type=int, default=2,
                    help="(e): fits per grid point and line search (best of)")
    ap.add_argument("--scale", action="store_true",
                    help="run only part (f), at the 301,916 x 136 shape")
    ap.add_argument("--scale-r", type=float, default=8.0,
                    help="(f): radius r")
    ap.add_argument("--scale-iters", type=int, default=20,
                    help="(f): updates per timed run")
    ap.add_argument("--scale-rounds", type=int, default=2,
                    help="(f): rounds of timed runs in alternation")
    ap.add_argument("--scale-query-r", type=float, default=4.0,
                    help="(f): also the 20,000-document query at this r "
                    "(pairs leave the active set; 0 skips)")
    ap.add_argument("--scale-blocks", action=argparse.BooleanOptionalAction,
                    default=True,
                    help="(f): also time Algorithm 1 on explicit pairs")
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["a", "b", "c", "d", "e", "f"],
                    help="parts to skip")
    ap.add_argument("--only", nargs="*", default=None,
                    choices=["a", "b", "c", "d", "e", "f"],
                    help="run only these parts")
    args = ap.parse_args(argv)
    if args.scale:
        args.only = ["f"]
    if args.only is not None:
        args.skip = [p for p in "abcdef" if p not in args.only]
    elif "f" not in args.skip:
        args.skip.append("f")    # the scale part runs on request only
    print(f"bench_fenchelrank: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    if set("abcde") - set(args.skip):
        warm_up(cvxpy=not args.no_cvxpy)
    if "a" not in args.skip:
        part_a(args)
    if "b" not in args.skip:
        part_b(args)
    if "c" not in args.skip:
        part_c(args)
    if "d" not in args.skip:
        part_d(args)
    if "e" not in args.skip:
        part_e(args)
    if "f" not in args.skip:
        part_f(args)


if __name__ == "__main__":
    main()
