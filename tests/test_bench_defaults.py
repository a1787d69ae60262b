"""Smoke test of ``benchmarks/bench_defaults.py --quick``: structure only, never timing.

The benchmark's verdict (default / fastest <= 1.15) is a measurement of one
machine; here only that every estimator and choice ran, reached an
objective, and that the rows say which choice was fastest.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_defaults.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_defaults", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore")
def test_quick_mode_writes_every_choice(bench, tmp_path):
    out = tmp_path / "defaults.json"
    bench.main(["--quick", "--rounds", "2", "--json", str(out),
                "--only", "FenchelRank", "SparseRankSVM l1"])
    doc = json.loads(out.read_text())
    assert {"goal", "machine", "rows"} <= set(doc)
    assert doc["machine"]["numba"] and doc["machine"]["python"]
    rows = doc["rows"]
    assert {r["data"] for r in rows} == set(bench.QUICK)
    assert {r["estimator"] for r in rows} == {"FenchelRank", "SparseRankSVM l1"}
    for r in rows:
        choices = r["choices"]
        assert "default" in choices and len(choices) >= 3
        assert r["fastest"] in choices and r["resolved"] in choices
        assert r["ratio"] > 0 and r["resolved_ratio"] > 0
        for c in choices.values():
            assert c["time"] > 0 and np.isfinite(c["objective"])
        assert choices["default"]["same"]
        if r["estimator"] == "SparseRankSVM l1":
            # the default is the solver it resolves to: the same fit
            assert r["resolved"] in ("newton", "fista")
            assert (choices["default"]["objective"]
                    == choices[r["resolved"]]["objective"])


@pytest.mark.filterwarnings("ignore")
def test_settle_tells_a_stopping_rule_from_another_problem(bench):
    """Objectives apart at a loose stop are the same answer when tight refits agree.

    FSMRank's relative change at 0.5 stops after an iteration or two, far
    from the optimum that the choice at 1e-4 nears: both converged, their
    objectives more than ``SAME_REL`` apart.  Refitted at the tight
    gradient mapping they meet; another ``lambda1`` is another problem
    and stays apart.
    """
    from refimpl.estimators import FSMRank

    X, y, qid = bench.synthetic(*bench.QUICK["tiny dense"])
    makers = {"default": lambda: FSMRank(lambda1=0.1, lambda2=1e-3, tol=0.5),
              "tighter": lambda: FSMRank(lambda1=0.1, lambda2=1e-3, tol=1e-4,
                                         backend="pairs"),
              "other": lambda: FSMRank(lambda1=1.0, lambda2=1e-3, tol=1e-4)}
    res = {}
    for c, make in makers.items():
        m = make().fit(X, y, qid)
        res[c] = {"objective": float(m.objective_), "converged": m.converged_}
    assert all(r["converged"] for r in res.values())
    apart = abs(res["tighter"]["objective"] - res["default"]["objective"])
    assert apart > bench.SAME_REL * abs(res["default"]["objective"])
    bench.settle(res, makers, X, y, qid)
    assert res["default"]["same"] and res["tighter"]["same"]
    assert not res["other"]["same"]
    t = res["default"]["tight_objective"]
    assert res["tighter"]["tight_objective"] == pytest.approx(t, rel=bench.TIGHT_REL)


def test_committed_record_is_one_clock_and_its_own_verdict(bench):
    """The record chapter 9 prints: every row timed in CPU seconds, every
    verdict the one its choices give, every "same" choice within the
    yardstick of :func:`settle`."""
    path = BENCH.with_suffix(".json")
    if not path.is_file():
        pytest.skip("benchmarks/bench_defaults.json is not in this copy")
    doc = json.loads(path.read_text())
    assert "note" not in doc  # a note says the rows come from two clocks
    for row in doc["rows"]:
        assert row["clock"] == "cpu", (row["data"], row["estimator"])
        mine = {k: row[k] for k in ("fastest", "resolved", "ratio", "resolved_ratio")}
        again = bench.verdict(json.loads(json.dumps(row)))
        assert {k: again[k] for k in mine} == mine
        d = row["choices"]["default"]
        for c, r in row["choices"].items():
            if not r["same"]:
                continue
            assert r["converged"] == d["converged"], (row["data"], c)
            if abs(r["objective"] - d["objective"]) > doc["same_rel"] * abs(d["objective"]):
                assert (abs(r["tight_objective"] - d["tight_objective"])
                        <= doc["tight_rel"] * abs(d["tight_objective"])), (row["data"], c)
