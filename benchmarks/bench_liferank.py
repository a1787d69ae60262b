"""LifeRank: cost of one BDMM iteration, and iterations to orthonormality.

[1] One BDMM iteration (value and gradients of eq. 5, the constraint
    ``T^T T - I`` and its vector-Jacobian product, the updates of eq. 8), with
    the pairwise logistic loss computed

    - by ``refimpl`` (numba kernel on document scores, one exponential per
      document: ``PairwiseLogistic(backend="numba")``),
    - by the same loop with one exponential and one log per pair
      (``backend="direct"``),
    - by vectorised NumPy on the pair index arrays (``backend="numpy"``),
    - by a plain NumPy implementation that materialises the pair-difference
      matrix ``D`` (rows ``x_i - x_j``, built once outside the timing) and
      computes the margins as ``D (T w)`` and the gradient as ``D^T g``.

    All four are timed in alternation in one run; the printed ratios are
    "materialised / refimpl" etc.

[2] Iterations and seconds until ``||T^T T - I||_F < 1e-3`` holds for good
    (the first iterate after which the violation never exceeds 1e-3 again
    within the budget), for the paper's BDMM (``damping=0``), Platt & Barr's
    damped MDMM, and the Stiefel retraction, from the paper's start (``w = 1``,
    ``T`` with i.i.d. ``N(0, 1/n)`` entries), the objective reached, and the
    iterations until the objective is within 1e-3 of the best final value
    with the constraint met.

Data: MQ2008 Fold1 train when ``LETOR_HOME`` has it, and always a synthetic
set of the same shape.  Run with ``make bench`` or
``python benchmarks/bench_liferank.py [--iters N]``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _letor import mq2008_datasets
from _timing import interleaved

from refimpl.losses import LifeRankObjective, PairwiseLogistic
from refimpl.solvers import liferank_solve
from refimpl.pairs import preference_pairs

K = 10
LAM = 1e-3
LR = 0.1


def datasets():
    return mq2008_datasets(indent="")


class MaterialisedObjective:
    """Eq. 5 and its gradients from the explicit p x n pair matrix, in NumPy."""

    def __init__(self, X, y, qid, k, lam):
        pairs = preference_pairs(y, qid)
        self.D = X[pairs.i] - X[pairs.j]
        self.p = len(self.D)
        self.n, self.k, self.lam = X.shape[1], k, lam

    def value_and_grads(self, T, w):
        margins = self.D @ (T @ w)
        loss = np.logaddexp(0.0, -margins).mean()
        g = -np.exp(-np.logaddexp(0.0, margins)) / self.p   # -sigma(-m) / p
        G = self.D.T @ g
        return loss + 0.5 * self.lam * w @ w, np.outer(G, w), T.T @ G + self.lam * w


def bdmm_step_refimpl(obj, T, w, A):
    """One alternating BDMM iteration through the library's objective."""
    x = obj.pack(T, w)
    obj.fun(x)
    gx = obj.grad(x) + obj.constraint_vjp(x, A.ravel())
    x = x - LR * gx
    A = A + LR * obj.constraint(x).reshape(K, K)
    T, w = obj.unpack(x)
    return T, w, A


def bdmm_step_materialised(obj, T, w, A):
    """The same iteration on the materialised pairs (paper-style, NumPy)."""
    _, gT, gw = obj.value_and_grads(T, w)
    M = A + A.T
    M[np.diag_indices(K)] = -2 * np.diag(A)
    T = T - LR * (gT + T @ M)
    w = w - LR * gw
    C = T.T @ T
    C[np.diag_indices(K)] = 1 - np.diag(C)
    return T, w, A + LR * C


def part_one(name, X, y, qid, rng):
    n = X.shape[1]
    T = rng.normal(size=(n, K)) / np.sqrt(n)
    w = np.ones(K)
    A = np.zeros((K, K))
    objs = {b: LifeRankObjective(PairwiseLogistic(X, y, qid, backend=b), K, LAM)
            for b in ("numba", "direct", "numpy")}
    mat = MaterialisedObjective(X, y, qid, K, LAM)
    # the two implementations agree before they are timed
    F_ref, gT_ref, gw_ref = objs["numba"].value_and_grads(T, w)
    F_mat, gT_mat, gw_mat = mat.value_and_grads(T, w)
    assert abs(F_ref - F_mat) <= 1e-12 * abs(F_mat)
    assert np.allclose(gT_ref, gT_mat, rtol=1e-9, atol=1e-13)
    fns = {f"refimpl ({b})": (lambda o=o: bdmm_step_refimpl(o, T, w, A))
           for b, o in objs.items()}
    fns["materialised pairs"] = lambda: bdmm_step_materialised(mat, T, w, A)
    best = interleaved(fns, rounds=3)
    print(f"\n[1] {name}: {X.shape[0]:,} documents, {n} features, {mat.p:,} pairs, "
          f"k = {K}; one BDMM iteration")
    base = best["refimpl (numba)"]
    for label, t in best.items():
        print(f"  {label:22s} {t * 1e3:8.3f} ms   ratio to refimpl (numba) = "
              f"{t / base:5.2f}x")
    mv = interleaved({"X v + X^T g": lambda: X.T @ (X @ T[:, 0])}, rounds=3)
    print(f"  of which the shared mat-vecs X v, X^T g: "
          f"{mv['X v + X^T g'] * 1e3:.3f} ms")


def settle_index(viol, thr):
    above = np.flatnonzero(np.asarray(viol) >= thr)
    if len(above) == 0:
        return 0
    return int(above[-1]) + 1 if above[-1] + 1 < len(viol) else None


def part_two(name, X, y, qid, iters, rng):
    n = X.shape[1]
    T0 = rng.normal(size=(n, K)) / np.sqrt(n)
    obj = LifeRankObjective(PairwiseLogistic(X, y, qid), K, LAM)
    print(f"\n[2] {name}: iterations to ||T^T T - I||_F < 1e-3 for good "
          f"(lr = {LR}, lambda = {LAM}, budget {iters} iterations)")
    runs = [("BDMM (paper, damping 0)", dict(constraint="bdmm", damping=0.0)),
            ("BDMM, simultaneous", dict(constraint="bdmm", damping=0.0,
                                        update="simultaneous")),
            ("MDMM damping 0.3", dict(constraint="bdmm", damping=0.3)),
            ("MDMM damping 1", dict(constraint="bdmm", damping=1.0)),
            ("MDMM damping 2", dict(constraint="bdmm", damping=2.0)),
            ("Stiefel (polar)", dict(constraint="stiefel")),
            ("Stiefel (QR)", dict(constraint="stiefel", retraction="qr")),
            ("none (LifeRank^NO)", dict(constraint="none"))]
    results = {}
    for label, kw in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            res = liferank_solve(obj, T0, np.ones(K), lr=LR, max_iter=iters,
                                 tol=0.0, **kw)
            wall = time.perf_counter() - t0
        h = res.as_arrays()
        results[label] = h
        idx = settle_index(h["violation"], 1e-3)
        when = ("never" if idx is None else
                f"{idx:5d} it, {h['time'][idx]:6.2f} s")
        print(f"  {label:26s} settles: {when:>18s}   final violation "
              f"{h['violation'][-1]:.1e}   f = {h['f'][-1]:.6f}   "
              f"({wall / max(res.n_iter, 1) * 1e3:.2f} ms/it)")
    # reference: the best final objective of the runs that end orthonormal
    f_ref = min(h["f"][-1] for h in results.values()
                if np.isfinite(h["f"][-1]) and h["violation"][-1] < 1e-3)
    print(f"  iterations (seconds) to f <= f_ref + 1e-3 with violation < 1e-3, "
          f"f_ref = {f_ref:.6f} (best final f of the runs ending orthonormal):")
    for label, h in results.items():
        ok = np.flatnonzero((h["f"] <= f_ref + 1e-3) & (h["violation"] < 1e-3))
        when = f"{ok[0]:5d} ({h['time'][ok[0]]:.2f} s)" if len(ok) else "never"
        print(f"    {label:26s} {when:>14s}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=1500)
    args = parser.parse_args()
    for name, X, y, qid in datasets():
        rng = np.random.default_rng(0)
        part_one(name, X, y, qid, rng)
        part_two(name, X, y, qid, args.iters, rng)


if __name__ == "__main__":
    main()
