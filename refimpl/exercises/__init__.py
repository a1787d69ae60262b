"""Checkers for the book's implementation exercises.

Each ``check_*`` function takes the student's function, runs it against
``refimpl`` on adversarial and random cases and returns a
:class:`~refimpl.exercises.CheckResult` whose message says, in one sentence,
what is wrong and shows the smallest failing case (or says that every case
agreed); ``result.case`` holds that case as data, a
:class:`~refimpl.exercises.FailingCase` (``inputs``, ``expected``, ``got``).
The chapter that poses the exercise names its checker; the modules follow
the book's chapters.
"""

from ._harness import CheckResult, FailingCase, run_checker
from .ch01_data import *  # noqa: F401,F403
from .ch02_toolkit import *  # noqa: F401,F403
from .ch03_fenchel import *  # noqa: F401,F403
from .ch04_acceleration import *  # noqa: F401,F403
from .ch05_dc import *  # noqa: F401,F403
from .ch06_liferank import *  # noqa: F401,F403
from .ch07_ostree import *  # noqa: F401,F403
from .ch08_side_by_side import *  # noqa: F401,F403
from .ch08_multiple_testing import *  # noqa: F401,F403
from .ch09_fast import *  # noqa: F401,F403
from .ch10_experiments import *  # noqa: F401,F403

from . import (ch01_data, ch02_toolkit, ch03_fenchel, ch04_acceleration, ch05_dc, ch06_liferank, ch07_ostree, ch08_side_by_side, ch08_multiple_testing, ch09_fast, ch10_experiments)  # noqa: E402

_MODULES = (ch01_data, ch02_toolkit, ch03_fenchel, ch04_acceleration, ch05_dc, ch06_liferank, ch07_ostree, ch08_side_by_side, ch08_multiple_testing, ch09_fast, ch10_experiments)
__all__ = ["CheckResult", "FailingCase", "run_checker"] + [
    name for m in _MODULES for name in m.__all__]
