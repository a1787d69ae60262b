"""``benchmarks/bench_mslr_scale.py``: how a fit's stopping state is counted.

A fit that did not certify its optimum must never be counted as converged,
a paper's iteration cap never as a failure nor a success, and a method
without a stopping rule neither.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_mslr_scale.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))      # its _mslr_shaped helper
    try:
        spec = importlib.util.spec_from_file_location("bench_mslr_scale", BENCH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH.parent))
    return module


def task(converged, n_iter, params=None, warnings=""):
    return {"converged": converged, "n_iter": str(n_iter),
            "params": json.dumps(params or {}), "warnings": warnings}


def test_fit_outcome(bench):
    out = bench.fit_outcome
    assert out("ranksvm", task("True", 7, {"C": 1.0})) == "converged"
    assert out("ranksvm", task("False", 1000, {"C": 1.0})) == "unconverged"
    # no converged_ at all: only a method without a stopping rule is n/a
    assert out("linreg", task("", -1)) == "n/a"
    assert out("lambdamart", task("", -1)) == "n/a"
    assert out("ranksvm", task("", -1)) == "unconverged"
    # the paper's cap, spent, with only the capped solver's warning
    assert out("fenchelrank", task(
        "False", 1000, {"r": 8.0},
        "ConvergenceWarning: FenchelRank did not converge: max_iter")) == "cap"
    # the cap raised through the grid is the cap that counts
    assert out("fenchelrank", task("False", 1000, {"r": 8.0, "max_iter": 5000})
               ) == "unconverged"
    # stopped before the cap, or another warning: a failure
    assert out("fenchelrank", task("False", 400, {"r": 8.0})) == "unconverged"
    assert out("fenchelrank", task(
        "False", 1000, {"r": 8.0},
        "ConvergenceWarning: FenchelRank did not converge: max_iter"
        " | ConvergenceWarning: TRON did not converge: max_iter")) == "unconverged"
    # LifeRank's budget is the registry's, not the paper's: spent, it is
    # a fit that did not converge
    bdmm = "ConvergenceWarning: bdmm: max_iter=1000 reached"
    assert out("liferank-ranksvm", task("False", 1000, {"n_components": 5},
                                         bdmm)) == "unconverged"
    assert set(bench.PAPER_CAP).isdisjoint(bench.NO_STOPPING_RULE)
