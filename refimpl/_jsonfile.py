"""Reading the package's own JSON files (manifests, caches) against a schema.

Every JSON file the package reads back (the data set manifest of
:mod:`refimpl.datasets`, the parse cache metadata of :mod:`refimpl.data`,
the runner's cache entries, fingerprint memo and ``run.json``, the committed
snapshots) goes through :func:`read_json`.  Whatever a file holds (bytes
that are not JSON, a truncation, a list where an object belongs, a missing
or mistyped field, a number with thousands of digits, nesting deep enough to
exhaust the recursion limit), the reader gets the value or a
:class:`MalformedFileError` naming the file and the first problem; never an
``AttributeError`` or ``RecursionError`` from deep inside.  Each caller
decides what a malformed file means: a warning and a rebuild where the file
can be rebuilt, a :class:`~refimpl.exceptions.DataError` with a remedy where
it cannot.

A schema is a callable ``check(value, where) -> str or None`` returning a
description of the first problem (``None`` when the value conforms); the
constructors below build the usual ones.  Extra keys in an object are
allowed, so that a newer writer's file can still be read by an older reader.
"""

from __future__ import annotations

import json
import math
import os
import re

from ._io import open_regular
from .exceptions import DataError

# Larger than any file the package writes (a manifest or a cache entry is a
# few KiB, a snapshot at most a few MiB), so only a damaged or foreign file
# is refused unread.
MAX_BYTES = 64 * 2**20


class MalformedFileError(DataError):
    """A JSON file of the package is unreadable or does not fit its schema.

    Attributes
    ----------
    path : str
        The file.
    problem : str
        What is wrong, e.g. ``"field 'size' is a str, not an integer"``.
    """

    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


def read_json(path, schema=None, *, max_bytes=MAX_BYTES):
    """The value of the JSON file ``path``, checked against ``schema``.

    Parameters
    ----------
    path : str or path-like
    schema : callable, optional
        ``schema(value, where)`` returns ``None`` when ``value`` conforms,
        else a description of the problem (see the constructors of this
        module).  Without a schema any JSON value is accepted.
    max_bytes : int, default MAX_BYTES
        Larger files are refused without being read.

    Returns
    -------
    object
        The decoded value.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist (usually not a malformation: nothing was
        written yet).
    MalformedFileError
        Anything else: unreadable, not a regular file, too large, not UTF-8,
        not JSON, or not of the schema's shape.
    """
    path = os.fspath(path)
    try:
        with open_regular(path) as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise MalformedFileError(path, f"cannot be read ({exc})") from None
    if len(raw) > max_bytes:
        raise MalformedFileError(path, f"is larger than {max_bytes} bytes")
    try:
        value = json.loads(raw)
    # ValueError: not JSON, not UTF-8, an integer beyond Python's digit
    # limit; RecursionError: nesting deeper than the interpreter's stack
    except (ValueError, RecursionError) as exc:
        raise MalformedFileError(
            path, f"is not valid JSON ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    if schema is not None:
        problem = schema(value, "")
        if problem is not None:
            raise MalformedFileError(path, problem)
    return value


# --------------------------------------------------------------------------
# Schema constructors
# --------------------------------------------------------------------------


def _at(where: str) -> str:
    return f"{where} " if where else "the top-level value "


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), f"a {type(value).__name__}")


def anything():
    """Any JSON value."""
    return lambda value, where: None


def integer(lo=None, hi=None):
    """An integer (not a boolean) in ``[lo, hi]``."""
    def check(value, where):
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{_at(where)}is {_kind(value)}, not an integer"
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return f"{_at(where)}is out of range [{lo}, {hi}]"
        return None
    return check


def real(lo=None, hi=None, nan=False):
    """A finite number (integer or float) in ``[lo, hi]``; NaN if ``nan``."""
    def check(value, where):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{_at(where)}is {_kind(value)}, not a number"
        if isinstance(value, float) and math.isnan(value):
            return None if nan else f"{_at(where)}is NaN"
        try:
            v = float(value)
        except OverflowError:
            return f"{_at(where)}is too large"
        if not math.isfinite(v):
            return f"{_at(where)}is not finite"
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return f"{_at(where)}is out of range [{lo}, {hi}]"
        return None
    return check


def string(pattern=None):
    """A string, matching the regular expression ``pattern`` in full."""
    compiled = re.compile(pattern) if pattern is not None else None

    def check(value, where):
        if not isinstance(value, str):
            return f"{_at(where)}is {_kind(value)}, not a string"
        if compiled is not None and compiled.fullmatch(value) is None:
            return f"{_at(where)}{value[:60]!r} is not of the form {pattern}"
        return None
    return check


def boolean():
    """``true`` or ``false``."""
    def check(value, where):
        return None if isinstance(value, bool) else (
            f"{_at(where)}is {_kind(value)}, not true/false")
    return check


def const(*allowed):
    """One of the values ``allowed`` (compared with ``==``, booleans apart)."""
    def check(value, where):
        for a in allowed:
            if type(value) is type(a) and value == a:
                return None
        return f"{_at(where)}is {str(value)[:60]!r}, expected one of {allowed!r}"
    return check


def either(*schemas):
    """A value that fits one of ``schemas``."""
    def check(value, where):
        problems = [s(value, where) for s in schemas]
        return None if None in problems else problems[0]
    return check


def nullable(schema):
    """``null`` or a value of ``schema``."""
    return either(const(None), schema)


def list_of(item, length=None, max_length=None):
    """A list whose entries fit ``item`` (of exactly ``length`` entries)."""
    def check(value, where):
        if not isinstance(value, list):
            return f"{_at(where)}is {_kind(value)}, not a list"
        if length is not None and len(value) != length:
            return f"{_at(where)}has {len(value)} entries, not {length}"
        if max_length is not None and len(value) > max_length:
            return f"{_at(where)}has more than {max_length} entries"
        for i, v in enumerate(value):
            problem = item(v, f"{where or 'the list'}[{i}]")
            if problem:
                return problem
        return None
    return check


def mapping(value_schema, key_pattern=None):
    """An object with any keys (matching ``key_pattern``), values of one schema."""
    keys = re.compile(key_pattern) if key_pattern is not None else None

    def check(value, where):
        if not isinstance(value, dict):
            return f"{_at(where)}is {_kind(value)}, not an object"
        for k, v in value.items():
            if keys is not None and keys.fullmatch(k) is None:
                return f"{_at(where)}has a key {k[:60]!r} not of the form {key_pattern}"
            problem = value_schema(v, f"{where}[{k[:60]!r}]" if where else repr(k[:60]))
            if problem:
                return problem
        return None
    return check


def record(required=None, optional=None):
    """An object with the ``required`` fields and possibly the ``optional`` ones.

    Parameters
    ----------
    required, optional : dict of str to schema
        Extra fields are allowed.
    """
    required = dict(required or {})
    optional = dict(optional or {})

    def check(value, where):
        if not isinstance(value, dict):
            return f"{_at(where)}is {_kind(value)}, not an object"
        for name, schema in required.items():
            field = f"{where}.{name}" if where else f"field {name!r}"
            if name not in value:
                return f"{field} is missing"
            problem = schema(value[name], field)
            if problem:
                return problem
        for name, schema in optional.items():
            if name in value:
                field = f"{where}.{name}" if where else f"field {name!r}"
                problem = schema(value[name], field)
                if problem:
                    return problem
        return None
    return check
