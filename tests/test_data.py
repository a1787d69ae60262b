"""LETOR reading/writing, fold assembly, synthetic data and query-level norm."""

import gzip
import hashlib
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from refimpl import data as rdata
from refimpl._validation import group_queries
from refimpl.data import (
    LetorFold,
    RankingData,
    letor_home,
    load_letor,
    load_letor_fold,
    make_synthetic_letor,
    query_level_normalize,
    train_test_split_queries,
    write_letor,
)
from refimpl.exceptions import DataError, DatasetNotFoundError

# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz", ".txt.bz2"])
def test_round_trip_synthetic(tmp_path, suffix):
    d = make_synthetic_letor(20, seed=3)
    comments = [f"docid = D{i:05d} inc = {i % 3} prob = 0.5" for i in range(len(d.y))]
    path = write_letor(tmp_path / f"data{suffix}", d.X, d.y, d.qid, comments)
    if suffix == ".txt.gz":
        with gzip.open(path, "rb") as f:  # really compressed
            assert f.readline().startswith(b"%d qid:1 1:" % d.y[0])
    X, y, qid, back = load_letor(path, return_comments=True)
    np.testing.assert_array_equal(X, d.X)  # exact: values written with repr
    np.testing.assert_array_equal(y, d.y)
    np.testing.assert_array_equal(qid, d.qid)
    assert back == comments
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert y.dtype == np.int64 and qid.dtype == np.int64
    # without comments: three arrays; comments are then empty strings
    write_letor(tmp_path / "plain.txt", d.X, d.y, d.qid)
    out = load_letor(tmp_path / "plain.txt", return_comments=True)
    assert out[3] == [""] * len(d.y)
    assert len(load_letor(tmp_path / "plain.txt")) == 3


@settings(max_examples=30, deadline=None)
@given(
    X=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 5)),
        elements=st.floats(allow_nan=False, allow_infinity=False, width=64),
    ),
    data=st.data(),
)
def test_round_trip_is_exact_for_any_finite_float(tmp_path_factory, X, data):
    n = X.shape[0]
    y = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 4)))
    qid = data.draw(hnp.arrays(np.int64, n, elements=st.integers(-5, 10**12)))
    path = tmp_path_factory.mktemp("rt") / "x.txt"
    write_letor(path, X, y, qid)
    X2, y2, qid2 = load_letor(path)
    assert X2.shape == X.shape  # dense writing keeps trailing zero columns
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(qid2, qid)


def test_write_letor_rejects_bad_input(tmp_path):
    X = np.zeros((2, 3))
    with pytest.raises(DataError, match="y must hold integers"):
        write_letor(tmp_path / "a.txt", X, [0.5, 1], [1, 1])
    with pytest.raises(DataError, match="line break"):
        write_letor(tmp_path / "a.txt", X, [0, 1], [1, 1], ["ok", "a\nb"])
    with pytest.raises(DataError, match="NaN"):
        write_letor(tmp_path / "a.txt", np.full((2, 3), np.nan), [0, 1], [1, 1])


# --------------------------------------------------------------------------
# Malformed files
# --------------------------------------------------------------------------

GOOD = "2 qid:7 1:0.5 2:0.25 #docid = A\n0 qid:7 1:0.125 2:1 #docid = B\n"


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("1 qid:8 1:0.5 garbage 2:0.5", r"line 3: malformed token 'garbage'"),
        ("1 qid:8 1:0.5 2:abc", r"line 3: malformed feature value"),
        ("1 1:0.5 2:0.5 #docid = C", r"line 3: missing 'qid:<int>'"),
        ("1 qid:8.5 1:0.5", r"line 3: malformed query id"),
        ("1 qid:8 1:nan 2:0.5", r"line 3: feature 1 is nan"),
        ("1 qid:8 1:0.5 2:-inf", r"line 3: feature 2 is -inf"),
        ("nan qid:8 1:0.5", r"line 3: label is nan"),
        ("1.5 qid:8 1:0.5", r"line 3: label 1\.5 is not an integer"),
        ("x qid:8 1:0.5", r"line 3: label 'x' is not a number"),
        ("1 qid:8 0:0.5", r"line 3: feature index 0 .*1-based"),
        ("1 qid:8 2:0.5 1:0.5", r"line 3: feature indices not strictly increasing"),
    ],
)
def test_malformed_line_is_located(tmp_path, bad_line, message):
    path = tmp_path / "bad.txt"
    path.write_text(GOOD + bad_line + "\n" + GOOD)
    with pytest.raises(DataError, match=message) as info:
        load_letor(path)
    assert str(path) in str(info.value)
    assert bad_line.split("#")[0].strip()[:20] in str(info.value)  # quoted text


def test_line_numbers_count_comment_and_blank_lines(tmp_path):
    path = tmp_path / "bad.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("# header\n\n" + GOOD + "   \n1 qid:8 1:nan\n")
    with pytest.raises(DataError, match="line 6"):
        load_letor(path)


def test_long_bad_line_is_truncated(tmp_path):
    bad = "1 1:0.5 " + " ".join(f"{j}:0.5" for j in range(2, 400))
    path = tmp_path / "bad.txt"
    path.write_text(GOOD + bad + "\n")
    with pytest.raises(DataError, match="line 3") as info:
        load_letor(path)
    assert "..." in str(info.value)
    assert len(str(info.value)) < len(bad)


def test_feature_index_beyond_n_features(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text(GOOD + "1 qid:8 1:0.5 3:0.5\n")
    with pytest.raises(
        DataError, match=r"line 3: feature index 3 exceeds n_features=2"
    ):
        load_letor(path, n_features=2)
    X, _, _ = load_letor(path, n_features=5)  # more columns: zero padding
    assert X.shape == (3, 5)
    np.testing.assert_array_equal(X[:, 3:], 0.0)
    with pytest.raises(DataError, match="n_features"):
        load_letor(path, n_features=0)


@pytest.mark.parametrize("content", ["", "# only a comment\n\n  \n"])
def test_file_without_data_lines(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_text(content)
    with pytest.raises(DataError, match="no data lines"):
        load_letor(path)


def test_missing_file(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="nothere.txt"):
        load_letor(tmp_path / "nothere.txt")


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "x.txt.gz"
    path.write_bytes(b"not gzip at all\n")
    with pytest.raises(DataError, match="x.txt.gz"):
        load_letor(path)


def test_unordered_qids_load_unchanged(tmp_path):
    qid = np.array([30, 10, 30, 20, 10, 30])
    X = np.arange(12, dtype=float).reshape(6, 2) / 11
    y = np.array([0, 1, 2, 0, 0, 1])
    write_letor(tmp_path / "u.txt", X, y, qid)
    X2, _, qid2 = load_letor(tmp_path / "u.txt")
    np.testing.assert_array_equal(qid2, qid)
    np.testing.assert_array_equal(X2, X)
    g = group_queries(qid2)
    np.testing.assert_array_equal(g.qids, [10, 20, 30])
    np.testing.assert_array_equal(g.order, [1, 4, 3, 0, 2, 5])  # stable
    np.testing.assert_array_equal(g.indptr, [0, 2, 3, 6])
    assert not g.is_contiguous


# --------------------------------------------------------------------------
# Folds
# --------------------------------------------------------------------------

# Fold k: train on partitions k, k+1, k+2, validate on k+3, test on k+4.
FOLD_TABLE = {  # /work/shared/letor/README.md
    1: ([1, 2, 3], 4, 5),
    2: ([2, 3, 4], 5, 1),
    3: ([3, 4, 5], 1, 2),
    4: ([4, 5, 1], 2, 3),
    5: ([5, 1, 2], 3, 4),
}


def partition(s, n_features=4):
    """Partition ``s``: queries 100*s + (0, 1, 2), so qid // 100 recovers s."""
    d = make_synthetic_letor(
        3,
        docs_per_query=(2, 4),
        n_informative=2,
        n_redundant=1,
        n_noise=n_features - 3,
        seed=s,
    )
    return d.X, d.y, d.qid - 1 + 100 * s


def write_split(path, partitions, n_features=4):
    arrays = [partition(s, n_features) for s in partitions]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_letor(path, *(np.concatenate([a[i] for a in arrays]) for i in range(3)))


def sources(split: RankingData):
    return sorted(set((split.qid // 100).tolist()))


@pytest.mark.parametrize(
    ("layout", "names"),
    [
        ("letor4", ("train.txt", "vali.txt", "test.txt")),
        ("letor3", ("trainingset.txt", "validationset.txt", "testset.txt")),
        ("letor4-gz", ("train.txt.gz", "vali.txt.gz", "test.txt.gz")),
    ],
)
def test_fold_directory_layouts(tmp_path, layout, names):
    for k in (1, 2):
        fold_dir = tmp_path / "DS" / f"Fold{k}"
        train, vali, test = FOLD_TABLE[k]
        for name, parts in zip(names, (train, [vali], [test])):
            write_split(fold_dir / name, parts)
    for k in (1, 2):
        fold = load_letor_fold("DS", k, root=tmp_path)
        assert isinstance(fold, LetorFold) and fold.fold == k and fold.name == "DS"
        train, vali, test = FOLD_TABLE[k]
        assert sources(fold.train) == sorted(train)
        assert sources(fold.vali) == [vali]
        assert sources(fold.test) == [test]
        assert fold.paths["train"] == (tmp_path / "DS" / f"Fold{k}" / names[0],)
        X, y, qid = fold.train  # RankingData unpacks
        assert len(X) == len(y) == len(qid)
        np.testing.assert_array_equal(X, partition_concat(train)[0])
        assert fold.n_features == 4


def partition_concat(parts):
    arrays = [partition(s) for s in parts]
    return tuple(np.concatenate([a[i] for a in arrays]) for i in range(3))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_partition_layout_fold_arithmetic(tmp_path, k):
    for s in range(1, 6):  # mix plain and compressed partitions
        write_split(tmp_path / "MQ" / f"S{s}.txt{'.gz' if s % 2 else ''}", [s])
    fold = load_letor_fold("MQ", k, root=tmp_path)
    train, vali, test = FOLD_TABLE[k]
    assert sources(fold.train) == sorted(train)
    assert sources(fold.vali) == [vali]
    assert sources(fold.test) == [test]
    # train keeps the partition order k, k+1, k+2 and the rows of each
    for got, want in zip(fold.train, partition_concat(train)):
        np.testing.assert_array_equal(got, want)
    assert [p.name for p in fold.paths["train"]] == [
        f"S{s}.txt{'.gz' if s % 2 else ''}" for s in train
    ]


def test_fold_feature_count_mismatch(tmp_path):
    for s in range(1, 6):
        write_split(tmp_path / "MQ" / f"S{s}.txt", [s], n_features=5 if s == 4 else 4)
    with pytest.raises(
        DataError, match=r"S4\.txt lists 5 features but .*S1\.txt lists 4"
    ):
        load_letor_fold("MQ", 1, root=tmp_path)
    fold = load_letor_fold("MQ", 1, root=tmp_path, n_features=6)  # explicit: padded
    assert fold.train.X.shape[1] == fold.vali.X.shape[1] == fold.test.X.shape[1] == 6


def test_missing_dataset_lists_searched_paths(tmp_path):
    with pytest.raises(DatasetNotFoundError) as info:
        load_letor_fold("NOPE", 2, root=tmp_path)
    msg = str(info.value)
    base = tmp_path / "NOPE"
    for p in [
        base / "Fold2" / "train.txt",
        base / "Fold2" / "vali.txt.gz",
        base / "Fold2" / "trainingset.txt",
        base / "Fold2" / "testset.txt.gz",
        base / "S1.txt",
        base / "S5.txt.gz",
    ]:
        assert str(p) in msg
    assert "LETOR_HOME" in msg and "root=" in msg and "does not exist" in msg


def test_incomplete_fold_is_not_found(tmp_path):
    write_split(tmp_path / "DS" / "Fold1" / "train.txt", [1])  # no vali, no test
    with pytest.raises(DatasetNotFoundError, match="vali.txt"):
        load_letor_fold("DS", 1, root=tmp_path)


@pytest.mark.parametrize("fold", [0, 6, -1, 1.0, "1", True])
def test_bad_fold_number(tmp_path, fold):
    with pytest.raises(DataError, match="fold must be an integer from 1 to 5"):
        load_letor_fold("MQ", fold, root=tmp_path)


def test_letor_home_env(tmp_path, monkeypatch):
    for s in range(1, 6):
        write_split(tmp_path / "MQ" / f"S{s}.txt", [s])
    monkeypatch.setenv("LETOR_HOME", str(tmp_path))
    assert letor_home() == tmp_path
    assert letor_home(tmp_path / "other") == tmp_path / "other"  # argument wins
    fold = load_letor_fold("MQ", 1)
    assert sources(fold.test) == [5]
    monkeypatch.delenv("LETOR_HOME")
    with pytest.raises(DatasetNotFoundError, match="LETOR_HOME"):
        letor_home()
    with pytest.raises(DatasetNotFoundError, match="LETOR_HOME"):
        load_letor_fold("MQ", 1)


# Fold1 of each real data set (train S1-S3, vali S4, test S5), from the
# partition tables of ../shared/letor/README.md: (lines, queries) per split,
# the number of features, and how the first comment of vali begins
REAL_FOLD1 = {
    "MQ2008": ({"train": (9630, 471), "vali": (2707, 157),
                "test": (2874, 156)}, 46, "docid = GX"),
    "OHSUMED": ({"train": (9219, 63), "vali": (3538, 21),
                 "test": (3383, 22)}, 45, "docid = "),
}


@pytest.mark.parametrize("name", sorted(REAL_FOLD1))
def test_real_fold1(name, letor_root, tmp_path, monkeypatch):
    if not (letor_root / name).is_dir():
        pytest.skip(f"{name} not found under {letor_root}")
    expected, n_features, comment = REAL_FOLD1[name]
    monkeypatch.setenv("REFIMPL_DATA", str(tmp_path))
    fold = load_letor_fold(name, 1, root=letor_root)
    if not rdata._writable_dir(letor_root / name):
        # a read-only copy (the shared one) is left alone: the data home
        assert not (letor_root / name / ".refimpl_cache").exists()
        assert len(list((tmp_path / "parsed").glob("*-S?.txt.gz.float64.json"))) == 5
    again = load_letor_fold(name, 1, root=letor_root)  # from the cache
    for split in ("train", "vali", "test"):
        for a, b in zip(getattr(fold, split), getattr(again, split)):
            np.testing.assert_array_equal(a, b)
    for split, (rows, queries) in expected.items():
        X, y, qid = getattr(fold, split)
        assert X.shape == (rows, n_features)
        assert np.unique(qid).size == queries
        assert set(np.unique(y).tolist()) <= {0, 1, 2}
        assert X.min() >= 0.0 and X.max() <= 1.0
    assert set(np.unique(fold.train.y).tolist()) == {0, 1, 2}
    # query-disjoint splits
    assert not set(fold.train.qid) & set(fold.test.qid)
    assert not set(fold.vali.qid) & set(fold.test.qid)
    # comments of the real files
    _, _, _, comments = load_letor(fold.paths["vali"][0], return_comments=True)
    assert len(comments) == expected["vali"][0]
    assert comments[0].startswith(comment)


# --------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------


def test_synthetic_deterministic():
    a, b = make_synthetic_letor(30, seed=7), make_synthetic_letor(30, seed=7)
    for key in ("X", "y", "qid", "coef", "redundant_of", "thresholds"):
        np.testing.assert_array_equal(a[key], b[key])
    assert a.feature_names == b.feature_names
    c = make_synthetic_letor(30, seed=8)
    assert a.X.shape != c.X.shape or not np.array_equal(a.X, c.X)


def test_synthetic_shapes_and_ranges():
    d = make_synthetic_letor(
        50,
        docs_per_query=(3, 9),
        n_informative=4,
        n_redundant=3,
        n_noise=6,
        n_levels=5,
        seed=1,
    )
    n = len(d.y)
    assert d.X.shape == (n, 13) and d.X.dtype == np.float64
    assert d.X.min() >= 0 and d.X.max() <= 1
    assert d.y.dtype == np.int64 and set(np.unique(d.y).tolist()) == set(range(5))
    assert d.qid.dtype == np.int64
    np.testing.assert_array_equal(np.unique(d.qid), np.arange(1, 51))
    assert np.all(np.diff(d.qid) >= 0)  # contiguous, increasing
    sizes = np.bincount(d.qid)[1:]
    assert sizes.min() >= 3 and sizes.max() <= 9
    np.testing.assert_array_equal(d.informative, [0, 1, 2, 3])
    np.testing.assert_array_equal(d.redundant, [4, 5, 6])
    np.testing.assert_array_equal(d.noise, np.arange(7, 13))
    assert np.all(np.isin(d.redundant_of, d.informative))
    np.testing.assert_array_equal(np.flatnonzero(d.coef), d.informative)
    assert np.all(d.coef[d.informative] > 0)
    assert np.unique(d.coef[d.informative]).size == 4  # varying magnitudes
    assert d.feature_names[0] == "inf0" and d.feature_names[-1] == "noise5"
    assert d.feature_names[4] == f"red0<-inf{d.redundant_of[0]}"
    assert len(d.feature_names) == 13
    fixed = make_synthetic_letor(4, docs_per_query=6)
    assert len(fixed.y) == 24


@pytest.mark.parametrize("n_levels", [2, 3, 5])
def test_synthetic_labels_skewed_to_zero(n_levels):
    d = make_synthetic_letor(200, n_levels=n_levels, seed=2)
    freq = np.bincount(d.y, minlength=n_levels) / len(d.y)
    assert abs(freq[0] - 0.6) < 0.01
    assert np.all(np.diff(freq) < 0)  # each grade rarer than the one below
    if n_levels == 3:
        np.testing.assert_allclose(freq, [0.60, 0.25, 0.15], atol=0.01)


def test_synthetic_signal_structure():
    d = make_synthetic_letor(200, seed=4)

    def corr(j):
        return np.corrcoef(d.X[:, j], d.y)[0, 1]

    inf = np.mean([abs(corr(j)) for j in d.informative])
    noise = np.mean([abs(corr(j)) for j in d.noise])
    assert inf > 0.15 and inf > 5 * noise
    for r, k in zip(d.redundant, d.redundant_of):
        assert np.corrcoef(d.X[:, r], d.X[:, k])[0, 1] > 0.9


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_queries": 0}, "n_queries"),
        ({"docs_per_query": (0, 3)}, "docs_per_query"),
        ({"docs_per_query": (5, 3)}, "docs_per_query"),
        ({"docs_per_query": "many"}, "docs_per_query"),
        ({"n_levels": 1}, "n_levels"),
        ({"n_informative": 0}, "n_informative"),
        ({"n_noise": -1}, "n_noise"),
        ({"label_noise": -0.1}, "label_noise"),
        ({"redundancy_noise": float("nan")}, "redundancy_noise"),
    ],
)
def test_synthetic_rejects_bad_arguments(kwargs, name):
    with pytest.raises(DataError, match=name):
        make_synthetic_letor(**kwargs)


# --------------------------------------------------------------------------
# Query-level normalisation and splitting
# --------------------------------------------------------------------------


def query_level_normalize_loop(X, qid):
    out = np.zeros_like(X, dtype=float)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        for j in range(X.shape[1]):
            col = X[rows, j]
            span = col.max() - col.min()
            out[rows, j] = (col - col.min()) / span if span > 0 else 0.0
    return out


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_query_level_normalize_matches_loop(data):
    n = data.draw(st.integers(1, 25))
    d = data.draw(st.integers(1, 4))
    X = data.draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-1e6, 1e6)))
    qid = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 5)))
    got = query_level_normalize(X, qid)
    np.testing.assert_allclose(
        got, query_level_normalize_loop(X, qid), rtol=1e-12, atol=0
    )
    assert got.min() >= 0 and got.max() <= 1
    assert got is not X


def test_query_level_normalize_cases():
    X = np.array([[1.0, 5.0], [3.0, 5.0], [9.0, 7.0], [2.0, 5.0], [4.0, 1.0]])
    qid = np.array([2, 1, 2, 2, 9])  # unordered, one single-document query
    X0 = X.copy()
    got = query_level_normalize(X, qid)
    want = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.125, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(X, X0)  # input untouched
    X[0, 0] = np.nan
    with pytest.raises(DataError, match="NaN"):
        query_level_normalize(X, qid)


def test_train_test_split_queries():
    d = make_synthetic_letor(40, seed=5)
    perm = np.random.default_rng(0).permutation(len(d.y))  # scattered queries
    X, y, qid = d.X[perm], d.y[perm], d.qid[perm]
    train, test = train_test_split_queries(X, y, qid, test_size=0.25, seed=1)
    assert isinstance(train, RankingData)
    assert not set(train.qid) & set(test.qid)
    assert test.n_queries == 10 and train.n_queries == 30
    assert len(train.y) + len(test.y) == len(y)
    # rows keep their order and their (X, y) content
    in_test = np.isin(qid, test.qid)
    np.testing.assert_array_equal(test.X, X[in_test])
    np.testing.assert_array_equal(train.y, y[~in_test])
    again = train_test_split_queries(X, y, qid, test_size=0.25, seed=1)
    np.testing.assert_array_equal(again[1].qid, test.qid)
    assert train_test_split_queries(X, y, qid, test_size=3)[1].n_queries == 3
    with pytest.raises(DataError, match="test_size"):
        train_test_split_queries(X, y, qid, test_size=1.0)
    with pytest.raises(DataError, match="test_size"):
        train_test_split_queries(X[:5], y[:5], np.ones(5), test_size=0.5)


def test_public_docstrings_link_the_book():
    for name in rdata.__all__:
        doc = getattr(rdata, name).__doc__
        assert "Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics" in doc


# --------------------------------------------------------------------------
# Strict reading (issue 14, item 3): each case was accepted or crashed before
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        # 1e20 was cast to -9223372036854775808 with only a NumPy warning
        ("1e20 qid:8 1:0.5", r"label '1e20' is not written as an integer"),
        # above 2**53 the label was rounded
        ("9007199254740993 qid:8 1:0.5", r"label 9007199254740993 is outside"),
        ("-1 qid:8 1:0.5", r"label -1 is outside the accepted range \[0, "),
        # Python-only literal syntax was read as 10
        ("1_0 qid:8 1:0.5", r"label '1_0' is not a number"),
        ("1 qid:1_0 1:0.5", r"malformed query id 'qid:1_0'"),
        ("1 qid:8 1_0:0.5", r"malformed feature index in '1_0:0.5'"),
        ("1 qid:8 1:1_0", r"malformed feature value in '1:1_0'"),
        ("1 qid:+8 1:0.5", r"malformed query id 'qid:\+8'"),
        ("1 qid:8 +1:0.5", r"malformed feature index in '\+1:0.5'"),
        ("1 qid:8 1:0x10", r"malformed feature value"),
        # a malformed key was taken as the query id
        ("1 qidx:3 1:0.5", r"malformed query id 'qidx:3'"),
        ("1 qid 1:0.5", r"malformed query id 'qid'"),
        ("1 qid:99999999999999999999 1:0.5", r"malformed query id"),
        # asked for 29.8 GiB and failed with a MemoryError naming nothing
        ("1 qid:8 1:0.5 2000000000:1", r"feature index 2000000000 is too large"),
        ("1 qid:8 1:0.5 123456789012345678901234:1", r"feature index .* too large"),
        ("1 qid:8 1:1e999", r"feature 1 is inf"),
        ("1 qid:8 1:0.5 3:+nan", r"feature 3 is nan"),
        ("1 qid:8 1:0.5 1:0.5", r"feature indices not strictly increasing"),
        ("1 qid:8 1:", r"malformed feature value in '1:'"),
        ("1 qid:8 :0.5", r"malformed feature index in ':0.5'"),
    ],
)
def test_strict_tokens_are_errors_with_file_and_line(tmp_path, bad_line, message):
    path = tmp_path / "bad.txt"
    path.write_text(GOOD + bad_line + "\n" + GOOD)
    with pytest.raises(DataError, match=message) as info:
        load_letor(path, cache=False)
    assert f"{path}, line 3: " in str(info.value)
    assert repr(bad_line) in str(info.value)  # the line is quoted


@pytest.mark.parametrize(
    ("line", "label", "value"),
    [
        ("+2 qid:8 1:+0.5", 2, 0.5),  # SVMlight targets may carry '+1'
        ("2.0 qid:8 1:5.", 2, 5.0),  # an integer with a zero fraction
        ("2. qid:8 1:.5e1", 2, 5.0),
        ("0002 qid:8 1:-0", 2, -0.0),
        ("-0 qid:8 1:1E-2", 0, 0.01),
    ],
)
def test_accepted_spellings(tmp_path, line, label, value):
    path = tmp_path / "ok.txt"
    path.write_text(line + "\n")
    X, y, qid = load_letor(path, cache=False)
    assert y.tolist() == [label] and qid.tolist() == [8]
    assert X[0, 0] == value and np.signbit(X[0, 0]) == np.signbit(value)


def test_label_range_parameter(tmp_path):
    path = tmp_path / "svm.txt"
    path.write_text("-1 qid:1 1:0.5\n+1 qid:1 1:0.25\n")
    with pytest.raises(DataError, match="line 1: label -1 is outside"):
        load_letor(path)
    _, y, _ = load_letor(path, label_range=(-1, 1))
    assert y.tolist() == [-1, 1]
    with pytest.raises(DataError, match=r"line 2: label \+1 is outside"):
        load_letor(path, label_range=(-1, 0))  # a cached parse is re-checked
    for bad in [(1, 0), (0, 2**60), (0.0, 1), "01", None]:
        with pytest.raises(DataError, match="label_range"):
            load_letor(path, label_range=bad)


def test_huge_index_is_refused_before_allocating(tmp_path, monkeypatch):
    path = tmp_path / "wide.txt"
    path.write_text(GOOD * 50 + "1 qid:8 1:0.5 3000:1\n")
    X, _, _ = load_letor(path, cache=False)  # 3000 features: fine
    assert X.shape == (101, 3000)
    # with (pretend) 1 MiB of memory the same index cannot be met densely
    monkeypatch.setattr(rdata, "_physical_memory", lambda: 2**20)
    with pytest.raises(DataError, match=r"line 101: feature index 3000 would make"):
        load_letor(path, cache=False)
    with pytest.raises(DataError, match=r"n_features=3000 would make"):
        load_letor(path, n_features=3000, cache=False)


def test_index_above_sanity_bound_needs_n_features(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("1 qid:1 1048577:0.5\n")
    with pytest.raises(DataError, match="line 1: feature index 1048577 is too large"):
        load_letor(path, cache=False)
    X, _, _ = load_letor(path, n_features=1048577, cache=False)
    assert X.shape == (1, 1048577) and X[0, -1] == 0.5


def test_lines_may_end_with_crlf_and_lack_the_last_newline(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"2 qid:7 1:0.5\r\n\r\n\t0 qid:7\x0b2:1 # c \r\n1 qid:9 1:3")
    X, y, qid, comments = load_letor(path, return_comments=True, cache=False)
    np.testing.assert_array_equal(X, [[0.5, 0.0], [0.0, 1.0], [3.0, 0.0]])
    assert y.tolist() == [2, 0, 1] and qid.tolist() == [7, 7, 9]
    assert comments == ["", "c", ""]


# --------------------------------------------------------------------------
# Numbers: the byte parser rounds exactly as float() does
# --------------------------------------------------------------------------


def _parse_values(tokens: list[bytes]) -> np.ndarray:
    """Values of ``1:t`` lines read by the loader's parser, fast path or not."""
    text = b"".join(b"0 qid:1 1:" + t + b"\n" for t in tokens)
    buf = np.frombuffer(text, dtype=np.uint8)
    X = rdata._parse(Path("t.txt"), buf, None, (0, 1), False)[0]
    return X[:, 0]


def _float_texts():
    finite = st.floats(allow_nan=False, allow_infinity=False)
    digits = st.text("0123456789", min_size=1, max_size=30)
    return st.one_of(
        finite.map(repr),
        st.tuples(finite, st.integers(0, 25)).map(lambda t: f"{t[0]:.{t[1]}e}"),
        st.tuples(finite.filter(lambda v: abs(v) < 1e30), st.integers(0, 30)).map(
            lambda t: f"{t[0]:.{t[1]}f}"
        ),
        st.tuples(
            st.sampled_from(["", "-", "+"]), digits, st.sampled_from(["", "."]),
            st.text("0123456789", max_size=25),
            st.sampled_from(["", "e", "E-", "e+"]), st.integers(0, 400),
        ).map(lambda t: t[0] + t[1] + t[2] + t[3] + (t[4] + str(t[5]) if t[4] else "")),
        st.integers(-(10**25), 10**25).map(str),
        st.tuples(st.integers(1, 2**53), st.integers(-30, 30)).map(
            lambda t: f"{t[0]}e{t[1]}"
        ),
    )


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_float_texts(), min_size=1, max_size=40))
def test_values_are_read_as_float_reads_them(texts):
    want = np.array([float(t) for t in texts])
    if not np.all(np.isfinite(want)):
        bad = int(np.flatnonzero(~np.isfinite(want))[0])
        with pytest.raises(DataError, match=f"line {bad + 1}: feature 1 is -?inf"):
            _parse_values([t.encode() for t in texts])
        return
    got = _parse_values([t.encode() for t in texts])
    # bit for bit, so -0.0 and 0.0 differ
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize(
    "text",
    [
        "9007199254740993",  # 2**53 + 1: a tie, rounds to even
        "9007199254740992.5",
        "0.1", "1e22", "1e23", "123456789012345678e-22", "4.9e-324", "2.4e-324",
        "1.7976931348623157e308", "1.7976931348623158e308", "2.2250738585072011e-308",
        "0.000000000000000000000000000000000000001", "1" + "0" * 40,
        "00000000000000000000000000001.5", "0e99999999999999999999", "-0.0e-5",
    ],
)
def test_hard_values(text):
    got = _parse_values([text.encode()])
    want = np.array([float(text)])
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


@settings(max_examples=300, deadline=None)
@given(text=st.text("0123456789.eE+-_xnai", min_size=1, max_size=12))
def test_fast_path_against_float(text):
    """The kernel's own verdict: an exact value, or deferred only if well-formed."""
    from refimpl.kernels import svmlight as sv

    raw = text.encode()
    buf = np.frombuffer(raw + b" 1", dtype=np.uint8)  # the token ends at b" "
    status, value, end = sv.parse_float(buf, 0, buf.size, sv.POW10)
    well_formed = rdata._DECIMAL.fullmatch(raw) is not None
    assert (status != 2) == well_formed
    if status == 0:
        assert end == len(raw)
        want = np.float64(float(raw))
        assert np.float64(value).view(np.int64) == want.view(np.int64)


# --------------------------------------------------------------------------
# The binary cache of parsed files
# --------------------------------------------------------------------------


def _no_parsing(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the text was parsed again")

    monkeypatch.setattr(rdata, "_parse", fail)


def _write_dataset(path, seed=0, n_queries=4):
    d = make_synthetic_letor(n_queries, docs_per_query=(2, 5), seed=seed)
    comments = [f"docid = D{i}" for i in range(len(d.y))]
    write_letor(path, d.X, d.y, d.qid, comments)
    return d, comments


def _cache_files(folder):
    return sorted(p.name for p in (folder / ".refimpl_cache").iterdir())


def _entry(path, dtype="float64"):
    """The name of a file's cache entry: a hash of its resolved path, its
    name and the dtype."""
    real = Path(path).resolve()
    return f"{hashlib.sha256(str(real).encode()).hexdigest()[:16]}-{real.name}.{dtype}"


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_cache_is_used_on_the_second_load(tmp_path, monkeypatch, suffix):
    path = tmp_path / f"d{suffix}"
    d, comments = _write_dataset(path)
    first = load_letor(path, return_comments=True)
    assert _cache_files(tmp_path) == [
        f"{_entry(path)}.{k}" for k in
        ("X.npy", "comments.npy", "json", "qid.npy", "y.npy")
    ]
    _no_parsing(monkeypatch)
    X, y, qid, back = load_letor(path, return_comments=True)
    np.testing.assert_array_equal(X, d.X)
    np.testing.assert_array_equal(y, d.y)
    np.testing.assert_array_equal(qid, d.qid)
    assert back == comments == first[3]
    assert type(X) is np.ndarray and X.flags.c_contiguous and X.flags.writeable
    X[0, 0] = 99.0  # copy-on-write: the cache file is not changed
    assert load_letor(path)[0][0, 0] == d.X[0, 0]
    wide = load_letor(path, n_features=40)[0]  # padded from the cache
    assert wide.shape == (len(d.y), 40) and np.all(wide[:, 30:] == 0)


def test_cache_follows_the_data(tmp_path, monkeypatch):
    path = tmp_path / "d.txt"
    _write_dataset(path, seed=0)
    load_letor(path)
    # same size, same mtime, other content: the mtime is recent, so the
    # entry is re-hashed (a clock tick may hide a rewrite)
    st = path.stat()
    text = path.read_bytes()
    swapped = text.replace(b"qid:1 ", b"qid:7 ", 1)
    assert len(swapped) == len(text) and swapped != text
    path.write_bytes(swapped)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert load_letor(path)[2][0] == 7
    # another data set
    d2, _ = _write_dataset(path, seed=1, n_queries=6)
    np.testing.assert_array_equal(load_letor(path)[0], d2.X)
    # an old file, touched without a change: the hash confirms the entry
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**11))
    load_letor(path)
    os.utime(path)
    _no_parsing(monkeypatch)
    np.testing.assert_array_equal(load_letor(path)[0], d2.X)


def test_cache_of_a_linked_file_goes_beside_the_link(tmp_path, monkeypatch):
    """Issue 24.1: nothing is written beside a link's target, outside the
    folder the caller named; the entry still follows the target's content."""
    outside = tmp_path / "outside"
    outside.mkdir()
    d, _ = _write_dataset(outside / "d.txt")
    named = tmp_path / "data"
    named.mkdir()
    (named / "d.txt").symlink_to(outside / "d.txt")
    np.testing.assert_array_equal(load_letor(named / "d.txt")[0], d.X)
    assert sorted(p.name for p in outside.iterdir()) == ["d.txt"]
    assert f"{_entry(outside / 'd.txt')}.json" in _cache_files(named)
    _no_parsing(monkeypatch)
    np.testing.assert_array_equal(load_letor(named / "d.txt")[0], d.X)


def test_cache_sees_a_rewrite_that_restores_size_and_mtime(tmp_path):
    """An old file rewritten in place, its mtime put back: the ctime betrays it."""
    path = tmp_path / "d.txt"
    _write_dataset(path, seed=0)
    st = path.stat()
    old = (st.st_atime_ns, st.st_mtime_ns - 10**11)  # far from the racy window
    os.utime(path, ns=old)
    assert load_letor(path)[2][0] == 1  # cached, and trusted on its mtime
    text = path.read_bytes()
    path.write_bytes(text.replace(b"qid:1 ", b"qid:7 ", 1))
    os.utime(path, ns=old)
    assert path.stat().st_size == st.st_size
    assert load_letor(path)[2][0] == 7


@pytest.mark.parametrize("damage", ["flip", "truncate", "json", "shape", "delete"])
def test_corrupt_cache_is_ignored_and_rewritten(tmp_path, damage):
    path = tmp_path / "d.txt"
    d, _ = _write_dataset(path)
    load_letor(path)
    cache = tmp_path / ".refimpl_cache"
    x_file = cache / f"{_entry(path)}.X.npy"
    raw = x_file.read_bytes()
    if damage == "flip":
        x_file.write_bytes(raw[:-5] + bytes([raw[-5] ^ 1]) + raw[-4:])
    elif damage == "truncate":
        x_file.write_bytes(raw[: len(raw) // 2])
    elif damage == "json":
        (cache / f"{_entry(path)}.json").write_text("{not json")
    elif damage == "shape":
        np.save(x_file, d.X[:, :-1])
    else:
        x_file.unlink()
    with pytest.warns(RuntimeWarning, match="corrupt or inconsistent cache"):
        X = load_letor(path)[0]
    np.testing.assert_array_equal(X, d.X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten: clean again
        np.testing.assert_array_equal(load_letor(path)[0], d.X)


def test_cache_goes_to_data_home_when_the_folder_is_not_writable(
    tmp_path, monkeypatch
):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = data_dir / "d.txt"
    d, _ = _write_dataset(path)
    # a file where the cache folder would go: the folder cannot be created
    # (a read-only folder would not do: the tests may run as root)
    (data_dir / ".refimpl_cache").write_text("in the way")
    monkeypatch.setenv("REFIMPL_DATA", str(tmp_path / "home"))
    load_letor(path)
    stored = list((tmp_path / "home" / "parsed").glob("*-d.txt.float64.json"))
    assert len(stored) == 1
    _no_parsing(monkeypatch)
    np.testing.assert_array_equal(load_letor(path)[0], d.X)


def test_no_cache_when_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("REFIMPL_DATA", str(tmp_path / "home"))
    for s in range(1, 6):
        write_split(tmp_path / "MQ" / f"S{s}.txt", [s])
    load_letor(tmp_path / "MQ" / "S1.txt", cache=False)
    load_letor_fold("MQ", 1, root=tmp_path, cache=False)
    assert sorted(p.name for p in (tmp_path / "MQ").iterdir()) == [
        f"S{s}.txt" for s in range(1, 6)
    ]
    assert not (tmp_path / "home").exists()


def test_float32_storage(tmp_path, monkeypatch):
    path = tmp_path / "d.txt"
    d, _ = _write_dataset(path)
    X64 = load_letor(path)[0]
    X32, y32, _ = load_letor(path, dtype=np.float32)
    np.testing.assert_array_equal(y32, d.y)
    assert X32.dtype == np.float32 and X32.flags.c_contiguous
    np.testing.assert_array_equal(X32, d.X.astype(np.float32))  # rounded once
    assert f"{_entry(path, 'float32')}.X.npy" in _cache_files(tmp_path)
    fold_dir = tmp_path / "DS" / "Fold1"
    for name in ("train.txt", "vali.txt", "test.txt"):
        write_split(fold_dir / name, [1])
    fold = load_letor_fold("DS", 1, root=tmp_path, dtype=np.float32)
    assert fold.train.X.dtype == np.float32
    with pytest.raises(DataError, match="dtype must be float64 or float32"):
        load_letor(path, dtype=np.int64)
    _no_parsing(monkeypatch)
    assert load_letor(path, dtype="float32")[0].dtype == np.float32
    assert load_letor(path)[0].dtype == np.float64
    np.testing.assert_array_equal(load_letor(path)[0], X64)


def test_solvers_agree_on_float32_data(tmp_path):
    """float32 storage changes the data by its rounding only: a RankSVM fit
    on the rounded values (upcast by check_X) matches the float64 fit on the
    same rounded values, and lies within that rounding of the original fit."""
    from refimpl.estimators import RankSVM

    d = make_synthetic_letor(30, n_levels=3, seed=11)
    path = write_letor(tmp_path / "d.txt", d.X, d.y, d.qid)
    X32, y, qid = load_letor(path, dtype=np.float32)
    X64 = load_letor(path)[0]
    kw = {"C": 1.0, "tol": 1e-10, "max_iter": 200}
    w32 = RankSVM(**kw).fit(X32, y, qid).coef_
    w_rounded = RankSVM(**kw).fit(X32.astype(np.float64), y, qid).coef_
    w64 = RankSVM(**kw).fit(X64, y, qid).coef_
    np.testing.assert_array_equal(w32, w_rounded)  # nothing silent in between
    np.testing.assert_allclose(w32, w64, rtol=1e-5, atol=1e-5 * np.abs(w64).max())


def test_cached_parse_keeps_every_check(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(GOOD + "1 qid:8 1:0.5 3:0.5\n")
    assert load_letor(path)[0].shape == (3, 3)  # cached at width 3
    with pytest.raises(DataError, match="line 3: feature index 3 exceeds n_features=2"):
        load_letor(path, n_features=2)
    with pytest.raises(DataError, match="line 1: label 2 is outside"):
        load_letor(path, label_range=(0, 1))


def test_long_lines_and_many_slow_values(tmp_path):
    """Lines longer than the parser's first buffers, values off its fast path."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4, 700)) * 10.0 ** rng.integers(-30, 30, (4, 700))
    X[:, ::7] = 0.0
    y = np.array([0, 1, 2, 3])
    path = write_letor(tmp_path / "long.txt", X, y, np.array([1, 1, 2, 2]))
    X2, y2, _ = load_letor(path, cache=False)
    np.testing.assert_array_equal(X2.view(np.int64), X.view(np.int64))
    np.testing.assert_array_equal(y2, y)


def test_read_only_data_folder_is_left_alone(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = data_dir / "d.txt"
    d, _ = _write_dataset(path)
    monkeypatch.setenv("REFIMPL_DATA", str(tmp_path / "home"))
    data_dir.chmod(0o555)  # read-only by its mode, even when running as root
    try:
        np.testing.assert_array_equal(load_letor(path)[0], d.X)
        assert sorted(p.name for p in data_dir.iterdir()) == ["d.txt"]
        assert len(list((tmp_path / "home" / "parsed").glob("*.json"))) == 1
    finally:
        data_dir.chmod(0o755)


def test_cache_gives_what_a_fresh_parse_gives(tmp_path, monkeypatch):
    path = tmp_path / "nofeat.txt"
    path.write_text("0 qid:1\n1 qid:1 # no features at all\n")
    assert load_letor(path, n_features=3)[0].shape == (2, 3)
    fresh = load_letor(path, cache=False)[0]
    assert fresh.shape == (2, 1)  # sklearn's width for a file without features
    assert load_letor(path)[0].shape == (2, 1)  # from the entry written above
    # an error names the path as given, not the resolved one
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.txt").write_text("1 qid:1 1:x\n")
    with pytest.raises(DataError, match=r"^bad\.txt, line 1: malformed feature"):
        load_letor("bad.txt")
