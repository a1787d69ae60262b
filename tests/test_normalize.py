"""Feature normalisation: LETOR's QueryLevelNorm and the training-split
standardisation, in the loader, the runner and the command line (issue 27).

The kernels are checked against brute force on random and adversarial cases
(one-document queries, constant features, negative and huge values); the
standardisation against exact sums (math.fsum) and for leakage; the runner's
caches for keying by the normalisation.
"""

import dataclasses
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import data
from refimpl.__main__ import build_parser, main
from refimpl.exceptions import DataError
from refimpl.experiments import ExperimentConfig, run, validate_config
from refimpl.experiments import folds, task_cache
from refimpl.experiments.registry import METHODS

# --------------------------------------------------------------------------
# brute force
# --------------------------------------------------------------------------


def query_level_brute(X, qid):
    """LETOR's QueryLevelNorm, one query and one feature at a time, exactly
    (Fractions), rounded once."""
    out = np.zeros_like(X, dtype=float)
    for q in set(qid.tolist()):
        rows = [i for i in range(len(qid)) if qid[i] == q]
        for j in range(X.shape[1]):
            col = [Fraction(float(X[i, j])) for i in rows]
            lo, hi = min(col), max(col)
            for i, v in zip(rows, col):
                out[i, j] = 0.0 if hi == lo else float((v - lo) / (hi - lo))
    return out


def standard_brute(X_fit, X):
    """z-scores with the exact mean and (ddof=0) deviation of ``X_fit``."""
    n, d = X_fit.shape
    out = np.empty_like(X, dtype=float)
    for j in range(d):
        col = [Fraction(float(v)) for v in X_fit[:, j]]
        mean = sum(col) / n
        if min(col) == max(col):
            sd = Fraction(1)
        else:
            sd = Fraction(math.sqrt(float(sum((v - mean) ** 2 for v in col) / n)))
        for i in range(X.shape[0]):
            out[i, j] = float((Fraction(float(X[i, j])) - mean) / sd)
    return out


VALUES = st.one_of(
    st.floats(-1e15, 1e15, allow_nan=False),
    st.sampled_from([0.0, 1.0, -1.0, 1e15, -1e15, 0.5, 1e-300, -3.0]),
)


@st.composite
def ranking_matrices(draw, max_rows=14, max_cols=5):
    n = draw(st.integers(1, max_rows))
    d = draw(st.integers(1, max_cols))
    X = np.array(draw(st.lists(VALUES, min_size=n * d, max_size=n * d)),
                 dtype=float).reshape(n, d)
    if draw(st.booleans()):          # a constant feature
        X[:, draw(st.integers(0, d - 1))] = draw(VALUES)
    # few query ids, in any order: one-document queries, interleaved rows
    qid = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    return X, qid


# --------------------------------------------------------------------------
# query-level normalisation
# --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ranking_matrices())
def test_query_level_matches_brute_force(case):
    X, qid = case
    got = data.query_level_normalize(X, qid)
    ref = query_level_brute(X, qid)
    # two roundings (x - lo, then the quotient) against one: 3 ulps of 1
    np.testing.assert_allclose(got, ref, rtol=0, atol=3 * np.finfo(float).eps)
    # exactly 0 at the minimum, 1 at the maximum, 0 for a constant
    assert np.array_equal(got == 0, ref == 0)
    assert np.array_equal(got == 1, ref == 1)
    assert np.all((got >= 0) & (got <= 1))


@pytest.mark.parametrize("X, qid, expected", [
    # one-document queries and a constant feature: 0
    (np.array([[5.0, -2.0], [7.0, -2.0], [3.0, 9.0]]), np.array([1, 1, 2]),
     np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])),
    # negative values, interleaved queries
    (np.array([[-4.0], [10.0], [-2.0], [11.0], [-3.0]]),
     np.array([7, 3, 7, 3, 7]), np.array([[0.0], [0.0], [1.0], [1.0], [0.5]])),
])
def test_query_level_adversarial(X, qid, expected):
    np.testing.assert_array_equal(data.query_level_normalize(X, qid), expected)


def test_query_level_span_beyond_float64():
    big = np.finfo(float).max
    X = np.array([[-big], [0.0], [big], [big / 2]])
    got = data.query_level_normalize(X, np.zeros(4))
    np.testing.assert_array_equal(got, query_level_brute(X, np.zeros(4, int)))
    np.testing.assert_array_equal(got.ravel(), [0.0, 0.5, 1.0, 0.75])


def test_query_level_invariant_to_per_query_affine_maps():
    syn = data.make_synthetic_letor(n_queries=6, seed=3)
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 4.0, size=(7, syn.X.shape[1]))[syn.qid]
    b = rng.normal(size=(7, syn.X.shape[1]))[syn.qid]
    ref = data.query_level_normalize(syn.X, syn.qid)
    got = data.query_level_normalize(a * syn.X + b, syn.qid)
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_nan_refused_by_the_functions_and_the_loader(tmp_path):
    X = np.array([[1.0], [np.nan]])
    with pytest.raises(DataError, match="NaN"):
        data.query_level_normalize(X, [1, 1])
    with pytest.raises(DataError, match="NaN"):
        data.Standardizer.fit(X)
    path = tmp_path / "nan.txt"
    path.write_text("0 qid:1 1:0.5\n1 qid:1 1:nan\n")
    with pytest.raises(DataError, match="finite"):
        data.load_letor(path, cache=False)


# --------------------------------------------------------------------------
# standardisation
# --------------------------------------------------------------------------


@settings(max_examples=120, deadline=None, derandomize=True)
@given(ranking_matrices(), ranking_matrices())
def test_standardizer_matches_brute_force(fit_case, other_case):
    X_fit = fit_case[0]
    X = other_case[0][:, :1].repeat(X_fit.shape[1], axis=1)
    scaler = data.Standardizer.fit(X_fit)
    for M in (X_fit, X):
        ref = standard_brute(X_fit, M)
        got = scaler.transform(M)
        # sums of n terms: a few ulps of the largest magnitude, in units
        # of the deviation
        spread = np.max(np.abs(X_fit), axis=0) / scaler.scale
        tol = 1e-13 * (1 + spread) * (1 + np.max(np.abs(M), axis=0)
                                      / np.maximum(scaler.scale, 1e-300))
        assert np.all(np.abs(got - ref) <= tol), (got, ref)
    const = X_fit.min(axis=0) == X_fit.max(axis=0)
    np.testing.assert_array_equal(scaler.constant, const)
    np.testing.assert_array_equal(scaler.scale[const], 1.0)
    np.testing.assert_array_equal(scaler.transform(X_fit)[:, const], 0.0)


def test_standardizer_huge_values_do_not_overflow():
    big = np.finfo(float).max
    X = np.array([[big, 1.0], [-big, 1.0], [0.0, 1.0], [big / 2, 1.0]])
    scaler = data.Standardizer.fit(X)
    assert np.all(np.isfinite(scaler.mean)) and np.all(np.isfinite(scaler.scale))
    z = scaler.transform(X)
    assert np.all(np.isfinite(z))
    np.testing.assert_allclose(z[:, 0].mean(), 0.0, atol=1e-15)
    np.testing.assert_allclose(z[:, 0].std(), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(z[:, 1], 0.0)


def test_standardizer_refuses_a_nonfinite_z_score_and_wrong_width():
    scaler = data.Standardizer.fit(np.array([[0.0], [1e-300]]))
    with pytest.raises(DataError, match=r"test\.X\[0, 0\].*non-finite"):
        scaler.transform(np.array([[1e300]]), what="test.X")
    with pytest.raises(DataError, match="2 features.*fitted on 1"):
        scaler.transform(np.ones((1, 2)))


def test_in_place_maps_equal_the_copies_and_errors_name_the_value_read(monkeypatch):
    """``out=X`` (the loader's way, no second copy) gives the same bits as a
    new array; standardising in place goes through blocks of rows, and a
    non-finite z-score in a later block names its row and the value as read
    (the block is not written back)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 4)) * 1e3
    qid = np.repeat(np.arange(10), 5)
    ref = data.query_level_normalize(X, qid)
    inplace = X.copy()
    assert data.query_level_normalize(inplace, qid, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, ref)
    monkeypatch.setattr(data, "_BLOCK_BYTES", 7 * 4 * 8)     # 7 rows a block
    scaler = data.Standardizer.fit(X)
    inplace = X.copy()
    assert scaler.transform(inplace, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, scaler.transform(X))
    tiny = data.Standardizer.fit(np.array([[0.0], [1e-300]]))
    col = np.zeros((20, 1))
    col[16, 0] = 1e300
    with pytest.raises(DataError, match=r"test\.X\[16, 0\] = 1e\+300 standardises"):
        tiny.transform(col, what="test.X", out=col)
    with pytest.raises(DataError, match="out must be a writeable C-contiguous float64"):
        scaler.transform(X, out=np.empty((50, 4), np.float32))


def synthetic_fold():
    syn = data.make_synthetic_letor(n_queries=15, n_noise=4, seed=1)
    X = syn.X * 1000.0 - 3.0                      # not already standard
    X[:, -1] = 7.0                                # constant everywhere
    part = (syn.qid - 1) % 3

    def split(k):
        m = part == k
        return data.RankingData(X[m], syn.y[m], syn.qid[m])

    return data.LetorFold("syn", 1, split(0), split(1), split(2))


def test_standardisation_uses_only_the_training_split():
    fold = synthetic_fold()
    out = data.normalize_fold(fold, "standard")
    ref = data.Standardizer.fit(fold.train.X)
    np.testing.assert_array_equal(out.scaler.mean, ref.mean)
    np.testing.assert_array_equal(out.scaler.scale, ref.scale)
    np.testing.assert_allclose(out.train.X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(out.train.X[:, :-1].std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(out.train.X[:, -1], 0.0)
    # no leakage: other validation and test data change neither the
    # statistics nor the training features
    shifted = dataclasses.replace(fold, vali=data.RankingData(
        fold.vali.X * 5 + 100, fold.vali.y, fold.vali.qid), test=data.RankingData(
        fold.test.X[::-1] - 50, fold.test.y[::-1], fold.test.qid[::-1]))
    out2 = data.normalize_fold(shifted, "standard")
    np.testing.assert_array_equal(out2.train.X, out.train.X)
    np.testing.assert_array_equal(out2.scaler.mean, out.scaler.mean)
    np.testing.assert_array_equal(out2.vali.X, ref.transform(shifted.vali.X))


def test_normalize_fold_options():
    fold = synthetic_fold()
    assert data.normalize_fold(fold, None) is fold
    q = data.normalize_fold(fold, "query")
    assert q.normalize == "query" and q.scaler is None
    np.testing.assert_array_equal(
        q.test.X, data.query_level_normalize(fold.test.X, fold.test.qid))
    np.testing.assert_array_equal(q.test.y, fold.test.y)
    with pytest.raises(DataError, match="already normalised"):
        data.normalize_fold(q, "standard")
    f32 = dataclasses.replace(fold, **{s: data.RankingData(
        getattr(fold, s).X.astype(np.float32), getattr(fold, s).y,
        getattr(fold, s).qid) for s in ("train", "vali", "test")})
    assert data.normalize_fold(f32, "standard").vali.X.dtype == np.float32
    for bad in ("zscore", "Query", 1, True):
        with pytest.raises(DataError, match="normalize must be None.*'query'"
                                            ".*'standard'"):
            data.normalize_fold(fold, bad)


# --------------------------------------------------------------------------
# the loader and its parse cache
# --------------------------------------------------------------------------


@pytest.fixture
def raw_root(tmp_path):
    """S1..S5 partitions of raw (not normalised) features, LETOR 4.0 layout."""
    syn = data.make_synthetic_letor(n_queries=10, n_noise=3, seed=5)
    X = np.round(syn.X * 1e5)                    # MSLR-like raw counts
    base = tmp_path / "RAW"
    base.mkdir()
    for k in range(5):
        m = (syn.qid - 1) % 5 == k
        data.write_letor(base / f"S{k + 1}.txt", X[m], syn.y[m], syn.qid[m])
    return tmp_path


def test_loader_option_and_parse_cache(raw_root):
    raw = data.load_letor_fold("RAW", 1, root=raw_root)
    assert raw.normalize is None and raw.train.X.max() > 1
    q = data.load_letor_fold("RAW", 1, root=raw_root, normalize="query")
    np.testing.assert_array_equal(
        q.vali.X, data.query_level_normalize(raw.vali.X, raw.vali.qid))
    s = data.load_letor_fold("RAW", 1, root=raw_root, normalize="standard")
    np.testing.assert_array_equal(
        s.test.X, data.Standardizer.fit(raw.train.X).transform(raw.test.X))
    # the parse cache holds the raw parse: a raw load after normalised ones
    # reads the files' values
    again = data.load_letor_fold("RAW", 1, root=raw_root)
    np.testing.assert_array_equal(again.train.X, raw.train.X)
    assert list((raw_root / "RAW" / ".refimpl_cache").glob("*.json"))
    with pytest.raises(DataError, match="normalize must be"):
        data.load_letor_fold("RAW", 1, root=raw_root, normalize="minmax")


def test_single_file_loader_offers_query_level_norm(raw_root):
    """``load_letor(normalize="query")`` is QueryLevelNorm of the file's own
    queries, also in float32 and with comments; the cache keeps the file's
    values; "standard" (which needs a training split) and unknown values are
    refused naming the parameter."""
    path = raw_root / "RAW" / "S1.txt"
    X, y, qid = data.load_letor(path)
    assert X.max() > 1
    Xq, yq, qq = data.load_letor(path, normalize="query")
    np.testing.assert_array_equal(Xq, data.query_level_normalize(X, qid))
    np.testing.assert_array_equal(yq, y)
    np.testing.assert_array_equal(qq, qid)
    X32, *_, comments = data.load_letor(path, normalize="query",
                                        dtype=np.float32, return_comments=True)
    assert X32.dtype == np.float32 and len(comments) == len(y)
    raw32 = data.load_letor(path, dtype=np.float32)[0]
    np.testing.assert_array_equal(
        X32, data.query_level_normalize(raw32, qid).astype(np.float32))
    np.testing.assert_array_equal(data.load_letor(path)[0], X)
    with pytest.raises(DataError, match=r"normalize='standard'.*training split"):
        data.load_letor(path, normalize="standard")
    with pytest.raises(DataError, match="normalize must be"):
        data.load_letor(path, normalize="minmax")


# --------------------------------------------------------------------------
# the runner: options, keys, caches
# --------------------------------------------------------------------------


def test_keys_of_a_raw_run_are_unchanged_and_normalised_ones_differ():
    m = METHODS["ranksvm"]
    params = {"C": 1.0}
    assert task_cache.task_key("MQ2008", 1, m, params) == task_cache.task_key(
        "MQ2008", 1, m, params, None)
    keys = {task_cache.task_key("MQ2008", 1, m, params, n)
            for n in (None, "query", "standard")}
    assert len(keys) == 3
    ckeys = {task_cache.cache_key("MQ2008", 1, m, params, "d" * 64, n)
             for n in (None, "query", "standard")}
    assert len(ckeys) == 3


def test_run_with_and_without_normalisation_keeps_separate_caches(tmp_path):
    def config(normalize):
        return ExperimentConfig(
            dataset="synthetic:20", methods=("ranksvm",), folds=(1,),
            grids={"ranksvm": {"C": [1.0]}}, backend="sequential",
            out=str(tmp_path), normalize=normalize)

    raw = run(config(None))
    norm = run(config("query"))
    assert (raw.n_fitted, norm.n_fitted, norm.n_cached) == (1, 1, 0)
    assert raw.out_dir.name == "synthetic-20"
    assert norm.out_dir.name == "synthetic-20-normalize-query"
    entries = {p.name for d in (raw.out_dir, norm.out_dir)
               for p in (d / "cache" / "ranksvm").glob("*.json")}
    assert len(entries) == 2
    assert raw.tasks[0]["key"] != norm.tasks[0]["key"]
    assert json.loads((norm.out_dir / "run.json").read_text())[
        "config"]["normalize"] == "query"
    # each re-run is served by its own cache
    assert run(config("query")).n_cached == 1
    assert run(config(None)).n_cached == 1
    # the raw and the normalised fold differ, and each is what the loader gives
    f_raw = folds.load_fold("synthetic:20", 1)
    f_q = folds.load_fold("synthetic:20", 1, normalize="query")
    np.testing.assert_array_equal(
        f_q.train.X, data.query_level_normalize(f_raw.train.X, f_raw.train.qid))
    assert f_q.normalize == "query" and f_raw.normalize is None


def test_config_rejects_an_unknown_normalisation():
    with pytest.raises(DataError, match=r"normalize must be None.*got 'l2'"):
        validate_config(ExperimentConfig(dataset="synthetic:20",
                                         methods=("ranksvm",), normalize="l2"))


def test_cli_option():
    parser = build_parser()
    base = ["run", "--dataset", "synthetic:20", "--methods", "ranksvm"]
    assert parser.parse_args(base).normalize == "none"
    assert parser.parse_args(base + ["--normalize", "query"]).normalize == "query"
    assert parser.parse_args(
        base + ["--normalize", "standard"]).normalize == "standard"


def test_cli_rejects_a_wrong_value_naming_the_option(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--dataset", "synthetic:20", "--methods", "ranksvm",
              "--normalize", "zscore"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--normalize" in err and "'zscore'" in err
    assert all(v in err for v in ("'none'", "'query'", "'standard'"))


def test_cli_run_writes_the_normalised_folder(tmp_path, capsys):
    rc = main(["run", "--dataset", "synthetic:20", "--methods", "ranksvm",
               "--grid", "ranksvm:C=1", "--folds", "1", "--backend",
               "sequential", "--normalize", "standard", "--out",
               str(tmp_path), "--quiet"])
    assert rc == 0
    assert (tmp_path / "synthetic-20-normalize-standard" / "tasks.csv").is_file()
    assert not (tmp_path / "synthetic-20").exists()
