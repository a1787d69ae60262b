"""LifeRank's default step on raw MSLR-scale features (issue 27).

On the training split of a generated MSLR-WEB10K-shaped fold
(``_mslr_shaped.py``: 136 features, values up to about 1e5, default 1,000
queries) this fits

[1] the step of eq. 8 on the raw features, as before the scale rule
    (``liferank_solve`` on ``X`` itself, ``lr = 0.1``): the divergence guard
    stops it, and its message is printed;
[2] ``LifeRank(n_components=10)`` with the registry's defaults (``lr = 0.3``
    on ``X diag(s)^-1``, ``s_j = max_i |x_ij|``, up to 10,000 iterations,
    ``tol = 1e-4``);
[3] the setting ``bench_mslr_scale.py`` had to use before (``lr = 1e-6``,
    20 iterations),

and prints, for [2] and [3], the fit time, iterations, the objective at the
start, its largest and its last value, the violation, the stationarity
measure at the start and the end, and the test NDCG@10 and MAP of
LifeRank's own scores.

Run: ``python benchmarks/bench_liferank_scale.py [--queries N]``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mslr_shaped import ensure_mslr_shaped  # noqa: E402

from refimpl import data, metrics  # noqa: E402
from refimpl.estimators import LifeRank  # noqa: E402
from refimpl.losses import LifeRankObjective, PairwiseLogistic  # noqa: E402
from refimpl.solvers import liferank_solve  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    args = ap.parse_args()
    root, _ = ensure_mslr_shaped(n_queries=args.queries)
    fold = data.load_letor_fold("MSLR-WEB10K", 1, root=root)
    (X, y, q), (Xt, yt, qt) = fold.train, fold.test
    print(f"train {X.shape[0]} x {X.shape[1]}, max |x| = "
          f"{np.abs(X).max():.3g}, {args.queries} queries in all")

    k = 10
    obj = LifeRankObjective(PairwiseLogistic(X, y, q), k, 1e-3)
    T0 = LifeRank(n_components=k)._initial_T(X.shape[1], k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        raw = liferank_solve(obj, T0, np.ones(k), lr=0.1, damping=1.0,
                             max_iter=1000, tol=1e-4)
    print(f"[1] raw X, lr = 0.1: {raw.message}")

    for tag, kw in (("[2] default (lr 0.3 on X diag(s)^-1)", {}),
                    ("[3] before: lr 1e-6, 20 iterations",
                     {"lr": 1e-6, "max_iter": 20})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            m = LifeRank(n_components=k, **kw).fit(X, y, q)
            fit = time.perf_counter() - t0
        h = m.history_
        s = m.predict(Xt)
        print(f"{tag}: fit {fit:.1f} s, {m.n_iter_} iterations, converged "
              f"{m.converged_}; F {h['f'][0]:.5f} -> {h['f'][-1]:.5f} "
              f"(max {h['f'].max():.5f}); ||T^T T - I|| "
              f"{h['violation'][-1]:.1e}; ||grad L|| {h['grad_norm'][0]:.3e}"
              f" -> {h['grad_norm'][-1]:.3e}; test NDCG@10 "
              f"{metrics.ndcg_at_k(yt, s, qt, k=10):.4f}, MAP "
              f"{metrics.average_precision(yt, s, qt):.4f}")


if __name__ == "__main__":
    main()
