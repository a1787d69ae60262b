"""The experiment runner: configuration checks, end-to-end runs, cache, back-ends, CLI."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from refimpl import data, metrics
from refimpl.__main__ import main
from refimpl.estimators import RankSVM, SparseRankSVM
from refimpl.exceptions import DataError, DatasetNotFoundError
from refimpl.experiments import (
    METHODS,
    ExperimentConfig,
    Method,
    expand_grid,
    load_fold,
    load_results,
    paired_ttest,
    paper_comparison,
    paper_values,
    parse_folds,
    per_query_se,
    register,
    run,
    validate_config,
)

GRIDS = {"ranksvm": {"C": [0.1, 1.0]}, "ranksvm-l1": {"C": [0.01, 0.1]}}


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory):
    """A LETOR directory TINY/S1..S5.txt written from seeded synthetic data."""
    root = tmp_path_factory.mktemp("letor")
    syn = data.make_synthetic_letor(n_queries=30, docs_per_query=(5, 12),
                                    n_informative=3, n_redundant=2, n_noise=5,
                                    seed=7)
    (root / "TINY").mkdir()
    part = (syn.qid - 1) % 5
    for p in range(5):
        m = part == p
        data.write_letor(root / "TINY" / f"S{p + 1}.txt", syn.X[m], syn.y[m],
                         syn.qid[m])
    return root


def config(root, out=None, **kw):
    base = {"dataset": "TINY", "methods": ("ranksvm", "ranksvm-l1"), "folds": (1,),
            "out": None if out is None else str(out), "letor_home": str(root),
            "grids": GRIDS, "backend": "sequential"}
    return ExperimentConfig(**{**base, **kw})


class Counting:
    """A linear ranker counting its fits (to detect refits without timing)."""

    fits = 0

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y, qid=None):
        type(self).fits += 1
        self.coef_ = self.alpha * np.linalg.lstsq(X, y, rcond=None)[0]
        return self

    def predict(self, X):
        return X @ self.coef_


@pytest.fixture
def counting():
    Counting.fits = 0
    register(Method(name="counting", factory=Counting, grid={"alpha": [1.0, 2.0]},
                    selection_metric="MAP", linear=True, paper="none",
                    grid_source="test"), replace=True)
    yield Counting
    METHODS.pop("counting", None)


# -- configuration checks --------------------------------------------------


@pytest.mark.parametrize(("kw", "match"), [
    ({"methods": ("ranksvm", "nope")}, r"unknown method 'nope'; accepted: ranksvm, "),
    ({"methods": ()}, "no methods given; accepted"),
    ({"select_by": "NDCG@20"}, r"unknown metric 'NDCG@20'; accepted: NDCG@1, "),
    ({"grids": {"ranksvm": {"C": []}}},
     "grid of method 'ranksvm' is empty for parameter 'C'"),
    ({"grids": {"ranksvm": {"gamma": [1]}}}, "no parameter 'gamma'; accepted: C, tol"),
    ({"grids": {"fenchelrank": {"r": [1]}}}, "not in the run: fenchelrank"),
    ({"folds": (0, 1)}, "integers 1..5"),
    ({"folds": "1-9"}, "integers 1..5"),
    ({"backend": "spark"},
     "unknown backend 'spark'; accepted: loky, threading, sequential, dask"),
    ({"n_jobs": 0}, "n_jobs must be a positive integer or -1"),
    ({"dataset": "synthetic:3"}, "at least 5 queries"),
])
def test_bad_configuration_is_rejected_with_what_is_accepted(tiny_root, kw, match):
    with pytest.raises(DataError, match=match):
        validate_config(config(tiny_root, **kw))


def test_missing_dataset_lists_what_exists(tiny_root, tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"'MQ2009'.*found under .*: TINY"):
        run(config(tiny_root, dataset="MQ2009", out=tmp_path))
    assert not (tmp_path / "MQ2009").exists()


def test_rejection_happens_before_any_fit(tiny_root, tmp_path, counting):
    with pytest.raises(DataError, match="unknown metric"):
        run(config(tiny_root, out=tmp_path, methods=("counting",), grids={},
                   select_by="mAP"))
    assert counting.fits == 0
    assert not any(tmp_path.iterdir())


def test_parse_folds():
    assert parse_folds("1-5") == (1, 2, 3, 4, 5)
    assert parse_folds("1,3") == (1, 3)
    assert parse_folds("2") == (2,)
    with pytest.raises(DataError, match="folds must look like"):
        parse_folds("one")


def test_expand_grid_order():
    assert expand_grid({"a": [1, 2], "b": [3, 4]}) == [
        {"a": 1, "b": 3}, {"a": 1, "b": 4}, {"a": 2, "b": 3}, {"a": 2, "b": 4}]
    assert expand_grid({}) == [{}]


# -- end to end --------------------------------------------------------------


@pytest.fixture(scope="module")
def first_run(tiny_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return run(config(tiny_root, out=out)), out


def test_end_to_end_tables(first_run, tiny_root):
    result, out = first_run
    assert result.n_fitted == 4 and result.n_cached == 0 and result.n_failed == 0
    tables = load_results(out / "TINY")
    assert len(tables["tasks"]) == 4 and len(tables["selected"]) == 2
    assert [s["method"] for s in tables["summary"]] == ["ranksvm", "ranksvm-l1"]
    info = tables["run"]
    assert info["grids"]["ranksvm"] == [{"C": 0.1}, {"C": 1.0}]
    assert info["selection_metrics"] == {"ranksvm": "MeanNDCG", "ranksvm-l1": "MAP"}
    assert info["versions"]["refimpl"] and info["versions"]["numpy"]
    fold = load_fold("TINY", 1, str(tiny_root))
    n_test_queries = len(np.unique(fold.test.qid))
    assert len(tables["per_query"]) == 2 * n_test_queries


def test_selection_is_the_best_validation_value(first_run):
    result, _ = first_run
    for sel in result.selected:
        metric = sel["selection_metric"]
        rows = [r for r in result.tasks if r["method"] == sel["method"]]
        assert sel[f"val_{metric}"] == max(r[f"val_{metric}"] for r in rows)


def test_task_matches_a_fit_by_hand(first_run, tiny_root):
    result, _ = first_run
    fold = load_fold("TINY", 1, str(tiny_root))
    for row in result.tasks:
        params = json.loads(row["params"])
        fixed = METHODS[row["method"]].fixed
        if row["method"] == "ranksvm":
            est = RankSVM(**params, **fixed)
        else:
            est = SparseRankSVM(**params, **fixed)
        assert est.get_params()["C"] == params["C"]
        est.fit(*fold.train)
        ref = metrics.evaluate(fold.test.y, est.predict(fold.test.X), fold.test.qid,
                               ks=range(1, 11))
        for name, value in ref.items():
            assert row[f"test_{name}"] == pytest.approx(value, rel=1e-12, abs=1e-12)
        assert row["sparsity"] == pytest.approx(
            metrics.sparsity_ratio(est.coef_, fold.train.X, ignore_unused=True))
        assert row["nnz"] == np.count_nonzero(est.coef_)


def test_rerun_uses_the_cache(tiny_root, tmp_path, counting):
    cfg = config(tiny_root, out=tmp_path, methods=("counting",), grids={})
    first = run(cfg)
    assert counting.fits == 2 and first.n_fitted == 2
    files = sorted((tmp_path / "TINY" / "cache").rglob("*-*.json"))
    assert len(files) == 2
    stamps = [f.stat().st_mtime_ns for f in files]
    second = run(cfg)
    assert counting.fits == 2, "a cached task was fitted again"
    assert second.n_fitted == 0 and second.n_cached == 2
    assert [f.stat().st_mtime_ns for f in files] == stamps
    strip = lambda rows: [{k: v for k, v in r.items() if k != "cached"} for r in rows]
    assert strip(second.tasks) == strip(first.tasks)
    assert all(r["cached"] for r in second.tasks)
    run(ExperimentConfig(**{**cfg.__dict__, "cache": False}))
    assert counting.fits == 4
    # another grid point is a new key; the old ones still hit
    third = run(ExperimentConfig(**{**cfg.__dict__,
                                    "grids": {"counting": {"alpha": [1.0, 3.0]}}}))
    assert third.n_cached == 1 and third.n_fitted == 1


def _comparable(result):
    keep = lambda k: k.startswith(("val_", "test_")) or k in (
        "method", "fold", "params", "nnz", "sparsity", "n_iter", "status")
    return sorted(({k: v for k, v in r.items() if keep(k)} for r in result.tasks),
                  key=lambda r: (r["method"], r["params"]))


def test_joblib_two_processes_equal_one(first_run, tiny_root):
    result, _ = first_run
    par = run(config(tiny_root, backend="loky", n_jobs=2))
    assert par.n_fitted == 4
    assert _comparable(par) == _comparable(result)


def test_dask_local_cluster_equals_local(first_run, tiny_root):
    distributed = pytest.importorskip("distributed")
    result, _ = first_run
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        dres = run(config(tiny_root, backend="dask", n_jobs=-1))
    assert _comparable(dres) == _comparable(result)


def test_dask_backend_without_client_is_explained(tiny_root):
    pytest.importorskip("distributed")
    with pytest.raises(DataError, match="needs a running dask.distributed Client"):
        run(config(tiny_root, backend="dask"))


def test_synthetic_folds_partition_the_queries():
    tests = [set(load_fold("synthetic:40", k).test.qid) for k in range(1, 6)]
    assert set().union(*tests) == set(range(1, 41))
    assert sum(map(len, tests)) == 40
    f = load_fold("synthetic:40", 2)
    assert not set(f.train.qid) & (set(f.vali.qid) | set(f.test.qid))


def test_paired_ttest_matches_scipy(first_run):
    result, _ = first_run
    rows = result.per_query
    _, _, p, n = paired_ttest(rows, "ranksvm", "ranksvm-l1", "AP")
    a = [r["AP"] for r in rows if r["method"] == "ranksvm"]
    b = [r["AP"] for r in rows if r["method"] == "ranksvm-l1"]
    ref = stats.ttest_rel(a, b)
    if np.isnan(ref.pvalue):
        assert p == 1.0 or np.isnan(p)
    else:
        assert p == pytest.approx(ref.pvalue) and n == len(a)
    assert paired_ttest(rows, "ranksvm", "ranksvm", "NDCG@10")[2] == 1.0


# -- command line ------------------------------------------------------------


def test_cli_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--dataset", "--methods", "--folds", "--out", "--letor-home",
                   "--grid", "--reduced", "--select-by", "--n-jobs", "--backend",
                   "--scheduler", "--refit", "--quiet"):
        assert option in text


def test_cli_run_and_error(tiny_root, tmp_path, capsys):
    argv = ["run", "--dataset", "TINY", "--letor-home", str(tiny_root),
            "--methods", "ranksvm,linreg", "--grid", "ranksvm:C=0.5,2",
            "--folds", "1", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    tables = load_results(tmp_path / "TINY")
    assert [json.loads(r["params"]) for r in tables["tasks"]] == [
        {"C": 0.5}, {"C": 2}, {}]
    assert main(argv[:-1]) == 0
    assert "0 fitted, 3 from cache" in capsys.readouterr().out
    assert main(["run", "--dataset", "TINY", "--letor-home", str(tiny_root),
                 "--methods", "fenchel"]) == 2
    assert "unknown method 'fenchel'; accepted:" in capsys.readouterr().err


def test_cli_as_module_lists_methods():
    out = subprocess.run([sys.executable, "-m", "refimpl", "methods"],
                         capture_output=True, text=True, check=True).stdout
    for name in ("ranksvm", "fenchelrank", "fsmrank", "lambdamart", "linreg"):
        assert name in out


def test_paper_comparison_uses_selected_fold1_and_fixed_settings(first_run):
    _, out = first_run
    tables = load_results(out / "TINY")
    paper = [
        {"dataset": "TINY", "method": "ranksvm", "paper": "p", "table": "T1",
         "folds": "1-5", "params": None, "metric": "MAP", "value": 0.5},
        {"dataset": "TINY", "method": "ranksvm", "paper": "p", "table": "T2",
         "folds": "1", "params": None, "metric": "sparsity", "value": 0.25},
        {"dataset": "TINY", "method": "ranksvm-l1", "paper": "p", "table": "T3",
         "folds": "1-5", "params": '{"C": 0.1}', "metric": "NDCG@10",
         "value": 0.0},
        {"dataset": "OTHER", "method": "ranksvm", "paper": "p", "table": "T4",
         "folds": "1-5", "params": None, "metric": "MAP", "value": 0.5},
        {"dataset": "TINY", "method": "fenchelrank", "paper": "p", "table": "T5",
         "folds": "1-5", "params": None, "metric": "MAP", "value": 0.5},
    ]
    rows = paper_comparison(tables, paper)
    assert [r["table"] for r in rows] == ["T1", "T2", "T3"]
    sel = {s["method"]: s for s in tables["selected"]}
    assert rows[0]["ours"] == pytest.approx(sel["ranksvm"]["test_MAP"])
    assert rows[0]["diff"] == pytest.approx(sel["ranksvm"]["test_MAP"] - 0.5)
    assert rows[1]["ours"] == pytest.approx(sel["ranksvm"]["sparsity"])
    task = next(t for t in tables["tasks"] if t["method"] == "ranksvm-l1"
                and json.loads(t["params"]) == {"C": 0.1})
    assert rows[2]["ours"] == pytest.approx(task["test_NDCG@10"])


def test_paper_comparison_per_query_standard_errors(first_run):
    """ours_se_q is the standard error of the mean over folds from the
    per-query values; rows with fixed parameters and the sparsity ratio,
    which have none, get None."""
    _, out = first_run
    tables = load_results(out / "TINY")
    paper = [{"dataset": "TINY", "method": "ranksvm", "paper": "p",
              "table": "T1", "folds": "1-5", "params": params,
              "metric": metric, "value": 0.5}
             for params, metric in ((None, "MAP"), (None, "NDCG@10"),
                                    (None, "sparsity"), ('{"C": 0.1}', "MAP"))]
    rows = paper_comparison(tables, paper)
    for row, col in zip(rows[:2], ("AP", "NDCG@10")):
        vals = np.array([r[col] for r in tables["per_query"]
                         if r["method"] == "ranksvm"])       # one fold here
        assert row["ours_se_q"] == pytest.approx(
            vals.std(ddof=1) / np.sqrt(vals.size), rel=1e-12)
        assert row["ours_se_q"] == per_query_se(tables["per_query"],
                                                "ranksvm", col, (1,))
    assert rows[2]["ours_se_q"] is None and rows[3]["ours_se_q"] is None
    # with two folds: sqrt(s_1^2 / n_1 + s_2^2 / n_2) / 2
    pq = [{"method": "m", "fold": f, "AP": v} for f, vs in
          ((1, [0.1, 0.3, 0.8]), (2, [0.5, 0.9])) for v in vs]
    want = np.sqrt(np.var([0.1, 0.3, 0.8], ddof=1) / 3
                   + np.var([0.5, 0.9], ddof=1) / 2) / 2
    assert per_query_se(pq, "m") == pytest.approx(want, rel=1e-12)
    with pytest.raises(DataError, match="fold 3"):
        per_query_se(pq, "m", folds=(1, 3))


def test_paper_comparison_selects_the_parameters_a_row_leaves_free(first_run):
    """A row fixing only some parameters (SVMrank's C after LifeRank at
    k = 10) gets the runner's selection among its tasks, not their mean:
    with every parameter free that is the selected model."""
    _, out = first_run
    tables = load_results(out / "TINY")
    paper = [{"dataset": "TINY", "method": m, "paper": "p", "table": "T1",
              "folds": "1", "params": "{}", "metric": "MAP", "value": 0.5}
             for m in ("ranksvm", "ranksvm-l1")]
    sel = {s["method"]: s for s in tables["selected"]}
    for row in paper_comparison(tables, paper):
        assert row["ours"] == sel[row["method"]]["test_MAP"]


def test_paper_values_keeps_one_paper_and_data_set(tmp_path):
    path = tmp_path / "paper_values.csv"
    path.write_text(
        "dataset,method,paper_method,paper,table,folds,params,metric,value,note\n"
        "D,ranksvm,R,p,Table 2,1-5,,MAP,0.45,\n"
        "D,ranksvm,R,p,Table 8,1-5,,MAP,0.45,same value twice\n"
        "D,,Other,p,Table 2,1-5,,MAP,0.40,a baseline we do not run\n"
        "D,lambdamart,G,p,Table 6,1-5,,MeanNDCG,0.47,\n"
        "E,ranksvm,R,p,Table 2,1-5,,MAP,0.30,\n"
        "D,ranksvm,R,q,Table 1,1-5,,MAP,0.20,\n", encoding="utf-8")
    assert paper_values("D", "p", path=path) == {("ranksvm", "MAP"): 0.45,
                                                  ("lambdamart", "MeanNDCG"): 0.47}
    assert paper_values("D", "p", methods=("ranksvm",), path=path) == {
        ("ranksvm", "MAP"): 0.45}
    assert paper_values("E", "q", path=path) == {}
    with path.open("a", encoding="utf-8") as f:
        f.write("D,lambdamart,G,p,Table 7,1-5,,MeanNDCG,0.449,\n")
    with pytest.raises(DataError, match=r"Table 6.*Table 7"):
        paper_values("D", "p", path=path)
    assert paper_values("D", "p", methods=("ranksvm",), path=path) == {
        ("ranksvm", "MAP"): 0.45}
    assert paper_values("D", "p", tables=("Table 7",), path=path) == {
        ("lambdamart", "MeanNDCG"): 0.449}


def test_cli_dask_local_cluster(tiny_root, tmp_path):
    pytest.importorskip("distributed")
    argv = ["run", "--dataset", "TINY", "--letor-home", str(tiny_root),
            "--methods", "ranksvm", "--grid", "ranksvm:C=0.1,1", "--folds", "1",
            "--backend", "dask", "--n-jobs", "1", "--out", str(tmp_path),
            "--quiet"]
    assert main(argv) == 0
    tasks = load_results(tmp_path / "TINY")["tasks"]
    assert [json.loads(t["params"]) for t in tasks] == [{"C": 0.1}, {"C": 1}]
    assert all(t["status"] == "ok" and not t["cached"] for t in tasks)


@pytest.mark.parametrize("seed", range(4))
def test_the_runners_evaluation_is_the_metrics_modules(seed):
    """``runner.evaluate_split`` ranks a validated split once; its numbers are
    ``metrics.evaluate``'s and the per-query ``ndcg_at_k`` and
    ``average_precision``, exactly (queries out of order, tied scores, a
    query without a relevant document)."""
    from refimpl._validation import ranking_problem
    from refimpl.experiments import config, runner

    rng = np.random.default_rng(seed)
    n = 120
    qid = rng.integers(0, 9, size=n)
    y = rng.integers(0, 3, size=n).astype(float)
    y[qid == 0] = 0.0
    scores = rng.integers(0, 4, size=n).astype(float)       # many ties
    values, per_query = runner.evaluate_split(
        ranking_problem(rng.normal(size=(n, 3)), y, qid), scores)
    expected = metrics.evaluate(y, scores, qid, ks=config.KS)
    assert values.keys() == expected.keys()
    assert all(v == values[k] or (np.isnan(v) and np.isnan(values[k]))
               for k, v in expected.items())
    assert per_query["qid"] == sorted(set(qid.tolist()))
    nd = metrics.ndcg_at_k(y, scores, qid, k=list(config.PER_QUERY_KS), per_query=True)
    for j, k in enumerate(config.PER_QUERY_KS):
        assert per_query[f"NDCG@{k}"] == nd[:, j].tolist()
    assert per_query["AP"] == metrics.average_precision(y, scores, qid,
                                                        per_query=True).tolist()


def test_shared_first_stages_run_first_and_once(tiny_root, tmp_path):
    """liferank-ranksvm-hinge's grid (k x C) shares LifeRank across C: the
    runner submits one task per (fold, k) first and passes a stage cache
    (``memory``) keyed by the code's hash, so each LifeRank is fitted once;
    the tables keep the grid's order and equal a run without the cache."""
    from refimpl.experiments.runner import stage_first
    from refimpl.experiments.task_cache import Task

    grids = {"liferank-ranksvm-hinge": {"n_components": [2, 3], "C": [0.1, 1.0, 10.0]}}
    cfg = config(tiny_root, out=tmp_path / "a", methods=("liferank-ranksvm-hinge",),
                 grids=grids, folds=(1,))
    plan = validate_config(cfg)
    method = plan.methods[0]
    tasks = [Task("d", None, 1, method, p, i, key=str(i), stage_cache="x")
             for i, p in enumerate(plan.grids[method.name])]
    order = [(t.params["n_components"], t.params["C"]) for t in stage_first(tasks)]
    assert order[:2] == [(2, 0.1), (3, 0.1)]
    assert sorted(order) == sorted((t.params["n_components"], t.params["C"])
                                   for t in tasks)
    assert [t.index for t in stage_first([dataclasses.replace(t, stage_cache=None)
                                           for t in tasks])] == list(range(6))

    cached = run(cfg)
    stages = list((tmp_path / "a").rglob("stages/*"))
    assert len(stages) == 1 and len(stages[0].name) == 16   # the code hash
    plain = run(dataclasses.replace(cfg, out=None))
    assert [r["grid_index"] for r in cached.tasks] == list(range(6))
    for a, b in zip(cached.tasks, plain.tasks):
        assert a["params"] == b["params"] and a["test_MAP"] == b["test_MAP"]
