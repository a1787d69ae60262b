"""Chapter 6's LifeRank protocol (refimpl.experiments.liferank_protocol) and
the committed-snapshot reader it is shown with, on a tiny LETOR tree; the
committed MQ2008 and OHSUMED results against the snapshots and, where the
data are present, against a refit."""

import json

import numpy as np
import pytest

from refimpl import data, metrics
from refimpl.estimators import HingeRankSVM, RankSVM
from refimpl.experiments import committed_snapshot, snapshot
from refimpl.experiments import liferank_protocol as lp

NAME = "TOY"


@pytest.fixture(scope="module")
def toy_root(tmp_path_factory):
    """``<root>/TOY/S1.txt ... S5.txt`` with 30 features (k up to 20)."""
    root = tmp_path_factory.mktemp("letor")
    syn = data.make_synthetic_letor(n_queries=40, docs_per_query=(4, 10),
                                    n_informative=5, n_redundant=5,
                                    n_noise=20, seed=3)
    (root / NAME).mkdir()
    for s, part in enumerate(np.array_split(np.unique(syn.qid), 5), start=1):
        rows = np.isin(syn.qid, part)
        data.write_letor(root / NAME / f"S{s}.txt", syn.X[rows], syn.y[rows],
                         syn.qid[rows])
    return root


@pytest.fixture(scope="module")
def tables(toy_root):
    # the registry's 1000-iteration budget is intended; the protocol
    # silences the ConvergenceWarning itself (pyproject makes it an error)
    return lp.liferank_tables(folds=(1, 2), dataset=NAME, root=toy_root,
                              n_jobs=1)


def test_tables_structure(tables):
    rows = [(n, k) for k in lp.KS for n in ("Original", "PCA", "GAS",
                                             "FSMRank", "LifeRank")]
    rows += [(n, 10) for n in lp.EXTRA_K10]
    keys = {f"{r}|{n}|{k}" for r in lp.RANKERS for n, k in rows}
    assert set(tables["means"]) == keys == set(tables["marks"])
    assert set(tables["fold_means"]) == keys
    assert set(tables["C"]) == {f"{n}|{k}" for n, k in rows}
    assert all(len(c) == 2 and set(c) <= set(lp.SVMRANK_C)
               for c in tables["C"].values())
    for key, v in tables["means"].items():
        assert v.shape == (11,) and np.all((v >= 0) & (v <= 1)), key
        assert len(tables["marks"][key]) == 11
        assert set(tables["marks"][key]) <= set(" ▲▼△▽")
        if "|LifeRank|" in key:          # LifeRank is not marked against itself
            assert tables["marks"][key] == " " * 11
    for r in lp.RANKERS:
        for k in lp.KS:
            want = (tables["means"][f"{r}|LifeRank|{k}"]
                    - tables["means"][f"{r}|Original|{k}"])
            for (mean, lo, hi), j in zip(tables["gain"][f"{r}|{k}"], (9, 10)):
                assert mean == pytest.approx(want[j], abs=1e-12)
                assert lo <= mean <= hi
    assert set(tables["fits"]) == {"LifeRank", *lp.EXTRA_K10}
    assert set(tables["quality"]) == {"Original", "GAS", "FSMRank", "LifeRank",
                                      *lp.EXTRA_K10, "U start itself"}


def test_original_rows_are_plain_ranksvm(tables, toy_root):
    """The "Original" RankSVM row is RankSVM (C = 1) on all features,
    evaluated per test query and pooled over the folds."""
    per_query = []
    for f in (1, 2):
        fold = data.load_letor_fold(NAME, f, root=toy_root)
        (Xtr, ytr, qtr), (Xte, yte, qte) = fold.train, fold.test
        s = RankSVM(C=1.0).fit(Xtr, ytr, qtr).predict(Xte)
        per_query.append(np.column_stack([
            metrics.ndcg_at_k(yte, s, qte, k=list(lp.CUTS), per_query=True),
            metrics.average_precision(yte, s, qte, per_query=True)]))
    want = np.vstack(per_query).mean(axis=0)
    for k in lp.KS:
        np.testing.assert_allclose(tables["means"][f"RankSVM|Original|{k}"],
                                   want, rtol=0, atol=1e-12)


def test_full_pca_equals_original_for_least_squares(toy_root):
    """PCA with every component spans all features: least squares on it
    ranks exactly as on the original features."""
    fold = data.load_letor_fold(NAME, 1, root=toy_root)
    X = fold.train[0]
    _, _, Qt = np.linalg.svd(X, full_matrices=False)
    a = lp.fold_scores(X, fold.test[0], fold.train, fold.test)["LinReg"]
    b = lp.fold_scores(X @ Qt.T, fold.test[0] @ Qt.T, fold.train,
                       fold.test)["LinReg"]
    np.testing.assert_allclose(a, b, atol=1e-9)


def test_mark():
    rng = np.random.default_rng(0)
    base = rng.uniform(size=200)
    assert lp.mark(base, base) == " "
    assert lp.mark(base + 0.1 + 0.01 * rng.normal(size=200), base) == "▲"
    assert lp.mark(base - 0.1 + 0.01 * rng.normal(size=200), base) == "▼"
    assert lp.mark(base + 0.001 * rng.normal(size=200), base) in " △▽"


def test_committed_snapshot(toy_root, tmp_path, monkeypatch):
    monkeypatch.delenv("REFIMPL_UPDATE_SNAPSHOTS", raising=False)
    notes = []
    with pytest.raises(FileNotFoundError, match="none.json"):
        committed_snapshot("none", directory=tmp_path, out=notes.append)
    snapshot("s", lambda: {"x": 1.5}, dataset=NAME, root=toy_root,
             directory=tmp_path, out=notes.append)
    snap = committed_snapshot("s", directory=tmp_path, out=notes.append)
    assert not snap.live and snap["x"] == 1.5
    assert snap.provenance["dataset"] == NAME
    assert "not re-run here" in notes[-1]
    assert all(len(line) <= 79 for n in notes for line in n.splitlines())
    stored = json.loads((tmp_path / "s.json").read_text())
    assert stored["values"] == snap.values


def test_svmrank_c_is_the_validation_argmax(toy_root):
    """SVMrank's C is the grid value of best validation MAP, and its test
    scores are those of that fit."""
    fold = data.load_letor_fold(NAME, 1, root=toy_root)
    (Xtr, ytr, qtr), (Xva, yva, qva) = fold.train, fold.vali
    vals = [metrics.average_precision(
        yva, HingeRankSVM(C=C, **lp.HINGE).fit(Xtr, ytr, qtr).predict(Xva), qva)
        for C in lp.SVMRANK_C]
    out = lp.fold_scores(Xtr, fold.test[0], fold.train, fold.test, Xva,
                         fold.vali)
    assert out["C"] == lp.SVMRANK_C[int(np.argmax(vals))]
    s = HingeRankSVM(C=out["C"], **lp.HINGE).fit(Xtr, ytr, qtr).predict(fold.test[0])
    np.testing.assert_allclose(out["SVMrank"][:, -1], metrics.average_precision(
        fold.test[1], s, fold.test[2], per_query=True), atol=1e-12)


def test_protocol_csv_beside_the_paper(tables, tmp_path):
    paper = {"dataset": NAME, "paper": "pandey2018liferank"}
    rows = [{**paper, "paper_method": "LifeRank + RankSVM (k = 10)",
             "metric": "MAP", "value": "0.4792", "table": "Table 2"},
            {**paper, "paper_method": "RankSVM (SVMrank; original features)",
             "metric": "NDCG@10", "value": "0.2284", "table": "Table 2"},
            # the same rows of another data set and of another paper are
            # not this data set's
            {**paper, "dataset": "OTHER", "metric": "MAP", "value": "0.1",
             "paper_method": "LifeRank + RankSVM (k = 10)", "table": "Table 3"},
            {**paper, "paper": "other2020", "metric": "NDCG@10",
             "value": "0.1", "table": "Table 1",
             "paper_method": "RankSVM (SVMrank; original features)"}]
    path = tmp_path / "p.csv"
    lp.write_protocol_csv(tables, rows, path, dataset=NAME)
    import csv
    got = list(csv.DictReader(path.open()))
    assert len(got) == 11 * len(tables["means"])
    one = [r for r in got if (r["ranker"], r["features"], r["k"],
                              r["metric"]) == ("SVMrank", "LifeRank", "10",
                                               "MAP")]
    ours = tables["means"]["SVMrank|LifeRank|10"][-1]
    assert one[0]["paper"] == "0.4792"
    assert float(one[0]["ours_minus_paper"]) == pytest.approx(ours - 0.4792,
                                                              abs=1e-6)
    orig = [r for r in got if r["features"] == "Original"
            and r["metric"] == "NDCG@10" and r["ranker"] != "LinReg"]
    assert orig and all(r["paper"] == "0.2284" for r in orig)


def test_seed_gains_seed_zero_matches_the_tables(tables, toy_root):
    """Seed 0 is the protocol's LifeRank: its gain is the tables' gain."""
    out = lp.seed_gains((0, 1), k=10, folds=(1, 2), dataset=NAME,
                        root=toy_root)
    assert out["gain"].shape == (2, 2) and out["seeds"] == [0, 1]
    want = [g[0] for g in tables["gain"]["SVMrank|10"]]
    np.testing.assert_allclose(out["gain"][0], want, atol=1e-12)
    np.testing.assert_allclose(out["life"] - out["original"], out["gain"])


def test_standard_errors_and_pvalues_agree_with_the_marks(tables):
    """``se``, ``se_diff`` and ``pvalue`` (what the case study's plots of
    differences and its Holm correction read) agree with the pooled
    per-query values and with the paper-style marks."""
    keys = set(tables["means"])
    assert set(tables["se"]) == set(tables["se_diff"]) == set(tables["pvalue"]) == keys
    assert tables["n_queries"] >= 2
    for key in keys:
        se, se_d, pv = (np.asarray(tables[f][key], dtype=float)
                        for f in ("se", "se_diff", "pvalue"))
        assert se.shape == se_d.shape == pv.shape == (11,), key
        assert np.all(se >= 0) and np.all(se_d >= 0), key
        assert np.all((pv >= 0) & (pv <= 1)), key
        marks = tables["marks"][key]
        for j in range(11):
            # a mark is drawn exactly when p < 0.05; the filled ones at 0.01
            assert (marks[j] != " ") == (pv[j] < 0.05), (key, j)
            if marks[j] in "▲▼":
                assert pv[j] < 0.01, (key, j)
        if "|LifeRank|" in key:
            assert np.all(se_d == 0) and np.all(pv == 1), key


DATASETS = ("MQ2008", "OHSUMED")


@pytest.mark.parametrize("dataset", DATASETS)
def test_committed_csv_is_the_committed_snapshot(dataset, tmp_path):
    """results/<dataset>/liferank_protocol.csv is write_protocol_csv of the
    committed snapshot and results/paper_values.csv (no data needed)."""
    from refimpl.experiments import read_csv
    from refimpl.experiments.snapshots import ROOT
    tab = committed_snapshot(f"06-liferank-{dataset.lower()}", out=lambda s: None)
    assert tab.provenance["dataset"] == dataset
    tab = {k: ({kk: np.asarray(vv) for kk, vv in v.items()}
               if k == "means" else v) for k, v in tab.values.items()}
    path = tmp_path / "p.csv"
    lp.write_protocol_csv(tab, read_csv(ROOT / "results" / "paper_values.csv"),
                          path, dataset=dataset)
    committed = ROOT / "results" / dataset / "liferank_protocol.csv"
    assert path.read_text() == committed.read_text()
    import csv
    got = list(csv.DictReader(committed.open()))
    # the paper's table of this data set is beside our LifeRank row
    life = [r for r in got if (r["ranker"], r["features"], r["k"]) ==
            ("SVMrank", "LifeRank", "10")]
    assert len(life) == 11 and all(r["paper"] for r in life)


@pytest.mark.parametrize("dataset", DATASETS)
def test_committed_snapshot_agrees_with_a_fold1_refit(dataset):
    """Fold 1, LifeRank + SVMrank at k = 10 refitted, against the committed
    snapshot (within 0.005, the spread a stopping rule allows between BLAS
    kernels), as the case study checks it."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from refimpl.estimators import LifeRank
    from refimpl.experiments import data_available
    if not data_available(dataset):
        pytest.skip(f"{dataset} is not available (set LETOR_HOME): the "
                    f"committed snapshot is not checked against a refit")
    tab = committed_snapshot(f"06-liferank-{dataset.lower()}", out=lambda s: None)
    f1 = data.load_letor_fold(dataset, 1)
    with warnings.catch_warnings():       # the registry's 1,000 iterations
        warnings.simplefilter("ignore", ConvergenceWarning)
        T = LifeRank(n_components=10, **lp.LIFE).fit(*f1.train).components_
    live = lp.fold_scores(f1.train[0] @ T, f1.test[0] @ T, f1.train, f1.test,
                          f1.vali[0] @ T, f1.vali)
    np.testing.assert_allclose(live["SVMrank"].mean(axis=0),
                               tab["fold_means"]["SVMrank|LifeRank|10"][0],
                               rtol=0, atol=5e-3)
