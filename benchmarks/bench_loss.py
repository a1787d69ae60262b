"""Loss value+gradient and Hessian-vector product: numba explicit pairs vs NumPy.

Issue target: value+gradient with the numba explicit-pairs backend at least 5x
faster than the vectorised NumPy reference on MQ2008-fold-sized data (about
10k documents, 46 features, about 50k pairs).  Prints ratios measured side by
side in one run; run with `make bench` or `python benchmarks/bench_loss.py`.

Both backends share the two BLAS mat-vecs ``z = X w`` and ``X^T dz``, which
read all of X from memory and are the same code in both; the backends differ
only in the pair part (residuals, active set, accumulation into ``dz``).  So
the script prints the ratio for the pair part alone and end to end.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _letor import mq2008_datasets
from _timing import interleaved

from refimpl.losses import PairwiseSquaredHinge


def datasets():
    return mq2008_datasets(indent="")


def main():
    rng = np.random.default_rng(0)
    for name, X, y, qid in datasets():
        losses = {b: PairwiseSquaredHinge(X, y, qid, backend=b) for b in ("pairs", "numpy")}
        w = rng.normal(size=X.shape[1]) * 0.1
        s = rng.normal(size=X.shape[1])
        p = losses["pairs"].n_pairs
        print(f"\n{name}: {X.shape[0]:,} documents, {X.shape[1]} features, {p:,} pairs")
        vg = interleaved({b: (lambda L=L: L.value_grad(w)) for b, L in losses.items()})
        for L in losses.values():
            L.fun(w)
        hv = interleaved({b: (lambda L=L: L.hess_vec(s)) for b, L in losses.items()})
        mv = interleaved({"X w + X^T u": lambda: X.T @ (X @ w)})["X w + X^T u"]
        print(f"  value+grad  numba {vg['pairs'] * 1e3:8.3f} ms   numpy {vg['numpy'] * 1e3:8.3f} ms"
              f"   ratio numpy/numba = {vg['numpy'] / vg['pairs']:.1f}x   (target >= 5x)")
        print(f"  hess_vec    numba {hv['pairs'] * 1e3:8.3f} ms   numpy {hv['numpy'] * 1e3:8.3f} ms"
              f"   ratio numpy/numba = {hv['numpy'] / hv['pairs']:.1f}x")
        z = X @ w
        part = interleaved({b: (lambda L=L: L._impl.value_dz(z)) for b, L in losses.items()})
        print(f"  pair part   numba {part['pairs'] * 1e3:8.3f} ms   numpy {part['numpy'] * 1e3:8.3f} ms"
              f"   ratio numpy/numba = {part['numpy'] / part['pairs']:.1f}x")
        print(f"  shared mat-vecs X w + X^T u: {mv * 1e3:.3f} ms"
              f" = {mv / vg['pairs']:.0%} of the numba value+grad time")


if __name__ == "__main__":
    main()
