"""The LETOR loader against a plain-Python reader of its rules and sklearn.

Two property tests:

* random *valid* files (sparse lines, comments, blank lines, tabs, CRLF,
  optional last newline, gzip) read exactly as
  ``sklearn.datasets.load_svmlight_file(query_id=True)`` reads them (bit for
  bit as ``float()`` reads each value), and again from the binary cache;
* *mutated* valid files (byte flips, deletions, duplications, inserted
  tokens): every outcome is either the parse that the brute-force reader
  ``reference`` gives, and then also sklearn's, or a ``DataError`` naming the
  file and the same 1-based line as ``reference``.

The examples are drawn from a fixed seed under the default ``ci`` profile
(400 mutated files); ``HYPOTHESIS_PROFILE=explore`` draws 10x as many, fresh.
"""

import gzip
import math
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file

from refimpl.data import DEFAULT_LABEL_RANGE, load_letor, make_synthetic_letor
from refimpl.exceptions import DataError

EXPLORE = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "explore"
N_FUZZ = 4000 if EXPLORE else 400
N_VALID = 1000 if EXPLORE else 150

# --------------------------------------------------------------------------
# The rules, written out in plain Python (one line at a time)
# --------------------------------------------------------------------------

MAX_FEATURES = 2**20
LABEL = re.compile(rb"[+-]?[0-9]+(\.0*)?")
NUMBER = re.compile(rb"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
DIGITS = re.compile(rb"[0-9]+")
QID = re.compile(rb"-?[0-9]+")


def reference(data: bytes, label_range=DEFAULT_LABEL_RANGE):
    """``(X, y, qid)``, or the 1-based line of the first error (0: no data)."""
    rows = []
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        tokens = line.split(b"#", 1)[0].split()
        if not tokens:
            continue
        label, *rest = tokens
        if not LABEL.fullmatch(label):
            return lineno
        y = int(label.split(b".")[0])
        if not label_range[0] <= y <= label_range[1]:
            return lineno
        if not rest or not rest[0].startswith(b"qid:"):
            return lineno
        if not QID.fullmatch(rest[0][4:]):
            return lineno
        q = int(rest[0][4:])
        if not -(2**63) <= q < 2**63:
            return lineno
        features, prev = {}, 0
        for token in rest[1:]:
            if b":" not in token:
                return lineno
            index, value = token.split(b":", 1)
            if not DIGITS.fullmatch(index):
                return lineno
            j = int(index)
            if not prev < j <= MAX_FEATURES:
                return lineno
            if not NUMBER.fullmatch(value) or not math.isfinite(float(value)):
                return lineno
            features[j] = float(value)
            prev = j
        rows.append((y, q, features))
    if not rows:
        return 0
    # no feature at all: one zero column, as sklearn
    width = max((max(f) for _, _, f in rows if f), default=1)
    X = np.zeros((len(rows), width))
    for i, (_, _, features) in enumerate(rows):
        for j, v in features.items():
            X[i, j - 1] = v
    y = np.array([r[0] for r in rows], dtype=np.int64)
    qid = np.array([r[1] for r in rows], dtype=np.int64)
    return X, y, qid


def write(path, data: bytes, gz: bool):
    if gz:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


def same_bits(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def assert_as_sklearn(path, X, y, qid):
    Xs, ys, qs = load_svmlight_file(str(path), query_id=True, zero_based=False)
    # equal values; not bits: scipy's toarray() adds each stored value to a
    # zero, which turns a "-0" of the file into +0.0 (float() gives -0.0)
    assert X.shape == Xs.shape
    np.testing.assert_array_equal(X, Xs.toarray())
    np.testing.assert_array_equal(y, ys)
    np.testing.assert_array_equal(qid, qs)


# --------------------------------------------------------------------------
# Valid files: exactly sklearn's parse
# --------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
value_texts = st.one_of(
    finite.map(repr),
    finite.filter(lambda v: abs(v) < 1e12).map(lambda v: f"{v:.6f}"),
    finite.map(lambda v: f"{v:g}"),
    finite.map(lambda v: f"{v:.20e}"),
    st.integers(-(10**6), 10**6).map(str),
    st.sampled_from(["0", "-0", ".5", "5.", "+1.5", "1E3", "0.000", "1e-320"]),
)
comment_texts = st.text(
    st.characters(blacklist_characters="\n", codec="utf-8"), max_size=12
)


@st.composite
def valid_files(draw):
    width = draw(st.integers(1, 7))
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    lines = []
    for _ in range(draw(st.integers(1, 10))):
        for _ in range(draw(st.integers(0, 2))):  # blank and comment-only lines
            lines.append(draw(st.sampled_from([b"", b"  ", b"# note", b"\t#"])))
        label = draw(st.integers(0, 4))
        label_text = draw(st.sampled_from(["{}", "+{}", "{}.0", "{}.", "0{}"]))
        columns = sorted(draw(st.sets(st.integers(1, width), max_size=width)))
        fields = [label_text.format(label), f"qid:{draw(st.integers(-9, 10**15))}"]
        fields += [f"{j}:{draw(value_texts)}" for j in columns]
        sep = draw(st.sampled_from([" ", "\t", "  ", " \t "]))
        line = sep.join(fields)
        if draw(st.booleans()):
            line += draw(st.sampled_from([" #", "#", "\t# "])) + draw(comment_texts)
        lines.append(line.encode("utf-8"))
    data = eol.join(lines) + draw(st.sampled_from([eol, b""]))
    return data, draw(st.booleans())


@settings(
    max_examples=N_VALID, deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
@given(case=valid_files())
def test_valid_files_read_as_sklearn_reads_them(tmp_path_factory, case):
    data, gz = case
    path = write(tmp_path_factory.mktemp("valid") / "f.txt", data, gz)
    X, y, qid = load_letor(path, cache=False)
    assert_as_sklearn(path, X, y, qid)
    want = reference(data)
    assert same_bits(X, want[0])
    # and once more through the binary cache (written, then read)
    for _ in range(2):
        Xc, yc, qc = load_letor(path)
        assert same_bits(Xc, X)
        np.testing.assert_array_equal(yc, y)
        np.testing.assert_array_equal(qc, qid)


# --------------------------------------------------------------------------
# Mutated files: the reference's parse, or an error at the reference's line
# --------------------------------------------------------------------------


def base_files():
    d = make_synthetic_letor(3, docs_per_query=(1, 3), n_informative=2,
                             n_redundant=1, n_noise=1, seed=5)
    dense = "".join(
        f"{label} qid:{q} "
        + " ".join(f"{j}:{v!r}" for j, v in enumerate(row, start=1))
        + f" #docid = D{i}\n"
        for i, (row, label, q) in enumerate(zip(d.X.tolist(), d.y, d.qid))
    )
    return [
        dense.encode(),
        dense.replace("\n", "\r\n").encode(),
        b"# header\n\n2 qid:10 1:3 4:0.25\n0 qid:10\n1 qid:-3 2:1e-3 3:7 #c\n",
        b"1 qid:1 1:0.5 2:12 3:-4.25e2\n0\tqid:1\t3:1\n4 qid:2 2:0.000001",
    ]


BASES = base_files()
INSERTS = [
    b" ", b"\n", b"#", b":", b".", b"-", b"+", b"e", b"_", b"\x00", b"\r",
    b" qid:3", b"qidx:3", b" 1_0", b" 2000000000:1", b" nan", b"1e20 ",
    b" 5:0.5", b" 0:1", b" 3:1e400", b" 9:0.12345678901234567890123",
    b"9007199254740993 ", b"\xff\xfe", b" 2:inf", b"-1 qid:1 1:1\n",
]


@st.composite
def mutated_files(draw):
    data = bytearray(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "delete", "duplicate", "insert"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            byte = draw(st.one_of(st.integers(0, 255), st.sampled_from(b" :.#\n-+e0")))
            data[at] = byte
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 40))]
        else:
            data[at:at] = draw(st.sampled_from(INSERTS))
    return bytes(data), draw(st.booleans())


@settings(
    max_examples=N_FUZZ, deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
@given(case=mutated_files())
def test_mutated_files_parse_exactly_or_fail_at_their_line(tmp_path_factory, case):
    data, gz = case
    path = write(tmp_path_factory.mktemp("fuzz") / "f.txt", data, gz)
    want = reference(data)
    if isinstance(want, int):
        with pytest.raises(DataError) as info:
            load_letor(path, cache=False)
        message = str(info.value)
        if want == 0:
            assert message.startswith(f"{path}: no data lines")
        else:
            assert message.startswith(f"{path}, line {want}: ")
        return
    X, y, qid = load_letor(path, cache=False)
    assert same_bits(X, want[0])
    np.testing.assert_array_equal(y, want[1])
    np.testing.assert_array_equal(qid, want[2])
    assert_as_sklearn(path, X, y, qid)
