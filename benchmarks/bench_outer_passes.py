"""How many reweighting passes SparseRankSVM needs, and what a cap of 30 would cost.

Algorithm 2 of Laporte et al. (2014) repeats its weighted-l1 pass "until
convergence"; the paper gives no number of passes.  ``SparseRankSVM`` stops
when ``||w^k - w^{k-1}||_inf <= tol_outer ||w^k||_inf`` (``tol_outer =
1e-4``) or after ``max_outer = 300`` passes (a safeguard; it was 30), and a
fit that reaches the cap reports ``converged_ = False`` with a
``ConvergenceWarning``.  This
benchmark counts passes, it times nothing:

(1) **The wide sparse shape** of ``bench_defaults.py`` (60 queries of 10-40
    documents, 3 levels, d = 700, 95 % of the entries zeroed; seeds 0-2)
    at ``C = 0.1``, the defaults (``max_outer = 300``): the passes to the
    stopping rule.  Seed 0 again
    with proximal Newton at inner ``tol = 1e-6`` and ``1e-9``: if a loose
    inner solve slowed the outer loop, the tighter one would need fewer
    passes.  And seed 0 capped at 30 passes (the former default):
    ``converged_``, the last change against ``tol_outer ||w||_inf``,
    ``F(w^30) - F(w^K)`` and the supports.
(2) **LETOR, from the committed tables** (no refit):
    ``results/{MQ2008,OHSUMED}/penalty_paths.csv`` fits ``ranksvm-log``,
    ``-mcp`` and ``-lp`` with the registry's settings on 81 values of ``C``
    per fold; its rows on the registry grid are the runner's fits
    (``tasks.csv`` holds their Newton steps, not their passes).  Printed:
    the passes on the registry grid (largest, median), on the whole path
    (largest) and the path points stopped at their cap.

Writes ``bench_outer_passes.json`` beside this file (``--json``); the run
takes about 2 minutes on one core.  Run with ``OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_defaults import GRID, synthetic

from refimpl.estimators import SparseRankSVM

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"
SHAPE = "wide sparse, d=700"
C = 0.1
CAP = 30
PENALTIES = ("log", "mcp", "lp")


def fit(X, y, qid, penalty, **kw):
    """The fit, with the ConvergenceWarning it raised (if any)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        m = SparseRankSVM(C=C, penalty=penalty, **kw).fit(X, y, qid)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    h = m.history_
    return m, {"passes": int(m.n_outer_), "converged": bool(m.converged_),
               "warned": warned, "solver": m.solver_,
               "last_change": float(h["change"][-1]),
               "threshold": float(m.tol_outer * np.max(np.abs(m.coef_))),
               "F": float(m.objective_), "support": int(np.count_nonzero(m.coef_))}


def wide():
    rows = []
    for seed in (0, 1, 2):
        X, y, qid = synthetic(*GRID[SHAPE], seed=seed)
        for pen in PENALTIES:
            _, r = fit(X, y, qid, pen)          # the defaults: max_outer = 300
            rows.append({"seed": seed, "penalty": pen, "setting": "default solver",
                         **r})
            print(f"seed {seed} {pen:3s} {r['solver']:6s}: {r['passes']:3d} passes, "
                  f"converged {r['converged']}", flush=True)
            if seed == 0:
                for tol in (1e-6, 1e-9):
                    _, t = fit(X, y, qid, pen, solver="newton", tol=tol)
                    rows.append({"seed": 0, "penalty": pen,
                                 "setting": f"newton, tol={tol:g}", **t})
                    print(f"    newton tol {tol:g}: {t['passes']:3d} passes, "
                          f"F = {t['F']:.10g}", flush=True)
                _, c = fit(X, y, qid, pen, max_outer=CAP)
                c["F_gap_to_fixed_point"] = c["F"] - r["F"]
                c["support_at_fixed_point"] = r["support"]
                rows.append({"seed": 0, "penalty": pen, "setting": f"cap {CAP}",
                             **c})
                print(f"    at the cap: converged {c['converged']}, warned "
                      f"{c['warned']}, change {c['last_change']:.2e} vs "
                      f"{c['threshold']:.2e}, F - F* = "
                      f"{c['F_gap_to_fixed_point']:.3g}, support "
                      f"{c['support']} vs {r['support']}", flush=True)
    return rows


def letor():
    out = {}
    for ds in ("MQ2008", "OHSUMED"):
        path = RESULTS / ds / "penalty_paths.csv"
        if not path.is_file():
            continue
        with path.open() as fh:
            rows = [r for r in csv.DictReader(fh) if r["penalty"] in PENALTIES]
        for pen in PENALTIES:
            mine = [r for r in rows if r["penalty"] == pen]
            grid = [int(r["n_outer"]) for r in mine if r["registry"] == "True"]
            capped = [r for r in mine if r["converged"] != "True"]
            out[f"{ds} {pen}"] = {
                "registry_fits": len(grid), "registry_max_passes": max(grid),
                "registry_median_passes": float(np.median(grid)),
                "registry_unconverged": sum(r["converged"] != "True" for r in mine
                                            if r["registry"] == "True"),
                "path_fits": len(mine),
                "path_max_passes": max(int(r["n_outer"]) for r in mine),
                "path_at_cap": len(capped),
                "path_at_cap_C": sorted({float(r["C"]) for r in capped})}
            o = out[f"{ds} {pen}"]
            print(f"{ds:7s} {pen:3s}: registry grid {o['registry_fits']} fits, "
                  f"passes <= {o['registry_max_passes']} (median "
                  f"{o['registry_median_passes']:g}); path <= {o['path_max_passes']}, "
                  f"{o['path_at_cap']} of {o['path_fits']} at the cap", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, default=HERE / "bench_outer_passes.json")
    args = ap.parse_args(argv)
    doc = {"shape": SHAPE, "C": C, "cap": CAP, "letor": letor(),
           "wide": wide()}
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


if __name__ == "__main__":
    main()
