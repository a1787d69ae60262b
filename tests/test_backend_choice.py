"""``backend="auto"`` and ``one_pass="auto"``: the measured cost model's choice.

The model (:mod:`refimpl.losses._backend_cost`) and its constants come from
``benchmarks/bench_backends.py``, whose measurements are recorded in
``benchmarks/bench_backends.json``.  No timing here: the choice is checked
against the recorded table, for determinism and monotonicity, and every
backend is checked to give the same fit.
"""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from refimpl._validation import ranking_problem
from refimpl.data import make_synthetic_letor
from refimpl.estimators import RankSVM
from refimpl.losses import L2Regularized, PairwiseSquaredHinge
from refimpl.losses import _backend_cost as bc
from refimpl.losses.squared_hinge import (
    AUTO_MAX_PAIR_BYTES,
    BYTES_PER_PAIR,
    ONE_PASS_MIN_BYTES,
    choose_backend,
    count_levels,
)
from refimpl.solvers.tron import tron

TABLE = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_backends.json"
GOAL = 1.10


def recorded_rows():
    return json.loads(TABLE.read_text())["rows"]


def measured_fit(row, config, hess_per_grad=bc.TRON_CG_PER_NEWTON):
    t = {op: row["t"][f"{config}.{op}"] for op in bc.OPS}
    return t["setup"] + bc.TRON_NEWTON * (t["vg"] + hess_per_grad * t["hv"])


def code_choice(n, d, p, k, hess_per_grad=None):
    """The configuration the code picks for a dense, query-grouped X."""
    backend = choose_backend(p, n, n_features=d, n_levels=k,
                             hess_per_grad=hess_per_grad)
    if backend == "pairs":
        return "pairs"
    return "tree1" if n * d * 8 >= ONE_PASS_MIN_BYTES else "tree2"


def test_choice_agrees_with_the_recorded_benchmark():
    rows = recorded_rows()
    assert len(rows) >= 20
    assert {r["d"] for r in rows} >= {25, 46, 136, 700}
    ppd = [r["p"] / r["n"] for r in rows]
    assert min(ppd) <= 5 and max(ppd) >= 1000
    for r in rows:
        choice = code_choice(r["n"], r["d"], r["p"], r["levels"])
        assert choice == r["default"], r  # the benchmark ran this code
        fits = {c: measured_fit(r, c) for c in bc.CONFIGS}
        slowdown = fits[choice] / min(fits.values())
        assert slowdown <= GOAL, (r["n"], r["d"], r["levels"], slowdown)


def test_first_order_choice_agrees_with_the_recorded_benchmark():
    """A solver without Hessian products (hess_per_grad=0) weighs value +
    gradient only; its choice is within the goal on the same table."""
    for r in recorded_rows():
        choice = code_choice(r["n"], r["d"], r["p"], r["levels"], hess_per_grad=0)
        fits = {c: measured_fit(r, c, 0) for c in bc.CONFIGS}
        assert fits[choice] / min(fits.values()) <= GOAL, (r["n"], r["d"])


def test_choice_is_deterministic():
    args = [(10**5, 10**4, 46, 3), (4 * 10**6, 10**5, 136, 5), (10**6, 10**5, 25, 2)]
    for p, n, d, k in args:
        first = choose_backend(p, n, n_features=d, n_levels=k)
        assert all(choose_backend(p, n, n_features=d, n_levels=k) == first
                   for _ in range(5))
    syn = make_synthetic_letor(n_queries=30, docs_per_query=(5, 40), seed=3)
    choices = {(L.backend, L.one_pass_) for L in
               (PairwiseSquaredHinge(syn.X, syn.y, syn.qid) for _ in range(3))}
    assert len(choices) == 1


@pytest.mark.parametrize("hess_per_grad", [None, 0])
@pytest.mark.parametrize("one_pass", [True, False, None])
def test_more_pairs_per_document_never_go_back_to_pairs(one_pass, hess_per_grad):
    ppd = np.geomspace(0.5, 5000, 60)
    for n, d, k in itertools.product((10**3, 10**4, 10**5, 10**6),
                                     (5, 25, 46, 80, 105, 136, 700, 2000),
                                     (2, 3, 5, 16, 100)):
        seq = [choose_backend(int(q * n), n, n_features=d, n_levels=k,
                              one_pass=one_pass, hess_per_grad=hess_per_grad)
               for q in ppd]
        first_tree = seq.index("tree") if "tree" in seq else len(seq)
        assert all(c == "tree" for c in seq[first_tree:]), (n, d, k, one_pass)


def test_hard_rules():
    big = AUTO_MAX_PAIR_BYTES // BYTES_PER_PAIR + 1
    assert choose_backend(big, 10**8, n_features=2) == "tree"
    assert choose_backend(10**9, 10, which="adjacent") == "pairs"
    # few pairs per document in the cache: explicit pairs (MQ2008's shape);
    # many, or a big X that one pass streams once: the tree
    assert choose_backend(52_325, 9_630, n_features=40, n_levels=3) == "pairs"
    assert choose_backend(10**7, 10**4, n_features=46, n_levels=5) == "tree"
    assert choose_backend(8_900_000, 301_916, n_features=136, n_levels=5) == "tree"


def test_count_levels():
    assert count_levels(np.array([0.0, 2.0, 2.0, 4.0])) == 3
    assert count_levels(np.array([-1.0, 0.5, 0.5])) == 2
    assert count_levels(np.array([1e9, 0.0])) == 2


def test_every_backend_gives_the_same_fit():
    syn = make_synthetic_letor(n_queries=40, docs_per_query=(5, 60), seed=1)
    problem = ranking_problem(syn.X, syn.y, syn.qid)
    ws = {}
    for name, kw in {"pairs": {"backend": "pairs"},
                     "numpy": {"backend": "numpy"},
                     "tree1": {"backend": "tree", "one_pass": True},
                     "tree2": {"backend": "tree", "one_pass": False},
                     "auto": {}}.items():
        loss = PairwiseSquaredHinge(problem, **kw)
        ws[name] = tron(L2Regularized(loss, 1.0), tol=1e-8).w
    ref = ws["pairs"]
    for name, w in ws.items():
        np.testing.assert_allclose(w, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max(),
                                   err_msg=name)
    coefs = [RankSVM(C=2.0, backend=b).fit(syn.X, syn.y, syn.qid).coef_
             for b in ("auto", "pairs", "tree")]
    for c in coefs[1:]:
        np.testing.assert_allclose(c, coefs[0], rtol=1e-7, atol=1e-12)
