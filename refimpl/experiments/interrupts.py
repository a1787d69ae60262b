"""SIGINT and SIGTERM during a run end its worker processes first.

:func:`sigterm_unwinds` turns SIGTERM into ``SystemExit(143)`` in the main
thread, so that ``finally`` clauses run; :func:`end_loky_workers` ends the
workers of joblib's reusable loky executor, which could otherwise outlive
a terminated runner for minutes.

Derived in: book/10_running_experiments.md#run-cli
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

__all__ = ["end_loky_workers", "sigterm_unwinds"]


class _Terminated(SystemExit):
    """SIGTERM during a run, raised in the main thread to unwind it."""


def end_loky_workers():
    """Kill the worker processes of joblib's reusable loky executor.

    joblib aborts its running tasks when
    :func:`~refimpl.experiments.runner.run` is interrupted, but may
    keep (or start) an idle executor whose workers outlive a terminated
    parent for minutes; its resource trackers end once no worker holds
    their pipe.  Only an executor that exists is shut down: asking for one
    would start it.
    """
    from .._compat.loky import end_reusable_executor

    end_reusable_executor()


@contextmanager
def sigterm_unwinds():
    """During the block, SIGTERM raises ``SystemExit(143)`` in the main thread.

    Then ``finally`` clauses run and
    :func:`~refimpl.experiments.runner.run` ends its workers before the
    process exits with the status the default action gives.  A SIGTERM
    handler installed by the application, or an ignored SIGTERM, is left
    alone, as is everything outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handler(signum, frame):
        # a second SIGTERM must not interrupt the clean-up of the first
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise _Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
