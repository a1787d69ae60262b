"""joblib's vendored loky: ending the workers of its reusable executor.

``joblib.externals.loky.reusable_executor._executor`` (the executor joblib
keeps between ``Parallel`` calls) is private; the runner reads it through
:func:`end_reusable_executor` only.  Tested with joblib 1.3 to 1.6
(``pyproject.toml`` pins the range).
"""

from __future__ import annotations

#: The joblib versions this fence was written against (pyproject.toml's range).
TESTED = ("1.3", "1.7")


def end_reusable_executor():
    """Kill the worker processes of joblib's reusable loky executor, if any.

    Only an executor that exists is shut down: asking loky for one would
    start it.  Returns whether one was shut down.
    """
    try:
        from joblib.externals.loky import reusable_executor
    except ImportError:  # pragma: no cover - joblib always vendors loky
        return False
    executor = getattr(reusable_executor, "_executor", None)
    if executor is None:
        return False
    executor.shutdown(wait=True, kill_workers=True)
    return True
