"""joblib's vendored loky: its workers end with the process that started them.

``joblib.externals.loky.reusable_executor._executor`` (the executor joblib
keeps between ``Parallel`` calls) is private; the runner reads it through
:func:`end_reusable_executor` only.  :func:`backend_params` passes a worker
initializer through ``joblib.parallel_config``'s documented
``backend_params`` (the loky back-end forwards them to its executor).
Tested with joblib 1.3 to 1.6 (``pyproject.toml`` pins the range).
"""

from __future__ import annotations

import os

#: The joblib versions this fence was written against (pyproject.toml's range).
TESTED = ("1.3", "1.7")
#: Seconds between two looks at the parent process.
PARENT_POLL_S = 0.5


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


#: What a worker runs first (``exec`` with ``PARENT`` and ``INTERVAL`` set):
#: standard library only, so that it runs before the worker imports refimpl
#: (tens of seconds on a loaded machine, during which a worker of a dead
#: parent would otherwise live on).
_EXIT_WITH_PARENT = """\
import os, threading, time

def _watch(parent, interval):
    while os.getppid() == parent:
        time.sleep(interval)
    os._exit(1)

if os.getppid() != PARENT:            # the parent died while we started
    os._exit(1)
threading.Thread(target=_watch, args=(PARENT, INTERVAL),
                 name="refimpl-exit-with-parent", daemon=True).start()
"""


def backend_params(interval=PARENT_POLL_S):
    """``joblib.parallel_config(backend="loky", **backend_params())``: workers
    that end within ``interval`` seconds of this process.

    A parent killed by SIGKILL cannot stop its workers, and loky's idle
    ones would wait out their idle timeout (300 s) for work that never
    comes, a busy one its task.  Each worker's initializer starts a daemon
    thread that looks at the parent process id every ``interval`` seconds
    and exits the worker (``os._exit``) once the parent is gone (the worker
    is re-parented).  The initializer is the built-in ``exec`` of
    standard-library code: a function of refimpl would be unpickled, and so
    refimpl imported, before it could run.  Not ``prctl(PR_SET_PDEATHSIG)``:
    it fires when the *thread* that started the worker ends, and loky starts
    workers from whichever thread submits work, so it would kill healthy
    workers of a live parent.  The thread needs the interpreter lock: a
    worker inside a long compiled call ends when the call returns.
    """
    return {"initializer": exec,
            "initargs": (_EXIT_WITH_PARENT, {"PARENT": os.getpid(),
                                             "INTERVAL": float(interval)})}
