"""Every default against every choice it could make: default / fastest time per shape.

For each estimator that chooses a backend or a solver (RankSVM,
FenchelRank, FSMRank, SparseRankSVM with each penalty, and the RankSVM
that GAS and LifeRank hand their few selected or learnt features to),
on each shape of a grid (short and long queries, 2 to 16 levels, 10 to
700 features, dense and sparse ``X``) and on MQ2008 Fold 1 and OHSUMED
Fold 3 when ``../shared/letor`` (or ``LETOR_HOME``) has them, every
choice and the default are fitted side by side in one run (best of
``--repeat`` warm fits each).  A choice counts only if it reaches the
default's objective within ``SAME_REL`` (relative); the row reports
``default / fastest`` among those: **goal <= 1.15 on every row.**

FISTA (``SparseRankSVM(solver="fista")``) runs to the same ``tol`` with at
most ``FISTA_CAP`` iterations: where it stops at the cap it has not
reached the answer, and the row says so (its time is then a lower bound).

Writes ``bench_defaults.json`` next to itself (machine, CPU, numba and
BLAS versions, every time); ``--quick`` runs two tiny shapes (a smoke
test, no goal) and writes nothing unless ``--json`` is given.  Run with
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import machine

from refimpl.data import load_letor_fold, make_synthetic_letor
from refimpl.estimators import FenchelRank, FSMRank, RankSVM, SparseRankSVM

GOAL = 1.15
SAME_REL = 1e-4
FISTA_CAP = 3000
HERE = Path(__file__).resolve().parent
LETOR = Path(os.environ.get("LETOR_HOME") or HERE.parents[1] / "shared" / "letor")

#: name -> (queries, documents per query (lo, hi), levels, features, sparse)
GRID = {
    "short, 2 levels, d=10": (300, (5, 8), 2, 10, False),
    "mid, 5 levels, d=46": (60, (30, 60), 5, 46, False),
    "long, 16 levels, d=136": (3, (700, 1000), 16, 136, False),
    "OHSUMED-like, 3 levels": (40, (130, 160), 3, 45, False),
    "wide sparse, d=700": (60, (10, 40), 3, 700, True),
}
QUICK = {
    "tiny dense": (12, (4, 9), 3, 10, False),
    "tiny sparse": (12, (4, 9), 2, 30, True),
}


def synthetic(n_queries, docs, levels, d, sparse, seed=0):
    n_inf = min(6, d // 2)
    data = make_synthetic_letor(n_queries=n_queries, docs_per_query=docs,
                                n_levels=levels, n_informative=n_inf,
                                n_redundant=min(4, d - n_inf),
                                n_noise=d - n_inf - min(4, d - n_inf), seed=seed)
    X = data.X
    if sparse:  # LETOR-like sparsity: most features zero in most documents
        rng = np.random.default_rng(seed)
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.05, X, 0.0))
    return X, data.y, data.qid


def real_sets():
    out = {}
    for name, fold in (("MQ2008", 1), ("OHSUMED", 3)):
        if (LETOR / name).is_dir():
            out[f"{name} Fold {fold}"] = tuple(
                load_letor_fold(name, fold, root=LETOR).train)
    return out


def downstream(X, k=10, seed=0):
    """The few dense columns GAS and LifeRank pass to their RankSVM."""
    Xd = X.toarray() if sp.issparse(X) else X
    W = np.random.default_rng(seed).normal(size=(Xd.shape[1], k)) / np.sqrt(Xd.shape[1])
    return {"GAS -> RankSVM": Xd[:, :k].copy(), "LifeRank -> RankSVM": Xd @ W}


def estimators(X, fista_cap=FISTA_CAP):
    """name -> {choice: factory}; "default" is the estimator as a user writes it."""
    rows = {
        "RankSVM": {"default": lambda: RankSVM(),
                    "pairs": lambda: RankSVM(backend="pairs"),
                    "tree": lambda: RankSVM(backend="tree")},
        "FenchelRank": {"default": lambda: FenchelRank(r=8.0),
                        "pairs": lambda: FenchelRank(r=8.0, backend="pairs"),
                        "tree": lambda: FenchelRank(r=8.0, backend="tree")},
        "FSMRank": {"default": lambda: FSMRank(lambda1=0.1, lambda2=1e-3, tol=1e-4,
                                               max_iter=400),
                    "pairs": lambda: FSMRank(lambda1=0.1, lambda2=1e-3, tol=1e-4,
                                             max_iter=400, backend="pairs"),
                    "tree": lambda: FSMRank(lambda1=0.1, lambda2=1e-3, tol=1e-4,
                                            max_iter=400, backend="tree")},
    }
    for pen in ("l1", "log", "mcp", "lp"):
        rows[f"SparseRankSVM {pen}"] = {
            "default": lambda pen=pen: SparseRankSVM(C=0.1, penalty=pen),
            "newton": lambda pen=pen: SparseRankSVM(C=0.1, penalty=pen,
                                                    solver="newton"),
            "fista": lambda pen=pen: SparseRankSVM(C=0.1, penalty=pen, solver="fista",
                                                   max_iter=fista_cap)}
    return rows


def fit_time(make, X, y, qid, repeat, min_time=0.05):
    """Best of ``repeat`` warm fits, each a mean over ``min_time`` seconds of fits."""
    best, model = np.inf, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        make().fit(X, y, qid)  # warm: compile, caches
        number = max(1, int(min_time / max(time.perf_counter() - t0, 1e-6)))
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                model = make().fit(X, y, qid)
            best = min(best, (time.perf_counter() - t0) / number)
    return best, model


def verdict(row):
    """Add the fastest same-answer choice, the default's own choice, and the ratio.

    ``resolved``: the explicit choice with the default's backend and solver
    (the same computation).  When it is the fastest, the default *is* the
    fastest choice and ``ratio`` is 1; otherwise ``ratio`` is the default's
    time over the fastest's.  ``measured_ratio`` keeps the default's own
    time over the fastest's in every row: two timings of one computation
    differ by the noise of the machine.
    """
    res = row["choices"]
    d = res["default"]
    same = {c: r["time"] for c, r in res.items() if c != "default" and r["same"]}
    fastest = min(same, key=same.get) if same else "default"
    resolved = next((c for c, r in res.items() if c != "default"
                     and (r["backend"], r["solver"]) == (d["backend"], d["solver"])),
                    None)
    measured = d["time"] / same[fastest] if same else 1.0
    row.update(fastest=fastest, resolved=resolved, measured_ratio=measured,
               ratio=1.0 if resolved == fastest else measured)
    return row


def measure(label, X, y, qid, repeat, only=None, fista_cap=FISTA_CAP, out=None,
            done=()):
    rows = []
    ests = estimators(X, fista_cap)
    for name, Xs in downstream(X).items():
        ests[name] = {"default": lambda: RankSVM(),
                      "pairs": lambda: RankSVM(backend="pairs"),
                      "tree": lambda: RankSVM(backend="tree"),
                      "_X": Xs}
    for est, choices in ests.items():
        if only and not any(o in est for o in only):
            continue
        Xe = choices.pop("_X", X)
        res = {}
        for choice, make in choices.items():
            t, m = fit_time(make, Xe, y, qid, repeat)
            res[choice] = {"time": t, "objective": float(m.objective_),
                           "converged": bool(getattr(m, "converged_", True)),
                           "backend": getattr(m, "backend_", None),
                           "solver": getattr(m, "solver", None)}
        ref, conv = res["default"]["objective"], res["default"]["converged"]
        for r in res.values():
            # the same answer: the default's objective, and its certificate
            # (an iteration cap -- FenchelRank's T = 1000 -- is the same stop)
            close = abs(r["objective"] - ref) <= SAME_REL * max(abs(ref), 1e-300)
            r["same"] = bool(close and r["converged"] == conv)
        rows.append(verdict({"data": label, "estimator": est, "choices": res}))
        if out is not None:
            out(list(done) + rows)
        fastest, ratio = rows[-1]["fastest"], rows[-1]["ratio"]
        print(f"  {label:26s} {est:22s} default {res['default']['time']:8.4f} s "
              f"({res['default']['backend'] or res['default']['solver']}); "
              + ", ".join(f"{c} {r['time']:.4f}{'' if r['same'] else '*'}"
                          for c, r in res.items() if c != "default")
              + f"  ratio {ratio:.2f}", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="two tiny shapes (smoke test)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", nargs="*", default=None,
                    help="estimators whose name contains one of these")
    ap.add_argument("--fista-cap", type=int, default=FISTA_CAP,
                    help="FISTA's iteration cap per solve")
    ap.add_argument("--reverdict", type=Path, default=None,
                    help="recompute the verdicts of a recorded run in place")
    args = ap.parse_args(argv)
    if args.reverdict:
        doc = json.loads(args.reverdict.read_text())
        doc["rows"] = [verdict(r) for r in doc["rows"]]
        args.reverdict.write_text(json.dumps(doc, indent=1))
        return doc
    grid = QUICK if args.quick else GRID
    out = args.json or (None if args.quick else HERE / "bench_defaults.json")
    t_start = time.perf_counter()
    rows = []
    sets = {k: synthetic(*v) for k, v in grid.items()}
    if not args.quick:
        sets.update(real_sets())
    info = machine()

    def write(rows_so_far):  # after every row: a stopped run keeps its rows
        doc = {"goal": GOAL, "same_rel": SAME_REL, "fista_cap": args.fista_cap,
               "repeat": args.repeat, "machine": info,
               "seconds": time.perf_counter() - t_start, "rows": rows_so_far}
        if out is not None:
            out.write_text(json.dumps(doc, indent=1))
        return doc

    for label, (X, y, qid) in sets.items():
        rows += measure(label, X, y, qid, args.repeat, args.only, args.fista_cap,
                        write, rows)
    worst = max(r["ratio"] for r in rows)
    print(f"worst default / fastest: {worst:.2f} (goal <= {GOAL})")
    return write(rows)


if __name__ == "__main__":
    main()
