"""Cost model of the squared hinge's backends: what ``backend="auto"`` and ``one_pass="auto"`` pick.

Three configurations of :class:`refimpl.losses.PairwiseSquaredHinge` compute
the same loss:

* ``"pairs"``: explicit pair index arrays; value + gradient O(p), a Hessian
  product O(|SV(w)|), each with two BLAS mat-vecs ``X v``, ``X^T u``;
* ``"tree1"``: the selection tree, one pass over ``X`` per product
  (:mod:`refimpl.kernels.fused`); O(l log l) value + gradient, O(l log k)
  Hessian product;
* ``"tree2"``: the selection tree between two BLAS mat-vecs.

Each operation (the set-up, one value + gradient, one Hessian-vector
product) is modelled as a non-negative combination of the terms of
:func:`cost_terms`: ``l d`` (reading ``X``), ``l d`` once more when ``X``
exceeds the last-level cache (streaming from memory), ``p``, ``l``,
``l log2(1 + p / l)`` (the per-query sorts) and ``l log2 k``.  A fit is
modelled as TRON's: ``set-up + N (value+grad + M hess_vec)``.  The
constants were fitted by ``benchmarks/bench_backends.py``, which prints,
for every shape of its grid, the configuration chosen here, the fastest
one measured and the slowdown.
"""

from __future__ import annotations

import math

CONFIGS = ("pairs", "tree1", "tree2")
OPS = ("setup", "vg", "hv")

#: TRON's work per fit, for weighing set-up against iterations: about ten
#: Newton iterations of about five CG steps each (``RankSVM(tol=1e-3)`` on
#: the benchmark's data; a larger ``C`` takes more CG steps, which weighs
#: the per-iteration costs more, where the rule is the same).
TRON_NEWTON = 10
TRON_CG_PER_NEWTON = 5

#: Beyond this size ``X`` streams from memory in every pass (the 32 MiB
#: last-level cache of the machine that measured ``BACKEND_COSTS``).
CACHE_BYTES = 32 * 2**20

TERMS = ("l*d", "l*d (X > cache)", "p", "l", "l*log2(1+p/l)", "l*log2(k)")

#: Nanoseconds per unit of each of :data:`TERMS`, by configuration and
#: operation: fitted by ``benchmarks/bench_backends.py`` on 2026-11-25,
#: 21:13 UTC (26 shapes: 10,000-301,916 documents, d = 25, 46, 136, 700,
#: 3.5-1,109 pairs per document, 2-16 levels; AMD EPYC, 2 cores, 2 MiB L2
#: per core, 32 MiB L3, OMP_NUM_THREADS=1, machine load below 2; non-negative
#: least squares on relative error).  The run is recorded in
#: ``benchmarks/bench_backends.json``; with these constants the choice is
#: within 3.5 % of the fastest configuration on every shape of it.
BACKEND_COSTS = {
    "pairs": {"setup": (0, 0, 4.804, 30.55, 0, 0),
              "vg": (0.4382, 0.5676, 2.277, 0, 0, 0),
              "hv": (0.4053, 0.6139, 0.9236, 0, 0, 0)},
    "tree1": {"setup": (0, 0, 0, 10.56, 0, 2.03),
              "vg": (0.5387, 0, 0, 31.1, 8.974, 3.601),
              "hv": (0.4149, 0.0565, 0, 6.382, 0, 1.471)},
    "tree2": {"setup": (0, 0, 0, 8.444, 0, 1.992),
              "vg": (0.2787, 0.7075, 0, 20.14, 10.27, 12.47),
              "hv": (0.6311, 0.4444, 0, 0, 0, 1.538)},
}

#: Which terms each operation can have (1) or not (0): the set-up touches
#: no ``X``; explicit pairs do not sort, the tree never loops over pairs,
#: and a Hessian product sorts nothing.
TERM_MASKS = {
    "pairs": {"setup": (0, 0, 1, 1, 0, 0), "vg": (1, 1, 1, 1, 0, 0),
              "hv": (1, 1, 1, 1, 0, 0)},
    "tree1": {"setup": (0, 0, 0, 1, 0, 1), "vg": (1, 1, 0, 1, 1, 1),
              "hv": (1, 1, 0, 1, 0, 1)},
}
TERM_MASKS["tree2"] = TERM_MASKS["tree1"]


def cost_terms(n_docs, n_features, n_pairs, n_levels, config, op):
    """The terms of the cost model of operation ``op`` of ``config`` at one shape."""
    l, d, p = float(n_docs), float(n_features), float(n_pairs)
    big = 8.0 * l * d > CACHE_BYTES
    terms = (l * d, l * d if big else 0.0, p, l,
             l * math.log2(1.0 + p / max(l, 1.0)),
             l * math.log2(max(int(n_levels), 2)))
    return [t * m for t, m in zip(terms, TERM_MASKS[config][op])]


def op_cost(n_docs, n_features, n_pairs, n_levels, config, op, costs=None):
    """Modelled seconds of one operation ``op`` of configuration ``config``."""
    coef = (costs or BACKEND_COSTS)[config][op]
    terms = cost_terms(n_docs, n_features, n_pairs, n_levels, config, op)
    return 1e-9 * sum(c * t for c, t in zip(coef, terms))


def fit_cost(n_docs, n_features, n_pairs, n_levels, config, costs=None,
             hess_per_grad=None):
    """Modelled seconds of a fit: set-up + N (value+grad + M hess_vec).

    ``N = TRON_NEWTON``; ``M = hess_per_grad`` (default
    ``TRON_CG_PER_NEWTON``, TRON; 0 for a first-order solver that asks
    for values and gradients only).
    """
    m = TRON_CG_PER_NEWTON if hess_per_grad is None else hess_per_grad
    t = {op: op_cost(n_docs, n_features, n_pairs, n_levels, config, op, costs)
         for op in OPS}
    return t["setup"] + TRON_NEWTON * (t["vg"] + m * t["hv"])


def cheapest(n_docs, n_features, n_pairs, n_levels, configs=CONFIGS, costs=None,
             hess_per_grad=None):
    """The configuration of ``configs`` with the smallest modelled fit cost.

    Ties go to the first of ``configs``; the costs are deterministic
    functions of the shape, so is the choice.
    """
    return min(configs, key=lambda c: fit_cost(n_docs, n_features, n_pairs,
                                               n_levels, c, costs, hess_per_grad))


def pairs_pay(n_docs, n_features, n_pairs, n_levels, tree, costs=None,
              hess_per_grad=None):
    """Whether explicit pairs are the choice against ``tree`` ("tree1"/"tree2").

    Explicit pairs cost a linear function of ``p``, the tree a concave one
    (its sorts, ``l log2(1 + p/l)``), so their difference is convex in ``p``
    and explicit pairs are cheaper on an interval ``[p1, p2]``.  Explicit
    pairs are chosen for every ``p <= p2`` (below ``p1`` the tree's modelled
    gain is small: both are near their cost at ``p = 0``), so that more
    pairs per document never move the choice from the tree to pairs.
    ``p2`` is found on the doubling sequence ``p, 2p, 4p, ...``.
    """
    def diff(p):
        return (fit_cost(n_docs, n_features, p, n_levels, "pairs", costs,
                         hess_per_grad)
                - fit_cost(n_docs, n_features, p, n_levels, tree, costs,
                           hess_per_grad))
    p = max(float(n_pairs), 1.0)
    last = diff(p)
    for _ in range(64):
        if last <= 0:
            return True
        nxt = diff(2 * p)
        if nxt >= last:  # convex and now increasing: positive from here on
            return False
        p, last = 2 * p, nxt
    return False
