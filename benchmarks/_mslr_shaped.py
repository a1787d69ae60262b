"""A generated data set with the shape and file layout of MSLR-WEB10K (not part of refimpl).

``write_mslr_shaped(root, n_queries=10_000)`` writes
``<root>/MSLR-WEB10K/Fold1/{train,vali,test}.txt``, the layout of the real
archive (``refimpl.datasets.fetch_letor("MSLR-WEB10K")``), with the real
fold's 3:1:1 split of the queries.  Only Fold1 is written: the scale
benchmark runs one fold.

What is MSLR-like, and what is not:

* 10,000 queries, about 120 documents each (1,200,192 in the real set):
  query sizes are drawn from a gamma distribution of mean 120 and shape 2
  (coefficient of variation 0.71), rounded and clipped to 1..908, the
  range of the real set; the spread matters because the number of pairs
  grows with ``sum l_q^2``.
* 136 features, written densely as ``j:value`` like the real files, with a
  mix of value types like MSLR's: small counts (covered query terms, term
  frequencies), large integers (stream lengths, click / quality counts),
  ratios in [0, 1] and positive real scores (tf-idf, BM25) written with up
  to 6 decimals, negative real scores (the LMIR language-model features)
  with up to 4 decimals, and a fraction of exact zeros per feature (as for
  anchor / title features of documents without them).  About half of the
  columns are integer-valued.
* 5 relevance levels with MSLR's skew: labels are the quantiles
  52 / 32 / 13 / 2 / 1 % of a latent normal score; a third of the
  features depend on that score (with per-feature strength and sign), the
  rest are noise.  The values' marginal distributions are not MSLR's.

Every value is generated as an integer mantissa ``m`` with a fixed number
``k`` of decimals per feature (value ``m / 10**k``), so the text is written
by a numba kernel that prints integers (about 10x faster than Python
formatting: 1.2 million lines of 136 features take seconds, not minutes),
and reads back as the correctly rounded float64 of that decimal.

Generated once per (n_queries, seed) into ``/tmp/refimpl-mslr-shaped/``
by default (``ensure_mslr_shaped``) and reused while its stamp file
matches; files are written under a temporary name and renamed.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numba
import numpy as np

#: Format version of the generated files: bump when the generator changes.
VERSION = 1
N_FEATURES = 136
#: MSLR-WEB10K's label distribution (levels 0..4), rounded.
LABEL_PROPORTIONS = np.array([0.52, 0.32, 0.13, 0.02, 0.01])
MEAN_DOCS = 120
MAX_DOCS = 908
DEFAULT_ROOT = Path("/tmp/refimpl-mslr-shaped")
#: The real folds' split of the queries: train / vali / test = 3 / 1 / 1.
SPLITS = (("train", 3), ("vali", 1), ("test", 1))

# feature kinds: (name, decimals)
_KINDS = {
    "count": 0,        # Poisson counts, 0..~20
    "length": 0,       # lognormal integers, up to ~1e5
    "ratio": 6,        # [0, 1]
    "score": 6,        # positive reals, ~0..60
    "lmir": 4,         # negative reals, ~-40..-1
}


def _layout(seed):
    """Per-feature kind, zero fraction, signal strength and sign (fixed by ``seed``)."""
    rng = np.random.default_rng([seed, 1])
    kinds = np.array(["count"] * 38 + ["length"] * 30 + ["ratio"] * 24
                     + ["score"] * 28 + ["lmir"] * 16)
    assert len(kinds) == N_FEATURES
    rng.shuffle(kinds)
    zero_frac = rng.choice([0.0, 0.0, 0.1, 0.4, 0.8], size=N_FEATURES)
    informative = rng.random(N_FEATURES) < 1 / 3
    strength = np.where(informative, rng.uniform(0.1, 0.6, N_FEATURES), 0.0)
    strength *= rng.choice([-1.0, 1.0], size=N_FEATURES)
    decimals = np.array([_KINDS[k] for k in kinds], dtype=np.int64)
    return kinds, zero_frac, strength, decimals


def query_sizes(n_queries, rng):
    """Gamma(shape 2, mean 120) sizes, rounded, clipped to 1..908."""
    raw = rng.gamma(2.0, MEAN_DOCS / 2.0, size=n_queries)
    return np.clip(np.rint(raw), 1, MAX_DOCS).astype(np.int64)


def _mantissas(sizes, layout, rng):
    """Labels and integer mantissas ``(n, 136)`` for queries of ``sizes``."""
    kinds, zero_frac, strength, _ = layout
    n = int(sizes.sum())
    q_of = np.repeat(np.arange(len(sizes)), sizes)
    # latent relevance: a per-query part plus a document part, variance 1
    s = 0.5 * rng.standard_normal(len(sizes))[q_of] + np.sqrt(0.75) * rng.standard_normal(n)
    from scipy.stats import norm

    cuts = norm.ppf(np.cumsum(LABEL_PROPORTIONS)[:-1])
    y = np.searchsorted(cuts, s).astype(np.int64)
    M = np.empty((n, N_FEATURES), dtype=np.int64)
    for j in range(N_FEATURES):
        # a per-query shift (queries differ), the signal, and noise
        u = (0.4 * rng.standard_normal(len(sizes))[q_of] + strength[j] * s
             + rng.standard_normal(n))
        kind = kinds[j]
        if kind == "count":
            v = rng.poisson(np.exp(0.8 + 0.5 * u))
        elif kind == "length":
            v = np.rint(np.exp(5.0 + 1.2 * u))
        elif kind == "ratio":
            v = np.rint(1e6 * (1.0 / (1.0 + np.exp(-u))))
        elif kind == "score":
            v = np.rint(1e6 * np.exp(1.5 + 0.8 * u))
        else:
            v = np.rint(-1e4 * np.exp(2.5 + 0.3 * u))
        v = np.asarray(v, dtype=np.int64)
        if zero_frac[j] > 0:
            v[rng.random(n) < zero_frac[j]] = 0
        M[:, j] = v
    return y, M


@numba.njit(cache=True)
def _put_int(buf, pos, v):
    """Decimal digits of ``v >= 0`` at ``buf[pos:]``; returns the new end."""
    if v == 0:
        buf[pos] = 48
        return pos + 1
    start = pos
    while v > 0:
        buf[pos] = 48 + v % 10
        v //= 10
        pos += 1
    # reverse in place
    a, b = start, pos - 1
    while a < b:
        buf[a], buf[b] = buf[b], buf[a]
        a += 1
        b -= 1
    return pos


@numba.njit(cache=True)
def _format_lines(y, qid, M, decimals, buf):
    """``label qid:Q 1:v ... 136:v\\n`` per row into ``buf``; returns the length.

    ``v = M[i, j] / 10**decimals[j]``, printed with trailing zeros of the
    fraction removed (``0.5``, ``12``, ``-13.4523``).
    """
    n, d = M.shape
    pos = 0
    for i in range(n):
        pos = _put_int(buf, pos, y[i])
        for c in b" qid:":
            buf[pos] = c
            pos += 1
        pos = _put_int(buf, pos, qid[i])
        for j in range(d):
            buf[pos] = 32
            pos += 1
            pos = _put_int(buf, pos, j + 1)
            buf[pos] = 58  # ':'
            pos += 1
            m = M[i, j]
            if m < 0:
                buf[pos] = 45  # '-'
                pos += 1
                m = -m
            k = decimals[j]
            scale = 1
            for _ in range(k):
                scale *= 10
            pos = _put_int(buf, pos, m // scale)
            frac = m % scale
            if frac != 0:
                buf[pos] = 46  # '.'
                pos += 1
                # strip trailing zeros; the rest fills kk places, zero-padded
                kk = k
                while frac % 10 == 0:
                    frac //= 10
                    kk -= 1
                for t in range(kk - 1, -1, -1):
                    buf[pos + t] = 48 + frac % 10
                    frac //= 10
                pos += kk
        buf[pos] = 10
        pos += 1
    return pos


def _write_split(path, sizes, first_qid, layout, rng, chunk_queries=400):
    """Generate and write one split, ``chunk_queries`` queries at a time."""
    decimals = layout[3]
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    n_docs = 0
    with open(tmp, "wb") as f:
        for a in range(0, len(sizes), chunk_queries):
            part = sizes[a:a + chunk_queries]
            y, M = _mantissas(part, layout, rng)
            qid = np.repeat(np.arange(first_qid + a, first_qid + a + len(part)),
                            part).astype(np.int64)
            # bound: label, qid, and per feature ' 136:' + sign + 20 digits + '.'
            buf = np.empty(len(y) * (32 + N_FEATURES * 28), dtype=np.uint8)
            end = _format_lines(y, qid, M, decimals, buf)
            f.write(buf[:end].tobytes())
            n_docs += len(y)
    os.replace(tmp, path)
    return n_docs


def write_mslr_shaped(root, n_queries=10_000, seed=0):
    """Write ``<root>/MSLR-WEB10K/Fold1/{train,vali,test}.txt``; returns a summary dict."""
    root = Path(root)
    fold = root / "MSLR-WEB10K" / "Fold1"
    fold.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 2])
    layout = _layout(seed)
    sizes = query_sizes(n_queries, rng)
    # 3:1:1 of the queries, as the real folds (S1-S3 / S4 / S5)
    bounds = np.rint(np.cumsum([0, 3, 1, 1]) / 5 * n_queries).astype(int)
    info = {"version": VERSION, "n_queries": int(n_queries), "seed": int(seed),
            "splits": {}}
    t0 = time.perf_counter()
    for (name, _), a, b in zip(SPLITS, bounds[:-1], bounds[1:]):
        n = _write_split(fold / f"{name}.txt", sizes[a:b], 1 + a, layout, rng)
        info["splits"][name] = {"queries": int(b - a), "documents": n,
                                "bytes": (fold / f"{name}.txt").stat().st_size}
    info["write_seconds"] = time.perf_counter() - t0
    return info


def ensure_mslr_shaped(n_queries=10_000, seed=0, base=DEFAULT_ROOT):
    """The LETOR root of a generated set, written unless a matching one exists.

    Returns ``(root, info)``; pass ``root`` as ``--letor-home``.
    """
    root = Path(base) / f"q{n_queries}-s{seed}"
    stamp = root / "stamp.json"
    want = {"version": VERSION, "n_queries": int(n_queries), "seed": int(seed)}
    try:
        info = json.loads(stamp.read_text())
        fold = root / "MSLR-WEB10K" / "Fold1"
        if all(info.get(k) == v for k, v in want.items()) and all(
                (fold / f"{s}.txt").stat().st_size == info["splits"][s]["bytes"]
                for s, _ in SPLITS):
            info["write_seconds"] = 0.0
            return root, info
    except (OSError, ValueError, KeyError):
        pass
    info = write_mslr_shaped(root, n_queries, seed)
    stamp.write_text(json.dumps(info, indent=1))
    return root, info
