"""Hashes of data files remembered across runs, in a checksummed JSON file.

:func:`refimpl._io.file_digest` hashes a file once per version of the file;
the runner keeps those hashes between runs with :func:`load_digest_memo` and
:func:`store_digest_memo`, so that an unchanged data set is not hashed again.
A memo that is not valid is a warning and a rehash, never a wrong hash.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from . import _jsonfile as js
from ._io import atomic_write_json, json_sha256

__all__ = ["load_digest_memo", "store_digest_memo"]

_MEMO_FORMAT = 1
_INT64 = js.integer(-(2**63), 2**63 - 1)
_MEMO_SCHEMA = js.record({
    "format": js.const(_MEMO_FORMAT),
    "checksum": js.string(r"[0-9a-f]{64}"),
    "files": js.mapping(js.record({
        "sha256": js.string(r"[0-9a-f]{64}"),
        "hashed_ns": _INT64,
        "stat": js.list_of(_INT64, length=4),
    })),
})


def load_digest_memo(path) -> dict:
    """The entries of a memo file written by :func:`store_digest_memo`.

    ``{}`` when there is none; a file that is not valid (not JSON, another
    format, a field missing, a checksum that does not match) is a
    ``RuntimeWarning`` naming it, and ``{}``.
    """
    try:
        stored = js.read_json(path, _MEMO_SCHEMA)
    except FileNotFoundError:
        return {}
    except js.MalformedFileError as err:
        warnings.warn(f"fingerprint memo {path} is not valid ({err.problem}); "
                      "the data files are hashed again", RuntimeWarning,
                      stacklevel=2)
        return {}
    if stored["checksum"] != json_sha256(stored["files"]):
        warnings.warn(f"fingerprint memo {path} is not valid (its checksum does "
                      "not match its content); the data files are hashed again",
                      RuntimeWarning, stacklevel=2)
        return {}
    return stored["files"]


def store_digest_memo(path, files: dict) -> None:
    """Write memo entries (as :func:`file_digest` keeps them); a failure warns."""
    try:
        atomic_write_json(Path(path), {"format": _MEMO_FORMAT, "files": files,
                                       "checksum": json_sha256(files)})
    except OSError as err:
        warnings.warn(f"cannot write the fingerprint memo {path} ({err}); the "
                      "data files will be hashed again next time",
                      RuntimeWarning, stacklevel=2)
