"""Memory-lean synthetic ranking data for the benchmarks (not part of refimpl).

:func:`refimpl.data.make_synthetic_letor` is the book's generator; it builds
the informative, redundant and noise blocks separately and stacks them, so
its peak memory is a few times the size of ``X``.  At MSLR-WEB30K size
(2,270,296 x 136 float64 = 2.47 GB) that is too much for the 8 GB budget of
``bench_tron.py --mslr``, so the benchmarks use this simpler model, which
writes ``X`` in place, chunk by chunk:

1. Query sizes: ``l_q`` drawn uniformly from ``1 .. 2 m - 1`` (``m`` = mean
   documents per query), then rescaled and corrected by +-1 so that the
   total is exactly ``n_docs`` (LETOR/MSLR query sizes vary a lot too; this
   spread gives ``E[l_q^2] / E[l_q] ~ 4m/3``, i.e. about 47 pairs per
   document at the MSLR shape, close to the 44.6 of Lee & Lin's Table 2).
2. Features: i.i.d. ``U[0, 1]`` float64, generated directly into ``X``
   (``Generator.random(out=...)``), 65,536 rows at a time.
3. True weights: ``n_informative`` features (default 20) with
   ``w_j ~ U[0.5, 2]`` and a random sign, 0 elsewhere.
4. Labels: latent score ``s = X w + sigma * eps`` with
   ``sigma = label_noise * std(X w)``; graded labels ``0 .. n_levels-1`` by
   the global quantiles of ``s`` with the proportions of
   ``make_synthetic_letor`` (label 0: 60 %, the other 40 % shared
   geometrically with ratio 0.6; 5 levels: 60/18/11/7/4 %).

Query ids are contiguous, 1..n_queries.  Extra memory beyond ``X`` is O(n).
"""

from __future__ import annotations

import numpy as np

CHUNK_ROWS = 65_536


def label_proportions(n_levels):
    """60 % irrelevant, the rest geometric with ratio 0.6 (as refimpl.data)."""
    rest = 0.6 ** np.arange(n_levels - 1)
    return np.r_[0.6, 0.4 * rest / rest.sum()]


def query_sizes(n_docs, n_queries, rng):
    """``n_queries`` sizes >= 1 summing exactly to ``n_docs``, spread ~U[1, 2m-1]."""
    m = n_docs / n_queries
    raw = rng.integers(1, max(2, round(2 * m)), size=n_queries).astype(float)
    sizes = np.maximum(1, np.round(raw * n_docs / raw.sum())).astype(np.int64)
    diff = n_docs - int(sizes.sum())
    while diff != 0:
        step = 1 if diff > 0 else -1
        cand = np.flatnonzero(sizes + step >= 1)
        pick = rng.choice(cand, size=min(abs(diff), len(cand)), replace=False)
        sizes[pick] += step
        diff = n_docs - int(sizes.sum())
    return sizes


def make_lean_letor(n_docs, n_features, n_queries, n_levels=5, *,
                    n_informative=20, label_noise=1.0, seed=0):
    """Return ``(X, y, qid, w_true)``; see the module docstring for the model."""
    rng = np.random.default_rng(seed)
    sizes = query_sizes(n_docs, n_queries, rng)
    qid = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64), sizes)
    w = np.zeros(n_features)
    inf = rng.choice(n_features, size=min(n_informative, n_features), replace=False)
    w[inf] = rng.uniform(0.5, 2.0, size=len(inf)) * rng.choice([-1.0, 1.0], size=len(inf))
    X = np.empty((n_docs, n_features), dtype=np.float64)
    score = np.empty(n_docs)
    for a in range(0, n_docs, CHUNK_ROWS):
        b = min(a + CHUNK_ROWS, n_docs)
        rng.random(out=X[a:b])
        np.dot(X[a:b], w, out=score[a:b])
    score += label_noise * score.std() * rng.standard_normal(n_docs)
    cuts = np.quantile(score, np.cumsum(label_proportions(n_levels))[:-1])
    y = np.searchsorted(cuts, score, side="right").astype(np.int64)
    return X, y, qid, w
