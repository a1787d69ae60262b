"""Ranking data: LETOR files, the synthetic default data set, query-level norm.

Ranking data is a triple ``(X, y, qid)``: a dense float64 feature matrix, the
integer relevance labels and the integer query ids, one row per
query–document pair.  This module reads and writes the LETOR / SVMlight text
format (``label qid:N 1:v 2:v ... #comment``), assembles the five standard
LETOR folds, generates a seeded LETOR-like synthetic data set (the default
data of the book, so nothing needs downloading), and implements LETOR's
*QueryLevelNorm*, a standardisation fitted on a training split (the
``normalize`` option of :func:`load_letor_fold` and of the runner) and a
query-disjoint train/test split.

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import math
import numbers
import os
import re
import stat
import time
import warnings
import zlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from . import _io
from . import _jsonfile as js
from ._layout import find_file, fold_files, fold_layouts
from ._validation import check_labels, check_nonnegative, check_X, group_queries
from .exceptions import DataError, DatasetNotFoundError
from .kernels import normalize as _norm
from .kernels import svmlight as _sv

__all__ = [
    "LetorFold",
    "RankingData",
    "Standardizer",
    "check_normalize",
    "estimate_fold_load",
    "LoadEstimate",
    "letor_home",
    "load_letor",
    "load_letor_fold",
    "make_synthetic_letor",
    "normalize_fold",
    "query_level_normalize",
    "train_test_split_queries",
    "write_letor",
]

_HOW_TO_PROVIDE = (
    "To use real LETOR data, download LETOR 4.0 (MQ2007, MQ2008), LETOR 3.0 or "
    "MSLR-WEB10K/30K from Microsoft Research "
    "(https://www.microsoft.com/en-us/research/project/letor-learning-rank-"
    "information-retrieval/), unpack it so that <root>/<name>/Fold1/train.txt "
    "(or <root>/<name>/S1.txt) exists, then set the environment variable "
    "LETOR_HOME=<root> or pass root=<root>.  Without real data, use "
    "make_synthetic_letor()."
)

# Bytes of a line quoted in an error message.
_MAX_QUOTE = 80
# Sanity bound on feature indices without n_features (LETOR sets have at most
# 700 features): a stray "2000000000:1" is an error, not a 30 GiB allocation.
_MAX_FEATURES = 2**20
_MAX_EXACT_INT = 2**53
#: Labels accepted by default by :func:`load_letor` (inclusive).
DEFAULT_LABEL_RANGE = (0, 2**31 - 1)
# Numbers of the format: decimal with optional exponent (no "1_0", no hex);
# and the non-finite spellings float() takes, reported as non-finite.
_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NONFINITE = re.compile(rb"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
# Folder beside a data file holding its parsed copy.
_CACHE_SUBDIR = ".refimpl_cache"


class RankingData(NamedTuple):
    """Ranking data ``(X, y, qid)``; unpacks as ``X, y, qid = data``.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Attributes
    ----------
    X : ndarray of float64, shape (n_samples, n_features)
        Features, one row per query–document pair.
    y : ndarray of int64, shape (n_samples,)
        Graded relevance labels.
    qid : ndarray of int64, shape (n_samples,)
        Query ids.
    """

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of distinct query ids."""
        return int(np.unique(self.qid).size)


@dataclass(frozen=True)
class LetorFold:
    """One fold of a LETOR data set: train, validation and test splits.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Attributes
    ----------
    name : str
        Data set name, e.g. ``"MQ2008"``.
    fold : int
        Fold number, 1 to 5.
    train, vali, test : RankingData
        The three splits; they share one number of features.
    paths : dict of str to tuple of Path
        The files each split was read from (three partitions for ``"train"``
        when the fold was assembled from ``S1.txt … S5.txt``).
    normalize : {None, "query", "standard"}
        The feature normalisation applied to the three splits
        (:func:`normalize_fold`); None: the features as in the files.
    scaler : Standardizer or None
        With ``normalize="standard"``, the statistics of the training split
        that were applied to all three.
    """

    name: str
    fold: int
    train: RankingData
    vali: RankingData
    test: RankingData
    paths: dict = field(default_factory=dict)
    normalize: str | None = None
    scaler: Standardizer | None = field(default=None, repr=False)

    @property
    def n_features(self) -> int:
        """Number of features, shared by the three splits."""
        return int(self.train.X.shape[1])


# --------------------------------------------------------------------------
# Reading LETOR files
# --------------------------------------------------------------------------


def _quote(line: bytes) -> str:
    text = line.rstrip(b"\r\n").decode("utf-8", errors="replace")
    if len(text) > _MAX_QUOTE:
        text = text[:_MAX_QUOTE] + "..."
    return repr(text)


def _data_cache_dir() -> Path:
    """``refimpl.datasets.data_home()``: ``$REFIMPL_DATA``, else the user cache."""
    from .datasets import data_home  # an optional module, imported when needed

    return data_home()


def _read_bytes(path: Path):
    """The file's (decompressed) bytes, its bytes as stored, and its version.

    The file is read into memory with ``read()`` (:func:`refimpl._io.read_regular`),
    not memory-mapped: a mapped file truncated by another process kills the
    reader with ``SIGBUS``, while a read sees a short file, which is an error
    (``refimpl._io.FileChangedError``), as is any other change during
    the read.  ``.gz`` and ``.bz2`` files are decompressed from that copy,
    their checksums verified.

    Returns
    -------
    buf : read-only ndarray of uint8
        What the parser reads (read-only like every buffer given to it: one
        compiled kernel).
    raw : bytes-like
        The file's bytes (``buf``'s memory for a plain file), for its hash.
    st : os.stat_result
        The version of the file these bytes are.
    """
    raw, st = _io.read_regular(path)
    suffix = path.suffix.lower()
    data = raw
    if suffix in (".gz", ".bz2"):
        try:
            data = gzip.decompress(raw) if suffix == ".gz" else bz2.decompress(raw)
        except (gzip.BadGzipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            raise DataError(f"{path}: cannot decompress the file ({exc})") from exc
    buf = np.frombuffer(data, dtype=np.uint8)
    buf.flags.writeable = False
    return buf, raw, st


def _count_newlines(buf: np.ndarray) -> int:
    step = 1 << 24  # chunks keep the boolean temporary small
    return sum(
        int(np.count_nonzero(buf[k : k + step] == 10))
        for k in range(0, buf.size, step)
    )


def _line_text(buf: np.ndarray, start: int) -> bytes:
    chunk = bytes(buf[start : start + 4 * _MAX_QUOTE])
    return chunk.split(b"\n", 1)[0]


def _strict_float(token: bytes):
    """``float(token)`` for the numbers the format allows, else None."""
    if _DECIMAL.fullmatch(token) or _NONFINITE.fullmatch(token):
        return float(token)
    return None


def _label_error(token: bytes, shown: str) -> str:
    value = _strict_float(token)
    if value is None:
        return f"label {shown!r} is not a number"
    if not math.isfinite(value):
        return f"label is {value} (labels must be finite)"
    if value != math.floor(value):
        return f"label {value!r} is not an integer (LETOR labels are integers)"
    return (
        f"label {shown!r} is not written as an integer (labels are integer "
        "literals such as '2'; exponents and fractional digits are refused "
        "before any conversion)"
    )


def _kernel_error(path, buf, err, n_features, label_range, rows_cap) -> DataError:
    code, line_no, line_start, ts, te, extra = (int(v) for v in err)
    token = bytes(buf[ts:te])
    shown = token.decode("utf-8", errors="replace")
    if code == _sv.E_LABEL:
        reason = _label_error(token, shown)
    elif code == _sv.E_LABEL_RANGE:
        reason = (
            f"label {shown} is outside the accepted range [{label_range[0]}, "
            f"{label_range[1]}] (parameter label_range)"
        )
    elif code == _sv.E_NO_QID:
        reason = "missing 'qid:<int>' after the label"
    elif code == _sv.E_QID:
        reason = f"malformed query id {shown!r}"
    elif code == _sv.E_TOKEN:
        reason = f"malformed token {shown!r} (expected 'index:value')"
    elif code == _sv.E_INDEX:
        reason = f"malformed feature index in {shown!r}"
    elif code == _sv.E_INDEX_ZERO:
        reason = f"feature index 0 in {shown!r}: LETOR/SVMlight indices are 1-based"
    elif code == _sv.E_INDEX_BIG:
        reason = (
            f"feature index {shown.split(':', 1)[0]} is too large (more than "
            f"{extra:,} features; pass n_features= to read wider data)"
        )
    elif code == _sv.E_INDEX_ORDER:
        reason = f"feature indices not strictly increasing at {shown!r}"
    elif code == _sv.E_INDEX_NFEAT:
        reason = f"feature index {shown.split(':', 1)[0]} exceeds n_features={extra}"
    elif code == _sv.E_VALUE:
        value = token.split(b":", 1)[1]
        if _NONFINITE.fullmatch(value):
            reason = f"feature {extra} is {float(value)} (features must be finite)"
        else:
            reason = f"malformed feature value in {shown!r}"
    elif code == _sv.E_TOO_WIDE:
        gib = rows_cap * extra * 8 / 2**30
        reason = (
            f"feature index {extra} would make X a dense {rows_cap:,} x {extra:,} "
            f"float64 matrix of {gib:,.1f} GiB, more than this machine's memory"
        )
    else:  # pragma: no cover - a kernel/wrapper mismatch
        reason = f"parser error code {code}"
    text = _quote(_line_text(buf, line_start))
    return DataError(f"{path}, line {line_no}: {reason}: {text}")


def _parse(path: Path, buf: np.ndarray, n_features, label_range, want_comments):
    """Run the kernel on ``buf``; arrays at natural width, or a DataError."""
    rows_cap = _count_newlines(buf) + 1
    max_elements = _physical_memory() // 8
    if n_features is not None and rows_cap * n_features > max_elements:
        raise DataError(
            f"{path}: n_features={n_features} would make X a dense {rows_cap:,} x "
            f"{n_features:,} float64 matrix, more than this machine's memory"
        )
    if n_features is not None:
        cap0 = n_features
    else:
        cap0 = int(_sv.first_line_width(buf))
        if cap0 > _MAX_FEATURES or rows_cap * cap0 > max_elements:
            cap0 = 0  # the parser reports the line
    X0 = _sv.empty_float64(rows_cap * cap0)
    err, flat, n_rows, width, labels, qids, comments, slow = _sv.parse_svmlight(
        buf,
        rows_cap,
        -1 if n_features is None else n_features,
        _MAX_FEATURES if n_features is None else n_features,
        label_range[0],
        label_range[1],
        want_comments,
        max_elements,
        _sv.POW10,
        X0,
        cap0,
    )
    stride = width if n_features is None else n_features
    # Tokens outside the fast path, all before any error the kernel met.
    values = np.empty(len(slow))
    for k, (s, e, _row, col, line_no, line_start) in enumerate(slow.tolist()):
        v = float(bytes(buf[s:e]))
        if not math.isfinite(v):
            text = _quote(_line_text(buf, line_start))
            raise DataError(
                f"{path}, line {line_no}: feature {col + 1} is {v} "
                f"(features must be finite): {text}"
            )
        values[k] = v
    if err[0] != _sv.OK:
        raise _kernel_error(path, buf, err, n_features, label_range, rows_cap)
    if n_rows == 0:
        raise DataError(
            f"{path}: no data lines (the file is empty or has only comments "
            "and blank lines)"
        )
    if stride == 0:  # no line has a feature: one zero column, as sklearn
        stride = 1
        flat = np.zeros(n_rows)
    width = max(width, 1)
    X = flat[: n_rows * stride].reshape(n_rows, stride)
    if len(slow):
        X[slow[:, 2], slow[:, 3]] = values
    if X.size < 0.9 * flat.size:  # many blank lines: do not keep the slack
        X = X.copy()
    comments = comments[:n_rows] if want_comments else None
    return X, labels[:n_rows].copy(), qids[:n_rows].copy(), comments, width


def _comment_list(buf: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = memoryview(buf)
    return [
        str(raw[s:e], "utf-8", errors="replace").strip()
        for s, e in offsets.tolist()
    ]


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 2**40


# --------------------------------------------------------------------------
# The binary cache of parsed files
# --------------------------------------------------------------------------

_CACHE_FORMAT = "refimpl-letor-cache"
# Bump when the parser's result for some file changes (2: a value beyond
# float32's range is an error, where version 1 stored it as inf).
_CACHE_VERSION = 2
_CACHE_ARRAYS = ("X", "y", "qid", "comments")
# A file whose mtime is within refimpl._io.RACY_NS of the moment its hash
# was taken may be rewritten within the clock's granularity without changing
# size or mtime: such an entry is re-hashed on every load (git's "racily
# clean" rule).


def _cache_stems(path: Path, dtype: np.dtype, folder: Path) -> list[Path]:
    """Candidate cache locations: in ``folder`` (where the caller named the
    data, which a symbolic link may place elsewhere than ``path``, the file
    itself), then in the data cache.

    The name holds a hash of ``path`` (the resolved file): every name of one
    file (links to it) finds the one entry, and files that share a name
    (links in one folder to ``a/train.txt`` and ``b/train.txt``) have one
    entry each.
    """
    key = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    name = f"{key}-{path.name}.{dtype.name}"
    return [
        folder / _CACHE_SUBDIR / name,
        _data_cache_dir() / "parsed" / name,
    ]


_INT64 = js.integer(-(2**63), 2**63 - 1)
_CACHE_META = js.record(
    required={
        "format": js.const(_CACHE_FORMAT),
        "version": js.const(_CACHE_VERSION),
        "source": js.string(),
        "size": js.integer(0, 2**63 - 1),
        "mtime_ns": _INT64,
        "sha256": js.string(r"[0-9a-f]{64}"),
        "hashed_ns": _INT64,
        "dtype": js.string(),
        "width": js.integer(0, 2**31),
        "arrays": js.record({
            key: js.record({
                "shape": js.list_of(js.integer(0, 2**62), max_length=2),
                "dtype": js.string(),
                "crc32": js.integer(0, 2**32 - 1),
            })
            for key in _CACHE_ARRAYS
        }),
    },
    optional={"ctime_ns": _INT64},
)


def _crc(a: np.ndarray) -> int:
    return zlib.crc32(memoryview(np.ascontiguousarray(a)).cast("B"))


def _load_cache(path: Path, st: os.stat_result, dtype: np.dtype, folder: Path):
    """The cached parse of ``path``, or None (absent, stale or corrupt).

    A metadata file that is not of the schema (not JSON, another shape, a
    field missing or of the wrong type) is a warning naming it, and the file
    is parsed again and the cache rewritten.
    """
    for stem in _cache_stems(path, dtype, folder):
        meta_path = stem.with_name(stem.name + ".json")
        if not os.path.lexists(meta_path):
            continue
        try:
            meta = js.read_json(meta_path)
            if isinstance(meta, dict) and (
                meta.get("format") != _CACHE_FORMAT
                or meta.get("version") != _CACHE_VERSION
            ) and isinstance(meta.get("format"), str):
                continue  # another format: rewritten without a warning
            problem = _CACHE_META(meta, "")
            if problem is not None:
                raise ValueError(problem)
            if meta["source"] != str(path) or meta["dtype"] != dtype.name:
                raise ValueError("it describes another file")
            if meta["size"] != st.st_size:
                return None  # the data changed
            # ctime too: a rewrite that restores size and mtime (os.utime)
            # cannot restore the ctime, which the kernel sets on every change.
            trusted = (
                meta["mtime_ns"] == st.st_mtime_ns
                and meta.get("ctime_ns") == st.st_ctime_ns
                and not _io.is_racy(st.st_mtime_ns, meta["hashed_ns"])
            )
            if not trusted and _io.file_hash(path) != meta["sha256"]:
                return None  # the data changed
            arrays = {}
            for key in _CACHE_ARRAYS:
                info = meta["arrays"][key]
                a = _load_npy(stem.with_name(f"{stem.name}.{key}.npy"))
                if (
                    list(a.shape) != info["shape"]
                    or a.dtype.str != info["dtype"]
                    or _crc(a) != info["crc32"]
                ):
                    raise ValueError(f"array {key} does not match its checksum")
                arrays[key] = a
            n, d = arrays["X"].shape
            if arrays["y"].shape != (n,) or arrays["qid"].shape != (n,) or (
                d != meta["width"]
            ):
                raise ValueError("inconsistent shapes")
            return arrays, meta
        except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
            warnings.warn(
                f"{meta_path}: ignoring a corrupt or inconsistent cache of {path} "
                f"({exc}); the file is parsed again and the cache rewritten",
                RuntimeWarning,
                stacklevel=4,
            )
            return None
    return None


def _load_npy(path: Path) -> np.ndarray:
    """An array written by ``np.save``, read into memory.

    Opened as a regular file (a FIFO is an error, not a hang) and read with
    ``read()``, not memory-mapped, so that a cache file truncated by another
    process is an error here rather than ``SIGBUS`` in whatever later
    touches the array.

    Raises
    ------
    OSError or ValueError
        Not a regular file, not a ``.npy`` file of a plain C-ordered array,
        or not of the size its header announces.
    """
    fmt = np.lib.format
    with _io.open_regular(path) as f:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, fortran_order, dt = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran_order, dt = fmt.read_array_header_2_0(f)
        else:
            raise ValueError(f"{path.name} is a .npy file of version {version}")
        if fortran_order or dt.hasobject:
            raise ValueError(f"{path.name} does not hold a plain C-ordered array")
        a = np.empty(shape, dtype=dt)
        size = os.fstat(f.fileno()).st_size
        if size != f.tell() + a.nbytes:
            raise ValueError(
                f"{path.name} has {size:,} bytes; its header announces "
                f"{f.tell() + a.nbytes:,}")
        _io.read_exactly(f, a.reshape(-1).view(np.uint8), path)
    return a


def _writable_dir(folder: Path) -> bool:
    """Whether ``folder`` may hold a cache: writable, and not read-only by its
    mode (root may write anywhere, but a folder marked read-only is left
    alone, e.g. a shared copy of the data)."""
    try:
        mode = folder.stat().st_mode
    except OSError:
        return False
    writable_bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    return bool(mode & writable_bits) and os.access(folder, os.W_OK)


def _write_cache(path, st, sha, dtype, arrays, width, folder) -> Path | None:
    """Store a parse; the metadata goes last, so readers never see half."""
    meta = {
        "format": _CACHE_FORMAT,
        "version": _CACHE_VERSION,
        "source": str(path),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "sha256": sha,
        "hashed_ns": time.time_ns(),
        "dtype": dtype.name,
        "width": width,
        "arrays": {},
    }
    errors = []
    beside, home = _cache_stems(path, dtype, folder)
    stems = [beside, home] if _writable_dir(folder) else [home]
    for stem in stems:
        meta_path = stem.with_name(stem.name + ".json")
        try:
            stem.parent.mkdir(parents=True, exist_ok=True)
            # the leftovers of writers killed in this folder
            _io.remove_stale_tmp(stem.parent)
            meta_path.unlink(missing_ok=True)
            for key in _CACHE_ARRAYS:
                a = np.ascontiguousarray(arrays[key])
                _io.atomic_write(
                    stem.with_name(f"{stem.name}.{key}.npy"),
                    lambda f, a=a: np.save(f, a, allow_pickle=False),
                )
                meta["arrays"][key] = {
                    "shape": list(a.shape), "dtype": a.dtype.str, "crc32": _crc(a)
                }
            text = json.dumps(meta, indent=1).encode()
            _io.atomic_write(meta_path, lambda f, text=text: f.write(text))
            return meta_path
        except OSError as exc:
            errors.append(f"{stem.parent}: {exc}")
    warnings.warn(
        f"could not cache the parse of {path} ({'; '.join(errors)})",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def _check_n_features(n_features):
    if n_features is None:
        return None
    if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral):
        raise DataError(f"n_features must be a positive integer, got {n_features!r}")
    if n_features < 1:
        raise DataError(f"n_features must be a positive integer, got {n_features!r}")
    return int(n_features)


def _check_dtype(dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise DataError(f"dtype must be float64 or float32, got {dtype!r}")
    return dt


def _check_label_range(label_range):
    try:
        lo, hi = label_range
        ok = all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool)
            for v in (lo, hi)
        ) and -_MAX_EXACT_INT <= lo <= hi <= _MAX_EXACT_INT
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise DataError(
            "label_range must be a pair of integers (lo, hi) with "
            f"-2**53 <= lo <= hi <= 2**53, got {label_range!r}"
        )
    return int(lo), int(hi)


def load_letor(
    path,
    *,
    n_features=None,
    return_comments=False,
    dtype=np.float64,
    label_range=DEFAULT_LABEL_RANGE,
    cache=True,
    normalize=None,
):
    """Read one LETOR / SVMlight ranking file.

    Each data line is ``label qid:N i:v i:v ... #comment`` with 1-based,
    strictly increasing feature indices; blank lines and lines holding only a
    comment are skipped.  The text is read by a byte-level parser
    (``refimpl/kernels/svmlight.py``) in one pass, linear in the file size;
    it gives exactly the arrays of
    :func:`sklearn.datasets.load_svmlight_file` with ``query_id=True`` and
    ``zero_based=False`` (LETOR numbers features from 1; sklearn's default
    ``zero_based="auto"`` silently shifts every column of a file that never
    uses feature 1), on every file both accept, with every value rounded as
    Python's ``float()`` rounds it.  Files ending in ``.gz`` or ``.bz2`` are
    decompressed first.  The file is read into memory with ``read()``,
    never memory-mapped, so that another process truncating or rewriting it
    meanwhile is an error naming it (a mapped file would kill the process
    with ``SIGBUS``); only regular files are opened (a FIFO or a device is
    an error at once, never a wait).

    **Cache.**  With ``cache=True`` the parsed arrays are kept as ``.npy``
    files, in a ``.refimpl_cache`` folder beside the data when that folder is
    writable (by its permission bits: a read-only folder is left alone even
    by root), else under ``parsed/`` in the data home
    (:func:`refimpl.datasets.data_home`: ``$REFIMPL_DATA``, else
    ``~/.cache/refimpl``).  An entry records the text file's size, mtime and
    SHA-256; it is used only while size and mtime match (or, after a
    ``touch``, the hash does; an entry hashed within 2 s of the file's mtime
    is always re-hashed, as a rewrite may not have changed the mtime), and
    its arrays are read and checked against their CRC-32 on every load.
    Entries are named by a hash of the file's resolved path and the dtype:
    every link to one file finds one entry, files of the same name behind
    different links have one each.  A stale entry is replaced silently, a
    corrupt or inconsistent one (a file of the wrong shape, a FIFO) with a
    ``RuntimeWarning``; writes are atomic, and the temporary files of a
    writer killed in the cache folder are removed by the next write there
    (``refimpl._io.remove_stale_tmp``).  A second load therefore costs
    a fraction of a second per gigabyte, and returns the same arrays as a
    fresh parse.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    path : str or path-like
        The file.
    n_features : int, optional
        Number of columns of ``X``.  Default: the largest feature index in the
        file, which may not exceed 1,048,576 (a sanity bound checked before
        any allocation).  A larger value pads with zero columns; an index
        beyond it is an error.
    return_comments : bool, default=False
        Also return the comment of each data line.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Type of ``X`` (and of its cache entry).  Values are parsed to float64
        and rounded once to float32, as sklearn does; a value beyond
        float32's range (magnitude 3.4028235e38 or more, which would become
        ``inf``) is an error naming its line.  The solvers compute in
        float64 (their input check converts), so float32
        halves the memory of the stored data, not of a fit.
    label_range : (int, int), default=(0, 2**31 - 1)
        Accepted labels, inclusive.  Labels must be written as integers
        (``2``, ``+2``, or ``2.0`` with only zeros after the point); the range
        is checked on the text, before any conversion.
    cache : bool, default=True
        Read and write the binary cache described above.
    normalize : {None, "query"}, default=None
        None returns the features as in the file; ``"query"`` applies
        LETOR's QueryLevelNorm (:func:`query_level_normalize`), which needs
        nothing beyond the file's own queries (computed in float64, then
        rounded once to ``dtype``).  The cache holds the file's values
        either way.  ``"standard"`` is refused here: its statistics must
        come from a training split, which :func:`load_letor_fold` (or
        :class:`Standardizer` on the training matrix) provides.

    Returns
    -------
    X : ndarray of float64 (or ``dtype``), shape (n_samples, n_features)
        Dense, C-contiguous.  Features absent from a line are 0.
    y : ndarray of int64, shape (n_samples,)
        Relevance labels.
    qid : ndarray of int64, shape (n_samples,)
        Query ids, in file order (not necessarily sorted or contiguous).
    comments : list of str, only if ``return_comments``
        For each row, the text after the first ``#`` of its line, stripped of
        surrounding whitespace (``""`` when the line has none), e.g.
        ``"docid = GX008-86-4444840 inc = 1 prob = 0.086622"``.

    Raises
    ------
    DatasetNotFoundError
        The file does not exist.
    DataError
        The file is not a regular file (a FIFO, a device, a directory:
        ``refimpl._io.NotRegularFileError``), it changed while it was
        read (``refimpl._io.FileChangedError``), a value is beyond the
        range of ``dtype=float32``, or it has no data line, or a line is
        malformed: a label that is
        not an integer literal in ``label_range`` (``1e20``, ``1.5``,
        ``nan``), a missing or malformed ``qid:<int>`` (``qidx:3``), a token
        that is not ``index:value``, a feature index that is 0, not
        increasing, beyond ``n_features`` or the sanity bound, a value that
        is not a finite decimal number (``nan``, ``1e999``, Python's
        ``1_0``); the message names the file, the 1-based line number and
        the start of the line.  Also for a bad ``n_features``, ``dtype``,
        ``label_range`` or ``normalize``.

    Notes
    -----
    sklearn alone accepts NaN and ``inf`` values, fractional labels, labels
    that overflow when cast, Python literals such as ``1_0``, ``qidx:3`` as
    a query id, and when some lines lack ``qid:`` it returns a *shorter* qid
    array that no longer lines up with the rows; these are all errors here.
    """
    n_features = _check_n_features(n_features)
    dtype = _check_dtype(dtype)
    label_range = _check_label_range(label_range)
    if normalize is not None and check_normalize(normalize) != "query":
        raise DataError(
            f"load_letor: normalize={normalize!r} needs the statistics of a "
            "training split, which one file does not identify: use "
            "load_letor_fold(..., normalize='standard'), or Standardizer.fit "
            "on the training matrix; a single file accepts None or 'query'")
    out = _load_letor_file(path, n_features, return_comments, dtype,
                           label_range, cache)
    if normalize is None:
        return out
    # the arrays were just read: a float64 X is normalised in place
    X = out[0]
    X = query_level_normalize(X, out[2], out=X if X.dtype == np.float64 else None)
    return (X.astype(dtype, copy=False), *out[1:])


def _load_letor_file(path, n_features, return_comments, dtype, label_range,
                     cache):
    """:func:`load_letor` without ``normalize``, on checked arguments."""
    path = Path(os.fspath(path))
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise DatasetNotFoundError(f"LETOR file not found: {path}") from None
    _io.check_regular(path, st)  # a FIFO or device: an error, not a hang
    real = path.resolve()
    folder = Path(os.path.abspath(path)).parent
    if cache:
        hit = _load_cache(real, st, dtype, folder)
        if hit is not None:
            out = _from_cache(path, st, hit[0], n_features, label_range,
                              return_comments)
            if out is not None:
                return out
    buf, raw, st = _read_bytes(path)
    X, y, qid, offsets, width = _parse(
        path, buf, n_features, label_range, return_comments or cache
    )
    if dtype != X.dtype:
        X = _cast_features(path, buf, X, dtype, offsets, n_features, label_range)
    if cache:
        # st: the version of the file that was read and parsed
        natural = X if X.shape[1] == width else X[:, :width]
        _write_cache(
            real, st, hashlib.sha256(raw).hexdigest(), dtype,
            {"X": natural, "y": y, "qid": qid, "comments": offsets}, width, folder,
        )
    if not return_comments:
        return X, y, qid
    return X, y, qid, _comment_list(buf, offsets)


def _cast_features(path, buf, X, dtype, offsets, n_features, label_range):
    """``X`` rounded to ``dtype``; a value beyond its range is a DataError.

    Rounding a finite float64 to float32 changes it by at most half a unit
    in float32's last place (a value below half its smallest subnormal,
    about 7e-46, becomes 0), as IEEE arithmetic rounds; but a value of
    magnitude :math:`2^{128} - 2^{103}` (about 3.4028235e38) or more
    becomes ``inf``, not a rounding of it, so it is refused, naming the
    file, the line and the value, before anything is cached.
    """
    with np.errstate(over="ignore"):
        out = X.astype(dtype)
    if out.size == 0 or (np.isfinite(out.max()) and np.isfinite(out.min())):
        return out
    row, col = (int(v) for v in np.argwhere(~np.isfinite(out))[0])
    if offsets is None:  # parsed without the line offsets: find the line
        offsets = _parse(path, buf, n_features, label_range, True)[3]
    cs, end = (int(v) for v in offsets[row])
    newlines = np.flatnonzero(buf[:cs] == 10)
    line_no = newlines.size + 1
    line = bytes(buf[(int(newlines[-1]) + 1 if newlines.size else 0):end])
    token = re.search(rb"(?:^|\s)%d:(\S+)" % (col + 1), line)
    shown = token[1].decode("utf-8", "replace") if token else repr(float(X[row, col]))
    raise DataError(
        f"{path}, line {line_no}: feature {col + 1} is {shown}, beyond the "
        f"range of {dtype.name} (largest finite value "
        f"{float(np.finfo(dtype).max)!r}), where it would be stored as "
        f"{out[row, col]}; load with dtype=np.float64: {_quote(line)}"
    )


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_size, a.st_mtime_ns, a.st_ctime_ns, a.st_ino) == (
        b.st_size, b.st_mtime_ns, b.st_ctime_ns, b.st_ino
    )


def _from_cache(path, st, arrays, n_features, label_range, return_comments):
    """The cached result as load_letor returns it, or None to parse again.

    The cache holds a parse at the file's natural width under the default
    sanity bound; a request it cannot answer exactly (an index beyond
    ``n_features``, a label outside ``label_range``, comments of a file
    that is no longer the version ``st`` the entry was checked against) is
    parsed again, so that the error names its line.
    """
    X, y, qid = arrays["X"], arrays["y"], arrays["qid"]
    width = X.shape[1]
    if n_features is None:
        if width > _MAX_FEATURES:
            return None
    elif n_features < width:
        return None
    elif n_features > width:
        wide = np.zeros((X.shape[0], n_features), dtype=X.dtype)
        wide[:, :width] = X
        X = wide
    if y.size and (y.min() < label_range[0] or y.max() > label_range[1]):
        return None
    if not return_comments:
        return X, y, qid
    buf, _, now = _read_bytes(path)
    if not _same_file(now, st):
        return None
    return X, y, qid, _comment_list(buf, arrays["comments"])


# --------------------------------------------------------------------------
# LETOR folds
# --------------------------------------------------------------------------


def letor_home(root=None) -> Path:
    """The directory holding the LETOR data sets.

    ``root`` if given, else the environment variable ``LETOR_HOME``.  The
    directory should contain one sub-directory per data set, e.g.
    ``<root>/MQ2008/Fold1/train.txt`` or ``<root>/MQ2008/S1.txt``.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    root : str or path-like, optional
        Explicit location; ``~`` is expanded.

    Returns
    -------
    Path

    Raises
    ------
    DatasetNotFoundError
        Neither ``root`` nor ``LETOR_HOME`` is set; the message says how to
        provide the data.
    """
    if root is None:
        root = os.environ.get("LETOR_HOME") or None
    if root is None:
        raise DatasetNotFoundError(
            "No LETOR directory given: pass root= or set LETOR_HOME.  "
            + _HOW_TO_PROVIDE
        )
    return Path(os.fspath(root)).expanduser()


def _check_fold(fold) -> int:
    if (
        isinstance(fold, bool)
        or not isinstance(fold, numbers.Integral)
        or not 1 <= fold <= 5
    ):
        raise DataError(f"fold must be an integer from 1 to 5, got {fold!r}")
    return int(fold)


def load_letor_fold(
    name, fold, root=None, *, n_features=None, dtype=np.float64, cache=True,
    normalize=None,
) -> LetorFold:
    """Load fold ``fold`` (1–5) of the LETOR data set ``name``.

    Three layouts under ``<root>/<name>/`` are recognised, in this order
    (every file may also be gzip-compressed, ``.txt.gz``):

    * LETOR 4.0 and MSLR: ``FoldK/train.txt``, ``vali.txt``, ``test.txt``;
    * LETOR 3.0: ``FoldK/trainingset.txt``, ``validationset.txt``,
      ``testset.txt``;
    * the five query-disjoint partitions ``S1.txt … S5.txt`` of LETOR 4.0, from
      which fold ``k`` trains on partitions ``k, k+1, k+2``, validates on
      ``k+3`` and tests on ``k+4`` (indices cyclic in 1..5): Fold1 = S1, S2,
      S3 / S4 / S5, Fold2 = S2, S3, S4 / S5 / S1, and so on.

    ``name`` may be a relative path, e.g. ``"OHSUMED/QueryLevelNorm"`` for
    LETOR 3.0.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    name : str
        Data set directory under the root, e.g. ``"MQ2008"``.
    fold : int
        1 to 5.
    root : str or path-like, optional
        See :func:`letor_home` (default: ``LETOR_HOME``).
    n_features : int, optional
        Number of columns of every split.  Default: the largest feature index,
        which must then be the same in every file.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Type of the feature matrices; see :func:`load_letor`.
    cache : bool, default=True
        Use the binary cache of parsed files; see :func:`load_letor`.  The
        cache holds the parse of each file as it is written, never a
        normalised copy: ``normalize`` is applied after it, on every load,
        so a normalised load and a raw one cannot serve each other.
    normalize : {None, "query", "standard"}, default=None
        Feature normalisation of the three splits, by
        :func:`normalize_fold`: None keeps the features of the files;
        ``"query"`` is LETOR's QueryLevelNorm
        (:func:`query_level_normalize`, each split on its own: it uses no
        statistic across queries); ``"standard"`` centres and scales each
        feature by the mean and standard deviation of the *training* split
        (:class:`Standardizer`), applied unchanged to the validation and
        test splits.  LETOR 4.0's files (MQ2007, MQ2008) are already
        query-level normalised; MSLR-WEB10K/30K's are raw.

    Returns
    -------
    LetorFold
        With ``normalize`` (and, for ``"standard"``, ``scaler``) recorded.

    Raises
    ------
    DataError
        ``fold`` is not in 1..5, ``normalize`` is not None, ``"query"`` or
        ``"standard"``, a file is malformed (see :func:`load_letor`),
        or, without ``n_features``, the files list different numbers of
        features (LETOR files are dense, so this signals a wrong file).
    DatasetNotFoundError
        No root is known, or no layout is complete; the message lists every
        path looked at and how to provide the data.
    """
    fold = _check_fold(fold)
    n_features = _check_n_features(n_features)
    normalize = check_normalize(normalize)
    base = letor_home(root) / name

    searched = []
    chosen = None
    for description, stems in fold_layouts(base, fold):
        found, tried = {}, []
        for split, split_stems in stems.items():
            files = []
            for stem in split_stems:
                p, t = find_file(stem)
                tried.extend(t)
                files.append(p)
            found[split] = files
        searched.append((description, tried))
        if all(p is not None for files in found.values() for p in files):
            chosen = {split: tuple(files) for split, files in found.items()}
            break
    if chosen is None:
        listing = "\n".join(
            f"  {description}:\n" + "\n".join(f"    {p}" for p in tried)
            for description, tried in searched
        )
        missing_dir = "" if base.is_dir() else f" (directory {base} does not exist)"
        raise DatasetNotFoundError(
            f"LETOR data set {name!r}, Fold{fold} not found under {base}"
            f"{missing_dir}.  Looked for:\n{listing}\n" + _HOW_TO_PROVIDE
        )

    # Split by split, each file's arrays dropped once its splits are built:
    # what is resident at the end of a split is the splits so far, and a
    # split of one file is that file's arrays, not a copy of them
    # (estimate_load_peak counts these moments).
    uses = {}
    for files in chosen.values():
        for p in files:
            uses[p] = uses.get(p, 0) + 1
    loaded, widths, splits = {}, {}, {}
    for split_name, files in chosen.items():
        for p in files:
            if p in loaded:
                continue
            loaded[p] = load_letor(p, n_features=n_features, dtype=dtype,
                                   cache=cache)
            widths[p] = loaded[p][0].shape[1]
            first = next(iter(widths))
            if n_features is None and widths[p] != widths[first]:
                raise DataError(
                    f"{p} lists {widths[p]} features but {first} lists "
                    f"{widths[first]}; LETOR files are dense, so one of them is "
                    "probably the wrong file (pass n_features= for sparse data)"
                )
        if len(files) == 1 and uses[files[0]] == 1:
            splits[split_name] = RankingData(*loaded[files[0]][:3])
        else:
            # a file in two splits is copied, so that each split owns its
            # arrays (normalize_fold may overwrite them)
            splits[split_name] = RankingData(*(
                np.concatenate([loaded[p][i] for p in files]) for i in range(3)))
        for p in files:
            uses[p] -= 1
            if uses[p] == 0:
                del loaded[p]

    raw = LetorFold(
        name=str(name),
        fold=fold,
        train=splits["train"],
        vali=splits["vali"],
        test=splits["test"],
        paths=chosen,
    )
    del splits
    return _normalize_fold(raw, normalize, overwrite=True)


#: Bytes read at a time by :func:`estimate_fold_load` (its own memory).
_SCAN_CHUNK = 1 << 24
#: What a fold's load holds per document beyond the text and ``X``: the
#: parser's labels, query ids and comment offsets (32 bytes a line), the
#: kept copies of labels and query ids (16), and the grouping and float
#: labels the runner's validation adds (``group_queries``,
#: ``check_labels``: 40 at most).
_LOAD_BYTES_PER_ROW = 88
#: Fixed head-room of a load: the newline count's boolean chunk, NumPy's
#: 16 MiB write buffer of the cache, the scan's own chunks and the 8 MiB
#: block of an in-place standardisation.
_LOAD_SLACK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class LoadEstimate:
    """What :func:`estimate_fold_load` found: the load's peak and where.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Attributes
    ----------
    peak_bytes : int
        Memory the load holds at its peak, beyond the process before it.
    path : Path
        The file being parsed at that peak (or the last file of the split
        being joined, when the join is the peak).
    data_bytes : int
        Bytes of the loaded fold (its three ``X``, labels and query ids).
    text_bytes : int
        Bytes of the fold's text, decompressed.
    """

    peak_bytes: int
    path: Path
    data_bytes: int
    text_bytes: int


def _file_shape(path: Path):
    """``(stored, text, rows_cap, rows, widest, cap, peak_cols)`` of one file.

    Streamed: ``stored``: bytes on disk; ``text``: bytes the parser reads
    (a ``.gz`` or ``.bz2`` file decompressed, counted exactly as the stream
    goes by: its gzip trailer gives the size modulo 4 GiB only);
    ``rows_cap``: the parser's row capacity, newlines + 1; ``rows``: data
    lines; ``widest``: the widest line's index; ``cap``, ``peak_cols``: the
    parser's final row width and the most columns it holds at once while
    widening (``kernels.svmlight.line_widths``).  Memory: two chunks of
    ``_SCAN_CHUNK`` bytes.
    """
    suffix = path.suffix.lower()
    newlines, rows, widest, text, cap, peak_cols = 0, 0, 0, 0, -1, 0
    with _io.open_regular(path) as f:
        stored = os.fstat(f.fileno()).st_size
        stream = (gzip.GzipFile(fileobj=f) if suffix == ".gz"
                  else bz2.BZ2File(f) if suffix == ".bz2" else f)
        tail = b""
        try:
            while True:
                chunk = stream.read(_SCAN_CHUNK)
                text += len(chunk)
                block = tail + chunk if tail else chunk
                cut = block.rfind(b"\n") + 1 if chunk else len(block)
                if cut:
                    nl, dl, _, w, cap, cols = _sv.line_widths(
                        np.frombuffer(block, np.uint8, cut), cap, rows)
                    newlines += nl
                    rows += dl
                    widest = max(widest, w)
                    peak_cols = max(peak_cols, cols)
                tail = block[cut:]
                if not chunk:
                    break
        except (gzip.BadGzipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            raise DataError(f"{path}: cannot decompress the file ({exc})") from exc
    return stored, text, newlines + 1, rows, widest, max(cap, 0), peak_cols


def estimate_fold_load(name, fold, root=None, *, n_features=None,
                       dtype=np.float64, normalize=None) -> LoadEstimate:
    """Peak memory of :func:`load_letor_fold` with these arguments, before it runs.

    Each file is read once in chunks of whole lines (``_file_shape``:
    its size, its text's size, newlines and widest line; a compressed file
    is decompressed as a stream, counted, not kept).  The load is then
    followed step by step, in its own order (the training files, then the
    validation's, then the test's):

    * parsing a file holds what is already loaded, the file's bytes as
      stored when compressed, its text, ``X`` of ``rows_cap x width``
      (``rows_cap``: newlines + 1; ``width``: ``n_features``, else the
      widest line's index) and ``_LOAD_BYTES_PER_ROW`` a row; where a later
      line is wider than the first, the old and the widened buffer at once
      (the parser's growth rule followed line by line); the copy of its
      data rows where blank lines or the widening leave a tenth of the
      buffer unused; with ``dtype=float32`` the float32 copy beside the
      float64 parse;
    * a split of several files is joined (``np.concatenate``): its files and
      the joined arrays at once;
    * ``normalize`` works in place: nothing beyond ``_LOAD_SLACK_BYTES``.

    A fresh parse is the upper bound: a load from the parse cache holds
    ``X`` and its arrays only.  The estimate is the largest of these
    moments plus ``_LOAD_SLACK_BYTES``: never below the measured peak and
    at most 3 times it on the shapes of ``tests/test_load_memory.py`` (the
    fixed head-room weighs most on small files).  The pass costs less than
    half a fresh parse's time (the text is scanned, not converted).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    Derived in: book/10_running_experiments.md#run-scale-guard

    Parameters
    ----------
    name, fold, root, n_features, dtype, normalize :
        As :func:`load_letor_fold`.

    Returns
    -------
    LoadEstimate

    Raises
    ------
    DataError, DatasetNotFoundError
        As :func:`load_letor_fold` for a fold it cannot find or a file it
        cannot read or decompress.
    """
    fold = _check_fold(fold)
    n_features = _check_n_features(n_features)
    dtype = _check_dtype(dtype)
    check_normalize(normalize)
    chosen = fold_files(letor_home(root) / name, fold)
    if chosen is None:          # the loader's own error lists the paths
        load_letor_fold(name, fold, root, n_features=n_features, dtype=dtype)
    item = dtype.itemsize
    resident = peak = text_total = 0
    where = None
    shapes = {}
    for files in chosen.values():
        split = 0
        for p in files:
            if p not in shapes:
                shapes[p] = _file_shape(p)
            stored, text, cap_rows, rows, widest, cap, cols = shapes[p]
            text_total += text
            if n_features is not None:       # X allocated once at that width
                cap = cols = n_features
            cap, cols, width = max(cap, 1), max(cols, 1), max(widest, 1)
            if n_features is not None:
                width = n_features
            # the parse's buffers, and the copy of its rows when blank lines
            # or the widening leave more than a tenth of the buffer unused
            copied = rows * width < 0.9 * cap_rows * cap
            x_final = cap_rows * cap * 8
            x_copy = rows * width * 8 if copied else 0
            parse = ((stored if stored != text else 0) + text
                     + max(cap_rows * cols * 8, x_final + x_copy)
                     + (rows * width * item if item != 8 else 0)
                     + cap_rows * _LOAD_BYTES_PER_ROW)
            if resident + split + parse > peak:
                peak, where = resident + split + parse, p
            # what stays: the copied rows, else the whole buffer X views
            split += (x_copy if copied else x_final) * item // 8 + cap_rows * 16
        if len(files) > 1 and resident + 2 * split > peak:
            peak, where = resident + 2 * split, files[-1]
        resident += split
    return LoadEstimate(peak_bytes=int(peak + _LOAD_SLACK_BYTES), path=Path(where),
                        data_bytes=int(resident), text_bytes=int(text_total))


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


def _integer_array(a, name: str, n: int) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or len(a) != n:
        raise DataError(f"{name} must have shape ({n},), got {a.shape}")
    if a.dtype.kind in "biu":
        return a.astype(np.int64)
    if a.dtype.kind != "f":
        raise DataError(f"{name} must be numeric, got dtype {a.dtype}")
    if not np.all(np.isfinite(a)) or not np.all(a == np.floor(a)):
        raise DataError(f"{name} must hold integers (LETOR labels and qids are)")
    return a.astype(np.int64)


def write_letor(path, X, y, qid, comments=None) -> Path:
    """Write ranking data in the LETOR / SVMlight text format.

    One line per row, ``label qid:N 1:v 2:v ... #comment``, with every
    feature written (LETOR files are dense, so the number of features
    survives a round trip through :func:`load_letor`) and 1-based indices.
    Values are written with ``repr``, the shortest decimal string that reads
    back as the same float64, so ``load_letor(write_letor(...))`` is exact.
    A ``.gz`` or ``.bz2`` suffix compresses the file.

    The lines are formatted here rather than by
    :func:`sklearn.datasets.dump_svmlight_file`, which has no per-line
    comments, skips zero features and prints ``%.16g`` (not always exact).

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    path : str or path-like
        Output file, replaced atomically (written to a temporary file in
        its folder, then renamed onto it): a process reading the old file
        meanwhile reads it whole, never a truncated one.  A symbolic link
        at ``path`` is replaced by the file, not followed.
    X : array-like or sparse matrix, shape (n_samples, n_features)
        Finite features.
    y : array-like of int, shape (n_samples,)
        Integer-valued relevance labels.
    qid : array-like of int, shape (n_samples,)
        Query ids, written in the given row order.
    comments : sequence of str, optional
        Written after ``" #"`` on each line; no line breaks allowed.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(os.fspath(path))
    X = check_X(X)
    if sp.issparse(X):
        X = X.toarray()
    n = X.shape[0]
    y = _integer_array(y, "y", n)
    qid = _integer_array(qid, "qid", n)
    if comments is not None:
        comments = [str(c) for c in comments]
        if len(comments) != n:
            raise DataError(f"comments has {len(comments)} entries for {n} rows")
        for i, c in enumerate(comments):
            if "\n" in c or "\r" in c:
                raise DataError(f"comments[{i}] contains a line break")

    def write_lines(f):
        for i, (row, label, q) in enumerate(zip(X.tolist(), y.tolist(), qid.tolist())):
            fields = [f"{label} qid:{q}"]
            fields.extend(f"{j}:{v!r}" for j, v in enumerate(row, start=1))
            if comments is not None:
                fields.append(f"#{comments[i]}")
            f.write((" ".join(fields) + "\n").encode("utf-8"))

    def write(f):
        suffix = path.suffix.lower()
        if suffix == ".gz":
            # mtime=0: the same data gives byte-identical files
            with gzip.GzipFile(filename=str(path), mode="wb", fileobj=f,
                               mtime=0) as z:
                write_lines(z)
        elif suffix == ".bz2":
            with bz2.BZ2File(f, "wb") as z:
                write_lines(z)
        else:
            write_lines(f)

    # a new file renamed onto path, never a truncation in place: a process
    # reading path meanwhile sees the old file or the new one
    _io.atomic_write(path, write)
    return path


# --------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------


def _check_count(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DataError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise DataError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _label_proportions(n_levels: int) -> np.ndarray:
    """0.6 for label 0; the other 0.4 shared geometrically (ratio 0.6)."""
    tail = 0.6 ** np.arange(n_levels - 1)
    return np.r_[0.6, 0.4 * tail / tail.sum()]


def make_synthetic_letor(
    n_queries=100,
    *,
    docs_per_query=(5, 40),
    n_informative=5,
    n_redundant=5,
    n_noise=20,
    n_levels=3,
    label_noise=0.5,
    redundancy_noise=0.05,
    seed=0,
):
    r"""A seeded LETOR-like ranking data set with a known sparse signal.

    The generative model, all drawn from ``np.random.default_rng(seed)``:

    1. Query :math:`q = 1, \dots, Q` has :math:`n_q` documents,
       :math:`n_q` uniform on ``docs_per_query = (low, high)`` (inclusive).
    2. Informative features: :math:`x_{ij} = \operatorname{clip}(u_{ij} +
       \delta_{q(i)j}, 0, 1)` with :math:`u_{ij} \sim U[0, 1]` and a per-query
       shift :math:`\delta_{qj} \sim N(0, 0.1^2)`, so queries differ (and, as
       in LETOR, some values are exactly 0 or 1).
    3. True weights :math:`w_j \sim U[0.5, 2]` on the informative features,
       0 elsewhere; latent score :math:`s_i = x_i^\top w + \sigma
       \varepsilon_i`, :math:`\varepsilon_i \sim N(0, 1)`,
       :math:`\sigma` = ``label_noise``.
    4. Labels :math:`y_i \in \{0, \dots, L-1\}` by thresholding :math:`s` at
       its empirical quantiles, so that label 0 gets 60 % of the documents
       and the other 40 % is shared geometrically with ratio 0.6
       (:math:`L = 3`: 60/25/15 %; :math:`L = 5`: 60/18/11/7/4 %), skewed
       towards "irrelevant" like LETOR.
    5. Redundant features: :math:`\operatorname{clip}(x_{ik} + \tau\eta_i, 0,
       1)`, :math:`\eta_i \sim N(0, 1)`, :math:`\tau` = ``redundancy_noise``,
       copies of a randomly chosen informative feature :math:`k` (correlation
       above 0.9 for the default :math:`\tau`).
    6. Noise features: :math:`U[0, 1]`, independent of everything.

    Columns are ordered informative, redundant, noise.  The same seed gives
    identical output.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    n_queries : int, default=100
        Number of queries, >= 1.
    docs_per_query : int or (int, int), default=(5, 40)
        Documents per query: fixed, or uniform on ``[low, high]``, 1 <= low <=
        high.
    n_informative : int, default=5
        Features with a non-zero true weight, >= 1.
    n_redundant : int, default=5
        Noisy copies of informative features, >= 0.
    n_noise : int, default=20
        Irrelevant features, >= 0.
    n_levels : int, default=3
        Number of relevance grades, >= 2.
    label_noise : float, default=0.5
        Standard deviation of the noise of the latent score, >= 0.
    redundancy_noise : float, default=0.05
        Standard deviation of the noise added to redundant copies, >= 0.
    seed : int or None, default=0
        Seed of ``np.random.default_rng``.

    Returns
    -------
    sklearn.utils.Bunch
        ``X`` (float64 in [0, 1], C-contiguous), ``y`` (int64 in
        0..n_levels-1), ``qid`` (int64, contiguous, from 1), ``coef`` (the
        true weights, length n_features), ``informative``, ``redundant``,
        ``noise`` (column indices, int64), ``redundant_of`` (for each
        redundant column, the informative column it copies),
        ``feature_names`` (``"inf0"``, ``"red0<-inf2"``, ``"noise3"``, ...)
        and ``thresholds`` (the cut points on the latent score).
    """
    n_queries = _check_count(n_queries, "n_queries", 1)
    if isinstance(docs_per_query, numbers.Integral) and not isinstance(
        docs_per_query, bool
    ):
        docs_per_query = (docs_per_query, docs_per_query)
    try:
        low, high = docs_per_query
    except (TypeError, ValueError):
        raise DataError(
            "docs_per_query must be an integer or a pair (low, high), got "
            f"{docs_per_query!r}"
        ) from None
    low = _check_count(low, "docs_per_query low", 1)
    high = _check_count(high, "docs_per_query high", 1)
    if low > high:
        raise DataError(f"docs_per_query needs low <= high, got {docs_per_query!r}")
    n_inf = _check_count(n_informative, "n_informative", 1)
    n_red = _check_count(n_redundant, "n_redundant", 0)
    n_noise = _check_count(n_noise, "n_noise", 0)
    n_levels = _check_count(n_levels, "n_levels", 2)
    label_noise = check_nonnegative(label_noise, "label_noise")
    redundancy_noise = check_nonnegative(redundancy_noise, "redundancy_noise")

    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, size=n_queries)
    qid = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64), sizes)
    n = len(qid)

    shift = rng.normal(0.0, 0.1, size=(n_queries, n_inf))
    X_inf = np.clip(rng.uniform(size=(n, n_inf)) + shift[qid - 1], 0.0, 1.0)
    w = rng.uniform(0.5, 2.0, size=n_inf)
    score = X_inf @ w + label_noise * rng.standard_normal(n)
    thresholds = np.quantile(score, np.cumsum(_label_proportions(n_levels))[:-1])
    y = np.searchsorted(thresholds, score, side="right").astype(np.int64)

    redundant_of = rng.integers(0, n_inf, size=n_red).astype(np.int64)
    X_red = np.clip(
        X_inf[:, redundant_of] + redundancy_noise * rng.standard_normal((n, n_red)),
        0.0,
        1.0,
    )
    X_noise = rng.uniform(size=(n, n_noise))
    X = np.ascontiguousarray(np.hstack([X_inf, X_red, X_noise]), dtype=np.float64)

    n_features = n_inf + n_red + n_noise
    coef = np.zeros(n_features)
    coef[:n_inf] = w
    names = (
        [f"inf{j}" for j in range(n_inf)]
        + [f"red{r}<-inf{k}" for r, k in enumerate(redundant_of)]
        + [f"noise{j}" for j in range(n_noise)]
    )
    return Bunch(
        X=X,
        y=y,
        qid=qid,
        coef=coef,
        informative=np.arange(n_inf, dtype=np.int64),
        redundant=np.arange(n_inf, n_inf + n_red, dtype=np.int64),
        redundant_of=redundant_of,
        noise=np.arange(n_inf + n_red, n_features, dtype=np.int64),
        feature_names=names,
        thresholds=thresholds,
    )


# --------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------


#: The values of the ``normalize`` option (:func:`load_letor_fold`,
#: :func:`normalize_fold`, the runner's ``ExperimentConfig.normalize`` and
#: ``python -m refimpl run --normalize``).
NORMALIZATIONS = (None, "query", "standard")


def check_normalize(normalize):
    """The ``normalize`` option if it is None, ``"query"`` or ``"standard"``.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Raises
    ------
    DataError
        Naming the parameter and the accepted values.
    """
    if normalize is None or (
        isinstance(normalize, str) and normalize in NORMALIZATIONS
    ):
        return normalize
    raise DataError(
        f"normalize must be None (the features as in the files), 'query' "
        f"(LETOR's QueryLevelNorm) or 'standard' (z-scores with the training "
        f"split's mean and standard deviation); got {normalize!r}"
    )


def query_level_normalize(X, qid, *, out=None) -> np.ndarray:
    r"""LETOR's *QueryLevelNorm*: min–max scale each feature within each query.

    .. math:: x'_{ij} = \frac{x_{ij} - \min_{k \in q(i)} x_{kj}}
                             {\max_{k \in q(i)} x_{kj} - \min_{k \in q(i)} x_{kj}},

    and :math:`x'_{ij} = 0` when feature :math:`j` is constant within the
    query of document :math:`i` (including one-document queries).  The
    queries' documents need not be contiguous.  This is the map LETOR 4.0
    applied to its *QueryLevelNorm* files: the distributed MQ2008
    partitions are a fixed point of it, bit for bit, including the zeros of
    features constant within a query.  A compiled loop reads ``X`` once per
    query for the extremes and once to write, with no temporary of the
    size of ``X``.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    X : array-like or sparse matrix, shape (n_samples, n_features)
        Finite features (sparse input is densified).
    qid : array-like, shape (n_samples,)
        Query ids.
    out : ndarray of float64, shape (n_samples, n_features), optional
        Where to write the result; ``out=X`` normalises ``X`` in place
        (each query's extremes are read before its rows are written), as
        :func:`load_letor_fold` does with the arrays it has just read.

    Returns
    -------
    ndarray of float64, shape (n_samples, n_features)
        A new array (or ``out``), values in [0, 1].
    """
    X = check_X(X)
    if sp.issparse(X):
        X = X.toarray()
    groups = group_queries(qid, X.shape[0])
    out = _check_out(out, X)
    if X.shape[0] == 0 or X.shape[1] == 0:
        return out
    _norm.query_minmax(X, groups.order, groups.indptr, out)
    return out


def _check_out(out, X) -> np.ndarray:
    """``out`` if it can hold a float64 result of ``X``'s shape, else a new one."""
    if out is None:
        return np.empty_like(X)
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64
            and out.shape == X.shape and out.flags.c_contiguous
            and out.flags.writeable):
        raise DataError(
            f"out must be a writeable C-contiguous float64 array of shape "
            f"{X.shape}; got {type(out).__name__} "
            f"{getattr(out, 'dtype', '')} {getattr(out, 'shape', '')}")
    return out


#: Rows per block when :meth:`Standardizer.transform` overwrites its input:
#: a block is standardised into a buffer of about 8 MB and copied back only
#: when every value in it is finite, so that an error shows the value read.
_BLOCK_BYTES = 8 * 2**20


@dataclass(frozen=True)
class Standardizer:
    r"""Feature z-scores with the statistics of one (training) matrix.

    ``Standardizer.fit(X_train)`` records each feature's mean
    :math:`\mu_j` and standard deviation :math:`\sigma_j` (over the rows,
    ``ddof=0``); :meth:`Standardizer.transform` maps any matrix with the same features
    to :math:`(x_{ij} - \mu_j) / \sigma_j`.  A feature constant on the
    fitted matrix (its minimum equals its maximum) has no spread to divide
    by: it is centred at that value and not scaled (:math:`\sigma_j = 1`,
    as in scikit-learn's ``StandardScaler``), so it is 0 on the fitted rows
    and never divides by zero.  The sums run on each column scaled by a
    power of two near its largest magnitude (exact), so that values up to
    the float64 limit neither overflow nor lose the spread; a z-score that
    overflows in the original units is computed in those scaled units.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Attributes
    ----------
    mean : ndarray of float64, shape (n_features,)
        :math:`\mu_j` (the value itself for a constant feature).
    scale : ndarray of float64, shape (n_features,)
        :math:`\sigma_j`, 1 for a constant feature.
    constant : ndarray of bool, shape (n_features,)
        The features constant on the fitted matrix.
    """

    mean: np.ndarray
    scale: np.ndarray
    constant: np.ndarray
    # the same statistics in the units of the exact power-of-two scaling
    _inv: np.ndarray = field(repr=False, default=None)
    _mean_s: np.ndarray = field(repr=False, default=None)
    _sd_s: np.ndarray = field(repr=False, default=None)

    @classmethod
    def fit(cls, X) -> Standardizer:
        """The statistics of ``X`` (finite, at least one row).

        Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
        """
        X = check_X(X)
        if sp.issparse(X):
            X = X.toarray()
        n, d = X.shape
        if n == 0:
            raise DataError("cannot standardise with the statistics of 0 rows")
        absmax = np.empty(d)
        _norm.column_absmax(X, absmax)
        # absmax = f 2**e with f in [0.5, 1): x 2**-e lies in [-1, 1]
        inv = np.ldexp(1.0, -np.frexp(absmax)[1])
        lo, hi, mean_s, m2 = (np.empty(d) for _ in range(4))
        _norm.column_moments(X, inv, lo, hi, mean_s, m2)
        sd_s = np.sqrt(m2 / n)
        constant = (lo == hi) | ~(sd_s > 0)
        mean_s = np.where(constant, lo * inv, mean_s)
        sd_s = np.where(constant, inv, sd_s)
        with np.errstate(over="ignore"):
            mean = np.where(constant, lo, mean_s / inv)
            scale = np.where(constant, 1.0, sd_s / inv)
        return cls(mean=mean, scale=scale, constant=constant, _inv=inv,
                   _mean_s=mean_s, _sd_s=sd_s)

    @property
    def n_features(self) -> int:
        return int(self.mean.shape[0])

    def transform(self, X, *, what="X", out=None) -> np.ndarray:
        """``(X - mean) / scale``, a new float64 array, or written into ``out``.

        ``out=X`` standardises ``X`` in place (as :func:`load_letor_fold`
        does with the arrays it has just read): blocks of rows go through a
        buffer of about 8 MB and are written back only when all their
        z-scores are finite, so that an error names the value as read.

        Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

        Raises
        ------
        DataError
            ``X`` has another number of features, or a value so far from
            the fitted mean that its z-score is not a finite float64 (the
            message names the row and feature of ``what``).
        """
        X = check_X(X, what)
        if sp.issparse(X):
            X = X.toarray()
        if X.shape[1] != self.n_features:
            raise DataError(
                f"{what} has {X.shape[1]} features; the standardisation was "
                f"fitted on {self.n_features}"
            )
        out = _check_out(out, X)
        if X.size == 0:
            return out
        if not np.shares_memory(X, out):
            self._standardize(X, out, 0, what)
            return out
        rows = max(1, _BLOCK_BYTES // (8 * X.shape[1]))
        buf = np.empty((min(rows, X.shape[0]), X.shape[1]))
        for a in range(0, X.shape[0], rows):
            block = X[a:a + rows]
            self._standardize(block, buf[:len(block)], a, what)
            out[a:a + rows] = buf[:len(block)]
        return out

    def _standardize(self, X, out, first_row, what):
        """The compiled map of ``X`` into ``out``; a DataError naming row
        ``first_row + i`` of ``what`` where a z-score is not finite."""
        bad = _norm.standardize(X, self.mean, self.scale, self._inv,
                                self._mean_s, self._sd_s, out)
        if bad >= 0:
            i, j = divmod(int(bad), X.shape[1])
            raise DataError(
                f"{what}[{first_row + i}, {j}] = {float(X[i, j])!r} standardises "
                f"to a non-finite value with the training mean "
                f"{float(self.mean[j])!r} and standard deviation "
                f"{float(self.scale[j])!r} of feature {j}"
            )


def normalize_fold(fold: LetorFold, normalize) -> LetorFold:
    """The fold with its features normalised: the ``normalize`` option.

    ``None`` returns ``fold`` itself.  ``"query"`` applies
    :func:`query_level_normalize` to each split (a per-query map: no
    statistic crosses splits).  ``"standard"`` fits a :class:`Standardizer`
    on the training split only and applies it to the three splits, so that
    nothing of the validation or test data enters the training features.
    Labels, query ids and paths are kept; features are computed in float64
    and stored in the fold's dtype.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    fold : LetorFold
        A fold as read (its ``normalize`` must be None: normalising twice
        is refused).
    normalize : {None, "query", "standard"}

    Returns
    -------
    LetorFold
    """
    return _normalize_fold(fold, normalize, overwrite=False)


def _normalize_fold(fold, normalize, *, overwrite):
    """:func:`normalize_fold`; with ``overwrite``, a float64 split's ``X`` is
    normalised in place (the loader's fold, whose arrays nothing else holds:
    no second copy of the data)."""
    normalize = check_normalize(normalize)
    if normalize is None:
        return fold
    if fold.normalize is not None:
        raise DataError(
            f"the fold is already normalised ({fold.normalize!r}); normalise "
            "the fold as read"
        )

    def target(X):
        owned = (overwrite and isinstance(X, np.ndarray) and X.dtype == np.float64
                 and X.flags.c_contiguous and X.flags.writeable)
        return X if owned else None

    splits = ("train", "vali", "test")
    dtype = fold.train.X.dtype
    scaler = None if normalize == "query" else Standardizer.fit(fold.train.X)
    new = {}
    for s in splits:
        part = getattr(fold, s)
        if scaler is None:
            X = query_level_normalize(part.X, part.qid, out=target(part.X))
        else:
            X = scaler.transform(part.X, what=f"{s}.X", out=target(part.X))
        new[s] = RankingData(X.astype(dtype, copy=False), part.y, part.qid)
    return dataclasses.replace(fold, normalize=normalize, scaler=scaler, **new)


def train_test_split_queries(X, y, qid, *, test_size=0.25, seed=0):
    """Split ranking data into train and test sets of whole queries.

    Each query goes entirely to one side; rows keep their input order.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    X : array-like or sparse matrix, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)
    qid : array-like, shape (n_samples,)
    test_size : float in (0, 1) or int, default=0.25
        Fraction of the queries (rounded up) or number of queries in the test
        set; each side must receive at least one query.
    seed : int or None, default=0
        Seed of ``np.random.default_rng`` choosing the test queries.

    Returns
    -------
    train, test : RankingData
    """
    X = check_X(X)
    n = X.shape[0]
    check_labels(y, n)
    y = np.asarray(y)
    groups = group_queries(qid, n)
    qid = np.asarray(qid)
    n_q = groups.n_queries
    if isinstance(test_size, numbers.Integral) and not isinstance(test_size, bool):
        n_test = int(test_size)
    elif isinstance(test_size, numbers.Real) and 0 < test_size < 1:
        n_test = math.ceil(test_size * n_q)
    else:
        raise DataError(
            f"test_size must be a fraction in (0, 1) or a number of queries, got "
            f"{test_size!r}"
        )
    if not 1 <= n_test <= n_q - 1:
        raise DataError(
            f"test_size={test_size!r} gives {n_test} of {n_q} queries to the test "
            "set; each side needs at least one query"
        )
    rng = np.random.default_rng(seed)
    test_qids = rng.permutation(groups.qids)[:n_test]
    in_test = np.isin(qid, test_qids)
    return (
        RankingData(X[~in_test], y[~in_test], qid[~in_test]),
        RankingData(X[in_test], y[in_test], qid[in_test]),
    )
