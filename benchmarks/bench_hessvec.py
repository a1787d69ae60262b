"""Cost of one Hessian-vector product: explicit pairs vs the sv-stats methods.

Three experiments, every number a ratio measured side by side in one run
(``_timing.interleaved``); seconds are printed, never asserted.

1. **Levels sweep** (Lee & Lin 2014, eqs. 20, 29, 32; their Figures 4 and
   6).  MQ2008-list-like data: ``--queries`` x ``--docs`` documents (default
   20 x 2,000), 46 features, and ``k`` equal-sized relevance levels per
   query, ``k = 2, 4, 8, ..., l_q`` (``k = l_q``: every document its own
   level, as in MQ2007/2008-list).  After ``loss.fun(w)`` once, one
   ``loss.hess_vec(s)`` is timed for explicit pairs (``backend="pairs"``,
   skipped when ``p > --max-pairs``, default 50M), direct counting, the
   selection tree, the AVL tree and PRSVM+ (``backend="tree"`` with each
   ``tree_method``).  The exponent ``b`` of ``cost ~ k^b`` is fitted by
   least squares on log-log, over all ``k`` and over the tail
   ``k >= --tail-k``.  Expected: ``b ~ 0`` for the two trees (O(l log k)),
   ``b -> 1`` for direct counting and PRSVM+ once their O(l k) term
   dominates, ``b ~ 0`` for pairs (``p`` only grows from l^2/4 to l^2/2).
   A log-log plot goes to ``<out>/hessvec_vs_levels.png``, the numbers to
   ``<out>/hessvec_vs_levels.json`` (``--out``, default a new temp dir).

2. **Hessian-vector product vs two mat-vecs.**  One ``hess_vec`` with the
   tree backend (selection tree, one pass over ``X``:
   ``refimpl.kernels.fused``) against the two dense BLAS mat-vecs
   ``X v`` and ``X^T u`` the two-pass product contains; **goal <= 0.6x** on
   the synthetic 301,916 x 136 problem (2,500 queries, 5 levels,
   ``benchmarks/_synthetic.py``); also on MQ2008 Fold1 train (when
   ``LETOR_HOME`` is set).  Likewise one value + gradient (``fun`` then
   ``grad``, one pass) against the same two mat-vecs, and both against the
   two-pass path (``one_pass=False``) measured in the same rounds.
   ``w`` is the RankSVM solution (``tol=1e-3``; C = 2^7 for MQ2008, Lee &
   Lin's Table 3, C = 1 for the synthetic set), so the active set is a
   realistic one; the one-pass time is split into its parts (the tree
   kernels alone on cached scores, the mat-vecs).  Also the value +
   gradient at ``w = 0``, TRON's start (every score 0: no sort, no sweep,
   ``X^T dz`` four rows at a time), against the one-pass kernel run there,
   and the per-query sort from scratch (``sort_by_score``: buckets)
   against a mergesort per query, its previous path.

3. **Crossover for ``backend="auto"``.**  Fixed number of documents
   (``--cross-docs``, default 60,000; ``make_synthetic_letor``, 46
   features, 3 and 5 levels, evaluated at its true weights), documents per
   query growing 4 ... 1,024 so that pairs per document ``p/l`` grows.
   Value+gradient and ``hess_vec`` are timed for explicit pairs and the tree;
   the printed crossovers (log-log interpolation of the time ratio) are
   the ``p/l`` above which the tree wins, for value+grad, for hess_vec and
   for one TRON iteration of one value+grad plus ``--cg-per-newton`` (default
   5) Hessian products.  The automatic choice is fitted to the wider grid
   of ``benchmarks/bench_backends.py`` (``refimpl/losses/_backend_cost.py``).

Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` (``make bench`` sets
them); ``--help`` lists the options, ``--skip`` drops experiments.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _letor import mq2008_fold1_train
from _synthetic import make_lean_letor
from _timing import interleaved, machine

from refimpl.data import make_synthetic_letor
from refimpl.estimators import RankSVM
from refimpl.kernels.fused import value_grad_one_pass
from refimpl.kernels.ostree import hess_dz_selection_tree, sort_by_score
from refimpl.losses import PairwiseSquaredHinge

#: column label -> (backend, tree_method)
METHODS = {
    "pairs": ("pairs", None),
    "direct": ("tree", "direct"),
    "sel.tree": ("tree", "selection_tree"),
    "avl": ("tree", "avl"),
    "prsvm+": ("tree", "prsvm"),
}
REF = "sel.tree"


def make_loss(X, y, qid, method):
    backend, tree_method = METHODS[method]
    kw = {} if tree_method is None else {"tree_method": tree_method}
    return PairwiseSquaredHinge(X, y, qid, backend=backend, **kw)


def fit_exponent(k, t):
    """Least-squares slope of log t on log k (needs >= 2 points)."""
    k, t = np.asarray(k, float), np.asarray(t, float)
    ok = np.isfinite(t)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(k[ok]), np.log(t[ok]), 1)[0])


# --------------------------------------------------------------------------
# 1. levels sweep
# --------------------------------------------------------------------------


def list_like_data(n_queries, docs, n_features, seed=0):
    """Uniform features, a latent score, and the within-query rank of it.

    Returns ``X``, ``qid``, ``rank`` (0 .. docs-1 inside each query, by the
    latent score ``X w* + noise``) and ``w`` = ``w*`` scaled so that the
    scores ``X w`` have unit standard deviation (margins then matter: a
    realistic, partial active set).
    """
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.random((n, n_features))
    w_true = rng.normal(size=n_features)
    z = X @ w_true
    latent = z + 0.5 * z.std() * rng.standard_normal(n)
    qid = np.repeat(np.arange(1, n_queries + 1), docs)
    rank = np.empty(n, dtype=np.int64)
    for q in range(n_queries):
        sl = slice(q * docs, (q + 1) * docs)
        rank[sl] = np.argsort(np.argsort(latent[sl], kind="stable"), kind="stable")
    return X, qid, rank, w_true / z.std()


def levels_grid(docs):
    ks = []
    k = 2
    while k < docs:
        ks.append(k)
        k *= 2
    return ks + [docs]


def sweep_levels(args, out_dir):
    X, qid, rank, w = list_like_data(args.queries, args.docs, 46, seed=0)
    s = np.random.default_rng(1).normal(size=X.shape[1])
    ks = levels_grid(args.docs)
    l = X.shape[0]
    print(f"\n[1] One Hessian-vector product vs number of levels k "
          f"({args.queries} queries x {args.docs:,} documents, 46 features; "
          f"ms per product, (x) = ratio to the selection tree)")
    header = f"{'k':>6} {'p':>12} {'active':>7}" + "".join(
        f" {m:>17}" for m in METHODS)
    print(header)
    rows = []
    for k in ks:
        y = rank * k // args.docs  # k equal-sized levels per query
        losses = {m: make_loss(X, y, qid, m) for m in METHODS if m != "pairs"}
        p = losses[REF].n_pairs
        if p <= args.max_pairs:
            losses = {"pairs": make_loss(X, y, qid, "pairs"), **losses}
        for L in losses.values():
            L.fun(w)
        active = losses[REF].n_active_pairs() / p
        best = interleaved({m: (lambda L=L, s=s: L.hess_vec(s))
                            for m, L in losses.items()}, rounds=args.rounds)
        del losses
        row = {"k": k, "p": p, "active": active,
               **{m: best.get(m, float("nan")) for m in METHODS}}
        rows.append(row)
        cells = []
        for m in METHODS:
            if m in best:
                cells.append(f" {best[m] * 1e3:9.2f} ({best[m] / best[REF]:4.1f})")
            else:
                cells.append(f" {'skipped':>17}")
        print(f"{k:>6} {p:>12,} {active:>7.0%}" + "".join(cells), flush=True)
    print(f"  explicit pairs skipped when p > {args.max_pairs:,}; "
          f"l = {l:,} documents, so p/l runs from {rows[0]['p'] / l:.0f} "
          f"to {rows[-1]['p'] / l:.0f}")
    print("  exponent b of cost ~ k^b (least squares on log-log):")
    kk = [r["k"] for r in rows]
    tail = np.array([i for i, k in enumerate(kk) if k >= args.tail_k], dtype=int)
    ref = np.array([r[REF] for r in rows])
    for m in METHODS:
        t = np.array([r[m] for r in rows])
        b_all = fit_exponent(kk, t)
        b_tail = fit_exponent([kk[i] for i in tail], t[tail])
        line = (f"    {m:>9}: b = {b_all:5.2f} over all k,  "
                f"b = {b_tail:5.2f} over k >= {args.tail_k}")
        if m != REF:
            extra = t[tail] - ref[tail]
            ok = extra > 0
            b_extra = fit_exponent(np.array(kk)[tail][ok], extra[ok])
            line += f",  b = {b_extra:5.2f} for (cost - {REF} cost), k >= {args.tail_k}"
        print(line)
    print("  expected: ~0 for the trees (O(l log k)), -> 1 for direct and prsvm+ "
          "(O(l k)),\n  ~0 for pairs (p grows only from l^2/4 to l^2/2).  The "
          "mat-vecs and the sweeps cost the\n  same in every method; the last "
          "column fits the k-dependent excess over the selection tree.")
    save_levels(rows, args, out_dir)


def save_levels(rows, args, out_dir):
    (out_dir / "hessvec_vs_levels.json").write_text(json.dumps(
        {"queries": args.queries, "docs": args.docs, "machine": machine(), "rows": rows},
        indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    kk = np.array([r["k"] for r in rows])
    for m in METHODS:
        t = np.array([r[m] for r in rows]) * 1e3
        ok = np.isfinite(t)
        ax.loglog(kk[ok], t[ok], "o-", label=m)
    ax.set_xlabel("relevance levels per query k")
    ax.set_ylabel("ms per Hessian-vector product")
    ax.set_title(f"{args.queries} queries x {args.docs:,} documents, 46 features")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    png = out_dir / "hessvec_vs_levels.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    print(f"  plot: {png}\n  data: {out_dir / 'hessvec_vs_levels.json'}")


# --------------------------------------------------------------------------
# 2. hess_vec vs two mat-vecs
# --------------------------------------------------------------------------


def matvec_datasets():
    fold = mq2008_fold1_train(indent="  ")
    if fold is not None:
        yield "MQ2008 Fold1 train", *fold, 2.0**7
    X, y, qid, _ = make_lean_letor(301_916, 136, 2_500, 5, seed=0)
    yield "synthetic 301,916 x 136, 2,500 queries, 5 levels", X, y, qid, 1.0


@njit(cache=True)
def mergesort_by_query(z, order, indptr, perm):
    """The stable per-query sort by ``np.argsort(kind="mergesort")``:
    ``sort_by_score``'s path for queries of more than 32 documents before
    its bucket sort, kept here to time the two side by side."""
    for q in range(len(indptr) - 1):
        lo, hi = indptr[q], indptr[q + 1]
        s = np.argsort(z[order[lo:hi]], kind="mergesort")
        for a in range(hi - lo):
            perm[lo + a] = order[lo + s[a]]


def hessvec_vs_matvecs(args):
    print("\n[2] One pass over X: hess_vec and value+grad (tree backend, "
          "selection tree; vector lanes below nine levels) as multiples "
          "of two dense BLAS mat-vecs X v + X^T u (goal for hess_vec: "
          "<= 0.6x)")
    for name, X, y, qid, C in matvec_datasets():
        matvec_case(name, X, y, qid, C, args.rounds)


def matvec_case(name, X, y, qid, C, rounds):
    w = RankSVM(C=C, tol=1e-3, backend="tree").fit(X, y, qid).coef_
    one = PairwiseSquaredHinge(X, y, qid, backend="tree", one_pass=True)
    two = one.with_backend("tree", one_pass=False)
    auto = PairwiseSquaredHinge(X, y, qid, backend="tree").one_pass_
    for L in (one, two):
        L.fun(w)
    rng = np.random.default_rng(2)
    s = rng.normal(size=X.shape[1])
    u = rng.normal(size=X.shape[0])
    imp = one._impl
    t = imp.to_rows(X @ s)
    z = imp.z.copy()
    out = np.empty(X.shape[0])
    perm = np.empty(X.shape[0], dtype=np.int64)

    def value_grad(L, at=w):
        L._w = None  # a fresh evaluation each call
        L.fun(at)
        return L.grad(at)

    zero = np.zeros(X.shape[1])
    scratch = (np.empty(X.shape[0]), np.empty(X.shape[0], dtype=np.int64),
               np.empty(X.shape[0], dtype=np.int64),
               np.empty(X.shape[0], dtype=np.int64), np.empty(X.shape[0]),
               np.zeros((4, X.shape[0]), dtype=np.int64),
               np.empty(X.shape[1]))

    def kernel_at_zero():  # the one-pass kernel itself: scores, sorts, sweeps
        zb, perm, lp, lm, dz, sweep, g = scratch
        return value_grad_one_pass(imp.X, zero, imp.level, imp.nlev,
                                   imp.indptr, one.margin, zb, perm, lp, lm,
                                   dz, sweep, g)

    parts = {
        "hess_vec 1 pass": lambda: one.hess_vec(s),
        "hess_vec 2 pass": lambda: two.hess_vec(s),
        "X v": lambda: X @ s,
        "X^T u": lambda: X.T @ u,
        "value+grad 1 pass": lambda: value_grad(one),
        "value+grad 2 pass": lambda: value_grad(two),
        "value+grad 1 pass, w = 0": lambda: value_grad(one, zero),
        "one-pass kernel, w = 0": kernel_at_zero,
        "sort, buckets": lambda: sort_by_score(z, imp.order, imp.indptr, perm),
        "sort, mergesort": lambda: mergesort_by_query(z, imp.order,
                                                      imp.indptr, perm),
        "tree hess_dz": lambda: hess_dz_selection_tree(
            t, imp.nlev, imp.perm, imp.order, imp.indptr, imp.sweep, out),
        "sort+tree value_dz": lambda: imp.value(z),
    }
    b = interleaved(parts, rounds=rounds)
    two_mv = b["X v"] + b["X^T u"]
    print(f"\n  {name}: {X.shape[0]:,} x {X.shape[1]}, p = {one.n_pairs:,} "
          f"(p/l = {one.n_pairs / X.shape[0]:.1f}), w = RankSVM(C={C:g}) "
          f"solution, {one.n_active_pairs() / one.n_pairs:.0%} of pairs active; "
          f"X = {X.nbytes / 2**20:.1f} MiB, one_pass='auto' chooses "
          f"{'one pass' if auto else 'two passes'}")
    print(f"    two BLAS mat-vecs X v + X^T u  {two_mv * 1e3:8.3f} ms  "
          f"(X v {b['X v'] * 1e3:.3f}, X^T u {b['X^T u'] * 1e3:.3f})")
    for label, key, goal in (("hess_vec, one pass ", "hess_vec 1 pass", " (goal <= 0.6x)"),
                             ("hess_vec, two passes", "hess_vec 2 pass", ""),
                             ("value+grad, one pass ", "value+grad 1 pass", ""),
                             ("value+grad, two passes", "value+grad 2 pass", "")):
        print(f"    {label:<24} {b[key] * 1e3:8.3f} ms = {b[key] / two_mv:5.2f}x "
              f"the two mat-vecs{goal}")
    print(f"    of which the tree alone (cached scores): hess_dz "
          f"{b['tree hess_dz'] * 1e3:.3f} ms, sort + value_dz "
          f"{b['sort+tree value_dz'] * 1e3:.3f} ms")
    sb, sm = b["sort, buckets"], b["sort, mergesort"]
    print(f"    each query sorted from scratch (the first trial point of a "
          f"fit): sort_by_score {sb * 1e3:.3f} ms, a mergesort per query "
          f"(its previous path) {sm * 1e3:.3f} ms: {sb / sm:.2f}x")
    z0, k0 = b["value+grad 1 pass, w = 0"], b["one-pass kernel, w = 0"]
    print(f"    value+grad at w = 0 (TRON's start: equal scores, no sort or "
          f"sweep, X^T dz four rows at a time) {z0 * 1e3:.3f} ms; the "
          f"one-pass kernel there (scores, sort, sweeps per query) "
          f"{k0 * 1e3:.3f} ms: {z0 / k0:.2f}x")


# --------------------------------------------------------------------------
# 3. crossover pairs vs tree
# --------------------------------------------------------------------------


def crossing(x, r):
    """The x above which r stays >= 1 (log-log interpolation), or None.

    The last upward crossing of 1, so that a noisy point below the
    crossover does not decide it.
    """
    for i in range(len(x) - 1, 0, -1):
        if r[i] < 1.0:
            return None
        if r[i - 1] < 1.0:
            x0, x1 = math.log(x[i - 1]), math.log(x[i])
            y0, y1 = math.log(r[i - 1]), math.log(r[i])
            return math.exp(x0 + (0.0 - y0) * (x1 - x0) / (y1 - y0))
    return None


def describe(x, r):
    c = crossing(x, r)
    if c is not None:
        return f"{c:6.1f}"
    if all(v >= 1.0 for v in r):
        return f"<= {x[0]:.1f}"
    return f"> {x[-1]:.1f}"


def crossover(args):
    n = args.cross_docs
    print(f"\n[3] backend='auto' crossover: explicit pairs vs tree (selection "
          f"tree), {n:,} documents, 46 features, docs per query growing; "
          f"ratio = pairs time / tree time (> 1: the tree wins)")
    sizes = [4, 8, 16, 32, 64, 128, 256, 512, 1024]
    r_cg = args.cg_per_newton
    suggestions = []
    for k in (3, 5):
        print(f"\n  {k} levels (make_synthetic_letor proportions), w = true weights")
        print(f"  {'l_q':>5} {'p/l':>7} {'active':>7} | {'value+grad ms':>22} "
              f"{'ratio':>6} | {'hess_vec ms':>22} {'ratio':>6} | "
              f"{'1 vg + ' + str(r_cg) + ' hv':>10}")
        print(f"  {'':>5} {'':>7} {'':>7} | {'pairs':>10} {'tree':>11} {'':>6} | "
              f"{'pairs':>10} {'tree':>11} {'':>6} | {'ratio':>10}")
        ppd, rvg, rhv, rtr = [], [], [], []
        for lq in sizes:
            syn = make_synthetic_letor(
                n_queries=n // lq, docs_per_query=lq, n_informative=6,
                n_redundant=10, n_noise=30, n_levels=k, seed=0)
            X, y, qid, w = syn.X, syn.y, syn.qid, syn.coef
            s = np.random.default_rng(3).normal(size=X.shape[1])
            losses = {b: PairwiseSquaredHinge(X, y, qid, backend=b)
                      for b in ("pairs", "tree")}
            vg = interleaved({b: (lambda L=L, w=w: L.value_grad(w))
                              for b, L in losses.items()}, rounds=args.rounds)
            for L in losses.values():
                L.fun(w)
            hv = interleaved({b: (lambda L=L, s=s: L.hess_vec(s))
                              for b, L in losses.items()}, rounds=args.rounds)
            p = losses["pairs"].n_pairs
            act = losses["pairs"].n_active_pairs() / p
            ppd.append(p / X.shape[0])
            rvg.append(vg["pairs"] / vg["tree"])
            rhv.append(hv["pairs"] / hv["tree"])
            rtr.append((vg["pairs"] + r_cg * hv["pairs"])
                       / (vg["tree"] + r_cg * hv["tree"]))
            print(f"  {lq:>5} {ppd[-1]:>7.1f} {act:>7.0%} | {vg['pairs'] * 1e3:>10.2f} "
                  f"{vg['tree'] * 1e3:>11.2f} {rvg[-1]:>6.2f} | {hv['pairs'] * 1e3:>10.2f} "
                  f"{hv['tree'] * 1e3:>11.2f} {rhv[-1]:>6.2f} | {rtr[-1]:>10.2f}",
                  flush=True)
            del losses
        print(f"  tree wins above p/l = {describe(ppd, rvg)} (value+grad), "
              f"{describe(ppd, rhv)} (hess_vec), {describe(ppd, rtr)} "
              f"(1 value+grad + {r_cg} hess_vec)")
        c = crossing(ppd, rtr)
        if c is not None:
            suggestions.append(c)
    if suggestions:
        print(f"\n  measured TRON-iteration crossover "
              f"{', '.join(f'{c:.1f}' for c in suggestions)} pairs/document "
              f"(backend='auto' follows benchmarks/bench_backends.py's model)")


# --------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--queries", type=int, default=20, help="[1] queries")
    ap.add_argument("--docs", type=int, default=2000, help="[1] documents per query")
    ap.add_argument("--max-pairs", type=int, default=50_000_000,
                    help="[1] skip explicit pairs above this many pairs")
    ap.add_argument("--tail-k", type=int, default=256,
                    help="[1] also fit the exponent over k >= this")
    ap.add_argument("--cross-docs", type=int, default=60_000,
                    help="[3] total documents of the crossover data")
    ap.add_argument("--cg-per-newton", type=int, default=5,
                    help="[3] Hessian products per value+grad in a TRON iteration")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved timing rounds (best of rounds x 3 runs)")
    ap.add_argument("--out", type=Path, default=None,
                    help="directory for the plot and JSON (None: a new temp dir)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["1", "2", "3"],
                    help="experiments to skip")
    args = ap.parse_args(argv)
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="bench_hessvec_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"bench_hessvec: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; "
          f"outputs in {out_dir}")
    if "1" not in args.skip:
        sweep_levels(args, out_dir)
    if "2" not in args.skip:
        hessvec_vs_matvecs(args)
    if "3" not in args.skip:
        crossover(args)


if __name__ == "__main__":
    main()
