"""Exceptions raised by :mod:`refimpl`.

Every input problem is reported as a :class:`DataError` (a ``ValueError``) whose
message names the problem, where it was found and what to do about it, so that
nothing fails later inside a numba kernel.
"""


class DataError(ValueError):
    """Malformed or inconsistent ranking data (file, labels, features, queries)."""


class DatasetNotFoundError(FileNotFoundError):
    """A LETOR dataset was not found where it was looked for."""


class PairMatrixTooLargeError(MemoryError):
    """The explicit pair-difference matrix would need more memory than allowed."""
