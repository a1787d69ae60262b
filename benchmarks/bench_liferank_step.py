"""LifeRank's step and budget: steps to the certificate against the step.

Chapter 6 (prop. ``lr-prop-step-cap``) shows that the damping ``c`` of
MDMM alone makes every step from ``1 / (2c)`` on expanding along ``T S``
(``S`` symmetric); below that cap the number of steps to the certificate
(``||grad L|| <= tol max(1, ||grad L_0||)`` and ``||T^T T - I||_F <=
constraint_tol``) grows as the step shrinks.  This fits
``LifeRank(n_components=k, lr=lr, max_iter=MAX_ITER)`` (every other
argument at its default, ``damping = 1``, so the cap is 0.5) on the
training split of Fold 1 of each data set found, for each step of
``STEPS`` and each ``k`` of ``KS``, and records the iterations, whether the
certificate was reached, whether the divergence guard stopped the run, and
the fit's CPU seconds.

Data sets: the seeded synthetic set (always), MQ2008 and OHSUMED under
``LETOR_HOME`` (or ``--letor-home``) when present.  The default step on
raw MSLR-shaped features (a fit takes minutes there) is measured by
``bench_liferank_scale.py`` and, at every grid point, by
``bench_mslr_scale.py --full``.

Run: ``python benchmarks/bench_liferank_step.py [--json
benchmarks/bench_liferank_step.json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import machine  # noqa: E402

from refimpl import data  # noqa: E402
from refimpl.estimators import LifeRank  # noqa: E402
from refimpl.exceptions import DatasetNotFoundError, DivergenceError  # noqa: E402

#: Steps swept: the old default, the default, two below the cap, the cap
#: and one above it.
STEPS = (0.1, 0.3, 0.45, 0.5, 0.6)
KS = (5, 10, 20)
#: Twice the estimator's budget, so that a slow step shows its count.
MAX_ITER = 20_000


def fit_one(X, y, qid, k, lr):
    """One fit; its outcome as a JSON row."""
    t0 = time.process_time()
    row = {"k": k, "lr": lr}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m = LifeRank(n_components=k, lr=lr, max_iter=MAX_ITER).fit(X, y, qid)
        row.update(outcome="converged" if m.converged_ else "budget",
                   n_iter=int(m.n_iter_),
                   grad_norm=float(m.history_["grad_norm"][-1]))
    except DivergenceError as err:
        row.update(outcome="diverged", n_iter=None, message=str(err)[:160])
    row["cpu_s"] = round(time.process_time() - t0, 2)
    return row


def datasets(args):
    """(name, training split) of every data set found."""
    syn = data.make_synthetic_letor(n_queries=100, seed=0)
    yield "synthetic-100", (syn.X, syn.y, syn.qid)
    for name in ("MQ2008", "OHSUMED"):
        try:
            fold = data.load_letor_fold(name, 1, root=args.letor_home)
        except DatasetNotFoundError:
            print(f"{name}: not found, skipped")
            continue
        yield name, fold.train


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--letor-home", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out = {"machine": machine(), "date": time.strftime("%Y-%m-%d"),
           "max_iter": MAX_ITER, "defaults": {
               name: LifeRank().get_params()[name]
               for name in ("lr", "max_iter", "damping", "tol",
                            "constraint_tol", "lam")},
           "results": []}
    for name, (X, y, qid) in datasets(args):
        for k in KS:
            for lr in STEPS:
                row = {"data": name, **fit_one(X, y, qid, k, lr)}
                out["results"].append(row)
                print(f"{name:18s} k={k:2d} lr={lr:<5g} {row['outcome']:9s} "
                      f"{row['n_iter'] if row['n_iter'] is not None else '-':>6} "
                      f"steps  {row['cpu_s']:8.1f} s CPU", flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
