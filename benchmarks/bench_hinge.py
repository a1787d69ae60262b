"""HingeRankSVM (1-slack cutting planes) against cvxpy, side by side.

For each data set and ``C`` the same problem, eq. (7.h1) of the book (the
L1-hinge RankSVM with SVMrank's ``C / n_queries``), is solved twice in one
run: by :class:`refimpl.estimators.HingeRankSVM` at ``tol = 1e-8`` (relative
duality gap, so its objective is certified to 1e-8) and by cvxpy with
Clarabel on the explicit pairs (``cp.pos(1 - D w)``, tolerances 1e-8).
Printed per row: documents, pairs, cutting planes, both objectives, their
relative difference, both times (best of ``--repeat`` for ours, one solve
for cvxpy, whose set-up and solve are both counted) and the ratio cvxpy /
ours.  Data: synthetic sets (``make_synthetic_letor``) of 20 and 100
queries, the MQ2008-fold-shaped set, and MQ2008 Fold1 train when
``LETOR_HOME`` has it.  ``--json PATH`` writes the rows.

The committed run is ``benchmarks/bench_hinge.json``.  Run with
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _letor import mq2008_fold1_train, mq2008_shaped
from _timing import machine, warm_up_fits

from refimpl.data import make_synthetic_letor
from refimpl.estimators import HingeRankSVM
from refimpl.pairs import pair_difference_matrix

CS = (0.1, 10.0)


def cvxpy_solve(X, y, qid, C):
    """Objective and seconds of Clarabel on the explicit pairs."""
    import cvxpy as cp

    t0 = time.perf_counter()
    D = pair_difference_matrix(X, y, qid)
    D = D.toarray() if hasattr(D, "toarray") else D
    n = len(np.unique(qid))
    w = cp.Variable(X.shape[1])
    objective = 0.5 * cp.sum_squares(w) + C / n * cp.sum(cp.pos(1 - D @ w))
    prob = cp.Problem(cp.Minimize(objective))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-8, tol_gap_rel=1e-8,
               tol_feas=1e-8)
    seconds = time.perf_counter() - t0
    wv = np.asarray(w.value)
    value = 0.5 * wv @ wv + C / n * np.maximum(0.0, 1 - D @ wv).sum()
    return float(value), seconds, len(D)


def ours(X, y, qid, C, repeat):
    best, model = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        # eq. (7.11) itself, the problem Clarabel solves (the default
        # scales the columns: eq. 7.15, another problem off LETOR's [0, 1])
        model = HingeRankSVM(C=C, tol=1e-8, max_iter=5000,
                             feature_scaling=None).fit(X, y, qid)
        best = min(best, time.perf_counter() - t0)
    return model, best


def datasets():
    for n_q in (20, 100):
        d = make_synthetic_letor(n_queries=n_q, seed=0)
        yield f"synthetic {n_q} queries", d.X, d.y, d.qid
    d = mq2008_shaped()
    yield "synthetic (MQ2008 shape)", d.X, d.y, d.qid
    fold = mq2008_fold1_train()
    if fold is not None:
        yield "MQ2008 Fold1 train", fold.X, fold.y, fold.qid


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    warm_up_fits(lambda X, y, q: HingeRankSVM().fit(X, y, q), cvxpy=True)
    rows = []
    header = (f"{'data':26s} {'C':>5s} {'docs':>6s} {'pairs':>7s} {'planes':>6s} "
              f"{'P ours':>12s} {'P cvxpy':>12s} {'rel diff':>9s} "
              f"{'t ours':>7s} {'t cvxpy':>7s} {'ratio':>6s}")
    print(header)
    for label, X, y, qid in datasets():
        for C in CS:
            model, t_ours = ours(X, y, qid, C, args.repeat)
            p_cvx, t_cvx, n_pairs = cvxpy_solve(X, y, qid, C)
            rel = (model.objective_ - p_cvx) / p_cvx
            row = {"data": label, "C": C, "n_docs": int(X.shape[0]),
                   "n_pairs": int(n_pairs), "planes": int(model.n_iter_),
                   "objective_ours": model.objective_, "objective_cvxpy": p_cvx,
                   "rel_diff": rel, "gap_ours": model.dual_gap_,
                   "time_ours": t_ours, "time_cvxpy": t_cvx,
                   "ratio": t_cvx / t_ours}
            rows.append(row)
            print(f"{label:26s} {C:5g} {row['n_docs']:6d} {n_pairs:7d} "
                  f"{row['planes']:6d} {model.objective_:12.6f} {p_cvx:12.6f} "
                  f"{rel:9.1e} {t_ours:7.3f} {t_cvx:7.2f} {row['ratio']:6.0f}",
                  flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d"), "machine": machine(), "rows": rows},
            indent=1) + "\n")


if __name__ == "__main__":
    main()
